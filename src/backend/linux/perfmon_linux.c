// Linux: the perfmon controller's backend (platform.h, "CPU performance monitor"), on perf
// events.
//
// Every configured event is one perf event per CPU (pid -1, cpu N), so it counts all processes
// on that CPU. The core wrote the buffers' headers and writes every record; this file collects:
//   - an event with a rate samples (sample_period = rate): IP, pid/tid, time; the samples of all
//     such events of one CPU go to one ring (PERF_EVENT_IOC_SET_OUTPUT), which a thread of the
//     library ("zxs-perfmon") drains into zxs_perfmon_core_sample();
//   - the timebase event leads a group of the events of rate 0 on its CPU, and its samples carry
//     their values (PERF_SAMPLE_READ, PERF_FORMAT_GROUP): the core writes their COUNT records;
//   - without a timebase, events of rate 0 only count; stop reads every event's total for the
//     final records.
// COLLECT_OS / COLLECT_USER clear exclude_kernel / exclude_user; COLLECT_LAST_BRANCH samples the
// branch stack (PERF_SAMPLE_BRANCH_ANY). Times are CLOCK_MONOTONIC (use_clockid), the clock of
// zxs_prim_ticks(). Hardware events are collected where perf has a PMU (probed once, per event).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "errno_status.h"
#include "linux_internal.h"
#include "perfmon_core.h"
#include "platform.h"

#ifndef PERF_FORMAT_LOST
#define PERF_FORMAT_LOST (1u << 4)
#endif

// Data pages of a CPU's ring, first choice; halved while the locked-memory limit refuses it.
// 1 MiB: a burst of page faults at rate 1 (40-byte records) outran a 256 KiB ring while the
// drainer waited for a CPU on a loaded 2-CPU machine.
#define RING_DATA_PAGES 256u
#define DRAIN_INTERVAL_MS 100

// --- The events ---------------------------------------------------------------------------------

typedef struct {
  uint16_t id;
  uint32_t type;    // PERF_TYPE_HARDWARE or PERF_TYPE_SOFTWARE
  uint64_t config;  // PERF_COUNT_HW_* or PERF_COUNT_SW_*
} linux_event_t;

#define ARCH(n) ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_ARCH, n)
#define FIXED(n) ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_FIXED, n)
#define MISC(n) ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, ZXS_PERFMON_MISC_SOFTWARE_BASE + (n))

