// ZX_INFO_TASK_RUNTIME on Linux against independent measures taken in the same run: the thread
// CPU clock, getrusage's kernel time and fault counts, wall time of threads pinned to one CPU.
// Only ratios with generous bounds: the machine is a shared, noisy VM.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/zircon.h>

#include "readable_copy.h"

// cmocka's skip() says nothing: say why first.
#define skip_because(reason)         \
  do {                               \
    printf("skipped: %s\n", reason); \
    skip();                          \
  } while (0)

static int64_t ns_of(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static int64_t wall_ns(void) { return ns_of(CLOCK_MONOTONIC); }

static int64_t rusage_system_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return (int64_t)ru.ru_stime.tv_sec * 1000000000 + (int64_t)ru.ru_stime.tv_usec * 1000;
}

static zx_info_task_runtime_t runtime_of(zx_handle_t task) {
  zx_info_task_runtime_t info;
  assert_int_equal(zx_object_get_info(task, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL),
                   ZX_OK);
  return info;
}

static uint32_t fields_of(zx_handle_t task) {
  uint32_t fields = 0;
  assert_int_equal(zxs_task_runtime_fields(task, &fields), ZX_OK);
  return fields;
}

static void spin_ns(int64_t ns) {
  const int64_t end = ns_of(CLOCK_THREAD_CPUTIME_ID) + ns;
  volatile uint64_t sink = 0;
  while (ns_of(CLOCK_THREAD_CPUTIME_ID) < end) {
    for (int i = 0; i < 1000; i++) sink = sink + (uint64_t)i;
  }
}

// Touches `bytes` of fresh anonymous memory once per page: one minor fault each.
static void first_touch(size_t bytes) {
  char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(p != MAP_FAILED);
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
  munmap(p, bytes);
}

// Maps, touches and unmaps one page, `n` times: takes the address-space lock for writing twice.
static void map_unmap(int n) {
  for (int i = 0; i < n; i++) {
    void* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *(volatile char*)p = 1;
    munmap(p, 4096);
  }
}

static void cpu_time_is_the_thread_cpu_clock(void** state) {
  (void)state;
  const zx_handle_t self = zx_thread_self();
  assert_true((fields_of(self) & ZXS_TASK_RUNTIME_CPU_TIME) != 0);
  spin_ns(20000000);
  const int64_t before = ns_of(CLOCK_THREAD_CPUTIME_ID);
  const zx_info_task_runtime_t info = runtime_of(self);
  const int64_t after = ns_of(CLOCK_THREAD_CPUTIME_ID);
  assert_true(info.cpu_time >= before && info.cpu_time <= after);
  zx_info_task_runtime_v1_t v1;
  assert_int_equal(zx_object_get_info(self, ZX_INFO_TASK_RUNTIME_V1, &v1, sizeof(v1), NULL, NULL),
                   ZX_OK);
  assert_true(v1.cpu_time >= info.cpu_time && v1.queue_time >= info.queue_time);
  // The process: its CPU clock, which covers every thread.
  const int64_t pbefore = ns_of(CLOCK_PROCESS_CPUTIME_ID);
  const zx_info_task_runtime_t proc = runtime_of(zx_process_self());
  assert_true(proc.cpu_time >= pbefore && proc.cpu_time >= info.cpu_time);
}

// --- Threads pinned to one CPU compete: each waits about as long as the other runs. ----------

typedef struct {
  pthread_barrier_t* start;
  int64_t cpu_ns;  // to spin
  zx_info_task_runtime_t before, after;
  int64_t wall;
} competitor_t;

static void* compete(void* arg) {
  competitor_t* c = arg;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
  const zx_handle_t self = zx_thread_self();
  pthread_barrier_wait(c->start);
  c->before = runtime_of(self);
  const int64_t t0 = wall_ns();
  spin_ns(c->cpu_ns);
  c->wall = wall_ns() - t0;
  c->after = runtime_of(self);
  return NULL;
}

