// Bad input, row by row: every public call with every bad argument the contract names, NULL
// pointers, closed and stale handles, handles of the wrong type, huge sizes and offsets, rights
// removed one at a time, a full handle table. Each row states the status it expects.
//
// After every row the harness checks that nothing was corrupted or leaked:
//   - the number of live handles is what it was before the row (a probe duplicates a constant
//     handle until the table is full, counts, and closes the duplicates again);
//   - no fake region is left alive (fake_live_regions());
//   - a fresh session works end to end: create (and ALREADY_EXISTS for a second create), attach,
//     start, one fake sample, stop, stats, get_info, map every region and find exactly the one
//     expected record, unmap, close.
//
// Rows marked ISOLATE run in a forked child (with freed memory poisoned by M_PERTURB, so a
// use-after-free shows in plain builds too); the child also runs the checks above after its row.
// Rows marked LIBRARY_BUG fail today because of a defect in the library: they are reported as
// "LIBRARY BUG" and stay failing until the library is fixed (see the row's comment).
//
// All rows run even when some fail; each test asserts at the end that none failed.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/zxsampler.h>

#include "fake_platform.h"
#include "sampling.h"

#define HANDLE_TABLE_CAPACITY 16384u  // src/core/handle_table.c
#define REGION_BYTES 8192u            // 5000 rounded to the fake's 4096-byte pages
#define FAKE_CPUS 4u                  // the fake's default online CPUs: 0..3
#define OTHER_KOID 7777u              // a thread registered with the fake
#define EXITED_KOID 7778u             // one registered as exited

// The rights the sampler's IOBuffer handle gets (src/core/session.c), a thread's
// (src/core/objects.h) and the debug resource's, written out here as the kernel gives them
// (Fuchsia's values, not the library's macros); the test removes them one at a time.
#define IOB_RIGHTS                                                                             \
  (ZX_RIGHT_DUPLICATE | ZX_RIGHT_TRANSFER | ZX_RIGHT_READ | ZX_RIGHT_WAIT | ZX_RIGHT_INSPECT | \
   ZX_RIGHT_GET_PROPERTY | ZX_RIGHT_SET_PROPERTY | ZX_RIGHT_MAP | ZX_RIGHT_SIGNAL |            \
   ZX_RIGHT_SIGNAL_PEER | ZX_RIGHT_APPLY_PROFILE)
#define THREAD_RIGHTS                                                                \
  (ZX_RIGHT_DUPLICATE | ZX_RIGHT_TRANSFER | ZX_RIGHT_READ | ZX_RIGHT_WRITE |         \
   ZX_RIGHT_GET_PROPERTY | ZX_RIGHT_SET_PROPERTY | ZX_RIGHT_SIGNAL | ZX_RIGHT_WAIT | \
   ZX_RIGHT_INSPECT | ZX_RIGHT_MANAGE_THREAD | ZX_RIGHT_DESTROY)
#define RESOURCE_RIGHTS (ZX_RIGHT_DUPLICATE | ZX_RIGHT_TRANSFER | ZX_RIGHT_WRITE | ZX_RIGHT_INSPECT)
_Static_assert(IOB_RIGHTS == 0x8f0e7, "the kernel's sampler IOBuffer rights");

// Statuses a row returns when a secondary check failed (never a zx_status_t).
#define ROW_OUT_NOT_CLEARED ((zx_status_t)1001)  // an out handle not set to ZX_HANDLE_INVALID
#define ROW_SIDE_EFFECT ((zx_status_t)1002)      // a failed call changed something
#define ROW_WRONG_RESULT ((zx_status_t)1003)     // a call succeeded with the wrong result

static const char* row_status_name(zx_status_t s) {
  switch (s) {
    case ROW_OUT_NOT_CLEARED:
      return "ROW_OUT_NOT_CLEARED";
    case ROW_SIDE_EFFECT:
      return "ROW_SIDE_EFFECT";
    case ROW_WRONG_RESULT:
      return "ROW_WRONG_RESULT";
    default:
      return zxs_status_string(s);
  }
}

// --- Shared state -------------------------------------------------------------------------------

static zx_handle_t g_rsrc;    // the debug resource, for the whole run
static uint32_t g_baseline;   // live handles between rows
static char g_note[256];      // what a secondary check saw
static uint64_t g_stack[64];  // a crafted stack, recorded as this thread's stack bounds
static zxs_fxt_buf_t g_buf;   // the writer rows' buffer

static void note(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_note, sizeof(g_note), fmt, ap);
  va_end(ap);
}

static zxs_regs_t crafted_regs(void) {
  memset(g_stack, 0, sizeof(g_stack));
  g_stack[8] = (uint64_t)(uintptr_t)&g_stack[16];
  g_stack[9] = 0x1111;
  g_stack[16] = (uint64_t)(uintptr_t)&g_stack[24];
  g_stack[17] = 0x2222;
  g_stack[24] = 0;
  g_stack[25] = 0x3333;
  zxs_regs_t regs = {.pc = 0xabc, .fp = (uintptr_t)&g_stack[8], .sp = (uintptr_t)g_stack};
  return regs;
}

static zx_sampler_config_t good_config(void) {
  zx_sampler_config_t c = {.period = 1000000, .buffer_size = 5000, .iobuffer_discipline = 0};
  return c;
}

// --- Invariant probes ---------------------------------------------------------------------------

// Live handles: duplicates a constant handle until the table is full, then closes the copies.
// Returns UINT32_MAX if the probe itself misbehaved.
static zx_handle_t g_probe[HANDLE_TABLE_CAPACITY];
static uint32_t live_handles(void) {
  uint32_t n = 0;
  zx_status_t status = ZX_OK;
  while (n < HANDLE_TABLE_CAPACITY) {
    status = zxs_handle_duplicate(zxs_process_self(), ZX_RIGHT_SAME_RIGHTS, &g_probe[n]);
    if (status != ZX_OK) break;
    n++;
  }
  for (uint32_t i = 0; i < n; i++) {
    if (zxs_handle_close(g_probe[i]) != ZX_OK) return UINT32_MAX;
  }
  if (status != ZX_ERR_NO_RESOURCES) return UINT32_MAX;
  return HANDLE_TABLE_CAPACITY - n;
}

// Counts the records of a region; checks each looks like a sample record.
static size_t count_records(const uint64_t* w, size_t bytes) {
  size_t n = 0, i = 0;
  while (i < bytes / 8 && w[i] != 0) {
    size_t len = (size_t)((w[i] >> 4) & 0xffffffffu);
    if ((w[i] & 0xf) != 15 || len < 7 || i + len > bytes / 8) return SIZE_MAX;
    i += len;
    n++;
  }
  for (; i < bytes / 8; i++) {
    if (w[i] != 0) return SIZE_MAX;  // the tail must stay zero
  }
  return n;
}

// A fresh session, end to end; false (and g_note) on the first thing that is wrong.
static bool session_end_to_end(uint64_t ticks) {
#define E2E(cond, ...)   \
  do {                   \
    if (!(cond)) {       \
      note(__VA_ARGS__); \
      goto fail;         \
    }                    \
  } while (0)
  fake_reset();
  zx_sampler_config_t c = good_config();
  zx_handle_t iob = ZX_HANDLE_INVALID, second = 0xdead;
  zx_vaddr_t addr[FAKE_CPUS] = {0};
  zx_status_t s = zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &iob);
  E2E(s == ZX_OK, "e2e: create: %s", zxs_status_string(s));
  s = zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &second);
  E2E(s == ZX_ERR_ALREADY_EXISTS && second == ZX_HANDLE_INVALID, "e2e: second create: %s (out %#x)",
      zxs_status_string(s), second);
  zx_handle_t self = zxs_thread_self();
  s = zxs_sampler_attach(iob, self);
  E2E(s == ZX_OK, "e2e: attach: %s", zxs_status_string(s));
  s = zxs_sampler_start(iob);
  E2E(s == ZX_OK, "e2e: start: %s", zxs_status_string(s));
  zxs_regs_t regs = crafted_regs();
  fake_set_current_cpu(3);
  fake_set_ticks(ticks);
  E2E(fake_fire(fake_self_koid(), &regs), "e2e: source not armed after start");
  s = zxs_sampler_stop(iob);
  E2E(s == ZX_OK, "e2e: stop: %s", zxs_status_string(s));
  zxs_sampler_stats_t stats;
  s = zxs_sampler_get_stats(iob, &stats);
  E2E(s == ZX_OK && stats.samples_written == 1 && stats.dropped_full == 0 &&
          stats.dropped_other == 0 && stats.attached_threads == 1,
      "e2e: stats %s written %llu dropped %llu/%llu attached %u", zxs_status_string(s),
      (unsigned long long)stats.samples_written, (unsigned long long)stats.dropped_full,
      (unsigned long long)stats.dropped_other, stats.attached_threads);
  zx_iob_region_info_t regions[FAKE_CPUS + 1];
  size_t actual = 0, avail = 0;
  s = zxs_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions, sizeof(regions), &actual, &avail);
  E2E(s == ZX_OK && actual == FAKE_CPUS && avail == FAKE_CPUS, "e2e: regions %s %zu/%zu",
      zxs_status_string(s), actual, avail);
  for (uint32_t r = 0; r < FAKE_CPUS; r++) {
    E2E(regions[r].region.size == REGION_BYTES, "e2e: region %u size %llu", r,
        (unsigned long long)regions[r].region.size);
    s = zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, r, 0, REGION_BYTES,
                         &addr[r]);
    E2E(s == ZX_OK, "e2e: map %u: %s", r, zxs_status_string(s));
    const uint64_t* w = (const uint64_t*)addr[r];
    const size_t n = count_records(w, REGION_BYTES);
    E2E(n == (r == 3 ? 1u : 0u), "e2e: region %u has %zu records", r, n);
  }
  const uint64_t* w = (const uint64_t*)addr[3];
  const uint64_t expected[10] = {0xF | (10u << 4), 0,      ticks, 42, fake_self_koid(), 32, 0xabc,
                                 0x1111,           0x2222, 0x3333};
  E2E(memcmp(w, expected, sizeof(expected)) == 0, "e2e: the record is not the expected one");
  for (uint32_t r = 0; r < FAKE_CPUS; r++) {
    s = zxs_vmar_unmap(zxs_vmar_root_self(), addr[r], REGION_BYTES);
    addr[r] = 0;
    E2E(s == ZX_OK, "e2e: unmap %u: %s", r, zxs_status_string(s));
  }
  s = zxs_handle_close(iob);
  iob = ZX_HANDLE_INVALID;
  E2E(s == ZX_OK, "e2e: close: %s", zxs_status_string(s));
  E2E(fake_live_regions() == 0, "e2e: %u regions alive after the last close", fake_live_regions());
  return true;
fail:
  for (uint32_t r = 0; r < FAKE_CPUS; r++) {
    if (addr[r] != 0) zxs_vmar_unmap(zxs_vmar_root_self(), addr[r], REGION_BYTES);
  }
  zxs_handle_close(iob);
  return false;
#undef E2E
}

// Everything that must hold between rows; false with g_note set.
static bool invariants_hold(uint64_t ticks) {
  if (!zxs_debugging_syscalls_enabled()) {
    note("debugging syscalls left off");
    return false;
  }
  if (fake_live_regions() != 0) {
    note("%u regions leaked", fake_live_regions());
    return false;
  }
  uint32_t live = live_handles();
  if (live != g_baseline) {
    note("live handles %u, expected %u (leaked or lost)", live, g_baseline);
    return false;
  }
  if (zxs_sampler_compiled_in() && !session_end_to_end(ticks)) return false;
  live = live_handles();
  if (live != g_baseline) {
    note("after the end-to-end session: live handles %u, expected %u", live, g_baseline);
    return false;
  }
  return true;
}

// --- The fixture every row starts from ----------------------------------------------------------

typedef struct fixture {
  zx_handle_t rsrc;            // the debug resource (not owned)
  zx_handle_t iob;             // a live, configured session
  zx_handle_t self;            // this thread (pinned)
  zx_handle_t other;           // another (fake) thread, alive
  zx_handle_t exited;          // a thread that has exited
  zx_handle_t process, vmar;   // constants
  zx_handle_t closed_iob;      // a closed duplicate of iob
  zx_handle_t closed_thread;   // a closed duplicate of self
  zx_handle_t closed_rsrc;     // a closed debug resource
  zx_handle_t stale_iob;       // the handle of an earlier session, destroyed
  zx_handle_t iob_no_profile;  // iob without APPLY_PROFILE
  zx_handle_t self_no_read;    // self without READ
  zx_vaddr_t mapped;           // a mapping of region 0 (unmapped by teardown if set)
} fixture_t;

static fixture_t g_f;

