// Fuchsia-compatible types, status codes, rights and object-info layouts.
//
// Names and numeric values are Fuchsia's, so code and logs read the same on every platform and
// the Fuchsia backend passes statuses through untouched. Each group below says which of
// Fuchsia's public headers it follows (<zircon/errors.h>, <zircon/limits.h>, <zircon/rights.h>,
// <zircon/time.h>, <zircon/types.h>, <zircon/syscalls/iob.h>, <zircon/syscalls/object.h>): of
// each, every name a program can use with what this library implements, with Fuchsia's value.
// tests/headers/test_fuchsia_values.c checks them against a table of Fuchsia's values.
//
// Built for Fuchsia (__Fuchsia__ defined), this header defines none of those names: it includes
// the system's headers instead, so it never clashes with <zircon/types.h>. Only the library's
// own names (ZXS_*, zxs_*) are defined there; the older names kept for source compatibility
// (zx_resource_t, ZX_IOB_DISCIPLINE_NONE, ZX_IOB_EP*) exist on hosts only.
//
// Nothing here allocates or blocks.
#ifndef ZXSAMPLER_TYPES_H_
#define ZXSAMPLER_TYPES_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__Fuchsia__)

#include <zircon/errors.h>
#include <zircon/limits.h>
#include <zircon/rights.h>
#include <zircon/syscalls/iob.h>
#include <zircon/syscalls/object.h>
#include <zircon/time.h>
#include <zircon/types.h>

#else  // !__Fuchsia__

#include <time.h>

#endif  // __Fuchsia__

