// The Mach double: the Mach, pthread, libproc and dyld calls the macOS backend uses, implemented
// on Linux so that the backend builds and runs here (test-only; never installed).
//
// Ports: a name per thread (pthread_mach_thread_np, mach_thread_self), never reused, with a
// count of send rights; a name whose thread has gone answers MACH_SEND_INVALID_DEST, as a dead
// name does.
// thread_suspend: a signal (SUSPEND_SIGNAL) to the thread, whose handler saves the interrupted
// registers from its ucontext and parks the thread on a futex until thread_resume; the caller
// returns once the thread is parked. Unlike Mach, a thread that keeps the signal blocked cannot
// be suspended (the call gives up after SUSPEND_PATIENCE_MS with KERN_OPERATION_TIMED_OUT), and
// an interrupted sleep (nanosleep) returns early with EINTR.
// thread_info: CPU time from the thread's CPU clock; run state from /proc/self/task/TID/stat.
// Mach absolute time: CLOCK_MONOTONIC in units of 125/3 ns (Apple silicon's 24 MHz timebase), so
// that the backend's conversions are exercised.
// Stricter where macOS is: the time-constraint policy follows XNU's limits (thread_policy_set),
// and sem_init fails with ENOSYS.
// dyld: the images dl_iterate_phdr lists (the vDSO left out, as macOS has none), each described
// by a synthesized Mach-O header: one LC_SEGMENT_64 per PT_LOAD and an LC_UUID made of the first
// 16 bytes of the ELF build ID. The files stay ELF, so this repository's symbolizer names them.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mach_double.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libproc.h>
#include <link.h>
#include <linux/futex.h>
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <mach/mach.h>
#include <mach/mach_time.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define SUSPEND_SIGNAL (SIGRTMAX - 3)
#define SUSPEND_PATIENCE_MS 500
#define MAX_PORTS 65536u
#define FIRST_PORT 0x203u
#define TID_INDEX_SIZE (1u << 22)  // pid_max's highest default
// Mach absolute time: ns * 3 / 125 (Apple silicon's 24 MHz timebase).
#define TIMEBASE_NUMER 125u
#define TIMEBASE_DENOM 3u

mach_port_t mach_task_self_ = 0x103u;

// --- Ports ------------------------------------------------------------------------------------

enum { PARK_IDLE, PARK_REQUESTED, PARK_SAVING, PARK_PARKED };

typedef struct saved_regs {
  uint64_t gregs[31];  // x86_64: the ucontext's gregs (REG_*); arm64: x0..x30
  uint64_t sp, pc, flags;
} saved_regs_t;

typedef struct port {
  _Atomic pid_t tid;  // 0: unused
  pthread_t thread;
  _Atomic int32_t send_refs;
  _Atomic uint32_t suspend_count;  // futex word: the parked thread waits for it to reach 0
  _Atomic uint32_t park;           // futex word: PARK_*
  saved_regs_t regs;
  uint64_t parked_at;  // CLOCK_MONOTONIC ns when thread_suspend returned
} port_t;

static port_t g_ports[MAX_PORTS];
static _Atomic uint32_t g_port_count;
static _Atomic uint32_t g_by_tid[TID_INDEX_SIZE];  // tid -> index + 1 of its latest port
static pthread_mutex_t g_ports_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t g_suspended_now;
static _Atomic uint64_t g_suspends;
static _Atomic uint64_t g_suspended_ns;  // summed from each park to its resume
static _Atomic(void (*)(mach_port_t, void*)) g_suspend_hook;
static void* _Atomic g_suspend_hook_ctx;

static pid_t current_tid(void) { return (pid_t)syscall(SYS_gettid); }

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long futex(_Atomic uint32_t* word, int op, uint32_t value, const struct timespec* timeout) {
  return syscall(SYS_futex, (uint32_t*)word, op, value, timeout, NULL, 0);
}

// The tid of a live pthread, 0 once it has exited: the kernel's per-thread CPU clock id,
// (~tid << 3) | 6, decoded (the same ABI clock_gettime takes).
static pid_t tid_of(pthread_t thread) {
  if (pthread_equal(thread, pthread_self())) return current_tid();
  clockid_t clock;
  if (pthread_getcpuclockid(thread, &clock) != 0 || (clock & 7) != 6) return 0;
  const pid_t tid = (pid_t) ~(uint32_t)((uint32_t)clock >> 3 | 0xe0000000u);
  return tid > 0 ? tid : 0;
}

