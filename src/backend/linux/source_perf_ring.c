// Linux: the perf_event source without a signal. On each overflow of a software task-clock event
// the kernel itself copies the thread's user registers and the top of its stack (8 KiB by
// default) into a ring buffer (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER). A collector
// thread of the library's drains the rings: for each sample the core walks the frame pointers
// over the copy with the very rules of the signal path (frame_walk.c: within the thread's stack,
// aligned, strictly increasing), and writes the record into the region of the CPU the kernel
// names, as a pending write of the per-CPU protocol.
//
// One ring per CPU, shared by every attached thread, as `perf record` shares them: each attached
// thread gets one event per CPU (pid = its tid, cpu = c), whose samples go to CPU c's ring
// (PERF_EVENT_IOC_SET_OUTPUT, which only joins events of one CPU). So locked memory and the
// collector's wakeups do not grow with the thread count (a ring per thread did: 128-512 KiB each,
// and a wakeup per ring), a thread costs one descriptor per CPU and no mapping, and arming one is
// an open and an ioctl per CPU. A CPU's ring receives at most one sample per period whatever
// the number of threads, so it is sized from the period alone. The rings belong to a dummy event
// of the collector thread's on each CPU (it never counts; the collector outlives every thread
// that writes there) and are kept across stop and start: zxs_prim_sampling_idle() releases them
// once no session samples any more. The collector wakes when a ring is half full and every
// DRAIN_INTERVAL_MS while threads are armed; it finds a sample's thread by its tid. A thread
// past the descriptor budget may instead be sampled by events it inherited from the thread that
// started the session (see "Covering events" below).
//
// Why no signal: the signal source pays, per sample, an irq_work self-interrupt, the signal
// frame, a sigreturn and a re-arm ioctl on top of the timer interrupt: ~50 us here against `perf
// record`'s ~20 us (docs/PERFORMANCE.md). The kernel's own frame-pointer walk
// (PERF_SAMPLE_CALLCHAIN) would be cheaper still, but it checks neither stack bounds nor
// alignment nor direction, so a garbage frame pointer (code built without them) yields garbage
// frames, against the contract's walk rules; the copy keeps the rules at the price of the copy.
// A stack deeper than the copy is cut there and counted as truncated.
//
// Nothing is lost at stop: stop flushes the rings (zxs_prim_sampling_flush) before it disables
// writes. A sample the kernel could not store (its CPU's ring was full) is counted by its event
// (PERF_FORMAT_LOST) and reported as dropped_other on that CPU at flush (stop) and at disarm
// (detach). Not while sampling runs: reading 2 events per thread every so often took the
// collector long enough, with 1024 threads, for the rings to fill meanwhile.
//
// Locking: g_lock guards the rings and the thread table and is held while draining (by the
// collector, flush, disarm). The session lock may be held when g_lock is taken, never the other
// way round: the collector only calls zxs_core_sample_copy(), which takes no lock.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/sampler.h>

#include "linux_internal.h"
#include "perf_regs.h"
#include "platform.h"
#include "sampling.h"

// A ring is drained at least this often while any thread is armed, so a region read while
// sampling lags by about this much. The collector wakes earlier when a ring is half full.
#define DRAIN_INTERVAL_MS 100
// The collector's scheduler slice (see ask_short_slice) and nice (see collector_main).
#define COLLECTOR_SLICE_NS 100000u
#define COLLECTOR_NICE (-10)
// Each CPU's ring: RING_BYTES, halved while all of them would take more than RING_TOTAL_MAX or
// while the locked-memory limit refuses the mapping, down to RING_MIN_PAGES. The collector is
// woken when one is half full, at 1000 samples/s about every 125 ms of that CPU's time. Rings
// this size are what lets a collector that competes with every thread of the program for a CPU
// keep up: with 1024 threads spinning on 2 CPUs its fair share is ~2 ms of CPU a second, and
// 512 KiB rings lost 3-20% of the samples while it waited (bench_threads).
#define RING_BYTES ((size_t)2 << 20)
#define RING_TOTAL_MAX ((size_t)32 << 20)
#define RING_MIN_PAGES 8u
// The stack copy adapts to each thread (unless ZXSAMPLER_STACK_COPY fixes it): a thread starts
// with the whole copy; after COPY_SHRINK_AFTER samples its events are re-opened with what its
// deepest walk needed and COPY_MARGIN more, rounded up to a power of two (at least COPY_MIN:
// 2 KiB for most threads); a walk the smaller copy cuts short
// re-opens them with the whole copy again, for good. The copy is most of what a sample costs
// the thread beyond the interrupt (docs/PERFORMANCE.md: 8 KiB against 2 KiB was 0.7 points of
// slowdown at 4000 samples/s); the price is that samples taken between a thread's stack
// growing past its copy and the next drain are cut there (counted as truncated), once.
#define COPY_SHRINK_AFTER 256u
#define COPY_MIN 1024u
#define COPY_MARGIN 1024u
// The tid -> thread index table: open addressing, at most half full.
#define TID_TABLE_SIZE (2u * ZXS_MAX_THREADS)

typedef struct cpu_ring {
  int fd;         // the owner: the collector's dummy event on this CPU; -1: no ring (CPU offline)
  uint64_t id;    // its event's id: the program may have closed fd (zxs_linux_perf_fd_is)
  uint8_t* base;  // header page, then g_data_size bytes of data
  bool polled;    // in the collector's epoll set
} cpu_ring_t;

