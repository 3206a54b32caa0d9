// bench_sampler: what sampling costs the sampled threads (a meson benchmark(); prints tables and
// asserts nothing about time).
//
//   bench_sampler [-r ROUNDS] [-P PERIOD_US] [-s SCALE] [-q]
//
//   -r ROUNDS   rounds of alternating runs; medians are over rounds (default 7)
//   -P US       sampling period of part A (default 200)
//   -s SCALE    multiplies the length of every run (default 1.0: ~0.25 s of CPU per run)
//   -q          quick: 3 rounds, half-length runs (a smoke test, not a measurement)
//
// Part 0, inside: the library's own work per sample, timed in a loop on this thread's real stack
//   with the core's functions (frame walk, record write, the per-CPU begin/end protocol) and the
//   calls the handler makes (clock, CPU number, gettid), plus the REFRESH ioctl pair.
// Part B, slowdown of a CPU-bound frame-pointer workload (2 threads, bench_work.h) at periods
//   100 us, 1 ms and 4 ms, perf and cputimer sources, against unsampled runs on either side;
//   with samples delivered against expected. The library as shipped: its livelock protection
//   raises periods below 4x its calibrated per-sample cost.
// Part A, per-sample cost at stack depths 8, 32, 64: one thread descends to that many frames and
//   spins; its CPU time with sampling minus without, over the samples taken. Next to it, the
//   floors at the same period, armed by this program on the same thread: the perf interrupt
//   alone (no signal), + a signal to an empty handler, + the one-shot re-arm the library does.
//   Part A and B' (perf at 100 us again) run in a re-executed child with
//   ZXSAMPLER_SAMPLE_COST_NS=0, the protection off, so the requested period is the one in force.
//
// CPU time, not wall time, is what is compared: the machine may be shared, and CPU time of a
// thread does not grow when another process takes the CPU. Every figure is a median of ROUNDS
// runs, with the interquartile range where it helps judging the noise.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zxsampler/zxsampler.h>

#include "bench_common.h"
#include "bench_work.h"
// The core's sampling path, compiled into this program from src/core/ (frame_walk.c,
// sample_writer.c, percpu_state.c): for part 0 only.
#include "frame_walk.h"
#include "percpu_state.h"
#include "platform.h"
#include "sample_writer.h"

// percpu_state.c's shutdown waits with the backend's relax; this program never shuts down.
void zxs_prim_relax(void) { sched_yield(); }

#define MAX_ROUNDS 64
#define MAX_WORKERS 4

static int g_rounds = 7;
static double g_scale = 1.0;
static int64_t g_period_a_ns = 200000;

// --- Floor modes: sources this program arms on a worker itself ---------------------------------

typedef enum {
  FLOOR_NONE = 0,  // nothing armed (also: the library samples, armed by start)
  FLOOR_COUNT,     // perf task-clock, overflow without a signal
  FLOOR_SIGNAL,    // + signal to an empty handler, free-running
  FLOOR_ONESHOT,   // + the library's one-shot re-arm: gettid + REFRESH(1) in the handler
} floor_mode_t;

static int g_floor_signal;
static _Atomic uint64_t g_floor_events;

static void on_floor_signal(int sig, siginfo_t* info, void* uc) {
  (void)sig;
  (void)uc;
  const int saved = errno;
  atomic_fetch_add_explicit(&g_floor_events, 1, memory_order_relaxed);
  if (info->si_code == POLL_HUP) {  // one-shot: the kernel disabled it after one overflow
    (void)syscall(SYS_gettid);
    ioctl(info->si_fd, PERF_EVENT_IOC_REFRESH, 1);
  }
  errno = saved;
}

static int perf_open_self(int64_t period, bool disabled) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = (uint64_t)period;
  attr.disabled = disabled ? 1 : 0;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static int floor_arm(floor_mode_t mode, int64_t period) {
  const pid_t tid = (pid_t)syscall(SYS_gettid);
  int fd = perf_open_self(period, true);
  if (fd < 0) {
    return -1;
  }
  if (mode != FLOOR_COUNT) {
    struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = tid};
    int flags;
    if (fcntl(fd, F_SETSIG, g_floor_signal) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
        (flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags | O_ASYNC) != 0) {
      close(fd);
      return -1;
    }
  }
  const int rc = mode == FLOOR_ONESHOT ? ioctl(fd, PERF_EVENT_IOC_REFRESH, 1)
                                       : ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  if (rc != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Disarms; returns the overflows (count mode: periods elapsed by the counter; else signals).
static uint64_t floor_disarm(int fd, floor_mode_t mode, int64_t period, uint64_t events_before) {
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  uint64_t value = 0;
  if (read(fd, &value, sizeof(value)) != (ssize_t)sizeof(value)) {
    value = 0;
  }
  close(fd);
  if (mode == FLOOR_COUNT) {
    return value / (uint64_t)period;
  }
  return atomic_load(&g_floor_events) - events_before;
}

// --- The spinning thread and its stack --------------------------------------------------------

static _Thread_local uintptr_t t_stack_hi;
static _Thread_local size_t t_frames;  // set by count_frames()

static void set_stack_hi(void) {
  pthread_attr_t attr;
  void* addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      t_stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
  }
}

