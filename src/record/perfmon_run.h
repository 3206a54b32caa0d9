// `zxsampler perfmon stat` and `perfmon record`: the CPU performance monitor (<zxsampler/
// perfmon.h>) over a program's run (or until SIGINT, SIGTERM or SIGHUP without one), counting
// on every CPU, every process (like `perf stat -a` / `perf record -a`).
//
// `record` keeps the PC samples of the program's process (of every process without a program,
// then unsymbolized) and writes them as a trace file through the recording engine's process
// model (record_processes.h): the program's side band (exec, mappings, threads) comes from
// per-CPU rings of a perf dummy event bound to it (record_perf.h, side_band_only), or, where
// perf refuses it, from /proc read every quarter second; the trace names the program's modules
// with their file offsets.
#ifndef ZXSAMPLER_SRC_RECORD_PERFMON_RUN_H_
#define ZXSAMPLER_SRC_RECORD_PERFMON_RUN_H_

#include <stdbool.h>
#include <stdint.h>
#include <zxsampler/perfmon.h>
#include <zxsampler/profiler.h>

// Events on every CPU and in every process, in user and kernel mode: no modifier given.
#define PERFMON_OS_USER (ZXS_PERFMON_EVENT_FLAG_COLLECT_OS | ZXS_PERFMON_EVENT_FLAG_COLLECT_USER)

// An event as the user asked for it.
typedef struct perfmon_event {
  char text[96];   // as the user wrote it (without @RATE): names it in messages and output
  uint16_t id;     // zxs_perfmon_event_id()
  uint32_t rate;   // sample every `rate` occurrences; 0: count
  uint32_t flags;  // ZXS_PERFMON_EVENT_FLAG_*
} perfmon_event_t;

typedef struct perfmon_events {
  perfmon_event_t ev[ZXS_PERFMON_MAX_NUM_EVENTS];
  uint32_t count;
} perfmon_events_t;

typedef struct perfmon_stat_options {
  const char* prog;                // names the command in messages ("zxsampler perfmon stat")
  const perfmon_events_t* events;  // to count
  const char* separator;           // machine-readable lines "CPUn S COUNT S EVENT"; NULL: a table
  const char* output;              // the counts' file; NULL: standard error
  char** program;                  // PROGRAM and its arguments; NULL: until a signal
} perfmon_stat_options_t;

// Counts the events over the run and prints them per CPU and in total. Returns the exit status:
// the program's (128 + signal when a signal killed it), 0 without a program; 1 on a failure,
// 127/126 when PROGRAM could not be run (everything said on standard error).
int perfmon_stat_run(const perfmon_stat_options_t* options);

typedef struct perfmon_record_options {
  const char* prog;                // names the command in messages
  const perfmon_events_t* events;  // at least one with a rate
  const char* output;              // the profile
  zxs_profile_format_t format;     // converted from FXT unless ZXS_FORMAT_FXT
  uint32_t buffer_pages;           // per CPU
  char** program;                  // PROGRAM and its arguments; NULL: until a signal
} perfmon_record_options_t;

// Samples the PCs over the run and writes the profile (see above). The exit status as
// perfmon_stat_run()'s.
int perfmon_record_run(const perfmon_record_options_t* options);

#endif  // ZXSAMPLER_SRC_RECORD_PERFMON_RUN_H_
