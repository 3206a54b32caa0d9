// ZX_INFO_TASK_RUNTIME (RFC-0084) on thread and process handles: handle checks in Fuchsia's
// order, then the backend's measurement (platform.h).
#include "task_runtime.h"

#include <string.h>
#include <zxsampler/object.h>

#include "handle_table.h"
#include "objects.h"
#include "platform.h"

// The runtime of the thread or process behind `handle`. As Fuchsia's kernel does for this topic,
// the right (ZX_RIGHT_INSPECT) is checked before the type. Measuring begins here: a thread's
// first query, or every live thread on a process query.
static zx_status_t runtime_of_handle(zx_handle_t handle, zxs_prim_runtime_t* out) {
  zxs_object_t* obj;
  zx_status_t status = zxs_handle_get(handle, ZX_OBJ_TYPE_NONE, ZX_RIGHT_INSPECT, &obj, NULL);
  if (status != ZX_OK) return status;
  const zx_obj_type_t type = obj->type;
  if (type != ZX_OBJ_TYPE_THREAD && type != ZX_OBJ_TYPE_PROCESS) {
    zxs_object_release(obj);
    return ZX_ERR_WRONG_TYPE;
  }
  memset(out, 0, sizeof(*out));
  if (type == ZX_OBJ_TYPE_PROCESS) {
    status = zxs_prim_runtime_process(out);
  } else {
    const zxs_thread_obj_t* thread = (const zxs_thread_obj_t*)(const void*)obj;
    status = zxs_prim_runtime_measure(&thread->thread);
    if (status == ZX_OK || status == ZX_ERR_BAD_STATE) {
      // An exited thread still answers if it was measured before.
      status = zxs_prim_runtime_thread(thread->thread.koid, out);
      if (status == ZX_ERR_NOT_FOUND) status = ZX_ERR_BAD_STATE;
    }
  }
  zxs_object_release(obj);
  return status;
}

zx_status_t zxs_task_runtime_get_info(zx_handle_t handle, zx_object_info_topic_t topic,
                                      void* buffer, size_t buffer_size, size_t* actual,
                                      size_t* avail) {
  zxs_prim_runtime_t rt;
  zx_status_t status = runtime_of_handle(handle, &rt);
  if (status != ZX_OK) return status;
  zxs_info_count(avail, 1);
  if (topic == ZX_INFO_TASK_RUNTIME_V1) {
    if (buffer_size < sizeof(zx_info_task_runtime_v1_t)) return ZX_ERR_BUFFER_TOO_SMALL;
    const zx_info_task_runtime_v1_t v1 = {.cpu_time = rt.info.cpu_time,
                                          .queue_time = rt.info.queue_time};
    memcpy(buffer, &v1, sizeof(v1));
  } else {
    if (buffer_size < sizeof(zx_info_task_runtime_t)) return ZX_ERR_BUFFER_TOO_SMALL;
    memcpy(buffer, &rt.info, sizeof(rt.info));
  }
  zxs_info_count(actual, 1);
  return ZX_OK;
}

zx_status_t zxs_task_runtime_fields(zx_handle_t task, uint32_t* fields) {
  if (fields == NULL) return ZX_ERR_INVALID_ARGS;
  *fields = 0;
  zxs_prim_runtime_t rt;
  zx_status_t status = runtime_of_handle(task, &rt);
  if (status == ZX_OK) *fields = rt.fields;
  return status;
}

zx_status_t zxs_task_runtime_of_koid(zx_koid_t koid, zx_info_task_runtime_t* out,
                                     uint32_t* fields) {
  if (out == NULL) return ZX_ERR_INVALID_ARGS;
  memset(out, 0, sizeof(*out));
  if (fields != NULL) *fields = 0;
  zxs_prim_runtime_t rt;
  zx_status_t status = zxs_prim_runtime_thread(koid, &rt);
  if (status != ZX_OK) return status;
  *out = rt.info;
  if (fields != NULL) *fields = rt.fields;
  return ZX_OK;
}