// Counts the frames the library's walk would record from here: the PC, then one return address
// per frame record until a zero return address or the end of the stack.
BENCH_NOINLINE static uint64_t count_frames(uint64_t unused) {
  (void)unused;
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  const uintptr_t sp = (uintptr_t)&fp;
  size_t n = 1;
  uintptr_t prev = 0;
  while (fp >= sp && t_stack_hi >= 16 && fp <= t_stack_hi - 16 && (fp & 7) == 0 && fp > prev) {
    const uintptr_t* record = (const uintptr_t*)fp;
    if (record[1] == 0 || n == 1000) {
      break;
    }
    n++;
    prev = fp;
    fp = record[0];
  }
  t_frames = n;
  return 0;
}

typedef uint64_t (*leaf_fn)(uint64_t);

static uint64_t g_spin_iters;
BENCH_NOINLINE static uint64_t spin_leaf(uint64_t seed) { return bench_leaf_a(seed, g_spin_iters); }

// Descends `d` frames, then calls leaf (which is one more frame).
BENCH_NOINLINE static uint64_t recurse(int d, leaf_fn leaf, uint64_t arg) {
  if (d <= 0) {
    return leaf(arg);
  }
  uint64_t r = recurse(d - 1, leaf, arg);
  __asm__ volatile("" : "+r"(r));
  return r + (uint64_t)d;
}

// How many recursion levels make the walk from inside `leaf` see `frames` frames, on this
// thread (leaf and count_frames sit at the same height).
static int recursion_for(int frames) {
  recurse(0, count_frames, 0);
  const int base = (int)t_frames;
  return frames > base ? frames - base : 0;
}

// --- Workers ------------------------------------------------------------------------------------

typedef enum { CMD_SPIN, CMD_WORK, CMD_QUIT } cmd_kind_t;

typedef struct worker {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned posted, done;
  // command
  cmd_kind_t kind;
  int frames;          // CMD_SPIN: walk depth to spin at
  floor_mode_t floor;  // CMD_SPIN: source this thread arms on itself
  int64_t period;
  uint64_t units;  // CMD_WORK
  // results
  double cpu_s;
  long minflt;  // minor page faults of this thread during the run
  uint64_t events;
  size_t frames_seen;
  int err;
  uint64_t result;
} worker_t;

static long thread_minflt(void) {
  struct rusage ru;
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : 0;
}

static void* worker_main(void* arg) {
  worker_t* w = arg;
  set_stack_hi();
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (w->posted == w->done) {
      pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    if (w->kind == CMD_QUIT) {
      return NULL;
    }
    w->err = 0;
    w->events = 0;
    if (w->kind == CMD_SPIN) {
      const int levels = recursion_for(w->frames);
      recurse(levels, count_frames, 0);
      w->frames_seen = t_frames;
      int fd = -1;
      const uint64_t before = atomic_load(&g_floor_events);
      if (w->floor != FLOOR_NONE && (fd = floor_arm(w->floor, w->period)) < 0) {
        w->err = errno != 0 ? errno : EINVAL;
      } else {
        const long f0 = thread_minflt();
        const double t0 = bench_thread_cpu();
        w->result = recurse(levels, spin_leaf, 1);
        w->cpu_s = bench_thread_cpu() - t0;
        w->minflt = thread_minflt() - f0;
        if (fd >= 0) {
          w->events = floor_disarm(fd, w->floor, w->period, before);
        }
      }
    } else {
      const double t0 = bench_thread_cpu();
      w->result = bench_work(w->units, 12, 20000, (uint64_t)(uintptr_t)w);
      w->cpu_s = bench_thread_cpu() - t0;
    }
    pthread_mutex_lock(&w->mu);
    w->done++;
    pthread_cond_broadcast(&w->cv);
  }
}

