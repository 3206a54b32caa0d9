// Writes one sample record into a CPU's region. [signal-safe]
#ifndef ZXSAMPLER_SRC_CORE_SAMPLE_WRITER_H_
#define ZXSAMPLER_SRC_CORE_SAMPLE_WRITER_H_

#include <stddef.h>
#include <stdint.h>

#include "percpu_state.h"

typedef enum zxs_write_result {
  ZXS_WRITE_OK = 0,
  ZXS_WRITE_DISABLED,  // writes not enabled on that CPU (stopped, or never started)
  ZXS_WRITE_STALE,     // the CPU belongs to another session than the caller's
  ZXS_WRITE_FULL,      // the record did not fit; writes on that CPU have stopped
  ZXS_WRITE_INVALID,   // n == 0 or n > 64
} zxs_write_result_t;

// Begins a write on `cpu` (the per-CPU protocol), checks that the CPU serves `session_gen`,
// reserves space atomically and writes the kernel's record (fxt-records.md): header, 0, ts, pid,
// tid, 8n, n PCs. Counts the outcome in the CPU's counters (written / dropped_full /
// dropped_other; DISABLED is not counted: it is the normal end of a run).
zxs_write_result_t zxs_sample_write(zxs_percpu_t* cpu, uint32_t session_gen, uint64_t ticks,
                                    uint64_t pid, uint64_t tid, const uint64_t* pcs, size_t n);

#endif  // ZXSAMPLER_SRC_CORE_SAMPLE_WRITER_H_
