// Fuchsia: the flight recorder (recorder.h) is not available on the thin backend. Its buffers are
// this library's own overwrite-oldest sessions (core/percpu_ring.h), and on Fuchsia sessions are
// the kernel's, whose only discipline is ZX_IOB_DISCIPLINE_NONE. The calls that would record say
// ZX_ERR_NOT_SUPPORTED; the deadlines still tell a late period, without an alert.
#include <zxsampler/recorder.h>

#include "ticks.h"
#include "zircon_syscalls.h"

zx_status_t zxs_recorder_start(const zxs_recorder_options_t* options) {
  (void)options;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_recorder_attach_current_thread(void) { return ZX_ERR_NOT_SUPPORTED; }

zx_status_t zxs_recorder_stop(void) { return ZX_ERR_NOT_SUPPORTED; }

zx_status_t zxs_trace_alert(const char* name) {
  (void)name;
  return ZX_ERR_NOT_SUPPORTED;
}

// Monotonic ns from the kernel's ticks.
static zx_time_t now_ns(void) {
  return (zx_time_t)zxs_ticks_to_ns((uint64_t)zx_ticks_get(), (uint64_t)zx_ticks_per_second());
}

// As recorder.c, without the alert and the thread's times.
#define DEADLINE_OPEN 0x7a78646cu

zx_status_t zxs_deadline_begin(zxs_deadline_t* d, zx_duration_t budget) {
  if (d == NULL) return ZX_ERR_INVALID_ARGS;
  if (budget <= 0) {
    d->reserved0 = 0;
    return ZX_ERR_INVALID_ARGS;
  }
  d->budget = budget;
  d->fields = 0;
  d->begin = now_ns();
  d->reserved0 = DEADLINE_OPEN;
  return ZX_OK;
}

zx_status_t zxs_deadline_end(zxs_deadline_t* d) {
  if (d == NULL) return ZX_ERR_INVALID_ARGS;
  if (d->reserved0 != DEADLINE_OPEN) return ZX_ERR_BAD_STATE;
  d->reserved0 = 0;
  return now_ns() - d->begin > d->budget ? ZX_ERR_TIMED_OUT : ZX_OK;
}
