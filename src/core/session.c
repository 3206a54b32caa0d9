// The sampler session: create, attach, start, stop, destroy on last close; the IOBuffer's
// info and mappings.
//
// One session at a time. Every state change happens under g_lock; the sampling path takes no
// lock and relies on the per-CPU protocol instead (percpu_state.h).
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/object.h>
#include <zxsampler/sampler.h>

#include "config.h"
#include "fork.h"
#include "handle_table.h"
#include "objects.h"
#include "percpu_ring.h"
#include "percpu_state.h"
#include "platform.h"
#include "ring_session.h"
#include "task_runtime.h"
#include "thread_table.h"
#include "vmo.h"

// The kernel's sampler IOBuffer: an IOBuffer's default rights, plus APPLY_PROFILE (it is the
// session), minus WRITE (only the kernel writes it).
#define IOB_RIGHTS ((ZX_DEFAULT_IOB_RIGHTS | ZX_RIGHT_APPLY_PROFILE) & ~ZX_RIGHT_WRITE)

typedef enum { SESSION_CONFIGURED, SESSION_RUNNING, SESSION_DESTROYED } session_state_t;

typedef struct zxs_session {
  zxs_object_t base;  // the IOBuffer
  uint32_t gen;
  session_state_t state;
  zx_sampler_config_t config;
  size_t ring_slots;  // per region; 0: not a ring session (ring_session.h)
  uint32_t region_count;
  uint32_t* cpus;  // CPU number of each region
  zxs_prim_region_t* regions;
  zx_koid_t* region_koids;
  // Counters of slots already detached.
  uint64_t walks_truncated, throttled, overruns, source_failures;
  zxs_sample_source_t last_source;
} zxs_session_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static zxs_session_t* g_live;  // from create until destroy
static uint32_t g_last_gen;

// --- Helpers (g_lock held) --------------------------------------------------------------------

static void fold_slot_counters(zxs_session_t* s, zxs_thread_slot_t* slot) {
  s->walks_truncated += atomic_load(&slot->walks_truncated);
  s->throttled += atomic_load(&slot->throttled);
  s->overruns += atomic_load(&slot->overruns);
  s->source_failures += atomic_load(&slot->source_failures);
}

static void detach_slot(zxs_session_t* s, zxs_thread_slot_t* slot) {
  zxs_prim_unwatch_thread_exit(slot->thread.koid);
  zxs_prim_source_disarm(slot);
  fold_slot_counters(s, slot);
  zxs_slot_free(slot);
}

// Detaches attached threads that have exited (for backends, or threads, without an exit hook).
static void reap_exited(zxs_session_t* s) {
  for (zxs_thread_slot_t* slot = zxs_slot_next(s->gen, NULL); slot != NULL;
       slot = zxs_slot_next(s->gen, slot)) {
    if (!zxs_prim_thread_alive(&slot->thread)) detach_slot(s, slot);
  }
}

static zx_status_t arm_slot(zxs_session_t* s, zxs_thread_slot_t* slot) {
  zx_status_t status = zxs_prim_source_arm(slot, atomic_load(&slot->period));
  if (status == ZX_OK) {
    s->last_source = (zxs_sample_source_t)atomic_load(&slot->source_kind);
  } else {
    atomic_fetch_add(&slot->source_failures, 1);
  }
  return status;
}

// At stop: the sources are parked, for the next start to arm again cheaply.
static void disarm_all(void* ctx) {
  zxs_session_t* s = ctx;
  for (zxs_thread_slot_t* slot = zxs_slot_next(s->gen, NULL); slot != NULL;
       slot = zxs_slot_next(s->gen, slot)) {
    zxs_prim_source_park(slot);
  }
}

static void stop_locked(zxs_session_t* s) {
  uint32_t count;
  zxs_percpu_t* states = zxs_percpu_states(&count);
  zxs_prim_sampling_flush();  // samples the kernel still buffers were taken before stop
  zxs_percpu_shutdown(states, count, disarm_all, s);
  s->state = SESSION_CONFIGURED;
}

static void free_session_memory(zxs_session_t* s) {
  free(s->cpus);
  free(s->regions);
  free(s->region_koids);
  free(s);
}