static void queue_time_of_threads_pinned_to_one_cpu(void** state) {
  (void)state;
  if ((fields_of(zx_thread_self()) & ZXS_TASK_RUNTIME_QUEUE_TIME) == 0) {
    skip_because("no /proc/self/task/TID/schedstat here");
  }
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, 2);
  competitor_t c[2] = {{.start = &start, .cpu_ns = 400000000},
                       {.start = &start, .cpu_ns = 400000000}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, compete, &c[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&start);
  for (int i = 0; i < 2; i++) {
    const double cpu = (double)(c[i].after.cpu_time - c[i].before.cpu_time);
    const double queue = (double)(c[i].after.queue_time - c[i].before.queue_time);
    const double wall = (double)c[i].wall;
    printf("pinned thread %d: wall %.0f ms, cpu %.0f ms, queue %.0f ms\n", i, wall / 1e6, cpu / 1e6,
           queue / 1e6);
    // Sharing one CPU with an equal competitor: a good part of the wall time is waiting.
    assert_true(queue > 0.2 * wall);
    // Running + waiting to run is where a spinning thread's wall time goes.
    assert_true(cpu + queue > 0.7 * wall && cpu + queue < 1.1 * wall);
  }
}

// --- Threads that exited: their queue time up to the exit -----------------------------------

// The scheduler's run delay of the calling thread (/proc/thread-self/schedstat), or -1.
static int64_t own_run_delay(void) {
  FILE* f = fopen("/proc/thread-self/schedstat", "r");
  if (f == NULL) return -1;
  unsigned long long run = 0, delay = 0;
  const bool ok = fscanf(f, "%llu %llu", &run, &delay) == 2;
  fclose(f);
  return ok ? (int64_t)delay : -1;
}

typedef struct {
  pthread_barrier_t* start;
  pthread_barrier_t* measured;  // after the main thread's first query of each handle
  int64_t wall, cpu, delay;     // the independent measures, taken just before it returns
} exiter_t;

static void* pinned_then_exits(void* arg) {
  exiter_t* e = arg;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
  pthread_barrier_wait(e->measured);
  pthread_barrier_wait(e->start);
  const int64_t t0 = wall_ns();
  const int64_t c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
  spin_ns(150000000);
  e->cpu = ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
  e->wall = wall_ns() - t0;
  e->delay = own_run_delay();  // since the thread began: its whole queue time but the exit's
  return NULL;
}

