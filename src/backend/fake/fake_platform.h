// A deterministic backend for the core's unit tests: the test decides which CPU a thread is on,
// what the clock says, when a source "fires" and what happens while stop waits.
#ifndef ZXSAMPLER_TESTS_FAKE_FAKE_PLATFORM_H_
#define ZXSAMPLER_TESTS_FAKE_FAKE_PLATFORM_H_

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "frame_walk.h"
#include "perfmon_core.h"
#include "platform.h"

// Back to defaults: CPUs 0..3 online, limit 8, clock 1000, no hooks, no injected failures.
void fake_reset(void);
// Online CPUs (ascending numbers below 8).
void fake_set_online_cpus(const uint32_t* cpus, uint32_t count);
// The CPU zxs_prim_current_cpu() reports (for every thread).
void fake_set_current_cpu(uint32_t cpu);
void fake_set_ticks(uint64_t ticks);
// Called on each zxs_prim_relax() (stop waiting for writers/timers) with a running count.
void fake_set_relax_hook(void (*hook)(void* ctx, uint64_t call), void* ctx);
// Stack bounds zxs_prim_thread_self() reports for the calling thread.
void fake_set_self_stack(uintptr_t lo, uintptr_t hi);
// Makes another thread nameable by zxs_prim_thread_from_native(), with its koid and liveness.
void fake_register_thread(pthread_t thread, uint64_t koid, bool alive);
void fake_set_thread_alive(uint64_t koid, bool alive);
// The koid zxs_prim_thread_self() reports for the calling thread.
uint64_t fake_self_koid(void);
// Task runtime: the values and ZXS_TASK_RUNTIME_* fields the backend reports for `koid` (a
// thread not given one reports zeros and only cpu_time). A thread is measured once
// zxs_prim_runtime_measure() saw it alive; an exited thread answers only if it was measured.
// The process sums the threads given a runtime, alive or measured.
void fake_set_runtime(uint64_t koid, const zx_info_task_runtime_t* runtime, uint32_t fields);
bool fake_runtime_measured(uint64_t koid);
// Failure injection for the next call of each.
void fake_fail_next_region_create(void);
void fake_fail_next_arm(void);

// Sources: is the thread's source armed, with which period; how many arms so far.
bool fake_source_armed(uint64_t koid, int64_t* period);
uint32_t fake_arm_count(void);
// Fires the armed source of `koid` as the backend's interrupt would: calls zxs_core_sample()
// with `regs` and the slot's current attach generation if (and only if) the source is armed.
// Returns whether it fired.
bool fake_fire(uint64_t koid, const zxs_regs_t* regs);
// A late signal: calls zxs_core_sample() for the slot with the generation it carried.
void fake_fire_slot(zxs_thread_slot_t* slot, uint32_t attach_gen, const zxs_regs_t* regs);
// What zxs_prim_get_caps() says (both true after fake_reset): whether the platform names the
// CPU a thread runs on, and whether it can sample threads other than the attaching one.
void fake_set_caps(bool cpu_attribution, bool other_threads);
// A sampler thread's tick (macOS): calls zxs_core_sample_suspended() for the armed source of
// `koid` with `regs` as read from the suspended thread, into `cpu` (or ZXS_CPU_UNKNOWN).
bool fake_fire_suspended(uint64_t koid, uint32_t cpu, const zxs_regs_t* regs);
// The slot most recently armed for `koid` (NULL if never).
zxs_thread_slot_t* fake_slot_of(uint64_t koid);
// Live fake regions (created and not yet freed).
uint32_t fake_live_regions(void);

// --- Loaded modules ----------------------------------------------------------------------------
// zxs_prim_modules_each() lists one module: the main executable, FAKE_MAIN_PATH, loaded at
// 0x555500000000 with a text segment [0, 0x2000) at file offset 0 and a data segment
// [0x3e10, 0x4110) at file offset 0x2e10; no build ID, no vDSO. A test that links the Linux
// backend's modules_linux.c as well gets the process's real modules instead.
#define FAKE_MAIN_PATH "/fake/program"

// --- The perfmon controller's backend ---------------------------------------------------------
//
// Events the fake collects: the misc unit's software events (counting); the arch and fixed
// units' hardware events only with a PMU (fake_perfmon_set_pmu), else NOT_SUPPORTED;
// FAKE_PERFMON_VALUE_EVENT, a value event (not counting); every other id is INVALID_ARGS.
// Nothing fires by itself: a test fires samples and sets the totals stop reports.
#define FAKE_PERFMON_VALUE_EVENT ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MODEL, 7)

// Back to defaults (also done by fake_reset): access allowed, no PMU, no last branch.
void fake_perfmon_reset(void);
// What zxs_prim_perfmon_check_access() answers.
void fake_perfmon_set_access(zx_status_t status);
// A PMU (hardware events collectable, pm_version 4, 3 fixed + 8 programmable counters of 48
// bits), and last-branch records.
void fake_perfmon_set_pmu(bool pmu, bool last_branch);
// The next start fails with `status` (nothing runs).
void fake_perfmon_fail_next_start(zx_status_t status);
// The run while running (NULL otherwise), and how many starts and stops the backend saw.
zxs_perfmon_run_t* fake_perfmon_run(void);
uint32_t fake_perfmon_starts(void);
uint32_t fake_perfmon_stops(void);
// The total of event `event` (an index of the run's events) on buffer `buffer` that the next
// stop reports; 0 unless set. Reset at each start.
void fake_perfmon_set_total(uint32_t buffer, uint32_t event, uint64_t total);
// Hands a sample to the core as the backend's collector would (only while running; returns
// whether it did).
bool fake_perfmon_fire(uint32_t buffer, const zxs_perfmon_sample_t* sample);
// The time the final records carry.
void fake_perfmon_set_stop_time(int64_t ticks);

#endif  // ZXSAMPLER_TESTS_FAKE_FAKE_PLATFORM_H_