static const linux_event_t g_events[] = {
    {ARCH(0), PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {ARCH(1), PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {ARCH(2), PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {ARCH(3), PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {ARCH(4), PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {ARCH(5), PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {ARCH(6), PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {FIXED(1), PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {FIXED(2), PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {FIXED(3), PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {MISC(0), PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {MISC(1), PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {MISC(2), PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {MISC(3), PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {MISC(4), PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {MISC(5), PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {MISC(6), PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
};
#define NUM_EVENTS (sizeof(g_events) / sizeof(g_events[0]))
#define NUM_HW_CONFIGS (PERF_COUNT_HW_REF_CPU_CYCLES + 1)

static const linux_event_t* find_event(uint16_t id) {
  for (size_t i = 0; i < NUM_EVENTS; i++) {
    if (g_events[i].id == id) return &g_events[i];
  }
  return NULL;
}

// errno -> the statuses perfmon.h lists for the host's answers: the table's (errno_status.h)
// ACCESS_DENIED, NOT_SUPPORTED and NO_RESOURCES stand, and ENOMEM's NO_MEMORY; perf's ENOSPC
// (no counter left) is NO_RESOURCES ("out of counters"); anything else (EINVAL: a combination
// this kernel rejects; EFBIG, EOVERFLOW: an attribute it does not take) is NOT_SUPPORTED.
static zx_status_t perfmon_status(int err) {
  const zx_status_t status = zxs_posix_errno_status(err);
  switch (status) {
    case ZX_ERR_ACCESS_DENIED:
    case ZX_ERR_NOT_SUPPORTED:
    case ZX_ERR_NO_RESOURCES:
      return status;
    case ZX_ERR_NO_MEMORY:
      return err == ENOMEM ? status : err == ENOSPC ? ZX_ERR_NO_RESOURCES : ZX_ERR_NOT_SUPPORTED;
    default:
      return ZX_ERR_NOT_SUPPORTED;
  }
}

// --- What the host has (probed once) -----------------------------------------------------------

static pthread_once_t g_probe_once = PTHREAD_ONCE_INIT;
static bool g_hw_ok[NUM_HW_CONFIGS];  // PERF_TYPE_HARDWARE config opens here
static bool g_has_pmu;
static bool g_has_lbr;
static bool g_format_lost;  // the kernel takes PERF_FORMAT_LOST (6.0+)
static zxs_perfmon_properties_t g_props;

// Whether a self-monitoring event of this kind opens (needs no privilege at paranoid <= 2).
static bool self_event_opens(uint32_t type, uint64_t config, uint64_t read_format) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = type;
  attr.config = config;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.read_format = read_format;
  int fd = zxs_linux_perf_event_open(&attr, 0, -1);
  if (fd < 0) return false;
  close(fd);
  return true;
}

static long read_sysfs_long(const char* path) {
  FILE* f = fopen(path, "re");
  if (f == NULL) return -1;
  long v = -1;
  if (fscanf(f, "%ld", &v) != 1) v = -1;
  fclose(f);
  return v;
}

// The counters the architecture says the PMU has (x86 CPUID; 0 where it does not tell).
static void pmu_counters(zxs_perfmon_properties_t* p) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return;
  const bool intel = b == 0x756e6547u;  // "GenuineIntel"
  const bool amd = b == 0x68747541u;    // "AuthenticAMD"
  if (intel && a >= 0xa && __get_cpuid(0xa, &a, &b, &c, &d)) {
    p->pm_version = (uint16_t)(a & 0xff);
    p->max_num_programmable_events = (uint16_t)((a >> 8) & 0xff);
    p->max_programmable_counter_width = (uint16_t)((a >> 16) & 0xff);
    if (p->pm_version > 1) {
      p->max_num_fixed_events = (uint16_t)(d & 0x1f);
      p->max_fixed_counter_width = (uint16_t)((d >> 5) & 0xff);
    }
  } else if (amd) {
    unsigned max_ext = __get_cpuid_max(0x80000000u, NULL);
    p->pm_version = 1;
    p->max_programmable_counter_width = 48;
    p->max_num_programmable_events = 4;
    if (max_ext >= 0x80000001u && __get_cpuid(0x80000001u, &a, &b, &c, &d) &&
        (c & (1u << 23)) != 0) {
      p->max_num_programmable_events = 6;  // PerfCtrExtCore
    }
    if (max_ext >= 0x80000022u && __get_cpuid(0x80000022u, &a, &b, &c, &d) && (a & 1u) != 0) {
      p->pm_version = 2;  // PerfMonV2
      p->max_num_programmable_events = (uint16_t)(b & 0xf);
    }
  }
#elif defined(__aarch64__)
  p->pm_version = 3;  // PMUv3, the only PMU perf drives here; the counter count is not told
#else
  (void)p;
#endif
}

static void probe(void) {
  for (uint64_t config = 0; config < NUM_HW_CONFIGS; config++) {
    g_hw_ok[config] = self_event_opens(PERF_TYPE_HARDWARE, config, 0);
  }
  g_has_pmu = g_hw_ok[PERF_COUNT_HW_CPU_CYCLES] || g_hw_ok[PERF_COUNT_HW_INSTRUCTIONS];
  g_format_lost = self_event_opens(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, PERF_FORMAT_LOST);
  memset(&g_props, 0, sizeof(g_props));
  if (g_has_pmu) {
    pmu_counters(&g_props);
    if (g_props.pm_version == 0) g_props.pm_version = 1;  // a PMU whose version is not told
    // The last-branch stack perf exposes (Intel LBR, AMD LbrExtV2): its depth.
    g_has_lbr = read_sysfs_long("/sys/bus/event_source/devices/cpu/caps/branches") > 0;
  }
  // The software events: all of them at once, 64-bit counts.
  g_props.max_num_misc_events = 7;
  g_props.max_misc_counter_width = 64;
  g_props.flags = g_has_lbr ? ZXS_PERFMON_PROPERTY_FLAG_HAS_LAST_BRANCH : 0;
}

void zxs_prim_perfmon_properties(zxs_perfmon_properties_t* properties) {
  pthread_once(&g_probe_once, probe);
  const uint16_t api = properties->api_version, max = properties->max_num_events;
  *properties = g_props;
  properties->api_version = api;
  properties->max_num_events = max;
}

zx_status_t zxs_prim_perfmon_event(uint16_t id, bool* counting) {
  pthread_once(&g_probe_once, probe);
  *counting = true;
  const linux_event_t* e = find_event(id);
  if (e == NULL) return ZX_ERR_INVALID_ARGS;
  if (e->type == PERF_TYPE_HARDWARE && !(e->config < NUM_HW_CONFIGS && g_hw_ok[e->config])) {
    return ZX_ERR_NOT_SUPPORTED;
  }
  return ZX_OK;
}

// A CPU-wide event on one online CPU: what every run opens. Paranoid > 0 refuses it to
// processes without CAP_PERFMON / CAP_SYS_ADMIN.
zx_status_t zxs_prim_perfmon_check_access(void) {
  uint32_t cpu = 0, count = 0;
  if (zxs_prim_online_cpus(&cpu, 1, &count) != ZX_OK && count == 0) cpu = 0;
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.disabled = 1;
  int fd = zxs_linux_perf_event_open(&attr, -1, (int)cpu);
  if (fd < 0) return perfmon_status(errno);
  close(fd);
  return ZX_OK;
}

// --- A run ------------------------------------------------------------------------------------

typedef struct {
  uint32_t buffer;  // index in run->buffers
  int cpu;
  bool offline;  // the CPU went away since initialize: nothing opened
  int fd[ZXS_PERFMON_MAX_NUM_EVENTS];
  uint64_t id[ZXS_PERFMON_MAX_NUM_EVENTS];
  int ring_fd;  // the fd whose ring the CPU's samples go to; -1: no sampling event
  uint8_t* ring;
  size_t ring_len;   // whole mapping
  size_t data_size;  // its data part (a power of two)
} pm_cpu_t;

typedef struct {
  zxs_perfmon_run_t* run;
  pm_cpu_t* cpus;  // one per buffer
  uint32_t count;
  int wake;  // eventfd: the collector exits when it is readable
  pthread_t collector;
  bool collector_started;
  uint64_t* scratch;  // a record copied out of a ring (at most 64 KiB)
  uint64_t read_format_extra;
} pm_state_t;

static uint64_t read_format_of(const pm_state_t* st, bool group) {
  return (group ? PERF_FORMAT_GROUP : 0) | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
         PERF_FORMAT_TOTAL_TIME_RUNNING | st->read_format_extra;
}

static void event_attr(const pm_state_t* st, const zxs_perfmon_run_event_t* ev, bool leader,
                       struct perf_event_attr* attr) {
  const linux_event_t* e = find_event(ev->id);
  memset(attr, 0, sizeof(*attr));
  attr->size = sizeof(*attr);
  attr->type = e->type;
  attr->config = e->config;
  attr->disabled = leader ? 1 : 0;  // group members follow their leader
  attr->exclude_kernel = (ev->flags & ZXS_PERFMON_EVENT_FLAG_COLLECT_OS) == 0;
  attr->exclude_hv = attr->exclude_kernel;
  attr->exclude_user = (ev->flags & ZXS_PERFMON_EVENT_FLAG_COLLECT_USER) == 0;
  attr->use_clockid = 1;
  attr->clockid = CLOCK_MONOTONIC;
  attr->read_format = read_format_of(st, false);
  if (ev->rate > 0) {
    attr->sample_period = ev->rate;
    attr->sample_type =
        PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    attr->watermark = 1;
    attr->wakeup_watermark = RING_DATA_PAGES * 4096u / 4;
    if ((ev->flags & ZXS_PERFMON_EVENT_FLAG_IS_TIMEBASE) != 0 && st->run->event_count > 1) {
      attr->sample_type |= PERF_SAMPLE_READ;
      attr->read_format = read_format_of(st, true);
    }
    if ((ev->flags & ZXS_PERFMON_EVENT_FLAG_COLLECT_LAST_BRANCH) != 0) {
      attr->sample_type |= PERF_SAMPLE_BRANCH_STACK;
      attr->branch_sample_type = PERF_SAMPLE_BRANCH_ANY;
      if (!attr->exclude_user) attr->branch_sample_type |= PERF_SAMPLE_BRANCH_USER;
      if (!attr->exclude_kernel) attr->branch_sample_type |= PERF_SAMPLE_BRANCH_KERNEL;
    }
  }
}

static bool is_timebase_leader(const pm_state_t* st, uint32_t i) {
  return st->run->timebase == (int32_t)i && st->run->event_count > 1;
}

// Maps the CPU's ring: the first sampling fd's; halves it while the locked-memory limit says no.
static zx_status_t map_ring(pm_cpu_t* c, int fd) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (size_t pages = RING_DATA_PAGES * 4096u / page; pages >= 1; pages /= 2) {
    const size_t len = (pages + 1) * page;
    void* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      c->ring = p;
      c->ring_len = len;
      c->data_size = pages * page;
      c->ring_fd = fd;
      return ZX_OK;
    }
    if (errno != EPERM && errno != ENOMEM) return perfmon_status(errno);
  }
  return ZX_ERR_NO_RESOURCES;
}

static void close_cpu(pm_cpu_t* c, bool disable) {
  if (c->ring != NULL) munmap(c->ring, c->ring_len);
  c->ring = NULL;
  for (int i = 0; i < ZXS_PERFMON_MAX_NUM_EVENTS; i++) {
    if (c->fd[i] >= 0) {
      if (disable) ioctl(c->fd[i], PERF_EVENT_IOC_DISABLE, 0);
      close(c->fd[i]);
    }
    c->fd[i] = -1;
  }
  c->ring_fd = -1;
}

// Opens the CPU's events: the timebase's group first (leader, then the events of rate 0), then
// the other events. Nothing is enabled yet.
static zx_status_t open_cpu(pm_state_t* st, pm_cpu_t* c) {
  const zxs_perfmon_run_t* run = st->run;
  uint32_t order[ZXS_PERFMON_MAX_NUM_EVENTS];
  uint32_t n = 0;
  if (run->timebase >= 0) order[n++] = (uint32_t)run->timebase;
  for (uint32_t i = 0; i < run->event_count; i++) {
    if ((int32_t)i != run->timebase) order[n++] = i;
  }
  int leader_fd = -1;
  for (uint32_t k = 0; k < n; k++) {
    const uint32_t i = order[k];
    const zxs_perfmon_run_event_t* ev = &run->events[i];
    const bool member = ev->uses_timebase;
    struct perf_event_attr attr;
    event_attr(st, ev, !member, &attr);
    int fd = zxs_linux_perf_event_open_group(&attr, -1, c->cpu, member ? leader_fd : -1);
    if (fd < 0) {
      const int err = errno;
      if (err == ENODEV && k == 0) {  // the CPU is offline now
        c->offline = true;
        return ZX_OK;
      }
      return perfmon_status(err);
    }
    c->fd[i] = fd;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &c->id[i]) != 0) return ZX_ERR_NOT_SUPPORTED;
    if ((int32_t)i == run->timebase) leader_fd = fd;
    if (ev->rate > 0) {
      if (c->ring_fd < 0) {
        zx_status_t status = map_ring(c, fd);
        if (status != ZX_OK) return status;
      } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, c->ring_fd) != 0) {
        return perfmon_status(errno);
      }
    }
  }
  return ZX_OK;
}

// --- Draining a ring ------------------------------------------------------------------------

static int32_t event_of_id(const pm_cpu_t* c, const zxs_perfmon_run_t* run, uint64_t id) {
  for (uint32_t i = 0; i < run->event_count; i++) {
    if (c->fd[i] >= 0 && c->id[i] == id) return (int32_t)i;
  }
  return -1;
}

// A group read ({nr, enabled, running, {value, id[, lost]} x nr}) into values by event index.
// Returns the words used, 0 if it does not fit `words`.
static size_t parse_group(const pm_state_t* st, const pm_cpu_t* c, const uint64_t* p, size_t words,
                          uint64_t* values, bool* lost) {
  const size_t per = st->read_format_extra != 0 ? 3 : 2;
  if (words < 3) return 0;
  const uint64_t nr = p[0];
  if (nr > ZXS_PERFMON_MAX_NUM_EVENTS || 3 + nr * per > words) return 0;
  for (uint64_t k = 0; k < nr; k++) {
    const uint64_t* e = p + 3 + k * per;
    int32_t i = event_of_id(c, st->run, e[1]);
    if (i >= 0) values[i] = e[0];
    if (per == 3 && e[2] != 0 && lost != NULL) *lost = true;
  }
  return 3 + nr * per;
}

static void handle_sample(pm_state_t* st, pm_cpu_t* c, const uint64_t* body, size_t words) {
  const zxs_perfmon_run_t* run = st->run;
  if (words < 4) return;
  const int32_t i = event_of_id(c, run, body[0]);
  if (i < 0) {
    // Not one of ours, though only our events write this ring: Linux 6.18 was seen handing two
    // CPU-wide sessions of one event the same ring, so the other session's samples land here
    // and ours there (perf record shows it too). Ours are lost: say so.
    zxs_perfmon_core_lost(st->run, c->buffer);
    return;
  }
  const zxs_perfmon_run_event_t* ev = &run->events[i];
  uint64_t values[ZXS_PERFMON_MAX_NUM_EVENTS] = {0};
  zxs_perfmon_last_branch_t branches[ZXS_PERFMON_MAX_NUM_LAST_BRANCH];
  const uint32_t pid = (uint32_t)body[2], tid = (uint32_t)(body[2] >> 32);
  zxs_perfmon_sample_t s = {.event = (uint32_t)i,
                            .time = (zx_ticks_t)body[3],
                            .aspace = ((uint64_t)pid << 32) | tid,
                            .pc = body[1]};
  size_t used = 4;
  if (is_timebase_leader(st, (uint32_t)i)) {
    const size_t n = parse_group(st, c, body + used, words - used, values, NULL);
    if (n == 0) return;
    used += n;
    s.values = values;
  }
  if ((ev->flags & ZXS_PERFMON_EVENT_FLAG_COLLECT_LAST_BRANCH) != 0 && used < words) {
    const uint64_t bnr = body[used++];
    uint32_t keep = 0;
    for (uint64_t b = 0; b < bnr && used + 3 <= words; b++, used += 3) {
      if (keep == ZXS_PERFMON_MAX_NUM_LAST_BRANCH) continue;
      // perf_branch_entry flags: mispred bit 0, cycles bits 4..19; Fuchsia's info: cycles bits
      // 0..15, mispredicted bit 16.
      const uint64_t flags = body[used + 2];
      branches[keep++] =
          (zxs_perfmon_last_branch_t){.from = body[used],
                                      .to = body[used + 1],
                                      .info = ((flags >> 4) & 0xffffu) | ((flags & 1u) << 16)};
    }
    s.num_branches = keep;
    s.branches = branches;
  }
  zxs_perfmon_core_sample(st->run, c->buffer, &s);
}

typedef struct {
  pm_state_t* st;
  pm_cpu_t* c;
} drain_ctx_t;

static void on_record(void* ctx, uint32_t type, const uint64_t* body, size_t words) {
  drain_ctx_t* d = ctx;
  if (type == PERF_RECORD_SAMPLE) {
    handle_sample(d->st, d->c, body, words);
  } else if (type == PERF_RECORD_LOST) {
    zxs_perfmon_core_lost(d->st->run, d->c->buffer);
  }
  // THROTTLE / UNTHROTTLE: the kernel's rate limit; the samples it skipped were not taken.
}

static void drain(pm_state_t* st, pm_cpu_t* c) {
  if (c->ring == NULL) return;
  drain_ctx_t d = {.st = st, .c = c};
  zxs_linux_ring_read(c->ring, c->ring_len - c->data_size, c->data_size, st->scratch, on_record,
                      &d);
}

static void* collector_main(void* arg) {
  pm_state_t* st = arg;
  prctl(PR_SET_NAME, "zxs-perfmon", 0, 0, 0);
  zxs_linux_internal_thread_started();
  struct pollfd fds[1 + 1024];
  for (;;) {
    nfds_t n = 0;
    fds[n++] = (struct pollfd){.fd = st->wake, .events = POLLIN};
    for (uint32_t i = 0; i < st->count && n < sizeof(fds) / sizeof(fds[0]); i++) {
      if (st->cpus[i].ring != NULL)
        fds[n++] = (struct pollfd){.fd = st->cpus[i].ring_fd, .events = POLLIN};
    }
    int got = poll(fds, n, DRAIN_INTERVAL_MS);
    if (got < 0 && errno != EINTR) break;
    if (got > 0 && (fds[0].revents & POLLIN) != 0) break;
    for (uint32_t i = 0; i < st->count; i++) drain(st, &st->cpus[i]);
  }
  return NULL;
}

// --- Totals at stop ---------------------------------------------------------------------------

// value * enabled / running: what perf stat reports for an event that was multiplexed.
__extension__ typedef unsigned __int128 u128_t;
static uint64_t scaled(uint64_t value, uint64_t enabled, uint64_t running) {
  if (running == 0 || running >= enabled) return value;
  return (uint64_t)((u128_t)value * enabled / running);
}

static void read_totals(pm_state_t* st, pm_cpu_t* c, uint64_t* totals, bool* lost) {
  const zxs_perfmon_run_t* run = st->run;
  uint64_t buf[3 + ZXS_PERFMON_MAX_NUM_EVENTS * 3];
  for (uint32_t i = 0; i < run->event_count; i++) {
    if (c->fd[i] < 0) continue;
    if (is_timebase_leader(st, i)) {
      ssize_t got = read(c->fd[i], buf, sizeof(buf));
      if (got <= 0) continue;
      uint64_t values[ZXS_PERFMON_MAX_NUM_EVENTS] = {0};
      if (parse_group(st, c, buf, (size_t)got / 8, values, lost) == 0) continue;
      for (uint32_t j = 0; j < run->event_count; j++) {
        if (j == i || run->events[j].uses_timebase) totals[j] = scaled(values[j], buf[1], buf[2]);
      }
    } else if (!run->events[i].uses_timebase) {
      // {value, enabled, running, id[, lost]}
      ssize_t got = read(c->fd[i], buf, sizeof(buf));
      if (got < 32) continue;
      totals[i] = scaled(buf[0], buf[1], buf[2]);
      if (st->read_format_extra != 0 && got >= 40 && buf[4] != 0) *lost = true;
    }
  }
}

// --- Start, stop, fork --------------------------------------------------------------------------

static void free_state(pm_state_t* st, bool disable) {
  for (uint32_t i = 0; i < st->count; i++) close_cpu(&st->cpus[i], disable);
  if (st->wake >= 0) close(st->wake);
  free(st->cpus);
  free(st->scratch);
  free(st);
}

zx_status_t zxs_prim_perfmon_start(zxs_perfmon_run_t* run) {
  pthread_once(&g_probe_once, probe);
  run->backend = NULL;
  pm_state_t* st = calloc(1, sizeof(*st));
  if (st == NULL) return ZX_ERR_NO_MEMORY;
  st->run = run;
  st->wake = -1;
  st->read_format_extra = g_format_lost ? PERF_FORMAT_LOST : 0;
  st->cpus = calloc(run->buffer_count, sizeof(pm_cpu_t));
  st->scratch = malloc(65536);
  if (st->cpus == NULL || st->scratch == NULL) {
    free_state(st, false);
    return ZX_ERR_NO_MEMORY;
  }
  st->count = run->buffer_count;
  for (uint32_t b = 0; b < st->count; b++) {
    pm_cpu_t* c = &st->cpus[b];
    c->buffer = b;
    c->cpu = (int)run->buffers[b].cpu;
    c->ring_fd = -1;
    for (int i = 0; i < ZXS_PERFMON_MAX_NUM_EVENTS; i++) c->fd[i] = -1;
  }
  zx_status_t status = ZX_OK;
  for (uint32_t b = 0; b < st->count && status == ZX_OK; b++) status = open_cpu(st, &st->cpus[b]);
  bool sampling = false;
  for (uint32_t b = 0; b < st->count; b++) sampling |= st->cpus[b].ring != NULL;
  if (status == ZX_OK && sampling) {
    st->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (st->wake < 0) status = ZX_ERR_NO_RESOURCES;
  }
  if (status == ZX_OK && sampling) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);  // no signal of the program's lands on it
    int err = pthread_create(&st->collector, NULL, collector_main, st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
      status = ZX_ERR_NO_RESOURCES;
    } else {
      st->collector_started = true;
    }
  }
  if (status != ZX_OK) {
    free_state(st, false);
    return status;
  }
  // Everything is open: turn it on, leaders with their groups.
  for (uint32_t b = 0; b < st->count; b++) {
    const pm_cpu_t* c = &st->cpus[b];
    for (uint32_t i = 0; i < run->event_count; i++) {
      if (c->fd[i] >= 0 && !(run->events[i].uses_timebase)) {
        ioctl(c->fd[i], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
      }
    }
  }
  run->backend = st;
  return ZX_OK;
}

void zxs_prim_perfmon_stop(zxs_perfmon_run_t* run) {
  pm_state_t* st = run->backend;
  if (st == NULL) return;
  for (uint32_t b = 0; b < st->count; b++) {
    const pm_cpu_t* c = &st->cpus[b];
    for (uint32_t i = 0; i < run->event_count; i++) {
      if (c->fd[i] >= 0 && !(run->events[i].uses_timebase)) {
        ioctl(c->fd[i], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
      }
    }
  }
  const zx_ticks_t now = (zx_ticks_t)zxs_prim_ticks();
  if (st->collector_started) {
    const uint64_t one = 1;
    ssize_t wrote = write(st->wake, &one, sizeof(one));
    (void)wrote;
    pthread_join(st->collector, NULL);
  }
  for (uint32_t b = 0; b < st->count; b++) {
    pm_cpu_t* c = &st->cpus[b];
    drain(st, c);
    uint64_t totals[ZXS_PERFMON_MAX_NUM_EVENTS] = {0};
    bool lost = false;
    if (!c->offline) read_totals(st, c, totals, &lost);
    if (lost) zxs_perfmon_core_lost(run, c->buffer);
    zxs_perfmon_core_final(run, c->buffer, now, totals);
  }
  free_state(st, false);
  run->backend = NULL;
}

// The child shares the parent's perf events through the inherited descriptors: it closes its
// copies without disabling anything. The rings were not inherited (perf maps them
// VM_DONTCOPY), and the collector stayed in the parent.
void zxs_prim_perfmon_after_fork_child(zxs_perfmon_run_t* run) {
  pm_state_t* st = run->backend;
  if (st == NULL) return;
  for (uint32_t i = 0; i < st->count; i++) st->cpus[i].ring = NULL;
  free_state(st, false);
  run->backend = NULL;
}