// Last handle closed: stop, detach everything, release the regions.
static void session_on_last_handle(zxs_object_t* obj) {
  zxs_session_t* s = (zxs_session_t*)obj;
  pthread_mutex_lock(&g_lock);
  if (s->state == SESSION_DESTROYED) {  // torn down already (an orphan after fork, say)
    pthread_mutex_unlock(&g_lock);
    return;
  }
  if (s->state == SESSION_RUNNING) stop_locked(s);
  for (zxs_thread_slot_t* slot = zxs_slot_next(s->gen, NULL); slot != NULL;
       slot = zxs_slot_next(s->gen, slot)) {
    detach_slot(s, slot);
  }
  uint32_t count;
  zxs_percpu_t* states = zxs_percpu_states(&count);
  for (uint32_t cpu = 0; cpu < count; cpu++) zxs_percpu_release(&states[cpu]);
  for (uint32_t i = 0; i < s->region_count; i++) zxs_prim_region_destroy(&s->regions[i]);
  s->state = SESSION_DESTROYED;
  if (g_live == s) g_live = NULL;
  zxs_prim_sampling_idle();
  pthread_mutex_unlock(&g_lock);
}

static void session_destroy(zxs_object_t* obj) { free_session_memory((zxs_session_t*)obj); }

static const zxs_object_ops_t g_session_ops = {.on_last_handle = session_on_last_handle,
                                               .destroy = session_destroy};

// Looks up a sampler IOBuffer handle with `rights`; ZX_ERR_BAD_STATE if it is not the live
// session's. On success g_lock is held and the caller must call unlock_session().
static zx_status_t lock_session(zx_handle_t iob, zx_rights_t rights, zxs_session_t** out) {
  zxs_object_t* obj;
  zx_status_t status = zxs_handle_get(iob, ZX_OBJ_TYPE_IOB, rights, &obj, NULL);
  if (status != ZX_OK) return status;
  pthread_mutex_lock(&g_lock);
  zxs_session_t* s = (zxs_session_t*)obj;
  if (obj->ops != &g_session_ops || g_live != s || s->state == SESSION_DESTROYED) {
    pthread_mutex_unlock(&g_lock);
    zxs_object_release(obj);
    return ZX_ERR_BAD_STATE;
  }
  *out = s;
  return ZX_OK;
}

static void unlock_session(zxs_session_t* s) {
  pthread_mutex_unlock(&g_lock);
  zxs_object_release(&s->base);
}

// --- Fork -------------------------------------------------------------------------------------
//
// The child of a fork is a new process with one thread and a copy of the parent's memory: the
// session, its sources and its regions (shared memory) are the parent's. The child forgets
// them: the session becomes an orphan whose handles answer BAD_STATE and whose last close only
// frees memory, the per-CPU states and slots are reset (a writer that was in flight on another
// parent thread will never end here), and the backend drops its inherited descriptors without
// touching the parent's events. The child can then create its own session. The perfmon
// controller forgets its run the same way (perfmon_controller.c). The order of the locks is
// fork.h's stages.

static void session_fork_prepare(void) { pthread_mutex_lock(&g_lock); }

static void session_fork_parent(void) { pthread_mutex_unlock(&g_lock); }

static void session_fork_child(void) {
  zxs_session_t* s = g_live;
  g_live = NULL;
  if (s != NULL) {
    s->state = SESSION_DESTROYED;
    // The child's own mappings and descriptors of the shared regions; the parent keeps its.
    for (uint32_t i = 0; i < s->region_count; i++) zxs_prim_region_destroy(&s->regions[i]);
  }
  uint32_t count;
  zxs_percpu_t* states = zxs_percpu_states(&count);
  for (uint32_t cpu = 0; states != NULL && cpu < count; cpu++) {
    atomic_store(&states[cpu].state, 0);
    zxs_percpu_setup(&states[cpu], NULL, 0, 0);
  }
  for (uint32_t i = 0; i < ZXS_MAX_THREADS; i++) {
    zxs_thread_slot_t* slot = zxs_core_slot(i);
    if (atomic_load(&slot->state) != ZXS_SLOT_FREE) zxs_slot_free(slot);
  }
  zxs_prim_after_fork_child();
  zxs_objects_after_fork_child();  // closes a handle: the table's step has unlocked it
  pthread_mutex_unlock(&g_lock);
}

