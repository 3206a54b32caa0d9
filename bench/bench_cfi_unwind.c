// bench_cfi_unwind: how fast a stack sample is unwound, by depth, three ways (a meson
// benchmark(); prints a table, asserts nothing about time):
//
//   bench_cfi_unwind [-t SECONDS]   (time per method and depth, default 0.3)
//
//   fp         the core's frame-pointer walk over the copy (zxs_frame_walk_copy)
//   libunwind  zxs_cfi_unwind with ZXSAMPLER_CFI=libunwind: libunwind's remote API, global cache
//   own        zxs_cfi_unwind with our own unwinder (rows cached by PC)
//
// Each sample is the same one taken on this thread at the bottom of a chain of DEPTH calls
// (this file is built with frame pointers, and has CFI like every C file): its registers and a
// copy of the stack, as the kernel copies them for a perf sample, unwound over this process's
// mappings, again and again for SECONDS (caches warm: the steady state of a recorder). Rows give
// samples per second and microseconds per sample; "frames" is what each method found.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "cfi_unwind.h"
#include "frame_walk.h"

#define COPY_MAX 65536
#define MAX_FRAMES 160

typedef struct snapshot {
  zxs_cfi_regs_t regs;
  uint8_t copy[COPY_MAX];
  size_t copy_len;
} snapshot_t;

static snapshot_t g_snap;
static volatile int g_sink;

__attribute__((no_sanitize_address)) static void copy_stack(uint8_t* out, const uint8_t* from,
                                                            size_t len) {
  for (size_t i = 0; i < len; i++) out[i] = ((const volatile uint8_t*)from)[i];
}

__attribute__((noinline)) static void take(void) {
  ucontext_t uc;
  getcontext(&uc);
  const greg_t* g = uc.uc_mcontext.gregs;
  const int from[ZXS_CFI_REG_COUNT] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                       REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                       REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
  for (int i = 0; i < ZXS_CFI_REG_COUNT; i++) g_snap.regs.r[i] = (uint64_t)g[from[i]];
  pthread_attr_t attr;
  void* base;
  size_t size;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  const uintptr_t sp = (uintptr_t)g[REG_RSP], top = (uintptr_t)base + size;
  g_snap.copy_len = top - sp < COPY_MAX ? top - sp : COPY_MAX;
  copy_stack(g_snap.copy, (const uint8_t*)sp, g_snap.copy_len);
  g_sink++;
}

// `depth` more frames, then the sample.
__attribute__((noinline)) static void descend(int depth) {
  if (depth <= 0) {
    take();
  } else {
    descend(depth - 1);
  }
  g_sink++;
}

static size_t self_mappings(zxs_cfi_mapping_t* out, size_t max, char paths[][256]) {
  FILE* f = fopen("/proc/self/maps", "r");
  size_t n = 0;
  char line[512];
  while (f != NULL && n < max && fgets(line, sizeof(line), f) != NULL) {
    unsigned long long start, end, offset;
    char perms[8];
    int at = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &at) < 4 ||
        at == 0 || perms[2] != 'x' || line[at] != '/') {
      continue;
    }
    line[strcspn(line, "\n")] = '\0';
    snprintf(paths[n], 256, "%s", line + at);
    out[n] = (zxs_cfi_mapping_t){.path = paths[n], .start = start, .pgoff = offset};
    n++;
  }
  if (f != NULL) fclose(f);
  return n;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum { METHOD_FP, METHOD_LIBUNWIND, METHOD_OWN, METHOD_COUNT };
static const char* const kNames[METHOD_COUNT] = {"fp", "libunwind", "own"};

// Unwinds g_snap for `seconds` of CPU time; returns samples per second, sets *frames.
static double run(int method, zxs_cfi_space_t* space, double seconds, size_t* frames) {
  uint64_t pcs[MAX_FRAMES];
  uint64_t done = 0;
  const double start = now_s();
  double t = start;
  do {
    for (int i = 0; i < 200; i++) {
      bool cut = false;
      if (method == METHOD_FP) {
        const zxs_regs_t r = {
            .pc = g_snap.regs.r[16], .fp = g_snap.regs.r[6], .sp = g_snap.regs.r[7]};
        *frames = zxs_frame_walk_copy(&r, 0, UINTPTR_MAX, g_snap.copy, g_snap.copy_len, pcs,
                                      MAX_FRAMES, &cut, NULL);
      } else {
        *frames = zxs_cfi_unwind(space, &g_snap.regs, g_snap.copy, g_snap.copy_len, pcs, MAX_FRAMES,
                                 &cut);
      }
      done++;
    }
    t = now_s();
  } while (t - start < seconds);
  return (double)done / (t - start);
}

int main(int argc, char** argv) {
  double seconds = 0.3;
  if (argc == 3 && strcmp(argv[1], "-t") == 0) seconds = atof(argv[2]);
  if (!zxs_cfi_available()) {
    printf("bench_cfi_unwind: this build has no CFI unwinder (libunwind): nothing to compare\n");
    return 0;
  }
  static zxs_cfi_mapping_t mappings[256];
  static char paths[256][256];
  double load[3] = {0};
  FILE* lf = fopen("/proc/loadavg", "r");
  if (lf != NULL) {
    if (fscanf(lf, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
    fclose(lf);
  }
  printf("CFI unwinding of one in-process sample, %.2f s of CPU per cell (load average %.2f)\n\n",
         seconds, load[0]);
  printf("| depth | method | frames | samples/s | us/sample | vs libunwind |\n");
  printf("|---:|---|---:|---:|---:|---:|\n");
  const int depths[] = {8, 32, 64, 128};
  for (size_t d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
    // frames below descend(): main, __libc_start_call_main, __libc_start_main, _start
    descend(depths[d] - 6);
    const size_t count = self_mappings(mappings, 256, paths);
    double rate[METHOD_COUNT];
    size_t frames[METHOD_COUNT];
    for (int m = 0; m < METHOD_COUNT; m++) {
      zxs_cfi_unwinder_t* u = zxs_cfi_unwinder_new();
      zxs_cfi_unwinder_set_own(u, m == METHOD_OWN);
      zxs_cfi_space_t* space = zxs_cfi_space_new(u, mappings, count);
      if (u == NULL || space == NULL) {
        fprintf(stderr, "bench_cfi_unwind: cannot make an unwinder\n");
        return 1;
      }
      rate[m] = run(m, space, seconds, &frames[m]);
      if (m == METHOD_OWN) {
        zxs_cfi_stats_t st;
        zxs_cfi_unwinder_stats(u, &st);
        if (st.fallbacks > 0)
          printf("(own: %llu samples handed to libunwind)\n", (unsigned long long)st.fallbacks);
      }
      zxs_cfi_space_free(space);
      zxs_cfi_unwinder_free(u);
    }
    for (int m = 0; m < METHOD_COUNT; m++) {
      printf("| %d | %s | %zu | %.0f | %.2f | %.1fx |\n", depths[d], kNames[m], frames[m], rate[m],
             1e6 / rate[m], rate[m] / rate[METHOD_LIBUNWIND]);
    }
  }
  lf = fopen("/proc/loadavg", "r");
  if (lf != NULL) {
    if (fscanf(lf, "%lf", &load[0]) == 1) printf("\nload average at the end: %.2f\n", load[0]);
    fclose(lf);
  }
  return 0;
}
