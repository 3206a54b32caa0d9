// The deadline-miss flight recorder: always-on sampling that keeps the last moments, and the
// trace of the moment a deadline was missed.
//
//   zxs_recorder_options_t options = {.window = ZX_SEC(2), .output_dir = "/tmp/alerts"};
//   zxs_recorder_start(&options);           // samples the calling thread from now on
//   zxs_deadline_t d = {.name = "mixer"};   // (other threads: attach_current_thread)
//   for (;;) {
//     zxs_deadline_begin(&d, ZX_MSEC(10));  // one period of a real-time loop
//     mix();
//     zxs_deadline_end(&d);                 // late? an alert with that period's breakdown
//     ...
//   }
//   zxs_recorder_stop();
//
// RFC-0084's wish ("continuously record a trace into a circular buffer and upload that buffer
// after hitting a TRACE_ALERT"), in the process: attached threads are sampled all the time into
// per-CPU buffers that keep only the latest `window` of samples, overwriting the oldest (this
// library's discipline, not Fuchsia's: docs/sampler-contract.md). An alert (zxs_trace_alert(), or
// a late zxs_deadline_end()) asks a thread of the library to write that window out as one
// complete FXT trace file in `output_dir`: the window's samples of every attached thread, the
// modules, and an instant event for the alert (category "alert", its name, thread and time) with
// the late period's breakdown as arguments in ns: wall, budget, cpu_time, queue_time,
// page_fault_time, lock_contention_time (an argument not measured here is absent). `zxsampler
// report FILE` prints "why this period was late" above the profile of the late period's thread
// and converts the file like any other profile.
//
// Memory: about 2.25 x window / period samples of ZXS_RECORDER_SLOT_BYTES per CPU (2 s at 1 ms:
// 2.5 MiB per CPU), whatever runs; and 1 MiB of event ring plus 128 KiB of history per attached
// thread whose page faults and lock contentions are timed. The recorder uses the one sampler
// session of the process, so it cannot run beside the profiler (profiler.h) or a session of the
// program's own.
//
// zxs_trace_alert(), zxs_deadline_begin() and zxs_deadline_end() are made for real-time threads:
// they never block, allocate or take a lock, and are async-signal-safe. The others are not
// async-signal-safe; all are thread-safe.
#ifndef ZXSAMPLER_RECORDER_H_
#define ZXSAMPLER_RECORDER_H_

#include <stdbool.h>
#include <stddef.h>
#include <zxsampler/types.h>

