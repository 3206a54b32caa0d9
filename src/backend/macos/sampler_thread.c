// macOS: the sampling source, one sampler thread for every attached thread.
//
// Every period (Mach absolute time, mach_wait_until; the thread has a time-constraint policy so
// that periods near 1 ms hold: see ask_time_constraint), for each armed slot whose thread is
// running:
// take the slot (BUSY), mark the CPU state its samples go to (a pending timer, seam rule:
// region slot index % CPUs), thread_suspend, thread_get_state, zxs_core_sample_suspended() over
// the thread's live stack, thread_resume, clear the mark, release the slot. From suspend to
// resume nothing allocates, locks, logs or calls dyld: the suspended thread may hold malloc's or
// the loader's lock. The thread is resumed on every path.
//
// "Running" is thread_info(THREAD_BASIC_INFO)'s run state, TH_STATE_RUNNING (on a CPU or ready
// for one), read before the suspend. Not "CPU time advanced since the last tick": XNU answers
// with the thread's accumulated timers (thread_read_times: timer_grab), which it brings up to
// date when the thread's CPU switches threads or enters the kernel, so a thread that spins in
// user space on another CPU would show no progress between interrupts and lose those ticks. The run
// state is exact at the instant; the price is that a thread ready but waiting for a CPU is sampled
// too (where it was preempted), which Linux's CPU-time sources would not do.
//
// Stop and detach: disarm clears ARMED, then waits until the sampler has released the slot, so
// when it returns the thread is running and will not be suspended for this slot again; stop's
// phase 2 also waits for the pending-timer marks (percpu_state.h).
#include <mach/mach.h>
#include <mach/mach_time.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "macos_internal.h"
#include "percpu_state.h"
#include "platform.h"
#include "sampling.h"
#include "thread_state_macos.h"

// The shortest period the sampler thread keeps: its timer's useful resolution (not counted as
// throttling, as on Linux for the CPU-clock timer's tick).
#define ZXS_MACOS_MIN_PERIOD ((zx_duration_t)100000)
// The longest the sampler sleeps before it looks at the period again: a shorter period armed
// meanwhile (a new session after one with a long period) takes effect within this.
#define MAX_SLEEP_NS 100000000u

#define ARMED_WORDS (ZXS_MAX_THREADS / 64u)
_Static_assert(ZXS_MAX_THREADS % 64u == 0, "the armed set is whole 64-bit words");

static _Atomic uint64_t g_armed[ARMED_WORDS];  // bit i: slot i is armed
static _Atomic uint32_t g_armed_count;
static _Atomic zx_duration_t g_period;  // the sampler's period: the last one armed

// The sampler sleeps here while nothing is armed.
static pthread_mutex_t g_idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_idle_cond = PTHREAD_COND_INITIALIZER;
static pid_t g_sampler_pid;  // the process the sampler runs in (fork: the child has none)

// Ready to run or running, by the kernel's account now.
static bool is_running(mach_port_t port) {
  thread_basic_info_data_t info;
  mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
  if (thread_info(port, THREAD_BASIC_INFO, (thread_info_t)&info, &count) != KERN_SUCCESS) {
    return false;  // the thread is gone
  }
  return info.run_state == TH_STATE_RUNNING && (info.flags & TH_FLAGS_IDLE) == 0 &&
         info.suspend_count == 0;
}

