// zxsampler record: runs a program (or attaches to a running process) and samples every thread
// of its process tree from outside, with perf events (record_perf.c), into an FXT profile
// (record_processes.c).
//
// The program runs exactly as it would without us: same environment, file descriptors, signal
// dispositions, process group and terminal; no library is loaded into it. We exit with its exit
// status, or die of the signal that killed it, after writing the profile.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/profiler.h>

#include "cfi_unwind.h"
#include "cli.h"
#include "launcher.h"
#include "record_perf.h"
#include "record_processes.h"

#define DEFAULT_PERIOD_US 1000
// Ring per CPU: room for about a quarter second of samples at 2000/s with the copy in use, so a
// recorder kept off the CPU that long by the program loses nothing (smaller where locked memory
// is limited: the ring halves until it maps).
#define RING_MB_FP 4
#define RING_MB_DWARF 16
// Bytes of user stack copied per sample: deeper stacks are cut there, counted and marked.
// Frame pointers need only the frame records, CFI every spilled register on the way up.
#define STACK_COPY_FP 8192u
#define STACK_COPY_DWARF 32768u
#define STACK_COPY_MAX 65528u
#define POLL_MS 100

static void usage_record(FILE* out) {
  fprintf(out,
          "usage: zxsampler record [options] -- PROGRAM [ARGS...]\n"
          "       zxsampler record [options] -p PID\n"
          "\n"
          "Samples every thread of PROGRAM and of the processes it starts (fork, exec), while\n"
          "they run on a CPU, from outside with perf events: the program runs unchanged and\n"
          "may end any way it likes (exit, _exit, exec, a signal, SIGKILL). The profile is\n"
          "written when the program exits; zxsampler then exits with the program's status\n"
          "(or dies of the signal that killed it). With -p, samples a running process until\n"
          "it exits, Ctrl-C, or the --duration.\n"
          "\n"
          "options:\n"
          "      --in-process     (first) preload the library into PROGRAM instead: for where\n"
          "                       perf events are refused ('record --in-process --help')\n"
          "  -o, --output FILE    where to write the profile (default zxsampler.fxt)\n"
          "  -f, --format FMT     fxt (default), pprof, folded, svg, markup or top\n"
          "  -F, --frequency HZ   samples per second of a thread's CPU time (default 1000)\n"
          "      --period US      microseconds of CPU time between samples (instead of -F)\n"
          "  -b, --buffer MB      ring buffer per CPU in MiB (default %d with dwarf, %d with fp)\n"
          "  -p, --pid PID        sample this running process instead of starting one\n"
          "  -d, --duration S     with -p: stop after S seconds\n"
          "      --no-inherit     sample the first process only, not its children\n"
          "  -q, --quiet          no summary at the end (losses are still reported)\n"
          "      --unwind HOW     dwarf: unwind user stacks with their CFI (.eh_frame), frame\n"
          "                       pointers where a frame has none (default where built with\n"
          "                       libunwind); fp: frame pointers only, the kernel's walk;\n"
          "                       ZXSAMPLER_UNWIND=fp|dwarf sets the default\n"
          "      --stack-copy N   bytes of user stack copied per sample (default %u with dwarf,\n"
          "                       %u with fp; at most %u); deeper stacks end in [truncated]\n"
          "      --user-only      never sample kernel code (default: kernel too, where the\n"
          "                       host allows it: root, CAP_PERFMON or perf_event_paranoid <= 1)\n"
          "      --no-runtime     do not measure where each thread's time went (RFC-0084; by\n"
          "                       default cpu and queue time, which cost the program nothing)\n"
          "      --runtime-events also time every page fault and kernel-lock contention\n"
          "                       (about 1 us of the program's CPU per fault; locks: root)\n"
          "  -h, --help           this text\n",
          RING_MB_DWARF, RING_MB_FP, STACK_COPY_DWARF, STACK_COPY_FP, STACK_COPY_MAX);
}

typedef struct record_args {
  const char* output;
  zxs_profile_format_t format;
  long long period_us, ring_mb, duration_s, stack_copy;
  pid_t pid;
  bool inherit, kernel, quiet, dwarf, runtime, runtime_events;
  char** program;
} record_args_t;

enum {
  OPT_PERIOD = 256,
  OPT_NO_INHERIT,
  OPT_USER_ONLY,
  OPT_UNWIND,
  OPT_STACK_COPY,
  OPT_NO_RUNTIME,
  OPT_RUNTIME_EVENTS
};