#ifdef __cplusplus
extern "C" {
#endif

// Bytes one sample takes in the per-CPU buffers (a slot holds the deepest stack).
#define ZXS_RECORDER_SLOT_BYTES 568u

typedef struct zxs_recorder_options {
  zx_duration_t period;          // ns of a thread's CPU time between samples; 0 = 1 ms
  zx_duration_t window;          // how far back each alert's trace goes; 0 = 2 s
  const char* output_dir;        // where the traces go (copied; must exist); NULL = "."
  zx_duration_t alert_interval;  // alerts closer than this to the last one are dropped; 0 = 1 s
  // What is sampled: the thread that calls zxs_recorder_start (unless this is true) and each
  // thread that calls zxs_recorder_attach_current_thread.
  bool dont_attach_caller;
  // Also every thread the process creates from now on, attached as it starts. This needs the
  // thread hook, libzxsampler-threads, in the program (link it with -Wl,--no-as-needed
  // -lzxsampler-threads, or preload it), which interposes pthread_create: the library itself
  // does not, so that linking it changes no program's threads. Linux only.
  bool attach_new_threads;
  // Must be zero (initialize the struct with = {...} or memset): options added later take
  // these, zero meaning their default, so the struct keeps its size.
  uint64_t reserved[6];
} zxs_recorder_options_t;

// Starts the recorder: creates the session (with the debug resource), attaches the calling
// thread unless options->dont_attach_caller, starts sampling and the library's writer thread.
//   ZX_ERR_INVALID_ARGS   a reserved field is not zero; period below ZX_SAMPLER_MIN_PERIOD;
//                         window or alert_interval negative; output_dir too long (PATH_MAX);
//                         a window whose buffers would exceed 1 GiB per CPU.
//   ZX_ERR_BAD_STATE      the recorder is already running.
//   ZX_ERR_ALREADY_EXISTS the process holds another sampler session (the profiler's, its own).
//   ZX_ERR_NO_RESOURCES   the writer thread or its wake-up pipe could not be made.
//   ZX_ERR_NOT_SUPPORTED  attach_new_threads without the thread hook in the process.
//   and the statuses of zxs_sampler_create() / attach() / start().
ZXS_API zx_status_t zxs_recorder_start(const zxs_recorder_options_t* options);

// Attaches the calling thread: it is sampled from now on, its page-fault and lock-contention
// time is followed for the deadlines it keeps, and its zxs_deadline_*() calls read its queue
// time. Call it from each thread to record, before its first zxs_deadline_begin().
//   ZX_ERR_BAD_STATE not running; the statuses of zxs_sampler_attach().
ZXS_API zx_status_t zxs_recorder_attach_current_thread(void);

// Stops: writes the alerts already raised, stops sampling, ends the session and the writer
// thread. Alerts raised later are dropped.
//   ZX_ERR_BAD_STATE not running; ZX_ERR_IO one of the alert traces could not be written.
ZXS_API zx_status_t zxs_recorder_stop(void);

// Fuchsia's TRACE_ALERT for this library: keeps the window up to now and has a thread of the
// library write it to `output_dir` as "<name>-<pid>-<n>.fxt" (name: letters, digits, '-', '_'
// and '.' kept, others '_', at most 63 bytes; NULL or "" is "alert"). The caller does not wait
// for the file; sampling does not pause. Async-signal-safe; never blocks, allocates or locks.
//   ZX_OK                 the alert will be written.
//   ZX_ERR_BAD_STATE      the recorder is not running.
//   ZX_ERR_SHOULD_WAIT    dropped: the last alert was less than alert_interval ago.
//   ZX_ERR_NO_RESOURCES   dropped: 16 alerts are already waiting to be written.
ZXS_API zx_status_t zxs_trace_alert(const char* name);

// One period of a real-time task. The caller sets `name` (the alert's; NULL is "deadline") and
// zero-initializes the rest, which is the library's (reserved0 says whether a period is open,
// reserved[0] which thread began it).
typedef struct zxs_deadline {
  const char* name;
  zx_duration_t budget;
  zx_time_t begin;      // monotonic ns
  int64_t cpu_begin;    // the thread's CPU time then
  int64_t queue_begin;  // its run-queue time then
  uint32_t fields;      // ZXS_TASK_RUNTIME_* read at begin
  uint32_t reserved0;
  uint64_t reserved[4];
} zxs_deadline_t;

// Begins a period that should take at most `budget` ns of wall time: reads the monotonic clock,
// then the thread's CPU and queue time (two system calls on an attached thread; a begin+end pair
// costs about 2 us here, README). Beginning a period that was not ended starts it again.
// Async-signal-safe; never blocks, allocates or locks.
//   ZX_OK                 begun.
//   ZX_ERR_INVALID_ARGS   d is NULL; budget is 0 or negative (d is then not begun: its end
//                         answers ZX_ERR_BAD_STATE and raises nothing).
ZXS_API zx_status_t zxs_deadline_begin(zxs_deadline_t* d, zx_duration_t budget);

// Ends the period begun by zxs_deadline_begin(). When it took longer than its budget, raises an
// alert named d->name as zxs_trace_alert() does (rate limit included; nothing is written while
// the recorder is not running) carrying the period's breakdown: wall time, budget, and the deltas
// of the thread's cpu_time and queue_time (read here, before the clock, so that cpu_time +
// queue_time never exceed the wall time) and of its page_fault_time and lock_contention_time
// (found by the writer thread, which keeps the last 0.5 s of them: a longer period counts its
// last 0.5 s; ZX_INFO_TASK_RUNTIME's fields as in object.h, each only where the host measures it).
// A period ended on another thread than the one that began it carries its wall time and budget
// only. An on-time period costs one read of the monotonic clock. Async-signal-safe; never
// blocks, allocates or locks.
//   ZX_OK                 on time.
//   ZX_ERR_TIMED_OUT      late (the alert raised, or dropped as zxs_trace_alert() says).
//   ZX_ERR_INVALID_ARGS   d is NULL.
//   ZX_ERR_BAD_STATE      d is not begun: never, ended already, or its begin was refused.
//                         Nothing is raised.
// (Up to 0.1.0 this returned bool, true when late: `if (zxs_deadline_end(&d))` still reads "not
// on time"; compare with ZX_ERR_TIMED_OUT to tell a late period from misuse.)
ZXS_API zx_status_t zxs_deadline_end(zxs_deadline_t* d);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ZXSAMPLER_RECORDER_H_
