// Overwrite-oldest regions (see percpu_ring.h).
//
// Slot words are accessed as relaxed atomics on both sides, so a reader racing a writer reads
// stale or mixed words, never undefined behaviour; the sequence word tells it which copies hold.
#include "percpu_ring.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef _Atomic uint64_t ring_word_t;

_Static_assert(sizeof(ring_word_t) == sizeof(uint64_t), "slot words are plain 64-bit words");

static ring_word_t* slot_at(const uint8_t* base, size_t index) {
  return (ring_word_t*)(void*)(base + index * ZXS_RING_SLOT_BYTES);
}

void zxs_percpu_setup_ring(zxs_percpu_t* cpu, uint8_t* base, size_t slots, uint32_t session_gen) {
  assert(slots != 0);
  zxs_percpu_setup(cpu, base, slots * ZXS_RING_SLOT_BYTES, session_gen);
  cpu->ring_slots = slots;  // published with the others by the next enable
}

bool zxs_percpu_ring_put(zxs_percpu_t* cpu, const uint64_t* record, size_t words) {
  if (cpu->base == NULL || cpu->ring_slots == 0 || words == 0 || words >= ZXS_RING_SLOT_WORDS) {
    return false;
  }
  const uint64_t ticket = atomic_fetch_add_explicit(&cpu->reserved, 1, memory_order_relaxed);
  ring_word_t* slot = slot_at(cpu->base, (size_t)(ticket % cpu->ring_slots));
  const uint64_t writing = 2 * ticket + 1;
  uint64_t seq = atomic_load_explicit(&slot[0], memory_order_relaxed);
  do {
    // Odd: a writer of an older ticket is still in it (preempted mid-sample). Not below ours: a
    // newer ticket lapped us. Either way this sample loses, never the other one.
    if ((seq & 1u) != 0 || seq >= writing) return false;
  } while (!atomic_compare_exchange_weak_explicit(&slot[0], &seq, writing, memory_order_relaxed,
                                                  memory_order_relaxed));
  // The seqlock's writer side: the odd sequence is visible before any word of the record.
  atomic_thread_fence(memory_order_release);
  for (size_t i = 0; i < words; i++) {
    atomic_store_explicit(&slot[1 + i], record[i], memory_order_relaxed);
  }
  atomic_store_explicit(&slot[0], writing + 1, memory_order_release);
  return true;
}

typedef struct copied {
  uint64_t ticket;
  size_t words;
  uint64_t record[ZXS_RING_SLOT_WORDS - 1];
} copied_t;

static int by_ticket(const void* a, const void* b) {
  const uint64_t x = ((const copied_t*)a)->ticket, y = ((const copied_t*)b)->ticket;
  return x < y ? -1 : x > y;
}

// Copies slot `slot` if it holds a complete record: false if empty, being written, or torn.
static bool copy_slot(ring_word_t* slot, copied_t* out) {
  const uint64_t seq = atomic_load_explicit(&slot[0], memory_order_acquire);
  if (seq == 0 || (seq & 1u) != 0) return false;
  const uint64_t header = atomic_load_explicit(&slot[1], memory_order_relaxed);
  const size_t words = (size_t)((header >> 4) & 0xfffu);
  if (words < ZXS_FXT_SAMPLE_WORDS(1) || words >= ZXS_RING_SLOT_WORDS) return false;
  out->record[0] = header;
  for (size_t i = 1; i < words; i++) {
    out->record[i] = atomic_load_explicit(&slot[1 + i], memory_order_relaxed);
  }
  // The seqlock's reader side: the copy happens before the second look at the sequence.
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&slot[0], memory_order_relaxed) != seq) return false;
  out->ticket = seq / 2 - 1;
  out->words = words;
  return true;
}

zx_status_t zxs_percpu_ring_copy(const uint8_t* base, size_t slots, uint64_t since, uint64_t until,
                                 zxs_fxt_buf_t* out) {
  if (base == NULL || slots == 0) return out->status;
  copied_t* copies = malloc(slots * sizeof(*copies));
  if (copies == NULL) return ZX_ERR_NO_MEMORY;
  size_t count = 0;
  for (size_t i = 0; i < slots; i++) {
    if (!copy_slot(slot_at(base, i), &copies[count])) continue;
    const uint64_t ticks = copies[count].record[2];  // header, format word, timestamp
    if (ticks >= since && ticks <= until) count++;
  }
  qsort(copies, count, sizeof(*copies), by_ticket);
  for (size_t i = 0; i < count; i++) {
    zxs_fxt_write_raw(out, copies[i].record, copies[i].words * sizeof(uint64_t));
  }
  free(copies);
  return out->status;
}
