// Stand-in for Fuchsia's <zircon/threads.h>: a C11 thread's handle, owned by the C library
// (callers duplicate it).
#ifndef ZXS_SYSROOT_ZIRCON_THREADS_H_
#define ZXS_SYSROOT_ZIRCON_THREADS_H_
#include <threads.h>
#include <zxsampler/types.h>
#ifdef __cplusplus
extern "C" {
#endif
zx_handle_t thrd_get_zx_handle(thrd_t t);
#ifdef __cplusplus
}
#endif
#endif  // ZXS_SYSROOT_ZIRCON_THREADS_H_
