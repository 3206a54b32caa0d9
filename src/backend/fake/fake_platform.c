// Deterministic backend for the core's unit tests (see fake_platform.h).
#define _GNU_SOURCE
#include "fake_platform.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/object.h>

#include "perfmon_core.h"
#include "sampling.h"

#define FAKE_PAGE 4096u
#define FAKE_CPU_LIMIT 8u
#define FAKE_MAX_REGIONS 64u
#define FAKE_MAX_THREADS 64u

typedef struct {
  uint8_t* base;
  size_t size;
  bool destroyed;
  uint32_t maps;
} fake_region_t;

typedef struct {
  pthread_t thread;
  uint64_t koid;
  bool alive;
  bool named;  // registered through fake_register_thread
  zxs_thread_slot_t* slot;
  bool armed;
  int64_t period;
  bool has_runtime;  // fake_set_runtime() gave it one
  bool measured;     // zxs_prim_runtime_measure() was called while it lived
  zx_info_task_runtime_t runtime;
  uint32_t runtime_fields;
} fake_thread_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_online[FAKE_CPU_LIMIT];
static uint32_t g_online_count;
static _Atomic uint32_t g_cpu;
static _Atomic bool g_cpu_attribution = true;
static _Atomic bool g_other_threads = true;
static _Atomic uint64_t g_ticks;
static void (*g_relax_hook)(void*, uint64_t);
static void* g_relax_ctx;
static _Atomic uint64_t g_relax_calls;
static fake_region_t g_regions[FAKE_MAX_REGIONS];
static fake_thread_t g_threads[FAKE_MAX_THREADS];
static bool g_fail_region, g_fail_arm;
static uint32_t g_arms;
static _Atomic uint64_t g_next_koid = 1000;
static _Thread_local uint64_t t_koid;
static _Thread_local uintptr_t t_stack_lo, t_stack_hi;

void fake_reset(void) {
  pthread_mutex_lock(&g_lock);
  for (uint32_t i = 0; i < 4; i++) g_online[i] = i;
  g_online_count = 4;
  atomic_store(&g_cpu, 0);
  atomic_store(&g_cpu_attribution, true);
  atomic_store(&g_other_threads, true);
  atomic_store(&g_ticks, 1000);
  g_relax_hook = NULL;
  g_relax_ctx = NULL;
  atomic_store(&g_relax_calls, 0);
  g_fail_region = g_fail_arm = false;
  g_arms = 0;
  memset(g_threads, 0, sizeof(g_threads));
  pthread_mutex_unlock(&g_lock);
  fake_perfmon_reset();
}

void fake_set_online_cpus(const uint32_t* cpus, uint32_t count) {
  pthread_mutex_lock(&g_lock);
  g_online_count = count < FAKE_CPU_LIMIT ? count : FAKE_CPU_LIMIT;
  memcpy(g_online, cpus, g_online_count * sizeof(uint32_t));
  pthread_mutex_unlock(&g_lock);
}

void fake_set_current_cpu(uint32_t cpu) { atomic_store(&g_cpu, cpu); }
void fake_set_ticks(uint64_t ticks) { atomic_store(&g_ticks, ticks); }
void fake_set_relax_hook(void (*hook)(void*, uint64_t), void* ctx) {
  g_relax_hook = hook;
  g_relax_ctx = ctx;
}
void fake_set_self_stack(uintptr_t lo, uintptr_t hi) {
  t_stack_lo = lo;
  t_stack_hi = hi;
}
void fake_fail_next_region_create(void) { g_fail_region = true; }
void fake_fail_next_arm(void) { g_fail_arm = true; }
uint32_t fake_arm_count(void) { return g_arms; }

uint64_t fake_self_koid(void) {
  if (t_koid == 0) t_koid = atomic_fetch_add(&g_next_koid, 1);
  return t_koid;
}

