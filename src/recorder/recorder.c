// The deadline-miss flight recorder (recorder.h): a ring session (ring_session.h) sampling all
// the time, alerts queued without a lock by real-time threads, and a writer thread of ours that
// turns each alert into a trace file.
//
// The queue is a fixed array of alert slots, each FREE -> FILLING (a raiser claimed it with a
// CAS) -> READY (published with release) -> FREE (the writer is done). The writer sleeps on a
// pipe that raisers write a byte to (write is async-signal-safe; the pipe does not block them).
// Not a semaphore: macOS has no unnamed ones (sem_init fails with ENOSYS there).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zxsampler/object.h>
#include <zxsampler/recorder.h>
#include <zxsampler/sampler.h>

#include "fork.h"
#include "percpu_ring.h"
#include "process_facts.h"
#include "ring_session.h"
#include "thread_hook.h"
#include "ticks.h"
#include "trace_file.h"

_Static_assert(ZXS_RECORDER_SLOT_BYTES == ZXS_RING_SLOT_BYTES, "recorder.h states the slot size");

#define DEFAULT_PERIOD ZX_MSEC(1)
#define DEFAULT_WINDOW ZX_SEC(2)
#define DEFAULT_ALERT_INTERVAL ZX_SEC(1)
#define MAX_PENDING 16
#define MAX_NAME 64

enum { SLOT_FREE, SLOT_FILLING, SLOT_READY };

typedef struct alert {
  _Atomic int state;
  char name[MAX_NAME];
  zx_koid_t tid;
  zx_time_t at;  // monotonic ns: the alert, or the end of the late period
  bool has_period;
  bool one_thread;  // the period began and ended on `tid`: its fault and lock time are asked
  zx_time_t begin;  // of the late period
  zx_duration_t budget;
  int64_t cpu_time, queue_time;
  uint32_t fields;  // of cpu_time and queue_time
} alert_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;  // start, attach, stop
static zx_handle_t g_iob = ZX_HANDLE_INVALID;
static pthread_t g_writer;
static int g_wake[2] = {-1, -1};  // the writer's wake-up pipe, made at the first start
static _Atomic bool g_running;    // alerts are taken
static _Atomic bool g_stopping;
static _Atomic int64_t g_last_alert;  // monotonic ns of the last alert taken; INT64_MIN: none
static zxs_recorder_options_t g_options;
static char g_dir[PATH_MAX];
static alert_t g_alerts[MAX_PENDING];
static uint64_t g_files;       // written so far (the writer's)
static zx_status_t g_failure;  // the writer's first failure to write

// [signal-safe] Monotonic ns.
static zx_time_t now_ns(void) { return zxs_facts_now_ns(); }

// Monotonic ns to the platform's ticks (the records' timestamps).
static uint64_t ticks_of(zx_time_t ns) {
  return ns <= 0 ? 0 : zxs_ns_to_ticks((uint64_t)ns, zxs_facts_ticks_per_second());
}

// [signal-safe] Rate limit, then a free slot (FILLING, for the caller to fill and publish).
static zx_status_t claim_slot(zx_time_t at, alert_t** out) {
  if (!atomic_load_explicit(&g_running, memory_order_acquire)) return ZX_ERR_BAD_STATE;
  int64_t last = atomic_load_explicit(&g_last_alert, memory_order_relaxed);
  do {
    if (last != INT64_MIN && at - last < g_options.alert_interval) return ZX_ERR_SHOULD_WAIT;
  } while (!atomic_compare_exchange_weak_explicit(&g_last_alert, &last, at, memory_order_relaxed,
                                                  memory_order_relaxed));
  for (int i = 0; i < MAX_PENDING; i++) {
    int expected = SLOT_FREE;
    if (atomic_compare_exchange_strong_explicit(&g_alerts[i].state, &expected, SLOT_FILLING,
                                                memory_order_acquire, memory_order_relaxed)) {
      *out = &g_alerts[i];
      return ZX_OK;
    }
  }
  return ZX_ERR_NO_RESOURCES;
}

// [signal-safe] The file-name-safe copy of `name` (see recorder.h).
static void copy_name(char* dst, const char* name, const char* fallback) {
  if (name == NULL || name[0] == '\0') name = fallback;
  size_t n = 0;
  for (; name[n] != '\0' && n < MAX_NAME - 1; n++) {
    const char c = name[n];
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    dst[n] = keep ? c : '_';
  }
  dst[n] = '\0';
}

