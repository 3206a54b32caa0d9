// The perfmon controller: fuchsia.perfmon.cpu/Controller's protocol state machine, its buffers,
// and the records of a run (perfmon.h, perfmon_core.h).
//
// One controller per process (the cpu-trace device takes one client). Every call runs under
// g_lock; the backend's collector writes records through zxs_perfmon_core_sample() without it,
// and stop waits for it. Lock order: g_lock, then the session lock, then the handle table's.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/object.h>
#include <zxsampler/perfmon.h>

#include "fork.h"
#include "handle_table.h"
#include "objects.h"
#include "perfmon_core.h"
#include "perfmon_records.h"
#include "platform.h"
#include "vmo.h"

// A channel's default rights: what the client end of the FIDL protocol would have.
#define CONTROLLER_RIGHTS                                                                      \
  (ZX_RIGHT_DUPLICATE | ZX_RIGHT_TRANSFER | ZX_RIGHT_READ | ZX_RIGHT_WRITE | ZX_RIGHT_SIGNAL | \
   ZX_RIGHT_SIGNAL_PEER | ZX_RIGHT_WAIT | ZX_RIGHT_INSPECT)
// A FIDL call writes a request and reads the reply.
#define CALL_RIGHTS (ZX_RIGHT_READ | ZX_RIGHT_WRITE)
// Allocation sizes are in 4 KiB pages, whatever the page size.
#define PERFMON_PAGE 4096u

typedef struct controller {
  zxs_object_t base;  // ZX_OBJ_TYPE_CHANNEL
  bool orphaned;      // inherited across fork: answers BAD_STATE
  bool closed;        // its last handle is gone
  bool initialized;
  bool configured;
  bool running;
  zxs_perfmon_allocation_t allocation;
  zxs_perfmon_config_t config;  // as staged
  zxs_perfmon_run_t run;
  zx_handle_t* buffer_handles;  // the controller's own (pinned) handles to the buffer VMOs
} controller_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static controller_t* g_open;  // from open until its last handle is closed

// --- Helpers (g_lock held) ----------------------------------------------------------------------

static void stop_locked(controller_t* c) {
  if (!c->running) return;
  zxs_prim_perfmon_stop(&c->run);
  c->running = false;
}

static void close_buffers(controller_t* c, uint32_t count) {
  for (uint32_t i = 0; i < count; i++) {
    if (c->buffer_handles[i] != ZX_HANDLE_INVALID) {
      zxs_handle_unpin_and_close(c->buffer_handles[i]);
    }
  }
  free(c->buffer_handles);
  free(c->run.buffers);
  c->buffer_handles = NULL;
  c->run.buffers = NULL;
  c->run.buffer_count = 0;
}

static void terminate_locked(controller_t* c) {
  stop_locked(c);
  if (c->initialized) close_buffers(c, c->run.buffer_count);
  c->initialized = false;
  c->configured = false;
  memset(&c->allocation, 0, sizeof(c->allocation));
  memset(&c->config, 0, sizeof(c->config));
}

// Looks the handle up and takes g_lock; *out is the controller. The caller calls unlock().
static zx_status_t lock_controller(zx_handle_t handle, controller_t** out) {
  zxs_object_t* obj;
  zx_status_t status = zxs_handle_get(handle, ZX_OBJ_TYPE_CHANNEL, CALL_RIGHTS, &obj, NULL);
  if (status != ZX_OK) return status;
  pthread_mutex_lock(&g_lock);
  controller_t* c = (controller_t*)obj;
  if (c->orphaned || c->closed) {
    pthread_mutex_unlock(&g_lock);
    zxs_object_release(obj);
    return ZX_ERR_BAD_STATE;
  }
  *out = c;
  return ZX_OK;
}

static void unlock(controller_t* c) {
  pthread_mutex_unlock(&g_lock);
  zxs_object_release(&c->base);
}

// --- Object -------------------------------------------------------------------------------------

