// zxsampler record: the perf events and rings (see record_perf.h).
#define _GNU_SOURCE
#include "record_perf.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/object.h>

#include "array_grow.h"
#include "linux_internal.h"
#include "perf_regs.h"
#include "runtime_pairs_linux.h"

// Task runtime rings (page-fault and lock events): per CPU, beside the sampling rings. A
// first-touch fault writes two records of 32 bytes; 2 MiB hold 32k faults, and the recorder is
// woken at a quarter.
#define RT_RING_BYTES (2u << 20)
// When the locked-memory limit cuts a sampling ring, a default stack copy shrinks with it so that
// the ring still holds RING_MIN_SAMPLES samples: the kernel reserves the whole copy in the ring
// for every sample, however little of it the stack fills (32 KiB against ~6 KiB used), and an
// unprivileged ring of 2 MiB held 64 samples, 2.5 ms at 25000/s a CPU. Never below perf's own
// default (COPY_FLOOR); never a copy the user chose. A sample's other fields (registers, the
// kernel's call chain) are counted as SAMPLE_EXTRA bytes.
#define RING_MIN_SAMPLES 256u
#define COPY_FLOOR 8192u
#define SAMPLE_EXTRA 512u
typedef struct ring {
  int fd;
  uint8_t* base;  // header page, then data_size bytes
  size_t data_size;
} ring_t;

// A sampling event opened by us (not inherited): the thread it was opened on and its id.
typedef struct main_event {
  int fd;
  pid_t tid;
} main_event_t;

struct record_perf {
  int cpus;
  ring_t* rings;     // one per CPU
  ring_t* rt_rings;  // one per CPU: the task runtime events'
  ring_t* sb_rings;  // one per CPU: the side band's (a dummy event's)
  int* fds;          // every event (the rings' own among them)
  size_t fd_count, fd_cap;
  main_event_t* mains;
  size_t main_count, main_cap;
  // Task runtime events: their ids and kinds (RECORD_RT_*), what they measure, and why not.
  uint64_t* rt_ids;
  int* rt_kinds;
  size_t rt_count, rt_cap;
  uint32_t rt_fields;   // ZXS_TASK_RUNTIME_PAGE_FAULT_TIME / _LOCK_CONTENTION_TIME
  uint32_t rt_refused;  // of those asked for: refused (for some thread or CPU)
  bool rt_user_faults;  // faults in kernel mode are not seen (no right to kernel events)
  char rt_missing[512];
  zxs_rt_tracepoint_t lock_begin, lock_end;
  uint64_t sample_type;
  bool kernel;
  uint64_t attach_failures;
  size_t ring_cut;    // the smallest sampling ring the locked-memory limit allowed, if it cut any
  size_t ring_limit;  // the most a sampling ring may take: its share once the limit cut one
  uint32_t copy_cut;  // the stack copy the cut rings made the samples take (0: not cut)
  bool copy_fixed;    // the user chose the stack copy: never cut (options.stack_copy_fixed)
  size_t page;
  uint64_t scratch[65536 / 8];  // one record, copied out of a ring
};

