// Linux: ZX_INFO_TASK_RUNTIME for the threads of this process (zxs_prim_runtime_*).
//
// cpu_time is the thread's CPU-time clock (the process's, CLOCK_PROCESS_CPUTIME_ID, which the
// kernel keeps for exited threads too); queue_time the scheduler's run delay from
// /proc/self/task/TID/schedstat; page_fault_time and lock_contention_time are timed from
// per-thread perf events (runtime_events_linux.c), opened at a thread's first query.
//
// A table keeps one entry per measured thread. A thread leaves it as it exits: through the exit
// hook of threads that made their own handle (exact, read on the thread itself), or when its
// ring's event reports the exit (EPOLLHUP, to the drainer thread), or when a process query no
// longer finds it in /proc. Its totals then move to the process's sum of exited threads, and
// the entry stays readable by koid until its place is needed.
//
// Linux keeps no schedstat of a thread once it is gone, so where the kernel lets us (taskstats,
// CAP_NET_ADMIN: taskstats_linux.c) the exit record of each thread completes its cpu and queue
// time: the record is queued on our socket in the thread's do_exit(), before the thread leaves
// /proc and before pthread_join() returns, so every path that finds a thread gone reads the
// socket first. The process's queue time is then the kernel's own sum over its threads, exited
// ones included (those that exited before any query too). Without the right, a thread's queue
// time stays as last read and ZXS_TASK_RUNTIME_TOTALS_AT_EXIT says so.
//
// The drainer thread (`zxs-runtime`) sleeps in epoll_wait on the rings and the taskstats socket,
// drains a ring when it is half full and the socket when a record of ours arrives. g_lock guards
// the table and both sockets and is held while draining; nothing else is taken under it.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/object.h>

#include "fork.h"
#include "linux_internal.h"
#include "platform.h"
#include "runtime_events_linux.h"
#include "sampling.h"

#define MAX_MEASURED ZXS_MAX_THREADS

typedef struct measured {
  pid_t tid;      // 0: free
  bool exited;    // its totals are in g_exited; kept for lookups by koid
  uint32_t seen;  // the process query that last found it in /proc
  uint32_t gen;   // of this measurement: the drainer's events name it, so a stale one is ignored
  bool hooked;    // the thread's exit hook reads it one last time (it queried its own handle)
  bool final;     // cpu_time and queue_time are from its exit record (taskstats): its totals
  uint32_t fields;
  int64_t cpu_time;       // last read (final once exited)
  int64_t queue_time;     // last read (final once exited when hooked or final)
  int64_t cpu_at_events;  // cpu_time when its events were opened (their running time adds up)
  int stat_fd;            // its schedstat file while it lives; -1: closed
  zxs_rt_events_t events;
} measured_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static measured_t g_measured[MAX_MEASURED];
static uint32_t g_used;                  // entries at and past this index have never been used
static zx_info_task_runtime_t g_exited;  // sums of exited threads (cpu_time unused)
static uint32_t g_seen_gen;
static uint32_t g_measure_gen;
static int g_epoll = -1;
// Set in the child of a fork: the table named the parent's threads and rings, and the drainer
// stayed in the parent. The next query forgets them (checked without a system call: a query
// costs a few already).
static bool g_forked_child;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static _Thread_local pid_t t_tid;
static uint32_t g_with_events;   // live entries with perf events open
static uint32_t g_events_limit;  // at most this many: events_limit()
// Taskstats: exit records of our threads (-1: refused, or not asked yet) and the socket of
// process queries (-1: none yet).
static int g_exits_fd = -1;
static int g_query_fd = -1;
#define EXITS_TAG UINT64_MAX  // the exits socket's epoll data (rings: {index, generation})

