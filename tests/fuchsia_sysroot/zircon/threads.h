// Stand-in for Fuchsia's <zircon/threads.h>: a C11 thread's handle, owned by the C library
// (callers duplicate it).
#ifndef ZXS_SYSROOT_ZIRCON_THREADS_H_
#define ZXS_SYSROOT_ZIRCON_THREADS_H_
#include <threads.h>
#if defined(__Fuchsia__)
#include <zircon/types.h>  // a Fuchsia target: the SDK's names only
#else
#include <zxsampler/types.h>  // the double's host: the library's
#endif
#ifdef __cplusplus
extern "C" {
#endif
zx_handle_t thrd_get_zx_handle(thrd_t t);
#ifdef __cplusplus
}
#endif
#endif  // ZXS_SYSROOT_ZIRCON_THREADS_H_
