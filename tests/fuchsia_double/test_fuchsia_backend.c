// The Fuchsia backend (src/backend/fuchsia/) on a Linux host, over the Fuchsia double: the
// library's calls reach the kernel's zx_* calls and pass their statuses through; the profiler
// API runs end to end into a trace file that converts; task runtime is the kernel's topic;
// perfmon answers NOT_SUPPORTED.
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zircon/process.h>
#include <zircon/syscalls.h>
#include <zxsampler/zxsampler.h>

#include "../backend/sampled_code.h"
#include "fuchsia_double.h"

// Spins on the calling thread until it has used `ms` of CPU time.
static void spin_for_cpu_ms(int ms) {
  const int64_t start = sc_thread_cpu_ns();
  while (sc_thread_cpu_ns() - start < (int64_t)ms * 1000000) sc_spin(100000);
}

static char* read_all(const char* path) {
  FILE* f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* data = malloc((size_t)n + 1);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
  data[n] = '\0';
  fclose(f);
  return data;
}

// The library holds the debug resource once the program hands it one.
static void give_debug_resource(void) {
  zx_handle_t rsrc;
  assert_int_equal(zxs_double_debug_resource_get(&rsrc), ZX_OK);
  assert_int_equal(zxs_debug_resource_set(rsrc), ZX_OK);
}

static void debug_resource_is_the_programs(void** state) {
  (void)state;
  zx_handle_t rsrc;
  assert_int_equal(zxs_debug_resource_set(ZX_HANDLE_INVALID), ZX_ERR_BAD_HANDLE);
  give_debug_resource();
  assert_int_equal(zxs_debug_resource_get(&rsrc), ZX_OK);
  assert_int_not_equal(rsrc, ZX_HANDLE_INVALID);
  zx_info_handle_basic_t info;
  assert_int_equal(zxs_object_get_info(rsrc, ZX_INFO_HANDLE_BASIC, &info, sizeof(info), NULL, NULL),
                   ZX_OK);
  assert_int_equal(info.type, ZX_OBJ_TYPE_RESOURCE);
  assert_int_equal(zxs_handle_close(rsrc), ZX_OK);
  // A second resource replaces the first.
  give_debug_resource();
}

static void sampler_statuses_are_the_kernels(void** state) {
  (void)state;
  give_debug_resource();
  zx_sampler_config_t config = {
      .period = ZX_MSEC(1), .buffer_size = 1u << 16, .iobuffer_discipline = 0};
  zx_handle_t iob;
  // The kernel's checks, passed through: a handle that is not one, then a bad config.
  assert_int_equal(zxs_sampler_create(ZX_HANDLE_INVALID, 0, &config, sizeof(config), &iob),
                   ZX_ERR_BAD_HANDLE);
  zx_handle_t rsrc;
  assert_int_equal(zxs_debug_resource_get(&rsrc), ZX_OK);
  zx_sampler_config_t short_period = config;
  short_period.period = ZX_SAMPLER_MIN_PERIOD - 1;
  assert_int_equal(zxs_sampler_create(rsrc, 0, &short_period, sizeof(config), &iob),
                   ZX_ERR_INVALID_ARGS);
  // The five-parameter form's own check: the kernel's call has no size.
  assert_int_equal(zxs_sampler_create(rsrc, 0, &config, sizeof(config) - 1, &iob),
                   ZX_ERR_INVALID_ARGS);
  assert_int_equal(iob, ZX_HANDLE_INVALID);
  assert_int_equal(zxs_sampler_create(rsrc, 0, &config, sizeof(config), &iob), ZX_OK);
  zx_handle_t second;
  assert_int_equal(zxs_sampler_create(rsrc, 0, &config, sizeof(config), &second),
                   ZX_ERR_ALREADY_EXISTS);
  assert_int_equal(zxs_sampler_stop(iob), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_sampler_attach(iob, zxs_thread_self()), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_ERR_BAD_STATE);
  spin_for_cpu_ms(20);
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  // The kernel keeps no counters a program can read.
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_ERR_NOT_SUPPORTED);
  // Its regions map through the kernel's zx_vmar_map_iob, with its checks.
  zx_iob_region_info_t regions[ZX_IOB_MAX_REGIONS];
  size_t count = 0;
  assert_int_equal(
      zxs_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions, sizeof(regions), &count, NULL), ZX_OK);
  assert_int_equal(count, zxs_system_get_num_cpus());
  zx_vaddr_t addr;
  assert_int_equal(zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ | ZX_VM_PERM_WRITE, 0,
                                    iob, 0, 0, regions[0].region.size, &addr),
                   ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, (uint32_t)count,
                                    0, regions[0].region.size, &addr),
                   ZX_ERR_OUT_OF_RANGE);
  assert_int_equal(zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, 0, 0,
                                    regions[0].region.size, &addr),
                   ZX_OK);
  assert_int_equal(zxs_vmar_unmap(zxs_vmar_root_self(), addr, regions[0].region.size), ZX_OK);
  assert_int_equal(zxs_handle_close(iob), ZX_OK);
  assert_int_equal(zxs_handle_close(iob), ZX_ERR_BAD_HANDLE);
  assert_int_equal(zxs_handle_close(rsrc), ZX_OK);
}

