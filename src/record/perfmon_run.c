// `zxsampler perfmon stat` and `perfmon record` (see perfmon_run.h).
#define _GNU_SOURCE
#include "perfmon_run.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/object.h>
#include <zxsampler/sampler.h>

#include "launcher.h"
#include "record_perf.h"
#include "record_processes.h"
#include "ticks.h"
#include "trace_output.h"

#define STAT_BUFFER_PAGES 4u  // final records only: a TIME and 32 COUNTs fit in one page

// --- Small helpers ------------------------------------------------------------------------------

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock of the records' times
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double now_seconds(void) { return (double)now_ns() / 1e9; }

// A whole small file (/proc, /sys) as a NUL-terminated string; NULL if unreadable or empty.
static char* read_text(const char* path) {
  FILE* f = fopen(path, "re");
  if (f == NULL) return NULL;
  size_t cap = 4096, len = 0;
  char* text = malloc(cap);
  while (text != NULL) {
    size_t got = fread(text + len, 1, cap - len - 1, f);
    len += got;
    if (got == 0) break;
    if (len + 1 == cap) {
      char* grown = realloc(text, cap * 2);
      if (grown == NULL) {
        free(text);
        text = NULL;
        break;
      }
      text = grown;
      cap *= 2;
    }
  }
  fclose(f);
  if (text != NULL) text[len] = '\0';
  if (text != NULL && len == 0) {
    free(text);
    text = NULL;
  }
  return text;
}

// The numbers of the online CPUs, ascending (buffer i is the i-th): labels for the output.
static void cpu_numbers(uint32_t* out, uint32_t count) {
  for (uint32_t i = 0; i < count; i++) out[i] = i;
  char* list = read_text("/sys/devices/system/cpu/online");
  if (list == NULL) return;
  uint32_t n = 0;
  for (char* p = list; *p != '\0' && *p != '\n' && n < count;) {
    char* end;
    unsigned long lo = strtoul(p, &end, 10), hi = lo;
    if (end == p) break;
    p = end;
    if (*p == '-') {
      hi = strtoul(p + 1, &end, 10);
      p = end;
    }
    for (unsigned long c = lo; c <= hi && n < count; c++) out[n++] = (uint32_t)c;
    if (*p == ',') p++;
  }
  free(list);
}

static const char* paranoid_text(void) {
  static char text[32];
  char* v = read_text("/proc/sys/kernel/perf_event_paranoid");
  snprintf(text, sizeof(text), "%s", v != NULL ? v : "unknown");
  free(v);
  text[strcspn(text, "\n")] = '\0';
  return text;
}

// --- The controller ----------------------------------------------------------------------------

typedef struct {
  zx_handle_t rsrc;
  zx_handle_t ctl;
  uint32_t buffers;
  zxs_perfmon_config_t config;
} session_t;

static void session_end(session_t* s) {
  if (s->ctl != ZX_HANDLE_INVALID) zxs_handle_close(s->ctl);
  if (s->rsrc != ZX_HANDLE_INVALID) zxs_handle_close(s->rsrc);
  s->ctl = s->rsrc = ZX_HANDLE_INVALID;
}

// The events could not be staged together (`status`): says which one is refused alone, or that
// they do not go together.
static void explain_refused(const session_t* s, const char* prog, const perfmon_events_t* events,
                            zx_status_t status) {
  zxs_perfmon_properties_t props;
  memset(&props, 0, sizeof(props));
  zxs_perfmon_get_properties(s->ctl, &props);
  for (uint32_t i = 0; i < events->count; i++) {
    zxs_perfmon_config_t one;
    memset(&one, 0, sizeof(one));
    one.events[0] = s->config.events[i];
    zx_status_t alone = zxs_perfmon_stage_config(s->ctl, &one);
    if (alone == ZX_OK) continue;
    if (alone == ZX_ERR_NOT_SUPPORTED && props.pm_version == 0) {
      fprintf(stderr,
              "%s: '%s' is not supported here: it is a hardware event and this host has no "
              "PMU (a VM without a virtual PMU, say)\n",
              prog, events->ev[i].text);
    } else {
      fprintf(stderr, "%s: '%s': %s\n", prog, events->ev[i].text, zxs_status_string(alone));
    }
    return;
  }
  fprintf(stderr, "%s: cannot use these events together: %s\n", prog, zxs_status_string(status));
}