static void worker_start(worker_t* w) {
  memset(w, 0, sizeof(*w));
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
    fprintf(stderr, "bench_sampler: pthread_create failed\n");
    exit(1);
  }
}

static void worker_post(worker_t* w) {
  pthread_mutex_lock(&w->mu);
  w->posted++;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static void worker_wait(worker_t* w) {
  pthread_mutex_lock(&w->mu);
  while (w->done != w->posted) {
    pthread_cond_wait(&w->cv, &w->mu);
  }
  pthread_mutex_unlock(&w->mu);
}

static void worker_stop(worker_t* w) {
  w->kind = CMD_QUIT;
  worker_post(w);
  pthread_join(w->thread, NULL);
}

static void set_source(const char* name) { setenv("ZXSAMPLER_SOURCE", name, 1); }

// --- Part 0: the library's work per sample, timed in a loop -------------------------------------

static zxs_percpu_t g_cpu;
static uint8_t* g_region;
#define REGION_SIZE ((size_t)16 << 20)
#define INSIDE_ITERS 100000

typedef struct {
  size_t frames;
  double walk_ns, write_ns, path_ns;
} inside_t;
static inside_t g_inside;

static double now_ns(void) { return bench_now(CLOCK_MONOTONIC) * 1e9; }

static void region_reset(void) {
  zxs_percpu_disable_writes(&g_cpu);
  zxs_percpu_setup(&g_cpu, g_region, REGION_SIZE, 1);
  zxs_percpu_enable_writes(&g_cpu);
}

static inline uint32_t rseq_cpu(void) {
  if (__rseq_size > 0) {
    const struct rseq* rs =
        (const struct rseq*)(void*)((char*)__builtin_thread_pointer() + __rseq_offset);
    const int32_t cpu = (int32_t)__atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
    if (cpu >= 0) {
      return (uint32_t)cpu;
    }
  }
  return (uint32_t)sched_getcpu();
}

// Runs at the bottom of the stack: times walk, write and the whole in-handler path (begin,
// CPU number, walk, clock, write, end) as zxs_core_sample does them. Best of 5 batches.
BENCH_NOINLINE static uint64_t inside_leaf(uint64_t unused) {
  (void)unused;
  zxs_regs_t regs = {.pc = (uintptr_t)&inside_leaf,
                     .fp = (uintptr_t)__builtin_frame_address(0),
                     .sp = (uintptr_t)&regs};
  uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
  bool truncated;
  const uintptr_t lo = 0;
  size_t n = zxs_frame_walk(&regs, lo, t_stack_hi, pcs, ZX_SAMPLER_MAX_FRAMES, &truncated);
  g_inside.frames = n;
  double best_walk = 1e18, best_write = 1e18, best_path = 1e18;
  for (int batch = 0; batch < 5; batch++) {
    double t0 = now_ns();
    for (int i = 0; i < INSIDE_ITERS; i++) {
      n = zxs_frame_walk(&regs, lo, t_stack_hi, pcs, ZX_SAMPLER_MAX_FRAMES, &truncated);
      __asm__ volatile("" : : "r"(pcs) : "memory");
    }
    double t1 = now_ns();
    best_walk = (t1 - t0) / INSIDE_ITERS < best_walk ? (t1 - t0) / INSIDE_ITERS : best_walk;

    region_reset();
    t0 = now_ns();
    for (int i = 0; i < INSIDE_ITERS; i++) {
      if (!zxs_percpu_begin_write(&g_cpu)) {
        abort();
      }
      if (zxs_sample_write(&g_cpu, 1, (uint64_t)i, 1, 2, pcs, n) == ZXS_WRITE_FULL) {
        zxs_percpu_end_write(&g_cpu);
        region_reset();
        continue;
      }
      zxs_percpu_end_write(&g_cpu);
    }
    t1 = now_ns();
    best_write = (t1 - t0) / INSIDE_ITERS < best_write ? (t1 - t0) / INSIDE_ITERS : best_write;

    region_reset();
    t0 = now_ns();
    for (int i = 0; i < INSIDE_ITERS; i++) {
      const uint32_t cpu = rseq_cpu();
      __asm__ volatile("" : : "r"(cpu));
      if (!zxs_percpu_begin_write(&g_cpu)) {
        abort();
      }
      n = zxs_frame_walk(&regs, lo, t_stack_hi, pcs, ZX_SAMPLER_MAX_FRAMES, &truncated);
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      const uint64_t ticks = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
      if (zxs_sample_write(&g_cpu, 1, ticks, 1, 2, pcs, n) == ZXS_WRITE_FULL) {
        zxs_percpu_end_write(&g_cpu);
        region_reset();
        continue;
      }
      zxs_percpu_end_write(&g_cpu);
    }
    t1 = now_ns();
    best_path = (t1 - t0) / INSIDE_ITERS < best_path ? (t1 - t0) / INSIDE_ITERS : best_path;
  }
  g_inside.walk_ns = best_walk;
  g_inside.write_ns = best_write;
  g_inside.path_ns = best_path;
  return 0;
}

// ns per call of op(), best of 5 batches of `iters`.
static double time_op(void (*op)(void*), void* ctx, int iters) {
  double best = 1e18;
  for (int batch = 0; batch < 5; batch++) {
    const double t0 = now_ns();
    for (int i = 0; i < iters; i++) {
      op(ctx);
    }
    const double per = (now_ns() - t0) / iters;
    best = per < best ? per : best;
  }
  return best;
}

static void op_clock(void* ctx) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  __asm__ volatile("" : : "r"(&ts) : "memory");
}
static void op_rseq(void* ctx) {
  (void)ctx;
  uint32_t c = rseq_cpu();
  __asm__ volatile("" : : "r"(c));
}
static void op_getcpu(void* ctx) {
  (void)ctx;
  int c = sched_getcpu();
  __asm__ volatile("" : : "r"(c));
}
static void op_gettid(void* ctx) {
  (void)ctx;
  long t = syscall(SYS_gettid);
  __asm__ volatile("" : : "r"(t));
}
static void op_refresh_disable(void* ctx) {
  const int fd = *(int*)ctx;
  ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
}
static void op_disable_enable(void* ctx) {
  const int fd = *(int*)ctx;
  ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
}

