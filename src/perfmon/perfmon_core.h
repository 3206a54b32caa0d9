// The perfmon controller's run, between the core and the backends (internal).
//
// The core (perfmon_controller.c) checks the protocol's order and the config, owns the buffers
// and writes every record; a backend (zxs_prim_perfmon_*, platform.h) only collects: it opens
// what counts the events on each CPU, and reports what happened through the two calls below,
// which turn it into cpu-trace records with the timebase rules. So every backend writes the
// same records for the same events, and the fake backend drives the exact code the real ones
// do.
#ifndef ZXSAMPLER_SRC_CORE_PERFMON_CORE_H_
#define ZXSAMPLER_SRC_CORE_PERFMON_CORE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/perfmon.h>

// One event of the staged config, as checked.
typedef struct zxs_perfmon_run_event {
  uint16_t id;
  uint32_t rate;       // 0: read when the timebase fires (uses_timebase), else at stop
  uint32_t flags;      // ZXS_PERFMON_EVENT_FLAG_*
  bool counting;       // a count (COUNT records) rather than a value (VALUE records)
  bool uses_timebase;  // rate 0 and the config has a timebase
} zxs_perfmon_run_event_t;

// The buffer of one CPU. Written by one thread at a time: the backend guarantees it never calls
// the two functions below concurrently for the same buffer.
typedef struct zxs_perfmon_run_buffer {
  uint32_t cpu;   // the CPU number
  uint8_t* base;  // the writable mapping
  size_t size;
  size_t end;                                     // capture end
  uint32_t flags;                                 // header flags
  uint64_t reported[ZXS_PERFMON_MAX_NUM_EVENTS];  // occurrences some record counted, per event
} zxs_perfmon_run_buffer_t;

typedef struct zxs_perfmon_run {
  uint32_t event_count;
  zxs_perfmon_run_event_t events[ZXS_PERFMON_MAX_NUM_EVENTS];
  int32_t timebase;  // index of the timebase event, -1 if none
  uint32_t buffer_count;
  zxs_perfmon_run_buffer_t* buffers;  // buffer i: the i-th online CPU at initialize
  void* backend;                      // the backend's state while running
} zxs_perfmon_run_t;

// What the backend saw when an event with a rate reached it.
typedef struct zxs_perfmon_sample {
  uint32_t event;   // index in run->events (an event with rate > 0)
  zx_ticks_t time;  // in zxs_prim_ticks() units
  uint64_t aspace;  // the address space (Linux: pid << 32 | tid); for PC and last-branch records
  uint64_t pc;      // for events with COLLECT_PC
  // When `event` is the timebase: the value of every event at that moment, by index (only those
  // with uses_timebase are read; counting events: their running total since start). Else NULL.
  const uint64_t* values;
  // For events with COLLECT_LAST_BRANCH (ignored when 0).
  uint32_t num_branches;
  const zxs_perfmon_last_branch_t* branches;
} zxs_perfmon_sample_t;

// Writes the records of one sample into the buffer (TIME; PC or TICK; the timebase's COUNT/VALUE
// records; LAST_BRANCH), all or none: none sets the FULL flag.
void zxs_perfmon_core_sample(zxs_perfmon_run_t* run, uint32_t buffer,
                             const zxs_perfmon_sample_t* sample);

// Writes the final records at stop: TIME, then per event a COUNT of what no record counted yet
// (totals[i]: event i's running total since start; less than what was counted gives 0), or a
// VALUE of totals[i] for value events.
void zxs_perfmon_core_final(zxs_perfmon_run_t* run, uint32_t buffer, zx_ticks_t time,
                            const uint64_t* totals);

// Records were lost before they reached the core (a kernel ring overflowed): sets FULL.
void zxs_perfmon_core_lost(zxs_perfmon_run_t* run, uint32_t buffer);

#endif  // ZXSAMPLER_SRC_CORE_PERFMON_CORE_H_