// [signal-safe] Wakes the writer (errno kept: a signal handler may be here). A full pipe (the
// writer has wakes pending already) drops the byte instead of blocking.
static void wake_writer(void) {
  const int saved = errno;
  const ssize_t n = write(g_wake[1], "w", 1);
  (void)n;
  errno = saved;
}

// The writer's sleep until at least one wake-up; it takes every wake-up pending, since each
// round looks at every slot.
static void wait_for_wake(void) {
  char bytes[64];
  while (read(g_wake[0], bytes, sizeof(bytes)) < 0 && errno == EINTR) {
  }
}

// The wake-up pipe, close-on-exec, its write end non-blocking; kept for the process's life.
static bool open_wake_pipe(void) {
  if (g_wake[0] >= 0) return true;
  int fds[2];
  if (pipe(fds) != 0) return false;
  (void)fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  (void)fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  (void)fcntl(fds[1], F_SETFL, O_NONBLOCK);
  g_wake[0] = fds[0];
  g_wake[1] = fds[1];
  return true;
}

// [signal-safe] Hands a filled slot to the writer.
static void publish(alert_t* a) {
  atomic_store_explicit(&a->state, SLOT_READY, memory_order_release);
  wake_writer();
}

zx_status_t zxs_trace_alert(const char* name) {
  const zx_time_t at = now_ns();
  alert_t* a;
  zx_status_t status = claim_slot(at, &a);
  if (status != ZX_OK) return status;
  copy_name(a->name, name, "alert");
  a->tid = zxs_facts_current_thread_koid();
  a->at = at;
  a->has_period = false;
  publish(a);
  return ZX_OK;
}

// zxs_deadline_t.reserved0 of a period begun and not yet ended (zero-initialized: not begun).
#define DEADLINE_OPEN 0x7a78646cu  // "zxdl"
// zxs_deadline_t.reserved[0]: the thread that began it (its CPU and queue times are in the
// deadline).
#define DEADLINE_TID reserved[0]

zx_status_t zxs_deadline_begin(zxs_deadline_t* d, zx_duration_t budget) {
  if (d == NULL) return ZX_ERR_INVALID_ARGS;
  if (budget <= 0) {
    d->reserved0 = 0;  // its end answers BAD_STATE and raises nothing
    return ZX_ERR_INVALID_ARGS;
  }
  const int saved = errno;  // async-signal-safe callers expect it kept
  d->budget = budget;
  // The clock first, the thread's times after it: the period's wall time then holds all of the
  // CPU and queue time its breakdown counts (at the end: the times, then the clock).
  d->begin = now_ns();
  d->fields = zxs_facts_runtime_self_now(&d->cpu_begin, &d->queue_begin);
  d->DEADLINE_TID = zxs_facts_current_thread_koid();
  d->reserved0 = DEADLINE_OPEN;
  errno = saved;
  return ZX_OK;
}

zx_status_t zxs_deadline_end(zxs_deadline_t* d) {
  if (d == NULL) return ZX_ERR_INVALID_ARGS;
  if (d->reserved0 != DEADLINE_OPEN) return ZX_ERR_BAD_STATE;  // never begun, or ended already
  d->reserved0 = 0;
  if (now_ns() - d->begin <= d->budget) return ZX_OK;
  const int saved = errno;
  int64_t cpu, queue;
  uint32_t fields = zxs_facts_runtime_self_now(&cpu, &queue) & d->fields;
  // Ended on another thread than the one that began it: the times read here are not the
  // period's, the alert carries its wall time only.
  const zx_koid_t tid = zxs_facts_current_thread_koid();
  const bool one_thread = tid == (zx_koid_t)d->DEADLINE_TID;
  if (!one_thread) fields = 0;
  // Read after the thread's times, so that the wall time holds them (a preemption between the
  // reads is in both, not only in queue_time).
  const zx_time_t end = now_ns();
  errno = saved;
  alert_t* a;
  if (claim_slot(end, &a) == ZX_OK) {
    copy_name(a->name, d->name, "deadline");
    a->tid = tid;
    a->at = end;
    a->has_period = true;
    a->one_thread = one_thread;
    a->begin = d->begin;
    a->budget = d->budget;
    a->cpu_time = cpu - d->cpu_begin;
    a->queue_time = queue - d->queue_begin;
    a->fields = fields;
    publish(a);
  }
  return ZX_ERR_TIMED_OUT;
}

// --- The writer thread ------------------------------------------------------------------------

static zxs_fxt_str_ref_t str(const char* s) { return zxs_fxt_str_inline(s, strlen(s)); }

