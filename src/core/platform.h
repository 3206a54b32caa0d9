// The one contract every backend implements (internal, never installed).
//
// Rules (after mimalloc's prim.h and libuv's unix/internal.h):
// - Exactly one backend is compiled into a build, chosen by meson (option `backend`). The core
//   calls the flat list of zxs_prim_* functions below and never tests OS macros.
// - What a platform can do is stated once, in zxs_prim_caps_t; the core branches on that. A
//   missing capability is a function returning ZX_ERR_NOT_SUPPORTED.
// - Native errors (errno, kern_return_t) are translated to zx_status_t here, at the boundary.
// - Functions marked [signal-safe] are called on the sampling path (a signal handler, or a
//   sampler thread while its target is suspended): no allocation, no locks, no stdio, no lazily
//   allocated TLS, errno preserved.
#ifndef ZXSAMPLER_SRC_CORE_PLATFORM_H_
#define ZXSAMPLER_SRC_CORE_PLATFORM_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/perfmon.h>
#include <zxsampler/sampler.h>
#include <zxsampler/types.h>

typedef struct zxs_thread_slot zxs_thread_slot_t;

typedef struct zxs_prim_caps {
  const char* name;           // "linux", "macos", "fuchsia", "fake"
  size_t page_size;           // regions are rounded to this
  uint32_t cpu_number_limit;  // every CPU number the platform reports is below this
  // zxs_prim_current_cpu() names the CPU a thread runs on. Without it the core puts a sample
  // in the region sampling.h's ZXS_CPU_UNKNOWN rule names.
  bool has_cpu_attribution;
  // A source can sample a thread other than the one that attached it; without it attaching
  // another thread is ZX_ERR_NOT_SUPPORTED.
  bool can_interrupt_other_thread;
} zxs_prim_caps_t;

// Fills *caps; cheap after the first call. Thread-safe.
void zxs_prim_get_caps(zxs_prim_caps_t* caps);

// --- CPUs and time ----------------------------------------------------------------------------

// The numbers of the CPUs online now, ascending. ZX_ERR_BUFFER_TOO_SMALL if more than `max`.
zx_status_t zxs_prim_online_cpus(uint32_t* cpus, uint32_t max, uint32_t* count);
// [signal-safe] The CPU the calling thread runs on now (< cpu_number_limit).
uint32_t zxs_prim_current_cpu(void);
// [signal-safe] Monotonic ticks and their rate.
uint64_t zxs_prim_ticks(void);
uint64_t zxs_prim_ticks_per_second(void);
// Gives the CPU away briefly while stop waits for in-flight writers.
void zxs_prim_relax(void);

// --- Regions: shared memory the sampler writes and readers map ---------------------------------

typedef struct zxs_prim_region {
  uint8_t* base;    // writable mapping used by the sampling path
  size_t size;      // page-rounded
  intptr_t native;  // backend's handle for it (memfd, VMO...)
} zxs_prim_region_t;

// Creates a zero-filled region of `size` bytes (page-rounded by the caller). ZX_ERR_NO_MEMORY,
// or ZX_ERR_NO_RESOURCES when the platform is out of handles (descriptors); create passes the
// status on.
zx_status_t zxs_prim_region_create(size_t size, zxs_prim_region_t* out);
// Releases the writable mapping and the backend's handle. Read-only mappings made from the
// region stay valid until unmapped.
void zxs_prim_region_destroy(zxs_prim_region_t* region);
// Maps [offset, offset + len) of a region read-only. Arguments are already validated.
zx_status_t zxs_prim_region_map_readonly(const zxs_prim_region_t* region, size_t offset, size_t len,
                                         void** out);
zx_status_t zxs_prim_unmap(void* addr, size_t len);

// --- Threads ----------------------------------------------------------------------------------

typedef struct zxs_prim_thread {
  zx_koid_t koid;      // tid on Linux
  uintptr_t stack_lo;  // lowest address of the thread's stack
  uintptr_t stack_hi;  // one past the highest
  uint64_t native;     // backend's name for the thread (pthread_t, mach port...)
} zxs_prim_thread_t;

