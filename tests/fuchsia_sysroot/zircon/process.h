// Stand-in for Fuchsia's <zircon/process.h>: the handles a process is born with.
#ifndef ZXS_SYSROOT_ZIRCON_PROCESS_H_
#define ZXS_SYSROOT_ZIRCON_PROCESS_H_
#if defined(__Fuchsia__)
#include <zircon/types.h>  // a Fuchsia target: the SDK's names only
#else
#include <zxsampler/types.h>  // the double's host: the library's
#endif
#ifdef __cplusplus
extern "C" {
#endif
zx_handle_t zx_process_self(void);
zx_handle_t zx_vmar_root_self(void);
zx_handle_t zx_thread_self(void);
#ifdef __cplusplus
}
#endif
#endif  // ZXS_SYSROOT_ZIRCON_PROCESS_H_
