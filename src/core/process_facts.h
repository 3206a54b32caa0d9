// What a feature may ask of the platform (internal): the process and its threads, the clock, the
// calling thread's runtime. The features above the core (recorder/, trace/, symbolize/...) ask
// here, never the backend's zxs_prim_* calls (platform.h), which are the core's contract.
//
// Two parts. The process's and threads' names and koids and the tick rate are on every platform
// (process_facts.c; on Fuchsia the kernel's, through platform_fuchsia.c). The clock, the calling
// thread and its runtime, and the samples a backend still buffers belong to the library's own
// sessions (runtime_facts.c, with the kernel objects): not on Fuchsia's thin backend, where the
// flight recorder, their one user, is not built either.
#ifndef ZXSAMPLER_SRC_CORE_PROCESS_FACTS_H_
#define ZXSAMPLER_SRC_CORE_PROCESS_FACTS_H_

#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>

#include "platform.h"  // the module description (zxs_prim_module_t): the contract's own words

// --- Every platform (process_facts.c) ----------------------------------------------------------

// This process's koid.
zx_koid_t zxs_facts_process_koid(void);
// This process's name, NUL-terminated.
zx_status_t zxs_facts_process_name(char* buf, size_t size);
// Thread `koid`'s name, NUL-terminated; ZX_ERR_NOT_FOUND once it has exited.
zx_status_t zxs_facts_thread_name(zx_koid_t koid, char* buf, size_t size);
// First thing in a thread a feature starts (platform.h: zxs_prim_thread_is_library): never
// sampled, never keeps the process alive.
void zxs_facts_thread_is_library(void);
// [signal-safe] The rate of the ticks in samples and records (util/ticks.h converts).
uint64_t zxs_facts_ticks_per_second(void);
// (module_facts.c) Calls `fn` for each module loaded in this process (platform.h:
// zxs_prim_modules_each), stopping at the first status other than ZX_OK, which it returns.
zx_status_t zxs_facts_modules_each(zxs_prim_module_fn fn, void* ctx);
// The main executable's file path, malloc'd into *path (the caller frees it). ZX_ERR_NO_MEMORY.
zx_status_t zxs_facts_main_path(char** path);
// (module_facts.c) Calls `fn` for each executable file mapping of this process (platform.h:
// zxs_prim_exec_mappings_each); ZX_ERR_NOT_SUPPORTED where the platform has no such list.
zx_status_t zxs_facts_exec_mappings_each(zxs_prim_mapping_fn fn, void* ctx);

// --- The library's own sessions (runtime_facts.c) ----------------------------------------------

// [signal-safe] Monotonic time in ns (the platform's ticks, converted).
zx_time_t zxs_facts_now_ns(void);
// [signal-safe] The calling thread's koid: no allocation, no lock.
zx_koid_t zxs_facts_current_thread_koid(void);
// Makes the calling thread's runtime readable by zxs_facts_runtime_self_now (its queue time) and
// keeps where its page-fault and lock-contention time fell, for zxs_facts_runtime_between.
// Either may be missing on a platform; nothing fails.
void zxs_facts_follow_current_thread(void);
// [real-time safe: no lock, no allocation, no waiting] The calling thread's CPU time and
// run-queue time so far (ns); returns which it read (ZXS_TASK_RUNTIME_CPU_TIME, _QUEUE_TIME).
uint32_t zxs_facts_runtime_self_now(int64_t* cpu_time, int64_t* queue_time);
// The page-fault and lock-contention time of followed thread `koid` that fell in [since, until]
// (monotonic ns), asked soon after `until`, into *out; returns which were measured
// (ZXS_TASK_RUNTIME_PAGE_FAULT_TIME, _LOCK_CONTENTION_TIME), 0 when none or no history.
uint32_t zxs_facts_runtime_between(zx_koid_t koid, zx_time_t since, zx_time_t until,
                                   zx_info_task_runtime_t* out);
// Writes into the sessions' regions the samples the backend still buffers (a source whose
// samples the kernel buffers), so a copy of the regions made now has everything taken so far.
void zxs_facts_flush_samples(void);

#endif  // ZXSAMPLER_SRC_CORE_PROCESS_FACTS_H_
