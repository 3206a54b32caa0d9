// zxsampler perfmon: the CPU performance monitor (<zxsampler/perfmon.h>) from the command line.
//
//   zxsampler perfmon stat [-e EVENTS] [-x SEP] [-o FILE] [-- PROGRAM [ARGS...]]
//   zxsampler perfmon record [-e EVENT@RATE] [-o FILE] [-f FORMAT] [-b MB] [-- PROGRAM [ARGS...]]
//
// Both count on every CPU, every process (like `perf stat -a` / `perf record -a`), from before
// PROGRAM starts until it exits, or without PROGRAM until SIGINT, SIGTERM or SIGHUP. `record`
// keeps the PC samples of PROGRAM's process and writes them as a trace file that `zxsampler
// report` (and zxs_profile_convert) reads, with the program's modules (followed as perf record
// does, see "The program" below) to name their functions.
#define _GNU_SOURCE
#include "zxsampler_perfmon.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/fxt.h>
#include <zxsampler/object.h>
#include <zxsampler/perfmon.h>
#include <zxsampler/profiler.h>
#include <zxsampler/sampler.h>

#include "cli.h"
#include "launcher.h"
#include "trace_file.h"

#define OS_USER (ZXS_PERFMON_EVENT_FLAG_COLLECT_OS | ZXS_PERFMON_EVENT_FLAG_COLLECT_USER)
#define DEFAULT_STAT_EVENTS "cpu-clock,context-switches,cpu-migrations,page-faults"
#define DEFAULT_RECORD_EVENT "cpu-clock@1000000"
#define STAT_BUFFER_PAGES 4u  // final records only: a TIME and 32 COUNTs fit in one page

static const char* g_prog = "zxsampler perfmon";

// --- Usage --------------------------------------------------------------------------------------

static void usage_main(FILE* out) {
  fprintf(out,
          "usage: %s <command> [options] [-- PROGRAM [ARGS...]]\n"
          "\n"
          "The CPU performance monitor (fuchsia.perfmon.cpu on Linux perf events): events are\n"
          "counted on every CPU, for every process, while PROGRAM runs (or, without PROGRAM,\n"
          "until Ctrl-C). Needs root, CAP_PERFMON or kernel.perf_event_paranoid <= 0.\n"
          "\n"
          "commands:\n"
          "  stat     count events, per CPU and in total (like perf stat -a)\n"
          "  record   sample PCs every RATE events into a profile 'zxsampler report' reads\n"
          "\n"
          "Events: cpu-clock, task-clock, page-faults (faults), minor-faults, major-faults,\n"
          "context-switches (cs), cpu-migrations (migrations); with a PMU also cycles,\n"
          "instructions, ref-cycles, cache-references, cache-misses, branches, branch-misses;\n"
          "or Fuchsia's names (misc:page_faults, arch:instructions_retired, fixed:...).\n"
          "Append :u or :k to count only in user or kernel mode (an event is counted once per\n"
          "run, in one mode).\n",
          g_prog);
}

static void usage_stat(FILE* out) {
  fprintf(out,
          "usage: %s stat [options] [-- PROGRAM [ARGS...]]\n"
          "\n"
          "Counts events on every CPU while PROGRAM runs, or until SIGINT/SIGTERM/SIGHUP, and\n"
          "prints the counts per CPU and in total.\n"
          "\n"
          "options:\n"
          "  -e, --events LIST        comma-separated events (default %s)\n"
          "  -x, --field-separator S  machine-readable: one line per event and CPU,\n"
          "                           CPU S COUNT S EVENT (CPU is CPUn or total)\n"
          "  -o, --output FILE        write the counts there (default: standard error)\n"
          "  -h, --help               this text\n",
          g_prog, DEFAULT_STAT_EVENTS);
}

static void usage_record(FILE* out) {
  fprintf(out,
          "usage: %s record [options] [-- PROGRAM [ARGS...]]\n"
          "\n"
          "Samples the PC on every CPU each RATE occurrences of EVENT and writes the samples of\n"
          "PROGRAM's process (of every process without PROGRAM, then unsymbolized) as a\n"
          "profile: 'zxsampler report FILE' prints or converts it.\n"
          "\n"
          "options:\n"
          "  -e, --event EVENT@RATE   what to sample (default %s: every ms of CPU\n"
          "                           time); more, comma-separated; an event without @RATE\n"
          "                           is counted\n"
          "  -o, --output FILE        where to write the profile (default zxsampler-perfmon.fxt)\n"
          "  -f, --format FMT         fxt (default), pprof, folded, svg, markup or top\n"
          "  -b, --buffer MB          buffer per CPU in MiB (default 16)\n"
          "  -h, --help               this text\n",
          g_prog, DEFAULT_RECORD_EVENT);
}

static int fail_usage(void (*usage)(FILE*), const char* format, const char* arg) {
  return cli_fail_usage_as(g_prog, usage, format, arg);
}

// --- Events -------------------------------------------------------------------------------------

typedef struct {
  char text[96];  // as the user wrote it (without @RATE)
  uint16_t id;
  uint32_t rate;
  uint32_t flags;
} event_arg_t;

typedef struct {
  event_arg_t ev[ZXS_PERFMON_MAX_NUM_EVENTS];
  uint32_t count;
} event_list_t;

