// Stand-in for Fuchsia's <zircon/syscalls-next.h>, sampler revision "read". Follows Fuchsia's
// header as mirrored at chenhunghan/fuchsia-mirror commit
// 2762750aa9eac90c4665f2006ed90e50b63bb319 (2026) in what a C program meets: allowed only when
// targeting HEAD or PLATFORM (else #error, unless FUCHSIA_UNSUPPORTED_ALLOW_SYSCALLS_NEXT_ON_
// INCOMPATIBLE_BUILDS), refused on hosts (unless FUCHSIA_UNSUPPORTED_ALLOW_SYSCALLS_NEXT_ON_HOST),
// and a top-level static_assert, which C before C23 knows only from <assert.h>. Nothing of the
// sampler is left here (see syscalls.h); the declarations of the other calls are left out.
#ifndef ZXS_SYSROOT_READ_ZIRCON_SYSCALLS_NEXT_H_
#define ZXS_SYSROOT_READ_ZIRCON_SYSCALLS_NEXT_H_
#include <stdint.h>
#include <zircon/availability.h>
#include <zircon/types.h>

#ifdef __Fuchsia__
#if FUCHSIA_API_LEVEL_LESS_THAN(HEAD)
#ifndef FUCHSIA_UNSUPPORTED_ALLOW_SYSCALLS_NEXT_ON_INCOMPATIBLE_BUILDS
#error zircon/syscalls-next.h may not be included when targeting NEXT or a stable API level.
#endif
#endif
#else
#ifndef FUCHSIA_UNSUPPORTED_ALLOW_SYSCALLS_NEXT_ON_HOST
#error zircon/syscalls-next.h may only be included in on-target code.
#endif
#endif

typedef struct zx_iob_region_shared {
  uint32_t options;
  zx_handle_t shared_region;
  uint64_t padding[3];
} zx_iob_region_shared_t;

static_assert(sizeof(zx_iob_region_shared_t) == 8 * 4);

#include <zircon/syscalls.h>

#endif  // ZXS_SYSROOT_READ_ZIRCON_SYSCALLS_NEXT_H_
