// The thread sampler: Zircon's zx_sampler_* calls, portable.
//
// One session at a time per process. zxs_sampler_create() returns an IOBuffer handle with one
// region per CPU online at the call; zxs_sampler_attach() selects threads; between
// zxs_sampler_start() and zxs_sampler_stop() every attached thread is interrupted about once per
// `period` of its own CPU time, its stack is walked by frame pointers and one FXT "Large BLOB with
// metadata" record of PCs is written into the region of the CPU it runs on. The full contract,
// status by status, is docs/sampler-contract.md.
//
// None of these calls is async-signal-safe. All are thread-safe.
#ifndef ZXSAMPLER_SAMPLER_H_
#define ZXSAMPLER_SAMPLER_H_

#include <stdbool.h>
#include <zxsampler/types.h>

#if defined(__Fuchsia__)
#include <assert.h>  // static_assert for <zircon/syscalls-next.h> in C before C23
#include <zircon/syscalls-next.h>
#include <zircon/syscalls.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

// Built for Fuchsia, the kernel's zx_sampler_config_t and limits (with its calls) are used: from
// <zircon/syscalls-next.h> in the sampler revision with zx_sampler_attach (24 bytes, with
// iobuffer_discipline), from <zircon/syscalls.h> in the one with zx_sampler_read (16 bytes).
// Fuchsia allows <zircon/syscalls-next.h> when targeting API level HEAD or PLATFORM only
// (-ffuchsia-api-level).
#if !defined(__Fuchsia__)

typedef struct zx_sampler_config {
  // Nanoseconds of a thread's CPU time between two of its samples; >= ZX_SAMPLER_MIN_PERIOD.
  zx_duration_mono_t period;
  // Bytes per CPU region; rounded up to the page size.
  size_t buffer_size;
  // Must be ZX_IOB_DISCIPLINE_NONE.
  uint64_t iobuffer_discipline;
} zx_sampler_config_t;

#define ZX_SAMPLER_MIN_PERIOD ((zx_duration_mono_t)10000) /* 10 us */
#define ZX_SAMPLER_MAX_BUFFER_SIZE ((size_t)1u << 30)     /* 1 GiB */

#endif  // !__Fuchsia__

#ifndef ZX_SAMPLER_MAX_FRAMES
#define ZX_SAMPLER_MAX_FRAMES 64
#endif

// Hands the program a handle to the debug resource, the host's stand-in for Fuchsia's
// ZX_RSRC_KIND_SYSTEM / ZX_RSRC_SYSTEM_DEBUG_BASE resource that zxs_sampler_create() requires.
// Each call returns a new handle (rights: DUPLICATE | TRANSFER | INSPECT); close it when done.
// ZX_ERR_INVALID_ARGS: out is NULL. ZX_ERR_NO_RESOURCES: handle table full.
// Fuchsia: a duplicate of the handle given to zxs_debug_resource_set() (rights as it had);
// ZX_ERR_NOT_FOUND when none was given; the kernel's statuses of zx_handle_duplicate().
ZXS_API zx_status_t zxs_debug_resource_get(zx_handle_t* out);

// Fuchsia: gives the library a handle to the debug resource, which the program obtains from the
// fuchsia.kernel.DebugResource protocol (the library speaks no FIDL); zxs_debug_resource_get()
// and the profiler API (profiler.h) duplicate it. The library owns the handle from then on; a
// second call replaces (closes) the first. ZX_ERR_BAD_HANDLE: ZX_HANDLE_INVALID.
// Elsewhere the library makes its own debug resource: ZX_ERR_NOT_SUPPORTED, and the handle
// stays the caller's.
ZXS_API zx_status_t zxs_debug_resource_set(zx_handle_t rsrc);

