// The CFI unwinder on a real stack built without frame pointers: this file is compiled with
// -fomit-frame-pointer; level3() takes its own registers and a copy of its stack, as the kernel
// does for a perf sample, and unwinds it over this process's own mappings and module files.
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>

#include "cfi_unwind.h"
#include "frame_walk.h"

#define COPY_MAX 65536

typedef struct snapshot {
  zxs_cfi_regs_t regs;
  uint8_t copy[COPY_MAX];
  size_t copy_len;
  uint64_t returns[3];  // return addresses into level2, level1, the caller of level1
} snapshot_t;

static snapshot_t g_snap;
static volatile int g_sink;

// /proc/self/maps' file mappings, as perf's MMAP2 records would give them.
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

// The stack as the kernel copies it: byte by byte, past what a sanitizer would let memcpy read.
__attribute__((no_sanitize_address)) static void copy_stack(uint8_t* out, const uint8_t* from,
                                                            size_t len) {
  for (size_t i = 0; i < len; i++) out[i] = ((const volatile uint8_t*)from)[i];
}

__attribute__((noinline)) static void level3(void) {
  ucontext_t uc;
  getcontext(&uc);
  const greg_t* g = uc.uc_mcontext.gregs;
  // DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip.
  const int from[ZXS_CFI_REG_COUNT] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                       REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                       REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
  for (int i = 0; i < ZXS_CFI_REG_COUNT; i++) g_snap.regs.r[i] = (uint64_t)g[from[i]];
  // The stack from rsp up to its end (or COPY_MAX), as the kernel copies it.
  pthread_attr_t attr;
  void* base;
  size_t size;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  const uintptr_t sp = (uintptr_t)g[REG_RSP], top = (uintptr_t)base + size;
  g_snap.copy_len = top - sp < COPY_MAX ? top - sp : COPY_MAX;
  copy_stack(g_snap.copy, (const uint8_t*)sp, g_snap.copy_len);
  g_snap.returns[0] = (uint64_t)__builtin_return_address(0);
  g_sink++;
}

__attribute__((noinline)) static void level2(void) {
  level3();
  g_snap.returns[1] = (uint64_t)__builtin_return_address(0);
  g_sink++;
}

__attribute__((noinline)) static void level1(void) {
  level2();
  g_snap.returns[2] = (uint64_t)__builtin_return_address(0);
  g_sink++;
}

static bool contains(const uint64_t* pcs, size_t n, uint64_t pc) {
  for (size_t i = 0; i < n; i++) {
    if (pcs[i] == pc) return true;
  }
  return false;
}

static void test_unwinds_without_frame_pointers(void** state) {
  (void)state;
  if (!zxs_cfi_available()) skip();  // no libunwind in this build
  level1();
  static zxs_cfi_mapping_t mappings[256];
  static char paths[256][256];
  size_t count = self_mappings(mappings, 256, paths);
  assert_true(count > 0);
  zxs_cfi_unwinder_t* u = zxs_cfi_unwinder_new();
  assert_non_null(u);
  zxs_cfi_space_t* space = zxs_cfi_space_new(u, mappings, count);
  assert_non_null(space);
  uint64_t pcs[128];
  bool truncated = true;
  size_t n =
      zxs_cfi_unwind(space, &g_snap.regs, g_snap.copy, g_snap.copy_len, pcs, 128, &truncated);
  assert_true(n >= 5);
  assert_int_equal(pcs[0], g_snap.regs.r[16]);  // the interrupted pc first
  for (int i = 0; i < 3; i++) assert_true(contains(pcs, n, g_snap.returns[i]));
  assert_false(truncated);  // it reached the outermost frame inside the copy
  // Frame pointers get nowhere here: rbp is a general register in this code.
  zxs_regs_t fp = {.pc = g_snap.regs.r[16], .fp = g_snap.regs.r[6], .sp = g_snap.regs.r[7]};
  uint64_t fp_pcs[128];
  size_t fp_n =
      zxs_frame_walk_copy(&fp, 0, UINTPTR_MAX, g_snap.copy, g_snap.copy_len, fp_pcs, 128, NULL);
  assert_false(contains(fp_pcs, fp_n, g_snap.returns[1]) &&
               contains(fp_pcs, fp_n, g_snap.returns[2]));

  // A copy too short for the callers: cut, and said so.
  n = zxs_cfi_unwind(space, &g_snap.regs, g_snap.copy, 64, pcs, 128, &truncated);
  assert_true(n >= 1);
  assert_true(truncated);
  // No room: cut, and said so.
  n = zxs_cfi_unwind(space, &g_snap.regs, g_snap.copy, g_snap.copy_len, pcs, 2, &truncated);
  assert_int_equal(n, 2);
  assert_true(truncated);
  // No modules known: the first pc still, nothing invented.
  zxs_cfi_space_t* empty = zxs_cfi_space_new(u, NULL, 0);
  assert_non_null(empty);
  n = zxs_cfi_unwind(empty, &g_snap.regs, g_snap.copy, g_snap.copy_len, pcs, 128, &truncated);
  assert_true(n >= 1);
  assert_int_equal(pcs[0], g_snap.regs.r[16]);
  zxs_cfi_space_free(empty);
  zxs_cfi_space_free(space);
  zxs_cfi_unwinder_free(u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unwinds_without_frame_pointers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
