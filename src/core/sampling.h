// The sampling path between backends and the core (internal).
//
// Attached threads live in a fixed table of slots that is never freed: a signal that arrives
// late (after stop, after the session was destroyed, after the thread was detached) still reads
// valid memory, finds the slot's generation changed or writes disabled, and does nothing.
#ifndef ZXSAMPLER_SRC_CORE_SAMPLING_H_
#define ZXSAMPLER_SRC_CORE_SAMPLING_H_

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "frame_walk.h"
#include "percpu_state.h"
#include "platform.h"

#define ZXS_MAX_THREADS 4096u

// Slot states.
#define ZXS_SLOT_FREE 0u
#define ZXS_SLOT_ATTACHED 1u  // belongs to session `session_gen`; armed while it runs
#define ZXS_SLOT_RETIRING 2u  // being detached; the sampling path ignores it

struct zxs_thread_slot {
  _Atomic uint32_t state;
  _Atomic uint32_t session_gen;  // the session it is attached to
  // Bumped when the slot is freed and again when it is attached, before its fields change.
  // Backends put the value they armed with into their signal's payload; the sampling path
  // ignores a payload whose generation is not current (a signal the program held blocked past
  // a detach, say) and re-checks it after copying the fields below (a seqlock).
  _Atomic uint32_t attach_gen;
  uint32_t index;  // position in the table (constant)
  // Read by the sampling path; written only by attach.
  _Atomic zx_koid_t koid;
  _Atomic zx_koid_t process_koid;
  _Atomic uintptr_t stack_lo;
  _Atomic uintptr_t stack_hi;
  zxs_prim_thread_t thread;  // for the core and the backend, under the session lock
  _Atomic int source_kind;   // zxs_sample_source_t, set by the backend when armed
  _Atomic bool armed;        // set and cleared by the backend
  _Atomic int64_t period;    // in force now (raised by throttling)
  _Atomic uint64_t walks_truncated;
  _Atomic uint64_t throttled;
  _Atomic uint64_t overruns;
  _Atomic uint64_t source_failures;
  // Owned by the backend (its source's fd, timer id, calibration...).
  _Alignas(16) unsigned char backend[128];
};

// A sample's CPU when the platform cannot tell which CPU the thread ran on (macOS, and any
// platform whose caps say !has_cpu_attribution): the sample goes to the region of CPU
// `slot->index % cpu_number_limit`, so one thread's samples stay in one region in time order and
// threads spread over the regions. Such a platform reports every CPU below cpu_number_limit
// online, so each has a region.
#define ZXS_CPU_UNKNOWN UINT32_MAX

// [signal-safe] Takes one sample of the calling context for `slot`, whose source was armed when
// the slot's attach_gen was `attach_gen`: begins a write on the current CPU's state (the
// per-CPU protocol), checks the slot is still that attachment of that session, walks the stack
// from `regs` within the slot's stack bounds and writes one record. Never faults, never blocks.
void zxs_core_sample(zxs_thread_slot_t* slot, uint32_t attach_gen, const zxs_regs_t* regs);

// [signal-safe] Takes one sample from a copy of the thread's context made elsewhere (the kernel
// copied the registers and the top of the stack into a buffer, and a thread of the backend's
// collected it): as zxs_core_sample, but into `cpu`'s region, timestamped `ticks`, walking
// `stack`, which holds the `stack_len` bytes that were at [regs->sp, regs->sp + stack_len).
// A walk that leaves the copy while the stack goes on counts as truncated. Returns the copy the
// walk needed (zxs_frame_walk_copy's *needed; more than stack_len when the copy cut it short),
// 0 when nothing was walked, so a backend can size the copies it asks for.
size_t zxs_core_sample_copy(zxs_thread_slot_t* slot, uint32_t attach_gen, uint32_t cpu,
                            uint64_t ticks, const zxs_regs_t* regs, const void* stack,
                            size_t stack_len);

// [signal-safe] Takes one sample of a thread that a sampler thread has suspended (macOS:
// thread_suspend, thread_get_state): as zxs_core_sample, but the context is `regs` of the
// suspended thread, the walk reads its live stack within the slot's bounds, and the record goes
// to `cpu`'s region (ZXS_CPU_UNKNOWN: the rule above). The caller resumes the thread after this
// returns; nothing here allocates, locks or calls into the loader, which the suspended thread
// may hold.
void zxs_core_sample_suspended(zxs_thread_slot_t* slot, uint32_t attach_gen, uint32_t cpu,
                               const zxs_regs_t* regs);

// Counts `n` samples the backend's source took on `cpu` but lost before they reached a region
// (a kernel buffer overflowed) as dropped_other, while writes are enabled. [signal-safe]
void zxs_core_count_dropped(uint32_t cpu, uint64_t n);

// [signal-safe] The slot at `index`, or NULL when out of range. Backends keep the index in
// their signal's payload (si_value) and look the slot up with this.
zxs_thread_slot_t* zxs_core_slot(uint32_t index);

// [signal-safe] Bookkeeping for backends.
void zxs_core_count_overruns(zxs_thread_slot_t* slot, uint64_t n);
void zxs_core_count_throttled(zxs_thread_slot_t* slot);

// [signal-safe] The state `slot`'s sample taken on `cpu` goes to: `cpu`'s, or where the platform
// cannot tell the CPU (ZXS_CPU_UNKNOWN), the slot's own (index modulo the CPU count), so one
// thread's samples stay in time order in one region and threads spread over the regions. NULL
// before the states exist or for a CPU beyond them.
zxs_percpu_t* zxs_core_percpu_of(uint32_t cpu, const zxs_thread_slot_t* slot);

// The per-CPU states, indexed by CPU number (allocated once, never freed), and their count.
// Called under the session lock; the sampling path reads the table without it.
zxs_percpu_t* zxs_percpu_states(uint32_t* count);

// Called (by the backend's thread-exit hook) when a thread is exiting: detaches it from the
// session, disarms its source and frees its slot.
void zxs_core_thread_exited(zx_koid_t koid);

#endif  // ZXSAMPLER_SRC_CORE_SAMPLING_H_
