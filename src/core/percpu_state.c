// The per-CPU state protocol (see percpu_state.h and seed 004).
//
// Why the orderings are enough: every change of `state` is a read-modify-write, so all of them
// sit in one modification order and each release operation heads a release sequence that every
// later RMW continues. Exclusion between writers and shutdown comes from that order alone: a
// writer's increment lands either before the disable (and shutdown, whose later loads read the
// disable or something after it, sees the writer until it ends) or after it (and then the writer
// saw writes-enabled clear and did not increment). The acquire/release pairs below only carry the
// *data* around that: region pointers to writers, record bytes to whoever stopped them.
#include "percpu_state.h"

#include <assert.h>
#include <stdlib.h>

#include "platform.h"

// Contract checks on the signal-safe paths. assert() reports through stdio, which a handler must
// not call; abort() is async-signal-safe. Compiled out with NDEBUG, like assert().
#ifdef NDEBUG
#define ZXS_SIGNAL_SAFE_CHECK(cond) ((void)0)
#else
#define ZXS_SIGNAL_SAFE_CHECK(cond) ((cond) ? (void)0 : abort())
#endif

// Signal handlers use these words; a lock-based fallback could deadlock against the thread the
// handler interrupted. uint64_t is `long` or `long long` depending on the ABI: accept either.
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 || (ATOMIC_LONG_LOCK_FREE == 2 && sizeof(long) == 8),
               "64-bit atomics must be lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free");
_Static_assert(ATOMIC_BOOL_LOCK_FREE == 2, "atomic bool must be lock-free");

void zxs_percpu_setup(zxs_percpu_t* cpu, uint8_t* base, size_t size, uint32_t session_gen) {
  assert(((uintptr_t)base & 7u) == 0);  // records are written as 64-bit words
  assert((atomic_load_explicit(&cpu->state, memory_order_relaxed) &
          (ZXS_PERCPU_WRITES_ENABLED | ZXS_PERCPU_TIMER_MASK | ZXS_PERCPU_WRITER_MASK)) == 0);
  // Plain and relaxed stores: the next zxs_percpu_enable_writes() (a release) publishes them to
  // every writer that gets in. `state` is not touched: its counts belong to the protocol.
  cpu->base = base;
  cpu->size = size;
  cpu->ring_slots = 0;
  atomic_store_explicit(&cpu->reserved, 0, memory_order_relaxed);
  atomic_store_explicit(&cpu->full, false, memory_order_relaxed);
  atomic_store_explicit(&cpu->fill_end, UINT64_MAX, memory_order_relaxed);
  atomic_store_explicit(&cpu->session_gen, session_gen, memory_order_relaxed);
  atomic_store_explicit(&cpu->written, 0, memory_order_relaxed);
  atomic_store_explicit(&cpu->dropped_full, 0, memory_order_relaxed);
  atomic_store_explicit(&cpu->dropped_other, 0, memory_order_relaxed);
}

void zxs_percpu_release(zxs_percpu_t* cpu) {
  // After shutdown nobody can be between begin_write and end_write, and nobody can get there
  // before the next setup + enable; generation 0 makes any writer of a session report STALE.
  atomic_store_explicit(&cpu->session_gen, 0, memory_order_relaxed);
  cpu->base = NULL;
  cpu->size = 0;
  cpu->ring_slots = 0;
}

void zxs_percpu_reopen(zxs_percpu_t* cpu) {
  const uint64_t end = atomic_load_explicit(&cpu->fill_end, memory_order_relaxed);
  if (end == UINT64_MAX) return;
  atomic_store_explicit(&cpu->reserved, end, memory_order_relaxed);
  atomic_store_explicit(&cpu->fill_end, UINT64_MAX, memory_order_relaxed);
  atomic_store_explicit(&cpu->full, false, memory_order_relaxed);
}

void zxs_percpu_enable_writes(zxs_percpu_t* cpu) {
  // Release: a writer's acquiring begin_write reads from this RMW's release sequence and so sees
  // setup's base/size/session_gen, and the reservation state the previous run left.
  atomic_fetch_or_explicit(&cpu->state, ZXS_PERCPU_WRITES_ENABLED, memory_order_release);
}

void zxs_percpu_disable_writes(zxs_percpu_t* cpu) {
  // Relaxed: writers that see the bit clear do nothing, so there is nothing to publish to them,
  // and the waits that follow in shutdown read this word (coherence orders them after it).
  atomic_fetch_and_explicit(&cpu->state, ~ZXS_PERCPU_WRITES_ENABLED, memory_order_relaxed);
}

bool zxs_percpu_begin_write(zxs_percpu_t* cpu) {
  // The seed's "check, set, check again" as one CAS: the count is raised only in a state that
  // has writes-enabled set, so a writer arriving after the disable never holds anything (and a
  // late signal after the session's end does not even write the word).
  uint64_t old = atomic_load_explicit(&cpu->state, memory_order_relaxed);
  do {
    if ((old & ZXS_PERCPU_WRITES_ENABLED) == 0) {
      return false;
    }
    // Acquire on success: the writer's later loads of base/size/session_gen/full and its stores
    // into the region cannot move before the point where it was admitted.
  } while (!atomic_compare_exchange_weak_explicit(&cpu->state, &old, old + ZXS_PERCPU_WRITER_ONE,
                                                  memory_order_acquire, memory_order_relaxed));
  return true;
}

