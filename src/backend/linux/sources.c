// Linux: which source samples a thread, and at what period.
//
// perf task-clock with the kernel's stack walk first (source_perf_ring.c: no signal, the
// cheapest); perf task-clock with a signal when that cannot be had for a thread (its ring cannot
// be mapped: the locked-memory limit); the CPU-clock timer when perf is unavailable
// (perf_event_paranoid 3+, seccomp, no CONFIG_PERF_EVENTS) or the thread's event cannot be
// opened or routed. ZXSAMPLER_SOURCE=perf-ring|perf|cputimer starts a thread at that source
// instead (for tests and benchmarks); one it cannot have falls back to the sources below it, as
// the automatic choice does, and counts it (source_failures), so that no attach fails while a
// source can still take the thread.
//
// Periods: each perf source is never armed below its own throttle floor (throttle.c: perf-ring's
// measured on the ring path, perf's on the signal path), and each raise is counted; the timer
// source is never armed below one tick, its resolution (not counted as throttling: faster would
// only turn into overruns). slot->period holds the period in force.
//
// Descriptors: the perf sources hold one per thread (perf) or one per thread per CPU
// (perf-ring), which on a machine with many CPUs runs out long before the threads do. They
// never hold more than half of the soft RLIMIT_NOFILE between them: a thread that would go
// past it gets the next source down (counted as a fallback), so the program's own open() and
// socket() keep working however many threads are sampled. perf-ring stops at half of that.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/perf_event.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "linux_internal.h"
#include "platform.h"
#include "sampling.h"

// A new generation, never 0, unique for the life of the process (wraps after 2^32 arms).
static uint32_t next_gen(void) {
  static _Atomic uint32_t next = 1;
  uint32_t gen;
  do {
    gen = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
  } while (gen == 0);
  return gen;
}

typedef enum source_mode {
  SOURCE_AUTO = 0,  // perf-ring, else perf, else the CPU-clock timer
  SOURCE_RING,      // perf-ring first, whether or not the probe found it usable
  SOURCE_PERF,      // the signal source first (not perf-ring), else the CPU-clock timer
  SOURCE_CPUTIMER,  // the CPU-clock timer only
} source_mode_t;

// ZXSAMPLER_SOURCE=perf-ring|perf|cputimer (anything else, or unset: auto). Read at each arm.
static source_mode_t source_mode(void) {
  const char* value = getenv("ZXSAMPLER_SOURCE");
  if (value != NULL && strcmp(value, "perf-ring") == 0) {
    return SOURCE_RING;
  }
  if (value != NULL && strcmp(value, "perf") == 0) {
    return SOURCE_PERF;
  }
  if (value != NULL && strcmp(value, "cputimer") == 0) {
    return SOURCE_CPUTIMER;
  }
  return SOURCE_AUTO;
}

// Periods from here up are armed as asked without measuring what a sample costs: even at the
// worst cost seen on the development VM (~60 us) that is 6% of the thread, and calibrating
// costs every profiled process ~0.1 s of CPU (docs/PERFORMANCE.md).
#define NO_THROTTLE_PERIOD ((zx_duration_t)1000000)
// The same for perf-ring, whose samples cost the thread only the interrupt and the stack copy
// (13-17 us as its calibration measures it here, 20-25 us in compare_peers.sh runs under load,
// docs/PERFORMANCE.md): 4000 samples/s and slower run without calibrating, at most ~12% of the
// thread. Half of it would be up to the quarter the floor allows: no margin left to skip the
// measurement.
#define RING_NO_THROTTLE_PERIOD ((zx_duration_t)200000)

// The period a source is armed with for a requested one; *throttled when raised to protect the
// host (as opposed to the source's resolution).
static zx_duration_t effective_period(int kind, zx_duration_t requested, bool* throttled) {
  *throttled = false;
  const zx_duration_t no_throttle =
      kind == ZXS_SOURCE_PERF_RING ? RING_NO_THROTTLE_PERIOD : NO_THROTTLE_PERIOD;
  if (kind != ZXS_SOURCE_CPU_CLOCK_TIMER && requested >= no_throttle) {
    return requested;
  }
  if (kind != ZXS_SOURCE_CPU_CLOCK_TIMER) {
    // The floor of this very source: each perf source's sample cost is measured on its own path.
    const zx_duration_t floor = zxs_linux_perf_floor(kind);
    if (requested < floor) {
      *throttled = floor > ZXS_LINUX_PERF_MIN_PERIOD;
      return floor;
    }
    return requested;
  }
  const zx_duration_t tick = zxs_linux_cputimer_resolution();
  return requested < tick ? tick : requested;
}

