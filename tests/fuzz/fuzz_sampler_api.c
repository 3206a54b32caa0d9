// Fuzzes the handle/sampler API over the fake backend: the input is a little program of calls
// (create, attach, start, stop, duplicate, close, get_info, map, unmap, get_stats, ...) plus
// backend events (a source firing, a late signal, CPU changes, thread exits, injected failures).
//
// A model runs next to the library and predicts every status in the contract's order of checks
// (docs/sampler-contract.md, sampler.h, object.h), the rights of every handle, which threads are
// attached and armed, and the exact bytes of every region: each sample is walked again by a
// reference frame walker over a fake stack (guard pages on both sides, since the real walker is
// not instrumented by ASan) and compared with what the library wrote. Every input ends by closing
// all its handles and unmaps, after which no region may be left (LSan sees any other leak).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zxsampler/zxsampler.h>

#include "fake_platform.h"
#include "fuzz_api_ops.h"
#include "sampling.h"

#define CHECK(cond)                                                                       \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "%s:%d: fuzz invariant violated: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                            \
    }                                                                                     \
  } while (0)

// A status against the model's prediction (and against the call's documented list).
#define EXPECT_STATUS(what, got, want) expect_status(__LINE__, what, got, want)

static void expect_status(int line, const char* what, zx_status_t got, zx_status_t want) {
  if (got != want) {
    fprintf(stderr, "fuzz_sampler_api.c:%d: %s returned %s (%d), the model expected %s (%d)\n",
            line, what, zxs_status_string(got), got, zxs_status_string(want), want);
    abort();
  }
}

static void expect_among(const char* what, zx_status_t got, const zx_status_t* allowed, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (got == allowed[i]) return;
  }
  fprintf(stderr, "%s returned %s (%d), not a status its contract lists\n", what,
          zxs_status_string(got), got);
  abort();
}
#define EXPECT_AMONG(what, got, ...)                                           \
  do {                                                                         \
    static const zx_status_t allowed_[] = {__VA_ARGS__};                       \
    expect_among(what, got, allowed_, sizeof(allowed_) / sizeof(allowed_[0])); \
  } while (0)

// --- Limits of one input ------------------------------------------------------------------------

#define MAX_OPS 256
#define MAX_HANDLES 64
#define MAX_OBJECTS 64
#define MAX_SESSIONS 12
#define MAX_CPUS 8  // the fake backend's CPU number limit
#define MAX_REGIONS (MAX_SESSIONS * MAX_CPUS)
#define MAX_MAPPINGS 24
#define MAX_LATE 8
#define PAGE 4096u
// Regions are really allocated and zero-filled: valid configs above this are made to fail with
// an injected allocation failure instead (the contract's NO_MEMORY path).
#define MAX_REGION_BYTES ((size_t)64 * 1024)
#define STACK_BYTES ((size_t)FUZZ_API_STACK_BYTES)
#define OTHER_KOID ((zx_koid_t)7000)
#define PROCESS_KOID ((zx_koid_t)42)  // the fake backend's

// --- Input stream -------------------------------------------------------------------------------

typedef struct stream {
  const uint8_t* p;
  size_t n;
} stream_t;

static uint8_t take_u8(stream_t* s) {
  if (s->n == 0) return 0;
  s->n--;
  return *s->p++;
}
static uint64_t take_bytes_le(stream_t* s, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)take_u8(s) << (8 * i);
  return v;
}
static uint16_t take_u16(stream_t* s) { return (uint16_t)take_bytes_le(s, 2); }
static uint32_t take_u32(stream_t* s) { return (uint32_t)take_bytes_le(s, 4); }
static uint64_t take_u64(stream_t* s) { return take_bytes_le(s, 8); }