void zxs_percpu_end_write(zxs_percpu_t* cpu) {
  // Release: the record's bytes (and the counters) happen before shutdown's acquiring wait that
  // sees the count drop, so a reader after stop sees every byte.
  uint64_t old =
      atomic_fetch_sub_explicit(&cpu->state, ZXS_PERCPU_WRITER_ONE, memory_order_release);
  ZXS_SIGNAL_SAFE_CHECK((old & ZXS_PERCPU_WRITER_MASK) != 0);  // an end without a begin here
  (void)old;
}

bool zxs_percpu_timer_set(zxs_percpu_t* cpu) {
  uint64_t old = atomic_load_explicit(&cpu->state, memory_order_relaxed);
  do {
    if ((old & ZXS_PERCPU_WRITES_ENABLED) == 0) {
      return false;
    }
    // Acquire on success, as begin_write: the callback uses state its owner set up before the
    // enable (a release), and must see it. (Relaxed here was a race TSan caught: a callback's
    // write was not ordered after the owner's reset of the callback's state.)
  } while (!atomic_compare_exchange_weak_explicit(&cpu->state, &old, old + ZXS_PERCPU_TIMER_ONE,
                                                  memory_order_acquire, memory_order_relaxed));
  return true;
}

bool zxs_percpu_timer_rearm(zxs_percpu_t* cpu) {
  uint64_t old = atomic_load_explicit(&cpu->state, memory_order_relaxed);
  do {
    ZXS_SIGNAL_SAFE_CHECK((old & ZXS_PERCPU_TIMER_MASK) != 0);  // rearm without a pending timer
    if ((old & ZXS_PERCPU_WRITES_ENABLED) != 0) {
      return true;  // keep the mark; the caller re-arms
    }
    // Release on the drop: the callback's work happens before shutdown's phase-2 wait ends.
  } while (!atomic_compare_exchange_weak_explicit(&cpu->state, &old, old - ZXS_PERCPU_TIMER_ONE,
                                                  memory_order_release, memory_order_relaxed));
  return false;
}

void zxs_percpu_timer_clear(zxs_percpu_t* cpu) {
  // Release, as for the drop in rearm.
  uint64_t old = atomic_fetch_sub_explicit(&cpu->state, ZXS_PERCPU_TIMER_ONE, memory_order_release);
  ZXS_SIGNAL_SAFE_CHECK((old & ZXS_PERCPU_TIMER_MASK) != 0);  // a clear without a set
  (void)old;
}

bool zxs_percpu_writes_enabled(const zxs_percpu_t* cpu) {
  // Relaxed: a snapshot for decisions that are re-checked by begin_write / timer_set.
  return (atomic_load_explicit(&cpu->state, memory_order_relaxed) & ZXS_PERCPU_WRITES_ENABLED) != 0;
}

uint32_t zxs_percpu_pending_writes(const zxs_percpu_t* cpu) {
  // Acquire: a caller that sees 0 may read what the writers that ended wrote.
  uint64_t state = atomic_load_explicit(&cpu->state, memory_order_acquire);
  return (uint32_t)((state & ZXS_PERCPU_WRITER_MASK) >> 32);
}

uint32_t zxs_percpu_pending_timers(const zxs_percpu_t* cpu) {
  // Acquire: a caller that sees 0 may tear down what the timer callbacks used.
  uint64_t state = atomic_load_explicit(&cpu->state, memory_order_acquire);
  return (uint32_t)((state & ZXS_PERCPU_TIMER_MASK) >> 1);
}

uint8_t* zxs_percpu_reserve(zxs_percpu_t* cpu, size_t bytes) {
  if (bytes == 0 || (bytes & 7u) != 0 || cpu->base == NULL) {
    return NULL;  // a caller's mistake or no region: not a reason to stop the CPU
  }
  // Relaxed everywhere: the bytes are published by end_write, and `full` is only a shortcut.
  // Correctness rests on `reserved` never going down while writes run: the failed add below
  // already moved it past the end, so every later reservation fails too, however small, and no
  // record ever follows a gap. The failure with the lowest start is where the data ends
  // (fill_end): reopen puts `reserved` back there while no writer can be in flight.
  if (atomic_load_explicit(&cpu->full, memory_order_relaxed)) {
    return NULL;
  }
  uint64_t old = atomic_fetch_add_explicit(&cpu->reserved, (uint64_t)bytes, memory_order_relaxed);
  if (old <= cpu->size && bytes <= cpu->size - old) {
    return cpu->base + old;
  }
  uint64_t end = atomic_load_explicit(&cpu->fill_end, memory_order_relaxed);
  while (old < end && !atomic_compare_exchange_weak_explicit(
                          &cpu->fill_end, &end, old, memory_order_relaxed, memory_order_relaxed)) {
  }
  atomic_store_explicit(&cpu->full, true, memory_order_relaxed);
  return NULL;
}

void zxs_percpu_shutdown(zxs_percpu_t* cpus, size_t count, void (*cancel_timers)(void* ctx),
                         void* ctx) {
  // Phase 1: from here on no writer is admitted and no timer is marked on any CPU.
  for (size_t i = 0; i < count; i++) {
    zxs_percpu_disable_writes(&cpus[i]);
  }
  // Phase 2: sources stop; callbacks already running drop their marks via rearm.
  if (cancel_timers != NULL) {
    cancel_timers(ctx);
  }
  for (size_t i = 0; i < count; i++) {
    while (zxs_percpu_pending_timers(&cpus[i]) != 0) {  // acquire
      zxs_prim_relax();
    }
  }
  // Phase 3: writers admitted before phase 1 finish. The acquiring loads synchronise with their
  // end_write, so the caller may read, unmap or release the regions once this returns.
  for (size_t i = 0; i < count; i++) {
    while (zxs_percpu_pending_writes(&cpus[i]) != 0) {  // acquire
      zxs_prim_relax();
    }
  }
}
