// The recorder's overwrite-oldest regions (percpu_ring.h): the latest samples, in ticket order,
// within a time range; a busy slot loses the newer sample; readers racing writers (threads)
// never see a torn record.
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
// cmocka needs the headers above first.
#include <cmocka.h>

#include "fake_platform.h"
#include "percpu_ring.h"
#include "sample_writer.h"

#define SLOTS 4u
#define GEN 5u

static zxs_percpu_t g_cpu;
static uint64_t* g_region;

static int setup(void** state) {
  (void)state;
  fake_reset();
  memset(&g_cpu, 0, sizeof(g_cpu));
  g_region = calloc(SLOTS, ZXS_RING_SLOT_BYTES);
  assert_non_null(g_region);
  zxs_percpu_setup_ring(&g_cpu, (uint8_t*)g_region, SLOTS, GEN);
  zxs_percpu_enable_writes(&g_cpu);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  free(g_region);
  return 0;
}

static zxs_write_result_t write_sample(uint64_t ticks, size_t depth) {
  uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
  for (size_t i = 0; i < depth; i++) pcs[i] = 0x400000 + ticks * 0x100 + i;
  assert_true(zxs_percpu_begin_write(&g_cpu));
  zxs_write_result_t result = zxs_sample_write(&g_cpu, GEN, ticks, 1, 2, pcs, depth);
  zxs_percpu_end_write(&g_cpu);
  return result;
}

// The records of `buf`, checked whole; their timestamps in *ticks (at most `max`).
static size_t read_ticks(const zxs_fxt_buf_t* buf, uint64_t* ticks, size_t max) {
  zxs_fxt_region_iter_t it;
  zxs_fxt_record_t rec;
  size_t n = 0;
  zxs_fxt_region_iter_init(&it, buf->data, buf->len);
  while (zxs_fxt_region_next(&it, &rec)) {
    assert_int_equal(rec.kind, ZXS_FXT_RECORD_LARGE_BLOB);
    const uint64_t* pcs = rec.blob.payload.data;
    assert_int_equal(pcs[0], 0x400000 + rec.blob.ticks * 0x100);  // not torn
    if (n < max) ticks[n] = rec.blob.ticks;
    n++;
  }
  assert_int_equal(it.status, ZX_OK);
  return n;
}

static void test_keeps_latest_in_order(void** state) {
  (void)state;
  for (uint64_t t = 1; t <= 10; t++) assert_int_equal(write_sample(t, 1 + t % 5), ZXS_WRITE_OK);
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  assert_int_equal(zxs_percpu_ring_copy((uint8_t*)g_region, SLOTS, 0, UINT64_MAX, &buf), ZX_OK);
  uint64_t ticks[8];
  assert_int_equal(read_ticks(&buf, ticks, 8), 4);
  for (size_t i = 0; i < 4; i++) assert_int_equal(ticks[i], 7 + i);
  zxs_fxt_buf_reset(&buf);
  assert_int_equal(zxs_percpu_ring_copy((uint8_t*)g_region, SLOTS, 8, 9, &buf), ZX_OK);
  assert_int_equal(read_ticks(&buf, ticks, 8), 2);
  assert_int_equal(ticks[0], 8);
  assert_int_equal(ticks[1], 9);
  zxs_fxt_buf_destroy(&buf);
  assert_int_equal(atomic_load(&g_cpu.written), 10);
}

static void test_busy_slot_drops_newer(void** state) {
  (void)state;
  assert_int_equal(write_sample(1, 3), ZXS_WRITE_OK);
  // Slot 1 is being written by a preempted writer (odd sequence): ticket 1 loses, ticket 2 not.
  atomic_store((_Atomic uint64_t*)(void*)((uint8_t*)g_region + ZXS_RING_SLOT_BYTES), 1);
  assert_int_equal(write_sample(2, 3), ZXS_WRITE_BUSY);
  assert_int_equal(write_sample(3, 3), ZXS_WRITE_OK);
  assert_int_equal(atomic_load(&g_cpu.dropped_other), 1);
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  assert_int_equal(zxs_percpu_ring_copy((uint8_t*)g_region, SLOTS, 0, UINT64_MAX, &buf), ZX_OK);
  uint64_t ticks[4];
  assert_int_equal(read_ticks(&buf, ticks, 4), 2);
  assert_int_equal(ticks[0], 1);
  assert_int_equal(ticks[1], 3);
  zxs_fxt_buf_destroy(&buf);
}

static atomic_bool g_stop;

static void* writer_main(void* arg) {
  uint64_t t = (uint64_t)(uintptr_t)arg;
  while (!atomic_load(&g_stop)) {
    uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
    const size_t depth = 1 + t % ZX_SAMPLER_MAX_FRAMES;
    for (size_t i = 0; i < depth; i++) pcs[i] = 0x400000 + t * 0x100 + i;
    if (zxs_percpu_begin_write(&g_cpu)) {
      (void)zxs_sample_write(&g_cpu, GEN, t, 1, 2, pcs, depth);
      zxs_percpu_end_write(&g_cpu);
    }
    t += 2;
  }
  return NULL;
}

// Two writers on one CPU's ring (a handler preempted by another) while a reader copies it.
static void test_reader_races_writers(void** state) {
  (void)state;
  atomic_store(&g_stop, false);
  pthread_t writers[2];
  for (uintptr_t i = 0; i < 2; i++) {
    assert_int_equal(pthread_create(&writers[i], NULL, writer_main, (void*)(i + 1)), 0);
  }
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  for (int round = 0; round < 2000; round++) {
    zxs_fxt_buf_reset(&buf);
    assert_int_equal(zxs_percpu_ring_copy((uint8_t*)g_region, SLOTS, 0, UINT64_MAX, &buf), ZX_OK);
    uint64_t ticks[SLOTS];
    assert_true(read_ticks(&buf, ticks, SLOTS) <= SLOTS);
  }
  atomic_store(&g_stop, true);
  for (int i = 0; i < 2; i++) pthread_join(writers[i], NULL);
  zxs_fxt_buf_destroy(&buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_keeps_latest_in_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_busy_slot_drops_newer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reader_races_writers, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