static void part0(void) {
  g_region = aligned_alloc(4096, REGION_SIZE);
  if (g_region == NULL) {
    exit(1);
  }
  memset(g_region, 0, REGION_SIZE);
  set_stack_hi();
  printf("## Part 0: the library's own work per sample (timed in a loop, best of 5 x %d)\n\n",
         INSIDE_ITERS);
  printf("The core's functions called directly on this thread's real stack (no signal).\n\n");
  printf(
      "| walk depth (frames) | frame walk | record write (begin+reserve+encode+end) | "
      "whole in-handler path (cpu + walk + clock + write) |\n");
  printf("|---:|---:|---:|---:|\n");
  const int depths[] = {8, 32, 64};
  for (int i = 0; i < 3; i++) {
    const int levels = recursion_for(depths[i]);
    recurse(levels, inside_leaf, 0);
    printf("| %zu | %.1f ns | %.1f ns | %.1f ns |\n", g_inside.frames, g_inside.walk_ns,
           g_inside.write_ns, g_inside.path_ns);
  }
  printf("\n| call the handler makes | cost |\n|---|---:|\n");
  printf("| clock_gettime(CLOCK_MONOTONIC) (vDSO) | %.1f ns |\n", time_op(op_clock, NULL, 200000));
  printf("| CPU number from rseq | %.1f ns |\n", time_op(op_rseq, NULL, 200000));
  printf("| sched_getcpu() | %.1f ns |\n", time_op(op_getcpu, NULL, 200000));
  printf("| syscall(SYS_gettid) (perf handler's thread check) | %.1f ns |\n",
         time_op(op_gettid, NULL, 100000));
  int fd = perf_open_self(INT64_C(1000000000000), true);
  if (fd >= 0) {
    printf("| ioctl REFRESH(1) + ioctl DISABLE on an idle task-clock event | %.1f ns |\n",
           time_op(op_refresh_disable, &fd, 20000));
    printf("| ioctl ENABLE + ioctl DISABLE on the same event | %.1f ns |\n",
           time_op(op_disable_enable, &fd, 20000));
    close(fd);
  } else {
    printf("| perf ioctls | (perf_event_open failed: %s) |\n", strerror(errno));
  }
  printf("\n");
  free(g_region);
}

// --- Part A: per-sample cost by depth ---------------------------------------------------------

typedef struct {
  const char* name;
  floor_mode_t floor;  // FLOOR_NONE with lib_frames > 0: the library samples
  int frames;
  const char* source;          // the library's source (ZXSAMPLER_SOURCE); NULL: "perf"
  double cost_us[MAX_ROUNDS];  // per event
  double events[MAX_ROUNDS];
  double expected[MAX_ROUNDS];
  double faults[MAX_ROUNDS];  // minor faults per event
  double frames_seen;
} a_config_t;

