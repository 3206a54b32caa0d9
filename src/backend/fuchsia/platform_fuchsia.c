// What the report layer asks of the platform (platform.h) on Fuchsia: the process and its
// threads by koid and name, the tick rate, the loaded modules. The sampling half of platform.h
// (sources, regions, the per-CPU protocol) is the kernel's there and is not implemented.
#define _GNU_SOURCE  // strdup
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../elf/modules_dl.h"
#include "platform.h"
#include "zircon_syscalls.h"

zx_koid_t zxs_prim_process_koid(void) {
  zx_info_handle_basic_t info;
  zx_status_t status =
      zx_object_get_info(zx_process_self(), ZX_INFO_HANDLE_BASIC, &info, sizeof(info), NULL, NULL);
  return status == ZX_OK ? info.koid : ZX_KOID_INVALID;
}

uint64_t zxs_prim_ticks_per_second(void) { return (uint64_t)zx_ticks_per_second(); }

// ZX_PROP_NAME of a task, NUL-terminated in `buf`.
static zx_status_t task_name(zx_handle_t task, char* buf, size_t size) {
  char name[ZX_MAX_NAME_LEN];
  zx_status_t status = zx_object_get_property(task, ZX_PROP_NAME, name, sizeof(name));
  if (status != ZX_OK) return status;
  name[sizeof(name) - 1] = '\0';
  snprintf(buf, size, "%s", name);
  return ZX_OK;
}

zx_status_t zxs_prim_process_name(char* buf, size_t size) {
  return task_name(zx_process_self(), buf, size);
}

// The kernel keeps no list of the library's threads: nothing to mark.
void zxs_prim_thread_is_library(void) {}

zx_status_t zxs_prim_thread_name(zx_koid_t koid, char* buf, size_t size) {
  zx_handle_t thread;
  zx_status_t status = zx_object_get_child(zx_process_self(), koid, ZX_RIGHT_GET_PROPERTY, &thread);
  if (status != ZX_OK) return status;
  status = task_name(thread, buf, size);
  zx_handle_close(thread);
  return status;
}

// Fuchsia's loader lists the main executable first, without a name, and the vDSO as the module
// libzircon.so (no auxiliary vector names either).
zx_status_t zxs_prim_modules_each(zxs_prim_module_fn fn, void* ctx) {
  return zxs_dl_modules_each(fn, ctx, 0, 0);
}

// A Fuchsia process has no path to its executable: its name (the component framework names it
// after the binary) stands in; the module's build ID identifies the file.
zx_status_t zxs_prim_modules_main_path(char** path) {
  char name[ZX_MAX_NAME_LEN];
  if (zxs_prim_process_name(name, sizeof(name)) != ZX_OK) name[0] = '\0';
  *path = strdup(name);
  return *path != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
}

// A Fuchsia process maps VMOs, not files by path: no such list.
zx_status_t zxs_prim_exec_mappings_each(zxs_prim_mapping_fn fn, void* ctx) {
  (void)fn;
  (void)ctx;
  return ZX_ERR_NOT_SUPPORTED;
}
