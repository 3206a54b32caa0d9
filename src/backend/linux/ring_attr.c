// Linux: what a perf-ring event asks the kernel for, in one place for the ring source
// (source_perf_ring.c) and for the throttle's calibration of it (throttle.c), which must make the
// kernel do the same work per sample.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/perf_event.h>
#include <stdlib.h>
#include <time.h>

#include "linux_internal.h"
#include "perf_regs.h"

// perf's own default for DWARF unwinding; ZXSAMPLER_STACK_COPY=N (bytes) changes it.
#define STACK_COPY_BYTES 8192u
#define STACK_COPY_MIN 512u
#define STACK_COPY_MAX 65000u

uint32_t zxs_linux_ring_stack_copy(bool* configured) {
  if (configured != NULL) *configured = false;
  const char* value = getenv("ZXSAMPLER_STACK_COPY");
  if (value == NULL || *value == '\0') return STACK_COPY_BYTES;
  char* end = NULL;
  const unsigned long n = strtoul(value, &end, 10);
  if (*end != '\0' || n < STACK_COPY_MIN || n > STACK_COPY_MAX) return STACK_COPY_BYTES;
  if (configured != NULL) *configured = true;
  return (uint32_t)(n & ~7ul);  // the kernel wants a multiple of 8
}

void zxs_linux_ring_attr(struct perf_event_attr* attr, zx_duration_t period, size_t data_size,
                         uint32_t stack_copy) {
  zxs_linux_task_clock_attr(attr, period);
  // PERF_SAMPLE_ID: the event's id, its parent's for an inherited copy (the covering events).
  attr->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
                      PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  attr->sample_regs_user = ZXS_PERF_REGS_MASK;
  attr->sample_stack_user = stack_copy;
  attr->read_format = PERF_FORMAT_LOST;  // Linux 6.0
  attr->use_clockid = 1;
  attr->clockid = CLOCK_MONOTONIC;  // zxs_prim_ticks()'s clock
  attr->watermark = 1;
  attr->wakeup_watermark = (uint32_t)(data_size / 2);
}