// The sampling event's attributes (`side_band` false: samples, losses, inherited counts) or the
// side band's (a dummy event: COMM, MMAP2, FORK, EXIT of every thread and child it follows).
static void make_attr(const record_perf_options_t* o, bool kernel, bool build_id, bool side_band,
                      struct perf_event_attr* attr) {
  memset(attr, 0, sizeof(*attr));
  attr->size = sizeof(*attr);
  attr->type = PERF_TYPE_SOFTWARE;
  attr->config = PERF_COUNT_SW_TASK_CLOCK;
  attr->sample_period = o->period_ns;
  attr->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER |
                      PERF_SAMPLE_STACK_USER;
  if (kernel) attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
  attr->sample_regs_user = o->dwarf ? ZXS_PERF_REGS_MASK_DWARF : ZXS_PERF_REGS_MASK;
  attr->sample_stack_user = o->stack_copy;
  attr->exclude_kernel = !kernel;
  attr->exclude_callchain_user = 1;  // the user part is walked here, over the stack copy
  attr->exclude_hv = 1;
  attr->inherit = 1;
  attr->inherit_thread = !o->inherit_children;  // Linux 5.13: threads only, not children
  // Each inherited thread's count (its CPU time: task-clock counts every nanosecond it ran,
  // whatever is sampled) comes as a PERF_RECORD_READ when it exits, naming our event's id.
  attr->inherit_stat = o->runtime;
  attr->read_format = PERF_FORMAT_ID;
  attr->disabled = !o->attach;
  attr->enable_on_exec = !o->attach;
  attr->sample_id_all = 1;
  attr->use_clockid = 1;
  attr->clockid = CLOCK_MONOTONIC;
  attr->watermark = 1;
  attr->wakeup_watermark = (uint32_t)(o->ring_bytes / 4);
  if (side_band) {
    attr->mmap = 1;
    attr->mmap2 = 1;
    attr->comm = 1;
    attr->comm_exec = 1;
    attr->task = 1;
    attr->build_id = build_id;  // Linux 5.12: MMAP2 records carry the build ID
    attr->wakeup_watermark = RECORD_SIDE_BAND_RING_BYTES / 4;
    attr->config = PERF_COUNT_SW_DUMMY;
    attr->sample_period = 0;
    attr->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;  // sample_id_all's
    attr->sample_regs_user = 0;
    attr->sample_stack_user = 0;
    attr->inherit_stat = 0;
    attr->exclude_kernel = 1;
  }
}

static bool add_fd(record_perf_t* p, int fd) {
  if (!zxs_array_grow((void**)&p->fds, &p->fd_cap, p->fd_count + 1, sizeof(*p->fds))) return false;
  p->fds[p->fd_count++] = fd;
  return true;
}

// The stack copy of which a sampling ring of `size` bytes holds RING_MIN_SAMPLES (see there).
static uint32_t copy_for_ring(uint32_t copy, size_t size) {
  while (copy / 2 >= COPY_FLOOR && size / (copy + SAMPLE_EXTRA) < RING_MIN_SAMPLES) copy /= 2;
  return copy;
}

// Opens an event of `tid` on `cpu` into `rings`; the first one of a CPU gets the ring (of
// `ring_bytes`), later ones write to it (PERF_EVENT_IOC_SET_OUTPUT, which needs both on the same
// CPU). The fd in *out_fd. When the locked-memory limit cuts a ring, *attr follows it (its
// wake-up threshold and, for a sampling ring, its stack copy unless the user chose it) for this
// event and those opened with it after.
static int open_into(record_perf_t* p, ring_t* rings, size_t ring_bytes, pid_t tid, int cpu,
                     struct perf_event_attr* attr, int* out_fd) {
  const struct perf_event_attr opened = *attr;
  int fd = zxs_linux_perf_event_open(attr, tid, cpu);  // no group, close-on-exec
  if (fd < 0) return -errno;
  if (!add_fd(p, fd)) {
    close(fd);
    return -ENOMEM;
  }
  *out_fd = fd;
  ring_t* r = &rings[cpu];
  if (r->fd >= 0) return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) == 0 ? 0 : -errno;
  const bool sampling = rings == p->rings;
  if (sampling && p->ring_limit != 0 && p->ring_limit < ring_bytes) ring_bytes = p->ring_limit;
  size_t size = ring_bytes;
  void* base = MAP_FAILED;
  // Past the locked-memory allowance (unprivileged users), a smaller ring still works.
  while (size >= 8 * p->page) {
    base = mmap(NULL, p->page + size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base != MAP_FAILED || errno != EPERM) break;
    size /= 2;
  }
  if (base == MAP_FAILED) return -errno;
  const size_t mapped = size;
  if (sampling && size < ring_bytes) {
    // The first CPU cut takes its share of what is left, not all of it: the rings of the CPUs
    // after it (and their side-band rings) come from the same allowance. Unshared, the first
    // CPU had 8 MiB and the second 256 KiB, 8 samples of a 32 KiB stack copy.
    const size_t rest = (size_t)(p->cpus - cpu);
    const size_t side = p->sb_rings[cpu].base != NULL ? p->sb_rings[cpu].data_size + p->page : 0;
    const size_t granted = size + p->page;
    while (size > 8 * p->page && rest * (size + p->page) + (rest - 1) * side > granted) {
      size /= 2;
    }
    p->ring_limit = size;
  }
  if (sampling && p->ring_limit != 0) {
    if (p->ring_cut == 0 || size < p->ring_cut) p->ring_cut = size;
    if (!p->copy_fixed) {
      attr->sample_stack_user = copy_for_ring(attr->sample_stack_user, size);
      if (attr->sample_stack_user != opened.sample_stack_user) {
        p->copy_cut = attr->sample_stack_user;
      }
    }
  }
  // The wake-up threshold was fixed when the event was opened, for the ring asked for: it must
  // follow the ring granted, or the reader is woken only once the ring is full (and what comes
  // next is lost).
  if (attr->watermark && attr->wakeup_watermark > size / 4) {
    attr->wakeup_watermark = (uint32_t)(size / 4);
  }
  if (size != mapped || memcmp(&opened, attr, sizeof(opened)) != 0) {
    munmap(base, p->page + mapped);
    p->fd_count--;
    close(fd);
    fd = zxs_linux_perf_event_open(attr, tid, cpu);
    if (fd < 0) return -errno;
    if (!add_fd(p, fd)) {
      close(fd);
      return -ENOMEM;
    }
    *out_fd = fd;
    base = mmap(NULL, p->page + size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return -errno;
  }
  r->fd = fd;
  r->base = base;
  r->data_size = size;
  return 0;
}