// Each thread with events holds 6 descriptors (5 events, its schedstat file): keep them to a
// 32nd of the descriptor limit (32 threads at the usual 1024), so measuring never starves the
// program of files. ZXSAMPLER_RUNTIME_MAX_THREADS=N overrides it. Threads beyond it get cpu and
// queue time only, and their fields say so.
static uint32_t events_limit(void) {
  if (g_events_limit == 0) {
    struct rlimit rl;
    uint64_t limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur / 32 : 32;
    const char* env = getenv("ZXSAMPLER_RUNTIME_MAX_THREADS");
    if (env != NULL && *env != '\0') limit = strtoull(env, NULL, 10);
    if (limit < 1) limit = 1;
    g_events_limit = limit < MAX_MEASURED ? (uint32_t)limit : MAX_MEASURED;
  }
  return g_events_limit;
}

// g_lock is held across fork, so the child never inherits it locked mid-drain.
static void atfork_prepare(void) { pthread_mutex_lock(&g_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&g_lock); }
static void atfork_child(void) {
  g_forked_child = true;
  t_tid = 0;  // the forking thread is a new task in the child
  pthread_mutex_unlock(&g_lock);
}

static void register_atfork(void) {
  static const zxs_fork_steps_t kSteps = {
      .prepare = atfork_prepare, .parent = atfork_parent, .child = atfork_child};
  zxs_fork_register(ZXS_FORK_STAGE_TASK_RUNTIME, &kSteps);
}

static pid_t current_tid(void) {
  if (t_tid == 0) t_tid = (pid_t)syscall(SYS_gettid);
  return t_tid;
}

// Run delay (and CPU time) of one of our threads from its schedstat file, kept open in *fd (-1:
// open it now) so a query costs one pread. False when the thread is gone (the open file then
// answers ESRCH) or /proc is missing.
static bool read_schedstat(pid_t tid, int* fd, int64_t* cpu, int64_t* delay) {
  if (*fd < 0) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) return false;
  }
  char text[128];
  const ssize_t n = pread(*fd, text, sizeof(text) - 1, 0);
  if (n <= 0) return false;
  text[n] = '\0';
  unsigned long long run = 0, wait = 0;
  if (sscanf(text, "%llu %llu", &run, &wait) != 2) return false;
  *cpu = (int64_t)run;
  *delay = (int64_t)wait;
  return true;
}