static clockid_t cpuclock_of(pid_t tid) { return (clockid_t)((~(uint32_t)tid << 3) | 6u); }

static bool tid_alive(pid_t tid) { return syscall(SYS_tgkill, getpid(), tid, 0) == 0; }

static port_t* port_of(mach_port_t name) {
  const uint32_t index = name - FIRST_PORT;
  if (name < FIRST_PORT || index >= atomic_load(&g_port_count)) return NULL;
  return &g_ports[index];
}

static mach_port_t name_of(const port_t* p) { return FIRST_PORT + (uint32_t)(p - g_ports); }

// [signal-safe] The calling thread's port, or NULL.
static port_t* port_of_tid(pid_t tid) {
  if (tid <= 0 || (uint32_t)tid >= TID_INDEX_SIZE) return NULL;
  const uint32_t index = atomic_load(&g_by_tid[tid]);
  return index == 0 ? NULL : &g_ports[index - 1];
}

// The port naming `thread` (tid `tid`), made on first use.
static mach_port_t port_for(pthread_t thread, pid_t tid) {
  if (tid <= 0 || (uint32_t)tid >= TID_INDEX_SIZE) return MACH_PORT_NULL;
  pthread_mutex_lock(&g_ports_lock);
  port_t* p = port_of_tid(tid);
  if (p == NULL || !pthread_equal(p->thread, thread) || atomic_load(&p->tid) != tid) {
    const uint32_t index = atomic_load(&g_port_count);
    if (index == MAX_PORTS) {
      pthread_mutex_unlock(&g_ports_lock);
      return MACH_PORT_NULL;
    }
    p = &g_ports[index];
    p->thread = thread;
    atomic_store(&p->send_refs, 1);  // libpthread's own right
    atomic_store(&p->tid, tid);
    atomic_store(&g_port_count, index + 1);
    atomic_store(&g_by_tid[tid], index + 1);
  }
  pthread_mutex_unlock(&g_ports_lock);
  return name_of(p);
}

// The port's thread, if it still lives; else the port is a dead name.
static port_t* live_port(mach_port_t name) {
  port_t* p = port_of(name);
  return p != NULL && tid_alive(atomic_load(&p->tid)) ? p : NULL;
}

mach_port_t pthread_mach_thread_np(pthread_t thread) { return port_for(thread, tid_of(thread)); }

mach_port_t mach_thread_self(void) {
  const mach_port_t name = port_for(pthread_self(), current_tid());
  port_t* p = port_of(name);
  if (p != NULL) atomic_fetch_add(&p->send_refs, 1);
  return name;
}

kern_return_t mach_port_mod_refs(ipc_space_t task, mach_port_name_t name, mach_port_right_t right,
                                 mach_port_delta_t delta) {
  port_t* p = port_of(name);
  if (task != mach_task_self_) return KERN_INVALID_TASK;
  if (p == NULL) return KERN_INVALID_NAME;
  if (right != MACH_PORT_RIGHT_SEND) return KERN_INVALID_RIGHT;
  if (delta > 0 && !tid_alive(atomic_load(&p->tid))) return KERN_INVALID_RIGHT;  // a dead name
  if (atomic_fetch_add(&p->send_refs, delta) + delta < 0) {
    atomic_fetch_sub(&p->send_refs, delta);
    return KERN_INVALID_VALUE;
  }
  return KERN_SUCCESS;
}

kern_return_t mach_port_deallocate(ipc_space_t task, mach_port_name_t name) {
  return mach_port_mod_refs(task, name, MACH_PORT_RIGHT_SEND, -1);
}

int32_t mach_double_send_refs(mach_port_t name) {
  port_t* p = port_of(name);
  return p == NULL ? -1 : atomic_load(&p->send_refs);
}

// --- Suspend and resume -------------------------------------------------------------------------

