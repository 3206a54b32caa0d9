// Programs that block, ignore, reset or take over the library's signal.
//
//   stress_signal_hostile [case]    (no argument: every case)
//
// Each case runs in a fresh child process (the library picks its signal once per process). The
// library must never crash the program or kill it with its own signal; start and attach must
// report problems with a status (or count them in the stats, as the contract says for start).
//   block_all:     the sampled thread blocks every real-time signal from the start: stop and
//                  close work, the thread is never sampled, the late signal after unblocking
//                  changes nothing.
//   ignore_after:  SIG_IGN on the library's signal after its handler was installed (session
//                  stopped): start arms nothing (source_failures counted), attach while running
//                  fails cleanly; with the program's old disposition restored, sampling works.
//   ignore_while:  SIG_IGN while sampling runs: no crash; after restoring, a restart samples.
//   default_after: SIG_DFL after the handler was installed: start must not arm anything that
//                  would now kill the process.
//   replaced:      the program installs its own handler on the signal: start arms nothing and
//                  the program's handler receives nothing from the library.
//   all_taken:     every real-time signal has a handler of the program before the first start:
//                  start fails with a status, nothing else breaks.
//   env_owned:     ZXSAMPLER_SIGNAL names a signal the program owns: start fails with a status.
//   env_garbage:   ZXSAMPLER_SIGNAL is not a signal: start fails with a status.
// With perf-ring (which sends no signal, and installs no handler: only a signal source, when it
// first arms, does) the thread that blocks every signal is sampled, no disposition of the
// library's is found, and a program that ignores, resets or replaces the signal the library
// would take (the first free real-time one) is sampled as before; the init failures stay
// failures.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/wait.h>

#include "stress_util.h"

// Statuses start may return when it cannot sample at all (the header lists NOT_SUPPORTED and
// BAD_STATE; the Linux backend also says why with these).
static bool clean_refusal(zx_status_t s) {
  return s == ZX_ERR_NO_RESOURCES || s == ZX_ERR_BAD_STATE || s == ZX_ERR_ALREADY_BOUND ||
         s == ZX_ERR_NOT_SUPPORTED || s == ZX_ERR_INVALID_ARGS;
}

static void program_handler(int sig, siginfo_t* info, void* uc) {
  (void)sig;
  (void)info;
  (void)uc;
  static _Atomic int count;
  atomic_fetch_add(&count, 1);
}
static _Atomic uint64_t g_program_handler_calls;
static void counting_handler(int sig, siginfo_t* info, void* uc) {
  (void)sig;
  (void)info;
  (void)uc;
  atomic_fetch_add(&g_program_handler_calls, 1);
}

// A session sampling the calling thread for `cpu_ms`; returns samples written (and the stats).
static uint64_t sample_self(zx_handle_t iob, int64_t cpu_ms, zxs_sampler_stats_t* stats) {
  zx_status_t s = zxs_sampler_start(iob);
  if (s != ZX_OK) return UINT64_MAX;
  spin_cpu_ns(cpu_ms * 1000000, NULL);
  CHECK_OK(zxs_sampler_stop(iob));
  CHECK_OK(zxs_sampler_get_stats(iob, stats));
  return stats->samples_written;
}

typedef struct blocker {
  zx_handle_t iob;
  atomic_int phase;
  _Atomic zx_koid_t tid;
} blocker_t;

static void* blocking_worker(void* p) {
  blocker_t* b = p;
  sigset_t set;
  sigemptyset(&set);
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  atomic_store(&b->tid, (zx_koid_t)stress_tid());
  CHECK_OK(zxs_sampler_attach(b->iob, zxs_thread_self()));
  atomic_store(&b->phase, 1);
  spin_cpu_ns(100000000, NULL);
  atomic_store(&b->phase, 2);
  while (atomic_load(&b->phase) != 3) sleep_ms(1);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);  // late signals, if any, arrive now
  spin_cpu_ns(10000000, NULL);
  return NULL;
}

// The source under test sends no signal (perf-ring).
static bool g_signal_free;

static int case_block_all(void) {
  static blocker_t b;
  REQUIRE_OK(create_session(1000000, 1u << 20, &b.iob));
  CHECK_OK(zxs_sampler_start(b.iob));
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, blocking_worker, &b) == 0, "pthread_create");
  while (atomic_load(&b.phase) != 2) sleep_ms(1);
  CHECK_OK(zxs_sampler_stop(b.iob));
  uint64_t h1 = 0, h2 = 0;
  CHECK_OK(hash_regions(b.iob, &h1));
  atomic_store(&b.phase, 3);
  pthread_join(t, NULL);
  CHECK_OK(hash_regions(b.iob, &h2));
  CHECK(h1 == h2, "regions changed after stop");
  tid_set_t set;
  tid_set_init(&set);
  tid_set_add(&set, atomic_load(&b.tid));
  region_scan_t scan;
  CHECK_OK(scan_regions(b.iob, tid_set_check, &set, &scan));
  if (g_signal_free) {
    // The kernel copies the stack into a ring: the program's signal mask does not matter.
    CHECK(scan.records > 0, "perf-ring: no sample of a thread that blocked every signal");
  } else {
    CHECK(scan.records == 0, "%llu samples of a thread that blocked every real-time signal",
          (unsigned long long)scan.records);
  }
  CHECK_OK(zxs_handle_close(b.iob));
  return 0;
}