// The last handle closed: as FIDL's "also done when the connection is closed".
static void controller_on_last_handle(zxs_object_t* obj) {
  controller_t* c = (controller_t*)obj;
  pthread_mutex_lock(&g_lock);
  terminate_locked(c);  // an orphan is not running: this only frees what the child holds
  c->closed = true;
  if (g_open == c) g_open = NULL;
  pthread_mutex_unlock(&g_lock);
}

static void controller_destroy(zxs_object_t* obj) { free(obj); }

static const zxs_object_ops_t g_controller_ops = {.on_last_handle = controller_on_last_handle,
                                                  .destroy = controller_destroy};

// --- Fork (fork.h: ZXS_FORK_STAGE_PERFMON) ------------------------------------------------------

static void perfmon_fork_prepare(void) { pthread_mutex_lock(&g_lock); }

static void perfmon_fork_parent(void) { pthread_mutex_unlock(&g_lock); }

// The child has a copy of the controller but not the collecting (the backend's thread stayed in
// the parent, its descriptors are shared with the parent's): it forgets the run, answers
// BAD_STATE from now on, and frees its memory when closed. The child may open its own.
static void perfmon_fork_child(void) {
  controller_t* c = g_open;
  g_open = NULL;
  if (c != NULL) {
    c->orphaned = true;
    if (c->running) zxs_prim_perfmon_after_fork_child(&c->run);
    c->running = false;
  }
  pthread_mutex_unlock(&g_lock);
}

// --- Calls --------------------------------------------------------------------------------------

