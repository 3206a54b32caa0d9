// What the macOS backend's files share (internal to src/backend/macos/).
//
// Sampling on macOS: there is no signal routed to one thread and no perf. One sampler thread of
// the library's (sampler_thread.c) wakes once per period on Mach absolute time and, for each
// attached thread that is running, suspends it (thread_suspend), reads its registers
// (thread_get_state), walks its live stack through zxs_core_sample_suspended() and resumes it
// (thread_resume), as the in-process peers do (Tracy, Sentry, Chromium's sampling profiler).
// Between suspend and resume the target may hold malloc's or dyld's lock: that path allocates
// nothing, locks nothing, logs nothing and never calls into dyld.
#ifndef ZXSAMPLER_SRC_BACKEND_MACOS_MACOS_INTERNAL_H_
#define ZXSAMPLER_SRC_BACKEND_MACOS_MACOS_INTERNAL_H_

#include <mach/mach.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "frame_walk.h"
#include "platform.h"
#include "regions_fd.h"
#include "sampling.h"

// Per-slot state, kept in slot->backend. `state` is the handshake between the sampler thread
// and disarm: the sampler takes BUSY only while ARMED, and disarm clears ARMED and then waits
// for BUSY to clear, so once it returns no suspension of the thread is in flight. The other
// fields are written by arm before it publishes ARMED (release) and read by the sampler after it
// took BUSY (acquire).
#define ZXS_MACOS_ARMED 1u
#define ZXS_MACOS_BUSY 2u

typedef struct zxs_macos_slot {
  _Atomic uint32_t state;
  uint32_t attach_gen;  // the slot's attach_gen when armed
  mach_port_t port;     // our own send right to the thread (released by disarm)
  zx_koid_t koid;
} zxs_macos_slot_t;

_Static_assert(sizeof(zxs_macos_slot_t) <= sizeof(((zxs_thread_slot_t*)0)->backend),
               "backend state must fit the slot's backend area");

static inline zxs_macos_slot_t* zxs_macos_slot(zxs_thread_slot_t* slot) {
  return (zxs_macos_slot_t*)(void*)slot->backend;
}

// --- platform_macos.c -------------------------------------------------------------------------

// The backend's one kern_return_t -> status translation. A call on a thread that has exited
// (its port is a dead name, or the thread terminated) is ZX_ERR_BAD_STATE.
zx_status_t zxs_macos_status(kern_return_t kr);
// errno of the POSIX calls (shm_open, mmap, getrusage...) -> status: zxs_posix_errno_status()
// of src/backend/posix/errno_status.h, shared with Linux.
// Nanoseconds -> Mach absolute time units (mach_timebase_info, read once).
uint64_t zxs_macos_ns_to_ticks(uint64_t ns);

// --- threads_macos.c --------------------------------------------------------------------------

// The thread's identity as the sampler checks it: thread_info(THREAD_IDENTIFIER_INFO)'s id.
// False when the port no longer names a live thread.
bool zxs_macos_thread_id(mach_port_t port, uint64_t* id);
// First thing in a thread the backend starts (the sampler): a pthread_create the program
// interposes may have attached it; the library's own threads detach.
void zxs_macos_internal_thread_started(void);

#endif  // ZXSAMPLER_SRC_BACKEND_MACOS_MACOS_INTERNAL_H_
