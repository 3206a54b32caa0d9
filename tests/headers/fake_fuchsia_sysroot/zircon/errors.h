// Stand-in for Fuchsia's <zircon/errors.h> (see types.h).
#ifndef ZIRCON_ERRORS_H_
#define ZIRCON_ERRORS_H_
#define ZXS_FAKE_SYSROOT_ERRORS 1
#define ZX_OK 0
#define ZX_ERR_INTERNAL -1
#define ZX_ERR_NOT_DIR -51
#endif  // ZIRCON_ERRORS_H_
