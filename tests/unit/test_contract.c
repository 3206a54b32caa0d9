// The sampler contract (docs/sampler-contract.md), status by status, over the fake backend.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/zxsampler.h>

#include "fake_platform.h"
#include "sampling.h"

static zx_handle_t g_rsrc;

static zx_sampler_config_t good_config(void) {
  zx_sampler_config_t c = {.period = 1000000, .buffer_size = 5000, .iobuffer_discipline = 0};
  return c;
}

static int setup(void** state) {
  (void)state;
  fake_reset();
  // Forget this thread's own handle so each test records the stack bounds it sets up.
  zxs_core_thread_exited(fake_self_koid());
  zxs_set_debugging_syscalls_enabled(true);
  assert_int_equal(zxs_debug_resource_get(&g_rsrc), ZX_OK);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  assert_int_equal(zxs_handle_close(g_rsrc), ZX_OK);
  return 0;
}

static zx_handle_t create_ok(void) {
  zx_sampler_config_t c = good_config();
  zx_handle_t iob;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &iob), ZX_OK);
  assert_int_not_equal(iob, ZX_HANDLE_INVALID);
  return iob;
}

// Reads the records of a mapped region: returns their count, checks each is a sample.
static size_t count_records(const uint64_t* words, size_t size_bytes) {
  size_t n = 0, i = 0;
  while (i < size_bytes / 8 && words[i] != 0) {
    size_t len = (words[i] >> 4) & 0xffffffffu;
    assert_int_equal(words[i] & 0xf, 15);
    assert_true(len >= 7 && i + len <= size_bytes / 8);
    i += len;
    n++;
  }
  return n;
}

static void create_statuses_in_order(void** state) {
  (void)state;
  zx_sampler_config_t c = good_config();
  zx_handle_t iob = 0xdead;

  if (!zxs_sampler_compiled_in()) {
    assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &iob), ZX_ERR_NOT_SUPPORTED);
    assert_int_equal(iob, ZX_HANDLE_INVALID);
    return;
  }
  // 1. Switched off at run time beats everything else.
  zxs_set_debugging_syscalls_enabled(false);
  assert_int_equal(zxs_sampler_create(0x1234, 7, NULL, 0, &iob), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(iob, ZX_HANDLE_INVALID);
  zxs_set_debugging_syscalls_enabled(true);
  // 2. The resource: invalid, then wrong type; both before options and config.
  iob = 0xdead;
  assert_int_equal(zxs_sampler_create(0x1234, 7, NULL, 0, &iob), ZX_ERR_BAD_HANDLE);
  assert_int_equal(iob, ZX_HANDLE_INVALID);
  assert_int_equal(zxs_sampler_create(zxs_process_self(), 7, NULL, 0, &iob), ZX_ERR_WRONG_TYPE);
  // 3. Options before config.
  assert_int_equal(zxs_sampler_create(g_rsrc, 1, NULL, 0, &iob), ZX_ERR_INVALID_ARGS);
  // 4. Config.
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, NULL, sizeof(c), &iob), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c) - 1, &iob), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c) + 8, &iob), ZX_ERR_INVALID_ARGS);
  zx_sampler_config_t bad = c;
  bad.iobuffer_discipline = 1;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &bad, sizeof(bad), &iob), ZX_ERR_INVALID_ARGS);
  bad = c;
  bad.buffer_size = 0;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &bad, sizeof(bad), &iob), ZX_ERR_INVALID_ARGS);
  bad.buffer_size = ZX_SAMPLER_MAX_BUFFER_SIZE + 1;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &bad, sizeof(bad), &iob), ZX_ERR_INVALID_ARGS);
  bad = c;
  bad.period = ZX_SAMPLER_MIN_PERIOD - 1;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &bad, sizeof(bad), &iob), ZX_ERR_INVALID_ARGS);
  bad.period = -1;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &bad, sizeof(bad), &iob), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), NULL), ZX_ERR_INVALID_ARGS);
  // Boundaries that are valid: minimum period, maximum buffer, huge period.
  bad = c;
  bad.period = ZX_SAMPLER_MIN_PERIOD;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &bad, sizeof(bad), &iob), ZX_OK);
  // 5. The singleton, whatever the second config says.
  zx_handle_t second = 0xdead;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &second), ZX_ERR_ALREADY_EXISTS);
  assert_int_equal(second, ZX_HANDLE_INVALID);
  assert_int_equal(zxs_handle_close(iob), ZX_OK);
  bad.period = INT64_MAX;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &bad, sizeof(bad), &iob), ZX_OK);
  assert_int_equal(zxs_handle_close(iob), ZX_OK);
}

