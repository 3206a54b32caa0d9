// Linux: naming threads (tid, stack bounds, name), telling whether they still live, and the
// exit hook.
//
// The tid of another pthread: glibc keeps it in its private struct pthread, and only glibc 2.42
// exports it (pthread_gettid_np). Older glibc and musl do expose it through a public call:
// pthread_getcpuclockid() returns the kernel's per-thread CPU clock id, which by the kernel's ABI
// (the same encoding timer_create and clock_gettime accept) is MAKE_THREAD_CPUCLOCK(tid, SCHED) =
// (~tid << 3) | 6. We decode it, after checking once on the calling thread that the encoding
// round-trips. No signal is sent to the thread, so asking never disturbs it.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "errno_status.h"
#include "linux_internal.h"
#include "platform.h"
#include "sampling.h"

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 42))
#define ZXS_HAVE_PTHREAD_GETTID_NP 1
#else
#define ZXS_HAVE_PTHREAD_GETTID_NP 0
#endif

static pid_t current_tid(void) { return (pid_t)syscall(SYS_gettid); }

// Stack bounds of a live thread (the main thread's from its mapping and RLIMIT_STACK).
static zx_status_t stack_bounds(pthread_t thread, uintptr_t* lo, uintptr_t* hi) {
  pthread_attr_t attr;
  int err = pthread_getattr_np(thread, &attr);
  if (err != 0) {
    return zxs_posix_errno_status(err);
  }
  void* addr = NULL;
  size_t size = 0;
  err = pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  if (err != 0 || addr == NULL || size == 0) {
    return ZX_ERR_INTERNAL;
  }
  *lo = (uintptr_t)addr;
  *hi = (uintptr_t)addr + size;
  return ZX_OK;
}

#if !ZXS_HAVE_PTHREAD_GETTID_NP
static bool g_cpuclock_decodes;
static pthread_once_t g_cpuclock_once = PTHREAD_ONCE_INIT;

static void check_cpuclock_encoding(void) {
  clockid_t clock;
  g_cpuclock_decodes = pthread_getcpuclockid(pthread_self(), &clock) == 0 &&
                       zxs_linux_cpuclock_tid(clock) == current_tid();
}
#endif

// The tid of a live pthread; 0 when it has exited, -1 when this libc cannot tell.
static pid_t tid_of(pthread_t thread) {
#if ZXS_HAVE_PTHREAD_GETTID_NP
  pid_t tid = pthread_gettid_np(thread);
  return tid > 0 ? tid : 0;
#else
  pthread_once(&g_cpuclock_once, check_cpuclock_encoding);
  if (!g_cpuclock_decodes) {
    return -1;
  }
  clockid_t clock;
  if (pthread_getcpuclockid(thread, &clock) != 0) {
    return 0;
  }
  // glibc reads the tid the kernel clears when the thread exits: 0 decodes as "gone".
  pid_t tid = zxs_linux_cpuclock_tid(clock);
  return tid > 0 ? tid : 0;
#endif
}

zx_status_t zxs_prim_thread_self(zxs_prim_thread_t* out) {
  memset(out, 0, sizeof(*out));
  pthread_t self = pthread_self();
  zx_status_t status = stack_bounds(self, &out->stack_lo, &out->stack_hi);
  if (status != ZX_OK) {
    return status;
  }
  out->koid = (zx_koid_t)current_tid();
  out->native = (uint64_t)self;
  return ZX_OK;
}

zx_koid_t zxs_prim_current_thread_koid(void) { return (zx_koid_t)current_tid(); }