// The side-band event of `tid` on `cpu`, then its sampling event (none: side_band_only).
static int open_on_cpu(record_perf_t* p, const record_perf_options_t* o, pid_t tid, int cpu,
                       struct perf_event_attr* attrs) {
  int fd = -1;
  int err = open_into(p, p->sb_rings, RECORD_SIDE_BAND_RING_BYTES, tid, cpu, &attrs[1], &fd);
  if (err != 0 || o->side_band_only) return err;
  fd = -1;
  err = open_into(p, p->rings, o->ring_bytes, tid, cpu, &attrs[0], &fd);
  if (fd >= 0 &&
      zxs_array_grow((void**)&p->mains, &p->main_cap, p->main_count + 1, sizeof(*p->mains))) {
    p->mains[p->main_count++] = (main_event_t){.fd = fd, .tid = tid};
  }
  return err;
}

// --- Task runtime events -----------------------------------------------------------------------

static void runtime_attr(const record_perf_options_t* o, uint32_t type, uint64_t config,
                         struct perf_event_attr* attr) {
  memset(attr, 0, sizeof(*attr));
  attr->size = sizeof(*attr);
  attr->type = type;
  attr->config = config;
  attr->sample_period = 1;  // every one: a begin and an end are paired per thread
  attr->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  if (type == PERF_TYPE_TRACEPOINT) attr->sample_type |= PERF_SAMPLE_RAW;
  attr->exclude_hv = 1;
  attr->inherit = 1;
  attr->inherit_thread = !o->inherit_children;
  attr->disabled = !o->attach;
  attr->enable_on_exec = !o->attach;
  attr->use_clockid = 1;
  attr->clockid = CLOCK_MONOTONIC;
  attr->watermark = 1;
  attr->wakeup_watermark = RT_RING_BYTES / 4;
}