static void create_out_of_memory_leaves_nothing(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  zx_sampler_config_t c = good_config();
  zx_handle_t iob;
  uint32_t before = fake_live_regions();
  fake_fail_next_region_create();
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &iob), ZX_ERR_NO_MEMORY);
  assert_int_equal(iob, ZX_HANDLE_INVALID);
  assert_int_equal(fake_live_regions(), before);
  iob = create_ok();  // and no session was left behind
  zxs_handle_close(iob);
}

static void regions_one_per_online_cpu_page_rounded(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  const uint32_t cpus[] = {0, 2, 3};  // CPU 1 offline
  fake_set_online_cpus(cpus, 3);
  zx_handle_t iob = create_ok();
  zx_info_iob_t info;
  size_t actual = 0, avail = 0;
  assert_int_equal(zxs_object_get_info(iob, ZX_INFO_IOB, &info, sizeof(info), &actual, &avail),
                   ZX_OK);
  assert_int_equal(info.region_count, 3);
  assert_int_equal(info.options, 0);
  zx_iob_region_info_t regions[4];
  assert_int_equal(
      zxs_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions, sizeof(regions), &actual, &avail),
      ZX_OK);
  assert_int_equal(actual, 3);
  assert_int_equal(avail, 3);
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(regions[i].region.size, 8192);  // 5000 rounded to 4096-byte pages
    assert_int_equal(regions[i].region.discipline.type, ZX_IOB_DISCIPLINE_NONE);
    assert_int_equal(regions[i].region.type, ZX_IOB_REGION_TYPE_PRIVATE);
    // The kernel's access bits: its endpoint maps read-write, the program's read-only (0x13).
    assert_int_equal(regions[i].region.access, ZX_IOB_ACCESS_EP0_CAN_MAP_READ |
                                                   ZX_IOB_ACCESS_EP0_CAN_MAP_WRITE |
                                                   ZX_IOB_ACCESS_EP1_CAN_MAP_READ);
    assert_int_equal(regions[i].region.access, 0x13);
    assert_int_not_equal(regions[i].koid, ZX_KOID_INVALID);
  }
  // A buffer for one: actual 1, avail 3.
  assert_int_equal(
      zxs_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions, sizeof(regions[0]), &actual, &avail),
      ZX_OK);
  assert_int_equal(actual, 1);
  assert_int_equal(avail, 3);
  assert_int_equal(zxs_object_get_info(iob, ZX_INFO_IOB, &info, sizeof(info) - 1, NULL, NULL),
                   ZX_ERR_BUFFER_TOO_SMALL);
  assert_int_equal(zxs_object_get_info(iob, 9999, &info, sizeof(info), NULL, NULL),
                   ZX_ERR_NOT_SUPPORTED);
  // Regions are zero-filled.
  zx_vaddr_t addr;
  assert_int_equal(
      zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, 2, 0, 8192, &addr), ZX_OK);
  const uint8_t* bytes = (const uint8_t*)addr;
  for (size_t i = 0; i < 8192; i++) assert_int_equal(bytes[i], 0);
  assert_int_equal(zxs_vmar_unmap(zxs_vmar_root_self(), addr, 8192), ZX_OK);
  zxs_handle_close(iob);
}

