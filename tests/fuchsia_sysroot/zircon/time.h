// Stand-in for Fuchsia's <zircon/time.h>: its names come with this sysroot's <zircon/types.h>,
// which scripts/check-fuchsia-compile.sh generates from include/zxsampler/types.h.
#ifndef ZXS_SYSROOT_ZIRCON_TIME_H_
#define ZXS_SYSROOT_ZIRCON_TIME_H_
#include <zircon/types.h>
#endif