// Mostly the well-formed value (so deep paths are reachable), sometimes an edge case.
static uint64_t pick(stream_t* s, uint64_t good, const uint64_t* edges, size_t n_edges) {
  uint8_t b = take_u8(s);
  if (b < 0xc0) return good;
  b -= 0xc0;
  if (b < n_edges) return edges[b];
  return take_u64(s);
}
#define PICK(s, good, ...)                       \
  pick(s, good, (const uint64_t[]){__VA_ARGS__}, \
       sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

// --- The model ----------------------------------------------------------------------------------

typedef enum { OBJ_RESOURCE, OBJ_IOB, OBJ_THREAD, OBJ_PROCESS, OBJ_VMAR } obj_kind_t;
typedef enum { T_SELF, T_OTHER, T_COUNT } thread_id_t;

typedef struct mobj {
  obj_kind_t kind;
  zx_obj_type_t type;
  int session;  // OBJ_IOB
  int thread;   // OBJ_THREAD
  uint32_t handles;
} mobj_t;

typedef struct mhandle {
  zx_handle_t value;
  int obj;
  zx_rights_t rights;
  bool live;
  bool pinned;
} mhandle_t;

typedef struct msession {
  bool live;
  bool running;
  bool armed_ever;  // the stats' source is FAKE once an arm succeeded
  uint32_t region_count;
  uint32_t cpus[MAX_CPUS];
  int regions[MAX_CPUS];
  size_t region_size;
  zx_duration_t period;
  uint64_t walks_truncated;
  uint64_t source_failures;
  uint64_t dropped_other;  // samples on a CPU that was offline at create (no region)
} msession_t;

typedef struct mregion {
  uint8_t* image;  // what the region must hold
  size_t size;     // page-rounded
  size_t limit;    // the config's buffer_size: records end at or before it (the kernel's limit)
  size_t used;
  bool full;  // a record did not fit: no writes on this CPU until the next start
  uint64_t written;
  uint64_t dropped_full;
  uint64_t records;
  bool destroyed;  // its session is gone
  bool freed;      // destroyed and unmapped: the fake backend freed it
  uint32_t maps;
  uintptr_t base;  // known once mapped
} mregion_t;

typedef struct mmapping {
  int region;
  uintptr_t addr;
  size_t offset;
  size_t len;
} mmapping_t;

typedef struct mthread {
  zx_koid_t koid;
  bool alive;
  int session;  // attached to, or -1
  uint32_t slot;
  uint32_t attach_id;  // which attachment (for late signals)
  bool armed;
  uintptr_t stack_lo;
  uintptr_t stack_hi;
  zx_info_task_runtime_t runtime;  // what the fake reports for it (fake_set_runtime)
  bool runtime_measured;           // a runtime query began measuring it while it lived
} mthread_t;

typedef struct late_signal {
  int thread;
  zxs_thread_slot_t* slot;
  uint32_t gen;
  uint32_t attach_id;
} late_signal_t;

typedef struct model {
  mobj_t objs[MAX_OBJECTS];
  int n_objs;
  mhandle_t handles[MAX_HANDLES];
  int n_handles;
  msession_t sessions[MAX_SESSIONS];
  int n_sessions;
  int live_session;  // -1 if none
  mregion_t regions[MAX_REGIONS];
  int n_regions;
  mmapping_t maps[MAX_MAPPINGS];
  int n_maps;
  mthread_t threads[T_COUNT];
  late_signal_t late[MAX_LATE];
  int n_late;
  uint32_t next_attach_id;
  bool enabled;
  bool fail_region_pending;
  bool fail_arm_pending;
  uint32_t online[MAX_CPUS];
  uint32_t online_count;
  uint32_t cpu;
  uint64_t ticks;
  zx_handle_t vmar;
  zx_handle_t self_handle;
} model_t;

static model_t g_m;
static uint8_t* g_stack;  // STACK_BYTES between two PROT_NONE pages

// --- Model helpers ------------------------------------------------------------------------------

static mhandle_t* find_live(zx_handle_t value) {
  if (value == ZX_HANDLE_INVALID) return NULL;
  for (int i = 0; i < g_m.n_handles; i++) {
    if (g_m.handles[i].live && g_m.handles[i].value == value) return &g_m.handles[i];
  }
  return NULL;
}

// Fuchsia's lookup order: BAD_HANDLE, then WRONG_TYPE (unless any type), then ACCESS_DENIED.
static zx_status_t expect_handle(zx_handle_t value, zx_obj_type_t type, zx_rights_t rights,
                                 mhandle_t** out) {
  mhandle_t* h = find_live(value);
  if (out != NULL) *out = h;
  if (h == NULL) return ZX_ERR_BAD_HANDLE;
  if (type != ZX_OBJ_TYPE_NONE && g_m.objs[h->obj].type != type) return ZX_ERR_WRONG_TYPE;
  if ((h->rights & rights) != rights) return ZX_ERR_ACCESS_DENIED;
  return ZX_OK;
}

static zx_info_handle_basic_t basic_info(zx_handle_t value) {
  zx_info_handle_basic_t info;
  memset(&info, 0, sizeof(info));
  size_t actual = 0;
  size_t avail = 0;
  EXPECT_STATUS(
      "get_info(HANDLE_BASIC)",
      zxs_object_get_info(value, ZX_INFO_HANDLE_BASIC, &info, sizeof(info), &actual, &avail),
      ZX_OK);
  CHECK(actual == 1 && avail == 1);
  return info;
}

static bool can_add_handle(void) { return g_m.n_handles < MAX_HANDLES; }

// Tracks a handle the library just returned; its rights are read back, and must be what the
// model says when it knows (`rights` != 0).
static mhandle_t* add_handle(zx_handle_t value, int obj, zx_rights_t rights, bool pinned) {
  CHECK(value != ZX_HANDLE_INVALID);
  CHECK(find_live(value) == NULL);  // handle values are unique among live handles
  CHECK(g_m.n_handles < MAX_HANDLES);
  const zx_info_handle_basic_t info = basic_info(value);
  CHECK(info.type == g_m.objs[obj].type);
  if (rights != 0) CHECK(info.rights == rights);
  mhandle_t* h = &g_m.handles[g_m.n_handles++];
  *h = (mhandle_t){
      .value = value, .obj = obj, .rights = info.rights, .live = true, .pinned = pinned};
  g_m.objs[obj].handles++;
  return h;
}

static int add_obj(obj_kind_t kind, zx_obj_type_t type, int session, int thread) {
  CHECK(g_m.n_objs < MAX_OBJECTS);
  g_m.objs[g_m.n_objs] = (mobj_t){.kind = kind, .type = type, .session = session, .thread = thread};
  return g_m.n_objs++;
}

// Handle operands: any value the input has seen (live, closed or constant), 0, or raw bits.
static zx_handle_t take_handle(stream_t* s) {
  uint8_t b = take_u8(s);
  if (b < 0xe0 && g_m.n_handles > 0) return g_m.handles[b % g_m.n_handles].value;
  if (b < 0xf0) return ZX_HANDLE_INVALID;
  return take_u32(s);
}

static mregion_t* region_of(int session, uint32_t cpu) {
  msession_t* ss = &g_m.sessions[session];
  for (uint32_t i = 0; i < ss->region_count; i++) {
    if (ss->cpus[i] == cpu) return &g_m.regions[ss->regions[i]];
  }
  return NULL;
}

static void region_maybe_free(mregion_t* r) {
  if (r->destroyed && r->maps == 0 && !r->freed) {
    r->freed = true;
    free(r->image);
    r->image = NULL;
  }
}

static void detach(int t) {
  mthread_t* th = &g_m.threads[t];
  th->session = -1;
  th->armed = false;
}

static bool attached_to(int t, int session) {
  return session >= 0 && g_m.threads[t].session == session;
}

// Attached threads of a session in slot order (the order start arms them in).
static int threads_in_slot_order(int session, int* out) {
  int n = 0;
  for (int t = 0; t < T_COUNT; t++) {
    if (attached_to(t, session)) out[n++] = t;
  }
  if (n == 2 && g_m.threads[out[0]].slot > g_m.threads[out[1]].slot) {
    int tmp = out[0];
    out[0] = out[1];
    out[1] = tmp;
  }
  return n;
}

// Detaches attached threads that have exited (attach, start and stop do this).
static void reap(int session) {
  for (int t = 0; t < T_COUNT; t++) {
    if (attached_to(t, session) && !g_m.threads[t].alive) detach(t);
  }
}

// An arm as the fake backend does it: the next one fails if a failure was injected.
static bool model_arm(int session) {
  if (g_m.fail_arm_pending) {
    g_m.fail_arm_pending = false;
    g_m.sessions[session].source_failures++;
    return false;
  }
  g_m.sessions[session].armed_ever = true;
  return true;
}

static void destroy_session(int session) {
  msession_t* ss = &g_m.sessions[session];
  ss->running = false;
  for (int t = 0; t < T_COUNT; t++) {
    if (attached_to(t, session)) detach(t);
  }
  for (uint32_t i = 0; i < ss->region_count; i++) {
    mregion_t* r = &g_m.regions[ss->regions[i]];
    r->destroyed = true;
    region_maybe_free(r);
  }
  ss->live = false;
  if (g_m.live_session == session) g_m.live_session = -1;
}

// --- Reference frame walk (frame_walk.h's rules, restated) --------------------------------------

static size_t ref_walk(const zxs_regs_t* regs, uintptr_t stack_lo, uintptr_t stack_hi,
                       uint64_t* pcs, bool* truncated) {
  *truncated = false;
  pcs[0] = regs->pc;
  size_t n = 1;
  const uintptr_t lo = regs->sp > stack_lo ? regs->sp : stack_lo;
  if (stack_hi < 16 || lo > stack_hi - 16) return n;
  const uintptr_t last = stack_hi - 16;
  uintptr_t fp = regs->fp;
  uintptr_t prev = 0;
  while (fp >= lo && fp <= last && (fp & 7u) == 0 && fp > prev) {
    // Bounds are always inside g_stack, so the model may read here.
    CHECK(fp >= (uintptr_t)g_stack && fp + 16 <= (uintptr_t)g_stack + STACK_BYTES);
    uint64_t next_fp;
    uint64_t ret;
    memcpy(&next_fp, (const void*)fp, 8);
    memcpy(&ret, (const void*)(fp + 8), 8);
    if (ret == 0) break;
    if (n == ZX_SAMPLER_MAX_FRAMES) {
      *truncated = true;
      break;
    }
    pcs[n++] = ret;
    prev = fp;
    fp = (uintptr_t)next_fp;
  }
  return n;
}

// What one sample of thread `t` in the live session writes, given that the source fired.
static void model_sample(int t, const zxs_regs_t* regs) {
  const int session = g_m.threads[t].session;
  CHECK(session >= 0 && g_m.sessions[session].running);
  if (g_m.cpu >= MAX_CPUS) return;  // no per-CPU state: ignored
  mregion_t* r = region_of(session, g_m.cpu);
  if (r == NULL) {
    // A CPU offline at create takes part in the protocol without a region: counted, not lost.
    g_m.sessions[session].dropped_other++;
    return;
  }
  uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
  bool truncated;
  const size_t n =
      ref_walk(regs, g_m.threads[t].stack_lo, g_m.threads[t].stack_hi, pcs, &truncated);
  const size_t bytes = ZXS_FXT_SAMPLE_WORDS(n) * 8;
  if (r->full || bytes > r->limit - r->used) {
    r->full = true;  // writes on this CPU stop until the next start
    r->dropped_full++;
    return;
  }
  uint64_t words[ZXS_FXT_SAMPLE_WORDS(ZX_SAMPLER_MAX_FRAMES)];
  words[0] = 0xFu | ((uint64_t)ZXS_FXT_SAMPLE_WORDS(n) << 4);
  words[1] = 0;
  words[2] = g_m.ticks;
  words[3] = PROCESS_KOID;
  words[4] = g_m.threads[t].koid;
  words[5] = 8u * n;
  memcpy(&words[6], pcs, n * 8);
  for (size_t i = 0; i < ZXS_FXT_SAMPLE_WORDS(n); i++) {
    for (int b = 0; b < 8; b++)
      r->image[r->used + i * 8 + (size_t)b] = (uint8_t)(words[i] >> (8 * b));
  }
  r->used += bytes;
  r->written++;
  r->records++;
  if (truncated) g_m.sessions[session].walks_truncated++;
}

// --- Checks of region contents ------------------------------------------------------------------

static void check_mapping(const mmapping_t* mp) {
  const mregion_t* r = &g_m.regions[mp->region];
  CHECK(!r->freed);
  CHECK(memcmp((const void*)mp->addr, r->image + mp->offset, mp->len) == 0);
  if (mp->offset != 0 || mp->len != r->size) return;
  // A whole region parses as the sampler's records up to a zero word or its end.
  zxs_fxt_region_iter_t it;
  zxs_fxt_record_t rec;
  zxs_fxt_region_iter_init(&it, (const void*)mp->addr, mp->len);
  uint64_t records = 0;
  while (zxs_fxt_region_next(&it, &rec)) {
    CHECK(rec.kind == ZXS_FXT_RECORD_LARGE_BLOB && rec.num_args == 0);
    CHECK(rec.blob.thread.index == 0 && rec.blob.thread.process_koid == PROCESS_KOID);
    CHECK(rec.blob.payload.size >= 8 && rec.blob.payload.size <= 8 * ZX_SAMPLER_MAX_FRAMES);
    records++;
  }
  CHECK(it.status == ZX_OK && it.offset == r->used && records == r->records);
}

// --- Operations ---------------------------------------------------------------------------------

static void op_create(stream_t* s) {
  const zx_handle_t rsrc = take_handle(s);
  const uint64_t options = PICK(s, 0, 1, UINT64_MAX);
  const uint8_t config_mode = take_u8(s);
  const size_t config_size =
      (size_t)PICK(s, sizeof(zx_sampler_config_t), 0, sizeof(zx_sampler_config_t) - 1,
                   sizeof(zx_sampler_config_t) + 1, sizeof(zx_sampler_config_t) + 8, 16);
  zx_sampler_config_t c;
  memset(&c, 0, sizeof(c));
  c.period = (zx_duration_mono_t)PICK(s, 1000000, ZX_SAMPLER_MIN_PERIOD, ZX_SAMPLER_MIN_PERIOD - 1,
                                      0, (uint64_t)-1, INT64_MAX, (uint64_t)INT64_MIN);
  const uint64_t small_size = 1 + take_u16(s) % (3 * PAGE);
  c.buffer_size =
      (size_t)PICK(s, small_size, 0, 1, PAGE, PAGE + 1, MAX_REGION_BYTES, MAX_REGION_BYTES + 1,
                   ZX_SAMPLER_MAX_BUFFER_SIZE, ZX_SAMPLER_MAX_BUFFER_SIZE + 1, SIZE_MAX);
  c.iobuffer_discipline = PICK(s, 0, 1, UINT64_MAX);
  const bool out_null = take_u8(s) >= 0xf0;
  if (g_m.n_sessions == MAX_SESSIONS || !can_add_handle() || g_m.n_objs == MAX_OBJECTS) return;

  // The config lives in an allocation of exactly config_size bytes (sizeof when that is
  // absurd): the library may read the struct only when config_size says it is all there.
  const zx_sampler_config_t* config = NULL;
  uint8_t* config_mem = NULL;
  if (config_mode < 0xf0) {
    const size_t alloc = config_size <= 64 ? config_size : sizeof(c);
    config_mem = malloc(alloc == 0 ? 1 : alloc);
    CHECK(config_mem != NULL);
    memset(config_mem, 0x5a, alloc);
    memcpy(config_mem, &c, alloc < sizeof(c) ? alloc : sizeof(c));
    config = (const zx_sampler_config_t*)(void*)config_mem;
  }

  // The model, in the contract's order.
  const bool config_ok = config != NULL && config_size == sizeof(c) && c.iobuffer_discipline == 0 &&
                         c.buffer_size != 0 && c.buffer_size <= ZX_SAMPLER_MAX_BUFFER_SIZE &&
                         c.period >= ZX_SAMPLER_MIN_PERIOD;
  const size_t rounded = config_ok ? (c.buffer_size + PAGE - 1) & ~(size_t)(PAGE - 1) : 0;
  if (config_ok && rounded > MAX_REGION_BYTES) {
    fake_fail_next_region_create();  // keep memory bounded: this create must fail
    g_m.fail_region_pending = true;
  }
  zx_status_t want;
  if (!g_m.enabled) {
    want = ZX_ERR_NOT_SUPPORTED;
  } else if ((want = expect_handle(rsrc, ZX_OBJ_TYPE_RESOURCE, ZX_RIGHT_NONE, NULL)) != ZX_OK) {
  } else if (options != 0 || !config_ok || out_null) {
    want = ZX_ERR_INVALID_ARGS;
  } else if (g_m.live_session >= 0) {
    want = ZX_ERR_ALREADY_EXISTS;
  } else if (g_m.fail_region_pending) {
    g_m.fail_region_pending = false;
    want = ZX_ERR_NO_MEMORY;
  } else {
    want = ZX_OK;
  }

  zx_handle_t iob = 0xdeadbeefu;
  const zx_status_t got =
      zxs_sampler_create(rsrc, options, config, config_size, out_null ? NULL : &iob);
  free(config_mem);
  EXPECT_AMONG("zxs_sampler_create", got, ZX_OK, ZX_ERR_NOT_SUPPORTED, ZX_ERR_BAD_HANDLE,
               ZX_ERR_WRONG_TYPE, ZX_ERR_ACCESS_DENIED, ZX_ERR_INVALID_ARGS, ZX_ERR_ALREADY_EXISTS,
               ZX_ERR_NO_MEMORY);
  EXPECT_STATUS("zxs_sampler_create", got, want);
  if (out_null) return;
  if (got != ZX_OK) {
    CHECK(iob == ZX_HANDLE_INVALID);  // set before any check
    return;
  }
  const int session = g_m.n_sessions++;
  msession_t* ss = &g_m.sessions[session];
  *ss = (msession_t){.live = true, .region_size = rounded, .period = c.period};
  ss->region_count = g_m.online_count;
  for (uint32_t i = 0; i < g_m.online_count; i++) {
    ss->cpus[i] = g_m.online[i];
    CHECK(g_m.n_regions < MAX_REGIONS);
    const int ri = g_m.n_regions++;
    mregion_t* r = &g_m.regions[ri];
    *r = (mregion_t){.size = rounded, .limit = c.buffer_size};
    r->image = calloc(1, rounded);
    CHECK(r->image != NULL);
    ss->regions[i] = ri;
  }
  g_m.live_session = session;
  const int obj = add_obj(OBJ_IOB, ZX_OBJ_TYPE_IOB, session, -1);
  const mhandle_t* h = add_handle(iob, obj, 0, false);
  // The contract's rights: what readers and the sampler calls need.
  const zx_rights_t needed = ZX_RIGHT_APPLY_PROFILE | ZX_RIGHT_MAP | ZX_RIGHT_READ |
                             ZX_RIGHT_INSPECT | ZX_RIGHT_DUPLICATE | ZX_RIGHT_TRANSFER;
  CHECK((h->rights & needed) == needed);
}

static void op_attach(stream_t* s) {
  const zx_handle_t iob = take_handle(s);
  const zx_handle_t thread = take_handle(s);
  mhandle_t* th = NULL;
  mhandle_t* ih = NULL;
  zx_status_t want;
  int t = -1;
  int session = -1;
  bool fresh = false;  // a new attachment
  if (!g_m.enabled) {
    want = ZX_ERR_NOT_SUPPORTED;
  } else if ((want = expect_handle(thread, ZX_OBJ_TYPE_THREAD, ZX_RIGHT_READ, &th)) != ZX_OK) {
  } else if ((want = expect_handle(iob, ZX_OBJ_TYPE_IOB, ZX_RIGHT_APPLY_PROFILE, &ih)) != ZX_OK) {
  } else {
    t = g_m.objs[th->obj].thread;
    session = g_m.objs[ih->obj].session;
    CHECK(g_m.sessions[session].live);  // a live handle keeps its session
    reap(session);
    if (!g_m.threads[t].alive) {
      want = ZX_ERR_BAD_STATE;
    } else if (attached_to(t, session)) {
      want = ZX_OK;  // attaching twice is not an error
    } else {
      fresh = true;
      want = ZX_OK;
      if (g_m.sessions[session].running && !model_arm(session)) want = ZX_ERR_NO_RESOURCES;
    }
  }
  const zx_status_t got = zxs_sampler_attach(iob, thread);
  EXPECT_AMONG("zxs_sampler_attach", got, ZX_OK, ZX_ERR_NOT_SUPPORTED, ZX_ERR_BAD_HANDLE,
               ZX_ERR_WRONG_TYPE, ZX_ERR_ACCESS_DENIED, ZX_ERR_BAD_STATE, ZX_ERR_NO_RESOURCES);
  EXPECT_STATUS("zxs_sampler_attach", got, want);
  if (!fresh || got != ZX_OK) return;
  mthread_t* mt = &g_m.threads[t];
  // Slots go lowest free first; two threads use slots 0 and 1.
  const int other = t == T_SELF ? T_OTHER : T_SELF;
  mt->slot = attached_to(other, session) && g_m.threads[other].slot == 0 ? 1 : 0;
  mt->session = session;
  mt->armed = g_m.sessions[session].running;
  mt->attach_id = ++g_m.next_attach_id;
  zxs_thread_slot_t* slot = zxs_core_slot(mt->slot);
  CHECK(slot != NULL && atomic_load(&slot->state) == ZXS_SLOT_ATTACHED &&
        slot->thread.koid == mt->koid);
  if (g_m.n_late < MAX_LATE) {
    g_m.late[g_m.n_late++] = (late_signal_t){.thread = t,
                                             .slot = slot,
                                             .gen = atomic_load(&slot->attach_gen),
                                             .attach_id = mt->attach_id};
  }
}

static void op_start(stream_t* s) {
  const zx_handle_t iob = take_handle(s);
  mhandle_t* ih = NULL;
  zx_status_t want;
  if (!g_m.enabled) {
    want = ZX_ERR_NOT_SUPPORTED;
  } else if ((want = expect_handle(iob, ZX_OBJ_TYPE_IOB, ZX_RIGHT_APPLY_PROFILE, &ih)) != ZX_OK) {
  } else {
    const int session = g_m.objs[ih->obj].session;
    CHECK(session >= 0);  // an IOBuffer's object always has its session
    msession_t* ss = &g_m.sessions[session];
    if (ss->running) {
      want = ZX_ERR_BAD_STATE;  // and nothing changes
    } else {
      want = ZX_OK;
      reap(session);
      ss->running = true;
      // Every CPU is re-enabled, as the kernel's start does: a region that filled takes records
      // again where its data ends, if they fit.
      for (uint32_t i = 0; i < ss->region_count; i++) g_m.regions[ss->regions[i]].full = false;
      int order[T_COUNT];
      const int n = threads_in_slot_order(session, order);
      // A thread whose source cannot be armed stays attached, unarmed.
      for (int i = 0; i < n; i++) g_m.threads[order[i]].armed = model_arm(session);
    }
  }
  const zx_status_t got = zxs_sampler_start(iob);
  EXPECT_AMONG("zxs_sampler_start", got, ZX_OK, ZX_ERR_NOT_SUPPORTED, ZX_ERR_BAD_HANDLE,
               ZX_ERR_WRONG_TYPE, ZX_ERR_ACCESS_DENIED, ZX_ERR_BAD_STATE);
  EXPECT_STATUS("zxs_sampler_start", got, want);
}

static void op_stop(stream_t* s) {
  const zx_handle_t iob = take_handle(s);
  mhandle_t* ih = NULL;
  zx_status_t want;
  if (!g_m.enabled) {
    want = ZX_ERR_NOT_SUPPORTED;
  } else if ((want = expect_handle(iob, ZX_OBJ_TYPE_IOB, ZX_RIGHT_APPLY_PROFILE, &ih)) != ZX_OK) {
  } else {
    const int session = g_m.objs[ih->obj].session;
    msession_t* ss = &g_m.sessions[session];
    if (!ss->running) {
      want = ZX_ERR_BAD_STATE;
    } else {
      want = ZX_OK;
      ss->running = false;
      for (int t = 0; t < T_COUNT; t++) g_m.threads[t].armed = false;
      reap(session);
    }
  }
  const zx_status_t got = zxs_sampler_stop(iob);
  EXPECT_AMONG("zxs_sampler_stop", got, ZX_OK, ZX_ERR_NOT_SUPPORTED, ZX_ERR_BAD_HANDLE,
               ZX_ERR_WRONG_TYPE, ZX_ERR_ACCESS_DENIED, ZX_ERR_BAD_STATE);
  EXPECT_STATUS("zxs_sampler_stop", got, want);
}

// Closes `value` in the model; the library's status must match.
static void close_handle(zx_handle_t value) {
  mhandle_t* h = find_live(value);
  zx_status_t want = value == ZX_HANDLE_INVALID || h != NULL ? ZX_OK : ZX_ERR_BAD_HANDLE;
  if (h != NULL && !h->pinned) {
    h->live = false;
    mobj_t* o = &g_m.objs[h->obj];
    if (--o->handles == 0 && o->kind == OBJ_IOB) destroy_session(o->session);
  }
  const zx_status_t got = zxs_handle_close(value);
  EXPECT_AMONG("zxs_handle_close", got, ZX_OK, ZX_ERR_BAD_HANDLE);
  EXPECT_STATUS("zxs_handle_close", got, want);
}

static void op_close(stream_t* s) { close_handle(take_handle(s)); }

static void op_duplicate(stream_t* s) {
  const zx_handle_t value = take_handle(s);
  const uint8_t mode = take_u8(s);
  const uint32_t bits = take_u32(s);
  const bool out_null = take_u8(s) >= 0xf0;
  if (!can_add_handle()) return;
  mhandle_t* h = find_live(value);
  const zx_rights_t held = h != NULL ? h->rights : 0;
  zx_rights_t rights;
  switch (mode % 4) {
    case 0:
      rights = ZX_RIGHT_SAME_RIGHTS;
      break;
    case 1:
      rights = held & bits;  // a subset
      break;
    case 2:
      rights = bits;
      break;
    default:
      rights = held & ~ZX_RIGHT_APPLY_PROFILE;  // the contract's "fewer rights" case
      break;
  }
  zx_status_t want;
  zx_rights_t new_rights = 0;
  if (out_null) {
    want = ZX_ERR_INVALID_ARGS;
  } else if ((want = expect_handle(value, ZX_OBJ_TYPE_NONE, ZX_RIGHT_NONE, NULL)) != ZX_OK) {
  } else if ((held & ZX_RIGHT_DUPLICATE) == 0) {
    want = ZX_ERR_ACCESS_DENIED;
  } else if (rights == ZX_RIGHT_SAME_RIGHTS) {
    new_rights = held;
  } else if ((rights & ~held) != 0) {
    want = ZX_ERR_INVALID_ARGS;
  } else {
    new_rights = rights;
  }
  zx_handle_t out = 0xdeadbeefu;
  const zx_status_t got = zxs_handle_duplicate(value, rights, out_null ? NULL : &out);
  EXPECT_AMONG("zxs_handle_duplicate", got, ZX_OK, ZX_ERR_BAD_HANDLE, ZX_ERR_ACCESS_DENIED,
               ZX_ERR_INVALID_ARGS, ZX_ERR_NO_RESOURCES);
  EXPECT_STATUS("zxs_handle_duplicate", got, want);
  if (got != ZX_OK) return;
  add_handle(out, h->obj, 0, false);
  CHECK(g_m.handles[g_m.n_handles - 1].rights == new_rights);
}

// ZX_INFO_TASK_RUNTIME on `o` as the fake answers it: a thread's first query while it lives
// begins measuring it, and only a measured thread answers once it has exited; the process sums
// its threads, those that exited after being measured included, and begins measuring the live
// ones.
static zx_status_t model_runtime(const mobj_t* o, zx_info_task_runtime_t* out) {
  memset(out, 0, sizeof(*out));
  if (o->kind == OBJ_THREAD) {
    mthread_t* th = &g_m.threads[o->thread];
    if (th->alive) th->runtime_measured = true;
    if (!th->runtime_measured) return ZX_ERR_BAD_STATE;
    *out = th->runtime;
    return ZX_OK;
  }
  if (o->kind != OBJ_PROCESS) return ZX_ERR_WRONG_TYPE;
  for (int t = 0; t < T_COUNT; t++) {
    mthread_t* th = &g_m.threads[t];
    if (th->alive) th->runtime_measured = true;
    if (!th->runtime_measured) continue;
    out->cpu_time += th->runtime.cpu_time;
    out->queue_time += th->runtime.queue_time;
    out->page_fault_time += th->runtime.page_fault_time;
    out->lock_contention_time += th->runtime.lock_contention_time;
  }
  return ZX_OK;
}

// A topic with exactly one record: BUFFER_TOO_SMALL when it does not fit (avail 1 still said),
// else the record, whole.
static zx_status_t expect_one_record(size_t size, size_t rec_size, size_t* actual, size_t* avail,
                                     size_t* written) {
  *avail = 1;
  if (size < rec_size) return ZX_ERR_BUFFER_TOO_SMALL;
  *actual = 1;
  *written = rec_size;
  return ZX_OK;
}

static void op_get_info(stream_t* s) {
  const zx_handle_t value = take_handle(s);
  const uint8_t topic_sel = take_u8(s);
  const uint8_t size_sel = take_u8(s);
  const uint16_t raw_size = take_u16(s);
  const uint8_t flags = take_u8(s);
  zx_object_info_topic_t topic;
  switch (topic_sel % 6) {
    case 0:
      topic = ZX_INFO_HANDLE_BASIC;
      break;
    case 1:
      topic = ZX_INFO_IOB;
      break;
    case 2:
      topic = ZX_INFO_IOB_REGIONS;
      break;
    case 3:
      topic = topic_sel;  // mostly unknown topics
      break;
    case 4:
      topic = raw_size;
      break;
    default:
      topic = (topic_sel / 6) & 1 ? ZX_INFO_TASK_RUNTIME_V1 : ZX_INFO_TASK_RUNTIME;
      break;
  }
  const bool runtime_topic = topic == ZX_INFO_TASK_RUNTIME || topic == ZX_INFO_TASK_RUNTIME_V1;
  const size_t rec_size = topic == ZX_INFO_HANDLE_BASIC      ? sizeof(zx_info_handle_basic_t)
                          : topic == ZX_INFO_IOB             ? sizeof(zx_info_iob_t)
                          : topic == ZX_INFO_TASK_RUNTIME    ? sizeof(zx_info_task_runtime_t)
                          : topic == ZX_INFO_TASK_RUNTIME_V1 ? sizeof(zx_info_task_runtime_v1_t)
                                                             : sizeof(zx_iob_region_info_t);
  size_t size;
  switch (size_sel % 6) {
    case 0:
    case 1:
      size = topic == ZX_INFO_IOB_REGIONS ? rec_size * MAX_CPUS : rec_size;
      break;
    case 2:
      size = rec_size - 1;
      break;
    case 3:
      size = 0;
      break;
    case 4:
      size = rec_size * (size_sel % (MAX_CPUS + 2)) + (size_sel & 0x40 ? 7 : 0);
      break;
    default:
      size = raw_size % 4096;
      break;
  }
  const bool buffer_null = (flags & 0x0f) == 0x0f;
  const bool actual_null = (flags & 0x10) != 0;
  const bool avail_null = (flags & 0x20) != 0;
  uint8_t* buffer = NULL;
  if (!buffer_null) {
    buffer = malloc(size == 0 ? 1 : size);  // exact: ASan sees any write past it
    CHECK(buffer != NULL);
    memset(buffer, 0xa5, size);
  }

  mhandle_t* h = NULL;
  zx_status_t want;
  zx_info_task_runtime_t runtime;  // the runtime topics' answer (the V1 record is its start)
  memset(&runtime, 0, sizeof(runtime));
  size_t want_actual = SIZE_MAX;
  size_t want_avail = SIZE_MAX;
  size_t written = 0;  // bytes the call may write
  if (buffer_null && size != 0) {
    want = ZX_ERR_INVALID_ARGS;
  } else if (topic == ZX_INFO_HANDLE_BASIC) {
    want = expect_handle(value, ZX_OBJ_TYPE_NONE, ZX_RIGHT_NONE, &h);
    if (want == ZX_OK) {
      want = expect_one_record(size, rec_size, &want_actual, &want_avail, &written);
    }
  } else if (topic == ZX_INFO_IOB || topic == ZX_INFO_IOB_REGIONS) {
    want = expect_handle(value, ZX_OBJ_TYPE_IOB, ZX_RIGHT_INSPECT, &h);
    if (want == ZX_OK && topic == ZX_INFO_IOB) {
      want = expect_one_record(size, rec_size, &want_actual, &want_avail, &written);
    } else if (want == ZX_OK) {
      const uint32_t count = g_m.sessions[g_m.objs[h->obj].session].region_count;
      const size_t fit = size / rec_size;
      want_actual = fit < count ? fit : count;  // as many as fit
      want_avail = count;
      written = want_actual * rec_size;
    }
  } else if (runtime_topic) {
    // The right before the type, as Fuchsia's kernel checks this topic.
    want = expect_handle(value, ZX_OBJ_TYPE_NONE, ZX_RIGHT_INSPECT, &h);
    if (want == ZX_OK) want = model_runtime(&g_m.objs[h->obj], &runtime);
    if (want == ZX_OK) {
      want = expect_one_record(size, rec_size, &want_actual, &want_avail, &written);
    }
  } else {
    want = ZX_ERR_NOT_SUPPORTED;
  }
  size_t actual = SIZE_MAX;
  size_t avail = SIZE_MAX;
  const zx_status_t got = zxs_object_get_info(
      value, topic, buffer, size, actual_null ? NULL : &actual, avail_null ? NULL : &avail);
  EXPECT_AMONG("zxs_object_get_info", got, ZX_OK, ZX_ERR_BAD_HANDLE, ZX_ERR_WRONG_TYPE,
               ZX_ERR_ACCESS_DENIED, ZX_ERR_NOT_SUPPORTED, ZX_ERR_BUFFER_TOO_SMALL,
               ZX_ERR_INVALID_ARGS, ZX_ERR_BAD_STATE);
  EXPECT_STATUS("zxs_object_get_info", got, want);
  if (got == ZX_OK) {
    if (!actual_null) CHECK(actual == want_actual);
    if (!avail_null) CHECK(avail == want_avail);
  }
  if (buffer != NULL) {
    for (size_t i = written; i < size; i++) CHECK(buffer[i] == 0xa5);  // nothing past the records
  }
  if (got == ZX_OK && topic == ZX_INFO_HANDLE_BASIC) {
    zx_info_handle_basic_t info;
    memcpy(&info, buffer, sizeof(info));
    CHECK(info.rights == h->rights && info.type == g_m.objs[h->obj].type);
    CHECK(info.koid != ZX_KOID_INVALID);
    const mobj_t* o = &g_m.objs[h->obj];
    if (o->kind == OBJ_THREAD) CHECK(info.koid == g_m.threads[o->thread].koid);
    if (o->kind == OBJ_PROCESS) CHECK(info.koid == PROCESS_KOID);
  } else if (got == ZX_OK && topic == ZX_INFO_IOB) {
    zx_info_iob_t info;
    memcpy(&info, buffer, sizeof(info));
    CHECK(info.region_count == g_m.sessions[g_m.objs[h->obj].session].region_count);
    CHECK(info.options == 0);
  } else if (got == ZX_OK && runtime_topic) {
    CHECK(memcmp(buffer, &runtime, rec_size) == 0);
  } else if (got == ZX_OK) {
    const msession_t* ss = &g_m.sessions[g_m.objs[h->obj].session];
    for (size_t i = 0; i < want_actual; i++) {
      zx_iob_region_info_t info;
      memcpy(&info, buffer + i * sizeof(info), sizeof(info));
      CHECK(info.region.size == ss->region_size);  // the rounded size
      CHECK(info.region.type == ZX_IOB_REGION_TYPE_PRIVATE);
      CHECK((info.region.access & ZX_IOB_EP0_CAN_MAP_READ) != 0);
      CHECK(info.region.discipline.type == ZX_IOB_DISCIPLINE_TYPE_NONE);
      CHECK(info.koid != ZX_KOID_INVALID);
    }
  }
  free(buffer);
}

static void op_map(stream_t* s) {
  const zx_handle_t vmar = take_u8(s) < 0xc0 ? g_m.vmar : take_handle(s);
  const zx_vm_option_t options =
      (zx_vm_option_t)PICK(s, ZX_VM_PERM_READ, 0, ZX_VM_PERM_READ | ZX_VM_PERM_WRITE,
                           ZX_VM_PERM_READ | ZX_VM_PERM_EXECUTE, ZX_VM_PERM_WRITE,
                           ZX_VM_PERM_READ | ZX_VM_SPECIFIC, ZX_VM_SPECIFIC, UINT32_MAX);
  const size_t vmar_offset = (size_t)PICK(s, 0, PAGE, 1);
  const zx_handle_t iob = take_handle(s);
  const uint8_t idx = take_u8(s);
  const uint32_t region_index = idx < 0xf0 ? idx % (MAX_CPUS + 1) : take_u32(s);
  const uint8_t off_sel = take_u8(s);
  const uint8_t len_sel = take_u8(s);
  const bool out_null = take_u8(s) >= 0xf8;
  mhandle_t* ih = find_live(iob);
  const msession_t* ss = ih != NULL && g_m.objs[ih->obj].kind == OBJ_IOB
                             ? &g_m.sessions[g_m.objs[ih->obj].session]
                             : NULL;
  const size_t region_size = ss != NULL ? ss->region_size : 16 * PAGE;
  uint64_t region_offset;
  if (off_sel < 0xa0) {
    region_offset = 0;
  } else if (off_sel < 0xf0) {
    region_offset = (uint64_t)(off_sel % 20) * PAGE;
  } else if (off_sel < 0xf8) {
    region_offset = off_sel;  // unaligned
  } else {
    region_offset = take_u64(s);
  }
  size_t region_len;
  if (len_sel < 0xa0) {
    region_len = region_size - (region_offset < region_size ? region_offset : 0);
  } else if (len_sel < 0xf0) {
    region_len = (size_t)(len_sel % 20) * PAGE;
  } else if (len_sel < 0xf8) {
    region_len = len_sel;  // unaligned
  } else {
    region_len = (size_t)take_u64(s);
  }
  if (g_m.n_maps == MAX_MAPPINGS) return;

  zx_status_t want;
  mregion_t* r = NULL;
  // The iob needs READ as well as MAP (a readable mapping, as on Fuchsia; object.h says MAP).
  if ((want = expect_handle(vmar, ZX_OBJ_TYPE_VMAR, ZX_RIGHT_NONE, NULL)) != ZX_OK) {
  } else if ((want = expect_handle(iob, ZX_OBJ_TYPE_IOB, ZX_RIGHT_MAP | ZX_RIGHT_READ, NULL)) !=
             ZX_OK) {
  } else if ((options & (ZX_VM_PERM_WRITE | ZX_VM_PERM_EXECUTE)) != 0) {
    want = ZX_ERR_ACCESS_DENIED;
  } else if ((options & ~(ZX_VM_PERM_READ | ZX_VM_SPECIFIC)) != 0 ||
             (options & ZX_VM_PERM_READ) == 0 ||
             (vmar_offset != 0 && (options & ZX_VM_SPECIFIC) == 0) || vmar_offset % PAGE != 0 ||
             out_null || region_len == 0 || region_len % PAGE != 0 || region_offset % PAGE != 0) {
    want = ZX_ERR_INVALID_ARGS;
  } else if ((options & ZX_VM_SPECIFIC) != 0) {
    want = ZX_ERR_NOT_SUPPORTED;  // the kernel places the mapping; a host mapping cannot
  } else if (region_index >= ss->region_count || region_offset > ss->region_size ||
             region_len > ss->region_size - region_offset) {
    want = ZX_ERR_OUT_OF_RANGE;
  } else {
    want = ZX_OK;
    r = &g_m.regions[ss->regions[region_index]];
  }
  zx_vaddr_t addr = 0;
  const zx_status_t got = zxs_vmar_map_iob(vmar, options, vmar_offset, iob, region_index,
                                           region_offset, region_len, out_null ? NULL : &addr);
  EXPECT_AMONG("zxs_vmar_map_iob", got, ZX_OK, ZX_ERR_BAD_HANDLE, ZX_ERR_WRONG_TYPE,
               ZX_ERR_ACCESS_DENIED, ZX_ERR_INVALID_ARGS, ZX_ERR_NOT_SUPPORTED,
               ZX_ERR_OUT_OF_RANGE);
  EXPECT_STATUS("zxs_vmar_map_iob", got, want);
  if (got != ZX_OK) return;
  CHECK(addr % PAGE == 0);
  if (r->base == 0) r->base = addr - (uintptr_t)region_offset;
  CHECK(addr == r->base + region_offset);  // the fake maps the region's own memory
  r->maps++;
  mmapping_t* mp = &g_m.maps[g_m.n_maps++];
  *mp = (mmapping_t){.region = (int)(r - g_m.regions),
                     .addr = addr,
                     .offset = (size_t)region_offset,
                     .len = region_len};
  check_mapping(mp);
}

static void remove_mapping(int i) {
  g_m.maps[i] = g_m.maps[g_m.n_maps - 1];
  g_m.n_maps--;
}

static void op_unmap(stream_t* s) {
  const zx_handle_t vmar = take_u8(s) < 0xc0 ? g_m.vmar : take_handle(s);
  const uint8_t mode = take_u8(s);
  const uint8_t which = take_u8(s);
  const uint8_t len_sel = take_u8(s);
  uintptr_t addr;
  if (g_m.n_maps > 0 && mode < 0xc0) {
    const mmapping_t* mp = &g_m.maps[which % g_m.n_maps];
    addr = mp->addr + (uintptr_t)((int)(mode % 5) - 2) * PAGE;  // the mapping or a neighbour
  } else if (mode < 0xe0) {
    addr = (uintptr_t)take_u32(s) & ~(uintptr_t)(PAGE - 1);  // low memory: never a region
  } else {
    addr = (uintptr_t)take_u64(s);
  }
  const size_t len =
      len_sel < 0xe0 ? (size_t)(1 + len_sel % 16) * PAGE : (len_sel < 0xf0 ? 0 : len_sel);

  zx_status_t want;
  mregion_t* hit = NULL;
  if ((want = expect_handle(vmar, ZX_OBJ_TYPE_VMAR, ZX_RIGHT_NONE, NULL)) != ZX_OK) {
  } else if (len == 0 || addr % PAGE != 0 || len % PAGE != 0) {
    want = ZX_ERR_INVALID_ARGS;
  } else {
    // The fake unmaps one mapping of whichever mapped region holds the address.
    for (int i = 0; i < g_m.n_regions; i++) {
      mregion_t* r = &g_m.regions[i];
      if (r->maps > 0 && addr >= r->base && addr - r->base < r->size) hit = r;
    }
    // The fake reports an address nothing is mapped at as NOT_FOUND (object.h does not say).
    want = hit != NULL ? ZX_OK : ZX_ERR_NOT_FOUND;
  }
  const zx_status_t got = zxs_vmar_unmap(vmar, addr, len);
  EXPECT_AMONG("zxs_vmar_unmap", got, ZX_OK, ZX_ERR_INVALID_ARGS, ZX_ERR_BAD_HANDLE,
               ZX_ERR_WRONG_TYPE, ZX_ERR_NOT_FOUND);
  EXPECT_STATUS("zxs_vmar_unmap", got, want);
  if (hit == NULL) return;
  const int ri = (int)(hit - g_m.regions);
  int victim = -1;
  for (int i = 0; i < g_m.n_maps; i++) {
    if (g_m.maps[i].region == ri && (victim < 0 || g_m.maps[i].addr == addr)) victim = i;
  }
  CHECK(victim >= 0);
  remove_mapping(victim);
  hit->maps--;
  region_maybe_free(hit);
}

static void take_regs(stream_t* s, zxs_regs_t* regs) {
  const uint8_t mode = take_u8(s);
  regs->pc = (uintptr_t)take_u64(s);
  const uintptr_t base = (uintptr_t)g_stack;
  // Stack-relative values reach the walk's interesting cases; raw ones test its rejection.
  switch (mode & 3) {
    case 0:
    case 1:
      regs->fp = base + take_u16(s) % (STACK_BYTES + 64) - 32;
      break;
    case 2:
      regs->fp = (uintptr_t)take_u64(s);
      break;
    default:
      regs->fp = 0;
      break;
  }
  switch ((mode >> 2) & 3) {
    case 0:
    case 1:
      regs->sp = 0;
      break;
    case 2:
      regs->sp = base + take_u16(s) % (STACK_BYTES + 64) - 32;
      break;
    default:
      regs->sp = (uintptr_t)take_u64(s);
      break;
  }
}

static void op_fire(stream_t* s) {
  const int t = take_u8(s) & 1;
  zxs_regs_t regs;
  take_regs(s, &regs);
  const bool armed = g_m.threads[t].armed;
  if (armed) model_sample(t, &regs);
  CHECK(fake_fire(g_m.threads[t].koid, &regs) == armed);
}

// A signal that arrives late: with the generation it was armed with, or a stale one.
static void op_late_fire(stream_t* s) {
  const uint8_t which = take_u8(s);
  zxs_regs_t regs;
  take_regs(s, &regs);
  if (g_m.n_late == 0) return;
  const late_signal_t* l = &g_m.late[which % g_m.n_late];
  uint32_t gen = l->gen;
  if (which & 0x80) gen += (which & 0x40) ? 1 : (uint32_t)-1;  // never an attached generation
  const mthread_t* mt = &g_m.threads[l->thread];
  // Writes are gated by the attachment and the CPU's writes-enabled bit, not by "armed".
  if (gen == l->gen && mt->attach_id == l->attach_id && mt->session >= 0 &&
      g_m.sessions[mt->session].running) {
    model_sample(l->thread, &regs);
  }
  fake_fire_slot(l->slot, gen, &regs);
}

static void op_get_stats(stream_t* s) {
  const zx_handle_t iob = take_handle(s);
  const bool null = take_u8(s) >= 0xf0;
  mhandle_t* ih = NULL;
  zx_status_t want =
      null ? ZX_ERR_INVALID_ARGS : expect_handle(iob, ZX_OBJ_TYPE_IOB, ZX_RIGHT_INSPECT, &ih);
  zxs_sampler_stats_t st;
  memset(&st, 0xa5, sizeof(st));
  // Exited threads are reaped here too (sampler.h: attach, start, stop or get_stats).
  if (want == ZX_OK) reap(g_m.objs[ih->obj].session);
  const zx_status_t got = zxs_sampler_get_stats(iob, null ? NULL : &st);
  EXPECT_AMONG("zxs_sampler_get_stats", got, ZX_OK, ZX_ERR_BAD_HANDLE, ZX_ERR_WRONG_TYPE,
               ZX_ERR_ACCESS_DENIED, ZX_ERR_BAD_STATE, ZX_ERR_INVALID_ARGS);
  EXPECT_STATUS("zxs_sampler_get_stats", got, want);
  if (got != ZX_OK) return;
  const int session = g_m.objs[ih->obj].session;
  const msession_t* ss = &g_m.sessions[session];
  uint64_t written = 0;
  uint64_t dropped_full = 0;
  for (uint32_t i = 0; i < ss->region_count; i++) {
    written += g_m.regions[ss->regions[i]].written;
    dropped_full += g_m.regions[ss->regions[i]].dropped_full;
  }
  uint32_t attached = 0;
  for (int t = 0; t < T_COUNT; t++) attached += attached_to(t, session);
  CHECK(st.backend != NULL && strcmp(st.backend, "fake") == 0);
  CHECK(st.source == (ss->armed_ever ? ZXS_SOURCE_FAKE : ZXS_SOURCE_NONE));
  CHECK(st.requested_period == ss->period && st.effective_period == ss->period);
  CHECK(st.attached_threads == attached);
  CHECK(st.samples_written == written && st.dropped_full == dropped_full);
  CHECK(st.dropped_other == ss->dropped_other);
  CHECK(st.walks_truncated == ss->walks_truncated);
  CHECK(st.throttled == 0 && st.overruns == 0);
  CHECK(st.source_failures == ss->source_failures);
}

static void op_debug_resource(stream_t* s) {
  const bool null = take_u8(s) >= 0xf0;
  if (!can_add_handle() || g_m.n_objs == MAX_OBJECTS) return;
  zx_handle_t h = 0xdeadbeefu;
  const zx_status_t got = zxs_debug_resource_get(null ? NULL : &h);
  EXPECT_AMONG("zxs_debug_resource_get", got, ZX_OK, ZX_ERR_INVALID_ARGS, ZX_ERR_NO_RESOURCES);
  EXPECT_STATUS("zxs_debug_resource_get", got, null ? ZX_ERR_INVALID_ARGS : ZX_OK);
  if (got != ZX_OK) return;
  add_handle(h, add_obj(OBJ_RESOURCE, ZX_OBJ_TYPE_RESOURCE, -1, -1),
             ZX_RIGHT_DUPLICATE | ZX_RIGHT_TRANSFER | ZX_RIGHT_WRITE | ZX_RIGHT_INSPECT, false);
}

static void op_thread_get(stream_t* s) {
  const uint8_t sel = take_u8(s);
  if (!can_add_handle() || g_m.n_objs == MAX_OBJECTS) return;
  const bool null = sel >= 0xf0;
  // pthread_self() is registered with the fake as the "other" thread; any other value is a
  // thread the backend cannot name.
  const bool named = (sel & 1) == 0;
  const pthread_t thread = named ? pthread_self() : (pthread_t)(uintptr_t)(0x1000 + sel);
  zx_status_t want = null                          ? ZX_ERR_INVALID_ARGS
                     : !named                      ? ZX_ERR_NOT_SUPPORTED
                     : !g_m.threads[T_OTHER].alive ? ZX_ERR_BAD_STATE
                                                   : ZX_OK;
  zx_handle_t h = 0xdeadbeefu;
  const zx_status_t got = zxs_thread_get(thread, null ? NULL : &h);
  EXPECT_AMONG("zxs_thread_get", got, ZX_OK, ZX_ERR_INVALID_ARGS, ZX_ERR_BAD_STATE,
               ZX_ERR_NOT_SUPPORTED, ZX_ERR_NO_RESOURCES);
  EXPECT_STATUS("zxs_thread_get", got, want);
  if (null) return;
  if (got != ZX_OK) {
    CHECK(h == ZX_HANDLE_INVALID);
    return;
  }
  add_handle(h, add_obj(OBJ_THREAD, ZX_OBJ_TYPE_THREAD, -1, T_OTHER), 0, false);
}

static void op_set_online(stream_t* s) {
  uint8_t mask = take_u8(s);
  if (mask == 0) mask = 1;  // an empty list would make the fake reset everything
  uint32_t cpus[MAX_CPUS];
  uint32_t n = 0;
  for (uint32_t c = 0; c < MAX_CPUS; c++) {
    if (mask & (1u << c)) cpus[n++] = c;
  }
  fake_set_online_cpus(cpus, n);
  memcpy(g_m.online, cpus, sizeof(cpus));
  g_m.online_count = n;
}

static void op_stack_word(stream_t* s) {
  const uint16_t index = take_u16(s) % (STACK_BYTES / 8);
  const uint8_t mode = take_u8(s);
  uint64_t v;
  if (mode < 0xa0) {
    v = (uint64_t)((uintptr_t)g_stack + take_u16(s) % (STACK_BYTES + 64) - 32);  // a frame pointer
  } else if (mode < 0xf0) {
    v = take_u64(s);
  } else {
    v = 0;
  }
  memcpy(g_stack + (size_t)index * 8, &v, 8);
}

static void op_thread_exited(void) {
  // The backend's exit hook for the other thread: it detaches, its handles stay.
  if (g_m.threads[T_OTHER].session >= 0) detach(T_OTHER);
  zxs_core_thread_exited(OTHER_KOID);
}

// --- One input ----------------------------------------------------------------------------------

static void setup_stack(void) {
  if (g_stack != NULL) return;
  uint8_t* p = mmap(NULL, STACK_BYTES + 2 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(p != MAP_FAILED);
  CHECK(mprotect(p + PAGE, STACK_BYTES, PROT_READ | PROT_WRITE) == 0);
  g_stack = p + PAGE;  // never unmapped: reused by every input
}

// Picks the calling thread's stack bounds for this input, always inside g_stack.
static void setup_self(stream_t* s) {
  const uint8_t mode = take_u8(s);
  const uintptr_t base = (uintptr_t)g_stack;
  uintptr_t lo = base;
  uintptr_t hi = base + STACK_BYTES;
  switch (mode % 4) {
    case 1:
      lo = base + 8 * (take_u16(s) % (STACK_BYTES / 8 + 1));
      hi = base + 8 * (take_u16(s) % (STACK_BYTES / 8 + 1));
      break;
    case 2:
      lo = base + take_u16(s) % (STACK_BYTES + 1);
      hi = base + take_u16(s) % (STACK_BYTES + 1);
      break;
    case 3:
      lo = 0;
      hi = (mode & 4) ? 16 : 0;
      break;
    default:
      break;
  }
  memset(g_stack, 0, STACK_BYTES);
  // Forget the previous input's handle so the new bounds are recorded.
  zxs_core_thread_exited(fake_self_koid());
  fake_set_self_stack(lo, hi);
  g_m.self_handle = zxs_thread_self();
  CHECK(g_m.self_handle != ZX_HANDLE_INVALID);
  g_m.threads[T_SELF] = (mthread_t){
      .koid = fake_self_koid(), .alive = true, .session = -1, .stack_lo = lo, .stack_hi = hi};
}

static void begin_input(stream_t* s) {
  setup_stack();
  memset(&g_m, 0, sizeof(g_m));
  g_m.live_session = -1;
  fake_reset();
  zxs_set_debugging_syscalls_enabled(true);
  g_m.enabled = true;
  for (uint32_t i = 0; i < 4; i++) g_m.online[i] = i;  // fake_reset's defaults
  g_m.online_count = 4;
  g_m.ticks = 1000;
  fake_register_thread(pthread_self(), OTHER_KOID, true);
  g_m.threads[T_OTHER] = (mthread_t){.koid = OTHER_KOID, .alive = true, .session = -1};
  setup_self(s);
  // Distinct runtimes, so a thread's answer and the process's sum tell which were counted.
  g_m.threads[T_SELF].runtime = (zx_info_task_runtime_t){1000, 2000, 3000, 4000};
  g_m.threads[T_OTHER].runtime = (zx_info_task_runtime_t){10, 20, 30, 40};
  for (int t = 0; t < T_COUNT; t++) {
    fake_set_runtime(g_m.threads[t].koid, &g_m.threads[t].runtime,
                     ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME);
  }
  CHECK(atomic_load(&zxs_core_slot(0)->state) == ZXS_SLOT_FREE);
  CHECK(atomic_load(&zxs_core_slot(1)->state) == ZXS_SLOT_FREE);
  // The constant handles, pinned (close leaves them alone).
  const zx_handle_t process = zxs_process_self();
  g_m.vmar = zxs_vmar_root_self();
  add_handle(process, add_obj(OBJ_PROCESS, ZX_OBJ_TYPE_PROCESS, -1, -1), 0, true);
  add_handle(g_m.vmar, add_obj(OBJ_VMAR, ZX_OBJ_TYPE_VMAR, -1, -1), 0, true);
  add_handle(g_m.self_handle, add_obj(OBJ_THREAD, ZX_OBJ_TYPE_THREAD, -1, T_SELF), 0, true);
  // One debug resource to start with: most programs need it.
  zx_handle_t rsrc;
  EXPECT_STATUS("zxs_debug_resource_get", zxs_debug_resource_get(&rsrc), ZX_OK);
  add_handle(rsrc, add_obj(OBJ_RESOURCE, ZX_OBJ_TYPE_RESOURCE, -1, -1), 0, false);
}

// Closes and unmaps everything the input made; afterwards nothing may be left.
static void end_input(void) {
  for (int i = 0; i < g_m.n_handles; i++) {
    if (g_m.handles[i].live && !g_m.handles[i].pinned) close_handle(g_m.handles[i].value);
  }
  CHECK(g_m.live_session == -1);
  // Mappings outlive their session, with the same bytes.
  while (g_m.n_maps > 0) {
    check_mapping(&g_m.maps[0]);
    mregion_t* r = &g_m.regions[g_m.maps[0].region];
    EXPECT_STATUS("zxs_vmar_unmap", zxs_vmar_unmap(g_m.vmar, g_m.maps[0].addr, g_m.maps[0].len),
                  ZX_OK);
    remove_mapping(0);
    r->maps--;
    region_maybe_free(r);
  }
  for (int i = 0; i < g_m.n_regions; i++) CHECK(g_m.regions[i].freed);
  CHECK(fake_live_regions() == 0);
  for (int t = 0; t < T_COUNT; t++) CHECK(!fake_source_armed(g_m.threads[t].koid, NULL));
  zxs_set_debugging_syscalls_enabled(true);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stream_t s = {data, size};
  begin_input(&s);
  for (int n = 0; n < MAX_OPS && s.n > 0; n++) {
    const uint8_t op = take_u8(&s);
    switch (op % FUZZ_OP_COUNT) {
      case FUZZ_OP_CREATE:
        op_create(&s);
        break;
      case FUZZ_OP_ATTACH:
        op_attach(&s);
        break;
      case FUZZ_OP_START:
        op_start(&s);
        break;
      case FUZZ_OP_STOP:
        op_stop(&s);
        break;
      case FUZZ_OP_DUPLICATE:
        op_duplicate(&s);
        break;
      case FUZZ_OP_CLOSE:
        op_close(&s);
        break;
      case FUZZ_OP_GET_INFO:
        op_get_info(&s);
        break;
      case FUZZ_OP_MAP:
        op_map(&s);
        break;
      case FUZZ_OP_UNMAP:
        op_unmap(&s);
        break;
      case FUZZ_OP_CHECK_MAPPING: {
        const uint8_t which = take_u8(&s);
        if (g_m.n_maps > 0) check_mapping(&g_m.maps[which % g_m.n_maps]);
        break;
      }
      case FUZZ_OP_FIRE:
      case FUZZ_OP_FIRE_ALT:
        op_fire(&s);
        break;
      case FUZZ_OP_LATE_FIRE:
        op_late_fire(&s);
        break;
      case FUZZ_OP_SET_CPU:
        g_m.cpu = take_u8(&s) % (MAX_CPUS + 2);  // CPUs past the limit are ignored
        fake_set_current_cpu(g_m.cpu);
        break;
      case FUZZ_OP_SET_TICKS:
        g_m.ticks = take_u64(&s);
        fake_set_ticks(g_m.ticks);
        break;
      case FUZZ_OP_SET_ONLINE:
        op_set_online(&s);
        break;
      case FUZZ_OP_FAIL_REGION:
        fake_fail_next_region_create();
        g_m.fail_region_pending = true;
        break;
      case FUZZ_OP_FAIL_ARM:
        fake_fail_next_arm();
        g_m.fail_arm_pending = true;
        break;
      case FUZZ_OP_SWITCH:
        g_m.enabled = (take_u8(&s) & 1) != 0;
        zxs_set_debugging_syscalls_enabled(g_m.enabled);
        break;
      case FUZZ_OP_DEBUG_RESOURCE:
        op_debug_resource(&s);
        break;
      case FUZZ_OP_THREAD_GET:
        op_thread_get(&s);
        break;
      case FUZZ_OP_OTHER_THREAD: {
        // Exits (or revives) the other thread; attach, start and stop reap it.
        g_m.threads[T_OTHER].alive = (take_u8(&s) & 1) != 0;
        fake_set_thread_alive(OTHER_KOID, g_m.threads[T_OTHER].alive);
        if (take_u8(&s) & 1) op_thread_exited();
        break;
      }
      case FUZZ_OP_STACK_WORD:
        op_stack_word(&s);
        break;
      case FUZZ_OP_STATS_OR_SELF:
      default:
        if (op & 0x80) {
          CHECK(zxs_thread_self() == g_m.self_handle);  // a constant per thread
        } else {
          op_get_stats(&s);
        }
        break;
    }
  }
  end_input();
  return 0;
}