typedef struct {
  uint64_t hist[ZX_SAMPLER_MAX_FRAMES + 1];
} frame_hist_t;

static void hist_add(void* ctx, const void* payload, size_t size) {
  (void)payload;
  frame_hist_t* h = ctx;
  const size_t n = size / 8;
  h->hist[n <= ZX_SAMPLER_MAX_FRAMES ? n : 0]++;
}

static void partA(void) {
  worker_t w;
  worker_start(&w);
  // Size the spin to ~0.25 s * scale of CPU.
  g_spin_iters = 20000000;
  w.kind = CMD_SPIN;
  w.frames = 8;
  w.floor = FLOOR_NONE;
  worker_post(&w);
  worker_wait(&w);
  g_spin_iters = (uint64_t)((double)g_spin_iters * 0.25 * g_scale / w.cpu_s);

  a_config_t configs[] = {
      {.name = "perf interrupt alone (no signal)", .floor = FLOOR_COUNT, .frames = 8},
      {.name = "+ signal, empty handler", .floor = FLOOR_SIGNAL, .frames = 8},
      {.name = "+ one-shot re-arm (gettid + REFRESH ioctl)", .floor = FLOOR_ONESHOT, .frames = 8},
      {.name = "libzxsampler, 8 frames", .frames = 8},
      {.name = "libzxsampler, 32 frames", .frames = 32},
      {.name = "libzxsampler, 64 frames", .frames = 64},
      {.name = "libzxsampler perf-ring, 8 frames", .frames = 8, .source = "perf-ring"},
      {.name = "libzxsampler perf-ring, 32 frames", .frames = 32, .source = "perf-ring"},
      {.name = "libzxsampler perf-ring, 64 frames", .frames = 64, .source = "perf-ring"},
  };
  const int nconf = (int)(sizeof(configs) / sizeof(configs[0]));

  set_source("perf");
  zx_handle_t iob = bench_session(g_period_a_ns, (size_t)64 << 20, &w.thread, 1);
  double base[MAX_ROUNDS];
  zxs_sampler_stats_t st;
  for (int r = 0; r < g_rounds; r++) {
    double b0 = 0, b1 = 0, cpu[16], faults[16];
    uint64_t events[16];
    for (int k = -1; k <= nconf; k++) {
      // Base runs open and close the round; configs in between, rotated by round.
      const int c = k < 0 || k == nconf ? -1 : (k + r) % nconf;
      w.kind = CMD_SPIN;
      w.frames = c < 0 ? 8 : configs[c].frames;
      w.floor = c < 0 ? FLOOR_NONE : configs[c].floor;
      w.period = g_period_a_ns;
      const bool lib = c >= 0 && configs[c].floor == FLOOR_NONE;
      uint64_t before = 0;
      if (lib) {
        set_source(configs[c].source != NULL ? configs[c].source : "perf");  // read at each start
        bench_check("zxs_sampler_get_stats", zxs_sampler_get_stats(iob, &st));
        before = st.samples_written;
        bench_check("zxs_sampler_start", zxs_sampler_start(iob));
      }
      worker_post(&w);
      worker_wait(&w);
      if (lib) {
        bench_check("zxs_sampler_stop", zxs_sampler_stop(iob));
        bench_check("zxs_sampler_get_stats", zxs_sampler_get_stats(iob, &st));
        w.events = st.samples_written - before;
      }
      if (w.err != 0) {
        fprintf(stderr, "bench_sampler: %s: cannot arm: %s\n", configs[c].name, strerror(w.err));
        exit(1);
      }
      if (c < 0) {
        *(k < 0 ? &b0 : &b1) = w.cpu_s;
      } else {
        cpu[c] = w.cpu_s;
        faults[c] = (double)w.minflt;
        events[c] = w.events;
        configs[c].frames_seen = (double)w.frames_seen;
      }
    }
    base[r] = (b0 + b1) / 2;
    for (int c = 0; c < nconf; c++) {
      configs[c].cost_us[r] = events[c] > 0 ? (cpu[c] - base[r]) * 1e6 / (double)events[c] : 0;
      configs[c].events[r] = (double)events[c];
      configs[c].faults[r] = events[c] > 0 ? faults[c] / (double)events[c] : 0;
      configs[c].expected[r] = cpu[c] * 1e9 / (double)g_period_a_ns;
    }
  }
  bench_check("zxs_sampler_get_stats", zxs_sampler_get_stats(iob, &st));
  frame_hist_t hist;
  memset(&hist, 0, sizeof(hist));
  bench_for_each_sample(iob, hist_add, &hist);
  zxs_handle_close(iob);
  worker_stop(&w);

  printf(
      "## Part A: per-sample cost by stack depth (perf and perf-ring sources, period %lld us; "
      "effective "
      "%lld us; run with ZXSAMPLER_SAMPLE_COST_NS=0, the library's livelock protection off, so "
      "that the library and the floors run at the same period)\n\n",
      (long long)(g_period_a_ns / 1000), (long long)(st.effective_period / 1000));
  printf(
      "One thread walks down N frames and spins ~%.2f s of CPU. Cost per sample = (thread CPU "
      "time with the source - without) / events, median of %d rounds (p25..p75). The first "
      "three rows are armed by this program on the same thread: the floor below the library."
      "\n\n",
      0.25 * g_scale, g_rounds);
  printf(
      "| configuration | frames walked | cost per sample (us) | p25..p75 (us) | events per run "
      "| expected (CPU time / period) | minor faults per sample |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|\n");
  for (int c = 0; c < nconf; c++) {
    const a_config_t* k = &configs[c];
    char frames[32];
    snprintf(frames, sizeof(frames), "%.0f", k->frames_seen);
    printf("| %s | %s | %.2f | %.2f..%.2f | %.0f | %.0f | %.3f |\n", k->name,
           k->floor == FLOOR_NONE ? frames : "-", bench_median(k->cost_us, g_rounds),
           bench_quantile(k->cost_us, g_rounds, 0.25), bench_quantile(k->cost_us, g_rounds, 0.75),
           bench_median(k->events, g_rounds), bench_median(k->expected, g_rounds),
           bench_median(k->faults, g_rounds));
  }
  printf("\nBase run (no source): median %.4f s of thread CPU.\n", bench_median(base, g_rounds));
  const double lib8 = bench_median(configs[3].cost_us, g_rounds);
  const double one = bench_median(configs[2].cost_us, g_rounds);
  const double sig = bench_median(configs[1].cost_us, g_rounds);
  const double irq = bench_median(configs[0].cost_us, g_rounds);
  printf(
      "\nWhere a sample's cost goes (8 frames, medians): interrupt %.2f us; signal delivery "
      "and return %.2f us; one-shot re-arm %.2f us; library handler work %.2f us "
      "(end to end %.2f us).\n",
      irq, sig - irq, one - sig, lib8 - one, lib8);
  printf("\nFrames per recorded sample over all library runs (walk depth histogram): ");
  for (int n = 1; n <= ZX_SAMPLER_MAX_FRAMES; n++) {
    if (hist.hist[n] > 0) {
      printf("%d frames: %llu; ", n, (unsigned long long)hist.hist[n]);
    }
  }
  printf("truncated walks: %llu, lost to full regions: %llu.\n\n",
         (unsigned long long)st.walks_truncated, (unsigned long long)st.dropped_full);
}