// One sample of the slot's thread, if it is armed and running. `missed`: periods the sampler
// fell behind since its last round.
static void sample_slot(zxs_thread_slot_t* slot, uint64_t missed, zx_koid_t self) {
  zxs_macos_slot_t* st = zxs_macos_slot(slot);
  uint32_t expected = ZXS_MACOS_ARMED;
  if (!atomic_compare_exchange_strong_explicit(&st->state, &expected,
                                               ZXS_MACOS_ARMED | ZXS_MACOS_BUSY,
                                               memory_order_acquire, memory_order_relaxed)) {
    return;  // disarmed, or being disarmed
  }
  if (missed > 0) zxs_core_count_overruns(slot, missed);
  // The CPU is unknown here: the core's rule places the sample (and the timer mark) by slot.
  zxs_percpu_t* state = zxs_core_percpu_of(ZXS_CPU_UNKNOWN, slot);
  // Never this thread (suspending itself would never return).
  if (st->koid != self && state != NULL && is_running(st->port) && zxs_percpu_timer_set(state)) {
    if (thread_suspend(st->port) == KERN_SUCCESS) {
      // --- suspended: no allocation, no lock, no log, no dyld until the resume ---
      zxs_regs_t regs;
      if (zxs_macos_thread_regs(st->port, &regs) == KERN_SUCCESS) {
        zxs_core_sample_suspended(slot, st->attach_gen, ZXS_CPU_UNKNOWN, &regs);
      }
      (void)thread_resume(st->port);
    }
    zxs_percpu_timer_clear(state);
  }
  atomic_fetch_and_explicit(&st->state, ~ZXS_MACOS_BUSY, memory_order_release);
}

// XNU's bounds on a time-constraint policy's computation: min_rt_quantum and max_rt_quantum
// (osfmk/kern/sched_prim.c, sched_realtime_timebase_init).
#define XNU_MIN_RT_COMPUTATION_NS 50000u     // 50 us
#define XNU_MAX_RT_COMPUTATION_NS 50000000u  // 50 ms

// The sampler thread's port (sampling_init), and its time-constraint policy: the period it was
// last asked for and whether XNU refused it. Under the session lock.
static mach_port_t g_sampler_port = MACH_PORT_NULL;
static zx_duration_t g_policy_period;
static bool g_policy_refused;

static uint32_t clamp_u32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

// The time-constraint policy for `period`, as XNU accepts it (thread_policy_set_internal,
// osfmk/kern/thread_policy.c): it refuses a computation outside [min_rt_quantum,
// max_rt_quantum] or above the constraint, and (recent releases) raises a computation below
// half the constraint to that half. The sampler must finish a round within half a period (the
// constraint), so XNU reserves a quarter of the period: asked for openly, within its bounds,
// which every release accepts for every period the sampler keeps (100 us and up).
static thread_time_constraint_policy_data_t time_constraint_for(zx_duration_t period) {
  const uint64_t ticks = zxs_macos_ns_to_ticks((uint64_t)period);
  const uint64_t min_computation = zxs_macos_ns_to_ticks(XNU_MIN_RT_COMPUTATION_NS);
  const uint64_t max_computation = zxs_macos_ns_to_ticks(XNU_MAX_RT_COMPUTATION_NS);
  uint64_t constraint = ticks / 2;
  uint64_t computation = constraint / 2;
  if (computation < min_computation) computation = min_computation;
  if (computation > max_computation) computation = max_computation;
  if (constraint < computation) constraint = computation;
  return (thread_time_constraint_policy_data_t){
      .period = clamp_u32(ticks),
      .computation = (uint32_t)computation,
      .constraint = clamp_u32(constraint),
      .preemptible = 1,
  };
}

// Asks XNU for the sampler thread's time-constraint policy when the period changes (under the
// session lock). Refused (a thread in a work interval that may not be real-time, a kernel with
// other limits), the sampler runs at the default policy, which holds periods of several
// milliseconds: each thread armed while it does counts a source failure (docs/platforms.md).
static void ask_time_constraint(zxs_thread_slot_t* slot, zx_duration_t period) {
  if (g_sampler_port != MACH_PORT_NULL && period != g_policy_period) {
    thread_time_constraint_policy_data_t policy = time_constraint_for(period);
    g_policy_refused =
        thread_policy_set(g_sampler_port, THREAD_TIME_CONSTRAINT_POLICY, (thread_policy_t)&policy,
                          THREAD_TIME_CONSTRAINT_POLICY_COUNT) != KERN_SUCCESS;
    g_policy_period = period;
  }
  if (g_policy_refused) atomic_fetch_add(&slot->source_failures, 1);
}