#ifdef __cplusplus
extern "C" {
#endif

// Marks the library's exported functions (it is built with hidden visibility).
#if defined(__GNUC__) || defined(__clang__)
#define ZXS_API __attribute__((visibility("default")))
#else
#define ZXS_API
#endif

#if !defined(__Fuchsia__)

// --- <zircon/errors.h> --------------------------------------------------------------------------
// Plain int constants, as Fuchsia's (usable in #if).
#define ZX_OK (0)
#define ZX_ERR_INTERNAL (-1)
#define ZX_ERR_NOT_SUPPORTED (-2)
#define ZX_ERR_NO_RESOURCES (-3)
#define ZX_ERR_NO_MEMORY (-4)
#define ZX_ERR_INTERNAL_INTR_RETRY (-6)
#define ZX_ERR_INVALID_ARGS (-10)
#define ZX_ERR_BAD_HANDLE (-11)
#define ZX_ERR_WRONG_TYPE (-12)
#define ZX_ERR_BAD_SYSCALL (-13)
#define ZX_ERR_OUT_OF_RANGE (-14)
#define ZX_ERR_BUFFER_TOO_SMALL (-15)
#define ZX_ERR_BAD_STATE (-20)
#define ZX_ERR_TIMED_OUT (-21)
#define ZX_ERR_SHOULD_WAIT (-22)
#define ZX_ERR_CANCELED (-23)
#define ZX_ERR_PEER_CLOSED (-24)
#define ZX_ERR_NOT_FOUND (-25)
#define ZX_ERR_ALREADY_EXISTS (-26)
#define ZX_ERR_ALREADY_BOUND (-27)
#define ZX_ERR_UNAVAILABLE (-28)
#define ZX_ERR_ACCESS_DENIED (-30)
#define ZX_ERR_IO (-40)
#define ZX_ERR_IO_REFUSED (-41)
#define ZX_ERR_IO_DATA_INTEGRITY (-42)
#define ZX_ERR_IO_DATA_LOSS (-43)
#define ZX_ERR_IO_NOT_PRESENT (-44)
#define ZX_ERR_IO_OVERRUN (-45)
#define ZX_ERR_IO_MISSED_DEADLINE (-46)
#define ZX_ERR_IO_INVALID (-47)
#define ZX_ERR_BAD_PATH (-50)
#define ZX_ERR_NOT_DIR (-51)
#define ZX_ERR_NOT_FILE (-52)
#define ZX_ERR_FILE_BIG (-53)
#define ZX_ERR_NO_SPACE (-54)
#define ZX_ERR_NOT_EMPTY (-55)
#define ZX_ERR_STOP (-60)
#define ZX_ERR_NEXT (-61)
#define ZX_ERR_ASYNC (-62)
#define ZX_ERR_PROTOCOL_NOT_SUPPORTED (-70)
#define ZX_ERR_ADDRESS_UNREACHABLE (-71)
#define ZX_ERR_ADDRESS_IN_USE (-72)
#define ZX_ERR_NOT_CONNECTED (-73)
#define ZX_ERR_CONNECTION_REFUSED (-74)
#define ZX_ERR_CONNECTION_RESET (-75)
#define ZX_ERR_CONNECTION_ABORTED (-76)
#define ZX_ERR_INTERNAL_INTR_KILLED (-502)

// --- <zircon/limits.h> --------------------------------------------------------------------------
// Fuchsia's page size is a constant 4 KiB; the host's may be larger (arm64 with 16 or 64 KiB
// pages). Regions, mappings and their alignment follow the host's: zx_system_get_page_size().
#define ZX_PAGE_SHIFT ((uint32_t)12u)
#define ZX_PAGE_SIZE ((uintptr_t)(1u << ZX_PAGE_SHIFT))
#define ZX_PAGE_MASK (ZX_PAGE_SIZE - 1u)
#if defined(__x86_64__) || defined(__i386__) || defined(__riscv)
#define ZX_MIN_PAGE_SHIFT ((uint32_t)12u)
#define ZX_MAX_PAGE_SHIFT ((uint32_t)21u)
#elif defined(__aarch64__) || defined(__arm__)
#define ZX_MIN_PAGE_SHIFT ((uint32_t)12u)
#define ZX_MAX_PAGE_SHIFT ((uint32_t)16u)
#endif
#ifdef ZX_MIN_PAGE_SHIFT
#define ZX_MIN_PAGE_SIZE ((uintptr_t)(1u << ZX_MIN_PAGE_SHIFT))
#define ZX_MAX_PAGE_SIZE ((uintptr_t)(1u << ZX_MAX_PAGE_SHIFT))
#endif

// --- <zircon/rights.h> --------------------------------------------------------------------------
typedef uint32_t zx_rights_t;
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
#define ZX_RIGHT_MANAGE_SOCKET ((zx_rights_t)1u << 20)
#define ZX_RIGHT_OP_CHILDREN ((zx_rights_t)1u << 21)
#define ZX_RIGHT_RESIZE ((zx_rights_t)1u << 22)
#define ZX_RIGHT_ATTACH_VMO ((zx_rights_t)1u << 23)
#define ZX_RIGHT_MANAGE_VMO ((zx_rights_t)1u << 24)
#define ZX_RIGHT_SAME_RIGHTS ((zx_rights_t)1u << 31)

// Groups of rights.
#define ZX_RIGHTS_BASIC (ZX_RIGHT_TRANSFER | ZX_RIGHT_DUPLICATE | ZX_RIGHT_WAIT | ZX_RIGHT_INSPECT)
#define ZX_RIGHTS_IO (ZX_RIGHT_READ | ZX_RIGHT_WRITE)
#define ZX_RIGHTS_PROPERTY (ZX_RIGHT_GET_PROPERTY | ZX_RIGHT_SET_PROPERTY)
#define ZX_RIGHTS_POLICY (ZX_RIGHT_GET_POLICY | ZX_RIGHT_SET_POLICY)

// The rights of a newly created object's handle, by object type.
#define ZX_DEFAULT_CHANNEL_RIGHTS                                               \
  ((ZX_RIGHTS_BASIC & (~ZX_RIGHT_DUPLICATE)) | ZX_RIGHTS_IO | ZX_RIGHT_SIGNAL | \
   ZX_RIGHT_SIGNAL_PEER)
#define ZX_DEFAULT_EVENT_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHT_SIGNAL)
#define ZX_DEFAULT_SYSTEM_EVENT_LOW_MEMORY_RIGHTS \
  (ZX_RIGHT_WAIT | ZX_RIGHT_DUPLICATE | ZX_RIGHT_TRANSFER)
#define ZX_DEFAULT_EVENTPAIR_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHT_SIGNAL | ZX_RIGHT_SIGNAL_PEER)
#define ZX_DEFAULT_FIFO_RIGHTS \
  (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHT_SIGNAL | ZX_RIGHT_SIGNAL_PEER)
#define ZX_DEFAULT_GUEST_RIGHTS                                                 \
  (ZX_RIGHT_TRANSFER | ZX_RIGHT_DUPLICATE | ZX_RIGHT_WRITE | ZX_RIGHT_INSPECT | \
   ZX_RIGHT_MANAGE_THREAD)
#define ZX_DEFAULT_INTERRUPT_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHT_SIGNAL)
#define ZX_DEFAULT_JOB_RIGHTS                                                                    \
  (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHTS_PROPERTY | ZX_RIGHTS_POLICY | ZX_RIGHT_ENUMERATE | \
   ZX_RIGHT_DESTROY | ZX_RIGHT_SIGNAL | ZX_RIGHT_MANAGE_JOB | ZX_RIGHT_MANAGE_PROCESS |          \
   ZX_RIGHT_MANAGE_THREAD)
#define ZX_DEFAULT_LOG_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHT_WRITE | ZX_RIGHT_SIGNAL)
#define ZX_DEFAULT_MSI_RIGHTS (ZX_RIGHTS_BASIC)
#define ZX_DEFAULT_PCI_DEVICE_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO)
#define ZX_DEFAULT_PCI_INTERRUPT_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHT_SIGNAL)
#define ZX_DEFAULT_PORT_RIGHTS ((ZX_RIGHTS_BASIC & (~ZX_RIGHT_WAIT)) | ZX_RIGHTS_IO)
#define ZX_DEFAULT_PROCESS_RIGHTS                                                                \
  (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHTS_PROPERTY | ZX_RIGHT_ENUMERATE | ZX_RIGHT_DESTROY | \
   ZX_RIGHT_SIGNAL | ZX_RIGHT_MANAGE_PROCESS | ZX_RIGHT_MANAGE_THREAD)
#define ZX_DEFAULT_RESOURCE_RIGHTS \
  (ZX_RIGHT_TRANSFER | ZX_RIGHT_DUPLICATE | ZX_RIGHT_WRITE | ZX_RIGHT_INSPECT)
#define ZX_DEFAULT_SOCKET_RIGHTS                                                    \
  (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHT_GET_PROPERTY | ZX_RIGHT_SET_PROPERTY | \
   ZX_RIGHT_SIGNAL | ZX_RIGHT_SIGNAL_PEER | ZX_RIGHT_MANAGE_SOCKET)
#define ZX_DEFAULT_STREAM_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHTS_PROPERTY | ZX_RIGHT_SIGNAL)
#define ZX_DEFAULT_THREAD_RIGHTS                                                              \
  (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHTS_PROPERTY | ZX_RIGHT_DESTROY | ZX_RIGHT_SIGNAL | \
   ZX_RIGHT_MANAGE_THREAD)
#define ZX_DEFAULT_TIMER_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHT_WRITE | ZX_RIGHT_SIGNAL)
#define ZX_DEFAULT_VCPU_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHT_EXECUTE | ZX_RIGHT_SIGNAL)
#define ZX_DEFAULT_VMAR_RIGHTS ((ZX_RIGHTS_BASIC & (~ZX_RIGHT_WAIT)) | ZX_RIGHT_OP_CHILDREN)
#define ZX_DEFAULT_VMO_RIGHTS \
  (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHTS_PROPERTY | ZX_RIGHT_MAP | ZX_RIGHT_SIGNAL)
#define ZX_DEFAULT_IOMMU_RIGHTS (ZX_RIGHTS_BASIC & (~ZX_RIGHT_WAIT))
#define ZX_DEFAULT_BTI_RIGHTS \
  ((ZX_RIGHTS_BASIC & (~ZX_RIGHT_WAIT)) | ZX_RIGHTS_IO | ZX_RIGHTS_PROPERTY | ZX_RIGHT_MAP)
#define ZX_DEFAULT_PROFILE_RIGHTS ((ZX_RIGHTS_BASIC & (~ZX_RIGHT_WAIT)) | ZX_RIGHT_APPLY_PROFILE)
#define ZX_DEFAULT_PMT_RIGHTS (ZX_RIGHT_INSPECT)
#define ZX_DEFAULT_SUSPEND_TOKEN_RIGHTS (ZX_RIGHT_TRANSFER | ZX_RIGHT_INSPECT)
#define ZX_DEFAULT_PAGER_RIGHTS \
  (ZX_RIGHT_INSPECT | ZX_RIGHT_TRANSFER | ZX_RIGHT_ATTACH_VMO | ZX_RIGHT_MANAGE_VMO)
#define ZX_DEFAULT_EXCEPTION_RIGHTS (ZX_RIGHT_TRANSFER | ZX_RIGHTS_PROPERTY | ZX_RIGHT_INSPECT)
#define ZX_DEFAULT_CLOCK_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHT_SIGNAL)
#define ZX_DEFAULT_IOB_RIGHTS                                                           \
  (ZX_RIGHTS_BASIC | ZX_RIGHT_WAIT | ZX_RIGHTS_IO | ZX_RIGHTS_PROPERTY | ZX_RIGHT_MAP | \
   ZX_RIGHT_SIGNAL | ZX_RIGHT_SIGNAL_PEER)
#define ZX_DEFAULT_COUNTER_RIGHTS (ZX_RIGHTS_BASIC | ZX_RIGHTS_IO | ZX_RIGHT_SIGNAL)

// --- <zircon/time.h> ----------------------------------------------------------------------------
// zx_<instant|duration>_<mono|boot>[_ticks]_t: points and spans on one timeline, in nanoseconds
// or ticks; zx_time_t, zx_duration_t and zx_ticks_t where the timeline is not known.
typedef int64_t zx_instant_mono_t;
typedef int64_t zx_instant_mono_ticks_t;
typedef int64_t zx_duration_mono_t;
typedef int64_t zx_duration_mono_ticks_t;
typedef int64_t zx_instant_boot_t;
typedef int64_t zx_instant_boot_ticks_t;
typedef int64_t zx_duration_boot_t;
typedef int64_t zx_duration_boot_ticks_t;
typedef int64_t zx_time_t;
typedef int64_t zx_duration_t;
typedef int64_t zx_ticks_t;

#define ZX_TIME_INFINITE INT64_MAX
#define ZX_TIME_INFINITE_PAST INT64_MIN

// Time arithmetic that saturates: an overflow gives ZX_TIME_INFINITE, an underflow
// ZX_TIME_INFINITE_PAST (as Fuchsia's). zx_<first>_<operation>_<second>; zx_duration_from_<unit>.
#ifdef __cplusplus
#define ZXS_TIME_FN_ constexpr static inline
#else
#define ZXS_TIME_FN_ static inline
#endif
// The saturated result of an operation that overflowed into `wrapped`.
ZXS_TIME_FN_ int64_t zxs_time_saturate_(int64_t wrapped) {
  return wrapped >= 0 ? ZX_TIME_INFINITE_PAST : ZX_TIME_INFINITE;
}
ZXS_TIME_FN_ int64_t zxs_time_add_(int64_t a, int64_t b) {
  int64_t x = 0;
  return __builtin_add_overflow(a, b, &x) ? zxs_time_saturate_(x) : x;
}
ZXS_TIME_FN_ int64_t zxs_time_sub_(int64_t a, int64_t b) {
  int64_t x = 0;
  return __builtin_sub_overflow(a, b, &x) ? zxs_time_saturate_(x) : x;
}
ZXS_TIME_FN_ int64_t zxs_time_mul_(int64_t a, int64_t b) {
  int64_t x = 0;
  if (!__builtin_mul_overflow(a, b, &x)) return x;
  return (a > 0) == (b > 0) ? ZX_TIME_INFINITE : ZX_TIME_INFINITE_PAST;
}
ZXS_TIME_FN_ zx_time_t zx_time_add_duration(zx_time_t time, zx_duration_t duration) {
  return zxs_time_add_(time, duration);
}
ZXS_TIME_FN_ zx_time_t zx_time_sub_duration(zx_time_t time, zx_duration_t duration) {
  return zxs_time_sub_(time, duration);
}
ZXS_TIME_FN_ zx_duration_t zx_time_sub_time(zx_time_t time1, zx_time_t time2) {
  return zxs_time_sub_(time1, time2);
}
ZXS_TIME_FN_ zx_duration_t zx_duration_add_duration(zx_duration_t dur1, zx_duration_t dur2) {
  return zxs_time_add_(dur1, dur2);
}
ZXS_TIME_FN_ zx_duration_t zx_duration_sub_duration(zx_duration_t dur1, zx_duration_t dur2) {
  return zxs_time_sub_(dur1, dur2);
}
ZXS_TIME_FN_ zx_duration_t zx_duration_mul_int64(zx_duration_t duration, int64_t multiplier) {
  return zxs_time_mul_(duration, multiplier);
}
ZXS_TIME_FN_ int64_t zx_nsec_from_duration(zx_duration_t n) { return n; }
ZXS_TIME_FN_ zx_duration_t zx_duration_from_nsec(int64_t n) { return zxs_time_mul_(1, n); }
ZXS_TIME_FN_ zx_duration_t zx_duration_from_usec(int64_t n) { return zxs_time_mul_(1000, n); }
ZXS_TIME_FN_ zx_duration_t zx_duration_from_msec(int64_t n) { return zxs_time_mul_(1000000, n); }
ZXS_TIME_FN_ zx_duration_t zx_duration_from_sec(int64_t n) { return zxs_time_mul_(1000000000, n); }
ZXS_TIME_FN_ zx_duration_t zx_duration_from_min(int64_t n) { return zxs_time_mul_(60000000000, n); }
ZXS_TIME_FN_ zx_duration_t zx_duration_from_hour(int64_t n) {
  return zxs_time_mul_(3600000000000, n);
}
ZXS_TIME_FN_ zx_ticks_t zx_ticks_add_ticks(zx_ticks_t ticks1, zx_ticks_t ticks2) {
  return zxs_time_add_(ticks1, ticks2);
}
ZXS_TIME_FN_ zx_ticks_t zx_ticks_sub_ticks(zx_ticks_t ticks1, zx_ticks_t ticks2) {
  return zxs_time_sub_(ticks1, ticks2);
}
ZXS_TIME_FN_ zx_ticks_t zx_ticks_mul_int64(zx_ticks_t ticks, int64_t multiplier) {
  return zxs_time_mul_(ticks, multiplier);
}
ZXS_TIME_FN_ zx_duration_t zx_duration_from_timespec(struct timespec ts) {
  return zx_duration_add_duration(zx_duration_from_sec(ts.tv_sec),
                                  zx_duration_from_nsec(ts.tv_nsec));
}
ZXS_TIME_FN_ struct timespec zx_timespec_from_duration(zx_duration_t duration) {
  struct timespec ts = {(time_t)(duration / 1000000000), (long)(duration % 1000000000)};
  return ts;
}
ZXS_TIME_FN_ zx_time_t zx_time_from_timespec(struct timespec ts) {
  return zx_duration_from_timespec(ts);
}
ZXS_TIME_FN_ struct timespec zx_timespec_from_time(zx_time_t time) {
  return zx_timespec_from_duration(time);
}
#undef ZXS_TIME_FN_

// Durations from units: constant expressions for constant arguments, saturating otherwise.
#define ZX_NSEC(n) \
  (__builtin_constant_p(n) ? ((zx_duration_t)(1LL * (n))) : (zx_duration_from_nsec(n)))
#define ZX_USEC(n) \
  (__builtin_constant_p(n) ? ((zx_duration_t)(1000LL * (n))) : (zx_duration_from_usec(n)))
#define ZX_MSEC(n) \
  (__builtin_constant_p(n) ? ((zx_duration_t)(1000000LL * (n))) : (zx_duration_from_msec(n)))
#define ZX_SEC(n) \
  (__builtin_constant_p(n) ? ((zx_duration_t)(1000000000LL * (n))) : (zx_duration_from_sec(n)))
#define ZX_MIN(n)                                                         \
  (__builtin_constant_p(n) ? ((zx_duration_t)(60LL * 1000000000LL * (n))) \
                           : (zx_duration_from_min(n)))
#define ZX_HOUR(n)                                                          \
  (__builtin_constant_p(n) ? ((zx_duration_t)(3600LL * 1000000000LL * (n))) \
                           : (zx_duration_from_hour(n)))

// --- <zircon/types.h> ---------------------------------------------------------------------------
typedef uint32_t zx_handle_t;
#define ZX_HANDLE_INVALID ((zx_handle_t)0)
// The two low bits of every valid handle are set (this library's handles included).
#define ZX_HANDLE_FIXED_BITS_MASK ((zx_handle_t)0x3)

typedef int32_t zx_status_t;

typedef uint32_t zx_clock_t;
#define ZX_CLOCK_MONOTONIC ((zx_clock_t)0)
#define ZX_CLOCK_BOOT ((zx_clock_t)1)

// Signals (the library has no waits; these name the bits Fuchsia's objects assert).
typedef uint32_t zx_signals_t;
#define ZX_SIGNAL_NONE ((zx_signals_t)0u)
#define ZX_USER_SIGNAL_ALL ((zx_signals_t)0xff000000u)
#define ZX_USER_SIGNAL_0 ((zx_signals_t)1u << 24)
#define ZX_USER_SIGNAL_1 ((zx_signals_t)1u << 25)
#define ZX_USER_SIGNAL_2 ((zx_signals_t)1u << 26)
#define ZX_USER_SIGNAL_3 ((zx_signals_t)1u << 27)
#define ZX_USER_SIGNAL_4 ((zx_signals_t)1u << 28)
#define ZX_USER_SIGNAL_5 ((zx_signals_t)1u << 29)
#define ZX_USER_SIGNAL_6 ((zx_signals_t)1u << 30)
#define ZX_USER_SIGNAL_7 ((zx_signals_t)1u << 31)
#define ZX_SIGNAL_HANDLE_CLOSED ((zx_signals_t)1u << 23)
#define ZX_TASK_TERMINATED ((zx_signals_t)1u << 3)
#define ZX_PROCESS_TERMINATED ((zx_signals_t)1u << 3)
#define ZX_THREAD_TERMINATED ((zx_signals_t)1u << 3)
#define ZX_THREAD_RUNNING ((zx_signals_t)1u << 4)
#define ZX_THREAD_SUSPENDED ((zx_signals_t)1u << 5)
#define ZX_VMO_ZERO_CHILDREN ((zx_signals_t)1u << 3)
#define ZX_IOB_PEER_CLOSED ((zx_signals_t)1u << 2)

// Kernel object ids. On a host a thread's koid is its tid and the process's its pid (which can
// be below ZX_KOID_FIRST); the library's other objects count up from 2^40.
typedef uint64_t zx_koid_t;
#define ZX_KOID_INVALID ((uint64_t)0)
#define ZX_KOID_KERNEL ((uint64_t)1)
#define ZX_KOID_FIRST ((uint64_t)1024)

// VMAR mapping options. Which of them zx_vmar_map_iob() and zx_vmar_map() accept: object.h;
// the others are named so that programs using them compile.
typedef uint32_t zx_vm_option_t;
#define ZX_VM_PERM_READ ((zx_vm_option_t)(1u << 0))
#define ZX_VM_PERM_WRITE ((zx_vm_option_t)(1u << 1))
#define ZX_VM_PERM_EXECUTE ((zx_vm_option_t)(1u << 2))
#define ZX_VM_COMPACT ((zx_vm_option_t)(1u << 3))
#define ZX_VM_SPECIFIC ((zx_vm_option_t)(1u << 4))
#define ZX_VM_SPECIFIC_OVERWRITE ((zx_vm_option_t)(1u << 5))
#define ZX_VM_CAN_MAP_SPECIFIC ((zx_vm_option_t)(1u << 6))
#define ZX_VM_CAN_MAP_READ ((zx_vm_option_t)(1u << 7))
#define ZX_VM_CAN_MAP_WRITE ((zx_vm_option_t)(1u << 8))
#define ZX_VM_CAN_MAP_EXECUTE ((zx_vm_option_t)(1u << 9))
#define ZX_VM_MAP_RANGE ((zx_vm_option_t)(1u << 10))
#define ZX_VM_REQUIRE_NON_RESIZABLE ((zx_vm_option_t)(1u << 11))
#define ZX_VM_ALLOW_FAULTS ((zx_vm_option_t)(1u << 12))
#define ZX_VM_OFFSET_IS_UPPER_LIMIT ((zx_vm_option_t)(1u << 13))
#define ZX_VM_PERM_READ_IF_XOM_UNSUPPORTED ((zx_vm_option_t)(1u << 14))
#define ZX_VM_FAULT_BEYOND_STREAM_SIZE ((zx_vm_option_t)(1u << 15))
// Alignment of the mapping's address: log2 of the alignment in bits 24..28.
#define ZX_VM_ALIGN_BASE 24
#define ZX_VM_ALIGN_1KB ((zx_vm_option_t)(10u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_2KB ((zx_vm_option_t)(11u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_4KB ((zx_vm_option_t)(12u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_8KB ((zx_vm_option_t)(13u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_16KB ((zx_vm_option_t)(14u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_32KB ((zx_vm_option_t)(15u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_64KB ((zx_vm_option_t)(16u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_128KB ((zx_vm_option_t)(17u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_256KB ((zx_vm_option_t)(18u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_512KB ((zx_vm_option_t)(19u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_1MB ((zx_vm_option_t)(20u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_2MB ((zx_vm_option_t)(21u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_4MB ((zx_vm_option_t)(22u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_8MB ((zx_vm_option_t)(23u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_16MB ((zx_vm_option_t)(24u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_32MB ((zx_vm_option_t)(25u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_64MB ((zx_vm_option_t)(26u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_128MB ((zx_vm_option_t)(27u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_256MB ((zx_vm_option_t)(28u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_512MB ((zx_vm_option_t)(29u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_1GB ((zx_vm_option_t)(30u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_2GB ((zx_vm_option_t)(31u << ZX_VM_ALIGN_BASE))
#define ZX_VM_ALIGN_4GB ((zx_vm_option_t)(32u << ZX_VM_ALIGN_BASE))

typedef uintptr_t zx_vaddr_t;   // virtual address
typedef uintptr_t zx_paddr_t;   // physical address
typedef uintptr_t zx_gpaddr_t;  // guest physical address
typedef uint64_t zx_off_t;      // offset

// The longest name of a kernel object (process, thread...), NUL included.
#define ZX_MAX_NAME_LEN ((size_t)32u)

typedef uint32_t zx_obj_type_t;
#define ZX_OBJ_TYPE_NONE ((zx_obj_type_t)0u)
#define ZX_OBJ_TYPE_PROCESS ((zx_obj_type_t)1u)
#define ZX_OBJ_TYPE_THREAD ((zx_obj_type_t)2u)
#define ZX_OBJ_TYPE_VMO ((zx_obj_type_t)3u)
#define ZX_OBJ_TYPE_CHANNEL ((zx_obj_type_t)4u)  // the perfmon controller (perfmon.h)
#define ZX_OBJ_TYPE_EVENT ((zx_obj_type_t)5u)
#define ZX_OBJ_TYPE_PORT ((zx_obj_type_t)6u)
#define ZX_OBJ_TYPE_INTERRUPT ((zx_obj_type_t)9u)
#define ZX_OBJ_TYPE_PCI_DEVICE ((zx_obj_type_t)11u)
#define ZX_OBJ_TYPE_DEBUGLOG ((zx_obj_type_t)12u)
#define ZX_OBJ_TYPE_SOCKET ((zx_obj_type_t)14u)
#define ZX_OBJ_TYPE_RESOURCE ((zx_obj_type_t)15u)
#define ZX_OBJ_TYPE_EVENTPAIR ((zx_obj_type_t)16u)
#define ZX_OBJ_TYPE_JOB ((zx_obj_type_t)17u)
#define ZX_OBJ_TYPE_VMAR ((zx_obj_type_t)18u)
#define ZX_OBJ_TYPE_FIFO ((zx_obj_type_t)19u)
#define ZX_OBJ_TYPE_GUEST ((zx_obj_type_t)20u)
#define ZX_OBJ_TYPE_VCPU ((zx_obj_type_t)21u)
#define ZX_OBJ_TYPE_TIMER ((zx_obj_type_t)22u)
#define ZX_OBJ_TYPE_IOMMU ((zx_obj_type_t)23u)
#define ZX_OBJ_TYPE_BTI ((zx_obj_type_t)24u)
#define ZX_OBJ_TYPE_PROFILE ((zx_obj_type_t)25u)
#define ZX_OBJ_TYPE_PMT ((zx_obj_type_t)26u)
#define ZX_OBJ_TYPE_SUSPEND_TOKEN ((zx_obj_type_t)27u)
#define ZX_OBJ_TYPE_PAGER ((zx_obj_type_t)28u)
#define ZX_OBJ_TYPE_EXCEPTION ((zx_obj_type_t)29u)
#define ZX_OBJ_TYPE_CLOCK ((zx_obj_type_t)30u)
#define ZX_OBJ_TYPE_STREAM ((zx_obj_type_t)31u)
#define ZX_OBJ_TYPE_MSI ((zx_obj_type_t)32u)
#define ZX_OBJ_TYPE_IOB ((zx_obj_type_t)33u)
#define ZX_OBJ_TYPE_COUNTER ((zx_obj_type_t)34u)
#define ZX_OBJ_TYPE_IOB_SHARED_REGION ((zx_obj_type_t)35u)
#define ZX_OBJ_TYPE_LOG ZX_OBJ_TYPE_DEBUGLOG
#define ZX_OBJ_TYPE_UPPER_BOUND ((zx_obj_type_t)64u)

// --- <zircon/syscalls/iob.h> --------------------------------------------------------------------
#define ZX_IOB_MAX_REGIONS 64

typedef uint64_t zx_iob_discipline_type_t;
#define ZX_IOB_DISCIPLINE_TYPE_NONE ((zx_iob_discipline_type_t)(0u))

typedef struct zx_iob_discipline {
  zx_iob_discipline_type_t type;
  union {
    uint64_t reserved[8];
  };
} zx_iob_discipline_t;

typedef uint32_t zx_iob_region_type_t;
#define ZX_IOB_REGION_TYPE_PRIVATE ((zx_iob_region_type_t)(0u))

// Which endpoint may map or access a region through its discipline. The sampler's regions are
// the kernel's: EP0 (its own, writing) maps them read-write, EP1 (the program's handle)
// read-only: 0x13.
typedef uint32_t zx_iob_access_t;
#define ZX_IOB_ACCESS_EP0_CAN_MAP_READ ((zx_iob_access_t)(1u << 0))
#define ZX_IOB_ACCESS_EP0_CAN_MAP_WRITE ((zx_iob_access_t)(1u << 1))
#define ZX_IOB_ACCESS_EP0_CAN_MEDIATED_READ ((zx_iob_access_t)(1u << 2))
#define ZX_IOB_ACCESS_EP0_CAN_MEDIATED_WRITE ((zx_iob_access_t)(1u << 3))
#define ZX_IOB_ACCESS_EP1_CAN_MAP_READ ((zx_iob_access_t)(1u << 4))
#define ZX_IOB_ACCESS_EP1_CAN_MAP_WRITE ((zx_iob_access_t)(1u << 5))
#define ZX_IOB_ACCESS_EP1_CAN_MEDIATED_READ ((zx_iob_access_t)(1u << 6))
#define ZX_IOB_ACCESS_EP1_CAN_MEDIATED_WRITE ((zx_iob_access_t)(1u << 7))

typedef struct zx_iob_region_private {
  uint32_t options;
  uint32_t padding1;
  uint64_t padding2[3];
} zx_iob_region_private_t;

typedef struct zx_iob_region {
  zx_iob_region_type_t type;
  zx_iob_access_t access;
  uint64_t size;
  zx_iob_discipline_t discipline;
  union {
    zx_iob_region_private_t private_region;
    uint8_t max_extension[32];
  };
} zx_iob_region_t;

// Options of zx_iob_write() (which this library does not provide).
typedef uint64_t zx_iob_write_options_t;

// --- <zircon/syscalls/object.h>: the topics this library answers -------------------------------
// A versioned topic carries its version in the top 4 bits.
typedef uint32_t zx_object_info_topic_t;
#define ZX_INFO_HANDLE_BASIC ((zx_object_info_topic_t)2u)           // zx_info_handle_basic_t[1]
#define ZX_INFO_TASK_RUNTIME_V1 ((zx_object_info_topic_t)30u)       // zx_info_task_runtime_v1_t[1]
#define ZX_INFO_TASK_RUNTIME ((zx_object_info_topic_t)0x1000001eu)  // zx_info_task_runtime_t[1]
#define ZX_INFO_IOB ((zx_object_info_topic_t)34u)                   // zx_info_iob_t[1]
#define ZX_INFO_IOB_REGIONS ((zx_object_info_topic_t)35u)           // zx_iob_region_info_t[n]

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
  zx_duration_t cpu_time;              // running on a CPU
  zx_duration_t queue_time;            // ready to run, waiting for a CPU
  zx_duration_t page_fault_time;       // handling page faults
  zx_duration_t lock_contention_time;  // blocked on contended kernel locks
} zx_info_task_runtime_t;