// Opens, initializes and stages `events`. Prints what went wrong and returns false on failure.
static bool session_begin(session_t* s, const char* prog, const perfmon_events_t* events,
                          uint32_t pages) {
  memset(s, 0, sizeof(*s));
  zx_status_t status = zxs_debug_resource_get(&s->rsrc);
  if (status == ZX_OK) status = zxs_perfmon_open(s->rsrc, &s->ctl);
  if (status == ZX_ERR_ACCESS_DENIED) {
    fprintf(stderr,
            "%s: not allowed to monitor every CPU: that needs root (or CAP_PERFMON), or "
            "kernel.perf_event_paranoid <= 0 (it is %s)\n",
            prog, paranoid_text());
    session_end(s);
    return false;
  }
  if (status != ZX_OK) {
    fprintf(stderr, "%s: cannot open the performance monitor: %s\n", prog,
            zxs_status_string(status));
    session_end(s);
    return false;
  }
  s->buffers = zxs_system_get_num_cpus();
  zxs_perfmon_allocation_t a = {.num_buffers = s->buffers, .buffer_size_in_pages = pages};
  status = zxs_perfmon_initialize(s->ctl, &a);
  if (status != ZX_OK) {
    fprintf(stderr, "%s: cannot allocate %u buffers of %u KiB: %s\n", prog, s->buffers, pages * 4,
            zxs_status_string(status));
    session_end(s);
    return false;
  }
  for (uint32_t i = 0; i < events->count; i++) {
    s->config.events[i] = (zxs_perfmon_event_config_t){
        .event = events->ev[i].id, .rate = events->ev[i].rate, .flags = events->ev[i].flags};
  }
  status = zxs_perfmon_stage_config(s->ctl, &s->config);
  if (status != ZX_OK) {
    explain_refused(s, prog, events, status);
    session_end(s);
    return false;
  }
  return true;
}

// Reads every buffer, calling `each` for its records (with the buffer's tick rate). Returns
// false (after a message) if a buffer cannot be read or is malformed; *full is set if any
// dropped records.
typedef void (*record_fn)(uint32_t buffer, const zxs_perfmon_record_t* rec,
                          uint64_t ticks_per_second, void* ctx);

static bool read_buffers(const session_t* s, const char* prog, record_fn each, void* ctx,
                         bool* full) {
  *full = false;
  for (uint32_t b = 0; b < s->buffers; b++) {
    zx_handle_t vmo;
    uint64_t size = 0;
    zx_vaddr_t addr = 0;
    zx_status_t status = zxs_perfmon_get_buffer_handle(s->ctl, b, &vmo);
    if (status == ZX_OK) status = zxs_vmo_get_size(vmo, &size);
    if (status == ZX_OK) {
      status = zxs_vmar_map(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, vmo, 0, size, &addr);
      zxs_handle_close(vmo);
    }
    if (status != ZX_OK) {
      fprintf(stderr, "%s: cannot read buffer %u: %s\n", prog, b, zxs_status_string(status));
      return false;
    }
    zxs_perfmon_reader_t r;
    zxs_perfmon_record_t rec;
    status = zxs_perfmon_reader_init(&r, (const void*)addr, size);
    const uint64_t tps = status == ZX_OK ? (uint64_t)r.header.ticks_per_second : 0;
    while (status == ZX_OK && zxs_perfmon_reader_next(&r, &rec)) each(b, &rec, tps, ctx);
    if (status == ZX_OK) status = r.status;
    zxs_vmar_unmap(zxs_vmar_root_self(), addr, size);
    if (status != ZX_OK) {
      fprintf(stderr, "%s: buffer %u is malformed: %s at byte %zu\n", prog, b, r.error,
              r.error_offset);
      return false;
    }
    *full |= (r.header.flags & ZXS_PERFMON_BUFFER_FLAG_FULL) != 0;
  }
  return true;
}

