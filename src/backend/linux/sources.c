// Linux: which source samples a thread, and at what period.
//
// perf task-clock first; the CPU-clock timer when perf is unavailable (perf_event_paranoid 3+,
// seccomp, no CONFIG_PERF_EVENTS) or the thread's event cannot be opened or routed.
// ZXSAMPLER_SOURCE=perf|cputimer forces one source (no fallback), for tests and benchmarks.
//
// Periods: the perf source is never armed below the throttle floor (throttle.c), and each raise
// is counted; the timer source is never armed below one tick, its resolution (not counted as
// throttling: faster would only turn into overruns). slot->period holds the period in force.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "linux_internal.h"
#include "platform.h"
#include "sampling.h"

uint32_t zxs_linux_next_gen(void) {
  static _Atomic uint32_t next = 1;
  uint32_t gen;
  do {
    gen = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
  } while (gen == 0);
  return gen;
}

zxs_linux_source_mode_t zxs_linux_source_mode(void) {
  const char* value = getenv("ZXSAMPLER_SOURCE");
  if (value != NULL && strcmp(value, "perf") == 0) {
    return ZXS_LINUX_SOURCE_PERF;
  }
  if (value != NULL && strcmp(value, "cputimer") == 0) {
    return ZXS_LINUX_SOURCE_CPUTIMER;
  }
  return ZXS_LINUX_SOURCE_AUTO;
}

zxs_sample_source_t zxs_linux_default_source(void) {
  switch (zxs_linux_source_mode()) {
    case ZXS_LINUX_SOURCE_PERF:
      return ZXS_SOURCE_PERF_TASK_CLOCK;
    case ZXS_LINUX_SOURCE_CPUTIMER:
      return ZXS_SOURCE_CPU_CLOCK_TIMER;
    case ZXS_LINUX_SOURCE_AUTO:
    default:
      return zxs_linux_perf_available() ? ZXS_SOURCE_PERF_TASK_CLOCK : ZXS_SOURCE_CPU_CLOCK_TIMER;
  }
}

zx_duration_t zxs_linux_default_resolution(void) {
  return zxs_linux_default_source() == ZXS_SOURCE_PERF_TASK_CLOCK ? ZXS_LINUX_PERF_MIN_PERIOD
                                                                  : zxs_linux_cputimer_resolution();
}

// Periods from here up are armed as asked without measuring what a sample costs: even at the
// worst cost seen on the development VM (~60 us) that is 6% of the thread, and calibrating
// costs every profiled process ~0.1 s of CPU (docs/PERFORMANCE.md).
#define NO_THROTTLE_PERIOD ((zx_duration_t)1000000)

// The period a source is armed with for a requested one; *throttled when raised to protect the
// host (as opposed to the source's resolution).
static zx_duration_t effective_period(int kind, zx_duration_t requested, bool* throttled) {
  *throttled = false;
  if (kind == ZXS_SOURCE_PERF_TASK_CLOCK && requested >= NO_THROTTLE_PERIOD) {
    return requested;
  }
  if (kind == ZXS_SOURCE_PERF_TASK_CLOCK) {
    const zx_duration_t floor = zxs_linux_perf_floor();
    if (requested < floor) {
      *throttled = floor > ZXS_LINUX_PERF_MIN_PERIOD;
      return floor;
    }
    return requested;
  }
  const zx_duration_t tick = zxs_linux_cputimer_resolution();
  return requested < tick ? tick : requested;
}

static void record_armed(zxs_thread_slot_t* slot, int kind, zx_duration_t period, bool throttled) {
  atomic_store(&slot->source_kind, kind);
  atomic_store(&slot->period, period);
  atomic_store(&slot->armed, true);
  if (throttled) {
    zxs_core_count_throttled(slot);
  }
}

zx_status_t zxs_prim_source_arm(zxs_thread_slot_t* slot, zx_duration_t period) {
  if (slot == NULL || period <= 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  // A program that replaced our handler would receive our signals: refuse to arm.
  zx_status_t status = zxs_linux_signal_check();
  if (status != ZX_OK) {
    return status;
  }
  if (atomic_load(&zxs_linux_slot(slot)->gen) != 0) {
    zxs_prim_source_disarm(slot);  // arming again replaces the source
  }
  const zxs_linux_source_mode_t mode = zxs_linux_source_mode();
  bool throttled = false;
  if (mode == ZXS_LINUX_SOURCE_PERF ||
      (mode == ZXS_LINUX_SOURCE_AUTO && zxs_linux_perf_available())) {
    const zx_duration_t eff = effective_period(ZXS_SOURCE_PERF_TASK_CLOCK, period, &throttled);
    status = zxs_linux_perf_arm(slot, eff, zxs_linux_next_gen());
    if (status == ZX_OK) {
      record_armed(slot, ZXS_SOURCE_PERF_TASK_CLOCK, eff, throttled);
      return ZX_OK;
    }
    if (mode == ZXS_LINUX_SOURCE_PERF || status == ZX_ERR_BAD_STATE) {
      return status == ZX_ERR_NOT_SUPPORTED ? ZX_ERR_NO_RESOURCES : status;
    }
    // perf works in this process but not for this thread (fd limit, fd beyond the routing
    // table): fall back, and say so.
    atomic_fetch_add(&slot->source_failures, 1);
  }
  const zx_duration_t eff = effective_period(ZXS_SOURCE_CPU_CLOCK_TIMER, period, &throttled);
  status = zxs_linux_cputimer_arm(slot, eff, zxs_linux_next_gen());
  if (status != ZX_OK) {
    return status;
  }
  record_armed(slot, ZXS_SOURCE_CPU_CLOCK_TIMER, eff, throttled);
  return ZX_OK;
}

void zxs_prim_source_disarm(zxs_thread_slot_t* slot) {
  if (slot == NULL) {
    return;
  }
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  // Both are idempotent and do nothing for the source that is not armed.
  if (atomic_load(&st->kind) == ZXS_SOURCE_PERF_TASK_CLOCK) {
    zxs_linux_perf_disarm(slot);
  } else {
    zxs_linux_cputimer_disarm(slot);
  }
  atomic_store(&slot->armed, false);
}

zx_status_t zxs_prim_source_set_period(zxs_thread_slot_t* slot, zx_duration_t period) {
  if (slot == NULL || period <= 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  if (atomic_load(&st->gen) == 0) {
    return ZX_ERR_BAD_STATE;
  }
  const int kind = atomic_load(&st->kind);
  bool throttled = false;
  // The floor is already known here (arm measured it), so this stays signal-safe.
  const zx_duration_t eff = effective_period(kind, period, &throttled);
  zx_status_t status = kind == ZXS_SOURCE_PERF_TASK_CLOCK
                           ? zxs_linux_perf_set_period(slot, eff)
                           : zxs_linux_cputimer_set_period(slot, eff);
  if (status != ZX_OK) {
    return status;
  }
  atomic_store(&slot->period, eff);
  if (throttled) {
    zxs_core_count_throttled(slot);
  }
  return ZX_OK;
}

void zxs_prim_after_fork_child(void) {
  // POSIX timers are not inherited; perf descriptors are, and share their event with the parent.
  zxs_linux_perf_forget_all();
  for (uint32_t i = 0; i < ZXS_MAX_THREADS; i++) {
    zxs_linux_slot_t* st = zxs_linux_slot(zxs_core_slot(i));
    atomic_store(&st->gen, 0);
    atomic_store(&st->fd, -1);
    atomic_store(&st->has_timer, false);
  }
}
