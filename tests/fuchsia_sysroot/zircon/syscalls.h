// Stand-in for Fuchsia's <zircon/syscalls.h>: the calls the Fuchsia backend makes, with the
// prototypes of Fuchsia's syscalls/gen/cdecls.inc as mirrored at chenhunghan/fuchsia-mirror
// commit 2762750aa9eac90c4665f2006ed90e50b63bb319 (2026; the same in the "attach" revision).
// One list for both uses of this sysroot: the build for a Fuchsia target
// (scripts/check-fuchsia-compile.sh) and the Linux build against the Fuchsia double, which
// defines them (tests/fuchsia_double/). The sampler's calls: syscalls-next.h ("attach") or
// sampler-read/zircon/syscalls.h ("read").
#ifndef ZXS_SYSROOT_ZIRCON_SYSCALLS_H_
#define ZXS_SYSROOT_ZIRCON_SYSCALLS_H_
#include <stddef.h>
#include <stdint.h>
#include <zircon/syscalls/object.h>
#if defined(__Fuchsia__)
#include <zircon/types.h>  // a Fuchsia target: the SDK's names only
#else
#include <zxsampler/types.h>  // the double's host: the library's
#endif
#ifdef __cplusplus
extern "C" {
#endif
zx_status_t zx_handle_close(zx_handle_t handle);
zx_status_t zx_handle_duplicate(zx_handle_t handle, zx_rights_t rights, zx_handle_t* out);
zx_status_t zx_object_get_info(zx_handle_t handle, uint32_t topic, void* buffer, size_t buffer_size,
                               size_t* actual, size_t* avail);
zx_status_t zx_object_get_property(zx_handle_t handle, uint32_t property, void* value,
                                   size_t value_size);
zx_status_t zx_object_get_child(zx_handle_t handle, uint64_t koid, zx_rights_t rights,
                                zx_handle_t* out);
zx_status_t zx_vmar_map_iob(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                            zx_handle_t iob, uint32_t region_index, uint64_t region_offset,
                            size_t region_len, zx_vaddr_t* mapped_addr);
zx_status_t zx_vmar_map(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                        zx_handle_t vmo, uint64_t vmo_offset, size_t len, zx_vaddr_t* mapped_addr);
zx_status_t zx_vmar_unmap(zx_handle_t vmar, zx_vaddr_t addr, size_t len);
zx_status_t zx_vmo_get_size(zx_handle_t vmo, uint64_t* size);
uint32_t zx_system_get_page_size(void);
uint32_t zx_system_get_num_cpus(void);
zx_instant_mono_ticks_t zx_ticks_get(void);
zx_ticks_t zx_ticks_per_second(void);
#ifdef __cplusplus
}
#endif
#endif  // ZXS_SYSROOT_ZIRCON_SYSCALLS_H_
