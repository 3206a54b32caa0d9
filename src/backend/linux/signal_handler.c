// Linux: the sampling signal. Picks a signal the program does not use, installs the handler
// when a signal source first needs it, and in the handler turns the interrupted context into a
// zxs_core_sample() call.
//
// On the handler's path: no allocation, no locks, no stdio, no lazily allocated TLS; errno is
// saved and restored. Only signals our sources raise are acted on: perf events arrive with
// si_code POLL_IN/POLL_HUP and an si_fd we routed, timers with SI_TIMER and a payload we
// encoded. kill(), sigqueue(), tgkill() and friends (SI_USER, SI_QUEUE, SI_TKILL) are ignored.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "linux_internal.h"
#include "platform.h"
#include "sampling.h"

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "libzxsampler's Linux backend reads registers on x86-64 and aarch64 only"
#endif

// The handler is installed only when a signal source first arms (perf-ring, the default, sends
// no signal): a program sampled through perf-ring sees no disposition it did not set.
static _Atomic int g_signal;     // 0 until chosen
static atomic_bool g_installed;  // our handler is on g_signal
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;

int zxs_linux_signal(void) { return atomic_load_explicit(&g_signal, memory_order_acquire); }

void zxs_linux_take_sample(zxs_thread_slot_t* slot, uint32_t attach_gen, const void* ucontext) {
  const ucontext_t* uc = ucontext;
  zxs_regs_t regs;
#if defined(__x86_64__)
  regs.pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  regs.fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
  regs.sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  regs.pc = (uintptr_t)uc->uc_mcontext.pc;
  regs.fp = (uintptr_t)uc->uc_mcontext.regs[29];
  regs.sp = (uintptr_t)uc->uc_mcontext.sp;
#else
#error "libzxsampler: no register extraction for this architecture (add it here)"
#endif
  zxs_core_sample(slot, attach_gen, &regs);
}

static void on_signal(int sig, siginfo_t* info, void* ucontext) {
  (void)sig;
  const int saved_errno = errno;
  switch (info->si_code) {
    case POLL_IN:
    case POLL_HUP:
      zxs_linux_perf_on_signal(info->si_fd, ucontext);
      break;
    case SI_TIMER:
      zxs_linux_cputimer_on_signal(info->si_value, info->si_overrun, ucontext);
      break;
    default:
      break;  // not raised by one of our sources
  }
  errno = saved_errno;
}

static bool is_ours(const struct sigaction* sa) {
  return (sa->sa_flags & SA_SIGINFO) != 0 && sa->sa_sigaction == on_signal;
}

// SIG_DFL is the null handler in both members of the union.
static bool is_default(const struct sigaction* sa) {
  return (sa->sa_flags & SA_SIGINFO) != 0 ? sa->sa_sigaction == NULL : sa->sa_handler == SIG_DFL;
}

