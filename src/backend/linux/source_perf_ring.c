// Linux: the perf_event source without a signal. One software task-clock event per attached
// thread, as in source_perf.c, but on each overflow the kernel itself copies the thread's user
// registers and the top of its stack (8 KiB by default) into a ring buffer mapped for that event
// (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER). A collector thread of the library's drains
// the rings: for each sample the core walks the frame pointers over the copy with the very rules
// of the signal path (frame_walk.c: within the thread's stack, aligned, strictly increasing), and
// writes the record into the region of the CPU the kernel names, as a pending write of the
// per-CPU protocol. It wakes when a ring is half full and every DRAIN_INTERVAL_MS while rings
// are armed.
//
// Why: the signal source pays, per sample, an irq_work self-interrupt, the signal frame, a
// sigreturn and a re-arm ioctl on top of the timer interrupt: ~50 us here against `perf
// record`'s ~20 us (docs/PERFORMANCE.md). The kernel's own frame-pointer walk
// (PERF_SAMPLE_CALLCHAIN) would be cheaper still, but it checks neither stack bounds nor
// alignment nor direction, so a garbage frame pointer (code built without them) yields garbage
// frames, against the contract's walk rules; the copy keeps the rules at the price of the copy.
// A stack deeper than the copy is cut there and counted as truncated.
//
// Nothing is lost at stop: stop flushes the rings (zxs_prim_sampling_flush) before it disables
// writes. A ring the collector could not drain in time makes the kernel drop samples and count
// them (PERF_FORMAT_LOST): they count as dropped_other. A thread that exits keeps its ring until
// it is detached, which drains it first.
//
// Locking: g_lock guards the ring table and is held while draining (by the collector, flush,
// disarm). The session lock may be held when g_lock is taken, never the other way round: the
// collector only calls zxs_core_sample_copy(), which takes no lock.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/sampler.h>

#include "linux_internal.h"
#include "perf_regs.h"
#include "platform.h"
#include "sampling.h"

// A ring is drained at least this often while any is armed, so a region read while sampling
// lags by about this much.
#define DRAIN_INTERVAL_MS 20
// Bytes of stack the kernel copies per sample, from sp up (perf's own default for DWARF
// unwinding). ZXSAMPLER_STACK_COPY=N (bytes, 512..65000) changes it.
#define STACK_COPY_BYTES 8192u
#define STACK_COPY_MIN 512u
#define STACK_COPY_MAX 65000u
// A ring holds twice what its thread produces in RING_SPAN_MS (the collector is woken at half,
// so that is the time it has to get a CPU), and at least RING_MIN_SAMPLES samples, within
// [RING_MIN_PAGES, RING_MAX_PAGES] data pages: 128 KiB at 1 ms, 512 KiB at 250 us.
#define RING_SPAN_MS 5
#define RING_MIN_SAMPLES 12u
#define RING_MIN_PAGES 8u
#define RING_MAX_PAGES 256u
// header, {pid, tid}, time, {cpu, res}, abi, 3 registers, size, dyn_size: the record around
// the stack copy.
#define RECORD_OVERHEAD 88u

typedef struct ring {
  zxs_thread_slot_t* slot;  // NULL: entry unused
  int fd;
  uint8_t* base;  // header page, then data_size bytes of data
  size_t map_size;
  size_t data_size;  // a power of two
  uint32_t attach_gen;
  uint32_t last_cpu;   // of the last sample drained: lost samples are counted there
  uint64_t lost_seen;  // the event's lost count already counted
  bool polled;         // in the collector's epoll set
} ring_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ring_t g_rings[ZXS_MAX_THREADS];  // by slot index; g_lock
static uint32_t g_armed;                 // rings in use; g_lock
static int g_epoll = -1;                 // the collector's; g_lock
static int g_wake = -1;                  // eventfd in g_epoll: "rings changed"
static pid_t g_collector_pid;            // process the collector runs in (0: none)
static size_t g_page;
static uint32_t g_stack_copy;         // bytes per sample; set by probe()
static uint64_t g_record[65536 / 8];  // one record, copied out of a ring; g_lock

