// The few calls the examples make that differ between systems, so that each example builds on
// Linux, macOS and Fuchsia alike. Where a system has no such call the example runs without it
// (macOS has no CPU affinity: the threads are not pinned there).
//
// The including file defines _GNU_SOURCE first (Linux: affinity, two-argument thread names).
#ifndef ZXSAMPLER_EXAMPLES_EXAMPLE_OS_H_
#define ZXSAMPLER_EXAMPLES_EXAMPLE_OS_H_

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

// CLOCK_MONOTONIC in ns.
static inline int64_t example_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Sleeps until CLOCK_MONOTONIC reads `deadline_ns` (nanosleep: macOS has no clock_nanosleep),
// signals or not.
static inline void example_sleep_until(int64_t deadline_ns) {
  for (int64_t left; (left = deadline_ns - example_now_ns()) > 0;) {
    const struct timespec ts = {.tv_sec = (time_t)(left / 1000000000),
                                .tv_nsec = (long)(left % 1000000000)};
    nanosleep(&ts, NULL);
  }
}

// Runs the calling thread on `cpu` only, where the system lets a program choose (Linux).
static inline void example_pin_to_cpu(int cpu) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
#else
  (void)cpu;
#endif
}

// Names the calling thread (15 bytes at most shows everywhere).
static inline void example_name_thread(const char* name) {
#if defined(__APPLE__)
  pthread_setname_np(name);
#elif defined(__linux__)
  pthread_setname_np(pthread_self(), name);
#else
  (void)name;
#endif
}

// A real-time priority (SCHED_FIFO) for the calling thread, where the program may have one.
static inline bool example_make_realtime(int priority) {
  const struct sched_param param = {.sched_priority = priority};
  return pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
}

// Anonymous memory with every page present, as MAP_POPULATE maps it on Linux (elsewhere each
// page is touched). MAP_FAILED on failure.
static inline void* example_map_populated(size_t bytes) {
#if defined(__linux__)
  return mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
              0);
#else
  char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
  }
  return p;
#endif
}

// Asks for small pages in [p, p + bytes), so that a first touch faults once per 4 KiB page
// (Linux's transparent huge pages would fault once per 2 MiB). Elsewhere pages are small.
static inline void example_no_huge_pages(void* p, size_t bytes) {
#if defined(__linux__)
  madvise(p, bytes, MADV_NOHUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

#endif  // ZXSAMPLER_EXAMPLES_EXAMPLE_OS_H_