static void add_arg(zxs_fxt_arg_t* args, size_t* n, const char* name, int64_t ns) {
  args[*n].type = ZXS_FXT_ARG_UINT64;
  args[*n].name = str(name);
  args[*n].u64 = ns > 0 ? (uint64_t)ns : 0;
  (*n)++;
}

// The period's breakdown, its sum at most its wall time. The reads are ordered so that the wall
// time holds cpu_time and queue_time (zxs_deadline_begin/end), but those two are the scheduler's
// clock (sched_clock, per CPU) and the wall time is CLOCK_MONOTONIC, which NTP slews by up to
// 500 ppm against it: a sum past the wall by that much is the clocks' disagreement, not time the
// thread spent, and comes off queue_time (then cpu_time), the coarser of the two. Fault time runs
// on the CPU, so it is at most cpu_time. A contention ends when the woken thread has run a
// little and taken the lock, so its end overlaps cpu_time: lock time is what the wall leaves.
typedef struct breakdown {
  int64_t cpu, queue, fault, lock;
  uint32_t rt_fields;  // ZXS_TASK_RUNTIME_PAGE_FAULT_TIME, _LOCK_CONTENTION_TIME measured
} breakdown_t;

static int64_t at_least_0(int64_t ns) { return ns > 0 ? ns : 0; }

static breakdown_t breakdown_within_wall(zx_duration_t wall, const alert_t* a) {
  breakdown_t b = {0};
  if (wall <= 0) return b;
  const bool has_cpu = (a->fields & ZXS_TASK_RUNTIME_CPU_TIME) != 0;
  b.cpu = has_cpu ? at_least_0(a->cpu_time) : 0;
  b.queue = (a->fields & ZXS_TASK_RUNTIME_QUEUE_TIME) != 0 ? at_least_0(a->queue_time) : 0;
  if (b.cpu > wall) b.cpu = wall;
  if (b.queue > wall - b.cpu) b.queue = wall - b.cpu;
  zx_info_task_runtime_t rt;
  b.rt_fields = a->one_thread ? zxs_facts_runtime_between(a->tid, a->begin, a->at, &rt) : 0;
  if (b.rt_fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) {
    b.fault = at_least_0(rt.page_fault_time);
    if (b.fault > wall) b.fault = wall;
    if (has_cpu && b.fault > b.cpu) b.fault = b.cpu;
  }
  if (b.rt_fields & ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME) {
    const int64_t left = wall - b.queue - (has_cpu ? b.cpu : b.fault);
    b.lock = at_least_0(rt.lock_contention_time);
    if (b.lock > left) b.lock = at_least_0(left);
  }
  return b;
}

// The alert's instant event, with the late period's breakdown.
static zx_status_t write_alert_event(const alert_t* a, zxs_fxt_buf_t* events) {
  zxs_fxt_arg_t args[6];
  memset(args, 0, sizeof(args));
  size_t n = 0;
  if (a->has_period) {
    const zx_duration_t wall = a->at - a->begin;
    const breakdown_t b = breakdown_within_wall(wall, a);
    add_arg(args, &n, ZXS_TRACE_ALERT_WALL_ARG, wall);
    add_arg(args, &n, ZXS_TRACE_ALERT_BUDGET_ARG, a->budget);
    if (a->fields & ZXS_TASK_RUNTIME_CPU_TIME) add_arg(args, &n, ZXS_TRACE_ALERT_CPU_ARG, b.cpu);
    if (a->fields & ZXS_TASK_RUNTIME_QUEUE_TIME) {
      add_arg(args, &n, ZXS_TRACE_ALERT_QUEUE_ARG, b.queue);
    }
    if (b.rt_fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) {
      add_arg(args, &n, ZXS_TRACE_ALERT_FAULT_ARG, b.fault);
    }
    if (b.rt_fields & ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME) {
      add_arg(args, &n, ZXS_TRACE_ALERT_LOCK_ARG, b.lock);
    }
  }
  zxs_fxt_event_t event = {
      .event_type = ZXS_FXT_EVENT_INSTANT,
      .ticks = ticks_of(a->at),
      .thread = {.process_koid = zxs_facts_process_koid(), .thread_koid = a->tid},
      .category = str(ZXS_TRACE_ALERT_CATEGORY),
      .name = str(a->name)};
  return zxs_fxt_write_instant_event(events, &event, args, n);
}