// Run-time switch, the host's counterpart of Fuchsia's kernel.enable-debugging-syscalls boot
// option. When off, create/attach/start/stop return ZX_ERR_NOT_SUPPORTED. It starts as the
// environment variable ZXSAMPLER_DEBUGGING_SYSCALLS says at the first sampler call ("0", "false"
// or "off" turn it off; anything else or unset leaves it on) and can be changed with this call.
// Turning it off does not stop a running session. Fuchsia: the kernel's boot option decides;
// enabled() answers true and set does nothing.
ZXS_API void zxs_set_debugging_syscalls_enabled(bool enabled);
ZXS_API bool zxs_debugging_syscalls_enabled(void);

// True when the library was built with sampling (meson option `sampler`, the counterpart of
// Fuchsia's experimental_thread_sampler_enabled build flag).
ZXS_API bool zxs_sampler_compiled_in(void);

// Creates the session. `config_size` must be sizeof(zx_sampler_config_t).
// *iob_out is set to ZX_HANDLE_INVALID before any check. Statuses, first failing check wins:
//   ZX_ERR_NOT_SUPPORTED  sampling compiled out or switched off at run time.
//   ZX_ERR_BAD_HANDLE     rsrc is not a valid handle.
//   ZX_ERR_WRONG_TYPE     rsrc is not a resource.
//   ZX_ERR_ACCESS_DENIED  rsrc is a resource of another kind than the debug resource.
//   ZX_ERR_INVALID_ARGS   options != 0; config NULL; wrong config_size; discipline != 0;
//                         buffer_size 0 or > ZX_SAMPLER_MAX_BUFFER_SIZE; period below the
//                         minimum; iob_out NULL.
//   ZX_ERR_ALREADY_EXISTS a session exists (until the last handle to its IOBuffer is closed).
//   ZX_ERR_NO_MEMORY      regions could not be allocated.
//   ZX_ERR_NO_RESOURCES   the handle table is full.
// The returned handle has the IOBuffer's default rights plus ZX_RIGHT_APPLY_PROFILE.
ZXS_API zx_status_t zxs_sampler_create(zx_handle_t rsrc, uint64_t options,
                                       const zx_sampler_config_t* config, size_t config_size,
                                       zx_handle_t* iob_out);

// Selects a thread for sampling; allowed while the session is configured or running (a thread
// attached while running is sampled from then on). Attaching twice is not an error. A thread
// that exits is detached by itself and leaves nothing behind: at once when the handle came from
// its own zxs_thread_self() (the exit hook runs on it), otherwise at the next attach, start,
// stop or get_stats call (an exited thread's source can no longer fire; its descriptor is
// released then). Statuses:
//   ZX_ERR_NOT_SUPPORTED  as for create.
//   thread: ZX_ERR_BAD_HANDLE / ZX_ERR_WRONG_TYPE / ZX_ERR_ACCESS_DENIED (needs ZX_RIGHT_READ);
//   then iob: the same three (needs ZX_RIGHT_APPLY_PROFILE).
//   ZX_ERR_BAD_STATE      the IOBuffer is not the live session's, or the thread has exited.
//   ZX_ERR_NO_RESOURCES   too many attached threads, or the backend could not create the
//                         thread's sampling source.
// Fuchsia: the kernel's zx_sampler_attach; built against the sampler revision that has none
// (zx_sampler_read), always ZX_ERR_NOT_SUPPORTED: there the kernel samples every thread of the
// system and selects none (docs/platforms.md, "Fuchsia").
ZXS_API zx_status_t zxs_sampler_attach(zx_handle_t iob, zx_handle_t thread);

// Enables writes on every CPU and arms sampling of every attached thread. A restart after stop
// continues where the last run left off (write positions are never reset).
//   ZX_ERR_NOT_SUPPORTED, handle errors as for attach (iob needs ZX_RIGHT_APPLY_PROFILE),
//   ZX_ERR_BAD_STATE when already running (nothing changes). The first start installs the
//   backend's interrupt handler, which can fail (Linux: ZX_ERR_NO_RESOURCES no free real-time
//   signal; ZX_ERR_ALREADY_BOUND the ZXSAMPLER_SIGNAL chosen has the program's handler;
//   ZX_ERR_INVALID_ARGS ZXSAMPLER_SIGNAL is not a usable signal); nothing changes then.
ZXS_API zx_status_t zxs_sampler_start(zx_handle_t iob);