zx_status_t zxs_prim_thread_from_native(const void* native, zxs_prim_thread_t* out) {
  memset(out, 0, sizeof(*out));
  if (native == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  const pthread_t thread = *(const pthread_t*)native;
  if (pthread_equal(thread, pthread_self())) {
    return zxs_prim_thread_self(out);
  }
  pid_t tid = tid_of(thread);
  if (tid < 0) {
    return ZX_ERR_NOT_SUPPORTED;
  }
  if (tid == 0) {
    return ZX_ERR_BAD_STATE;
  }
  zxs_prim_thread_t candidate = {.koid = (zx_koid_t)tid, .native = (uint64_t)thread};
  if (!zxs_prim_thread_alive(&candidate)) {
    return ZX_ERR_BAD_STATE;
  }
  zx_status_t status = stack_bounds(thread, &candidate.stack_lo, &candidate.stack_hi);
  if (status != ZX_OK) {
    return status;
  }
  *out = candidate;
  return ZX_OK;
}

// PF_EXITING in /proc/.../stat's flags: the thread has begun to exit.
#define ZXS_PF_EXITING 0x00000004u

// Reads state and flags of one of our threads from /proc/self/task/TID/stat. False when the
// file cannot be read (no /proc, or the task is gone).
static bool read_task_stat(pid_t tid, char* state, unsigned long* flags) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  char buf[512];
  ssize_t n;
  do {
    n = read(fd, buf, sizeof(buf) - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) {
    return false;
  }
  buf[n] = '\0';
  // "tid (comm) S ppid pgrp session tty_nr tpgid flags ...": comm may hold ')' and spaces, so
  // parse from the last ')'.
  const char* p = strrchr(buf, ')');
  if (p == NULL || p[1] != ' ' || p[2] == '\0') {
    return false;
  }
  *state = p[2];
  p += 3;
  for (int field = 4; field <= 9; field++) {  // skip to field 9, flags
    while (*p == ' ') {
      p++;
    }
    if (field == 9) {
      *flags = strtoul(p, NULL, 10);
      return true;
    }
    while (*p != ' ' && *p != '\0') {
      p++;
    }
  }
  return false;
}

bool zxs_prim_thread_alive(const zxs_prim_thread_t* thread) {
  if (thread == NULL || thread->koid == 0) {
    return false;
  }
  const pid_t tid = (pid_t)thread->koid;
  // Signal 0 only checks that the task exists in this thread group.
  if (syscall(SYS_tgkill, getpid(), tid, 0) != 0) {
    return false;
  }
  // Another thread is reaped by the kernel itself as it exits: while tgkill finds it, it is
  // alive or microseconds from gone (then arming it fails, and its exit hook or watch detaches
  // it). The main thread can stay a zombie (after pthread_exit(), until the process ends) or
  // exiting (PF_EXITING) for long: /proc says, at ~10 us a read, which reading it for every
  // thread at every start made a third of zx_sampler_start's CPU (bench/micro -p stop).
  if (tid != getpid()) return true;
  char state = 0;
  unsigned long flags = 0;
  if (!read_task_stat(tid, &state, &flags)) {
    return access("/proc/self/task", F_OK) != 0;  // no /proc: tgkill is all we know
  }
  return state != 'Z' && state != 'X' && state != 'x' && (flags & ZXS_PF_EXITING) == 0;
}

// Reads a /proc comm file into buf without its newline. errno set on failure.
static bool read_comm(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  char comm[64];  // the kernel's comm is at most 16 bytes
  ssize_t n;
  do {
    n = read(fd, comm, sizeof(comm) - 1);
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  close(fd);
  if (n < 0) {
    errno = err;
    return false;
  }
  while (n > 0 && comm[n - 1] == '\n') {
    n--;
  }
  comm[n] = '\0';
  snprintf(buf, size, "%s", comm);
  return true;
}

zx_status_t zxs_prim_thread_name(zx_koid_t koid, char* buf, size_t size) {
  if (buf == NULL || size == 0 || koid == 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%llu/comm", (unsigned long long)koid);
  if (!read_comm(path, buf, size)) {
    buf[0] = '\0';
    // A thread that has exited is NOT_FOUND (platform.h); any other failure is the table's.
    return errno == ENOENT || errno == ESRCH ? ZX_ERR_NOT_FOUND : zxs_posix_errno_status(errno);
  }
  return ZX_OK;
}

zx_status_t zxs_prim_process_name(char* buf, size_t size) {
  if (buf == NULL || size == 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (!read_comm("/proc/self/comm", buf, size)) {
    // No /proc: the name the program was started with.
    snprintf(buf, size, "%s", program_invocation_short_name);
  }
  return ZX_OK;
}

// --- Exit hook ---------------------------------------------------------------------------------

// The library's own threads (the collector, the exit watcher, the drainer) would keep a process
// alive whose main thread called pthread_exit: glibc ends the process (exit(0)) when its last
// thread exits, and ours never do (issue #26). So when a thread the library attached exits, and
// no thread is left but ours and exited ones, it ends the process as glibc would have:
// exit(0), from that thread, after our part of its exit. Threads the library did not attach run
// no hook: while one lives, the process lives, as it would without us.
#define INTERNAL_MAX 16u
#define LEAVING_MAX 64u

static pthread_mutex_t g_last_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t g_internal[INTERNAL_MAX];  // tids of the library's threads; 0: free
static pid_t g_internal_pid;            // the process g_internal is about (fork leaves it stale)
static pid_t g_leaving[LEAVING_MAX];    // threads that passed the check, in case they still run
static uint32_t g_leaving_next;
static pthread_key_t g_internal_key;
static bool g_internal_key_ok;
static pthread_once_t g_internal_once = PTHREAD_ONCE_INIT;

static bool listed(const pid_t* tids, uint32_t count, pid_t tid) {
  for (uint32_t i = 0; i < count; i++) {
    if (tids[i] == tid) return true;
  }
  return false;
}

// g_last_lock held.
static void internal_forget_other_process_locked(void) {
  if (g_internal_pid == getpid()) return;
  memset(g_internal, 0, sizeof(g_internal));
  memset(g_leaving, 0, sizeof(g_leaving));
  g_internal_pid = getpid();
}

static void on_internal_exit(void* value) {
  pthread_mutex_lock(&g_last_lock);
  internal_forget_other_process_locked();
  for (uint32_t i = 0; i < INTERNAL_MAX; i++) {
    if (g_internal[i] == (pid_t)(uintptr_t)value) g_internal[i] = 0;
  }
  pthread_mutex_unlock(&g_last_lock);
}

static void create_internal_key(void) {
  g_internal_key_ok = pthread_key_create(&g_internal_key, on_internal_exit) == 0;
}

// True when a thread of this process other than `self`, the library's and those that passed
// this check lives. No /proc: true (we cannot tell). g_last_lock held.
static bool another_lives_locked(pid_t self) {
  DIR* dir = opendir("/proc/self/task");
  if (dir == NULL) return true;
  bool found = false;
  struct dirent* e;
  while (!found && (e = readdir(dir)) != NULL) {
    const pid_t tid = (pid_t)atoi(e->d_name);
    if (tid <= 0 || tid == self || listed(g_internal, INTERNAL_MAX, tid) ||
        listed(g_leaving, LEAVING_MAX, tid)) {
      continue;
    }
    char state = 0;
    unsigned long flags = 0;
    if (!read_task_stat(tid, &state, &flags)) continue;  // gone since the listing
    found = state != 'Z' && state != 'X' && state != 'x' && (flags & ZXS_PF_EXITING) == 0;
  }
  closedir(dir);
  return found;
}

// In an exiting thread the library attached: ends the process when it is the program's last.
static void exit_if_last(pid_t self) {
  // Cheap first: while the main thread lives (it has not called pthread_exit), it is not the
  // last; a main thread that returns from main() runs exit() and no hook.
  if (self != getpid()) {
    char state = 0;
    unsigned long flags = 0;
    if (!read_task_stat(getpid(), &state, &flags) ||
        (state != 'Z' && (flags & ZXS_PF_EXITING) == 0)) {
      return;
    }
  }
  pthread_mutex_lock(&g_last_lock);
  internal_forget_other_process_locked();
  // Two threads leaving together: the second sees the first as gone (one of them exits).
  g_leaving[g_leaving_next++ % LEAVING_MAX] = self;
  const bool last = !another_lives_locked(self);
  pthread_mutex_unlock(&g_last_lock);
  if (last) exit(0);
}

static pthread_key_t g_exit_key;
static bool g_exit_key_ok;
static pthread_once_t g_exit_once = PTHREAD_ONCE_INIT;

// Runs in the exiting thread (pthread_exit or return from its start routine), before its
// sampling source can outlive it.
static void on_thread_exit(void* value) {
  zxs_linux_runtime_thread_exiting((pid_t)(uintptr_t)value);
  zxs_core_thread_exited((zx_koid_t)(uintptr_t)value);
  exit_if_last((pid_t)(uintptr_t)value);
}

static void create_exit_key(void) {
  g_exit_key_ok = pthread_key_create(&g_exit_key, on_thread_exit) == 0;
}

zx_status_t zxs_prim_notify_on_thread_exit(void) {
  pthread_once(&g_exit_once, create_exit_key);
  if (!g_exit_key_ok) {
    return ZX_ERR_NO_RESOURCES;
  }
  if (pthread_getspecific(g_exit_key) != NULL) {
    return ZX_OK;  // already registered for this thread
  }
  // The value is the tid (never 0), so the destructor runs and needs no system call.
  if (pthread_setspecific(g_exit_key, (void*)(uintptr_t)current_tid()) != 0) {
    return ZX_ERR_NO_MEMORY;
  }
  return ZX_OK;
}

void zxs_prim_thread_is_library(void) { zxs_linux_internal_thread_started(); }

void zxs_linux_internal_thread_started(void) {
  const pid_t tid = current_tid();
  zxs_core_thread_exited((zx_koid_t)tid);
  // Listed as the library's (it never keeps the process alive) until it exits.
  pthread_once(&g_internal_once, create_internal_key);
  pthread_mutex_lock(&g_last_lock);
  internal_forget_other_process_locked();
  for (uint32_t i = 0; i < INTERNAL_MAX; i++) {
    if (g_internal[i] == 0) {
      g_internal[i] = tid;
      break;
    }
  }
  pthread_mutex_unlock(&g_last_lock);
  if (g_internal_key_ok) (void)pthread_setspecific(g_internal_key, (void*)(uintptr_t)tid);
}
