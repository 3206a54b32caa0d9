// Stand-in for Fuchsia's <zircon/syscalls-next.h>: the sampler's calls, with Fuchsia's
// prototypes, and (built for Fuchsia) its config struct and minimum period as the kernel's header
// has them. Fuchsia's ZX_SAMPLER_MAX_BUFFER_SIZE is written as a C++ cast (size_t(...)), which C
// cannot use: left out, so C code that needs it fails here as it would on Fuchsia. On the
// double's Linux host the config is the library's own (sampler.h).
#ifndef ZXS_SYSROOT_ZIRCON_SYSCALLS_NEXT_H_
#define ZXS_SYSROOT_ZIRCON_SYSCALLS_NEXT_H_
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>
#if defined(__Fuchsia__)
#define ZX_SAMPLER_MIN_PERIOD ((zx_duration_mono_t)10000)
typedef struct zx_sampler_config {
  zx_duration_mono_t period;
  size_t buffer_size;
  uint64_t iobuffer_discipline;
} zx_sampler_config_t;
#else
#include <zxsampler/sampler.h>
#endif
#ifdef __cplusplus
extern "C" {
#endif
zx_status_t zx_sampler_create(zx_handle_t rsrc, uint64_t options, const zx_sampler_config_t* config,
                              zx_handle_t* iob_out);
zx_status_t zx_sampler_attach(zx_handle_t iob, zx_handle_t thread);
zx_status_t zx_sampler_start(zx_handle_t iob);
zx_status_t zx_sampler_stop(zx_handle_t iob);
#ifdef __cplusplus
}
#endif
#endif  // ZXS_SYSROOT_ZIRCON_SYSCALLS_NEXT_H_