// Builds the fixture; false (g_note set) when the library's state is too broken to build it.
#define FX(call)                                                    \
  do {                                                              \
    zx_status_t fx_status = (call);                                 \
    if (fx_status != ZX_OK) {                                       \
      note("fixture: %s: %s", #call, zxs_status_string(fx_status)); \
      return false;                                                 \
    }                                                               \
  } while (0)
static bool fixture_setup(fixture_t* f) {
  memset(f, 0, sizeof(*f));
  fake_reset();
  f->rsrc = g_rsrc;
  zxs_fxt_buf_init(&g_buf);
  if (!zxs_sampler_compiled_in()) return true;  // the writer rows need no session
  zx_sampler_config_t c = good_config();
  // An earlier session, closed: its handle is stale.
  FX(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &f->stale_iob));
  FX(zxs_handle_close(f->stale_iob));
  FX(zxs_sampler_create(g_rsrc, 0, &c, sizeof(c), &f->iob));
  f->self = zxs_thread_self();
  f->process = zxs_process_self();
  f->vmar = zxs_vmar_root_self();
  fake_register_thread((pthread_t)0x1234, OTHER_KOID, true);
  FX(zxs_thread_get((pthread_t)0x1234, &f->other));
  fake_register_thread((pthread_t)0x5678, EXITED_KOID, true);
  FX(zxs_thread_get((pthread_t)0x5678, &f->exited));
  fake_set_thread_alive(EXITED_KOID, false);
  FX(zxs_handle_duplicate(f->iob, ZX_RIGHT_SAME_RIGHTS, &f->closed_iob));
  FX(zxs_handle_close(f->closed_iob));
  FX(zxs_handle_duplicate(f->self, ZX_RIGHT_SAME_RIGHTS, &f->closed_thread));
  FX(zxs_handle_close(f->closed_thread));
  FX(zxs_debug_resource_get(&f->closed_rsrc));
  FX(zxs_handle_close(f->closed_rsrc));
  FX(zxs_handle_duplicate(f->iob, IOB_RIGHTS & ~ZX_RIGHT_APPLY_PROFILE, &f->iob_no_profile));
  FX(zxs_handle_duplicate(f->self, THREAD_RIGHTS & ~ZX_RIGHT_READ, &f->self_no_read));
  return true;
}

static void fixture_teardown(fixture_t* f) {
  zxs_set_debugging_syscalls_enabled(true);
  if (f->mapped != 0) zxs_vmar_unmap(zxs_vmar_root_self(), f->mapped, REGION_BYTES);
  // Statuses ignored: a row may have closed some of these already.
  zxs_handle_close(f->iob_no_profile);
  zxs_handle_close(f->self_no_read);
  zxs_handle_close(f->other);
  zxs_handle_close(f->exited);
  zxs_handle_close(f->iob);
  zxs_fxt_buf_destroy(&g_buf);
  memset(f, 0, sizeof(*f));
}

// --- Row helpers (each returns a status; secondary checks return ROW_* with g_note) ------------

static const zx_sampler_config_t* cfg(int64_t period, size_t buffer_size, uint64_t discipline) {
  static zx_sampler_config_t c;
  c.period = period;
  c.buffer_size = buffer_size;
  c.iobuffer_discipline = discipline;
  return &c;
}
#define CFG_OK cfg(1000000, 5000, 0)
#define CFG_SIZE sizeof(zx_sampler_config_t)

// create; the out handle must be ZX_HANDLE_INVALID on failure. A success is closed again.
static zx_status_t create_st(zx_handle_t rsrc, uint64_t options, const zx_sampler_config_t* c,
                             size_t size) {
  zx_handle_t out = 0xdeadbeef;
  zx_status_t s = zxs_sampler_create(rsrc, options, c, size, &out);
  if (s != ZX_OK && out != ZX_HANDLE_INVALID) {
    note("*iob_out = %#x after %s", out, zxs_status_string(s));
    return ROW_OUT_NOT_CLEARED;
  }
  if (s == ZX_OK) zxs_handle_close(out);
  return s;
}

// Closes the fixture's session first, so create can succeed.
static zx_status_t no_session(fixture_t* f) {
  zx_status_t s = zxs_handle_close(f->iob_no_profile);
  if (s == ZX_OK) s = zxs_handle_close(f->iob);
  f->iob = f->iob_no_profile = ZX_HANDLE_INVALID;
  return s;
}

static zx_status_t off(void) {
  zxs_set_debugging_syscalls_enabled(false);
  return ZX_OK;
}

// Starts the fixture's session with this thread attached.
static zx_status_t running(fixture_t* f) {
  zx_status_t s = zxs_sampler_attach(f->iob, f->self);
  if (s == ZX_OK) s = zxs_sampler_start(f->iob);
  return s;
}

// Evaluates `expr` only after `pre` succeeded (pre's failure is reported as the row's status).
static zx_status_t g_pre;
#define then(pre, expr) ((g_pre = (pre)) != ZX_OK ? g_pre : (expr))

static zx_status_t dup_st(zx_handle_t h, zx_rights_t rights) {
  zx_handle_t out = 0xdeadbeef;
  zx_status_t s = zxs_handle_duplicate(h, rights, &out);
  if (s != ZX_OK && out != ZX_HANDLE_INVALID) {
    note("*out = %#x after %s", out, zxs_status_string(s));
    return ROW_OUT_NOT_CLEARED;
  }
  if (s == ZX_OK) {
    zx_info_handle_basic_t a, b;
    if (zxs_object_get_info(h, ZX_INFO_HANDLE_BASIC, &a, sizeof(a), NULL, NULL) != ZX_OK ||
        zxs_object_get_info(out, ZX_INFO_HANDLE_BASIC, &b, sizeof(b), NULL, NULL) != ZX_OK ||
        a.koid != b.koid || b.rights != (rights == ZX_RIGHT_SAME_RIGHTS ? a.rights : rights)) {
      note("duplicate names another object or has rights %#x", b.rights);
      zxs_handle_close(out);
      return ROW_WRONG_RESULT;
    }
    zxs_handle_close(out);
  }
  return s;
}

// Closes a constant handle: OK, and it must stay usable.
static zx_status_t close_pinned(zx_handle_t h) {
  zx_status_t s = zxs_handle_close(h);
  zx_info_handle_basic_t info;
  if (zxs_object_get_info(h, ZX_INFO_HANDLE_BASIC, &info, sizeof(info), NULL, NULL) != ZX_OK) {
    note("the constant handle %#x died on close", h);
    return ROW_SIDE_EFFECT;
  }
  return s;
}

// A stale value whose table entry now holds another live handle: closes a duplicate, then
// duplicates until the same entry is reused. `*live` is the new handle in that entry.
static zx_handle_t g_reuse[HANDLE_TABLE_CAPACITY];
static zx_status_t reused_entry(zx_handle_t src, zx_handle_t* stale, zx_handle_t* live) {
  const uint32_t index_mask = 0xfffffu << 2;  // handle_table.c: bits 2..21
  zx_status_t s = zxs_handle_duplicate(src, ZX_RIGHT_SAME_RIGHTS, stale);
  if (s != ZX_OK) return s;
  zxs_handle_close(*stale);
  uint32_t n = 0;
  *live = ZX_HANDLE_INVALID;
  while (n < HANDLE_TABLE_CAPACITY) {
    zx_handle_t h;
    if (zxs_handle_duplicate(src, ZX_RIGHT_SAME_RIGHTS, &h) != ZX_OK) break;
    if ((h & index_mask) == (*stale & index_mask)) {
      *live = h;
      break;
    }
    g_reuse[n++] = h;
  }
  for (uint32_t i = 0; i < n; i++) zxs_handle_close(g_reuse[i]);
  if (*live == ZX_HANDLE_INVALID) {
    note("the entry was never reused");
    return ROW_WRONG_RESULT;
  }
  return ZX_OK;
}

static zx_status_t stale_close(void) {
  zx_handle_t stale, live;
  zx_status_t s = reused_entry(zxs_process_self(), &stale, &live);
  if (s != ZX_OK) return s;
  s = zxs_handle_close(stale);
  zx_info_handle_basic_t info;
  if (zxs_object_get_info(live, ZX_INFO_HANDLE_BASIC, &info, sizeof(info), NULL, NULL) != ZX_OK) {
    note("closing the stale value closed the live handle in its entry");
    s = ROW_SIDE_EFFECT;
  }
  zxs_handle_close(live);
  return s;
}

static zx_status_t stale_attach(fixture_t* f) {
  zx_handle_t stale, live;
  // A closed thread handle whose entry now holds another live thread handle: the stale value
  // must not reach the new one (attach would succeed).
  zx_status_t s = reused_entry(f->self, &stale, &live);
  if (s != ZX_OK) return s;
  s = zxs_sampler_attach(f->iob, stale);
  zxs_handle_close(live);
  return s;
}

// get_info with checks of actual/avail.
static zx_status_t info_st(zx_handle_t h, uint32_t topic, void* buf, size_t size,
                           size_t want_actual, size_t want_avail) {
  size_t actual = 12345, avail = 12345;
  zx_status_t s = zxs_object_get_info(h, topic, buf, size, &actual, &avail);
  if (s == ZX_OK && (actual != want_actual || avail != want_avail)) {
    note("actual %zu avail %zu, expected %zu %zu", actual, avail, want_actual, want_avail);
    return ROW_WRONG_RESULT;
  }
  return s;
}
static union {
  zx_info_handle_basic_t basic;
  zx_info_iob_t iob;
  zx_iob_region_info_t regions[FAKE_CPUS + 2];
  uint8_t bytes[(FAKE_CPUS + 2) * sizeof(zx_iob_region_info_t) + 8];
} g_info;

// map; a success is checked (the region reads as zeros) and unmapped.
static zx_status_t map_st(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                          zx_handle_t iob, uint32_t index, uint64_t offset, size_t len) {
  zx_vaddr_t addr = 0;
  zx_status_t s = zxs_vmar_map_iob(vmar, options, vmar_offset, iob, index, offset, len, &addr);
  if (s == ZX_OK) {
    const uint8_t* p = (const uint8_t*)addr;
    for (size_t i = 0; i < len; i++) {
      if (p[i] != 0) {
        note("mapped region not zero at %zu", i);
        s = ROW_WRONG_RESULT;
        break;
      }
    }
    zx_status_t u = zxs_vmar_unmap(zxs_vmar_root_self(), addr, len);
    if (s == ZX_OK && u != ZX_OK) {
      note("unmap after map: %s", zxs_status_string(u));
      s = ROW_SIDE_EFFECT;
    }
  }
  return s;
}

static zx_status_t map_null_out(fixture_t* f) {
  return zxs_vmar_map_iob(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, 0, 4096, NULL);
}

// A mapping for the unmap rows (teardown unmaps it).
static zx_vaddr_t mapped(fixture_t* f) {
  if (f->mapped == 0) {
    zxs_vmar_map_iob(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, 0, REGION_BYTES, &f->mapped);
  }
  return f->mapped;
}

// The mapping made before must still be valid after a failed unmap, and after close.
static zx_status_t unmap_st(fixture_t* f, zx_handle_t vmar, zx_vaddr_t addr, size_t len) {
  zx_status_t s = zxs_vmar_unmap(vmar, addr, len);
  if (s != ZX_OK && f->mapped != 0 && ((const volatile uint8_t*)f->mapped)[0] != 0) {
    note("mapping changed");
    return ROW_SIDE_EFFECT;
  }
  return s;
}

// A mapping outlives the session: readable after the last close, then unmapped.
static zx_status_t unmap_after_close(fixture_t* f) {
  if (mapped(f) == 0) return ROW_WRONG_RESULT;
  zx_status_t s = no_session(f);
  if (s != ZX_OK) return s;
  if (((const volatile uint8_t*)f->mapped)[REGION_BYTES - 1] != 0) return ROW_WRONG_RESULT;
  s = zxs_vmar_unmap(f->vmar, f->mapped, REGION_BYTES);
  if (s == ZX_OK) f->mapped = 0;
  return s;
}

static zx_status_t stats_st(zx_handle_t iob) {
  zxs_sampler_stats_t stats;
  return zxs_sampler_get_stats(iob, &stats);
}

static zx_status_t thread_get_null(void) { return zxs_thread_get((pthread_t)0x1234, NULL); }
static zx_status_t thread_get_st(pthread_t t) {
  zx_handle_t out = 0xdeadbeef;
  zx_status_t s = zxs_thread_get(t, &out);
  if (s != ZX_OK && out != ZX_HANDLE_INVALID) {
    note("*out = %#x after %s", out, zxs_status_string(s));
    return ROW_OUT_NOT_CLEARED;
  }
  if (s == ZX_OK) zxs_handle_close(out);
  return s;
}

// Attach, then the thread exits, then start: the thread is detached by itself.
static zx_status_t attach_then_exit(fixture_t* f) {
  zx_status_t s = zxs_sampler_attach(f->iob, f->other);
  if (s != ZX_OK) return s;
  fake_set_thread_alive(OTHER_KOID, false);
  s = zxs_sampler_start(f->iob);
  zxs_sampler_stats_t stats;
  if (s == ZX_OK && (zxs_sampler_get_stats(f->iob, &stats) != ZX_OK ||
                     stats.attached_threads != 0 || fake_source_armed(OTHER_KOID, NULL))) {
    note("exited thread still attached (%u) or armed", stats.attached_threads);
    return ROW_SIDE_EFFECT;
  }
  return s == ZX_OK ? zxs_sampler_attach(f->iob, f->other) : s;
}

