// Process, thread, VMAR and debug-resource objects; the process-wide switches.
#include "objects.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/object.h>
#include <zxsampler/sampler.h>

#include "fork.h"
#include "task_runtime.h"
#include "zxs_config.h"

// --- Switches ---------------------------------------------------------------------------------

// -1 = not read from the environment yet.
static _Atomic int g_debugging_syscalls = -1;

static bool env_says_off(const char* value) {
  if (value == NULL) return false;
  char lower[8] = {0};
  for (size_t i = 0; i < sizeof(lower) - 1 && value[i] != '\0'; i++) {
    lower[i] = (char)tolower((unsigned char)value[i]);
  }
  return strcmp(lower, "0") == 0 || strcmp(lower, "false") == 0 || strcmp(lower, "off") == 0 ||
         strcmp(lower, "no") == 0;
}

bool zxs_debugging_syscalls_enabled(void) {
  int v = atomic_load(&g_debugging_syscalls);
  if (v < 0) {
    int from_env = env_says_off(getenv("ZXSAMPLER_DEBUGGING_SYSCALLS")) ? 0 : 1;
    int expected = -1;
    atomic_compare_exchange_strong(&g_debugging_syscalls, &expected, from_env);
    v = atomic_load(&g_debugging_syscalls);
  }
  return v == 1;
}

void zxs_set_debugging_syscalls_enabled(bool enabled) {
  atomic_store(&g_debugging_syscalls, enabled ? 1 : 0);
}

bool zxs_sampler_compiled_in(void) { return ZXS_SAMPLER_ENABLED != 0; }

zx_status_t zxs_sampler_check_enabled(void) {
  if (!zxs_sampler_compiled_in() || !zxs_debugging_syscalls_enabled()) {
    return ZX_ERR_NOT_SUPPORTED;
  }
  return ZX_OK;
}

// --- Constant objects: the process and its root VMAR -------------------------------------------

static void destroy_static(zxs_object_t* obj) { (void)obj; }
static const zxs_object_ops_t g_static_ops = {.on_last_handle = NULL, .destroy = destroy_static};

static pthread_once_t g_constants_once = PTHREAD_ONCE_INIT;
static zxs_object_t g_process, g_root_vmar;
static zx_handle_t g_process_handle, g_root_vmar_handle;

static void make_constants(void) {
  zxs_object_init(&g_process, ZX_OBJ_TYPE_PROCESS, zxs_prim_process_koid(), &g_static_ops);
  zxs_object_init(&g_root_vmar, ZX_OBJ_TYPE_VMAR, zxs_koid_next(), &g_static_ops);
  g_root_vmar.related_koid = g_process.koid;
  const zx_rights_t common = ZX_RIGHT_DUPLICATE | ZX_RIGHT_TRANSFER | ZX_RIGHT_READ |
                             ZX_RIGHT_WRITE | ZX_RIGHT_GET_PROPERTY | ZX_RIGHT_INSPECT |
                             ZX_RIGHT_WAIT;
  if (zxs_handle_make(&g_process, common | ZX_RIGHT_ENUMERATE | ZX_RIGHT_MANAGE_PROCESS,
                      &g_process_handle) == ZX_OK) {
    zxs_handle_pin(g_process_handle);
  }
  if (zxs_handle_make(&g_root_vmar, common | ZX_RIGHT_MAP | ZX_RIGHT_EXECUTE,
                      &g_root_vmar_handle) == ZX_OK) {
    zxs_handle_pin(g_root_vmar_handle);
  }
}

zx_handle_t zxs_process_self(void) {
  pthread_once(&g_constants_once, make_constants);
  return g_process_handle;
}

zx_handle_t zxs_vmar_root_self(void) {
  pthread_once(&g_constants_once, make_constants);
  return g_root_vmar_handle;
}

// --- Threads ----------------------------------------------------------------------------------

static void destroy_thread(zxs_object_t* obj) { free(obj); }
static const zxs_object_ops_t g_thread_ops = {.on_last_handle = NULL, .destroy = destroy_thread};

static zx_status_t make_thread_handle(const zxs_prim_thread_t* thread, zx_handle_t* out) {
  zxs_thread_obj_t* obj = calloc(1, sizeof(*obj));
  if (obj == NULL) return ZX_ERR_NO_MEMORY;
  zxs_object_init(&obj->base, ZX_OBJ_TYPE_THREAD, thread->koid, &g_thread_ops);
  obj->base.related_koid = zxs_prim_process_koid();
  obj->thread = *thread;
  zx_status_t status = zxs_handle_make(&obj->base, ZXS_THREAD_DEFAULT_RIGHTS, out);
  if (status != ZX_OK) free(obj);
  return status;
}

// The thread's own handle (Fuchsia's zx_thread_self() is a constant per thread).
static _Thread_local zx_handle_t t_self_handle;
static _Thread_local zx_koid_t t_self_koid;

zx_handle_t zxs_thread_self(void) {
  if (t_self_handle != ZX_HANDLE_INVALID && zxs_handle_is_live(t_self_handle)) {
    return t_self_handle;
  }
  zxs_core_register_atfork();
  zxs_prim_thread_t thread;
  zx_handle_t handle;
  if (zxs_prim_thread_self(&thread) != ZX_OK || make_thread_handle(&thread, &handle) != ZX_OK) {
    return ZX_HANDLE_INVALID;
  }
  zxs_handle_pin(handle);
  t_self_handle = handle;
  t_self_koid = thread.koid;
  // So an attached thread detaches itself and its handle goes away when it exits. Where the
  // backend has no hook, attach/start/stop reap exited threads instead.
  (void)zxs_prim_notify_on_thread_exit();
  return handle;
}

