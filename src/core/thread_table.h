// The table of attached-thread slots (internal). Slots are static and never freed; allocation
// and state changes happen under the session lock, the sampling path only reads.
#ifndef ZXSAMPLER_SRC_CORE_THREAD_TABLE_H_
#define ZXSAMPLER_SRC_CORE_THREAD_TABLE_H_

#include "percpu_state.h"
#include "sampling.h"

// The ATTACHED slot of `koid` in session `session_gen`, or NULL.
zxs_thread_slot_t* zxs_slot_find(zx_koid_t koid, uint32_t session_gen);
// A FREE slot made ATTACHED to the session for `thread`, or NULL when the table is full.
zxs_thread_slot_t* zxs_slot_attach(const zxs_prim_thread_t* thread, zx_koid_t process_koid,
                                   uint32_t session_gen, zx_duration_t period);
// Makes an ATTACHED slot FREE again (its source must be disarmed already).
void zxs_slot_free(zxs_thread_slot_t* slot);
// Iteration: the next ATTACHED slot of the session after `prev` (NULL starts), or NULL.
zxs_thread_slot_t* zxs_slot_next(uint32_t session_gen, zxs_thread_slot_t* prev);

#endif  // ZXSAMPLER_SRC_CORE_THREAD_TABLE_H_