zx_status_t zxs_perfmon_open(zx_handle_t debug_resource, zx_handle_t* out) {
  if (out != NULL) *out = ZX_HANDLE_INVALID;
  zx_status_t status = zxs_check_debug_resource(debug_resource);
  if (status != ZX_OK) return status;
  if (out == NULL) return ZX_ERR_INVALID_ARGS;
  static const zxs_fork_steps_t kSteps = {
      .prepare = perfmon_fork_prepare, .parent = perfmon_fork_parent, .child = perfmon_fork_child};
  zxs_fork_register(ZXS_FORK_STAGE_PERFMON, &kSteps);
  zxs_core_register_atfork();  // the handle table's lock, which open and close take
  pthread_mutex_lock(&g_lock);
  if (g_open != NULL) {
    status = ZX_ERR_ALREADY_BOUND;
  } else {
    status = zxs_prim_perfmon_check_access();
  }
  controller_t* c = NULL;
  if (status == ZX_OK) {
    c = calloc(1, sizeof(*c));
    if (c == NULL) status = ZX_ERR_NO_MEMORY;
  }
  if (status == ZX_OK) {
    zxs_object_init(&c->base, ZX_OBJ_TYPE_CHANNEL, zxs_koid_next(), &g_controller_ops);
    c->run.timebase = -1;
    status = zxs_handle_make(&c->base, CONTROLLER_RIGHTS, out);
    if (status == ZX_OK) {
      g_open = c;
    } else {
      free(c);
    }
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_status_t zxs_perfmon_get_properties(zx_handle_t controller,
                                       zxs_perfmon_properties_t* properties) {
  controller_t* c;
  zx_status_t status = lock_controller(controller, &c);
  if (status != ZX_OK) return status;
  if (properties == NULL) {
    status = ZX_ERR_INVALID_ARGS;
  } else {
    memset(properties, 0, sizeof(*properties));
    zxs_prim_perfmon_properties(properties);
    properties->api_version = ZXS_PERFMON_API_VERSION;
    properties->max_num_events = ZXS_PERFMON_MAX_NUM_EVENTS;
  }
  unlock(c);
  return status;
}

static zx_status_t initialize_locked(controller_t* c, const zxs_perfmon_allocation_t* a) {
  if (c->initialized) return ZX_ERR_BAD_STATE;
  zxs_prim_caps_t caps;
  zxs_prim_get_caps(&caps);
  uint32_t* cpus = calloc(caps.cpu_number_limit, sizeof(uint32_t));
  uint32_t count = 0;
  if (cpus == NULL || zxs_prim_online_cpus(cpus, caps.cpu_number_limit, &count) != ZX_OK ||
      count == 0) {
    free(cpus);
    return ZX_ERR_NO_MEMORY;
  }
  if (a->num_buffers != count || a->buffer_size_in_pages == 0 ||
      a->buffer_size_in_pages > ZXS_PERFMON_MAX_BUFFER_PAGES) {
    free(cpus);
    return ZX_ERR_INVALID_ARGS;
  }
  c->buffer_handles = calloc(count, sizeof(zx_handle_t));
  c->run.buffers = calloc(count, sizeof(zxs_perfmon_run_buffer_t));
  zx_status_t status =
      c->buffer_handles != NULL && c->run.buffers != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
  uint32_t made = 0;
  for (; status == ZX_OK && made < count; made++) {
    zxs_vmo_obj_t* vmo;
    status = zxs_vmo_create((size_t)a->buffer_size_in_pages * PERFMON_PAGE, ZXS_VMO_READONLY_RIGHTS,
                            &c->buffer_handles[made], &vmo);
    if (status != ZX_OK) break;
    // Pinned: only terminate closes it, so the buffer outlives any stray close while we write.
    zxs_handle_pin(c->buffer_handles[made]);
    c->run.buffers[made] = (zxs_perfmon_run_buffer_t){
        .cpu = cpus[made], .base = vmo->region.base, .size = vmo->region.size};
  }
  free(cpus);
  if (status != ZX_OK) {
    if (c->buffer_handles != NULL) {
      close_buffers(c, made);
    } else {
      free(c->run.buffers);
      c->run.buffers = NULL;
    }
    return status;
  }
  c->run.buffer_count = count;
  c->allocation = *a;
  c->initialized = true;
  return ZX_OK;
}

zx_status_t zxs_perfmon_initialize(zx_handle_t controller,
                                   const zxs_perfmon_allocation_t* allocation) {
  controller_t* c;
  zx_status_t status = lock_controller(controller, &c);
  if (status != ZX_OK) return status;
  status = allocation == NULL ? ZX_ERR_INVALID_ARGS : initialize_locked(c, allocation);
  unlock(c);
  return status;
}

zx_status_t zxs_perfmon_terminate(zx_handle_t controller) {
  controller_t* c;
  zx_status_t status = lock_controller(controller, &c);
  if (status != ZX_OK) return status;
  terminate_locked(c);
  unlock(c);
  return ZX_OK;
}

zx_status_t zxs_perfmon_get_allocation(zx_handle_t controller,
                                       zxs_perfmon_allocation_t* allocation) {
  controller_t* c;
  zx_status_t status = lock_controller(controller, &c);
  if (status != ZX_OK) return status;
  if (allocation == NULL) {
    status = ZX_ERR_INVALID_ARGS;
  } else if (!c->initialized) {
    status = ZX_ERR_BAD_STATE;
  } else {
    *allocation = c->allocation;
  }
  unlock(c);
  return status;
}

// The FIDL documentation's rules for a config, then the host's (see stage_config in perfmon.h).
static zx_status_t check_config(const zxs_perfmon_config_t* config, zxs_perfmon_run_t* out) {
  const zxs_perfmon_event_config_t* ev = config->events;
  uint32_t n = 0;
  while (n < ZXS_PERFMON_MAX_NUM_EVENTS && ev[n].event != ZXS_PERFMON_EVENT_ID_NONE) n++;
  for (uint32_t i = n; i < ZXS_PERFMON_MAX_NUM_EVENTS; i++) {
    if (ev[i].event != ZXS_PERFMON_EVENT_ID_NONE || ev[i].rate != 0 || ev[i].flags != 0) {
      return ZX_ERR_INVALID_ARGS;  // a hole
    }
  }
  if (n == 0) return ZX_ERR_INVALID_ARGS;
  int32_t timebase = -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint32_t flags = ev[i].flags;
    if ((flags & ~ZXS_PERFMON_EVENT_FLAG_MASK) != 0) return ZX_ERR_INVALID_ARGS;
    if ((flags & ZXS_PERFMON_EVENT_FLAG_IS_TIMEBASE) != 0) {
      if (timebase >= 0) return ZX_ERR_INVALID_ARGS;
      timebase = (int32_t)i;
    }
    const uint32_t needs_rate = ZXS_PERFMON_EVENT_FLAG_IS_TIMEBASE |
                                ZXS_PERFMON_EVENT_FLAG_COLLECT_PC |
                                ZXS_PERFMON_EVENT_FLAG_COLLECT_LAST_BRANCH;
    if ((flags & needs_rate) != 0 && ev[i].rate == 0) return ZX_ERR_INVALID_ARGS;
  }
  zxs_perfmon_properties_t props;
  memset(&props, 0, sizeof(props));
  zxs_prim_perfmon_properties(&props);
  for (uint32_t i = 0; i < n; i++) {
    const uint16_t id = ev[i].event;
    const unsigned unit = ZXS_PERFMON_EVENT_ID_UNIT(id);
    if (unit < ZXS_PERFMON_UNIT_ARCH || unit > ZXS_PERFMON_UNIT_MISC) return ZX_ERR_INVALID_ARGS;
    // Each event once, whatever its flags or rate: the records name an event by its id only, so
    // one event in two modes (user, kernel) or at two rates could not be told apart.
    for (uint32_t j = 0; j < i; j++) {
      if (ev[j].event == id) return ZX_ERR_INVALID_ARGS;
    }
    bool counting = false;
    zx_status_t status = zxs_prim_perfmon_event(id, &counting);
    if (status != ZX_OK) return status;
    if (ev[i].rate != 0 && !counting) return ZX_ERR_INVALID_ARGS;
    if ((ev[i].flags & ZXS_PERFMON_EVENT_FLAG_COLLECT_LAST_BRANCH) != 0 &&
        (props.flags & ZXS_PERFMON_PROPERTY_FLAG_HAS_LAST_BRANCH) == 0) {
      return ZX_ERR_NOT_SUPPORTED;
    }
    out->events[i] = (zxs_perfmon_run_event_t){.id = id,
                                               .rate = ev[i].rate,
                                               .flags = ev[i].flags,
                                               .counting = counting,
                                               .uses_timebase = timebase >= 0 && ev[i].rate == 0};
  }
  out->event_count = n;
  out->timebase = timebase;
  return ZX_OK;
}

zx_status_t zxs_perfmon_stage_config(zx_handle_t controller, const zxs_perfmon_config_t* config) {
  controller_t* c;
  zx_status_t status = lock_controller(controller, &c);
  if (status != ZX_OK) return status;
  if (config == NULL) {
    status = ZX_ERR_INVALID_ARGS;
  } else if (!c->initialized || c->running) {
    status = ZX_ERR_BAD_STATE;
  } else {
    // A failed stage leaves no config behind (Fuchsia's driver does the same).
    c->configured = false;
    zxs_perfmon_run_t checked;
    memset(&checked, 0, sizeof(checked));
    status = check_config(config, &checked);
    if (status == ZX_OK) {
      memcpy(c->run.events, checked.events, sizeof(checked.events));
      c->run.event_count = checked.event_count;
      c->run.timebase = checked.timebase;
      c->config = *config;
      c->configured = true;
    }
  }
  unlock(c);
  return status;
}

zx_status_t zxs_perfmon_get_config(zx_handle_t controller, zxs_perfmon_config_t* config) {
  controller_t* c;
  zx_status_t status = lock_controller(controller, &c);
  if (status != ZX_OK) return status;
  if (config == NULL) {
    status = ZX_ERR_INVALID_ARGS;
  } else if (!c->initialized || !c->configured || c->running) {
    status = ZX_ERR_BAD_STATE;
  } else {
    *config = c->config;
  }
  unlock(c);
  return status;
}

zx_status_t zxs_perfmon_get_buffer_handle(zx_handle_t controller, uint32_t descriptor,
                                          zx_handle_t* vmo) {
  if (vmo != NULL) *vmo = ZX_HANDLE_INVALID;
  controller_t* c;
  zx_status_t status = lock_controller(controller, &c);
  if (status != ZX_OK) return status;
  if (vmo == NULL) {
    status = ZX_ERR_INVALID_ARGS;
  } else if (!c->initialized) {
    status = ZX_ERR_BAD_STATE;
  } else if (descriptor >= c->run.buffer_count) {
    status = ZX_ERR_INVALID_ARGS;
  } else {
    status = zxs_handle_duplicate(c->buffer_handles[descriptor], ZX_RIGHT_SAME_RIGHTS, vmo);
  }
  unlock(c);
  return status;
}

// --- Records ------------------------------------------------------------------------------------

static void write_header(zxs_perfmon_run_buffer_t* b) {
  const zxs_perfmon_buffer_header_t header = {
      .version = ZXS_PERFMON_BUFFER_VERSION,
      .arch = zxs_perfmon_host_arch(),
      .flags = b->flags,
      .ticks_per_second = (zx_ticks_t)zxs_prim_ticks_per_second(),
      .capture_end = b->end};
  // Records first, then the capture_end that covers them.
  __atomic_thread_fence(__ATOMIC_RELEASE);
  zxs_perfmon_encode_header(b->base, &header);
}

static void reset_buffer(zxs_perfmon_run_buffer_t* b) {
  b->end = ZXS_PERFMON_BUFFER_HEADER_SIZE;
  b->flags = 0;
  memset(b->reported, 0, sizeof(b->reported));
  write_header(b);
}

// Appends a group of records whole, or drops it and sets FULL.
static bool append(zxs_perfmon_run_buffer_t* b, const uint8_t* bytes, size_t n) {
  if (n > b->size - b->end) {
    b->flags |= ZXS_PERFMON_BUFFER_FLAG_FULL;
    write_header(b);
    return false;
  }
  memcpy(b->base + b->end, bytes, n);
  b->end += n;
  write_header(b);
  return true;
}

// TIME + PC + a COUNT per event + LAST_BRANCH.
#define MAX_SAMPLE_BYTES                                        \
  (ZXS_PERFMON_TIME_RECORD_SIZE + ZXS_PERFMON_PC_RECORD_SIZE +  \
   ZXS_PERFMON_MAX_NUM_EVENTS * ZXS_PERFMON_COUNT_RECORD_SIZE + \
   ZXS_PERFMON_LAST_BRANCH_RECORD_SIZE(ZXS_PERFMON_MAX_NUM_LAST_BRANCH))

void zxs_perfmon_core_sample(zxs_perfmon_run_t* run, uint32_t buffer,
                             const zxs_perfmon_sample_t* s) {
  if (buffer >= run->buffer_count || s->event >= run->event_count) return;
  zxs_perfmon_run_buffer_t* b = &run->buffers[buffer];
  const zxs_perfmon_run_event_t* ev = &run->events[s->event];
  if (ev->rate == 0) return;
  uint8_t bytes[MAX_SAMPLE_BYTES];
  uint64_t reported[ZXS_PERFMON_MAX_NUM_EVENTS];
  memcpy(reported, b->reported, sizeof(reported));
  size_t n = zxs_perfmon_encode_time(bytes, ZXS_PERFMON_EVENT_ID_NONE, s->time);
  if ((ev->flags & ZXS_PERFMON_EVENT_FLAG_COLLECT_PC) != 0) {
    n += zxs_perfmon_encode_pc(bytes + n, ev->id, s->aspace, s->pc);
  } else {
    n += zxs_perfmon_encode_tick(bytes + n, ev->id);
  }
  reported[s->event] += ev->rate;
  if ((int32_t)s->event == run->timebase && s->values != NULL) {
    for (uint32_t j = 0; j < run->event_count; j++) {
      const zxs_perfmon_run_event_t* other = &run->events[j];
      if (!other->uses_timebase) continue;
      if (other->counting) {
        const uint64_t v = s->values[j];
        n += zxs_perfmon_encode_count(bytes + n, other->id, v > reported[j] ? v - reported[j] : 0);
        if (v > reported[j]) reported[j] = v;
      } else {
        n += zxs_perfmon_encode_value(bytes + n, other->id, s->values[j]);
      }
    }
  }
  if ((ev->flags & ZXS_PERFMON_EVENT_FLAG_COLLECT_LAST_BRANCH) != 0 && s->num_branches > 0 &&
      s->branches != NULL) {
    n += zxs_perfmon_encode_last_branch(bytes + n, ev->id, s->aspace, s->branches, s->num_branches);
  }
  // A dropped group counted nothing: its occurrences go to the final COUNT.
  if (append(b, bytes, n)) memcpy(b->reported, reported, sizeof(reported));
}

void zxs_perfmon_core_final(zxs_perfmon_run_t* run, uint32_t buffer, zx_ticks_t time,
                            const uint64_t* totals) {
  if (buffer >= run->buffer_count) return;
  zxs_perfmon_run_buffer_t* b = &run->buffers[buffer];
  uint8_t bytes[ZXS_PERFMON_TIME_RECORD_SIZE +
                ZXS_PERFMON_MAX_NUM_EVENTS * ZXS_PERFMON_COUNT_RECORD_SIZE];
  size_t n = zxs_perfmon_encode_time(bytes, ZXS_PERFMON_EVENT_ID_NONE, time);
  uint64_t reported[ZXS_PERFMON_MAX_NUM_EVENTS];
  memcpy(reported, b->reported, sizeof(reported));
  for (uint32_t i = 0; i < run->event_count; i++) {
    const zxs_perfmon_run_event_t* ev = &run->events[i];
    if (ev->counting) {
      const uint64_t v = totals[i];
      n += zxs_perfmon_encode_count(bytes + n, ev->id, v > reported[i] ? v - reported[i] : 0);
      if (v > reported[i]) reported[i] = v;
    } else {
      n += zxs_perfmon_encode_value(bytes + n, ev->id, totals[i]);
    }
  }
  if (append(b, bytes, n)) memcpy(b->reported, reported, sizeof(reported));
}

void zxs_perfmon_core_lost(zxs_perfmon_run_t* run, uint32_t buffer) {
  if (buffer >= run->buffer_count) return;
  run->buffers[buffer].flags |= ZXS_PERFMON_BUFFER_FLAG_FULL;
  write_header(&run->buffers[buffer]);
}

// --- Start and stop -----------------------------------------------------------------------------

zx_status_t zxs_perfmon_start(zx_handle_t controller) {
  controller_t* c;
  zx_status_t status = lock_controller(controller, &c);
  if (status != ZX_OK) return status;
  if (!c->initialized || !c->configured || c->running) {
    status = ZX_ERR_BAD_STATE;
  } else {
    for (uint32_t i = 0; i < c->run.buffer_count; i++) reset_buffer(&c->run.buffers[i]);
    c->run.backend = NULL;
    status = zxs_prim_perfmon_start(&c->run);
    c->running = status == ZX_OK;
  }
  unlock(c);
  return status;
}

zx_status_t zxs_perfmon_stop(zx_handle_t controller) {
  controller_t* c;
  zx_status_t status = lock_controller(controller, &c);
  if (status != ZX_OK) return status;
  stop_locked(c);
  unlock(c);
  return ZX_OK;
}