// The library's signal after a first start: its handler's signal with a signal source; with
// perf-ring, which must have installed none, the signal it would take (the first free real-time
// one, SIGRTMIN here).
static int library_signal_after_start(void) {
  const int sig = library_signal();
  if (g_signal_free) {
    CHECK(sig == 0, "perf-ring installed a handler on signal %d", sig);
    return SIGRTMIN;
  }
  REQUIRE(sig != 0, "no handler of libzxsampler found");
  return sig;
}

// Installs the handler (a first start), stops; returns the library's signal and its sigaction.
static int install_then_stop(zx_handle_t iob, struct sigaction* ours) {
  CHECK_OK(zxs_sampler_attach(iob, zxs_thread_self()));
  zxs_sampler_stats_t stats;
  const uint64_t n = sample_self(iob, 30, &stats);
  CHECK(n > 0 && n != UINT64_MAX, "no samples before the program touched the signal");
  const int sig = library_signal_after_start();
  sigaction(sig, NULL, ours);
  return sig;
}

typedef struct attach_job {
  zx_handle_t iob;
  zx_status_t status;
} attach_job_t;

static void* attach_and_exit(void* p) {
  attach_job_t* job = p;
  job->status = zxs_sampler_attach(job->iob, zxs_thread_self());
  return NULL;
}

// After the program changed the disposition: start must not arm, attach while running must
// fail, and the process must survive 100 ms of CPU; then the old disposition is restored and
// sampling must work again.
static void check_refused_then_restored(zx_handle_t iob, int sig, const struct sigaction* ours,
                                        const char* what) {
  zxs_sampler_stats_t before, after;
  CHECK_OK(zxs_sampler_get_stats(iob, &before));
  zx_status_t s = zxs_sampler_start(iob);
  CHECK(s == ZX_OK || clean_refusal(s), "%s: start: %s", what, zxs_status_string(s));
  if (s == ZX_OK && g_signal_free) {
    // perf-ring does not use the signal: what the program did with it changes nothing.
    CHECK_OK(zxs_sampler_stop(iob));
    CHECK_OK(zxs_sampler_get_stats(iob, &after));
    CHECK(after.source_failures == before.source_failures, "%s: perf-ring refused", what);
  } else if (s == ZX_OK) {
    attach_job_t job = {.iob = iob, .status = ZX_ERR_INTERNAL};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, attach_and_exit, &job) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(job.status == ZX_ERR_NO_RESOURCES || job.status == ZX_ERR_BAD_STATE,
          "%s: attach while running: %s (expected a refusal)", what, zxs_status_string(job.status));
    spin_cpu_ns(100000000, NULL);  // survives: nothing armed that the program cannot take
    CHECK_OK(zxs_sampler_stop(iob));
    CHECK_OK(zxs_sampler_get_stats(iob, &after));
    CHECK(after.samples_written == before.samples_written, "%s: %llu samples while refused", what,
          (unsigned long long)(after.samples_written - before.samples_written));
    CHECK(after.source_failures > before.source_failures,
          "%s: start said OK but counted no source failure", what);
  }
  sigaction(sig, ours, NULL);
  CHECK_OK(zxs_sampler_get_stats(iob, &before));
  const uint64_t n = sample_self(iob, 50, &after);
  CHECK(n != UINT64_MAX && n > before.samples_written,
        "%s: no samples after the program gave the signal back", what);
}

static int case_ignore_after(void) {
  zx_handle_t iob;
  REQUIRE_OK(create_session(1000000, 1u << 20, &iob));
  struct sigaction ours;
  const int sig = install_then_stop(iob, &ours);
  signal(sig, SIG_IGN);
  check_refused_then_restored(iob, sig, &ours, "SIG_IGN");
  CHECK_OK(zxs_handle_close(iob));
  return 0;
}

static int case_default_after(void) {
  zx_handle_t iob;
  REQUIRE_OK(create_session(1000000, 1u << 20, &iob));
  struct sigaction ours;
  const int sig = install_then_stop(iob, &ours);
  signal(sig, SIG_DFL);
  check_refused_then_restored(iob, sig, &ours, "SIG_DFL");
  CHECK_OK(zxs_handle_close(iob));
  return 0;
}

static int case_replaced(void) {
  zx_handle_t iob;
  REQUIRE_OK(create_session(1000000, 1u << 20, &iob));
  struct sigaction ours;
  const int sig = install_then_stop(iob, &ours);
  struct sigaction theirs;
  memset(&theirs, 0, sizeof(theirs));
  theirs.sa_sigaction = counting_handler;
  theirs.sa_flags = SA_SIGINFO;
  sigaction(sig, &theirs, NULL);
  check_refused_then_restored(iob, sig, &ours, "the program's handler");
  CHECK(atomic_load(&g_program_handler_calls) == 0,
        "the program's handler received %llu signals from the library",
        (unsigned long long)atomic_load(&g_program_handler_calls));
  CHECK_OK(zxs_handle_close(iob));
  return 0;
}

