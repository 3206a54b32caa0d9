// Linux: never let sampling livelock a thread.
//
// What a sample costs the sampled thread is mostly not our code: it is the timer interrupt and
// what the source makes the kernel do in it, and on a VM the interrupt alone can cost tens of
// microseconds (DESIGN.md: ~45 us here). perf's task clock keeps counting through all of it, so
// a period near that cost leaves the thread no time of its own (measured: 10 us requested ran a
// loop 36 times slower; a free-running event even killed its process, see source_perf.c).
//
// The two perf sources pay differently per sample, so each kind has its own calibration: the
// signal source adds the signal's delivery and return and a re-arm ioctl, perf-ring the kernel's
// copy of the registers and the stack into a ring (docs/PERFORMANCE.md). A kind is measured at
// most once per process, on the thread that first arms it below its no-throttle period
// (sources.c): the same busy loop with and without an event of that kind's path on the calling
// thread at 200 us, compared in the thread's CPU time (preemption by other processes does not
// count), median of three pairs. (Not at the 10 us minimum: there the loop would crawl.) The
// signal path's event is counting only and counts its signals (source_perf.c); the ring path's
// asks for what the ring source asks (ring_attr.c), into a ring sized so the run fills at most
// half of it, and its records are counted afterwards: a run whose ring lost samples is rejected,
// since the kernel skipped their copy. The source is then never armed below cost *
// ZXS_LINUX_MAX_FRACTION_DIV, so sampling takes about a quarter of a thread's CPU time at most;
// a last run at that floor checks it and doubles the floor (up to three times) when the machine
// disagrees. Measuring costs the calling thread about 0.1 s of CPU time per kind.
//
// When the ring path cannot be measured (its ring cannot be mapped, the kernel throttles it),
// perf-ring takes the signal path's calibration: that path costs more per sample, so its floor
// is safe for both.
//
// ZXSAMPLER_SAMPLE_COST_NS=N skips the measurement and assumes N ns per sample for every kind (0
// disables the protection; for benchmarks that want the raw source).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "linux_internal.h"
#include "platform.h"

// Used when nothing can be measured: above the worst cost seen on the development VM (~60 us).
#define DEFAULT_COST_NS ((zx_duration_t)100000)
// Period of the event while measuring: long enough that the interrupt dominates neither the run
// nor the noise, short enough for ~50 samples in a 10 ms run.
#define CALIBRATION_PERIOD_NS ((zx_duration_t)200000)
#define CALIBRATION_RUN_NS ((zx_duration_t)10000000)
// No floor above this: sampling stays useful even if a measurement went badly wrong.
#define MAX_FLOOR_NS ((zx_duration_t)20000000)
// The ring path's ring: 1 MiB holds ~120 samples of 8 KiB copies, twice what a 10 ms run at
// 200 us takes; halved while the locked-memory limit refuses it, down to RING_MIN_SAMPLES.
#define RING_MAX_BYTES ((size_t)1 << 20)
#define RING_MIN_SAMPLES 16u

enum { PATH_SIGNAL, PATH_RING, PATH_COUNT };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic zx_duration_t g_floor[PATH_COUNT];          // 0 until known
static zxs_linux_calibration_t g_calibration[PATH_COUNT];  // g_lock

static int path_of(zxs_sample_source_t kind) {
  return kind == ZXS_SOURCE_PERF_RING ? PATH_RING : PATH_SIGNAL;
}

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

// What one kind's runs use: for the ring path, its ring's size.
typedef struct path {
  int which;          // PATH_SIGNAL or PATH_RING
  uint32_t copy;      // ring: stack bytes per sample
  size_t page;        // ring: the header page
  size_t data_size;   // ring: a power of two
  uint64_t capacity;  // ring: samples it holds
  uint64_t* scratch;  // ring: one record, for zxs_linux_ring_read
} path_t;

// Signal path: the loop with a counting event of `period` armed; false when no event could be
// opened.
static bool signal_run(uint64_t iterations, zx_duration_t period, zx_duration_t* took,
                       uint64_t* samples) {
  const int fd = zxs_linux_perf_open_counting(period);
  if (fd < 0) {
    return false;
  }
  const uint64_t before = zxs_linux_perf_counting_signals();
  *took = spin(iterations);
  zxs_linux_perf_close_counting(fd);
  *samples = zxs_linux_perf_counting_signals() - before;
  return true;
}

static int ring_event_open(const path_t* p, zx_duration_t period) {
  struct perf_event_attr attr;
  zxs_linux_ring_attr(&attr, period, p->data_size, p->copy);
  return zxs_linux_perf_event_open(&attr, 0, -1);
}

