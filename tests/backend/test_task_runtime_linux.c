// ZX_INFO_TASK_RUNTIME on Linux against independent measures taken in the same run: the thread
// CPU clock, getrusage's kernel time and fault counts, wall time of threads pinned to one CPU,
// the scheduler's own run delay. The machine is a shared, noisy VM (and CI runs this under
// TSan): the assertions are what the kernel's accounting guarantees whatever the load (a time
// inside the interval it was measured over, a wait while another thread held the one CPU), and
// the ratios that depend on the load are printed, not asserted.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
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
#include <sys/syscall.h>
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
  int64_t outer0, t0, t1, outer1;  // CLOCK_MONOTONIC: before `before`, spin, after `after`
  pid_t tid;
} competitor_t;

static void* compete(void* arg) {
  competitor_t* c = arg;
  c->tid = (pid_t)syscall(SYS_gettid);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
  const zx_handle_t self = zx_thread_self();
  pthread_barrier_wait(c->start);
  c->outer0 = wall_ns();
  c->before = runtime_of(self);
  c->t0 = wall_ns();
  spin_ns(c->cpu_ns);
  c->t1 = wall_ns();
  c->after = runtime_of(self);
  c->outer1 = wall_ns();
  return NULL;
}

// The time during which at least two of the `n` intervals [from[i], to[i]) overlap, counted
// once per interval beyond the first: the least run delay `n` threads pinned to one CPU and
// runnable throughout their intervals have between them (while one runs, the others wait).
static int64_t must_wait(const int64_t* from, const int64_t* to, int n) {
  int64_t total = 0;
  int64_t at = INT64_MIN;
  int inside = 0;
  for (;;) {  // sweep the interval ends in time order
    int64_t next = INT64_MAX;
    for (int i = 0; i < n; i++) {
      if (from[i] > at && from[i] < next) next = from[i];
      if (to[i] > at && to[i] < next) next = to[i];
    }
    if (next == INT64_MAX) return total;
    if (inside > 1) total += (int64_t)(inside - 1) * (next - at);
    for (int i = 0; i < n; i++) inside += (from[i] == next) - (to[i] == next);
    at = next;
  }
}

// The run delay (CLOCK_MONOTONIC nanoseconds) by which the scheduler's clock, read at its own
// moments, may differ from intervals timed here.
#define SCHED_CLOCK_SLACK_NS 1000000

