// The frame-pointer walk over crafted stacks and over the test's own stack.
//
// Crafted stacks live in one read-write page between two PROT_NONE pages, and the bounds given
// to the walk are exactly that page: a read outside the bounds faults instead of passing.
#define _DEFAULT_SOURCE  // MAP_ANONYMOUS under -std=c11
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
// cmocka needs the headers above first.
#include <cmocka.h>

#include "frame_walk.h"

static uint8_t* g_map;  // guard | stack page | guard
static size_t g_page;
static uintptr_t g_lo;  // the stack page
static uintptr_t g_hi;

static int group_setup(void** state) {
  (void)state;
  g_page = (size_t)sysconf(_SC_PAGESIZE);
  void* map = mmap(NULL, 3 * g_page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(map != MAP_FAILED);
  g_map = map;
  assert_int_equal(mprotect(g_map + g_page, g_page, PROT_READ | PROT_WRITE), 0);
  g_lo = (uintptr_t)(g_map + g_page);
  g_hi = g_lo + g_page;
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  munmap(g_map, 3 * g_page);
  return 0;
}

static int setup(void** state) {
  (void)state;
  memset((void*)g_lo, 0, g_page);
  return 0;
}

// Stores a frame record {saved fp, return address} at `fp`.
static void frame(uintptr_t fp, uintptr_t next_fp, uintptr_t ret) {
  uintptr_t* record = (uintptr_t*)fp;
  record[0] = next_fp;
  record[1] = ret;
}

static uintptr_t ret_of(int i) { return 0x400000u + 0x100u * (uintptr_t)i; }

// A chain of `count` frames, `step` bytes apart, the first at `first`; the last links to 0.
static void chain(uintptr_t first, size_t step, int count) {
  for (int i = 0; i < count; i++) {
    uintptr_t fp = first + step * (size_t)i;
    frame(fp, i + 1 < count ? fp + step : 0, ret_of(i));
  }
}

static size_t walk(uintptr_t fp, uintptr_t sp, uint64_t* pcs, size_t max, bool* truncated) {
  zxs_regs_t regs = {.pc = 0xABC0, .fp = fp, .sp = sp};
  return zxs_frame_walk(&regs, g_lo, g_hi, pcs, max, truncated);
}

static void test_normal_chain(void** state) {
  (void)state;
  const uintptr_t fps[4] = {g_lo + 256, g_lo + 320, g_lo + 512, g_lo + 2048};
  for (int i = 0; i < 4; i++) frame(fps[i], i < 3 ? fps[i + 1] : 0, ret_of(i));
  uint64_t pcs[64];
  bool truncated = true;
  size_t n = walk(fps[0], g_lo + 128, pcs, 64, &truncated);
  assert_int_equal(n, 5);
  assert_int_equal(pcs[0], 0xABC0);  // the interrupted PC first
  for (int i = 0; i < 4; i++) assert_int_equal(pcs[1 + i], ret_of(i));
  assert_false(truncated);
  // truncated may be NULL.
  assert_int_equal(walk(fps[0], g_lo + 128, pcs, 64, NULL), 5);
}

static void test_stops_at_64_truncated(void** state) {
  (void)state;
  chain(g_lo + 64, 32, 70);
  uint64_t pcs[64];
  bool truncated = false;
  assert_int_equal(walk(g_lo + 64, g_lo, pcs, 64, &truncated), 64);
  assert_true(truncated);
  assert_int_equal(pcs[0], 0xABC0);
  for (int i = 0; i < 63; i++) assert_int_equal(pcs[1 + i], ret_of(i));

  // Exactly 63 frames fill 64 entries with nothing left over: not truncated.
  memset((void*)g_lo, 0, g_page);
  chain(g_lo + 64, 32, 63);
  assert_int_equal(walk(g_lo + 64, g_lo, pcs, 64, &truncated), 64);
  assert_false(truncated);

  // Smaller limits, down to no room at all.
  assert_int_equal(walk(g_lo + 64, g_lo, pcs, 3, &truncated), 3);
  assert_true(truncated);
  assert_int_equal(walk(g_lo + 64, g_lo, pcs, 1, &truncated), 1);
  assert_true(truncated);
  assert_int_equal(walk(g_lo + 64, g_lo, pcs, 0, &truncated), 0);
  assert_true(truncated);
  // A PC with no valid frame is complete, not truncated.
  assert_int_equal(walk(0, g_lo, pcs, 1, &truncated), 1);
  assert_false(truncated);
}

static void test_fp_outside_bounds(void** state) {
  (void)state;
  uint64_t pcs[64];
  bool truncated = true;
  // Into the guard pages above and below, and far away.
  const uintptr_t bad[] = {g_hi, g_hi + 64, g_lo - 16,       g_lo - g_page,
                           0,    8,         UINTPTR_MAX - 7, UINTPTR_MAX - 15};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    assert_int_equal(walk(bad[i], 0, pcs, 64, &truncated), 1);
    assert_false(truncated);
  }
  // A chain that leaves the stack part way: entries up to there.
  frame(g_lo + 128, g_lo + 256, ret_of(0));
  frame(g_lo + 256, g_hi + 128, ret_of(1));
  assert_int_equal(walk(g_lo + 128, g_lo, pcs, 64, &truncated), 3);
  assert_int_equal(pcs[2], ret_of(1));
  frame(g_lo + 256, g_lo - 64, ret_of(1));  // ...or jumps below it
  assert_int_equal(walk(g_lo + 128, g_lo, pcs, 64, &truncated), 3);
}