// `how` ("fp" or "dwarf", from `where`) into a->dwarf: -1 when taken, else the exit status.
static int choose_unwind(record_args_t* a, const char* how, const char* where) {
  if (strcmp(how, "fp") == 0) {
    a->dwarf = false;
  } else if (strcmp(how, "dwarf") == 0) {
    if (!zxs_cfi_available()) {
      fprintf(stderr, "%s: %s dwarf: this build has no CFI unwinder (libunwind)\n", ZXSAMPLER_PROG,
              where);
      return 2;
    }
    a->dwarf = true;
  } else {
    fprintf(stderr, "%s: %s takes fp or dwarf, not '%s'\n\n", ZXSAMPLER_PROG, where, how);
    usage_record(stderr);
    return 2;
  }
  return -1;
}

// Takes option `opt` with its argument. Returns -1 when taken, else the status to exit with.
static int take_option(int opt, const char* arg, record_args_t* a) {
  long long n;
  switch (opt) {
    case 'o':
      a->output = arg;
      break;
    case 'f':
      if (!zxs_profile_format_from_name(arg, &a->format)) {
        return cli_fail_usage(usage_record, "unknown format '%s'", arg);
      }
      break;
    case 'F':
      if (!cli_parse_positive(arg, 100000, &n)) {
        return cli_fail_usage(usage_record, "--frequency takes Hz from 1 to 100000, not '%s'", arg);
      }
      a->period_us = 1000000 / n;
      break;
    case OPT_PERIOD:
      if (!cli_parse_positive(arg, 1000000000, &a->period_us) || a->period_us < 10) {
        return cli_fail_usage(usage_record, "--period takes microseconds >= 10, not '%s'", arg);
      }
      break;
    case 'b':
      if (!cli_parse_positive(arg, 1024, &a->ring_mb)) {
        return cli_fail_usage(usage_record, "--buffer takes MiB from 1 to 1024, not '%s'", arg);
      }
      break;
    case 'p':
      if (!cli_parse_positive(arg, INT_MAX, &n)) {
        return cli_fail_usage(usage_record, "--pid takes a process id, not '%s'", arg);
      }
      a->pid = (pid_t)n;
      break;
    case 'd':
      if (!cli_parse_positive(arg, 100000000, &a->duration_s)) {
        return cli_fail_usage(usage_record, "--duration takes whole seconds, not '%s'", arg);
      }
      break;
    case OPT_NO_INHERIT:
      a->inherit = false;
      break;
    case OPT_USER_ONLY:
      a->kernel = false;
      break;
    case OPT_RUNTIME_EVENTS:
      a->runtime_events = true;
      break;
    case OPT_NO_RUNTIME:
      a->runtime = false;
      break;
    case 'q':
      a->quiet = true;
      break;
    case OPT_UNWIND:
      return choose_unwind(a, arg, "--unwind");
    case OPT_STACK_COPY:
      if (!cli_parse_positive(arg, STACK_COPY_MAX, &a->stack_copy) || a->stack_copy < 512) {
        return cli_fail_usage(usage_record, "--stack-copy takes bytes from 512 to 65528, not '%s'",
                              arg);
      }
      a->stack_copy &= ~7ll;  // the kernel wants a multiple of 8
      break;
    case 'h':
      usage_record(stdout);
      return 0;
    default:
      usage_record(stderr);
      return 2;
  }
  return -1;
}

// The checks between options and the defaults that depend on them, once all are taken.
// Returns -1 when the arguments hold together, else the status to exit with.
static int finish_args(int argc, char** argv, record_args_t* a) {
  if (a->pid != 0 && optind < argc) {
    return cli_fail_usage(usage_record, "%s", "give a program or -p PID, not both");
  }
  if (a->pid == 0 && optind >= argc) return cli_fail_usage(usage_record, "%s", "no program to run");
  if (a->pid == 0 && a->duration_s != 0) {
    return cli_fail_usage(usage_record, "%s", "--duration goes with -p");
  }
  a->program = a->pid == 0 ? &argv[optind] : NULL;
  if (a->stack_copy == 0) a->stack_copy = a->dwarf ? STACK_COPY_DWARF : STACK_COPY_FP;
  if (a->ring_mb == 0) a->ring_mb = a->dwarf ? RING_MB_DWARF : RING_MB_FP;
  return -1;
}