// Blocks while nothing is armed. True when it had to wait (the schedule restarts from now).
static bool wait_until_armed(void) {
  if (atomic_load_explicit(&g_armed_count, memory_order_acquire) > 0) return false;
  pthread_mutex_lock(&g_idle_lock);
  while (atomic_load_explicit(&g_armed_count, memory_order_acquire) == 0) {
    pthread_cond_wait(&g_idle_cond, &g_idle_lock);
  }
  pthread_mutex_unlock(&g_idle_lock);
  return true;
}

// Sleeps until `deadline` (Mach absolute time) in slices of at most MAX_SLEEP_NS. False when the
// period changed from `period` meanwhile (the schedule restarts).
static bool sleep_until(uint64_t deadline, zx_duration_t period) {
  const uint64_t slice = zxs_macos_ns_to_ticks(MAX_SLEEP_NS);
  for (uint64_t now = mach_absolute_time(); now < deadline; now = mach_absolute_time()) {
    mach_wait_until(deadline - now > slice ? now + slice : deadline);
    if (atomic_load_explicit(&g_period, memory_order_relaxed) != period) return false;
  }
  return true;
}

static void* sampler_main(void* arg) {
  (void)arg;
  zxs_macos_internal_thread_started();
  zxs_prim_thread_t self;
  const zx_koid_t self_koid = zxs_prim_thread_self(&self) == ZX_OK ? self.koid : 0;
  uint64_t deadline = mach_absolute_time();
  for (;;) {
    if (wait_until_armed()) deadline = mach_absolute_time();
    const zx_duration_t period = atomic_load_explicit(&g_period, memory_order_relaxed);
    const uint64_t step = zxs_macos_ns_to_ticks((uint64_t)period);
    deadline += step > 0 ? step : 1;
    const uint64_t now = mach_absolute_time();
    uint64_t missed = 0;
    if (now > deadline) {
      // Late: this round is due now; whole periods already gone are overruns.
      missed = (now - deadline) / (step > 0 ? step : 1);
      deadline += missed * step;
    } else if (!sleep_until(deadline, period)) {
      deadline = mach_absolute_time();
      continue;
    }
    for (uint32_t w = 0; w < ARMED_WORDS; w++) {
      uint64_t bits = atomic_load_explicit(&g_armed[w], memory_order_acquire);
      while (bits != 0) {
        const uint32_t bit = (uint32_t)__builtin_ctzll(bits);
        bits &= bits - 1;
        zxs_thread_slot_t* slot = zxs_core_slot(w * 64u + bit);
        if (slot != NULL) sample_slot(slot, missed, self_koid);
      }
    }
  }
  return NULL;
}

zx_status_t zxs_prim_sampling_init(void) {
  // Called under the session lock. The sampler of a parent process does not run in a fork child.
  if (g_sampler_pid == getpid()) return ZX_OK;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // no signal of the program's lands on it
  pthread_t thread;
  const int err = pthread_create(&thread, NULL, sampler_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) return ZX_ERR_NO_RESOURCES;
  g_sampler_port = pthread_mach_thread_np(thread);  // its policy is asked for by arm
  g_policy_period = 0;
  g_policy_refused = false;
  pthread_detach(thread);
  g_sampler_pid = getpid();
  return ZX_OK;
}

// Samples are written by the sampler itself, never buffered.
void zxs_prim_sampling_flush(void) {}

void zxs_prim_sampling_prepare(void) {}

void zxs_prim_sampling_started(zx_duration_t period) { (void)period; }

void zxs_prim_sampling_idle(void) {}

