// ZX_INFO_TASK_RUNTIME for zx_object_get_info (internal).
#ifndef ZXSAMPLER_SRC_CORE_TASK_RUNTIME_H_
#define ZXSAMPLER_SRC_CORE_TASK_RUNTIME_H_

#include <stddef.h>
#include <zxsampler/types.h>

// The ZX_INFO_TASK_RUNTIME and ZX_INFO_TASK_RUNTIME_V1 topics (the topic is already checked).
zx_status_t zxs_task_runtime_get_info(zx_handle_t handle, zx_object_info_topic_t topic,
                                      void* buffer, size_t buffer_size, size_t* actual,
                                      size_t* avail);

#endif  // ZXSAMPLER_SRC_CORE_TASK_RUNTIME_H_