static void close_schedstat(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static measured_t* find_locked(pid_t tid) {
  for (uint32_t i = 0; i < g_used; i++) {
    if (g_measured[i].tid == tid) return &g_measured[i];
  }
  return NULL;
}

static int64_t clock_ns(clockid_t clock, bool* ok) {
  struct timespec ts;
  *ok = clock_gettime(clock, &ts) == 0;
  return *ok ? (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec : 0;
}

// Reads cpu and queue time of a live entry; false when the thread is gone.
static bool refresh_locked(measured_t* m) {
  int64_t cpu, delay;
  if (!read_schedstat(m->tid, &m->stat_fd, &cpu, &delay)) return false;
  bool ok;
  // The clock includes the slice running now; schedstat's sum lags by up to a tick.
  const int64_t clock = clock_ns(zxs_linux_thread_cpuclock(m->tid), &ok);
  if (ok) cpu = clock;
  // After its exit record (it is exiting, not yet gone from /proc), the larger of both.
  m->cpu_time = m->final && m->cpu_time > cpu ? m->cpu_time : cpu;
  m->queue_time = m->final && m->queue_time > delay ? m->queue_time : delay;
  // Only threads with events keep their file open (the descriptor budget is theirs).
  if (m->events.ring_fd < 0) close_schedstat(&m->stat_fd);
  return true;
}

// The thread of `m` is gone: final drain, totals to the process's exited sum. Its CPU time
// until the end is its CPU time when its events were opened plus the time they ran (which the
// kernel still answers after the exit); its queue time stays as last read.
static void retire_locked(measured_t* m) {
  if (m->exited) return;
  int64_t running;
  if (zxs_rt_events_running_ns(&m->events, &running) && m->cpu_at_events + running > m->cpu_time) {
    m->cpu_time = m->cpu_at_events + running;
  }
  if (g_epoll >= 0 && m->events.ring_fd >= 0) {
    epoll_ctl(g_epoll, EPOLL_CTL_DEL, m->events.ring_fd, NULL);
  }
  if (m->events.fields != 0) g_with_events--;
  zxs_rt_events_close(&m->events, false);
  free(m->events.pairs.history);
  m->events.pairs.history = NULL;
  close_schedstat(&m->stat_fd);
  m->exited = true;
  g_exited.queue_time += m->queue_time;
  g_exited.page_fault_time += m->events.pairs.page_fault_ns;
  g_exited.lock_contention_time += m->events.pairs.lock_contention_ns;
}

// An exit record of one of our threads (taskstats). g_lock held.
static void on_exit_record(void* ctx, const zxs_linux_task_exit_t* exit) {
  (void)ctx;
  measured_t* m = find_locked(exit->tid);
  // Not measured, or measured and final already (the tid of an exited thread reused by one
  // never measured): the process's sum is the kernel's, nothing to do.
  if (m == NULL || m->final) return;
  m->final = true;
  if (exit->cpu_time > m->cpu_time) m->cpu_time = exit->cpu_time;
  if (exit->queue_time > m->queue_time) {
    // Retired already (its exit hook, or found gone): the process's sum gets the rest.
    if (m->exited) g_exited.queue_time += exit->queue_time - m->queue_time;
    m->queue_time = exit->queue_time;
  }
}

// Reads the exit records queued on the taskstats socket. g_lock held.
static void drain_exits_locked(void) {
  if (g_exits_fd >= 0) (void)zxs_linux_taskstats_drain(g_exits_fd, getpid(), on_exit_record, NULL);
}

static void* drainer_main(void* unused) {
  (void)unused;
  prctl(PR_SET_NAME, "zxs-runtime", 0, 0, 0);
  zxs_linux_internal_thread_started();
  // Measured here, on a library thread, so that none of the program's threads pays for it or
  // samples it; under the lock, as every drain is. Faults drained before it count without it.
  pthread_mutex_lock(&g_lock);
  (void)zxs_rt_fault_edge_ns();
  pthread_mutex_unlock(&g_lock);
  for (;;) {
    struct epoll_event events[16];
    const int n = epoll_wait(g_epoll, events, 16, -1);
    if (n < 0 && errno != EINTR) return NULL;
    pthread_mutex_lock(&g_lock);
    // First the exit records: a ring that hung up is of an exiting thread, whose record came
    // before.
    drain_exits_locked();
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 == EXITS_TAG) continue;
      // {index, generation}: an event read before the lock may be for a measurement that has
      // since ended and whose entry now measures another thread.
      measured_t* m = &g_measured[(uint32_t)events[i].data.u64];
      if (m->tid == 0 || m->exited || m->gen != (uint32_t)(events[i].data.u64 >> 32)) continue;
      if ((events[i].events & EPOLLHUP) != 0) {
        // The event's thread is exiting: its last values if it still answers, then retired.
        (void)refresh_locked(m);
        retire_locked(m);
      } else {
        zxs_rt_events_drain(&m->events);
      }
    }
    pthread_mutex_unlock(&g_lock);
  }
}

// After fork, in the child: the table named the parent's threads and rings. g_lock held.
static void forget_parent_locked(void) {
  for (uint32_t i = 0; i < g_used; i++) {
    if (g_measured[i].tid != 0 && !g_measured[i].exited) {
      zxs_rt_events_close(&g_measured[i].events, true);
      close_schedstat(&g_measured[i].stat_fd);
    }
    free(g_measured[i].events.pairs.history);
  }
  memset(g_measured, 0, sizeof(g_measured[0]) * g_used);
  g_used = 0;
  g_with_events = 0;
  memset(&g_exited, 0, sizeof(g_exited));
  if (g_epoll >= 0) close(g_epoll);
  g_epoll = -1;
  // The sockets are shared with the parent: closing our copies leaves its registration alone.
  if (g_exits_fd >= 0) close(g_exits_fd);
  if (g_query_fd >= 0) close(g_query_fd);
  g_exits_fd = -1;
  g_query_fd = -1;
}

