// Complete FXT trace files of a sampler session (internal).
//
// Layout (documented for users in the README):
//   magic; provider info (id 1, "zxsampler") and section; initialization (ticks per second);
//   a process kernel object (koid = pid, name, argument "sampling_period_ns");
//   a thread kernel object per sampled thread (koid = tid, name, argument "process");
//   an attachment (Large BLOB without metadata) of category "zxsampler", name "modules": the
//   loaded modules as symbolizer markup ({{{module:...}}} and {{{mmap:...}}} lines, each mmap
//   line followed by a "file_offset:0x..." line; traces written before that line existed lack
//   it, and their readers derive the offsets);
//   `zxsampler record` adds per process its modules and JIT code names as blobs (see below);
//   in a recorder's alert trace, the alert's instant event (see ZXS_TRACE_ALERT_CATEGORY);
//   then every sample record of every region, as the sampler wrote them (zero tails dropped).
#ifndef ZXSAMPLER_SRC_REPORT_TRACE_FILE_H_
#define ZXSAMPLER_SRC_REPORT_TRACE_FILE_H_

#include <stdio.h>
#include <zxsampler/fxt.h>
#include <zxsampler/object.h>
#include <zxsampler/types.h>

#include "jit_symbols.h"
#include "modules.h"
#include "profile.h"

#define ZXS_TRACE_PROVIDER_ID 1u
#define ZXS_TRACE_CATEGORY "zxsampler"
#define ZXS_TRACE_MODULES_NAME "modules"
#define ZXS_TRACE_PERIOD_ARG "sampling_period_ns"
// Written by `zxsampler record` (absent from in-process traces):
// on each process: its pid (the koid of a process that an exec replaced is
// pid | generation << 32) and what was sampled ("user" or "user+kernel");
#define ZXS_TRACE_PID_ARG "pid"
#define ZXS_TRACE_SAMPLED_ARG "sampled"
// on the first process: what the whole recording lost or left out (samples_lost also in
// in-process traces, when the session lost any);
#define ZXS_TRACE_LOST_ARG "samples_lost"
#define ZXS_TRACE_CHILDREN_NOT_FOLLOWED_ARG "children_not_followed"
#define ZXS_TRACE_THREADS_NOT_ATTACHED_ARG "threads_not_attached"
// on the first process, task runtime (RFC-0084): the fields measured for every thread (names
// separated by spaces: "cpu_time queue_time page_fault_time lock_contention_time"), a sentence
// saying why the others are not (absent when all are), and the runtime records the kernel could
// not store (pairs they broke are not counted);
#define ZXS_TRACE_RUNTIME_ARG "task_runtime"
#define ZXS_TRACE_RUNTIME_MISSING_ARG "task_runtime_missing"
#define ZXS_TRACE_RUNTIME_LOST_ARG "task_runtime_records_lost"
// on each thread, the fields measured for it (uint64 ns; an absent argument was not measured,
// never a zero) and the number of faults and contentions timed;
#define ZXS_TRACE_CPU_TIME_ARG "cpu_time_ns"
#define ZXS_TRACE_QUEUE_TIME_ARG "queue_time_ns"
#define ZXS_TRACE_PAGE_FAULT_TIME_ARG "page_fault_time_ns"
#define ZXS_TRACE_LOCK_CONTENTION_TIME_ARG "lock_contention_time_ns"
#define ZXS_TRACE_PAGE_FAULTS_ARG "page_faults"
#define ZXS_TRACE_LOCK_CONTENTIONS_ARG "lock_contentions"
// the modules of each process as a Large BLOB *with* metadata named "modules" whose thread
// reference names the process (thread koid 0); and the kernel functions sampled, an attachment
// of lines "START END NAME" (hex addresses).
#define ZXS_TRACE_KERNEL_SYMBOLS_NAME "kernel-symbols"
// The vDSO has no file: its ELF image, as the kernel maps it, travels as an attachment of this
// name, so that its functions (clock_gettime, gettimeofday...) are named anywhere. The module
// list names it "[vdso]" with its build ID.
#define ZXS_TRACE_VDSO_NAME "vdso"
#define ZXS_TRACE_VDSO_PATH "[vdso]"
// JIT code names (`zxsampler record`): a Large BLOB with metadata of this name per process that
// had any, its thread reference naming the process (thread koid 0), its payload perf map text:
// lines "START SIZE NAME" (hex), disjoint ranges. Readers that do not know it skip it.
#define ZXS_TRACE_JIT_SYMBOLS_NAME "jit-symbols"

// Appends the head every trace file starts with: the magic record, the provider's info and
// section (ZXS_TRACE_PROVIDER_ID, "zxsampler") and the initialization record of
// `ticks_per_second`. The buffer's status says whether it fit.
void zxs_trace_write_header(zxs_fxt_buf_t* buf, uint64_t ticks_per_second);

// The payload of a "modules" attachment or blob: the list as markup with file offsets
// (zxs_modules_write_markup() with ZXS_MODULES_MARKUP_FILE_OFFSETS), malloc'd into *text (caller
// frees). ZX_ERR_NO_MEMORY, or the export's failure.
zx_status_t zxs_trace_modules_payload(const zxs_module_list_t* modules, char** text, size_t* size);

