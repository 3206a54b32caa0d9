#include <zxsampler/sampler.h>
#include <zxsampler/types.h>

const char* zxs_status_string(zx_status_t status) {
  switch (status) {
#define ZXS_STATUS_CASE(name) \
  case name:                  \
    return #name;
    ZXS_STATUS_CASE(ZX_OK)
    ZXS_STATUS_CASE(ZX_ERR_INTERNAL)
    ZXS_STATUS_CASE(ZX_ERR_NOT_SUPPORTED)
    ZXS_STATUS_CASE(ZX_ERR_NO_RESOURCES)
    ZXS_STATUS_CASE(ZX_ERR_NO_MEMORY)
    ZXS_STATUS_CASE(ZX_ERR_INVALID_ARGS)
    ZXS_STATUS_CASE(ZX_ERR_BAD_HANDLE)
    ZXS_STATUS_CASE(ZX_ERR_WRONG_TYPE)
    ZXS_STATUS_CASE(ZX_ERR_BAD_SYSCALL)
    ZXS_STATUS_CASE(ZX_ERR_OUT_OF_RANGE)
    ZXS_STATUS_CASE(ZX_ERR_BUFFER_TOO_SMALL)
    ZXS_STATUS_CASE(ZX_ERR_BAD_STATE)
    ZXS_STATUS_CASE(ZX_ERR_TIMED_OUT)
    ZXS_STATUS_CASE(ZX_ERR_SHOULD_WAIT)
    ZXS_STATUS_CASE(ZX_ERR_CANCELED)
    ZXS_STATUS_CASE(ZX_ERR_PEER_CLOSED)
    ZXS_STATUS_CASE(ZX_ERR_NOT_FOUND)
    ZXS_STATUS_CASE(ZX_ERR_ALREADY_EXISTS)
    ZXS_STATUS_CASE(ZX_ERR_ALREADY_BOUND)
    ZXS_STATUS_CASE(ZX_ERR_UNAVAILABLE)
    ZXS_STATUS_CASE(ZX_ERR_ACCESS_DENIED)
    ZXS_STATUS_CASE(ZX_ERR_IO)
    ZXS_STATUS_CASE(ZX_ERR_IO_DATA_INTEGRITY)
    ZXS_STATUS_CASE(ZX_ERR_IO_INVALID)
    ZXS_STATUS_CASE(ZX_ERR_BAD_PATH)
    ZXS_STATUS_CASE(ZX_ERR_NOT_FILE)
    ZXS_STATUS_CASE(ZX_ERR_FILE_BIG)
    ZXS_STATUS_CASE(ZX_ERR_NO_SPACE)
#undef ZXS_STATUS_CASE
    default:
      return "(unknown)";
  }
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
