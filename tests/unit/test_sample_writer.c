// The sample writer: the kernel's record, byte for byte, and what happens around it.
// Expected records are spelled out word by word here, not produced by the encoder.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
// cmocka needs the headers above first.
#include <cmocka.h>

#include "fake_platform.h"
#include "sample_writer.h"

#define REGION_WORDS 512  // 4096 bytes
#define GEN 3u
#define TS 0x1122334455667788ull
#define PID 42u
#define TID 4711u

static zxs_percpu_t g_cpu;
static uint64_t g_region[REGION_WORDS];
static uint64_t g_pcs[65];

static int setup(void** state) {
  (void)state;
  fake_reset();
  memset(&g_cpu, 0, sizeof(g_cpu));
  memset(g_region, 0, sizeof(g_region));
  for (int i = 0; i < 65; i++) g_pcs[i] = 0x7f0000001000ull + 0x10u * (uint64_t)i;
  zxs_percpu_setup(&g_cpu, (uint8_t*)g_region, sizeof(g_region), GEN);
  zxs_percpu_enable_writes(&g_cpu);
  return 0;
}

// As the sampling path does: the write is held around zxs_sample_write(). DISABLED stands for
// "begin_write refused" (writes off), which the writer itself never sees.
#define ZXS_WRITE_DISABLED ((zxs_write_result_t)100)
static zxs_write_result_t write_gen_n(uint32_t gen, size_t n) {
  if (n == 0 || n > 64) return zxs_sample_write(&g_cpu, gen, TS, PID, TID, g_pcs, n);
  if (!zxs_percpu_begin_write(&g_cpu)) return ZXS_WRITE_DISABLED;
  zxs_write_result_t result = zxs_sample_write(&g_cpu, gen, TS, PID, TID, g_pcs, n);
  zxs_percpu_end_write(&g_cpu);
  return result;
}

static zxs_write_result_t write_n(size_t n) { return write_gen_n(GEN, n); }

// The record the Zircon kernel writes (fxt-records.md), spelled out.
static void expect_record(const uint64_t* w, size_t n) {
  assert_int_equal(w[0], 0xFull | ((6ull + n) << 4));
  assert_int_equal(w[1], 0);
  assert_int_equal(w[2], TS);
  assert_int_equal(w[3], PID);
  assert_int_equal(w[4], TID);
  assert_int_equal(w[5], 8ull * n);
  for (size_t i = 0; i < n; i++) assert_int_equal(w[6 + i], g_pcs[i]);
}

// Walks the region as a reader does: records until the first zero header. Returns data bytes.
static size_t data_bytes(void) {
  size_t at = 0;
  while (at < REGION_WORDS && g_region[at] != 0) {
    size_t words = (size_t)((g_region[at] >> 4) & 0xffffffffu);
    assert_int_equal(g_region[at] & 0xF, 0xF);
    assert_true(words >= 7 && at + words <= REGION_WORDS);
    at += words;
  }
  return at * 8;
}

static void test_one_pc_record_is_the_kernels(void** state) {
  (void)state;
  assert_int_equal(write_n(1), ZXS_WRITE_OK);
  const uint64_t want[8] = {0x7F, 0, TS, PID, TID, 8, g_pcs[0], 0};
  assert_memory_equal(g_region, want, sizeof(want));  // 7 words, then the end marker
  assert_int_equal(atomic_load(&g_cpu.written), 1);
  assert_int_equal(atomic_load(&g_cpu.reserved), 56);
  assert_int_equal(zxs_percpu_pending_writes(&g_cpu), 0);  // the write ended
}

static void test_64_pc_record_is_the_kernels(void** state) {
  (void)state;
  assert_int_equal(write_n(64), ZXS_WRITE_OK);
  assert_int_equal(g_region[0], 0x46F);  // golden: 70 words
  assert_int_equal(g_region[5], 512);
  expect_record(g_region, 64);
  assert_int_equal(g_region[70], 0);
  // Little-endian bytes of the header, as a reader of the mapped region sees them.
  const uint8_t header_bytes[8] = {0x6F, 0x04, 0, 0, 0, 0, 0, 0};
  assert_memory_equal(g_region, header_bytes, 8);
}

static void test_records_follow_each_other(void** state) {
  (void)state;
  assert_int_equal(write_n(3), ZXS_WRITE_OK);
  assert_int_equal(write_n(64), ZXS_WRITE_OK);
  assert_int_equal(write_n(1), ZXS_WRITE_OK);
  expect_record(&g_region[0], 3);
  expect_record(&g_region[9], 64);
  expect_record(&g_region[79], 1);
  assert_int_equal(data_bytes(), (9 + 70 + 7) * 8);
  assert_int_equal(atomic_load(&g_cpu.written), 3);
}

static void test_region_fills_exactly_then_full(void** state) {
  (void)state;
  // 7 records of 64 PCs (560 bytes each) and one of 16 (176 bytes) make exactly 4096.
  for (int i = 0; i < 7; i++) assert_int_equal(write_n(64), ZXS_WRITE_OK);
  assert_int_equal(write_n(16), ZXS_WRITE_OK);
  assert_int_equal(atomic_load(&g_cpu.reserved), sizeof(g_region));
  expect_record(&g_region[7 * 70], 16);
  assert_int_equal(data_bytes(), sizeof(g_region));

  assert_int_equal(write_n(1), ZXS_WRITE_FULL);
  assert_true(atomic_load(&g_cpu.full));
  assert_int_equal(atomic_load(&g_cpu.written), 8);
  assert_int_equal(atomic_load(&g_cpu.dropped_full), 1);
  assert_int_equal(atomic_load(&g_cpu.dropped_other), 0);
  assert_int_equal(zxs_percpu_pending_writes(&g_cpu), 0);
}