static void attach_checks_thread_then_iob(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  zx_handle_t iob = create_ok();
  zx_handle_t self = zxs_thread_self();
  // Thread handle first: a wrong-type thread beats an invalid IOBuffer.
  assert_int_equal(zxs_sampler_attach(0x5555, iob), ZX_ERR_WRONG_TYPE);
  assert_int_equal(zxs_sampler_attach(0x5555, 0x7777), ZX_ERR_BAD_HANDLE);
  zx_handle_t no_read;
  assert_int_equal(zxs_handle_duplicate(self, ZX_RIGHT_DUPLICATE, &no_read), ZX_OK);
  assert_int_equal(zxs_sampler_attach(iob, no_read), ZX_ERR_ACCESS_DENIED);
  // Then the IOBuffer.
  assert_int_equal(zxs_sampler_attach(0x5555, self), ZX_ERR_BAD_HANDLE);
  assert_int_equal(zxs_sampler_attach(self, self), ZX_ERR_WRONG_TYPE);
  zx_handle_t no_profile;
  assert_int_equal(
      zxs_handle_duplicate(iob, ZX_RIGHT_READ | ZX_RIGHT_MAP | ZX_RIGHT_INSPECT, &no_profile),
      ZX_OK);
  assert_int_equal(zxs_sampler_attach(no_profile, self), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_sampler_start(no_profile), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_sampler_stop(no_profile), ZX_ERR_ACCESS_DENIED);
  // Attaching twice is not an error.
  assert_int_equal(zxs_sampler_attach(iob, self), ZX_OK);
  assert_int_equal(zxs_sampler_attach(iob, self), ZX_OK);
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.attached_threads, 1);
  zxs_handle_close(no_read);
  zxs_handle_close(no_profile);
  zxs_handle_close(iob);
}

static void attach_exited_thread_is_bad_state(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  zx_handle_t iob = create_ok();
  pthread_t other = (pthread_t)0x1234;
  fake_register_thread(other, 5555, true);
  zx_handle_t thread;
  assert_int_equal(zxs_thread_get(other, &thread), ZX_OK);
  fake_set_thread_alive(5555, false);
  assert_int_equal(zxs_sampler_attach(iob, thread), ZX_ERR_BAD_STATE);
  // A thread that exits while attached is detached by itself.
  fake_set_thread_alive(5555, true);
  assert_int_equal(zxs_sampler_attach(iob, thread), ZX_OK);
  fake_set_thread_alive(5555, false);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  assert_false(fake_source_armed(5555, NULL));
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.attached_threads, 0);
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  zxs_handle_close(thread);
  zxs_handle_close(iob);
}

