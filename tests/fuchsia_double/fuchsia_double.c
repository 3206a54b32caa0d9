// The Fuchsia double: the system calls the Fuchsia backend makes (declared in
// tests/fuchsia_sysroot/, Fuchsia's prototypes), implemented with this project's Linux emulation,
// so that the backend runs on a Linux host. Built into a library with the Linux core and
// backend, which exports only these (fuchsia_double.map). zx_sampler_create and
// zx_status_get_string are the core's (core/zircon_exports.c).
//
// Where the emulation has no counterpart the double does the least the backend needs, and says
// so: zx_object_get_property answers ZX_PROP_NAME of the process and its threads only, and
// zx_object_get_child finds the threads the double has handed out or seen attached (a kernel
// finds every thread of the process).
#include "fuchsia_double.h"

#include <pthread.h>
#include <string.h>
#include <threads.h>
#include <zircon/process.h>
#include <zircon/syscalls-next.h>
#include <zircon/syscalls.h>
#include <zircon/threads.h>
#include <zxsampler/object.h>
#include <zxsampler/sampler.h>

#include "platform.h"

#define MAX_KNOWN_THREADS 1024

// The threads zx_object_get_child can find: a handle of the double's own to each, by koid, and
// the C11 thread it was asked for by (thrd_get_zx_handle).
typedef struct known_thread {
  zx_koid_t koid;
  zx_handle_t handle;
  thrd_t thread;
  bool by_thread;
} known_thread_t;

static pthread_mutex_t g_known_lock = PTHREAD_MUTEX_INITIALIZER;
static known_thread_t g_known[MAX_KNOWN_THREADS];
static size_t g_known_count;

static zx_status_t handle_info(zx_handle_t handle, zx_info_handle_basic_t* info) {
  return zxs_object_get_info(handle, ZX_INFO_HANDLE_BASIC, info, sizeof(*info), NULL, NULL);
}

// Remembers `thread` (a thread handle of the caller's) under its koid, once.
static void remember_thread(zx_handle_t thread) {
  zx_info_handle_basic_t info;
  if (handle_info(thread, &info) != ZX_OK || info.type != ZX_OBJ_TYPE_THREAD) return;
  pthread_mutex_lock(&g_known_lock);
  bool known = false;
  for (size_t i = 0; i < g_known_count && !known; i++) known = g_known[i].koid == info.koid;
  zx_handle_t own;
  if (!known && g_known_count < MAX_KNOWN_THREADS &&
      zxs_handle_duplicate(thread, ZX_RIGHT_SAME_RIGHTS, &own) == ZX_OK) {
    g_known[g_known_count++] = (known_thread_t){.koid = info.koid, .handle = own};
  }
  pthread_mutex_unlock(&g_known_lock);
}

zx_status_t zx_sampler_attach(zx_handle_t iob, zx_handle_t thread) {
  zx_status_t status = zxs_sampler_attach(iob, thread);
  if (status == ZX_OK) remember_thread(thread);
  return status;
}
zx_status_t zx_sampler_start(zx_handle_t iob) { return zxs_sampler_start(iob); }
zx_status_t zx_sampler_stop(zx_handle_t iob) { return zxs_sampler_stop(iob); }

zx_status_t zx_handle_close(zx_handle_t handle) { return zxs_handle_close(handle); }
zx_status_t zx_handle_duplicate(zx_handle_t handle, zx_rights_t rights, zx_handle_t* out) {
  return zxs_handle_duplicate(handle, rights, out);
}
zx_status_t zx_object_get_info(zx_handle_t handle, uint32_t topic, void* buffer, size_t buffer_size,
                               size_t* actual, size_t* avail) {
  return zxs_object_get_info(handle, topic, buffer, buffer_size, actual, avail);
}