// --- The program --------------------------------------------------------------------------------

// What `record` learns of the program besides its PCs: its exec, threads and mappings, in the
// engine's process model.
typedef struct side_band {
  record_processes_t* procs;
  record_perf_t* perf;  // the dummy event's rings; NULL: /proc is read instead
  int pidfd;            // the program, readable once it exited; -1: polled
} side_band_t;

// Follows the program `pid` (held before its exec) in a new process model over `spool`.
// False when out of memory (said).
static bool side_band_open(side_band_t* sb, FILE* spool, bool kernel, const char* prog, pid_t pid,
                           const char* program) {
  const record_perf_options_t options = {
      .pid = pid, .inherit_children = true, .side_band_only = true};
  char error[512];
  sb->perf = record_perf_open(&options, error, sizeof(error));
  if (sb->perf == NULL) {
    fprintf(stderr, "%s: cannot follow %s's mappings with perf (%s): reading /proc instead\n", prog,
            program, error);
  }
  sb->pidfd = sb->perf != NULL ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
  const uint64_t sample_type = sb->perf != NULL ? record_perf_sample_type(sb->perf) : 0;
  sb->procs = record_processes_new(spool, sample_type, pid, kernel, true, false);
  if (sb->procs == NULL) {
    fprintf(stderr, "%s: out of memory\n", prog);
    return false;
  }
  record_processes_expect_pcs(sb->procs, 0);
  return true;
}

static void side_band_close(side_band_t* sb) {
  record_perf_close(sb->perf);
  sb->perf = NULL;
  if (sb->pidfd >= 0) close(sb->pidfd);
  sb->pidfd = -1;
}

// Waits for the program, following it: its side band drained as it comes, or /proc read every
// quarter second.
static void watch_program(side_band_t* sb, pid_t pid, int* wstatus) {
  for (unsigned tick = 0;; tick++) {
    const pid_t r = waitpid(pid, wstatus, WNOHANG);
    if (r < 0 && errno == EINTR) continue;
    if (r != 0) break;  // exited, or not ours to wait for
    if (sb->perf != NULL) {
      record_perf_poll(sb->perf, sb->pidfd, sb->pidfd >= 0 ? 100 : 10, record_processes_on_record,
                       record_processes_on_runtime_record, sb->procs);
    } else {
      if (tick % 25 == 0) record_processes_add_running(sb->procs, pid);
      usleep(10000);
    }
  }
  if (sb->perf != NULL) {
    record_perf_drain(sb->perf, record_processes_on_record, record_processes_on_runtime_record,
                      sb->procs);
  }
}

