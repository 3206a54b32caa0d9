// Stand-in for Fuchsia's <zircon/limits.h> (see types.h).
#ifndef ZIRCON_LIMITS_H_
#define ZIRCON_LIMITS_H_
#define ZXS_FAKE_SYSROOT_LIMITS 1
#define ZX_PAGE_SIZE 4096u
#endif  // ZIRCON_LIMITS_H_