// --- Part B: slowdown of a workload by period and source -------------------------------------

typedef struct {
  const char* source;
  int64_t period;
  double slow[MAX_ROUNDS], wall[MAX_ROUNDS];
  double samples[MAX_ROUNDS], expected[MAX_ROUNDS], expected_eff[MAX_ROUNDS];
  int64_t effective;
  uint64_t throttled, overruns, dropped;
} b_config_t;

#define B_WORKERS 2

static void run_workers(worker_t* w, int n, uint64_t units, double* cpu, double* wall) {
  const double t0 = bench_now(CLOCK_MONOTONIC);
  for (int i = 0; i < n; i++) {
    w[i].kind = CMD_WORK;
    w[i].units = units;
    worker_post(&w[i]);
  }
  *cpu = 0;
  for (int i = 0; i < n; i++) {
    worker_wait(&w[i]);
    *cpu += w[i].cpu_s;
  }
  *wall = bench_now(CLOCK_MONOTONIC) - t0;
}

static void partB(bool raw) {
  worker_t w[B_WORKERS];
  pthread_t threads[B_WORKERS];
  for (int i = 0; i < B_WORKERS; i++) {
    worker_start(&w[i]);
    threads[i] = w[i].thread;
  }
  // Size the work to ~0.25 s * scale of CPU per thread.
  double cpu, wall;
  uint64_t units = 1000;
  run_workers(w, B_WORKERS, units, &cpu, &wall);
  units = (uint64_t)((double)units * 0.25 * g_scale * B_WORKERS / cpu);

  b_config_t configs[] = {
      {.source = "perf", .period = 100000},      {.source = "perf", .period = 1000000},
      {.source = "perf", .period = 4000000},     {.source = "cputimer", .period = 100000},
      {.source = "cputimer", .period = 1000000}, {.source = "cputimer", .period = 4000000},
  };
  // Without the livelock protection only the period it would raise is of interest.
  const int nconf = raw ? 1 : (int)(sizeof(configs) / sizeof(configs[0]));
  double base_cpu[MAX_ROUNDS];
  for (int r = 0; r < g_rounds; r++) {
    double prev_cpu, prev_wall;
    run_workers(w, B_WORKERS, units, &prev_cpu, &prev_wall);
    base_cpu[r] = prev_cpu;
    for (int k = 0; k < nconf; k++) {
      const int c = (k + r) % nconf;
      b_config_t* cf = &configs[c];
      set_source(cf->source);
      zx_handle_t iob = bench_session(cf->period, (size_t)32 << 20, threads, B_WORKERS);
      bench_check("zxs_sampler_start", zxs_sampler_start(iob));
      run_workers(w, B_WORKERS, units, &cpu, &wall);
      bench_check("zxs_sampler_stop", zxs_sampler_stop(iob));
      zxs_sampler_stats_t st;
      bench_check("zxs_sampler_get_stats", zxs_sampler_get_stats(iob, &st));
      zxs_handle_close(iob);
      double next_cpu, next_wall;
      run_workers(w, B_WORKERS, units, &next_cpu, &next_wall);
      cf->slow[r] = cpu / ((prev_cpu + next_cpu) / 2);
      cf->wall[r] = wall / ((prev_wall + next_wall) / 2);
      cf->samples[r] = (double)st.samples_written;
      cf->expected[r] = cpu * 1e9 / (double)cf->period;
      cf->expected_eff[r] = cpu * 1e9 / (double)st.effective_period;
      cf->effective = st.effective_period;
      cf->throttled += st.throttled;
      cf->overruns += st.overruns;
      cf->dropped += st.dropped_full + st.dropped_other;
      if (st.source != (strcmp(cf->source, "perf") == 0 ? ZXS_SOURCE_PERF_TASK_CLOCK
                                                        : ZXS_SOURCE_CPU_CLOCK_TIMER)) {
        fprintf(stderr, "bench_sampler: asked for %s, got %s\n", cf->source,
                zxs_sample_source_name(st.source));
      }
      prev_cpu = next_cpu;
      prev_wall = next_wall;
    }
  }
  for (int i = 0; i < B_WORKERS; i++) {
    worker_stop(&w[i]);
  }
  if (raw) {
    printf(
        "## Part B': the same, perf at 100 us with the livelock protection off "
        "(ZXSAMPLER_SAMPLE_COST_NS=0)\n\n");
  } else {
    printf(
        "## Part B: slowdown of a CPU-bound frame-pointer workload (%d threads, 12 frames "
        "deep; the library as shipped, livelock protection on)\n\n",
        B_WORKERS);
  }
  printf(
      "Each run: ~%.2f s of CPU per thread (median unsampled run %.3f s, both threads). "
      "Slowdown = CPU time of the sampled run / mean of the unsampled runs just before and "
      "after it; median of %d rounds (p25..p75). Wall = the same ratio of wall times (shared "
      "machine: noisy). Expected samples = CPU time / requested period, and / the period "
      "in force. Samples and expected: medians per run; throttled, overruns and dropped: "
      "totals over the rounds.\n\n",
      0.25 * g_scale, bench_median(base_cpu, g_rounds), g_rounds);
  printf(
      "| source | period | in force | CPU slowdown | p25..p75 | wall ratio | samples | expected "
      "(requested) | expected (in force) | throttled | overruns | dropped |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int c = 0; c < nconf; c++) {
    const b_config_t* cf = &configs[c];
    printf(
        "| %s | %lld us | %lld us | %+.1f%% | %+.1f..%+.1f%% | %+.1f%% | %.0f | %.0f | %.0f "
        "| %llu | %llu | %llu |\n",
        cf->source, (long long)(cf->period / 1000), (long long)(cf->effective / 1000),
        (bench_median(cf->slow, g_rounds) - 1) * 100,
        (bench_quantile(cf->slow, g_rounds, 0.25) - 1) * 100,
        (bench_quantile(cf->slow, g_rounds, 0.75) - 1) * 100,
        (bench_median(cf->wall, g_rounds) - 1) * 100, bench_median(cf->samples, g_rounds),
        bench_median(cf->expected, g_rounds), bench_median(cf->expected_eff, g_rounds),
        (unsigned long long)cf->throttled, (unsigned long long)cf->overruns,
        (unsigned long long)cf->dropped);
  }
  printf("\n");
}