// Four threads pinned to one CPU queue behind each other, then exit; no query runs on them
// after the main thread's first one. The process and each thread's handle still report their
// queue time up to the exit (the kernel's exit records), within 10% of the run delay each read
// of itself just before returning.
static void queue_time_of_exited_threads_counts_to_their_exit(void** state) {
  (void)state;
  enum { kThreads = 4 };
  const int64_t main_delay0 = own_run_delay();
  if (main_delay0 < 0) skip_because("no /proc/thread-self/schedstat here");
  const zx_info_task_runtime_t proc_before = runtime_of(zx_process_self());
  const uint32_t proc_fields = fields_of(zx_process_self());
  pthread_barrier_t start, measured;
  pthread_barrier_init(&start, NULL, kThreads + 1);
  pthread_barrier_init(&measured, NULL, kThreads + 1);
  exiter_t e[kThreads];
  pthread_t t[kThreads];
  zx_handle_t handle[kThreads];
  zx_info_task_runtime_t first[kThreads];
  uint32_t fields[kThreads];
  for (int i = 0; i < kThreads; i++) {
    e[i] = (exiter_t){.start = &start, .measured = &measured};
    pthread_create(&t[i], NULL, pinned_then_exits, &e[i]);
    assert_int_equal(zxs_thread_get(t[i], &handle[i]), ZX_OK);
    fields[i] = fields_of(handle[i]);
    first[i] = runtime_of(handle[i]);  // the only query while it lives
  }
  pthread_barrier_wait(&measured);
  pthread_barrier_wait(&start);
  for (int i = 0; i < kThreads; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&start);
  pthread_barrier_destroy(&measured);
  const zx_info_task_runtime_t proc_after = runtime_of(zx_process_self());
  const int64_t main_delay = own_run_delay() - main_delay0;

  const bool totals = (proc_fields & ZXS_TASK_RUNTIME_TOTALS_AT_EXIT) != 0;
  double sum = 0;
  for (int i = 0; i < kThreads; i++) {
    const zx_info_task_runtime_t after = runtime_of(handle[i]);
    uint32_t after_fields = 0;
    assert_int_equal(zxs_task_runtime_fields(handle[i], &after_fields), ZX_OK);
    printf(
        "exited thread %d: wall %.0f ms, cpu %.0f ms, wall-cpu %.0f ms, run delay read before "
        "return %.1f ms; queue_time at first query %.1f ms, after exit %.1f ms%s\n",
        i, (double)e[i].wall / 1e6, (double)e[i].cpu / 1e6, (double)(e[i].wall - e[i].cpu) / 1e6,
        (double)e[i].delay / 1e6, (double)first[i].queue_time / 1e6, (double)after.queue_time / 1e6,
        (after_fields & ZXS_TASK_RUNTIME_TOTALS_AT_EXIT) != 0 ? "" : " (not to its exit)");
    assert_true(e[i].delay > 0);
    sum += (double)e[i].delay;
    // Live and measured while taskstats listens: its totals will be there at its exit.
    assert_int_equal((fields[i] & ZXS_TASK_RUNTIME_TOTALS_AT_EXIT) != 0, totals);
    assert_int_equal((after_fields & ZXS_TASK_RUNTIME_TOTALS_AT_EXIT) != 0, totals);
    if (totals) {
      // Its record also has the queue time after that read (the exit path): never less.
      assert_true(after.queue_time >= e[i].delay);
      assert_true((double)after.queue_time <= 1.1 * (double)e[i].delay);
      assert_true(after.cpu_time >= e[i].cpu);
    }
  }
  const double proc = (double)(proc_after.queue_time - proc_before.queue_time);
  // The threads' run delay, and the main thread's meanwhile (on a loaded machine it waits too).
  const double expected = sum + (double)main_delay;
  printf("process: queue_time %+.1f ms, the exited threads' run delay %.1f ms + main's %.1f ms%s\n",
         proc / 1e6, sum / 1e6, (double)main_delay / 1e6,
         totals ? "" : " (taskstats refused: exited threads stop at their last read)");
  if (!totals) skip_because("taskstats refused here (needs CAP_NET_ADMIN): totals at exit missing");
  // They queued behind each other: a good part of their wall time.
  assert_true(sum > 0.3 * (double)(e[0].wall + e[1].wall + e[2].wall + e[3].wall));
  assert_true(proc >= 0.9 * expected && proc <= 1.1 * expected);
  for (int i = 0; i < kThreads; i++) zx_handle_close(handle[i]);
}

// --- Page faults ----------------------------------------------------------------------------

