// `zxsampler record`'s run (see record_run.h).
#define _GNU_SOURCE
#include "record_run.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
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

#include "cfi_unwind.h"
#include "launcher.h"
#include "profile.h"
#include "record_perf.h"
#include "record_processes.h"
#include "trace_file.h"
#include "trace_output.h"

#define PROG "zxsampler"
#define POLL_MS 100

bool record_run_cfi_available(void) { return zxs_cfi_available(); }

// --- Files ------------------------------------------------------------------------------------

// The output, checked before anything runs (trace_output.h: a temporary file made beside it,
// which the profile is written into and renamed from). False after a message.
static bool open_output(const char* prog, const char* path, zxs_trace_output_t* out) {
  char error[512];
  if (zxs_trace_output_open(path, out, error, sizeof(error)) == ZX_OK) return true;
  fprintf(stderr, "%s: %s\n", prog, error);
  return false;
}

// An unnamed file beside the output for the samples as they come (bounded memory, any run
// length).
static FILE* open_spool(const zxs_trace_output_t* out) {
  char copy[ZXS_TRACE_OUTPUT_PATH_MAX];
  snprintf(copy, sizeof(copy), "%s", out->target);
  int fd = open(dirname(copy), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  FILE* f = fd >= 0 ? fdopen(fd, "w+") : NULL;
  if (f == NULL && fd >= 0) close(fd);
  return f;
}

// --- The program ------------------------------------------------------------------------------

// The shell's words for a program it could not run.
static void report_exec_error(const char* program, int e) {
  if (e == ENOENT && strchr(program, '/') == NULL) {
    fprintf(stderr, "%s: %s: command not found\n", PROG, program);
  } else {
    fprintf(stderr, "%s: %s: %s\n", PROG, program, strerror(e));
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

// A number from /proc/sys, or -1.
static long long read_sysctl(const char* path) {
  FILE* f = fopen(path, "re");
  long long v = -1;
  if (f != NULL && fscanf(f, "%lld", &v) != 1) v = -1;
  if (f != NULL) fclose(f);
  return v;
}

// What cut the rings: the locked-memory limits, in words ("" when nothing was cut), and the stack
// copy they cut (`copy_cut`, 0: none).
static void describe_cut(size_t ring_cut, uint32_t copy_cut, const record_run_options_t* o,
                         char* text, size_t size) {
  text[0] = '\0';
  if (ring_cut == 0) return;
  struct rlimit memlock = {0, 0};
  getrlimit(RLIMIT_MEMLOCK, &memlock);
  char limit[32];
  if (memlock.rlim_cur == RLIM_INFINITY) {
    snprintf(limit, sizeof(limit), "%s", "unlimited");
  } else {
    snprintf(limit, sizeof(limit), "%llu KiB", (unsigned long long)memlock.rlim_cur / 1024);
  }
  char copy[128] = "";
  if (copy_cut != 0) {
    snprintf(copy, sizeof(copy), " and the stack copy to %u KiB a sample (of %u)", copy_cut / 1024,
             o->stack_copy / 1024);
  }
  snprintf(text, size,
           "the rings were cut to %zu KiB a CPU (of the %zu KiB asked for)%s by the locked-memory "
           "limit of unprivileged users: kernel.perf_event_mlock_kb = %lld, then RLIMIT_MEMLOCK "
           "= %s (ulimit -l); raise one, or record as root or with CAP_IPC_LOCK",
           ring_cut / 1024, o->ring_bytes / 1024, copy,
           read_sysctl("/proc/sys/kernel/perf_event_mlock_kb"), limit);
}

static void print_summary(const record_run_options_t* o, const record_totals_t* t,
                          uint64_t not_attached, bool kernel, size_t ring_cut, uint32_t copy_cut,
                          bool raised) {
  char cut[640];
  describe_cut(ring_cut, copy_cut, o, cut, sizeof(cut));
  char hint[1024];
  snprintf(hint, sizeof(hint), "%s%s", cut[0] != '\0' ? cut : "a larger --buffer helps",
           raised ? ""
                  : "; and the recorder could not raise its priority to drain them while the "
                    "program keeps every CPU busy (that needs root, CAP_SYS_NICE, or a 'nice' "
                    "limit of -10 in limits.conf)");
  if (!o->quiet) {
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    const double cpu = (double)self.ru_utime.tv_sec + (double)self.ru_utime.tv_usec / 1e6 +
                       (double)self.ru_stime.tv_sec + (double)self.ru_stime.tv_usec / 1e6;
    fprintf(stderr, "%s: %llu samples of %llu thread%s in %llu process%s (%s) written to %s\n",
            PROG, (unsigned long long)t->samples, (unsigned long long)t->threads,
            t->threads == 1 ? "" : "s", (unsigned long long)t->processes,
            t->processes == 1 ? "" : "es", kernel ? "user and kernel" : "user only", o->output);
    fprintf(stderr,
            "%s: stacks unwound with %s; the recorder used %.3f s of CPU (%.1f us a sample)\n",
            PROG, o->dwarf ? "CFI" : "frame pointers", cpu,
            t->samples > 0 ? cpu * 1e6 / (double)t->samples : 0.0);
  }
  if (t->lost > 0) {
    fprintf(stderr,
            "%s: warning: %llu samples lost (%.2f%%): the rings filled faster than they were "
            "read; %s\n",
            PROG, (unsigned long long)t->lost,
            100.0 * (double)t->lost / (double)(t->lost + t->samples), hint);
  } else if (cut[0] != '\0' && !o->quiet) {
    fprintf(stderr, "%s: note: %s\n", PROG, cut);
  }
  if (not_attached > 0) {
    fprintf(stderr, "%s: warning: %llu thread%s could not be attached\n", PROG,
            (unsigned long long)not_attached, not_attached == 1 ? "" : "s");
  }
  if (t->children_not_followed > 0) {
    fprintf(stderr, "%s: %llu child process%s not followed (--no-inherit)\n", PROG,
            (unsigned long long)t->children_not_followed,
            t->children_not_followed == 1 ? "" : "es");
  }
  if (t->truncated > 0) {
    fprintf(stderr, "%s: %llu stack%s cut at the stack copy or 128 frames\n", PROG,
            (unsigned long long)t->truncated, t->truncated == 1 ? "" : "s");
  }
}

// Opens the perf events on `target` and a pidfd to see it exit. On failure says why, lets a
// started program exit without running anything (closing `go`) and returns NULL.
static record_perf_t* open_perf(const record_run_options_t* o, record_launch_t* launch,
                                pid_t target, int* pidfd) {
  record_perf_options_t options = {.pid = target,
                                   .attach = o->program == NULL,
                                   .inherit_children = o->inherit,
                                   .kernel = o->kernel,
                                   .period_ns = o->period_ns,
                                   .ring_bytes = o->ring_bytes,
                                   .stack_copy = o->stack_copy,
                                   .stack_copy_fixed = o->stack_copy_given,
                                   .dwarf = o->dwarf,
                                   .runtime = o->runtime,
                                   .runtime_events = o->runtime && o->runtime_events};
  char error[512];
  record_perf_t* perf = record_perf_open(&options, error, sizeof(error));
  *pidfd = perf != NULL ? (int)syscall(SYS_pidfd_open, target, 0) : -1;
  if (perf != NULL && *pidfd >= 0) return perf;
  if (perf != NULL) snprintf(error, sizeof(error), "no such process: %d", (int)target);
  fprintf(stderr, "%s: %s\n", PROG, error);
  if (o->program != NULL) record_launch_abandon(launch);
  record_perf_close(perf);
  return NULL;
}

// Lets the started program exec. False when the exec failed: said so, and the child reaped into
// *wstatus.
static bool release_program(const record_run_options_t* o, record_launch_t* launch, int* wstatus) {
  const int e = record_launch_release(launch, wstatus);
  if (e == 0) return true;
  report_exec_error(o->program[0], e);
  return false;
}

// The nice value the recorder drains at while the program runs, where it may (root,
// CAP_SYS_NICE, or `ulimit -e`). At nice 0 the scheduler gives it the share of one of the
// program's threads: on 2 CPUs beside 8 busy threads, 11% of a CPU, while 50000 samples/s
// need ~17%, and the rings overflowed while it waited (12-19% lost; 0.5% at nice -5, none at
// -10; docs/PERFORMANCE.md). Its CPU is the same either way; it only runs when the rings fill.
// The program was forked before, so it keeps its own nice.
#define DRAIN_NICE (-10)

// Sets the calling thread's nice (Linux: per thread) to `nice`; false when refused.
static bool set_thread_nice(int nice) {
  return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) == 0;
}

// Records until the program exits (reaped into *wstatus), a signal ends an attach, or the
// duration is over; then drains what the rings still hold.
static void record_until_done(const record_run_options_t* o, record_perf_t* perf, int pidfd,
                              record_processes_t* procs, pid_t target, int* wstatus, bool* raised) {
  const uint64_t deadline = o->duration_s > 0 ? now_ms() + o->duration_s * 1000u : 0;
  errno = 0;
  const int nice_before = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
  *raised = errno == 0 && nice_before > DRAIN_NICE && set_thread_nice(DRAIN_NICE);
  // This thread drains; the worker (made at the same nice) unwinds and writes.
  record_processes_start_worker(procs);
  for (bool done = false; !done;) {
    done = record_perf_poll(perf, pidfd, POLL_MS, record_processes_on_record,
                            record_processes_on_runtime_record, procs);
    record_processes_flush(procs);
    record_processes_read_schedstat(procs, false);
    if (g_signal != 0) {
      if (o->program != NULL && g_signal_from_process) kill(target, g_signal);
      if (o->program == NULL) done = true;
      g_signal = 0;
    }
    if (deadline != 0 && now_ms() >= deadline) done = true;
  }
  if (o->program != NULL) record_launch_wait(target, wstatus);
  record_processes_stop_worker(procs);
  if (*raised) set_thread_nice(nice_before);  // writing the output competes with nothing
  record_perf_drain(perf, record_processes_on_record, record_processes_on_runtime_record, procs);
  record_processes_flush(procs);
  record_processes_read_schedstat(procs, true);  // threads still running (-p, -d)
  // Our own events' counts, once their exited children's have come.
  record_perf_read_counts(perf, record_processes_on_count, procs);
}

int record_run(const record_run_options_t* o, int* wstatus_out) {
  zxs_trace_output_t out;
  if (!open_output(PROG, o->output, &out)) return 1;
  FILE* spool = open_spool(&out);
  if (spool == NULL) {
    fprintf(stderr, "%s: cannot make a temporary file: %s\n", PROG, strerror(errno));
    zxs_trace_output_abandon(&out);
    return 1;
  }

  record_launch_t launch = {.pid = o->pid, .go = -1, .status = -1};
  pid_t target = o->pid;
  if (o->program != NULL) {
    if (!record_launch_start(o->program, &launch)) {
      fprintf(stderr, "%s: cannot start %s: %s\n", PROG, o->program[0], strerror(errno));
      fclose(spool);
      zxs_trace_output_abandon(&out);
      return 1;
    }
    target = launch.pid;
  }
  int pidfd = -1;
  record_perf_t* perf = open_perf(o, &launch, target, &pidfd);
  if (perf == NULL) {
    fclose(spool);
    zxs_trace_output_abandon(&out);
    return 1;
  }
  record_processes_t* procs = record_processes_new(spool, record_perf_sample_type(perf), target,
                                                   record_perf_kernel(perf), o->inherit, o->dwarf);
  if (procs == NULL) {
    fprintf(stderr, "%s: out of memory\n", PROG);
    record_perf_close(perf);
    close(pidfd);
    fclose(spool);
    zxs_trace_output_abandon(&out);
    return 1;
  }
  if (o->runtime) {
    const uint64_t* rt_ids;
    const int* rt_kinds;
    const size_t rt_count = record_perf_runtime_ids(perf, &rt_ids, &rt_kinds);
    record_processes_set_runtime(procs, record_perf_runtime_fields(perf),
                                 record_perf_runtime_missing(perf), rt_ids, rt_kinds, rt_count);
  }
  catch_signals();
  int wstatus = 0;
  if (o->program == NULL) {
    record_processes_add_running(procs, target);
  } else if (!release_program(o, &launch, &wstatus)) {
    record_perf_close(perf);
    record_processes_free(procs);
    fclose(spool);
    zxs_trace_output_abandon(&out);
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 127;
  }
  bool raised = false;
  record_until_done(o, perf, pidfd, procs, target, &wstatus, &raised);
  const uint64_t not_attached = record_perf_attach_failures(perf);
  const bool kernel = record_perf_kernel(perf);
  const size_t ring_cut = record_perf_ring_cut(perf);
  const uint32_t copy_cut = record_perf_copy_cut(perf);
  record_perf_close(perf);
  close(pidfd);
  bool written = record_processes_write_output(procs, o->period_ns, not_attached, &out, o->output,
                                               o->format, PROG);
  record_totals_t totals;
  record_processes_totals(procs, &totals);
  record_processes_free(procs);
  fclose(spool);
  if (written) print_summary(o, &totals, not_attached, kernel, ring_cut, copy_cut, raised);
  *wstatus_out = wstatus;
  if (o->program == NULL) return written ? 0 : 1;
  return RECORD_RUN_EXIT_LIKE_PROGRAM;
}
