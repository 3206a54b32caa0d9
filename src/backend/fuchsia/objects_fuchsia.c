// Handles, objects, mappings and task runtime on Fuchsia: the kernel's calls, passed through with
// their statuses (the public names are object.h's zxs_*; the calls are the kernel's zx_*).
#include <string.h>
#include <zxsampler/object.h>

#include "zircon_syscalls.h"

zx_status_t zxs_handle_close(zx_handle_t handle) { return zx_handle_close(handle); }

zx_status_t zxs_handle_duplicate(zx_handle_t handle, zx_rights_t rights, zx_handle_t* out) {
  return zx_handle_duplicate(handle, rights, out);
}

zx_status_t zxs_object_get_info(zx_handle_t handle, zx_object_info_topic_t topic, void* buffer,
                                size_t buffer_size, size_t* actual, size_t* avail) {
  return zx_object_get_info(handle, topic, buffer, buffer_size, actual, avail);
}

zx_handle_t zxs_vmar_root_self(void) { return zx_vmar_root_self(); }
zx_handle_t zxs_process_self(void) { return zx_process_self(); }
zx_handle_t zxs_thread_self(void) { return zx_thread_self(); }

zx_status_t zxs_vmar_map_iob(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                             zx_handle_t iob, uint32_t region_index, uint64_t region_offset,
                             size_t region_len, zx_vaddr_t* mapped_addr) {
  return zx_vmar_map_iob(vmar, options, vmar_offset, iob, region_index, region_offset, region_len,
                         mapped_addr);
}

zx_status_t zxs_vmar_map(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                         zx_handle_t vmo, uint64_t vmo_offset, size_t len,
                         zx_vaddr_t* mapped_addr) {
  return zx_vmar_map(vmar, options, vmar_offset, vmo, vmo_offset, len, mapped_addr);
}

zx_status_t zxs_vmo_get_size(zx_handle_t vmo, uint64_t* size) { return zx_vmo_get_size(vmo, size); }

zx_status_t zxs_vmar_unmap(zx_handle_t vmar, zx_vaddr_t addr, size_t len) {
  return zx_vmar_unmap(vmar, addr, len);
}

// The C library owns the thread's handle: the caller gets a duplicate of its own.
zx_status_t zxs_thread_get(pthread_t thread, zx_handle_t* out) {
  if (out == NULL) return ZX_ERR_INVALID_ARGS;
  *out = ZX_HANDLE_INVALID;
  return zx_handle_duplicate(zxs_fuchsia_thread_handle(thread), ZX_RIGHT_SAME_RIGHTS, out);
}

uint32_t zxs_system_get_page_size(void) { return zx_system_get_page_size(); }
uint32_t zxs_system_get_num_cpus(void) { return zx_system_get_num_cpus(); }
zx_ticks_t zxs_ticks_get(void) { return zx_ticks_get(); }
zx_ticks_t zxs_ticks_per_second(void) { return zx_ticks_per_second(); }

// --- Task runtime: ZX_INFO_TASK_RUNTIME is the kernel's topic -------------------------------

// The kernel measures every field of every thread, from its creation to its exit.
#define KERNEL_RUNTIME_FIELDS                                                                   \
  (ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME | ZXS_TASK_RUNTIME_PAGE_FAULT_TIME | \
   ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME | ZXS_TASK_RUNTIME_TOTALS_AT_EXIT)

zx_status_t zxs_task_runtime_fields(zx_handle_t task, uint32_t* fields) {
  if (fields == NULL) return ZX_ERR_INVALID_ARGS;
  *fields = 0;
  zx_info_task_runtime_t info;
  zx_status_t status =
      zx_object_get_info(task, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL);
  if (status == ZX_OK) *fields = KERNEL_RUNTIME_FIELDS;
  return status;
}

zx_status_t zxs_task_runtime_of_koid(zx_koid_t koid, zx_info_task_runtime_t* out,
                                     uint32_t* fields) {
  if (out == NULL) return ZX_ERR_INVALID_ARGS;
  memset(out, 0, sizeof(*out));
  if (fields != NULL) *fields = 0;
  zx_handle_t thread;
  zx_status_t status = zx_object_get_child(zx_process_self(), koid, ZX_RIGHT_INSPECT, &thread);
  if (status != ZX_OK) return status;
  status = zx_object_get_info(thread, ZX_INFO_TASK_RUNTIME, out, sizeof(*out), NULL, NULL);
  zx_handle_close(thread);
  if (status == ZX_OK && fields != NULL) *fields = KERNEL_RUNTIME_FIELDS;
  return status;
}
