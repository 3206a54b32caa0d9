// The CPU performance-monitor controller: Fuchsia's fuchsia.perfmon.cpu/Controller as C calls.
//
// On Fuchsia the controller is a FIDL service of the cpu-trace driver; a client holds a channel
// to it. Here zxs_perfmon_open() returns a handle of type ZX_OBJ_TYPE_CHANNEL (what that client
// end is) and each FIDL method is one call on it: GetProperties -> zxs_perfmon_get_properties(),
// Initialize -> zxs_perfmon_initialize(), and so on. FIDL's error results are the zx_status_t
// returned; a nullable reply that would be null (GetAllocation, GetConfig, GetBufferHandle) is
// ZX_ERR_BAD_STATE. The structs below have the FIDL structs' fields, in their order.
//
// A run, in the order the FIDL documentation requires:
//
//   zxs_perfmon_open(debug_resource, &ctl);
//   zxs_perfmon_initialize(ctl, &allocation);     // one buffer per CPU: num_buffers = #CPUs
//   zxs_perfmon_stage_config(ctl, &config);       // up to 32 events; only while stopped
//   zxs_perfmon_start(ctl);                       // after initialize + stage_config
//   ...
//   zxs_perfmon_stop(ctl);                        // idempotent; the buffers are complete after it
//   zxs_perfmon_get_buffer_handle(ctl, cpu_index, &vmo);
//   zxs_vmar_map(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, vmo, 0, size, &addr);
//   zxs_perfmon_reader_init(&reader, (const void*)addr, size); ...
//   zxs_perfmon_terminate(ctl);                   // idempotent; also done when ctl is closed
//   zxs_handle_close(ctl);
//
// Events are 16-bit ids in Fuchsia's encoding (a unit in the top 5 bits, an event number in the
// low 11). Which events exist, and what they count on each backend:
//   misc unit   software events, any host: cpu_clock, task_clock, page_faults, context_switches,
//               cpu_migrations, minor_faults, major_faults (event number 0x400 + Linux's
//               PERF_COUNT_SW_* number). Counting events (they may have a rate).
//   arch unit   the architectural hardware events of Fuchsia's Intel table: unhalted_core_cycles
//               (0), instructions_retired (1), unhalted_reference_cycles (2), llc_references (3),
//               llc_misses (4), branch_instructions_retired (5), branch_misses_retired (6).
//   fixed unit  instructions_retired (1), unhalted_core_cycles (2), unhalted_reference_cycles
//               (3): the same counts on the fixed counters.
// Hardware events need a PMU; where the host has none (most VMs), staging one answers
// ZX_ERR_NOT_SUPPORTED. zxs_perfmon_event_id() turns names into ids.
//
// Linux: every configured event is one perf event per CPU (pid -1, cpu N), so the counts are
// CPU-wide, all processes included; that needs root (CAP_PERFMON or CAP_SYS_ADMIN) or
// kernel.perf_event_paranoid <= 0, else zxs_perfmon_open() answers ZX_ERR_ACCESS_DENIED.
// Fuchsia: the calls answer ZX_ERR_NOT_SUPPORTED until the backend is wired to the FIDL service
// (see the README).
//
// Thread-safety: every call is thread-safe (one controller per process, one lock). None is
// async-signal-safe, except zxs_perfmon_event_id(), zxs_perfmon_event_name() and the reader.
#ifndef ZXSAMPLER_PERFMON_H_
#define ZXSAMPLER_PERFMON_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>

