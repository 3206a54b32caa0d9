// libzxsampler-preload.so: profiles an unmodified program (zxsampler record preloads it).
//
// Configured by the environment that `zxsampler record` sets:
//   ZXSAMPLER_OUTPUT       trace file to write (nothing happens without it)
//   ZXSAMPLER_PERIOD_NS    sampling period (default 1 ms)
//   ZXSAMPLER_BUFFER_SIZE  bytes per CPU (default 16 MiB)
//   ZXSAMPLER_DUMP_SIGNAL  a signal number that writes the profile and ends sampling
//   ZXSAMPLER_CONTROL_FD   a socket whose other end `zxsampler record --in-process` holds: a
//                          byte 'w' on it writes the profile and ends sampling, answered 'w'
//                          once the file is written (how zxsampler gets the profile before it
//                          passes a signal on to the program: no handler in the program)
// The main thread is attached at load time and every thread the program creates with
// pthread_create is attached as it starts. The profile is written at exit and, only when
// ZXSAMPLER_DUMP_SIGNAL asks for it, on that signal. No handler is installed for any other
// signal: the program sees the dispositions it set and nothing else (Python, for one, installs
// its SIGINT handler only over SIG_DFL), and a child it forks inherits no handler of ours. A
// program killed by a signal therefore writes no profile (README: "What a profiled program can
// observe").
//   ZXSAMPLER_PID          the process `zxsampler record` started: that process is profiled
//                          through its execs (a wrapper script that execs the real program: the
//                          last image writes the file), and the variables stay in its
//                          environment for them; any other process that inherits them (one the
//                          profiled process starts) removes them and profiles nothing.
// Without ZXSAMPLER_PID (the variables set by hand) the process removes them at once, so that
// no program it starts or execs is profiled into the same file.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zxsampler/profiler.h>

#include "thread_hook.h"

#define MAX_PATH 4096

static char g_output[MAX_PATH];
static atomic_bool g_running;
static atomic_bool g_written;
static pid_t g_pid;  // the profiled process
static pthread_mutex_t g_write_lock = PTHREAD_MUTEX_INITIALIZER;

// Writes the profile once, whoever asks first (exit, a signal); only in the profiled process
// (a child it forks inherits the atexit call, not the session).
static void write_profile(void) {
  if (getpid() != g_pid) return;
  pthread_mutex_lock(&g_write_lock);
  if (!atomic_exchange(&g_written, true) && atomic_load(&g_running)) {
    atomic_store(&g_running, false);
    zx_status_t status = zxs_profiler_stop(g_output, ZXS_FORMAT_FXT);
    if (status != ZX_OK && status != ZX_ERR_BAD_STATE) {  // BAD_STATE: written on request
      fprintf(stderr, "zxsampler: writing %s failed: %s\n", g_output, zxs_status_string(status));
    }
  }
  pthread_mutex_unlock(&g_write_lock);
}

// Every thread the program creates is attached as it starts (thread_hook.h interposes
// pthread_create).
static void attach_started_thread(void) {
  if (atomic_load(&g_running)) (void)zxs_profiler_attach_current_thread();
}

// The dump signal is turned into a request on a socket the library serves (zxs_profiler_serve:
// a thread of the library's, every signal blocked, writes the profile), since a handler cannot
// write it.
static int g_dump_socket[2] = {-1, -1};

static void on_dump_signal(int sig) {
  (void)sig;
  int saved = errno;
  ssize_t n = write(g_dump_socket[1], "w", 1);
  (void)n;
  errno = saved;
}

// Catches the dump signal, which whoever set ZXSAMPLER_DUMP_SIGNAL gave to the library.
static void catch_dump_signal(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_dump_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

// A connected pair, close-on-exec (macOS has no SOCK_CLOEXEC; no other thread runs yet).
static bool socket_pair_cloexec(int fds[2]) {
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return false;
  (void)fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  (void)fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  return true;
}

// ZXSAMPLER_CONTROL_FD's descriptor when it is a socket, else -1. It stays open across the
// profiled process's execs (the last image answers).
static int control_socket(void) {
  const char* v = getenv("ZXSAMPLER_CONTROL_FD");
  if (v == NULL || *v == '\0') return -1;
  char* end;
  const long fd = strtol(v, &end, 10);
  struct stat st;
  if (*end != '\0' || fd < 0 || fd > INT_MAX || fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return -1;
  }
  return (int)fd;
}

static long long env_number(const char* name, long long fallback) {
  const char* v = getenv(name);
  if (v == NULL || *v == '\0') return fallback;
  char* end;
  long long n = strtoll(v, &end, 10);
  return *end == '\0' && n > 0 ? n : fallback;
}

// Removes what asks for profiling from the environment, for the programs this one starts.
static void forget_environment(void) {
  static const char* const kNames[] = {
      "ZXSAMPLER_OUTPUT",      "ZXSAMPLER_PID", "ZXSAMPLER_DUMP_SIGNAL", "ZXSAMPLER_PERIOD_NS",
      "ZXSAMPLER_BUFFER_SIZE", "LD_PRELOAD",    "DYLD_INSERT_LIBRARIES", "ZXSAMPLER_CONTROL_FD"};
  for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); i++) unsetenv(kNames[i]);
}

__attribute__((constructor)) static void preload_start(void) {
  const char* output = getenv("ZXSAMPLER_OUTPUT");
  if (output == NULL || *output == '\0' || strlen(output) >= sizeof(g_output)) return;
  const long long owner = env_number("ZXSAMPLER_PID", 0);
  const int control = control_socket();
  if (owner != 0 && owner != (long long)getpid()) {
    if (control >= 0) close(control);  // zxsampler's socket is the profiled process's
    forget_environment();              // started by the profiled process: not profiled
    return;
  }
  snprintf(g_output, sizeof(g_output), "%s", output);
  g_pid = getpid();
  zxs_profiler_options_t options = {.period = (zx_duration_t)env_number("ZXSAMPLER_PERIOD_NS", 0),
                                    .buffer_size = (size_t)env_number("ZXSAMPLER_BUFFER_SIZE", 0)};
  int dump_signal = (int)env_number("ZXSAMPLER_DUMP_SIGNAL", 0);
  if (owner == 0) forget_environment();

  zx_status_t status = zxs_profiler_start(&options);
  if (status != ZX_OK) {
    fprintf(stderr, "zxsampler: cannot start profiling: %s\n", zxs_status_string(status));
    return;
  }
  atomic_store(&g_running, true);
  atexit(write_profile);

  (void)zxs_thread_start_hook_add(attach_started_thread);  // the first of its hooks: no failure
  if (control >= 0) (void)zxs_profiler_serve(control, g_output, ZXS_FORMAT_FXT);
  if (dump_signal <= 0 || dump_signal >= NSIG || !socket_pair_cloexec(g_dump_socket)) return;
  if (zxs_profiler_serve(g_dump_socket[0], g_output, ZXS_FORMAT_FXT) == ZX_OK) {
    catch_dump_signal(dump_signal);
  }
}