// Returns -1 when parsed, else the status to exit with.
static int parse_args(int argc, char** argv, record_args_t* a) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"format", required_argument, NULL, 'f'},
                                          {"frequency", required_argument, NULL, 'F'},
                                          {"period", required_argument, NULL, OPT_PERIOD},
                                          {"buffer", required_argument, NULL, 'b'},
                                          {"pid", required_argument, NULL, 'p'},
                                          {"duration", required_argument, NULL, 'd'},
                                          {"no-inherit", no_argument, NULL, OPT_NO_INHERIT},
                                          {"user-only", no_argument, NULL, OPT_USER_ONLY},
                                          {"no-runtime", no_argument, NULL, OPT_NO_RUNTIME},
                                          {"runtime-events", no_argument, NULL, OPT_RUNTIME_EVENTS},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"unwind", required_argument, NULL, OPT_UNWIND},
                                          {"stack-copy", required_argument, NULL, OPT_STACK_COPY},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  *a = (record_args_t){.output = "zxsampler.fxt",
                       .format = ZXS_FORMAT_FXT,
                       .period_us = DEFAULT_PERIOD_US,
                       .inherit = true,
                       .kernel = true,
                       .runtime = true,
                       .dwarf = zxs_cfi_available()};
  // ZXSAMPLER_UNWIND=fp|dwarf sets the default; --unwind overrides it.
  const char* env = getenv("ZXSAMPLER_UNWIND");
  if (env != NULL && env[0] != '\0') {
    const int status = choose_unwind(a, env, "ZXSAMPLER_UNWIND");
    if (status != -1) return status;
  }
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "+o:f:F:b:p:d:qh", options, NULL)) != -1) {
    const int status = take_option(opt, optarg, a);
    if (status != -1) return status;
  }
  return finish_args(argc, argv, a);
}

// --- Files ------------------------------------------------------------------------------------

// Checks, before anything runs, that the profile can be written: the output is not a directory
// and its directory takes a new file (the profile is written there and renamed into place).
static bool check_output(const char* output, char* dir, size_t dir_size) {
  struct stat st;
  if (stat(output, &st) == 0 && S_ISDIR(st.st_mode)) {
    fprintf(stderr, "%s: cannot write the profile to %s: it is a directory\n", ZXSAMPLER_PROG,
            output);
    return false;
  }
  char copy[PATH_MAX];
  snprintf(copy, sizeof(copy), "%s", output);
  snprintf(dir, dir_size, "%s", dirname(copy));
  if (access(dir, W_OK | X_OK) != 0 || (access(output, F_OK) == 0 && access(output, W_OK) != 0)) {
    fprintf(stderr, "%s: cannot write the profile to %s: %s\n", ZXSAMPLER_PROG, output,
            strerror(errno));
    return false;
  }
  return true;
}

// An unnamed file in `dir` for the samples as they come (bounded memory, any run length).
static FILE* open_spool(const char* dir) {
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  FILE* f = fd >= 0 ? fdopen(fd, "w+") : NULL;
  if (f == NULL && fd >= 0) close(fd);
  return f;
}

// mkstemp makes files 0600; a profile gets the mode any new file would.
static void set_default_mode(const char* path) {
  mode_t mask = umask(0);
  umask(mask);
  chmod(path, 0666 & ~mask);
}

// Writes the trace next to the output, converts it if asked, and renames it into place.
static bool write_profile(const record_args_t* a, record_processes_t* procs,
                          uint64_t not_attached) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof(tmp), "%s.XXXXXX", a->output);
  int fd = mkstemp(tmp);
  FILE* out = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (out == NULL) {
    fprintf(stderr, "%s: cannot write %s: %s\n", ZXSAMPLER_PROG, tmp, strerror(errno));
    if (fd >= 0) close(fd);
    return false;
  }
  zx_status_t status =
      record_processes_write(procs, (uint64_t)a->period_us * 1000u, not_attached, out);
  if (fclose(out) != 0 && status == ZX_OK) status = ZX_ERR_IO;
  if (status == ZX_OK && a->format != ZXS_FORMAT_FXT) {
    char converted[PATH_MAX];
    char error[256];
    snprintf(converted, sizeof(converted), "%s.XXXXXX", a->output);
    int cfd = mkstemp(converted);
    if (cfd >= 0) close(cfd);
    status =
        cfd >= 0 ? zxs_profile_convert(tmp, converted, a->format, error, sizeof(error)) : ZX_ERR_IO;
    if (status != ZX_OK) {
      fprintf(stderr, "%s: %s\n", ZXSAMPLER_PROG, cfd >= 0 ? error : strerror(errno));
      if (cfd >= 0) unlink(converted);
    } else {
      unlink(tmp);
      snprintf(tmp, sizeof(tmp), "%s", converted);
    }
  }
  if (status == ZX_OK) set_default_mode(tmp);
  if (status == ZX_OK && rename(tmp, a->output) != 0) status = ZX_ERR_IO;
  if (status != ZX_OK) {
    fprintf(stderr, "%s: cannot write the profile to %s: %s\n", ZXSAMPLER_PROG, a->output,
            zxs_status_string(status));
    unlink(tmp);
    return false;
  }
  return true;
}

