// fork() in a sampled process.
//
//   stress_fork [phase]     (no argument: every phase)
//
// The parent samples its main thread and a worker; the main thread forks. Children report
// through their exit status (and lines on stderr); each runs under a limit of its CPU time and
// one of wall time (a hang spins or sleeps) so that a hang shows as SIGALRM instead of a stuck
// test.
//   1 quiet:    the child only spins (no library calls) and exits 0: it must not crash, and
//               every record in the parent's regions names the parent.
//   2 own:      the parent stops and hashes its regions; the child creates its own session
//               (expected: ZX_OK; it is another process), attaches itself with zxs_thread_self()
//               and zxs_thread_get(pthread_self()), samples itself and finds only its own
//               records; the parent's regions must be unchanged afterwards.
//   3 inherited: the parent stops and hashes; the child attaches itself to the handle it
//               inherited and starts it: whatever the statuses, the parent's regions must not
//               change (they are shared memory: writes there would corrupt the parent's data).
//   4 close:    while the parent keeps sampling a busy worker, the child closes the inherited
//               handle (as a child that wants its own session must): the parent's worker must go
//               on being sampled.
//   5 busy:     the parent samples two threads at a short period (5a) and, in 5b, a third
//               keeps calling the library; the main thread forks repeatedly; each child closes
//               the inherited handle and creates a session of its own: no hang (a lock or a
//               write count copied mid-operation), no crash.
//
// LIBRARY BUGS these phases find today (the library has no pthread_atfork handling; see the
// messages marked LIBRARY BUG):
//   2: the child's create says ALREADY_EXISTS (it inherited the parent's session object);
//      zxs_thread_self() in the child returns the parent's cached thread handle (attach:
//      BAD_STATE); zxs_process_self()'s koid is the parent's pid.
//   3: attach + start on the inherited handle succeed and the child's samples land in the
//      parent's regions (MAP_SHARED memfd mappings), unaccounted for in the parent's reservations.
//   4: the child's close runs perf_close() on the inherited perf fds, whose
//      PERF_EVENT_IOC_DISABLE disables the parent's events (same open file description): the
//      parent's threads are not sampled any more.
//   5b: a thread of the parent holding the handle table's (or the session's) mutex at fork time
//      leaves it locked in the child: the child's close deadlocks.
//   5a (rare; frequent under TSan): a thread of the parent inside a sample write at fork time
//      leaves the per-CPU writer count raised in the child: the child's close spins forever in
//      zxs_percpu_shutdown().
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "stress_util.h"

// A child's limits: of its CPU time (a child spins 300 ms at most: one that spins for this long
// is stuck, however loaded the machine), and of wall time (one stuck asleep on a lock uses no
// CPU; the others, a few hundred ms of CPU each, take this long only at a share of the CPU no
// machine running the suite leaves them).
#define CHILD_CPU_LIMIT_S 5
#define CHILD_WALL_LIMIT_S 60

static atomic_bool g_stop_workers;

static int64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static _Atomic zx_handle_t g_parent_iob;
static tid_set_t g_set;

static void* busy_worker(void* arg) {
  (void)arg;
  tid_set_add(&g_set, (zx_koid_t)stress_tid());
  zx_status_t s = zxs_sampler_attach(atomic_load(&g_parent_iob), zxs_thread_self());
  CHECK(s == ZX_OK, "worker attach: %s", zxs_status_string(s));
  while (!atomic_load(&g_stop_workers)) stress_busy(20000);
  return NULL;
}

// Calls the library all the time (takes its locks), without being sampled.
static void* library_hammer(void* arg) {
  (void)arg;
  while (!atomic_load(&g_stop_workers)) {
    zxs_sampler_stats_t stats;
    zxs_sampler_get_stats(atomic_load(&g_parent_iob), &stats);
    zx_handle_t dup;
    if (zxs_handle_duplicate(atomic_load(&g_parent_iob), ZX_RIGHT_INSPECT, &dup) == ZX_OK) {
      zxs_handle_close(dup);
    }
  }
  return NULL;
}

