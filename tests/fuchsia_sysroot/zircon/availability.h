// Stand-in for Fuchsia's <zircon/availability.h>: the API-level tests the sampler's headers make.
// Follows Fuchsia's header as mirrored at chenhunghan/fuchsia-mirror commit
// 2762750aa9eac90c4665f2006ed90e50b63bb319 (2026): FUCHSIA_API_LEVEL_{AT_LEAST,LESS_THAN,
// AT_MOST}(level) compare __Fuchsia_API_level__ (clang's -ffuchsia-api-level) with a level that
// must be named (a number, NEXT, HEAD or PLATFORM; an unknown name fails to compile), with
// availability_levels.inc's values for the named ones. Fuchsia's header warns where a Fuchsia
// build sets no level; here that is an error, so the compile check cannot forget the level.
#ifndef ZXS_SYSROOT_ZIRCON_AVAILABILITY_H_
#define ZXS_SYSROOT_ZIRCON_AVAILABILITY_H_

#if defined(__Fuchsia__) && (!defined(__Fuchsia_API_level__) || __Fuchsia_API_level__ == 0)
#error __Fuchsia_API_level__ must be set to a non-zero value. For Clang, use -ffuchsia-api-level.
#endif

#define FUCHSIA_API_LEVEL_AT_LEAST(level) (__Fuchsia_API_level__ >= FUCHSIA_API_LEVEL_(level))
#define FUCHSIA_API_LEVEL_LESS_THAN(level) (__Fuchsia_API_level__ < FUCHSIA_API_LEVEL_(level))
#define FUCHSIA_API_LEVEL_AT_MOST(level) (__Fuchsia_API_level__ <= FUCHSIA_API_LEVEL_(level))

#define FUCHSIA_API_LEVEL_CAT_INDIRECT_(prefix, level) prefix##level##_
#define FUCHSIA_API_LEVEL_CAT_(prefix, level) FUCHSIA_API_LEVEL_CAT_INDIRECT_(prefix, level)
#define FUCHSIA_API_LEVEL_(level) (FUCHSIA_API_LEVEL_CAT_(FUCHSIA_INTERNAL_LEVEL_, level)())

// The special levels (RFC-0246); the numbered stable levels are left out (nothing here uses one).
#define FUCHSIA_INTERNAL_LEVEL_NEXT_() 4291821568
#define FUCHSIA_INTERNAL_LEVEL_HEAD_() 4292870144
#define FUCHSIA_INTERNAL_LEVEL_PLATFORM_() 4293918720

#endif  // ZXS_SYSROOT_ZIRCON_AVAILABILITY_H_
