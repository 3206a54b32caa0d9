// What the Linux backend's files share (internal to src/backend/linux/ and its tests).
//
// Sampling on Linux: each attached thread gets its own source: a perf_event task-clock counter
// whose samples the kernel writes into a ring buffer (source_perf_ring.c: registers and a stack
// copy, drained by a collector thread, no signal), or a perf_event counter or a POSIX timer on
// the thread's CPU clock that sends one real-time signal to that very thread per period of its
// CPU time. The handler (signal_handler.c) finds the slot from the signal's payload, checks the
// generation stored in the slot's backend area, and calls zxs_core_sample(). Generations are
// process-wide and never reused, so a signal from a source that has since been disarmed (queued
// late, or from a recycled fd number) is recognised.
#ifndef ZXSAMPLER_SRC_BACKEND_LINUX_LINUX_INTERNAL_H_
#define ZXSAMPLER_SRC_BACKEND_LINUX_LINUX_INTERNAL_H_

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "platform.h"
#include "sampling.h"

// Per-slot state, kept in slot->backend.
typedef struct zxs_linux_slot {
  _Atomic uint32_t gen;         // generation of the source armed now; 0 = nothing armed
  _Atomic uint32_t attach_gen;  // the slot's attach_gen when armed (zxs_core_sample wants it)
  _Atomic int32_t kind;         // zxs_sample_source_t of the armed source
  _Atomic int32_t fd;           // perf source: its file descriptor
  _Atomic bool has_timer;       // cputimer source: `timer` is live (timer ids start at 0)
  _Atomic(void*) timer;         // cputimer source: its timer_t
  _Atomic uint64_t owner;       // pthread_t of the thread the source interrupts
  _Atomic uint32_t fds_held;    // descriptors the armed source holds (sources.c's budget)
} zxs_linux_slot_t;

_Static_assert(sizeof(zxs_linux_slot_t) <= sizeof(((zxs_thread_slot_t*)0)->backend),
               "backend state must fit the slot's backend area");
_Static_assert(_Alignof(zxs_linux_slot_t) <= 16, "backend area is 16-byte aligned");

// The slot's backend area, viewed as the Linux backend's state. The core only ever zero-fills
// it, which reads as "nothing armed".
static inline zxs_linux_slot_t* zxs_linux_slot(zxs_thread_slot_t* slot) {
  return (zxs_linux_slot_t*)(void*)slot->backend;
}

// The kernel's CPU-time clock of thread `tid`, as pthread_getcpuclockid() returns it and
// clock_gettime()/timer_create() take it: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) =
// (~tid << 3) | PERTHREAD(4) | SCHED(2) (kernel ABI, include/linux/posix-timers_types.h).
static inline clockid_t zxs_linux_thread_cpuclock(pid_t tid) {
  return (clockid_t)((~(uint32_t)tid << 3) | 6u);
}

// The tid of a per-thread CPU-time clock, or 0 when `clock` is not one.
static inline pid_t zxs_linux_cpuclock_tid(clockid_t clock) {
  if ((clock & 7) != 6) {
    return 0;
  }
  return (pid_t) ~(uint32_t)((uint32_t)clock >> 3 | 0xe0000000u);
}

// Publishes a newly armed source: the attachment it serves, then its generation. Call after
// zxs_linux_unpublish() (or on a never-armed slot), under the core's session lock.
static inline void zxs_linux_publish(zxs_thread_slot_t* slot, uint32_t gen) {
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  atomic_store_explicit(&st->attach_gen,
                        atomic_load_explicit(&slot->attach_gen, memory_order_relaxed),
                        memory_order_relaxed);
  atomic_store_explicit(&st->owner, slot->thread.native, memory_order_relaxed);
  atomic_store_explicit(&st->gen, gen, memory_order_release);
}

// Marks the slot's source stale: signals it already queued are ignored from now on.
static inline void zxs_linux_unpublish(zxs_thread_slot_t* slot) {
  atomic_store_explicit(&zxs_linux_slot(slot)->gen, 0, memory_order_relaxed);
  // Seqlock writer: the next publish's attach_gen store stays after this one.
  atomic_thread_fence(memory_order_release);
}

// [signal-safe] Seqlock reader: true when the source armed with generation `gen` is still the
// slot's armed source, with the attach generation it was armed under and the pthread_t of the
// thread it interrupts (`owner` may be NULL).
static inline bool zxs_linux_current(zxs_thread_slot_t* slot, uint32_t gen, uint32_t* attach_gen,
                                     uint64_t* owner) {
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  if (gen == 0 || atomic_load_explicit(&st->gen, memory_order_acquire) != gen) {
    return false;
  }
  *attach_gen = atomic_load_explicit(&st->attach_gen, memory_order_relaxed);
  if (owner != NULL) *owner = atomic_load_explicit(&st->owner, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&st->gen, memory_order_relaxed) == gen;
}

