// A program without frame pointers and with deep stacks, for CFI unwinding (built -O2
// -fomit-frame-pointer by bench/meson.build and tests/meson.build):
//
//   cfi_workload THREADS DEPTH CPU_MS
//
// Each of THREADS threads recurses DEPTH levels through functions of three shapes (a plain one,
// one keeping many values in callee-saved registers, one with a variable-length array and so a
// CFA from rbp), spends a moment at the bottom in qsort with a callback (libc frames between
// ours), returns and starts again, until it has used CPU_MS ms of CPU time. Samples therefore
// land at every depth up to DEPTH + a few, in prologues and epilogues too.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned g_sink;
static int g_depth;
static long g_cpu_ms;

__attribute__((noinline)) static int compare(const void* a, const void* b) {
  const unsigned x = *(const unsigned*)a, y = *(const unsigned*)b;
  return x < y ? -1 : x > y;
}

__attribute__((noinline)) static void bottom(unsigned seed) {
  unsigned a[48];
  for (int i = 0; i < 48; i++) a[i] = (seed = seed * 1103515245u + 12345u) >> 8;
  qsort(a, 48, sizeof(a[0]), compare);
  g_sink += a[0];
}

static void level(int depth, unsigned seed);

__attribute__((noinline)) static void level_vla(int depth, unsigned seed) {
  volatile char buf[8 + (seed & 31)];
  buf[0] = (char)seed;
  level(depth - 1, seed * 3u + 1u);
  g_sink += (unsigned)buf[0];
}

__attribute__((noinline)) static void level_regs(int depth, unsigned seed) {
  unsigned a = seed * 7u, b = seed * 11u, c = seed ^ 0x55u, d = seed + 99u, e = seed >> 3;
  level(depth - 1, a ^ b ^ c);
  g_sink += a + b + c + d + e;
}

__attribute__((noinline)) static void level_plain(int depth, unsigned seed) {
  level(depth - 1, seed + 17u);
  g_sink += seed;
}

static void (*volatile const g_shapes[3])(int, unsigned) = {level_vla, level_regs, level_plain};

// One frame a level: the shapes call each other through the table (level() is inlined).
static inline __attribute__((always_inline)) void level(int depth, unsigned seed) {
  if (depth <= 0) {
    for (unsigned i = 0; i < 8; i++) bottom(seed + i);
    return;
  }
  g_shapes[depth % 3](depth, seed);
  g_sink++;
}

static long thread_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void* run(void* arg) {
  unsigned seed = (unsigned)(size_t)arg;
  // DEPTH - 6 levels: with bottom(), qsort's frames, run() and the thread's start, stacks are
  // about DEPTH frames deep at the bottom.
  while (thread_cpu_ms() < g_cpu_ms) level(g_depth > 6 ? g_depth - 6 : 1, seed++);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: cfi_workload THREADS DEPTH CPU_MS\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  g_depth = atoi(argv[2]);
  g_cpu_ms = atol(argv[3]);
  if (threads < 1 || threads > 256 || g_depth < 1 || g_cpu_ms < 0) return 2;
  pthread_t t[256];
  for (int i = 1; i < threads; i++) pthread_create(&t[i], NULL, run, (void*)(size_t)i);
  run(NULL);
  for (int i = 1; i < threads; i++) pthread_join(t[i], NULL);
  return 0;
}
