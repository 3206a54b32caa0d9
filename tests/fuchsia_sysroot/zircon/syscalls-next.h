// Stand-in for Fuchsia's <zircon/syscalls-next.h>, sampler revision "attach" (the one the seed
// documents and the library implement; Fuchsia's own profiler used it in 2024).
//
// Built for Fuchsia it follows Fuchsia's header as mirrored at misttech/mist-os commit
// 10cde5ee42516cee5e8c65fdafce9ed6a0a5d3ae, with the calls of zircon/vdso/sampler.fidl at
// 687f9a1bf733e397628f8f91d54a3eb6af1fb90d (each marked @next), for what the library uses:
// ZX_SAMPLER_MIN_PERIOD, ZX_SAMPLER_MAX_BUFFER_SIZE (written, as there, as a C++ cast: C code that
// uses it fails here as it would on Fuchsia), the 24-byte zx_sampler_config_t with
// iobuffer_discipline, and zx_sampler_create (four parameters), _attach, _start, _stop. That
// revision's header makes no API-level test; the library compiles at HEAD anyway (the calls are
// @next). The other published revision is sampler-read/ (scripts/check-fuchsia-compile.sh
// compiles against both).
//
// On the Fuchsia double's Linux host the config is the library's own (sampler.h) and the calls
// are the double's.
#ifndef ZXS_SYSROOT_ZIRCON_SYSCALLS_NEXT_H_
#define ZXS_SYSROOT_ZIRCON_SYSCALLS_NEXT_H_
#include <stddef.h>
#include <stdint.h>
#if defined(__Fuchsia__)
#include <zircon/types.h>
#define ZX_SAMPLER_MIN_PERIOD ZX_USEC(10)
#define ZX_SAMPLER_MAX_BUFFER_SIZE size_t(1024 * 1024 * 1024) /*1 GiB*/
typedef struct zx_sampler_config {
  zx_duration_mono_t period;
  size_t buffer_size;
  uint64_t iobuffer_discipline;
} zx_sampler_config_t;
#else
#include <zxsampler/sampler.h>  // the double's host: the library's config and names
#endif
#include <zircon/syscalls.h>
#ifdef __cplusplus
extern "C" {
#endif
zx_status_t zx_sampler_create(zx_handle_t rsrc, uint64_t options, const zx_sampler_config_t* config,
                              zx_handle_t* per_cpu_buffers);
zx_status_t zx_sampler_attach(zx_handle_t iobuffer, zx_handle_t thread);
zx_status_t zx_sampler_start(zx_handle_t iobuffer);
zx_status_t zx_sampler_stop(zx_handle_t iobuffer);
#ifdef __cplusplus
}
#endif
#endif  // ZXS_SYSROOT_ZIRCON_SYSCALLS_NEXT_H_
