// Attached-thread slots: allocated and changed under the session lock, read by the sampling
// path (sampling.c).
#include "thread_table.h"

static zxs_thread_slot_t g_slots[ZXS_MAX_THREADS];

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
