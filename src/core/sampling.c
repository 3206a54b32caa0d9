// The sampling path: source -> sampling entry -> per-CPU reserve -> walk -> record.
//
// Every function here but zxs_percpu_states() runs on the sampling path (a signal handler, a
// backend's collector, a sampler thread with its target suspended): no allocation, no lock.
#include "sampling.h"

#include <stdlib.h>

#include "percpu_state.h"
#include "sample_writer.h"

// Published once (release) and never freed, so the sampling path may read it at any time.
static _Atomic(zxs_percpu_t*) g_percpu;
static uint32_t g_percpu_count;
// zxs_prim_current_cpu() says where a thread runs (the caps, read at each session set-up).
static _Atomic bool g_cpu_attribution;

zxs_percpu_t* zxs_percpu_states(uint32_t* count) {
  // Callers hold the session lock, so only one thread gets here at a time.
  zxs_prim_caps_t caps;
  zxs_prim_get_caps(&caps);
  atomic_store_explicit(&g_cpu_attribution, caps.has_cpu_attribution, memory_order_relaxed);
  zxs_percpu_t* states = atomic_load_explicit(&g_percpu, memory_order_acquire);
  if (states == NULL) {
    states = aligned_alloc(_Alignof(zxs_percpu_t), sizeof(zxs_percpu_t) * caps.cpu_number_limit);
    if (states == NULL) return NULL;
    for (uint32_t i = 0; i < caps.cpu_number_limit; i++) {
      zxs_percpu_t* s = &states[i];
      atomic_init(&s->state, 0);
      atomic_init(&s->reserved, 0);
      atomic_init(&s->session_gen, 0);
      atomic_init(&s->full, false);
      atomic_init(&s->fill_end, UINT64_MAX);
      s->base = NULL;
      s->size = 0;
      s->ring_slots = 0;
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

zxs_percpu_t* zxs_core_percpu_of(uint32_t cpu, const zxs_thread_slot_t* slot) {
  zxs_percpu_t* states = atomic_load_explicit(&g_percpu, memory_order_acquire);
  if (states == NULL || g_percpu_count == 0) return NULL;
  if (cpu == ZXS_CPU_UNKNOWN) cpu = slot->index % g_percpu_count;
  return cpu < g_percpu_count ? &states[cpu] : NULL;
}

// The sampling path after the CPU is chosen: a pending write on `state` (so stop, and the slot
// reuse that may follow it, waits for all of it, walk included), the slot check, the walk over
// the live stack (`copy` NULL: timestamped after the walk) or over a copy of it (`copy`, taken
// at `ticks`), the record. Returns the copy the walk needed (0: none walked).
static size_t sample_on(zxs_percpu_t* state, zxs_thread_slot_t* slot, uint32_t attach_gen,
                        const zxs_regs_t* regs, const void* copy, size_t copy_len, uint64_t ticks) {
  if (state == NULL || !zxs_percpu_begin_write(state)) return 0;
  slot_snapshot_t snap;
  if (!read_slot(slot, attach_gen, &snap)) {
    zxs_percpu_end_write(state);
    return 0;
  }
  uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
  bool truncated = false;
  size_t needed = 0;
  const size_t n = copy == NULL
                       ? zxs_frame_walk(regs, snap.stack_lo, snap.stack_hi, pcs,
                                        ZX_SAMPLER_MAX_FRAMES, &truncated)
                       : zxs_frame_walk_copy(regs, snap.stack_lo, snap.stack_hi, copy, copy_len,
                                             pcs, ZX_SAMPLER_MAX_FRAMES, &truncated, &needed);
  if (copy == NULL) ticks = zxs_prim_ticks();
  zxs_write_result_t result =
      zxs_sample_write(state, snap.session_gen, ticks, snap.pid, snap.koid, pcs, n);
  zxs_percpu_end_write(state);
  if (result == ZXS_WRITE_OK && truncated) {
    atomic_fetch_add_explicit(&slot->walks_truncated, 1, memory_order_relaxed);
  }
  return needed;
}

void zxs_core_sample(zxs_thread_slot_t* slot, uint32_t attach_gen, const zxs_regs_t* regs) {
  // The thread may migrate during the sample: it ends on the state it began on.
  const uint32_t cpu = atomic_load_explicit(&g_cpu_attribution, memory_order_relaxed)
                           ? zxs_prim_current_cpu()
                           : ZXS_CPU_UNKNOWN;
  sample_on(zxs_core_percpu_of(cpu, slot), slot, attach_gen, regs, NULL, 0, 0);
}

void zxs_core_sample_suspended(zxs_thread_slot_t* slot, uint32_t attach_gen, uint32_t cpu,
                               const zxs_regs_t* regs) {
  // The same walk as in the thread itself: the suspended thread's live stack, within its
  // bounds, timestamped after the walk.
  sample_on(zxs_core_percpu_of(cpu, slot), slot, attach_gen, regs, NULL, 0, 0);
}

size_t zxs_core_sample_copy(zxs_thread_slot_t* slot, uint32_t attach_gen, uint32_t cpu,
                            uint64_t ticks, const zxs_regs_t* regs, const void* stack,
                            size_t stack_len) {
  // A copy of nothing is still a copy: the PC alone, never the collector's own stack.
  static const uint64_t kEmpty = 0;
  return sample_on(zxs_core_percpu_of(cpu, slot), slot, attach_gen, regs,
                   stack != NULL ? stack : &kEmpty, stack != NULL ? stack_len : 0, ticks);
}

void zxs_core_count_dropped(uint32_t cpu, uint64_t n) {
  zxs_percpu_t* states = atomic_load_explicit(&g_percpu, memory_order_acquire);
  zxs_percpu_t* state = states != NULL && cpu < g_percpu_count ? &states[cpu] : NULL;
  if (state == NULL || !zxs_percpu_begin_write(state)) return;
  atomic_fetch_add_explicit(&state->dropped_other, n, memory_order_relaxed);
  zxs_percpu_end_write(state);
}