// "NAME[:u|:k|:uk][@RATE]" -> an event. False with a message in err.
static bool parse_event(const char* item, bool allow_rate, event_arg_t* out, char* err,
                        size_t err_size) {
  memset(out, 0, sizeof(*out));
  char name[96];
  const char* at = strchr(item, '@');
  const size_t len = at != NULL ? (size_t)(at - item) : strlen(item);
  if (len == 0 || len >= sizeof(name)) {
    snprintf(err, err_size, "bad event '%s'", item);
    return false;
  }
  memcpy(name, item, len);
  name[len] = '\0';
  snprintf(out->text, sizeof(out->text), "%s", name);
  if (at != NULL) {
    if (!allow_rate) {
      snprintf(err, err_size, "'%s': stat counts; sample with 'record'", item);
      return false;
    }
    char* end;
    errno = 0;
    unsigned long long rate = strtoull(at + 1, &end, 10);
    if (errno != 0 || end == at + 1 || *end != '\0' || rate == 0 || rate > UINT32_MAX) {
      snprintf(err, err_size, "'%s': RATE must be a count from 1 to %u", item, UINT32_MAX);
      return false;
    }
    out->rate = (uint32_t)rate;
  }
  out->flags = OS_USER;
  if (zxs_perfmon_event_id(name, &out->id) != ZX_OK) {
    // A modifier after the last ':' ("page-faults:u", "misc:page_faults:k").
    char* colon = strrchr(name, ':');
    bool user = false, kernel = false, ok = colon != NULL && colon[1] != '\0';
    for (const char* m = colon != NULL ? colon + 1 : ""; ok && *m != '\0'; m++) {
      user |= *m == 'u';
      kernel |= *m == 'k';
      ok = *m == 'u' || *m == 'k';
    }
    if (ok) *colon = '\0';
    if (!ok || zxs_perfmon_event_id(name, &out->id) != ZX_OK) {
      snprintf(err, err_size, "unknown event '%s'", out->text);
      return false;
    }
    out->flags = (user ? ZXS_PERFMON_EVENT_FLAG_COLLECT_USER : 0) |
                 (kernel ? ZXS_PERFMON_EVENT_FLAG_COLLECT_OS : 0);
  }
  if (out->rate > 0) out->flags |= ZXS_PERFMON_EVENT_FLAG_COLLECT_PC;
  return true;
}

// An event as the user wrote it, with its @RATE.
static void event_display(const event_arg_t* ev, char* out, size_t size) {
  if (ev->rate > 0) {
    snprintf(out, size, "%s@%" PRIu32, ev->text, ev->rate);
  } else {
    snprintf(out, size, "%s", ev->text);
  }
}

// Two items of one list that name the same event. The controller takes each event once per run
// (fuchsia.perfmon.cpu's rule: its records name an event by id, not by mode or rate), so two
// modes of one event cannot be counted side by side: say so, and what to do instead.
static void same_event_error(const event_arg_t* first, const event_arg_t* again, char* err,
                             size_t err_size) {
  char a[112], b[112];
  event_display(first, a, sizeof(a));
  event_display(again, b, sizeof(b));
  const char* name = zxs_perfmon_event_name(again->id);
  if (name == NULL) name = "?";
  if (strcasecmp(a, b) == 0) {
    snprintf(err, err_size, "'%s' given twice", b);
  } else if ((first->flags & OS_USER) != (again->flags & OS_USER)) {
    // The event without its modifier: both modes.
    char both[96];
    snprintf(both, sizeof(both), "%s",
             (first->flags & OS_USER) == OS_USER ? first->text : again->text);
    char* colon = strrchr(both, ':');
    if ((first->flags & OS_USER) != OS_USER && (again->flags & OS_USER) != OS_USER &&
        colon != NULL) {
      *colon = '\0';
    }
    snprintf(err, err_size,
             "'%s' and '%s' are one event (%s) in different modes: the performance monitor "
             "counts an event once per run, in one mode; count '%s' for both modes, or one mode "
             "per run",
             a, b, name, both);
  } else {
    snprintf(err, err_size,
             "'%s' and '%s' are one event (%s): the performance monitor takes an event once "
             "per run",
             a, b, name);
  }
}

static bool parse_events(const char* list, bool allow_rate, event_list_t* out, char* err,
                         size_t err_size) {
  char* copy = strdup(list);
  if (copy == NULL) {
    snprintf(err, err_size, "out of memory");
    return false;
  }
  bool ok = true;
  char* save = NULL;
  for (char* item = strtok_r(copy, ",", &save); ok && item != NULL;
       item = strtok_r(NULL, ",", &save)) {
    if (out->count == ZXS_PERFMON_MAX_NUM_EVENTS) {
      snprintf(err, err_size, "at most %d events", ZXS_PERFMON_MAX_NUM_EVENTS);
      ok = false;
      break;
    }
    ok = parse_event(item, allow_rate, &out->ev[out->count], err, err_size);
    for (uint32_t i = 0; ok && i < out->count; i++) {
      if (out->ev[i].id == out->ev[out->count].id) {
        same_event_error(&out->ev[i], &out->ev[out->count], err, err_size);
        ok = false;
      }
    }
    if (ok) out->count++;
  }
  free(copy);
  if (ok && out->count == 0) {
    snprintf(err, err_size, "no event given");
    ok = false;
  }
  return ok;
}

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

// --- The controller
// -------------------------------------------------------------------------------

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

// Opens, initializes and stages `events`. Prints what went wrong and returns false on failure.
static bool session_begin(session_t* s, const event_list_t* events, uint32_t pages) {
  memset(s, 0, sizeof(*s));
  zx_status_t status = zxs_debug_resource_get(&s->rsrc);
  if (status == ZX_OK) status = zxs_perfmon_open(s->rsrc, &s->ctl);
  if (status == ZX_ERR_ACCESS_DENIED) {
    fprintf(stderr,
            "%s: not allowed to monitor every CPU: that needs root (or CAP_PERFMON), or "
            "kernel.perf_event_paranoid <= 0 (it is %s)\n",
            g_prog, paranoid_text());
    session_end(s);
    return false;
  }
  if (status != ZX_OK) {
    fprintf(stderr, "%s: cannot open the performance monitor: %s\n", g_prog,
            zxs_status_string(status));
    session_end(s);
    return false;
  }
  s->buffers = zxs_system_get_num_cpus();
  zxs_perfmon_allocation_t a = {.num_buffers = s->buffers, .buffer_size_in_pages = pages};
  status = zxs_perfmon_initialize(s->ctl, &a);
  if (status != ZX_OK) {
    fprintf(stderr, "%s: cannot allocate %u buffers of %u KiB: %s\n", g_prog, s->buffers, pages * 4,
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
    // Which one: each alone.
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
                g_prog, events->ev[i].text);
      } else {
        fprintf(stderr, "%s: '%s': %s\n", g_prog, events->ev[i].text, zxs_status_string(alone));
      }
      session_end(s);
      return false;
    }
    fprintf(stderr, "%s: cannot use these events together: %s\n", g_prog,
            zxs_status_string(status));
    session_end(s);
    return false;
  }
  return true;
}

