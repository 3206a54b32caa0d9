// The per-CPU state protocol of Zircon's thread sampler (seed 004), generalised for user space.
//
// One atomic word per CPU: bit 0 writes-enabled; bits 1..31 the number of pending timers;
// bits 32..63 the number of pending writers. The kernel has one timer and at most one writer
// per CPU, so bits suffice there; in user space a handler can be preempted mid-write and its
// thread can migrate, so several writers can be in flight for one CPU: the bits become counts
// and record space is reserved with one atomic add. The guarantee is the kernel's: once
// zxs_percpu_shutdown() returns, nothing writes to the regions.
//
// The states themselves are never freed (a late signal may still touch the word); only the
// regions they point at are released, and only after shutdown.
#ifndef ZXSAMPLER_SRC_CORE_PERCPU_STATE_H_
#define ZXSAMPLER_SRC_CORE_PERCPU_STATE_H_

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZXS_PERCPU_WRITES_ENABLED ((uint64_t)1u)
#define ZXS_PERCPU_TIMER_ONE ((uint64_t)1u << 1)
#define ZXS_PERCPU_TIMER_MASK ((uint64_t)0x7fffffffu << 1)
#define ZXS_PERCPU_WRITER_ONE ((uint64_t)1u << 32)
#define ZXS_PERCPU_WRITER_MASK ((uint64_t)0xffffffffu << 32)

typedef struct zxs_percpu {
  _Alignas(64) _Atomic uint64_t state;
  _Atomic uint64_t reserved;     // bytes of the region handed out (never reset by start)
  _Atomic uint32_t session_gen;  // session whose region this is; 0 = none
  _Atomic bool full;             // a record did not fit: writes on this CPU have stopped
  _Atomic uint64_t fill_end;     // where the data ended when it filled; UINT64_MAX: not full
  uint8_t* base;                 // region; changed only while no writer can be in flight
  size_t size;
  // Non-zero: the region is a ring of this many slots that keeps the latest samples, overwriting
  // the oldest (percpu_ring.h); `reserved` then counts the tickets handed out. 0: records follow
  // each other until the region is full, as the kernel writes them.
  size_t ring_slots;
  // Counters since setup (relaxed).
  _Atomic uint64_t written;
  _Atomic uint64_t dropped_full;
  _Atomic uint64_t dropped_other;
} zxs_percpu_t;

// Points the state at a new session's region and resets counters and the write position.
// Only while writes are disabled and nothing is pending (before enable, after shutdown).
void zxs_percpu_setup(zxs_percpu_t* cpu, uint8_t* base, size_t size, uint32_t session_gen);
// Detaches the region (after shutdown): later writers find no region.
void zxs_percpu_release(zxs_percpu_t* cpu);

// Writes resume where the data ends on a CPU whose region filled: the kernel re-enables every
// CPU at start, and a record that fits in what is left is written. Only while writes are
// disabled and nothing is pending (start, before enable).
void zxs_percpu_reopen(zxs_percpu_t* cpu);

void zxs_percpu_enable_writes(zxs_percpu_t* cpu);
void zxs_percpu_disable_writes(zxs_percpu_t* cpu);

// [signal-safe] Marks a pending write iff writes are enabled; false (and nothing held) if not.
bool zxs_percpu_begin_write(zxs_percpu_t* cpu);
// [signal-safe] Ends a write begun with zxs_percpu_begin_write(), whatever writes-enabled says.
void zxs_percpu_end_write(zxs_percpu_t* cpu);

// Timer marks (seed 004's pending-timer): for a backend whose sampling is driven by a timer it
// re-arms itself per CPU: the Fuchsia kernel's, and the macOS sampler thread, which marks the
// CPU whose region it writes while a target is suspended so that stop's phase 2 waits for the
// resume. The Linux sources take none: their timers are per-thread kernel objects that disarm
// synchronously, and a signal still in flight is a pending write. The model checks them.
//
// [signal-safe] Arming a timer: marks it pending iff writes are enabled; false = do not arm.
bool zxs_percpu_timer_set(zxs_percpu_t* cpu);
// [signal-safe] At the end of a timer callback: true = writes still enabled, keep it pending and
// re-arm; false = its pending mark was dropped, do not re-arm.
bool zxs_percpu_timer_rearm(zxs_percpu_t* cpu);
// [signal-safe] A pending timer was cancelled before it fired (or finished without re-arm).
void zxs_percpu_timer_clear(zxs_percpu_t* cpu);

bool zxs_percpu_writes_enabled(const zxs_percpu_t* cpu);
uint32_t zxs_percpu_pending_writes(const zxs_percpu_t* cpu);
uint32_t zxs_percpu_pending_timers(const zxs_percpu_t* cpu);

// [signal-safe] Reserves `bytes` (a multiple of 8) in the region with one atomic operation.
// Only between begin_write and end_write. NULL when the record does not fit: the CPU is marked
// full and writes on it stop until zxs_percpu_reopen() (the rest of the region stays zero).
uint8_t* zxs_percpu_reserve(zxs_percpu_t* cpu, size_t bytes);

// The three-phase shutdown over `count` CPUs: (1) disable writes everywhere; (2) call
// cancel_timers(ctx) (which disarms every source), then wait until no timer is pending;
// (3) wait until no write is pending. Waits with zxs_prim_relax(). cancel_timers may be NULL.
void zxs_percpu_shutdown(zxs_percpu_t* cpus, size_t count, void (*cancel_timers)(void* ctx),
                         void* ctx);

#endif  // ZXSAMPLER_SRC_CORE_PERCPU_STATE_H_
