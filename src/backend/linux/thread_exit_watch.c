// Detaches threads attached by another thread as soon as they exit.
//
// A thread that attaches itself gets a pthread-key exit hook (threads_linux.c); nothing runs on
// a thread attached from outside when it exits, so a watcher thread polls one pidfd per such
// thread (pidfd_open with PIDFD_THREAD, Linux 6.9) and calls zxs_core_thread_exited(). Where
// the kernel refuses thread pidfds, watching is not supported and the core reaps exited threads
// at its next call instead. The watcher blocks every signal (it is never sampled and never
// takes the program's signals) and lives as long as the process, asleep in epoll_wait.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "errno_status.h"
#include "linux_internal.h"
#include "platform.h"
#include "sampling.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
#include <fcntl.h>

#define MAX_WATCHED ZXS_MAX_THREADS

typedef struct {
  zx_koid_t koid;  // 0 = free
  int pidfd;
} watched_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static watched_t g_watched[MAX_WATCHED];
static int g_epoll = -1;
static pid_t g_watcher_pid;  // the process the watcher thread runs in (fork leaves it behind)

// Removes the entry of `koid`; returns its pidfd or -1. g_lock held.
static int take_locked(zx_koid_t koid) {
  for (size_t i = 0; i < MAX_WATCHED; i++) {
    if (g_watched[i].koid == koid) {
      g_watched[i].koid = 0;
      return g_watched[i].pidfd;
    }
  }
  return -1;
}

static void* watcher_main(void* unused) {
  (void)unused;
  zxs_linux_internal_thread_started();
  for (;;) {
    struct epoll_event events[16];
    int n = epoll_wait(g_epoll, events, 16, -1);
    for (int i = 0; i < n; i++) {
      zx_koid_t koid = events[i].data.u64;
      pthread_mutex_lock(&g_lock);
      int pidfd = take_locked(koid);
      if (pidfd >= 0) {
        epoll_ctl(g_epoll, EPOLL_CTL_DEL, pidfd, NULL);
        close(pidfd);
      }
      pthread_mutex_unlock(&g_lock);
      // Outside g_lock: the core takes its session lock and calls unwatch.
      if (pidfd >= 0) zxs_core_thread_exited(koid);
    }
    if (n < 0 && errno != EINTR) return NULL;
  }
}

// Starts the watcher in this process if it is not running here; g_lock held.
static bool ensure_watcher_locked(void) {
  if (g_epoll >= 0 && g_watcher_pid == getpid()) return true;
  if (g_epoll >= 0) {  // inherited across fork: the watcher thread stayed in the parent
    close(g_epoll);
    for (size_t i = 0; i < MAX_WATCHED; i++) {
      if (g_watched[i].koid != 0) close(g_watched[i].pidfd);
      g_watched[i].koid = 0;
    }
  }
  g_epoll = epoll_create1(EPOLL_CLOEXEC);
  if (g_epoll < 0) return false;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits the full mask
  pthread_t thread;
  int err = pthread_create(&thread, NULL, watcher_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) {
    close(g_epoll);
    g_epoll = -1;
    return false;
  }
  pthread_detach(thread);
  g_watcher_pid = getpid();
  return true;
}

zx_status_t zxs_prim_watch_thread_exit(const zxs_prim_thread_t* thread) {
  int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)thread->koid, PIDFD_THREAD);
  if (pidfd < 0) {
    // The thread is gone (BAD_STATE) or descriptors ran out (NO_RESOURCES); anything else (no
    // pidfd_open, no PIDFD_THREAD before Linux 6.9) is a kernel that cannot watch threads.
    const zx_status_t status = zxs_posix_errno_status(errno);
    return status == ZX_ERR_BAD_STATE || status == ZX_ERR_NO_RESOURCES ? status
                                                                       : ZX_ERR_NOT_SUPPORTED;
  }
  zx_status_t status = ZX_ERR_NO_RESOURCES;
  pthread_mutex_lock(&g_lock);
  if (ensure_watcher_locked()) {
    for (size_t i = 0; i < MAX_WATCHED; i++) {
      if (g_watched[i].koid != 0) continue;
      struct epoll_event ev = {.events = EPOLLIN, .data.u64 = thread->koid};
      if (epoll_ctl(g_epoll, EPOLL_CTL_ADD, pidfd, &ev) == 0) {
        g_watched[i] = (watched_t){.koid = thread->koid, .pidfd = pidfd};
        status = ZX_OK;
      }
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (status != ZX_OK) close(pidfd);
  return status;
}

void zxs_prim_unwatch_thread_exit(zx_koid_t koid) {
  pthread_mutex_lock(&g_lock);
  int pidfd = take_locked(koid);
  if (pidfd >= 0) {
    epoll_ctl(g_epoll, EPOLL_CTL_DEL, pidfd, NULL);
    close(pidfd);
  }
  pthread_mutex_unlock(&g_lock);
}
