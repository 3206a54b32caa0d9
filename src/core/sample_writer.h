// Writes one sample record into a CPU's region. [signal-safe]
#ifndef ZXSAMPLER_SRC_CORE_SAMPLE_WRITER_H_
#define ZXSAMPLER_SRC_CORE_SAMPLE_WRITER_H_

#include <stddef.h>
#include <stdint.h>

#include "percpu_state.h"

typedef enum zxs_write_result {
  ZXS_WRITE_OK = 0,
  ZXS_WRITE_STALE,      // the CPU belongs to another session than the caller's
  ZXS_WRITE_FULL,       // the record did not fit; writes on that CPU have stopped
  ZXS_WRITE_NO_REGION,  // the CPU was offline at create: it has no region
  ZXS_WRITE_INVALID,    // n == 0 or n > 64
  ZXS_WRITE_BUSY,       // a ring's slot was still being written (percpu_ring.h): dropped
} zxs_write_result_t;

// Writes one sample into `cpu`'s region. The caller holds a pending write on `cpu`
// (zxs_percpu_begin_write succeeded and zxs_percpu_end_write has not run yet): the sampling
// path holds it across the whole sample, stack walk included, so stop waits for all of it.
// Checks that the CPU serves `session_gen`, reserves space atomically and writes the kernel's
// record (fxt-records.md): header, 0, ts, pid, tid, 8n, n PCs; a ring region (percpu_ring.h)
// takes it in its next slot instead. Counts the outcome in the CPU's counters (written /
// dropped_full / dropped_other).
zxs_write_result_t zxs_sample_write(zxs_percpu_t* cpu, uint32_t session_gen, uint64_t ticks,
                                    uint64_t pid, uint64_t tid, const uint64_t* pcs, size_t n);

#endif  // ZXSAMPLER_SRC_CORE_SAMPLE_WRITER_H_