static _Atomic bool g_collector_held;  // tests: the collector drains nothing

static bool g_available;
static pthread_once_t g_probe_once = PTHREAD_ONCE_INIT;

static size_t ring_pages(zx_duration_t period) {
  const uint64_t record = RECORD_OVERHEAD + g_stack_copy;
  uint64_t samples = 2 * ((uint64_t)RING_SPAN_MS * 1000000u / (uint64_t)period + 1);
  if (samples < RING_MIN_SAMPLES) samples = RING_MIN_SAMPLES;
  const uint64_t bytes = samples * record;
  size_t pages = RING_MIN_PAGES;
  while (pages < RING_MAX_PAGES && (uint64_t)pages * g_page < bytes) pages *= 2;
  return pages;
}

static int ring_open(pid_t tid, zx_duration_t period, size_t data_size) {
  struct perf_event_attr attr;
  zxs_linux_task_clock_attr(&attr, period);
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER |
                     PERF_SAMPLE_STACK_USER;
  attr.sample_regs_user = ZXS_PERF_REGS_MASK;
  attr.sample_stack_user = g_stack_copy;
  attr.read_format = PERF_FORMAT_LOST;  // Linux 6.0
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;  // zxs_prim_ticks()'s clock
  attr.watermark = 1;
  attr.wakeup_watermark = (uint32_t)(data_size / 2);
  return zxs_linux_perf_event_open(&attr, tid);
}

static uint32_t stack_copy_bytes(void) {
  const char* value = getenv("ZXSAMPLER_STACK_COPY");
  if (value == NULL || *value == '\0') return STACK_COPY_BYTES;
  char* end = NULL;
  const unsigned long n = strtoul(value, &end, 10);
  if (*end != '\0' || n < STACK_COPY_MIN || n > STACK_COPY_MAX) return STACK_COPY_BYTES;
  return (uint32_t)(n & ~7ul);  // the kernel wants a multiple of 8
}