static void save_regs(port_t* p, const ucontext_t* uc) {
#if defined(__x86_64__)
  for (int i = 0; i < NGREG && i < 31; i++) p->regs.gregs[i] = (uint64_t)uc->uc_mcontext.gregs[i];
  p->regs.sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
  p->regs.pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
  p->regs.flags = (uint64_t)uc->uc_mcontext.gregs[REG_EFL];
#elif defined(__aarch64__)
  for (int i = 0; i < 31; i++) p->regs.gregs[i] = uc->uc_mcontext.regs[i];
  p->regs.sp = uc->uc_mcontext.sp;
  p->regs.pc = uc->uc_mcontext.pc;
  p->regs.flags = uc->uc_mcontext.pstate;
#else
#error "the Mach double knows x86_64 and arm64 registers only"
#endif
}

// Runs in the thread being suspended: saves its registers, then waits until it is resumed.
static void on_suspend_signal(int sig, siginfo_t* info, void* context) {
  (void)sig;
  const int saved_errno = errno;
  port_t* p = port_of_tid(current_tid());
  uint32_t expected = PARK_REQUESTED;
  if (info->si_code == SI_TKILL && info->si_pid == getpid() && p != NULL &&
      atomic_compare_exchange_strong(&p->park, &expected, PARK_SAVING)) {
    save_regs(p, context);
    atomic_store(&p->park, PARK_PARKED);
    futex(&p->park, FUTEX_WAKE_PRIVATE, 1, NULL);
    for (uint32_t count; (count = atomic_load(&p->suspend_count)) > 0;) {
      futex(&p->suspend_count, FUTEX_WAIT_PRIVATE, count, NULL);
    }
    atomic_store(&p->park, PARK_IDLE);
    futex(&p->park, FUTEX_WAKE_PRIVATE, 1, NULL);
  }
  errno = saved_errno;
}

__attribute__((constructor)) static void install_suspend_handler(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_suspend_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask);  // nothing else runs on a parked thread
  if (sigaction(SUSPEND_SIGNAL, &sa, NULL) != 0) abort();
}

kern_return_t thread_suspend(thread_read_t target) {
  port_t* p = live_port(target);
  if (p == NULL) return MACH_SEND_INVALID_DEST;
  const pid_t tid = atomic_load(&p->tid);
  if (tid == current_tid()) return KERN_NOT_SUPPORTED;  // the double cannot park its caller
  if (atomic_fetch_add(&p->suspend_count, 1) > 0) return KERN_SUCCESS;
  // The last park has ended (its handler has left) before a new one is asked for.
  for (uint32_t park; (park = atomic_load(&p->park)) != PARK_IDLE;) {
    futex(&p->park, FUTEX_WAIT_PRIVATE, park, &(struct timespec){0, 1000000});
  }
  atomic_store(&p->park, PARK_REQUESTED);
  kern_return_t kr = KERN_SUCCESS;
  if (syscall(SYS_tgkill, getpid(), tid, SUSPEND_SIGNAL) != 0) {
    kr = MACH_SEND_INVALID_DEST;
  } else {
    for (int waited_ms = 0; atomic_load(&p->park) != PARK_PARKED; waited_ms++) {
      if (!tid_alive(tid)) {
        kr = MACH_SEND_INVALID_DEST;
        break;
      }
      if (waited_ms == SUSPEND_PATIENCE_MS) {
        kr = KERN_OPERATION_TIMED_OUT;
        break;
      }
      const uint32_t park = atomic_load(&p->park);
      if (park != PARK_PARKED) {
        futex(&p->park, FUTEX_WAIT_PRIVATE, park, &(struct timespec){0, 1000000});
      }
    }
  }
  if (kr != KERN_SUCCESS) {
    // Withdraw the request; if the thread parked meanwhile, it is suspended after all.
    uint32_t expected = PARK_REQUESTED;
    if (atomic_compare_exchange_strong(&p->park, &expected, PARK_IDLE)) {
      atomic_fetch_sub(&p->suspend_count, 1);
      return kr;
    }
    while (atomic_load(&p->park) != PARK_PARKED) sched_yield();
  }
  atomic_fetch_add(&g_suspended_now, 1);
  atomic_fetch_add(&g_suspends, 1);
  p->parked_at = monotonic_ns();
  void (*hook)(mach_port_t, void*) = atomic_load(&g_suspend_hook);
  if (hook != NULL) hook(target, atomic_load(&g_suspend_hook_ctx));
  return KERN_SUCCESS;
}