// Reads every buffer, calling `each` for its records. Returns false (after a message) if a
// buffer is malformed; *full is set if any dropped records.
typedef void (*record_fn)(uint32_t buffer, const zxs_perfmon_record_t* rec, void* ctx);

static bool read_buffers(const session_t* s, record_fn each, void* ctx, bool* full,
                         zx_ticks_t* ticks_per_second) {
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
      fprintf(stderr, "%s: cannot read buffer %u: %s\n", g_prog, b, zxs_status_string(status));
      return false;
    }
    zxs_perfmon_reader_t r;
    zxs_perfmon_record_t rec;
    status = zxs_perfmon_reader_init(&r, (const void*)addr, size);
    while (status == ZX_OK && zxs_perfmon_reader_next(&r, &rec)) each(b, &rec, ctx);
    if (status == ZX_OK) status = r.status;
    zxs_vmar_unmap(zxs_vmar_root_self(), addr, size);
    if (status != ZX_OK) {
      fprintf(stderr, "%s: buffer %u is malformed: %s at byte %zu\n", g_prog, b, r.error,
              r.error_offset);
      return false;
    }
    *full |= (r.header.flags & ZXS_PERFMON_BUFFER_FLAG_FULL) != 0;
    if (ticks_per_second != NULL && r.header.ticks_per_second > 0) {
      *ticks_per_second = r.header.ticks_per_second;
    }
  }
  return true;
}

// --- The program --------------------------------------------------------------------------------
//
// `record` needs the program's modules to name its PCs. It watches the program the way perf
// record -a does: a perf dummy event per CPU, whose rings get every process's executable
// mappings (PERF_RECORD_MMAP), names (COMM) and threads (FORK); those of the program's pid are
// kept. (A per-task event inherited by the program's threads cannot have a ring.) Where these
// events cannot be opened, it reads /proc/PID/maps every quarter second instead.

typedef struct {
  int tid;
  char name[32];
} thread_name_t;

// A file mapping of the program: where, and from which offset of which file.
typedef struct {
  uint64_t start;
  uint64_t len;
  uint64_t pgoff;
  char* path;
} mapping_t;

typedef struct {
  int fd;
  uint8_t* ring;
  size_t ring_len, data_size;
} side_ring_t;

typedef struct {
  pid_t pid;
  int wstatus;
  bool exec_failed;
  int exec_errno;      // why, when exec_failed
  uint64_t exec_ns;    // CLOCK_MONOTONIC when its exec took over: the kernel's COMM_EXEC
                       // record's time, else when its close-on-exec files were seen closed
  bool exec_exact;     // exec_ns is the kernel's
  side_ring_t* rings;  // the side band, one per CPU; NULL: none (then /proc is read)
  uint32_t ring_count;
  bool lost;  // the side band lost records
  mapping_t* maps;
  size_t map_count, map_cap;
  char comm[32];
  thread_name_t* threads;
  size_t thread_count;
} child_t;

static void chomp(char* s) { s[strcspn(s, "\n")] = '\0'; }

static void note_thread(child_t* c, int tid, const char* name, bool rename) {
  for (size_t i = 0; i < c->thread_count; i++) {
    if (c->threads[i].tid == tid) {
      if (rename) snprintf(c->threads[i].name, sizeof(c->threads[i].name), "%.31s", name);
      return;
    }
  }
  thread_name_t* grown = realloc(c->threads, (c->thread_count + 1) * sizeof(*grown));
  if (grown == NULL) return;
  c->threads = grown;
  c->threads[c->thread_count].tid = tid;
  snprintf(c->threads[c->thread_count].name, sizeof(c->threads[0].name), "%.31s", name);
  c->thread_count++;
}

static void add_mapping(child_t* c, uint64_t start, uint64_t len, uint64_t pgoff,
                        const char* path) {
  if (c->map_count == c->map_cap) {
    size_t cap = c->map_cap == 0 ? 64 : c->map_cap * 2;
    mapping_t* grown = realloc(c->maps, cap * sizeof(*grown));
    if (grown == NULL) return;
    c->maps = grown;
    c->map_cap = cap;
  }
  char* copy = strdup(path);
  if (copy == NULL) return;
  c->maps[c->map_count++] = (mapping_t){.start = start, .len = len, .pgoff = pgoff, .path = copy};
}

static void clear_mappings(child_t* c) {
  for (size_t i = 0; i < c->map_count; i++) free(c->maps[i].path);
  c->map_count = 0;
}