// ZX_OK when `sig` is ours or free (nobody has a handler on it, nor ignores it);
// ZX_ERR_ALREADY_BOUND when the program owns it.
static zx_status_t free_or_ours(int sig) {
  struct sigaction current;
  if (sigaction(sig, NULL, &current) != 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  return is_ours(&current) || is_default(&current) ? ZX_OK : ZX_ERR_ALREADY_BOUND;
}

// Installs our handler on `sig` if nobody else has one (or ignores it). ZX_ERR_ALREADY_BOUND
// when the program owns the signal; we never replace its handler.
static zx_status_t install(int sig) {
  struct sigaction current;
  if (sigaction(sig, NULL, &current) != 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (is_ours(&current)) {
    return ZX_OK;
  }
  if (!is_default(&current)) {
    return ZX_ERR_ALREADY_BOUND;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_signal;
  // SA_RESTART: a sample must not turn into EINTR for the program; SA_ONSTACK: run on the
  // thread's alternate stack when it has one (a thread near its stack limit stays safe).
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  struct sigaction previous;
  if (sigaction(sig, &sa, &previous) != 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (!is_default(&previous) && !is_ours(&previous)) {
    // The program installed a handler between our look and our install: give it back.
    sigaction(sig, &previous, NULL);
    return ZX_ERR_ALREADY_BOUND;
  }
  return ZX_OK;
}

// Signals that may carry samples besides the real-time ones: those a program can spare and
// whose default action is harmless to redirect. Fault signals, SIGIO (the kernel's fallback
// when a real-time signal cannot be queued) and job-control signals are refused.
static const struct {
  const char* name;
  int sig;
} kNamedSignals[] = {
    {"USR1", SIGUSR1},
    {"USR2", SIGUSR2},
    {"PROF", SIGPROF},
    {"VTALRM", SIGVTALRM},
};

static bool usable(int sig) {
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
    return true;
  }
  for (size_t i = 0; i < sizeof(kNamedSignals) / sizeof(kNamedSignals[0]); i++) {
    if (kNamedSignals[i].sig == sig) {
      return true;
    }
  }
  return false;
}

// Parses "[+-]N" after a base name; "" means 0.
static bool parse_offset(const char* text, long* offset) {
  if (*text == '\0') {
    *offset = 0;
    return true;
  }
  if (*text != '+' && *text != '-') {
    return false;
  }
  char* end = NULL;
  errno = 0;
  long value = strtol(text + 1, &end, 10);
  if (end == text + 1 || *end != '\0' || errno != 0 || value < 0 || value > 64) {
    return false;
  }
  *offset = *text == '-' ? -value : value;
  return true;
}

bool zxs_linux_parse_signal(const char* text, int* sig) {
  if (text == NULL || *text == '\0') {
    return false;
  }
  long value;
  if (*text >= '0' && *text <= '9') {
    char* end = NULL;
    errno = 0;
    value = strtol(text, &end, 10);
    if (*end != '\0' || errno != 0 || value <= 0 || value > SIGRTMAX) {
      return false;
    }
  } else {
    const char* name = strncmp(text, "SIG", 3) == 0 ? text + 3 : text;
    long offset = 0;
    if (strncmp(name, "RTMIN", 5) == 0 && parse_offset(name + 5, &offset) && offset >= 0) {
      value = SIGRTMIN + offset;
    } else if (strncmp(name, "RTMAX", 5) == 0 && parse_offset(name + 5, &offset) && offset <= 0) {
      value = SIGRTMAX + offset;
    } else {
      value = 0;
      for (size_t i = 0; i < sizeof(kNamedSignals) / sizeof(kNamedSignals[0]); i++) {
        if (strcmp(name, kNamedSignals[i].name) == 0) {
          value = kNamedSignals[i].sig;
        }
      }
    }
  }
  if (!usable((int)value)) {
    return false;
  }
  *sig = (int)value;
  return true;
}

zx_status_t zxs_prim_sampling_init(void) {
  if (zxs_linux_signal() != 0) {
    return ZX_OK;
  }
  pthread_mutex_lock(&g_init_lock);
  zx_status_t status = ZX_OK;
  if (zxs_linux_signal() == 0) {
    const char* configured = getenv("ZXSAMPLER_SIGNAL");
    int chosen = 0;
    if (configured != NULL && *configured != '\0') {
      // Asked for one signal: use it or fail, never pick another behind the user's back.
      if (!zxs_linux_parse_signal(configured, &chosen)) {
        status = ZX_ERR_INVALID_ARGS;
      } else {
        status = free_or_ours(chosen);
      }
    } else {
      // The first real-time signal nobody uses. glibc keeps two below SIGRTMIN for itself.
      status = ZX_ERR_NO_RESOURCES;
      for (int sig = SIGRTMIN; sig <= SIGRTMAX && status != ZX_OK; sig++) {
        if (free_or_ours(sig) == ZX_OK) {
          chosen = sig;
          status = ZX_OK;
        }
      }
    }
    if (status == ZX_OK) {
      atomic_store_explicit(&g_signal, chosen, memory_order_release);
    }
  }
  pthread_mutex_unlock(&g_init_lock);
  return status;
}

zx_status_t zxs_linux_signal_check(void) {
  const int sig = zxs_linux_signal();
  if (sig == 0) {
    return ZX_ERR_BAD_STATE;
  }
  if (!atomic_load(&g_installed)) {
    // The first signal source to arm installs the handler; a program that took the signal since
    // it was chosen keeps it (and no signal source arms).
    pthread_mutex_lock(&g_init_lock);
    const zx_status_t status = atomic_load(&g_installed) ? ZX_OK : install(sig);
    if (status == ZX_OK) atomic_store(&g_installed, true);
    pthread_mutex_unlock(&g_init_lock);
    if (status != ZX_OK) return ZX_ERR_BAD_STATE;
  }
  struct sigaction current;
  if (sigaction(sig, NULL, &current) != 0 || !is_ours(&current)) {
    return ZX_ERR_BAD_STATE;
  }
  return ZX_OK;
}