static int case_ignore_while(void) {
  zx_handle_t iob;
  REQUIRE_OK(create_session(1000000, 1u << 20, &iob));
  CHECK_OK(zxs_sampler_attach(iob, zxs_thread_self()));
  CHECK_OK(zxs_sampler_start(iob));
  spin_cpu_ns(20000000, NULL);
  const int sig = library_signal_after_start();
  struct sigaction ours;
  sigaction(sig, NULL, &ours);
  signal(sig, SIG_IGN);
  spin_cpu_ns(100000000, NULL);  // signals are discarded by the kernel now
  CHECK_OK(zxs_sampler_stop(iob));
  sigaction(sig, &ours, NULL);
  zxs_sampler_stats_t before, after;
  CHECK_OK(zxs_sampler_get_stats(iob, &before));
  const uint64_t n = sample_self(iob, 50, &after);
  CHECK(n != UINT64_MAX && n > before.samples_written, "no samples after restoring the handler");
  CHECK_OK(zxs_handle_close(iob));
  return 0;
}

static int case_all_taken(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = program_handler;
  sa.sa_flags = SA_SIGINFO;
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++) sigaction(s, &sa, NULL);
  zx_handle_t iob;
  REQUIRE_OK(create_session(1000000, 1u << 20, &iob));
  CHECK_OK(zxs_sampler_attach(iob, zxs_thread_self()));
  zx_status_t s = zxs_sampler_start(iob);
  CHECK(clean_refusal(s), "start with every real-time signal taken: %s", zxs_status_string(s));
  printf("  start with every real-time signal taken: %s\n", zxs_status_string(s));
  if (s == ZX_OK) CHECK_OK(zxs_sampler_stop(iob));
  CHECK(library_signal() == 0, "the library replaced a handler of the program");
  CHECK_OK(zxs_handle_close(iob));
  return 0;
}

static int case_env(const char* value, bool own_it) {
  setenv("ZXSAMPLER_SIGNAL", value, 1);
  if (own_it) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = program_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
  }
  zx_handle_t iob;
  REQUIRE_OK(create_session(1000000, 1u << 20, &iob));
  CHECK_OK(zxs_sampler_attach(iob, zxs_thread_self()));
  zx_status_t s = zxs_sampler_start(iob);
  CHECK(clean_refusal(s), "start with ZXSAMPLER_SIGNAL=%s: %s", value, zxs_status_string(s));
  printf("  start with ZXSAMPLER_SIGNAL=%s%s: %s\n", value, own_it ? " (the program's)" : "",
         zxs_status_string(s));
  if (s == ZX_OK) CHECK_OK(zxs_sampler_stop(iob));
  CHECK_OK(zxs_handle_close(iob));
  return 0;
}

static int case_env_owned(void) { return case_env("SIGUSR1", true); }
static int case_env_garbage(void) { return case_env("SIGNOTHING", false); }

typedef struct {
  const char* name;
  int (*fn)(void);
} case_t;

static const case_t kCases[] = {
    {"block_all", case_block_all},       {"ignore_after", case_ignore_after},
    {"ignore_while", case_ignore_while}, {"default_after", case_default_after},
    {"replaced", case_replaced},         {"all_taken", case_all_taken},
    {"env_owned", case_env_owned},       {"env_garbage", case_env_garbage},
};

int main(int argc, char** argv) {
  stress_require_sampler("stress_signal_hostile");
  const char* only = argc > 1 ? argv[1] : NULL;
  const char* sources[3];
  const int n = stress_sources(sources);
  for (int i = 0; i < n; i++) {
    if (!use_source(sources[i])) continue;
    g_signal_free = strcmp(sources[i], "perf-ring") == 0;
    for (size_t c = 0; c < sizeof(kCases) / sizeof(kCases[0]); c++) {
      if (only != NULL && strcmp(only, kCases[c].name) != 0) continue;
      printf("%s, %s\n", sources[i], kCases[c].name);
      fflush(stdout);
      fflush(stderr);
      pid_t pid = fork();
      REQUIRE(pid >= 0, "fork");
      if (pid == 0) {
        atomic_store(&g_failures, 0);  // the child's verdict is its own case's, not the parent's
        alarm(30);
        kCases[c].fn();
        fflush(stdout);
        _exit(atomic_load(&g_failures) != 0 ? 1 : 0);
      }
      int status;
      REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
      if (WIFSIGNALED(status)) {
        CHECK(false, "%s, %s: the program died of signal %d (%s)", sources[i], kCases[c].name,
              WTERMSIG(status), strsignal(WTERMSIG(status)));
      } else {
        CHECK(WEXITSTATUS(status) == 0, "%s, %s: checks failed (see above)", sources[i],
              kCases[c].name);
      }
    }
  }
  return stress_result("stress_signal_hostile");
}