kern_return_t thread_resume(thread_read_t target) {
  port_t* p = port_of(target);
  if (p == NULL) return MACH_SEND_INVALID_DEST;
  uint32_t count = atomic_load(&p->suspend_count);
  do {
    if (count == 0) return KERN_FAILURE;  // not suspended
  } while (!atomic_compare_exchange_weak(&p->suspend_count, &count, count - 1));
  if (count == 1) {
    atomic_fetch_add(&g_suspended_ns, monotonic_ns() - p->parked_at);
    futex(&p->suspend_count, FUTEX_WAKE_PRIVATE, 1, NULL);
    // Until the thread has left its handler: a suspend right after must not find it still
    // parked (it would wait there for a count that rose again).
    for (uint32_t park; (park = atomic_load(&p->park)) != PARK_IDLE;) {
      futex(&p->park, FUTEX_WAIT_PRIVATE, park, &(struct timespec){0, 1000000});
    }
    atomic_fetch_sub(&g_suspended_now, 1);
  }
  return KERN_SUCCESS;
}

kern_return_t thread_get_state(thread_read_t target, thread_state_flavor_t flavor,
                               thread_state_t state, mach_msg_type_number_t* count) {
  port_t* p = port_of(target);
  if (p == NULL) return MACH_SEND_INVALID_DEST;
  // The double knows the registers of a parked thread only.
  if (atomic_load(&p->suspend_count) == 0 || atomic_load(&p->park) != PARK_PARKED) {
    return KERN_FAILURE;
  }
#if defined(__x86_64__)
  if (flavor != x86_THREAD_STATE64) return KERN_INVALID_ARGUMENT;
  if (*count < x86_THREAD_STATE64_COUNT) return KERN_INVALID_ARGUMENT;
  x86_thread_state64_t s;
  memset(&s, 0, sizeof(s));
  const uint64_t* g = p->regs.gregs;
  s.__rax = g[REG_RAX], s.__rbx = g[REG_RBX], s.__rcx = g[REG_RCX], s.__rdx = g[REG_RDX];
  s.__rdi = g[REG_RDI], s.__rsi = g[REG_RSI], s.__rbp = g[REG_RBP], s.__rsp = p->regs.sp;
  s.__r8 = g[REG_R8], s.__r9 = g[REG_R9], s.__r10 = g[REG_R10], s.__r11 = g[REG_R11];
  s.__r12 = g[REG_R12], s.__r13 = g[REG_R13], s.__r14 = g[REG_R14], s.__r15 = g[REG_R15];
  s.__rip = p->regs.pc, s.__rflags = p->regs.flags;
  memcpy(state, &s, sizeof(s));
  *count = x86_THREAD_STATE64_COUNT;
#elif defined(__aarch64__)
  if (flavor != ARM_THREAD_STATE64) return KERN_INVALID_ARGUMENT;
  if (*count < ARM_THREAD_STATE64_COUNT) return KERN_INVALID_ARGUMENT;
  arm_thread_state64_t s;
  memset(&s, 0, sizeof(s));
  for (int i = 0; i < 29; i++) s.__x[i] = p->regs.gregs[i];
  s.__fp = p->regs.gregs[29], s.__lr = p->regs.gregs[30];
  s.__sp = p->regs.sp, s.__pc = p->regs.pc, s.__cpsr = (uint32_t)p->regs.flags;
  memcpy(state, &s, sizeof(s));
  *count = ARM_THREAD_STATE64_COUNT;
#endif
  return KERN_SUCCESS;
}

uint32_t mach_double_suspended_now(void) { return atomic_load(&g_suspended_now); }
uint64_t mach_double_suspends(void) { return atomic_load(&g_suspends); }
uint64_t mach_double_suspended_ns(void) { return atomic_load(&g_suspended_ns); }

void mach_double_set_suspend_hook(void (*hook)(mach_port_t name, void* ctx), void* ctx) {
  atomic_store(&g_suspend_hook_ctx, ctx);
  atomic_store(&g_suspend_hook, hook);
}

// --- Thread information and policy
// ----------------------------------------------------------------

