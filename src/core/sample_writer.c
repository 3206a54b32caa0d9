// One sample record into a CPU's region (signal-safe: atomics and stores only).
#include "sample_writer.h"

#include <zxsampler/fxt.h>
#include <zxsampler/sampler.h>

#include "percpu_ring.h"

static void count(_Atomic uint64_t* counter) {
  // Relaxed: statistics. Bumped before end_write, so a reader after stop sees final values.
  atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

zxs_write_result_t zxs_sample_write(zxs_percpu_t* cpu, uint32_t session_gen, uint64_t ticks,
                                    uint64_t pid, uint64_t tid, const uint64_t* pcs, size_t n) {
  // The arguments first: a bad call never takes part in the protocol.
  if (n == 0 || n > ZX_SAMPLER_MAX_FRAMES) {
    count(&cpu->dropped_other);
    return ZXS_WRITE_INVALID;
  }
  zxs_write_result_t result;
  // Relaxed: setup stored it before the enable that admitted the caller's begin_write (which
  // acquired that).
  if (atomic_load_explicit(&cpu->session_gen, memory_order_relaxed) != session_gen) {
    // A signal of an older session reaching a CPU that a newer one has set up.
    count(&cpu->dropped_other);
    result = ZXS_WRITE_STALE;
  } else if (cpu->base == NULL) {
    // A CPU that was offline when the session was created has no region.
    count(&cpu->dropped_other);
    result = ZXS_WRITE_NO_REGION;
  } else if (cpu->ring_slots != 0) {
    // The recorder's ring: encoded on the stack, then copied into a slot under its seqlock.
    uint64_t record[ZXS_RING_SLOT_WORDS - 1];
    const size_t words = zxs_fxt_encode_sample(record, ticks, pid, tid, pcs, n);
    const bool put = zxs_percpu_ring_put(cpu, record, words);
    count(put ? &cpu->written : &cpu->dropped_other);
    result = put ? ZXS_WRITE_OK : ZXS_WRITE_BUSY;
  } else {
    uint8_t* record = zxs_percpu_reserve(cpu, ZXS_FXT_SAMPLE_WORDS(n) * sizeof(uint64_t));
    if (record == NULL) {
      count(&cpu->dropped_full);
      result = ZXS_WRITE_FULL;
    } else {
      // Regions are 8-aligned and reservations multiples of 8: the cast is to aligned words.
      zxs_fxt_encode_sample((uint64_t*)(void*)record, ticks, pid, tid, pcs, n);
      count(&cpu->written);
      result = ZXS_WRITE_OK;
    }
  }
  return result;
}