typedef int (*child_fn)(void* arg);

// Forks; the child runs fn under its limits (SIGALRM) and _exit()s with its result. Returns the
// wait status.
static int run_child(child_fn fn, void* arg) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
    timer_t cpu_limit;
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &cpu_limit) == 0) {
      const struct itimerspec limit = {.it_value = {.tv_sec = CHILD_CPU_LIMIT_S}};
      timer_settime(cpu_limit, 0, &limit, NULL);
    }
    alarm(CHILD_WALL_LIMIT_S);
    _exit(fn(arg));
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
  return status;
}

static void check_child(int status, const char* what) {
  if (WIFSIGNALED(status)) {
    CHECK(
        false, "%s: the child died of signal %d (%s)%s", what, WTERMSIG(status),
        strsignal(WTERMSIG(status)),
        WTERMSIG(status) == SIGALRM ? ": it hung (a lock or write count inherited mid-use?)" : "");
  } else {
    CHECK(WEXITSTATUS(status) == 0, "%s: the child exited with %d (its checks failed; see above)",
          what, WEXITSTATUS(status));
  }
}

// Children report failures on stderr and count them in their exit status.
static int g_child_failures;
#define CHILD_CHECK(cond, ...)                                                                   \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      fprintf(stderr, "FAIL (child %d) %s:%d: (%s) ", (int)getpid(), __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                              \
      fputc('\n', stderr);                                                                       \
      g_child_failures++;                                                                        \
    }                                                                                            \
  } while (0)

static int child_quiet(void* arg) {
  (void)arg;
  spin_cpu_ns(200000000, NULL);
  return 0;
}

// The child's own session: create (falling back to closing the inherited handle first, which
// is reported), attach itself both ways, sample, read its own records.
static int child_own(void* arg) {
  const zx_handle_t inherited = (zx_handle_t)(uintptr_t)arg;
  spin_cpu_ns(50000000, NULL);
  zx_handle_t iob;
  zx_status_t s = create_session(1000000, 1u << 20, &iob);
  CHILD_CHECK(s == ZX_OK,
              "LIBRARY BUG: create in the child: %s (the child inherited the parent's session; "
              "it cannot sample itself without closing a handle it may not know about)",
              zxs_status_string(s));
  if (s == ZX_ERR_ALREADY_EXISTS) {
    zxs_handle_close(inherited);
    s = create_session(1000000, 1u << 20, &iob);
    CHILD_CHECK(s == ZX_OK, "create after closing the inherited handle: %s", zxs_status_string(s));
  }
  if (s != ZX_OK) return 1;
  s = zxs_sampler_attach(iob, zxs_thread_self());
  CHILD_CHECK(s == ZX_OK,
              "LIBRARY BUG: attach(zxs_thread_self()) in the child: %s (the cached handle names "
              "the parent's thread)",
              zxs_status_string(s));
  zx_handle_t self;
  s = zxs_thread_get(pthread_self(), &self);
  CHILD_CHECK(s == ZX_OK, "zxs_thread_get(pthread_self()): %s", zxs_status_string(s));
  if (s == ZX_OK) {
    zx_info_handle_basic_t info;
    zxs_object_get_info(self, ZX_INFO_HANDLE_BASIC, &info, sizeof(info), NULL, NULL);
    CHILD_CHECK(info.koid == (zx_koid_t)stress_tid(), "thread koid %llu, tid %d",
                (unsigned long long)info.koid, (int)stress_tid());
    s = zxs_sampler_attach(iob, self);
    CHILD_CHECK(s == ZX_OK, "attach(zxs_thread_get(self)) in the child: %s", zxs_status_string(s));
    zxs_handle_close(self);
  }
  zx_info_handle_basic_t pinfo;
  zxs_object_get_info(zxs_process_self(), ZX_INFO_HANDLE_BASIC, &pinfo, sizeof(pinfo), NULL, NULL);
  CHILD_CHECK(pinfo.koid == (zx_koid_t)getpid(),
              "LIBRARY BUG: zxs_process_self() koid %llu in the child, pid %d (the parent's pid)",
              (unsigned long long)pinfo.koid, (int)getpid());
  CHILD_CHECK(zxs_sampler_start(iob) == ZX_OK, "start in the child");
  spin_cpu_ns(100000000, NULL);
  CHILD_CHECK(zxs_sampler_stop(iob) == ZX_OK, "stop in the child");
  zxs_sampler_stats_t stats;
  zxs_sampler_get_stats(iob, &stats);
  tid_set_t set;
  tid_set_init(&set);
  tid_set_add(&set, (zx_koid_t)stress_tid());
  region_scan_t scan;
  CHILD_CHECK(scan_regions(iob, tid_set_check, &set, &scan) == ZX_OK, "scan");
  CHILD_CHECK(scan.records > 0 && scan.records == stats.samples_written && scan.bad == 0,
              "child's own session: %llu records, %llu written, %llu not its own",
              (unsigned long long)scan.records, (unsigned long long)stats.samples_written,
              (unsigned long long)scan.bad);
  zxs_handle_close(iob);
  return g_child_failures;
}

