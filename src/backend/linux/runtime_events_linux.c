// Linux: page-fault and kernel-lock time of one thread, timed from the kernel's own events.
//
// Each measured thread gets up to five per-thread perf events that all write into one small ring
// (PERF_EVENT_IOC_SET_OUTPUT), each sampled on every occurrence (period 1) with its time:
//   PERF_COUNT_SW_PAGE_FAULTS       emitted where the fault handler begins (do_user_addr_fault),
//   PERF_COUNT_SW_PAGE_FAULTS_MIN   emitted where it ends, for a completed fault (mm_account_fault:
//   PERF_COUNT_SW_PAGE_FAULTS_MAJ   not for retried or failed faults),
//   lock:contention_begin           the tracepoints of the kernel's sleeping and spinning locks,
//   lock:contention_end             with the lock's address and flags (PERF_SAMPLE_RAW).
// A thread's records come in the order it produced them, so a fault's time is the next end
// minus its begin (a begin with no end, a failed fault, is dropped at the next begin), and a
// contention's time is the matching end (same lock address) minus its begin; spin-lock
// contentions (LCB_F_SPIN) are left out, as the RFC leaves them out. Software events need no
// privilege for our own threads at perf_event_paranoid <= 2 (user-mode faults only without the
// right to see kernel events); tracepoints need the right to see kernel events and tracefs for
// their ids. What cannot be opened is left out of `fields`, and the rest still works.
//
// The events run whether or not anyone reads: the ring is drained by the runtime's drainer
// thread when it is half full (task_runtime_linux.c) and before every read, so totals are exact
// up to the last record. A full ring makes the kernel drop records: counted in `lost`, and the
// pairs it broke are not counted.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime_events_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/object.h>

#include "linux_internal.h"
#include "runtime_pairs_linux.h"

// Data pages of a thread's ring (zxs_rt_events_open's `pages`): 8 pages, 32 KiB, hold ~1350
// fault records (24 bytes each); the drainer is woken at half. Fewer when the locked-memory limit
// refuses that many (perf rings share perf_event_mlock_kb with the sampler's perf-ring source, so
// they stay small).
#define RING_MIN_PAGES 2u

static uint64_t g_scratch[65536 / 8];    // one record; callers serialize (the runtime's lock)
static _Atomic int64_t g_fault_edge_ns;  // zxs_rt_fault_edge_ns()

// --- Tracepoint ids and layouts: tracefs, looked up once (runtime_pairs_linux.c) -------------

static zxs_rt_tracepoint_t g_begin, g_end;
static pthread_once_t g_tracepoints_once = PTHREAD_ONCE_INIT;

static void find_tracepoints(void) { (void)zxs_rt_lock_tracepoints(&g_begin, &g_end); }

// --- Opening ------------------------------------------------------------------------------------

static void sample_every_one(struct perf_event_attr* attr, uint32_t type, uint64_t config) {
  memset(attr, 0, sizeof(*attr));
  attr->size = sizeof(*attr);
  attr->type = type;
  attr->config = config;
  attr->sample_period = 1;
  attr->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TIME;
  attr->use_clockid = 1;
  attr->clockid = CLOCK_MONOTONIC;
  attr->exclude_hv = 1;
  // read() gives the time the event ran: the thread's CPU time since it was opened, final
  // after the thread exits (zxs_rt_events_running_ns()).
  attr->read_format = PERF_FORMAT_TOTAL_TIME_RUNNING;
}

// Opens one event of `tid` into `ev` (the first one opened owns the ring). False on failure.
static bool add_event(zxs_rt_events_t* ev, int which, struct perf_event_attr* attr, pid_t tid) {
  int fd = zxs_linux_perf_event_open(attr, tid, -1);
  if (fd < 0 && errno == EACCES && !attr->exclude_kernel && attr->type == PERF_TYPE_SOFTWARE) {
    attr->exclude_kernel = 1;  // not allowed to see kernel events: user-mode faults only
    fd = zxs_linux_perf_event_open(attr, tid, -1);
  }
  if (fd < 0) return false;
  uint64_t id = 0;
  bool ok = ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0;
  if (ok && ev->ring_fd >= 0) ok = ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ev->ring_fd) == 0;
  if (!ok) {
    close(fd);
    return false;
  }
  ev->fds[which] = fd;
  ev->ids[which] = id;
  return true;
}

// Opens event `which` as the ring's owner and maps its ring: `pages` of data, or fewer when
// the locked-memory limit refuses that many. The event is reopened for each size, since it wakes
// the drainer when half of its own ring is used (a watermark fixed at open).
static bool open_ring_owner(zxs_rt_events_t* ev, int which, struct perf_event_attr* attr, pid_t tid,
                            size_t ring_pages) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (size_t pages = ring_pages; pages >= RING_MIN_PAGES; pages /= 2) {
    attr->watermark = 1;
    attr->wakeup_watermark = (uint32_t)(pages * page / 2);
    if (!add_event(ev, which, attr, tid)) return false;
    void* base =
        mmap(NULL, page * (pages + 1), PROT_READ | PROT_WRITE, MAP_SHARED, ev->fds[which], 0);
    if (base != MAP_FAILED) {
      ev->ring = base;
      ev->page = page;
      ev->data_size = page * pages;
      ev->ring_fd = ev->fds[which];
      return true;
    }
    close(ev->fds[which]);
    ev->fds[which] = -1;
  }
  return false;
}