// A failed attach leaves nothing attached.
static zx_status_t attach_failed_arm(fixture_t* f) {
  zx_status_t s = running(f);
  if (s != ZX_OK) return s;
  fake_fail_next_arm();
  s = zxs_sampler_attach(f->iob, f->other);
  zxs_sampler_stats_t stats;
  if (zxs_sampler_get_stats(f->iob, &stats) != ZX_OK || stats.attached_threads != 1) {
    note("attached threads %u after a failed attach", stats.attached_threads);
    return ROW_SIDE_EFFECT;
  }
  return s;
}

// A failed start changes nothing.
static zx_status_t start_twice(fixture_t* f) {
  zx_status_t s = running(f);
  if (s != ZX_OK) return s;
  uint32_t arms = fake_arm_count();
  s = zxs_sampler_start(f->iob);
  if (fake_arm_count() != arms) {
    note("a failed start armed sources");
    return ROW_SIDE_EFFECT;
  }
  return s;
}

// Closing the last handle of a running session stops and destroys it.
static zx_status_t close_running(fixture_t* f) {
  zx_status_t s = running(f);
  if (s != ZX_OK) return s;
  zxs_handle_close(f->iob_no_profile);
  f->iob_no_profile = ZX_HANDLE_INVALID;
  s = zxs_handle_close(f->iob);
  if (fake_source_armed(fake_self_koid(), NULL)) {
    note("source still armed after the last close");
    return ROW_SIDE_EFFECT;
  }
  return s;
}

// Closing one of two handles keeps the session.
static zx_status_t close_one_of_two(fixture_t* f) {
  zx_status_t s = zxs_handle_close(f->iob_no_profile);
  f->iob_no_profile = ZX_HANDLE_INVALID;
  if (s != ZX_OK) return s;
  return stats_st(f->iob);
}

// A region-create failure leaves no region and no session behind.
static zx_status_t create_no_memory(fixture_t* f) {
  zx_status_t s = no_session(f);
  if (s != ZX_OK) return s;
  fake_fail_next_region_create();
  return create_st(g_rsrc, 0, CFG_OK, CFG_SIZE);
}

// The handle table full: every call that makes a handle says NO_RESOURCES and leaks nothing.
static zx_handle_t g_fill[HANDLE_TABLE_CAPACITY];
static uint32_t fill_table(void) {
  uint32_t n = 0;
  while (n < HANDLE_TABLE_CAPACITY &&
         zxs_handle_duplicate(zxs_process_self(), ZX_RIGHT_SAME_RIGHTS, &g_fill[n]) == ZX_OK) {
    n++;
  }
  return n;
}
static void drain_table(uint32_t n) {
  for (uint32_t i = 0; i < n; i++) zxs_handle_close(g_fill[i]);
}
static zx_status_t full_table_dup(void) {
  uint32_t n = fill_table();
  zx_status_t s = dup_st(zxs_process_self(), ZX_RIGHT_SAME_RIGHTS);
  drain_table(n);
  return s;
}
static zx_status_t full_table_resource(void) {
  uint32_t n = fill_table();
  zx_handle_t out = 0xdeadbeef;
  zx_status_t s = zxs_debug_resource_get(&out);
  drain_table(n);
  if (s != ZX_OK && out != ZX_HANDLE_INVALID) return ROW_OUT_NOT_CLEARED;
  if (s == ZX_OK) zxs_handle_close(out);
  return s;
}
static zx_status_t full_table_thread_get(void) {
  uint32_t n = fill_table();
  zx_status_t s = thread_get_st((pthread_t)0x1234);
  drain_table(n);
  return s;
}
static zx_status_t full_table_create(fixture_t* f) {
  zx_status_t s = no_session(f);
  if (s != ZX_OK) return s;
  const uint32_t regions = fake_live_regions();
  uint32_t n = fill_table();
  s = create_st(g_rsrc, 0, CFG_OK, CFG_SIZE);
  drain_table(n);
  if (fake_live_regions() != regions) {
    note("%u regions left by the failed create", fake_live_regions() - regions);
    return ROW_SIDE_EFFECT;
  }
  return s;
}

// --- FXT writer helpers -------------------------------------------------------------------------

// A failed append writes nothing and makes the failure sticky.
static zx_status_t fxt(zx_status_t s) {
  if (s != ZX_OK) {
    if (g_buf.len != 0 || g_buf.status != s) {
      note("failed append left len %zu status %s", g_buf.len, zxs_status_string(g_buf.status));
      return ROW_SIDE_EFFECT;
    }
    if (zxs_fxt_write_magic(&g_buf) != s || g_buf.len != 0) {
      note("failure not sticky");
      return ROW_SIDE_EFFECT;
    }
  }
  return s;
}

static zxs_fxt_buf_t* B(void) { return &g_buf; }

static const zxs_fxt_kernel_object_t* kobj(uint32_t type, zxs_fxt_str_ref_t name) {
  static zxs_fxt_kernel_object_t o;
  o.obj_type = type;
  o.koid = 1;
  o.name = name;
  return &o;
}

static zxs_fxt_arg_t* args_of(zxs_fxt_arg_type_t type, size_t count) {
  static zxs_fxt_arg_t a[16];
  memset(a, 0, sizeof(a));
  for (size_t i = 0; i < count && i < 16; i++) {
    a[i].type = type;
    a[i].name = zxs_fxt_str_inline("n", 1);
  }
  return a;
}
static const zxs_fxt_arg_t* arg_bad_type(void) {
  zxs_fxt_arg_t* a = args_of(ZXS_FXT_ARG_NULL, 1);
  a[0].type = (zxs_fxt_arg_type_t)11;
  return a;
}
static const zxs_fxt_arg_t* arg_blob(const void* data, size_t size, size_t count) {
  zxs_fxt_arg_t* a = args_of(ZXS_FXT_ARG_BLOB, count);
  for (size_t i = 0; i < count; i++) a[i].blob = (zxs_fxt_bytes_t){data, size};
  return a;
}
static const zxs_fxt_arg_t* arg_str(zxs_fxt_str_ref_t value) {
  zxs_fxt_arg_t* a = args_of(ZXS_FXT_ARG_STRING, 1);
  a[0].str = value;
  return a;
}
static const zxs_fxt_arg_t* arg_name(zxs_fxt_str_ref_t name) {
  zxs_fxt_arg_t* a = args_of(ZXS_FXT_ARG_INT32, 1);
  a[0].name = name;
  return a;
}

static uint8_t g_big[3 * 16000];  // three blob arguments of 2001 words: over 4095 together

static const zxs_fxt_large_blob_t* blob(zxs_fxt_str_ref_t category, uint32_t thread_index,
                                        const void* data, size_t size) {
  static zxs_fxt_large_blob_t b;
  memset(&b, 0, sizeof(b));
  b.category = category;
  b.name = zxs_fxt_str_inline("x", 1);
  b.ticks = 1;
  b.thread.index = thread_index;
  b.payload.data = data;
  b.payload.size = size;
  return &b;
}

static zx_status_t encode_rejects(size_t n, const uint64_t* pcs) {
  uint64_t out[80];
  for (size_t i = 0; i < 80; i++) out[i] = 0x5a5a5a5a5a5a5a5au;
  size_t words = zxs_fxt_encode_sample(out, 1, 2, 3, pcs, n);
  if (words != 0) {
    note("encode of %zu PCs returned %zu words", n, words);
    return ROW_WRONG_RESULT;
  }
  for (size_t i = 0; i < 80; i++) {
    if (out[i] != 0x5a5a5a5a5a5a5a5au) {
      note("a rejected encode wrote word %zu", i);
      return ROW_SIDE_EFFECT;
    }
  }
  return ZX_OK;
}

static zx_status_t reader_st(bool null_reader, const void* data, size_t size) {
  zxs_fxt_reader_t r;
  memset(&r, 0x5a, sizeof(r));
  zx_status_t s = zxs_fxt_reader_init(null_reader ? NULL : &r, data, size);
  if (!null_reader) {
    zxs_fxt_record_t rec;
    if (s != ZX_OK && zxs_fxt_reader_next(&r, &rec)) {
      note("a reader whose init failed returned a record");
      s = ROW_SIDE_EFFECT;
    }
    zxs_fxt_reader_destroy(&r);  // allowed after a failed init
  }
  return s;
}

static zx_status_t region_iter_empty(void) {
  zxs_fxt_region_iter_t it;
  zxs_fxt_record_t rec;
  zxs_fxt_region_iter_init(&it, NULL, 0);
  if (zxs_fxt_region_next(&it, &rec)) return ROW_WRONG_RESULT;
  return it.status;
}

// Every FXT writer answers a NULL buffer with INVALID_ARGS (they crashed).
static zx_status_t writers_null_buf(void) {
  static const zxs_fxt_kernel_object_t kObj = {ZX_OBJ_TYPE_THREAD, 1, {0, NULL, 0}};
  static const zxs_fxt_event_t kEvent = {0};
  static const zxs_fxt_large_blob_t kBlob = {0};
  const zx_status_t statuses[] = {
      zxs_fxt_write_raw(NULL, g_big, 8),
      zxs_fxt_write_magic(NULL),
      zxs_fxt_write_initialization(NULL, 1),
      zxs_fxt_write_provider_info(NULL, 1, "p", 1),
      zxs_fxt_write_provider_section(NULL, 1),
      zxs_fxt_write_string(NULL, 1, "a", 1),
      zxs_fxt_write_thread(NULL, 1, 1, 2),
      zxs_fxt_write_kernel_object(NULL, &kObj, NULL, 0),
      zxs_fxt_write_instant_event(NULL, &kEvent, NULL, 0),
      zxs_fxt_write_large_blob(NULL, &kBlob, NULL, 0),
      zxs_fxt_write_attachment(NULL, &kBlob),
  };
  for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
    if (statuses[i] != ZX_ERR_INVALID_ARGS) {
      note("writer %zu answered %s", i, zxs_status_string(statuses[i]));
      return ROW_WRONG_RESULT;
    }
  }
  return ZX_ERR_INVALID_ARGS;
}

// The calls without a status take NULL as free() does: nothing happens (they crashed).
static zx_status_t void_calls_null(void) {
  zxs_fxt_buf_init(NULL);
  zxs_fxt_buf_reset(NULL);
  zxs_fxt_buf_destroy(NULL);
  zxs_fxt_region_iter_init(NULL, g_big, 8);
  zxs_fxt_reader_destroy(NULL);
  return ZX_OK;
}

// The calls that answer bool answer false for NULL (they crashed).
static zx_status_t bool_calls_null(void) {
  zxs_fxt_record_t rec;
  zxs_fxt_region_iter_t it;
  zxs_fxt_region_iter_init(&it, g_big, 8);
  zxs_fxt_reader_t reader;
  if (zxs_fxt_reader_init(&reader, NULL, 0) != ZX_OK) return ROW_WRONG_RESULT;
  const bool any = zxs_fxt_region_next(NULL, &rec) || zxs_fxt_region_next(&it, NULL) ||
                   zxs_fxt_reader_next(NULL, &rec) || zxs_fxt_reader_next(&reader, NULL);
  zxs_fxt_reader_destroy(&reader);
  return any ? ROW_WRONG_RESULT : ZX_OK;
}

// An encode into NULL, or of NULL PCs, writes nothing and answers 0 words (it crashed).
static zx_status_t encode_null(void) {
  const uint64_t pcs[2] = {1, 2};
  uint64_t out[8];
  if (zxs_fxt_encode_sample(NULL, 1, 2, 3, pcs, 2) != 0) return ROW_WRONG_RESULT;
  return encode_rejects(2, NULL) == ZX_OK && zxs_fxt_encode_sample(out, 1, 2, 3, NULL, 2) == 0
             ? ZX_OK
             : ROW_WRONG_RESULT;
}

// --- The rows -----------------------------------------------------------------------------------
//
// X(name, expected status, flags, expression). `f` is the fixture. Flags: ISOLATE runs the row
// in a forked child; LIBRARY_BUG marks a row that fails because of a library defect.
#define NONE 0
#define ISOLATE 1
#define LIBRARY_BUG 2

#define PAGE 4096u
#define BIG_ALIGNED (SIZE_MAX & ~(size_t)(PAGE - 1))
#define STR_IN(s) zxs_fxt_str_inline(s, sizeof(s) - 1)
#define HANDLE_FAR (((HANDLE_TABLE_CAPACITY + 1u) << 2) | 3u)  // an index past the table

