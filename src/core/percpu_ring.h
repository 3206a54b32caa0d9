// Overwrite-oldest regions: the flight recorder's discipline (ours, not Fuchsia's: the kernel's
// sampler only knows ZX_IOB_DISCIPLINE_NONE, records one after another until the region is full).
//
// A ring region is `slots` fixed-size slots, each a sequence word followed by room for one
// sample record of up to ZX_SAMPLER_MAX_FRAMES PCs. A writer takes a ticket with one atomic add
// on the CPU's `reserved` and writes slot ticket % slots under a seqlock: sequence 2t+1 while
// ticket t is being written, 2t+2 once it is complete. It never waits: a slot still being written
// by an older writer, or already taken by a newer ticket, makes it drop its sample (counted as
// dropped_other). Readers copy a slot, then check its sequence again, so they never see a torn
// record, and they never hold up a writer: sampling does not pause while a ring is read.
//
// Memory is bounded by the slot count; the recorder sizes it for the window it keeps.
#ifndef ZXSAMPLER_SRC_CORE_PERCPU_RING_H_
#define ZXSAMPLER_SRC_CORE_PERCPU_RING_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/fxt.h>
#include <zxsampler/sampler.h>

#include "percpu_state.h"

// Words of one slot: the sequence word and the largest sample record.
#define ZXS_RING_SLOT_WORDS (1u + ZXS_FXT_SAMPLE_WORDS(ZX_SAMPLER_MAX_FRAMES))
#define ZXS_RING_SLOT_BYTES (ZXS_RING_SLOT_WORDS * sizeof(uint64_t))

// As zxs_percpu_setup(), for a ring of `slots` slots at `base` (slots * ZXS_RING_SLOT_BYTES
// bytes, zero-filled, 8-aligned). Same conditions: writes disabled, nothing pending.
void zxs_percpu_setup_ring(zxs_percpu_t* cpu, uint8_t* base, size_t slots, uint32_t session_gen);

// [signal-safe] Puts one encoded record of `words` words (at most ZXS_RING_SLOT_WORDS - 1) in
// the next slot of `cpu`'s ring, overwriting the oldest. The caller holds a pending write on
// `cpu`. False when the slot was busy (see above): the sample is dropped.
bool zxs_percpu_ring_put(zxs_percpu_t* cpu, const uint64_t* record, size_t words);

// Appends to `out` every complete record of the ring at `base` (`slots` slots) whose timestamp
// lies in [since, until], oldest ticket first. Safe while writers run; a slot rewritten during
// the copy is left out. Returns the buffer's status (ZX_ERR_NO_MEMORY).
zx_status_t zxs_percpu_ring_copy(const uint8_t* base, size_t slots, uint64_t since, uint64_t until,
                                 zxs_fxt_buf_t* out);

#endif  // ZXSAMPLER_SRC_CORE_PERCPU_RING_H_
