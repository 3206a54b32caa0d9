// A symbolized profile in memory: what every export format is written from (internal).
//
// Built from a trace file (trace_read.c; a stopped session is first written as one, by
// trace_write.c); exporters only read it.
// Frames refer to unique locations; a location is an address plus whether it was sampled as
// the interrupted instruction (frame 0: exact) or as a return address (every other frame: the
// call that returns there is at address - 1, and that is what was symbolized).
#ifndef ZXSAMPLER_SRC_REPORT_PROFILE_H_
#define ZXSAMPLER_SRC_REPORT_PROFILE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>

#include "modules.h"

// A call inlined at a location (pprof: one more Line of its Location).
typedef struct zxs_profile_inline_frame {
  const char* function;     // NULL if unknown; demangled
  const char* system_name;  // the name in the binary when `function` was demangled from it
  const char* file;         // NULL if unknown
  uint32_t line;            // 0 if unknown
} zxs_profile_inline_frame_t;

typedef struct zxs_profile_location {
  uint64_t address;         // as sampled (a return address is not adjusted here)
  bool is_return_address;   // symbolized at address - 1
  uint32_t process;         // index into processes: whose address space `address` is in
  int32_t module;           // index into modules.modules, -1 if in none
  uint64_t file_address;    // address - load bias of the module (0 without a module)
  const char* function;     // NULL if unknown; demangled
  const char* system_name;  // the name in the binary when `function` was demangled from it
  const char* file;         // NULL if unknown
  uint32_t line;            // 0 if unknown; with inline frames, the call site of the outermost
  // Calls inlined here, innermost first: inline_frames[inline_first .. + inline_count). The
  // fields above then describe the function the code was inlined into.
  size_t inline_first;
  uint32_t inline_count;
} zxs_profile_location_t;

// One process object of the trace (one program image: a process that called exec is a new
// one). Its modules are modules.modules[module_first .. module_first + module_count), indexed
// on their own.
typedef struct zxs_profile_process {
  zx_koid_t koid;
  uint64_t pid;      // the OS's process id (the koid's low 32 bits for `zxsampler record`)
  const char* name;  // "" if unknown
  size_t module_first, module_count;
  uint64_t samples;
} zxs_profile_process_t;

// A kernel function named in the trace: [start, end).
typedef struct zxs_profile_kernel_symbol {
  uint64_t start, end;
  const char* name;
} zxs_profile_kernel_symbol_t;

// What a trace says about how it was recorded.
typedef enum zxs_profile_sampled {
  ZXS_PROFILE_SAMPLED_UNKNOWN = 0,  // in-process sessions: user code only, not stated
  ZXS_PROFILE_SAMPLED_USER = 1,
  ZXS_PROFILE_SAMPLED_USER_KERNEL = 2,
} zxs_profile_sampled_t;

// Where a thread's time went (RFC-0084), as `zxsampler record` measured it. A field not in
// `fields` was not measured (older traces, in-process traces: none is).
#define ZXS_PROFILE_RUNTIME_CPU (1u << 0)    // = ZXS_TASK_RUNTIME_CPU_TIME
#define ZXS_PROFILE_RUNTIME_QUEUE (1u << 1)  // = ZXS_TASK_RUNTIME_QUEUE_TIME
#define ZXS_PROFILE_RUNTIME_FAULT (1u << 2)  // = ZXS_TASK_RUNTIME_PAGE_FAULT_TIME
#define ZXS_PROFILE_RUNTIME_LOCK (1u << 3)   // = ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME
typedef struct zxs_profile_runtime {
  uint32_t fields;
  uint64_t cpu_time, queue_time, page_fault_time, lock_contention_time;  // ns
  uint64_t page_faults, lock_contentions;                                // timed
} zxs_profile_runtime_t;

typedef struct zxs_profile_thread {
  zx_koid_t pid;
  zx_koid_t tid;
  const char* name;  // "" if unknown
  zxs_profile_runtime_t runtime;
} zxs_profile_thread_t;