static void start_stop_state_errors(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  zx_handle_t iob = create_ok();
  assert_int_equal(zxs_sampler_stop(iob), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_sampler_attach(iob, zxs_thread_self()), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  assert_true(fake_source_armed(fake_self_koid(), NULL));
  uint32_t arms = fake_arm_count();
  assert_int_equal(zxs_sampler_start(iob), ZX_ERR_BAD_STATE);
  assert_int_equal(fake_arm_count(), arms);  // nothing changed
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  assert_false(fake_source_armed(fake_self_koid(), NULL));
  assert_int_equal(zxs_sampler_stop(iob), ZX_ERR_BAD_STATE);
  // Switched off: every call says so.
  zxs_set_debugging_syscalls_enabled(false);
  assert_int_equal(zxs_sampler_start(iob), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_sampler_stop(iob), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_sampler_attach(iob, zxs_thread_self()), ZX_ERR_NOT_SUPPORTED);
  zxs_set_debugging_syscalls_enabled(true);
  zxs_handle_close(iob);
}

// A crafted stack: three frames, each {saved fp, return address}.
static uint64_t g_stack[64];

static zxs_regs_t crafted_regs(void) {
  memset(g_stack, 0, sizeof(g_stack));
  g_stack[8] = (uint64_t)(uintptr_t)&g_stack[16];  // frame 1
  g_stack[9] = 0x1111;
  g_stack[16] = (uint64_t)(uintptr_t)&g_stack[24];  // frame 2
  g_stack[17] = 0x2222;
  g_stack[24] = 0;  // outermost: next fp 0 ends the walk after its return address
  g_stack[25] = 0x3333;
  fake_set_self_stack((uintptr_t)g_stack, (uintptr_t)(g_stack + 64));
  zxs_regs_t regs = {.pc = 0xabc, .fp = (uintptr_t)&g_stack[8], .sp = (uintptr_t)g_stack};
  return regs;
}

static void samples_land_in_the_cpu_region_and_survive_close(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  zxs_regs_t regs = crafted_regs();  // before thread_self records the bounds
  zx_handle_t iob = create_ok();
  zx_handle_t self;
  assert_int_equal(zxs_thread_get(pthread_self(), &self), ZX_ERR_NOT_SUPPORTED);
  self = zxs_thread_self();
  assert_int_equal(zxs_sampler_attach(iob, self), ZX_OK);
  const uint64_t koid = fake_self_koid();
  // Not running: the source is not armed, nothing is written.
  assert_false(fake_fire(koid, &regs));
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  fake_set_current_cpu(2);
  fake_set_ticks(777);
  assert_true(fake_fire(koid, &regs));
  fake_set_current_cpu(1);
  assert_true(fake_fire(koid, &regs));
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);

  zx_vaddr_t addr2, addr1;
  assert_int_equal(
      zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, 2, 0, 8192, &addr2), ZX_OK);
  assert_int_equal(
      zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, 1, 0, 8192, &addr1), ZX_OK);
  const uint64_t* w = (const uint64_t*)addr2;
  assert_int_equal(w[0], 0xF | (10u << 4));  // 4 PCs: 10 words
  assert_int_equal(w[1], 0);
  assert_int_equal(w[2], 777);
  assert_int_equal(w[3], 42);  // the fake's pid
  assert_int_equal(w[4], koid);
  assert_int_equal(w[5], 32);
  assert_int_equal(w[6], 0xabc);
  assert_int_equal(w[7], 0x1111);
  assert_int_equal(w[8], 0x2222);
  assert_int_equal(w[9], 0x3333);
  assert_int_equal(w[10], 0);
  assert_int_equal(count_records((const uint64_t*)addr1, 8192), 1);

  // After stop: a late interrupt changes nothing.
  uint8_t before[8192];
  memcpy(before, (const void*)addr2, sizeof(before));
  fake_set_current_cpu(2);
  zxs_thread_slot_t* slot = fake_slot_of(koid);
  fake_fire_slot(slot, atomic_load(&slot->attach_gen), &regs);
  assert_memory_equal(before, (const void*)addr2, sizeof(before));

  // Restart continues after the last record.
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  assert_true(fake_fire(koid, &regs));
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  assert_int_equal(count_records(w, 8192), 2);
  assert_memory_equal(before, (const void*)addr2, 80);

  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.samples_written, 3);
  assert_int_equal(stats.dropped_full, 0);
  assert_string_equal(stats.backend, "fake");
  assert_string_equal(stats.unwinder, "fp");  // the in-process walk: frame pointers
  assert_int_equal(stats.source, ZXS_SOURCE_FAKE);

  // The mapping outlives the handle and a new session; a late signal for the old slot (its
  // attach generation) does nothing.
  memcpy(before, (const void*)addr2, sizeof(before));
  const uint32_t old_gen = atomic_load(&slot->attach_gen);
  assert_int_equal(zxs_handle_close(iob), ZX_OK);
  fake_fire_slot(slot, old_gen, &regs);
  zx_handle_t iob2 = create_ok();
  assert_int_equal(zxs_sampler_attach(iob2, self), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob2), ZX_OK);
  fake_fire_slot(slot, old_gen, &regs);  // stale payload: ignored even though slot is reused
  assert_int_equal(zxs_sampler_stop(iob2), ZX_OK);
  assert_memory_equal(before, (const void*)addr2, sizeof(before));
  zxs_sampler_stats_t stats2;
  assert_int_equal(zxs_sampler_get_stats(iob2, &stats2), ZX_OK);
  assert_int_equal(stats2.samples_written, 0);
  zxs_handle_close(iob2);
  assert_int_equal(zxs_vmar_unmap(zxs_vmar_root_self(), addr2, 8192), ZX_OK);
  assert_int_equal(zxs_vmar_unmap(zxs_vmar_root_self(), addr1, 8192), ZX_OK);
}