// Finds or adds the record of a koid; g_lock held.
static fake_thread_t* thread_rec(uint64_t koid) {
  fake_thread_t* empty = NULL;
  for (uint32_t i = 0; i < FAKE_MAX_THREADS; i++) {
    if (g_threads[i].koid == koid) return &g_threads[i];
    if (g_threads[i].koid == 0 && empty == NULL) empty = &g_threads[i];
  }
  if (empty != NULL) {
    empty->koid = koid;
    empty->alive = true;
  }
  return empty;
}

void fake_register_thread(pthread_t thread, uint64_t koid, bool alive) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(koid);
  if (t != NULL) {
    t->thread = thread;
    t->alive = alive;
    t->named = true;
  }
  pthread_mutex_unlock(&g_lock);
}

void fake_set_thread_alive(uint64_t koid, bool alive) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(koid);
  if (t != NULL) t->alive = alive;
  pthread_mutex_unlock(&g_lock);
}

void fake_set_runtime(uint64_t koid, const zx_info_task_runtime_t* runtime, uint32_t fields) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(koid);
  if (t != NULL) {
    t->has_runtime = true;
    t->runtime = *runtime;
    t->runtime_fields = fields;
  }
  pthread_mutex_unlock(&g_lock);
}

bool fake_runtime_measured(uint64_t koid) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(koid);
  bool measured = t != NULL && t->measured;
  pthread_mutex_unlock(&g_lock);
  return measured;
}

bool fake_source_armed(uint64_t koid, int64_t* period) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(koid);
  bool armed = t != NULL && t->armed;
  if (armed && period != NULL) *period = t->period;
  pthread_mutex_unlock(&g_lock);
  return armed;
}

zxs_thread_slot_t* fake_slot_of(uint64_t koid) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(koid);
  zxs_thread_slot_t* slot = t != NULL ? t->slot : NULL;
  pthread_mutex_unlock(&g_lock);
  return slot;
}

bool fake_fire(uint64_t koid, const zxs_regs_t* regs) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(koid);
  zxs_thread_slot_t* slot = (t != NULL && t->armed) ? t->slot : NULL;
  pthread_mutex_unlock(&g_lock);
  if (slot == NULL) return false;
  zxs_core_sample(slot, atomic_load(&slot->attach_gen), regs);
  return true;
}

void fake_fire_slot(zxs_thread_slot_t* slot, uint32_t attach_gen, const zxs_regs_t* regs) {
  zxs_core_sample(slot, attach_gen, regs);
}

void fake_set_caps(bool cpu_attribution, bool other_threads) {
  atomic_store(&g_cpu_attribution, cpu_attribution);
  atomic_store(&g_other_threads, other_threads);
}

bool fake_fire_suspended(uint64_t koid, uint32_t cpu, const zxs_regs_t* regs) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(koid);
  zxs_thread_slot_t* slot = (t != NULL && t->armed) ? t->slot : NULL;
  pthread_mutex_unlock(&g_lock);
  if (slot == NULL) return false;
  zxs_core_sample_suspended(slot, atomic_load(&slot->attach_gen), cpu, regs);
  return true;
}

uint32_t fake_live_regions(void) {
  uint32_t n = 0;
  pthread_mutex_lock(&g_lock);
  for (uint32_t i = 0; i < FAKE_MAX_REGIONS; i++) n += g_regions[i].base != NULL;
  pthread_mutex_unlock(&g_lock);
  return n;
}

// --- platform.h -------------------------------------------------------------------------------

void zxs_prim_get_caps(zxs_prim_caps_t* caps) {
  caps->name = "fake";
  caps->page_size = FAKE_PAGE;
  caps->cpu_number_limit = FAKE_CPU_LIMIT;
  caps->has_cpu_attribution = atomic_load(&g_cpu_attribution);
  caps->can_interrupt_other_thread = atomic_load(&g_other_threads);
}