// The library measures its per-sample cost the first time a perf source is armed and never
// arms below 4x that; asking for the 10 us minimum shows the floor it settled on.
static void calibration(void) {
  pthread_t self = pthread_self();
  set_source("perf");
  zx_handle_t iob = bench_session(ZX_SAMPLER_MIN_PERIOD, 1 << 16, &self, 1);
  const double t0 = bench_now(CLOCK_MONOTONIC);
  zx_status_t status = zxs_sampler_start(iob);
  const double took = bench_now(CLOCK_MONOTONIC) - t0;
  zxs_sampler_stats_t st = {0};
  if (status == ZX_OK) {
    zxs_sampler_stop(iob);
    zxs_sampler_get_stats(iob, &st);
  }
  zxs_handle_close(iob);
  printf(
      "Library calibration (first perf arm in the process, took %.0f ms): shortest perf period "
      "it arms = %lld us (4x its measured per-sample cost, i.e. ~%.1f us per sample).\n\n",
      took * 1e3, (long long)(st.effective_period / 1000), (double)st.effective_period / 4000.0);
}

int main(int argc, char** argv) {
  int opt;
  bool child = false;
  while ((opt = getopt(argc, argv, "r:P:s:qC")) != -1) {
    switch (opt) {
      case 'C':  // internal: the re-executed child that runs with the protection off
        child = true;
        break;
      case 'r':
        g_rounds = atoi(optarg);
        break;
      case 'P':
        g_period_a_ns = atoll(optarg) * 1000;
        break;
      case 's':
        g_scale = atof(optarg);
        break;
      case 'q':
        g_rounds = 3;
        g_scale = 0.5;
        break;
      default:
        fprintf(stderr, "usage: bench_sampler [-r ROUNDS] [-P PERIOD_US] [-s SCALE] [-q]\n");
        return 2;
    }
  }
  if (g_rounds < 1 || g_rounds > MAX_ROUNDS || g_scale <= 0 || g_period_a_ns < 10000) {
    fprintf(stderr, "bench_sampler: bad arguments\n");
    return 2;
  }
  // Our own signal for the floor modes, installed before the library picks its own.
  g_floor_signal = SIGRTMIN + 6;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_floor_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(g_floor_signal, &sa, NULL);

  if (child) {
    partA();
    partB(true);
    return 0;
  }
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  double load[1] = {0};
  getloadavg(load, 1);
  printf("# bench_sampler: %ld CPUs online, load average %.2f at start, %d rounds, scale %.2f\n\n",
         cpus, load[0], g_rounds, g_scale);
  const double t0 = bench_now(CLOCK_MONOTONIC);
  part0();
  calibration();
  partB(false);
  // Part A and B' in a fresh process: the library reads ZXSAMPLER_SAMPLE_COST_NS once, at its
  // first perf arm, and this one has armed already.
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    char rounds[16], period[32], scale[32];
    snprintf(rounds, sizeof(rounds), "%d", g_rounds);
    snprintf(period, sizeof(period), "%lld", (long long)(g_period_a_ns / 1000));
    snprintf(scale, sizeof(scale), "%g", g_scale);
    setenv("ZXSAMPLER_SAMPLE_COST_NS", "0", 1);
    execl("/proc/self/exe", argv[0], "-C", "-r", rounds, "-P", period, "-s", scale, (char*)NULL);
    _exit(127);
  }
  int wstatus = 0;
  if (pid < 0 || waitpid(pid, &wstatus, 0) != pid || !WIFEXITED(wstatus) ||
      WEXITSTATUS(wstatus) != 0) {
    fprintf(stderr, "bench_sampler: part A (child process) failed\n");
    return 1;
  }
  getloadavg(load, 1);
  printf("(total %.0f s; load average %.2f at the end)\n", bench_now(CLOCK_MONOTONIC) - t0,
         load[0]);
  return 0;
}