// Opens the events of one kind (`first`..`last`), all or none.
static bool open_kind(zxs_rt_events_t* ev, pid_t tid, int first, int last,
                      struct perf_event_attr* attrs, size_t ring_pages) {
  for (int i = first; i <= last; i++) {
    const bool ok = ev->ring_fd < 0 ? open_ring_owner(ev, i, &attrs[i], tid, ring_pages)
                                    : add_event(ev, i, &attrs[i], tid);
    if (!ok) {
      // None of this kind stays open; nor the ring, if one of them owned it (the other kind
      // is opened only after this one succeeded or failed).
      bool owned = false;
      for (int j = first; j <= last; j++) {
        owned = owned || (ev->fds[j] >= 0 && ev->fds[j] == ev->ring_fd);
        if (ev->fds[j] >= 0 && ev->fds[j] != ev->ring_fd) close(ev->fds[j]);
        ev->fds[j] = -1;
      }
      if (owned) {
        munmap(ev->ring, ev->page + ev->data_size);
        close(ev->ring_fd);
        ev->ring = NULL;
        ev->ring_fd = -1;
      }
      return false;
    }
  }
  return true;
}

void zxs_rt_events_init(zxs_rt_events_t* ev) {
  memset(ev, 0, sizeof(*ev));
  ev->ring_fd = -1;
  for (int i = 0; i < ZXS_RT_EVENT_COUNT; i++) ev->fds[i] = -1;
}

