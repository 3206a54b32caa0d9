// Stand-in for Fuchsia's <zircon/syscalls.h>, sampler revision "read": the calls of the shared
// stand-in (../../zircon/syscalls.h) and the sampler's, which this revision publishes here (its
// syscalls/gen/cdecls.inc), no longer in <zircon/syscalls-next.h>. Follows Fuchsia's headers as
// mirrored at chenhunghan/fuchsia-mirror commit 2762750aa9eac90c4665f2006ed90e50b63bb319 (2026):
// zx_sampler_create (four parameters), _start, _stop and _read; no zx_sampler_attach (the session
// samples every thread of the system; Fuchsia's profiler keeps the records of its own threads).
// For Fuchsia targets only (scripts/check-fuchsia-compile.sh puts this folder first).
#ifndef ZXS_SYSROOT_READ_ZIRCON_SYSCALLS_H_
#define ZXS_SYSROOT_READ_ZIRCON_SYSCALLS_H_
#include_next <zircon/syscalls.h>
#include <zircon/syscalls/sampler.h>
#ifdef __cplusplus
extern "C" {
#endif
zx_status_t zx_sampler_create(zx_handle_t rsrc, uint64_t options, const zx_sampler_config_t* config,
                              zx_handle_t* per_cpu_buffers);
zx_status_t zx_sampler_read(zx_handle_t iobuffer, void* data, size_t data_size, size_t* actual);
zx_status_t zx_sampler_start(zx_handle_t iobuffer);
zx_status_t zx_sampler_stop(zx_handle_t iobuffer);
#ifdef __cplusplus
}
#endif
#endif  // ZXS_SYSROOT_READ_ZIRCON_SYSCALLS_H_