#define SESSION_ROWS(X)                                                                            \
  /* zxs_sampler_create: switched off wins over everything */                                      \
  X(create_off, ZX_ERR_NOT_SUPPORTED, NONE, then(off(), create_st(0x1234, 7, NULL, 0)))            \
  X(create_off_good_args, ZX_ERR_NOT_SUPPORTED, NONE,                                              \
    then(no_session(f), then(off(), create_st(f->rsrc, 0, CFG_OK, CFG_SIZE))))                     \
  /* the resource: invalid, closed, wrong type, before options and config */                       \
  X(create_rsrc_zero, ZX_ERR_BAD_HANDLE, NONE, create_st(0, 0, CFG_OK, CFG_SIZE))                  \
  X(create_rsrc_garbage, ZX_ERR_BAD_HANDLE, NONE, create_st(0x1234, 0, CFG_OK, CFG_SIZE))          \
  X(create_rsrc_all_ones, ZX_ERR_BAD_HANDLE, NONE, create_st(0xffffffffu, 0, CFG_OK, CFG_SIZE))    \
  X(create_rsrc_past_table, ZX_ERR_BAD_HANDLE, NONE, create_st(HANDLE_FAR, 0, CFG_OK, CFG_SIZE))   \
  X(create_rsrc_closed, ZX_ERR_BAD_HANDLE, NONE, create_st(f->closed_rsrc, 0, CFG_OK, CFG_SIZE))   \
  X(create_rsrc_closed_before_options, ZX_ERR_BAD_HANDLE, NONE,                                    \
    create_st(f->closed_rsrc, 1, NULL, 0))                                                         \
  X(create_rsrc_process, ZX_ERR_WRONG_TYPE, NONE, create_st(f->process, 0, CFG_OK, CFG_SIZE))      \
  X(create_rsrc_thread, ZX_ERR_WRONG_TYPE, NONE, create_st(f->self, 0, CFG_OK, CFG_SIZE))          \
  X(create_rsrc_vmar, ZX_ERR_WRONG_TYPE, NONE, create_st(f->vmar, 0, CFG_OK, CFG_SIZE))            \
  X(create_rsrc_iob, ZX_ERR_WRONG_TYPE, NONE, create_st(f->iob, 0, CFG_OK, CFG_SIZE))              \
  X(create_rsrc_wrong_type_before_options, ZX_ERR_WRONG_TYPE, NONE,                                \
    create_st(f->process, 1, NULL, 0))                                                             \
  /* options, then config */                                                                       \
  X(create_options_1, ZX_ERR_INVALID_ARGS, NONE, create_st(f->rsrc, 1, CFG_OK, CFG_SIZE))          \
  X(create_options_max, ZX_ERR_INVALID_ARGS, NONE,                                                 \
    create_st(f->rsrc, UINT64_MAX, CFG_OK, CFG_SIZE))                                              \
  X(create_options_before_config, ZX_ERR_INVALID_ARGS, NONE, create_st(f->rsrc, 1, NULL, 0))       \
  X(create_config_null, ZX_ERR_INVALID_ARGS, NONE, create_st(f->rsrc, 0, NULL, CFG_SIZE))          \
  X(create_config_size_0, ZX_ERR_INVALID_ARGS, NONE, create_st(f->rsrc, 0, CFG_OK, 0))             \
  X(create_config_size_short, ZX_ERR_INVALID_ARGS, NONE,                                           \
    create_st(f->rsrc, 0, CFG_OK, CFG_SIZE - 1))                                                   \
  X(create_config_size_long, ZX_ERR_INVALID_ARGS, NONE,                                            \
    create_st(f->rsrc, 0, CFG_OK, CFG_SIZE + 1))                                                   \
  X(create_config_size_max, ZX_ERR_INVALID_ARGS, NONE, create_st(f->rsrc, 0, CFG_OK, SIZE_MAX))    \
  X(create_discipline_1, ZX_ERR_INVALID_ARGS, NONE,                                                \
    create_st(f->rsrc, 0, cfg(1000000, 5000, 1), CFG_SIZE))                                        \
  X(create_discipline_max, ZX_ERR_INVALID_ARGS, NONE,                                              \
    create_st(f->rsrc, 0, cfg(1000000, 5000, UINT64_MAX), CFG_SIZE))                               \
  X(create_buffer_0, ZX_ERR_INVALID_ARGS, NONE,                                                    \
    create_st(f->rsrc, 0, cfg(1000000, 0, 0), CFG_SIZE))                                           \
  X(create_buffer_over_max, ZX_ERR_INVALID_ARGS, NONE,                                             \
    create_st(f->rsrc, 0, cfg(1000000, ZX_SAMPLER_MAX_BUFFER_SIZE + 1, 0), CFG_SIZE))              \
  X(create_buffer_size_max, ZX_ERR_INVALID_ARGS, NONE,                                             \
    create_st(f->rsrc, 0, cfg(1000000, SIZE_MAX, 0), CFG_SIZE))                                    \
  X(create_buffer_rounds_to_zero, ZX_ERR_INVALID_ARGS, NONE,                                       \
    create_st(f->rsrc, 0, cfg(1000000, SIZE_MAX - 100, 0), CFG_SIZE))                              \
  X(create_period_below_min, ZX_ERR_INVALID_ARGS, NONE,                                            \
    create_st(f->rsrc, 0, cfg(ZX_SAMPLER_MIN_PERIOD - 1, 5000, 0), CFG_SIZE))                      \
  X(create_period_0, ZX_ERR_INVALID_ARGS, NONE, create_st(f->rsrc, 0, cfg(0, 5000, 0), CFG_SIZE))  \
  X(create_period_negative, ZX_ERR_INVALID_ARGS, NONE,                                             \
    create_st(f->rsrc, 0, cfg(-1, 5000, 0), CFG_SIZE))                                             \
  X(create_period_int64_min, ZX_ERR_INVALID_ARGS, NONE,                                            \
    create_st(f->rsrc, 0, cfg(INT64_MIN, 5000, 0), CFG_SIZE))                                      \
  X(create_out_null, ZX_ERR_INVALID_ARGS, NONE,                                                    \
    zxs_sampler_create(f->rsrc, 0, CFG_OK, CFG_SIZE, NULL))                                        \
  X(create_out_null_no_session, ZX_ERR_INVALID_ARGS, NONE,                                         \
    then(no_session(f), zxs_sampler_create(f->rsrc, 0, CFG_OK, CFG_SIZE, NULL)))                   \
  /* the singleton, after every argument check */                                                  \
  X(create_while_live, ZX_ERR_ALREADY_EXISTS, NONE, create_st(f->rsrc, 0, CFG_OK, CFG_SIZE))       \
  X(create_while_running, ZX_ERR_ALREADY_EXISTS, NONE,                                             \
    then(running(f), create_st(f->rsrc, 0, CFG_OK, CFG_SIZE)))                                     \
  X(create_boundaries_min_period, ZX_OK, NONE,                                                     \
    then(no_session(f), create_st(f->rsrc, 0, cfg(ZX_SAMPLER_MIN_PERIOD, 1, 0), CFG_SIZE)))        \
  X(create_boundaries_max_period, ZX_OK, NONE,                                                     \
    then(no_session(f), create_st(f->rsrc, 0, cfg(INT64_MAX, 4096, 0), CFG_SIZE)))                 \
  X(create_no_memory, ZX_ERR_NO_MEMORY, NONE, create_no_memory(f))                                 \
  /* zxs_sampler_attach: the thread first (READ), then the IOBuffer (APPLY_PROFILE) */             \
  X(attach_off, ZX_ERR_NOT_SUPPORTED, NONE, then(off(), zxs_sampler_attach(0, 0)))                 \
  X(attach_thread_zero, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_attach(f->iob, 0))                    \
  X(attach_thread_garbage, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_attach(f->iob, 0x5555))            \
  X(attach_thread_closed, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_attach(f->iob, f->closed_thread))   \
  X(attach_thread_stale_reused, ZX_ERR_BAD_HANDLE, NONE, stale_attach(f))                          \
  X(attach_thread_is_process, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_attach(f->iob, f->process))     \
  X(attach_thread_is_vmar, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_attach(f->iob, f->vmar))           \
  X(attach_thread_is_resource, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_attach(f->iob, f->rsrc))       \
  X(attach_thread_is_iob, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_attach(f->iob, f->iob))             \
  X(attach_thread_no_read, ZX_ERR_ACCESS_DENIED, NONE,                                             \
    zxs_sampler_attach(f->iob, f->self_no_read))                                                   \
  X(attach_thread_before_iob, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_attach(0x5555, f->iob))         \
  X(attach_thread_no_read_before_iob, ZX_ERR_ACCESS_DENIED, NONE,                                  \
    zxs_sampler_attach(0x5555, f->self_no_read))                                                   \
  X(attach_iob_zero, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_attach(0, f->self))                      \
  X(attach_iob_garbage, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_attach(0xffffffffu, f->self))         \
  X(attach_iob_closed, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_attach(f->closed_iob, f->self))        \
  X(attach_iob_stale_session, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_attach(f->stale_iob, f->self))  \
  X(attach_iob_is_process, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_attach(f->process, f->self))       \
  X(attach_iob_is_thread, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_attach(f->self, f->self))           \
  X(attach_iob_is_vmar, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_attach(f->vmar, f->self))             \
  X(attach_iob_is_resource, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_attach(f->rsrc, f->self))         \
  X(attach_iob_no_profile, ZX_ERR_ACCESS_DENIED, NONE,                                             \
    zxs_sampler_attach(f->iob_no_profile, f->self))                                                \
  X(attach_exited_thread, ZX_ERR_BAD_STATE, NONE, zxs_sampler_attach(f->iob, f->exited))           \
  X(attach_exited_while_running, ZX_ERR_BAD_STATE, NONE,                                           \
    then(running(f), zxs_sampler_attach(f->iob, f->exited)))                                       \
  X(attach_then_exit_detaches, ZX_ERR_BAD_STATE, NONE, attach_then_exit(f))                        \
  X(attach_twice, ZX_OK, NONE,                                                                     \
    then(zxs_sampler_attach(f->iob, f->other), zxs_sampler_attach(f->iob, f->other)))              \
  X(attach_arm_failure_leaves_nothing, ZX_ERR_NO_RESOURCES, NONE, attach_failed_arm(f))            \
  /* zxs_sampler_start / stop */                                                                   \
  X(start_off, ZX_ERR_NOT_SUPPORTED, NONE, then(off(), zxs_sampler_start(0)))                      \
  X(start_zero, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_start(0))                                     \
  X(start_closed, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_start(f->closed_iob))                       \
  X(start_stale_session, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_start(f->stale_iob))                 \
  X(start_process, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_start(f->process))                         \
  X(start_thread, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_start(f->self))                             \
  X(start_vmar, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_start(f->vmar))                               \
  X(start_resource, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_start(f->rsrc))                           \
  X(start_no_profile, ZX_ERR_ACCESS_DENIED, NONE, zxs_sampler_start(f->iob_no_profile))            \
  X(start_twice, ZX_ERR_BAD_STATE, NONE, start_twice(f))                                           \
  X(start_nothing_attached, ZX_OK, NONE, zxs_sampler_start(f->iob))                                \
  X(stop_off, ZX_ERR_NOT_SUPPORTED, NONE, then(running(f), then(off(), zxs_sampler_stop(f->iob)))) \
  X(stop_zero, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_stop(0))                                       \
  X(stop_closed, ZX_ERR_BAD_HANDLE, NONE, then(running(f), zxs_sampler_stop(f->closed_iob)))       \
  X(stop_stale_session, ZX_ERR_BAD_HANDLE, NONE, zxs_sampler_stop(f->stale_iob))                   \
  X(stop_process, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_stop(f->process))                           \
  X(stop_thread, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_stop(f->self))                               \
  X(stop_vmar, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_stop(f->vmar))                                 \
  X(stop_resource, ZX_ERR_WRONG_TYPE, NONE, zxs_sampler_stop(f->rsrc))                             \
  X(stop_no_profile, ZX_ERR_ACCESS_DENIED, NONE,                                                   \
    then(running(f), zxs_sampler_stop(f->iob_no_profile)))                                         \
  X(stop_not_running, ZX_ERR_BAD_STATE, NONE, zxs_sampler_stop(f->iob))                            \
  X(stop_twice, ZX_ERR_BAD_STATE, NONE,                                                            \
    then(running(f), then(zxs_sampler_stop(f->iob), zxs_sampler_stop(f->iob))))                    \
  /* zxs_sampler_get_stats */                                                                      \
  X(stats_null, ZX_ERR_INVALID_ARGS, NONE, zxs_sampler_get_stats(f->iob, NULL))                    \
  X(stats_zero, ZX_ERR_BAD_HANDLE, NONE, stats_st(0))                                              \
  X(stats_closed, ZX_ERR_BAD_HANDLE, NONE, stats_st(f->closed_iob))                                \
  X(stats_stale_session, ZX_ERR_BAD_HANDLE, NONE, stats_st(f->stale_iob))                          \
  X(stats_process, ZX_ERR_WRONG_TYPE, NONE, stats_st(f->process))                                  \
  X(stats_thread, ZX_ERR_WRONG_TYPE, NONE, stats_st(f->self))                                      \
  X(stats_vmar, ZX_ERR_WRONG_TYPE, NONE, stats_st(f->vmar))                                        \
  X(stats_resource, ZX_ERR_WRONG_TYPE, NONE, stats_st(f->rsrc))                                    \
  X(stats_when_off, ZX_OK, NONE, then(off(), stats_st(f->iob)))                                    \
  /* zxs_handle_close */                                                                           \
  X(close_invalid_is_ok, ZX_OK, NONE, zxs_handle_close(ZX_HANDLE_INVALID))                         \
  X(close_garbage, ZX_ERR_BAD_HANDLE, NONE, zxs_handle_close(0x5555))                              \
  X(close_fixed_bits_clear, ZX_ERR_BAD_HANDLE, NONE, zxs_handle_close(0x4))                        \
  X(close_index_zero, ZX_ERR_BAD_HANDLE, NONE, zxs_handle_close(0x3))                              \
  X(close_all_ones, ZX_ERR_BAD_HANDLE, NONE, zxs_handle_close(0xffffffffu))                        \
  X(close_past_table, ZX_ERR_BAD_HANDLE, NONE, zxs_handle_close(HANDLE_FAR))                       \
  X(close_closed_iob, ZX_ERR_BAD_HANDLE, NONE, zxs_handle_close(f->closed_iob))                    \
  X(close_closed_thread, ZX_ERR_BAD_HANDLE, NONE, zxs_handle_close(f->closed_thread))              \
  X(close_closed_resource, ZX_ERR_BAD_HANDLE, NONE, zxs_handle_close(f->closed_rsrc))              \
  X(close_stale_session, ZX_ERR_BAD_HANDLE, NONE, zxs_handle_close(f->stale_iob))                  \
  X(close_stale_value_of_reused_entry, ZX_ERR_BAD_HANDLE, NONE, stale_close())                     \
  X(close_process_self_pinned, ZX_OK, NONE, close_pinned(f->process))                              \
  X(close_vmar_root_pinned, ZX_OK, NONE, close_pinned(f->vmar))                                    \
  X(close_thread_self_pinned, ZX_OK, NONE, close_pinned(f->self))                                  \
  X(close_one_of_two_keeps_session, ZX_OK, NONE, close_one_of_two(f))                              \
  X(close_last_while_running, ZX_OK, NONE, close_running(f))                                       \
  X(close_twice, ZX_ERR_BAD_HANDLE, NONE,                                                          \
    then(zxs_handle_close(f->other), zxs_handle_close(f->other)))                                  \
  /* zxs_handle_duplicate */                                                                       \
  X(dup_out_null, ZX_ERR_INVALID_ARGS, NONE,                                                       \
    zxs_handle_duplicate(f->iob, ZX_RIGHT_SAME_RIGHTS, NULL))                                      \
  X(dup_out_null_bad_handle, ZX_ERR_INVALID_ARGS, NONE,                                            \
    zxs_handle_duplicate(0x5555, ZX_RIGHT_SAME_RIGHTS, NULL))                                      \
  X(dup_zero, ZX_ERR_BAD_HANDLE, NONE, dup_st(0, ZX_RIGHT_SAME_RIGHTS))                            \
  X(dup_garbage, ZX_ERR_BAD_HANDLE, NONE, dup_st(0x5555, ZX_RIGHT_SAME_RIGHTS))                    \
  X(dup_closed, ZX_ERR_BAD_HANDLE, NONE, dup_st(f->closed_iob, ZX_RIGHT_SAME_RIGHTS))              \
  X(dup_stale_session, ZX_ERR_BAD_HANDLE, NONE, dup_st(f->stale_iob, ZX_RIGHT_SAME_RIGHTS))        \
  X(dup_rights_not_subset, ZX_ERR_INVALID_ARGS, NONE, dup_st(f->rsrc, ZX_RIGHT_READ))              \
  X(dup_rights_unknown_bit, ZX_ERR_INVALID_ARGS, NONE, dup_st(f->iob, 1u << 30))                   \
  X(dup_same_rights_plus_bits, ZX_ERR_INVALID_ARGS, NONE,                                          \
    dup_st(f->iob, ZX_RIGHT_SAME_RIGHTS | ZX_RIGHT_READ))                                          \
  X(dup_rights_all_ones, ZX_ERR_INVALID_ARGS, NONE, dup_st(f->iob, 0xffffffffu))                   \
  X(dup_rights_none, ZX_OK, NONE, dup_st(f->iob, ZX_RIGHT_NONE))                                   \
  X(dup_same_rights, ZX_OK, NONE, dup_st(f->iob, ZX_RIGHT_SAME_RIGHTS))                            \
  X(dup_pinned_process, ZX_OK, NONE, dup_st(f->process, ZX_RIGHT_SAME_RIGHTS))                     \
  X(dup_pinned_thread, ZX_OK, NONE, dup_st(f->self, ZX_RIGHT_READ))                                \
  X(dup_pinned_vmar, ZX_OK, NONE, dup_st(f->vmar, ZX_RIGHT_SAME_RIGHTS))                           \
  X(dup_no_duplicate_right, ZX_ERR_ACCESS_DENIED, NONE, dup_without_duplicate_right(f))            \
  /* zxs_object_get_info */                                                                        \
  X(info_null_buffer_nonzero_size, ZX_ERR_INVALID_ARGS, NONE,                                      \
    info_st(f->iob, ZX_INFO_IOB, NULL, 1, 0, 0))                                                   \
  X(info_null_buffer_size_max, ZX_ERR_INVALID_ARGS, NONE,                                          \
    info_st(f->iob, ZX_INFO_IOB_REGIONS, NULL, SIZE_MAX, 0, 0))                                    \
  X(info_unknown_topic_0, ZX_ERR_NOT_SUPPORTED, NONE,                                              \
    info_st(f->iob, 0, &g_info, sizeof(g_info), 0, 0))                                             \
  X(info_unknown_topic_36, ZX_ERR_NOT_SUPPORTED, NONE,                                             \
    info_st(f->iob, 36, &g_info, sizeof(g_info), 0, 0))                                            \
  X(info_unknown_topic_max, ZX_ERR_NOT_SUPPORTED, NONE,                                            \
    info_st(f->iob, UINT32_MAX, &g_info, sizeof(g_info), 0, 0))                                    \
  X(info_basic_zero, ZX_ERR_BAD_HANDLE, NONE,                                                      \
    info_st(0, ZX_INFO_HANDLE_BASIC, &g_info, sizeof(g_info), 1, 1))                               \
  X(info_basic_closed, ZX_ERR_BAD_HANDLE, NONE,                                                    \
    info_st(f->closed_thread, ZX_INFO_HANDLE_BASIC, &g_info, sizeof(g_info), 1, 1))                \
  X(info_basic_small, ZX_ERR_BUFFER_TOO_SMALL, NONE,                                               \
    info_st(f->iob, ZX_INFO_HANDLE_BASIC, &g_info, sizeof(zx_info_handle_basic_t) - 1, 0, 1))      \
  X(info_basic_null_empty, ZX_ERR_BUFFER_TOO_SMALL, NONE,                                          \
    info_st(f->iob, ZX_INFO_HANDLE_BASIC, NULL, 0, 0, 1))                                          \
  X(info_basic_unaligned_buffer, ZX_OK, NONE,                                                      \
    info_st(f->iob, ZX_INFO_HANDLE_BASIC, g_info.bytes + 1, sizeof(zx_info_handle_basic_t), 1, 1)) \
  X(info_basic_process, ZX_OK, NONE,                                                               \
    info_st(f->process, ZX_INFO_HANDLE_BASIC, &g_info, sizeof(g_info), 1, 1))                      \
  X(info_basic_vmar, ZX_OK, NONE,                                                                  \
    info_st(f->vmar, ZX_INFO_HANDLE_BASIC, &g_info, sizeof(g_info), 1, 1))                         \
  X(info_basic_resource, ZX_OK, NONE,                                                              \
    info_st(f->rsrc, ZX_INFO_HANDLE_BASIC, &g_info, sizeof(g_info), 1, 1))                         \
  X(info_basic_thread_no_read, ZX_OK, NONE,                                                        \
    info_st(f->self_no_read, ZX_INFO_HANDLE_BASIC, &g_info, sizeof(g_info), 1, 1))                 \
  X(info_iob_zero, ZX_ERR_BAD_HANDLE, NONE,                                                        \
    info_st(0, ZX_INFO_IOB, &g_info, sizeof(g_info), 1, 1))                                        \
  X(info_iob_closed, ZX_ERR_BAD_HANDLE, NONE,                                                      \
    info_st(f->closed_iob, ZX_INFO_IOB, &g_info, sizeof(g_info), 1, 1))                            \
  X(info_iob_stale_session, ZX_ERR_BAD_HANDLE, NONE,                                               \
    info_st(f->stale_iob, ZX_INFO_IOB_REGIONS, &g_info, sizeof(g_info), 4, 4))                     \
  X(info_iob_process, ZX_ERR_WRONG_TYPE, NONE,                                                     \
    info_st(f->process, ZX_INFO_IOB, &g_info, sizeof(g_info), 1, 1))                               \
  X(info_iob_thread, ZX_ERR_WRONG_TYPE, NONE,                                                      \
    info_st(f->self, ZX_INFO_IOB, &g_info, sizeof(g_info), 1, 1))                                  \
  X(info_iob_vmar, ZX_ERR_WRONG_TYPE, NONE,                                                        \
    info_st(f->vmar, ZX_INFO_IOB_REGIONS, &g_info, sizeof(g_info), 4, 4))                          \
  X(info_iob_resource, ZX_ERR_WRONG_TYPE, NONE,                                                    \
    info_st(f->rsrc, ZX_INFO_IOB_REGIONS, &g_info, sizeof(g_info), 4, 4))                          \
  X(info_iob_small, ZX_ERR_BUFFER_TOO_SMALL, NONE,                                                 \
    info_st(f->iob, ZX_INFO_IOB, &g_info, sizeof(zx_info_iob_t) - 1, 0, 1))                        \
  X(info_iob_null_empty, ZX_ERR_BUFFER_TOO_SMALL, NONE,                                            \
    info_st(f->iob, ZX_INFO_IOB, NULL, 0, 0, 1))                                                   \
  X(info_regions_null_empty, ZX_OK, NONE, info_st(f->iob, ZX_INFO_IOB_REGIONS, NULL, 0, 0, 4))     \
  X(info_regions_one_byte, ZX_OK, NONE, info_st(f->iob, ZX_INFO_IOB_REGIONS, &g_info, 1, 0, 4))    \
  X(info_regions_room_for_one, ZX_OK, NONE,                                                        \
    info_st(f->iob, ZX_INFO_IOB_REGIONS, &g_info, sizeof(zx_iob_region_info_t), 1, 4))             \
  X(info_regions_unaligned_buffer, ZX_OK, NONE,                                                    \
    info_st(f->iob, ZX_INFO_IOB_REGIONS, g_info.bytes + 1,                                         \
            (FAKE_CPUS + 1) * sizeof(zx_iob_region_info_t), 4, 4))                                 \
  X(info_regions_actual_avail_null, ZX_OK, NONE,                                                   \
    zxs_object_get_info(f->iob, ZX_INFO_IOB_REGIONS, &g_info, sizeof(g_info), NULL, NULL))         \
  X(info_iob_no_inspect, ZX_ERR_ACCESS_DENIED, NONE,                                               \
    then(zxs_handle_close(f->iob_no_profile),                                                      \
         then(zxs_handle_duplicate(f->iob, IOB_RIGHTS & ~ZX_RIGHT_INSPECT, &f->iob_no_profile),    \
              info_st(f->iob_no_profile, ZX_INFO_IOB, &g_info, sizeof(g_info), 1, 1))))            \
  /* zxs_vmar_map_iob: vmar, then iob, then options, then arguments, then range */                 \
  X(map_vmar_zero, ZX_ERR_BAD_HANDLE, NONE, map_st(0, ZX_VM_PERM_READ, 0, f->iob, 0, 0, PAGE))     \
  X(map_vmar_garbage, ZX_ERR_BAD_HANDLE, NONE,                                                     \
    map_st(0x5555, ZX_VM_PERM_READ, 0, f->iob, 0, 0, PAGE))                                        \
  X(map_vmar_is_iob, ZX_ERR_WRONG_TYPE, NONE,                                                      \
    map_st(f->iob, ZX_VM_PERM_READ, 0, f->iob, 0, 0, PAGE))                                        \
  X(map_vmar_is_process, ZX_ERR_WRONG_TYPE, NONE,                                                  \
    map_st(f->process, ZX_VM_PERM_READ, 0, f->iob, 0, 0, PAGE))                                    \
  X(map_vmar_is_thread, ZX_ERR_WRONG_TYPE, NONE,                                                   \
    map_st(f->self, ZX_VM_PERM_READ, 0, f->iob, 0, 0, PAGE))                                       \
  X(map_vmar_is_resource, ZX_ERR_WRONG_TYPE, NONE,                                                 \
    map_st(f->rsrc, ZX_VM_PERM_READ, 0, f->iob, 0, 0, PAGE))                                       \
  X(map_vmar_before_iob, ZX_ERR_WRONG_TYPE, NONE, map_st(f->process, 0, 1, 0, 99, 1, 0))           \
  X(map_iob_zero, ZX_ERR_BAD_HANDLE, NONE, map_st(f->vmar, ZX_VM_PERM_READ, 0, 0, 0, 0, PAGE))     \
  X(map_iob_closed, ZX_ERR_BAD_HANDLE, NONE,                                                       \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->closed_iob, 0, 0, PAGE))                                \
  X(map_iob_stale_session, ZX_ERR_BAD_HANDLE, NONE,                                                \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->stale_iob, 0, 0, PAGE))                                 \
  X(map_iob_is_vmar, ZX_ERR_WRONG_TYPE, NONE,                                                      \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->vmar, 0, 0, PAGE))                                      \
  X(map_iob_is_thread, ZX_ERR_WRONG_TYPE, NONE,                                                    \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->self, 0, 0, PAGE))                                      \
  X(map_iob_is_resource, ZX_ERR_WRONG_TYPE, NONE,                                                  \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->rsrc, 0, 0, PAGE))                                      \
  X(map_iob_before_options, ZX_ERR_BAD_HANDLE, NONE,                                               \
    map_st(f->vmar, ZX_VM_PERM_WRITE, 1, f->closed_iob, 99, 1, 0))                                 \
  X(map_write, ZX_ERR_ACCESS_DENIED, NONE,                                                         \
    map_st(f->vmar, ZX_VM_PERM_READ | ZX_VM_PERM_WRITE, 0, f->iob, 0, 0, PAGE))                    \
  X(map_write_only, ZX_ERR_ACCESS_DENIED, NONE,                                                    \
    map_st(f->vmar, ZX_VM_PERM_WRITE, 0, f->iob, 0, 0, PAGE))                                      \
  X(map_execute, ZX_ERR_ACCESS_DENIED, NONE,                                                       \
    map_st(f->vmar, ZX_VM_PERM_READ | ZX_VM_PERM_EXECUTE, 0, f->iob, 0, 0, PAGE))                  \
  X(map_write_before_range, ZX_ERR_ACCESS_DENIED, NONE,                                            \
    map_st(f->vmar, ZX_VM_PERM_WRITE, 0, f->iob, 99, 0, PAGE))                                     \
  X(map_no_permission, ZX_ERR_INVALID_ARGS, NONE, map_st(f->vmar, 0, 0, f->iob, 0, 0, PAGE))       \
  X(map_specific, ZX_ERR_NOT_SUPPORTED, NONE,                                                      \
    map_st(f->vmar, ZX_VM_PERM_READ | ZX_VM_SPECIFIC, 0, f->iob, 0, 0, PAGE))                      \
  X(map_specific_offset, ZX_ERR_NOT_SUPPORTED, NONE,                                               \
    map_st(f->vmar, ZX_VM_PERM_READ | ZX_VM_SPECIFIC, PAGE, f->iob, 0, 0, PAGE))                   \
  X(map_specific_overwrite, ZX_ERR_NOT_SUPPORTED, NONE,                                            \
    map_st(f->vmar, ZX_VM_PERM_READ | ZX_VM_SPECIFIC_OVERWRITE, 0, f->iob, 0, 0, PAGE))            \
  X(map_offset_upper_limit, ZX_ERR_NOT_SUPPORTED, NONE,                                            \
    map_st(f->vmar, ZX_VM_PERM_READ | ZX_VM_OFFSET_IS_UPPER_LIMIT, PAGE, f->iob, 0, 0, PAGE))      \
  X(map_specific_before_range, ZX_ERR_NOT_SUPPORTED, NONE,                                         \
    map_st(f->vmar, ZX_VM_PERM_READ | ZX_VM_SPECIFIC, 0, f->iob, 99, 0, PAGE))                     \
  X(map_honoured_options, ZX_OK, NONE,                                                             \
    map_st(f->vmar,                                                                                \
           ZX_VM_PERM_READ | ZX_VM_MAP_RANGE | ZX_VM_ALLOW_FAULTS | ZX_VM_REQUIRE_NON_RESIZABLE |  \
               ZX_VM_PERM_READ_IF_XOM_UNSUPPORTED,                                                 \
           0, f->iob, 0, 0, PAGE))                                                                 \
  X(map_align_page, ZX_OK, NONE,                                                                   \
    map_st(f->vmar, ZX_VM_PERM_READ | ZX_VM_ALIGN_4KB, 0, f->iob, 0, 0, PAGE))                     \
  X(map_align_2mb, ZX_ERR_NOT_SUPPORTED, NONE,                                                     \
    map_st(f->vmar, ZX_VM_PERM_READ | ZX_VM_ALIGN_2MB, 0, f->iob, 0, 0, PAGE))                     \
  X(map_align_below_1kb, ZX_ERR_INVALID_ARGS, NONE,                                                \
    map_st(f->vmar, ZX_VM_PERM_READ | (9u << ZX_VM_ALIGN_BASE), 0, f->iob, 0, 0, PAGE))            \
  X(map_compact, ZX_ERR_INVALID_ARGS, NONE,                                                        \
    map_st(f->vmar, ZX_VM_PERM_READ | ZX_VM_COMPACT, 0, f->iob, 0, 0, PAGE))                       \
  X(map_unknown_option, ZX_ERR_INVALID_ARGS, NONE,                                                 \
    map_st(f->vmar, ZX_VM_PERM_READ | (1u << 30), 0, f->iob, 0, 0, PAGE))                          \
  X(map_vmar_offset, ZX_ERR_INVALID_ARGS, NONE,                                                    \
    map_st(f->vmar, ZX_VM_PERM_READ, PAGE, f->iob, 0, 0, PAGE))                                    \
  X(map_vmar_offset_max, ZX_ERR_INVALID_ARGS, NONE,                                                \
    map_st(f->vmar, ZX_VM_PERM_READ, SIZE_MAX, f->iob, 0, 0, PAGE))                                \
  X(map_out_null, ZX_ERR_INVALID_ARGS, NONE, map_null_out(f))                                      \
  X(map_len_zero, ZX_ERR_INVALID_ARGS, NONE, map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, 0, 0)) \
  X(map_len_unaligned, ZX_ERR_INVALID_ARGS, NONE,                                                  \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, 0, 100))                                        \
  X(map_len_size_max, ZX_ERR_INVALID_ARGS, NONE,                                                   \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, 0, SIZE_MAX))                                   \
  X(map_offset_unaligned, ZX_ERR_INVALID_ARGS, NONE,                                               \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, 10, PAGE))                                      \
  X(map_offset_uint64_max, ZX_ERR_INVALID_ARGS, NONE,                                              \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, UINT64_MAX, PAGE))                              \
  X(map_index_count, ZX_ERR_OUT_OF_RANGE, NONE,                                                    \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, FAKE_CPUS, 0, PAGE))                               \
  X(map_index_max, ZX_ERR_OUT_OF_RANGE, NONE,                                                      \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, UINT32_MAX, 0, PAGE))                              \
  X(map_len_past_end, ZX_ERR_OUT_OF_RANGE, NONE,                                                   \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, 0, REGION_BYTES + PAGE))                        \
  X(map_offset_past_end, ZX_ERR_OUT_OF_RANGE, NONE,                                                \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, REGION_BYTES, PAGE))                            \
  X(map_offset_far, ZX_ERR_OUT_OF_RANGE, NONE,                                                     \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, (uint64_t)1 << 40, PAGE))                       \
  X(map_offset_max_aligned, ZX_ERR_OUT_OF_RANGE, NONE,                                             \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, UINT64_MAX - (PAGE - 1), PAGE))                 \
  X(map_offset_plus_len_overflows, ZX_ERR_OUT_OF_RANGE, NONE,                                      \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, PAGE, BIG_ALIGNED))                             \
  X(map_len_huge_aligned, ZX_ERR_OUT_OF_RANGE, NONE,                                               \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, 0, BIG_ALIGNED))                                \
  X(map_len_wraps_offset, ZX_ERR_OUT_OF_RANGE, NONE,                                               \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, UINT64_MAX - (PAGE - 1), 2 * PAGE))             \
  X(map_whole_region, ZX_OK, NONE,                                                                 \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, FAKE_CPUS - 1, 0, REGION_BYTES))                   \
  X(map_last_page, ZX_OK, NONE,                                                                    \
    map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob, 0, REGION_BYTES - PAGE, PAGE))                     \
  X(map_iob_no_map_right, ZX_ERR_ACCESS_DENIED, NONE,                                              \
    then(zxs_handle_close(f->iob_no_profile),                                                      \
         then(zxs_handle_duplicate(f->iob, IOB_RIGHTS & ~ZX_RIGHT_MAP, &f->iob_no_profile),        \
              map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob_no_profile, 0, 0, PAGE))))                \
  X(map_iob_no_read_right, ZX_ERR_ACCESS_DENIED, NONE,                                             \
    then(zxs_handle_close(f->iob_no_profile),                                                      \
         then(zxs_handle_duplicate(f->iob, IOB_RIGHTS & ~ZX_RIGHT_READ, &f->iob_no_profile),       \
              map_st(f->vmar, ZX_VM_PERM_READ, 0, f->iob_no_profile, 0, 0, PAGE))))                \
  /* zxs_vmar_unmap */                                                                             \
  X(unmap_vmar_zero, ZX_ERR_BAD_HANDLE, NONE, unmap_st(f, 0, mapped(f), REGION_BYTES))             \
  X(unmap_vmar_garbage, ZX_ERR_BAD_HANDLE, NONE, unmap_st(f, 0x5555, mapped(f), REGION_BYTES))     \
  X(unmap_vmar_is_iob, ZX_ERR_WRONG_TYPE, NONE, unmap_st(f, f->iob, mapped(f), REGION_BYTES))      \
  X(unmap_vmar_is_process, ZX_ERR_WRONG_TYPE, NONE,                                                \
    unmap_st(f, f->process, mapped(f), REGION_BYTES))                                              \
  X(unmap_vmar_is_thread, ZX_ERR_WRONG_TYPE, NONE, unmap_st(f, f->self, mapped(f), REGION_BYTES))  \
  X(unmap_len_zero, ZX_ERR_INVALID_ARGS, NONE, unmap_st(f, f->vmar, mapped(f), 0))                 \
  X(unmap_len_unaligned, ZX_ERR_INVALID_ARGS, NONE, unmap_st(f, f->vmar, mapped(f), 100))          \
  X(unmap_len_size_max, ZX_ERR_INVALID_ARGS, NONE, unmap_st(f, f->vmar, mapped(f), SIZE_MAX))      \
  X(unmap_addr_unaligned, ZX_ERR_INVALID_ARGS, NONE,                                               \
    unmap_st(f, f->vmar, mapped(f) + 8, REGION_BYTES))                                             \
  X(unmap_addr_zero_len_zero, ZX_ERR_INVALID_ARGS, NONE, unmap_st(f, f->vmar, 0, 0))               \
  X(unmap_after_close_keeps_mapping, ZX_OK, NONE, unmap_after_close(f))                            \
  /* zxs_thread_get / zxs_debug_resource_get */                                                    \
  X(thread_get_out_null, ZX_ERR_INVALID_ARGS, NONE, thread_get_null())                             \
  X(thread_get_exited, ZX_ERR_BAD_STATE, NONE, thread_get_st((pthread_t)0x5678))                   \
  X(thread_get_unknown, ZX_ERR_NOT_SUPPORTED, NONE, thread_get_st((pthread_t)0x9abc))              \
  X(thread_get_ok, ZX_OK, NONE, thread_get_st((pthread_t)0x1234))                                  \
  X(resource_get_null, ZX_ERR_INVALID_ARGS, NONE, zxs_debug_resource_get(NULL))                    \
  /* the handle table full */                                                                      \
  X(full_table_duplicate, ZX_ERR_NO_RESOURCES, NONE, full_table_dup())                             \
  X(full_table_resource_get, ZX_ERR_NO_RESOURCES, NONE, full_table_resource())                     \
  X(full_table_thread_get, ZX_ERR_NO_RESOURCES, NONE, full_table_thread_get())                     \
  /* LIBRARY BUG: zxs_sampler_create() with the handle table full. zxs_handle_make() destroys      \
     the session object when it cannot make the handle (refs == 0), then create calls              \
     session_on_last_handle() on the freed session: a heap use-after-free (ASan:                   \
     heap-use-after-free in session_on_last_handle), garbage region count and CPU list. */         \
  X(full_table_create, ZX_ERR_NO_RESOURCES, ISOLATE | LIBRARY_BUG, full_table_create(f))