// --- threads_linux.c -------------------------------------------------------------------------

// First thing in a thread the backend starts (the collector, the exit watcher): a pthread_create
// the program interposes (zxsampler record's preload attaches every new thread before it runs
// its start routine) may have attached it to the session; the library's own threads detach.
void zxs_linux_internal_thread_started(void);

// --- signal_handler.c -------------------------------------------------------------------------

// The signal sources send; 0 before zxs_prim_sampling_init() succeeded.
int zxs_linux_signal(void);
// ZX_OK while our handler owns the signal (installing it the first time: the signal sources
// call it before they arm); ZX_ERR_BAD_STATE if the program took or replaced it.
zx_status_t zxs_linux_signal_check(void);
// Parses a signal as ZXSAMPLER_SIGNAL names it: a number, or a name with or without "SIG"
// ("SIGRTMIN+3", "RTMAX-1", "SIGPROF"). False when it names no signal we can use.
bool zxs_linux_parse_signal(const char* text, int* sig);
// [signal-safe] Extracts pc/fp/sp from the interrupted context and calls zxs_core_sample().
void zxs_linux_take_sample(zxs_thread_slot_t* slot, uint32_t attach_gen, const void* ucontext);

// --- source_perf.c ----------------------------------------------------------------------------

struct perf_event_attr;
// A disabled software task-clock event of `period` ns, user code only (what every perf source
// starts from).
void zxs_linux_task_clock_attr(struct perf_event_attr* attr, zx_duration_t period);
// perf_event_open(attr, tid, cpu (-1: any), no group, close-on-exec): the fd, or -1 with errno.
int zxs_linux_perf_event_open(struct perf_event_attr* attr, pid_t tid, int cpu);
// The same in the group that `group_fd` leads (-1: none): the backend's one perf_event_open.
int zxs_linux_perf_event_open_group(struct perf_event_attr* attr, pid_t tid, int cpu, int group_fd);
// errno of perf_event_open/fcntl/mmap -> status: zxs_posix_errno_status() (errno_status.h)
// folded for the perf sources, where NOT_SUPPORTED means "use another source".
zx_status_t zxs_linux_perf_status(int err);
// Whether a task-clock perf event can be opened here (probed once).
bool zxs_linux_perf_available(void);
// Arms the perf source of `slot`. ZX_ERR_NOT_SUPPORTED when perf is unavailable or the fd does
// not fit the routing table (callers fall back), ZX_ERR_BAD_STATE when the thread is gone,
// ZX_ERR_NO_RESOURCES otherwise.
zx_status_t zxs_linux_perf_arm(zxs_thread_slot_t* slot, zx_duration_t period, uint32_t gen);
void zxs_linux_perf_disarm(zxs_thread_slot_t* slot);
// [signal-safe] A POLL_IN/POLL_HUP signal for `fd` arrived: sample if it is ours.
void zxs_linux_perf_on_signal(int fd, const void* ucontext);
// Opens a task-clock event on the calling thread routed to our signal and counted only (no
// sample). -1 on failure. Used by calibration.
// After fork, in the child: closes every inherited perf descriptor without disabling the event
// (the parent's), and forgets the routes.
void zxs_linux_perf_forget_all(void);
int zxs_linux_perf_open_counting(zx_duration_t period);
void zxs_linux_perf_close_counting(int fd);
// Signals counted for counting events since the process started.
uint64_t zxs_linux_perf_counting_signals(void);
// Routes only fds below `limit` (at most the table's size): for tests of the fallback taken
// when a perf fd lands beyond the routing table, without opening 32768 files.
void zxs_linux_perf_limit_routes(int limit);
// The kernel's floor for software-event periods.
#define ZXS_LINUX_PERF_MIN_PERIOD ((zx_duration_t)10000)

// --- perf_ring_read.c -------------------------------------------------------------------------

// One record of a ring: its type (PERF_RECORD_*) and the `words` 64-bit words after its header.
typedef void (*zxs_linux_record_fn)(void* ctx, uint32_t type, const uint64_t* body, size_t words);
// Hands every record between the ring's tail and head to `on_record`, in order, and frees their
// space. `base` is the mapping (header page of `page` bytes, then `data_size` bytes of data, a
// power of two); `scratch` holds one record (64 KiB, 8-aligned). Records whose size is not a
// multiple of 8 are skipped. During its call each record lies whole, header included, at
// body - 1: in the ring itself, or in `scratch` when it wraps around the ring's end. One
// consumer at a time.
void zxs_linux_ring_read(uint8_t* base, size_t page, size_t data_size, uint64_t* scratch,
                         zxs_linux_record_fn on_record, void* ctx);