typedef struct thread_events {
  zxs_thread_slot_t* slot;  // NULL: entry unused
  pid_t tid;
  uint32_t attach_gen;
  zx_duration_t period;
  int* fds;             // one event per CPU (g_cpu_count); -1 where that CPU has no ring
  uint64_t* ids;        // their events' ids (zxs_linux_perf_fd_is)
  uint64_t* lost_seen;  // per CPU: the event's lost count already counted
  // The stack copy its events ask for, and how it adapts (see COPY_SHRINK_AFTER).
  uint32_t copy;
  uint32_t copy_wanted;  // != copy: re-open the events with this copy after the drain
  uint32_t most_needed;  // the most any walk needed so far
  bool covered;          // sampled by the covering events: no events, fds NULL
  uint32_t walked;       // samples walked with the full copy
  bool copy_settled;     // shrunk and grown back once: the copy stays
  bool parked;           // slot NULL: the events kept, disabled, at a stop (zxs_linux_ring_park)
} thread_events_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_ring_t* g_rings;                         // g_cpu_count entries; NULL: no rings
static uint32_t g_cpu_count;                        // possible CPUs
static size_t g_data_size;                          // each ring's data bytes, a power of two
static thread_events_t g_threads[ZXS_MAX_THREADS];  // by slot index
static uint32_t g_armed;                            // entries of g_threads in use
static uint32_t g_parked;                           // entries of g_threads parked
// A tid -> value table (open addressing, at most half full; g_lock).
typedef struct tid_table {
  pid_t keys[TID_TABLE_SIZE];  // 0: empty
  uint64_t values[TID_TABLE_SIZE];
  uint32_t count;
} tid_table_t;
static tid_table_t g_tids;             // armed threads: index into g_threads
static tid_table_t g_covered;          // the covering events' threads: see cover_note_locked
static int g_epoll = -1;               // the collector's
static int g_wake = -1;                // eventfd in g_epoll: "rings changed"
static pid_t g_collector_pid;          // process the collector runs in (0: none)
static _Atomic pid_t g_collector_tid;  // the collector's tid, once started
static size_t g_page;
static uint32_t g_stack_copy;         // bytes per sample at most; set by probe()
static bool g_copy_fixed;             // ZXSAMPLER_STACK_COPY was given: no adapting
static bool g_copy_change_pending;    // some thread's copy_wanted differs from its copy
static uint64_t g_record[65536 / 8];  // one record, copied out of a ring; g_lock
// The covering events (zxs_linux_ring_cover), per CPU with a ring: the task-clock event in
// fds[cpu], the dummy that reports thread creations in fds[g_cpu_count + cpu] (-1: none).
typedef struct cover {
  int* fds;  // NULL: none
  uint64_t* ids;
  uint64_t* lost_seen;  // per CPU: the sampling event's lost count already counted
  zx_duration_t period;
  uint32_t fds_reserved;  // from sources.c's budget
  uint32_t armed;         // threads armed through them; they sample while there are any
  pid_t pid;              // the process they were opened in
} cover_t;
static cover_t g_cover;

static _Atomic bool g_collector_held;  // tests: the collector drains nothing

static bool g_available;
static pthread_once_t g_probe_once = PTHREAD_ONCE_INIT;

static size_t ring_data_size(void) {
  size_t size = RING_BYTES;
  while (size > RING_MIN_PAGES * g_page && size * g_cpu_count > RING_TOTAL_MAX) size /= 2;
  return size;
}

// A thread's sampling event on `cpu` (-1: any CPU, for the probe).
static int event_open(pid_t tid, int cpu, zx_duration_t period, size_t data_size, uint32_t copy) {
  struct perf_event_attr attr;
  zxs_linux_ring_attr(&attr, period, data_size, copy);
  return zxs_linux_perf_event_open(&attr, tid, cpu);
}

// A ring's owner: a dummy event (it counts nothing) of thread `tid` on `cpu`, with the clock of
// the events that write there (the kernel joins only events of one clock), woken at half.
static int owner_open(pid_t tid, int cpu, size_t data_size) {
  struct perf_event_attr attr;
  zxs_linux_ring_attr(&attr, 0, data_size, 0);
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.sample_type = 0;
  attr.sample_regs_user = 0;
  return zxs_linux_perf_event_open(&attr, tid, cpu);
}

