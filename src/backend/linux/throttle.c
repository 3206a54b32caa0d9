// Linux: never let sampling livelock a thread.
//
// What a sample costs the sampled thread is mostly not our handler: it is the timer interrupt,
// the signal delivery and the return, and on a VM the interrupt alone can cost tens of
// microseconds (DESIGN.md: ~45 us here). perf's task clock keeps counting through all of it, so
// a period near that cost leaves the thread no time of its own (measured: 10 us requested ran a
// loop 36 times slower; a free-running event even killed its process, see source_perf.c).
//
// So we measure the cost once per process, on the thread that first arms a perf source below
// 1 ms (longer periods cannot livelock anything and skip it, sources.c): the same
// busy loop with and without a counting-only task-clock event at 200 us, compared in the
// thread's CPU time (preemption by other processes does not count), median of three pairs. (Not
// at the 10 us minimum: there the loop would crawl at a few percent of its speed.) The perf
// source is then never armed below cost * ZXS_LINUX_MAX_FRACTION_DIV, so sampling takes about a
// quarter of a thread's CPU time at most; a last run at that floor checks it and doubles the
// floor (up to three times) when the machine disagrees. Measuring costs the calling thread about
// 0.1 s of CPU time, once per process.
//
// ZXSAMPLER_SAMPLE_COST_NS=N skips the measurement and assumes N ns per sample (0 disables the
// protection; for benchmarks that want the raw source).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "linux_internal.h"
#include "platform.h"

// Used when nothing can be measured: above the worst cost seen on the development VM (~60 us).
#define DEFAULT_COST_NS ((zx_duration_t)100000)
// Period of the counting event while measuring: long enough that the interrupt dominates
// neither the run nor the noise, short enough for ~50 samples in a 10 ms run.
#define CALIBRATION_PERIOD_NS ((zx_duration_t)200000)
#define CALIBRATION_RUN_NS ((zx_duration_t)10000000)
// No floor above this: sampling stays useful even if a measurement went badly wrong.
#define MAX_FLOOR_NS ((zx_duration_t)20000000)

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic zx_duration_t g_floor;  // 0 until known
static zxs_linux_calibration_t g_calibration;