// The state letter of /proc/self/task/TID/stat; 0 when unreadable.
static char task_state(pid_t tid) {
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* paren = strrchr(buf, ')');
  return paren != NULL && paren[1] == ' ' ? paren[2] : 0;
}

static integer_t run_state_of(char state) {
  switch (state) {
    case 'R':
      return TH_STATE_RUNNING;
    case 'D':
      return TH_STATE_UNINTERRUPTIBLE;
    case 'T':
    case 't':
      return TH_STATE_STOPPED;
    case 'Z':
    case 'X':
      return TH_STATE_HALTED;
    default:
      return TH_STATE_WAITING;
  }
}

kern_return_t thread_info(thread_inspect_t target, thread_flavor_t flavor, thread_info_t out,
                          mach_msg_type_number_t* count) {
  port_t* p = live_port(target);
  if (p == NULL) return MACH_SEND_INVALID_DEST;
  const pid_t tid = atomic_load(&p->tid);
  if (flavor == THREAD_BASIC_INFO) {
    if (*count < THREAD_BASIC_INFO_COUNT) return KERN_INVALID_ARGUMENT;
    struct timespec cpu;
    if (clock_gettime(cpuclock_of(tid), &cpu) != 0) return MACH_SEND_INVALID_DEST;
    thread_basic_info_data_t info;
    memset(&info, 0, sizeof(info));
    info.user_time.seconds = (integer_t)cpu.tv_sec;
    info.user_time.microseconds = (integer_t)(cpu.tv_nsec / 1000);
    info.policy = 1;  // POLICY_TIMESHARE
    info.run_state = run_state_of(task_state(tid));
    info.suspend_count = (integer_t)atomic_load(&p->suspend_count);
    memcpy(out, &info, sizeof(info));
    *count = THREAD_BASIC_INFO_COUNT;
    return KERN_SUCCESS;
  }
  if (flavor == THREAD_IDENTIFIER_INFO) {
    if (*count < THREAD_IDENTIFIER_INFO_COUNT) return KERN_INVALID_ARGUMENT;
    thread_identifier_info_data_t info = {.thread_id = (uint64_t)tid,
                                          .thread_handle = (uint64_t)p->thread};
    memcpy(out, &info, sizeof(info));
    *count = THREAD_IDENTIFIER_INFO_COUNT;
    return KERN_SUCCESS;
  }
  return KERN_INVALID_ARGUMENT;
}

static pthread_mutex_t g_policy_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_have_policy;
static thread_time_constraint_policy_data_t g_policy;
static kern_return_t g_policy_refusal;  // KERN_SUCCESS: XNU's rules decide

// XNU's min_rt_quantum and max_rt_quantum (50 us, 50 ms) in the double's Mach time units.
#define MIN_RT_QUANTUM (50000u * TIMEBASE_DENOM / TIMEBASE_NUMER)
#define MAX_RT_QUANTUM (50000000u * TIMEBASE_DENOM / TIMEBASE_NUMER)

// As XNU's thread_policy_set_internal (osfmk/kern/thread_policy.c) for the time-constraint
// policy: a computation outside [min_rt_quantum, max_rt_quantum] or above the constraint is
// refused; one below half the constraint is raised to that half (at most max_rt_quantum). The
// period is not checked. What it stores is what mach_double_time_constraint answers.
kern_return_t thread_policy_set(thread_act_t thread, thread_policy_flavor_t flavor,
                                thread_policy_t policy, mach_msg_type_number_t count) {
  if (live_port(thread) == NULL) return MACH_SEND_INVALID_DEST;
  if (flavor != THREAD_TIME_CONSTRAINT_POLICY) return KERN_INVALID_POLICY;
  thread_time_constraint_policy_data_t p;
  if (count < THREAD_TIME_CONSTRAINT_POLICY_COUNT) return KERN_INVALID_ARGUMENT;
  memcpy(&p, policy, sizeof(p));
  if (p.constraint < p.computation || p.computation > MAX_RT_QUANTUM ||
      p.computation < MIN_RT_QUANTUM) {
    return KERN_INVALID_ARGUMENT;
  }
  if (p.computation < p.constraint / 2) {
    p.computation = p.constraint / 2 > MAX_RT_QUANTUM ? MAX_RT_QUANTUM : p.constraint / 2;
  }
  pthread_mutex_lock(&g_policy_lock);
  const kern_return_t refusal = g_policy_refusal;
  if (refusal == KERN_SUCCESS) {
    g_policy = p;
    g_have_policy = true;
  }
  pthread_mutex_unlock(&g_policy_lock);
  return refusal;
}