static int exit_code_of(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

// Runs PROGRAM to its end (followed with `sb`). Ctrl-C and friends go to the program, not to
// us. Returns its exit status, or -1 when it could not be run (said; *exec_errno says why
// when the exec failed).
static int run_program(const char* prog, char** program, side_band_t* sb, FILE* spool, bool kernel,
                       int* exec_errno) {
  record_launch_t launch;
  if (!record_launch_start(program, &launch)) {
    fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
    return -1;
  }
  if (sb != NULL && !side_band_open(sb, spool, kernel, prog, launch.pid, program[0])) {
    record_launch_abandon(&launch);
    return -1;
  }
  int wstatus = 0;
  *exec_errno = record_launch_release(&launch, &wstatus);
  if (*exec_errno != 0) {
    fprintf(stderr, "%s: cannot run %s: %s\n", prog, program[0], strerror(*exec_errno));
    return -1;
  }
  if (sb != NULL) record_processes_expect_pcs(sb->procs, now_ns());  // where no COMM_EXEC comes
  void (*old_int)(int) = signal(SIGINT, SIG_IGN);
  void (*old_term)(int) = signal(SIGTERM, SIG_IGN);
  if (sb != NULL) {
    watch_program(sb, launch.pid, &wstatus);
  } else {
    record_launch_wait(launch.pid, &wstatus);
  }
  signal(SIGINT, old_int);
  signal(SIGTERM, old_term);
  return exit_code_of(wstatus);
}

// Without a program: until SIGINT, SIGTERM or SIGHUP.
static void wait_for_signal(const char* prog) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  fprintf(stderr, "%s: monitoring every CPU; Ctrl-C to stop\n", prog);
  int sig;
  sigwait(&set, &sig);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

// Runs the program (or waits for a signal) between start and stop, for `record` with `sb`.
// Returns the exit status to pass on, or -1 when nothing could be run (said).
static int run_between(const session_t* s, const char* prog, char** program, side_band_t* sb,
                       FILE* spool, bool kernel, double* seconds, int* exec_errno) {
  *exec_errno = 0;
  zx_status_t status = zxs_perfmon_start(s->ctl);
  if (status != ZX_OK) {
    fprintf(stderr, "%s: cannot start: %s\n", prog, zxs_status_string(status));
    return -1;
  }
  const double t0 = now_seconds();
  int code = 0;
  if (program != NULL) {
    code = run_program(prog, program, sb, spool, kernel, exec_errno);
  } else {
    wait_for_signal(prog);
  }
  *seconds = now_seconds() - t0;
  zxs_perfmon_stop(s->ctl);
  return code;
}

// --- stat ---------------------------------------------------------------------------------------

typedef struct {
  const perfmon_events_t* events;
  uint64_t* counts;  // [buffer][event]
} stat_t;

// Each event's count: its COUNT records plus its rate for each TICK or PC record.
static void add_counts(uint32_t b, const zxs_perfmon_record_t* rec, uint64_t ticks_per_second,
                       void* ctx) {
  (void)ticks_per_second;
  stat_t* st = ctx;
  for (uint32_t i = 0; i < st->events->count; i++) {
    if (st->events->ev[i].id != rec->event) continue;
    uint64_t* count = &st->counts[(size_t)b * ZXS_PERFMON_MAX_NUM_EVENTS + i];
    if (rec->type == ZXS_PERFMON_RECORD_COUNT) {
      *count += rec->count;
    } else if (rec->type == ZXS_PERFMON_RECORD_TICK || rec->type == ZXS_PERFMON_RECORD_PC) {
      *count += st->events->ev[i].rate;
    }
  }
}

static void print_stat(FILE* out, const session_t* s, const perfmon_events_t* events,
                       const uint64_t* counts, const char* sep, double seconds, char** program,
                       bool full) {
  uint32_t* cpus = calloc(s->buffers, sizeof(uint32_t));
  if (cpus == NULL) return;
  cpu_numbers(cpus, s->buffers);
  if (sep != NULL) {
    for (uint32_t i = 0; i < events->count; i++) {
      uint64_t total = 0;
      for (uint32_t b = 0; b < s->buffers; b++) {
        const uint64_t v = counts[(size_t)b * ZXS_PERFMON_MAX_NUM_EVENTS + i];
        total += v;
        fprintf(out, "CPU%u%s%" PRIu64 "%s%s\n", cpus[b], sep, v, sep, events->ev[i].text);
      }
      fprintf(out, "total%s%" PRIu64 "%s%s\n", sep, total, sep, events->ev[i].text);
    }
    free(cpus);
    return;
  }
  fprintf(out, "\n Performance monitor counts, every CPU (%u), ", s->buffers);
  if (program != NULL) {
    fprintf(out, "while '");
    for (char** a = program; *a != NULL; a++) fprintf(out, "%s%s", a == program ? "" : " ", *a);
    fprintf(out, "' ran:\n\n");
  } else {
    fprintf(out, "system wide:\n\n");
  }
  for (uint32_t b = 0; b < s->buffers; b++) {
    char label[24];
    snprintf(label, sizeof(label), "CPU%u", cpus[b]);
    fprintf(out, "%16s", label);
  }
  fprintf(out, "%18s  event\n", "total");
  for (uint32_t i = 0; i < events->count; i++) {
    uint64_t total = 0;
    for (uint32_t b = 0; b < s->buffers; b++) {
      const uint64_t v = counts[(size_t)b * ZXS_PERFMON_MAX_NUM_EVENTS + i];
      total += v;
      fprintf(out, "%16" PRIu64, v);
    }
    fprintf(out, "%18" PRIu64 "  %s\n", total, events->ev[i].text);
  }
  fprintf(out, "\n %16.9f seconds time elapsed\n", seconds);
  if (full) fprintf(out, " (some records were dropped: the counts are low)\n");
  fprintf(out, "\n");
  free(cpus);
}

// Counts over the run into `out`: the exit status.
static int stat_session(const session_t* s, const perfmon_stat_options_t* o, FILE* out) {
  double seconds = 0;
  int exec_errno = 0;
  int code = run_between(s, o->prog, o->program, NULL, NULL, false, &seconds, &exec_errno);
  if (code < 0) return exec_errno != 0 ? record_exec_status(exec_errno) : 1;  // as a shell's
  uint64_t* counts = calloc((size_t)s->buffers * ZXS_PERFMON_MAX_NUM_EVENTS, sizeof(uint64_t));
  stat_t st = {.events = o->events, .counts = counts};
  bool full = false;
  if (counts == NULL || !read_buffers(s, o->prog, add_counts, &st, &full)) {
    code = 1;
  } else {
    print_stat(out, s, o->events, counts, o->separator, seconds, o->program, full);
  }
  free(counts);
  return code;
}

int perfmon_stat_run(const perfmon_stat_options_t* o) {
  FILE* out = stderr;
  if (o->output != NULL && (out = fopen(o->output, "we")) == NULL) {
    fprintf(stderr, "%s: cannot write %s: %s\n", o->prog, o->output, strerror(errno));
    return 1;
  }
  session_t s;
  int code = 1;
  if (session_begin(&s, o->prog, o->events, STAT_BUFFER_PAGES)) {
    code = stat_session(&s, o, out);
    session_end(&s);
  }
  if (out != stderr && fclose(out) != 0) {
    fprintf(stderr, "%s: cannot write %s: %s\n", o->prog, o->output, strerror(errno));
    code = 1;
  }
  return code;
}

// --- record -------------------------------------------------------------------------------------

// A PC record into the process model, its time in CLOCK_MONOTONIC ns (the side band's clock:
// the Linux controller's ticks are those nanoseconds, ticks_per_second 1e9).
static void feed_pc(uint32_t b, const zxs_perfmon_record_t* rec, uint64_t ticks_per_second,
                    void* ctx) {
  (void)b;
  if (rec->type != ZXS_PERFMON_RECORD_PC) return;
  const uint32_t pid = ZXS_PERFMON_ASPACE_PID(rec->pc.aspace);
  uint32_t tid = ZXS_PERFMON_ASPACE_TID(rec->pc.aspace);
  if (tid == UINT32_MAX) tid = pid;  // perf's "-1": a thread already past its exit
  // The kernel's half of the address space (x86_64, arm64): a kernel PC.
  const bool kernel_pc = (rec->pc.pc >> 63) != 0;
  record_processes_on_pc(ctx, zxs_ticks_to_ns((uint64_t)rec->time, ticks_per_second), pid, tid,
                         rec->pc.pc, kernel_pc);
}

// The sampling period (the clocks count nanoseconds: their rate is it; 0 for other events) and
// whether a sampled event counts in kernel mode (its PCs can be the kernel's).
static uint64_t record_plan(const perfmon_events_t* events, bool* kernel) {
  uint64_t period = 0;
  *kernel = false;
  for (uint32_t i = 0; i < events->count; i++) {
    if (events->ev[i].rate == 0) continue;
    *kernel |= (events->ev[i].flags & ZXS_PERFMON_EVENT_FLAG_COLLECT_OS) != 0;
    const char* name = zxs_perfmon_event_name(events->ev[i].id);
    if (period == 0 && name != NULL &&
        (strcmp(name, "misc:cpu_clock") == 0 || strcmp(name, "misc:task_clock") == 0)) {
      period = events->ev[i].rate;
    }
  }
  return period;
}

// Says what was written, and what was left out or lost.
static void print_record_summary(const perfmon_record_options_t* o, const record_processes_t* procs,
                                 bool full) {
  record_totals_t t;
  record_processes_totals(procs, &t);
  if (o->program != NULL) {
    fprintf(stderr, "%s: %" PRIu64 " samples of %s (pid %u) written to %s", o->prog, t.samples,
            t.root_name[0] != '\0' ? t.root_name : o->program[0], t.root_pid, o->output);
    fprintf(stderr,
            " (left out: %" PRIu64 " samples of other processes, %" PRIu64
            " of its pid before its exec)",
            t.pc_other_processes, t.pc_before_exec);
  } else {
    fprintf(stderr, "%s: %" PRIu64 " samples of every process written to %s", o->prog, t.samples,
            o->output);
  }
  fprintf(stderr, "%s\n",
          full ? "; some were lost: a buffer was full, or the kernel gave them to another "
                 "CPU-wide perf session"
               : "");
  if (o->program != NULL && t.root_mappings == 0) {
    fprintf(stderr, "%s: could not read the program's modules: its PCs stay unnamed\n", o->prog);
  }
}

// Samples over the run and writes the profile: the exit status.
static int record_session(const session_t* s, const perfmon_record_options_t* o, FILE* spool,
                          zxs_trace_output_t* out) {
  bool kernel;
  const uint64_t period = record_plan(o->events, &kernel);
  side_band_t sb = {.pidfd = -1};
  if (o->program == NULL) {
    sb.procs = record_processes_new(spool, 0, 0, kernel, true, false);
    if (sb.procs == NULL) {
      fprintf(stderr, "%s: out of memory\n", o->prog);
      return 1;
    }
    record_processes_expect_pcs(sb.procs, 0);
  }
  double seconds = 0;
  int exec_errno = 0;
  int code = run_between(s, o->prog, o->program, &sb, spool, kernel, &seconds, &exec_errno);
  side_band_close(&sb);
  bool full = false;
  if (code < 0) {
    code = exec_errno != 0 ? record_exec_status(exec_errno) : 1;
  } else if (!read_buffers(s, o->prog, feed_pc, sb.procs, &full) ||
             !record_processes_write_output(sb.procs, period, 0, out, o->output, o->format,
                                            o->prog)) {
    code = 1;
  } else {
    print_record_summary(o, sb.procs, full);
  }
  record_processes_free(sb.procs);
  return code;
}

int perfmon_record_run(const perfmon_record_options_t* o) {
  // The output first: a profile that cannot be written is said before the program runs.
  zxs_trace_output_t out;
  char error[512];
  if (zxs_trace_output_open(o->output, &out, error, sizeof(error)) != ZX_OK) {
    fprintf(stderr, "%s: %s\n", o->prog, error);
    return 1;
  }
  FILE* spool = tmpfile();
  if (spool == NULL) {
    fprintf(stderr, "%s: cannot make a temporary file: %s\n", o->prog, strerror(errno));
    zxs_trace_output_abandon(&out);
    return 1;
  }
  session_t s;
  int code = 1;
  if (session_begin(&s, o->prog, o->events, o->buffer_pages)) {
    code = record_session(&s, o, spool, &out);
    session_end(&s);
  }
  zxs_trace_output_abandon(&out);  // nothing when written (committed)
  fclose(spool);
  return code;
}