static void page_fault_time_of_a_first_touch_loop(void** state) {
  (void)state;
  const zx_handle_t self = zx_thread_self();
  if ((fields_of(self) & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) == 0) {
    skip_because("perf software events refused here (perf_event_paranoid 3, seccomp)");
  }
  struct rusage r0, r1;
  getrusage(RUSAGE_THREAD, &r0);
  const int64_t s0 = rusage_system_ns();
  const zx_info_task_runtime_t a = runtime_of(self);
  const int64_t t0 = wall_ns();
  first_touch(128u << 20);  // 32768 faults
  const int64_t wall = wall_ns() - t0;
  const zx_info_task_runtime_t b = runtime_of(self);
  const int64_t system = rusage_system_ns() - s0;
  getrusage(RUSAGE_THREAD, &r1);
  const double faults = (double)(r1.ru_minflt - r0.ru_minflt + r1.ru_majflt - r0.ru_majflt);
  const double pf = (double)(b.page_fault_time - a.page_fault_time);
  printf(
      "first touch: %.0f faults, wall %.1f ms, kernel time %.1f ms, page_fault_time %.1f ms "
      "(%.0f%% of wall, %.0f%% of kernel time, %.2f us per fault)\n",
      faults, (double)wall / 1e6, (double)system / 1e6, pf / 1e6, 100.0 * pf / (double)wall,
      100.0 * pf / (double)system, pf / faults / 1e3);
  assert_true(faults >= 32768);
  // The handler runs in the kernel: its time is inside the thread's kernel time (tick-sampled,
  // so with a tolerance), and a good part of it (the rest is exception entry and exit, and on a
  // VM the hypervisor's share, which the guest's handler cannot see).
  assert_true(pf <= 1.3 * (double)system + 8e6);
  assert_true(pf >= 0.1 * (double)system);
  assert_true(pf <= (double)wall);
  assert_true(pf / faults > 100.0);  // more than 0.1 us per fault

  // A thread that only spins takes (almost) no faults.
  const zx_info_task_runtime_t c = runtime_of(self);
  spin_ns(200000000);
  const zx_info_task_runtime_t d = runtime_of(self);
  const double spin_pf = (double)(d.page_fault_time - c.page_fault_time);
  printf("spinning: cpu %.1f ms, page_fault_time %.3f ms\n",
         (double)(d.cpu_time - c.cpu_time) / 1e6, spin_pf / 1e6);
  assert_true(spin_pf < 0.01 * (double)(d.cpu_time - c.cpu_time));
}

// --- Kernel lock contention ----------------------------------------------------------------

typedef struct {
  pthread_barrier_t* start;
  int rounds;
  zx_info_task_runtime_t before, after;
  int64_t wall;
  uint32_t fields;
} mapper_t;

static void* mapper(void* arg) {
  mapper_t* m = arg;
  const zx_handle_t self = zx_thread_self();
  m->fields = fields_of(self);  // measured from here
  if (m->start != NULL) pthread_barrier_wait(m->start);
  m->before = runtime_of(self);
  const int64_t t0 = wall_ns();
  map_unmap(m->rounds);
  m->wall = wall_ns() - t0;
  m->after = runtime_of(self);
  return NULL;
}

static void lock_contention_time_on_the_address_space_lock(void** state) {
  (void)state;
  // Alone: the lock is never contended.
  mapper_t alone = {.rounds = 20000};
  pthread_t t;
  pthread_create(&t, NULL, mapper, &alone);
  pthread_join(t, NULL);
  if ((alone.fields & ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME) == 0) {
    skip_because(
        "lock contention is not measured here: it needs tracefs mounted (as root: mount -t "
        "tracefs nodev /sys/kernel/tracing) and the right to open kernel tracepoint events "
        "(root or CAP_PERFMON)");
  }
  const double alone_lock =
      (double)(alone.after.lock_contention_time - alone.before.lock_contention_time);
  printf("uncontended: wall %.1f ms, lock_contention_time %.3f ms\n", (double)alone.wall / 1e6,
         alone_lock / 1e6);
  assert_true(alone_lock < 0.02 * (double)alone.wall);

  // Three threads on two CPUs map and unmap at once: they wait for each other's mmap_lock.
  const zx_info_task_runtime_t proc_before = runtime_of(zx_process_self());
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, 3);
  mapper_t m[3];
  pthread_t threads[3];
  for (int i = 0; i < 3; i++) {
    m[i] = (mapper_t){.start = &start, .rounds = 20000};
    pthread_create(&threads[i], NULL, mapper, &m[i]);
  }
  for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
  pthread_barrier_destroy(&start);
  double total = 0, wall = 0;
  for (int i = 0; i < 3; i++) {
    const double lock =
        (double)(m[i].after.lock_contention_time - m[i].before.lock_contention_time);
    printf("contending thread %d: wall %.1f ms, lock_contention_time %.1f ms\n", i,
           (double)m[i].wall / 1e6, lock / 1e6);
    assert_true(lock <= (double)m[i].wall);
    total += lock;
    wall += (double)m[i].wall;
  }
  // How much they overlap depends on the machine's load: 3-60% of their wall time here, where
  // the uncontended thread waits ~0.
  assert_true(total > 0.02 * wall);
  assert_true(total > 20.0 * alone_lock / 3.0);
  // The threads have exited: the process still counts their time.
  const zx_info_task_runtime_t proc_after = runtime_of(zx_process_self());
  assert_true((double)(proc_after.lock_contention_time - proc_before.lock_contention_time) >=
              0.99 * total);
}