// Uses the inherited handle as if it were the child's.
static int child_inherited(void* arg) {
  const zx_handle_t inherited = (zx_handle_t)(uintptr_t)arg;
  zx_handle_t self;
  zx_status_t s = zxs_thread_get(pthread_self(), &self);
  if (s == ZX_OK) {
    s = zxs_sampler_attach(inherited, self);
    fprintf(stderr, "  (child: attach to the inherited session: %s", zxs_status_string(s));
    s = zxs_sampler_start(inherited);
    fprintf(stderr, ", start: %s)\n", zxs_status_string(s));
    zxs_handle_close(self);
  }
  spin_cpu_ns(200000000, NULL);
  zxs_sampler_stop(inherited);
  return 0;
}

static int child_close(void* arg) {
  const zx_handle_t inherited = (zx_handle_t)(uintptr_t)arg;
  zx_status_t s = zxs_handle_close(inherited);
  CHILD_CHECK(s == ZX_OK, "close of the inherited handle: %s", zxs_status_string(s));
  return g_child_failures;
}

static int child_close_and_create(void* arg) {
  const zx_handle_t inherited = (zx_handle_t)(uintptr_t)arg;
  zxs_handle_close(inherited);
  zx_handle_t iob;
  zx_status_t s = create_session(1000000, 1u << 16, &iob);
  CHILD_CHECK(s == ZX_OK, "create after closing the inherited handle: %s", zxs_status_string(s));
  if (s == ZX_OK) {
    // zxs_thread_get: zxs_thread_self() in a child is phase 2's business.
    zx_handle_t self = ZX_HANDLE_INVALID;
    CHILD_CHECK(zxs_thread_get(pthread_self(), &self) == ZX_OK, "thread_get");
    CHILD_CHECK(zxs_sampler_attach(iob, self) == ZX_OK, "attach");
    zxs_handle_close(self);
    CHILD_CHECK(zxs_sampler_start(iob) == ZX_OK, "start");
    spin_cpu_ns(2000000, NULL);
    CHILD_CHECK(zxs_sampler_stop(iob) == ZX_OK, "stop");
    zxs_handle_close(iob);
  }
  return g_child_failures;
}

// The parent's session: main thread and `workers` busy threads attached, running.
static zx_handle_t parent_start(zx_duration_t period, int workers, pthread_t* threads) {
  zx_handle_t iob;
  REQUIRE_OK(create_session(period, 4u << 20, &iob));
  atomic_store(&g_parent_iob, iob);
  tid_set_init(&g_set);
  tid_set_add(&g_set, (zx_koid_t)stress_tid());
  REQUIRE_OK(zxs_sampler_attach(iob, zxs_thread_self()));
  REQUIRE_OK(zxs_sampler_start(iob));
  atomic_store(&g_stop_workers, false);
  for (int i = 0; i < workers; i++) {
    REQUIRE(pthread_create(&threads[i], NULL, busy_worker, NULL) == 0, "pthread_create");
  }
  spin_cpu_ns(20000000, NULL);
  return iob;
}