// Appends the vDSO attachment of this process's vDSO (nothing where there is none).
// ZX_OK, or the buffer's failure.
zx_status_t zxs_trace_write_vdso(zxs_fxt_buf_t* buf);

// Appends the JIT symbols of process `koid` (ZXS_TRACE_JIT_SYMBOLS_NAME; nothing for an empty
// set). ZX_OK, ZX_ERR_NO_MEMORY, or the buffer's failure.
zx_status_t zxs_trace_write_jit_symbols(zxs_fxt_buf_t* buf, zx_koid_t koid,
                                        const zxs_jit_symbols_t* symbols);

// Our own recordings keep up to 128 frames a sample (the kernel's record and the sampler API:
// 64). A stack cut short (by the stack copy or that limit) ends with this PC, which readers show
// as a "[truncated]" frame at its root; no code lives at address 1.
#define ZXS_TRACE_MAX_FRAMES 128u
#define ZXS_TRACE_TRUNCATED_PC 1u
#define ZXS_TRACE_TRUNCATED_NAME "[truncated]"

// Writes the trace file of a stopped session (`iob` needs READ, MAP and INSPECT), with the
// modules loaded now and what the session lost (its samples_lost: the counters' dropped_full
// and dropped_other). Statuses: the handle's, ZX_ERR_NO_MEMORY, ZX_ERR_IO (stream error),
// ZX_ERR_IO_DATA_INTEGRITY (a region holds malformed data).
zx_status_t zxs_trace_write_session(zx_handle_t iob, zx_duration_t period, FILE* out);

// Writes a trace file of this process from sample records already copied out of a session
// (`samples`, whole records): the head as above (`samples_lost` on the process when not 0),
// with a thread object for each thread of the samples and for `extra_tid` (0: none), the
// modules loaded now, then `events` (whole records; NULL: none), then the samples. Statuses: a
// buffer's failure, ZX_ERR_NO_MEMORY, ZX_ERR_IO.
zx_status_t zxs_trace_write_samples(const zxs_fxt_buf_t* samples, const zxs_fxt_buf_t* events,
                                    zx_koid_t extra_tid, zx_duration_t period,
                                    uint64_t samples_lost, FILE* out);

// Recorder alerts (recorder.h): an instant event of this category, named after the alert, on the
// late thread, with the breakdown of the late period as uint64 arguments in ns (an absent one was
// not measured): wall time, budget, and the deltas of the four task runtime fields.
#define ZXS_TRACE_ALERT_CATEGORY "alert"
#define ZXS_TRACE_ALERT_WALL_ARG "wall"
#define ZXS_TRACE_ALERT_BUDGET_ARG "budget"
#define ZXS_TRACE_ALERT_CPU_ARG "cpu_time"
#define ZXS_TRACE_ALERT_QUEUE_ARG "queue_time"
#define ZXS_TRACE_ALERT_FAULT_ARG "page_fault_time"
#define ZXS_TRACE_ALERT_LOCK_ARG "lock_contention_time"

// The name of the task runtime field of bit `bit` (ZXS_TASK_RUNTIME_CPU_TIME is bit 0, ..
// _LOCK_CONTENTION_TIME bit 3; ZXS_PROFILE_RUNTIME_* are the same bits, ZXS_PROFILE_ALERT_CPU..
// the same from bit 2): "cpu_time", "queue_time", "page_fault_time", "lock_contention_time", the
// words of ZXS_TRACE_RUNTIME_ARG and the alerts' arguments. NULL for other bits.
#define ZXS_TRACE_RUNTIME_FIELD_COUNT 4u
_Static_assert(ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME == 1u << 3 &&
                   ZXS_PROFILE_RUNTIME_LOCK == ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME &&
                   ZXS_PROFILE_ALERT_CPU << 3 == ZXS_PROFILE_ALERT_LOCK,
               "the runtime fields are the same bits everywhere");
static inline const char* zxs_trace_runtime_field_name(uint32_t bit) {
  switch (bit) {
    case 0:
      return ZXS_TRACE_ALERT_CPU_ARG;
    case 1:
      return ZXS_TRACE_ALERT_QUEUE_ARG;
    case 2:
      return ZXS_TRACE_ALERT_FAULT_ARG;
    case 3:
      return ZXS_TRACE_ALERT_LOCK_ARG;
    default:
      return NULL;
  }
}

// Reads a trace file into a profile and symbolizes every location from the module files on
// this machine (a module whose file is missing or has another build ID stays unsymbolized).
// `error` receives a message on failure. ZX_ERR_IO_DATA_INTEGRITY malformed input;
// ZX_ERR_NO_MEMORY.
zx_status_t zxs_profile_from_trace(const void* data, size_t size, zxs_profile_t* out, char* error,
                                   size_t error_size);

// Parses the "modules" attachment (symbolizer markup module and mmap lines, and the file_offset
// line after each mmap line) into a list. Unknown lines are skipped. A segment without a
// file_offset line (older traces) gets the offset of the usual layout: its address minus the
// page-aligned (4 KiB) address of its module's first segment. ZX_ERR_IO_DATA_INTEGRITY for a
// malformed element.
zx_status_t zxs_modules_from_markup(const char* text, size_t size, zxs_module_list_t* out);

#endif  // ZXSAMPLER_SRC_REPORT_TRACE_FILE_H_