static void probe(void) {
  g_page = (size_t)sysconf(_SC_PAGESIZE);
  g_stack_copy = zxs_linux_ring_stack_copy(&g_copy_fixed);
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  g_cpu_count = cpus > 0 ? (uint32_t)cpus : 1;
  const size_t data = RING_MIN_PAGES * g_page;
  // Before 6.0 (no PERF_FORMAT_LOST) or without user stack copies: the signal source is used.
  int fd = event_open(0, -1, ZXS_LINUX_PERF_MIN_PERIOD * 100, data, g_stack_copy);
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

uint32_t zxs_linux_ring_thread_fds(void) {
  pthread_once(&g_probe_once, probe);
  return g_cpu_count;
}

// --- The tid table (g_lock held) --------------------------------------------------------------

static uint32_t tid_hash(pid_t tid) { return ((uint32_t)tid * 2654435761u) & (TID_TABLE_SIZE - 1); }

// The slot of `tid` in `table`, or -1.
static int64_t tid_slot_locked(const tid_table_t* table, pid_t tid) {
  for (uint32_t i = tid_hash(tid);; i = (i + 1) & (TID_TABLE_SIZE - 1)) {
    if (table->keys[i] == 0) return -1;
    if (table->keys[i] == tid) return i;
  }
}

static thread_events_t* tid_find_locked(pid_t tid) {
  const int64_t i = tid_slot_locked(&g_tids, tid);
  return i >= 0 ? &g_threads[g_tids.values[i]] : NULL;
}

// False when the table is half full (never for g_tids: it holds at most ZXS_MAX_THREADS).
static bool tid_insert_locked(tid_table_t* table, pid_t tid, uint64_t value) {
  uint32_t i = tid_hash(tid);
  while (table->keys[i] != 0 && table->keys[i] != tid) i = (i + 1) & (TID_TABLE_SIZE - 1);
  if (table->keys[i] == 0) {
    if (2 * (table->count + 1) > TID_TABLE_SIZE) return false;
    table->count++;
  }
  table->keys[i] = tid;
  table->values[i] = value;
  return true;
}

// Linear probing's deletion: later entries of the run move back into the hole they would
// otherwise no longer be found across.
static void tid_remove_locked(tid_table_t* table, pid_t tid) {
  int64_t found = tid_slot_locked(table, tid);
  if (found < 0) return;
  uint32_t hole = (uint32_t)found;
  for (uint32_t i = (hole + 1) & (TID_TABLE_SIZE - 1); table->keys[i] != 0;
       i = (i + 1) & (TID_TABLE_SIZE - 1)) {
    const uint32_t home = tid_hash(table->keys[i]);
    // Movable when its home is not within (hole, i], cyclically.
    const bool in_between = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (!in_between) {
      table->keys[hole] = table->keys[i];
      table->values[hole] = table->values[i];
      hole = i;
    }
  }
  table->keys[hole] = 0;
  table->count--;
}

// --- Draining (g_lock held) -------------------------------------------------------------------

// Notes what a walk of `t`'s sample needed of the copy; asks for a re-open when the copy should
// change (COPY_SHRINK_AFTER).
static void adapt_copy_locked(thread_events_t* t, size_t needed) {
  if (g_copy_fixed || t->copy_settled || t->copy_wanted != t->copy) return;
  uint32_t want = t->copy;
  if (needed > t->copy) {
    want = g_stack_copy;  // cut short: the whole copy again, and no more shrinking
    t->copy_settled = true;
  } else if (t->copy == g_stack_copy) {
    if (needed > t->most_needed) t->most_needed = (uint32_t)needed;
    if (++t->walked == COPY_SHRINK_AFTER) {
      want = COPY_MIN;
      while (want < t->most_needed + COPY_MARGIN && want < g_stack_copy) want *= 2;
    }
  }
  if (want != t->copy) {
    t->copy_wanted = want;
    g_copy_change_pending = true;
  }
}

static void handle_sample(const uint64_t* w, size_t words) {
  // {pid, tid} {time} {id} {cpu, res} {abi} {regs[REG_COUNT]} {size} {data[size]} {dyn_size}
  enum {
    TID = 0,
    ID = 2,
    CPU = 3,
    ABI = 4,
    REGS = 5,
    SIZE = REGS + ZXS_PERF_REG_COUNT,
    DATA = SIZE + 1
  };
  if (words <= CPU) return;
  const uint32_t cpu = (uint32_t)w[CPU];
  thread_events_t* t = tid_find_locked((pid_t)(w[TID] >> 32));
  // Not armed: a thread the covering events sample that is not attached (or no longer). A
  // thread with events of its own counts only those: the covering events may sample it too.
  if (t == NULL) return;
  const bool covering = g_cover.ids != NULL && cpu < g_cpu_count && w[ID] == g_cover.ids[cpu];
  if (covering != t->covered) return;
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
  const size_t needed =
      zxs_core_sample_copy(t->slot, t->attach_gen, cpu, w[1], &regs, &w[DATA], (size_t)copied);
  adapt_copy_locked(t, needed);
}

// A thread is covered from its creation by a covered thread (reported by that thread's copy of
// a covering dummy) to its exit (reported by its own). The two may come in different CPUs'
// rings, the exit drained first: an exit whose creation is not known yet is kept (its time,
// flagged) until it comes. g_covered's value: the creation's time, or the exit's | EXITED.
#define EXITED ((uint64_t)1 << 63)
static void cover_note_locked(bool created, pid_t tid, uint64_t time) {
  const int64_t at = tid_slot_locked(&g_covered, tid);
  const uint64_t known = at >= 0 ? g_covered.values[at] : 0;
  if (created) {
    if (at >= 0 && (known & EXITED) != 0 && (known & ~EXITED) >= time) {
      tid_remove_locked(&g_covered, tid);  // this very thread, gone already
    } else {
      (void)tid_insert_locked(&g_covered, tid, time & ~EXITED);  // full: not known, falls back
    }
  } else if (at >= 0 && (known & EXITED) == 0 && known <= time) {
    tid_remove_locked(&g_covered, tid);
  } else if (at < 0) {
    (void)tid_insert_locked(&g_covered, tid, time | EXITED);
  }
}

static bool cover_has_locked(pid_t tid) {
  const int64_t at = tid_slot_locked(&g_covered, tid);
  return at >= 0 && (g_covered.values[at] & EXITED) == 0;
}

static void on_record(void* ctx, uint32_t type, const uint64_t* body, size_t words) {
  (void)ctx;
  // PERF_RECORD_LOST: counted per event by count_lost_locked. PERF_RECORD_THROTTLE/UNTHROTTLE:
  // the kernel's own rate limit; the samples it skipped were never taken.
  if (type == PERF_RECORD_SAMPLE) {
    handle_sample(body, words);
  } else if (type == PERF_RECORD_LOST) {
    // Thread exits may be among what was lost, and a tid they freed taken by a thread the
    // covering events do not sample: forget what is known; creations reported from now on count.
    memset(&g_covered, 0, sizeof(g_covered));
  } else if ((type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT) && words >= 3 &&
             (pid_t)(uint32_t)body[0] == g_cover.pid && g_cover.fds != NULL) {
    // From the covering dummies only (no other event of ours reports tasks): {pid, ppid}
    // {tid, ptid} {time}.
    cover_note_locked(type == PERF_RECORD_FORK, (pid_t)(uint32_t)body[1], body[2]);
  }
}

static void apply_copy_changes_locked(void);

static void drain_all_locked(void) {
  if (g_rings == NULL) return;
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    if (g_rings[cpu].fd >= 0) {
      zxs_linux_ring_read(g_rings[cpu].base, g_page, g_data_size, g_record, on_record, NULL);
    }
  }
  if (g_copy_change_pending) apply_copy_changes_locked();
}