zx_koid_t zxs_prim_process_koid(void);
// Describes the calling thread.
zx_status_t zxs_prim_thread_self(zxs_prim_thread_t* out);
// [signal-safe] The calling thread's koid alone (what thread_self's `koid` says), without
// describing its stack: no allocation, no lock (the recorder's alerts on real-time threads).
zx_koid_t zxs_prim_current_thread_koid(void);
// Describes another thread, named by the backend's native thread (a pthread_t*).
zx_status_t zxs_prim_thread_from_native(const void* native, zxs_prim_thread_t* out);
// False once the thread has exited or is exiting.
bool zxs_prim_thread_alive(const zxs_prim_thread_t* thread);
// The thread's name (Linux: its comm), NUL-terminated; ZX_ERR_NOT_FOUND once it has exited.
zx_status_t zxs_prim_thread_name(zx_koid_t koid, char* buf, size_t size);
// First thing in a thread the library starts above the backend (a feature's): like the
// backend's own threads, it is detached from any session a pthread_create interposer attached it
// to, and never keeps the process alive. Nothing to do where the backend keeps no such list.
void zxs_prim_thread_is_library(void);
// The process's name, NUL-terminated.
zx_status_t zxs_prim_process_name(char* buf, size_t size);
// Calls zxs_core_thread_exited(koid) when the calling thread exits (once per thread; later
// calls for the same thread do nothing). ZX_ERR_NOT_SUPPORTED where there is no such hook.
zx_status_t zxs_prim_notify_on_thread_exit(void);
// Calls zxs_core_thread_exited(koid) when another thread exits, from a thread of the backend's.
// ZX_ERR_NOT_SUPPORTED where the platform cannot watch another thread (the core then reaps
// exited threads at its next call). unwatch stops watching (the thread was detached first).
zx_status_t zxs_prim_watch_thread_exit(const zxs_prim_thread_t* thread);
void zxs_prim_unwatch_thread_exit(zx_koid_t koid);

// --- Task runtime (RFC-0084) ------------------------------------------------------------------
// Per-thread accounting of where time went. `fields` are ZXS_TASK_RUNTIME_* bits (object.h):
// what is measured; a field not in it reads 0. None of these is signal-safe.

typedef struct zxs_prim_runtime {
  zx_info_task_runtime_t info;
  uint32_t fields;
} zxs_prim_runtime_t;

// Begins measuring `thread` (a live thread of this process) if not yet; idempotent.
// ZX_ERR_BAD_STATE the thread has exited; ZX_ERR_NOT_SUPPORTED no task runtime here.
zx_status_t zxs_prim_runtime_measure(const zxs_prim_thread_t* thread);
// The runtime of thread `koid`: live, or exited and measured. ZX_ERR_NOT_FOUND otherwise.
zx_status_t zxs_prim_runtime_thread(zx_koid_t koid, zxs_prim_runtime_t* out);
// The process: every live thread (each begins to be measured) and every exited thread it knows.
zx_status_t zxs_prim_runtime_process(zxs_prim_runtime_t* out);

// For the flight recorder's deadlines (recorder.h). Measures `thread` and, from now on, keeps
// where its page-fault and lock-contention time fell in time, for runtime_between. Idempotent.
// ZX_ERR_NOT_SUPPORTED when neither is measured for it; ZX_ERR_BAD_STATE it has exited.
zx_status_t zxs_prim_runtime_keep_history(const zxs_prim_thread_t* thread);
// The page-fault and lock-contention time of thread `koid` (kept by runtime_keep_history) that
// fell in [since, until] (monotonic ns), asked soon after `until` (the history is short: Linux
// keeps 0.5 s); `fields` says which were measured. ZX_ERR_NOT_FOUND: no history of it.
zx_status_t zxs_prim_runtime_between(zx_koid_t koid, zx_time_t since, zx_time_t until,
                                     zxs_prim_runtime_t* out);
// Prepares the calling thread for runtime_self_now (opens what it reads). ZX_ERR_NOT_SUPPORTED
// when its queue time cannot be read.
zx_status_t zxs_prim_runtime_self_prepare(void);
// [real-time safe: no lock, no allocation, no waiting] The calling thread's CPU time and run-queue
// time so far (ns); returns which it read (ZXS_TASK_RUNTIME_CPU_TIME, _QUEUE_TIME: the latter
// once runtime_self_prepare succeeded on the thread).
uint32_t zxs_prim_runtime_self_now(int64_t* cpu_time, int64_t* queue_time);

// --- Sampling sources -------------------------------------------------------------------------
// A source interrupts one attached thread about once per `period` of that thread's CPU time and
// hands its context to the core through one of the sampling entries of sampling.h: in the
// interrupted context (zxs_core_sample), from a copy the kernel made (zxs_core_sample_copy), or
// from a sampler thread with the thread suspended (zxs_core_sample_suspended). A source that
// cannot honour `period` raises it and says so in slot->period (get_stats' effective period).