void mach_double_refuse_time_constraint(kern_return_t kr) {
  pthread_mutex_lock(&g_policy_lock);
  g_policy_refusal = kr;
  pthread_mutex_unlock(&g_policy_lock);
}

bool mach_double_time_constraint(thread_time_constraint_policy_data_t* out) {
  pthread_mutex_lock(&g_policy_lock);
  const bool have = g_have_policy;
  *out = g_policy;
  pthread_mutex_unlock(&g_policy_lock);
  return have;
}

// --- Semaphores ---------------------------------------------------------------------------------

// macOS has no unnamed semaphores: its sem_init is deprecated and always fails with ENOSYS. The
// double does the same for the whole process (it is exported from the library), so code that
// relies on one fails here as it would on a Mac.
int sem_init(sem_t* sem, int pshared, unsigned int value) {
  (void)sem;
  (void)pshared;
  (void)value;
  errno = ENOSYS;
  return -1;
}

// --- Time ---------------------------------------------------------------------------------------

kern_return_t mach_timebase_info(mach_timebase_info_t info) {
  info->numer = TIMEBASE_NUMER;
  info->denom = TIMEBASE_DENOM;
  return KERN_SUCCESS;
}

uint64_t mach_absolute_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  return ns / TIMEBASE_NUMER * TIMEBASE_DENOM +
         ns % TIMEBASE_NUMER * TIMEBASE_DENOM / TIMEBASE_NUMER;
}

kern_return_t mach_wait_until(uint64_t deadline) {
  const uint64_t ns = deadline / TIMEBASE_DENOM * TIMEBASE_NUMER +
                      deadline % TIMEBASE_DENOM * TIMEBASE_NUMER / TIMEBASE_DENOM;
  const struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                              .tv_nsec = (long)(ns % 1000000000u)};
  int err;
  while ((err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR) {
  }
  return err == 0 ? KERN_SUCCESS : KERN_FAILURE;
}

// --- pthread extensions -------------------------------------------------------------------------

static bool stack_of(pthread_t thread, uintptr_t* lo, size_t* size) {
  pthread_attr_t attr;
  if (pthread_getattr_np(thread, &attr) != 0) return false;
  void* addr = NULL;
  const bool ok = pthread_attr_getstack(&attr, &addr, size) == 0;
  pthread_attr_destroy(&attr);
  *lo = (uintptr_t)addr;
  return ok;
}

void* pthread_get_stackaddr_np(pthread_t thread) {
  uintptr_t lo;
  size_t size;
  return stack_of(thread, &lo, &size) ? (void*)(lo + size) : NULL;
}

size_t pthread_get_stacksize_np(pthread_t thread) {
  uintptr_t lo;
  size_t size;
  return stack_of(thread, &lo, &size) ? size : 0;
}

int pthread_threadid_np(pthread_t thread, uint64_t* thread_id) {
  const pid_t tid = tid_of(thread == 0 ? pthread_self() : thread);
  if (tid <= 0) return ESRCH;
  *thread_id = (uint64_t)tid;
  return 0;
}

// --- libproc ------------------------------------------------------------------------------------

// Reads a /proc comm file into buf without its newline; false when it cannot.
static bool read_comm(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n < 0) return false;
  while (n > 0 && buf[n - 1] == '\n') n--;
  buf[n] = '\0';
  return true;
}

int proc_pidinfo(int pid, int flavor, uint64_t arg, void* buffer, int buffersize) {
  if (pid != getpid() || flavor != PROC_PIDTHREADID64INFO ||
      buffersize < (int)sizeof(struct proc_threadinfo)) {
    errno = EINVAL;
    return 0;
  }
  struct proc_threadinfo info;
  memset(&info, 0, sizeof(info));
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%llu/comm", (unsigned long long)arg);
  struct timespec cpu;
  if (!read_comm(path, info.pth_name, sizeof(info.pth_name)) ||
      clock_gettime(cpuclock_of((pid_t)arg), &cpu) != 0) {
    errno = ESRCH;
    return 0;
  }
  info.pth_user_time = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
  info.pth_run_state = run_state_of(task_state((pid_t)arg));
  memcpy(buffer, &info, sizeof(info));
  return (int)sizeof(info);
}