// --- Other threads and the process ---------------------------------------------------------

typedef struct {
  atomic_int phase;  // 0 run, 1 measured: fault, 2 faulted: exit
  int64_t cpu_end;   // its CPU clock after its work, before phase 2
} worker_t;

static void* worker(void* arg) {
  worker_t* w = arg;
  while (atomic_load(&w->phase) == 0) spin_ns(1000000);
  first_touch(16u << 20);
  spin_ns(50000000);  // CPU time no query sees before the thread exits
  w->cpu_end = ns_of(CLOCK_THREAD_CPUTIME_ID);
  atomic_store(&w->phase, 2);
  return NULL;
}

static void another_thread_and_the_process_after_it_exits(void** state) {
  (void)state;
  worker_t w = {0};
  pthread_t t;
  pthread_create(&t, NULL, worker, &w);
  zx_handle_t thread;
  assert_int_equal(zxs_thread_get(t, &thread), ZX_OK);
  const uint32_t fields = fields_of(thread);  // measured from here
  clockid_t clock;
  assert_int_equal(pthread_getcpuclockid(t, &clock), 0);
  const int64_t before = ns_of(clock);
  const zx_info_task_runtime_t a = runtime_of(thread);
  const int64_t after = ns_of(clock);
  assert_true(a.cpu_time >= before && a.cpu_time <= after);
  const zx_info_task_runtime_t proc_before = runtime_of(zx_process_self());
  atomic_store(&w.phase, 1);
  while (atomic_load(&w.phase) != 2) sched_yield();
  pthread_join(t, NULL);
  // The handle still answers for the exited thread, with its final totals.
  const zx_info_task_runtime_t b = runtime_of(thread);
  zx_info_task_runtime_t by_koid;
  zx_info_handle_basic_t basic;
  assert_int_equal(
      zx_object_get_info(thread, ZX_INFO_HANDLE_BASIC, &basic, sizeof(basic), NULL, NULL), ZX_OK);
  assert_int_equal(zxs_task_runtime_of_koid(basic.koid, &by_koid, NULL), ZX_OK);
  assert_memory_equal(&b, &by_koid, sizeof(b));
  assert_true(b.cpu_time >= a.cpu_time);
  if ((fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) != 0) {
    // Its CPU time until its exit, though no query ran on it after a: the time its events ran.
    // (Within 1%: the events start a moment after the CPU clock that is their base was read;
    // a stale value would be a.cpu_time, ~50 ms short.)
    assert_true(b.cpu_time >= w.cpu_end - w.cpu_end / 100);
    assert_true(b.page_fault_time > a.page_fault_time);
    const zx_info_task_runtime_t proc_after = runtime_of(zx_process_self());
    assert_true(proc_after.page_fault_time - proc_before.page_fault_time >=
                b.page_fault_time - a.page_fault_time);
  }
  zx_handle_close(thread);
}

// --- Without privileges ---------------------------------------------------------------------