zx_status_t zx_object_get_property(zx_handle_t handle, uint32_t property, void* value,
                                   size_t value_size) {
  zx_info_handle_basic_t info;
  zx_status_t status = handle_info(handle, &info);
  if (status != ZX_OK) return status;
  if ((info.rights & ZX_RIGHT_GET_PROPERTY) == 0) return ZX_ERR_ACCESS_DENIED;
  if (property != ZX_PROP_NAME) return ZX_ERR_INVALID_ARGS;
  if (info.type != ZX_OBJ_TYPE_PROCESS && info.type != ZX_OBJ_TYPE_THREAD) {
    return ZX_ERR_WRONG_TYPE;
  }
  if (value == NULL || value_size < ZX_MAX_NAME_LEN) return ZX_ERR_BUFFER_TOO_SMALL;
  char name[ZX_MAX_NAME_LEN] = {0};
  status = info.type == ZX_OBJ_TYPE_PROCESS ? zxs_prim_process_name(name, sizeof(name))
                                            : zxs_prim_thread_name(info.koid, name, sizeof(name));
  if (status != ZX_OK) return status;
  memcpy(value, name, sizeof(name));
  return ZX_OK;
}

zx_status_t zx_object_get_child(zx_handle_t handle, uint64_t koid, zx_rights_t rights,
                                zx_handle_t* out) {
  zx_info_handle_basic_t info;
  zx_status_t status = handle_info(handle, &info);
  if (status != ZX_OK) return status;
  if (info.type != ZX_OBJ_TYPE_PROCESS) return ZX_ERR_WRONG_TYPE;
  if ((info.rights & ZX_RIGHT_ENUMERATE) == 0) return ZX_ERR_ACCESS_DENIED;
  status = ZX_ERR_NOT_FOUND;
  pthread_mutex_lock(&g_known_lock);
  for (size_t i = 0; i < g_known_count; i++) {
    if (g_known[i].koid == koid) {
      status = zxs_handle_duplicate(g_known[i].handle, rights, out);
      break;
    }
  }
  pthread_mutex_unlock(&g_known_lock);
  return status;
}

zx_status_t zx_vmar_map_iob(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                            zx_handle_t iob, uint32_t region_index, uint64_t region_offset,
                            size_t region_len, zx_vaddr_t* mapped_addr) {
  return zxs_vmar_map_iob(vmar, options, vmar_offset, iob, region_index, region_offset, region_len,
                          mapped_addr);
}
zx_status_t zx_vmar_map(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                        zx_handle_t vmo, uint64_t vmo_offset, size_t len, zx_vaddr_t* mapped_addr) {
  return zxs_vmar_map(vmar, options, vmar_offset, vmo, vmo_offset, len, mapped_addr);
}
zx_status_t zx_vmar_unmap(zx_handle_t vmar, zx_vaddr_t addr, size_t len) {
  return zxs_vmar_unmap(vmar, addr, len);
}
zx_status_t zx_vmo_get_size(zx_handle_t vmo, uint64_t* size) { return zxs_vmo_get_size(vmo, size); }

zx_handle_t zx_process_self(void) { return zxs_process_self(); }
zx_handle_t zx_vmar_root_self(void) { return zxs_vmar_root_self(); }
zx_handle_t zx_thread_self(void) {
  zx_handle_t self = zxs_thread_self();
  remember_thread(self);
  return self;
}

uint32_t zx_system_get_page_size(void) { return zxs_system_get_page_size(); }
uint32_t zx_system_get_num_cpus(void) { return zxs_system_get_num_cpus(); }
zx_ticks_t zx_ticks_get(void) { return zxs_ticks_get(); }
zx_ticks_t zx_ticks_per_second(void) { return zxs_ticks_per_second(); }

// The C library's call on Fuchsia: a handle the double keeps per thread, borrowed by the caller.
zx_handle_t thrd_get_zx_handle(thrd_t thread) {
  zx_handle_t handle = ZX_HANDLE_INVALID;
  pthread_mutex_lock(&g_known_lock);
  for (size_t i = 0; i < g_known_count && handle == ZX_HANDLE_INVALID; i++) {
    if (g_known[i].by_thread && thrd_equal(g_known[i].thread, thread)) {
      handle = g_known[i].handle;
    }
  }
  zx_info_handle_basic_t info;
  if (handle == ZX_HANDLE_INVALID && g_known_count < MAX_KNOWN_THREADS &&
      zxs_thread_get((pthread_t)thread, &handle) == ZX_OK && handle_info(handle, &info) == ZX_OK) {
    g_known[g_known_count++] =
        (known_thread_t){.koid = info.koid, .handle = handle, .thread = thread, .by_thread = true};
  }
  pthread_mutex_unlock(&g_known_lock);
  return handle;
}

zx_status_t zxs_double_debug_resource_get(zx_handle_t* out) { return zxs_debug_resource_get(out); }
