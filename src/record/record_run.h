// `zxsampler record`'s run: a program started (or a running process attached to) and every
// thread of its process tree sampled from outside with perf events (record_perf.h) into an FXT
// profile (record_processes.h), converted to the format asked for.
//
// The program runs exactly as it would without us: same environment, file descriptors, signal
// dispositions, process group and terminal; no library is loaded into it. Signals sent to the
// recorder by another process are passed on to it (with `pid`, they end the recording).
#ifndef ZXSAMPLER_SRC_RECORD_RECORD_RUN_H_
#define ZXSAMPLER_SRC_RECORD_RECORD_RUN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <zxsampler/profiler.h>

typedef struct record_run_options {
  const char* output;           // where the profile goes (written beside it, renamed into place)
  zxs_profile_format_t format;  // converted from FXT unless ZXS_FORMAT_FXT
  char** program;               // PROGRAM and its arguments; NULL: attach to `pid`
  pid_t pid;                    // the running process to sample (with program NULL)
  uint64_t duration_s;          // with `pid`: stop after this many seconds (0: at its exit)
  uint64_t period_ns;           // task-clock period
  size_t ring_bytes;            // per CPU ring
  uint32_t stack_copy;          // bytes of user stack copied per sample
  bool stack_copy_given;        // the user chose it: never cut to fit a ring
  bool inherit;                 // follow children (threads are always followed)
  bool kernel;                  // sample kernel code too, where allowed
  bool quiet;                   // no summary (losses are still reported)
  bool dwarf;                   // CFI unwinding, else frame pointers
  bool runtime;                 // task runtime (RFC-0084) per thread
  bool runtime_events;          // with `runtime`: also time page faults and lock contention
} record_run_options_t;

// What record_run() returns when the tool is to end as the program did (*wstatus).
#define RECORD_RUN_EXIT_LIKE_PROGRAM (-1)

// Records. Returns the exit status: RECORD_RUN_EXIT_LIKE_PROGRAM after a program ran (its wait
// status in *wstatus, whether or not the profile could be written: that was said); with `pid`,
// 0 when the profile was written, else 1; 1 when nothing could be recorded (said); the shell's
// 127/126 when PROGRAM could not be run (said).
int record_run(const record_run_options_t* options, int* wstatus);

// Whether this build can unwind with CFI (libunwind): `dwarf` may be asked for.
bool record_run_cfi_available(void);

#endif  // ZXSAMPLER_SRC_RECORD_RECORD_RUN_H_