uint32_t zxs_rt_events_open(zxs_rt_events_t* ev, pid_t tid, size_t ring_pages) {
  zxs_rt_events_init(ev);
  struct perf_event_attr attrs[ZXS_RT_EVENT_COUNT];
  sample_every_one(&attrs[ZXS_RT_FAULT_BEGIN], PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
  sample_every_one(&attrs[ZXS_RT_FAULT_END_MIN], PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN);
  sample_every_one(&attrs[ZXS_RT_FAULT_END_MAJ], PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ);
  if (open_kind(ev, tid, ZXS_RT_FAULT_BEGIN, ZXS_RT_FAULT_END_MAJ, attrs, ring_pages)) {
    ev->fields |= ZXS_TASK_RUNTIME_PAGE_FAULT_TIME;
  }
  pthread_once(&g_tracepoints_once, find_tracepoints);
  if (g_begin.found && g_end.found) {
    sample_every_one(&attrs[ZXS_RT_LOCK_BEGIN], PERF_TYPE_TRACEPOINT, g_begin.id);
    sample_every_one(&attrs[ZXS_RT_LOCK_END], PERF_TYPE_TRACEPOINT, g_end.id);
    attrs[ZXS_RT_LOCK_BEGIN].sample_type |= PERF_SAMPLE_RAW;
    attrs[ZXS_RT_LOCK_END].sample_type |= PERF_SAMPLE_RAW;
    if (open_kind(ev, tid, ZXS_RT_LOCK_BEGIN, ZXS_RT_LOCK_END, attrs, ring_pages)) {
      ev->fields |= ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME;
    }
  }
  return ev->fields;
}

// --- The part of a fault outside its pair -------------------------------------------------------

// A fault's begin event fires after the exception entry, and its end event's record is written
// after its time was taken; both, and the return to user mode, are the thread's CPU time outside
// the pair (on a 2-vCPU KVM guest about a third of what a fresh page costs). It is measured once:
// a thread touches fresh pages with its own fault events open; its CPU time over the touches,
// less the same loop over present pages and less the paired time, per fault, is that edge.
#define EDGE_PAGES 256u
#define EDGE_ROUNDS 5
// More is a disturbed measurement (preempted, a slow host), not a fault's edge.
#define EDGE_MAX_NS 20000

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void touch_pages(volatile uint8_t* mem, size_t pages, size_t page) {
  for (size_t i = 0; i < pages; i++) mem[i * page] = (uint8_t)i;
}

// One round's edge in ns; -1 when the events or the memory cannot be had.
static int64_t measure_edge(void) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  uint8_t* mem =
      mmap(NULL, EDGE_PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return -1;
  madvise(mem, EDGE_PAGES * page, MADV_NOHUGEPAGE);  // one fault per page
  zxs_rt_events_t ev;
  int64_t edge = -1;
  if (zxs_rt_events_open(&ev, (pid_t)syscall(SYS_gettid), ZXS_RT_RING_PAGES) &
      ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) {
    const int64_t t0 = thread_cpu_ns();
    touch_pages(mem, EDGE_PAGES, page);
    const int64_t t1 = thread_cpu_ns();
    touch_pages(mem, EDGE_PAGES, page);
    const int64_t t2 = thread_cpu_ns();
    zxs_rt_events_drain(&ev);
    if (ev.pairs.faults != 0 && ev.lost == 0) {
      edge = ((t1 - t0) - (t2 - t1) - ev.pairs.page_fault_ns) / (int64_t)ev.pairs.faults;
      if (edge < 0) edge = 0;
    }
  }
  zxs_rt_events_close(&ev, true);
  munmap(mem, EDGE_PAGES * page);
  return edge;
}

static int compare_ns(const void* a, const void* b) {
  const int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

static pthread_once_t g_fault_edge_once = PTHREAD_ONCE_INIT;

static void calibrate_fault_edge(void) {
  int64_t rounds[EDGE_ROUNDS];
  size_t n = 0;
  for (int i = 0; i < EDGE_ROUNDS; i++) {
    const int64_t edge = measure_edge();
    if (edge >= 0) rounds[n++] = edge;
  }
  if (n == 0) return;
  qsort(rounds, n, sizeof(rounds[0]), compare_ns);
  const int64_t median = rounds[n / 2];
  atomic_store(&g_fault_edge_ns, median <= EDGE_MAX_NS ? median : 0);
}

int64_t zxs_rt_fault_edge_ns(void) {
  pthread_once(&g_fault_edge_once, calibrate_fault_edge);
  return atomic_load(&g_fault_edge_ns);
}

// --- Pairing ------------------------------------------------------------------------------------

static int event_of(const zxs_rt_events_t* ev, uint64_t id) {
  for (int i = 0; i < ZXS_RT_EVENT_COUNT; i++) {
    if (ev->fds[i] >= 0 && ev->ids[i] == id) return i;
  }
  return -1;
}

// A tracepoint sample's raw data: {id} {time} {u32 raw size, raw bytes...}; NULL when short.
static const uint8_t* raw_of(const uint64_t* body, size_t words, size_t* size) {
  uint32_t raw_size;
  if (words < 3) return NULL;
  memcpy(&raw_size, &body[2], sizeof(raw_size));
  if ((size_t)raw_size + sizeof(uint32_t) > (words - 2) * 8) return NULL;
  *size = raw_size;
  return (const uint8_t*)&body[2] + sizeof(uint32_t);
}

static void on_record(void* ctx, uint32_t type, const uint64_t* body, size_t words) {
  zxs_rt_events_t* ev = ctx;
  if (type == PERF_RECORD_LOST) {
    // The ring was full: pairs may be broken, so the open ones are not trusted.
    if (words >= 2) ev->lost += body[1];
    zxs_rt_pairs_break(&ev->pairs);
    return;
  }
  if (type != PERF_RECORD_SAMPLE || words < 2) return;
  const uint64_t time = body[1];
  size_t raw_size = 0;
  const uint8_t* raw;
  switch (event_of(ev, body[0])) {
    case ZXS_RT_FAULT_BEGIN:
      zxs_rt_pairs_fault_begin(&ev->pairs, time);
      break;
    case ZXS_RT_FAULT_END_MIN:
    case ZXS_RT_FAULT_END_MAJ:
      zxs_rt_pairs_fault_end(&ev->pairs, time);
      break;
    case ZXS_RT_LOCK_BEGIN:
      raw = raw_of(body, words, &raw_size);
      zxs_rt_pairs_lock_begin(&ev->pairs, &g_begin, time, raw, raw_size);
      break;
    case ZXS_RT_LOCK_END:
      raw = raw_of(body, words, &raw_size);
      zxs_rt_pairs_lock_end(&ev->pairs, &g_end, time, raw, raw_size);
      break;
    default:
      break;
  }
}

bool zxs_rt_events_running_ns(const zxs_rt_events_t* ev, int64_t* ns) {
  uint64_t values[2];  // {count, time_running}
  if (ev->ring_fd < 0 || read(ev->ring_fd, values, sizeof(values)) != (ssize_t)sizeof(values)) {
    return false;
  }
  *ns = (int64_t)values[1];
  return true;
}

void zxs_rt_events_drain(zxs_rt_events_t* ev) {
  if (ev->ring == NULL) return;
  ev->pairs.fault_edge_ns = atomic_load(&g_fault_edge_ns);  // 0 until measured
  zxs_linux_ring_read(ev->ring, ev->page, ev->data_size, g_scratch, on_record, ev);
}

void zxs_rt_events_close(zxs_rt_events_t* ev, bool forget) {
  if (!forget) zxs_rt_events_drain(ev);
  for (int i = 0; i < ZXS_RT_EVENT_COUNT; i++) {
    if (ev->fds[i] >= 0 && ev->fds[i] != ev->ring_fd) close(ev->fds[i]);
    ev->fds[i] = -1;
  }
  if (ev->ring != NULL) munmap(ev->ring, ev->page + ev->data_size);
  if (ev->ring_fd >= 0) close(ev->ring_fd);
  ev->ring = NULL;
  ev->ring_fd = -1;
}