int proc_name(int pid, void* buffer, uint32_t buffersize) {
  if (pid != getpid() || buffersize == 0) {
    errno = EINVAL;
    return 0;
  }
  return read_comm("/proc/self/comm", buffer, buffersize) ? (int)strlen(buffer) : 0;
}

// --- dyld ---------------------------------------------------------------------------------------

#if defined(__x86_64__)
#define DOUBLE_CPU_TYPE 0x01000007  // CPU_TYPE_X86_64
#else
#define DOUBLE_CPU_TYPE 0x0100000c  // CPU_TYPE_ARM64
#endif

typedef struct image {
  uintptr_t load_bias;
  char* name;
  struct mach_header_64* header;  // synthesized; never freed (callers may hold it)
} image_t;

static pthread_mutex_t g_images_lock = PTHREAD_MUTEX_INITIALIZER;
static image_t* g_known;  // every image ever seen (the headers stay valid)
static size_t g_known_count, g_known_capacity;
static uint32_t* g_listed;  // indexes into g_known of the images loaded now
static uint32_t g_listed_count, g_listed_capacity;

// The first 16 bytes of the image's GNU build ID note; false when it has none.
static bool elf_uuid(const struct dl_phdr_info* info, uint8_t uuid[16]) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const uint8_t* p = (const uint8_t*)(info->dlpi_addr + ph->p_vaddr);
    const uint8_t* end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr)* n = (const ElfW(Nhdr)*)(const void*)p;
      const size_t name_size = (n->n_namesz + 3u) & ~3u, desc_size = (n->n_descsz + 3u) & ~3u;
      const uint8_t* desc = p + sizeof(*n) + name_size;
      if (desc + desc_size > end) break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
          memcmp(p + sizeof(*n), "GNU", 4) == 0) {
        memset(uuid, 0, 16);
        memcpy(uuid, desc, n->n_descsz < 16 ? n->n_descsz : 16);
        return true;
      }
      p = desc + desc_size;
    }
  }
  return false;
}

static struct mach_header_64* synthesize_header(const struct dl_phdr_info* info, bool is_main) {
  size_t loads = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) loads += info->dlpi_phdr[i].p_type == PT_LOAD;
  uint8_t uuid[16];
  const bool has_uuid = elf_uuid(info, uuid);
  const size_t cmds_size =
      loads * sizeof(struct segment_command_64) + (has_uuid ? sizeof(struct uuid_command) : 0);
  struct mach_header_64* h = calloc(1, sizeof(*h) + cmds_size);
  if (h == NULL) return NULL;
  h->magic = MH_MAGIC_64;
  h->cputype = DOUBLE_CPU_TYPE;
  h->filetype = is_main ? MH_EXECUTE : MH_DYLIB;
  h->sizeofcmds = (uint32_t)cmds_size;
  uint8_t* cursor = (uint8_t*)(h + 1);
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    struct segment_command_64 seg;
    memset(&seg, 0, sizeof(seg));
    seg.cmd = LC_SEGMENT_64;
    seg.cmdsize = sizeof(seg);
    snprintf(seg.segname, sizeof(seg.segname), "%s",
             (ph->p_flags & PF_X)   ? "__TEXT"
             : (ph->p_flags & PF_W) ? "__DATA"
                                    : "__DATA_CONST");
    seg.vmaddr = ph->p_vaddr;
    seg.vmsize = ph->p_memsz;
    seg.fileoff = ph->p_offset;
    seg.filesize = ph->p_filesz;
    seg.initprot = ((ph->p_flags & PF_R) ? VM_PROT_READ : 0) |
                   ((ph->p_flags & PF_W) ? VM_PROT_WRITE : 0) |
                   ((ph->p_flags & PF_X) ? VM_PROT_EXECUTE : 0);
    seg.maxprot = seg.initprot;
    memcpy(cursor, &seg, sizeof(seg));
    cursor += sizeof(seg);
    h->ncmds++;
  }
  if (has_uuid) {
    struct uuid_command cmd = {.cmd = LC_UUID, .cmdsize = sizeof(cmd)};
    memcpy(cmd.uuid, uuid, sizeof(uuid));
    memcpy(cursor, &cmd, sizeof(cmd));
    h->ncmds++;
  }
  return h;
}

