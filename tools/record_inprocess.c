// zxsampler record, in process: runs a program with the library preloaded into it (the preload
// module, preload.c), which samples the program's threads through the profiler API and writes
// the profile when the program exits. This is `record` on macOS, where there are no perf events
// (DYLD_INSERT_LIBRARIES), and `record --in-process` on Linux (LD_PRELOAD).
//
// Unlike the perf recorder, the program is changed: the library runs inside it. Its limits are
// the preload's: the profile is written at exit() or on a fatal signal the program left at its
// default action, so a program that ends with _exit() or is killed by SIGKILL writes none; the
// programs it starts are not sampled (the variables are removed from their environment); a
// statically linked program cannot preload anything; and macOS's System Integrity Protection
// strips DYLD_* variables from protected binaries (those in /usr/bin, /bin, /sbin, /System).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zxsampler/profiler.h>

#include "cli.h"
// The shell's exec rules only (inline; also on macOS, whose build has no record engine).
#include "launcher.h"

#ifdef __APPLE__
#define PRELOAD_VARIABLE "DYLD_INSERT_LIBRARIES"
#else
#define PRELOAD_VARIABLE "LD_PRELOAD"
#endif

// Where the build put the preload module, and where an install puts it (meson sets both).
#ifndef ZXSAMPLER_PRELOAD_BUILD
#define ZXSAMPLER_PRELOAD_BUILD ""
#endif
#ifndef ZXSAMPLER_PRELOAD_INSTALLED
#define ZXSAMPLER_PRELOAD_INSTALLED ""
#endif

static void usage_record(FILE* out) {
  fprintf(out,
          "usage: zxsampler record"
#ifndef __APPLE__
          " --in-process"
#endif
          " [options] -- PROGRAM [ARGS...]\n"
          "\n"
          "Runs PROGRAM with libzxsampler preloaded (" PRELOAD_VARIABLE
          "): every thread it creates\n"
          "is sampled in process, and the profile is written when it exits (exit(), return from\n"
          "main), or before a signal sent to zxsampler is passed on to it; not when it dies of\n"
          "a signal it got directly (Ctrl-C at a terminal), _exit() or SIGKILL.\n"
          "Programs it starts are not sampled. zxsampler exits with the program's status.\n"
#ifdef __APPLE__
          "System Integrity Protection strips " PRELOAD_VARIABLE
          " from protected binaries\n"
          "(/usr/bin, /bin, /sbin, /System): copy such a program elsewhere first.\n"
#endif
          "\n"
          "options:\n"
          "  -o, --output FILE    where to write the profile (default zxsampler.fxt)\n"
          "  -F, --frequency HZ   samples per second of a thread's CPU time (default 1000)\n"
          "  -b, --buffer MB      buffer per CPU in MiB (default 16); samples after it is full\n"
          "                       are lost, and the report says how many\n"
          "  -q, --quiet          print no top functions (losses are still reported)\n"
          "  -h, --help           this text\n"
          "\n"
          "The preload module is found in ZXSAMPLER_PRELOAD, else where the build or the\n"
          "install put it.\n");
}

static bool is_file(const char* path) {
  struct stat st;
  return path[0] != '\0' && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static const char* find_preload(void) {
  const char* env = getenv("ZXSAMPLER_PRELOAD");
  if (env != NULL && *env != '\0') return is_file(env) ? env : NULL;
  if (is_file(ZXSAMPLER_PRELOAD_BUILD)) return ZXSAMPLER_PRELOAD_BUILD;
  if (is_file(ZXSAMPLER_PRELOAD_INSTALLED)) return ZXSAMPLER_PRELOAD_INSTALLED;
  return NULL;
}

// Sets `name` to `value`, before what it held (a preload list is separated by ':').
static int prepend_env(const char* name, const char* value) {
  const char* old = getenv(name);
  if (old == NULL || *old == '\0') return setenv(name, value, 1);
  const size_t n = strlen(value) + 1 + strlen(old) + 1;
  char* both = malloc(n);
  if (both == NULL) return -1;
  snprintf(both, n, "%s:%s", value, old);
  const int r = setenv(name, both, 1);
  free(both);
  return r;
}

typedef struct inprocess_args {
  const char* output;
  long long hz, mb;
  bool quiet;
} inprocess_args_t;

// The options, up to PROGRAM (at argv[optind]). Returns -1 when parsed, else the exit status.
static int parse_args(int argc, char** argv, inprocess_args_t* a) {
  static const struct option options[] = {
      {"output", required_argument, NULL, 'o'}, {"frequency", required_argument, NULL, 'F'},
      {"buffer", required_argument, NULL, 'b'}, {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
  *a = (inprocess_args_t){.output = "zxsampler.fxt", .hz = 1000, .mb = 16};
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "+o:F:b:qh", options, NULL)) != -1) {
    switch (opt) {
      case 'o':
        a->output = optarg;
        break;
      case 'F':
        if (!cli_parse_positive(optarg, 100000, &a->hz)) {
          return cli_fail_usage(usage_record, "-F takes samples per second (1..100000), not '%s'",
                                optarg);
        }
        break;
      case 'b':
        if (!cli_parse_positive(optarg, 1024, &a->mb)) {
          return cli_fail_usage(usage_record, "-b takes MiB per CPU (1..1024), not '%s'", optarg);
        }
        break;
      case 'q':
        a->quiet = true;
        break;
      case 'h':
        usage_record(stdout);
        return 0;
      default:
        usage_record(stderr);
        return 2;
    }
  }
  if (optind >= argc) return cli_fail_usage(usage_record, "%s", "no program given");
  return -1;
}

