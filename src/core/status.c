// Status names, generated from the one list in types.h (ZXS_STATUS_MAP).
#include <zxsampler/sampler.h>
#include <zxsampler/types.h>

#include "status_names.h"

// Each status macro (this library's, or on Fuchsia the system's) has the list's value.
#define ZXS_STATUS_CHECK_(name, value) \
  _Static_assert((name) == (value), #name " has Fuchsia's value");
ZXS_STATUS_MAP(ZXS_STATUS_CHECK_)
#undef ZXS_STATUS_CHECK_

const char* zxs_status_name(zx_status_t status) {
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
  const char* name = zxs_status_name(status);
  return name != NULL ? name : "(unknown)";
}

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
