// Linux: the perf_event source. One software task-clock event per attached thread, counting only
// the thread's own CPU time; on overflow the kernel sends our signal to that very thread with
// si_fd = the event's fd (O_ASYNC + F_SETSIG + F_SETOWN_EX/F_OWNER_TID). No ring buffer is
// needed: the kernel raises the fasync signal on every overflow by itself, whatever
// wakeup_events says (measured on 6.18 with 0 and 1: one signal per overflow; the backend test
// checks the count). With exclude_kernel (required at perf_event_paranoid 2) an overflow that
// lands while the thread is in the kernel is dropped, so time in system calls goes unsampled.
//
// The event runs one-shot: PERF_EVENT_IOC_REFRESH(1) allows one overflow, after which the kernel
// disables the event and sends POLL_HUP; the handler re-arms it after taking the sample. So at
// most one signal per thread is ever queued. A free-running event queues one real-time signal
// per overflow whenever the thread cannot take them (it blocks the signal, or samples cost more
// than the period); once the queue (RLIMIT_SIGPENDING) is full the kernel falls back to SIGIO,
// whose default action kills the process. Measured here: a free-running 10 us event killed its
// process with "I/O possible" within seconds.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "errno_status.h"
#include "linux_internal.h"
#include "platform.h"
#include "sampling.h"

// The handler finds its slot from si_fd through this table, which is never freed: a late signal
// reads a cleared entry. Entry: generation (bits 32..63), flags, slot index (bits 0..15).
// An fd beyond the table cannot be routed; arm then reports NOT_SUPPORTED and the caller falls
// back to the CPU-clock timer.
#define ZXS_PERF_ROUTES 32768
#define ROUTE_VALID ((uint64_t)1u << 16)
#define ROUTE_COUNTING ((uint64_t)1u << 17)
#define ROUTE_INDEX_MASK ((uint64_t)0xffffu)

_Static_assert(ZXS_MAX_THREADS <= 0x10000u, "slot index must fit 16 bits");

static _Atomic uint64_t g_routes[ZXS_PERF_ROUTES];
// Handlers inside the re-arm window of each fd: close waits for them, so the REFRESH ioctl never
// reaches a descriptor number that was closed and reused meanwhile. Never freed, like g_routes.
static _Atomic uint32_t g_route_users[ZXS_PERF_ROUTES];
// The id of each routed fd's event: the program may have closed the fd (zxs_linux_perf_fd_is).
static _Atomic uint64_t g_route_ids[ZXS_PERF_ROUTES];
static _Atomic int g_route_limit = ZXS_PERF_ROUTES;  // lowered only by tests
static _Atomic uint64_t g_counting_signals;

static uint64_t route_word(uint32_t index, uint32_t gen, uint64_t flags) {
  return ((uint64_t)gen << 32) | ROUTE_VALID | flags | ((uint64_t)index & ROUTE_INDEX_MASK);
}

// Of the table's statuses only these stand: the thread is gone (ESRCH), out of descriptors, and
// perf's ENOMEM as out of kernel buffers. Everything else says "use another source".
zx_status_t zxs_linux_perf_status(int err) {
  const zx_status_t status = zxs_posix_errno_status(err);
  switch (status) {
    case ZX_ERR_BAD_STATE:  // the thread is gone (ESRCH); EBADF is a descriptor of ours
      return err == ESRCH ? status : ZX_ERR_NOT_SUPPORTED;
    case ZX_ERR_NO_RESOURCES:
      return status;
    case ZX_ERR_NO_MEMORY:  // perf's ENOMEM and ENOSPC: kernel buffers, not our heap
      return err == ENOMEM ? ZX_ERR_NO_RESOURCES : ZX_ERR_NOT_SUPPORTED;
    default:  // refused (paranoid, seccomp, locked memory), unknown here, or a bad attribute
      return ZX_ERR_NOT_SUPPORTED;
  }
}

