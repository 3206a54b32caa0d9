// zxsampler record: what the perf records say about the process tree, and the trace file made
// of it.
//
// Each program image is one process of the trace: a process that calls exec becomes a new
// process object (the pid stays; the koid is pid | generation << 32, so the first image of a
// pid has koid = pid), as on Fuchsia, where every program runs in its own process. Its modules
// come from the kernel's MMAP2 records (and /proc/PID/maps for a process attached to while
// running), a forked child starts with its parent's. Samples are walked when they arrive and
// written to a spool file, so memory does not grow with the length of the run.
#ifndef ZXSAMPLER_SRC_RECORD_RECORD_PROCESSES_H_
#define ZXSAMPLER_SRC_RECORD_RECORD_PROCESSES_H_

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <zxsampler/profiler.h>
#include <zxsampler/types.h>

#include "trace_output.h"

typedef struct record_processes record_processes_t;

typedef struct record_totals {
  uint64_t samples;                // written
  uint64_t lost;                   // the kernel could not store (rings full)
  uint64_t truncated;              // walks cut by the stack copy or the depth limit
  uint64_t processes;              // program images that were sampled
  uint64_t threads;                // threads that were sampled
  uint64_t children_not_followed;  // with --no-inherit: children forked and not sampled
  // PC samples (record_processes_on_pc) left out: of other processes than the root, and of the
  // root's pid before its exec.
  uint64_t pc_other_processes;
  uint64_t pc_before_exec;
  // The root pid's current process: its name ("" when unknown) and how many executable
  // mappings it has (0: its PCs stay unnamed).
  uint32_t root_pid;  // 0: none
  char root_name[17];
  size_t root_mappings;
} record_totals_t;

// `spool` receives the sample records (FXT) as they come; `root` is the first process (0: none,
// with PC samples of every process);
// `kernel`: kernel call chains are sampled; `follow_children`: samples of forked children are
// expected (else their forks are only counted); `cfi`: samples carry every register
// (record_perf_options_t.dwarf) and are unwound with CFI, else by frame pointers.
record_processes_t* record_processes_new(FILE* spool, uint64_t sample_type, pid_t root, bool kernel,
                                         bool follow_children, bool cfi);

// Feeds one perf record (record_perf_fn). Records are buffered and handled in time order by
// record_processes_flush().
void record_processes_on_record(void* self, const struct perf_event_header* record);

// PC samples will come (record_processes_on_pc()), after the side band: records are held until
// record_processes_flush() is called, however many, so that the samples are handled in time
// order with the side band. With a root, only the root's PC samples from its exec on are kept
// (the others counted): from the kernel's COMM_EXEC record where the side band has it, else
// from `exec_ns` (CLOCK_MONOTONIC; 0: not known yet). May be called again with `exec_ns`.
void record_processes_expect_pcs(record_processes_t* self, uint64_t exec_ns);

// Feeds one PC sample (time in CLOCK_MONOTONIC ns) of thread `tid` of process `pid`, a kernel
// address when `kernel_pc` (its function is named from /proc/kallsyms in the trace).
void record_processes_on_pc(record_processes_t* self, uint64_t time_ns, uint32_t pid, uint32_t tid,
                            uint64_t pc, bool kernel_pc);

// Handles the records buffered so far, in time order. With a worker: hands them to it when it is
// idle (else keeps them for the next call, waiting for it only past 32 MiB held).
void record_processes_flush(record_processes_t* self);

// From now on batches are handled by a thread of their own (its signals blocked), so that the
// caller, which drains the rings, only copies: it reads them again while the last batch is
// unwound. Until record_processes_stop_worker(), the caller may only feed records
// (record_processes_on_record, _on_runtime_record) and flush. Not with PC samples. False when no
// thread could be made: batches are then handled by flush, as before.
bool record_processes_start_worker(record_processes_t* self);

// Waits for the worker to handle what it was handed, and ends it; what was fed since is handled
// by the next flush, here. Nothing without a worker.
void record_processes_stop_worker(record_processes_t* self);

// A process that runs already: its name, threads and executable mappings from /proc. Called
// again, the mappings are replaced by those /proc lists now (kept when it lists none: a zombie).
void record_processes_add_running(record_processes_t* self, pid_t pid);

// What the records so far made: counts, losses, the root (see record_totals_t).
void record_processes_totals(const record_processes_t* self, record_totals_t* out);

// Task runtime (RFC-0084) per thread, for the trace's thread records (see record_perf.h for the
// events). cpu_time: each thread's task-clock count (PERF_RECORD_READ as an inherited thread
// exits; for the threads our events were opened on, their count minus those of their exited
// children, from record_processes_on_count()); a thread that outlives the recording, from
// schedstat. queue_time: schedstat's run delay, read while the thread lives
// (record_processes_read_schedstat()): what a thread waited after the last read is missed.
// page_fault_time and lock_contention_time: the runtime rings' records, paired per thread in
// time order.
//
// Turns the measurement on: `fields` are the runtime events' (record_perf_runtime_fields()),
// `missing` why the others are not measured, `ids`/`kinds` the events (record_perf_runtime_ids()).
void record_processes_set_runtime(record_processes_t* self, uint32_t fields, const char* missing,
                                  const uint64_t* ids, const int* kinds, size_t count);

// Feeds one record of the runtime rings (record_perf_fn).
void record_processes_on_runtime_record(void* self, const struct perf_event_header* record);

// Reads the schedstat of every live thread: at most every 100 ms unless `now`. With a worker,
// the worker reads it after each batch, and this does nothing.
void record_processes_read_schedstat(record_processes_t* self, bool now);

// The count of one of our sampling events (record_perf_count_fn), after the last drain and flush.
void record_processes_on_count(void* self, pid_t tid, uint64_t id, uint64_t value);

// Writes the complete trace file: header, processes, threads, modules per process, kernel
// symbols (if kernel frames were sampled), then the spooled samples. ZX_OK or ZX_ERR_IO /
// ZX_ERR_NO_MEMORY.
zx_status_t record_processes_write(record_processes_t* self, uint64_t period_ns,
                                   uint64_t threads_not_attached, FILE* out);

// Frees the model (not the spool, which is the caller's). NULL is fine.
// The whole trace (record_processes_write) into `out`, the temporary file made beside the
// profile `output` before the run (trace_output.h), then renamed into place, or converted from
// there to `format` (zxs_profile_convert writes the same way); the old profile stays until then.
// False after a message starting with `prog` on stderr.
bool record_processes_write_output(record_processes_t* self, uint64_t period_ns,
                                   uint64_t threads_not_attached, zxs_trace_output_t* out,
                                   const char* output, zxs_profile_format_t format,
                                   const char* prog);

void record_processes_free(record_processes_t* self);

#endif  // ZXSAMPLER_SRC_RECORD_RECORD_PROCESSES_H_