static void probe(void) {
  g_page = (size_t)sysconf(_SC_PAGESIZE);
  g_stack_copy = stack_copy_bytes();
  const size_t data = RING_MIN_PAGES * g_page;
  // Before 6.0 (no PERF_FORMAT_LOST) or without user stack copies: the signal source is used.
  int fd = ring_open(0, ZXS_LINUX_PERF_MIN_PERIOD * 100, data);
  if (fd < 0) {
    g_available = zxs_linux_perf_status(errno) != ZX_ERR_NOT_SUPPORTED;
    return;
  }
  void* base = mmap(NULL, g_page + data, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  g_available = base != MAP_FAILED;
  if (base != MAP_FAILED) munmap(base, g_page + data);
  close(fd);
}

bool zxs_linux_ring_available(void) {
  pthread_once(&g_probe_once, probe);
  return g_available;
}

// --- Draining (g_lock held) -------------------------------------------------------------------

static void handle_sample(ring_t* r, const uint64_t* w, size_t words) {
  // {pid, tid} {time} {cpu, res} {abi} {regs[REG_COUNT]} {size} {data[size]} {dyn_size}
  enum { CPU = 2, ABI = 3, REGS = 4, SIZE = REGS + ZXS_PERF_REG_COUNT, DATA = SIZE + 1 };
  if (words <= CPU) return;
  const uint32_t cpu = (uint32_t)w[CPU];
  r->last_cpu = cpu;
  if (words < DATA || w[ABI] != PERF_SAMPLE_REGS_ABI_64) {
    zxs_core_count_dropped(cpu, 1);  // no user registers (not with exclude_kernel)
    return;
  }
  const zxs_regs_t regs = {.pc = w[REGS + ZXS_PERF_REG_PC],
                           .fp = w[REGS + ZXS_PERF_REG_FP],
                           .sp = w[REGS + ZXS_PERF_REG_SP]};
  const uint64_t size = w[SIZE];
  uint64_t copied = 0;
  if (size > 0 && size % 8 == 0 && size / 8 < words - DATA) {
    copied = w[DATA + size / 8];  // dyn_size: what the kernel could read
    if (copied > size) copied = 0;
  }
  zxs_core_sample_copy(r->slot, r->attach_gen, cpu, w[1], &regs, &w[DATA], (size_t)copied);
}

// Samples the kernel took but could not store (the ring was full) are counted by the event
// itself (PERF_FORMAT_LOST): PERF_RECORD_LOST would only be written once the ring has room
// again, which after the last drain never comes.
static void count_lost_locked(ring_t* r) {
  uint64_t values[2];  // {value, lost}
  if (read(r->fd, values, sizeof(values)) != (ssize_t)sizeof(values)) return;
  if (values[1] > r->lost_seen) {
    zxs_core_count_dropped(r->last_cpu, values[1] - r->lost_seen);
    r->lost_seen = values[1];
  }
}

static void on_record(void* ctx, uint32_t type, const uint64_t* body, size_t words) {
  // PERF_RECORD_LOST: counted by count_lost_locked. PERF_RECORD_THROTTLE/UNTHROTTLE: the
  // kernel's own rate limit; the samples it skipped were never taken.
  if (type == PERF_RECORD_SAMPLE) handle_sample(ctx, body, words);
}

static void drain_locked(ring_t* r) {
  zxs_linux_ring_read(r->base, g_page, r->data_size, g_record, on_record, r);
  count_lost_locked(r);
}

static void drain_all_locked(void) {
  for (uint32_t i = 0, seen = 0; i < ZXS_MAX_THREADS && seen < g_armed; i++) {
    if (g_rings[i].slot != NULL) {
      drain_locked(&g_rings[i]);
      seen++;
    }
  }
}

// --- The collector ----------------------------------------------------------------------------

static void* collector_main(void* unused) {
  (void)unused;
  prctl(PR_SET_NAME, "zxs-collector", 0, 0, 0);
  zxs_linux_internal_thread_started();
  for (;;) {
    pthread_mutex_lock(&g_lock);
    const int epoll = g_epoll;
    const int timeout = g_armed > 0 ? DRAIN_INTERVAL_MS : -1;
    pthread_mutex_unlock(&g_lock);
    struct epoll_event events[16];
    const int n = epoll_wait(epoll, events, 16, timeout);
    if (n < 0 && errno != EINTR) return NULL;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < n; i++) {
      const uint64_t index = events[i].data.u64;
      if (index == UINT64_MAX) {
        uint64_t count;
        ssize_t got = read(g_wake, &count, sizeof(count));
        (void)got;
        continue;
      }
      // An event whose thread exited polls as hung up for good: stop polling it (its ring
      // stays until the thread is detached).
      ring_t* r = &g_rings[index];
      if ((events[i].events & (EPOLLHUP | EPOLLERR)) != 0 && r->slot != NULL && r->polled) {
        epoll_ctl(g_epoll, EPOLL_CTL_DEL, r->fd, NULL);
        r->polled = false;
      }
    }
    if (!atomic_load_explicit(&g_collector_held, memory_order_relaxed)) drain_all_locked();
    pthread_mutex_unlock(&g_lock);
  }
}