// Once per process, before the first arm: what the sources need process-wide (Linux: picks the
// sampling signal; its handler is installed when a signal source first arms). Idempotent.
zx_status_t zxs_prim_sampling_init(void);
// Writes every sample the backend holds but has not written yet (a source whose samples the
// kernel buffers, drained by a thread of the backend's) into the regions. Stop calls it before
// it disables writes, so nothing taken before stop is lost. Nothing to do for sources that write
// from the interrupted thread.
void zxs_prim_sampling_flush(void);
// A session was created: a backend may do now what would otherwise make its first start slow
// (Linux: the kernel switches perf's scheduler hooks on as the first task event of the whole
// system opens, 15-22 ms of that open here, and off a second after the last one closes; one
// disabled event held from here to zxs_prim_sampling_idle() keeps them on). Best effort.
void zxs_prim_sampling_prepare(void);
// A session was started on the calling thread with `period` (after its threads were armed): what
// the stop before kept for slots not armed again goes (zxs_prim_source_park); a backend may
// prepare to sample the threads this one creates from now on without a resource of
// their own (Linux: perf-ring's events inherited by every thread the caller creates, for threads
// the descriptor budget cannot give events; see source_perf_ring.c). Nothing to do elsewhere.
void zxs_prim_sampling_started(zx_duration_t period);
// No session samples any more (the last one was destroyed): a backend releases what its sources
// keep from one start to the next (perf-ring's per-CPU rings). Nothing to do for the others.
void zxs_prim_sampling_idle(void);
// Arms the slot's source (the slot holds the thread and the backend's source state).
// Sets slot->source_kind. ZX_ERR_NO_RESOURCES when no source could be created.
zx_status_t zxs_prim_source_arm(zxs_thread_slot_t* slot, zx_duration_t period);
// Disarms: after it returns the source fires no more. A handler already running may still be
// in flight; the per-CPU protocol waits for it. A backend whose source suspends the thread (a
// sampler thread: suspend, read, walk, resume) returns only once no suspension of this thread
// is in flight: the thread is running again and will not be suspended for this slot.
void zxs_prim_source_disarm(zxs_thread_slot_t* slot);
// Disarms at a stop, as zxs_prim_source_disarm, but a backend may keep what it takes to arm the
// same thread again at the same period, so that the next start is cheap (Linux: perf-ring keeps
// the thread's events, one per CPU, disabled: a start then enables them instead of opening
// them). What it keeps goes when the slot is disarmed (detached), when the next start did not
// arm it again (zxs_prim_sampling_started), at zxs_prim_sampling_idle() and after fork.
void zxs_prim_source_park(zxs_thread_slot_t* slot);
// In the child of a fork (one thread, a copy of the parent's memory): forgets every source
// without touching what it shares with the parent (perf events are shared: closing the
// child's descriptors must not disable them) and resets each slot's backend state.
void zxs_prim_after_fork_child(void);

// --- CPU performance monitor (perfmon.h) ---------------------------------------------------------
// The core checks the protocol and writes the records (perfmon_core.h); the backend collects.
// All of these are called under the core's perfmon lock, never from a signal handler.

typedef struct zxs_perfmon_run zxs_perfmon_run_t;

// What the host can do: every field but api_version and max_num_events (the core's). Truthful:
// 0 for what the host lacks or does not tell.
void zxs_prim_perfmon_properties(zxs_perfmon_properties_t* properties);
// ZX_OK when this process may monitor every CPU; ZX_ERR_ACCESS_DENIED when the host refuses it;
// ZX_ERR_NOT_SUPPORTED when there is no performance monitor to use. A backend without one
// answers NOT_SUPPORTED here and the rest is never called. (On Fuchsia the controller is the
// fuchsia.perfmon.cpu service: the build replaces the whole controller, perfmon_fuchsia.c.)
zx_status_t zxs_prim_perfmon_check_access(void);
// Whether the host can collect event `id`: ZX_OK (*counting: a count rather than a value),
// ZX_ERR_NOT_SUPPORTED (an event it knows but cannot collect here), ZX_ERR_INVALID_ARGS (no
// such event).
zx_status_t zxs_prim_perfmon_event(uint16_t id, bool* counting);
// Starts collecting the run's events on the CPU of each of its buffers (the core wrote their
// headers) and keeps its state in run->backend. On failure nothing runs and run->backend is
// NULL: ZX_ERR_ACCESS_DENIED, ZX_ERR_NOT_SUPPORTED, ZX_ERR_NO_RESOURCES, ZX_ERR_NO_MEMORY.
zx_status_t zxs_prim_perfmon_start(zxs_perfmon_run_t* run);
// Stops: returns once every sample went through zxs_perfmon_core_sample(), the final totals
// through zxs_perfmon_core_final() (each buffer once), and nothing more will be written.
// Frees run->backend and sets it to NULL.
void zxs_prim_perfmon_stop(zxs_perfmon_run_t* run);
// In the child of a fork (one thread): forgets the run's state without disturbing the
// parent's counters (which share the inherited descriptors); sets run->backend to NULL.
void zxs_prim_perfmon_after_fork_child(zxs_perfmon_run_t* run);

