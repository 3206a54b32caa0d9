// Stand-in for Fuchsia's <zircon/syscalls/iob.h>: its names come with this sysroot's
// <zircon/types.h>, which scripts/check-fuchsia-compile.sh generates from
// include/zxsampler/types.h.
#ifndef ZXS_SYSROOT_ZIRCON_SYSCALLS_IOB_H_
#define ZXS_SYSROOT_ZIRCON_SYSCALLS_IOB_H_
#include <zircon/types.h>
#endif