// The largest ring the limits let us map, from RING_MAX_BYTES down; false when none.
static bool ring_size(path_t* p) {
  const uint64_t record = ZXS_LINUX_RING_RECORD_OVERHEAD + p->copy;
  for (p->data_size = RING_MAX_BYTES; p->data_size / record >= RING_MIN_SAMPLES;
       p->data_size /= 2) {
    const int fd = ring_event_open(p, CALIBRATION_PERIOD_NS);
    if (fd < 0) {
      return false;
    }
    void* base = mmap(NULL, p->page + p->data_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base != MAP_FAILED) {
      munmap(base, p->page + p->data_size);
      p->capacity = p->data_size / record;
      return true;
    }
  }
  return false;
}

static void count_sample(void* ctx, uint32_t type, const uint64_t* body, size_t words) {
  (void)body;
  (void)words;
  if (type == PERF_RECORD_SAMPLE) {
    ++*(uint64_t*)ctx;
  }
}

// Ring path: the loop with the ring source's event of `period` armed, then its ring's samples
// counted; false when it measures nothing (no event, or the ring lost samples).
static bool ring_run(const path_t* p, uint64_t iterations, zx_duration_t period,
                     zx_duration_t* took, uint64_t* samples) {
  const int fd = ring_event_open(p, period);
  if (fd < 0) {
    return false;
  }
  const size_t map_size = p->page + p->data_size;
  void* base = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  uint64_t counts[2] = {0, 0};  // {value, lost}
  bool ok = base != MAP_FAILED && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0;
  if (ok) {
    *took = spin(iterations);
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    ok = read(fd, counts, sizeof(counts)) == (ssize_t)sizeof(counts) && counts[1] == 0;
    *samples = 0;
    zxs_linux_ring_read(base, p->page, p->data_size, p->scratch, count_sample, samples);
  }
  if (base != MAP_FAILED) {
    munmap(base, map_size);
  }
  close(fd);
  return ok;
}

static bool run_sampled(const path_t* p, uint64_t iterations, zx_duration_t period,
                        zx_duration_t* took, uint64_t* samples) {
  return p->which == PATH_RING ? ring_run(p, iterations, period, took, samples)
                               : signal_run(iterations, period, took, samples);
}