// Samples the kernel took but could not store (the CPU's ring was full) are counted by each
// event itself (PERF_FORMAT_LOST): PERF_RECORD_LOST would only be written once the ring has room
// again, which after the last drain never comes, and names no thread.
static void count_lost_locked(thread_events_t* t) {
  if (t->fds == NULL) return;  // covered: its losses are the covering events' (below)
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    uint64_t values[2];  // {value, lost}
    if (!zxs_linux_perf_fd_is(t->fds[cpu], t->ids[cpu]) ||
        read(t->fds[cpu], values, sizeof(values)) != (ssize_t)sizeof(values)) {
      continue;
    }
    if (values[1] > t->lost_seen[cpu]) {
      zxs_core_count_dropped(cpu, values[1] - t->lost_seen[cpu]);
      t->lost_seen[cpu] = values[1];
    }
  }
}

static void count_lost_all_locked(void) {
  for (uint32_t i = 0, seen = 0; i < ZXS_MAX_THREADS && seen < g_armed; i++) {
    if (g_threads[i].slot != NULL) {
      count_lost_locked(&g_threads[i]);
      seen++;
    }
  }
  if (g_cover.fds == NULL) return;
  // A covering event counts what its inherited copies lost too (they write through it).
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    uint64_t values[2];  // {value, lost}
    if (!zxs_linux_perf_fd_is(g_cover.fds[cpu], g_cover.ids[cpu]) ||
        read(g_cover.fds[cpu], values, sizeof(values)) != (ssize_t)sizeof(values)) {
      continue;
    }
    if (values[1] > g_cover.lost_seen[cpu]) {
      zxs_core_count_dropped(cpu, values[1] - g_cover.lost_seen[cpu]);
      g_cover.lost_seen[cpu] = values[1];
    }
  }
}

// --- The collector ----------------------------------------------------------------------------

// Asks the scheduler (EEVDF, Linux 6.12+) for a short slice: an earlier deadline lets the
// collector run as soon as a ring wakes it, where a full slice could wait behind every runnable
// thread (1024 spinning threads on 2 CPUs kept it off for longer than the rings hold, and
// samples were lost). Older kernels ignore it for these policies.
static void ask_short_slice(void) {
  // struct sched_attr as of its first version (48 bytes; <linux/sched/types.h> clashes with
  // <sched.h>).
  struct {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
  } attr;
  _Static_assert(sizeof(attr) == 48, "SCHED_ATTR_SIZE_VER0");
  memset(&attr, 0, sizeof(attr));
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0) return;
  if (attr.sched_policy != SCHED_OTHER && attr.sched_policy != SCHED_BATCH) return;
  attr.sched_runtime = COLLECTOR_SLICE_NS;
  (void)syscall(SYS_sched_setattr, 0, &attr, 0);
}

static void* collector_main(void* unused) {
  (void)unused;
  prctl(PR_SET_NAME, "zxs-collector", 0, 0, 0);
  ask_short_slice();
  // Where the process may (root, CAP_SYS_NICE, a nice limit), a weight above the program's
  // threads': with 1024 of them spinning on 2 CPUs the collector's fair share was a third of
  // what their samples take to drain, and the rings overflowed (0-864 of 20700 samples dropped
  // in 3 runs of bench_threads; none at nice -10). Its CPU is the same: it runs when the rings
  // fill. The program's threads keep theirs.
  (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), COLLECTOR_NICE);
  zxs_linux_internal_thread_started();
  for (;;) {
    pthread_mutex_lock(&g_lock);
    const int epoll = g_epoll;
    const int timeout = g_armed > 0 ? DRAIN_INTERVAL_MS : -1;
    pthread_mutex_unlock(&g_lock);
    struct epoll_event events[16];
    const int n = epoll_wait(epoll, events, 16, timeout);
    if (n < 0 && errno != EINTR) return NULL;
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 == UINT64_MAX) {
        uint64_t count;
        ssize_t got = read(g_wake, &count, sizeof(count));
        (void)got;
      }
    }
    pthread_mutex_lock(&g_lock);
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
  // Its tid, for the rings' owner events, without waiting for it to run (a pthread_create the
  // program interposes may attach it first, which needs the session lock our caller holds):
  // glibc makes a thread's CPU clock from its tid.
  clockid_t clock;
  const pid_t tid = pthread_getcpuclockid(thread, &clock) == 0 ? zxs_linux_cpuclock_tid(clock) : 0;
  pthread_detach(thread);
  g_collector_pid = getpid();
  atomic_store(&g_collector_tid, tid > 0 ? tid : getpid());
  return true;
fail:
  if (g_epoll >= 0) close(g_epoll);
  if (g_wake >= 0) close(g_wake);
  g_epoll = g_wake = -1;
  return false;
}

// After an arm: the collector waits without a timeout only while no thread is armed, so the
// arm that armed the first thread wakes it; after that it drains as the rings fill and every
// DRAIN_INTERVAL_MS (a wake for each arm cost every start a write and a lock handover a thread).
static void wake_collector_locked(void) {
  if (g_armed != 1) return;
  const uint64_t one = 1;
  ssize_t put = write(g_wake, &one, sizeof(one));
  (void)put;
}

// --- The rings (g_lock held) ------------------------------------------------------------------

// `deregister`: take them out of the collector's epoll set (not in a fork's child: the set is
// the parent's).
static void cover_close_locked(bool disable);