// The task runtime events of `tid` on `cpu` of the kinds still wanted (p->rt_fields); a kind
// refused once is not asked for again, and its records are not trusted (rt_refused).
static void open_runtime_on_cpu(record_perf_t* p, const record_perf_options_t* o, pid_t tid,
                                int cpu) {
  static const struct {
    uint32_t field, type;
    uint64_t config;
    int kind;
  } kEvents[] = {
      {ZXS_TASK_RUNTIME_PAGE_FAULT_TIME, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
       RECORD_RT_FAULT_BEGIN},
      {ZXS_TASK_RUNTIME_PAGE_FAULT_TIME, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN,
       RECORD_RT_FAULT_END},
      {ZXS_TASK_RUNTIME_PAGE_FAULT_TIME, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ,
       RECORD_RT_FAULT_END},
      {ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME, PERF_TYPE_TRACEPOINT, 0, RECORD_RT_LOCK_BEGIN},
      {ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME, PERF_TYPE_TRACEPOINT, 0, RECORD_RT_LOCK_END},
  };
  for (size_t i = 0; i < sizeof(kEvents) / sizeof(kEvents[0]); i++) {
    if ((p->rt_fields & ~p->rt_refused & kEvents[i].field) == 0) continue;
    uint64_t config = kEvents[i].config;
    if (kEvents[i].kind == RECORD_RT_LOCK_BEGIN) config = p->lock_begin.id;
    if (kEvents[i].kind == RECORD_RT_LOCK_END) config = p->lock_end.id;
    struct perf_event_attr attr;
    runtime_attr(o, kEvents[i].type, config, &attr);
    attr.exclude_kernel = kEvents[i].type == PERF_TYPE_SOFTWARE && p->rt_user_faults;
    int fd = -1;
    int err = open_into(p, p->rt_rings, RT_RING_BYTES, tid, cpu, &attr, &fd);
    if (fd < 0 && (err == -EACCES || err == -EPERM) && kEvents[i].type == PERF_TYPE_SOFTWARE &&
        !attr.exclude_kernel) {
      // No right to kernel events: faults taken in user mode only.
      const size_t used = strlen(p->rt_missing);
      snprintf(p->rt_missing + used, sizeof(p->rt_missing) - used, "%s%s", used > 0 ? "; " : "",
               "page_fault_time: faults taken in kernel mode (copy_to_user) not seen (needs "
               "perf_event_paranoid <= 1 or CAP_PERFMON)");
      p->rt_user_faults = true;
      attr.exclude_kernel = 1;
      err = open_into(p, p->rt_rings, RT_RING_BYTES, tid, cpu, &attr, &fd);
    }
    if (err == -ESRCH) return;  // the thread exited meanwhile
    uint64_t id = 0;
    if (err == 0 && ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) err = -errno;
    if (err == 0 &&
        !zxs_array_grow((void**)&p->rt_ids, &p->rt_cap, p->rt_count + 1, sizeof(*p->rt_ids))) {
      err = -ENOMEM;
    }
    if (err == 0) {
      int* kinds = realloc(p->rt_kinds, p->rt_cap * sizeof(*kinds));
      if (kinds == NULL) err = -ENOMEM;
      if (kinds != NULL) p->rt_kinds = kinds;
    }
    if (err != 0) {
      if ((p->rt_refused & kEvents[i].field) == 0) {
        const size_t used = strlen(p->rt_missing);
        snprintf(p->rt_missing + used, sizeof(p->rt_missing) - used, "%s%s: %s%s",
                 used > 0 ? "; " : "",
                 kEvents[i].field == ZXS_TASK_RUNTIME_PAGE_FAULT_TIME ? "page_fault_time"
                                                                      : "lock_contention_time",
                 fd >= 0                           ? ""
                 : err == -EACCES || err == -EPERM ? "the kernel refused its events "
                                                   : "",
                 fd >= 0 ? "no locked memory left for its ring (perf_event_mlock_kb, "
                           "RLIMIT_MEMLOCK; the sampling rings took it: a smaller --buffer helps)"
                 : err == -EACCES || err == -EPERM
                     ? (kEvents[i].type == PERF_TYPE_TRACEPOINT ? "(needs root or CAP_PERFMON)"
                                                                : "(perf_event_paranoid)")
                     : strerror(-err));
      }
      p->rt_refused |= kEvents[i].field;
      continue;
    }
    p->rt_ids[p->rt_count] = id;
    p->rt_kinds[p->rt_count++] = kEvents[i].kind;
  }
}

