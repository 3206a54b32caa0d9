// Object kinds other than the sampler's IOBuffer (internal).
#ifndef ZXSAMPLER_SRC_CORE_OBJECTS_H_
#define ZXSAMPLER_SRC_CORE_OBJECTS_H_

#include "handle_table.h"
#include "platform.h"

typedef struct zxs_thread_obj {
  zxs_object_t base;
  zxs_prim_thread_t thread;
} zxs_thread_obj_t;

#define ZXS_RESOURCE_KIND_DEBUG 1u

typedef struct zxs_resource_obj {
  zxs_object_t base;
  uint32_t kind;
} zxs_resource_obj_t;

// A thread handle's rights, as the kernel gives them (zx_thread_self() included).
#define ZXS_THREAD_DEFAULT_RIGHTS ZX_DEFAULT_THREAD_RIGHTS

// The process-wide switches of create/attach/start/stop: ZX_ERR_NOT_SUPPORTED when sampling is
// compiled out or switched off at run time, else ZX_OK.
zx_status_t zxs_sampler_check_enabled(void);

// ZX_OK when `rsrc` is a handle to the debug resource; else ZX_ERR_BAD_HANDLE,
// ZX_ERR_WRONG_TYPE (not a resource) or ZX_ERR_ACCESS_DENIED (a resource of another kind).
zx_status_t zxs_check_debug_resource(zx_handle_t rsrc);

// zx_object_get_info's count outputs, which callers may pass as NULL.
static inline void zxs_info_count(size_t* p, size_t v) {
  if (p != NULL) *p = v;
}
// The sampler IOBuffer's topics (ZX_INFO_IOB, ZX_INFO_IOB_REGIONS) for zx_object_get_info
// (session.c): its statuses.
zx_status_t zxs_session_get_info(zx_handle_t handle, zx_object_info_topic_t topic, void* buffer,
                                 size_t buffer_size, size_t* actual, size_t* avail);

// Forgets the calling thread's own handle (thread exit).
void zxs_thread_self_forget(zx_koid_t koid);

// In the child of a fork, with the handle table unlocked: the process is new (its koid), and
// the forking thread's own handle named a thread of the parent (it is closed). session.c's
// fork step calls it.
void zxs_objects_after_fork_child(void);

#endif  // ZXSAMPLER_SRC_CORE_OBJECTS_H_