static char* main_executable_path(void) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n < 0) return strdup("");
  buf[n] = '\0';
  return strdup(buf);
}

// The kernel's vDSO: a PT_LOAD at file offset 0 maps its ELF header at AT_SYSINFO_EHDR.
static bool is_vdso(const struct dl_phdr_info* info) {
  const uintptr_t ehdr = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  for (int i = 0; ehdr != 0 && i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && ph->p_offset == 0 && info->dlpi_addr + ph->p_vaddr == ehdr) {
      return true;
    }
  }
  return false;
}

static int list_one(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  bool* first = arg;
  const bool is_main = *first;
  *first = false;
  if (is_vdso(info)) return 0;  // macOS has none
  const char* name = info->dlpi_name != NULL ? info->dlpi_name : "";
  if (!is_main && name[0] == '\0') return 0;
  size_t found = g_known_count;
  for (size_t i = 0; i < g_known_count; i++) {
    const bool known_main = g_known[i].header->filetype == MH_EXECUTE;
    if (g_known[i].load_bias == info->dlpi_addr && known_main == is_main &&
        (is_main || strcmp(g_known[i].name, name) == 0)) {
      found = i;
      break;
    }
  }
  if (found == g_known_count) {
    if (g_known_count == g_known_capacity) {
      const size_t capacity = g_known_capacity == 0 ? 64 : 2 * g_known_capacity;
      image_t* grown = realloc(g_known, capacity * sizeof(*grown));
      if (grown == NULL) return 1;
      g_known = grown;
      g_known_capacity = capacity;
    }
    image_t image = {.load_bias = info->dlpi_addr,
                     .name = is_main ? main_executable_path() : strdup(name),
                     .header = synthesize_header(info, is_main)};
    if (image.name == NULL || image.header == NULL) {
      free(image.name);
      free(image.header);
      return 1;
    }
    g_known[g_known_count++] = image;
  }
  if (g_listed_count == g_listed_capacity) {
    const uint32_t capacity = g_listed_capacity == 0 ? 64 : 2 * g_listed_capacity;
    uint32_t* grown = realloc(g_listed, capacity * sizeof(*grown));
    if (grown == NULL) return 1;
    g_listed = grown;
    g_listed_capacity = capacity;
  }
  g_listed[g_listed_count++] = (uint32_t)found;
  return 0;
}

// As dyld's, the count is of the images loaded now; the index calls answer for that list.
uint32_t _dyld_image_count(void) {
  pthread_mutex_lock(&g_images_lock);
  g_listed_count = 0;
  bool first = true;
  dl_iterate_phdr(list_one, &first);
  const uint32_t count = g_listed_count;
  pthread_mutex_unlock(&g_images_lock);
  return count;
}

static const image_t* listed(uint32_t index) {
  pthread_mutex_lock(&g_images_lock);
  const image_t* image = index < g_listed_count ? &g_known[g_listed[index]] : NULL;
  pthread_mutex_unlock(&g_images_lock);
  return image;
}

const struct mach_header* _dyld_get_image_header(uint32_t index) {
  const image_t* image = listed(index);
  return image != NULL ? (const struct mach_header*)(const void*)image->header : NULL;
}

intptr_t _dyld_get_image_vmaddr_slide(uint32_t index) {
  const image_t* image = listed(index);
  return image != NULL ? (intptr_t)image->load_bias : 0;
}

const char* _dyld_get_image_name(uint32_t index) {
  const image_t* image = listed(index);
  return image != NULL ? image->name : NULL;
}

int _NSGetExecutablePath(char* buf, uint32_t* bufsize) {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n < 0) return -1;
  path[n] = '\0';
  if ((uint32_t)n + 1 > *bufsize) {
    *bufsize = (uint32_t)n + 1;
    return -1;
  }
  memcpy(buf, path, (size_t)n + 1);
  return 0;
}
