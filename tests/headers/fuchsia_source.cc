// A program written against Fuchsia's documentation, in C++, using only Fuchsia's names: it
// must compile and run unchanged. Both forms of zx_sampler_create are used, and its address has
// the kernel's type.
#include <zxsampler/zircon.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_same<decltype(&zx_sampler_create),
                           zx_status_t (*)(zx_handle_t, uint64_t, const zx_sampler_config_t*,
                                           zx_handle_t*)>::value,
              "zx_sampler_create has the kernel's four parameters");
static_assert(ZX_VM_SPECIFIC == (1u << 4) && ZX_PAGE_SIZE == 4096 && ZX_MSEC(3) == 3000000,
              "Fuchsia's values, as constant expressions");

static int fail(const char* what, zx_status_t status) {
  std::fprintf(stderr, "%s: %s\n", what, zxs_status_string(status));
  return 1;
}

int main() {
  zx_handle_t debug_resource;
  zx_status_t status = zxs_debug_resource_get(&debug_resource);
  if (status != ZX_OK) return fail("debug resource", status);

  zx_sampler_config_t config;
  std::memset(&config, 0, sizeof(config));
  config.period = ZX_MSEC(1);
  config.buffer_size = 64 * 1024;
  config.iobuffer_discipline = ZX_IOB_DISCIPLINE_NONE;

  zx_handle_t iob;
  auto create = &zx_sampler_create;  // as Fuchsia code may hold a syscall
  auto checked = ZX_OK;              // an int, as Fuchsia's statuses
  checked = create(ZX_HANDLE_INVALID, 0, &config, &iob);
  if (checked == ZX_OK) return fail("create with an invalid resource", checked);
  if (!zxs_sampler_compiled_in()) {  // built with -Dsampler=false: every call says so
    status = zx_sampler_create(debug_resource, 0, &config, &iob);
    return status == ZX_ERR_NOT_SUPPORTED ? 0 : fail("create (compiled out)", status);
  }
  status = zx_sampler_create(debug_resource, 0, &config, sizeof(config), &iob);  // docs
  if (status != ZX_OK) return fail("create (5 args)", status);
  zx_handle_close(iob);
  status = zx_sampler_create(debug_resource, 0, &config, &iob);  // kernel
  if (status != ZX_OK) return fail("create (4 args)", status);

  status = zx_sampler_attach(iob, zx_thread_self());
  if (status != ZX_OK) return fail("attach", status);
  status = zx_sampler_start(iob);
  if (status != ZX_OK) return fail("start", status);
  volatile unsigned long sink = 0;
  for (unsigned long i = 0; i < 20000000ul; i++) sink = sink + i;
  status = zx_sampler_stop(iob);
  if (status != ZX_OK) return fail("stop", status);

  zx_info_iob_t info;
  status = zx_object_get_info(iob, ZX_INFO_IOB, &info, sizeof(info), nullptr, nullptr);
  if (status != ZX_OK) return fail("get_info", status);
  zx_iob_region_info_t regions[ZX_IOB_MAX_REGIONS];
  size_t actual = 0, avail = 0;
  status = zx_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions, sizeof(regions), &actual, &avail);
  if (status != ZX_OK) return fail("get_info regions", status);
  for (size_t i = 0; i < actual; i++) {
    zx_vaddr_t addr;
    status = zx_vmar_map_iob(zx_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, static_cast<uint32_t>(i),
                             0, regions[i].region.size, &addr);
    if (status != ZX_OK) return fail("map", status);
    zx_vmar_unmap(zx_vmar_root_self(), addr, regions[i].region.size);
  }
  zx_handle_close(iob);
  zx_handle_close(debug_resource);

  // RFC-0084: where this thread's time went.
  zx_info_task_runtime_t runtime;
  status = zx_object_get_info(zx_thread_self(), ZX_INFO_TASK_RUNTIME, &runtime, sizeof(runtime),
                              nullptr, nullptr);
  if (status != ZX_OK) return fail("get_info task runtime", status);
  zx_info_task_runtime_v1_t runtime_v1;
  status = zx_object_get_info(zx_process_self(), ZX_INFO_TASK_RUNTIME_V1, &runtime_v1,
                              sizeof(runtime_v1), nullptr, nullptr);
  if (status != ZX_OK) return fail("get_info task runtime v1", status);
  if (runtime.cpu_time <= 0 || runtime_v1.cpu_time < runtime.cpu_time) {
    return fail("task runtime cpu_time", ZX_ERR_INTERNAL);
  }
  std::printf("%u regions of %llu bytes\n", info.region_count,
              static_cast<unsigned long long>(regions[0].region.size));
  return 0;
}