// The fallback: what /proc says the program looks like now (its file mappings, names).
static void snapshot(child_t* c) {
  char path[96];
  snprintf(path, sizeof(path), "/proc/%d/maps", (int)c->pid);
  char* maps = read_text(path);
  if (maps != NULL) {
    clear_mappings(c);
    for (char* line = strtok(maps, "\n"); line != NULL; line = strtok(NULL, "\n")) {
      unsigned long long start, end, offset;
      int path_at = 0;
      if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &offset, &path_at) >= 3 &&
          path_at > 0 && line[path_at] == '/') {
        add_mapping(c, start, end - start, offset, line + path_at);
      }
    }
    free(maps);
  }
  snprintf(path, sizeof(path), "/proc/%d/comm", (int)c->pid);
  char* comm = read_text(path);
  if (comm != NULL) {
    chomp(comm);
    snprintf(c->comm, sizeof(c->comm), "%s", comm);
    free(comm);
  }
  snprintf(path, sizeof(path), "/proc/%d/task", (int)c->pid);
  DIR* dir = opendir(path);
  if (dir == NULL) return;
  for (struct dirent* e; (e = readdir(dir)) != NULL;) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char file[320];
    snprintf(file, sizeof(file), "/proc/%d/task/%s/comm", (int)c->pid, e->d_name);
    char* name = read_text(file);
    if (name == NULL) continue;
    chomp(name);
    note_thread(c, atoi(e->d_name), name, true);
    free(name);
  }
  closedir(dir);
}

#define TRACK_DATA_PAGES 64u

static void track_close(child_t* c) {
  for (uint32_t i = 0; i < c->ring_count; i++) {
    if (c->rings[i].ring != NULL) munmap(c->rings[i].ring, c->rings[i].ring_len);
    if (c->rings[i].fd >= 0) close(c->rings[i].fd);
  }
  free(c->rings);
  c->rings = NULL;
  c->ring_count = 0;
}