void zxs_linux_task_clock_attr(struct perf_event_attr* attr, zx_duration_t period) {
  memset(attr, 0, sizeof(*attr));
  attr->size = sizeof(*attr);
  attr->type = PERF_TYPE_SOFTWARE;
  attr->config = PERF_COUNT_SW_TASK_CLOCK;
  attr->sample_period = (uint64_t)period;
  attr->disabled = 1;
  attr->exclude_kernel = 1;  // required at perf_event_paranoid 2; samples user code only
  attr->exclude_hv = 1;
}

int zxs_linux_perf_event_open_group(struct perf_event_attr* attr, pid_t tid, int cpu,
                                    int group_fd) {
  return (int)syscall(SYS_perf_event_open, attr, tid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
}

int zxs_linux_perf_event_open(struct perf_event_attr* attr, pid_t tid, int cpu) {
  return zxs_linux_perf_event_open_group(attr, tid, cpu, -1);
}

static int perf_open(pid_t tid, zx_duration_t period) {
  struct perf_event_attr attr;
  zxs_linux_task_clock_attr(&attr, period);  // enabled by the first REFRESH, once routed
  return zxs_linux_perf_event_open(&attr, tid, -1);
}

// Sends the event's overflow signals, as `sig` with si_fd, to thread `tid` only.
static int route_to_thread(int fd, pid_t tid, int sig) {
  struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = tid};
  if (fcntl(fd, F_SETSIG, sig) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0) {
    return -1;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_ASYNC) != 0) {
    return -1;
  }
  return 0;
}

// Stops the event for good: disabled first, so a copy of the fd held elsewhere (a forked child)
// cannot keep it firing, then closed, which waits for the kernel's pending signal work.
static void perf_close(int fd) {
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  close(fd);
}

static bool g_available;
static pthread_once_t g_probe_once = PTHREAD_ONCE_INIT;

static void probe(void) {
  int fd = perf_open(0, ZXS_LINUX_PERF_MIN_PERIOD * 100);
  if (fd >= 0) {
    close(fd);
    g_available = true;
  } else {
    // Out of fds now is not "perf is forbidden here".
    g_available = zxs_linux_perf_status(errno) != ZX_ERR_NOT_SUPPORTED;
  }
}

bool zxs_linux_perf_available(void) {
  pthread_once(&g_probe_once, probe);
  return g_available;
}

// Opens, routes to `tid`, publishes the route and enables for one overflow. Returns the fd, or
// a (negative) status.
static int open_routed(pid_t tid, zx_duration_t period, uint32_t index, uint32_t gen,
                       uint64_t flags) {
  const int sig = zxs_linux_signal();
  // The first signal source to arm installs the handler (signal_handler.c).
  if (sig == 0 || zxs_linux_signal_check() != ZX_OK) {
    return ZX_ERR_BAD_STATE;
  }
  int fd = perf_open(tid, period);
  if (fd < 0) {
    return zxs_linux_perf_status(errno);
  }
  if (fd >= atomic_load_explicit(&g_route_limit, memory_order_relaxed)) {
    close(fd);
    return ZX_ERR_NOT_SUPPORTED;
  }
  if (route_to_thread(fd, tid, sig) != 0) {
    zx_status_t status = zxs_linux_perf_status(errno);
    close(fd);
    return status;
  }
  atomic_store_explicit(&g_route_ids[fd], zxs_linux_perf_id(fd), memory_order_relaxed);
  atomic_store_explicit(&g_routes[fd], route_word(index, gen, flags), memory_order_release);
  if (ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
    zx_status_t status = zxs_linux_perf_status(errno);
    atomic_store_explicit(&g_routes[fd], 0, memory_order_release);
    perf_close(fd);
    return status;
  }
  return fd;
}

static void close_routed(int fd) {
  if (fd < 0 || fd >= ZXS_PERF_ROUTES) {
    return;
  }
  // Dekker with rearm(): seq_cst store then load here, seq_cst add then load there, so either
  // the handler sees the route gone or we see it inside and wait.
  atomic_store_explicit(&g_routes[fd], 0, memory_order_seq_cst);
  while (atomic_load_explicit(&g_route_users[fd], memory_order_seq_cst) != 0) {
    sched_yield();
  }
  // Not a number the program has taken since it closed ours.
  if (zxs_linux_perf_fd_is(fd, atomic_load_explicit(&g_route_ids[fd], memory_order_relaxed))) {
    perf_close(fd);
  }
}