static void rings_release_locked(bool deregister) {
  cover_close_locked(deregister);  // they write to the rings (in a fork's child: its copies)
  if (g_rings == NULL) return;
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    cpu_ring_t* r = &g_rings[cpu];
    if (r->fd < 0) continue;
    munmap(r->base, g_page + g_data_size);
    if (!zxs_linux_perf_fd_is(r->fd, r->id)) continue;  // the program closed it
    if (r->polled && deregister) epoll_ctl(g_epoll, EPOLL_CTL_DEL, r->fd, NULL);
    close(r->fd);
  }
  free(g_rings);
  g_rings = NULL;
  g_data_size = 0;
}

// The rings, made on first use and kept until zxs_prim_sampling_idle(). A CPU whose ring cannot be
// made (offline) has none; its threads' samples there are not taken. ZX_ERR_NOT_SUPPORTED when the
// locked-memory limit refuses the mapping (the caller falls back).
static zx_status_t rings_make_locked(size_t data_size);

static zx_status_t rings_ensure_locked(void) {
  if (g_rings != NULL) return ZX_OK;
  size_t data_size = ring_data_size();
  zx_status_t status;
  while ((status = rings_make_locked(data_size)) == ZX_ERR_NOT_SUPPORTED &&
         data_size > RING_MIN_PAGES * g_page) {
    data_size /= 2;  // the locked-memory limit: smaller rings, more wakeups
  }
  return status;
}

// One ring per CPU of `data_size` bytes, or none (g_rings NULL) with the status.
static zx_status_t rings_make_locked(size_t data_size) {
  cpu_ring_t* rings = calloc(g_cpu_count, sizeof(*rings));
  if (rings == NULL) return ZX_ERR_NO_MEMORY;
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) rings[cpu].fd = -1;
  const pid_t owner = atomic_load(&g_collector_tid);
  uint32_t made = 0;
  zx_status_t status = ZX_ERR_NOT_SUPPORTED;
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    cpu_ring_t* r = &rings[cpu];
    r->fd = owner_open(owner, (int)cpu, data_size);
    if (r->fd < 0) continue;  // ENODEV, ENXIO: an offline CPU
    r->base = mmap(NULL, g_page + data_size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (r->base == MAP_FAILED) {
      // EPERM: beyond perf_event_mlock_kb and RLIMIT_MEMLOCK.
      status = zxs_linux_perf_status(errno);
      close(r->fd);
      r->fd = -1;
      made = 0;  // all or none: the rings made so far are released below
      break;
    }
    r->id = zxs_linux_perf_id(r->fd);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = cpu};
    r->polled = epoll_ctl(g_epoll, EPOLL_CTL_ADD, r->fd, &ev) == 0;
    made++;
  }
  g_rings = rings;
  g_data_size = data_size;
  if (made == 0) {
    rings_release_locked(true);
    return status;
  }
  return ZX_OK;
}

// --- The source -------------------------------------------------------------------------------

// Closes the events in `fds` (one per CPU, their ids in `ids`) and marks them closed; a number
// that is no longer our event (the program closed it) is left alone.
static void events_close(int* fds, const uint64_t* ids) {
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    if (zxs_linux_perf_fd_is(fds[cpu], ids[cpu])) close(fds[cpu]);
    fds[cpu] = -1;
  }
}

// Closes the thread's own events (none when covered) and frees their arrays.
static void thread_events_free_locked(thread_events_t* t) {
  if (t->fds != NULL) events_close(t->fds, t->ids);
  free(t->fds);
  free(t->ids);
  free(t->lost_seen);
  t->fds = NULL;
  t->ids = t->lost_seen = NULL;
}

static void thread_close_locked(thread_events_t* t) {
  if (t->parked) g_parked--;
  thread_events_free_locked(t);
  memset(t, 0, sizeof(*t));
}

// Opens `tid`'s event on every CPU that has a ring into `fds` (-1 elsewhere; their ids into
// `ids`), each writing there, all disabled; on failure none stays open. A ring whose descriptor
// the program closed takes no new event (its mapping still drains).
static zx_status_t events_open_locked(pid_t tid, zx_duration_t period, uint32_t copy, int* fds,
                                      uint64_t* ids) {
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) fds[cpu] = -1;
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    if (!zxs_linux_perf_fd_is(g_rings[cpu].fd, g_rings[cpu].id)) continue;
    const int fd = event_open(tid, (int)cpu, period, g_data_size, copy);
    if (fd < 0 || ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, g_rings[cpu].fd) != 0) {
      const zx_status_t status = zxs_linux_perf_status(errno);
      if (fd >= 0) close(fd);
      events_close(fds, ids);
      return status;
    }
    fds[cpu] = fd;
    ids[cpu] = zxs_linux_perf_id(fd);
  }
  return ZX_OK;
}

// Whether each event a thread opened is still open under its descriptor.
static bool events_intact(const int* fds, const uint64_t* ids) {
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    if (fds[cpu] >= 0 && !zxs_linux_perf_fd_is(fds[cpu], ids[cpu])) return false;
  }
  return true;
}

static zx_status_t events_enable(const int* fds, const uint64_t* ids) {
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    if (zxs_linux_perf_fd_is(fds[cpu], ids[cpu]) &&
        ioctl(fds[cpu], PERF_EVENT_IOC_ENABLE, 0) != 0) {
      return zxs_linux_perf_status(errno);
    }
  }
  return ZX_OK;
}

static void events_disable(const int* fds, const uint64_t* ids) {
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    if (zxs_linux_perf_fd_is(fds[cpu], ids[cpu])) ioctl(fds[cpu], PERF_EVENT_IOC_DISABLE, 0);
  }
}