static void parent_join(int workers, pthread_t* threads) {
  atomic_store(&g_stop_workers, true);
  for (int i = 0; i < workers; i++) pthread_join(threads[i], NULL);
}

static void check_parent_records(zx_handle_t iob, const char* what) {
  zxs_sampler_stats_t stats;
  CHECK_OK(zxs_sampler_get_stats(iob, &stats));
  region_scan_t scan;
  CHECK_OK(scan_regions(iob, tid_set_check, &g_set, &scan));
  CHECK(!scan.malformed, "%s: malformed region: %s", what, scan.error);
  CHECK(scan.bad == 0, "%s: %llu records in the parent's regions are not the parent's", what,
        (unsigned long long)scan.bad);
  CHECK(scan.records == stats.samples_written, "%s: records %llu != samples written %llu", what,
        (unsigned long long)scan.records, (unsigned long long)stats.samples_written);
}

static void phase_quiet(void) {
  printf("phase 1: a child that only spins\n");
  pthread_t t[1];
  zx_handle_t iob = parent_start(1000000, 1, t);
  for (int i = 0; i < 5; i++) check_child(run_child(child_quiet, NULL), "quiet child");
  parent_join(1, t);
  CHECK_OK(zxs_sampler_stop(iob));
  check_parent_records(iob, "phase 1");
  CHECK_OK(zxs_handle_close(iob));
}

static void phase_hashed(child_fn fn, const char* what) {
  pthread_t t[1];
  zx_handle_t iob = parent_start(1000000, 1, t);
  parent_join(1, t);
  CHECK_OK(zxs_sampler_stop(iob));
  uint64_t h1 = 0, h2 = 0;
  CHECK_OK(hash_regions(iob, &h1));
  check_child(run_child(fn, (void*)(uintptr_t)iob), what);
  CHECK_OK(hash_regions(iob, &h2));
  CHECK(h1 == h2,
        "LIBRARY BUG: %s: the parent's regions changed while the child ran (the "
        "child wrote into the parent's shared memory)",
        what);
  check_parent_records(iob, what);
  CHECK_OK(zxs_handle_close(iob));
}

static void phase_close(void) {
  printf("phase 4: the child closes the inherited handle; the parent keeps sampling\n");
  pthread_t t[1];
  zx_handle_t iob;
  // Sample, fork a closing child, keep sampling, count the samples that came after the child
  // exited: the main thread sleeps, the worker spins all along.
  iob = parent_start(1000000, 1, t);
  clockid_t worker_clock;
  REQUIRE(pthread_getcpuclockid(t[0], &worker_clock) == 0, "pthread_getcpuclockid");
  sleep_ms(100);
  zxs_sampler_stats_t s1, s2;
  CHECK_OK(zxs_sampler_get_stats(iob, &s1));
  check_child(run_child(child_close, (void*)(uintptr_t)iob), "closing child");
  CHECK_OK(zxs_sampler_get_stats(iob, &s2));
  const uint64_t at_exit = s2.samples_written;
  // Samples of the worker's CPU time after the child's exit, not of wall time: on a loaded
  // machine it is on a CPU for a fraction of it. Counts come as perf-ring's collector drains,
  // so the first ten may lag; 2 s of its CPU time is 2000 periods (500 at a 4 ms tick).
  const int64_t cpu0 = clock_ns(worker_clock), wall0 = clock_ns(CLOCK_MONOTONIC);
  do {
    sleep_ms(10);
    CHECK_OK(zxs_sampler_get_stats(iob, &s2));
  } while (s2.samples_written < at_exit + 10 && clock_ns(worker_clock) - cpu0 < 2000000000 &&
           clock_ns(CLOCK_MONOTONIC) - wall0 < 60000000000);
  const int64_t ran = clock_ns(worker_clock) - cpu0;
  printf(
      "  samples before the fork %llu, when the child had exited %llu, %llu after the worker "
      "ran %lld ms more\n",
      (unsigned long long)s1.samples_written, (unsigned long long)at_exit,
      (unsigned long long)s2.samples_written, (long long)(ran / 1000000));
  CHECK(s2.samples_written >= at_exit + 10,
        "LIBRARY BUG: the parent's busy worker got %llu samples in the %lld ms of its CPU time "
        "after a child closed its copy of the session handle (expected hundreds): the child's "
        "close disabled the parent's sources",
        (unsigned long long)(s2.samples_written - at_exit), (long long)(ran / 1000000));
  parent_join(1, t);
  CHECK_OK(zxs_sampler_stop(iob));
  check_parent_records(iob, "phase 4");
  CHECK_OK(zxs_handle_close(iob));
}

