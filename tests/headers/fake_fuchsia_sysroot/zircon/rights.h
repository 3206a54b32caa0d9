// Stand-in for Fuchsia's <zircon/rights.h> (see types.h).
#ifndef ZIRCON_RIGHTS_H_
#define ZIRCON_RIGHTS_H_
#include <stdint.h>
#define ZXS_FAKE_SYSROOT_RIGHTS 1
typedef uint32_t zx_rights_t;
#define ZX_RIGHT_READ 4u
#define ZX_RIGHTS_BASIC 0xc003u
#endif  // ZIRCON_RIGHTS_H_
