// Fuchsia's names for the calls this library provides, so a program written against Fuchsia's
// documentation compiles and runs unchanged on a host:
//
//   #include <zxsampler/zircon.h>
//   zx_handle_t iob;
//   zx_sampler_config_t config = {.period = ZX_MSEC(1), .buffer_size = 1 << 20};
//   zx_sampler_create(debug_resource, 0, &config, &iob);                  // the kernel's form
//   zx_sampler_create(debug_resource, 0, &config, sizeof(config), &iob);  // the docs' form
//
// zx_sampler_create is a real exported function with the kernel's four parameters, so its
// address can be taken (&zx_sampler_create). A function-like macro of the same name lets the
// five-parameter call of the syscall page compile too: it picks a wrapper by argument count
// (the macro is not expanded where the name is not followed by a parenthesis, as in
// &zx_sampler_create, and (zx_sampler_create)(...) calls the function directly).
// zx_status_get_string is exported too; every other name is a static inline wrapper over the
// zxs_* functions. Statuses, thread- and signal-safety are theirs (see sampler.h and object.h).
//
// Built for Fuchsia (__Fuchsia__ defined) this header is the system's <zircon/syscalls.h> and
// <zircon/status.h> only: the kernel provides every zx_* call, in the kernel's forms (the
// four-parameter zx_sampler_create; zx_sampler_attach only in the sampler revision that has it),
// and the library defines none of them. The sampler's calls and the library's zxs_* calls come
// with <zxsampler/sampler.h> and <zxsampler/object.h> there, which a program includes itself.
#ifndef ZXSAMPLER_ZIRCON_H_
#define ZXSAMPLER_ZIRCON_H_

#include <zxsampler/types.h>

#if defined(__Fuchsia__)

#include <zircon/status.h>
#include <zircon/syscalls.h>

#else  // !__Fuchsia__

#include <zxsampler/object.h>
#include <zxsampler/sampler.h>

#ifdef __cplusplus
extern "C" {
#endif

// The kernel's zx_sampler_create: four parameters, no config_size (config must point to a whole
// zx_sampler_config_t). Statuses as zxs_sampler_create().
ZXS_API zx_status_t zx_sampler_create(zx_handle_t rsrc, uint64_t options,
                                      const zx_sampler_config_t* config, zx_handle_t* iob_out);

// The name of a status as Fuchsia's <zircon/status.h> gives it ("ZX_ERR_TIMED_OUT"), or
// "(UNKNOWN)". Thread-safe and async-signal-safe.
ZXS_API const char* zx_status_get_string(zx_status_t status);

// The five-argument form of the syscall page: config_size must be sizeof(zx_sampler_config_t).
static inline zx_status_t zx_sampler_create_with_size(zx_handle_t rsrc, uint64_t options,
                                                      const zx_sampler_config_t* config,
                                                      size_t config_size, zx_handle_t* iob_out) {
  return zxs_sampler_create(rsrc, options, config, config_size, iob_out);
}

// The four-argument form, as the macro below spells it (the exported function).
static inline zx_status_t zx_sampler_create_without_size(zx_handle_t rsrc, uint64_t options,
                                                         const zx_sampler_config_t* config,
                                                         zx_handle_t* iob_out) {
  return zx_sampler_create(rsrc, options, config, iob_out);
}

#define ZXS_PICK_5TH_OR_4TH_(a1, a2, a3, a4, a5, name, ...) name
#define zx_sampler_create(...)                                                                   \
  ZXS_PICK_5TH_OR_4TH_(__VA_ARGS__, zx_sampler_create_with_size, zx_sampler_create_without_size, \
                       zxs_sampler_create_needs_4_or_5_args)                                     \
  (__VA_ARGS__)

static inline zx_status_t zx_sampler_attach(zx_handle_t iob, zx_handle_t thread) {
  return zxs_sampler_attach(iob, thread);
}
static inline zx_status_t zx_sampler_start(zx_handle_t iob) { return zxs_sampler_start(iob); }
static inline zx_status_t zx_sampler_stop(zx_handle_t iob) { return zxs_sampler_stop(iob); }

static inline zx_status_t zx_handle_close(zx_handle_t handle) { return zxs_handle_close(handle); }
static inline zx_status_t zx_handle_duplicate(zx_handle_t handle, zx_rights_t rights,
                                              zx_handle_t* out) {
  return zxs_handle_duplicate(handle, rights, out);
}
static inline zx_status_t zx_object_get_info(zx_handle_t handle, uint32_t topic, void* buffer,
                                             size_t buffer_size, size_t* actual, size_t* avail) {
  return zxs_object_get_info(handle, topic, buffer, buffer_size, actual, avail);
}
static inline zx_status_t zx_vmar_map_iob(zx_handle_t vmar, zx_vm_option_t options,
                                          size_t vmar_offset, zx_handle_t iob,
                                          uint32_t region_index, uint64_t region_offset,
                                          size_t region_len, zx_vaddr_t* mapped_addr) {
  return zxs_vmar_map_iob(vmar, options, vmar_offset, iob, region_index, region_offset, region_len,
                          mapped_addr);
}
static inline zx_status_t zx_vmar_map(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                                      zx_handle_t vmo, uint64_t vmo_offset, size_t len,
                                      zx_vaddr_t* mapped_addr) {
  return zxs_vmar_map(vmar, options, vmar_offset, vmo, vmo_offset, len, mapped_addr);
}
static inline zx_status_t zx_vmo_get_size(zx_handle_t vmo, uint64_t* size) {
  return zxs_vmo_get_size(vmo, size);
}
static inline zx_status_t zx_vmar_unmap(zx_handle_t vmar, zx_vaddr_t addr, size_t len) {
  return zxs_vmar_unmap(vmar, addr, len);
}
static inline zx_handle_t zx_vmar_root_self(void) { return zxs_vmar_root_self(); }
static inline zx_handle_t zx_process_self(void) { return zxs_process_self(); }
static inline zx_handle_t zx_thread_self(void) { return zxs_thread_self(); }
static inline uint32_t zx_system_get_page_size(void) { return zxs_system_get_page_size(); }
static inline uint32_t zx_system_get_num_cpus(void) { return zxs_system_get_num_cpus(); }
static inline zx_ticks_t zx_ticks_get(void) { return zxs_ticks_get(); }
static inline zx_ticks_t zx_ticks_per_second(void) { return zxs_ticks_per_second(); }

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // __Fuchsia__

#endif  // ZXSAMPLER_ZIRCON_H_