#define FXT_ROWS(X)                                                                                \
  X(fxt_raw_size_not_words, ZX_ERR_INVALID_ARGS, NONE, fxt(zxs_fxt_write_raw(B(), g_big, 7)))      \
  X(fxt_raw_null_data, ZX_ERR_INVALID_ARGS, NONE, fxt(zxs_fxt_write_raw(B(), NULL, 8)))            \
  X(fxt_raw_size_max, ZX_ERR_INVALID_ARGS, NONE, fxt(zxs_fxt_write_raw(B(), g_big, SIZE_MAX)))     \
  X(fxt_raw_size_huge_words, ZX_ERR_NO_MEMORY, NONE,                                               \
    fxt(zxs_fxt_write_raw(B(), g_big, SIZE_MAX & ~(size_t)7)))                                     \
  X(fxt_raw_null_empty, ZX_OK, NONE, fxt(zxs_fxt_write_raw(B(), NULL, 0)))                         \
  X(fxt_init_zero_rate, ZX_ERR_INVALID_ARGS, NONE, fxt(zxs_fxt_write_initialization(B(), 0)))      \
  X(fxt_provider_name_256, ZX_ERR_INVALID_ARGS, NONE,                                              \
    fxt(zxs_fxt_write_provider_info(B(), 1, (const char*)g_big, 256)))                             \
  X(fxt_provider_name_size_max, ZX_ERR_INVALID_ARGS, NONE,                                         \
    fxt(zxs_fxt_write_provider_info(B(), 1, (const char*)g_big, SIZE_MAX)))                        \
  X(fxt_provider_name_null, ZX_ERR_INVALID_ARGS, NONE,                                             \
    fxt(zxs_fxt_write_provider_info(B(), 1, NULL, 1)))                                             \
  X(fxt_string_index_0, ZX_ERR_INVALID_ARGS, NONE, fxt(zxs_fxt_write_string(B(), 0, "a", 1)))      \
  X(fxt_string_index_0x8000, ZX_ERR_INVALID_ARGS, NONE,                                            \
    fxt(zxs_fxt_write_string(B(), 0x8000, "a", 1)))                                                \
  X(fxt_string_index_max, ZX_ERR_INVALID_ARGS, NONE,                                               \
    fxt(zxs_fxt_write_string(B(), UINT32_MAX, "a", 1)))                                            \
  X(fxt_string_len_0x8000, ZX_ERR_INVALID_ARGS, NONE,                                              \
    fxt(zxs_fxt_write_string(B(), 1, (const char*)g_big, 0x8000)))                                 \
  X(fxt_string_len_size_max, ZX_ERR_INVALID_ARGS, NONE,                                            \
    fxt(zxs_fxt_write_string(B(), 1, (const char*)g_big, SIZE_MAX)))                               \
  X(fxt_string_null_data, ZX_ERR_INVALID_ARGS, NONE, fxt(zxs_fxt_write_string(B(), 1, NULL, 1)))   \
  X(fxt_thread_index_0, ZX_ERR_INVALID_ARGS, NONE, fxt(zxs_fxt_write_thread(B(), 0, 1, 2)))        \
  X(fxt_thread_index_256, ZX_ERR_INVALID_ARGS, NONE, fxt(zxs_fxt_write_thread(B(), 256, 1, 2)))    \
  X(fxt_thread_index_max, ZX_ERR_INVALID_ARGS, NONE,                                               \
    fxt(zxs_fxt_write_thread(B(), UINT32_MAX, 1, 2)))                                              \
  X(fxt_kobj_null, ZX_ERR_INVALID_ARGS, NONE,                                                      \
    fxt(zxs_fxt_write_kernel_object(B(), NULL, NULL, 0)))                                          \
  X(fxt_kobj_type_256, ZX_ERR_INVALID_ARGS, NONE,                                                  \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(256, STR_IN("t")), NULL, 0)))                        \
  X(fxt_kobj_name_index_0x8000, ZX_ERR_INVALID_ARGS, NONE,                                         \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, zxs_fxt_str_index(0x8000)), NULL, 0)))            \
  X(fxt_kobj_name_len_0x8000, ZX_ERR_INVALID_ARGS, NONE,                                           \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, zxs_fxt_str_inline((const char*)g_big, 0x8000)),  \
                                    NULL, 0)))                                                     \
  X(fxt_kobj_name_len_size_max, ZX_ERR_INVALID_ARGS, NONE,                                         \
    fxt(zxs_fxt_write_kernel_object(                                                               \
        B(), kobj(1, zxs_fxt_str_inline((const char*)g_big, SIZE_MAX)), NULL, 0)))                 \
  X(fxt_kobj_name_null, ZX_ERR_INVALID_ARGS, NONE,                                                 \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, zxs_fxt_str_inline(NULL, 3)), NULL, 0)))          \
  X(fxt_kobj_16_args, ZX_ERR_INVALID_ARGS, NONE,                                                   \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")), args_of(ZXS_FXT_ARG_NULL, 16),      \
                                    16)))                                                          \
  X(fxt_kobj_args_size_max, ZX_ERR_INVALID_ARGS, NONE,                                             \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")), args_of(ZXS_FXT_ARG_NULL, 1),       \
                                    SIZE_MAX)))                                                    \
  X(fxt_kobj_args_null, ZX_ERR_INVALID_ARGS, NONE,                                                 \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")), NULL, 1)))                          \
  X(fxt_kobj_arg_unknown_type, ZX_ERR_INVALID_ARGS, NONE,                                          \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")), arg_bad_type(), 1)))                \
  X(fxt_kobj_arg_blob_over_32_bits, ZX_ERR_INVALID_ARGS, NONE,                                     \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")),                                     \
                                    arg_blob(g_big, (size_t)0x100000000u, 1), 1)))                 \
  X(fxt_kobj_arg_blob_size_max, ZX_ERR_INVALID_ARGS, NONE,                                         \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")), arg_blob(g_big, SIZE_MAX, 1), 1)))  \
  X(fxt_kobj_arg_blob_null, ZX_ERR_INVALID_ARGS, NONE,                                             \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")), arg_blob(NULL, 8, 1), 1)))          \
  X(fxt_kobj_arg_blob_over_record, ZX_ERR_INVALID_ARGS, NONE,                                      \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")), arg_blob(g_big, 4095 * 8, 1), 1)))  \
  X(fxt_kobj_args_over_record, ZX_ERR_INVALID_ARGS, NONE,                                          \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")), arg_blob(g_big, 16000, 3), 3)))     \
  X(fxt_kobj_arg_string_too_long, ZX_ERR_INVALID_ARGS, NONE,                                       \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")),                                     \
                                    arg_str(zxs_fxt_str_inline((const char*)g_big, 0x8000)), 1)))  \
  X(fxt_kobj_arg_string_index_0x8000, ZX_ERR_INVALID_ARGS, NONE,                                   \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")), arg_str(zxs_fxt_str_index(0x8000)), \
                                    1)))                                                           \
  X(fxt_kobj_arg_name_null, ZX_ERR_INVALID_ARGS, NONE,                                             \
    fxt(zxs_fxt_write_kernel_object(B(), kobj(1, STR_IN("t")),                                     \
                                    arg_name(zxs_fxt_str_inline(NULL, 2)), 1)))                    \
  X(fxt_blob_null, ZX_ERR_INVALID_ARGS, NONE, fxt(zxs_fxt_write_large_blob(B(), NULL, NULL, 0)))   \
  X(fxt_blob_thread_index_256, ZX_ERR_INVALID_ARGS, NONE,                                          \
    fxt(zxs_fxt_write_large_blob(B(), blob(STR_IN("c"), 256, g_big, 8), NULL, 0)))                 \
  X(fxt_blob_category_index_0x8000, ZX_ERR_INVALID_ARGS, NONE,                                     \
    fxt(zxs_fxt_write_large_blob(B(), blob(zxs_fxt_str_index(0x8000), 0, g_big, 8), NULL, 0)))     \
  X(fxt_blob_category_null, ZX_ERR_INVALID_ARGS, NONE,                                             \
    fxt(zxs_fxt_write_large_blob(B(), blob(zxs_fxt_str_inline(NULL, 1), 0, g_big, 8), NULL, 0)))   \
  X(fxt_blob_payload_null, ZX_ERR_INVALID_ARGS, NONE,                                              \
    fxt(zxs_fxt_write_large_blob(B(), blob(STR_IN("c"), 0, NULL, 8), NULL, 0)))                    \
  X(fxt_blob_payload_over_32_bit_words, ZX_ERR_INVALID_ARGS, NONE,                                 \
    fxt(zxs_fxt_write_large_blob(B(), blob(STR_IN("c"), 0, g_big, (size_t)0x100000000u * 8), NULL, \
                                 0)))                                                              \
  X(fxt_blob_payload_size_max_minus_7, ZX_ERR_INVALID_ARGS, NONE,                                  \
    fxt(zxs_fxt_write_large_blob(B(), blob(STR_IN("c"), 0, g_big, SIZE_MAX - 7), NULL, 0)))        \
  /* LIBRARY BUG: a payload of SIZE_MAX - 6 .. SIZE_MAX bytes. blob_common() computes              \
     WORDS(size) = (size + 7) / 8 in 64 bits, which wraps to 0 words, so validation passes, a      \
     6-word record is reserved and put_bytes() memcpy()s SIZE_MAX bytes into it: a wild write      \
     (SIGSEGV; ASan: negative-size-param / wild memcpy). Expected ZX_ERR_INVALID_ARGS. */          \
  X(fxt_blob_payload_size_max, ZX_ERR_INVALID_ARGS, ISOLATE | LIBRARY_BUG,                         \
    fxt(zxs_fxt_write_large_blob(B(), blob(STR_IN("c"), 0, g_big, SIZE_MAX), NULL, 0)))            \
  X(fxt_blob_payload_size_max_minus_6, ZX_ERR_INVALID_ARGS, ISOLATE | LIBRARY_BUG,                 \
    fxt(zxs_fxt_write_large_blob(B(), blob(STR_IN("c"), 0, g_big, SIZE_MAX - 6), NULL, 0)))        \
  X(fxt_blob_16_args, ZX_ERR_INVALID_ARGS, NONE,                                                   \
    fxt(zxs_fxt_write_large_blob(B(), blob(STR_IN("c"), 0, g_big, 8),                              \
                                 args_of(ZXS_FXT_ARG_NULL, 16), 16)))                              \
  X(fxt_blob_args_null, ZX_ERR_INVALID_ARGS, NONE,                                                 \
    fxt(zxs_fxt_write_large_blob(B(), blob(STR_IN("c"), 0, g_big, 8), NULL, 2)))                   \
  X(fxt_blob_arg_unknown_type, ZX_ERR_INVALID_ARGS, NONE,                                          \
    fxt(zxs_fxt_write_large_blob(B(), blob(STR_IN("c"), 0, g_big, 8), arg_bad_type(), 1)))         \
  X(fxt_attachment_null, ZX_ERR_INVALID_ARGS, NONE, fxt(zxs_fxt_write_attachment(B(), NULL)))      \
  X(fxt_attachment_name_index_0x8000, ZX_ERR_INVALID_ARGS, NONE,                                   \
    fxt(zxs_fxt_write_attachment(B(), blob(zxs_fxt_str_index(0x8000), 0, g_big, 8))))              \
  X(fxt_attachment_payload_null, ZX_ERR_INVALID_ARGS, NONE,                                        \
    fxt(zxs_fxt_write_attachment(B(), blob(STR_IN("c"), 0, NULL, 1))))                             \
  /* LIBRARY BUG: the same wrap in zxs_fxt_write_attachment(). */                                  \
  X(fxt_attachment_payload_size_max, ZX_ERR_INVALID_ARGS, ISOLATE | LIBRARY_BUG,                   \
    fxt(zxs_fxt_write_attachment(B(), blob(STR_IN("c"), 0, g_big, SIZE_MAX))))                     \
  X(fxt_sticky_first_failure, ZX_ERR_INVALID_ARGS, NONE,                                           \
    (zxs_fxt_write_thread(B(), 0, 1, 2), zxs_fxt_write_string(B(), 1, "a", 1)))                    \
  X(fxt_encode_zero_pcs, ZX_OK, NONE, encode_rejects(0, (const uint64_t*)(const void*)g_big))      \
  X(fxt_encode_65_pcs, ZX_OK, NONE, encode_rejects(65, (const uint64_t*)(const void*)g_big))       \
  X(fxt_encode_size_max_pcs, ZX_OK, NONE,                                                          \
    encode_rejects(SIZE_MAX, (const uint64_t*)(const void*)g_big))                                 \
  X(fxt_reader_init_null_reader, ZX_ERR_INVALID_ARGS, NONE, reader_st(true, g_big, 8))             \
  X(fxt_reader_init_null_reader_empty, ZX_ERR_INVALID_ARGS, NONE, reader_st(true, NULL, 0))        \
  X(fxt_reader_init_null_data, ZX_ERR_INVALID_ARGS, NONE, reader_st(false, NULL, 8))               \
  X(fxt_reader_init_null_data_size_max, ZX_ERR_INVALID_ARGS, NONE,                                 \
    reader_st(false, NULL, SIZE_MAX))                                                              \
  X(fxt_reader_init_empty, ZX_OK, NONE, reader_st(false, NULL, 0))                                 \
  X(fxt_region_iter_empty, ZX_OK, NONE, region_iter_empty())                                       \
  X(fxt_writers_null_buf, ZX_ERR_INVALID_ARGS, NONE, writers_null_buf())                           \
  X(fxt_void_calls_null, ZX_OK, NONE, void_calls_null())                                           \
  X(fxt_bool_calls_null, ZX_OK, NONE, bool_calls_null())                                           \
  X(fxt_encode_null, ZX_OK, NONE, encode_null())

typedef struct row {
  const char* name;
  zx_status_t expected;
  int flags;
} row_t;

#define ROW_ENUM(name, expected, flags, expr) ROW_##name,
enum { SESSION_ROWS(ROW_ENUM) FXT_ROWS(ROW_ENUM) ROW_COUNT };
#define ROW_ENTRY(name, expected, flags, expr) {#name, expected, flags},
static const row_t kRows[ROW_COUNT] = {SESSION_ROWS(ROW_ENTRY) FXT_ROWS(ROW_ENTRY)};

// A handle without ZX_RIGHT_DUPLICATE cannot be duplicated, not even to fewer rights.
static zx_status_t dup_without_duplicate_right(fixture_t* f) {
  zx_handle_t weak, out = 0xdeadbeef;
  zx_status_t s = zxs_handle_duplicate(f->iob, ZX_RIGHT_INSPECT | ZX_RIGHT_READ, &weak);
  if (s != ZX_OK) return s;
  s = zxs_handle_duplicate(weak, ZX_RIGHT_SAME_RIGHTS, &out);
  if (s != ZX_OK && out != ZX_HANDLE_INVALID) s = ROW_OUT_NOT_CLEARED;
  if (s == ZX_OK) zxs_handle_close(out);
  zx_status_t s2 = zxs_handle_duplicate(weak, ZX_RIGHT_NONE, &out);  // fewer rights: still denied
  if (s2 == ZX_OK) zxs_handle_close(out);
  zxs_handle_close(weak);
  if (s == ZX_ERR_ACCESS_DENIED && s2 != ZX_ERR_ACCESS_DENIED) {
    note("duplicate to no rights without DUPLICATE: %s", zxs_status_string(s2));
    return ROW_WRONG_RESULT;
  }
  return s;
}

static zx_status_t run_row(int id, fixture_t* f) {
  g_note[0] = '\0';
  switch (id) {
#define ROW_CASE(name, expected, flags, expr) \
  case ROW_##name:                            \
    return (expr);
    SESSION_ROWS(ROW_CASE)
    FXT_ROWS(ROW_CASE)
#undef ROW_CASE
    default:
      return ROW_WRONG_RESULT;
  }
}

// --- The harness --------------------------------------------------------------------------------

static bool g_broken;  // the fixture could not be built: later rows would only repeat that

// Runs one row (in a child if isolated) and the invariants after it; true if all is well.
static bool check_row(int id) {
  const row_t* r = &kRows[id];
  const char* tag = (r->flags & LIBRARY_BUG) ? " [LIBRARY BUG]" : "";
  if (r->flags & ISOLATE) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
      print_error("row %s: fork failed\n", r->name);
      return false;
    }
    if (pid == 0) {
      // Die of a fault, rather than let cmocka's handlers resume its test list in the child.
      const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
      for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) signal(faults[i], SIG_DFL);
      // Poison freed memory, so a use-after-free misbehaves in plain builds too.
      mallopt(M_PERTURB, 0xa5);
      // The child's own baseline: fork forgets the parent's thread handles (a cached
      // zx_thread_self() would name the parent's thread), so this thread's is made first.
      (void)zxs_thread_self();
      g_baseline = live_handles();
      if (!fixture_setup(&g_f)) {
        fprintf(stderr, "row %s: %s\n", r->name, g_note);
        _exit(3);
      }
      zx_status_t s = run_row(id, &g_f);
      fixture_teardown(&g_f);
      if (s != r->expected) {
        fprintf(stderr, "row %s%s: expected %s, got %s%s%s\n", r->name, tag,
                row_status_name(r->expected), row_status_name(s), g_note[0] ? ": " : "", g_note);
        _exit(1);
      }
      if (!invariants_hold(5000 + (uint64_t)id)) {
        fprintf(stderr, "row %s%s: after the row: %s\n", r->name, tag, g_note);
        _exit(2);
      }
      _exit(0);
    }
    int wstatus = 0;
    if (waitpid(pid, &wstatus, 0) != pid) {
      print_error("row %s: waitpid failed\n", r->name);
      return false;
    }
    if (WIFSIGNALED(wstatus)) {
      print_error("row %s%s: the child died of signal %d (%s)\n", r->name, tag, WTERMSIG(wstatus),
                  strsignal(WTERMSIG(wstatus)));
      return false;
    }
    if (WEXITSTATUS(wstatus) != 0) {
      print_error("row %s%s: failed in its child (exit %d)\n", r->name, tag, WEXITSTATUS(wstatus));
      return false;
    }
    return true;
  }
  if (!fixture_setup(&g_f)) {
    print_error("row %s: the library's state is broken, rows stop here: %s\n", r->name, g_note);
    fixture_teardown(&g_f);
    g_broken = true;
    return false;
  }
  zx_status_t s = run_row(id, &g_f);
  char row_note[sizeof(g_note)];
  memcpy(row_note, g_note, sizeof(row_note));
  fixture_teardown(&g_f);
  bool ok = true;
  if (s != r->expected) {
    print_error("row %s%s: expected %s, got %s%s%s\n", r->name, tag, row_status_name(r->expected),
                row_status_name(s), row_note[0] ? ": " : "", row_note);
    ok = false;
  }
  if (!invariants_hold(1000 + (uint64_t)id)) {
    print_error("row %s%s: after the row: %s\n", r->name, tag, g_note);
    ok = false;
  }
  return ok;
}

