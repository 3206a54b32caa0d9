// Every name the public headers share with Fuchsia has Fuchsia's value. The expected values are
// written here, as a table, from Fuchsia's public headers (zircon/system/public/zircon/):
// errors.h, limits.h, rights.h, time.h, types.h, syscalls/iob.h, syscalls/object.h. Also: the
// typedefs' widths and signedness, the info structs' layouts, the status names, the saturating
// time arithmetic, and zx_sampler_create as a real function with the kernel's four parameters
// while the documentation's five-argument call still compiles.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/zircon.h>

typedef struct {
  const char* name;
  int64_t ours;
  int64_t fuchsia;
} value_t;

#define V(name, fuchsia) \
  { #name, (int64_t)(name), (int64_t)(fuchsia) }

// <zircon/errors.h>
static const value_t k_statuses[] = {
    V(ZX_OK, 0),
    V(ZX_ERR_INTERNAL, -1),
    V(ZX_ERR_NOT_SUPPORTED, -2),
    V(ZX_ERR_NO_RESOURCES, -3),
    V(ZX_ERR_NO_MEMORY, -4),
    V(ZX_ERR_INTERNAL_INTR_RETRY, -6),
    V(ZX_ERR_INVALID_ARGS, -10),
    V(ZX_ERR_BAD_HANDLE, -11),
    V(ZX_ERR_WRONG_TYPE, -12),
    V(ZX_ERR_BAD_SYSCALL, -13),
    V(ZX_ERR_OUT_OF_RANGE, -14),
    V(ZX_ERR_BUFFER_TOO_SMALL, -15),
    V(ZX_ERR_BAD_STATE, -20),
    V(ZX_ERR_TIMED_OUT, -21),
    V(ZX_ERR_SHOULD_WAIT, -22),
    V(ZX_ERR_CANCELED, -23),
    V(ZX_ERR_PEER_CLOSED, -24),
    V(ZX_ERR_NOT_FOUND, -25),
    V(ZX_ERR_ALREADY_EXISTS, -26),
    V(ZX_ERR_ALREADY_BOUND, -27),
    V(ZX_ERR_UNAVAILABLE, -28),
    V(ZX_ERR_ACCESS_DENIED, -30),
    V(ZX_ERR_IO, -40),
    V(ZX_ERR_IO_REFUSED, -41),
    V(ZX_ERR_IO_DATA_INTEGRITY, -42),
    V(ZX_ERR_IO_DATA_LOSS, -43),
    V(ZX_ERR_IO_NOT_PRESENT, -44),
    V(ZX_ERR_IO_OVERRUN, -45),
    V(ZX_ERR_IO_MISSED_DEADLINE, -46),
    V(ZX_ERR_IO_INVALID, -47),
    V(ZX_ERR_BAD_PATH, -50),
    V(ZX_ERR_NOT_DIR, -51),
    V(ZX_ERR_NOT_FILE, -52),
    V(ZX_ERR_FILE_BIG, -53),
    V(ZX_ERR_NO_SPACE, -54),
    V(ZX_ERR_NOT_EMPTY, -55),
    V(ZX_ERR_STOP, -60),
    V(ZX_ERR_NEXT, -61),
    V(ZX_ERR_ASYNC, -62),
    V(ZX_ERR_PROTOCOL_NOT_SUPPORTED, -70),
    V(ZX_ERR_ADDRESS_UNREACHABLE, -71),
    V(ZX_ERR_ADDRESS_IN_USE, -72),
    V(ZX_ERR_NOT_CONNECTED, -73),
    V(ZX_ERR_CONNECTION_REFUSED, -74),
    V(ZX_ERR_CONNECTION_RESET, -75),
    V(ZX_ERR_CONNECTION_ABORTED, -76),
    V(ZX_ERR_INTERNAL_INTR_KILLED, -502),
};

static const value_t k_values[] = {
    // <zircon/limits.h>
    V(ZX_PAGE_SHIFT, 12),
    V(ZX_PAGE_SIZE, 4096),
    V(ZX_PAGE_MASK, 4095),
    V(ZX_MIN_PAGE_SIZE, 4096),
#if defined(__x86_64__) || defined(__i386__) || defined(__riscv)
    V(ZX_MAX_PAGE_SHIFT, 21),
#else
    V(ZX_MAX_PAGE_SHIFT, 16),
#endif
    // <zircon/rights.h>
    V(ZX_RIGHT_NONE, 0),
    V(ZX_RIGHT_DUPLICATE, 1u << 0),
    V(ZX_RIGHT_TRANSFER, 1u << 1),
    V(ZX_RIGHT_READ, 1u << 2),
    V(ZX_RIGHT_WRITE, 1u << 3),
    V(ZX_RIGHT_EXECUTE, 1u << 4),
    V(ZX_RIGHT_MAP, 1u << 5),
    V(ZX_RIGHT_GET_PROPERTY, 1u << 6),
    V(ZX_RIGHT_SET_PROPERTY, 1u << 7),
    V(ZX_RIGHT_ENUMERATE, 1u << 8),
    V(ZX_RIGHT_DESTROY, 1u << 9),
    V(ZX_RIGHT_SET_POLICY, 1u << 10),
    V(ZX_RIGHT_GET_POLICY, 1u << 11),
    V(ZX_RIGHT_SIGNAL, 1u << 12),
    V(ZX_RIGHT_SIGNAL_PEER, 1u << 13),
    V(ZX_RIGHT_WAIT, 1u << 14),
    V(ZX_RIGHT_INSPECT, 1u << 15),
    V(ZX_RIGHT_MANAGE_JOB, 1u << 16),
    V(ZX_RIGHT_MANAGE_PROCESS, 1u << 17),
    V(ZX_RIGHT_MANAGE_THREAD, 1u << 18),
    V(ZX_RIGHT_APPLY_PROFILE, 1u << 19),
    V(ZX_RIGHT_MANAGE_SOCKET, 1u << 20),
    V(ZX_RIGHT_OP_CHILDREN, 1u << 21),
    V(ZX_RIGHT_RESIZE, 1u << 22),
    V(ZX_RIGHT_ATTACH_VMO, 1u << 23),
    V(ZX_RIGHT_MANAGE_VMO, 1u << 24),
    V(ZX_RIGHT_SAME_RIGHTS, 1u << 31),
    V(ZX_RIGHTS_BASIC, 0xc003),
    V(ZX_RIGHTS_IO, 0xc),
    V(ZX_RIGHTS_PROPERTY, 0xc0),
    V(ZX_RIGHTS_POLICY, 0xc00),
    V(ZX_DEFAULT_CHANNEL_RIGHTS, 0xf00e),
    V(ZX_DEFAULT_EVENT_RIGHTS, 0xd003),
    V(ZX_DEFAULT_SYSTEM_EVENT_LOW_MEMORY_RIGHTS, 0x4003),
    V(ZX_DEFAULT_EVENTPAIR_RIGHTS, 0xf003),
    V(ZX_DEFAULT_FIFO_RIGHTS, 0xf00f),
    V(ZX_DEFAULT_GUEST_RIGHTS, 0x4800b),
    V(ZX_DEFAULT_INTERRUPT_RIGHTS, 0xd00f),
    V(ZX_DEFAULT_JOB_RIGHTS, 0x7dfcf),
    V(ZX_DEFAULT_LOG_RIGHTS, 0xd00b),
    V(ZX_DEFAULT_MSI_RIGHTS, 0xc003),
    V(ZX_DEFAULT_PCI_DEVICE_RIGHTS, 0xc00f),
    V(ZX_DEFAULT_PCI_INTERRUPT_RIGHTS, 0xd00f),
    V(ZX_DEFAULT_PORT_RIGHTS, 0x800f),
    V(ZX_DEFAULT_PROCESS_RIGHTS, 0x6d3cf),
    V(ZX_DEFAULT_RESOURCE_RIGHTS, 0x800b),
    V(ZX_DEFAULT_SOCKET_RIGHTS, 0x10f0cf),
    V(ZX_DEFAULT_STREAM_RIGHTS, 0xd0c3),
    V(ZX_DEFAULT_THREAD_RIGHTS, 0x4d2cf),
    V(ZX_DEFAULT_TIMER_RIGHTS, 0xd00b),
    V(ZX_DEFAULT_VCPU_RIGHTS, 0xd01f),
    V(ZX_DEFAULT_VMAR_RIGHTS, 0x208003),
    V(ZX_DEFAULT_VMO_RIGHTS, 0xd0ef),
    V(ZX_DEFAULT_IOMMU_RIGHTS, 0x8003),
    V(ZX_DEFAULT_BTI_RIGHTS, 0x80ef),
    V(ZX_DEFAULT_PROFILE_RIGHTS, 0x88003),
    V(ZX_DEFAULT_PMT_RIGHTS, 0x8000),
    V(ZX_DEFAULT_SUSPEND_TOKEN_RIGHTS, 0x8002),
    V(ZX_DEFAULT_PAGER_RIGHTS, 0x1808002),
    V(ZX_DEFAULT_EXCEPTION_RIGHTS, 0x80c2),
    V(ZX_DEFAULT_CLOCK_RIGHTS, 0xd00f),
    V(ZX_DEFAULT_IOB_RIGHTS, 0xf0ef),
    V(ZX_DEFAULT_COUNTER_RIGHTS, 0xd00f),
    // <zircon/time.h>
    V(ZX_TIME_INFINITE, INT64_MAX),
    V(ZX_TIME_INFINITE_PAST, INT64_MIN),
    V(ZX_NSEC(7), 7),
    V(ZX_USEC(7), 7000),
    V(ZX_MSEC(7), 7000000),
    V(ZX_SEC(7), 7000000000),
    V(ZX_MIN(7), 420000000000),
    V(ZX_HOUR(7), 25200000000000),
    // <zircon/types.h>
    V(ZX_HANDLE_INVALID, 0),
    V(ZX_HANDLE_FIXED_BITS_MASK, 3),
    V(ZX_CLOCK_MONOTONIC, 0),
    V(ZX_CLOCK_BOOT, 1),
    V(ZX_SIGNAL_NONE, 0),
    V(ZX_USER_SIGNAL_ALL, 0xff000000u),
    V(ZX_USER_SIGNAL_0, 1u << 24),
    V(ZX_USER_SIGNAL_7, 1u << 31),
    V(ZX_SIGNAL_HANDLE_CLOSED, 1u << 23),
    V(ZX_TASK_TERMINATED, 1u << 3),
    V(ZX_PROCESS_TERMINATED, 1u << 3),
    V(ZX_THREAD_TERMINATED, 1u << 3),
    V(ZX_THREAD_RUNNING, 1u << 4),
    V(ZX_THREAD_SUSPENDED, 1u << 5),
    V(ZX_VMO_ZERO_CHILDREN, 1u << 3),
    V(ZX_IOB_PEER_CLOSED, 1u << 2),
    V(ZX_KOID_INVALID, 0),
    V(ZX_KOID_KERNEL, 1),
    V(ZX_KOID_FIRST, 1024),
    V(ZX_VM_PERM_READ, 1u << 0),
    V(ZX_VM_PERM_WRITE, 1u << 1),
    V(ZX_VM_PERM_EXECUTE, 1u << 2),
    V(ZX_VM_COMPACT, 1u << 3),
    V(ZX_VM_SPECIFIC, 1u << 4),
    V(ZX_VM_SPECIFIC_OVERWRITE, 1u << 5),
    V(ZX_VM_CAN_MAP_SPECIFIC, 1u << 6),
    V(ZX_VM_CAN_MAP_READ, 1u << 7),
    V(ZX_VM_CAN_MAP_WRITE, 1u << 8),
    V(ZX_VM_CAN_MAP_EXECUTE, 1u << 9),
    V(ZX_VM_MAP_RANGE, 1u << 10),
    V(ZX_VM_REQUIRE_NON_RESIZABLE, 1u << 11),
    V(ZX_VM_ALLOW_FAULTS, 1u << 12),
    V(ZX_VM_OFFSET_IS_UPPER_LIMIT, 1u << 13),
    V(ZX_VM_PERM_READ_IF_XOM_UNSUPPORTED, 1u << 14),
    V(ZX_VM_FAULT_BEYOND_STREAM_SIZE, 1u << 15),
    V(ZX_VM_ALIGN_BASE, 24),
    V(ZX_VM_ALIGN_1KB, 10u << 24),
    V(ZX_VM_ALIGN_4KB, 12u << 24),
    V(ZX_VM_ALIGN_2MB, 21u << 24),
    V(ZX_VM_ALIGN_1GB, 30u << 24),
    V(ZX_VM_ALIGN_4GB, 32u << 24),
    V(ZX_MAX_NAME_LEN, 32),
    V(ZX_OBJ_TYPE_NONE, 0),
    V(ZX_OBJ_TYPE_PROCESS, 1),
    V(ZX_OBJ_TYPE_THREAD, 2),
    V(ZX_OBJ_TYPE_VMO, 3),
    V(ZX_OBJ_TYPE_CHANNEL, 4),
    V(ZX_OBJ_TYPE_EVENT, 5),
    V(ZX_OBJ_TYPE_PORT, 6),
    V(ZX_OBJ_TYPE_INTERRUPT, 9),
    V(ZX_OBJ_TYPE_PCI_DEVICE, 11),
    V(ZX_OBJ_TYPE_DEBUGLOG, 12),
    V(ZX_OBJ_TYPE_LOG, 12),
    V(ZX_OBJ_TYPE_SOCKET, 14),
    V(ZX_OBJ_TYPE_RESOURCE, 15),
    V(ZX_OBJ_TYPE_EVENTPAIR, 16),
    V(ZX_OBJ_TYPE_JOB, 17),
    V(ZX_OBJ_TYPE_VMAR, 18),
    V(ZX_OBJ_TYPE_FIFO, 19),
    V(ZX_OBJ_TYPE_GUEST, 20),
    V(ZX_OBJ_TYPE_VCPU, 21),
    V(ZX_OBJ_TYPE_TIMER, 22),
    V(ZX_OBJ_TYPE_IOMMU, 23),
    V(ZX_OBJ_TYPE_BTI, 24),
    V(ZX_OBJ_TYPE_PROFILE, 25),
    V(ZX_OBJ_TYPE_PMT, 26),
    V(ZX_OBJ_TYPE_SUSPEND_TOKEN, 27),
    V(ZX_OBJ_TYPE_PAGER, 28),
    V(ZX_OBJ_TYPE_EXCEPTION, 29),
    V(ZX_OBJ_TYPE_CLOCK, 30),
    V(ZX_OBJ_TYPE_STREAM, 31),
    V(ZX_OBJ_TYPE_MSI, 32),
    V(ZX_OBJ_TYPE_IOB, 33),
    V(ZX_OBJ_TYPE_COUNTER, 34),
    V(ZX_OBJ_TYPE_IOB_SHARED_REGION, 35),
    V(ZX_OBJ_TYPE_UPPER_BOUND, 64),
    // <zircon/syscalls/iob.h>
    V(ZX_IOB_MAX_REGIONS, 64),
    V(ZX_IOB_DISCIPLINE_TYPE_NONE, 0),
    V(ZX_IOB_REGION_TYPE_PRIVATE, 0),
    V(ZX_IOB_ACCESS_EP0_CAN_MAP_READ, 1u << 0),
    V(ZX_IOB_ACCESS_EP0_CAN_MAP_WRITE, 1u << 1),
    V(ZX_IOB_ACCESS_EP0_CAN_MEDIATED_READ, 1u << 2),
    V(ZX_IOB_ACCESS_EP0_CAN_MEDIATED_WRITE, 1u << 3),
    V(ZX_IOB_ACCESS_EP1_CAN_MAP_READ, 1u << 4),
    V(ZX_IOB_ACCESS_EP1_CAN_MAP_WRITE, 1u << 5),
    V(ZX_IOB_ACCESS_EP1_CAN_MEDIATED_READ, 1u << 6),
    V(ZX_IOB_ACCESS_EP1_CAN_MEDIATED_WRITE, 1u << 7),
    // (the earlier names of the same bits)
    V(ZX_IOB_EP0_CAN_MAP_READ, 1u << 0),
    V(ZX_IOB_EP1_CAN_MEDIATED_WRITE, 1u << 7),
    V(ZX_IOB_DISCIPLINE_NONE, 0),
    // <zircon/syscalls/object.h>: the topics the library answers
    V(ZX_INFO_HANDLE_BASIC, 2),
    V(ZX_INFO_TASK_RUNTIME_V1, 30),
    V(ZX_INFO_TASK_RUNTIME, 30u | (1u << 28)),
    V(ZX_INFO_IOB, 34),
    V(ZX_INFO_IOB_REGIONS, 35),
};

static void values_are_fuchsias(void** state) {
  (void)state;
  for (size_t i = 0; i < sizeof(k_values) / sizeof(k_values[0]); i++) {
    if (k_values[i].ours != k_values[i].fuchsia) {
      fail_msg("%s is %lld, Fuchsia's is %lld", k_values[i].name, (long long)k_values[i].ours,
               (long long)k_values[i].fuchsia);
    }
  }
}

// Each status: Fuchsia's value, its name from both string functions, and the generated list
// (ZXS_STATUS_MAP) has exactly Fuchsia's statuses.
static void statuses_are_fuchsias(void** state) {
  (void)state;
  const size_t count = sizeof(k_statuses) / sizeof(k_statuses[0]);
  assert_int_equal(ZXS_STATUS_COUNT, count);
  for (size_t i = 0; i < count; i++) {
    if (k_statuses[i].ours != k_statuses[i].fuchsia) {
      fail_msg("%s is %lld, Fuchsia's is %lld", k_statuses[i].name, (long long)k_statuses[i].ours,
               (long long)k_statuses[i].fuchsia);
    }
    zx_status_t status = (zx_status_t)k_statuses[i].fuchsia;
    assert_string_equal(zx_status_get_string(status), k_statuses[i].name);
    assert_string_equal(zxs_status_string(status), k_statuses[i].name);
  }
#define ZXS_CHECK_LISTED_(name, value) assert_int_equal(ZXS_STATUS_##name, name);
  ZXS_STATUS_MAP(ZXS_CHECK_LISTED_)
#undef ZXS_CHECK_LISTED_
  assert_string_equal(zx_status_get_string(-5), "(UNKNOWN)");
  assert_string_equal(zx_status_get_string(1), "(UNKNOWN)");
  assert_string_equal(zxs_status_string(-5), "(unknown)");
  // Usable in #if, as Fuchsia's plain int constants are.
#if ZX_ERR_NOT_DIR != -51 || ZX_OK != 0
  fail_msg("statuses not usable in #if");
#endif
}

// Width and signedness of each typedef, as Fuchsia's.
#define SIGNED(type) (!((type)-1 > (type)0))
#define TYPE_IS(type, size, is_signed)                   \
  do {                                                   \
    assert_int_equal(sizeof(type), (size));              \
    assert_int_equal(SIGNED(type) ? 1 : 0, (is_signed)); \
  } while (0)
static void typedefs_are_fuchsias(void** state) {
  (void)state;
  TYPE_IS(zx_status_t, 4, 1);
  TYPE_IS(zx_handle_t, 4, 0);
  TYPE_IS(zx_rights_t, 4, 0);
  TYPE_IS(zx_obj_type_t, 4, 0);
  TYPE_IS(zx_signals_t, 4, 0);
  TYPE_IS(zx_clock_t, 4, 0);
  TYPE_IS(zx_vm_option_t, 4, 0);
  TYPE_IS(zx_object_info_topic_t, 4, 0);
  TYPE_IS(zx_koid_t, 8, 0);
  TYPE_IS(zx_off_t, 8, 0);
  TYPE_IS(zx_vaddr_t, sizeof(uintptr_t), 0);
  TYPE_IS(zx_paddr_t, sizeof(uintptr_t), 0);
  TYPE_IS(zx_gpaddr_t, sizeof(uintptr_t), 0);
  TYPE_IS(zx_time_t, 8, 1);
  TYPE_IS(zx_duration_t, 8, 1);
  TYPE_IS(zx_ticks_t, 8, 1);
  TYPE_IS(zx_instant_mono_t, 8, 1);
  TYPE_IS(zx_instant_mono_ticks_t, 8, 1);
  TYPE_IS(zx_duration_mono_t, 8, 1);
  TYPE_IS(zx_duration_mono_ticks_t, 8, 1);
  TYPE_IS(zx_instant_boot_t, 8, 1);
  TYPE_IS(zx_instant_boot_ticks_t, 8, 1);
  TYPE_IS(zx_duration_boot_t, 8, 1);
  TYPE_IS(zx_duration_boot_ticks_t, 8, 1);
  TYPE_IS(zx_iob_access_t, 4, 0);
  TYPE_IS(zx_iob_region_type_t, 4, 0);
  TYPE_IS(zx_iob_discipline_type_t, 8, 0);
  TYPE_IS(zx_iob_write_options_t, 8, 0);
}

// Sizes and offsets of the info structs of the topics the library answers (x86-64 and arm64).
static void info_layouts_are_fuchsias(void** state) {
  (void)state;
  assert_int_equal(sizeof(zx_info_handle_basic_t), 32);
  assert_int_equal(offsetof(zx_info_handle_basic_t, koid), 0);
  assert_int_equal(offsetof(zx_info_handle_basic_t, rights), 8);
  assert_int_equal(offsetof(zx_info_handle_basic_t, type), 12);
  assert_int_equal(offsetof(zx_info_handle_basic_t, related_koid), 16);
  assert_int_equal(offsetof(zx_info_handle_basic_t, reserved), 24);
  assert_int_equal(offsetof(zx_info_handle_basic_t, padding1), 28);
  assert_int_equal(sizeof(zx_iob_discipline_t), 72);
  assert_int_equal(offsetof(zx_iob_discipline_t, reserved), 8);
  assert_int_equal(sizeof(zx_iob_region_private_t), 32);
  assert_int_equal(sizeof(zx_iob_region_t), 120);
  assert_int_equal(offsetof(zx_iob_region_t, access), 4);
  assert_int_equal(offsetof(zx_iob_region_t, size), 8);
  assert_int_equal(offsetof(zx_iob_region_t, discipline), 16);
  assert_int_equal(offsetof(zx_iob_region_t, private_region), 88);
  assert_int_equal(offsetof(zx_iob_region_t, max_extension), 88);
  assert_int_equal(sizeof(zx_info_iob_t), 16);
  assert_int_equal(offsetof(zx_info_iob_t, region_count), 8);
  assert_int_equal(sizeof(zx_iob_region_info_t), 128);
  assert_int_equal(offsetof(zx_iob_region_info_t, koid), 120);
  assert_int_equal(sizeof(zx_info_task_runtime_t), 32);
  assert_int_equal(offsetof(zx_info_task_runtime_t, lock_contention_time), 24);
  assert_int_equal(sizeof(zx_info_task_runtime_v1_t), 16);
}

// <zircon/time.h>'s arithmetic saturates at ZX_TIME_INFINITE / ZX_TIME_INFINITE_PAST.
static void time_arithmetic_saturates(void** state) {
  (void)state;
  volatile int64_t big = INT64_MAX / 2;
  assert_true(zx_time_add_duration(ZX_TIME_INFINITE, 1) == ZX_TIME_INFINITE);
  assert_true(zx_time_sub_duration(ZX_TIME_INFINITE_PAST, 1) == ZX_TIME_INFINITE_PAST);
  assert_true(zx_time_sub_time(ZX_TIME_INFINITE_PAST, 1) == ZX_TIME_INFINITE_PAST);
  assert_true(zx_time_sub_time(ZX_TIME_INFINITE, -1) == ZX_TIME_INFINITE);
  assert_true(zx_duration_add_duration(big, big + 2) == ZX_TIME_INFINITE);
  assert_true(zx_duration_sub_duration(-big, big + 3) == ZX_TIME_INFINITE_PAST);
  assert_true(zx_duration_mul_int64(big, 3) == ZX_TIME_INFINITE);
  assert_true(zx_duration_mul_int64(big, -3) == ZX_TIME_INFINITE_PAST);
  assert_true(zx_duration_mul_int64(-big, -3) == ZX_TIME_INFINITE);
  assert_true(zx_ticks_add_ticks(big, big) == INT64_MAX - 1);
  assert_true(zx_ticks_sub_ticks(-big, big + 3) == ZX_TIME_INFINITE_PAST);
  assert_true(zx_ticks_mul_int64(big, 2) == INT64_MAX - 1);
  assert_true(zx_duration_from_sec(big) == ZX_TIME_INFINITE);
  assert_true(zx_duration_from_hour(-big) == ZX_TIME_INFINITE_PAST);
  assert_true(ZX_SEC(big) == ZX_TIME_INFINITE);  // not constant: the saturating function
  assert_true(ZX_MSEC(-big) == ZX_TIME_INFINITE_PAST);
  volatile int64_t three = 3;
  assert_true(ZX_USEC(three) == 3000);
  assert_true(zx_nsec_from_duration(ZX_NSEC(5)) == 5);
  struct timespec ts = {12, 345};
  assert_true(zx_duration_from_timespec(ts) == 12000000345);
  assert_true(zx_time_from_timespec(ts) == 12000000345);
  ts = zx_timespec_from_duration(ZX_SEC(3) + 7);
  assert_true(ts.tv_sec == 3 && ts.tv_nsec == 7);
  ts = zx_timespec_from_time(ZX_MSEC(1500));
  assert_true(ts.tv_sec == 1 && ts.tv_nsec == 500000000);
}

// A duration macro with a constant argument is a constant expression (a static initializer).
static const zx_duration_t k_period = ZX_MSEC(2);

typedef zx_status_t (*kernel_sampler_create_t)(zx_handle_t rsrc, uint64_t options,
                                               const zx_sampler_config_t* config,
                                               zx_handle_t* per_cpu_buffers);
_Static_assert(_Generic(&zx_sampler_create, kernel_sampler_create_t : 1, default : 0),
               "zx_sampler_create has the kernel's four parameters");

// zx_sampler_create is a function with the kernel's type, callable through a pointer; the
// documentation's five-argument call and the four-argument call compile and work too.
static void sampler_create_forms(void** state) {
  (void)state;
  kernel_sampler_create_t create = &zx_sampler_create;
  assert_non_null(create);
  assert_ptr_equal(create, zx_sampler_create);

  zx_handle_t rsrc;
  assert_int_equal(zxs_debug_resource_get(&rsrc), ZX_OK);
  zx_sampler_config_t config;
  memset(&config, 0, sizeof(config));
  config.period = k_period;
  config.buffer_size = ZX_PAGE_SIZE;
  config.iobuffer_discipline = ZX_IOB_DISCIPLINE_TYPE_NONE;
  const zx_status_t want = zxs_sampler_compiled_in() ? ZX_OK : ZX_ERR_NOT_SUPPORTED;

  zx_handle_t iob = 1;
  assert_int_equal(create(rsrc, 0, &config, &iob), want);  // through the pointer
  assert_int_equal(zx_handle_close(iob), ZX_OK);
  assert_int_equal(zx_sampler_create(rsrc, 0, &config, &iob), want);  // the kernel's form
  assert_int_equal(zx_handle_close(iob), ZX_OK);
  assert_int_equal(zx_sampler_create(rsrc, 0, &config, sizeof(config), &iob), want);  // docs'
  assert_int_equal(zx_handle_close(iob), ZX_OK);
  assert_int_equal((zx_sampler_create)(rsrc, 0, &config, &iob), want);  // the function itself
  assert_int_equal(zx_handle_close(iob), ZX_OK);
  if (want == ZX_OK) {
    assert_int_equal(zx_sampler_create(rsrc, 0, &config, sizeof(config) - 1, &iob),
                     ZX_ERR_INVALID_ARGS);
    assert_int_equal(iob, ZX_HANDLE_INVALID);
    assert_int_equal(create(rsrc, 1, &config, &iob), ZX_ERR_INVALID_ARGS);
    assert_int_equal(create(rsrc, 0, NULL, &iob), ZX_ERR_INVALID_ARGS);
  }
  assert_int_equal(zx_handle_close(rsrc), ZX_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(values_are_fuchsias),       cmocka_unit_test(statuses_are_fuchsias),
      cmocka_unit_test(typedefs_are_fuchsias),     cmocka_unit_test(info_layouts_are_fuchsias),
      cmocka_unit_test(time_arithmetic_saturates), cmocka_unit_test(sampler_create_forms),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