static void test_fp_below_sp(void** state) {
  (void)state;
  uint64_t pcs[64];
  // A well-formed chain below sp is stale memory: following it would add entries.
  chain(g_lo + 512, 64, 3);
  assert_int_equal(walk(g_lo + 512, g_lo + 1024, pcs, 64, NULL), 1);
  assert_int_equal(walk(g_lo + 512, g_lo + 512, pcs, 64, NULL), 4);  // fp == sp is fine
  // A link that goes below sp (it cannot: sp is below every live frame) ends the walk too.
  frame(g_lo + 1024, g_lo + 512, ret_of(9));
  assert_int_equal(walk(g_lo + 1024, g_lo + 768, pcs, 64, NULL), 2);
  assert_int_equal(pcs[1], ret_of(9));
  // sp above the stack: no frame qualifies.
  assert_int_equal(walk(g_lo + 512, g_hi + 4096, pcs, 64, NULL), 1);
}

static void test_fp_unaligned(void** state) {
  (void)state;
  uint64_t pcs[64];
  chain(g_lo + 256, 64, 3);
  for (uintptr_t off = 1; off < 8; off++) {
    assert_int_equal(walk(g_lo + 256 + off, g_lo, pcs, 64, NULL), 1);
  }
  frame(g_lo + 256, g_lo + 324, ret_of(0));  // an unaligned link
  assert_int_equal(walk(g_lo + 256, g_lo, pcs, 64, NULL), 2);
}

static void test_fp_not_increasing(void** state) {
  (void)state;
  uint64_t pcs[64];
  bool truncated = true;
  // Equal: a frame that links to itself would loop forever.
  frame(g_lo + 512, g_lo + 512, ret_of(0));
  assert_int_equal(walk(g_lo + 512, g_lo, pcs, 64, &truncated), 2);
  assert_false(truncated);
  // Decreasing, to a valid-looking frame still above sp.
  frame(g_lo + 256, g_lo + 1024, ret_of(7));
  frame(g_lo + 512, g_lo + 256, ret_of(0));
  assert_int_equal(walk(g_lo + 512, g_lo, pcs, 64, &truncated), 2);
  assert_int_equal(pcs[1], ret_of(0));
  // A longer cycle: 256 -> 512 -> 256.
  frame(g_lo + 256, g_lo + 512, ret_of(1));
  assert_int_equal(walk(g_lo + 256, g_lo, pcs, 64, &truncated), 3);
  assert_false(truncated);
}

