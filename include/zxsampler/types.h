// Fuchsia-compatible types, status codes, rights and object-info layouts.
//
// Names and numeric values are Fuchsia's, so code and logs read the same on every platform and
// the Fuchsia backend passes statuses through untouched. Nothing here allocates or blocks.
#ifndef ZXSAMPLER_TYPES_H_
#define ZXSAMPLER_TYPES_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Marks the library's exported functions (it is built with hidden visibility).
#if defined(__GNUC__) || defined(__clang__)
#define ZXS_API __attribute__((visibility("default")))
#else
#define ZXS_API
#endif

typedef int32_t zx_status_t;
typedef uint32_t zx_handle_t;
typedef uint32_t zx_rights_t;
typedef uint32_t zx_obj_type_t;
typedef uint64_t zx_koid_t;
typedef int64_t zx_duration_t;
typedef int64_t zx_duration_mono_t;
typedef int64_t zx_time_t;
typedef int64_t zx_ticks_t;
typedef uintptr_t zx_vaddr_t;
typedef uint32_t zx_vm_option_t;
typedef uint32_t zx_object_info_topic_t;
typedef zx_handle_t zx_resource_t;

#define ZX_HANDLE_INVALID ((zx_handle_t)0)
#define ZX_KOID_INVALID ((zx_koid_t)0)

// Status codes (Fuchsia's values).
#define ZX_OK ((zx_status_t)0)
#define ZX_ERR_INTERNAL ((zx_status_t)-1)
#define ZX_ERR_NOT_SUPPORTED ((zx_status_t)-2)
#define ZX_ERR_NO_RESOURCES ((zx_status_t)-3)
#define ZX_ERR_NO_MEMORY ((zx_status_t)-4)
#define ZX_ERR_INVALID_ARGS ((zx_status_t)-10)
#define ZX_ERR_BAD_HANDLE ((zx_status_t)-11)
#define ZX_ERR_WRONG_TYPE ((zx_status_t)-12)
#define ZX_ERR_BAD_SYSCALL ((zx_status_t)-13)
#define ZX_ERR_OUT_OF_RANGE ((zx_status_t)-14)
#define ZX_ERR_BUFFER_TOO_SMALL ((zx_status_t)-15)
#define ZX_ERR_BAD_STATE ((zx_status_t)-20)
#define ZX_ERR_TIMED_OUT ((zx_status_t)-21)
#define ZX_ERR_SHOULD_WAIT ((zx_status_t)-22)
#define ZX_ERR_CANCELED ((zx_status_t)-23)
#define ZX_ERR_PEER_CLOSED ((zx_status_t)-24)
#define ZX_ERR_NOT_FOUND ((zx_status_t)-25)
#define ZX_ERR_ALREADY_EXISTS ((zx_status_t)-26)
#define ZX_ERR_ALREADY_BOUND ((zx_status_t)-27)
#define ZX_ERR_UNAVAILABLE ((zx_status_t)-28)
#define ZX_ERR_ACCESS_DENIED ((zx_status_t)-30)
#define ZX_ERR_IO ((zx_status_t)-40)
#define ZX_ERR_IO_DATA_INTEGRITY ((zx_status_t)-42)
#define ZX_ERR_IO_INVALID ((zx_status_t)-47)
#define ZX_ERR_BAD_PATH ((zx_status_t)-50)
#define ZX_ERR_NOT_FILE ((zx_status_t)-52)
#define ZX_ERR_FILE_BIG ((zx_status_t)-53)
#define ZX_ERR_NO_SPACE ((zx_status_t)-54)

// Rights (Fuchsia's bits).
#define ZX_RIGHT_NONE ((zx_rights_t)0u)
#define ZX_RIGHT_DUPLICATE ((zx_rights_t)1u << 0)
#define ZX_RIGHT_TRANSFER ((zx_rights_t)1u << 1)
#define ZX_RIGHT_READ ((zx_rights_t)1u << 2)
#define ZX_RIGHT_WRITE ((zx_rights_t)1u << 3)
#define ZX_RIGHT_EXECUTE ((zx_rights_t)1u << 4)
#define ZX_RIGHT_MAP ((zx_rights_t)1u << 5)
#define ZX_RIGHT_GET_PROPERTY ((zx_rights_t)1u << 6)
#define ZX_RIGHT_SET_PROPERTY ((zx_rights_t)1u << 7)
#define ZX_RIGHT_ENUMERATE ((zx_rights_t)1u << 8)
#define ZX_RIGHT_DESTROY ((zx_rights_t)1u << 9)
#define ZX_RIGHT_SET_POLICY ((zx_rights_t)1u << 10)
#define ZX_RIGHT_GET_POLICY ((zx_rights_t)1u << 11)
#define ZX_RIGHT_SIGNAL ((zx_rights_t)1u << 12)
#define ZX_RIGHT_SIGNAL_PEER ((zx_rights_t)1u << 13)
#define ZX_RIGHT_WAIT ((zx_rights_t)1u << 14)
#define ZX_RIGHT_INSPECT ((zx_rights_t)1u << 15)
#define ZX_RIGHT_MANAGE_JOB ((zx_rights_t)1u << 16)
#define ZX_RIGHT_MANAGE_PROCESS ((zx_rights_t)1u << 17)
#define ZX_RIGHT_MANAGE_THREAD ((zx_rights_t)1u << 18)
#define ZX_RIGHT_APPLY_PROFILE ((zx_rights_t)1u << 19)
#define ZX_RIGHT_SAME_RIGHTS ((zx_rights_t)1u << 31)