static zx_duration_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (zx_duration_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static volatile uint64_t g_sink;

// A loop the compiler cannot shorten, touching no memory.
static zx_duration_t spin(uint64_t iterations) {
  const zx_duration_t start = thread_cpu_ns();
  uint64_t x = 1;
  for (uint64_t i = 0; i < iterations; i++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    __asm__ volatile("" : "+r"(x));
  }
  g_sink = x;
  return thread_cpu_ns() - start;
}

// Runs the loop with a counting event of `period` armed; -1 when no event could be opened.
static zx_duration_t spin_sampled(uint64_t iterations, zx_duration_t period, uint64_t* signals) {
  const int fd = zxs_linux_perf_open_counting(period);
  if (fd < 0) {
    return -1;
  }
  const uint64_t before = zxs_linux_perf_counting_signals();
  const zx_duration_t took = spin(iterations);
  zxs_linux_perf_close_counting(fd);
  *signals = zxs_linux_perf_counting_signals() - before;
  return took;
}

static void sort3(zx_duration_t v[3]) {
  for (int i = 0; i < 2; i++) {
    for (int j = 0; j < 2 - i; j++) {
      if (v[j] > v[j + 1]) {
        zx_duration_t t = v[j];
        v[j] = v[j + 1];
        v[j + 1] = t;
      }
    }
  }
}

// Measures cost per sample; false when it cannot (no perf, or our signal never arrives).
static bool measure(zxs_linux_calibration_t* out) {
  // Size the loop to about CALIBRATION_RUN_NS of CPU time.
  uint64_t iterations = 1u << 16;
  zx_duration_t took = 0;
  while ((took = spin(iterations)) < CALIBRATION_RUN_NS / 4 && iterations < (1ull << 40)) {
    iterations *= 2;
  }
  if (took > 0) {
    iterations = (uint64_t)((double)iterations * (double)CALIBRATION_RUN_NS / (double)took);
  }
  zx_duration_t cost[3], base[3], sampled[3];
  uint64_t total = 0;
  for (int i = 0; i < 3; i++) {
    uint64_t signals = 0;
    base[i] = spin(iterations);
    sampled[i] = spin_sampled(iterations, CALIBRATION_PERIOD_NS, &signals);
    // Far fewer signals than periods elapsed: they were not delivered as they fired (blocked,
    // or deferred as ThreadSanitizer does), so the difference measures nothing.
    const uint64_t periods = sampled[i] > 0 ? (uint64_t)(sampled[i] / CALIBRATION_PERIOD_NS) : 0;
    if (sampled[i] < 0 || signals == 0 || signals * 4 < periods) {
      return false;
    }
    total += signals;
    const zx_duration_t extra = sampled[i] > base[i] ? sampled[i] - base[i] : 0;
    cost[i] = extra / (zx_duration_t)signals;
  }
  sort3(cost);
  sort3(base);
  sort3(sampled);
  out->measured = true;
  out->cost = cost[1];
  out->period = CALIBRATION_PERIOD_NS;
  out->samples = total;
  out->base_ns = base[1];
  out->sampled_ns = sampled[1];
  out->iterations = iterations;
  return true;
}

// Checks the floor on this machine: sampling at `floor` must cost at most about the allowed
// fraction (with 25% slack for noise); doubles it otherwise.
static zx_duration_t verify_floor(zx_duration_t floor, uint64_t iterations) {
  for (int attempt = 0; attempt < 3 && floor < MAX_FLOOR_NS; attempt++) {
    uint64_t signals = 0;
    const zx_duration_t base = spin(iterations);
    const zx_duration_t sampled = spin_sampled(iterations, floor, &signals);
    if (sampled <= 0 || base <= 0) {
      break;
    }
    // overhead share = (sampled - base) / sampled, allowed 1/DIV * 1.25
    if ((sampled - base) * ZXS_LINUX_MAX_FRACTION_DIV * 4 <= sampled * 5) {
      break;
    }
    floor *= 2;
  }
  return floor < MAX_FLOOR_NS ? floor : MAX_FLOOR_NS;
}

static zx_duration_t floor_from_cost(zx_duration_t cost) {
  zx_duration_t floor = cost * ZXS_LINUX_MAX_FRACTION_DIV;
  if (floor < ZXS_LINUX_PERF_MIN_PERIOD) {
    floor = ZXS_LINUX_PERF_MIN_PERIOD;
  }
  return floor < MAX_FLOOR_NS ? floor : MAX_FLOOR_NS;
}

static void calibrate_locked(void) {
  zxs_linux_calibration_t c = {0};
  const char* env = getenv("ZXSAMPLER_SAMPLE_COST_NS");
  char* end = NULL;
  long long configured = env != NULL && *env != '\0' ? strtoll(env, &end, 10) : -1;
  if (end != NULL && (*end != '\0' || configured < 0)) {
    configured = -1;
  }
  zx_duration_t floor;
  if (configured >= 0) {
    c.cost = (zx_duration_t)configured;
    floor = floor_from_cost(c.cost);
  } else {
    // Our signal may be blocked on this thread; measuring needs it delivered.
    sigset_t ours, saved;
    sigemptyset(&ours);
    sigaddset(&ours, zxs_linux_signal());
    pthread_sigmask(SIG_UNBLOCK, &ours, &saved);
    if (measure(&c)) {
      floor = verify_floor(floor_from_cost(c.cost), c.iterations);
    } else {
      c.measured = false;
      c.cost = DEFAULT_COST_NS;
      floor = floor_from_cost(c.cost);
    }
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
  }
  c.floor = floor;
  g_calibration = c;
  atomic_store_explicit(&g_floor, floor, memory_order_release);
}

zx_duration_t zxs_linux_perf_floor(void) {
  zx_duration_t floor = atomic_load_explicit(&g_floor, memory_order_acquire);
  if (floor != 0) {
    return floor;
  }
  pthread_mutex_lock(&g_lock);
  if (atomic_load_explicit(&g_floor, memory_order_relaxed) == 0) {
    calibrate_locked();
  }
  pthread_mutex_unlock(&g_lock);
  return atomic_load_explicit(&g_floor, memory_order_acquire);
}

zx_duration_t zxs_linux_sample_cost(void) {
  zxs_linux_perf_floor();
  return g_calibration.cost;
}

void zxs_linux_calibration(zxs_linux_calibration_t* out) {
  zxs_linux_perf_floor();
  pthread_mutex_lock(&g_lock);
  *out = g_calibration;
  pthread_mutex_unlock(&g_lock);
}