static void profiler_writes_a_trace_that_converts(void** state) {
  (void)state;
  give_debug_resource();
  zxs_profiler_options_t options = {.period = 1000000, .buffer_size = 1u << 20};
  assert_int_equal(zxs_profiler_start(&options), ZX_OK);
  assert_int_equal(zxs_profiler_start(&options), ZX_ERR_BAD_STATE);
  atomic_bool stop = false;
  sc_job_t job = {.kind = SC_JOB_SPIN, .unit = 100000, .stop = &stop};
  pthread_t other;
  assert_int_equal(pthread_create(&other, NULL, sc_thread_main, &job), 0);
  assert_int_equal(zxs_profiler_attach_thread(other), ZX_OK);
  spin_for_cpu_ms(150);
  char trace[] = "/tmp/zxs_fuchsia_backend_XXXXXX";
  int fd = mkstemp(trace);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(zxs_profiler_stop(trace, ZXS_FORMAT_FXT), ZX_OK);
  atomic_store(&stop, true);
  pthread_join(other, NULL);
  assert_int_equal(zxs_profiler_stop(trace, ZXS_FORMAT_FXT), ZX_ERR_BAD_STATE);

  // Folded stacks: both threads' samples, through the spinning loop.
  char folded[] = "/tmp/zxs_fuchsia_backend_folded_XXXXXX";
  fd = mkstemp(folded);
  assert_true(fd >= 0);
  close(fd);
  char error[256];
  assert_int_equal(zxs_profile_convert(trace, folded, ZXS_FORMAT_FOLDED, error, sizeof(error)),
                   ZX_OK);
  char* text = read_all(folded);
  assert_non_null(strstr(text, "sc_spin"));
  assert_non_null(strstr(text, "sc_thread_main"));
  free(text);

  // Markup: the modules the loader lists, with their build IDs.
  assert_int_equal(zxs_profile_convert(trace, folded, ZXS_FORMAT_MARKUP, error, sizeof(error)),
                   ZX_OK);
  text = read_all(folded);
  assert_non_null(strstr(text, "{{{module:"));
  assert_non_null(strstr(text, ":elf:"));
  // The library's own module, by its file name (the folders above it may hold the word too).
  bool library_module = false;
  for (const char* m = strstr(text, "{{{module:"); m != NULL; m = strstr(m + 1, "{{{module:")) {
    const char* end = strstr(m, ":elf:");
    const char* name = m;
    for (const char* c = m; end != NULL && c < end; c++) {
      if (*c == '/') name = c + 1;
    }
    if (end != NULL && strncmp(name, "libzxsampler", strlen("libzxsampler")) == 0) {
      library_module = true;
    }
  }
  assert_true(library_module);
  free(text);
  unlink(folded);
  unlink(trace);
}