#ifdef __cplusplus
extern "C" {
#endif

// --- Constants and types of the FIDL library ------------------------------------------------

// fuchsia.perfmon.cpu/API_VERSION and MAX_NUM_EVENTS.
#define ZXS_PERFMON_API_VERSION 0
#define ZXS_PERFMON_MAX_NUM_EVENTS 32

// EventId and EventRate.
typedef uint16_t zxs_perfmon_event_id_t;
typedef uint32_t zxs_perfmon_event_rate_t;

// Event ids: unit << 11 | event number. Id 0 (and all of unit 0) means "no event".
#define ZXS_PERFMON_EVENT_ID_NONE ((zxs_perfmon_event_id_t)0)
#define ZXS_PERFMON_UNIT_RESERVED 0u
#define ZXS_PERFMON_UNIT_ARCH 1u
#define ZXS_PERFMON_UNIT_FIXED 2u
#define ZXS_PERFMON_UNIT_MODEL 3u
#define ZXS_PERFMON_UNIT_MISC 4u
#define ZXS_PERFMON_MAX_UNIT 0x1fu
#define ZXS_PERFMON_MAX_EVENT 0x7ffu
#define ZXS_PERFMON_EVENT_ID(unit, event) \
  ((zxs_perfmon_event_id_t)((((unsigned)(unit)&0x1fu) << 11) | ((unsigned)(event)&0x7ffu)))
#define ZXS_PERFMON_EVENT_ID_UNIT(id) ((unsigned)(((unsigned)(id) >> 11) & 0x1fu))
#define ZXS_PERFMON_EVENT_ID_EVENT(id) ((unsigned)((unsigned)(id)&0x7ffu))
// The misc unit's software events: this base + Linux's PERF_COUNT_SW_* number.
#define ZXS_PERFMON_MISC_SOFTWARE_BASE 0x400u

// PropertyFlags.
#define ZXS_PERFMON_PROPERTY_FLAG_HAS_LAST_BRANCH ((uint64_t)1u << 0)

// EventConfigFlags.
#define ZXS_PERFMON_EVENT_FLAG_COLLECT_OS (1u << 0)           // count in kernel mode
#define ZXS_PERFMON_EVENT_FLAG_COLLECT_USER (1u << 1)         // count in user mode
#define ZXS_PERFMON_EVENT_FLAG_COLLECT_PC (1u << 2)           // PC records (needs a rate)
#define ZXS_PERFMON_EVENT_FLAG_IS_TIMEBASE (1u << 3)          // the timebase (needs a rate)
#define ZXS_PERFMON_EVENT_FLAG_COLLECT_LAST_BRANCH (1u << 4)  // last-branch records (rate)
#define ZXS_PERFMON_EVENT_FLAG_MASK 0x1fu

// Properties: what this host can do.
typedef struct zxs_perfmon_properties {
  uint16_t api_version;     // ZXS_PERFMON_API_VERSION
  uint16_t pm_version;      // the architecture's performance-monitor version; 0: no PMU
  uint16_t max_num_events;  // events one config may hold (ZXS_PERFMON_MAX_NUM_EVENTS)
  // How many events of each unit can run at once, and their counters' width in bits
  // (informational; 0 where unknown or absent).
  uint16_t max_num_fixed_events;
  uint16_t max_fixed_counter_width;
  uint16_t max_num_programmable_events;  // the arch and model units
  uint16_t max_programmable_counter_width;
  uint16_t max_num_misc_events;
  uint16_t max_misc_counter_width;
  uint64_t flags;  // ZXS_PERFMON_PROPERTY_FLAG_*
} zxs_perfmon_properties_t;

// EventConfig: one event of a config.
typedef struct zxs_perfmon_event_config {
  // The event (an id in Fuchsia's encoding); ZXS_PERFMON_EVENT_ID_NONE ends the list.
  zxs_perfmon_event_id_t event;
  // 0: the event is read when the timebase event fires (if the config has one), else once when
  // the run stops. N > 0: every N occurrences a record is written (a TICK record, or a PC
  // record with COLLECT_PC); only counting events may have a rate.
  zxs_perfmon_event_rate_t rate;
  uint32_t flags;  // ZXS_PERFMON_EVENT_FLAG_*
} zxs_perfmon_event_config_t;

// Config: the events of a run, from the front with no holes (entries after the first NONE must
// be all zero).
typedef struct zxs_perfmon_config {
  zxs_perfmon_event_config_t events[ZXS_PERFMON_MAX_NUM_EVENTS];
} zxs_perfmon_config_t;

// Allocation: the buffers of a run.
typedef struct zxs_perfmon_allocation {
  uint32_t num_buffers;           // must be the number of CPUs (zxs_system_get_num_cpus())
  uint32_t buffer_size_in_pages;  // per buffer, in 4 KiB pages: 1..ZXS_PERFMON_MAX_BUFFER_PAGES
} zxs_perfmon_allocation_t;

#define ZXS_PERFMON_MAX_BUFFER_PAGES 65536u  // 256 MiB per CPU

// --- The controller ---------------------------------------------------------------------------
//
// Every call that takes `controller` checks it first, in Fuchsia's order: ZX_ERR_BAD_HANDLE (not
// a live handle), ZX_ERR_WRONG_TYPE (not a controller), ZX_ERR_ACCESS_DENIED (the handle lacks
// ZX_RIGHT_READ or ZX_RIGHT_WRITE, which a FIDL call needs on its channel). A controller
// inherited across fork() answers ZX_ERR_BAD_STATE to everything but close, in the child (the
// child may open its own). The checks of each call follow, first failing check wins.

// Opens the controller (connects to the service). `debug_resource` comes from
// zxs_debug_resource_get(). *out is ZX_HANDLE_INVALID until success. The handle's rights are a
// channel's: DUPLICATE, TRANSFER, READ, WRITE, SIGNAL, SIGNAL_PEER, WAIT, INSPECT.
//   debug_resource: ZX_ERR_BAD_HANDLE / ZX_ERR_WRONG_TYPE (not a resource) /
//                   ZX_ERR_ACCESS_DENIED (a resource of another kind).
//   ZX_ERR_INVALID_ARGS   out is NULL.
//   ZX_ERR_ALREADY_BOUND  a controller is open in this process (until its last handle is
//                         closed), as the cpu-trace device allows one client.
//   ZX_ERR_ACCESS_DENIED  the host refuses CPU-wide monitoring to this process (Linux: not root
//                         and no CAP_PERFMON, and kernel.perf_event_paranoid > 0).
//   ZX_ERR_NOT_SUPPORTED  no performance monitor here (Linux without perf_event_open; the
//                         Fuchsia backend until it is wired).
//   ZX_ERR_NO_MEMORY, ZX_ERR_NO_RESOURCES (the handle table is full).
ZXS_API zx_status_t zxs_perfmon_open(zx_handle_t debug_resource, zx_handle_t* out);

// GetProperties. ZX_ERR_INVALID_ARGS: properties is NULL.
ZXS_API zx_status_t zxs_perfmon_get_properties(zx_handle_t controller,
                                               zxs_perfmon_properties_t* properties);

// Initialize: allocates one zero-filled buffer per CPU (buffer i belongs to the i-th online CPU,
// in ascending CPU number).
//   ZX_ERR_INVALID_ARGS   allocation is NULL.
//   ZX_ERR_BAD_STATE      already initialized (terminate first).
//   ZX_ERR_INVALID_ARGS   num_buffers is not the number of CPUs; buffer_size_in_pages is 0 or
//                         above ZXS_PERFMON_MAX_BUFFER_PAGES.
//   ZX_ERR_NO_MEMORY, ZX_ERR_NO_RESOURCES.
ZXS_API zx_status_t zxs_perfmon_initialize(zx_handle_t controller,
                                           const zxs_perfmon_allocation_t* allocation);

// Terminate: stops a running run, drops the staged config and the buffers (buffer handles
// given out and mappings stay valid until closed and unmapped). Ignored when not initialized.
// Returns ZX_OK or a handle status.
ZXS_API zx_status_t zxs_perfmon_terminate(zx_handle_t controller);

// GetAllocation. ZX_ERR_INVALID_ARGS: allocation is NULL. ZX_ERR_BAD_STATE: not initialized.
ZXS_API zx_status_t zxs_perfmon_get_allocation(zx_handle_t controller,
                                               zxs_perfmon_allocation_t* allocation);

// StageConfig: checks `config` and keeps it for the next starts (nothing runs yet). On failure
// the previous config is dropped, as Fuchsia's driver does, so start answers BAD_STATE until a
// config is staged.
//   ZX_ERR_INVALID_ARGS   config is NULL.
//   ZX_ERR_BAD_STATE      not initialized, or running.
//   ZX_ERR_INVALID_ARGS   no event; an event after the first NONE entry, or a NONE entry with a
//                         rate or flags; flags outside ZXS_PERFMON_EVENT_FLAG_MASK; more than
//                         one IS_TIMEBASE event; IS_TIMEBASE, COLLECT_PC or COLLECT_LAST_BRANCH
//                         with rate 0; an id of the reserved unit or an unknown unit or event;
//                         an event that appears twice; a rate on an event that is not a
//                         counting event.
//   ZX_ERR_NOT_SUPPORTED  an event this host cannot collect (a hardware event without a PMU),
//                         or COLLECT_LAST_BRANCH without ZXS_PERFMON_PROPERTY_FLAG_HAS_LAST_BRANCH
//                         (Fuchsia's driver answers INVALID_ARGS to both).
ZXS_API zx_status_t zxs_perfmon_stage_config(zx_handle_t controller,
                                             const zxs_perfmon_config_t* config);

// GetConfig: the staged config, as staged.
//   ZX_ERR_INVALID_ARGS config is NULL. ZX_ERR_BAD_STATE not initialized, no config staged, or
//   running (the FIDL documentation asks for data collection off).
ZXS_API zx_status_t zxs_perfmon_get_config(zx_handle_t controller, zxs_perfmon_config_t* config);

// GetBufferHandle: a new handle to buffer `descriptor` (0 .. num_buffers - 1), a VMO of
// buffer_size_in_pages * 4 KiB rounded up to the page size. Rights: DUPLICATE, TRANSFER, READ,
// MAP, GET_PROPERTY, INSPECT: map it read-only with zxs_vmar_map(); zxs_vmo_get_size() gives its
// size. Every handle to one buffer names the same object (same koid).
//   ZX_ERR_INVALID_ARGS vmo is NULL. ZX_ERR_BAD_STATE not initialized.
//   ZX_ERR_INVALID_ARGS descriptor >= num_buffers. ZX_ERR_NO_RESOURCES handle table full.
ZXS_API zx_status_t zxs_perfmon_get_buffer_handle(zx_handle_t controller, uint32_t descriptor,
                                                  zx_handle_t* vmo);

// Start: rewrites every buffer's header (capture_end = the header's size: a restart after stop
// starts the buffers afresh) and turns collection on, on every CPU.
//   ZX_ERR_BAD_STATE      not initialized, no config staged, or running.
//   ZX_ERR_ACCESS_DENIED  the host refuses an event to this process.
//   ZX_ERR_NOT_SUPPORTED  the host cannot collect an event after all.
//   ZX_ERR_NO_RESOURCES   out of descriptors, counters or locked memory; ZX_ERR_NO_MEMORY.
// On failure nothing runs.
ZXS_API zx_status_t zxs_perfmon_start(zx_handle_t controller);

// Stop: turns collection off and returns when every record is in the buffers (the final counts
// included). Ignored when not running. Returns ZX_OK or a handle status.
ZXS_API zx_status_t zxs_perfmon_stop(zx_handle_t controller);

// --- Event ids ----------------------------------------------------------------------------------

// The id of an event named in Fuchsia's style, "unit:name" ("misc:page_faults",
// "arch:instructions_retired", "fixed:unhalted_core_cycles"), or by its Linux perf name
// ("page-faults", "faults", "minor-faults", "major-faults", "context-switches", "cs",
// "cpu-migrations", "migrations", "cpu-clock", "task-clock", "cycles", "cpu-cycles",
// "instructions", "ref-cycles", "cache-references", "cache-misses", "branches",
// "branch-instructions", "branch-misses"). Case-insensitive. The id says nothing about whether
// this host can collect the event: stage it to know.
//   ZX_ERR_INVALID_ARGS name or id NULL; ZX_ERR_NOT_FOUND no such event.
// Thread-safe and async-signal-safe.
ZXS_API zx_status_t zxs_perfmon_event_id(const char* name, uint16_t* id);

// The Fuchsia-style name of an event id ("misc:page_faults"), or NULL for an id of no known
// event. A static string. Thread-safe and async-signal-safe.
ZXS_API const char* zxs_perfmon_event_name(uint16_t id);

// --- The buffers: Fuchsia's cpu-trace record format ----------------------------------------------
//
// Little-endian. A buffer starts with a 24-byte header:
//   u16 version (0), u16 arch (ZXS_PERFMON_ARCH_*), u32 flags (ZXS_PERFMON_BUFFER_FLAG_*),
//   i64 ticks_per_second (of the TIME records' clock), u64 capture_end (the offset where the
//   records end)
// then records, packed at 4-byte alignment, each starting with a 4-byte header
//   u8 type, u8 reserved_flags (0), u16 event (the event id, or NONE)
// and then, by type:
//   TIME         i64 time                                    12 bytes; applies to what follows
//   TICK         -                                            4 bytes; `event` reached its rate
//   COUNT        u64 count                                   12 bytes; occurrences since the
//                                                             event's previous COUNT or TICK/PC
//   VALUE        u64 value                                   12 bytes; a value, not a count
//   PC           u64 aspace, u64 pc                          20 bytes; `event` reached its rate
//                                                             here (instead of a TICK)
//   LAST_BRANCH  u32 num_branches (<= 32), u64 aspace, then num_branches x {u64 from, u64 to,
//                u64 info}, most recent first                16 + 24 * num_branches bytes
// What a run writes into the buffer of each CPU:
//   - when an event with a rate reaches it: TIME; PC (COLLECT_PC) or TICK; if it is the
//     timebase, a COUNT (VALUE for value events) for every event of rate 0, counting what
//     happened since the previous one; LAST_BRANCH (COLLECT_LAST_BRANCH);
//   - at stop: TIME, then for every event a COUNT of what no record counted yet (VALUE: the
//     value), so per CPU: total = rate x (TICK + PC records) + sum of COUNT records.
// A record that does not fit is dropped with the rest of its group and sets the FULL flag.
// aspace, on Linux: the process id in the high 32 bits, the thread id in the low 32 (Fuchsia:
// the page-table root, an opaque address-space id).

#define ZXS_PERFMON_BUFFER_VERSION 0u
#define ZXS_PERFMON_ARCH_UNKNOWN 0u
#define ZXS_PERFMON_ARCH_X64 1u
#define ZXS_PERFMON_ARCH_ARM64 2u
#define ZXS_PERFMON_BUFFER_FLAG_FULL (1u << 0)  // records were dropped (buffer full or lost)
#define ZXS_PERFMON_BUFFER_HEADER_SIZE 24u

#define ZXS_PERFMON_RECORD_RESERVED 0u
#define ZXS_PERFMON_RECORD_TIME 1u
#define ZXS_PERFMON_RECORD_TICK 2u
#define ZXS_PERFMON_RECORD_COUNT 3u
#define ZXS_PERFMON_RECORD_VALUE 4u
#define ZXS_PERFMON_RECORD_PC 5u
#define ZXS_PERFMON_RECORD_LAST_BRANCH 6u

#define ZXS_PERFMON_TIME_RECORD_SIZE 12u
#define ZXS_PERFMON_TICK_RECORD_SIZE 4u
#define ZXS_PERFMON_COUNT_RECORD_SIZE 12u
#define ZXS_PERFMON_VALUE_RECORD_SIZE 12u
#define ZXS_PERFMON_PC_RECORD_SIZE 20u
#define ZXS_PERFMON_MAX_NUM_LAST_BRANCH 32u
#define ZXS_PERFMON_LAST_BRANCH_RECORD_SIZE(n) (16u + 24u * (unsigned)(n))

// LastBranchEntry.info: cycles since the previous branch (bits 0..15), mispredicted (bit 16).
#define ZXS_PERFMON_LAST_BRANCH_INFO_CYCLES(info) ((uint32_t)((info)&0xffffu))
#define ZXS_PERFMON_LAST_BRANCH_INFO_MISPRED(info) ((uint32_t)(((info) >> 16) & 1u))

// The Linux backend's aspace.
#define ZXS_PERFMON_ASPACE_PID(aspace) ((uint32_t)((uint64_t)(aspace) >> 32))
#define ZXS_PERFMON_ASPACE_TID(aspace) ((uint32_t)((uint64_t)(aspace)&0xffffffffu))

typedef struct zxs_perfmon_buffer_header {
  uint16_t version;
  uint16_t arch;
  uint32_t flags;
  zx_ticks_t ticks_per_second;
  uint64_t capture_end;
} zxs_perfmon_buffer_header_t;

typedef struct zxs_perfmon_last_branch {
  uint64_t from;
  uint64_t to;
  uint64_t info;
} zxs_perfmon_last_branch_t;

// The bodies of PC and LAST_BRANCH records, decoded.
typedef struct zxs_perfmon_pc_body {
  uint64_t aspace;
  uint64_t pc;
} zxs_perfmon_pc_body_t;

typedef struct zxs_perfmon_last_branch_body {
  uint32_t num_branches;
  uint64_t aspace;
  zxs_perfmon_last_branch_t branches[ZXS_PERFMON_MAX_NUM_LAST_BRANCH];
} zxs_perfmon_last_branch_body_t;

// One decoded record (copied out of the buffer: it may be unaligned and is never trusted).
typedef struct zxs_perfmon_record {
  uint8_t type;            // ZXS_PERFMON_RECORD_*
  uint8_t reserved_flags;  // as found
  zxs_perfmon_event_id_t event;
  size_t offset;    // of the record in the buffer
  size_t size;      // bytes
  zx_ticks_t time;  // the last TIME record's time, this one's for a TIME record (0 before any)
  union {
    uint64_t count;                              // COUNT
    uint64_t value;                              // VALUE
    zxs_perfmon_pc_body_t pc;                    // PC
    zxs_perfmon_last_branch_body_t last_branch;  // LAST_BRANCH
  };
} zxs_perfmon_record_t;

// A reader of one buffer. Reads only inside [buffer, buffer + size) and never past the header's
// capture_end, at any alignment, whatever the bytes.
typedef struct zxs_perfmon_reader {
  const uint8_t* data;
  size_t size;
  zxs_perfmon_buffer_header_t header;  // as found (init succeeded)
  size_t offset;                       // of the next record
  size_t end;                          // capture_end
  zx_ticks_t time;                     // the last TIME record's
  zx_status_t status;   // ZX_OK, or ZX_ERR_IO_DATA_INTEGRITY once a malformed record was met
  const char* error;    // a static message ("" if none), e.g. "record crosses capture_end"
  size_t error_offset;  // of the offending record (or header field)
  bool done;
} zxs_perfmon_reader_t;

// Checks the header and prepares to read the records.
//   ZX_ERR_INVALID_ARGS       reader NULL, or buffer NULL with size > 0.
//   ZX_ERR_IO_DATA_INTEGRITY  size below the header's; capture_end below the header's size,
//                             above `size`, or not 4-byte aligned (reader->error says which).
//   ZX_ERR_NOT_SUPPORTED      a version other than ZXS_PERFMON_BUFFER_VERSION.
// Thread-safe for distinct readers; async-signal-safe.
ZXS_API zx_status_t zxs_perfmon_reader_init(zxs_perfmon_reader_t* reader, const void* buffer,
                                            size_t size);

// The next record; false at capture_end or at the first malformed record (an unknown or
// reserved type, a record crossing capture_end, more than 32 branches), after which
// reader->status is ZX_ERR_IO_DATA_INTEGRITY and it stays false. Async-signal-safe.
ZXS_API bool zxs_perfmon_reader_next(zxs_perfmon_reader_t* reader, zxs_perfmon_record_t* record);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ZXSAMPLER_PERFMON_H_
