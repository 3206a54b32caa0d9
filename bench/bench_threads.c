// bench_threads: many attached threads at once, or one after another (issue 17).
//
//   bench_threads [-n THREADS] [-c CPU_MS] [-w WAVE] [-p PERIOD_US]
//
// Two runs per source (perf-ring, perf, cputimer; or the one ZXSAMPLER_SOURCE names, which may
// be "auto": the library's own choice with its fallbacks, e.g. under a lowered `ulimit -Hn`), each
// with THREADS threads (default 1024) that attach themselves to a running session, spin CPU_MS
// of their own CPU time (default 20) and exit:
//   all at once   every thread attaches, waits until all have, spins, waits until all have
//                 spun, and exits: THREADS threads sampled together
//   short-lived   WAVE threads at a time (default 16), each exiting as soon as it has spun
// It prints, per run: samples written against expected (the threads' CPU time while spinning /
// period), samples dropped, sources that fell back, the session's start and stop times, and
// the most descriptors and pinned memory (the perf rings: VmPin) the process had meanwhile.
// The soft descriptor limit is raised to the hard one first (perf-ring needs one descriptor per
// thread per CPU; the line above the table says what the limit was).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_work.h"

static int g_threads = 1024;
static int g_cpu_ms = 20;
static int g_wave = 16;
static long g_period_us = 1000;

typedef struct run {
  zx_handle_t iob;
  pthread_barrier_t attached, spun;  // all-at-once runs only
  bool together;
  _Atomic int64_t cpu_ns;  // spun while attached, all threads
  _Atomic int attach_failed;
  _Atomic int max_fds;
  _Atomic long max_pin_kb;
} run_t;

static double now_s(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// One thread counts at a time: 1024 threads counting at once would each add the directory
// descriptor they count through (up to ~600 more than the library holds, seen).
static pthread_mutex_t g_count_lock = PTHREAD_MUTEX_INITIALIZER;

static int count_fds(void) {
  pthread_mutex_lock(&g_count_lock);
  DIR* d = opendir("/proc/self/fd");
  int n = -1;
  if (d != NULL) {
    n = -3;  // ".", ".." and the directory's own descriptor
    while (readdir(d) != NULL) n++;
    closedir(d);
  }
  pthread_mutex_unlock(&g_count_lock);
  return n;
}

static long pinned_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
    if (sscanf(line, "VmPin: %ld", &kb) == 1) break;
  }
  if (f != NULL) fclose(f);
  return kb;
}

static void note_max(_Atomic int* max, int value) {
  int seen = atomic_load(max);
  while (value > seen && !atomic_compare_exchange_weak(max, &seen, value)) {
  }
}

static void note_max_long(_Atomic long* max, long value) {
  long seen = atomic_load(max);
  while (value > seen && !atomic_compare_exchange_weak(max, &seen, value)) {
  }
}