// Stops sampling and returns only when no further byte will be written to any region
// (three-phase shutdown). Then map the regions and read them.
//   ZX_ERR_NOT_SUPPORTED, handle errors as for start, ZX_ERR_BAD_STATE when not running.
ZXS_API zx_status_t zxs_sampler_stop(zx_handle_t iob);

// Which mechanism interrupts attached threads.
typedef enum zxs_sample_source {
  ZXS_SOURCE_NONE = 0,         // nothing armed yet
  ZXS_SOURCE_PERF_TASK_CLOCK,  // Linux perf_event software task-clock, signal to the thread
  ZXS_SOURCE_CPU_CLOCK_TIMER,  // POSIX timer on the thread's CPU clock (tick-granular)
  ZXS_SOURCE_SAMPLER_THREAD,   // a sampler thread suspends targets (macOS)
  ZXS_SOURCE_KERNEL,           // the Fuchsia kernel's own sampler
  ZXS_SOURCE_FAKE,             // deterministic test backend
  ZXS_SOURCE_PERF_RING,        // Linux perf_event task-clock; the kernel copies the registers and
                               // the top of the stack into a ring buffer per CPU that a thread of
                               // the library drains and walks (no signal)
} zxs_sample_source_t;

// The source's short name, as ZXSAMPLER_SOURCE takes it on Linux: "perf-ring", "perf",
// "cputimer"; elsewhere "sampler-thread", "kernel", "fake"; "none"; "unknown" for any other
// value. A static string. Async-signal-safe.
ZXS_API const char* zxs_sample_source_name(zxs_sample_source_t source);

// Counters of a session, summed over CPUs and threads since create.
typedef struct zxs_sampler_stats {
  zxs_sample_source_t source;      // the active source (the last one armed)
  const char* backend;             // "linux", "macos", "fuchsia", "fake"
  zx_duration_t requested_period;  // from the config
  zx_duration_t effective_period;  // largest period in force now (raised by throttling, or the
                                   // source's resolution)
  uint32_t attached_threads;       // live attached threads
  uint64_t samples_written;        // records written
  uint64_t dropped_full;           // samples lost because the CPU's region was full
  uint64_t dropped_other;          // lost for another reason (no region for the CPU, stale thread,
                                   // a perf-ring buffer that overflowed)
  uint64_t walks_truncated;        // stacks deeper than ZX_SAMPLER_MAX_FRAMES, or (perf-ring)
                                   // than the stack copy the kernel makes (ZXSAMPLER_STACK_COPY)
  uint64_t throttled;              // times a thread's period was raised to protect the host
  uint64_t overruns;               // periods the source reports as missed
  uint64_t source_failures;        // sources that could not be armed and fell back or failed
  // How stacks are walked: "fp" (frame pointers) for every in-process source; CFI unwinding
  // (.eh_frame) is zxsampler record's, which walks the kernel's stack copy outside the program.
  const char* unwinder;
  uint64_t reserved[8];  // zero; counters added later take these, so the size stays the same
} zxs_sampler_stats_t;

// Reads the session's counters. Needs ZX_RIGHT_INSPECT on the IOBuffer.
//   handle errors as above; ZX_ERR_BAD_STATE not the live session; ZX_ERR_INVALID_ARGS NULL.
//   Fuchsia: ZX_ERR_NOT_SUPPORTED (the kernel keeps no counters a program can read).
ZXS_API zx_status_t zxs_sampler_get_stats(zx_handle_t iob, zxs_sampler_stats_t* stats);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ZXSAMPLER_SAMPLER_H_