// Forks repeatedly while threads are being sampled (and, with `hammer`, while another thread
// keeps calling the library); stops at the first child that hangs.
static void phase_busy(int forks, bool hammer) {
  printf("phase 5%s: %d forks while two threads are sampled at a short period%s\n",
         hammer ? "b" : "a", forks, hammer ? " and a third keeps calling the library" : "");
  pthread_t t[3];
  zx_handle_t iob = parent_start(100000, 2, t);
  if (hammer) REQUIRE(pthread_create(&t[2], NULL, library_hammer, NULL) == 0, "pthread_create");
  int hung = 0, failed = 0, i = 0;
  for (; i < forks && hung == 0; i++) {
    const int status = run_child(child_close_and_create, (void*)(uintptr_t)iob);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
      hung++;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed++;
      check_child(status, "busy fork");
    }
  }
  CHECK(hung == 0,
        "LIBRARY BUG: phase 5%s: child %d of %d hung in close/create (killed by SIGALRM after "
        "%d s of CPU time or %d s): the child inherited a lock or a write count that a thread of "
        "the parent held at fork time",
        hammer ? "b" : "a", i, forks, CHILD_CPU_LIMIT_S, CHILD_WALL_LIMIT_S);
  printf("  %d forks: %d hung, %d failed otherwise\n", i, hung, failed);
  parent_join(hammer ? 3 : 2, t);
  CHECK_OK(zxs_sampler_stop(iob));
  check_parent_records(iob, "phase 5");
  CHECK_OK(zxs_handle_close(iob));
}

int main(int argc, char** argv) {
  stress_require_sampler("stress_fork");
  const int only = argc > 1 ? atoi(argv[1]) : 0;
  const int busy_forks = argc > 2 ? atoi(argv[2]) : (under_valgrind() ? 5 : 200);
  const char* sources[3];
  const int n = stress_sources(sources);
  for (int i = 0; i < n; i++) {
    if (!use_source(sources[i])) continue;
    printf("source %s\n", sources[i]);
    warm_up_library();  // once-per-process set-up is not a leak
    const leak_probe_t before = leak_probe();
    if (only == 0 || only == 1) phase_quiet();
    if (only == 0 || only == 2) {
      printf("phase 2: the child samples itself in a session of its own\n");
      phase_hashed(child_own, "phase 2");
    }
    if (only == 0 || only == 3) {
      printf("phase 3: the child uses the handle it inherited\n");
      phase_hashed(child_inherited, "phase 3");
    }
    if (only == 0 || only == 4) phase_close();
    if (only == 0 || only == 5) {
      phase_busy(busy_forks, false);
      phase_busy(under_valgrind() ? 5 : 40, true);
    }
    CHECK_NO_LEAK(before, "the parent, after every phase");
  }
  return stress_result("stress_fork");
}
