// Attached-thread slots and the sampling entry point.
#include "thread_table.h"

#include <stdlib.h>

#include "percpu_state.h"
#include "sample_writer.h"

static zxs_thread_slot_t g_slots[ZXS_MAX_THREADS];

// Published once (release) and never freed, so the sampling path may read it at any time.
static _Atomic(zxs_percpu_t*) g_percpu;
static uint32_t g_percpu_count;

zxs_percpu_t* zxs_percpu_states(uint32_t* count) {
  zxs_percpu_t* states = atomic_load_explicit(&g_percpu, memory_order_acquire);
  if (states == NULL) {
    // Callers hold the session lock, so only one thread gets here at a time.
    zxs_prim_caps_t caps;
    zxs_prim_get_caps(&caps);
    states = aligned_alloc(_Alignof(zxs_percpu_t), sizeof(zxs_percpu_t) * caps.cpu_number_limit);
    if (states == NULL) return NULL;
    for (uint32_t i = 0; i < caps.cpu_number_limit; i++) {
      zxs_percpu_t* s = &states[i];
      atomic_init(&s->state, 0);
      atomic_init(&s->reserved, 0);
      atomic_init(&s->session_gen, 0);
      atomic_init(&s->full, false);
      s->base = NULL;
      s->size = 0;
      atomic_init(&s->written, 0);
      atomic_init(&s->dropped_full, 0);
      atomic_init(&s->dropped_other, 0);
    }
    g_percpu_count = caps.cpu_number_limit;
    atomic_store_explicit(&g_percpu, states, memory_order_release);
  }
  *count = g_percpu_count;
  return states;
}

zxs_thread_slot_t* zxs_core_slot(uint32_t index) {
  return index < ZXS_MAX_THREADS ? &g_slots[index] : NULL;
}

zxs_thread_slot_t* zxs_slot_find(zx_koid_t koid, uint32_t session_gen) {
  for (uint32_t i = 0; i < ZXS_MAX_THREADS; i++) {
    zxs_thread_slot_t* s = &g_slots[i];
    if (atomic_load(&s->state) == ZXS_SLOT_ATTACHED && s->thread.koid == koid &&
        atomic_load(&s->session_gen) == session_gen) {
      return s;
    }
  }
  return NULL;
}