// Opens the side band: a dummy event on every CPU. False (errno set): use /proc.
static bool track_open(child_t* c) {
  const uint32_t count = zxs_system_get_num_cpus();
  uint32_t* cpus = calloc(count, sizeof(uint32_t));
  c->rings = calloc(count, sizeof(side_ring_t));
  if (cpus == NULL || c->rings == NULL) {
    free(cpus);
    track_close(c);
    errno = ENOMEM;
    return false;
  }
  cpu_numbers(cpus, count);
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  bool ok = true;
  for (uint32_t i = 0; i < count && ok; i++) {
    side_ring_t* r = &c->rings[i];
    c->ring_count++;
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_DUMMY;
    attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    attr.sample_id_all = 1;
    attr.mmap = 1;  // executable mappings: one per module is enough to place it
    attr.comm = 1;
    attr.comm_exec = 1;  // marks the COMM of an exec: the program's start, timed
    attr.task = 1;
    attr.exclude_kernel = 1;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    r->fd = (int)syscall(SYS_perf_event_open, &attr, -1, (int)cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
    if (r->fd < 0) {
      ok = false;
      break;
    }
    r->data_size = TRACK_DATA_PAGES * page;
    r->ring_len = r->data_size + page;
    void* ring = mmap(NULL, r->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (ring == MAP_FAILED) {
      ok = false;
      break;
    }
    r->ring = ring;
  }
  free(cpus);
  if (!ok) {
    const int err = errno;
    track_close(c);
    errno = err;
  }
  return ok;
}

static void ring_read(const side_ring_t* r, uint64_t pos, void* dst, size_t len) {
  const uint8_t* data = r->ring + (r->ring_len - r->data_size);
  const size_t off = (size_t)(pos % r->data_size);
  const size_t first = len < r->data_size - off ? len : r->data_size - off;
  memcpy(dst, data + off, first);
  memcpy((uint8_t*)dst + first, data, len - first);
}

// A NUL-terminated string at `at` of a record of `size` bytes, or "" when it is not terminated.
static const char* record_string(const uint8_t* rec, size_t size, size_t at) {
  if (at >= size || memchr(rec + at, '\0', size - at) == NULL) return "";
  return (const char*)rec + at;
}

static void track_drain_ring(child_t* c, side_ring_t* r) {
  struct perf_event_mmap_page* meta = (struct perf_event_mmap_page*)(void*)r->ring;
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  static uint8_t rec[65536];
  while (head - tail >= sizeof(struct perf_event_header)) {
    struct perf_event_header hdr;
    ring_read(r, tail, &hdr, sizeof(hdr));
    if (hdr.size < sizeof(hdr) || hdr.size > head - tail) break;
    ring_read(r, tail, rec, hdr.size);
    uint32_t pid = 0, tid = 0;
    if (hdr.size >= 16) {
      memcpy(&pid, rec + 8, 4);
      memcpy(&tid, rec + 12, 4);
    }
    if (hdr.type == PERF_RECORD_MMAP && hdr.size >= 40 && pid == (uint32_t)c->pid) {
      uint64_t addr, len, pgoff;  // {pid, tid, addr, len, pgoff, filename}
      memcpy(&addr, rec + 16, 8);
      memcpy(&len, rec + 24, 8);
      memcpy(&pgoff, rec + 32, 8);
      const char* file = record_string(rec, hdr.size, 40);
      if (file[0] == '/') add_mapping(c, addr, len, pgoff, file);
    } else if (hdr.type == PERF_RECORD_COMM && hdr.size >= 16 && pid == (uint32_t)c->pid) {
      const char* name = record_string(rec, hdr.size, 16);  // {pid, tid, comm, sample_id}
      if ((hdr.misc & PERF_RECORD_MISC_COMM_EXEC) != 0 && !c->exec_exact && hdr.size >= 32) {
        // The first exec: sample_id ends with the time. Seeing the pipe close came later,
        // after the program may have run for a while.
        memcpy(&c->exec_ns, rec + hdr.size - 8, 8);
        c->exec_exact = true;
      }
      if (tid == pid) snprintf(c->comm, sizeof(c->comm), "%.31s", name);
      note_thread(c, (int)tid, name, true);
    } else if (hdr.type == PERF_RECORD_FORK && hdr.size >= 24 && pid == (uint32_t)c->pid) {
      uint32_t new_tid;  // {pid, ppid, tid, ptid, time}
      memcpy(&new_tid, rec + 16, 4);
      note_thread(c, (int)new_tid, c->comm, false);
    } else if (hdr.type == PERF_RECORD_LOST) {
      c->lost = true;
    }
    tail += hdr.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

static void track_drain(child_t* c) {
  for (uint32_t i = 0; i < c->ring_count; i++) {
    if (c->rings[i].ring != NULL) track_drain_ring(c, &c->rings[i]);
  }
}

// Starts PROGRAM; with `watch`, its modules are followed. Returns false if it could not be
// started (said).
static bool start_program(char** argv, bool watch, child_t* c) {
  memset(c, 0, sizeof(*c));
  record_launch_t launch;
  if (!record_launch_start(argv, &launch)) {
    fprintf(stderr, "%s: fork: %s\n", g_prog, strerror(errno));
    return false;
  }
  c->pid = launch.pid;
  if (watch && !track_open(c)) {
    fprintf(stderr, "%s: cannot follow %s's mappings with perf (%s): reading /proc instead\n",
            g_prog, argv[0], strerror(errno));
  }
  const int err = record_launch_release(&launch, &c->wstatus);
  c->exec_failed = err != 0;
  c->exec_errno = err;
  c->exec_ns = now_ns();
  if (c->exec_failed) {
    fprintf(stderr, "%s: cannot run %s: %s\n", g_prog, argv[0], strerror(err));
    track_close(c);
    return false;
  }
  const char* base = strrchr(argv[0], '/');
  snprintf(c->comm, sizeof(c->comm), "%.15s", base != NULL ? base + 1 : argv[0]);
  return true;
}

// Waits for the program, following its modules with `watch`. Ctrl-C and friends go to the
// program, not to us.
static void wait_program(child_t* c, bool watch) {
  void (*old_int)(int) = signal(SIGINT, SIG_IGN);
  void (*old_term)(int) = signal(SIGTERM, SIG_IGN);
  for (unsigned tick = 0;; tick++) {
    int status;
    pid_t r = waitpid(c->pid, &status, watch ? WNOHANG : 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (r == 0) {
      usleep(10000);
      if (c->rings != NULL && tick % 5 == 0) track_drain(c);
      if (c->rings == NULL && tick % 25 == 0) snapshot(c);
      continue;
    }
    c->wstatus = status;
    break;
  }
  track_drain(c);
  track_close(c);
  signal(SIGINT, old_int);
  signal(SIGTERM, old_term);
}

static int exit_code_of(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

static void free_child(child_t* c) {
  track_close(c);
  clear_mappings(c);
  free(c->maps);
  free(c->threads);
  c->maps = NULL;
  c->threads = NULL;
}

// Without a program: until SIGINT, SIGTERM or SIGHUP.
static void wait_for_signal(void) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  fprintf(stderr, "%s: monitoring every CPU; Ctrl-C to stop\n", g_prog);
  int sig;
  sigwait(&set, &sig);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

// Runs the program (or waits for a signal) between start and stop. Returns the exit status to
// pass on, or -1 when nothing could be run (said).
static int run_between(session_t* s, char** program, bool watch, child_t* child, double* seconds) {
  memset(child, 0, sizeof(*child));
  zx_status_t status = zxs_perfmon_start(s->ctl);
  if (status != ZX_OK) {
    fprintf(stderr, "%s: cannot start: %s\n", g_prog, zxs_status_string(status));
    return -1;
  }
  const double t0 = now_seconds();
  int code = 0;
  if (program != NULL) {
    if (!start_program(program, watch, child)) {
      zxs_perfmon_stop(s->ctl);
      return -1;
    }
    wait_program(child, watch);
    code = exit_code_of(child->wstatus);
  } else {
    wait_for_signal();
  }
  *seconds = now_seconds() - t0;
  zxs_perfmon_stop(s->ctl);
  return code;
}

// --- stat ---------------------------------------------------------------------------------------

typedef struct {
  const event_list_t* events;
  uint64_t* counts;  // [buffer][event]
} stat_t;

// Each event's count: its COUNT records plus its rate for each TICK or PC record.
static void add_counts(uint32_t b, const zxs_perfmon_record_t* rec, void* ctx) {
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

static void print_stat(FILE* out, const session_t* s, const event_list_t* events,
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

static int stat_command(int argc, char** argv) {
  static const struct option options[] = {{"events", required_argument, NULL, 'e'},
                                          {"field-separator", required_argument, NULL, 'x'},
                                          {"output", required_argument, NULL, 'o'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char* list = DEFAULT_STAT_EVENTS;
  const char* sep = NULL;
  const char* output = NULL;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "+e:x:o:h", options, NULL)) != -1) {
    switch (opt) {
      case 'e':
        list = optarg;
        break;
      case 'x':
        sep = optarg;
        break;
      case 'o':
        output = optarg;
        break;
      case 'h':
        usage_stat(stdout);
        return 0;
      default:
        usage_stat(stderr);
        return 2;
    }
  }
  event_list_t events;
  memset(&events, 0, sizeof(events));
  char err[512];
  if (!parse_events(list, false, &events, err, sizeof(err))) {
    return fail_usage(usage_stat, "%s", err);
  }
  char** program = optind < argc ? &argv[optind] : NULL;
  FILE* out = stderr;
  if (output != NULL && (out = fopen(output, "we")) == NULL) {
    fprintf(stderr, "%s: cannot write %s: %s\n", g_prog, output, strerror(errno));
    return 1;
  }
  session_t s;
  int code = 1;
  if (session_begin(&s, &events, STAT_BUFFER_PAGES)) {
    child_t child;
    double seconds = 0;
    code = run_between(&s, program, false, &child, &seconds);
    const bool exec_failed = child.exec_failed;
    const int exec_errno = child.exec_errno;
    free_child(&child);
    uint64_t* counts = calloc((size_t)s.buffers * ZXS_PERFMON_MAX_NUM_EVENTS, sizeof(uint64_t));
    stat_t st = {.events = &events, .counts = counts};
    bool full = false;
    if (code < 0) {
      code = exec_failed ? record_exec_status(exec_errno) : 1;  // as a shell: 127 or 126
    } else if (counts == NULL || !read_buffers(&s, add_counts, &st, &full, NULL)) {
      code = 1;
    } else {
      print_stat(out, &s, &events, counts, sep, seconds, program, full);
    }
    free(counts);
    session_end(&s);
  }
  if (out != stderr && fclose(out) != 0) {
    fprintf(stderr, "%s: cannot write %s: %s\n", g_prog, output, strerror(errno));
    code = 1;
  }
  return code;
}

// --- record: the program's modules --------------------------------------------------------------

// The loadable segments and GNU build ID of an ELF file (64-bit, this machine's byte order).
typedef struct {
  Elf64_Phdr* loads;
  size_t load_count;
  uint8_t build_id[64];
  size_t build_id_size;
} elf_info_t;

static bool read_at(int fd, void* buf, size_t len, uint64_t offset) {
  return pread(fd, buf, len, (off_t)offset) == (ssize_t)len;
}

static void find_build_id(int fd, const Elf64_Phdr* note, elf_info_t* out) {
  if (note->p_filesz == 0 || note->p_filesz > 65536) return;
  uint8_t* data = malloc(note->p_filesz);
  if (data == NULL || !read_at(fd, data, note->p_filesz, note->p_offset)) {
    free(data);
    return;
  }
  const size_t align = note->p_align == 8 ? 8 : 4;
  for (size_t off = 0; off + sizeof(Elf64_Nhdr) <= note->p_filesz;) {
    Elf64_Nhdr n;
    memcpy(&n, data + off, sizeof(n));
    const size_t name_at = off + sizeof(n);
    const size_t desc_at = name_at + ((n.n_namesz + align - 1) & ~(align - 1));
    const size_t next = desc_at + ((n.n_descsz + align - 1) & ~(align - 1));
    if (desc_at > note->p_filesz || n.n_descsz > note->p_filesz - desc_at) break;
    if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && memcmp(data + name_at, "GNU", 4) == 0 &&
        n.n_descsz <= sizeof(out->build_id)) {
      memcpy(out->build_id, data + desc_at, n.n_descsz);
      out->build_id_size = n.n_descsz;
      break;
    }
    off = next;
  }
  free(data);
}

static bool read_elf(const char* path, elf_info_t* out) {
  memset(out, 0, sizeof(*out));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf64_Ehdr eh;
  bool ok = read_at(fd, &eh, sizeof(eh), 0) && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
            eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) &&
            eh.e_phnum > 0 && eh.e_phnum < 256;
  Elf64_Phdr* ph = ok ? calloc(eh.e_phnum, sizeof(Elf64_Phdr)) : NULL;
  ok = ok && ph != NULL && read_at(fd, ph, eh.e_phnum * sizeof(Elf64_Phdr), eh.e_phoff);
  if (ok) {
    out->loads = calloc(eh.e_phnum, sizeof(Elf64_Phdr));
    ok = out->loads != NULL;
  }
  for (size_t i = 0; ok && i < eh.e_phnum; i++) {
    if (ph[i].p_type == PT_LOAD) out->loads[out->load_count++] = ph[i];
    if (ph[i].p_type == PT_NOTE && out->build_id_size == 0) find_build_id(fd, &ph[i], out);
  }
  free(ph);
  close(fd);
  if (!ok || out->load_count == 0) {
    free(out->loads);
    out->loads = NULL;
    return false;
  }
  return true;
}

// The program's ELF modules as symbolizer markup (the trace file's "modules" attachment, as
// `zxsampler record` writes it): a module line per mapped ELF file, placed by its first mapping,
// and an mmap line per PT_LOAD segment.
static char* modules_markup(const mapping_t* maps, size_t count, size_t* len) {
  char* text = NULL;
  *len = 0;
  FILE* out = open_memstream(&text, len);
  if (out == NULL) return NULL;
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  size_t id = 0;
  for (size_t m = 0; m < count; m++) {
    const char* path = maps[m].path;
    // Markup names end at ':'; a deleted file cannot be read back.
    if (strchr(path, ':') != NULL || strstr(path, " (deleted)") != NULL) continue;
    bool seen = false;
    for (size_t k = 0; k < m && !seen; k++) seen = strcmp(maps[k].path, path) == 0;
    if (seen) continue;
    elf_info_t elf;
    if (!read_elf(path, &elf)) continue;
    // The PT_LOAD this mapping's file offset belongs to gives the load bias.
    const Elf64_Phdr* base = NULL;
    for (size_t i = 0; i < elf.load_count && base == NULL; i++) {
      if ((elf.loads[i].p_offset & ~(page - 1)) == maps[m].pgoff) base = &elf.loads[i];
    }
    if (base != NULL) {
      const uint64_t bias = maps[m].start - (base->p_vaddr & ~(page - 1));
      fprintf(out, "{{{module:%zu:%s:elf:", id, path);
      for (size_t i = 0; i < elf.build_id_size; i++) fprintf(out, "%02x", elf.build_id[i]);
      fprintf(out, "}}}\n");
      for (size_t i = 0; i < elf.load_count; i++) {
        const Elf64_Phdr* p = &elf.loads[i];
        if (p->p_memsz == 0) continue;
        fprintf(out, "{{{mmap:0x%" PRIx64 ":0x%" PRIx64 ":load:%zu:%s%s%s:0x%" PRIx64 "}}}\n",
                bias + p->p_vaddr, (uint64_t)p->p_memsz, id, (p->p_flags & PF_R) ? "r" : "",
                (p->p_flags & PF_W) ? "w" : "", (p->p_flags & PF_X) ? "x" : "",
                (uint64_t)p->p_vaddr);
      }
      id++;
    }
    free(elf.loads);
  }
  if (fclose(out) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

// --- record: samples ----------------------------------------------------------------------------

typedef struct {
  uint64_t time;
  uint64_t pc;
  uint32_t pid, tid;
} pc_sample_t;

typedef struct {
  uint32_t pid;    // keep only this process's; 0: everyone's
  uint64_t since;  // and only from its exec on (before it, the pid ran this tool's fork)
  pc_sample_t* samples;
  size_t count, cap;
  uint64_t others;
  uint64_t before_exec;
  bool oom;
} pcs_t;

static void collect_pc(uint32_t b, const zxs_perfmon_record_t* rec, void* ctx) {
  (void)b;
  pcs_t* p = ctx;
  if (rec->type != ZXS_PERFMON_RECORD_PC) return;
  const uint32_t pid = ZXS_PERFMON_ASPACE_PID(rec->pc.aspace);
  if (p->pid != 0 && pid != p->pid) {
    p->others++;
    return;
  }
  if (p->pid != 0 && (uint64_t)rec->time < p->since) {
    p->before_exec++;
    return;
  }
  if (p->count == p->cap) {
    size_t cap = p->cap == 0 ? 4096 : p->cap * 2;
    pc_sample_t* grown = realloc(p->samples, cap * sizeof(*grown));
    if (grown == NULL) {
      p->oom = true;
      return;
    }
    p->samples = grown;
    p->cap = cap;
  }
  uint32_t tid = ZXS_PERFMON_ASPACE_TID(rec->pc.aspace);
  if (tid == UINT32_MAX) tid = pid;  // perf's "-1": a thread already past its exit
  p->samples[p->count++] =
      (pc_sample_t){.time = (uint64_t)rec->time, .pc = rec->pc.pc, .pid = pid, .tid = tid};
}

static int by_time(const void* a, const void* b) {
  const pc_sample_t *x = a, *y = b;
  return x->time < y->time ? -1 : x->time > y->time;
}

static zxs_fxt_str_ref_t str(const char* s) { return zxs_fxt_str_inline(s, strlen(s)); }

// The trace file's layout is README's "Trace files": what zxsampler record writes, with
// one-PC samples.
static zx_status_t write_trace(FILE* f, const pcs_t* pcs, const child_t* child, uint64_t tps,
                               zx_duration_t period, bool kernel) {
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  zxs_trace_write_header(&buf, tps);
  if (pcs->pid != 0) {
    // The process's arguments as `zxsampler record` writes them, with what was sampled: the
    // report says whether kernel time is seen.
    const zxs_fxt_arg_t process_args[] = {
        {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_PERIOD_ARG), .u64 = (uint64_t)period},
        {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_PID_ARG), .u64 = pcs->pid},
        {.type = ZXS_FXT_ARG_STRING,
         .name = str(ZXS_TRACE_SAMPLED_ARG),
         .str = str(kernel ? "user+kernel" : "user")}};
    zxs_fxt_kernel_object_t process = {
        .obj_type = ZX_OBJ_TYPE_PROCESS, .koid = pcs->pid, .name = str(child->comm)};
    zxs_fxt_write_kernel_object(&buf, &process, process_args,
                                sizeof(process_args) / sizeof(process_args[0]));
    for (size_t i = 0; i < child->thread_count; i++) {
      zxs_fxt_arg_t process_arg = {.type = ZXS_FXT_ARG_KOID, .name = str("process")};
      process_arg.koid = pcs->pid;
      zxs_fxt_kernel_object_t thread = {.obj_type = ZX_OBJ_TYPE_THREAD,
                                        .koid = (zx_koid_t)child->threads[i].tid,
                                        .name = str(child->threads[i].name)};
      zxs_fxt_write_kernel_object(&buf, &thread, &process_arg, 1);
    }
    size_t len = 0;
    char* markup = modules_markup(child->maps, child->map_count, &len);
    if (markup != NULL) {
      zxs_fxt_large_blob_t blob = {.category = str("zxsampler"),
                                   .name = str("modules"),
                                   .payload = {.data = markup, .size = len}};
      zxs_fxt_write_attachment(&buf, &blob);
      free(markup);
    }
  }
  for (size_t i = 0; i < pcs->count; i++) {
    const pc_sample_t* s = &pcs->samples[i];
    uint8_t pc[8];
    for (int k = 0; k < 8; k++) pc[k] = (uint8_t)(s->pc >> (8 * k));
    zxs_fxt_large_blob_t blob = {
        .ticks = s->time,
        .thread = {.index = 0, .process_koid = s->pid, .thread_koid = s->tid},
        .payload = {.data = pc, .size = sizeof(pc)}};
    zxs_fxt_write_large_blob(&buf, &blob, NULL, 0);
  }
  zx_status_t status = buf.status;
  if (status == ZX_OK && fwrite(buf.data, 1, buf.len, f) != buf.len) status = ZX_ERR_IO;
  zxs_fxt_buf_destroy(&buf);
  return status;
}

static int record_command(int argc, char** argv) {
  static const struct option options[] = {{"event", required_argument, NULL, 'e'},
                                          {"events", required_argument, NULL, 'e'},
                                          {"output", required_argument, NULL, 'o'},
                                          {"format", required_argument, NULL, 'f'},
                                          {"buffer", required_argument, NULL, 'b'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char* list = DEFAULT_RECORD_EVENT;
  const char* output = "zxsampler-perfmon.fxt";
  zxs_profile_format_t format = ZXS_FORMAT_FXT;
  long long buffer_mb = 16;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "+e:o:f:b:h", options, NULL)) != -1) {
    switch (opt) {
      case 'e':
        list = optarg;
        break;
      case 'o':
        output = optarg;
        break;
      case 'f':
        if (!zxs_profile_format_from_name(optarg, &format)) {
          return fail_usage(usage_record, "unknown format '%s'", optarg);
        }
        break;
      case 'b':
        if (!cli_parse_positive(optarg, 256, &buffer_mb)) {
          return fail_usage(usage_record, "--buffer takes MiB from 1 to 256, not '%s'", optarg);
        }
        break;
      case 'h':
        usage_record(stdout);
        return 0;
      default:
        usage_record(stderr);
        return 2;
    }
  }
  event_list_t events;
  memset(&events, 0, sizeof(events));
  char err[512];
  if (!parse_events(list, true, &events, err, sizeof(err))) {
    return fail_usage(usage_record, "%s", err);
  }
  zx_duration_t period = 0;
  bool sampling = false;
  bool kernel = false;  // some sampled event counts in kernel mode: its PCs can be the kernel's
  for (uint32_t i = 0; i < events.count; i++) {
    if (events.ev[i].rate == 0) continue;
    sampling = true;
    kernel |= (events.ev[i].flags & ZXS_PERFMON_EVENT_FLAG_COLLECT_OS) != 0;
    // The clocks count nanoseconds: their rate is the sampling period.
    const char* name = zxs_perfmon_event_name(events.ev[i].id);
    if (period == 0 && name != NULL &&
        (strcmp(name, "misc:cpu_clock") == 0 || strcmp(name, "misc:task_clock") == 0)) {
      period = events.ev[i].rate;
    }
  }
  if (!sampling) return fail_usage(usage_record, "%s", "no EVENT@RATE to sample");
  char** program = optind < argc ? &argv[optind] : NULL;

  session_t s;
  if (!session_begin(&s, &events, (uint32_t)(buffer_mb * 256))) return 1;
  child_t child;
  double seconds = 0;
  int code = run_between(&s, program, true, &child, &seconds);
  if (code < 0) {
    free_child(&child);
    session_end(&s);
    return program != NULL && child.exec_failed ? record_exec_status(child.exec_errno) : 1;
  }
  pcs_t pcs = {.pid = program != NULL ? (uint32_t)(child.pid > 0 ? child.pid : -child.pid) : 0,
               .since = child.exec_ns};
  bool full = false;
  zx_ticks_t tps = 1000000000;
  bool ok = read_buffers(&s, collect_pc, &pcs, &full, &tps);
  session_end(&s);
  if (ok && pcs.oom) {
    fprintf(stderr, "%s: out of memory\n", g_prog);
    ok = false;
  }
  if (ok) {
    qsort(pcs.samples, pcs.count, sizeof(pc_sample_t), by_time);
    char trace[4096];
    snprintf(trace, sizeof(trace), format == ZXS_FORMAT_FXT ? "%s" : "%s.fxt.tmp", output);
    FILE* f = fopen(trace, "we");
    zx_status_t status =
        f != NULL ? write_trace(f, &pcs, &child, (uint64_t)tps, period, kernel) : ZX_ERR_IO;
    if (f != NULL && fclose(f) != 0) status = ZX_ERR_IO;
    if (status != ZX_OK) {
      fprintf(stderr, "%s: cannot write %s: %s\n", g_prog, trace,
              status == ZX_ERR_IO ? strerror(errno) : zxs_status_string(status));
      ok = false;
    } else if (format != ZXS_FORMAT_FXT) {
      char error[256];
      status = zxs_profile_convert(trace, output, format, error, sizeof(error));
      unlink(trace);
      if (status != ZX_OK) {
        fprintf(stderr, "%s: %s\n", g_prog, error);
        ok = false;
      }
    }
  }
  if (ok) {
    if (program != NULL) {
      fprintf(stderr, "%s: %zu samples of %s (pid %u) written to %s", g_prog, pcs.count,
              child.comm[0] != '\0' ? child.comm : program[0], pcs.pid, output);
      fprintf(stderr,
              " (left out: %" PRIu64 " samples of other processes, %" PRIu64
              " of its pid before its exec)",
              pcs.others, pcs.before_exec);
    } else {
      fprintf(stderr, "%s: %zu samples of every process written to %s", g_prog, pcs.count, output);
    }
    fprintf(stderr, "%s\n",
            full ? "; some were lost: a buffer was full, or the kernel gave them to another "
                   "CPU-wide perf session"
                 : "");
    if (program != NULL && child.map_count == 0) {
      fprintf(stderr, "%s: could not read the program's modules: its PCs stay unnamed\n", g_prog);
    }
  }
  free(pcs.samples);
  free_child(&child);
  return ok ? code : 1;
}

// --- Entry --------------------------------------------------------------------------------------

int zxsampler_perfmon_main(int argc, char** argv) {
  g_prog = argc > 0 && argv[0] != NULL ? argv[0] : "zxsampler perfmon";
  if (argc < 2) {
    usage_main(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage_main(stdout);
    return 0;
  }
  // getopt names the command by argv[0] in its messages.
  char name[128];
  if (strcmp(argv[1], "stat") == 0 || strcmp(argv[1], "record") == 0) {
    snprintf(name, sizeof(name), "%s %s", g_prog, argv[1]);
    const bool stat = strcmp(argv[1], "stat") == 0;
    char* saved = argv[1];
    argv[1] = name;
    int code = stat ? stat_command(argc - 1, argv + 1) : record_command(argc - 1, argv + 1);
    argv[1] = saved;
    return code;
  }
  fprintf(stderr, "%s: unknown command '%s'\n\n", g_prog, argv[1]);
  usage_main(stderr);
  return 2;
}
