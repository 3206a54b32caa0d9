// The public structs have Fuchsia's sizes and offsets, and statuses Fuchsia's values.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/zxsampler.h>

static void config_layout(void** state) {
  (void)state;
  assert_int_equal(sizeof(zx_sampler_config_t), 24);
  assert_int_equal(offsetof(zx_sampler_config_t, period), 0);
  assert_int_equal(offsetof(zx_sampler_config_t, buffer_size), 8);
  assert_int_equal(offsetof(zx_sampler_config_t, iobuffer_discipline), 16);
}

// The library's own structs: their sizes are the ABI (on LP64); fields added later take the
// reserved words.
static void library_layouts(void** state) {
  (void)state;
  assert_int_equal(sizeof(zxs_sampler_stats_t), 168);
  assert_int_equal(offsetof(zxs_sampler_stats_t, unwinder), 96);
  assert_int_equal(offsetof(zxs_sampler_stats_t, reserved), 104);
  assert_int_equal(sizeof(zxs_profiler_options_t), 64);
  assert_int_equal(offsetof(zxs_profiler_options_t, reserved), 16);
}

static void iob_layouts(void** state) {
  (void)state;
  assert_int_equal(sizeof(zx_info_iob_t), 16);
  assert_int_equal(offsetof(zx_info_iob_t, region_count), 8);
  assert_int_equal(sizeof(zx_iob_discipline_t), 72);
  assert_int_equal(sizeof(zx_iob_region_t), 120);
  assert_int_equal(offsetof(zx_iob_region_t, size), 8);
  assert_int_equal(sizeof(zx_iob_region_info_t), 128);
  assert_int_equal(offsetof(zx_iob_region_info_t, koid), 120);
}

// Fuchsia's zircon/syscalls/object.h: topic 30, version 1 in the top 4 bits; four and two
// zx_duration_mono_t in declaration order.
static void task_runtime_layouts(void** state) {
  (void)state;
  assert_int_equal(ZX_INFO_TASK_RUNTIME_V1, 30u);
  assert_int_equal(ZX_INFO_TASK_RUNTIME, 0x1000001eu);
  assert_int_equal(sizeof(zx_info_task_runtime_t), 32);
  assert_int_equal(offsetof(zx_info_task_runtime_t, cpu_time), 0);
  assert_int_equal(offsetof(zx_info_task_runtime_t, queue_time), 8);
  assert_int_equal(offsetof(zx_info_task_runtime_t, page_fault_time), 16);
  assert_int_equal(offsetof(zx_info_task_runtime_t, lock_contention_time), 24);
  assert_int_equal(sizeof(zx_info_task_runtime_v1_t), 16);
  assert_int_equal(offsetof(zx_info_task_runtime_v1_t, cpu_time), 0);
  assert_int_equal(offsetof(zx_info_task_runtime_v1_t, queue_time), 8);
}

// The FIDL structs of fuchsia.perfmon.cpu, as its C bindings lay them out, and its constants.
static void perfmon_layouts(void** state) {
  (void)state;
  assert_int_equal(sizeof(zxs_perfmon_properties_t), 32);
  assert_int_equal(offsetof(zxs_perfmon_properties_t, max_misc_counter_width), 16);
  assert_int_equal(offsetof(zxs_perfmon_properties_t, flags), 24);
  assert_int_equal(sizeof(zxs_perfmon_event_config_t), 12);
  assert_int_equal(offsetof(zxs_perfmon_event_config_t, rate), 4);
  assert_int_equal(offsetof(zxs_perfmon_event_config_t, flags), 8);
  assert_int_equal(sizeof(zxs_perfmon_config_t), 32 * 12);
  assert_int_equal(sizeof(zxs_perfmon_allocation_t), 8);
  assert_int_equal(sizeof(zxs_perfmon_buffer_header_t), ZXS_PERFMON_BUFFER_HEADER_SIZE);
  assert_int_equal(offsetof(zxs_perfmon_buffer_header_t, capture_end), 16);
  assert_int_equal(ZXS_PERFMON_API_VERSION, 0);
  assert_int_equal(ZXS_PERFMON_MAX_NUM_EVENTS, 32);
  assert_int_equal(ZXS_PERFMON_EVENT_FLAG_COLLECT_OS, 1);
  assert_int_equal(ZXS_PERFMON_EVENT_FLAG_COLLECT_USER, 2);
  assert_int_equal(ZXS_PERFMON_EVENT_FLAG_COLLECT_PC, 4);
  assert_int_equal(ZXS_PERFMON_EVENT_FLAG_IS_TIMEBASE, 8);
  assert_int_equal(ZXS_PERFMON_EVENT_FLAG_COLLECT_LAST_BRANCH, 16);
  assert_int_equal(ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_FIXED, 1), 0x1001);
  assert_int_equal(ZX_OBJ_TYPE_CHANNEL, 4);
}

static void status_values(void** state) {
  (void)state;
  assert_int_equal(ZX_OK, 0);
  assert_int_equal(ZX_ERR_INTERNAL, -1);
  assert_int_equal(ZX_ERR_NOT_SUPPORTED, -2);
  assert_int_equal(ZX_ERR_NO_RESOURCES, -3);
  assert_int_equal(ZX_ERR_NO_MEMORY, -4);
  assert_int_equal(ZX_ERR_INVALID_ARGS, -10);
  assert_int_equal(ZX_ERR_BAD_HANDLE, -11);
  assert_int_equal(ZX_ERR_WRONG_TYPE, -12);
  assert_int_equal(ZX_ERR_OUT_OF_RANGE, -14);
  assert_int_equal(ZX_ERR_BUFFER_TOO_SMALL, -15);
  assert_int_equal(ZX_ERR_BAD_STATE, -20);
  assert_int_equal(ZX_ERR_TIMED_OUT, -21);
  assert_int_equal(ZX_ERR_ALREADY_EXISTS, -26);
  assert_int_equal(ZX_ERR_ACCESS_DENIED, -30);
  assert_int_equal(ZX_RIGHT_READ, 1u << 2);
  assert_int_equal(ZX_RIGHT_APPLY_PROFILE, 1u << 19);
  assert_int_equal(ZX_INFO_IOB, 34);
  assert_int_equal(ZX_INFO_IOB_REGIONS, 35);
  assert_int_equal(ZX_SAMPLER_MIN_PERIOD, 10000);
  assert_int_equal(ZX_SAMPLER_MAX_BUFFER_SIZE, 1u << 30);
  assert_string_equal(zxs_status_string(ZX_ERR_BAD_STATE), "ZX_ERR_BAD_STATE");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(config_layout),   cmocka_unit_test(iob_layouts),
      cmocka_unit_test(library_layouts), cmocka_unit_test(task_runtime_layouts),
      cmocka_unit_test(perfmon_layouts), cmocka_unit_test(status_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
