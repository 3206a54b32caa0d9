// Profiles itself with the profiler API over the Fuchsia backend and the double, and writes the
// trace to argv[1] (for test_report.sh: `zxsampler report` on a trace the backend wrote).
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <zxsampler/zxsampler.h>

#include "fuchsia_double.h"

__attribute__((noinline)) void fx_record_hot_loop(void) {
  uint64_t x = 1;
  for (int i = 0; i < 200000; i++) x = x * 6364136223846793005u + (uint64_t)i;
  __asm__ volatile("" : : "r"(x) : "memory");
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fx_record TRACE\n");
    return 2;
  }
  zx_handle_t rsrc;
  zx_status_t status = zxs_double_debug_resource_get(&rsrc);
  if (status == ZX_OK) status = zxs_debug_resource_set(rsrc);
  if (status == ZX_OK) status = zxs_profiler_start(NULL);
  if (status != ZX_OK) {
    fprintf(stderr, "fx_record: %s\n", zxs_status_string(status));
    return 1;
  }
  struct timespec start, now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do {
    fx_record_hot_loop();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < 200);
  status = zxs_profiler_stop(argv[1], ZXS_FORMAT_FXT);
  if (status != ZX_OK) {
    fprintf(stderr, "fx_record: %s\n", zxs_status_string(status));
    return 1;
  }
  return 0;
}
