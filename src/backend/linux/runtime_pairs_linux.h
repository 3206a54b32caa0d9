// Timing page faults and kernel-lock contentions from the kernel's own events, and a thread's
// run delay from schedstat: the parts of the RFC-0084 measurement that do not depend on who
// opens the events (internal to the Linux backend and `zxsampler record`).
//
// A fault is timed from PERF_COUNT_SW_PAGE_FAULTS (the start of the fault handler) to the next
// PERF_COUNT_SW_PAGE_FAULTS_MIN/MAJ of the same thread (its end, for a completed fault); a
// contention from lock:contention_begin to the contention_end of the same lock address, spin
// locks (LCB_F_SPIN) left out as the RFC leaves them out. Records of one thread are fed in time
// order; one older than the last fed for the thread is ignored (a record drained late from
// another CPU's ring), and a begin whose end never came is dropped at the next begin.
#ifndef ZXSAMPLER_SRC_BACKEND_LINUX_RUNTIME_PAIRS_LINUX_H_
#define ZXSAMPLER_SRC_BACKEND_LINUX_RUNTIME_PAIRS_LINUX_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// A lock:contention_* tracepoint as tracefs describes it.
typedef struct zxs_rt_tracepoint {
  bool found;
  uint64_t id;            // perf_event_attr.config for PERF_TYPE_TRACEPOINT
  uint32_t addr_offset;   // of lock_addr in the raw record
  uint32_t flags_offset;  // of flags (contention_begin only)
} zxs_rt_tracepoint_t;

// The lock:contention_begin/end tracepoints, looked up once in /sys/kernel/tracing (or
// /sys/kernel/debug/tracing). False when tracefs does not name both (not mounted, no right to
// read it, or a kernel without them).
bool zxs_rt_lock_tracepoints(zxs_rt_tracepoint_t* begin, zxs_rt_tracepoint_t* end);

// Where a thread's fault and contention time fell, by 2^16 ns (65.5 us) of monotonic time, over
// the last ZXS_RT_HISTORY_BUCKETS of them (0.54 s): how much of it lay in a given interval (a
// late period's), asked shortly after the interval ended. A fault or contention is spread over
// the buckets it covers; an interval's edge buckets count pro rata.
#define ZXS_RT_HISTORY_SHIFT 16u
#define ZXS_RT_HISTORY_BUCKETS 8192u
typedef struct zxs_rt_history {
  uint64_t number[ZXS_RT_HISTORY_BUCKETS];  // time >> SHIFT of what the bucket holds; 0: empty
  uint32_t fault_ns[ZXS_RT_HISTORY_BUCKETS];
  uint32_t lock_ns[ZXS_RT_HISTORY_BUCKETS];
} zxs_rt_history_t;

// The fault and contention time in [since, until] that `h` still holds.
void zxs_rt_history_between(const zxs_rt_history_t* h, uint64_t since, uint64_t until,
                            int64_t* fault_ns, int64_t* lock_ns);

// The pairing state and totals of one thread.
typedef struct zxs_rt_pairs {
  uint64_t last_time;       // of the last record fed
  uint64_t fault_begin;     // time of an open fault; 0: none
  uint64_t last_fault_end;  // of the last fault counted
  uint64_t lock_begin;      // time of an open contention; 0: none
  uint64_t lock_addr;
  int64_t page_fault_ns;
  int64_t lock_contention_ns;
  uint64_t faults;
  uint64_t contentions;
  // Added to each fault: the part of its cost outside the timed pair (zxs_rt_fault_edge_ns()).
  int64_t fault_edge_ns;
  zxs_rt_history_t* history;  // NULL: totals only; else each pair also goes there (owned)
} zxs_rt_pairs_t;

void zxs_rt_pairs_fault_begin(zxs_rt_pairs_t* p, uint64_t time);
void zxs_rt_pairs_fault_end(zxs_rt_pairs_t* p, uint64_t time);
// `raw` is the tracepoint's PERF_SAMPLE_RAW data (without its u32 size), `raw_size` bytes.
void zxs_rt_pairs_lock_begin(zxs_rt_pairs_t* p, const zxs_rt_tracepoint_t* tp, uint64_t time,
                             const uint8_t* raw, size_t raw_size);
void zxs_rt_pairs_lock_end(zxs_rt_pairs_t* p, const zxs_rt_tracepoint_t* tp, uint64_t time,
                           const uint8_t* raw, size_t raw_size);
// Records were lost: open pairs are not trusted.
void zxs_rt_pairs_break(zxs_rt_pairs_t* p);

// Parses a schedstat file's text ("RUN_NS DELAY_NS SLICES"): the time the task ran and waited on
// a run queue. False when malformed.
bool zxs_rt_parse_schedstat(const char* text, int64_t* run_ns, int64_t* delay_ns);
// Reads /proc/PID/task/TID/schedstat. False when the thread is gone (or /proc is missing).
bool zxs_rt_read_schedstat(pid_t pid, pid_t tid, int64_t* run_ns, int64_t* delay_ns);

#endif  // ZXSAMPLER_SRC_BACKEND_LINUX_RUNTIME_PAIRS_LINUX_H_
