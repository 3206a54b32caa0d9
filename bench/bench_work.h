// The CPU-bound, frame-pointer workload every benchmark here runs (header-only, internal to
// bench/): a fixed number of work units, each a descent through `depth` frames to one of three
// leaf loops. Pure ALU on registers, no memory traffic and no system calls, so its CPU time is
// about the same from run to run, and a sampler's cost shows up as extra CPU time.
//
// Build with frame pointers (the project's arguments add -fno-omit-frame-pointer
// -mno-omit-leaf-frame-pointer); every function here is noinline so each level is a real frame.
// GCC before 14 ignores -mno-omit-leaf-frame-pointer for a leaf that needs no stack (measured:
// gcc 12.2 compiles the leaves below without push %rbp, so a frame-pointer walk from inside
// them skips their caller); BENCH_KEEP_FRAME makes them set up a frame with any compiler.
#ifndef ZXSAMPLER_BENCH_BENCH_WORK_H_
#define ZXSAMPLER_BENCH_BENCH_WORK_H_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#define BENCH_NOINLINE __attribute__((noinline))

#define BENCH_KEEP_FRAME() __asm__ volatile("" : : "r"(__builtin_frame_address(0)))

// One multiply-add chain per iteration (~4 cycles of latency): about 1.3 ns at 3 GHz.
#define BENCH_SPIN(x, n)                    \
  do {                                      \
    for (uint64_t i_ = 0; i_ < (n); i_++) { \
      (x) = (x)*6364136223846793005u + i_;  \
      __asm__ volatile("" : "+r"(x));       \
    }                                       \
  } while (0)

BENCH_NOINLINE static uint64_t bench_leaf_a(uint64_t x, uint64_t n) {
  BENCH_KEEP_FRAME();
  BENCH_SPIN(x, n);
  return x;
}
BENCH_NOINLINE static uint64_t bench_leaf_b(uint64_t x, uint64_t n) {
  BENCH_KEEP_FRAME();
  BENCH_SPIN(x, n);
  return x ^ 1;
}
BENCH_NOINLINE static uint64_t bench_leaf_c(uint64_t x, uint64_t n) {
  BENCH_KEEP_FRAME();
  BENCH_SPIN(x, n);
  return x ^ 2;
}

// Descends `depth` frames, then runs a leaf. The asm after the call keeps it from becoming a
// tail call (which would reuse the frame).
BENCH_NOINLINE static uint64_t bench_descend(int depth, uint64_t x, uint64_t n) {
  if (depth <= 0) {
    switch (x % 3) {
      case 0:
        return bench_leaf_a(x, 3 * n);
      case 1:
        return bench_leaf_b(x, 2 * n);
      default:
        return bench_leaf_c(x, n);
    }
  }
  uint64_t r = bench_descend(depth - 1, x, n);
  __asm__ volatile("" : "+r"(r));
  return r + (uint64_t)depth;
}

// `units` work units of about 2 * n iterations each, `depth` frames deep. Deterministic.
BENCH_NOINLINE static uint64_t bench_work(uint64_t units, int depth, uint64_t n, uint64_t seed) {
  uint64_t sum = seed;
  for (uint64_t u = 0; u < units; u++) {
    sum += bench_descend(depth, seed + u, n);
    __asm__ volatile("" : "+r"(sum));
  }
  return sum;
}

static inline double bench_now(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// CPU time (user + system) of the whole process / the calling thread, in seconds (ns-precise:
// the scheduler's runtime, not tick-sampled).
static inline double bench_process_cpu(void) { return bench_now(CLOCK_PROCESS_CPUTIME_ID); }
static inline double bench_thread_cpu(void) { return bench_now(CLOCK_THREAD_CPUTIME_ID); }

// System CPU time of the process (tick-sampled split), in seconds.
static inline double bench_process_sys(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static inline long bench_max_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

#endif  // ZXSAMPLER_BENCH_BENCH_WORK_H_