// --- The program ------------------------------------------------------------------------------

// The shell's words for a program it could not run.
static void report_exec_error(const char* program, int e) {
  if (e == ENOENT && strchr(program, '/') == NULL) {
    fprintf(stderr, "%s: %s: command not found\n", ZXSAMPLER_PROG, program);
  } else {
    fprintf(stderr, "%s: %s: %s\n", ZXSAMPLER_PROG, program, strerror(e));
  }
}

// Signals sent to the recorder by another process are passed on to the program (a terminal's
// Ctrl-C reaches both already: those are not sent twice). With -p they end the recording.
static volatile sig_atomic_t g_signal, g_signal_from_process;
static const int kRelayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

static void on_signal(int sig, siginfo_t* info, void* context) {
  (void)context;
  g_signal = sig;
  g_signal_from_process = info->si_code == SI_USER || info->si_code == SI_QUEUE;
}

// A signal we were started with ignored stays ignored (as a shell leaves it).
static void catch_signals(void) {
  struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof(kRelayed) / sizeof(kRelayed[0]); i++) {
    struct sigaction old;
    if (sigaction(kRelayed[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(kRelayed[i], &sa, NULL);
  }
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void print_summary(const record_args_t* a, const record_totals_t* t, uint64_t not_attached,
                          bool kernel) {
  if (!a->quiet) {
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    const double cpu = (double)self.ru_utime.tv_sec + (double)self.ru_utime.tv_usec / 1e6 +
                       (double)self.ru_stime.tv_sec + (double)self.ru_stime.tv_usec / 1e6;
    fprintf(stderr, "%s: %llu samples of %llu thread%s in %llu process%s (%s) written to %s\n",
            ZXSAMPLER_PROG, (unsigned long long)t->samples, (unsigned long long)t->threads,
            t->threads == 1 ? "" : "s", (unsigned long long)t->processes,
            t->processes == 1 ? "" : "es", kernel ? "user and kernel" : "user only", a->output);
    fprintf(stderr,
            "%s: stacks unwound with %s; the recorder used %.3f s of CPU (%.1f us a sample)\n",
            ZXSAMPLER_PROG, a->dwarf ? "CFI" : "frame pointers", cpu,
            t->samples > 0 ? cpu * 1e6 / (double)t->samples : 0.0);
  }
  if (t->lost > 0) {
    fprintf(stderr,
            "%s: warning: %llu samples lost (%.2f%%): the rings filled faster than they were "
            "read; a larger --buffer helps\n",
            ZXSAMPLER_PROG, (unsigned long long)t->lost,
            100.0 * (double)t->lost / (double)(t->lost + t->samples));
  }
  if (not_attached > 0) {
    fprintf(stderr, "%s: warning: %llu thread%s could not be attached\n", ZXSAMPLER_PROG,
            (unsigned long long)not_attached, not_attached == 1 ? "" : "s");
  }
  if (t->children_not_followed > 0) {
    fprintf(stderr, "%s: %llu child process%s not followed (--no-inherit)\n", ZXSAMPLER_PROG,
            (unsigned long long)t->children_not_followed,
            t->children_not_followed == 1 ? "" : "es");
  }
  if (t->truncated > 0) {
    fprintf(stderr, "%s: %llu stack%s cut at the stack copy or 128 frames\n", ZXSAMPLER_PROG,
            (unsigned long long)t->truncated, t->truncated == 1 ? "" : "s");
  }
}

// Opens the perf events on `target` and a pidfd to see it exit. On failure says why, lets a
// started program exit without running anything (closing `go`) and returns NULL.
static record_perf_t* open_perf(const record_args_t* a, record_launch_t* launch, pid_t target,
                                int* pidfd) {
  record_perf_options_t options = {.pid = target,
                                   .attach = a->program == NULL,
                                   .inherit_children = a->inherit,
                                   .kernel = a->kernel,
                                   .period_ns = (uint64_t)a->period_us * 1000u,
                                   .ring_bytes = (size_t)a->ring_mb << 20,
                                   .stack_copy = (uint32_t)a->stack_copy,
                                   .dwarf = a->dwarf,
                                   .runtime = a->runtime,
                                   .runtime_events = a->runtime && a->runtime_events};
  char error[512];
  record_perf_t* perf = record_perf_open(&options, error, sizeof(error));
  *pidfd = perf != NULL ? (int)syscall(SYS_pidfd_open, target, 0) : -1;
  if (perf != NULL && *pidfd >= 0) return perf;
  if (perf != NULL) snprintf(error, sizeof(error), "no such process: %d", (int)target);
  fprintf(stderr, "%s: %s\n", ZXSAMPLER_PROG, error);
  if (a->program != NULL) record_launch_abandon(launch);
  record_perf_close(perf);
  return NULL;
}

// Lets the started program exec. False when the exec failed: said so, and the child reaped into
// *wstatus.
static bool release_program(const record_args_t* a, record_launch_t* launch, int* wstatus) {
  const int e = record_launch_release(launch, wstatus);
  if (e == 0) return true;
  report_exec_error(a->program[0], e);
  return false;
}

// Records until the program exits (reaped into *wstatus), a signal ends an attach, or the
// duration is over; then drains what the rings still hold.
static void record_until_done(const record_args_t* a, record_perf_t* perf, int pidfd,
                              record_processes_t* procs, pid_t target, int* wstatus) {
  const uint64_t deadline = a->duration_s > 0 ? now_ms() + (uint64_t)a->duration_s * 1000u : 0;
  for (bool done = false; !done;) {
    done = record_perf_poll(perf, pidfd, POLL_MS, record_processes_on_record,
                            record_processes_on_runtime_record, procs);
    record_processes_flush(procs);
    record_processes_read_schedstat(procs, false);
    if (g_signal != 0) {
      if (a->program != NULL && g_signal_from_process) kill(target, g_signal);
      if (a->program == NULL) done = true;
      g_signal = 0;
    }
    if (deadline != 0 && now_ms() >= deadline) done = true;
  }
  if (a->program != NULL) record_launch_wait(target, wstatus);
  record_perf_drain(perf, record_processes_on_record, record_processes_on_runtime_record, procs);
  record_processes_flush(procs);
  record_processes_read_schedstat(procs, true);  // threads still running (-p, -d)
  // Our own events' counts, once their exited children's have come.
  record_perf_read_counts(perf, record_processes_on_count, procs);
}

int zxsampler_record_main(int argc, char** argv) {
  record_args_t a;
  int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;
  char dir[PATH_MAX];
  if (!check_output(a.output, dir, sizeof(dir))) return 1;
  FILE* spool = open_spool(dir);
  if (spool == NULL) {
    fprintf(stderr, "%s: cannot make a temporary file: %s\n", ZXSAMPLER_PROG, strerror(errno));
    return 1;
  }

  record_launch_t launch = {.pid = a.pid, .go = -1, .status = -1};
  pid_t target = a.pid;
  if (a.program != NULL) {
    if (!record_launch_start(a.program, &launch)) {
      fprintf(stderr, "%s: cannot start %s: %s\n", ZXSAMPLER_PROG, a.program[0], strerror(errno));
      fclose(spool);
      return 1;
    }
    target = launch.pid;
  }
  int pidfd = -1;
  record_perf_t* perf = open_perf(&a, &launch, target, &pidfd);
  if (perf == NULL) {
    fclose(spool);
    return 1;
  }
  record_processes_t* procs = record_processes_new(spool, record_perf_sample_type(perf), target,
                                                   record_perf_kernel(perf), a.inherit, a.dwarf);
  if (procs == NULL) {
    fprintf(stderr, "%s: out of memory\n", ZXSAMPLER_PROG);
    return 1;
  }
  if (a.runtime) {
    const uint64_t* rt_ids;
    const int* rt_kinds;
    const size_t rt_count = record_perf_runtime_ids(perf, &rt_ids, &rt_kinds);
    record_processes_set_runtime(procs, record_perf_runtime_fields(perf),
                                 record_perf_runtime_missing(perf), rt_ids, rt_kinds, rt_count);
  }
  catch_signals();
  int wstatus = 0;
  if (a.program == NULL) {
    record_processes_add_running(procs, target);
  } else if (!release_program(&a, &launch, &wstatus)) {
    record_perf_close(perf);
    record_processes_free(procs);
    fclose(spool);
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 127;
  }
  record_until_done(&a, perf, pidfd, procs, target, &wstatus);
  const uint64_t not_attached = record_perf_attach_failures(perf);
  const bool kernel = record_perf_kernel(perf);
  record_perf_close(perf);
  close(pidfd);
  bool written = write_profile(&a, procs, not_attached);
  record_totals_t totals;
  record_processes_totals(procs, &totals);
  record_processes_free(procs);
  fclose(spool);
  if (written) print_summary(&a, &totals, not_attached, kernel);
  if (a.program == NULL) return written ? 0 : 1;
  return cli_exit_like(wstatus);
}