void zxs_core_register_atfork(void) {
  static const zxs_fork_steps_t kSession = {
      .prepare = session_fork_prepare, .parent = session_fork_parent, .child = session_fork_child};
  // Held across fork so the child never inherits the table locked mid-update.
  static const zxs_fork_steps_t kHandles = {.prepare = zxs_handle_table_lock,
                                            .parent = zxs_handle_table_unlock,
                                            .child = zxs_handle_table_unlock};
  zxs_fork_register(ZXS_FORK_STAGE_SESSION, &kSession);
  zxs_fork_register(ZXS_FORK_STAGE_HANDLES, &kHandles);
}

// --- Create -----------------------------------------------------------------------------------

// Allocates the session and its regions (rings of `ring_slots` slots when not 0); g_lock held.
static zx_status_t new_session(const zx_sampler_config_t* config, size_t ring_slots,
                               zxs_session_t** out) {
  zxs_prim_caps_t caps;
  zxs_prim_get_caps(&caps);
  uint32_t count;
  zxs_percpu_t* states = zxs_percpu_states(&count);
  zxs_session_t* s = calloc(1, sizeof(*s));
  if (states == NULL || s == NULL) {
    free(s);
    return ZX_ERR_NO_MEMORY;
  }
  s->cpus = calloc(caps.cpu_number_limit, sizeof(uint32_t));
  if (s->cpus == NULL) {
    free_session_memory(s);
    return ZX_ERR_NO_MEMORY;
  }
  zx_status_t status = zxs_prim_online_cpus(s->cpus, caps.cpu_number_limit, &s->region_count);
  if (status != ZX_OK || s->region_count == 0) {
    // The platform broke its own promise (cpu_number_limit, at least one CPU).
    free_session_memory(s);
    return ZX_ERR_INTERNAL;
  }
  s->regions = calloc(s->region_count, sizeof(*s->regions));
  s->region_koids = calloc(s->region_count, sizeof(*s->region_koids));
  if (s->regions == NULL || s->region_koids == NULL) {
    free_session_memory(s);
    return ZX_ERR_NO_MEMORY;
  }
  const size_t size = zxs_round_up_to_page(
      ring_slots != 0 ? ring_slots * ZXS_RING_SLOT_BYTES : config->buffer_size, caps.page_size);
  for (uint32_t i = 0; i < s->region_count; i++) {
    status = zxs_prim_region_create(size, &s->regions[i]);
    if (status != ZX_OK) {  // the backend's status: NO_MEMORY, NO_RESOURCES (descriptors)...
      for (uint32_t j = 0; j < i; j++) zxs_prim_region_destroy(&s->regions[j]);
      free_session_memory(s);
      return status;
    }
    s->region_koids[i] = zxs_koid_next();
  }
  s->gen = ++g_last_gen;
  if (s->gen == 0) s->gen = ++g_last_gen;  // 0 means "no session" in the per-CPU states
  s->config = *config;
  s->ring_slots = ring_slots;
  s->state = SESSION_CONFIGURED;
  zxs_object_init(&s->base, ZX_OBJ_TYPE_IOB, zxs_koid_next(), &g_session_ops);
  // CPUs that were offline get no region but take part all the same, so a sample taken on one
  // that comes online later is counted as dropped rather than lost silently.
  for (uint32_t cpu = 0; cpu < count; cpu++) zxs_percpu_setup(&states[cpu], NULL, 0, s->gen);
  for (uint32_t i = 0; i < s->region_count; i++) {
    if (ring_slots != 0) {
      zxs_percpu_setup_ring(&states[s->cpus[i]], s->regions[i].base, ring_slots, s->gen);
    } else {
      // The kernel writes up to buffer_size, not to the page-rounded end of the region.
      zxs_percpu_setup(&states[s->cpus[i]], s->regions[i].base, config->buffer_size, s->gen);
    }
  }
  *out = s;
  return ZX_OK;
}

// zxs_sampler_create() after its checks, for either discipline.
static zx_status_t create_session(const zx_sampler_config_t* config, size_t ring_slots,
                                  zx_handle_t* iob_out) {
  pthread_mutex_lock(&g_lock);
  if (g_live != NULL) {
    pthread_mutex_unlock(&g_lock);
    return ZX_ERR_ALREADY_EXISTS;
  }
  zxs_session_t* s;
  zx_status_t status = new_session(config, ring_slots, &s);
  if (status == ZX_OK) {
    g_live = s;
    zxs_prim_sampling_prepare();  // what would otherwise make the first start slow
  }
  pthread_mutex_unlock(&g_lock);
  if (status != ZX_OK) return status;

  status = zxs_handle_make(&s->base, IOB_RIGHTS, iob_out);
  if (status != ZX_OK) {
    // No handle was made, so no close will tear it down and free it: do both here.
    session_on_last_handle(&s->base);
    session_destroy(&s->base);
  }
  return status;
}