// What a caller without privileges gets: cpu, queue and page-fault time still measured; lock
// contention reported as not measured (tracefs and kernel tracepoints are root's) rather than
// as 0; exited threads not counted to their exit (taskstats is CAP_NET_ADMIN's) said so, but
// for a thread that queried its own handle (read on itself as it exits). Runs in this program
// re-executed as uid/gid 65534 without groups or capabilities
// (--unprivileged-child): exit status 0 when all holds, else the number of the check failed.
static int unprivileged_child(void) {
  const zx_handle_t self = zx_thread_self();
  uint32_t fields = 0;
  if (zxs_task_runtime_fields(self, &fields) != ZX_OK) return 11;
  if ((fields & (ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME)) !=
      (ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME)) {
    return 12;
  }
  if ((fields & ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME) != 0) return 13;
  FILE* f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
  int paranoid = 3;
  if (f != NULL) {
    if (fscanf(f, "%d", &paranoid) != 1) paranoid = 3;
    fclose(f);
  }
  if (paranoid <= 2 && (fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) == 0) return 14;
  zx_info_task_runtime_t a, b;
  if (zx_object_get_info(self, ZX_INFO_TASK_RUNTIME, &a, sizeof(a), NULL, NULL) != ZX_OK) {
    return 15;
  }
  first_touch(16u << 20);
  if (zx_object_get_info(self, ZX_INFO_TASK_RUNTIME, &b, sizeof(b), NULL, NULL) != ZX_OK) {
    return 16;
  }
  if ((fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) != 0 && b.page_fault_time <= a.page_fault_time) {
    return 17;
  }
  if (b.lock_contention_time != 0 || b.cpu_time <= a.cpu_time) return 18;
  if ((fields & ZXS_TASK_RUNTIME_TOTALS_AT_EXIT) == 0) return 19;  // its own handle: hooked
  uint32_t process = 0, other = 0;
  if (zxs_task_runtime_fields(zx_process_self(), &process) != ZX_OK) return 20;
  if ((process & ZXS_TASK_RUNTIME_TOTALS_AT_EXIT) != 0) return 21;
  worker_t w = {0};
  pthread_t t;
  zx_handle_t thread;
  if (pthread_create(&t, NULL, worker, &w) != 0) return 22;
  if (zxs_thread_get(t, &thread) != ZX_OK || zxs_task_runtime_fields(thread, &other) != ZX_OK) {
    return 23;
  }
  atomic_store(&w.phase, 1);
  pthread_join(t, NULL);
  zx_info_task_runtime_t exited;
  if (zx_object_get_info(thread, ZX_INFO_TASK_RUNTIME, &exited, sizeof(exited), NULL, NULL) !=
          ZX_OK ||
      zxs_task_runtime_fields(thread, &other) != ZX_OK) {
    return 24;
  }
  if ((other & ZXS_TASK_RUNTIME_TOTALS_AT_EXIT) != 0) return 25;
  zx_handle_close(thread);
  printf(
      "unprivileged (uid %d): fields 0x%x, page_fault_time %+.1f ms; missing: lock contention, "
      "and totals at exit for the process (0x%x) and another thread (0x%x): taskstats refused\n",
      (int)getuid(), fields, (double)(b.page_fault_time - a.page_fault_time) / 1e6, process, other);
  return 0;
}