// `iterations` (which run `run_ns` alone), cut so the ring path's ring holds a sampled run at
// `period`: at most capacity / 2 periods, as sampling may double the run.
static uint64_t fit_ring(const path_t* p, uint64_t iterations, zx_duration_t run_ns,
                         zx_duration_t period) {
  const double max_ns = (double)p->capacity * (double)period / 2.0;
  if (p->which != PATH_RING || run_ns <= 0 || (double)run_ns <= max_ns) {
    return iterations;
  }
  return (uint64_t)((double)iterations * max_ns / (double)run_ns);
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

// Measures cost per sample; false when it cannot (no perf, our signal never arrives, the ring
// lost samples).
static bool measure(const path_t* p, zxs_linux_calibration_t* out) {
  // Size the loop to about CALIBRATION_RUN_NS of CPU time.
  uint64_t iterations = 1u << 16;
  zx_duration_t took = 0;
  while ((took = spin(iterations)) < CALIBRATION_RUN_NS / 4 && iterations < (1ull << 40)) {
    iterations *= 2;
  }
  if (took > 0) {
    iterations = (uint64_t)((double)iterations * (double)CALIBRATION_RUN_NS / (double)took);
  }
  iterations = fit_ring(p, iterations, CALIBRATION_RUN_NS, CALIBRATION_PERIOD_NS);
  zx_duration_t cost[3], base[3], sampled[3];
  uint64_t total = 0;
  for (int i = 0; i < 3; i++) {
    uint64_t samples = 0;
    base[i] = spin(iterations);
    if (!run_sampled(p, iterations, CALIBRATION_PERIOD_NS, &sampled[i], &samples)) {
      return false;
    }
    // Far fewer samples than periods elapsed: signals not delivered as they fired (blocked, or
    // deferred as ThreadSanitizer does), or the kernel throttling the event; the difference then
    // measures nothing.
    const uint64_t periods = sampled[i] > 0 ? (uint64_t)(sampled[i] / CALIBRATION_PERIOD_NS) : 0;
    if (samples == 0 || samples * 4 < periods) {
      return false;
    }
    total += samples;
    const zx_duration_t extra = sampled[i] > base[i] ? sampled[i] - base[i] : 0;
    cost[i] = extra / (zx_duration_t)samples;
  }
  sort3(cost);
  sort3(base);
  sort3(sampled);
  out->measured = true;
  out->path = p->which == PATH_RING ? ZXS_SOURCE_PERF_RING : ZXS_SOURCE_PERF_TASK_CLOCK;
  out->cost = cost[1];
  out->period = CALIBRATION_PERIOD_NS;
  out->samples = total;
  out->base_ns = base[1];
  out->sampled_ns = sampled[1];
  out->iterations = iterations;
  out->ring_bytes = p->which == PATH_RING ? p->data_size : 0;
  return true;
}

// Checks the floor on this machine: sampling at `floor` must cost at most about the allowed
// fraction (with 25% slack for noise); doubles it otherwise.
static zx_duration_t verify_floor(const path_t* p, zx_duration_t floor,
                                  const zxs_linux_calibration_t* c) {
  for (int attempt = 0; attempt < 3 && floor < MAX_FLOOR_NS; attempt++) {
    const uint64_t iterations = fit_ring(p, c->iterations, c->base_ns, floor);
    uint64_t samples = 0;
    zx_duration_t sampled = 0;
    const zx_duration_t base = spin(iterations);
    if (!run_sampled(p, iterations, floor, &sampled, &samples) || sampled <= 0 || base <= 0) {
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

// Measures path `which` and, on success, fills *c with its floor.
static bool measure_path(int which, zxs_linux_calibration_t* c) {
  path_t p = {.which = which};
  bool ok;
  if (which == PATH_SIGNAL) {
    // Our signal may be blocked on this thread; measuring needs it delivered.
    sigset_t ours, saved;
    sigemptyset(&ours);
    sigaddset(&ours, zxs_linux_signal());
    pthread_sigmask(SIG_UNBLOCK, &ours, &saved);
    ok = measure(&p, c);
    if (ok) c->floor = verify_floor(&p, floor_from_cost(c->cost), c);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return ok;
  }
  p.copy = zxs_linux_ring_stack_copy(NULL);
  p.page = (size_t)sysconf(_SC_PAGESIZE);
  p.scratch = malloc(65536);
  ok = p.scratch != NULL && ring_size(&p) && measure(&p, c);
  if (ok) c->floor = verify_floor(&p, floor_from_cost(c->cost), c);
  free(p.scratch);
  return ok;
}

static void calibrate_locked(int which) {
  zxs_linux_calibration_t c = {.path = ZXS_SOURCE_NONE};
  const char* env = getenv("ZXSAMPLER_SAMPLE_COST_NS");
  char* end = NULL;
  long long configured = env != NULL && *env != '\0' ? strtoll(env, &end, 10) : -1;
  if (end != NULL && (*end != '\0' || configured < 0)) {
    configured = -1;
  }
  if (configured >= 0) {
    c.cost = (zx_duration_t)configured;
    c.floor = floor_from_cost(c.cost);
  } else if (!measure_path(which, &c)) {
    if (which == PATH_RING && zxs_linux_signal_check() == ZX_OK) {
      // The signal path costs more: its floor protects perf-ring too. (Only while the signal is
      // ours: its counting event would signal the program's handler otherwise.)
      if (atomic_load_explicit(&g_floor[PATH_SIGNAL], memory_order_relaxed) == 0) {
        calibrate_locked(PATH_SIGNAL);
      }
      c = g_calibration[PATH_SIGNAL];
    } else {
      c = (zxs_linux_calibration_t){.path = ZXS_SOURCE_NONE, .cost = DEFAULT_COST_NS};
      c.floor = floor_from_cost(c.cost);
    }
  }
  g_calibration[which] = c;
  atomic_store_explicit(&g_floor[which], c.floor, memory_order_release);
}

zx_duration_t zxs_linux_perf_floor(zxs_sample_source_t kind) {
  const int which = path_of(kind);
  zx_duration_t floor = atomic_load_explicit(&g_floor[which], memory_order_acquire);
  if (floor != 0) {
    return floor;
  }
  pthread_mutex_lock(&g_lock);
  if (atomic_load_explicit(&g_floor[which], memory_order_relaxed) == 0) {
    calibrate_locked(which);
  }
  pthread_mutex_unlock(&g_lock);
  return atomic_load_explicit(&g_floor[which], memory_order_acquire);
}

void zxs_linux_calibration(zxs_sample_source_t kind, zxs_linux_calibration_t* out) {
  zxs_linux_perf_floor(kind);
  pthread_mutex_lock(&g_lock);
  *out = g_calibration[path_of(kind)];
  pthread_mutex_unlock(&g_lock);
}
