// What measuring ZX_INFO_TASK_RUNTIME costs (docs/PERFORMANCE.md, "Task runtime"):
//   A. a fault-heavy thread (first touch of 64 MiB, 16384 faults), measured or not: wall and
//      CPU time per fault;
//   B. a lock-heavy program (3 threads map, touch and unmap one page 10000 times each, on the
//      address-space lock), measured or not: wall time, and the extra CPU time per kernel lock
//      contention (counted by a separate perf counter on lock:contention_begin, in both runs);
//   C. one zx_object_get_info(ZX_INFO_TASK_RUNTIME) on the calling thread and on the process.
// Runs alternate measured and unmeasured, `-r N` rounds (default 7); medians are printed.
// Prints a table; asserts nothing.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/zircon.h>

#include "bench_common.h"

#define FAULT_BYTES (64u << 20)
#define LOCK_THREADS 3
#define LOCK_ROUNDS 10000
#define MAX_ROUNDS 64

static int64_t ns_of(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Begins measuring the calling thread (what a deadline loop's first query does).
static void measure_self(bool measured) {
  if (!measured) return;
  uint32_t fields;
  bench_check("zxs_task_runtime_fields", zxs_task_runtime_fields(zx_thread_self(), &fields));
}

// --- A. Faults --------------------------------------------------------------------------------

typedef struct {
  bool measured;
  int64_t wall, cpu;
} fault_run_t;

static void* fault_thread(void* arg) {
  fault_run_t* r = arg;
  measure_self(r->measured);
  char* p = mmap(NULL, FAULT_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) exit(1);
  const int64_t t0 = ns_of(CLOCK_MONOTONIC), c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
  for (size_t i = 0; i < FAULT_BYTES; i += 4096) p[i] = 1;
  r->wall = ns_of(CLOCK_MONOTONIC) - t0;
  r->cpu = ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
  munmap(p, FAULT_BYTES);
  return NULL;
}

static fault_run_t run_faults(bool measured) {
  fault_run_t r = {.measured = measured};
  pthread_t t;
  pthread_create(&t, NULL, fault_thread, &r);
  pthread_join(t, NULL);
  return r;
}

// --- B. Lock contention -------------------------------------------------------------------------

static uint64_t g_contention_id;  // lock:contention_begin's tracepoint id; 0: unknown

static void find_contention_id(void) {
  const char* paths[] = {"/sys/kernel/tracing/events/lock/contention_begin/id",
                         "/sys/kernel/debug/tracing/events/lock/contention_begin/id"};
  for (size_t i = 0; i < 2 && g_contention_id == 0; i++) {
    FILE* f = fopen(paths[i], "r");
    if (f == NULL) continue;
    unsigned long long id = 0;
    if (fscanf(f, "%llu", &id) == 1) g_contention_id = id;
    fclose(f);
  }
}

// A counter of the calling thread's lock contentions (-1 when it cannot be opened).
static int open_contention_counter(void) {
  if (g_contention_id == 0) return -1;
  struct perf_event_attr attr = {
      .size = sizeof(attr), .type = PERF_TYPE_TRACEPOINT, .config = g_contention_id};
  return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

typedef struct {
  bool measured;
  pthread_barrier_t* start;
  int64_t cpu;
  uint64_t contentions;
} lock_thread_t;

static void* lock_thread(void* arg) {
  lock_thread_t* l = arg;
  measure_self(l->measured);
  const int counter = open_contention_counter();
  pthread_barrier_wait(l->start);
  const int64_t c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < LOCK_ROUNDS; i++) {
    void* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *(volatile char*)p = 1;
    munmap(p, 4096);
  }
  l->cpu = ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
  if (counter >= 0) {
    if (read(counter, &l->contentions, sizeof(l->contentions)) != sizeof(l->contentions)) {
      l->contentions = 0;
    }
    close(counter);
  }
  return NULL;
}

typedef struct {
  int64_t wall, cpu;
  uint64_t contentions;
} lock_run_t;

static lock_run_t run_locks(bool measured) {
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, LOCK_THREADS + 1);
  lock_thread_t l[LOCK_THREADS];
  pthread_t t[LOCK_THREADS];
  for (int i = 0; i < LOCK_THREADS; i++) {
    l[i] = (lock_thread_t){.measured = measured, .start = &start};
    pthread_create(&t[i], NULL, lock_thread, &l[i]);
  }
  pthread_barrier_wait(&start);
  const int64_t t0 = ns_of(CLOCK_MONOTONIC);
  lock_run_t r = {0};
  for (int i = 0; i < LOCK_THREADS; i++) {
    pthread_join(t[i], NULL);
    r.cpu += l[i].cpu;
    r.contentions += l[i].contentions;
  }
  r.wall = ns_of(CLOCK_MONOTONIC) - t0;
  pthread_barrier_destroy(&start);
  return r;
}

// --- C. get_info --------------------------------------------------------------------------------

static double get_info_ns(zx_handle_t task, zx_object_info_topic_t topic, int calls) {
  zx_info_task_runtime_t info;
  const int64_t t0 = ns_of(CLOCK_MONOTONIC);
  for (int i = 0; i < calls; i++) {
    bench_check("get_info", zx_object_get_info(task, topic, &info, sizeof(info), NULL, NULL));
  }
  return (double)(ns_of(CLOCK_MONOTONIC) - t0) / calls;
}

int main(int argc, char** argv) {
  int rounds = 7;
  for (int i = 1; i + 1 < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1] == 'r') rounds = atoi(argv[i + 1]);
  }
  if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 7;
  find_contention_id();
  uint32_t fields = 0;
  bench_check("fields", zxs_task_runtime_fields(zx_thread_self(), &fields));
  printf(
      "task runtime: fields 0x%x (cpu %d, queue %d, page faults %d, lock contention %d), "
      "%d rounds\n",
      fields, !!(fields & ZXS_TASK_RUNTIME_CPU_TIME), !!(fields & ZXS_TASK_RUNTIME_QUEUE_TIME),
      !!(fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME),
      !!(fields & ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME), rounds);

  const double faults = FAULT_BYTES / 4096.0;
  double fw[2][MAX_ROUNDS], fc[2][MAX_ROUNDS];
  for (int r = 0; r < rounds; r++) {
    for (int m = 0; m < 2; m++) {
      const fault_run_t run = run_faults(m == 1);
      fw[m][r] = (double)run.wall / faults;
      fc[m][r] = (double)run.cpu / faults;
    }
  }
  printf("\nA. first touch of %u MiB (%.0f faults), per fault: median (p25..p75)\n",
         FAULT_BYTES >> 20, faults);
  printf("  %-12s %22s %22s\n", "", "wall ns", "cpu ns");
  for (int m = 0; m < 2; m++) {
    printf("  %-12s %8.0f (%5.0f..%5.0f) %8.0f (%5.0f..%5.0f)\n", m ? "measured" : "unmeasured",
           bench_median(fw[m], rounds), bench_quantile(fw[m], rounds, 0.25),
           bench_quantile(fw[m], rounds, 0.75), bench_median(fc[m], rounds),
           bench_quantile(fc[m], rounds, 0.25), bench_quantile(fc[m], rounds, 0.75));
  }
  printf("  cost per fault (medians): %+.0f ns wall (%+.1f%%), %+.0f ns cpu (%+.1f%%)\n",
         bench_median(fw[1], rounds) - bench_median(fw[0], rounds),
         100.0 * (bench_median(fw[1], rounds) / bench_median(fw[0], rounds) - 1),
         bench_median(fc[1], rounds) - bench_median(fc[0], rounds),
         100.0 * (bench_median(fc[1], rounds) / bench_median(fc[0], rounds) - 1));

  double lw[2][MAX_ROUNDS], lc[2][MAX_ROUNDS], ln[2][MAX_ROUNDS];
  for (int r = 0; r < rounds; r++) {
    for (int m = 0; m < 2; m++) {
      const lock_run_t run = run_locks(m == 1);
      lw[m][r] = (double)run.wall / 1e6;
      lc[m][r] = (double)run.cpu / 1e6;
      ln[m][r] = (double)run.contentions;
    }
  }
  printf("\nB. %d threads x %d mmap+touch+munmap: median (p25..p75)\n", LOCK_THREADS, LOCK_ROUNDS);
  printf("  %-12s %22s %22s %12s\n", "", "wall ms", "cpu ms", "contentions");
  for (int m = 0; m < 2; m++) {
    printf("  %-12s %8.1f (%5.0f..%5.0f) %8.1f (%5.0f..%5.0f) %12.0f\n",
           m ? "measured" : "unmeasured", bench_median(lw[m], rounds),
           bench_quantile(lw[m], rounds, 0.25), bench_quantile(lw[m], rounds, 0.75),
           bench_median(lc[m], rounds), bench_quantile(lc[m], rounds, 0.25),
           bench_quantile(lc[m], rounds, 0.75), bench_median(ln[m], rounds));
  }
  const double extra_cpu_ms = bench_median(lc[1], rounds) - bench_median(lc[0], rounds);
  printf("  slowdown (medians) %+.1f%% wall, %+.1f%% cpu; %+.0f ns cpu per mmap+munmap",
         100.0 * (bench_median(lw[1], rounds) / bench_median(lw[0], rounds) - 1),
         100.0 * (bench_median(lc[1], rounds) / bench_median(lc[0], rounds) - 1),
         extra_cpu_ms * 1e6 / (LOCK_THREADS * LOCK_ROUNDS));
  if (bench_median(ln[1], rounds) > 0) {
    printf(", %+.0f ns per counted contention\n", extra_cpu_ms * 1e6 / bench_median(ln[1], rounds));
  } else {
    printf("; contentions not counted (no lock:contention_begin counter here)\n");
  }

  double self_ns[MAX_ROUNDS], v1_ns[MAX_ROUNDS], proc_ns[MAX_ROUNDS];
  for (int r = 0; r < rounds; r++) {
    self_ns[r] = get_info_ns(zx_thread_self(), ZX_INFO_TASK_RUNTIME, 20000);
    v1_ns[r] = get_info_ns(zx_thread_self(), ZX_INFO_TASK_RUNTIME_V1, 20000);
    proc_ns[r] = get_info_ns(zx_process_self(), ZX_INFO_TASK_RUNTIME, 2000);
  }
  printf("\nC. one zx_object_get_info, median ns\n");
  printf("  thread self, ZX_INFO_TASK_RUNTIME     %8.0f\n", bench_median(self_ns, rounds));
  printf("  thread self, ZX_INFO_TASK_RUNTIME_V1  %8.0f\n", bench_median(v1_ns, rounds));
  printf("  process (2 threads), TASK_RUNTIME     %8.0f\n", bench_median(proc_ns, rounds));
  return 0;
}