// The id of the perf event `fd` refers to (PERF_EVENT_IOC_ID); 0 when it refers to none.
uint64_t zxs_linux_perf_id(int fd);
// True while `fd` still refers to the perf event `id`. A program that closes every descriptor it
// inherited (as daemons do) may have closed ours, and the number may now be a file of its own,
// which we must not read, ioctl or close (issue #26).
bool zxs_linux_perf_fd_is(int fd, uint64_t id);

// --- task_runtime_linux.c / runtime_events_linux.c -------------------------------------------

// The calling thread is exiting (its exit hook): its runtime is read one last time.
void zxs_linux_runtime_thread_exiting(pid_t tid);

// --- taskstats_linux.c ------------------------------------------------------------------------

// A thread of this process that exited, from the kernel's taskstats exit record: its totals up
// to the exit.
typedef struct zxs_linux_task_exit {
  pid_t tid;
  int64_t cpu_time;    // cpu_run_virtual_total: the scheduler's sum_exec_runtime (ns)
  int64_t queue_time;  // cpu_delay_total: the scheduler's run delay (ns)
} zxs_linux_task_exit_t;
typedef void (*zxs_linux_task_exit_fn)(void* ctx, const zxs_linux_task_exit_t* exit);
// A non-blocking, close-on-exec netlink socket registered for the exit records of every
// possible CPU, filtered to process `tgid`'s tasks; -1 with errno (EPERM without CAP_NET_ADMIN,
// EINVAL outside the initial namespaces, ENOENT no taskstats). Closing it ends the
// registration (the kernel drops it at its next record).
int zxs_linux_taskstats_listen(pid_t tgid);
// Hands every queued exit record of `tgid`'s threads to `on_exit`, without blocking. False when
// the socket overflowed since the last call (records were lost). Not thread-safe.
bool zxs_linux_taskstats_drain(int fd, pid_t tgid, zxs_linux_task_exit_fn on_exit, void* ctx);
// The totals of process `tgid`, its exited threads included, asked on *fd (a socket opened on
// first use, -1: none yet); false with errno when refused (EPERM) or not there. Not
// thread-safe.
bool zxs_linux_taskstats_process(int* fd, pid_t tgid, int64_t* cpu_time, int64_t* queue_time);

// --- sources.c --------------------------------------------------------------------------------

// The perf sources' descriptor budget (at most half of the soft RLIMIT_NOFILE): takes `need`
// from it, or from its first `share`-th; false (nothing taken) when they do not fit.
bool zxs_linux_fds_reserve(uint32_t need, uint32_t share);
// Gives back `count` descriptors taken with zxs_linux_fds_reserve.
void zxs_linux_fds_unreserve(uint32_t count);

// --- source_perf_ring.c -----------------------------------------------------------------------

// Whether a task-clock event with a kernel callchain and a ring buffer can be opened and mapped
// here (probed once).
bool zxs_linux_ring_available(void);
// The descriptors a thread armed with perf-ring holds: one event per CPU.
uint32_t zxs_linux_ring_thread_fds(void);
// Arms the kernel-walked perf source of `slot`: statuses as zxs_linux_perf_arm (NOT_SUPPORTED
// also when the ring cannot be mapped: the locked-memory limit).
zx_status_t zxs_linux_ring_arm(zxs_thread_slot_t* slot, zx_duration_t period, uint32_t gen);
// Arms `slot` without descriptors of its own when the covering events (zxs_linux_ring_cover)
// sample its thread: it was created, after they were opened, by their thread or by a thread they
// cover, and `period` is theirs; with `if_sampling`, only while they already sample (a thread
// they cover is then interrupted by them whatever else samples it). ZX_ERR_NOT_SUPPORTED
// otherwise (the caller arms it another way).
zx_status_t zxs_linux_ring_arm_covered(zxs_thread_slot_t* slot, zx_duration_t period, uint32_t gen,
                                       bool if_sampling);
// Opens the covering events on the calling thread, once (kept until the rings are released):
// per CPU a task-clock event of `period` and a dummy event that reports thread creations, both
// inherited by every thread the caller creates from now on, and by theirs (Linux 5.13:
// inherit_thread, remove_on_exec; not by child processes). They sample only while a covered
// thread is armed. Nothing happens when they cannot be had (older kernels, the descriptor
// budget, the locked-memory limit).
void zxs_linux_ring_cover(zx_duration_t period);
// Stops the slot's events and writes what the rings hold (while writes are enabled); closes
// its events (those zxs_linux_ring_park kept too).
void zxs_linux_ring_disarm(zxs_thread_slot_t* slot);
// At a stop: as zxs_linux_ring_disarm, but the thread's own events stay open, disabled, so that
// zxs_linux_ring_arm of the same slot, thread and period only enables them (one ioctl per CPU
// instead of an open, an output redirection and an id). A covered thread is disarmed.
void zxs_linux_ring_park(zxs_thread_slot_t* slot);
// Closes the events kept for slots not armed again since (zxs_prim_sampling_started).
void zxs_linux_ring_unpark_rest(void);
// No session samples any more: releases the rings (and the covering events, and the events kept
// by zxs_linux_ring_park) once no thread is armed (zxs_prim_sampling_idle).
void zxs_linux_ring_idle(void);
// After fork, in the child: unmaps and closes every inherited ring and event without disabling
// the parent's events, and forgets the collector (it stayed in the parent).
void zxs_linux_ring_forget_all(void);
// Tests: the stack copy the events of `slot` ask for now (0: not armed with perf-ring).
uint32_t zxs_linux_ring_copy_of(zxs_thread_slot_t* slot);
// Tests: while held, the collector drains nothing (flush and disarm still do), so they can tell
// what those wrote and make a ring overflow.
void zxs_linux_ring_hold_collector(bool hold);