// Writes the trace file of one alert.
static zx_status_t write_alert(const alert_t* a) {
  zxs_fxt_buf_t samples, events;
  zxs_fxt_buf_init(&samples);
  zxs_fxt_buf_init(&events);
  zxs_facts_flush_samples();  // samples the kernel still buffers (a source with a collector)
  zx_status_t status = zxs_sampler_ring_copy(g_iob, (zx_time_t)ticks_of(a->at - g_options.window),
                                             (zx_time_t)ticks_of(a->at), &samples);
  if (status == ZX_OK) status = write_alert_event(a, &events);
  char path[PATH_MAX + 2 * MAX_NAME];
  snprintf(path, sizeof(path), "%s/%s-%llu-%llu.fxt", g_dir, a->name,
           (unsigned long long)zxs_facts_process_koid(), (unsigned long long)++g_files);
  FILE* out = status == ZX_OK ? fopen(path, "wb") : NULL;
  if (status == ZX_OK && out == NULL) status = ZX_ERR_IO;
  if (out != NULL) {
    status = zxs_trace_write_samples(&samples, &events, a->tid, g_options.period, 0, out);
    if (fclose(out) != 0 && status == ZX_OK) status = ZX_ERR_IO;
    if (status != ZX_OK) remove(path);
  }
  zxs_fxt_buf_destroy(&samples);
  zxs_fxt_buf_destroy(&events);
  return status;
}

// Writes every alert that is ready.
static void write_ready(void) {
  for (int i = 0; i < MAX_PENDING; i++) {
    alert_t* a = &g_alerts[i];
    if (atomic_load_explicit(&a->state, memory_order_acquire) != SLOT_READY) continue;
    const zx_status_t status = write_alert(a);
    if (status != ZX_OK && g_failure == ZX_OK) g_failure = status;
    atomic_store_explicit(&a->state, SLOT_FREE, memory_order_release);
  }
}

static void* writer_main(void* unused) {
  (void)unused;
  for (;;) {
    wait_for_wake();
    write_ready();
    if (atomic_load_explicit(&g_stopping, memory_order_acquire)) return NULL;
  }
}

// --- Start, attach, stop ----------------------------------------------------------------------

// In the child of a fork the writer thread and the session stayed in the parent (the session
// layer forgets its side): the child's recorder is simply not running. The wake-up pipe is the
// parent's writer's: the child makes its own if it starts a recorder.
static void forget_after_fork(void) {
  atomic_store(&g_running, false);
  g_iob = ZX_HANDLE_INVALID;
  for (int i = 0; i < 2; i++) {
    if (g_wake[i] >= 0) close(g_wake[i]);
    g_wake[i] = -1;
  }
  pthread_mutex_init(&g_lock, NULL);  // one thread now: nobody else can hold it
}

static void register_atfork(void) {
  static const zxs_fork_steps_t kSteps = {.child = forget_after_fork};
  zxs_fork_register(ZXS_FORK_STAGE_RECORDER, &kSteps);
}

static zx_status_t check_options(const zxs_recorder_options_t* o) {
  for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]); i++) {
    if (o->reserved[i] != 0) return ZX_ERR_INVALID_ARGS;
  }
  if ((o->period != 0 && o->period < ZX_SAMPLER_MIN_PERIOD) || o->window < 0 ||
      o->alert_interval < 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (o->output_dir != NULL && strlen(o->output_dir) >= sizeof(g_dir)) return ZX_ERR_INVALID_ARGS;
  return ZX_OK;
}

// The calling thread: sampled, its fault and lock time followed, its own times readable.
static zx_status_t attach_self_locked(void) {
  zx_status_t status = zxs_sampler_attach(g_iob, zxs_thread_self());
  if (status != ZX_OK) return status;
  zxs_facts_follow_current_thread();  // its queue time, fault and lock time in the breakdown
  return ZX_OK;
}

// A session sampling into rings that hold two windows of samples per CPU: a CPU takes at most
// one sample per period of CPU time, so the window before an alert is still whole while the
// writer copies it, for as long again.
static zx_status_t create_session(zx_handle_t* iob) {
  const uint64_t per_window = (uint64_t)(g_options.window / g_options.period) + 1;
  const size_t slots = (size_t)(2 * per_window + per_window / 4 + 64);
  zx_sampler_config_t config = {.period = g_options.period,
                                .buffer_size = ZXS_RING_SLOT_BYTES,
                                .iobuffer_discipline = ZX_IOB_DISCIPLINE_NONE};
  zx_handle_t rsrc;
  zx_status_t status = zxs_debug_resource_get(&rsrc);
  if (status != ZX_OK) return status;
  status = zxs_sampler_create_ring(rsrc, &config, slots, iob);
  zxs_handle_close(rsrc);
  return status;
}