zx_status_t zxs_prim_source_arm(zxs_thread_slot_t* slot, zx_duration_t period) {
  if (slot == NULL || period <= 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  zxs_macos_slot_t* st = zxs_macos_slot(slot);
  if (atomic_load(&st->state) != 0) {
    zxs_prim_source_disarm(slot);  // arming again replaces the source
  }
  uint32_t count = 0;
  if (zxs_percpu_states(&count) == NULL) {  // made here, under the session lock, if not yet
    return ZX_ERR_NO_MEMORY;
  }
  // A send right of our own: while we hold it the port's name cannot be reused for another
  // thread (it turns into a dead name when the thread ends).
  const mach_port_t port = (mach_port_t)slot->thread.native;
  kern_return_t kr = mach_port_mod_refs(mach_task_self(), port, MACH_PORT_RIGHT_SEND, 1);
  if (kr != KERN_SUCCESS) {
    return zxs_macos_status(kr);
  }
  uint64_t id = 0;
  if (!zxs_macos_thread_id(port, &id) || id != slot->thread.koid) {
    mach_port_deallocate(mach_task_self(), port);
    return ZX_ERR_BAD_STATE;
  }
  st->port = port;
  st->koid = slot->thread.koid;
  st->attach_gen = atomic_load_explicit(&slot->attach_gen, memory_order_relaxed);
  const zx_duration_t effective = period < ZXS_MACOS_MIN_PERIOD ? ZXS_MACOS_MIN_PERIOD : period;
  ask_time_constraint(slot, effective);
  atomic_store(&g_period, effective);
  atomic_store(&slot->source_kind, ZXS_SOURCE_SAMPLER_THREAD);
  atomic_store(&slot->period, effective);
  atomic_store(&slot->armed, true);
  atomic_store_explicit(&st->state, ZXS_MACOS_ARMED, memory_order_release);
  atomic_fetch_or_explicit(&g_armed[slot->index / 64u], (uint64_t)1 << (slot->index % 64u),
                           memory_order_release);
  pthread_mutex_lock(&g_idle_lock);
  atomic_fetch_add_explicit(&g_armed_count, 1, memory_order_release);
  pthread_cond_signal(&g_idle_cond);
  pthread_mutex_unlock(&g_idle_lock);
  return ZX_OK;
}

void zxs_prim_source_disarm(zxs_thread_slot_t* slot) {
  if (slot == NULL) {
    return;
  }
  zxs_macos_slot_t* st = zxs_macos_slot(slot);
  const uint32_t old = atomic_fetch_and(&st->state, ~ZXS_MACOS_ARMED);
  if ((old & ZXS_MACOS_ARMED) != 0) {
    atomic_fetch_and(&g_armed[slot->index / 64u], ~((uint64_t)1 << (slot->index % 64u)));
    atomic_fetch_sub(&g_armed_count, 1);
    // A suspension of this thread in flight ends with its resume; none starts after this.
    while ((atomic_load_explicit(&st->state, memory_order_acquire) & ZXS_MACOS_BUSY) != 0) {
      zxs_prim_relax();
    }
    mach_port_deallocate(mach_task_self(), st->port);
    st->port = MACH_PORT_NULL;
  }
  atomic_store(&slot->armed, false);
}

// Arming a thread's source opens nothing that a start could reuse: nothing is kept.
void zxs_prim_source_park(zxs_thread_slot_t* slot) { zxs_prim_source_disarm(slot); }

void zxs_prim_after_fork_child(void) {
  // The child has one thread: no sampler, and nothing suspended. Its send rights were copied
  // into the child's port space by fork only on platforms that copy it (macOS does not), so
  // they are forgotten, not released.
  for (uint32_t i = 0; i < ZXS_MAX_THREADS; i++) {
    zxs_macos_slot_t* st = zxs_macos_slot(zxs_core_slot(i));
    atomic_store(&st->state, 0);
    st->port = MACH_PORT_NULL;
  }
  for (uint32_t w = 0; w < ARMED_WORDS; w++) atomic_store(&g_armed[w], 0);
  atomic_store(&g_armed_count, 0);
  pthread_mutex_init(&g_idle_lock, NULL);
  pthread_cond_init(&g_idle_cond, NULL);
  g_sampler_port = MACH_PORT_NULL;  // the child's sampler is a new thread (sampling_init)
}
