// The integer map internal code shares (src/util/u64_map.h): what is put is got back, across
// growth and for the edge keys; UINT64_MAX is refused and leaves the map as it was.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

// cmocka needs the headers above first.
#include <cmocka.h>

#include "u64_map.h"

static void test_put_get_across_growth(void** state) {
  (void)state;
  zxs_u64_map_t m = {0};
  uint64_t v = 7;
  assert_false(zxs_u64_map_get(&m, 1, &v));  // empty, never grown
  assert_int_equal(v, 7);
  // Keys of every shape: 0, sequential pids, huge kernel addresses; past several doublings.
  for (uint64_t i = 0; i < 5000; i++) {
    assert_true(zxs_u64_map_put(&m, i, i * 3));
    assert_true(zxs_u64_map_put(&m, 0xffffffff80000000u + i * 16, i));
  }
  assert_int_equal(m.used, 10000);
  assert_true(2 * m.used <= m.size);
  for (uint64_t i = 0; i < 5000; i++) {
    assert_true(zxs_u64_map_get(&m, i, &v));
    assert_int_equal(v, i * 3);
    assert_true(zxs_u64_map_get(&m, 0xffffffff80000000u + i * 16, &v));
    assert_int_equal(v, i);
  }
  assert_false(zxs_u64_map_get(&m, 5000, &v));
  zxs_u64_map_free(&m);
  assert_null(m.keys);
  assert_int_equal(m.size, 0);
}

static void test_overwrite_keeps_count(void** state) {
  (void)state;
  zxs_u64_map_t m = {0};
  assert_true(zxs_u64_map_put(&m, 42, 1));
  assert_true(zxs_u64_map_put(&m, 42, 2));
  assert_int_equal(m.used, 1);
  uint64_t v = 0;
  assert_true(zxs_u64_map_get(&m, 42, &v));
  assert_int_equal(v, 2);
  zxs_u64_map_free(&m);
}

static void test_max_key_refused(void** state) {
  (void)state;
  zxs_u64_map_t m = {0};
  assert_false(zxs_u64_map_put(&m, UINT64_MAX, 1));
  assert_int_equal(m.used, 0);
  assert_true(zxs_u64_map_put(&m, UINT64_MAX - 1, 5));
  uint64_t v = 0;
  assert_false(zxs_u64_map_get(&m, UINT64_MAX, &v));
  assert_true(zxs_u64_map_get(&m, UINT64_MAX - 1, &v));
  assert_int_equal(v, 5);
  zxs_u64_map_free(&m);
}

static void test_walk_sees_every_key_once(void** state) {
  (void)state;
  zxs_u64_map_t m = {0};
  for (uint64_t i = 0; i < 300; i++) assert_true(zxs_u64_map_put(&m, i * 1000, 0));
  uint64_t sum = 0, count = 0, key;
  for (size_t slot = 0; slot < m.size; slot++) {
    if (zxs_u64_map_key_at(&m, slot, &key)) {
      sum += key;
      count++;
    }
  }
  assert_int_equal(count, 300);
  assert_int_equal(sum, 1000u * 299u * 300u / 2u);
  zxs_u64_map_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_put_get_across_growth),
      cmocka_unit_test(test_overwrite_keeps_count),
      cmocka_unit_test(test_max_key_refused),
      cmocka_unit_test(test_walk_sees_every_key_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
