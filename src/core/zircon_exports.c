// The Fuchsia-named functions a host build exports. On Fuchsia the kernel and its vDSO provide
// them, so this file is one of kernel_object_sources (src/meson.build).
#include <zxsampler/sampler.h>
#include <zxsampler/zircon.h>

#include "status_names.h"

const char* zx_status_get_string(zx_status_t status) {
  const char* name = zxs_status_name(status);
  return name != NULL ? name : "(UNKNOWN)";
}

// The kernel's four-argument zx_sampler_create. zircon.h defines a macro of the same name (the
// four- and five-argument forms); the parentheses keep it from expanding here.
zx_status_t(zx_sampler_create)(zx_handle_t rsrc, uint64_t options,
                               const zx_sampler_config_t* config, zx_handle_t* iob_out) {
  return zxs_sampler_create(rsrc, options, config, sizeof(zx_sampler_config_t), iob_out);
}