static void run_rows(int first, int last) {
  int failed = 0, bugs = 0;
  for (int id = first; id < last && !g_broken; id++) {
    if (!check_row(id)) {
      failed++;
      if (kRows[id].flags & LIBRARY_BUG) bugs++;
    }
  }
  if (failed != 0) {
    print_error("%d of %d rows failed (%d of them rows marked LIBRARY BUG)\n", failed, last - first,
                bugs);
  }
  assert_int_equal(failed, 0);
}

static void session_rows(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  run_rows(0, ROW_fxt_raw_size_not_words);
}

static void fxt_rows(void** state) {
  (void)state;
  run_rows(ROW_fxt_raw_size_not_words, ROW_COUNT);
}

// --- Rights removed one at a time ---------------------------------------------------------------

typedef enum {
  OP_ATTACH,
  OP_START,
  OP_STOP,
  OP_STATS,
  OP_INFO_BASIC,
  OP_INFO_IOB,
  OP_INFO_REGIONS,
  OP_MAP,
  OP_DUPLICATE,
  OP_COUNT
} op_t;

static const char* const kOpNames[OP_COUNT] = {"attach",       "start",      "stop",
                                               "stats",        "info_basic", "info_iob",
                                               "info_regions", "map",        "duplicate"};
// The rights each call needs on the IOBuffer (sampler.h, object.h).
static const zx_rights_t kOpNeeds[OP_COUNT] = {ZX_RIGHT_APPLY_PROFILE, ZX_RIGHT_APPLY_PROFILE,
                                               ZX_RIGHT_APPLY_PROFILE, ZX_RIGHT_INSPECT,
                                               ZX_RIGHT_NONE,          ZX_RIGHT_INSPECT,
                                               ZX_RIGHT_INSPECT,       ZX_RIGHT_MAP | ZX_RIGHT_READ,
                                               ZX_RIGHT_DUPLICATE};

