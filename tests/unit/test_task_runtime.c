// ZX_INFO_TASK_RUNTIME over the fake backend: statuses in Fuchsia's order, both layouts, the
// process sum with exited threads, and the fields that tell a measured 0 from an unmeasured one.
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

#define ALL_FIELDS                                                                              \
  (ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME | ZXS_TASK_RUNTIME_PAGE_FAULT_TIME | \
   ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME)

static int setup(void** state) {
  (void)state;
  fake_reset();
  zxs_core_thread_exited(fake_self_koid());  // a fresh zx_thread_self() handle per test
  return 0;
}

static const zx_info_task_runtime_t kSelf = {
    .cpu_time = 1000, .queue_time = 200, .page_fault_time = 30, .lock_contention_time = 4};

static void thread_self_both_layouts(void** state) {
  (void)state;
  fake_set_runtime(fake_self_koid(), &kSelf, ALL_FIELDS);
  zx_info_task_runtime_t info;
  memset(&info, 0xff, sizeof(info));
  size_t actual = 9, avail = 9;
  assert_int_equal(zxs_object_get_info(zxs_thread_self(), ZX_INFO_TASK_RUNTIME, &info, sizeof(info),
                                       &actual, &avail),
                   ZX_OK);
  assert_memory_equal(&info, &kSelf, sizeof(info));
  assert_int_equal(actual, 1);
  assert_int_equal(avail, 1);
  assert_true(fake_runtime_measured(fake_self_koid()));

  zx_info_task_runtime_v1_t v1[2];
  memset(v1, 0xff, sizeof(v1));
  assert_int_equal(zxs_object_get_info(zxs_thread_self(), ZX_INFO_TASK_RUNTIME_V1, v1, sizeof(v1),
                                       &actual, NULL),
                   ZX_OK);
  assert_int_equal(v1[0].cpu_time, 1000);
  assert_int_equal(v1[0].queue_time, 200);
  // Exactly one record is written: the rest of the buffer is untouched.
  assert_int_equal(v1[1].cpu_time, -1);
}