// Each new thread, as it starts, when the thread hook is in the process: attaches it when the
// recorder runs with attach_new_threads. Not async-signal-safe.
static void thread_started(void) {
  // g_options is written before g_running is set (release), and not again while it is set.
  if (!atomic_load_explicit(&g_running, memory_order_acquire) || !g_options.attach_new_threads) {
    return;
  }
  (void)zxs_recorder_attach_current_thread();  // a recorder that stopped meanwhile: BAD_STATE
}

// New threads are attached by the thread hook (libzxsampler-threads, thread_hook.h), found by
// its entry's name; false when it is not in the process.
static bool add_thread_hook(void) {
  void* sym = dlsym(RTLD_DEFAULT, ZXS_THREAD_HOOK_ADD_SYMBOL);
  if (sym == NULL) return false;
  zxs_thread_hook_add_fn add;
  memcpy(&add, &sym, sizeof(add));  // POSIX: dlsym results convert to function pointers
  return add(thread_started);
}

zx_status_t zxs_recorder_start(const zxs_recorder_options_t* options) {
  static const zxs_recorder_options_t kDefaults = {0};
  register_atfork();
  if (options == NULL) options = &kDefaults;
  zx_status_t status = check_options(options);
  if (status != ZX_OK) return status;
  pthread_mutex_lock(&g_lock);
  if (g_iob != ZX_HANDLE_INVALID) {
    pthread_mutex_unlock(&g_lock);
    return ZX_ERR_BAD_STATE;
  }
  g_options = *options;
  if (g_options.period == 0) g_options.period = DEFAULT_PERIOD;
  if (g_options.window == 0) g_options.window = DEFAULT_WINDOW;
  if (g_options.alert_interval == 0) g_options.alert_interval = DEFAULT_ALERT_INTERVAL;
  snprintf(g_dir, sizeof(g_dir), "%s", options->output_dir != NULL ? options->output_dir : ".");
  g_options.output_dir = g_dir;
  g_files = 0;
  g_failure = ZX_OK;
  for (int i = 0; i < MAX_PENDING; i++) atomic_store(&g_alerts[i].state, SLOT_FREE);
  atomic_store(&g_last_alert, INT64_MIN);
  atomic_store(&g_stopping, false);

  zx_handle_t iob = ZX_HANDLE_INVALID;
  status = create_session(&iob);
  g_iob = iob;
  if (status == ZX_OK && options->attach_new_threads && !add_thread_hook()) {
    status = ZX_ERR_NOT_SUPPORTED;
  }
  if (status == ZX_OK && !options->dont_attach_caller) status = attach_self_locked();
  if (status == ZX_OK) status = zxs_sampler_start(iob);
  if (status == ZX_OK && !open_wake_pipe()) status = ZX_ERR_NO_RESOURCES;
  if (status == ZX_OK) {
    // The writer takes none of the program's signals (it may hold a lock when one comes).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&g_writer, NULL, writer_main, NULL) != 0) status = ZX_ERR_NO_RESOURCES;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  if (status == ZX_OK) {
    atomic_store_explicit(&g_running, true, memory_order_release);
  } else {
    zxs_handle_close(iob);
    g_iob = ZX_HANDLE_INVALID;
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_status_t zxs_recorder_attach_current_thread(void) {
  pthread_mutex_lock(&g_lock);
  const zx_status_t status = g_iob == ZX_HANDLE_INVALID ? ZX_ERR_BAD_STATE : attach_self_locked();
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_status_t zxs_recorder_stop(void) {
  pthread_mutex_lock(&g_lock);
  if (g_iob == ZX_HANDLE_INVALID) {
    pthread_mutex_unlock(&g_lock);
    return ZX_ERR_BAD_STATE;
  }
  atomic_store_explicit(&g_running, false, memory_order_release);  // no new alerts
  atomic_store_explicit(&g_stopping, true, memory_order_release);
  wake_writer();
  pthread_join(g_writer, NULL);  // it writes what was raised before it ends
  zx_status_t status = zxs_sampler_stop(g_iob);
  zxs_handle_close(g_iob);
  g_iob = ZX_HANDLE_INVALID;
  if (status == ZX_OK) status = g_failure;
  pthread_mutex_unlock(&g_lock);
  return status;
}