// [signal-safe] One more overflow for `fd`, unless its route changed (disarmed) meanwhile.
static void rearm(int fd, uint64_t route) {
  atomic_fetch_add_explicit(&g_route_users[fd], 1, memory_order_seq_cst);
  if (atomic_load_explicit(&g_routes[fd], memory_order_seq_cst) == route) {
    ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
  }
  atomic_fetch_sub_explicit(&g_route_users[fd], 1, memory_order_release);
}

zx_status_t zxs_linux_perf_arm(zxs_thread_slot_t* slot, zx_duration_t period, uint32_t gen) {
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  atomic_store_explicit(&st->fd, -1, memory_order_relaxed);
  atomic_store_explicit(&st->kind, ZXS_SOURCE_PERF_TASK_CLOCK, memory_order_relaxed);
  // The handler checks the route's generation against the slot's: publish the slot's first.
  zxs_linux_publish(slot, gen);
  int fd = open_routed((pid_t)slot->thread.koid, period, slot->index, gen, 0);
  if (fd < 0) {
    zxs_linux_unpublish(slot);
    return (zx_status_t)fd;
  }
  atomic_store_explicit(&st->fd, fd, memory_order_release);
  return ZX_OK;
}

void zxs_linux_perf_disarm(zxs_thread_slot_t* slot) {
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  zxs_linux_unpublish(slot);
  int fd = atomic_exchange_explicit(&st->fd, -1, memory_order_acq_rel);
  close_routed(fd);
}

void zxs_linux_perf_on_signal(int fd, const void* ucontext) {
  if (fd < 0 || fd >= ZXS_PERF_ROUTES) {
    return;
  }
  const uint64_t route = atomic_load_explicit(&g_routes[fd], memory_order_acquire);
  if ((route & ROUTE_VALID) == 0) {
    return;  // disarmed: a signal that was already queued
  }
  if ((route & ROUTE_COUNTING) != 0) {
    atomic_fetch_add_explicit(&g_counting_signals, 1, memory_order_relaxed);
  } else {
    zxs_thread_slot_t* slot = zxs_core_slot((uint32_t)(route & ROUTE_INDEX_MASK));
    uint32_t attach_gen;
    uint64_t owner;
    if (slot == NULL || !zxs_linux_current(slot, (uint32_t)(route >> 32), &attach_gen, &owner)) {
      return;
    }
    // The fd number may have been reused for another thread's event since this signal was
    // queued for an older one: only the slot's own thread samples it. pthread_self() reads the
    // thread pointer, where gettid() would cost a system call on every sample (0.3 us).
    if ((uint64_t)pthread_self() != owner) {
      return;
    }
    zxs_linux_take_sample(slot, attach_gen, ucontext);
  }
  rearm(fd, route);
}

void zxs_linux_perf_forget_all(void) {
  for (int fd = 0; fd < ZXS_PERF_ROUTES; fd++) {
    if (atomic_exchange_explicit(&g_routes[fd], 0, memory_order_relaxed) != 0 &&
        zxs_linux_perf_fd_is(fd, atomic_load_explicit(&g_route_ids[fd], memory_order_relaxed))) {
      close(fd);  // the child's copy only: no DISABLE, the event is the parent's too
    }
    atomic_store_explicit(&g_route_users[fd], 0, memory_order_relaxed);
  }
}

int zxs_linux_perf_open_counting(zx_duration_t period) {
  int fd = open_routed((pid_t)syscall(SYS_gettid), period, 0, 0, ROUTE_COUNTING);
  return fd >= 0 ? fd : -1;
}

void zxs_linux_perf_close_counting(int fd) { close_routed(fd); }

uint64_t zxs_linux_perf_counting_signals(void) {
  return atomic_load_explicit(&g_counting_signals, memory_order_relaxed);
}

void zxs_linux_perf_limit_routes(int limit) {
  atomic_store(&g_route_limit, limit > 0 && limit < ZXS_PERF_ROUTES ? limit : ZXS_PERF_ROUTES);
}