void zxs_thread_self_forget(zx_koid_t koid) {
  if (t_self_handle != ZX_HANDLE_INVALID && t_self_koid == koid) {
    zxs_handle_unpin_and_close(t_self_handle);
    t_self_handle = ZX_HANDLE_INVALID;
  }
}

void zxs_objects_after_fork_child(void) {
  // The forking thread's own handle named a thread of the parent: it goes, and the next
  // zxs_thread_self() makes one for the child's thread.
  if (t_self_handle != ZX_HANDLE_INVALID) zxs_handle_unpin_and_close(t_self_handle);
  t_self_handle = ZX_HANDLE_INVALID;
  t_self_koid = ZX_KOID_INVALID;
  g_process.koid = zxs_prim_process_koid();
  g_root_vmar.related_koid = g_process.koid;
}

zx_status_t zxs_thread_get(pthread_t thread, zx_handle_t* out) {
  if (out == NULL) return ZX_ERR_INVALID_ARGS;
  *out = ZX_HANDLE_INVALID;
  zxs_prim_thread_t info;
  zx_status_t status = zxs_prim_thread_from_native(&thread, &info);
  if (status != ZX_OK) return status;
  return make_thread_handle(&info, out);
}

// --- The debug resource -----------------------------------------------------------------------

static void destroy_resource(zxs_object_t* obj) { free(obj); }
static const zxs_object_ops_t g_resource_ops = {.on_last_handle = NULL,
                                                .destroy = destroy_resource};

zx_status_t zxs_debug_resource_get(zx_handle_t* out) {
  if (out == NULL) return ZX_ERR_INVALID_ARGS;
  *out = ZX_HANDLE_INVALID;
  zxs_resource_obj_t* obj = calloc(1, sizeof(*obj));
  if (obj == NULL) return ZX_ERR_NO_MEMORY;
  zxs_object_init(&obj->base, ZX_OBJ_TYPE_RESOURCE, zxs_koid_next(), &g_resource_ops);
  obj->kind = ZXS_RESOURCE_KIND_DEBUG;
  zx_status_t status = zxs_handle_make(&obj->base, ZX_DEFAULT_RESOURCE_RIGHTS, out);
  if (status != ZX_OK) free(obj);
  return status;
}

// The library makes its own (zxs_debug_resource_get): a program's handle is not taken.
zx_status_t zxs_debug_resource_set(zx_handle_t rsrc) {
  (void)rsrc;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_check_debug_resource(zx_handle_t rsrc) {
  zxs_object_t* obj;
  zx_status_t status = zxs_handle_get(rsrc, ZX_OBJ_TYPE_RESOURCE, ZX_RIGHT_NONE, &obj, NULL);
  if (status != ZX_OK) return status;
  uint32_t kind = ((zxs_resource_obj_t*)obj)->kind;
  zxs_object_release(obj);
  return kind == ZXS_RESOURCE_KIND_DEBUG ? ZX_OK : ZX_ERR_ACCESS_DENIED;
}

// --- Misc -------------------------------------------------------------------------------------

uint32_t zxs_system_get_page_size(void) {
  zxs_prim_caps_t caps;
  zxs_prim_get_caps(&caps);
  return (uint32_t)caps.page_size;
}

uint32_t zxs_system_get_num_cpus(void) {
  zxs_prim_caps_t caps;
  zxs_prim_get_caps(&caps);
  uint32_t* cpus = calloc(caps.cpu_number_limit, sizeof(uint32_t));
  uint32_t count = 0;
  if (cpus == NULL || zxs_prim_online_cpus(cpus, caps.cpu_number_limit, &count) != ZX_OK) {
    count = 0;
  }
  free(cpus);
  return count > 0 ? count : 1;
}

zx_ticks_t zxs_ticks_get(void) { return (zx_ticks_t)zxs_prim_ticks(); }
zx_ticks_t zxs_ticks_per_second(void) { return (zx_ticks_t)zxs_prim_ticks_per_second(); }

// --- zx_object_get_info: the topics, each to the object that answers it ------------------------

zx_status_t zxs_object_get_info(zx_handle_t handle, zx_object_info_topic_t topic, void* buffer,
                                size_t buffer_size, size_t* actual, size_t* avail) {
  if (buffer == NULL && buffer_size != 0) return ZX_ERR_INVALID_ARGS;
  zxs_object_t* obj;
  zx_rights_t rights;
  zx_status_t status;
  switch (topic) {
    case ZX_INFO_HANDLE_BASIC: {
      status = zxs_handle_get(handle, ZX_OBJ_TYPE_NONE, ZX_RIGHT_NONE, &obj, &rights);
      if (status != ZX_OK) return status;
      if (buffer_size < sizeof(zx_info_handle_basic_t)) {
        status = ZX_ERR_BUFFER_TOO_SMALL;
      } else {
        zx_info_handle_basic_t info = {.koid = obj->koid,
                                       .rights = rights,
                                       .type = obj->type,
                                       .related_koid = obj->related_koid};
        memcpy(buffer, &info, sizeof(info));
        zxs_info_count(actual, 1);
      }
      zxs_info_count(avail, 1);
      zxs_object_release(obj);
      return status;
    }
    case ZX_INFO_TASK_RUNTIME:
    case ZX_INFO_TASK_RUNTIME_V1:
      return zxs_task_runtime_get_info(handle, topic, buffer, buffer_size, actual, avail);
    case ZX_INFO_IOB:
    case ZX_INFO_IOB_REGIONS:
      return zxs_session_get_info(handle, topic, buffer, buffer_size, actual, avail);
    default:
      return ZX_ERR_NOT_SUPPORTED;
  }
}
