// Linux: the fallback source, a POSIX timer on the thread's own CPU-time clock that signals that
// thread (SIGEV_THREAD_ID). Always available; the kernel checks CPU-clock timers at the scheduler
// tick, so it honours at most one expiry per tick and reports the rest as overruns.
//
// A timer's signal is queued at most once (the kernel preallocates it), so this source can never
// flood the signal queue. The payload carries the slot index, the arm's generation and a tag, so
// a signal queued by a timer that has since been deleted, or one forged by the program, is
// recognised and ignored.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "linux_internal.h"
#include "platform.h"
#include "sampling.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

// Payload: tag | generation | slot index, packed into sival_ptr.
#if UINTPTR_MAX > 0xffffffffu
#define PAYLOAD_TAG ((uintptr_t)0x7a58u << 48)
#define PAYLOAD_TAG_MASK ((uintptr_t)0xffffu << 48)
#define PAYLOAD_GEN_SHIFT 16
#define PAYLOAD_GEN_MASK ((uintptr_t)0xffffffffu)
#define PAYLOAD_INDEX_MASK ((uintptr_t)0xffffu)
#else
#define PAYLOAD_TAG ((uintptr_t)0xau << 28)
#define PAYLOAD_TAG_MASK ((uintptr_t)0xfu << 28)
#define PAYLOAD_GEN_SHIFT 12
#define PAYLOAD_GEN_MASK ((uintptr_t)0xffffu)
#define PAYLOAD_INDEX_MASK ((uintptr_t)0xfffu)
#endif
_Static_assert(ZXS_MAX_THREADS - 1 <= PAYLOAD_INDEX_MASK, "slot index must fit the payload");

static uintptr_t encode(uint32_t index, uint32_t gen) {
  return PAYLOAD_TAG | (((uintptr_t)gen & PAYLOAD_GEN_MASK) << PAYLOAD_GEN_SHIFT) |
         ((uintptr_t)index & PAYLOAD_INDEX_MASK);
}

static struct timespec to_timespec(zx_duration_t ns) {
  struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
  return ts;
}

static _Atomic zx_duration_t g_resolution;  // 0 until read

zx_duration_t zxs_linux_cputimer_resolution(void) {
  zx_duration_t res = atomic_load_explicit(&g_resolution, memory_order_relaxed);
  if (res == 0) {
    // The coarse clock advances once per tick, and its resolution is the tick length.
    struct timespec ts;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &ts) == 0 && (ts.tv_sec > 0 || ts.tv_nsec > 0)) {
      res = (zx_duration_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    } else {
      res = 10000000;  // HZ=100, the coarsest common configuration
    }
    atomic_store_explicit(&g_resolution, res, memory_order_relaxed);
  }
  return res;
}

zx_status_t zxs_linux_cputimer_arm(zxs_thread_slot_t* slot, zx_duration_t period, uint32_t gen) {
  const int sig = zxs_linux_signal();
  // The first signal source to arm installs the handler (signal_handler.c).
  if (sig == 0 || zxs_linux_signal_check() != ZX_OK) {
    return ZX_ERR_BAD_STATE;
  }
  const pid_t tid = (pid_t)slot->thread.koid;
  struct sigevent sev;
  memset(&sev, 0, sizeof(sev));
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = sig;
  sev.sigev_value.sival_ptr = (void*)encode(slot->index, gen);
  sev.sigev_notify_thread_id = tid;
  timer_t timer;
  if (timer_create(zxs_linux_thread_cpuclock(tid), &sev, &timer) != 0) {
    // EINVAL: the clock names no thread of ours any more.
    if (errno == EINVAL) {
      return ZX_ERR_BAD_STATE;
    }
    return ZX_ERR_NO_RESOURCES;  // EAGAIN, ENOMEM: the kernel's timer limit
  }
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  atomic_store_explicit(&st->timer, (void*)timer, memory_order_relaxed);
  atomic_store_explicit(&st->has_timer, true, memory_order_release);
  atomic_store_explicit(&st->kind, ZXS_SOURCE_CPU_CLOCK_TIMER, memory_order_relaxed);
  zxs_linux_publish(slot, gen);
  struct itimerspec its = {.it_interval = to_timespec(period), .it_value = to_timespec(period)};
  if (timer_settime(timer, 0, &its, NULL) != 0) {
    zxs_linux_unpublish(slot);
    atomic_store_explicit(&st->has_timer, false, memory_order_release);
    timer_delete(timer);
    return ZX_ERR_NO_RESOURCES;
  }
  return ZX_OK;
}

void zxs_linux_cputimer_disarm(zxs_thread_slot_t* slot) {
  zxs_linux_slot_t* st = zxs_linux_slot(slot);
  // Stale first: an expiry already queued finds the generation changed.
  zxs_linux_unpublish(slot);
  if (atomic_exchange_explicit(&st->has_timer, false, memory_order_acq_rel)) {
    timer_delete((timer_t)atomic_load_explicit(&st->timer, memory_order_relaxed));
  }
}

void zxs_linux_cputimer_on_signal(union sigval value, int overrun, const void* ucontext) {
  const uintptr_t payload = (uintptr_t)value.sival_ptr;
  if ((payload & PAYLOAD_TAG_MASK) != PAYLOAD_TAG) {
    return;
  }
  zxs_thread_slot_t* slot = zxs_core_slot((uint32_t)(payload & PAYLOAD_INDEX_MASK));
  if (slot == NULL) {
    return;
  }
  // The payload holds the generation's low bits; the slot's full one must agree with them.
  const uint32_t gen = atomic_load_explicit(&zxs_linux_slot(slot)->gen, memory_order_acquire);
  uint32_t attach_gen;
  if (((uintptr_t)gen & PAYLOAD_GEN_MASK) != ((payload >> PAYLOAD_GEN_SHIFT) & PAYLOAD_GEN_MASK) ||
      !zxs_linux_current(slot, gen, &attach_gen, NULL)) {
    return;
  }
  if (overrun > 0) {
    zxs_core_count_overruns(slot, (uint64_t)overrun);
  }
  zxs_linux_take_sample(slot, attach_gen, ucontext);
}