static zx_status_t thread_open_locked(thread_events_t* t, pid_t tid, zx_duration_t period) {
  t->fds = malloc(g_cpu_count * sizeof(*t->fds));
  t->ids = calloc(g_cpu_count, sizeof(*t->ids));
  t->lost_seen = calloc(g_cpu_count, sizeof(*t->lost_seen));
  zx_status_t status = ZX_ERR_NO_MEMORY;
  if (t->fds == NULL || t->ids == NULL || t->lost_seen == NULL ||
      (status = events_open_locked(tid, period, g_stack_copy, t->fds, t->ids)) != ZX_OK) {
    free(t->fds);
    free(t->ids);
    free(t->lost_seen);
    t->fds = NULL;
    t->ids = NULL;
    t->lost_seen = NULL;
    return status;
  }
  t->period = period;
  t->copy = t->copy_wanted = g_stack_copy;
  return ZX_OK;
}

// Re-opens the events of every thread whose copy should change (adapt_copy_locked). Samples
// its old events wrote stay in the rings and are drained as any other. A thread whose new
// events cannot be opened keeps its old ones, and its copy from then on.
static void apply_copy_changes_locked(void) {
  int* fds = malloc(g_cpu_count * sizeof(*fds));
  uint64_t* ids = calloc(g_cpu_count, sizeof(*ids));
  for (uint32_t i = 0, seen = 0; i < ZXS_MAX_THREADS && seen < g_armed; i++) {
    thread_events_t* t = &g_threads[i];
    if (t->slot == NULL) continue;
    seen++;
    if (t->copy_wanted == t->copy) continue;
    if (fds != NULL && ids != NULL &&
        events_open_locked(t->tid, t->period, t->copy_wanted, fds, ids) == ZX_OK) {
      events_disable(t->fds, t->ids);
      count_lost_locked(t);
      if (events_enable(fds, ids) == ZX_OK) {
        events_close(t->fds, t->ids);
        memcpy(t->fds, fds, g_cpu_count * sizeof(*fds));
        memcpy(t->ids, ids, g_cpu_count * sizeof(*ids));
        memset(t->lost_seen, 0, g_cpu_count * sizeof(*t->lost_seen));
        t->copy = t->copy_wanted;
        continue;
      }
      events_disable(fds, ids);  // keep the old ones: they count no loss twice
      events_close(fds, ids);
      (void)events_enable(t->fds, t->ids);
    }
    t->copy_wanted = t->copy;
    t->copy_settled = true;
  }
  g_copy_change_pending = false;
  free(fds);
  free(ids);
}

// --- Covering events (g_lock held) ------------------------------------------------------------
//
// A thread's own events cost a descriptor per CPU: under a descriptor limit of 256 on 2 CPUs,
// 32 threads. Events opened with inherit are copied by the kernel into every thread their
// thread creates afterwards (and theirs), cost no descriptor there, and write to the parent's
// ring: `perf record` samples whole programs so. The covering events are such events, opened
// by the thread that starts a session; a thread the budget cannot give events of its own is
// armed through them when they cover it. Whether they do is not visible from outside (the
// kernel keeps inherited events out of reach), so the covering dummies report each thread
// creation (PERF_RECORD_FORK, emitted by the creating thread's copy): a thread is covered when
// its creation was reported, or it opened them. inherit_thread keeps them out of child
// processes; remove_on_exec drops them at exec (both Linux 5.13: without them, no cover).
// Their samples carry the covering event's id (PERF_SAMPLE_ID names the inherited copy's
// parent), so a thread with events of its own is never counted twice. They sample only while
// a covered thread is armed: the threads they cover that are not attached are interrupted
// meanwhile, and their samples dropped.

static void cover_close_locked(bool disable) {
  if (g_cover.fds == NULL) return;
  for (uint32_t i = 0; i < 2 * g_cpu_count; i++) {
    if (!zxs_linux_perf_fd_is(g_cover.fds[i], g_cover.ids[i])) continue;  // closed by the program
    if (disable) ioctl(g_cover.fds[i], PERF_EVENT_IOC_DISABLE, 0);
    close(g_cover.fds[i]);
  }
  zxs_linux_fds_unreserve(g_cover.fds_reserved);
  free(g_cover.fds);
  free(g_cover.ids);
  free(g_cover.lost_seen);
  memset(&g_cover, 0, sizeof(g_cover));
  memset(&g_covered, 0, sizeof(g_covered));
}

// Starts or stops the covering task-clock events (the kernel does the same to every copy).
static zx_status_t cover_sample_locked(bool on) {
  for (uint32_t cpu = 0; cpu < g_cpu_count; cpu++) {
    if (!zxs_linux_perf_fd_is(g_cover.fds[cpu], g_cover.ids[cpu])) continue;
    if (ioctl(g_cover.fds[cpu], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) != 0) {
      return zxs_linux_perf_status(errno);
    }
  }
  return ZX_OK;
}