// ZX_INFO_TASK_RUNTIME_V1: the layout before RFC-0084.
typedef struct zx_info_task_runtime_v1 {
  zx_duration_t cpu_time;
  zx_duration_t queue_time;
} zx_info_task_runtime_v1_t;

typedef struct zx_info_iob {
  uint64_t options;  // as given at creation (0 for the sampler's IOBuffer)
  uint32_t region_count;
  uint8_t padding1[4];
} zx_info_iob_t;

typedef struct zx_iob_region_info {
  zx_iob_region_t region;
  zx_koid_t koid;  // of the memory behind the region
} zx_iob_region_info_t;

#endif  // !__Fuchsia__

// --- Names Fuchsia's headers do not have, for hosts only --------------------------------------
// Built for Fuchsia none of these is defined: a program that uses them there would not build
// against the SDK either (tests/headers/test_fuchsia_defers.c checks it). (Spelled #ifndef: the
// stand-in <zircon/types.h> of scripts/check-fuchsia-compile.sh is the block above only.)
#ifndef __Fuchsia__

// The host's stand-in for a resource handle (the debug resource, sampler.h).
typedef zx_handle_t zx_resource_t;

// Earlier names of Fuchsia's IOBuffer constants (the generation of the sampler's syscall page),
// kept so code written against them compiles on hosts.
#define ZX_IOB_DISCIPLINE_NONE ZX_IOB_DISCIPLINE_TYPE_NONE
#define ZX_IOB_EP0_CAN_MAP_READ ZX_IOB_ACCESS_EP0_CAN_MAP_READ
#define ZX_IOB_EP0_CAN_MAP_WRITE ZX_IOB_ACCESS_EP0_CAN_MAP_WRITE
#define ZX_IOB_EP0_CAN_MEDIATED_READ ZX_IOB_ACCESS_EP0_CAN_MEDIATED_READ
#define ZX_IOB_EP0_CAN_MEDIATED_WRITE ZX_IOB_ACCESS_EP0_CAN_MEDIATED_WRITE
#define ZX_IOB_EP1_CAN_MAP_READ ZX_IOB_ACCESS_EP1_CAN_MAP_READ
#define ZX_IOB_EP1_CAN_MAP_WRITE ZX_IOB_ACCESS_EP1_CAN_MAP_WRITE
#define ZX_IOB_EP1_CAN_MEDIATED_READ ZX_IOB_ACCESS_EP1_CAN_MEDIATED_READ
#define ZX_IOB_EP1_CAN_MEDIATED_WRITE ZX_IOB_ACCESS_EP1_CAN_MEDIATED_WRITE