static void full_region_stops_writes_and_keeps_tail_zero(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  // 64 frames: 70 words = 560 bytes; 7 fit in 4096 bytes (3920), the 8th does not.
  static uint64_t deep[2 * 80];
  for (int i = 0; i < 79; i++) {
    deep[2 * i] = (uint64_t)(uintptr_t)&deep[2 * (i + 1)];
    deep[2 * i + 1] = 0x1000 + (uint64_t)i;
  }
  fake_set_self_stack((uintptr_t)deep, (uintptr_t)(deep + 160));
  zx_sampler_config_t c = good_config();
  c.buffer_size = 4096;
  zx_handle_t iob;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &iob), ZX_OK);
  zx_handle_t self = zxs_thread_self();
  assert_int_equal(zxs_sampler_attach(iob, self), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  fake_set_current_cpu(0);
  zxs_regs_t regs = {.pc = 0xfeed, .fp = (uintptr_t)deep, .sp = (uintptr_t)deep};
  for (int i = 0; i < 10; i++) assert_true(fake_fire(fake_self_koid(), &regs));
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.samples_written, 7);
  assert_int_equal(stats.dropped_full, 3);
  assert_int_equal(stats.walks_truncated, 7);
  zx_vaddr_t addr;
  assert_int_equal(
      zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, 0, 0, 4096, &addr), ZX_OK);
  const uint64_t* w = (const uint64_t*)addr;
  assert_int_equal(w[0], 0x46F);
  assert_int_equal(count_records(w, 4096), 7);
  for (size_t i = 7 * 70; i < 512; i++) assert_int_equal(w[i], 0);
  zxs_vmar_unmap(zxs_vmar_root_self(), addr, 4096);
  zxs_handle_close(iob);
}

// As the kernel: writes stop at buffer_size, not at the page-rounded end of the region; and a
// region that filled takes records again after the next start, where they still fit.
static void write_limit_is_buffer_size_and_start_reopens(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  static uint64_t deep[2 * 80];  // 64 frames: 560 bytes a record
  for (int i = 0; i < 79; i++) {
    deep[2 * i] = (uint64_t)(uintptr_t)&deep[2 * (i + 1)];
    deep[2 * i + 1] = 0x1000 + (uint64_t)i;
  }
  fake_set_self_stack((uintptr_t)deep, (uintptr_t)(deep + 160));
  zx_sampler_config_t c = good_config();
  c.buffer_size = 3900;  // a 4096-byte region: 6 deep records fit (3360), a 7th would end at 3920
  zx_handle_t iob;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &iob), ZX_OK);
  assert_int_equal(zxs_sampler_attach(iob, zxs_thread_self()), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  fake_set_current_cpu(0);
  zxs_regs_t regs = {.pc = 0xfeed, .fp = (uintptr_t)deep, .sp = (uintptr_t)deep};
  for (int i = 0; i < 8; i++) assert_true(fake_fire(fake_self_koid(), &regs));
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.samples_written, 6);
  assert_int_equal(stats.dropped_full, 2);
  // Restarted: a shallow record (a PC alone: 48 bytes) fits where the data ends; a deep one
  // still does not, and stops the CPU again until the next start.
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  zxs_regs_t shallow = {.pc = 0xbeef, .fp = 0, .sp = (uintptr_t)deep};
  assert_true(fake_fire(fake_self_koid(), &shallow));
  assert_true(fake_fire(fake_self_koid(), &regs));
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.samples_written, 7);
  assert_int_equal(stats.dropped_full, 3);
  zx_vaddr_t addr;
  assert_int_equal(
      zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, 0, 0, 4096, &addr), ZX_OK);
  const uint64_t* w = (const uint64_t*)addr;
  assert_int_equal(count_records(w, 4096), 7);
  assert_int_equal(w[6 * 70 + 6], 0xbeef);  // right after the sixth deep record, no gap
  for (size_t i = 6 * 70 + 6; i < 512; i++) {
    if (i > 6 * 70 + 6) assert_int_equal(w[i], 0);
  }
  zxs_vmar_unmap(zxs_vmar_root_self(), addr, 4096);
  zxs_handle_close(iob);
}