static void test_zero_return_address(void** state) {
  (void)state;
  uint64_t pcs[64];
  chain(g_lo + 256, 64, 4);
  frame(g_lo + 256 + 128, g_lo + 256 + 192, 0);  // the third frame is the outermost
  bool truncated = true;
  assert_int_equal(walk(g_lo + 256, g_lo, pcs, 64, &truncated), 3);
  assert_int_equal(pcs[1], ret_of(0));
  assert_int_equal(pcs[2], ret_of(1));
  assert_false(truncated);
  // With the limit reached at that frame, nothing valid was cut off.
  assert_int_equal(walk(g_lo + 256, g_lo, pcs, 3, &truncated), 3);
  assert_false(truncated);
}

static void test_record_straddling_the_end(void** state) {
  (void)state;
  uint64_t pcs[64];
  // fp = hi - 8: the saved fp is in bounds, the return address would be the guard page.
  *(uintptr_t*)(g_hi - 8) = g_hi - 8;
  assert_int_equal(walk(g_hi - 8, g_lo, pcs, 64, NULL), 1);
  frame(g_hi - 64, g_hi - 8, ret_of(0));  // reached by a link
  assert_int_equal(walk(g_hi - 64, g_lo, pcs, 64, NULL), 2);
  // fp = hi - 16 is the last record that fits: taken.
  frame(g_hi - 16, 0, ret_of(5));
  assert_int_equal(walk(g_hi - 16, g_lo, pcs, 64, NULL), 2);
  assert_int_equal(pcs[1], ret_of(5));
  frame(g_hi - 64, g_hi - 16, ret_of(0));
  assert_int_equal(walk(g_hi - 64, g_lo, pcs, 64, NULL), 3);
}

static void test_degenerate_bounds(void** state) {
  (void)state;
  uint64_t pcs[4];
  zxs_regs_t regs = {.pc = 1, .fp = 0, .sp = 0};
  assert_int_equal(zxs_frame_walk(&regs, 0, 8, pcs, 4, NULL), 1);  // hi < 16
  assert_int_equal(zxs_frame_walk(&regs, 0, 0, pcs, 4, NULL), 1);
  regs.fp = g_lo + 64;
  assert_int_equal(zxs_frame_walk(&regs, g_hi, g_lo, pcs, 4, NULL), 1);  // lo > hi
  assert_int_equal(zxs_frame_walk(&regs, g_lo, g_lo + 8, pcs, 4, NULL), 1);
}

// --- The real stack ------------------------------------------------------------------------------
// Each level passes its own return address down, and the innermost walks from its frame
// pointer; the walk must find those return addresses in order. noinline and work after each
// call keep the frames real (no inlining, no tail calls).