static zx_status_t run_op(op_t op, zx_handle_t h, fixture_t* f) {
  switch (op) {
    case OP_ATTACH:
      return zxs_sampler_attach(h, f->self);
    case OP_START:
      return zxs_sampler_start(h);
    case OP_STOP: {
      zx_status_t s = running(f);
      return s != ZX_OK ? ROW_WRONG_RESULT : zxs_sampler_stop(h);
    }
    case OP_STATS:
      return stats_st(h);
    case OP_INFO_BASIC:
      return info_st(h, ZX_INFO_HANDLE_BASIC, &g_info, sizeof(g_info), 1, 1);
    case OP_INFO_IOB:
      return info_st(h, ZX_INFO_IOB, &g_info, sizeof(g_info), 1, 1);
    case OP_INFO_REGIONS:
      return info_st(h, ZX_INFO_IOB_REGIONS, &g_info, sizeof(g_info), FAKE_CPUS, FAKE_CPUS);
    case OP_MAP:
      return map_st(f->vmar, ZX_VM_PERM_READ, 0, h, 0, 0, REGION_BYTES);
    case OP_DUPLICATE:
      return dup_st(h, ZX_RIGHT_NONE);
    default:
      return ROW_WRONG_RESULT;
  }
}

static void iob_rights_removed_one_at_a_time(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  int failed = 0, checked = 0;
  for (uint32_t bit = 0; bit < 32; bit++) {
    const zx_rights_t right = (zx_rights_t)1u << bit;
    if ((IOB_RIGHTS & right) == 0) continue;
    for (int op = 0; op < OP_COUNT; op++) {
      if (!fixture_setup(&g_f)) fail_msg("fixture: %s", g_note);
      zx_handle_t h;
      assert_int_equal(zxs_handle_duplicate(g_f.iob, IOB_RIGHTS & ~right, &h), ZX_OK);
      const zx_status_t expected = (kOpNeeds[op] & right) ? ZX_ERR_ACCESS_DENIED : ZX_OK;
      g_note[0] = '\0';
      const zx_status_t s = run_op((op_t)op, h, &g_f);
      char row_note[sizeof(g_note)];
      memcpy(row_note, g_note, sizeof(row_note));
      zxs_handle_close(h);
      fixture_teardown(&g_f);
      checked++;
      if (s != expected) {
        print_error("iob without right %#x: %s: expected %s, got %s %s\n", right, kOpNames[op],
                    row_status_name(expected), row_status_name(s), row_note);
        failed++;
      }
      if (!invariants_hold(9000 + (uint64_t)checked)) {
        print_error("iob without right %#x: %s: after: %s\n", right, kOpNames[op], g_note);
        failed++;
      }
    }
  }
  assert_int_equal(failed, 0);
}

