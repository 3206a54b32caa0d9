// Handles and the objects behind them: close, duplicate, get_info, map an IOBuffer region, and
// handles for the process and its threads.
//
// Handles work as on Fuchsia: a 32-bit value naming an object and a set of rights, checked in
// Fuchsia's order (invalid handle -> ZX_ERR_BAD_HANDLE, wrong object type -> ZX_ERR_WRONG_TYPE,
// missing rights -> ZX_ERR_ACCESS_DENIED). All calls are thread-safe; none is
// async-signal-safe.
//
// Built for Fuchsia (the thin backend), each call is the kernel's zx_* call of the same name and
// answers the kernel's statuses, whatever this header says of a host; zxs_thread_get()
// duplicates the C library's handle of the thread, and zxs_task_runtime_fields() answers every
// field (the kernel measures them all).
#ifndef ZXSAMPLER_OBJECT_H_
#define ZXSAMPLER_OBJECT_H_

#include <pthread.h>
#include <zxsampler/types.h>

#ifdef __cplusplus
extern "C" {
#endif

// Closes a handle. Closing ZX_HANDLE_INVALID is ZX_OK. Closing the last handle of the sampler's
// IOBuffer stops the session (if running) and destroys it; mappings made with
// zxs_vmar_map_iob() stay valid. ZX_ERR_BAD_HANDLE: not a live handle.
ZXS_API zx_status_t zxs_handle_close(zx_handle_t handle);

// Duplicates a handle with `rights` (a subset of the handle's rights, or ZX_RIGHT_SAME_RIGHTS).
//   ZX_ERR_BAD_HANDLE not a live handle; ZX_ERR_ACCESS_DENIED the handle lacks
//   ZX_RIGHT_DUPLICATE; ZX_ERR_INVALID_ARGS rights not a subset or out NULL;
//   ZX_ERR_NO_RESOURCES handle table full.
ZXS_API zx_status_t zxs_handle_duplicate(zx_handle_t handle, zx_rights_t rights, zx_handle_t* out);

// Object information. Topics:
//   ZX_INFO_HANDLE_BASIC  any handle; one zx_info_handle_basic_t.
//   ZX_INFO_IOB           an IOBuffer with ZX_RIGHT_INSPECT; one zx_info_iob_t.
//   ZX_INFO_IOB_REGIONS   an IOBuffer with ZX_RIGHT_INSPECT; an array of zx_iob_region_info_t,
//                         as many as fit; *actual = written, *avail = region count.
//   ZX_INFO_TASK_RUNTIME  a thread or the process with ZX_RIGHT_INSPECT; one
//                         zx_info_task_runtime_t (see "Task runtime" below). As on Fuchsia the
//                         right is checked before the type: ZX_ERR_ACCESS_DENIED without it, then
//                         ZX_ERR_WRONG_TYPE for other objects; ZX_ERR_BAD_STATE for a thread that
//                         exited before its runtime was first queried.
//   ZX_INFO_TASK_RUNTIME_V1  the same, as one zx_info_task_runtime_v1_t (cpu and queue time).
// `actual` and `avail` may be NULL. The topic is checked first (as on Fuchsia), then the handle.
// Statuses: ZX_ERR_NOT_SUPPORTED unknown topic; handle errors;
// ZX_ERR_BUFFER_TOO_SMALL buffer too small for a single-record topic; ZX_ERR_INVALID_ARGS
// buffer NULL with a non-zero size.
ZXS_API zx_status_t zxs_object_get_info(zx_handle_t handle, zx_object_info_topic_t topic,
                                        void* buffer, size_t buffer_size, size_t* actual,
                                        size_t* avail);

// The root VMAR of the process (a constant handle that is never closed).
ZXS_API zx_handle_t zxs_vmar_root_self(void);

// Maps `region_len` bytes of region `region_index` of an IOBuffer, from `region_offset`,
// read-only. `options` must have ZX_VM_PERM_READ and may add what the kernel accepts and a host
// mapping honours alike: ZX_VM_MAP_RANGE, ZX_VM_ALLOW_FAULTS, ZX_VM_REQUIRE_NON_RESIZABLE,
// ZX_VM_PERM_READ_IF_XOM_UNSUPPORTED, and a ZX_VM_ALIGN_* up to the page size. The mapping
// stays valid after the handle is closed and after a new session is created, until
// zxs_vmar_unmap().
//   vmar: handle errors (a VMAR); iob: handle errors (needs ZX_RIGHT_MAP and ZX_RIGHT_READ).
//   ZX_ERR_ACCESS_DENIED  write or execute permission asked for (the program's endpoint may
//                         only read the regions).
//   ZX_ERR_INVALID_ARGS   region_len 0, offset or length not page-aligned, no read permission,
//                         mapped_addr NULL, an option not taken here (an unknown bit, an
//                         alignment field other than 0 or 10..32, ZX_VM_COMPACT, the
//                         ZX_VM_CAN_MAP_* of VMARs), vmar_offset != 0 without ZX_VM_SPECIFIC,
//                         ZX_VM_SPECIFIC_OVERWRITE or ZX_VM_OFFSET_IS_UPPER_LIMIT, or not
//                         page-aligned.
//   ZX_ERR_NOT_SUPPORTED  options the kernel accepts that place the mapping (ZX_VM_SPECIFIC,
//                         ZX_VM_SPECIFIC_OVERWRITE, ZX_VM_OFFSET_IS_UPPER_LIMIT) or align it
//                         beyond the page size: the host chooses where a mapping goes.
//   ZX_ERR_OUT_OF_RANGE   no such region, or offset + length past its end.
ZXS_API zx_status_t zxs_vmar_map_iob(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                                     zx_handle_t iob, uint32_t region_index, uint64_t region_offset,
                                     size_t region_len, zx_vaddr_t* mapped_addr);

// Maps `len` bytes of a VMO (a perfmon buffer, perfmon.h) from `vmo_offset`, read-only, by
// the rules of zxs_vmar_map_iob(): the same options, alignment and lifetime; vmo: handle errors
// (a VMO; needs ZX_RIGHT_MAP and ZX_RIGHT_READ); ZX_ERR_OUT_OF_RANGE offset + length past the
// VMO's size.
ZXS_API zx_status_t zxs_vmar_map(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                                 zx_handle_t vmo, uint64_t vmo_offset, size_t len,
                                 zx_vaddr_t* mapped_addr);

// The size of a VMO in bytes (a multiple of the page size). Handle errors (a VMO, no right
// needed); ZX_ERR_INVALID_ARGS size is NULL.
ZXS_API zx_status_t zxs_vmo_get_size(zx_handle_t vmo, uint64_t* size);

// Unmaps what zxs_vmar_map_iob() or zxs_vmar_map() mapped. Like Fuchsia's zx_vmar_unmap() on the
// root VMAR, it unmaps whatever the range holds: pass only ranges you mapped. ZX_ERR_INVALID_ARGS:
// address or length not page-aligned or length 0. ZX_ERR_BAD_HANDLE / ZX_ERR_WRONG_TYPE: vmar.
// ZX_ERR_NOT_FOUND: the backend knows of no mapping there (the fake backend checks).
ZXS_API zx_status_t zxs_vmar_unmap(zx_handle_t vmar, zx_vaddr_t addr, size_t len);

// The calling process (a constant handle that is never closed). Its koid is the pid on Linux.
ZXS_API zx_handle_t zxs_process_self(void);

// The calling thread: a constant handle per thread that is never closed and dies with the
// thread (like Fuchsia's zx_thread_self()). Rights include READ and DUPLICATE; its koid is the
// tid on Linux. Returns ZX_HANDLE_INVALID only when the handle table is full.
ZXS_API zx_handle_t zxs_thread_self(void);

// A new handle to another thread of this process (close it when done). The thread's stack
// bounds are recorded now, which sampling needs.
//   ZX_ERR_INVALID_ARGS out NULL; ZX_ERR_BAD_STATE the thread has exited;
//   ZX_ERR_NOT_SUPPORTED the backend cannot name other threads; ZX_ERR_NO_RESOURCES table full.
ZXS_API zx_status_t zxs_thread_get(pthread_t thread, zx_handle_t* out);

// --- Task runtime (RFC-0084) ------------------------------------------------------------------
//
// zx_object_get_info(task, ZX_INFO_TASK_RUNTIME, ...) on a thread handle (zx_thread_self(),
// zxs_thread_get()) reports that thread; on zx_process_self() the sum over the process's threads,
// those that exited included. On Linux each field is the kernel's own accounting or is timed
// from the kernel's own events:
//   cpu_time              the thread's CPU-time clock (for the process: CLOCK_PROCESS_CPUTIME_ID,
//                         exact for exited threads too). Always available.
//   queue_time            the scheduler's run delay (/proc/self/task/TID/schedstat): runnable,
//                         waiting for a CPU. Needs /proc and CONFIG_SCHED_INFO.
//   page_fault_time       inside the kernel's fault handler: from the PERF_COUNT_SW_PAGE_FAULTS
//                         event at its start to PAGE_FAULTS_MIN/MAJ at its end, per fault, from
//                         per-thread perf software events (no privilege needed at
//                         perf_event_paranoid <= 2; user-mode faults only when the caller may not
//                         see kernel events). What a hypervisor does for the guest's fault (on a
//                         VM most of a first-touch fault's wall time) is outside the handler and
//                         not counted; a fault that fails (SIGSEGV) is not counted.
//   lock_contention_time  blocked on contended sleeping kernel locks (mutexes, rw-semaphores, the
//                         address-space lock...): from the kernel's lock:contention_begin to
//                         lock:contention_end tracepoints per thread. Spin locks are left out, as
//                         in the RFC. Needs tracefs mounted (/sys/kernel/tracing) and the right to
//                         open kernel tracepoint events (root or CAP_PERFMON, or
//                         perf_event_paranoid <= 1).
// A field the host cannot measure for the caller reads 0 and is missing from
// zxs_task_runtime_fields(): check it before reading a 0 as "no time". cpu_time and queue_time
// are the kernel's since the thread was created. page_fault_time and lock_contention_time count
// from the first runtime query on the thread (get_info or zxs_task_runtime_fields() on its
// handle), so threads that want them from the start query once early; nothing is measured (and
// nothing costs) before. A query on the process handle begins measuring every live thread.
// Threads that exited: Linux keeps no schedstat of a thread once it is gone. Where the caller may
// use the kernel's taskstats (CAP_NET_ADMIN, in the initial user and pid namespaces), the library
// registers for the exit records of this process's threads at its first runtime query (on its
// drainer thread; other processes' records are filtered out in the kernel): a measured thread's
// cpu_time and queue_time are then its totals up to its exit (the record's cpu_run_virtual_total
// and cpu_delay_total: the same scheduler counters as the thread CPU clock and schedstat's run
// delay, read by the kernel in the thread's exit path; they do not depend on
// kernel.task_delayacct on this kernel), and the process's queue_time is the kernel's sum over
// its threads (TASKSTATS_CMD_ATTR_TGID), those that exited before any query included. The
// ZXS_TASK_RUNTIME_TOTALS_AT_EXIT bit of zxs_task_runtime_fields() says so. Without it (taskstats
// refused: not root, a container; or the record lost, the socket overflowing), an exited
// thread's cpu_time is its total when it had page-fault or lock events open (their running
// time), else its value when the library last read it, and its queue_time its value when last
// read: the queue time between that read and the exit is missing, and in the process's sum
// threads that exited before any query add none. Threads that queried through their own
// zx_thread_self() handle are read on themselves as they exit and have the bit either way.
// Each thread measured for page faults and locks holds 6 file descriptors and a 36 KiB perf ring
// (locked memory, shared with the sampler's perf-ring source): at most RLIMIT_NOFILE/32 threads
// are (ZXSAMPLER_RUNTIME_MAX_THREADS=N changes it); the others get cpu and queue time only, and
// their fields say so.

// Bits of zxs_task_runtime_fields(): which fields of zx_info_task_runtime_t are measured.
#define ZXS_TASK_RUNTIME_CPU_TIME (1u << 0)
#define ZXS_TASK_RUNTIME_QUEUE_TIME (1u << 1)
#define ZXS_TASK_RUNTIME_PAGE_FAULT_TIME (1u << 2)
#define ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME (1u << 3)
// Not a field: cpu_time and queue_time of threads that exited are their totals up to the exit
// (a thread: it has exited and they are, or it is live and will be; the process: its sum counts
// every exited thread to its exit). Without it they stop at the library's last read (above).
#define ZXS_TASK_RUNTIME_TOTALS_AT_EXIT (1u << 4)

// Which fields of ZX_INFO_TASK_RUNTIME the host measures for `task` (a thread or the process;
// for the process, the fields measured for every thread measured now), as ZXS_TASK_RUNTIME_*
// bits. Measuring page faults and lock contention begins here if it had not.
//   ZX_ERR_INVALID_ARGS fields NULL; handle errors (a thread or process with ZX_RIGHT_INSPECT).
// Thread-safe; not async-signal-safe (it takes locks and may open perf events).
ZXS_API zx_status_t zxs_task_runtime_fields(zx_handle_t task, uint32_t* fields);

// The runtime of one thread of this process named by its koid (the tid on Linux), without a
// handle: for tools that know threads by id (a profile's thread records). Works for a thread
// that has exited if the library measured it; *fields (may be NULL) as zxs_task_runtime_fields().
// Does not begin measuring a thread it does not measure yet (use a handle for that).
//   ZX_ERR_INVALID_ARGS out NULL; ZX_ERR_NOT_FOUND no live thread and no measured exited thread
//   has this koid; ZX_ERR_NOT_SUPPORTED the backend has no task runtime.
// Thread-safe; not async-signal-safe.
ZXS_API zx_status_t zxs_task_runtime_of_koid(zx_koid_t koid, zx_info_task_runtime_t* out,
                                             uint32_t* fields);

// The page size regions are rounded to.
ZXS_API uint32_t zxs_system_get_page_size(void);

// The number of CPUs online (at least 1): as many as a sampler session has regions and a
// perfmon run has buffers.
ZXS_API uint32_t zxs_system_get_num_cpus(void);

// The monotonic tick counter samples are stamped with, and its rate (non-zero).
// Both are async-signal-safe.
ZXS_API zx_ticks_t zxs_ticks_get(void);
ZXS_API zx_ticks_t zxs_ticks_per_second(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ZXSAMPLER_OBJECT_H_