static void test_full_leaves_tail_zero(void** state) {
  (void)state;
  for (int i = 0; i < 7; i++) assert_int_equal(write_n(64), ZXS_WRITE_OK);  // 3920 bytes
  assert_int_equal(write_n(64), ZXS_WRITE_FULL);                            // 176 bytes left
  // A smaller record would fit in the tail, but writes on this CPU have stopped.
  assert_int_equal(write_n(1), ZXS_WRITE_FULL);
  assert_int_equal(write_n(16), ZXS_WRITE_FULL);
  for (size_t i = 7 * 70; i < REGION_WORDS; i++) assert_int_equal(g_region[i], 0);
  assert_int_equal(data_bytes(), 7 * 560);  // the first zero word ends the data
  assert_int_equal(atomic_load(&g_cpu.written), 7);
  assert_int_equal(atomic_load(&g_cpu.dropped_full), 3);

  // Still full after a restart.
  zxs_percpu_shutdown(&g_cpu, 1, NULL, NULL);
  zxs_percpu_enable_writes(&g_cpu);
  assert_int_equal(write_n(1), ZXS_WRITE_FULL);
  assert_int_equal(atomic_load(&g_cpu.dropped_full), 4);
  assert_int_equal(data_bytes(), 7 * 560);
}

static void test_restart_continues(void** state) {
  (void)state;
  assert_int_equal(write_n(2), ZXS_WRITE_OK);
  zxs_percpu_shutdown(&g_cpu, 1, NULL, NULL);
  assert_int_equal(write_n(2), ZXS_WRITE_DISABLED);
  zxs_percpu_enable_writes(&g_cpu);
  assert_int_equal(write_n(5), ZXS_WRITE_OK);
  expect_record(&g_region[0], 2);
  expect_record(&g_region[8], 5);
  assert_int_equal(data_bytes(), (8 + 11) * 8);
}

static void test_stale_session(void** state) {
  (void)state;
  assert_int_equal(write_gen_n(GEN + 1, 4), ZXS_WRITE_STALE);
  assert_int_equal(write_gen_n(GEN - 1, 4), ZXS_WRITE_STALE);
  assert_int_equal(g_region[0], 0);
  assert_int_equal(atomic_load(&g_cpu.reserved), 0);
  assert_int_equal(atomic_load(&g_cpu.dropped_other), 2);
  assert_int_equal(atomic_load(&g_cpu.written), 0);
  assert_int_equal(zxs_percpu_pending_writes(&g_cpu), 0);  // the write ended

  // A released CPU (generation 0) is stale for every session.
  zxs_percpu_shutdown(&g_cpu, 1, NULL, NULL);
  zxs_percpu_release(&g_cpu);
  zxs_percpu_enable_writes(&g_cpu);  // even if someone enabled it by mistake
  assert_int_equal(write_n(1), ZXS_WRITE_STALE);
  zxs_percpu_disable_writes(&g_cpu);
}

static void test_disabled(void** state) {
  (void)state;
  zxs_percpu_disable_writes(&g_cpu);
  assert_int_equal(write_n(1), ZXS_WRITE_DISABLED);
  assert_int_equal(g_region[0], 0);
  // DISABLED is the normal end of a run: not counted.
  assert_int_equal(atomic_load(&g_cpu.written), 0);
  assert_int_equal(atomic_load(&g_cpu.dropped_full), 0);
  assert_int_equal(atomic_load(&g_cpu.dropped_other), 0);
  assert_int_equal(zxs_percpu_pending_writes(&g_cpu), 0);
}

static void test_invalid_counts(void** state) {
  (void)state;
  assert_int_equal(write_n(0), ZXS_WRITE_INVALID);
  assert_int_equal(write_n(65), ZXS_WRITE_INVALID);
  assert_int_equal(g_region[0], 0);
  assert_int_equal(atomic_load(&g_cpu.reserved), 0);
  assert_int_equal(atomic_load(&g_cpu.dropped_other), 2);
  assert_int_equal(zxs_percpu_pending_writes(&g_cpu), 0);
  assert_false(atomic_load(&g_cpu.full));
  assert_int_equal(write_n(1), ZXS_WRITE_OK);  // and nothing was spoiled
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_one_pc_record_is_the_kernels, setup),
      cmocka_unit_test_setup(test_64_pc_record_is_the_kernels, setup),
      cmocka_unit_test_setup(test_records_follow_each_other, setup),
      cmocka_unit_test_setup(test_region_fills_exactly_then_full, setup),
      cmocka_unit_test_setup(test_full_leaves_tail_zero, setup),
      cmocka_unit_test_setup(test_restart_continues, setup),
      cmocka_unit_test_setup(test_stale_session, setup),
      cmocka_unit_test_setup(test_disabled, setup),
      cmocka_unit_test_setup(test_invalid_counts, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