// Every thread of a running process, until a pass over /proc/PID/task finds none new (threads
// that one of ours creates meanwhile inherit its events).
static int attach_threads(record_perf_t* p, const record_perf_options_t* o,
                          struct perf_event_attr* attrs) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/task", (int)o->pid);
  pid_t* done = NULL;
  size_t done_count = 0, done_cap = 0;
  int first_error = 0;
  for (bool found_new = true; found_new;) {
    found_new = false;
    DIR* dir = opendir(path);
    if (dir == NULL) {
      free(done);
      return -errno;
    }
    for (struct dirent* e; (e = readdir(dir)) != NULL;) {
      pid_t tid = (pid_t)atoi(e->d_name);
      bool seen = tid <= 0;
      for (size_t i = 0; i < done_count && !seen; i++) seen = done[i] == tid;
      if (seen) continue;
      if (!zxs_array_grow((void**)&done, &done_cap, done_count + 1, sizeof(*done))) {
        closedir(dir);
        free(done);
        return -ENOMEM;
      }
      done[done_count++] = tid;
      found_new = true;
      for (int cpu = 0; cpu < p->cpus; cpu++) {
        int err = open_on_cpu(p, o, tid, cpu, attrs);
        if (err == 0) open_runtime_on_cpu(p, o, tid, cpu);
        if (err == -ESRCH) {  // exited meanwhile
          break;
        }
        if (err != 0) {
          if (first_error == 0) first_error = err;
          p->attach_failures++;
          break;
        }
      }
    }
    closedir(dir);
  }
  free(done);
  // Every thread failed: report why; some failed: counted.
  bool any = false;
  for (int cpu = 0; cpu < p->cpus; cpu++) any = any || p->sb_rings[cpu].fd >= 0;
  return any ? 0 : (first_error != 0 ? first_error : -ESRCH);
}

// Which task runtime events to ask for, and why the others are not.
static void choose_runtime(record_perf_t* p, const record_perf_options_t* o) {
  p->rt_fields = 0;
  p->rt_refused = 0;
  p->rt_user_faults = false;
  p->rt_missing[0] = '\0';
  if (!o->runtime) return;
  if (!o->runtime_events) {
    // Timing every fault costs the program ~1 us a fault and shows in its own profile
    // (perf_swevent_event): asked for, not taken by default.
    snprintf(p->rt_missing, sizeof(p->rt_missing), "%s",
             "page_fault_time, lock_contention_time: not asked (--runtime-events times them, "
             "at about 1 us of the program's CPU per page fault)");
    return;
  }
  p->rt_fields = ZXS_TASK_RUNTIME_PAGE_FAULT_TIME;
  if (zxs_rt_lock_tracepoints(&p->lock_begin, &p->lock_end)) {
    p->rt_fields |= ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME;
  } else {
    snprintf(p->rt_missing, sizeof(p->rt_missing), "%s",
             "lock_contention_time: tracefs does not name lock:contention_begin/end (mount "
             "/sys/kernel/tracing; reading it needs root)");
  }
}

static int open_all(record_perf_t* p, const record_perf_options_t* o, bool kernel, bool build_id) {
  struct perf_event_attr attrs[2];  // the samples', the side band's
  make_attr(o, kernel, build_id, false, &attrs[0]);
  make_attr(o, kernel, build_id, true, &attrs[1]);
  p->sample_type = attrs[0].sample_type;
  choose_runtime(p, o);
  if (o->attach) return attach_threads(p, o, attrs);
  for (int cpu = 0; cpu < p->cpus; cpu++) {
    int err = open_on_cpu(p, o, o->pid, cpu, attrs);
    if (err != 0) return err;
  }
  for (int cpu = 0; cpu < p->cpus; cpu++) open_runtime_on_cpu(p, o, o->pid, cpu);
  return 0;
}