zx_status_t zxs_sampler_create(zx_handle_t rsrc, uint64_t options,
                               const zx_sampler_config_t* config, size_t config_size,
                               zx_handle_t* iob_out) {
  if (iob_out != NULL) *iob_out = ZX_HANDLE_INVALID;
  zx_status_t status = zxs_sampler_check_enabled();
  if (status != ZX_OK) return status;
  zxs_core_register_atfork();
  status = zxs_check_debug_resource(rsrc);
  if (status != ZX_OK) return status;
  if (options != 0) return ZX_ERR_INVALID_ARGS;
  status = zxs_config_validate(config, config_size);
  if (status != ZX_OK) return status;
  if (iob_out == NULL) return ZX_ERR_INVALID_ARGS;
  return create_session(config, 0, iob_out);
}

zx_status_t zxs_sampler_create_ring(zx_handle_t rsrc, const zx_sampler_config_t* config,
                                    size_t slots_per_cpu, zx_handle_t* iob_out) {
  if (iob_out != NULL) *iob_out = ZX_HANDLE_INVALID;
  zx_status_t status = zxs_sampler_check_enabled();
  if (status != ZX_OK) return status;
  zxs_core_register_atfork();
  status = zxs_check_debug_resource(rsrc);
  if (status != ZX_OK) return status;
  status = zxs_config_validate(config, sizeof(*config));
  if (status != ZX_OK) return status;
  if (iob_out == NULL || slots_per_cpu == 0 ||
      slots_per_cpu > ZX_SAMPLER_MAX_BUFFER_SIZE / ZXS_RING_SLOT_BYTES) {
    return ZX_ERR_INVALID_ARGS;
  }
  return create_session(config, slots_per_cpu, iob_out);
}

zx_status_t zxs_sampler_ring_copy(zx_handle_t iob, zx_time_t since, zx_time_t until,
                                  zxs_fxt_buf_t* out) {
  zxs_session_t* s;
  zx_status_t status = lock_session(iob, ZX_RIGHT_READ, &s);
  if (status != ZX_OK) return status;
  if (s->ring_slots == 0) status = ZX_ERR_BAD_STATE;
  for (uint32_t i = 0; status == ZX_OK && i < s->region_count; i++) {
    // The regions live until the last handle closes, which waits for this lock.
    status = zxs_percpu_ring_copy(s->regions[i].base, s->ring_slots, (uint64_t)since,
                                  (uint64_t)until, out);
  }
  unlock_session(s);
  return status;
}

// --- Attach, start, stop ----------------------------------------------------------------------

zx_status_t zxs_sampler_attach(zx_handle_t iob, zx_handle_t thread) {
  zx_status_t status = zxs_sampler_check_enabled();
  if (status != ZX_OK) return status;
  zxs_object_t* tobj;
  status = zxs_handle_get(thread, ZX_OBJ_TYPE_THREAD, ZX_RIGHT_READ, &tobj, NULL);
  if (status != ZX_OK) return status;
  const zxs_prim_thread_t info = ((zxs_thread_obj_t*)tobj)->thread;
  zxs_object_release(tobj);

  zxs_session_t* s;
  status = lock_session(iob, ZX_RIGHT_APPLY_PROFILE, &s);
  if (status != ZX_OK) return status;
  reap_exited(s);
  zxs_prim_caps_t caps;
  zxs_prim_get_caps(&caps);
  zxs_prim_thread_t self;
  const bool other = zxs_prim_thread_self(&self) != ZX_OK || self.koid != info.koid;
  if (!zxs_prim_thread_alive(&info)) {
    status = ZX_ERR_BAD_STATE;
  } else if (other && !caps.can_interrupt_other_thread) {
    status = ZX_ERR_NOT_SUPPORTED;  // this platform samples only the thread that attaches
  } else if (zxs_slot_find(info.koid, s->gen) == NULL) {
    zxs_thread_slot_t* slot =
        zxs_slot_attach(&info, zxs_prim_process_koid(), s->gen, s->config.period);
    if (slot != NULL && other) {
      // Nothing runs on another thread when it exits: the backend watches it (where it can;
      // otherwise it is reaped at the next call).
      (void)zxs_prim_watch_thread_exit(&info);
    }
    if (slot == NULL) {
      status = ZX_ERR_NO_RESOURCES;
    } else if (s->state == SESSION_RUNNING) {
      status = zxs_prim_sampling_init();
      if (status == ZX_OK) status = arm_slot(s, slot);
      if (status != ZX_OK) {
        // Nothing changes on failure: the thread is not left attached. A thread that exited
        // since the liveness check is BAD_STATE, as the contract says, whichever step of the
        // arm its exit made fail (a source can fail on a dying thread with another errno).
        detach_slot(s, slot);
        if (status != ZX_ERR_BAD_STATE) {
          status = zxs_prim_thread_alive(&info) ? ZX_ERR_NO_RESOURCES : ZX_ERR_BAD_STATE;
        }
      }
    }
  }
  unlock_session(s);
  return status;
}