zxs_thread_slot_t* zxs_slot_attach(const zxs_prim_thread_t* thread, zx_koid_t process_koid,
                                   uint32_t session_gen, zx_duration_t period) {
  for (uint32_t i = 0; i < ZXS_MAX_THREADS; i++) {
    zxs_thread_slot_t* s = &g_slots[i];
    if (atomic_load(&s->state) != ZXS_SLOT_FREE) continue;
    // Seqlock writer: the bump is ordered before the field stores (release fence), so a reader
    // that sees any new field sees the new generation on its re-check.
    atomic_fetch_add_explicit(&s->attach_gen, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    s->index = i;
    s->thread = *thread;
    atomic_store_explicit(&s->koid, thread->koid, memory_order_relaxed);
    atomic_store_explicit(&s->process_koid, process_koid, memory_order_relaxed);
    atomic_store_explicit(&s->stack_lo, thread->stack_lo, memory_order_relaxed);
    atomic_store_explicit(&s->stack_hi, thread->stack_hi, memory_order_relaxed);
    atomic_store(&s->session_gen, session_gen);
    atomic_store(&s->source_kind, ZXS_SOURCE_NONE);
    atomic_store(&s->armed, false);
    atomic_store(&s->period, period);
    atomic_store(&s->walks_truncated, 0);
    atomic_store(&s->throttled, 0);
    atomic_store(&s->overruns, 0);
    atomic_store(&s->source_failures, 0);
    atomic_store_explicit(&s->state, ZXS_SLOT_ATTACHED, memory_order_release);
    return s;
  }
  return NULL;
}

void zxs_slot_free(zxs_thread_slot_t* slot) {
  atomic_store_explicit(&slot->state, ZXS_SLOT_FREE, memory_order_release);
  atomic_fetch_add_explicit(&slot->attach_gen, 1, memory_order_release);
}

zxs_thread_slot_t* zxs_slot_next(uint32_t session_gen, zxs_thread_slot_t* prev) {
  uint32_t start = prev == NULL ? 0 : prev->index + 1;
  for (uint32_t i = start; i < ZXS_MAX_THREADS; i++) {
    zxs_thread_slot_t* s = &g_slots[i];
    if (atomic_load(&s->state) == ZXS_SLOT_ATTACHED &&
        atomic_load(&s->session_gen) == session_gen) {
      return s;
    }
  }
  return NULL;
}

void zxs_core_count_overruns(zxs_thread_slot_t* slot, uint64_t n) {
  atomic_fetch_add_explicit(&slot->overruns, n, memory_order_relaxed);
}

void zxs_core_count_throttled(zxs_thread_slot_t* slot) {
  atomic_fetch_add_explicit(&slot->throttled, 1, memory_order_relaxed);
}

// What the sampling path reads of a slot, copied under the seqlock.
typedef struct slot_snapshot {
  zx_koid_t koid;
  zx_koid_t pid;
  uintptr_t stack_lo;
  uintptr_t stack_hi;
  uint32_t session_gen;
} slot_snapshot_t;

// [signal-safe] Seqlock reader: false when the slot is no longer the attachment `attach_gen`.
// The caller holds a pending write, so the slot cannot be reused under it after this returns.
static bool read_slot(zxs_thread_slot_t* slot, uint32_t attach_gen, slot_snapshot_t* out) {
  if (atomic_load_explicit(&slot->state, memory_order_acquire) != ZXS_SLOT_ATTACHED ||
      atomic_load_explicit(&slot->attach_gen, memory_order_acquire) != attach_gen) {
    return false;
  }
  out->koid = atomic_load_explicit(&slot->koid, memory_order_relaxed);
  out->pid = atomic_load_explicit(&slot->process_koid, memory_order_relaxed);
  out->stack_lo = atomic_load_explicit(&slot->stack_lo, memory_order_relaxed);
  out->stack_hi = atomic_load_explicit(&slot->stack_hi, memory_order_relaxed);
  out->session_gen = atomic_load_explicit(&slot->session_gen, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&slot->attach_gen, memory_order_relaxed) == attach_gen;
}

static zxs_percpu_t* percpu_of(uint32_t cpu) {
  zxs_percpu_t* states = atomic_load_explicit(&g_percpu, memory_order_acquire);
  return states != NULL && cpu < g_percpu_count ? &states[cpu] : NULL;
}

// The sampling path after the CPU is chosen: a pending write on `state` (so stop, and the slot
// reuse that may follow it, waits for all of it, walk included), the slot check, the walk over
// the live stack (`copy` NULL: timestamped after the walk) or over a copy of it (`copy`, taken
// at `ticks`), the record.
static void sample_on(zxs_percpu_t* state, zxs_thread_slot_t* slot, uint32_t attach_gen,
                      const zxs_regs_t* regs, const void* copy, size_t copy_len, uint64_t ticks) {
  if (state == NULL || !zxs_percpu_begin_write(state)) return;
  slot_snapshot_t snap;
  if (!read_slot(slot, attach_gen, &snap)) {
    zxs_percpu_end_write(state);
    return;
  }
  uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
  bool truncated = false;
  const size_t n =
      copy == NULL
          ? zxs_frame_walk(regs, snap.stack_lo, snap.stack_hi, pcs, ZX_SAMPLER_MAX_FRAMES,
                           &truncated)
          : zxs_frame_walk_copy(regs, snap.stack_lo, snap.stack_hi, copy, copy_len, pcs,
                                ZX_SAMPLER_MAX_FRAMES, &truncated);
  if (copy == NULL) ticks = zxs_prim_ticks();
  zxs_write_result_t result =
      zxs_sample_write(state, snap.session_gen, ticks, snap.pid, snap.koid, pcs, n);
  zxs_percpu_end_write(state);
  if (result == ZXS_WRITE_OK && truncated) {
    atomic_fetch_add_explicit(&slot->walks_truncated, 1, memory_order_relaxed);
  }
}

void zxs_core_sample(zxs_thread_slot_t* slot, uint32_t attach_gen, const zxs_regs_t* regs) {
  // The thread may migrate during the sample: it ends on the state it began on.
  sample_on(percpu_of(zxs_prim_current_cpu()), slot, attach_gen, regs, NULL, 0, 0);
}

void zxs_core_sample_copy(zxs_thread_slot_t* slot, uint32_t attach_gen, uint32_t cpu,
                          uint64_t ticks, const zxs_regs_t* regs, const void* stack,
                          size_t stack_len) {
  // A copy of nothing is still a copy: the PC alone, never the collector's own stack.
  static const uint64_t kEmpty = 0;
  sample_on(percpu_of(cpu), slot, attach_gen, regs, stack != NULL ? stack : &kEmpty,
            stack != NULL ? stack_len : 0, ticks);
}

void zxs_core_count_dropped(uint32_t cpu, uint64_t n) {
  zxs_percpu_t* state = percpu_of(cpu);
  if (state == NULL || !zxs_percpu_begin_write(state)) return;
  atomic_fetch_add_explicit(&state->dropped_other, n, memory_order_relaxed);
  zxs_percpu_end_write(state);
}