static void close_all(record_perf_t* p) {
  for (int cpu = 0; cpu < p->cpus; cpu++) {
    ring_t* rings[3] = {&p->rings[cpu], p->rt_rings != NULL ? &p->rt_rings[cpu] : NULL,
                        p->sb_rings != NULL ? &p->sb_rings[cpu] : NULL};
    for (int k = 0; k < 3; k++) {
      ring_t* r = rings[k];
      if (r == NULL) continue;
      if (r->base != NULL) munmap(r->base, p->page + r->data_size);
      *r = (ring_t){.fd = -1};
    }
  }
  for (size_t i = 0; i < p->fd_count; i++) close(p->fds[i]);
  p->fd_count = 0;
  p->main_count = 0;
  p->rt_count = 0;
}

record_perf_t* record_perf_open(const record_perf_options_t* o, char* error, size_t error_size) {
  record_perf_t* p = calloc(1, sizeof(*p));
  long cpus = sysconf(_SC_NPROCESSORS_CONF);
  if (p == NULL || cpus <= 0) {
    snprintf(error, error_size, "out of memory");
    free(p);
    return NULL;
  }
  p->cpus = (int)cpus;
  p->page = (size_t)sysconf(_SC_PAGESIZE);
  p->copy_fixed = o->stack_copy_fixed;
  p->rings = calloc((size_t)cpus, sizeof(*p->rings));
  p->rt_rings = calloc((size_t)cpus, sizeof(*p->rt_rings));
  p->sb_rings = calloc((size_t)cpus, sizeof(*p->sb_rings));
  if (p->rings == NULL || p->rt_rings == NULL || p->sb_rings == NULL) {
    snprintf(error, error_size, "out of memory");
    free(p->rings);
    free(p->rt_rings);
    free(p->sb_rings);
    free(p);
    return NULL;
  }
  for (int cpu = 0; cpu < p->cpus; cpu++) {
    p->rings[cpu].fd = p->rt_rings[cpu].fd = p->sb_rings[cpu].fd = -1;
  }
  // Attaching opens (1 + 5 runtime events) x CPUs descriptors per thread: as many as we may.
  // (A program we start was forked before this and keeps its own limit.)
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &files);
  }
  // Kernel samples where allowed, else user only; build IDs in MMAP2 where the kernel has them.
  int err = -EINVAL;
  for (int attempt = 0; attempt < 4 && err != 0; attempt++) {
    bool kernel = o->kernel && attempt < 2;
    bool build_id = attempt % 2 == 0;
    if (!o->kernel && attempt < 2) continue;
    err = open_all(p, o, kernel, build_id);
    if (err == 0) {
      p->kernel = kernel;
    } else {
      close_all(p);
      p->attach_failures = 0;
    }
    if (err == -ESRCH || err == -ENOMEM || err == -EMFILE) break;
  }
  if (err != 0) {
    int paranoid = -9;
    FILE* f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    if (f != NULL) {
      if (fscanf(f, "%d", &paranoid) != 1) paranoid = -9;
      fclose(f);
    }
    if (err == -EACCES || err == -EPERM) {
      snprintf(error, error_size,
               "the kernel refused perf events for %s (%s; perf_event_paranoid is %d: 2 or less "
               "is needed, or CAP_PERFMON). Where perf events are blocked, link the library "
               "into the program and use zxs_profiler_start() instead",
               o->attach ? "that process" : "the program", strerror(-err), paranoid);
    } else if (err == -ESRCH || err == -ENOENT) {
      snprintf(error, error_size, "no such process: %d", (int)o->pid);
    } else {
      snprintf(error, error_size, "cannot open perf events: %s", strerror(-err));
    }
    record_perf_close(p);
    return NULL;
  }
  return p;
}

bool record_perf_kernel(const record_perf_t* p) { return p->kernel; }

uint64_t record_perf_sample_type(const record_perf_t* p) { return p->sample_type; }

uint64_t record_perf_attach_failures(const record_perf_t* p) { return p->attach_failures; }

size_t record_perf_ring_cut(const record_perf_t* p) { return p->ring_cut; }