// Starts the collector in this process if it does not run here yet. g_lock held.
static bool ensure_collector_locked(void) {
  if (g_collector_pid == getpid()) return true;
  g_epoll = epoll_create1(EPOLL_CLOEXEC);
  g_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
  if (g_epoll < 0 || g_wake < 0 || epoll_ctl(g_epoll, EPOLL_CTL_ADD, g_wake, &ev) != 0) {
    goto fail;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // no signal of the program's lands on it
  pthread_t thread;
  int err = pthread_create(&thread, NULL, collector_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) goto fail;
  pthread_detach(thread);
  g_collector_pid = getpid();
  return true;
fail:
  if (g_epoll >= 0) close(g_epoll);
  if (g_wake >= 0) close(g_wake);
  g_epoll = g_wake = -1;
  return false;
}

static void wake_collector_locked(void) {
  const uint64_t one = 1;
  ssize_t put = write(g_wake, &one, sizeof(one));
  (void)put;
}

// --- The source -------------------------------------------------------------------------------

static void ring_release_locked(ring_t* r) {
  if (r->polled) epoll_ctl(g_epoll, EPOLL_CTL_DEL, r->fd, NULL);
  munmap(r->base, r->map_size);
  close(r->fd);
  memset(r, 0, sizeof(*r));
  g_armed--;
}

zx_status_t zxs_linux_ring_arm(zxs_thread_slot_t* slot, zx_duration_t period, uint32_t gen) {
  if (!zxs_linux_ring_available()) return ZX_ERR_NOT_SUPPORTED;
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  atomic_store_explicit(&st->fd, -1, memory_order_relaxed);
  atomic_store_explicit(&st->kind, ZXS_SOURCE_PERF_RING, memory_order_relaxed);
  const size_t data_size = ring_pages(period) * g_page;
  const int fd = ring_open((pid_t)slot->thread.koid, period, data_size);
  if (fd < 0) return zxs_linux_perf_status(errno);
  void* base = mmap(NULL, g_page + data_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    // EPERM: beyond perf_event_mlock_kb and RLIMIT_MEMLOCK; the caller falls back.
    zx_status_t status = errno == ENOMEM ? ZX_ERR_NO_RESOURCES : ZX_ERR_NOT_SUPPORTED;
    close(fd);
    return status;
  }
  zx_status_t status = ZX_ERR_NO_RESOURCES;
  pthread_mutex_lock(&g_lock);
  ring_t* r = &g_rings[slot->index];
  if (r->slot == NULL && ensure_collector_locked()) {
    zxs_linux_publish(slot, gen);
    *r = (ring_t){.slot = slot,
                  .fd = fd,
                  .base = base,
                  .map_size = g_page + data_size,
                  .data_size = data_size,
                  .attach_gen = atomic_load_explicit(&st->attach_gen, memory_order_relaxed)};
    g_armed++;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = slot->index};
    r->polled = epoll_ctl(g_epoll, EPOLL_CTL_ADD, fd, &ev) == 0;
    if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0) {
      atomic_store_explicit(&st->fd, fd, memory_order_release);
      wake_collector_locked();  // it may be waiting with no timeout
      status = ZX_OK;
    } else {
      status = zxs_linux_perf_status(errno);
      zxs_linux_unpublish(slot);
      ring_release_locked(r);
      base = NULL;
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (status != ZX_OK && base != NULL) {
    munmap(base, g_page + data_size);
    close(fd);
  }
  return status;
}

void zxs_linux_ring_disarm(zxs_thread_slot_t* slot) {
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  pthread_mutex_lock(&g_lock);
  ring_t* r = &g_rings[slot->index];
  if (r->slot == slot) {
    // Stop the event, then write what it took (while writes are enabled: a thread detached
    // while sampling runs loses nothing; at stop, zxs_prim_sampling_flush came first).
    ioctl(r->fd, PERF_EVENT_IOC_DISABLE, 0);
    drain_locked(r);
    ring_release_locked(r);
  }
  pthread_mutex_unlock(&g_lock);
  zxs_linux_unpublish(slot);
  atomic_store_explicit(&st->fd, -1, memory_order_release);
}

void zxs_prim_sampling_flush(void) {
  pthread_mutex_lock(&g_lock);
  drain_all_locked();
  pthread_mutex_unlock(&g_lock);
}

void zxs_linux_ring_forget_all(void) {
  // The child has one thread: nobody holds the lock it copied but the parent's threads.
  pthread_mutex_init(&g_lock, NULL);
  for (uint32_t i = 0; i < ZXS_MAX_THREADS; i++) {
    ring_t* r = &g_rings[i];
    if (r->slot == NULL) continue;
    munmap(r->base, r->map_size);
    close(r->fd);  // the child's copy only: no DISABLE, the event is the parent's
    memset(r, 0, sizeof(*r));
  }
  g_armed = 0;
  if (g_collector_pid != 0) {  // the collector stayed in the parent
    close(g_epoll);
    close(g_wake);
    g_epoll = g_wake = -1;
    g_collector_pid = 0;
  }
}

void zxs_linux_ring_hold_collector(bool hold) { atomic_store(&g_collector_held, hold); }