// --- Loaded modules of this process ----------------------------------------------------------
// The images the calling process has loaded, as its loader lists them: what a trace file
// records so that its samples can be symbolized later, here or elsewhere (src/symbolize/modules.c
// turns them into a module list and reads each build ID from the notes). ELF images are given
// by their program headers; Mach-O images (macOS) the same way, each segment as a PT_LOAD
// (vmaddr, vmsize, fileoff, initprot as p_flags), with their LC_UUID as the build ID. Not
// signal-safe.

#define ZXS_PRIM_PT_LOAD 1u  // ELF's p_type values
#define ZXS_PRIM_PT_NOTE 4u

// One program header of a loaded image, mapped at load_bias + vaddr.
typedef struct zxs_prim_phdr {
  uint32_t type;    // ZXS_PRIM_PT_LOAD or ZXS_PRIM_PT_NOTE (other headers are left out)
  uint32_t flags;   // ELF's p_flags: PF_X 1, PF_W 2, PF_R 4
  uint64_t vaddr;   // link-time address
  uint64_t memsz;   // bytes in memory
  uint64_t offset;  // in the file
  uint64_t align;
} zxs_prim_phdr_t;

typedef struct zxs_prim_module {
  const char* name;    // the loader's name for it; "" where it has none
  uint64_t load_bias;  // runtime address - link-time address
  bool is_main;        // the main executable (its file: zxs_prim_modules_main_path())
  bool is_vdso;        // the kernel's vDSO, which has no file
  const zxs_prim_phdr_t* phdrs;
  size_t phdr_count;
  // The vDSO only: its whole ELF image as the kernel maps it (whole pages, section headers
  // included), readable while the process runs; NULL and 0 for other modules.
  const void* image;
  size_t image_size;
  // A Mach-O image's identity: its LC_UUID (16 bytes), which stands for the build ID an ELF
  // image keeps in a PT_NOTE; NULL for ELF images.
  const uint8_t* uuid;
} zxs_prim_module_t;

typedef zx_status_t (*zxs_prim_module_fn)(const zxs_prim_module_t* module, void* ctx);

// Calls `fn` once per loaded module that maps at least one PT_LOAD segment, in the loader's
// order, with a description valid during the call; stops at the first status other than ZX_OK
// and returns it. The loader's lock is held meanwhile where it has one to hold (Linux: dlopen
// and dlclose wait; macOS's dyld offers none): `fn` must not call into the loader.
// ZX_ERR_NOT_SUPPORTED where the platform cannot list its modules; ZX_ERR_NO_MEMORY.
zx_status_t zxs_prim_modules_each(zxs_prim_module_fn fn, void* ctx);
// The main executable's file path, malloc'd into *path (the caller frees it): where the
// platform names the file itself, even when the program was started by a relative path.
// ZX_ERR_NO_MEMORY.
zx_status_t zxs_prim_modules_main_path(char** path);

// --- File mappings of this process --------------------------------------------------------------
// What the loader's list does not say: files mapped executable by other means (a JIT's jitdump
// file, code mapped again from its file at another address). Not signal-safe.

typedef struct zxs_prim_mapping {
  uint64_t start, end;  // runtime addresses [start, end)
  uint64_t offset;      // the file offset mapped at `start`
  uint32_t prot;        // ZXS_PRIM_PROT_R | _W | _X
  const char* path;     // the file's absolute path as the mapping names it
} zxs_prim_mapping_t;

#define ZXS_PRIM_PROT_R 1u
#define ZXS_PRIM_PROT_W 2u
#define ZXS_PRIM_PROT_X 4u

typedef zx_status_t (*zxs_prim_mapping_fn)(const zxs_prim_mapping_t* mapping, void* ctx);

// Calls `fn` once per executable mapping of a file that still exists under its path, in address
// order, with a description valid during the call; stops at the first status other than ZX_OK
// and returns it. ZX_ERR_NOT_SUPPORTED where the platform cannot list its mappings (then features
// that need them do without); ZX_ERR_NO_MEMORY.
zx_status_t zxs_prim_exec_mappings_each(zxs_prim_mapping_fn fn, void* ctx);

#endif  // ZXSAMPLER_SRC_CORE_PLATFORM_H_