uint32_t record_perf_copy_cut(const record_perf_t* p) { return p->copy_cut; }

typedef struct drain {
  record_perf_fn fn;
  void* ctx;
} drain_t;

static void on_ring_record(void* arg, uint32_t type, const uint64_t* body, size_t words) {
  (void)type, (void)words;
  const drain_t* d = arg;
  d->fn(d->ctx, (const struct perf_event_header*)(const void*)(body - 1));
}

static void drain_ring(record_perf_t* p, ring_t* r, record_perf_fn fn, void* ctx) {
  drain_t d = {.fn = fn, .ctx = ctx};
  zxs_linux_ring_read(r->base, p->page, r->data_size, p->scratch, on_ring_record, &d);
}

static void drain_side_band(record_perf_t* p, record_perf_fn fn, void* ctx) {
  for (int cpu = 0; cpu < p->cpus; cpu++) {
    if (p->sb_rings[cpu].base != NULL) drain_ring(p, &p->sb_rings[cpu], fn, ctx);
  }
}

void record_perf_drain(record_perf_t* p, record_perf_fn fn, record_perf_fn runtime_fn, void* ctx) {
  // The side band first, so that the samples after it find their process's exec, names and
  // mappings even when the batch fills and is handled before this pass ends; and again last,
  // for what came meanwhile, which the batch puts in time order with the samples it still holds.
  drain_side_band(p, fn, ctx);
  for (int cpu = 0; cpu < p->cpus; cpu++) {
    if (p->rings[cpu].base != NULL) drain_ring(p, &p->rings[cpu], fn, ctx);
    if (p->rt_rings[cpu].base != NULL) drain_ring(p, &p->rt_rings[cpu], runtime_fn, ctx);
  }
  drain_side_band(p, fn, ctx);
}

bool record_perf_poll(record_perf_t* p, int extra_fd, int timeout_ms, record_perf_fn fn,
                      record_perf_fn runtime_fn, void* ctx) {
  struct pollfd fds[3 * p->cpus + 1];
  nfds_t n = 0;
  for (int cpu = 0; cpu < p->cpus; cpu++) {
    const ring_t* rings[3] = {&p->rings[cpu], &p->rt_rings[cpu], &p->sb_rings[cpu]};
    for (int k = 0; k < 3; k++) {
      if (rings[k]->fd >= 0) fds[n++] = (struct pollfd){.fd = rings[k]->fd, .events = POLLIN};
    }
  }
  nfds_t extra = n;
  if (extra_fd >= 0) fds[n++] = (struct pollfd){.fd = extra_fd, .events = POLLIN};
  (void)poll(fds, n, timeout_ms);
  record_perf_drain(p, fn, runtime_fn, ctx);
  return extra_fd >= 0 && (fds[extra].revents & (POLLIN | POLLHUP)) != 0;
}

uint32_t record_perf_runtime_fields(const record_perf_t* p) {
  return p->rt_fields & ~p->rt_refused;
}

const char* record_perf_runtime_missing(const record_perf_t* p) { return p->rt_missing; }

size_t record_perf_runtime_ids(const record_perf_t* p, const uint64_t** ids, const int** kinds) {
  *ids = p->rt_ids;
  *kinds = p->rt_kinds;
  return p->rt_count;
}

void record_perf_read_counts(const record_perf_t* p, record_perf_count_fn fn, void* ctx) {
  for (size_t i = 0; i < p->main_count; i++) {
    uint64_t values[2];  // {value, id}
    if (read(p->mains[i].fd, values, sizeof(values)) == (ssize_t)sizeof(values)) {
      fn(ctx, p->mains[i].tid, values[1], values[0]);
    }
  }
}

void record_perf_close(record_perf_t* p) {
  if (p == NULL) return;
  if (p->rings != NULL) close_all(p);
  free(p->rings);
  free(p->rt_rings);
  free(p->sb_rings);
  free(p->fds);
  free(p->mains);
  free(p->rt_ids);
  free(p->rt_kinds);
  free(p);
}