// The profile's absolute path (the program may change directory), checked before the program
// runs as the library will write it (beside it, renamed into place: an old profile stays until
// a new one is whole). *before: what file was there (none: st_ino 0). False after a message.
static bool prepare_output(const char* output, char* absolute, size_t size, struct stat* before) {
  if (output[0] == '\0') {
    fprintf(stderr, "%s: -o needs a file name\n", ZXSAMPLER_PROG);
    return false;
  }
  if (output[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == NULL ||
        snprintf(absolute, size, "%s/%s", cwd, output) >= (int)size) {
      fprintf(stderr, "%s: the output path is too long\n", ZXSAMPLER_PROG);
      return false;
    }
  } else {
    snprintf(absolute, size, "%s", output);
  }
  // As the library will write it (beside it, renamed into place), before the program runs.
  char error[512];
  if (zxs_profile_check_output(output, error, sizeof(error)) != ZX_OK) {
    fprintf(stderr, "%s: %s\n", ZXSAMPLER_PROG, error);
    return false;
  }
  if (stat(absolute, before) != 0) memset(before, 0, sizeof(*before));
  return true;
}

// Whether the program wrote a new profile: a regular file there that is not the one before
// (the library renames a new file into place).
static bool wrote_profile(const char* absolute, const struct stat* before) {
  struct stat now;
  return stat(absolute, &now) == 0 && S_ISREG(now.st_mode) &&
         (now.st_ino != before->st_ino || now.st_dev != before->st_dev);
}

// The child: PROGRAM exec'd in place with the preload and its settings in the environment; the
// shell's status when it cannot be run.
static _Noreturn void exec_preloaded(char** program, const inprocess_args_t* a,
                                     const char* absolute, const char* preload, int control) {
  char period[32], buffer[32], control_fd[32];
  snprintf(control_fd, sizeof(control_fd), "%d", control);
  snprintf(period, sizeof(period), "%lld", 1000000000ll / a->hz);
  snprintf(buffer, sizeof(buffer), "%lld", a->mb << 20);
  // The preload profiles this process through its execs, and no process it starts.
  char self[32];
  snprintf(self, sizeof(self), "%lld", (long long)getpid());
  if (setenv("ZXSAMPLER_OUTPUT", absolute, 1) != 0 || setenv("ZXSAMPLER_PID", self, 1) != 0 ||
      setenv("ZXSAMPLER_PERIOD_NS", period, 1) != 0 ||
      setenv("ZXSAMPLER_BUFFER_SIZE", buffer, 1) != 0 ||
      (control >= 0 &&
       (setenv("ZXSAMPLER_CONTROL_FD", control_fd, 1) != 0 || fcntl(control, F_SETFD, 0) != 0)) ||
      prepend_env(PRELOAD_VARIABLE, preload) != 0) {
    _exit(127);
  }
  execvp(program[0], program);
  const int e = record_exec_errno(program[0], errno);
  fprintf(stderr, "%s: cannot run %s: %s\n", ZXSAMPLER_PROG, program[0], strerror(e));
  _exit(record_exec_status(e));
}

// Signals sent to zxsampler by another process are passed on to the program, which decides
// what they do; before the first, the library writes the profile (asked over the control
// socket, ZXSAMPLER_CONTROL_FD: it installs no handler in the program, so a program killed by
// a signal could not write it). A terminal's signals (Ctrl-C, Ctrl-\) reach both already and
// are not sent twice. zxsampler itself waits, and ends as the program did.
static volatile sig_atomic_t g_child;
static volatile sig_atomic_t g_control = -1;  // our end of the control socket
static const int kRelayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define DUMP_WAIT_MS 30000  // for the library to write the profile (large buffers, slow disks)

// [signal-safe] Asks the library for the profile and waits for its answer (or for the socket to
// close: the program ended or closed it). Once: the session ends with the profile.
static void dump_profile(void) {
  const int control = g_control;
  if (control < 0) return;
  g_control = -1;
  if (write(control, "w", 1) == 1) {
    struct pollfd p = {.fd = control, .events = POLLIN};
    char answer;
    if (poll(&p, 1, DUMP_WAIT_MS) == 1) (void)!read(control, &answer, 1);
  }
  close(control);
}

static void relay_signal(int sig, siginfo_t* info, void* context) {
  (void)context;
  if (info->si_code != SI_USER && info->si_code != SI_QUEUE) return;
  const int saved = errno;
  dump_profile();
  if (g_child > 0) kill((pid_t)g_child, sig);
  errno = saved;
}

