// The C library as a macOS program sees it, approximated on Linux for a compile check (tests/
// meson.build, examples_macos_*): glibc's headers with what Darwin's show by default (POSIX 2008
// and the BSD names: MAP_ANONYMOUS, madvise), none of glibc's GNU extensions, Darwin's own
// declarations where they differ (one-argument pthread_setname_np, dladdr), and the Linux-only
// names a program might reach for poisoned, so that using one fails as Apple's SDK would.
// Forced in with -include, with __linux__ undefined and __APPLE__ defined. Declarations only:
// the files are compiled, never linked, this way.
#ifndef ZXS_MACH_DOUBLE_DARWIN_LIBC_H_
#define ZXS_MACH_DOUBLE_DARWIN_LIBC_H_

#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// <pthread.h>: Darwin names the calling thread only.
int pthread_setname_np(const char* name);

// <string.h>: shown by default on Darwin.
void* memmem(const void* big, size_t big_len, const void* little, size_t little_len);

// <dlfcn.h>: shown by default on Darwin.
typedef struct dl_info {
  const char* dli_fname;
  void* dli_fbase;
  const char* dli_sname;
  void* dli_saddr;
} Dl_info;
int dladdr(const void* addr, Dl_info* info);

// Linux-only: absent from Apple's SDK (macros first undefined: poisoning a defined one warns).
#undef MAP_POPULATE
#undef MAP_LOCKED
#undef MADV_HUGEPAGE
#undef MADV_NOHUGEPAGE
#undef SCHED_BATCH
#undef SCHED_IDLE
#undef TIMER_ABSTIME
#pragma GCC poison MAP_POPULATE MAP_LOCKED MADV_HUGEPAGE MADV_NOHUGEPAGE SCHED_BATCH SCHED_IDLE
#pragma GCC poison cpu_set_t CPU_SET CPU_ZERO CPU_ISSET sched_setaffinity sched_getaffinity
#pragma GCC poison sched_setscheduler sched_getscheduler sched_setparam sched_getcpu
#pragma GCC poison clock_nanosleep TIMER_ABSTIME timer_create timer_settime timer_delete
#pragma GCC poison pipe2 dup3 accept4 memfd_create eventfd epoll_create1 signalfd gettid
#pragma GCC poison pthread_getattr_np pthread_timedjoin_np pthread_tryjoin_np
// Deprecated on macOS, where it always fails with ENOSYS (sem_open's named semaphores work).
#pragma GCC poison sem_init sem_destroy sem_timedwait

#endif  // ZXS_MACH_DOUBLE_DARWIN_LIBC_H_