zx_status_t zxs_prim_online_cpus(uint32_t* cpus, uint32_t max, uint32_t* count) {
  pthread_mutex_lock(&g_lock);
  if (g_online_count == 0) {  // never reset: defaults
    pthread_mutex_unlock(&g_lock);
    fake_reset();
    pthread_mutex_lock(&g_lock);
  }
  zx_status_t status = ZX_OK;
  if (g_online_count > max) {
    status = ZX_ERR_BUFFER_TOO_SMALL;
  } else {
    memcpy(cpus, g_online, g_online_count * sizeof(uint32_t));
    *count = g_online_count;
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

uint32_t zxs_prim_current_cpu(void) { return atomic_load(&g_cpu); }
uint64_t zxs_prim_ticks(void) { return atomic_load(&g_ticks); }
uint64_t zxs_prim_ticks_per_second(void) { return 1000000000u; }

void zxs_prim_relax(void) {
  uint64_t call = atomic_fetch_add(&g_relax_calls, 1);
  if (g_relax_hook != NULL) {
    g_relax_hook(g_relax_ctx, call);
  } else {
    sched_yield();
  }
}

zx_status_t zxs_prim_region_create(size_t size, zxs_prim_region_t* out) {
  pthread_mutex_lock(&g_lock);
  zx_status_t status = ZX_ERR_NO_MEMORY;
  if (g_fail_region) {
    g_fail_region = false;
  } else {
    for (uint32_t i = 0; i < FAKE_MAX_REGIONS; i++) {
      if (g_regions[i].base != NULL) continue;
      uint8_t* base = aligned_alloc(FAKE_PAGE, size);
      if (base == NULL) break;
      memset(base, 0, size);
      g_regions[i] = (fake_region_t){.base = base, .size = size};
      *out = (zxs_prim_region_t){.base = base, .size = size, .native = (intptr_t)i};
      status = ZX_OK;
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

// Frees a region once it is destroyed and unmapped; g_lock held.
static void region_maybe_free(fake_region_t* r) {
  if (r->destroyed && r->maps == 0) {
    free(r->base);
    *r = (fake_region_t){0};
  }
}

void zxs_prim_region_destroy(zxs_prim_region_t* region) {
  pthread_mutex_lock(&g_lock);
  fake_region_t* r = &g_regions[region->native];
  r->destroyed = true;
  region_maybe_free(r);
  pthread_mutex_unlock(&g_lock);
  region->base = NULL;
}

zx_status_t zxs_prim_region_map_readonly(const zxs_prim_region_t* region, size_t offset, size_t len,
                                         void** out) {
  (void)len;
  pthread_mutex_lock(&g_lock);
  g_regions[region->native].maps++;
  *out = g_regions[region->native].base + offset;
  pthread_mutex_unlock(&g_lock);
  return ZX_OK;
}

zx_status_t zxs_prim_unmap(void* addr, size_t len) {
  (void)len;
  zx_status_t status = ZX_ERR_NOT_FOUND;
  pthread_mutex_lock(&g_lock);
  for (uint32_t i = 0; i < FAKE_MAX_REGIONS; i++) {
    fake_region_t* r = &g_regions[i];
    if (r->base != NULL && (uint8_t*)addr >= r->base && (uint8_t*)addr < r->base + r->size &&
        r->maps > 0) {
      r->maps--;
      region_maybe_free(r);
      status = ZX_OK;
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_koid_t zxs_prim_process_koid(void) { return 42; }

zx_status_t zxs_prim_thread_self(zxs_prim_thread_t* out) {
  *out = (zxs_prim_thread_t){
      .koid = fake_self_koid(), .stack_lo = t_stack_lo, .stack_hi = t_stack_hi, .native = 0};
  pthread_mutex_lock(&g_lock);
  thread_rec(out->koid);
  pthread_mutex_unlock(&g_lock);
  return ZX_OK;
}

zx_koid_t zxs_prim_current_thread_koid(void) { return fake_self_koid(); }

zx_status_t zxs_prim_thread_from_native(const void* native, zxs_prim_thread_t* out) {
  const pthread_t* thread = native;
  zx_status_t status = ZX_ERR_NOT_SUPPORTED;
  pthread_mutex_lock(&g_lock);
  for (uint32_t i = 0; i < FAKE_MAX_THREADS; i++) {
    fake_thread_t* t = &g_threads[i];
    if (t->named && pthread_equal(t->thread, *thread)) {
      status = t->alive ? ZX_OK : ZX_ERR_BAD_STATE;
      *out = (zxs_prim_thread_t){.koid = t->koid};
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

bool zxs_prim_thread_alive(const zxs_prim_thread_t* thread) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(thread->koid);
  bool alive = t == NULL || t->alive;
  pthread_mutex_unlock(&g_lock);
  return alive;
}

// Task runtime: what fake_set_runtime() said, for threads measured while they lived.
zx_status_t zxs_prim_runtime_measure(const zxs_prim_thread_t* thread) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(thread->koid);
  zx_status_t status = ZX_ERR_NO_RESOURCES;
  if (t != NULL && !t->alive) {
    status = ZX_ERR_BAD_STATE;
  } else if (t != NULL) {
    t->measured = true;
    status = ZX_OK;
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_status_t zxs_prim_runtime_thread(zx_koid_t koid, zxs_prim_runtime_t* out) {
  memset(out, 0, sizeof(*out));
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(koid);
  zx_status_t status = ZX_ERR_NOT_FOUND;
  if (t != NULL && (t->alive || t->measured)) {
    out->info = t->runtime;
    out->fields = t->has_runtime ? t->runtime_fields : ZXS_TASK_RUNTIME_CPU_TIME;
    status = ZX_OK;
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_status_t zxs_prim_runtime_process(zxs_prim_runtime_t* out) {
  memset(out, 0, sizeof(*out));
  out->fields = ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME |
                ZXS_TASK_RUNTIME_PAGE_FAULT_TIME | ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME;
  pthread_mutex_lock(&g_lock);
  for (uint32_t i = 0; i < FAKE_MAX_THREADS; i++) {
    fake_thread_t* t = &g_threads[i];
    if (t->koid == 0 || !(t->alive || t->measured)) continue;
    if (t->alive) t->measured = true;  // the query measures every live thread from now on
    if (!t->has_runtime) continue;     // nothing to add
    out->info.cpu_time += t->runtime.cpu_time;
    out->info.queue_time += t->runtime.queue_time;
    out->info.page_fault_time += t->runtime.page_fault_time;
    out->info.lock_contention_time += t->runtime.lock_contention_time;
    out->fields &= t->runtime_fields;
  }
  pthread_mutex_unlock(&g_lock);
  return ZX_OK;
}

// The recorder's per-period runtime: not simulated (the recorder runs over the real backend).
zx_status_t zxs_prim_runtime_keep_history(const zxs_prim_thread_t* thread) {
  (void)thread;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_prim_runtime_between(zx_koid_t koid, zx_time_t since, zx_time_t until,
                                     zxs_prim_runtime_t* out) {
  (void)koid;
  (void)since;
  (void)until;
  memset(out, 0, sizeof(*out));
  return ZX_ERR_NOT_FOUND;
}

zx_status_t zxs_prim_runtime_self_prepare(void) { return ZX_ERR_NOT_SUPPORTED; }

uint32_t zxs_prim_runtime_self_now(int64_t* cpu_time, int64_t* queue_time) {
  *cpu_time = 0;
  *queue_time = 0;
  return 0;
}

zx_status_t zxs_prim_notify_on_thread_exit(void) { return ZX_ERR_NOT_SUPPORTED; }

zx_status_t zxs_prim_watch_thread_exit(const zxs_prim_thread_t* thread) {
  (void)thread;
  return ZX_ERR_NOT_SUPPORTED;
}

void zxs_prim_unwatch_thread_exit(zx_koid_t koid) { (void)koid; }

void zxs_prim_thread_is_library(void) {}

zx_status_t zxs_prim_thread_name(zx_koid_t koid, char* buf, size_t size) {
  snprintf(buf, size, "fake-%llu", (unsigned long long)koid);
  return ZX_OK;
}

zx_status_t zxs_prim_process_name(char* buf, size_t size) {
  snprintf(buf, size, "fake-process");
  return ZX_OK;
}

zx_status_t zxs_prim_sampling_init(void) { return ZX_OK; }

zx_status_t zxs_prim_source_arm(zxs_thread_slot_t* slot, zx_duration_t period) {
  pthread_mutex_lock(&g_lock);
  zx_status_t status = ZX_OK;
  if (g_fail_arm) {
    g_fail_arm = false;
    status = ZX_ERR_NO_RESOURCES;
  } else {
    fake_thread_t* t = thread_rec(slot->thread.koid);
    t->slot = slot;
    t->armed = true;
    t->period = period;
    g_arms++;
    atomic_store(&slot->source_kind, ZXS_SOURCE_FAKE);
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

void zxs_prim_source_disarm(zxs_thread_slot_t* slot) {
  pthread_mutex_lock(&g_lock);
  fake_thread_t* t = thread_rec(slot->thread.koid);
  if (t != NULL) t->armed = false;
  pthread_mutex_unlock(&g_lock);
}

void zxs_prim_source_park(zxs_thread_slot_t* slot) { zxs_prim_source_disarm(slot); }

void zxs_prim_after_fork_child(void) {}

void zxs_prim_sampling_flush(void) {}

void zxs_prim_sampling_prepare(void) {}

void zxs_prim_sampling_started(zx_duration_t period) { (void)period; }

void zxs_prim_sampling_idle(void) {}

// --- Loaded modules ----------------------------------------------------------------------------

// One main executable of two segments, text and data, with no notes; no vDSO. Weak, so that a
// test which links the real capture too (modules_linux.c, to symbolize its own code) gets that.
__attribute__((weak)) zx_status_t zxs_prim_modules_each(zxs_prim_module_fn fn, void* ctx) {
  static const zxs_prim_phdr_t kPhdrs[2] = {
      {.type = ZXS_PRIM_PT_LOAD, .flags = 5, .vaddr = 0x0, .memsz = 0x2000, .align = 0x1000},
      {.type = ZXS_PRIM_PT_LOAD,
       .flags = 6,
       .vaddr = 0x3e10,
       .memsz = 0x300,
       .offset = 0x2e10,
       .align = 0x1000}};
  const zxs_prim_module_t main_module = {
      .name = "", .load_bias = 0x555500000000, .is_main = true, .phdrs = kPhdrs, .phdr_count = 2};
  return fn(&main_module, ctx);
}

__attribute__((weak)) zx_status_t zxs_prim_modules_main_path(char** path) {
  *path = strdup(FAKE_MAIN_PATH);
  return *path != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
}

// No mappings beyond the module list. Weak, as the module list above.
__attribute__((weak)) zx_status_t zxs_prim_exec_mappings_each(zxs_prim_mapping_fn fn, void* ctx) {
  (void)fn;
  (void)ctx;
  return ZX_ERR_NOT_SUPPORTED;
}

// --- perfmon ----------------------------------------------------------------------------------

#define FAKE_MAX_BUFFERS FAKE_CPU_LIMIT

static zx_status_t g_pm_access = ZX_OK;
static bool g_pm_pmu, g_pm_lbr;
static zx_status_t g_pm_fail_start = ZX_OK;
static zxs_perfmon_run_t* g_pm_run;
static uint32_t g_pm_starts, g_pm_stops;
static uint64_t g_pm_totals[FAKE_MAX_BUFFERS][ZXS_PERFMON_MAX_NUM_EVENTS];
static int64_t g_pm_stop_time = 2000;
static int g_pm_state;  // the backend's state: run->backend points here while running

void fake_perfmon_reset(void) {
  g_pm_access = ZX_OK;
  g_pm_pmu = g_pm_lbr = false;
  g_pm_fail_start = ZX_OK;
  g_pm_stop_time = 2000;
  g_pm_starts = g_pm_stops = 0;
}

void fake_perfmon_set_access(zx_status_t status) { g_pm_access = status; }
void fake_perfmon_set_pmu(bool pmu, bool last_branch) {
  g_pm_pmu = pmu;
  g_pm_lbr = last_branch;
}
void fake_perfmon_fail_next_start(zx_status_t status) { g_pm_fail_start = status; }
zxs_perfmon_run_t* fake_perfmon_run(void) { return g_pm_run; }
uint32_t fake_perfmon_starts(void) { return g_pm_starts; }
uint32_t fake_perfmon_stops(void) { return g_pm_stops; }
void fake_perfmon_set_stop_time(int64_t ticks) { g_pm_stop_time = ticks; }

void fake_perfmon_set_total(uint32_t buffer, uint32_t event, uint64_t total) {
  if (buffer < FAKE_MAX_BUFFERS && event < ZXS_PERFMON_MAX_NUM_EVENTS) {
    g_pm_totals[buffer][event] = total;
  }
}

bool fake_perfmon_fire(uint32_t buffer, const zxs_perfmon_sample_t* sample) {
  if (g_pm_run == NULL) return false;
  zxs_perfmon_core_sample(g_pm_run, buffer, sample);
  return true;
}

void zxs_prim_perfmon_properties(zxs_perfmon_properties_t* p) {
  if (g_pm_pmu) {
    p->pm_version = 4;
    p->max_num_fixed_events = 3;
    p->max_fixed_counter_width = 48;
    p->max_num_programmable_events = 8;
    p->max_programmable_counter_width = 48;
  }
  p->max_num_misc_events = 7;
  p->max_misc_counter_width = 64;
  p->flags = g_pm_pmu && g_pm_lbr ? ZXS_PERFMON_PROPERTY_FLAG_HAS_LAST_BRANCH : 0;
}

zx_status_t zxs_prim_perfmon_check_access(void) { return g_pm_access; }

zx_status_t zxs_prim_perfmon_event(uint16_t id, bool* counting) {
  const unsigned unit = ZXS_PERFMON_EVENT_ID_UNIT(id), event = ZXS_PERFMON_EVENT_ID_EVENT(id);
  *counting = true;
  if (id == FAKE_PERFMON_VALUE_EVENT) {
    *counting = false;
    return ZX_OK;
  }
  if (unit == ZXS_PERFMON_UNIT_MISC && event >= ZXS_PERFMON_MISC_SOFTWARE_BASE &&
      event <= ZXS_PERFMON_MISC_SOFTWARE_BASE + 6) {
    return ZX_OK;
  }
  if ((unit == ZXS_PERFMON_UNIT_ARCH && event <= 6) ||
      (unit == ZXS_PERFMON_UNIT_FIXED && event >= 1 && event <= 3)) {
    return g_pm_pmu ? ZX_OK : ZX_ERR_NOT_SUPPORTED;
  }
  return ZX_ERR_INVALID_ARGS;
}

zx_status_t zxs_prim_perfmon_start(zxs_perfmon_run_t* run) {
  if (g_pm_fail_start != ZX_OK) {
    zx_status_t status = g_pm_fail_start;
    g_pm_fail_start = ZX_OK;
    return status;
  }
  memset(g_pm_totals, 0, sizeof(g_pm_totals));
  run->backend = &g_pm_state;
  g_pm_run = run;
  g_pm_starts++;
  return ZX_OK;
}

void zxs_prim_perfmon_stop(zxs_perfmon_run_t* run) {
  for (uint32_t b = 0; b < run->buffer_count && b < FAKE_MAX_BUFFERS; b++) {
    zxs_perfmon_core_final(run, b, g_pm_stop_time, g_pm_totals[b]);
  }
  run->backend = NULL;
  g_pm_run = NULL;
  g_pm_stops++;
}

void zxs_prim_perfmon_after_fork_child(zxs_perfmon_run_t* run) {
  run->backend = NULL;
  g_pm_run = NULL;
}