// A signal we were started with ignored stays ignored (as a shell leaves it), for the program
// too. The relayed signals are blocked into *blocked until the program's pid is known.
static void relay_signals(sigset_t* blocked) {
  struct sigaction sa = {.sa_sigaction = relay_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof(kRelayed) / sizeof(kRelayed[0]); i++) {
    sigaddset(&sa.sa_mask, kRelayed[i]);  // one at a time: the dump is asked once
  }
  sigemptyset(blocked);
  for (size_t i = 0; i < sizeof(kRelayed) / sizeof(kRelayed[0]); i++) {
    struct sigaction old;
    if (sigaction(kRelayed[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(kRelayed[i], &sa, NULL);
    sigaddset(blocked, kRelayed[i]);
  }
  sigprocmask(SIG_BLOCK, blocked, NULL);
}

// In the child before its exec: the caught signals back at their default action, unblocked.
static void unrelay_signals(const sigset_t* blocked) {
  for (size_t i = 0; i < sizeof(kRelayed) / sizeof(kRelayed[0]); i++) {
    if (sigismember(blocked, kRelayed[i])) signal(kRelayed[i], SIG_DFL);
  }
  sigprocmask(SIG_UNBLOCK, blocked, NULL);
}

// The top functions on stderr (never into the program's own output on stdout).
static void print_top(const char* absolute) {
  char error[256];
  fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  if (saved < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    if (saved >= 0) close(saved);
    return;
  }
  if (zxs_profile_convert(absolute, "-", ZXS_FORMAT_TOP, error, sizeof(error)) != ZX_OK) {
    fprintf(stderr, "%s: %s\n", ZXSAMPLER_PROG, error);
  }
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
}

// Says whether the program wrote its profile and what it lost (always, -q or not: on stderr),
// and prints its top functions unless quiet.
static void report_profile(const char* program, const inprocess_args_t* a, const char* absolute,
                           const struct stat* before) {
  if (!wrote_profile(absolute, before)) {
    fprintf(stderr,
            "%s: %s wrote no profile%s: it was killed by a signal, ended with _exit(), is "
            "statically linked, or its loader refused the preload%s\n",
            ZXSAMPLER_PROG, program, before->st_ino != 0 ? " (the old one is left as it was)" : "",
#ifdef __APPLE__
            " (System Integrity Protection strips " PRELOAD_VARIABLE " from protected binaries)"
#else
            "; programs it starts are not sampled in process (a shell script can `exec` the "
            "program; `record` without --in-process follows children)"
#endif
    );
    return;
  }
  fprintf(stderr, "%s: profile written to %s\n", ZXSAMPLER_PROG, a->output);
  uint64_t samples = 0, lost = 0;
  if (zxs_profile_count_samples(absolute, &samples, &lost, NULL, 0) == ZX_OK && lost > 0) {
    fprintf(stderr,
            "%s: warning: %llu samples lost (%.2f%%): a CPU's buffer filled before the "
            "profile was written; a larger --buffer helps\n",
            ZXSAMPLER_PROG, (unsigned long long)lost,
            100.0 * (double)lost / (double)(lost + samples));
  }
  if (!a->quiet) print_top(absolute);
}

int zxsampler_record_inprocess_main(int argc, char** argv) {
  inprocess_args_t a;
  const int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;
  const char* preload = find_preload();
  if (preload == NULL) {
    fprintf(stderr,
            "%s: the preload module (libzxsampler-preload) was not found; set "
            "ZXSAMPLER_PRELOAD\n",
            ZXSAMPLER_PROG);
    return 1;
  }
  char absolute[PATH_MAX];
  struct stat before;
  if (!prepare_output(a.output, absolute, sizeof(absolute), &before)) return 1;
  // The control socket (-1 where none can be made: signals are then only relayed).
  int control[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, control) != 0 ||
      fcntl(control[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(control[1], F_SETFD, FD_CLOEXEC) != 0) {
    control[0] = -1;  // (macOS has no SOCK_CLOEXEC)
  }
  sigset_t relayed;
  relay_signals(&relayed);
  const pid_t child = fork();
  if (child < 0) {
    sigprocmask(SIG_UNBLOCK, &relayed, NULL);
    fprintf(stderr, "%s: fork: %s\n", ZXSAMPLER_PROG, strerror(errno));
    return 1;
  }
  if (child == 0) {
    unrelay_signals(&relayed);
    exec_preloaded(argv + optind, &a, absolute, preload, control[0] >= 0 ? control[1] : -1);
  }
  if (control[0] >= 0) {
    close(control[1]);
    g_control = control[0];
  }
  g_child = child;
  sigprocmask(SIG_UNBLOCK, &relayed, NULL);  // what came meanwhile is passed on now
  int wstatus = 0;
  while (waitpid(child, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) >= 126 && !wrote_profile(absolute, &before)) {
    return WEXITSTATUS(wstatus);  // it did not run; exec said why
  }
  report_profile(argv[optind], &a, absolute, &before);
  fflush(NULL);
  return cli_exit_like(wstatus);
}
