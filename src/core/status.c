// Status names, generated from the one list in types.h (ZXS_STATUS_MAP), and the Fuchsia-named
// functions a host build exports (on Fuchsia the kernel and the vDSO provide them).
#include <zxsampler/sampler.h>
#include <zxsampler/types.h>
#include <zxsampler/zircon.h>

// Each status macro (this library's, or on Fuchsia the system's) has the list's value.
#define ZXS_STATUS_CHECK_(name, value) \
  _Static_assert((name) == (value), #name " has Fuchsia's value");
ZXS_STATUS_MAP(ZXS_STATUS_CHECK_)
#undef ZXS_STATUS_CHECK_

// The name of a listed status, or NULL.
static const char* status_name(zx_status_t status) {
  switch (status) {
#define ZXS_STATUS_CASE_(name, value) \
  case (value):                       \
    return #name;
    ZXS_STATUS_MAP(ZXS_STATUS_CASE_)
#undef ZXS_STATUS_CASE_
    default:
      return NULL;
  }
}

const char* zxs_status_string(zx_status_t status) {
  const char* name = status_name(status);
  return name != NULL ? name : "(unknown)";
}

#if !defined(__Fuchsia__)

const char* zx_status_get_string(zx_status_t status) {
  const char* name = status_name(status);
  return name != NULL ? name : "(UNKNOWN)";
}

// The kernel's four-argument zx_sampler_create. zircon.h defines a macro of the same name (the
// four- and five-argument forms); the parentheses keep it from expanding here.
zx_status_t(zx_sampler_create)(zx_handle_t rsrc, uint64_t options,
                               const zx_sampler_config_t* config, zx_handle_t* iob_out) {
  return zxs_sampler_create(rsrc, options, config, sizeof(zx_sampler_config_t), iob_out);
}

#endif  // !__Fuchsia__

const char* zxs_sample_source_name(zxs_sample_source_t source) {
  switch (source) {
    case ZXS_SOURCE_NONE:
      return "none";
    case ZXS_SOURCE_PERF_TASK_CLOCK:
      return "perf";
    case ZXS_SOURCE_CPU_CLOCK_TIMER:
      return "cputimer";
    case ZXS_SOURCE_SAMPLER_THREAD:
      return "sampler-thread";
    case ZXS_SOURCE_KERNEL:
      return "kernel";
    case ZXS_SOURCE_FAKE:
      return "fake";
    case ZXS_SOURCE_PERF_RING:
      return "perf-ring";
  }
  return "unknown";
}
