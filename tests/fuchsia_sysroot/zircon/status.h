// Stand-in for Fuchsia's <zircon/status.h>: the C library's name of a status.
#ifndef ZXS_SYSROOT_ZIRCON_STATUS_H_
#define ZXS_SYSROOT_ZIRCON_STATUS_H_
#include <zircon/types.h>
#ifdef __cplusplus
extern "C" {
#endif
const char* zx_status_get_string(zx_status_t status);
#ifdef __cplusplus
}
#endif
#endif  // ZXS_SYSROOT_ZIRCON_STATUS_H_