static void* worker(void* arg) {
  run_t* r = arg;
  zx_handle_t self = zxs_thread_self();
  const bool ok = zxs_sampler_attach(r->iob, self) == ZX_OK;
  if (!ok) atomic_fetch_add(&r->attach_failed, 1);
  if (r->together) pthread_barrier_wait(&r->attached);
  note_max(&r->max_fds, count_fds());
  note_max_long(&r->max_pin_kb, pinned_kb());
  const double t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
  uint64_t seed = 1;
  while (now_s(CLOCK_THREAD_CPUTIME_ID) - t0 < g_cpu_ms * 1e-3)
    seed = bench_work(1, 8, 100000, seed);
  if (ok) atomic_fetch_add(&r->cpu_ns, (int64_t)((now_s(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e9));
  if (r->together) pthread_barrier_wait(&r->spun);
  return (void*)(uintptr_t)(seed & 1);
}

static void one_run(const char* source, bool together) {
  run_t r = {.together = together};
  r.iob = bench_session((zx_duration_t)g_period_us * 1000, (size_t)32 << 20, NULL, 0);
  double t0 = now_s(CLOCK_MONOTONIC);
  bench_check("zxs_sampler_start", zxs_sampler_start(r.iob));
  const double start_ms = (now_s(CLOCK_MONOTONIC) - t0) * 1e3;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  const int batch = together ? g_threads : g_wave;
  pthread_t* t = calloc((size_t)batch, sizeof(*t));
  if (together) {
    pthread_barrier_init(&r.attached, NULL, (unsigned)g_threads);
    pthread_barrier_init(&r.spun, NULL, (unsigned)g_threads);
  }
  int created = 0;
  for (int done = 0; done < g_threads; done += batch) {
    const int n = g_threads - done < batch ? g_threads - done : batch;
    for (int i = 0; i < n; i++) {
      if (pthread_create(&t[i], &attr, worker, &r) != 0) {
        fprintf(stderr, "bench_threads: pthread_create: %s\n", strerror(errno));
        exit(1);
      }
      created++;
    }
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  }
  t0 = now_s(CLOCK_MONOTONIC);
  bench_check("zxs_sampler_stop", zxs_sampler_stop(r.iob));
  const double stop_ms = (now_s(CLOCK_MONOTONIC) - t0) * 1e3;
  zxs_sampler_stats_t st;
  bench_check("zxs_sampler_get_stats", zxs_sampler_get_stats(r.iob, &st));
  zxs_handle_close(r.iob);
  if (together) {
    pthread_barrier_destroy(&r.attached);
    pthread_barrier_destroy(&r.spun);
  }
  free(t);
  pthread_attr_destroy(&attr);
  const double expected = (double)atomic_load(&r.cpu_ns) / ((double)g_period_us * 1000);
  printf(
      "| %s | %s | %d | %llu | %.0f | %.3f | %llu | %llu | %d | %.2f ms | %.2f ms | %d | %ld |\n",
      source, together ? "all at once" : "short-lived", created,
      (unsigned long long)st.samples_written, expected,
      expected > 0 ? (double)st.samples_written / expected : 0,
      (unsigned long long)(st.dropped_full + st.dropped_other),
      (unsigned long long)st.source_failures, atomic_load(&r.attach_failed), start_ms, stop_ms,
      atomic_load(&r.max_fds), atomic_load(&r.max_pin_kb));
  fflush(stdout);
}

int main(int argc, char** argv) {
  int opt;
  while ((opt = getopt(argc, argv, "n:c:w:p:")) != -1) {
    switch (opt) {
      case 'n':
        g_threads = atoi(optarg);
        break;
      case 'c':
        g_cpu_ms = atoi(optarg);
        break;
      case 'w':
        g_wave = atoi(optarg);
        break;
      case 'p':
        g_period_us = atol(optarg);
        break;
      default:
        fprintf(stderr, "usage: bench_threads [-n THREADS] [-c CPU_MS] [-w WAVE] [-p PERIOD_US]\n");
        return 2;
    }
  }
  if (g_threads < 1 || g_threads > 4000 || g_cpu_ms < 1 || g_wave < 1 || g_period_us < 10) {
    fprintf(stderr, "bench_threads: bad arguments\n");
    return 2;
  }
  struct rlimit lim;
  getrlimit(RLIMIT_NOFILE, &lim);
  const rlim_t soft = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  double load[1] = {0};
  getloadavg(load, 1);
  printf(
      "# bench_threads: %d threads of %d ms of CPU each, period %ld us, %ld CPUs online, load "
      "average %.2f; descriptor limit raised from %llu to %llu\n\n",
      g_threads, g_cpu_ms, g_period_us, sysconf(_SC_NPROCESSORS_ONLN), load[0],
      (unsigned long long)soft, (unsigned long long)lim.rlim_cur);
  printf(
      "| source | run | threads | samples | expected | delivered/expected | dropped | fallbacks "
      "| attach failed | start | stop | most fds | most VmPin (KiB) |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  const char* configured = getenv("ZXSAMPLER_SOURCE");
  const bool chosen = configured != NULL && *configured != '\0';
  const char* sources[] = {"perf-ring", "perf", "cputimer", "auto"};
  for (size_t s = 0; s < sizeof(sources) / sizeof(sources[0]); s++) {
    const bool automatic = strcmp(sources[s], "auto") == 0;  // only when asked for
    if (chosen ? strcmp(configured, sources[s]) != 0 : automatic) continue;
    if (automatic) {
      unsetenv("ZXSAMPLER_SOURCE");  // the library's own choice, fallbacks included
    } else {
      setenv("ZXSAMPLER_SOURCE", sources[s], 1);
    }
    one_run(sources[s], true);
    one_run(sources[s], false);
  }
  return 0;
}