static void sample_on_cpu_without_region_is_counted(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  const uint32_t cpus[] = {0, 2, 3};  // CPU 1 comes online after create
  fake_set_online_cpus(cpus, 3);
  zxs_regs_t regs = crafted_regs();
  zx_handle_t iob = create_ok();
  assert_int_equal(zxs_sampler_attach(iob, zxs_thread_self()), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  fake_set_current_cpu(1);
  assert_true(fake_fire(fake_self_koid(), &regs));
  fake_set_current_cpu(2);
  assert_true(fake_fire(fake_self_koid(), &regs));
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.samples_written, 1);
  assert_int_equal(stats.dropped_other, 1);
  zxs_handle_close(iob);
}

// Records in region `index` of `iob` (mapped, counted, unmapped).
static size_t region_records(zx_handle_t iob, uint32_t index) {
  zx_vaddr_t addr;
  assert_int_equal(
      zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, index, 0, 8192, &addr),
      ZX_OK);
  const size_t n = count_records((const uint64_t*)addr, 8192);
  assert_int_equal(zxs_vmar_unmap(zxs_vmar_root_self(), addr, 8192), ZX_OK);
  return n;
}

// A sampler thread (macOS) samples a suspended thread through zxs_core_sample_suspended: the
// live stack is walked as in the thread itself, into the CPU the backend names, or, when it
// cannot name one, into the slot's region (index modulo the CPU count).
static void sampler_thread_entry_and_unknown_cpu(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  const uint32_t cpus[] = {0, 1, 2, 3, 4, 5, 6, 7};
  fake_set_online_cpus(cpus, 8);
  zxs_regs_t regs = crafted_regs();
  zx_handle_t iob = create_ok();
  assert_int_equal(zxs_sampler_attach(iob, zxs_thread_self()), ZX_OK);
  const uint64_t koid = fake_self_koid();
  assert_false(fake_fire_suspended(koid, 3, &regs));  // not running: not armed
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  fake_set_current_cpu(5);  // the sampler thread's CPU: not where the sample goes
  assert_true(fake_fire_suspended(koid, 3, &regs));
  assert_true(fake_fire_suspended(koid, ZXS_CPU_UNKNOWN, &regs));
  assert_true(fake_fire_suspended(koid, ZXS_CPU_UNKNOWN, &regs));
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  // A tick that was in flight at stop (the sampler read the slot before stop) writes nothing.
  zxs_thread_slot_t* slot = fake_slot_of(koid);
  zxs_core_sample_suspended(slot, atomic_load(&slot->attach_gen), 3, &regs);
  const uint32_t own = slot->index % 8;
  assert_int_equal(region_records(iob, 3), own == 3 ? 3 : 1);
  if (own != 3) assert_int_equal(region_records(iob, own), 2);
  assert_int_equal(region_records(iob, 5), own == 5 ? 2 : 0);
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.samples_written, 3);
  assert_int_equal(stats.walks_truncated, 0);
  zxs_handle_close(iob);
}

// The core reads the platform's capabilities: without CPU attribution an interrupt's sample
// goes by the same rule; without interrupting other threads, attaching one is NOT_SUPPORTED.
static void platform_capabilities_are_honoured(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  const uint32_t cpus[] = {0, 1, 2, 3, 4, 5, 6, 7};
  fake_set_online_cpus(cpus, 8);
  fake_set_caps(false, false);
  zxs_regs_t regs = crafted_regs();
  zx_handle_t iob = create_ok();
  pthread_t other = (pthread_t)0x4322;
  fake_register_thread(other, 6667, true);
  zx_handle_t thread;
  assert_int_equal(zxs_thread_get(other, &thread), ZX_OK);
  assert_int_equal(zxs_sampler_attach(iob, thread), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_sampler_attach(iob, zxs_thread_self()), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  const uint32_t own = fake_slot_of(fake_self_koid())->index % 8;
  fake_set_current_cpu((own + 1) % 8);
  assert_true(fake_fire(fake_self_koid(), &regs));
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  assert_int_equal(region_records(iob, own), 1);
  assert_int_equal(region_records(iob, (own + 1) % 8), 0);
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.attached_threads, 1);
  zxs_handle_close(thread);
  zxs_handle_close(iob);
}