static void task_runtime_is_the_kernels_topic(void** state) {
  (void)state;
  spin_for_cpu_ms(20);
  zx_info_task_runtime_t lib, kernel;
  size_t actual = 0, avail = 0;
  assert_int_equal(zxs_object_get_info(zxs_thread_self(), ZX_INFO_TASK_RUNTIME, &lib, sizeof(lib),
                                       &actual, &avail),
                   ZX_OK);
  assert_int_equal(actual, 1);
  assert_int_equal(avail, 1);
  assert_int_equal(zx_object_get_info(zx_thread_self(), ZX_INFO_TASK_RUNTIME, &kernel,
                                      sizeof(kernel), NULL, NULL),
                   ZX_OK);
  // The same thread's clock, read twice: the kernel's second read is not behind the first.
  assert_true(lib.cpu_time >= 20 * 1000000LL);
  assert_true(kernel.cpu_time >= lib.cpu_time);
  // Its statuses: a short buffer, a handle without ZX_RIGHT_INSPECT, no handle.
  assert_int_equal(zxs_object_get_info(zxs_thread_self(), ZX_INFO_TASK_RUNTIME, &lib,
                                       sizeof(lib) - 1, NULL, NULL),
                   ZX_ERR_BUFFER_TOO_SMALL);
  zx_handle_t no_inspect;
  assert_int_equal(zxs_handle_duplicate(zxs_thread_self(), ZX_RIGHT_READ, &no_inspect), ZX_OK);
  assert_int_equal(
      zxs_object_get_info(no_inspect, ZX_INFO_TASK_RUNTIME, &lib, sizeof(lib), NULL, NULL),
      ZX_ERR_ACCESS_DENIED);
  uint32_t fields;
  assert_int_equal(zxs_task_runtime_fields(no_inspect, &fields), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_handle_close(no_inspect), ZX_OK);
  assert_int_equal(
      zxs_object_get_info(ZX_HANDLE_INVALID, ZX_INFO_TASK_RUNTIME, &lib, sizeof(lib), NULL, NULL),
      ZX_ERR_BAD_HANDLE);
  // The kernel measures every field of every thread, to its exit.
  assert_int_equal(zxs_task_runtime_fields(zxs_thread_self(), &fields), ZX_OK);
  assert_int_equal(fields, ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME |
                               ZXS_TASK_RUNTIME_PAGE_FAULT_TIME |
                               ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME |
                               ZXS_TASK_RUNTIME_TOTALS_AT_EXIT);
  // By koid: the process's child thread.
  zx_info_handle_basic_t self;
  assert_int_equal(
      zxs_object_get_info(zxs_thread_self(), ZX_INFO_HANDLE_BASIC, &self, sizeof(self), NULL, NULL),
      ZX_OK);
  zx_info_task_runtime_t by_koid;
  assert_int_equal(zxs_task_runtime_of_koid(self.koid, &by_koid, &fields), ZX_OK);
  assert_true(by_koid.cpu_time >= kernel.cpu_time);
  assert_int_equal(zxs_task_runtime_of_koid(ZX_KOID_INVALID, &by_koid, &fields), ZX_ERR_NOT_FOUND);
  // The process: its threads summed.
  zx_info_task_runtime_t process;
  assert_int_equal(zxs_object_get_info(zxs_process_self(), ZX_INFO_TASK_RUNTIME, &process,
                                       sizeof(process), NULL, NULL),
                   ZX_OK);
  assert_true(process.cpu_time >= by_koid.cpu_time);
}

static void perfmon_is_not_supported(void** state) {
  (void)state;
  give_debug_resource();
  zx_handle_t rsrc, controller = 1;
  assert_int_equal(zxs_debug_resource_get(&rsrc), ZX_OK);
  assert_int_equal(zxs_perfmon_open(rsrc, &controller), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(controller, ZX_HANDLE_INVALID);
  zxs_perfmon_properties_t properties;
  assert_int_equal(zxs_perfmon_get_properties(controller, &properties), ZX_ERR_NOT_SUPPORTED);
  zxs_perfmon_allocation_t allocation = {.num_buffers = 1, .buffer_size_in_pages = 1};
  assert_int_equal(zxs_perfmon_initialize(controller, &allocation), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_perfmon_get_allocation(controller, &allocation), ZX_ERR_NOT_SUPPORTED);
  zxs_perfmon_config_t config;
  memset(&config, 0, sizeof(config));
  assert_int_equal(zxs_perfmon_stage_config(controller, &config), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_perfmon_get_config(controller, &config), ZX_ERR_NOT_SUPPORTED);
  zx_handle_t vmo = 1;
  assert_int_equal(zxs_perfmon_get_buffer_handle(controller, 0, &vmo), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(vmo, ZX_HANDLE_INVALID);
  assert_int_equal(zxs_perfmon_start(controller), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_perfmon_stop(controller), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_perfmon_terminate(controller), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_handle_close(rsrc), ZX_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(debug_resource_is_the_programs),
      cmocka_unit_test(sampler_statuses_are_the_kernels),
      cmocka_unit_test(profiler_writes_a_trace_that_converts),
      cmocka_unit_test(task_runtime_is_the_kernels_topic),
      cmocka_unit_test(perfmon_is_not_supported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
