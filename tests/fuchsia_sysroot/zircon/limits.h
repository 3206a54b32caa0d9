// Stand-in for Fuchsia's <zircon/limits.h>: its names come with this sysroot's <zircon/types.h>,
// which scripts/check-fuchsia-compile.sh generates from include/zxsampler/types.h.
#ifndef ZXS_SYSROOT_ZIRCON_LIMITS_H_
#define ZXS_SYSROOT_ZIRCON_LIMITS_H_
#include <zircon/types.h>
#endif