static void thread_and_resource_rights_removed_one_at_a_time(void** state) {
  (void)state;
  if (!zxs_sampler_compiled_in()) skip();
  int failed = 0, checked = 0;
  for (uint32_t bit = 0; bit < 32; bit++) {
    const zx_rights_t right = (zx_rights_t)1u << bit;
    if ((THREAD_RIGHTS & right) == 0) continue;
    if (!fixture_setup(&g_f)) fail_msg("fixture: %s", g_note);
    zx_handle_t t;
    assert_int_equal(zxs_handle_duplicate(g_f.self, THREAD_RIGHTS & ~right, &t), ZX_OK);
    zx_status_t attach = zxs_sampler_attach(g_f.iob, t);
    zx_status_t dup = dup_st(t, ZX_RIGHT_NONE);
    zx_status_t info = info_st(t, ZX_INFO_HANDLE_BASIC, &g_info, sizeof(g_info), 1, 1);
    zxs_handle_close(t);
    fixture_teardown(&g_f);
    checked++;
    const zx_status_t want_attach = right == ZX_RIGHT_READ ? ZX_ERR_ACCESS_DENIED : ZX_OK;
    const zx_status_t want_dup = right == ZX_RIGHT_DUPLICATE ? ZX_ERR_ACCESS_DENIED : ZX_OK;
    if (attach != want_attach || dup != want_dup || info != ZX_OK) {
      print_error(
          "thread without right %#x: attach %s (want %s), duplicate %s (want %s), "
          "info %s\n",
          right, row_status_name(attach), row_status_name(want_attach), row_status_name(dup),
          row_status_name(want_dup), row_status_name(info));
      failed++;
    }
    if (!invariants_hold(20000 + (uint64_t)checked)) {
      print_error("thread without right %#x: after: %s\n", right, g_note);
      failed++;
    }
  }
  // The debug resource: create needs no particular right on it.
  for (uint32_t bit = 0; bit < 32; bit++) {
    const zx_rights_t right = (zx_rights_t)1u << bit;
    if ((RESOURCE_RIGHTS & right) == 0) continue;
    zx_handle_t r;
    assert_int_equal(zxs_handle_duplicate(g_rsrc, RESOURCE_RIGHTS & ~right, &r), ZX_OK);
    zx_status_t create = create_st(r, 0, CFG_OK, CFG_SIZE);
    zx_status_t dup = dup_st(r, ZX_RIGHT_NONE);
    zxs_handle_close(r);
    checked++;
    const zx_status_t want_dup = right == ZX_RIGHT_DUPLICATE ? ZX_ERR_ACCESS_DENIED : ZX_OK;
    if (create != ZX_OK || dup != want_dup) {
      print_error("resource without right %#x: create %s (want ZX_OK), duplicate %s (want %s)\n",
                  right, row_status_name(create), row_status_name(dup), row_status_name(want_dup));
      failed++;
    }
    if (!invariants_hold(30000 + (uint64_t)checked)) {
      print_error("resource without right %#x: after: %s\n", right, g_note);
      failed++;
    }
  }
  // No rights at all.
  zx_handle_t r;
  assert_int_equal(zxs_handle_duplicate(g_rsrc, ZX_RIGHT_NONE, &r), ZX_OK);
  if (create_st(r, 0, CFG_OK, CFG_SIZE) != ZX_OK) {
    print_error("resource without rights: create failed\n");
    failed++;
  }
  zxs_handle_close(r);
  assert_true(invariants_hold(40000));
  assert_int_equal(failed, 0);
}

static int group_setup(void** state) {
  (void)state;
  fake_reset();
  zxs_set_debugging_syscalls_enabled(true);
  // This thread's stack bounds, recorded once by its constant handle: the crafted stack.
  crafted_regs();
  zxs_core_thread_exited(fake_self_koid());
  fake_set_self_stack((uintptr_t)g_stack, (uintptr_t)(g_stack + 64));
  (void)zxs_thread_self();
  (void)zxs_process_self();
  (void)zxs_vmar_root_self();
  assert_int_equal(zxs_debug_resource_get(&g_rsrc), ZX_OK);
  g_baseline = live_handles();
  assert_true(g_baseline != UINT32_MAX && g_baseline >= 4);
  if (zxs_sampler_compiled_in() && !session_end_to_end(1)) {
    print_error("the end-to-end check fails before any row: %s\n", g_note);
    return -1;
  }
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  zxs_handle_close(g_rsrc);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(session_rows),
      cmocka_unit_test(fxt_rows),
      cmocka_unit_test(iob_rights_removed_one_at_a_time),
      cmocka_unit_test(thread_and_resource_rights_removed_one_at_a_time),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