// --- ring_attr.c -------------------------------------------------------------------------------

// Bytes of stack each perf-ring sample copies: 8 KiB, or ZXSAMPLER_STACK_COPY=N (512..65000,
// rounded down to a multiple of 8).
// *configured (may be NULL): whether ZXSAMPLER_STACK_COPY gave a valid size (perf-ring then
// keeps it; otherwise it adapts each thread's copy below this size).
uint32_t zxs_linux_ring_stack_copy(bool* configured);
// The disabled task-clock event of `period` ns a perf-ring source opens: user registers
// (ZXS_PERF_REGS_MASK), `stack_copy` bytes of stack, tid, time (CLOCK_MONOTONIC) and CPU per
// sample, PERF_FORMAT_LOST, a wakeup when half of its `data_size`-byte ring is full (the ring's
// owner decides that where events share one).
void zxs_linux_ring_attr(struct perf_event_attr* attr, zx_duration_t period, size_t data_size,
                         uint32_t stack_copy);
// Bytes of one such sample record around its stack copy: header, {pid, tid}, time, id,
// {cpu, res}, abi, 3 registers, size, dyn_size.
#define ZXS_LINUX_RING_RECORD_OVERHEAD 96u

// --- source_cputimer.c ------------------------------------------------------------------------

zx_status_t zxs_linux_cputimer_arm(zxs_thread_slot_t* slot, zx_duration_t period, uint32_t gen);
void zxs_linux_cputimer_disarm(zxs_thread_slot_t* slot);
// [signal-safe] An SI_TIMER signal with this payload and overrun count arrived.
void zxs_linux_cputimer_on_signal(union sigval value, int overrun, const void* ucontext);
// The CPU-clock timer's resolution: one scheduler tick.
zx_duration_t zxs_linux_cputimer_resolution(void);

// --- throttle.c -------------------------------------------------------------------------------

// The share of a thread's CPU time sampling may take (1/4).
#define ZXS_LINUX_MAX_FRACTION_DIV 4
// The shortest period perf source `kind` (ZXS_SOURCE_PERF_RING, or ZXS_SOURCE_PERF_TASK_CLOCK)
// may be armed with: 4 times what one of its samples costs the sampled thread, at least the
// kernel's floor. The cost is measured for each kind at its first call in the process, on the
// calling thread (about 0.1 s of its CPU), or taken from ZXSAMPLER_SAMPLE_COST_NS. Never fails:
// when it cannot measure it falls back to a conservative figure.
zx_duration_t zxs_linux_perf_floor(zxs_sample_source_t kind);
// Details of a kind's calibration, for tests and benchmarks.
typedef struct zxs_linux_calibration {
  // Whose per-sample work was measured: ZXS_SOURCE_PERF_RING (the kernel's copy into a ring),
  // ZXS_SOURCE_PERF_TASK_CLOCK (the signal path: the signal source's, and perf-ring's when its
  // own could not be measured), ZXS_SOURCE_NONE (nothing measured).
  zxs_sample_source_t path;
  bool measured;             // false: from the environment or the default
  zx_duration_t cost;        // ns of the thread's CPU time per sample
  zx_duration_t floor;       // shortest perf period allowed
  zx_duration_t period;      // period of the event while measuring
  uint64_t samples;          // samples (signals, or ring records) over the three sampled runs
  uint64_t iterations;       // loop iterations per run
  zx_duration_t base_ns;     // CPU time of one run without sampling (median)
  zx_duration_t sampled_ns;  // with sampling (median)
  size_t ring_bytes;         // ring path: data bytes of the ring each run wrote into
} zxs_linux_calibration_t;
// Measures `kind` first if it was not yet, as zxs_linux_perf_floor does.
void zxs_linux_calibration(zxs_sample_source_t kind, zxs_linux_calibration_t* out);

#endif  // ZXSAMPLER_SRC_BACKEND_LINUX_LINUX_INTERNAL_H_
