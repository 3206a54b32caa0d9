// execve() from a sampled process.
//
//   stress_exec [iterations=20]
//   stress_exec --helper     (what the sampled children exec: checks its own state)
//
// Each child creates a session, attaches its main thread and a busy worker, starts, spins a
// little and then execs, while sampling runs:
//   main:   the main thread (sampled) execs the helper;
//   worker: the worker thread (sampled) execs the helper while the main thread is sampled too;
//   true:   the main thread execs /bin/true.
// The exec'd program must start and exit 0. It must not die of a signal (a sampling signal
// still pending across exec meets the default action, which for a real-time signal kills), and
// the helper checks that nothing of the library survived the exec: no signal pending or blocked,
// no memfd or perf event descriptor, no POSIX timer; then it unblocks everything and spins, so a
// pending signal would be delivered (and kill it) there.
// "blocked" (informational, not counted as a failure): the sampled thread blocks the library's
// signal until one is pending, then execs; the pending signal is inherited with the mask.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/wait.h>

#include "stress_util.h"

extern char** environ;

enum { HELPER_PENDING = 1, HELPER_BLOCKED = 2, HELPER_FDS = 4, HELPER_TIMERS = 8 };

static int helper(void) {
  int result = 0;
  sigset_t pending, blocked;
  sigpending(&pending);
  sigprocmask(SIG_BLOCK, NULL, &blocked);
  for (int s = 1; s <= SIGRTMAX; s++) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    if (sigismember(&pending, s)) {
      fprintf(stderr, "helper: signal %d pending after exec\n", s);
      result |= HELPER_PENDING;
    }
    if (sigismember(&blocked, s)) {
      fprintf(stderr, "helper: signal %d blocked after exec\n", s);
      result |= HELPER_BLOCKED;
    }
  }
  if (count_library_fds() != 0) {
    fprintf(stderr, "helper: %d memfd/perf descriptors survived exec\n", count_library_fds());
    result |= HELPER_FDS;
  }
  if (count_timers() > 0) {
    fprintf(stderr, "helper: %d POSIX timers survived exec\n", count_timers());
    result |= HELPER_TIMERS;
  }
  const char* marker = getenv("ZXS_STRESS_EXEC_MARKER");
  if (marker == NULL || strcmp(marker, "1") != 0) {
    fprintf(stderr, "helper: environment not passed\n");
    result |= 16;
  }
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_UNBLOCK, &all, NULL);  // a pending signal is delivered here
  spin_cpu_ns(5000000, NULL);
  return result;
}

typedef enum { EXEC_MAIN, EXEC_WORKER, EXEC_TRUE, EXEC_BLOCKED } variant_t;
static const char* const kVariants[] = {"main", "worker", "true", "blocked"};

static char g_self[4096];
static zx_handle_t g_iob;
static atomic_bool g_worker_go;
static variant_t g_variant;
static int64_t g_spin_ns;

static void do_exec(void) {
  char* const helper_argv[] = {g_self, (char*)"--helper", NULL};
  char* const true_argv[] = {(char*)"/bin/true", NULL};
  if (g_variant == EXEC_TRUE) {
    execve("/bin/true", true_argv, environ);
  } else {
    execve(g_self, helper_argv, environ);
  }
  fprintf(stderr, "execve: %s\n", strerror(errno));
  _exit(100);
}

static void* worker_main(void* arg) {
  (void)arg;
  zx_status_t s = zxs_sampler_attach(g_iob, zxs_thread_self());
  if (s != ZX_OK) {
    fprintf(stderr, "worker attach: %s\n", zxs_status_string(s));
    _exit(101);
  }
  if (g_variant == EXEC_WORKER) {
    spin_cpu_ns(g_spin_ns, NULL);
    do_exec();
  }
  while (!atomic_load(&g_worker_go)) stress_busy(20000);
  return NULL;
}