static void short_buffers_and_bad_arguments(void** state) {
  (void)state;
  fake_set_runtime(fake_self_koid(), &kSelf, ALL_FIELDS);
  zx_info_task_runtime_t info;
  size_t actual = 9, avail = 9;
  // Room for the old layout is not room for the new one.
  assert_int_equal(zxs_object_get_info(zxs_thread_self(), ZX_INFO_TASK_RUNTIME, &info,
                                       sizeof(zx_info_task_runtime_v1_t), &actual, &avail),
                   ZX_ERR_BUFFER_TOO_SMALL);
  assert_int_equal(avail, 1);
  assert_int_equal(actual, 9);  // not written on failure
  assert_int_equal(zxs_object_get_info(zxs_thread_self(), ZX_INFO_TASK_RUNTIME_V1, &info,
                                       sizeof(zx_info_task_runtime_v1_t) - 1, NULL, NULL),
                   ZX_ERR_BUFFER_TOO_SMALL);
  assert_int_equal(
      zxs_object_get_info(zxs_thread_self(), ZX_INFO_TASK_RUNTIME, NULL, 0, NULL, &avail),
      ZX_ERR_BUFFER_TOO_SMALL);
  assert_int_equal(
      zxs_object_get_info(zxs_thread_self(), ZX_INFO_TASK_RUNTIME, NULL, 32, NULL, NULL),
      ZX_ERR_INVALID_ARGS);
  // A topic one version ahead of ours is unknown.
  assert_int_equal(
      zxs_object_get_info(zxs_thread_self(), 30u | (2u << 28), &info, sizeof(info), NULL, NULL),
      ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_task_runtime_fields(zxs_thread_self(), NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_task_runtime_of_koid(fake_self_koid(), NULL, NULL), ZX_ERR_INVALID_ARGS);
}

static void handle_checks_in_fuchsias_order(void** state) {
  (void)state;
  zx_info_task_runtime_t info;
  // Closed and never-valid handles.
  zx_handle_t dup;
  assert_int_equal(zxs_handle_duplicate(zxs_thread_self(), ZX_RIGHT_SAME_RIGHTS, &dup), ZX_OK);
  assert_int_equal(zxs_handle_close(dup), ZX_OK);
  assert_int_equal(zxs_object_get_info(dup, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL),
                   ZX_ERR_BAD_HANDLE);
  assert_int_equal(
      zxs_object_get_info(ZX_HANDLE_INVALID, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL),
      ZX_ERR_BAD_HANDLE);
  // A handle without ZX_RIGHT_INSPECT: denied, even with a short buffer.
  zx_handle_t blind;
  assert_int_equal(
      zxs_handle_duplicate(zxs_thread_self(), ZX_RIGHT_DUPLICATE | ZX_RIGHT_READ, &blind), ZX_OK);
  assert_int_equal(
      zxs_object_get_info(blind, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL),
      ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_object_get_info(blind, ZX_INFO_TASK_RUNTIME_V1, &info, 1, NULL, NULL),
                   ZX_ERR_ACCESS_DENIED);
  uint32_t fields = 77;
  assert_int_equal(zxs_task_runtime_fields(blind, &fields), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(fields, 0);
  zxs_handle_close(blind);
  // Objects that are not tasks: wrong type with ZX_RIGHT_INSPECT; without it, denied first (on
  // Fuchsia the right is checked before the type for this topic).
  assert_int_equal(zxs_object_get_info(zxs_vmar_root_self(), ZX_INFO_TASK_RUNTIME, &info,
                                       sizeof(info), NULL, NULL),
                   ZX_ERR_WRONG_TYPE);
  zx_handle_t rsrc;
  assert_int_equal(zxs_debug_resource_get(&rsrc), ZX_OK);
  assert_int_equal(zxs_object_get_info(rsrc, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL),
                   ZX_ERR_WRONG_TYPE);
  zx_handle_t rsrc_blind;
  assert_int_equal(zxs_handle_duplicate(rsrc, ZX_RIGHT_DUPLICATE, &rsrc_blind), ZX_OK);
  assert_int_equal(
      zxs_object_get_info(rsrc_blind, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL),
      ZX_ERR_ACCESS_DENIED);
  zxs_handle_close(rsrc_blind);
  zxs_handle_close(rsrc);
}

static void other_thread_and_exit(void** state) {
  (void)state;
  const pthread_t other = (pthread_t)0x4321;
  fake_register_thread(other, 7777, true);
  const zx_info_task_runtime_t rt = {
      .cpu_time = 50, .queue_time = 6, .page_fault_time = 7, .lock_contention_time = 8};
  fake_set_runtime(7777, &rt, ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME);
  zx_handle_t thread;
  assert_int_equal(zxs_thread_get(other, &thread), ZX_OK);
  // Nothing is measured before the first query.
  assert_false(fake_runtime_measured(7777));
  uint32_t fields = 0;
  assert_int_equal(zxs_task_runtime_fields(thread, &fields), ZX_OK);
  assert_int_equal(fields, ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME);
  assert_true(fake_runtime_measured(7777));
  // Measured before it exited: still answers, through the handle and by koid.
  fake_set_thread_alive(7777, false);
  zx_info_task_runtime_t info;
  assert_int_equal(
      zxs_object_get_info(thread, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL), ZX_OK);
  assert_memory_equal(&info, &rt, sizeof(info));
  memset(&info, 0, sizeof(info));
  assert_int_equal(zxs_task_runtime_of_koid(7777, &info, &fields), ZX_OK);
  assert_memory_equal(&info, &rt, sizeof(info));
  zxs_handle_close(thread);

  // A thread that exited before anyone asked: ZX_ERR_BAD_STATE; unknown koids: NOT_FOUND.
  const pthread_t gone = (pthread_t)0x5678;
  fake_register_thread(gone, 8888, true);
  assert_int_equal(zxs_thread_get(gone, &thread), ZX_OK);
  fake_set_thread_alive(8888, false);
  assert_int_equal(
      zxs_object_get_info(thread, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL),
      ZX_ERR_BAD_STATE);
  zxs_handle_close(thread);
  assert_int_equal(zxs_task_runtime_of_koid(8888, &info, NULL), ZX_ERR_NOT_FOUND);
}

static void process_sums_threads_exited_included(void** state) {
  (void)state;
  fake_set_runtime(fake_self_koid(), &kSelf, ALL_FIELDS);
  const zx_info_task_runtime_t a = {
      .cpu_time = 10, .queue_time = 20, .page_fault_time = 30, .lock_contention_time = 40};
  fake_register_thread((pthread_t)0x1, 9001, true);
  fake_register_thread((pthread_t)0x2, 9002, true);
  fake_set_runtime(9001, &a, ALL_FIELDS);
  fake_set_runtime(
      9002, &a,
      ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME | ZXS_TASK_RUNTIME_PAGE_FAULT_TIME);
  zx_info_task_runtime_t info;
  assert_int_equal(zxs_object_get_info(zxs_process_self(), ZX_INFO_TASK_RUNTIME, &info,
                                       sizeof(info), NULL, NULL),
                   ZX_OK);
  assert_int_equal(info.cpu_time, 1020);
  assert_int_equal(info.queue_time, 240);
  assert_int_equal(info.page_fault_time, 90);
  assert_int_equal(info.lock_contention_time, 84);
  // The process query measured them all; one exits and still counts.
  fake_set_thread_alive(9002, false);
  zx_info_task_runtime_v1_t v1;
  assert_int_equal(
      zxs_object_get_info(zxs_process_self(), ZX_INFO_TASK_RUNTIME_V1, &v1, sizeof(v1), NULL, NULL),
      ZX_OK);
  assert_int_equal(v1.cpu_time, 1020);
  // Fields measured for every thread: one lacks lock contention.
  uint32_t fields = 0;
  assert_int_equal(zxs_task_runtime_fields(zxs_process_self(), &fields), ZX_OK);
  assert_int_equal(fields, ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME |
                               ZXS_TASK_RUNTIME_PAGE_FAULT_TIME);
  // The query began measuring every live thread, those the host had no runtime for too: one
  // that exits afterwards still answers (as a thread measured by its own handle does).
  fake_register_thread((pthread_t)0x3, 9003, true);
  assert_int_equal(zxs_object_get_info(zxs_process_self(), ZX_INFO_TASK_RUNTIME, &info,
                                       sizeof(info), NULL, NULL),
                   ZX_OK);
  assert_true(fake_runtime_measured(9003));
  fake_set_thread_alive(9003, false);
  assert_int_equal(zxs_task_runtime_of_koid(9003, &info, NULL), ZX_OK);
  // The process handle without INSPECT is denied.
  zx_handle_t blind;
  assert_int_equal(zxs_handle_duplicate(zxs_process_self(), ZX_RIGHT_READ, &blind), ZX_OK);
  assert_int_equal(
      zxs_object_get_info(blind, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL),
      ZX_ERR_ACCESS_DENIED);
  zxs_handle_close(blind);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(thread_self_both_layouts, setup),
      cmocka_unit_test_setup(short_buffers_and_bad_arguments, setup),
      cmocka_unit_test_setup(handle_checks_in_fuchsias_order, setup),
      cmocka_unit_test_setup(other_thread_and_exit, setup),
      cmocka_unit_test_setup(process_sums_threads_exited_included, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
