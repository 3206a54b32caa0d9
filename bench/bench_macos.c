// The macOS backend's costs, measured against the Mach double (a -Dplatform=macos build on
// Linux): prints tables, asserts nothing about time.
//
//   bench_macos [seconds per run = 0.5]
//
// 1. Per sample, at 8, 32 and 64 frames: the time the target spends suspended (from
//    thread_suspend's return to thread_resume: the walk and the record, what the target cannot
//    run for on a Mac too) and the sampler thread's CPU time (the process's CPU time less the
//    target's and this thread's). On the double a suspension also costs the target a signal and
//    a futex wait, and thread_info reads /proc: more than Mach's calls cost.
// 2. The highest rate the sampler thread sustains: 1, 8 and 64 spinning threads attached at the
//    shortest period it keeps (100 us), samples per second achieved against 10000 per thread,
//    and the periods it reported missed (overruns).
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <zxsampler/zircon.h>

#include "mach_double.h"

static atomic_bool g_stop;
static atomic_int g_ready;

static uint64_t now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t process_cpu_ns(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (uint64_t)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000000u +
         (uint64_t)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000u;
}

__attribute__((noinline)) static void spin(void) {
  while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
    __asm__ volatile("" ::: "memory");
  }
}

// Recurses to `depth` frames (each with a frame record), then spins.
__attribute__((noinline)) static void descend(int depth) {
  if (depth <= 1) {
    spin();
  } else {
    descend(depth - 1);
  }
  __asm__ volatile("" ::: "memory");  // no tail call: every level keeps its frame
}

typedef struct target {
  pthread_t thread;
  int depth;
  uint64_t cpu_ns;  // its CPU time, when it stopped
} target_t;

static void* target_main(void* arg) {
  target_t* t = arg;
  atomic_fetch_add(&g_ready, 1);
  descend(t->depth);
  t->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
  return NULL;
}

typedef struct run {
  uint64_t samples, overruns, suspends, suspended_ns, sampler_cpu_ns;
  zx_duration_t effective_period;
  double seconds;
} run_t;

// Samples `count` targets at `depth` frames for `seconds` at `period`.
static void run(int count, int depth, zx_duration_t period, double seconds, run_t* out) {
  static zx_handle_t rsrc = ZX_HANDLE_INVALID;
  if (rsrc == ZX_HANDLE_INVALID && zxs_debug_resource_get(&rsrc) != ZX_OK) abort();
  zx_sampler_config_t config = {.period = period, .buffer_size = 64u << 20};
  zx_handle_t iob;
  if (zx_sampler_create(rsrc, 0, &config, sizeof(config), &iob) != ZX_OK) abort();
  target_t* targets = calloc((size_t)count, sizeof(*targets));
  if (targets == NULL) abort();
  atomic_store(&g_stop, false);
  atomic_store(&g_ready, 0);
  for (int i = 0; i < count; i++) {
    targets[i].depth = depth;
    if (pthread_create(&targets[i].thread, NULL, target_main, &targets[i]) != 0) abort();
  }
  while (atomic_load(&g_ready) < count) sched_yield();
  for (int i = 0; i < count; i++) {
    zx_handle_t thread;
    if (zxs_thread_get(targets[i].thread, &thread) != ZX_OK ||
        zx_sampler_attach(iob, thread) != ZX_OK) {
      abort();
    }
    zx_handle_close(thread);
  }
  const uint64_t suspends0 = mach_double_suspends(), suspended0 = mach_double_suspended_ns();
  const uint64_t cpu0 = process_cpu_ns(), self0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  uint64_t target_cpu0 = 0;
  for (int i = 0; i < count; i++) {
    clockid_t clock;
    struct timespec ts;
    if (pthread_getcpuclockid(targets[i].thread, &clock) == 0 && clock_gettime(clock, &ts) == 0) {
      target_cpu0 += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
  }
  const uint64_t wall0 = now_ns(CLOCK_MONOTONIC);
  if (zx_sampler_start(iob) != ZX_OK) abort();
  const struct timespec pause = {.tv_sec = (time_t)seconds,
                                 .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&pause, NULL);
  if (zx_sampler_stop(iob) != ZX_OK) abort();
  const uint64_t wall = now_ns(CLOCK_MONOTONIC) - wall0;
  const uint64_t cpu = process_cpu_ns() - cpu0, self = now_ns(CLOCK_THREAD_CPUTIME_ID) - self0;
  atomic_store(&g_stop, true);
  uint64_t target_cpu = 0;
  for (int i = 0; i < count; i++) {
    pthread_join(targets[i].thread, NULL);
    target_cpu += targets[i].cpu_ns;
  }
  zxs_sampler_stats_t stats;
  if (zxs_sampler_get_stats(iob, &stats) != ZX_OK) abort();
  zx_handle_close(iob);
  free(targets);
  // The targets' CPU after the stop (until they saw g_stop) is small against the run's.
  const uint64_t others = target_cpu - target_cpu0 + self;
  *out = (run_t){.samples = stats.samples_written,
                 .overruns = stats.overruns,
                 .suspends = mach_double_suspends() - suspends0,
                 .suspended_ns = mach_double_suspended_ns() - suspended0,
                 .sampler_cpu_ns = cpu > others ? cpu - others : 0,
                 .effective_period = stats.effective_period,
                 .seconds = (double)wall / 1e9};
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 0.5;
  printf("macOS backend on the Mach double; %.1f s per run\n\n", seconds);
  printf("1. Cost per sample, one thread at 1 ms\n");
  printf("%8s %10s %22s %22s\n", "frames", "samples", "target suspended (us)", "sampler CPU (us)");
  const int depths[] = {8, 32, 64};
  for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
    run_t r;
    run(1, depths[i], 1000000, seconds, &r);
    const double n = r.samples > 0 ? (double)r.samples : 1.0;
    printf("%8d %10llu %22.1f %22.1f\n", depths[i], (unsigned long long)r.samples,
           r.suspends > 0 ? (double)r.suspended_ns / (double)r.suspends / 1e3 : 0.0,
           (double)r.sampler_cpu_ns / n / 1e3);
  }
  printf("\n2. Highest sustained rate, 16 frames, period 100 us (10000/s per thread asked)\n");
  printf("%8s %12s %16s %12s %12s\n", "threads", "samples/s", "per thread/s", "overruns",
         "sampler CPU");
  const int counts[] = {1, 8, 64};
  for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
    run_t r;
    run(counts[i], 16, 100000, seconds, &r);
    const double rate = (double)r.samples / r.seconds;
    printf("%8d %12.0f %16.0f %12llu %11.0f%%\n", counts[i], rate, rate / counts[i],
           (unsigned long long)r.overruns, 100.0 * (double)r.sampler_cpu_ns / 1e9 / r.seconds);
  }
  return 0;
}