// One covering event of the calling thread on `cpu`, writing to that CPU's ring.
static int cover_open(int cpu, zx_duration_t period, bool dummy) {
  struct perf_event_attr attr;
  zxs_linux_ring_attr(&attr, period, g_data_size, g_stack_copy);
  if (dummy) {
    attr.config = PERF_COUNT_SW_DUMMY;
    attr.sample_period = 0;
    attr.sample_type = 0;
    attr.sample_regs_user = 0;
    attr.sample_stack_user = 0;
    attr.task = 1;      // PERF_RECORD_FORK and _EXIT of the threads it is copied into
    attr.disabled = 0;  // reports from now on
  }
  attr.inherit = 1;
  attr.inherit_thread = 1;
  attr.remove_on_exec = 1;
  const int fd = zxs_linux_perf_event_open(&attr, (pid_t)syscall(SYS_gettid), cpu);
  if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, g_rings[cpu].fd) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void cover_open_locked(zx_duration_t period) {
  const uint32_t n = 2 * g_cpu_count;
  if (!zxs_linux_fds_reserve(n, 2)) return;
  g_cover.fds = malloc(n * sizeof(*g_cover.fds));
  g_cover.ids = calloc(n, sizeof(*g_cover.ids));
  g_cover.lost_seen = calloc(g_cpu_count, sizeof(*g_cover.lost_seen));
  g_cover.fds_reserved = n;
  bool ok = g_cover.fds != NULL && g_cover.ids != NULL && g_cover.lost_seen != NULL;
  for (uint32_t i = 0; g_cover.fds != NULL && i < n; i++) g_cover.fds[i] = -1;
  for (uint32_t cpu = 0; ok && cpu < g_cpu_count; cpu++) {
    if (!zxs_linux_perf_fd_is(g_rings[cpu].fd, g_rings[cpu].id)) continue;
    for (int dummy = 0; ok && dummy < 2; dummy++) {
      const uint32_t i = (uint32_t)dummy * g_cpu_count + cpu;
      g_cover.fds[i] = cover_open((int)cpu, period, dummy != 0);
      ok = g_cover.fds[i] >= 0;
      if (ok) g_cover.ids[i] = zxs_linux_perf_id(g_cover.fds[i]);
    }
  }
  if (!ok) {  // EINVAL before Linux 5.13, out of descriptors, ...
    if (g_cover.fds == NULL) {
      zxs_linux_fds_unreserve(n);
      free(g_cover.ids);
      free(g_cover.lost_seen);
      memset(&g_cover, 0, sizeof(g_cover));
      return;
    }
    cover_close_locked(true);
    return;
  }
  g_cover.period = period;
  g_cover.pid = getpid();
  (void)tid_insert_locked(&g_covered, (pid_t)syscall(SYS_gettid), 0);  // it opened them
}

// Once the covering events sample, a thread they cover that has events of its own would be
// interrupted twice a period (one sample counted): its own events are closed, and it is armed
// through them from then on, its descriptors back in the budget. The caller holds the session
// lock, so no arm or disarm runs meanwhile.
static bool cover_takes_locked(const thread_events_t* t) {
  return t->slot != NULL && !t->covered && t->period == g_cover.period && cover_has_locked(t->tid);
}

static void cover_take_over_locked(void) {
  bool any = false;
  for (uint32_t i = 0, seen = 0; i < ZXS_MAX_THREADS && seen < g_armed; i++) {
    thread_events_t* t = &g_threads[i];
    seen += t->slot != NULL;
    if (!cover_takes_locked(t)) continue;
    t->copy_wanted = t->copy;  // no re-open of events about to close
    events_disable(t->fds, t->ids);
    any = true;
  }
  if (!any) return;
  drain_all_locked();  // what their own events took, counted as theirs
  for (uint32_t i = 0, seen = 0; i < ZXS_MAX_THREADS && seen < g_armed; i++) {
    thread_events_t* t = &g_threads[i];
    seen += t->slot != NULL;
    if (!cover_takes_locked(t)) continue;
    count_lost_locked(t);
    thread_events_free_locked(t);
    t->copy = t->copy_wanted = g_stack_copy;
    t->copy_settled = true;
    t->covered = true;
    g_cover.armed++;
    zxs_linux_fds_unreserve(atomic_exchange(&zxs_linux_slot(t->slot)->fds_held, 0));
  }
}

void zxs_linux_ring_cover(zx_duration_t period) {
  if (!zxs_linux_ring_available()) return;
  pthread_mutex_lock(&g_lock);
  if (g_cover.fds == NULL && ensure_collector_locked() && rings_ensure_locked() == ZX_OK) {
    cover_open_locked(period);
  }
  pthread_mutex_unlock(&g_lock);
}

