// zxsampler record on Linux: sampling a process tree from outside with perf events.
//
// The recorder does what `perf record` does: one software task-clock event per CPU bound to the
// target (inherited by every thread and child process it makes, and kept across exec), each
// writing into a ring of its CPU that this process maps and drains, and a dummy event per CPU
// whose rings carry the side band (exec, names, mappings, forks and exits) apart. Each sample
// carries the user registers and a copy of the top of the user stack (and, when kernel time is
// sampled, the kernel's call chain); the recorder walks the copy with the core's frame-pointer
// rules. The program needs no library loaded, keeps its environment, and whatever it does (exit,
// _exit, exec, a fatal signal, SIGKILL) the samples it produced are in rings this process owns.
#ifndef ZXSAMPLER_SRC_RECORD_RECORD_PERF_H_
#define ZXSAMPLER_SRC_RECORD_RECORD_PERF_H_

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// The side band (COMM, MMAP2, FORK, EXIT of a dummy event) has rings of its own, per CPU, apart
// from the samples, so that names survive when a sampling ring overflows: records of a few
// hundred bytes per module mapped; 256 KiB hold ~1500 MMAP2 records with build IDs between two
// drains.
#define RECORD_SIDE_BAND_RING_BYTES (256u << 10)

typedef struct record_perf_options {
  pid_t pid;              // the target: a child waiting to exec, or a running process (attach)
  bool attach;            // the target is running: open events on each of its threads now
  bool inherit_children;  // follow fork/clone children (threads are always followed)
  bool kernel;            // ask for kernel-mode samples (falls back to user only if refused)
  uint64_t period_ns;     // task-clock period
  size_t ring_bytes;      // data bytes per CPU sampling ring (a power of two number of pages)
  uint32_t stack_copy;    // bytes of user stack copied per sample
  bool stack_copy_fixed;  // the user chose stack_copy: a ring cut by the locked-memory limit
                          // does not cut it (record_perf_copy_cut)
  bool dwarf;             // sample every register CFI unwinding may need (not only fp, sp, pc)
  bool runtime;           // measure task runtime (RFC-0084) per thread: see below
  bool runtime_events;    // with `runtime`, also time page faults and kernel locks (events)
  bool side_band_only;    // a dummy event (PERF_COUNT_SW_DUMMY): no samples, only the side band
                          // (COMM, MMAP2, FORK, EXIT), for PCs sampled by someone else (perfmon)
} record_perf_options_t;

// Task runtime. With `runtime`, the sampling event also counts (task-clock: every nanosecond a
// thread ran) with inherit_stat, so that each inherited thread's count comes as a
// PERF_RECORD_READ {pid, tid, value, id} when it exits (record_perf_read_counts() gives the
// counts of the events opened here, which include those of the exited children); and every
// thread gets, with `runtime_events`, in rings of their own (drained through `runtime_fn`),
// the page-fault events
// (PERF_COUNT_SW_PAGE_FAULTS at the start of the handler, _MIN/_MAJ at its end) and, where
// tracefs names them and the kernel allows, the lock:contention_begin/end tracepoints, each
// sampled on every occurrence with IDENTIFIER, TID and TIME (and RAW for tracepoints).
enum { RECORD_RT_FAULT_BEGIN, RECORD_RT_FAULT_END, RECORD_RT_LOCK_BEGIN, RECORD_RT_LOCK_END };

typedef struct record_perf record_perf_t;

// Called for every record drained, in ring order per CPU. `record` points at the header; it is
// contiguous (copied out when it wrapped) and valid only during the call.
typedef void (*record_perf_fn)(void* ctx, const struct perf_event_header* record);

// Opens the events and maps the rings. For a child, events start at its exec
// (enable_on_exec). On failure returns NULL and writes a message for the user into `error`.
record_perf_t* record_perf_open(const record_perf_options_t* options, char* error,
                                size_t error_size);

// Whether kernel-mode samples are being taken (asked for and allowed).
bool record_perf_kernel(const record_perf_t* perf);

// The sample_type of the events, to parse samples with.
uint64_t record_perf_sample_type(const record_perf_t* perf);

// Waits up to `timeout_ms` for data (or for `extra_fd`, if >= 0, to be readable), then drains
// every ring through `fn`. Returns true when extra_fd is readable.
bool record_perf_poll(record_perf_t* perf, int extra_fd, int timeout_ms, record_perf_fn fn,
                      record_perf_fn runtime_fn, void* ctx);

// Drains every ring through `fn` (the task runtime rings through `runtime_fn`) without waiting.
void record_perf_drain(record_perf_t* perf, record_perf_fn fn, record_perf_fn runtime_fn,
                       void* ctx);

// Which of ZXS_TASK_RUNTIME_PAGE_FAULT_TIME / _LOCK_CONTENTION_TIME the runtime events measure
// (for every thread), and a sentence saying why a field is not measured ("" when all are).
uint32_t record_perf_runtime_fields(const record_perf_t* perf);
const char* record_perf_runtime_missing(const record_perf_t* perf);
// The ids of the runtime events and their kinds (RECORD_RT_*): `count` of each.
size_t record_perf_runtime_ids(const record_perf_t* perf, const uint64_t** ids, const int** kinds);

// The count of each sampling event opened here (not inherited): the thread it was opened on,
// its id, its value (task-clock ns, its inherited children's included once they exited).
typedef void (*record_perf_count_fn)(void* ctx, pid_t tid, uint64_t id, uint64_t value);
void record_perf_read_counts(const record_perf_t* perf, record_perf_count_fn fn, void* ctx);

// Threads of an attached process that could not be given events (they exited first, or refused).
uint64_t record_perf_attach_failures(const record_perf_t* perf);

// The bytes of the smallest sampling ring when the locked-memory limit (perf_event_mlock_kb,
// then RLIMIT_MEMLOCK; unprivileged users) cut any below `ring_bytes`; else 0. A cut ring wakes
// its reader at a quarter of the size it got.
size_t record_perf_ring_cut(const record_perf_t* perf);

// The bytes of stack each sample copies when the cut rings made the default copy smaller (so
// that a ring holds 256 samples, at least 8 KiB); else 0.
uint32_t record_perf_copy_cut(const record_perf_t* perf);

// Closes every event and unmaps the rings. NULL is fine.
void record_perf_close(record_perf_t* perf);

#endif  // ZXSAMPLER_SRC_RECORD_RECORD_PERF_H_