#endif  // host-only names

// --- The library's own names, on every platform --------------------------------------------------

// Every status of <zircon/errors.h>, in its order: the one list the status names are generated
// from (zxs_status_string(), zx_status_get_string(), the enum below). X(name, value): the value
// is Fuchsia's; the library's build checks that the macro of the same name (its own, or on
// Fuchsia the system's) equals it.
#define ZXS_STATUS_MAP(X)               \
  X(ZX_OK, 0)                           \
  X(ZX_ERR_INTERNAL, -1)                \
  X(ZX_ERR_NOT_SUPPORTED, -2)           \
  X(ZX_ERR_NO_RESOURCES, -3)            \
  X(ZX_ERR_NO_MEMORY, -4)               \
  X(ZX_ERR_INTERNAL_INTR_RETRY, -6)     \
  X(ZX_ERR_INVALID_ARGS, -10)           \
  X(ZX_ERR_BAD_HANDLE, -11)             \
  X(ZX_ERR_WRONG_TYPE, -12)             \
  X(ZX_ERR_BAD_SYSCALL, -13)            \
  X(ZX_ERR_OUT_OF_RANGE, -14)           \
  X(ZX_ERR_BUFFER_TOO_SMALL, -15)       \
  X(ZX_ERR_BAD_STATE, -20)              \
  X(ZX_ERR_TIMED_OUT, -21)              \
  X(ZX_ERR_SHOULD_WAIT, -22)            \
  X(ZX_ERR_CANCELED, -23)               \
  X(ZX_ERR_PEER_CLOSED, -24)            \
  X(ZX_ERR_NOT_FOUND, -25)              \
  X(ZX_ERR_ALREADY_EXISTS, -26)         \
  X(ZX_ERR_ALREADY_BOUND, -27)          \
  X(ZX_ERR_UNAVAILABLE, -28)            \
  X(ZX_ERR_ACCESS_DENIED, -30)          \
  X(ZX_ERR_IO, -40)                     \
  X(ZX_ERR_IO_REFUSED, -41)             \
  X(ZX_ERR_IO_DATA_INTEGRITY, -42)      \
  X(ZX_ERR_IO_DATA_LOSS, -43)           \
  X(ZX_ERR_IO_NOT_PRESENT, -44)         \
  X(ZX_ERR_IO_OVERRUN, -45)             \
  X(ZX_ERR_IO_MISSED_DEADLINE, -46)     \
  X(ZX_ERR_IO_INVALID, -47)             \
  X(ZX_ERR_BAD_PATH, -50)               \
  X(ZX_ERR_NOT_DIR, -51)                \
  X(ZX_ERR_NOT_FILE, -52)               \
  X(ZX_ERR_FILE_BIG, -53)               \
  X(ZX_ERR_NO_SPACE, -54)               \
  X(ZX_ERR_NOT_EMPTY, -55)              \
  X(ZX_ERR_STOP, -60)                   \
  X(ZX_ERR_NEXT, -61)                   \
  X(ZX_ERR_ASYNC, -62)                  \
  X(ZX_ERR_PROTOCOL_NOT_SUPPORTED, -70) \
  X(ZX_ERR_ADDRESS_UNREACHABLE, -71)    \
  X(ZX_ERR_ADDRESS_IN_USE, -72)         \
  X(ZX_ERR_NOT_CONNECTED, -73)          \
  X(ZX_ERR_CONNECTION_REFUSED, -74)     \
  X(ZX_ERR_CONNECTION_RESET, -75)       \
  X(ZX_ERR_CONNECTION_ABORTED, -76)     \
  X(ZX_ERR_INTERNAL_INTR_KILLED, -502)

// The statuses as an enum, generated from the list: ZXS_STATUS_<name> = <value>, and
// ZXS_STATUS_COUNT the number of them (for code that walks every status).
#define ZXS_STATUS_ENUM_(name, value) ZXS_STATUS_##name = (value),
#define ZXS_STATUS_ONE_(name, value) +1
enum zxs_status_code {
  ZXS_STATUS_MAP(ZXS_STATUS_ENUM_)  // every status
  ZXS_STATUS_COUNT = 0 ZXS_STATUS_MAP(ZXS_STATUS_ONE_)
};
#undef ZXS_STATUS_ONE_
#undef ZXS_STATUS_ENUM_

// The name of a status, e.g. "ZX_ERR_BAD_STATE"; "(unknown)" for other values.
// Thread-safe and async-signal-safe (returns a static string).
ZXS_API const char* zxs_status_string(zx_status_t status);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ZXSAMPLER_TYPES_H_