// Waits until thread `tid` of this process is gone from /proc (pthread_join returns a moment
// before the kernel lets go of it): 10 s at most.
static void wait_gone(pid_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
  for (int i = 0; i < 10000 && access(path, F_OK) == 0; i++) {
    const struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
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
  for (int i = 0; i < 2; i++) wait_gone(c[i].tid);  // not to be counted live by the next test
  int64_t from[2], to[2], queues = 0;
  for (int i = 0; i < 2; i++) {
    const int64_t cpu = c[i].after.cpu_time - c[i].before.cpu_time;
    const int64_t queue = c[i].after.queue_time - c[i].before.queue_time;
    const int64_t wall = c[i].t1 - c[i].t0;
    printf(
        "pinned thread %d: wall %.0f ms, cpu %.0f ms, queue %.0f ms (%.0f%% of the wall time "
        "waiting, %.0f%% neither running nor waiting: the host's, or the interrupts')\n",
        i, (double)wall / 1e6, (double)cpu / 1e6, (double)queue / 1e6,
        100.0 * (double)queue / (double)wall, 100.0 * (double)(wall - cpu - queue) / (double)wall);
    // It spun that much CPU time between the two reads.
    assert_true(cpu >= c[i].cpu_ns);
    // Running and waiting to run are parts of the time between the two reads, apart.
    assert_true(cpu + queue <= c[i].outer1 - c[i].outer0 + SCHED_CLOCK_SLACK_NS);
    from[i] = c[i].t0;
    to[i] = c[i].t1;
    queues += queue;
  }
  // Sharing one CPU: while both spun, one of them waited, whatever else the CPU was doing.
  const int64_t waited = must_wait(from, to, 2);
  printf("pinned threads: both spinning for %.0f ms, queue time %.0f ms between them\n",
         (double)waited / 1e6, (double)queues / 1e6);
  assert_true(waited > 0);
  assert_true(queues >= waited - SCHED_CLOCK_SLACK_NS);
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
  int64_t t0, t1;               // CLOCK_MONOTONIC around its spin
  int64_t wall, cpu, delay;     // the independent measures, taken just before it returns
  int64_t delay_read_at;        // CLOCK_MONOTONIC just before it read `delay`
  pid_t tid;
} exiter_t;

static void* pinned_then_exits(void* arg) {
  exiter_t* e = arg;
  e->tid = (pid_t)syscall(SYS_gettid);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
  pthread_barrier_wait(e->measured);
  pthread_barrier_wait(e->start);
  e->t0 = wall_ns();
  const int64_t c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
  spin_ns(150000000);
  e->cpu = ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
  e->t1 = wall_ns();
  e->wall = e->t1 - e->t0;
  e->delay_read_at = wall_ns();
  e->delay = own_run_delay();  // since the thread began: its whole queue time but the exit's
  return NULL;
}

// The run delay of every thread of this process now (/proc/self/task/*/schedstat), for
// `tids`/`delays` (at most `max`); returns how many.
static int live_run_delays(pid_t* tids, int64_t* delays, int max) {
  DIR* dir = opendir("/proc/self/task");
  assert_non_null(dir);
  int n = 0;
  for (struct dirent* d; (d = readdir(dir)) != NULL && n < max;) {
    const pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
    if (tid <= 0) continue;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
    FILE* f = fopen(path, "r");
    if (f == NULL) continue;  // gone meanwhile
    unsigned long long run = 0, delay = 0;
    if (fscanf(f, "%llu %llu", &run, &delay) == 2) {
      tids[n] = tid;
      delays[n++] = (int64_t)delay;
    }
    fclose(f);
  }
  closedir(dir);
  return n;
}

// Four threads pinned to one CPU queue behind each other, then exit; no query runs on them
// after the main thread's first one. The process and each thread's handle still report their
// queue time up to the exit (the kernel's exit records): at least the run delay each read of
// itself just before returning, and no more than it could add until its join; the process's
// change no less than theirs and the main thread's, and no more than theirs and the change of
// every thread alive throughout.
static void queue_time_of_exited_threads_counts_to_their_exit(void** state) {
  (void)state;
  enum { kThreads = 4, kMaxLive = 64 };
  if (own_run_delay() < 0) skip_because("no /proc/thread-self/schedstat here");
  pid_t live_tids0[kMaxLive], live_tids1[kMaxLive];
  int64_t live0[kMaxLive], live1[kMaxLive];
  const int nlive0 = live_run_delays(live_tids0, live0, kMaxLive);
  const zx_info_task_runtime_t proc_before = runtime_of(zx_process_self());
  const int64_t main_delay0 = own_run_delay();
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
  int64_t joined_at[kThreads];
  for (int i = 0; i < kThreads; i++) {
    pthread_join(t[i], NULL);
    joined_at[i] = wall_ns();
  }
  pthread_barrier_destroy(&start);
  pthread_barrier_destroy(&measured);
  // Gone for good: a thread that has left its exit record but is still being released would be
  // counted twice by the kernel's sum over the process (its record, and as a live thread).
  for (int i = 0; i < kThreads; i++) wait_gone(e[i].tid);
  const int64_t main_delay = own_run_delay() - main_delay0;
  const zx_info_task_runtime_t proc_after = runtime_of(zx_process_self());
  const int nlive1 = live_run_delays(live_tids1, live1, kMaxLive);

  const bool totals = (proc_fields & ZXS_TASK_RUNTIME_TOTALS_AT_EXIT) != 0;
  int64_t sum = 0, final_sum = 0;
  int64_t from[kThreads], to[kThreads];
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
    sum += e[i].delay;
    final_sum += after.queue_time;
    from[i] = e[i].t0;
    to[i] = e[i].t1;
    // Live and measured while taskstats listens: its totals will be there at its exit.
    assert_int_equal((fields[i] & ZXS_TASK_RUNTIME_TOTALS_AT_EXIT) != 0, totals);
    assert_int_equal((after_fields & ZXS_TASK_RUNTIME_TOTALS_AT_EXIT) != 0, totals);
    if (totals) {
      // Its record also has the queue time after that read (the exit path): never less, and
      // no more than the time from that read to its join.
      assert_true(after.queue_time >= e[i].delay);
      assert_true(after.queue_time <=
                  e[i].delay + (joined_at[i] - e[i].delay_read_at) + SCHED_CLOCK_SLACK_NS);
      assert_true(after.cpu_time >= e[i].cpu);
    }
  }
  // They queued behind each other: while k of them spun, k - 1 waited.
  const int64_t waited = must_wait(from, to, kThreads);
  printf("exited threads: run delay %.1f ms between them, at least %.1f ms of it while they spun\n",
         (double)sum / 1e6, (double)waited / 1e6);
  assert_true(waited > 0);
  assert_true(sum >= waited - SCHED_CLOCK_SLACK_NS);

  const int64_t proc = proc_after.queue_time - proc_before.queue_time;
  // The change of the threads alive before and after (the main thread, the library's, a
  // sanitizer's); a thread that ended between the two reads other than ours (one of an earlier
  // test's, still on its way out) adds what it waited until its exit, unknown here.
  int64_t live_change = 0;
  bool vanished = false;
  for (int i = 0; i < nlive0; i++) {
    bool found = false;
    for (int j = 0; j < nlive1 && !found; j++) {
      if (live_tids1[j] == live_tids0[i]) {
        live_change += live1[j] - live0[i];
        found = true;
      }
    }
    vanished |= !found;
  }
  for (int j = 0; j < nlive1; j++) {
    bool found = false;
    for (int i = 0; i < nlive0 && !found; i++) found = live_tids0[i] == live_tids1[j];
    if (!found) live_change += live1[j];  // began meanwhile
  }
  printf(
      "process: queue_time %+.1f ms; the exited threads' %.1f ms at exit (%.1f ms read before "
      "returning) + main's %.1f ms; every live thread's %+.1f ms%s\n",
      (double)proc / 1e6, (double)final_sum / 1e6, (double)sum / 1e6, (double)main_delay / 1e6,
      (double)live_change / 1e6,
      totals ? "" : " (taskstats refused: exited threads stop at their last read)");
  if (!totals) skip_because("taskstats refused here (needs CAP_NET_ADMIN): totals at exit missing");
  // The exited threads' queue time to their exit and the main thread's meanwhile, at least.
  assert_true(proc >= final_sum + main_delay);
  // And no more than theirs and what the threads alive throughout waited.
  if (vanished) {
    printf("a thread ended between the two reads of every live thread: no upper bound here\n");
  } else {
    assert_true(proc <= final_sum + live_change);
  }
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
  // Each fault's time runs from the handler's start to its end, inside the loop: their sum is
  // within its wall time. (How it compares with the thread's kernel time is printed, not
  // asserted: a handler preempted on a loaded machine, or whose VM's host takes the CPU,
  // counts time that is neither, and the kernel time is sampled at ticks.)
  assert_true(pf <= (double)wall);
  // The handlers are a good part of the kernel time (the rest is exception entry and exit, and
  // the unmap): waiting inside them only adds to that.
  assert_true(pf >= 0.1 * (double)system);
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
  // Nothing else of this process takes its address-space lock (another process may read its
  // /proc files now and then, taking it briefly).
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
  // How much they overlap depends on the machine's load (2-60% of their wall time here, where
  // the uncontended thread waits ~0): that is printed; 60000 write-locked sections at once on
  // two CPUs meet at least once.
  printf("contended: %.1f ms of %.1f ms (%.1f%%); uncontended: %.3f%%\n", total / 1e6, wall / 1e6,
         100.0 * total / wall, 100.0 * alone_lock / (double)alone.wall);
  assert_true(total > 0);
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
  clockid_t clock;
  assert_int_equal(pthread_getcpuclockid(t, &clock), 0);
  const int64_t opening = ns_of(clock);
  const uint32_t fields = fields_of(thread);  // measured from here
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
    // Its CPU time until its exit, though no query ran on it after a: the time its events ran,
    // on top of its CPU clock read as they were opened. (Less what it ran between that read and
    // their start, within the call that opened them: a stale value would be a.cpu_time, ~50 ms
    // short.)
    printf(
        "another thread: cpu_time %.1f ms at exit, its own clock %.1f ms at its end; %.3f ms "
        "of its CPU time while its events were opened\n",
        (double)b.cpu_time / 1e6, (double)w.cpu_end / 1e6, (double)(before - opening) / 1e6);
    assert_true(b.cpu_time >= w.cpu_end - (before - opening));
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