zx_status_t zxs_linux_ring_arm_covered(zxs_thread_slot_t* slot, zx_duration_t period, uint32_t gen,
                                       bool if_sampling) {
  if (!zxs_linux_ring_available()) return ZX_ERR_NOT_SUPPORTED;
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  const pid_t tid = (pid_t)slot->thread.koid;
  pthread_mutex_lock(&g_lock);
  thread_events_t* t = &g_threads[slot->index];
  zx_status_t status = ZX_ERR_NOT_SUPPORTED;
  if (t->slot == NULL && g_cover.fds != NULL && g_cover.period == period &&
      g_cover.pid == getpid() && (!if_sampling || g_cover.armed > 0)) {
    drain_all_locked();  // the thread creations reported so far
    if (cover_has_locked(tid)) {
      if (t->parked) thread_close_locked(t);  // what a stop kept: not needed
      atomic_store_explicit(&st->fd, -1, memory_order_relaxed);
      atomic_store_explicit(&st->kind, ZXS_SOURCE_PERF_RING, memory_order_relaxed);
      zxs_linux_publish(slot, gen);
      *t = (thread_events_t){
          .slot = slot,
          .tid = tid,
          .attach_gen = atomic_load_explicit(&st->attach_gen, memory_order_relaxed),
          .period = period,
          .copy = g_stack_copy,
          .copy_wanted = g_stack_copy,
          .copy_settled = true,
          .covered = true};
      (void)tid_insert_locked(&g_tids, tid, slot->index);
      g_armed++;
      if (g_cover.armed++ == 0) {
        cover_take_over_locked();
        status = cover_sample_locked(true);
      } else {
        status = ZX_OK;
      }
      if (status == ZX_OK) {
        wake_collector_locked();
      } else {
        g_cover.armed--;
        zxs_linux_unpublish(slot);
        tid_remove_locked(&g_tids, tid);
        memset(t, 0, sizeof(*t));
        g_armed--;
      }
    }
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_status_t zxs_linux_ring_arm(zxs_thread_slot_t* slot, zx_duration_t period, uint32_t gen) {
  if (!zxs_linux_ring_available()) return ZX_ERR_NOT_SUPPORTED;
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  atomic_store_explicit(&st->fd, -1, memory_order_relaxed);
  atomic_store_explicit(&st->kind, ZXS_SOURCE_PERF_RING, memory_order_relaxed);
  const pid_t tid = (pid_t)slot->thread.koid;
  pthread_mutex_lock(&g_lock);
  thread_events_t* t = &g_threads[slot->index];
  zx_status_t status = ZX_ERR_NO_RESOURCES;
  // The events a stop kept for this slot serve when they are this thread's at this period, and
  // all still ours (the program may have closed a descriptor meanwhile).
  if (t->parked && (t->tid != tid || t->period != period || !events_intact(t->fds, t->ids))) {
    thread_close_locked(t);
  }
  if (t->slot == NULL && ensure_collector_locked() && (status = rings_ensure_locked()) == ZX_OK &&
      (t->parked || (status = thread_open_locked(t, tid, period)) == ZX_OK)) {
    if (t->parked) g_parked--;
    t->parked = false;
    zxs_linux_publish(slot, gen);
    t->slot = slot;
    t->tid = tid;
    t->attach_gen = atomic_load_explicit(&st->attach_gen, memory_order_relaxed);
    (void)tid_insert_locked(&g_tids, tid, slot->index);
    g_armed++;
    status = events_enable(t->fds, t->ids);
    if (status == ZX_OK) {
      wake_collector_locked();
    } else {
      zxs_linux_unpublish(slot);
      tid_remove_locked(&g_tids, tid);
      thread_close_locked(t);
      g_armed--;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

// Disarms `slot` (its thread's events closed) or, with `park`, keeps the events of a thread
// that has its own open and disabled for the next arm of the slot.
static void disarm(zxs_thread_slot_t* slot, bool park) {
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  pthread_mutex_lock(&g_lock);
  thread_events_t* t = &g_threads[slot->index];
  if (t->slot == slot) {
    // Stop the events, then write what they took (while writes are enabled: a thread detached
    // while sampling runs loses nothing; at stop, zxs_prim_sampling_flush came first). The
    // covering events stop when the last thread armed through them goes.
    const bool covered = t->covered;
    if (!covered) events_disable(t->fds, t->ids);
    t->copy_wanted = t->copy;  // no re-open on the way out
    drain_all_locked();
    count_lost_locked(t);
    tid_remove_locked(&g_tids, t->tid);
    if (park && !covered) {
      t->slot = NULL;
      t->parked = true;
      g_parked++;
    } else {
      thread_close_locked(t);
    }
    g_armed--;
    if (covered && --g_cover.armed == 0) (void)cover_sample_locked(false);
  } else if (t->parked && !park) {
    thread_close_locked(t);  // detached after a stop
  }
  pthread_mutex_unlock(&g_lock);
  zxs_linux_unpublish(slot);
  atomic_store_explicit(&st->fd, -1, memory_order_release);
}

void zxs_linux_ring_disarm(zxs_thread_slot_t* slot) { disarm(slot, false); }

void zxs_linux_ring_park(zxs_thread_slot_t* slot) { disarm(slot, true); }

// Closes every parked thread's events.
static void unpark_all_locked(void) {
  for (uint32_t i = 0; i < ZXS_MAX_THREADS && g_parked > 0; i++) {
    if (g_threads[i].parked) thread_close_locked(&g_threads[i]);
  }
}

void zxs_linux_ring_unpark_rest(void) {
  pthread_mutex_lock(&g_lock);
  unpark_all_locked();
  pthread_mutex_unlock(&g_lock);
}

void zxs_prim_sampling_flush(void) {
  pthread_mutex_lock(&g_lock);
  drain_all_locked();
  count_lost_all_locked();
  pthread_mutex_unlock(&g_lock);
}

void zxs_linux_ring_idle(void) {
  pthread_mutex_lock(&g_lock);
  if (g_armed == 0) {
    unpark_all_locked();  // they write to the rings
    rings_release_locked(true);
  }
  pthread_mutex_unlock(&g_lock);
}

void zxs_linux_ring_forget_all(void) {
  // The child has one thread: nobody holds the lock it copied but the parent's threads.
  pthread_mutex_init(&g_lock, NULL);
  for (uint32_t i = 0; i < ZXS_MAX_THREADS; i++) {
    // The child's copies only: no DISABLE, the events are the parent's.
    if (g_threads[i].slot != NULL || g_threads[i].parked) thread_close_locked(&g_threads[i]);
  }
  memset(&g_tids, 0, sizeof(g_tids));
  memset(&g_covered, 0, sizeof(g_covered));
  g_armed = 0;
  g_parked = 0;
  g_copy_change_pending = false;
  rings_release_locked(false);
  if (g_collector_pid != 0) {  // the collector stayed in the parent
    close(g_epoll);
    close(g_wake);
    g_epoll = g_wake = -1;
    g_collector_pid = 0;
    atomic_store(&g_collector_tid, 0);
  }
}

uint32_t zxs_linux_ring_copy_of(zxs_thread_slot_t* slot) {
  pthread_mutex_lock(&g_lock);
  const thread_events_t* t = &g_threads[slot->index];
  const uint32_t copy = t->slot == slot ? t->copy : 0;
  pthread_mutex_unlock(&g_lock);
  return copy;
}

void zxs_linux_ring_hold_collector(bool hold) { atomic_store(&g_collector_held, hold); }