// A recorder alert (recorder.h): when, on which thread, and, for a late period, its breakdown
// in ns; `fields` says which values the trace holds (an absent one was not measured).
#define ZXS_PROFILE_ALERT_WALL (1u << 0)
#define ZXS_PROFILE_ALERT_BUDGET (1u << 1)
#define ZXS_PROFILE_ALERT_CPU (1u << 2)
#define ZXS_PROFILE_ALERT_QUEUE (1u << 3)
#define ZXS_PROFILE_ALERT_FAULT (1u << 4)
#define ZXS_PROFILE_ALERT_LOCK (1u << 5)
typedef struct zxs_profile_alert {
  const char* name;
  zx_koid_t pid, tid;
  uint64_t ticks;  // the alert, or the end of the late period
  uint32_t fields;
  uint64_t wall, budget, cpu_time, queue_time, page_fault_time, lock_contention_time;
} zxs_profile_alert_t;

typedef struct zxs_profile_sample {
  zx_koid_t pid;
  zx_koid_t tid;
  uint64_t ticks;
  uint32_t depth;      // frames in this sample (1..ZXS_TRACE_MAX_FRAMES)
  size_t first_frame;  // index into frames: frames[first_frame .. first_frame + depth)
} zxs_profile_sample_t;

typedef struct zxs_profile {
  uint64_t ticks_per_second;  // non-zero
  zx_duration_t period;       // sampling period in ns (0 if unknown)
  // The profile's process: the first process's koid and name ("" if unknown); after
  // zxs_profile_select(), the first process kept.
  zx_koid_t pid;
  const char* process_name;
  zxs_profile_process_t* processes;
  size_t process_count;
  zxs_profile_sampled_t sampled;
  uint64_t samples_lost;           // the recorder could not store them
  uint64_t children_not_followed;  // recorded with --no-inherit
  uint64_t threads_not_attached;
  // Task runtime: the fields the recording measured for every thread (0: none), why the others
  // were not (NULL: all were, or no runtime), and runtime records the kernel could not store.
  uint32_t runtime_fields;
  const char* runtime_missing;
  uint64_t runtime_records_lost;
  zxs_profile_kernel_symbol_t* kernel_symbols;  // sorted by start
  size_t kernel_symbol_count;
  zxs_module_list_t modules;  // every process's modules, one range per process (see above)
  zxs_profile_thread_t* threads;
  size_t thread_count;
  zxs_profile_location_t* locations;
  size_t location_count;
  zxs_profile_sample_t* samples;
  size_t sample_count;
  uint32_t* frames;  // location indices, innermost first per sample
  size_t frame_count;
  zxs_profile_inline_frame_t* inline_frames;  // see zxs_profile_location_t
  size_t inline_frame_count;
  zxs_profile_alert_t* alerts;  // in the order of the trace
  size_t alert_count;
  void* strings;  // zxs_profile_strdup()'s allocations (a chain)
} zxs_profile_t;

// Whether a sampled address is the kernel's (the top bit set, on the 64-bit architectures
// recorded).
static inline bool zxs_profile_is_kernel_address(uint64_t address) { return (address >> 63) != 0; }

// The process of a sample (the entry whose koid is the sample's pid), or NULL.
const zxs_profile_process_t* zxs_profile_find_process(const zxs_profile_t* profile, zx_koid_t koid);

// Whether `process` has pid `pid` (0: any) and name `name` (NULL: any).
bool zxs_profile_process_matches(const zxs_profile_process_t* process, uint64_t pid,
                                 const char* name);

// Keeps only the samples of processes whose pid is `pid` (0: any) and whose name is `name`
// (NULL: any), and names the profile (pid, process_name) after the first process that matches
// with samples (else the first that matches; else it stays as it was); the rest of the
// profile stays as it is. Returns how many samples are left.
size_t zxs_profile_select(zxs_profile_t* profile, uint64_t pid, const char* name);

// A copy of `s` owned by the profile (freed with it); NULL on allocation failure.
const char* zxs_profile_strdup(zxs_profile_t* profile, const char* s);

// Frees everything the profile owns (modules, arrays, strings) and empties it. A profile built
// by hand with static strings and NULL `strings` may be freed too (or just not).
void zxs_profile_free(zxs_profile_t* profile);

// The profile's duration in ns: first to last sample's ticks, plus one period when it is known
// (each sample stands for one period). 0 without samples.
uint64_t zxs_profile_duration_ns(const zxs_profile_t* profile);

#endif  // ZXSAMPLER_SRC_REPORT_PROFILE_H_