// The drainer runs in this process; false when it cannot be started. g_lock held.
static bool ensure_drainer_locked(void) {
  pthread_once(&g_atfork_once, register_atfork);
  if (g_forked_child) {
    forget_parent_locked();
    g_forked_child = false;
  }
  if (g_epoll >= 0) return true;
  g_epoll = epoll_create1(EPOLL_CLOEXEC);
  if (g_epoll < 0) return false;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // never takes the program's signals
  pthread_t thread;
  const int err = pthread_create(&thread, NULL, drainer_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) {
    close(g_epoll);
    g_epoll = -1;
    return false;
  }
  pthread_detach(thread);
  // Exit records from now on, when the kernel lets us (else queue times stay as last read).
  g_exits_fd = zxs_linux_taskstats_listen(getpid());
  if (g_exits_fd >= 0) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EXITS_TAG};
    if (epoll_ctl(g_epoll, EPOLL_CTL_ADD, g_exits_fd, &ev) != 0) {
      close(g_exits_fd);
      g_exits_fd = -1;
    }
  }
  return true;
}

// An entry for a new measurement: a free one, else the place of an exited thread.
static measured_t* new_entry_locked(void) {
  measured_t* reuse = NULL;
  for (uint32_t i = 0; i < g_used; i++) {
    if (g_measured[i].tid == 0) return &g_measured[i];
    if (reuse == NULL && g_measured[i].exited) reuse = &g_measured[i];
  }
  if (g_used < MAX_MEASURED) return &g_measured[g_used++];
  return reuse;
}

// Measures a live thread (idempotent), its events' ring of `ring_pages`: the entry, or NULL.
// g_lock held.
static measured_t* measure_locked(pid_t tid, size_t ring_pages, zx_status_t* status) {
  ensure_drainer_locked();
  measured_t* m = find_locked(tid);
  if (m != NULL && !m->exited) {
    *status = ZX_OK;
    return m;
  }
  measured_t fresh = {.tid = tid, .stat_fd = -1};
  if (!refresh_locked(&fresh)) {  // gone: an exited entry of this tid stays as it was
    close_schedstat(&fresh.stat_fd);
    *status = ZX_ERR_BAD_STATE;
    return NULL;
  }
  if (m == NULL) m = new_entry_locked();  // else a reused tid takes the exited entry's place
  if (m == NULL) {
    close_schedstat(&fresh.stat_fd);
    *status = ZX_ERR_NO_RESOURCES;
    return NULL;
  }
  *m = fresh;
  m->gen = ++g_measure_gen;
  m->fields = ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME;
  if (g_with_events < events_limit()) {
    m->cpu_at_events = m->cpu_time;
    m->fields |= zxs_rt_events_open(&m->events, tid, ring_pages);
    if (m->events.fields != 0) g_with_events++;
  } else {
    zxs_rt_events_init(&m->events);
  }
  if (m->events.ring_fd < 0) close_schedstat(&m->stat_fd);
  if (m->events.ring_fd >= 0 && g_epoll >= 0) {
    struct epoll_event ev = {.events = EPOLLIN,
                             .data.u64 = (uint64_t)m->gen << 32 | (uint32_t)(m - g_measured)};
    epoll_ctl(g_epoll, EPOLL_CTL_ADD, m->events.ring_fd, &ev);
  }
  *status = ZX_OK;
  return m;
}

static void fill(const measured_t* m, zxs_prim_runtime_t* out) {
  out->info.cpu_time = m->cpu_time;
  out->info.queue_time = m->queue_time;
  out->info.page_fault_time = m->events.pairs.page_fault_ns;
  out->info.lock_contention_time = m->events.pairs.lock_contention_ns;
  out->fields = m->fields;
  // Its totals at exit: read on the thread as it exits, or from its exit record (live: will be).
  if (m->hooked || m->final || (!m->exited && g_exits_fd >= 0)) {
    out->fields |= ZXS_TASK_RUNTIME_TOTALS_AT_EXIT;
  }
}

