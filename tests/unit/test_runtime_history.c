// Where a followed thread's fault and lock time fell (runtime_pairs_linux.h's history): an
// interval's share, buckets reused as time goes on, faults apart from contentions, and each
// fault's edge (its cost outside the timed pair) counted before it but never twice.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
// cmocka needs the headers above first.
#include <cmocka.h>

#include "runtime_pairs_linux.h"

#define BUCKET ((uint64_t)1 << ZXS_RT_HISTORY_SHIFT)

static zxs_rt_pairs_t g_pairs;

static int setup(void** state) {
  (void)state;
  memset(&g_pairs, 0, sizeof(g_pairs));
  g_pairs.history = calloc(1, sizeof(zxs_rt_history_t));
  return g_pairs.history == NULL ? -1 : 0;
}

static int teardown(void** state) {
  (void)state;
  free(g_pairs.history);
  return 0;
}

static void fault(uint64_t begin, uint64_t end) {
  zxs_rt_pairs_fault_begin(&g_pairs, begin);
  zxs_rt_pairs_fault_end(&g_pairs, end);
}

static int64_t faults_between(uint64_t since, uint64_t until) {
  int64_t f, l;
  zxs_rt_history_between(g_pairs.history, since, until, &f, &l);
  assert_int_equal(l, 0);
  return f;
}

static void test_interval_share(void** state) {
  (void)state;
  fault(10 * BUCKET, 20 * BUCKET);  // ten whole buckets
  assert_int_equal(g_pairs.page_fault_ns, (int64_t)(10 * BUCKET));
  assert_int_equal(faults_between(0, 100 * BUCKET), (int64_t)(10 * BUCKET));
  assert_int_equal(faults_between(12 * BUCKET, 15 * BUCKET - 1), (int64_t)(3 * BUCKET));
  assert_int_equal(faults_between(20 * BUCKET, 30 * BUCKET), 0);
  // Half of an edge bucket counts half.
  assert_int_equal(faults_between(12 * BUCKET + BUCKET / 2, 13 * BUCKET - 1),
                   (int64_t)(BUCKET / 2));
}

static void test_faults_apart_from_locks(void** state) {
  (void)state;
  const zxs_rt_tracepoint_t tp = {.found = true, .addr_offset = 0, .flags_offset = 8};
  uint8_t raw[16] = {0};
  raw[0] = 0x40;  // lock address 0x40, not a spin lock
  fault(5 * BUCKET, 6 * BUCKET);
  zxs_rt_pairs_lock_begin(&g_pairs, &tp, 6 * BUCKET, raw, sizeof(raw));
  zxs_rt_pairs_lock_end(&g_pairs, &tp, 8 * BUCKET, raw, sizeof(raw));
  int64_t f, l;
  zxs_rt_history_between(g_pairs.history, 0, 10 * BUCKET, &f, &l);
  assert_int_equal(f, (int64_t)BUCKET);
  assert_int_equal(l, (int64_t)(2 * BUCKET));
}

static void test_old_buckets_are_reused(void** state) {
  (void)state;
  fault(3 * BUCKET, 4 * BUCKET);
  const uint64_t later = (3 + ZXS_RT_HISTORY_BUCKETS) * BUCKET;  // the same slot, one lap on
  fault(later, later + BUCKET / 4);
  assert_int_equal(faults_between(3 * BUCKET, 4 * BUCKET - 1), 0);  // gone
  assert_int_equal(faults_between(later, later + BUCKET - 1), (int64_t)(BUCKET / 4));
  // An interval longer than the history counts what it holds.
  assert_int_equal(faults_between(0, later + BUCKET), (int64_t)(BUCKET / 4));
}

static void test_fault_edge_never_overlaps(void** state) {
  (void)state;
  g_pairs.fault_edge_ns = (int64_t)(BUCKET / 2);
  fault(10 * BUCKET, 11 * BUCKET);  // its edge: the half bucket before it
  assert_int_equal(g_pairs.page_fault_ns, (int64_t)(BUCKET + BUCKET / 2));
  assert_int_equal(faults_between(9 * BUCKET, 10 * BUCKET - 1), (int64_t)(BUCKET / 2));
  // The next fault begins a quarter bucket after: its edge only reaches back to that end.
  fault(11 * BUCKET + BUCKET / 4, 12 * BUCKET);
  assert_int_equal(g_pairs.page_fault_ns, (int64_t)(2 * BUCKET + BUCKET / 2));
  assert_int_equal(faults_between(0, 20 * BUCKET), g_pairs.page_fault_ns);
  assert_int_equal(g_pairs.faults, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_interval_share, setup, teardown),
      cmocka_unit_test_setup_teardown(test_faults_apart_from_locks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_old_buckets_are_reused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fault_edge_never_overlaps, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