static void attach_while_running_samples_from_then_on(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  zx_handle_t iob = create_ok();
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  assert_false(fake_source_armed(fake_self_koid(), NULL));
  assert_int_equal(zxs_sampler_attach(iob, zxs_thread_self()), ZX_OK);
  int64_t period = 0;
  assert_true(fake_source_armed(fake_self_koid(), &period));
  assert_int_equal(period, good_config().period);
  // A source that cannot be armed: the attach fails and leaves nothing attached.
  pthread_t other = (pthread_t)0x4321;
  fake_register_thread(other, 6666, true);
  zx_handle_t thread;
  assert_int_equal(zxs_thread_get(other, &thread), ZX_OK);
  fake_fail_next_arm();
  assert_int_equal(zxs_sampler_attach(iob, thread), ZX_ERR_NO_RESOURCES);
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.attached_threads, 1);
  assert_int_equal(stats.source_failures, 1);
  // Closing the last handle of a running session stops it.
  zxs_handle_close(thread);
  assert_int_equal(zxs_handle_close(iob), ZX_OK);
  assert_false(fake_source_armed(fake_self_koid(), NULL));
}

static void thread_exit_detaches(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  zx_handle_t iob = create_ok();
  assert_int_equal(zxs_sampler_attach(iob, zxs_thread_self()), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  zxs_core_thread_exited(fake_self_koid());
  assert_false(fake_source_armed(fake_self_koid(), NULL));
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.attached_threads, 0);
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  zxs_handle_close(iob);
}

static void handles_duplicate_close_and_last_close(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  zx_handle_t iob = create_ok();
  zx_info_handle_basic_t basic;
  assert_int_equal(
      zxs_object_get_info(iob, ZX_INFO_HANDLE_BASIC, &basic, sizeof(basic), NULL, NULL), ZX_OK);
  assert_int_equal(basic.type, ZX_OBJ_TYPE_IOB);
  assert_true(basic.rights & ZX_RIGHT_APPLY_PROFILE);
  zx_handle_t dup;
  assert_int_equal(zxs_handle_duplicate(iob, ZX_RIGHT_SAME_RIGHTS, &dup), ZX_OK);
  zx_handle_t weak;
  assert_int_equal(zxs_handle_duplicate(iob, ZX_RIGHT_INSPECT, &weak), ZX_OK);
  zx_handle_t nope;
  assert_int_equal(zxs_handle_duplicate(weak, ZX_RIGHT_SAME_RIGHTS, &nope), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_handle_duplicate(iob, (zx_rights_t)1u << 30, &nope), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_handle_duplicate(0x5555, ZX_RIGHT_SAME_RIGHTS, &nope), ZX_ERR_BAD_HANDLE);
  // Closing one handle keeps the session; the last close destroys it.
  assert_int_equal(zxs_handle_close(iob), ZX_OK);
  assert_int_equal(zxs_handle_close(iob), ZX_ERR_BAD_HANDLE);
  zx_sampler_config_t c = good_config();
  zx_handle_t other;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &other), ZX_ERR_ALREADY_EXISTS);
  assert_int_equal(zxs_handle_close(dup), ZX_OK);
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &other), ZX_ERR_ALREADY_EXISTS);
  assert_int_equal(zxs_handle_close(weak), ZX_OK);
  // A closed handle of the destroyed session.
  assert_int_equal(zxs_sampler_start(dup), ZX_ERR_BAD_HANDLE);
  other = create_ok();
  assert_int_equal(zxs_sampler_start(dup), ZX_ERR_BAD_HANDLE);
  assert_int_equal(zxs_handle_close(ZX_HANDLE_INVALID), ZX_OK);
  // Constant handles survive close.
  assert_int_equal(zxs_handle_close(zxs_thread_self()), ZX_OK);
  assert_int_equal(zxs_sampler_attach(other, zxs_thread_self()), ZX_OK);
  zxs_handle_close(other);
}

