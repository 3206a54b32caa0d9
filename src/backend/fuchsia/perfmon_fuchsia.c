// The perfmon controller (perfmon.h) on Fuchsia is the fuchsia.perfmon.cpu FIDL service of the
// cpu-trace driver, which this backend is not wired to: every controller call answers
// ZX_ERR_NOT_SUPPORTED (README, "perfmon on Fuchsia", says how the calls map to the service).
#include <stddef.h>
#include <zxsampler/perfmon.h>

zx_status_t zxs_perfmon_open(zx_handle_t debug_resource, zx_handle_t* out) {
  (void)debug_resource;
  if (out != NULL) *out = ZX_HANDLE_INVALID;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_perfmon_get_properties(zx_handle_t controller,
                                       zxs_perfmon_properties_t* properties) {
  (void)controller;
  (void)properties;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_perfmon_initialize(zx_handle_t controller,
                                   const zxs_perfmon_allocation_t* allocation) {
  (void)controller;
  (void)allocation;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_perfmon_terminate(zx_handle_t controller) {
  (void)controller;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_perfmon_get_allocation(zx_handle_t controller,
                                       zxs_perfmon_allocation_t* allocation) {
  (void)controller;
  (void)allocation;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_perfmon_stage_config(zx_handle_t controller, const zxs_perfmon_config_t* config) {
  (void)controller;
  (void)config;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_perfmon_get_config(zx_handle_t controller, zxs_perfmon_config_t* config) {
  (void)controller;
  (void)config;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_perfmon_get_buffer_handle(zx_handle_t controller, uint32_t descriptor,
                                          zx_handle_t* vmo) {
  (void)controller;
  (void)descriptor;
  if (vmo != NULL) *vmo = ZX_HANDLE_INVALID;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_perfmon_start(zx_handle_t controller) {
  (void)controller;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_perfmon_stop(zx_handle_t controller) {
  (void)controller;
  return ZX_ERR_NOT_SUPPORTED;
}