zx_status_t zxs_prim_runtime_measure(const zxs_prim_thread_t* thread) {
  if (thread == NULL || thread->koid == 0) return ZX_ERR_INVALID_ARGS;
  const pid_t tid = (pid_t)thread->koid;
  pthread_mutex_lock(&g_lock);
  zx_status_t status;
  measured_t* m = measure_locked(tid, ZXS_RT_RING_PAGES, &status);
  // The calling thread is read one last time as it exits (exact queue time).
  if (m != NULL && !m->hooked && tid == current_tid()) {
    pthread_mutex_unlock(&g_lock);  // it may take the core's locks
    const bool hooked = zxs_prim_notify_on_thread_exit() == ZX_OK;
    pthread_mutex_lock(&g_lock);
    m = find_locked(tid);
    if (m != NULL && !m->exited) m->hooked = hooked;
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_status_t zxs_prim_runtime_thread(zx_koid_t koid, zxs_prim_runtime_t* out) {
  memset(out, 0, sizeof(*out));
  pthread_mutex_lock(&g_lock);
  if (g_forked_child) ensure_drainer_locked();  // forget the parent's table
  drain_exits_locked();
  measured_t* m = find_locked((pid_t)koid);
  zx_status_t status = ZX_OK;
  if (m != NULL && !m->exited) {
    zxs_rt_events_drain(&m->events);
    if (!refresh_locked(m)) retire_locked(m);
  }
  if (m != NULL) {
    fill(m, out);
  } else {
    // Not measured: the kernel's cpu and queue time of a live thread all the same.
    measured_t probe = {.tid = (pid_t)koid, .stat_fd = -1, .events.ring_fd = -1};
    if (koid != 0 && refresh_locked(&probe)) {
      probe.fields = ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME;
      fill(&probe, out);
    } else {
      status = ZX_ERR_NOT_FOUND;
    }
    close_schedstat(&probe.stat_fd);
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_status_t zxs_prim_runtime_process(zxs_prim_runtime_t* out) {
  memset(out, 0, sizeof(*out));
  DIR* dir = opendir("/proc/self/task");
  if (dir == NULL) return ZX_ERR_NOT_SUPPORTED;
  uint32_t fields = ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME |
                    ZXS_TASK_RUNTIME_PAGE_FAULT_TIME | ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME;
  pthread_mutex_lock(&g_lock);
  ensure_drainer_locked();
  drain_exits_locked();  // before finding threads gone: their records came first
  const uint32_t gen = ++g_seen_gen;
  for (struct dirent* d; (d = readdir(dir)) != NULL;) {
    const pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
    if (tid <= 0) continue;
    zx_status_t status;
    measured_t* m = measure_locked(tid, ZXS_RT_RING_PAGES, &status);
    if (m == NULL) continue;  // exited meanwhile, or the table is full
    m->seen = gen;
    zxs_rt_events_drain(&m->events);
    if (!refresh_locked(m)) {
      retire_locked(m);
      continue;
    }
    out->info.queue_time += m->queue_time;
    out->info.page_fault_time += m->events.pairs.page_fault_ns;
    out->info.lock_contention_time += m->events.pairs.lock_contention_ns;
    zxs_prim_runtime_t one;
    fill(m, &one);
    fields &= one.fields;
  }
  closedir(dir);
  // Measured threads /proc no longer lists have exited.
  for (uint32_t i = 0; i < g_used; i++) {
    measured_t* m = &g_measured[i];
    if (m->tid != 0 && !m->exited && m->seen != gen) retire_locked(m);
  }
  out->info.queue_time += g_exited.queue_time;
  out->info.page_fault_time += g_exited.page_fault_time;
  out->info.lock_contention_time += g_exited.lock_contention_time;
  // The kernel's sum over the process's threads, those that exited before any query included.
  int64_t cpu, queue;
  if (g_exits_fd >= 0 && zxs_linux_taskstats_process(&g_query_fd, getpid(), &cpu, &queue)) {
    if (queue > out->info.queue_time) out->info.queue_time = queue;
    fields |= ZXS_TASK_RUNTIME_TOTALS_AT_EXIT;
  } else {
    fields &= ~ZXS_TASK_RUNTIME_TOTALS_AT_EXIT;
  }
  pthread_mutex_unlock(&g_lock);
  bool ok;
  out->info.cpu_time = clock_ns(CLOCK_PROCESS_CPUTIME_ID, &ok);
  out->fields = fields;
  return ZX_OK;
}

zx_status_t zxs_prim_runtime_keep_history(const zxs_prim_thread_t* thread) {
  if (thread == NULL || thread->koid == 0) return ZX_ERR_INVALID_ARGS;
  pthread_mutex_lock(&g_lock);
  zx_status_t status;
  // A thread measured already keeps its smaller ring (bursts of faults may then go uncounted).
  measured_t* m = measure_locked((pid_t)thread->koid, ZXS_RT_FOLLOWED_RING_PAGES, &status);
  if (m != NULL && m->events.fields == 0) status = ZX_ERR_NOT_SUPPORTED;
  if (status == ZX_OK && m->events.pairs.history == NULL) {
    zxs_rt_events_drain(&m->events);  // what came before is not kept
    m->events.pairs.history = calloc(1, sizeof(zxs_rt_history_t));
    if (m->events.pairs.history == NULL) status = ZX_ERR_NO_MEMORY;
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_status_t zxs_prim_runtime_between(zx_koid_t koid, zx_time_t since, zx_time_t until,
                                     zxs_prim_runtime_t* out) {
  memset(out, 0, sizeof(*out));
  pthread_mutex_lock(&g_lock);
  measured_t* m = g_forked_child ? NULL : find_locked((pid_t)koid);
  zx_status_t status = ZX_ERR_NOT_FOUND;
  if (m != NULL && !m->exited && m->events.pairs.history != NULL) {
    zxs_rt_events_drain(&m->events);
    int64_t fault, lock;
    zxs_rt_history_between(m->events.pairs.history, (uint64_t)since, (uint64_t)until, &fault,
                           &lock);
    out->info.page_fault_time = fault;
    out->info.lock_contention_time = lock;
    out->fields = m->events.fields;
    status = ZX_OK;
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

// The calling thread's schedstat file, for zxs_prim_runtime_self_now(); -1: not open. Initial-exec:
// reading it never allocates (a real-time thread reads it).
static _Thread_local int t_self_stat_fd __attribute__((tls_model("initial-exec"))) = -1;

zx_status_t zxs_prim_runtime_self_prepare(void) {
  if (t_self_stat_fd >= 0) return ZX_OK;
  t_self_stat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (t_self_stat_fd < 0) return ZX_ERR_NOT_SUPPORTED;
  (void)zxs_prim_notify_on_thread_exit();  // closed as the thread exits
  return ZX_OK;
}

uint32_t zxs_prim_runtime_self_now(int64_t* cpu_time, int64_t* queue_time) {
  // No lock, no allocation: a system call each (the CPU-time clock, one pread).
  *cpu_time = 0;
  *queue_time = 0;
  uint32_t fields = 0;
  bool ok;
  *cpu_time = clock_ns(CLOCK_THREAD_CPUTIME_ID, &ok);
  if (ok) fields |= ZXS_TASK_RUNTIME_CPU_TIME;
  char text[128];
  const ssize_t n = t_self_stat_fd >= 0 ? pread(t_self_stat_fd, text, sizeof(text) - 1, 0) : -1;
  int64_t run;
  if (n > 0) {
    text[n] = '\0';
    if (zxs_rt_parse_schedstat(text, &run, queue_time)) fields |= ZXS_TASK_RUNTIME_QUEUE_TIME;
  }
  return fields;
}

void zxs_linux_runtime_thread_exiting(pid_t tid) {
  if (t_self_stat_fd >= 0) close(t_self_stat_fd);  // on the exiting thread itself
  t_self_stat_fd = -1;
  pthread_mutex_lock(&g_lock);
  measured_t* m = g_forked_child ? NULL : find_locked(tid);
  if (m != NULL && !m->exited) {
    refresh_locked(m);  // on the thread itself: its final values
    retire_locked(m);
  }
  pthread_mutex_unlock(&g_lock);
}