static void map_argument_checks(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  zx_handle_t iob = create_ok();
  const zx_handle_t vmar = zxs_vmar_root_self();
  zx_vaddr_t addr;
  assert_int_equal(
      zxs_vmar_map_iob(vmar, ZX_VM_PERM_READ | ZX_VM_PERM_WRITE, 0, iob, 0, 0, 4096, &addr),
      ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_vmar_map_iob(vmar, ZX_VM_PERM_READ, 0, iob, 0, 0, 0, &addr),
                   ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_vmar_map_iob(vmar, ZX_VM_PERM_READ, 0, iob, 0, 0, 100, &addr),
                   ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_vmar_map_iob(vmar, ZX_VM_PERM_READ, 0, iob, 0, 10, 4096, &addr),
                   ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_vmar_map_iob(vmar, 0, 0, iob, 0, 0, 4096, &addr), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_vmar_map_iob(vmar, ZX_VM_PERM_READ, 0, iob, 4, 0, 4096, &addr),
                   ZX_ERR_OUT_OF_RANGE);
  assert_int_equal(zxs_vmar_map_iob(vmar, ZX_VM_PERM_READ, 0, iob, 0, 4096, 8192, &addr),
                   ZX_ERR_OUT_OF_RANGE);
  assert_int_equal(
      zxs_vmar_map_iob(vmar, ZX_VM_PERM_READ, 0, iob, 0, UINT64_MAX - 4095, 4096, &addr),
      ZX_ERR_OUT_OF_RANGE);
  assert_int_equal(zxs_vmar_map_iob(iob, ZX_VM_PERM_READ, 0, iob, 0, 0, 4096, &addr),
                   ZX_ERR_WRONG_TYPE);
  zx_handle_t no_map;
  assert_int_equal(zxs_handle_duplicate(iob, ZX_RIGHT_READ | ZX_RIGHT_INSPECT, &no_map), ZX_OK);
  assert_int_equal(zxs_vmar_map_iob(vmar, ZX_VM_PERM_READ, 0, no_map, 0, 0, 4096, &addr),
                   ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_vmar_map_iob(vmar, ZX_VM_PERM_READ, 0, iob, 0, 4096, 4096, &addr), ZX_OK);
  assert_int_equal(zxs_vmar_unmap(vmar, addr, 4096), ZX_OK);
  zxs_handle_close(no_map);
  zxs_handle_close(iob);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(create_statuses_in_order, setup, teardown),
      cmocka_unit_test_setup_teardown(create_out_of_memory_leaves_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(regions_one_per_online_cpu_page_rounded, setup, teardown),
      cmocka_unit_test_setup_teardown(attach_checks_thread_then_iob, setup, teardown),
      cmocka_unit_test_setup_teardown(attach_exited_thread_is_bad_state, setup, teardown),
      cmocka_unit_test_setup_teardown(start_stop_state_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(samples_land_in_the_cpu_region_and_survive_close, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(full_region_stops_writes_and_keeps_tail_zero, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(write_limit_is_buffer_size_and_start_reopens, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(sample_on_cpu_without_region_is_counted, setup, teardown),
      cmocka_unit_test_setup_teardown(sampler_thread_entry_and_unknown_cpu, setup, teardown),
      cmocka_unit_test_setup_teardown(platform_capabilities_are_honoured, setup, teardown),
      cmocka_unit_test_setup_teardown(attach_while_running_samples_from_then_on, setup, teardown),
      cmocka_unit_test_setup_teardown(thread_exit_detaches, setup, teardown),
      cmocka_unit_test_setup_teardown(handles_duplicate_close_and_last_close, setup, teardown),
      cmocka_unit_test_setup_teardown(map_argument_checks, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