// Descriptors held by armed perf sources, all slots (at most half of the soft RLIMIT_NOFILE).
static _Atomic uint32_t g_source_fds;

// Takes `need` descriptors from the budget, or from its first `share`-th; false (nothing
// taken) when they do not fit.
bool zxs_linux_fds_reserve(uint32_t need, uint32_t share) {
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) {
    files.rlim_cur = (rlim_t)UINT32_MAX * 2;
  }
  const uint64_t budget = (uint64_t)files.rlim_cur / 2 / share;
  uint32_t held = atomic_load(&g_source_fds);
  do {
    if ((uint64_t)held + need > budget) return false;
  } while (!atomic_compare_exchange_weak(&g_source_fds, &held, held + need));
  return true;
}

static void fds_release(zxs_linux_slot_t* st) {
  atomic_fetch_sub(&g_source_fds, atomic_exchange(&st->fds_held, 0));
}

void zxs_linux_fds_unreserve(uint32_t count) { atomic_fetch_sub(&g_source_fds, count); }

static uint32_t one_fd(void) { return 1; }

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
  zx_status_t status;
  if (atomic_load(&zxs_linux_slot(slot)->gen) != 0) {
    zxs_prim_source_disarm(slot);  // arming again replaces the source
  }
  const source_mode_t mode = source_mode();
  bool throttled = false;
  // Each perf source in order of preference; a forced one is where the order starts.
  static const struct {
    source_mode_t mode;
    int kind;
    zx_status_t (*arm)(zxs_thread_slot_t*, zx_duration_t, uint32_t);
    bool (*available)(void);
    uint32_t (*fds)(void);  // descriptors a thread armed with it holds
    uint32_t share;         // it arms while all sources hold less than 1/share of the budget
  } kPerf[] = {
      // perf-ring, a descriptor per CPU a thread, stops at half of the budget so that the
      // signal source, one a thread, samples the threads after it at their period, not the
      // timer at its tick: 384 threads instead of 256 on 2 CPUs, 258 instead of 8 on 64.
      {SOURCE_RING, ZXS_SOURCE_PERF_RING, zxs_linux_ring_arm, zxs_linux_ring_available,
       zxs_linux_ring_thread_fds, 2},
      {SOURCE_PERF, ZXS_SOURCE_PERF_TASK_CLOCK, zxs_linux_perf_arm, zxs_linux_perf_available,
       one_fd, 1},
  };
  const size_t first = mode == SOURCE_PERF ? 1 : mode == SOURCE_CPUTIMER ? 2 : 0;
  for (size_t i = first; i < sizeof(kPerf) / sizeof(kPerf[0]); i++) {
    if (mode != kPerf[i].mode && !kPerf[i].available()) continue;
    // A program that replaced our handler would receive our signals: refuse to arm them.
    if (kPerf[i].kind != ZXS_SOURCE_PERF_RING && (status = zxs_linux_signal_check()) != ZX_OK) {
      return status;
    }
    const uint32_t fds = kPerf[i].fds();
    const bool reserved = zxs_linux_fds_reserve(fds, mode == SOURCE_AUTO ? kPerf[i].share : 1);
    // perf-ring takes a thread its covering (inherited) events sample without descriptors of its
    // own: where they sample already, or where the budget has none left.
    if (kPerf[i].kind == ZXS_SOURCE_PERF_RING) {
      const zx_duration_t eff = effective_period(kPerf[i].kind, period, &throttled);
      if (zxs_linux_ring_arm_covered(slot, eff, next_gen(), reserved) == ZX_OK) {
        if (reserved) zxs_linux_fds_unreserve(fds);
        record_armed(slot, kPerf[i].kind, eff, throttled);
        return ZX_OK;
      }
    }
    if (!reserved) {
      status = ZX_ERR_NO_RESOURCES;
    } else {
      const zx_duration_t eff = effective_period(kPerf[i].kind, period, &throttled);
      status = kPerf[i].arm(slot, eff, next_gen());
      if (status == ZX_OK) {
        atomic_store(&zxs_linux_slot(slot)->fds_held, fds);
        record_armed(slot, kPerf[i].kind, eff, throttled);
        return ZX_OK;
      }
      atomic_fetch_sub(&g_source_fds, fds);
    }
    if (status == ZX_ERR_BAD_STATE) return status;
    // perf works in this process but not so for this thread (the descriptor budget or limit,
    // fd beyond the routing table, locked-memory limit for the ring), or a forced source is
    // not to be had: fall back, and say so.
    atomic_fetch_add(&slot->source_failures, 1);
  }
  if ((status = zxs_linux_signal_check()) != ZX_OK) {
    return status;
  }
  const zx_duration_t eff = effective_period(ZXS_SOURCE_CPU_CLOCK_TIMER, period, &throttled);
  status = zxs_linux_cputimer_arm(slot, eff, next_gen());
  if (status != ZX_OK) {
    return status;
  }
  record_armed(slot, ZXS_SOURCE_CPU_CLOCK_TIMER, eff, throttled);
  return ZX_OK;
}