static void unprivileged_caller_gets_the_fields_it_can(void** state) {
  (void)state;
  if (geteuid() != 0) skip_because("already unprivileged: the other tests cover this");
  readable_copy_t copy;  // uid 65534 may not read the build tree (a clone under a 0700 home)
  zx_status_t (*const in_library)(zx_handle_t, uint32_t*) = zxs_task_runtime_fields;
  void* symbol;
  memcpy(&symbol, &in_library, sizeof(symbol));
  assert_true(readable_copy_make(&copy, "test_task_runtime_linux", symbol));
  const pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {  // only async-signal-safe calls until exec: this process has threads
    if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0) {
      _exit(10);
    }
    char* const args[] = {"test_task_runtime_linux", "--unprivileged-child", NULL};
    char* const env[] = {copy.library_path_env, NULL};
    execve(copy.program, args, env);
    _exit(9);
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  readable_copy_remove(&copy);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf(
        "the child as uid 65534 %s %d (10: could not drop privileges, 9: exec failed, "
        "127: the loader could not load it, 11-25: the check of that number in "
        "unprivileged_child failed)\n",
        WIFEXITED(status) ? "exited" : "died of signal",
        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  }
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

// --- fork -----------------------------------------------------------------------------------

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

// The child of a measuring program measures its own thread afresh: the parent's table, rings
// and drainer are not its own.
static void the_child_of_a_fork_measures_its_own_thread(void** state) {
  (void)state;
#ifdef UNDER_TSAN
  skip_because("TSan does not let a forked child of a threaded program start threads");
#endif
  const zx_handle_t self = zx_thread_self();
  (void)fields_of(self);
  spin_ns(50000000);
  const zx_info_task_runtime_t parent = runtime_of(self);
  const pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    zx_info_task_runtime_t info;
    if (zx_object_get_info(zx_thread_self(), ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL,
                           NULL) != ZX_OK) {
      _exit(1);
    }
    // The child's thread is new: its CPU time is its own, not the parent's 50 ms and more.
    if (info.cpu_time <= 0 || info.cpu_time >= parent.cpu_time) _exit(2);
    first_touch(4u << 20);
    uint32_t fields = 0;
    if (zxs_task_runtime_fields(zx_thread_self(), &fields) != ZX_OK) _exit(3);
    zx_info_task_runtime_t after;
    if (zx_object_get_info(zx_process_self(), ZX_INFO_TASK_RUNTIME, &after, sizeof(after), NULL,
                           NULL) != ZX_OK) {
      _exit(4);
    }
    if ((fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) != 0 && after.page_fault_time <= 0) _exit(5);
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  // The parent goes on measuring.
  assert_true(runtime_of(self).cpu_time >= parent.cpu_time);
}

// --- The descriptor budget ------------------------------------------------------------------

static void* report_fields(void* arg) {
  *(uint32_t*)arg = fields_of(zx_thread_self());
  return NULL;
}

// With ZXSAMPLER_RUNTIME_MAX_THREADS=1 (--one-thread-child), only the first thread measured gets
// events: the next one is told it has cpu and queue time only, and so is the process.
static int one_thread_child(void) {
  const uint32_t first = fields_of(zx_thread_self());
  uint32_t second = 0;
  pthread_t t;
  pthread_create(&t, NULL, report_fields, &second);
  pthread_join(t, NULL);
  // Whether exited threads count to their exit (taskstats) is not the budget's business.
  const uint32_t process = fields_of(zx_process_self()) & ~ZXS_TASK_RUNTIME_TOTALS_AT_EXIT;
  second &= ~ZXS_TASK_RUNTIME_TOTALS_AT_EXIT;
  const uint32_t basic = ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME;
  if ((first & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) == 0) return 77;  // no perf events here
  return second == basic && process == basic ? 0 : 20;
}

static void measured_threads_are_limited_and_say_so(void** state) {
  (void)state;
  const pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    char* const args[] = {"test_task_runtime_linux", "--one-thread-child", NULL};
    char* const env[] = {"ZXSAMPLER_RUNTIME_MAX_THREADS=1", NULL};
    execve("/proc/self/exe", args, env);
    _exit(9);
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) skip_because("perf software events refused here");
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--one-thread-child") == 0) return one_thread_child();
  if (argc > 1 && strcmp(argv[1], "--unprivileged-child") == 0) return unprivileged_child();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cpu_time_is_the_thread_cpu_clock),
      cmocka_unit_test(queue_time_of_threads_pinned_to_one_cpu),
      cmocka_unit_test(queue_time_of_exited_threads_counts_to_their_exit),
      cmocka_unit_test(page_fault_time_of_a_first_touch_loop),
      cmocka_unit_test(lock_contention_time_on_the_address_space_lock),
      cmocka_unit_test(another_thread_and_the_process_after_it_exits),
      cmocka_unit_test(unprivileged_caller_gets_the_fields_it_can),
      cmocka_unit_test(measured_threads_are_limited_and_say_so),
      cmocka_unit_test(the_child_of_a_fork_measures_its_own_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
