// What the flight recorder costs (README, "Flight recorder"):
//   A. one zxs_deadline_begin + zxs_deadline_end pair on time, on a thread the recorder has
//      attached (CPU clock and queue time read at each end) and on one it has not (CPU clock only);
//   B. a CPU-bound loop of fixed work, sampled at 1 ms by nothing, by a normal profiler session
//      (profiler.h) and by the recorder (its rings): the loop's wall time, each relative to none.
// `-r N` rounds alternate the three configurations (default 5); medians are printed. The
// machine may be shared: the spread is printed with each median. Prints a table; asserts nothing.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/profiler.h>
#include <zxsampler/recorder.h>

#include "bench_common.h"

#define PAIRS 200000
#define WORK_ITERATIONS 150000000u  // ~0.3 s of CPU here
#define MAX_ROUNDS 32

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// ns per begin+end pair of a period well within its budget.
static double pair_ns(void) {
  zxs_deadline_t d = {.name = "bench"};
  const double start = now_s();
  for (int i = 0; i < PAIRS; i++) {
    zxs_deadline_begin(&d, ZX_SEC(1));
    if (zxs_deadline_end(&d) != ZX_OK) abort();  // never late: a second of budget
  }
  return (now_s() - start) * 1e9 / PAIRS;
}

static volatile uint64_t g_sink;

// Fixed work; its wall time in s.
static double work_s(void) {
  const double start = now_s();
  uint64_t x = 1;
  for (uint32_t i = 0; i < WORK_ITERATIONS; i++) x = x * 6364136223846793005u + i;
  g_sink = x;
  return now_s() - start;
}

// A deadline pair on a thread the recorder never attached (no queue time to read).
static void* unattached_main(void* out) {
  *(double*)out = pair_ns();
  return NULL;
}

int main(int argc, char** argv) {
  int rounds = 5;
  for (int opt; (opt = getopt(argc, argv, "r:")) != -1;) {
    if (opt == 'r') rounds = atoi(optarg);
  }
  if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 5;
  char dir[] = "/tmp/zxs-bench-recorder.XXXXXX";
  if (mkdtemp(dir) == NULL) return 1;

  double attached[MAX_ROUNDS], unattached[MAX_ROUNDS];
  double none[MAX_ROUNDS], profiler[MAX_ROUNDS], recorder[MAX_ROUNDS];
  const zxs_recorder_options_t rec_options = {.period = ZX_MSEC(1), .output_dir = dir};
  const zxs_profiler_options_t prof_options = {.period = ZX_MSEC(1)};
  for (int r = 0; r < rounds; r++) {
    none[r] = work_s();

    bench_check("zxs_profiler_start", zxs_profiler_start(&prof_options));
    profiler[r] = work_s();
    char path[64];
    snprintf(path, sizeof(path), "%s/profile.fxt", dir);
    bench_check("zxs_profiler_stop", zxs_profiler_stop(path, ZXS_FORMAT_FXT));
    remove(path);

    bench_check("zxs_recorder_start", zxs_recorder_start(&rec_options));
    recorder[r] = work_s();
    attached[r] = pair_ns();
    pthread_t thread;
    pthread_create(&thread, NULL, unattached_main, &unattached[r]);
    pthread_join(thread, NULL);
    bench_check("zxs_recorder_stop", zxs_recorder_stop());
  }
  rmdir(dir);

  const double base = bench_median(none, (size_t)rounds);
  printf("Flight recorder, %d rounds (medians; min..max), on a machine that may be shared\n",
         rounds);
  printf("  deadline begin+end, attached thread   %8.0f ns  (%.0f..%.0f)\n",
         bench_median(attached, (size_t)rounds), bench_quantile(attached, (size_t)rounds, 0),
         bench_quantile(attached, (size_t)rounds, 1));
  printf("  deadline begin+end, unattached thread %8.0f ns  (%.0f..%.0f)\n",
         bench_median(unattached, (size_t)rounds), bench_quantile(unattached, (size_t)rounds, 0),
         bench_quantile(unattached, (size_t)rounds, 1));
  printf("  fixed work, not sampled               %8.3f s\n", base);
  printf("  fixed work, profiler session at 1 ms  %8.3f s  x%.3f  (%.3f..%.3f s)\n",
         bench_median(profiler, (size_t)rounds), bench_median(profiler, (size_t)rounds) / base,
         bench_quantile(profiler, (size_t)rounds, 0), bench_quantile(profiler, (size_t)rounds, 1));
  printf("  fixed work, recorder at 1 ms          %8.3f s  x%.3f  (%.3f..%.3f s)\n",
         bench_median(recorder, (size_t)rounds), bench_median(recorder, (size_t)rounds) / base,
         bench_quantile(recorder, (size_t)rounds, 0), bench_quantile(recorder, (size_t)rounds, 1));
  return 0;
}