zx_status_t zxs_sampler_start(zx_handle_t iob) {
  zx_status_t status = zxs_sampler_check_enabled();
  if (status != ZX_OK) return status;
  zxs_session_t* s;
  status = lock_session(iob, ZX_RIGHT_APPLY_PROFILE, &s);
  if (status != ZX_OK) return status;
  if (s->state == SESSION_RUNNING) {
    unlock_session(s);
    return ZX_ERR_BAD_STATE;
  }
  status = zxs_prim_sampling_init();
  if (status != ZX_OK) {
    unlock_session(s);
    return status;
  }
  reap_exited(s);
  uint32_t count;
  zxs_percpu_t* states = zxs_percpu_states(&count);
  // Writes first, then sources, so the first interrupt finds its CPU ready. A CPU whose region
  // filled takes records again where its data ends, as the kernel's start re-enables it.
  for (uint32_t cpu = 0; cpu < count; cpu++) {
    zxs_percpu_reopen(&states[cpu]);
    zxs_percpu_enable_writes(&states[cpu]);
  }
  for (zxs_thread_slot_t* slot = zxs_slot_next(s->gen, NULL); slot != NULL;
       slot = zxs_slot_next(s->gen, slot)) {
    // A thread whose source cannot be armed stays attached (it is retried at the next start);
    // the failure is counted in the stats.
    (void)arm_slot(s, slot);
  }
  zxs_prim_sampling_started(s->config.period);
  s->state = SESSION_RUNNING;
  unlock_session(s);
  return ZX_OK;
}

zx_status_t zxs_sampler_stop(zx_handle_t iob) {
  zx_status_t status = zxs_sampler_check_enabled();
  if (status != ZX_OK) return status;
  zxs_session_t* s;
  status = lock_session(iob, ZX_RIGHT_APPLY_PROFILE, &s);
  if (status != ZX_OK) return status;
  if (s->state != SESSION_RUNNING) {
    status = ZX_ERR_BAD_STATE;
  } else {
    stop_locked(s);
    reap_exited(s);
  }
  unlock_session(s);
  return status;
}

void zxs_core_thread_exited(zx_koid_t koid) {
  pthread_mutex_lock(&g_lock);
  zxs_session_t* s = g_live;
  zxs_thread_slot_t* slot = s != NULL ? zxs_slot_find(koid, s->gen) : NULL;
  if (slot != NULL) detach_slot(s, slot);
  pthread_mutex_unlock(&g_lock);
  zxs_thread_self_forget(koid);
}