// The walk over a copy of the stack (perf-ring): the same frames as over the stack itself while
// the copy reaches them; a valid frame beyond the copy ends the walk as truncated; garbage in
// the copy ends it as garbage on the stack does.
static void test_walk_over_a_copy(void** state) {
  (void)state;
  const uintptr_t sp = g_lo + 64;
  chain(g_lo + 128, 96, 8);  // frames at +128 .. +800
  static _Alignas(16) uint8_t copy[4096];
  const size_t len = g_hi - sp;
  memcpy(copy, (const void*)sp, len);
  memset((void*)g_lo, 0, g_page);  // the walk must read the copy, not the stack
  zxs_regs_t regs = {.pc = 0xABC0, .fp = g_lo + 128, .sp = sp};
  uint64_t pcs[64];
  bool truncated = true;
  size_t needed = 0;
  size_t n = zxs_frame_walk_copy(&regs, g_lo, g_hi, copy, len, pcs, 64, &truncated, &needed);
  assert_int_equal(n, 9);
  for (int i = 0; i < 8; i++) assert_int_equal(pcs[1 + i], ret_of(i));
  assert_false(truncated);
  // What it needed ends with the last record it read (at +800, from sp at +64).
  assert_int_equal(needed, 128 + 7 * 96 + 16 - 64);
  // A copy that ends inside the fourth record: three frames, truncated, and the copy it needed
  // reaches past that record.
  const size_t short_len = (128 + 3 * 96 + 8) - 64;
  n = zxs_frame_walk_copy(&regs, g_lo, g_hi, copy, short_len, pcs, 64, &truncated, &needed);
  assert_int_equal(n, 4);
  assert_true(truncated);
  assert_int_equal(needed, 128 + 3 * 96 + 16 - 64);
  assert_true(needed > short_len);
  // No copy at all: the PC alone, truncated (the first frame was valid).
  n = zxs_frame_walk_copy(&regs, g_lo, g_hi, copy, 0, pcs, 64, &truncated, &needed);
  assert_int_equal(n, 1);
  assert_true(truncated);
  assert_int_equal(needed, 128 + 16 - 64);
  // Garbage in the copy: the second record points below the first.
  uintptr_t* second = (uintptr_t*)(void*)(copy + (128 + 96) - 64);
  second[0] = g_lo + 100;
  n = zxs_frame_walk_copy(&regs, g_lo, g_hi, copy, len, pcs, 64, &truncated, NULL);
  assert_int_equal(n, 3);
  assert_false(truncated);
  // An unaligned stack pointer: records cannot be read aligned, the PC alone.
  regs.sp = sp + 4;
  assert_int_equal(zxs_frame_walk_copy(&regs, g_lo, g_hi, copy, len, pcs, 64, NULL, NULL), 1);
}

static volatile int g_sink;
static uintptr_t g_top;  // frame of the test function: the walk's upper bound

typedef struct {
  uintptr_t expect[3];
  uint64_t pcs[64];
  size_t n;
} real_walk_t;

__attribute__((noinline)) static void level3(real_walk_t* w) {
  w->expect[0] = (uintptr_t)__builtin_return_address(0);
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  zxs_regs_t regs = {.pc = (uintptr_t)&level3, .fp = fp, .sp = fp};
  // The test function's frame record is at g_top, so hi = g_top + 16 includes it.
  w->n = zxs_frame_walk(&regs, fp, g_top + 16, w->pcs, 64, NULL);
  g_sink++;
}

__attribute__((noinline)) static void level2(real_walk_t* w) {
  w->expect[1] = (uintptr_t)__builtin_return_address(0);
  level3(w);
  g_sink++;
}

__attribute__((noinline)) static void level1(real_walk_t* w) {
  w->expect[2] = (uintptr_t)__builtin_return_address(0);
  level2(w);
  g_sink++;
}

static void test_real_stack(void** state) {
  (void)state;
  g_top = (uintptr_t)__builtin_frame_address(0);
  real_walk_t w;
  memset(&w, 0, sizeof(w));
  level1(&w);
  // pc, into level2, into level1, into this test, then out of it (the caller's frame is above
  // the bound: the walk stops there).
  assert_true(w.n >= 4);
  assert_int_equal(w.pcs[0], (uintptr_t)&level3);
  assert_int_equal(w.pcs[1], w.expect[0]);
  assert_int_equal(w.pcs[2], w.expect[1]);
  assert_int_equal(w.pcs[3], w.expect[2]);
  assert_true(w.n <= 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_normal_chain, setup),
      cmocka_unit_test_setup(test_walk_over_a_copy, setup),
      cmocka_unit_test_setup(test_stops_at_64_truncated, setup),
      cmocka_unit_test_setup(test_fp_outside_bounds, setup),
      cmocka_unit_test_setup(test_fp_below_sp, setup),
      cmocka_unit_test_setup(test_fp_unaligned, setup),
      cmocka_unit_test_setup(test_fp_not_increasing, setup),
      cmocka_unit_test_setup(test_zero_return_address, setup),
      cmocka_unit_test_setup(test_record_straddling_the_end, setup),
      cmocka_unit_test_setup(test_degenerate_bounds, setup),
      cmocka_unit_test(test_real_stack),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
