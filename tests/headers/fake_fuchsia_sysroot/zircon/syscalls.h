// Stand-in for Fuchsia's <zircon/syscalls.h> (see types.h): system calls, not static inlines.
#ifndef ZIRCON_SYSCALLS_H_
#define ZIRCON_SYSCALLS_H_
#include <zircon/syscalls/object.h>
#include <zircon/types.h>
#ifdef __cplusplus
extern "C" {
#endif
#define ZXS_FAKE_SYSROOT_SYSCALLS 1
zx_status_t zx_handle_close(zx_handle_t handle);
zx_handle_t zx_thread_self(void);
#ifdef __cplusplus
}
#endif
#endif  // ZIRCON_SYSCALLS_H_