zx_status_t zxs_sampler_get_stats(zx_handle_t iob, zxs_sampler_stats_t* stats) {
  if (stats == NULL) return ZX_ERR_INVALID_ARGS;
  zxs_session_t* s;
  zx_status_t status = lock_session(iob, ZX_RIGHT_INSPECT, &s);
  if (status != ZX_OK) return status;
  reap_exited(s);
  zxs_prim_caps_t caps;
  zxs_prim_get_caps(&caps);
  memset(stats, 0, sizeof(*stats));
  stats->backend = caps.name;
  stats->unwinder = "fp";  // the core's walk (frame_walk.c) is the only one in process
  stats->requested_period = s->config.period;
  stats->effective_period = s->config.period;
  stats->walks_truncated = s->walks_truncated;
  stats->throttled = s->throttled;
  stats->overruns = s->overruns;
  stats->source_failures = s->source_failures;
  stats->source = s->last_source;
  for (zxs_thread_slot_t* slot = zxs_slot_next(s->gen, NULL); slot != NULL;
       slot = zxs_slot_next(s->gen, slot)) {
    stats->attached_threads++;
    stats->walks_truncated += atomic_load(&slot->walks_truncated);
    stats->throttled += atomic_load(&slot->throttled);
    stats->overruns += atomic_load(&slot->overruns);
    stats->source_failures += atomic_load(&slot->source_failures);
    int64_t period = atomic_load(&slot->period);
    if (period > stats->effective_period) stats->effective_period = period;
  }
  uint32_t count;
  zxs_percpu_t* states = zxs_percpu_states(&count);
  for (uint32_t cpu = 0; cpu < count; cpu++) {
    const zxs_percpu_t* st = &states[cpu];
    stats->samples_written += atomic_load(&st->written);
    stats->dropped_full += atomic_load(&st->dropped_full);
    stats->dropped_other += atomic_load(&st->dropped_other);
  }
  unlock_session(s);
  return ZX_OK;
}

// --- The IOBuffer's info and mappings ----------------------------------------------------------

zx_status_t zxs_session_get_info(zx_handle_t handle, zx_object_info_topic_t topic, void* buffer,
                                 size_t buffer_size, size_t* actual, size_t* avail) {
  zxs_session_t* s;
  zx_status_t status = lock_session(handle, ZX_RIGHT_INSPECT, &s);
  if (status != ZX_OK) return status;
  if (topic == ZX_INFO_IOB) {
    if (buffer_size < sizeof(zx_info_iob_t)) {
      status = ZX_ERR_BUFFER_TOO_SMALL;
    } else {
      zx_info_iob_t info = {.options = 0, .region_count = s->region_count};
      memcpy(buffer, &info, sizeof(info));
      zxs_info_count(actual, 1);
    }
    zxs_info_count(avail, 1);
  } else {
    size_t fit = buffer_size / sizeof(zx_iob_region_info_t);
    size_t n = fit < s->region_count ? fit : s->region_count;
    for (size_t i = 0; i < n; i++) {
      zx_iob_region_info_t info;
      memset(&info, 0, sizeof(info));
      info.region.type = ZX_IOB_REGION_TYPE_PRIVATE;
      // As the kernel configures the sampler's regions: endpoint 0 (its own, writing) maps them
      // read-write, endpoint 1 (the handle a program holds) read-only.
      info.region.access = ZX_IOB_ACCESS_EP0_CAN_MAP_READ | ZX_IOB_ACCESS_EP0_CAN_MAP_WRITE |
                           ZX_IOB_ACCESS_EP1_CAN_MAP_READ;
      info.region.size = s->regions[i].size;
      info.region.discipline.type = ZX_IOB_DISCIPLINE_TYPE_NONE;
      info.koid = s->region_koids[i];
      memcpy((zx_iob_region_info_t*)buffer + i, &info, sizeof(info));
    }
    zxs_info_count(actual, n);
    zxs_info_count(avail, s->region_count);
  }
  unlock_session(s);
  return status;
}

zx_status_t zxs_vmar_map_iob(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                             zx_handle_t iob, uint32_t region_index, uint64_t region_offset,
                             size_t region_len, zx_vaddr_t* mapped_addr) {
  zxs_object_t* vobj;
  zx_status_t status = zxs_handle_get(vmar, ZX_OBJ_TYPE_VMAR, ZX_RIGHT_NONE, &vobj, NULL);
  if (status != ZX_OK) return status;
  zxs_object_release(vobj);
  zxs_session_t* s;
  status = lock_session(iob, ZX_RIGHT_MAP | ZX_RIGHT_READ, &s);
  if (status != ZX_OK) return status;
  if (s->ring_slots != 0) {  // slots, not a stream of records: read with zxs_sampler_ring_copy
    unlock_session(s);
    return ZX_ERR_NOT_SUPPORTED;
  }
  // No such region: an empty one, so the option checks still come first (then OUT_OF_RANGE).
  static const zxs_prim_region_t no_region = {.base = NULL, .size = 0, .native = -1};
  status = zxs_map_region(region_index < s->region_count ? &s->regions[region_index] : &no_region,
                          options, vmar_offset, region_offset, region_len, mapped_addr);
  unlock_session(s);
  return status;
}
