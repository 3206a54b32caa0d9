// Stand-in for Fuchsia's <zircon/status.h> (see types.h).
#ifndef ZIRCON_STATUS_H_
#define ZIRCON_STATUS_H_
#include <zircon/types.h>
#ifdef __cplusplus
extern "C" {
#endif
const char* zx_status_get_string(zx_status_t status);
#ifdef __cplusplus
}
#endif
#endif  // ZIRCON_STATUS_H_
