// Stand-in for Fuchsia's <zircon/syscalls/sampler.h>, sampler revision "read". Follows Fuchsia's
// header as mirrored at chenhunghan/fuchsia-mirror commit
// 2762750aa9eac90c4665f2006ed90e50b63bb319 (the file's copyright year: 2026): the 16-byte
// zx_sampler_config_t (no iobuffer_discipline) and its limits. For Fuchsia targets only.
#ifndef ZXS_SYSROOT_ZIRCON_SYSCALLS_SAMPLER_H_
#define ZXS_SYSROOT_ZIRCON_SYSCALLS_SAMPLER_H_
#include <stddef.h>
#include <zircon/time.h>
#include <zircon/types.h>
#ifdef __cplusplus
extern "C" {
#endif
#define ZX_SAMPLER_MIN_PERIOD ZX_USEC(10)
#define ZX_SAMPLER_MAX_BUFFER_SIZE (size_t)(1024 * 1024 * 1024) /*1 GiB*/
typedef struct zx_sampler_config {
  zx_duration_mono_t period;
  size_t buffer_size;
} zx_sampler_config_t;
#ifdef __cplusplus
}
#endif
#endif  // ZXS_SYSROOT_ZIRCON_SYSCALLS_SAMPLER_H_