// The sampled child: never returns.
static void child(void) {
  if (create_session(100000, 1u << 20, &g_iob) != ZX_OK) _exit(102);
  if (zxs_sampler_attach(g_iob, zxs_thread_self()) != ZX_OK) _exit(103);
  if (zxs_sampler_start(g_iob) != ZX_OK) _exit(104);
  pthread_t t;
  if (pthread_create(&t, NULL, worker_main, NULL) != 0) _exit(105);
  if (g_variant == EXEC_WORKER) {
    for (;;) stress_busy(20000);  // sampled until the worker's exec ends this thread
  }
  if (g_variant == EXEC_BLOCKED) {
    const int sig = library_signal();
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    const int64_t limit = thread_cpu_ns() + 2000000000LL;
    for (;;) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, sig) || thread_cpu_ns() > limit) break;
      stress_busy(20000);
    }
  } else {
    spin_cpu_ns(g_spin_ns, NULL);
  }
  do_exec();
}

static void run(const char* source, variant_t variant, int iterations) {
  int ok = 0, killed = 0, helper_failed = 0, other = 0;
  int by_signal[SIGRTMAX + 1];
  memset(by_signal, 0, sizeof(by_signal));
  uint32_t rnd = 12345;
  for (int i = 0; i < iterations; i++) {
    rnd = rnd * 1103515245u + 12345u;
    g_variant = variant;
    g_spin_ns = (int64_t)((rnd >> 8) % 10000) * 1000;  // 0..10 ms of CPU before the exec
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork");
    if (pid == 0) {
      alarm(20);
      child();
    }
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
    if (WIFSIGNALED(status)) {
      killed++;
      if (WTERMSIG(status) <= SIGRTMAX) by_signal[WTERMSIG(status)]++;
    } else if (WEXITSTATUS(status) == 0) {
      ok++;
    } else if (WEXITSTATUS(status) < 100) {
      helper_failed++;
    } else {
      other++;
      fprintf(stderr, "child set-up failed with %d\n", WEXITSTATUS(status));
    }
  }
  printf(
      "%s, exec from %s: %d runs: %d exited 0, %d killed by a signal, %d helper checks "
      "failed, %d set-up failures\n",
      source, kVariants[variant], iterations, ok, killed, helper_failed, other);
  for (int s = 1; s <= SIGRTMAX; s++) {
    if (by_signal[s] == 0) continue;
    printf("  %d killed by signal %d (%s%s)\n", by_signal[s], s, strsignal(s),
           s >= SIGRTMIN ? ", a real-time signal: a sampling signal pending across exec" : "");
  }
  if (variant == EXEC_BLOCKED) {
    printf("  (informational: the program itself blocked the signal before exec)\n");
    return;
  }
  CHECK(killed == 0,
        "%s, exec from %s: %d of %d exec'd programs died of a signal instead of exiting 0", source,
        kVariants[variant], killed, iterations);
  CHECK(helper_failed == 0, "%s, exec from %s: %d helpers found library state after exec", source,
        kVariants[variant], helper_failed);
  CHECK(other == 0, "%s, exec from %s: %d children could not set up", source, kVariants[variant],
        other);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--helper") == 0) return helper();
  stress_require_sampler("stress_exec");
  const int iterations = argc > 1 ? atoi(argv[1]) : (under_valgrind() ? 4 : 20);
  REQUIRE(iterations > 0, "usage: %s [iterations]", argv[0]);
  ssize_t len = readlink("/proc/self/exe", g_self, sizeof(g_self) - 1);
  REQUIRE(len > 0, "readlink /proc/self/exe");
  g_self[len] = '\0';
  setenv("ZXS_STRESS_EXEC_MARKER", "1", 1);
  const char* sources[3];
  const int n = stress_sources(sources);
  for (int i = 0; i < n; i++) {
    if (!use_source(sources[i])) continue;
    for (int v = EXEC_MAIN; v <= EXEC_BLOCKED; v++) run(sources[i], (variant_t)v, iterations);
  }
  return stress_result("stress_exec");
}