// The event that keeps the kernel's perf scheduler hooks on between a session's creation and
// its end (zxs_prim_sampling_prepare): -1 when none. Under the session lock.
static int g_keeper = -1;
static uint64_t g_keeper_id;  // the program may have closed g_keeper (zxs_linux_perf_fd_is)

void zxs_prim_sampling_prepare(void) {
  if (g_keeper >= 0 || !zxs_linux_perf_available()) return;
  struct perf_event_attr attr;
  zxs_linux_task_clock_attr(&attr, ZXS_LINUX_PERF_MIN_PERIOD * 100);  // disabled: never counts
  g_keeper = zxs_linux_perf_event_open(&attr, 0, -1);
  g_keeper_id = zxs_linux_perf_id(g_keeper);
}

static void keeper_close(void) {
  if (zxs_linux_perf_fd_is(g_keeper, g_keeper_id)) close(g_keeper);
  g_keeper = -1;
}

void zxs_prim_sampling_idle(void) {
  zxs_linux_ring_idle();
  keeper_close();
}

void zxs_prim_sampling_started(zx_duration_t period) {
  zxs_linux_ring_unpark_rest();
  const source_mode_t mode = source_mode();
  if ((mode != SOURCE_AUTO && mode != SOURCE_RING) || !zxs_linux_ring_available()) return;
  bool throttled;
  zxs_linux_ring_cover(effective_period(ZXS_SOURCE_PERF_RING, period, &throttled));
}

void zxs_prim_source_disarm(zxs_thread_slot_t* slot) {
  if (slot == NULL) {
    return;
  }
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  // Each is idempotent and does nothing for a source that is not armed.
  const int kind = atomic_load(&st->kind);
  if (kind == ZXS_SOURCE_PERF_RING) {
    zxs_linux_ring_disarm(slot);
  } else if (kind == ZXS_SOURCE_PERF_TASK_CLOCK) {
    zxs_linux_perf_disarm(slot);
  } else {
    zxs_linux_cputimer_disarm(slot);
  }
  fds_release(st);
  atomic_store(&slot->armed, false);
}

void zxs_prim_source_park(zxs_thread_slot_t* slot) {
  if (slot == NULL) {
    return;
  }
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  if (atomic_load(&st->kind) != ZXS_SOURCE_PERF_RING) {
    zxs_prim_source_disarm(slot);
    return;
  }
  // The kept events hold descriptors, not counted while no thread is armed with them: the next
  // start takes them back from the budget as it arms the thread again.
  zxs_linux_ring_park(slot);
  fds_release(st);
  atomic_store(&slot->armed, false);
}

void zxs_prim_after_fork_child(void) {
  // POSIX timers are not inherited; perf descriptors are, and share their event with the parent.
  zxs_linux_perf_forget_all();
  zxs_linux_ring_forget_all();
  keeper_close();  // the child's copy: the parent keeps its own
  for (uint32_t i = 0; i < ZXS_MAX_THREADS; i++) {
    zxs_linux_slot_t* st = zxs_linux_slot(zxs_core_slot(i));
    atomic_store(&st->gen, 0);
    atomic_store(&st->fd, -1);
    atomic_store(&st->has_timer, false);
    atomic_store(&st->fds_held, 0);
  }
  atomic_store(&g_source_fds, 0);
}