// Object types (Fuchsia's values).
#define ZX_OBJ_TYPE_NONE ((zx_obj_type_t)0u)
#define ZX_OBJ_TYPE_PROCESS ((zx_obj_type_t)1u)
#define ZX_OBJ_TYPE_THREAD ((zx_obj_type_t)2u)
#define ZX_OBJ_TYPE_VMO ((zx_obj_type_t)3u)
#define ZX_OBJ_TYPE_CHANNEL ((zx_obj_type_t)4u)  // the perfmon controller (perfmon.h)
#define ZX_OBJ_TYPE_RESOURCE ((zx_obj_type_t)15u)
#define ZX_OBJ_TYPE_VMAR ((zx_obj_type_t)18u)
#define ZX_OBJ_TYPE_IOB ((zx_obj_type_t)33u)

// zx_object_get_info topics.
#define ZX_INFO_HANDLE_BASIC ((zx_object_info_topic_t)2u)
#define ZX_INFO_IOB ((zx_object_info_topic_t)34u)
#define ZX_INFO_IOB_REGIONS ((zx_object_info_topic_t)35u)
// Versioned topics carry their version in the top 4 bits (Fuchsia's __ZX_INFO_TOPIC).
#define ZX_INFO_TASK_RUNTIME_V1 ((zx_object_info_topic_t)30u)
#define ZX_INFO_TASK_RUNTIME ((zx_object_info_topic_t)(30u | (1u << 28)))

typedef struct zx_info_handle_basic {
  zx_koid_t koid;
  zx_rights_t rights;
  zx_obj_type_t type;
  zx_koid_t related_koid;
  uint32_t reserved;
  uint8_t padding1[4];
} zx_info_handle_basic_t;

// ZX_INFO_TASK_RUNTIME (RFC-0084): where a task's time went since it was created. The fields
// overlap and need not sum to wall time. A thread reports its own time; a process the sum over
// its threads, those that exited included. See object.h for what each field measures on a host
// and zxs_task_runtime_fields() for which ones it can measure.
typedef struct zx_info_task_runtime {
  zx_duration_mono_t cpu_time;              // running on a CPU
  zx_duration_mono_t queue_time;            // ready to run, waiting for a CPU
  zx_duration_mono_t page_fault_time;       // handling page faults
  zx_duration_mono_t lock_contention_time;  // blocked on contended kernel locks
} zx_info_task_runtime_t;

// ZX_INFO_TASK_RUNTIME_V1: the layout before RFC-0084.
typedef struct zx_info_task_runtime_v1 {
  zx_duration_mono_t cpu_time;
  zx_duration_mono_t queue_time;
} zx_info_task_runtime_v1_t;

// IOBuffers.
#define ZX_IOB_MAX_REGIONS 64
#define ZX_IOB_DISCIPLINE_TYPE_NONE ((uint64_t)0u)
#define ZX_IOB_DISCIPLINE_NONE ZX_IOB_DISCIPLINE_TYPE_NONE
#define ZX_IOB_REGION_TYPE_PRIVATE ((uint32_t)0u)
#define ZX_IOB_EP0_CAN_MAP_READ (1u << 0)
#define ZX_IOB_EP0_CAN_MAP_WRITE (1u << 1)
#define ZX_IOB_EP0_CAN_MEDIATED_READ (1u << 2)
#define ZX_IOB_EP0_CAN_MEDIATED_WRITE (1u << 3)
#define ZX_IOB_EP1_CAN_MAP_READ (1u << 4)
#define ZX_IOB_EP1_CAN_MAP_WRITE (1u << 5)
#define ZX_IOB_EP1_CAN_MEDIATED_READ (1u << 6)
#define ZX_IOB_EP1_CAN_MEDIATED_WRITE (1u << 7)

typedef struct zx_iob_discipline {
  uint64_t type;
  uint64_t reserved[8];
} zx_iob_discipline_t;

typedef struct zx_iob_region_private {
  uint32_t options;
  uint32_t padding1;
  uint64_t padding2[3];
} zx_iob_region_private_t;

typedef struct zx_iob_region {
  uint32_t type;
  uint32_t access;
  uint64_t size;
  zx_iob_discipline_t discipline;
  union {
    zx_iob_region_private_t private_region;
    uint8_t max_extension[32];
  };
} zx_iob_region_t;

typedef struct zx_info_iob {
  uint64_t options;
  uint32_t region_count;
  uint8_t padding1[4];
} zx_info_iob_t;

typedef struct zx_iob_region_info {
  zx_iob_region_t region;
  zx_koid_t koid;
} zx_iob_region_info_t;

// VMAR mapping options (Fuchsia's bits; only the ones this library honours or rejects).
#define ZX_VM_PERM_READ ((zx_vm_option_t)1u << 0)
#define ZX_VM_PERM_WRITE ((zx_vm_option_t)1u << 1)
#define ZX_VM_PERM_EXECUTE ((zx_vm_option_t)1u << 2)
#define ZX_VM_SPECIFIC ((zx_vm_option_t)1u << 10)

// The name of a status, e.g. "ZX_ERR_BAD_STATE"; "(unknown)" for other values.
// Thread-safe and async-signal-safe (returns a static string).
ZXS_API const char* zxs_status_string(zx_status_t status);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ZXSAMPLER_TYPES_H_
