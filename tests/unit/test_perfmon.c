// The perfmon controller (perfmon.h) over the fake backend: the FIDL documentation's order and
// status rules, the config rules, the buffers and their handles, the records a run writes
// (timebase semantics), fork, the event names and the reader on malformed buffers.
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/zxsampler.h>

#include "fake_platform.h"
#include "perfmon_core.h"
#include "perfmon_records.h"

#define PF ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 0x402)
#define CS ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 0x403)
#define CPU_CLOCK ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 0x400)
#define TASK_CLOCK ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 0x401)
#define CYCLES ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_ARCH, 0)
#define VALUE_EV FAKE_PERFMON_VALUE_EVENT
#define OS_USER (ZXS_PERFMON_EVENT_FLAG_COLLECT_OS | ZXS_PERFMON_EVENT_FLAG_COLLECT_USER)
#define PC_FLAG ZXS_PERFMON_EVENT_FLAG_COLLECT_PC
#define TIMEBASE ZXS_PERFMON_EVENT_FLAG_IS_TIMEBASE
#define LBR ZXS_PERFMON_EVENT_FLAG_COLLECT_LAST_BRANCH

static zx_handle_t g_rsrc;

static int setup(void** state) {
  (void)state;
  fake_reset();
  assert_int_equal(zxs_debug_resource_get(&g_rsrc), ZX_OK);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  assert_int_equal(zxs_handle_close(g_rsrc), ZX_OK);
  assert_int_equal(fake_live_regions(), 0);  // every buffer freed
  return 0;
}

static zx_handle_t open_ok(void) {
  zx_handle_t ctl = ZX_HANDLE_INVALID;
  assert_int_equal(zxs_perfmon_open(g_rsrc, &ctl), ZX_OK);
  assert_int_not_equal(ctl, ZX_HANDLE_INVALID);
  return ctl;
}

static zxs_perfmon_allocation_t alloc_of(uint32_t pages) {
  zxs_perfmon_allocation_t a = {.num_buffers = zxs_system_get_num_cpus(),
                                .buffer_size_in_pages = pages};
  return a;
}

static zxs_perfmon_config_t one_event(uint16_t id, uint32_t rate, uint32_t flags) {
  zxs_perfmon_config_t c;
  memset(&c, 0, sizeof(c));
  c.events[0] = (zxs_perfmon_event_config_t){.event = id, .rate = rate, .flags = flags};
  return c;
}

static zx_handle_t initialized(uint32_t pages) {
  zx_handle_t ctl = open_ok();
  zxs_perfmon_allocation_t a = alloc_of(pages);
  assert_int_equal(zxs_perfmon_initialize(ctl, &a), ZX_OK);
  return ctl;
}

// --- Open and handles -------------------------------------------------------------------------

static void open_statuses(void** state) {
  (void)state;
  zx_handle_t ctl = 0x1234;
  assert_int_equal(zxs_perfmon_open(0x1234, &ctl), ZX_ERR_BAD_HANDLE);
  assert_int_equal(ctl, ZX_HANDLE_INVALID);
  assert_int_equal(zxs_perfmon_open(zxs_process_self(), &ctl), ZX_ERR_WRONG_TYPE);
  assert_int_equal(zxs_perfmon_open(g_rsrc, NULL), ZX_ERR_INVALID_ARGS);
  fake_perfmon_set_access(ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_perfmon_open(g_rsrc, &ctl), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(ctl, ZX_HANDLE_INVALID);
  fake_perfmon_set_access(ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_perfmon_open(g_rsrc, &ctl), ZX_ERR_NOT_SUPPORTED);
  fake_perfmon_set_access(ZX_OK);
  ctl = open_ok();
  zx_handle_t second;
  assert_int_equal(zxs_perfmon_open(g_rsrc, &second), ZX_ERR_ALREADY_BOUND);
  // A duplicate keeps it open; the last close frees the slot.
  zx_handle_t dup;
  assert_int_equal(zxs_handle_duplicate(ctl, ZX_RIGHT_SAME_RIGHTS, &dup), ZX_OK);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
  assert_int_equal(zxs_perfmon_open(g_rsrc, &second), ZX_ERR_ALREADY_BOUND);
  assert_int_equal(zxs_handle_close(dup), ZX_OK);
  ctl = open_ok();
  zx_info_handle_basic_t info;
  assert_int_equal(zxs_object_get_info(ctl, ZX_INFO_HANDLE_BASIC, &info, sizeof(info), NULL, NULL),
                   ZX_OK);
  assert_int_equal(info.type, ZX_OBJ_TYPE_CHANNEL);
  assert_int_equal(info.rights & (ZX_RIGHT_READ | ZX_RIGHT_WRITE), ZX_RIGHT_READ | ZX_RIGHT_WRITE);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

static void handle_checks_come_first(void** state) {
  (void)state;
  zx_handle_t ctl = open_ok();
  zxs_perfmon_properties_t p;
  zxs_perfmon_allocation_t a = alloc_of(1);
  zxs_perfmon_config_t c = one_event(PF, 0, OS_USER);
  zx_handle_t vmo;
  // Invalid, wrong type, missing rights: before any argument.
  assert_int_equal(zxs_perfmon_get_properties(0x1234, NULL), ZX_ERR_BAD_HANDLE);
  assert_int_equal(zxs_perfmon_get_properties(g_rsrc, NULL), ZX_ERR_WRONG_TYPE);
  zx_handle_t read_only;
  assert_int_equal(zxs_handle_duplicate(ctl, ZX_RIGHT_READ | ZX_RIGHT_DUPLICATE, &read_only),
                   ZX_OK);
  assert_int_equal(zxs_perfmon_get_properties(read_only, &p), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_perfmon_initialize(read_only, &a), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_perfmon_terminate(read_only), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_perfmon_get_allocation(read_only, &a), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_perfmon_stage_config(read_only, &c), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_perfmon_get_config(read_only, &c), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_perfmon_get_buffer_handle(read_only, 0, &vmo), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_perfmon_start(read_only), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_perfmon_stop(read_only), ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_handle_close(read_only), ZX_OK);
  // A closed handle.
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_ERR_BAD_HANDLE);
  assert_int_equal(zxs_perfmon_terminate(ctl), ZX_ERR_BAD_HANDLE);
}

static void properties(void** state) {
  (void)state;
  zx_handle_t ctl = open_ok();
  zxs_perfmon_properties_t p;
  assert_int_equal(zxs_perfmon_get_properties(ctl, NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_perfmon_get_properties(ctl, &p), ZX_OK);
  assert_int_equal(p.api_version, ZXS_PERFMON_API_VERSION);
  assert_int_equal(p.max_num_events, ZXS_PERFMON_MAX_NUM_EVENTS);
  assert_int_equal(p.pm_version, 0);
  assert_int_equal(p.max_num_programmable_events, 0);
  assert_int_equal(p.max_num_misc_events, 7);
  assert_int_equal(p.flags, 0);
  fake_perfmon_set_pmu(true, true);
  assert_int_equal(zxs_perfmon_get_properties(ctl, &p), ZX_OK);
  assert_int_equal(p.pm_version, 4);
  assert_int_equal(p.max_num_fixed_events, 3);
  assert_int_equal(p.flags, ZXS_PERFMON_PROPERTY_FLAG_HAS_LAST_BRANCH);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

// --- Order rules --------------------------------------------------------------------------------

static void before_initialize(void** state) {
  (void)state;
  zx_handle_t ctl = open_ok();
  zxs_perfmon_allocation_t a;
  zxs_perfmon_config_t c = one_event(PF, 0, OS_USER);
  zx_handle_t vmo = 0x55;
  assert_int_equal(zxs_perfmon_get_allocation(ctl, NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_perfmon_get_allocation(ctl, &a), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_stage_config(ctl, NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_get_config(ctl, &c), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_get_buffer_handle(ctl, 0, &vmo), ZX_ERR_BAD_STATE);
  assert_int_equal(vmo, ZX_HANDLE_INVALID);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_ERR_BAD_STATE);
  // Stop and terminate are ignored.
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  assert_int_equal(zxs_perfmon_terminate(ctl), ZX_OK);
  assert_int_equal(zxs_perfmon_terminate(ctl), ZX_OK);
  assert_int_equal(fake_perfmon_stops(), 0);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

static void initialize_rules(void** state) {
  (void)state;
  zx_handle_t ctl = open_ok();
  zxs_perfmon_allocation_t a = alloc_of(2);
  assert_int_equal(zxs_system_get_num_cpus(), 4);
  assert_int_equal(zxs_perfmon_initialize(ctl, NULL), ZX_ERR_INVALID_ARGS);
  a.num_buffers = 3;
  assert_int_equal(zxs_perfmon_initialize(ctl, &a), ZX_ERR_INVALID_ARGS);
  a.num_buffers = 5;
  assert_int_equal(zxs_perfmon_initialize(ctl, &a), ZX_ERR_INVALID_ARGS);
  a = alloc_of(0);
  assert_int_equal(zxs_perfmon_initialize(ctl, &a), ZX_ERR_INVALID_ARGS);
  a = alloc_of(ZXS_PERFMON_MAX_BUFFER_PAGES + 1);
  assert_int_equal(zxs_perfmon_initialize(ctl, &a), ZX_ERR_INVALID_ARGS);
  fake_fail_next_region_create();
  a = alloc_of(2);
  assert_int_equal(zxs_perfmon_initialize(ctl, &a), ZX_ERR_NO_MEMORY);
  assert_int_equal(fake_live_regions(), 0);  // the ones made before the failure are gone
  assert_int_equal(zxs_perfmon_initialize(ctl, &a), ZX_OK);
  assert_int_equal(fake_live_regions(), 4);
  assert_int_equal(zxs_perfmon_initialize(ctl, &a), ZX_ERR_BAD_STATE);
  zxs_perfmon_allocation_t got;
  assert_int_equal(zxs_perfmon_get_allocation(ctl, &got), ZX_OK);
  assert_int_equal(got.num_buffers, 4);
  assert_int_equal(got.buffer_size_in_pages, 2);
  // Initialized but nothing staged.
  zxs_perfmon_config_t c;
  assert_int_equal(zxs_perfmon_get_config(ctl, &c), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_ERR_BAD_STATE);
  // Terminate frees; initialize works again.
  assert_int_equal(zxs_perfmon_terminate(ctl), ZX_OK);
  assert_int_equal(fake_live_regions(), 0);
  assert_int_equal(zxs_perfmon_get_allocation(ctl, &got), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_initialize(ctl, &a), ZX_OK);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

static void run_order(void** state) {
  (void)state;
  zx_handle_t ctl = initialized(1);
  zxs_perfmon_config_t c = one_event(PF, 0, OS_USER), got;
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  assert_int_equal(zxs_perfmon_get_config(ctl, &got), ZX_OK);
  assert_memory_equal(&got, &c, sizeof(c));
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  assert_int_equal(fake_perfmon_starts(), 1);
  // Running: no second start, no staging, no reading the config, no initialize.
  assert_int_equal(zxs_perfmon_start(ctl), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_get_config(ctl, &got), ZX_ERR_BAD_STATE);
  zxs_perfmon_allocation_t a = alloc_of(1);
  assert_int_equal(zxs_perfmon_initialize(ctl, &a), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_get_allocation(ctl, &a), ZX_OK);  // allowed any time
  // Stop is idempotent.
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  assert_int_equal(fake_perfmon_stops(), 1);
  // Restart with the same config; restage between runs.
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  c = one_event(CS, 0, OS_USER);
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  // Terminate stops first, and is idempotent.
  assert_int_equal(zxs_perfmon_terminate(ctl), ZX_OK);
  assert_int_equal(fake_perfmon_stops(), 3);
  assert_null(fake_perfmon_run());
  assert_int_equal(zxs_perfmon_terminate(ctl), ZX_OK);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_get_config(ctl, &got), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

static void failed_stage_drops_the_config(void** state) {
  (void)state;
  zx_handle_t ctl = initialized(1);
  zxs_perfmon_config_t c = one_event(PF, 0, OS_USER), got;
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  zxs_perfmon_config_t bad = one_event(PF, 0, 0x20);
  assert_int_equal(zxs_perfmon_stage_config(ctl, &bad), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_perfmon_get_config(ctl, &got), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

static void start_failure_runs_nothing(void** state) {
  (void)state;
  zx_handle_t ctl = initialized(1);
  zxs_perfmon_config_t c = one_event(PF, 0, OS_USER);
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  fake_perfmon_fail_next_start(ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_ERR_ACCESS_DENIED);
  assert_null(fake_perfmon_run());
  // Still stopped: staging works, stop is ignored, start works.
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  assert_int_equal(fake_perfmon_stops(), 0);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);  // closing stops
  assert_int_equal(fake_perfmon_stops(), 1);
}

// --- Config rules -------------------------------------------------------------------------------

typedef struct {
  const char* what;
  zx_status_t want;
  bool pmu, lbr;
  zxs_perfmon_event_config_t ev[4];
} config_case_t;

static const config_case_t kConfigCases[] = {
    {"no event", ZX_ERR_INVALID_ARGS, false, false, {{0}}},
    {"an event after NONE", ZX_ERR_INVALID_ARGS, false, false, {{PF, 0, OS_USER}, {0}, {CS, 0, 0}}},
    {"NONE with a rate", ZX_ERR_INVALID_ARGS, false, false, {{PF, 0, OS_USER}, {0, 5, 0}}},
    {"NONE with flags", ZX_ERR_INVALID_ARGS, false, false, {{PF, 0, OS_USER}, {0, 0, 1}}},
    {"unknown flag", ZX_ERR_INVALID_ARGS, false, false, {{PF, 0, 0x20}}},
    {"two timebases", ZX_ERR_INVALID_ARGS, false, false, {{PF, 10, TIMEBASE}, {CS, 10, TIMEBASE}}},
    {"timebase of rate 0", ZX_ERR_INVALID_ARGS, false, false, {{PF, 0, TIMEBASE}}},
    {"PC without a rate", ZX_ERR_INVALID_ARGS, false, false, {{PF, 0, PC_FLAG}}},
    {"last branch without a rate", ZX_ERR_INVALID_ARGS, true, true, {{CYCLES, 0, LBR}}},
    {"the reserved unit", ZX_ERR_INVALID_ARGS, false, false, {{0x0005, 0, OS_USER}}},
    {"an unknown unit",
     ZX_ERR_INVALID_ARGS,
     false,
     false,
     {{ZXS_PERFMON_EVENT_ID(5, 1), 0, OS_USER}}},
    {"an unknown misc event",
     ZX_ERR_INVALID_ARGS,
     false,
     false,
     {{ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 3), 0, OS_USER}}},
    {"an event twice",
     ZX_ERR_INVALID_ARGS,
     false,
     false,
     {{PF, 0, OS_USER}, {CS, 0, OS_USER}, {PF, 100, OS_USER}}},
    {"a rate on a value event", ZX_ERR_INVALID_ARGS, false, false, {{VALUE_EV, 10, 0}}},
    {"a hardware event without a PMU", ZX_ERR_NOT_SUPPORTED, false, false, {{CYCLES, 0, OS_USER}}},
    {"last branch without support",
     ZX_ERR_NOT_SUPPORTED,
     true,
     false,
     {{CYCLES, 1000, LBR | OS_USER}}},
    // Structure first: a hole wins over an event the host cannot collect.
    {"hole before host checks",
     ZX_ERR_INVALID_ARGS,
     false,
     false,
     {{CYCLES, 0, OS_USER}, {0}, {PF, 0, 0}}},
    // First failing event wins.
    {"first event's status",
     ZX_ERR_NOT_SUPPORTED,
     false,
     false,
     {{CYCLES, 0, OS_USER}, {VALUE_EV, 10, 0}}},
    // Valid ones.
    {"a value event of rate 0", ZX_OK, false, false, {{VALUE_EV, 0, 0}}},
    {"neither OS nor USER", ZX_OK, false, false, {{PF, 0, 0}}},
    {"timebase with PC, others read by it",
     ZX_OK,
     false,
     false,
     {{CPU_CLOCK, 1000, TIMEBASE | PC_FLAG | OS_USER},
      {PF, 0, OS_USER},
      {VALUE_EV, 0, 0},
      {CS, 5, OS_USER}}},
    {"hardware with a PMU", ZX_OK, true, false, {{CYCLES, 100000, PC_FLAG | OS_USER}}},
    {"last branch with support", ZX_OK, true, true, {{CYCLES, 100000, LBR | OS_USER}}},
};

static void config_rules(void** state) {
  (void)state;
  for (size_t i = 0; i < sizeof(kConfigCases) / sizeof(kConfigCases[0]); i++) {
    const config_case_t* k = &kConfigCases[i];
    fake_perfmon_set_pmu(k->pmu, k->lbr);
    zx_handle_t ctl = initialized(1);
    zxs_perfmon_config_t c;
    memset(&c, 0, sizeof(c));
    memcpy(c.events, k->ev, sizeof(k->ev));
    zx_status_t got = zxs_perfmon_stage_config(ctl, &c);
    if (got != k->want) {
      fail_msg("%s: got %s, want %s", k->what, zxs_status_string(got), zxs_status_string(k->want));
    }
    assert_int_equal(zxs_perfmon_start(ctl), got == ZX_OK ? ZX_OK : ZX_ERR_BAD_STATE);
    assert_int_equal(zxs_handle_close(ctl), ZX_OK);
  }
}

static void all_events_at_once(void** state) {
  (void)state;
  // Every event the fake collects with a PMU: 7 misc, 7 arch, 3 fixed, the value event.
  fake_perfmon_set_pmu(true, false);
  zx_handle_t ctl = initialized(1);
  zxs_perfmon_config_t c;
  memset(&c, 0, sizeof(c));
  uint32_t n = 0;
  for (unsigned e = 0; e < 7; e++) {
    c.events[n++] = (zxs_perfmon_event_config_t){
        ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 0x400 + e), 0, OS_USER};
    c.events[n++] =
        (zxs_perfmon_event_config_t){ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_ARCH, e), 0, OS_USER};
  }
  for (unsigned e = 1; e <= 3; e++) {
    c.events[n++] =
        (zxs_perfmon_event_config_t){ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_FIXED, e), 0, OS_USER};
  }
  c.events[n++] = (zxs_perfmon_event_config_t){VALUE_EV, 0, 0};
  assert_int_equal(n, 18);
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  assert_int_equal(fake_perfmon_run()->event_count, 18);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

// --- Buffers ------------------------------------------------------------------------------------

static void buffer_handles(void** state) {
  (void)state;
  zx_handle_t ctl = initialized(3);
  zx_handle_t vmo = 0x99, vmo2;
  assert_int_equal(zxs_perfmon_get_buffer_handle(ctl, 0, NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_perfmon_get_buffer_handle(ctl, 4, &vmo), ZX_ERR_INVALID_ARGS);
  assert_int_equal(vmo, ZX_HANDLE_INVALID);
  assert_int_equal(zxs_perfmon_get_buffer_handle(ctl, 3, &vmo), ZX_OK);
  assert_int_equal(zxs_perfmon_get_buffer_handle(ctl, 3, &vmo2), ZX_OK);
  assert_int_not_equal(vmo, vmo2);
  zx_info_handle_basic_t i1, i2;
  assert_int_equal(zxs_object_get_info(vmo, ZX_INFO_HANDLE_BASIC, &i1, sizeof(i1), NULL, NULL),
                   ZX_OK);
  assert_int_equal(zxs_object_get_info(vmo2, ZX_INFO_HANDLE_BASIC, &i2, sizeof(i2), NULL, NULL),
                   ZX_OK);
  assert_int_equal(i1.type, ZX_OBJ_TYPE_VMO);
  assert_true(i1.koid == i2.koid);  // one buffer, one object
  assert_int_equal(i1.rights, ZX_RIGHT_DUPLICATE | ZX_RIGHT_TRANSFER | ZX_RIGHT_READ |
                                  ZX_RIGHT_MAP | ZX_RIGHT_GET_PROPERTY | ZX_RIGHT_INSPECT);
  uint64_t size = 0;
  assert_int_equal(zxs_vmo_get_size(vmo, NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_vmo_get_size(ctl, &size), ZX_ERR_WRONG_TYPE);
  assert_int_equal(zxs_vmo_get_size(vmo, &size), ZX_OK);
  assert_int_equal(size, 3 * 4096);
  // Mapping: read-only, by zxs_vmar_map_iob()'s rules.
  zx_vaddr_t addr;
  const zx_handle_t root = zxs_vmar_root_self();
  assert_int_equal(zxs_vmar_map(root, ZX_VM_PERM_READ | ZX_VM_PERM_WRITE, 0, vmo, 0, 4096, &addr),
                   ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_vmar_map(root, ZX_VM_PERM_READ, 0, vmo, 0, 100, &addr), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_vmar_map(root, ZX_VM_PERM_READ, 0, vmo, 4096, 3 * 4096, &addr),
                   ZX_ERR_OUT_OF_RANGE);
  assert_int_equal(zxs_vmar_map(root, ZX_VM_PERM_READ, 0, ctl, 0, 4096, &addr), ZX_ERR_WRONG_TYPE);
  assert_int_equal(zxs_vmar_map(vmo, ZX_VM_PERM_READ, 0, vmo, 0, 4096, &addr), ZX_ERR_WRONG_TYPE);
  zx_handle_t no_map;
  assert_int_equal(zxs_handle_duplicate(vmo, ZX_RIGHT_READ, &no_map), ZX_OK);
  assert_int_equal(zxs_vmar_map(root, ZX_VM_PERM_READ, 0, no_map, 0, 4096, &addr),
                   ZX_ERR_ACCESS_DENIED);
  assert_int_equal(zxs_handle_close(no_map), ZX_OK);
  assert_int_equal(zxs_vmar_map(root, ZX_VM_PERM_READ, 0, vmo, 0, 3 * 4096, &addr), ZX_OK);
  // The buffer outlives terminate and the controller while a handle or mapping holds it.
  assert_int_equal(zxs_perfmon_terminate(ctl), ZX_OK);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
  assert_int_equal(fake_live_regions(), 1);
  assert_int_equal(zxs_handle_close(vmo), ZX_OK);
  assert_int_equal(zxs_handle_close(vmo2), ZX_OK);
  assert_int_equal(fake_live_regions(), 1);  // still mapped
  assert_int_equal(zxs_vmar_unmap(root, addr, 3 * 4096), ZX_OK);
  assert_int_equal(fake_live_regions(), 0);
}

// Maps buffer `b` of a controller, reads it whole into `recs` (returns how many; the reader
// must end cleanly), and unmaps it.
static size_t read_buffer(zx_handle_t ctl, uint32_t b, zxs_perfmon_record_t* recs, size_t max,
                          zxs_perfmon_buffer_header_t* header) {
  zx_handle_t vmo;
  assert_int_equal(zxs_perfmon_get_buffer_handle(ctl, b, &vmo), ZX_OK);
  uint64_t size;
  assert_int_equal(zxs_vmo_get_size(vmo, &size), ZX_OK);
  zx_vaddr_t addr;
  assert_int_equal(zxs_vmar_map(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, vmo, 0, size, &addr),
                   ZX_OK);
  zxs_perfmon_reader_t r;
  assert_int_equal(zxs_perfmon_reader_init(&r, (const void*)addr, size), ZX_OK);
  size_t n = 0;
  zxs_perfmon_record_t rec;
  while (zxs_perfmon_reader_next(&r, &rec)) {
    if (n < max) recs[n] = rec;
    n++;
  }
  assert_int_equal(r.status, ZX_OK);
  if (header != NULL) *header = r.header;
  assert_int_equal(zxs_vmar_unmap(zxs_vmar_root_self(), addr, size), ZX_OK);
  assert_int_equal(zxs_handle_close(vmo), ZX_OK);
  return n;
}

static void expect_rec(const zxs_perfmon_record_t* r, uint8_t type, uint16_t event, int64_t time) {
  assert_int_equal(r->type, type);
  assert_int_equal(r->event, event);
  assert_int_equal(r->time, time);
}

// --- Records: what a run writes
// -------------------------------------------------------------------

static void timebase_records(void** state) {
  (void)state;
  zx_handle_t ctl = initialized(1);
  zxs_perfmon_config_t c;
  memset(&c, 0, sizeof(c));
  c.events[0] = (zxs_perfmon_event_config_t){CPU_CLOCK, 1000, TIMEBASE | PC_FLAG | OS_USER};
  c.events[1] = (zxs_perfmon_event_config_t){PF, 0, OS_USER};
  c.events[2] = (zxs_perfmon_event_config_t){CS, 5, OS_USER};
  c.events[3] = (zxs_perfmon_event_config_t){VALUE_EV, 0, 0};
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  zxs_perfmon_run_t* run = fake_perfmon_run();
  assert_non_null(run);
  assert_int_equal(run->timebase, 0);
  assert_true(run->events[1].uses_timebase && run->events[3].uses_timebase);
  assert_false(run->events[2].uses_timebase);
  // Buffer 2: two timebase samples, one of the other sampling event.
  uint64_t values[ZXS_PERFMON_MAX_NUM_EVENTS] = {0};
  values[1] = 10;
  values[3] = 77;
  const uint64_t aspace = ((uint64_t)42 << 32) | 43;
  zxs_perfmon_sample_t s = {
      .event = 0, .time = 100, .aspace = aspace, .pc = 0x1234, .values = values};
  assert_true(fake_perfmon_fire(2, &s));
  values[1] = 25;
  values[3] = 78;
  s.time = 200;
  s.pc = 0x5678;
  assert_true(fake_perfmon_fire(2, &s));
  zxs_perfmon_sample_t t = {.event = 2, .time = 300};
  assert_true(fake_perfmon_fire(2, &t));
  // Totals at stop: cpu-clock 2500 (2 x 1000 already), faults 30 (25 already), switches 7
  // (5 already), the value 80.
  fake_perfmon_set_total(2, 0, 2500);
  fake_perfmon_set_total(2, 1, 30);
  fake_perfmon_set_total(2, 2, 7);
  fake_perfmon_set_total(2, 3, 80);
  fake_perfmon_set_stop_time(400);
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  assert_false(fake_perfmon_fire(2, &s));  // stopped: nothing reaches the buffers

  zxs_perfmon_record_t r[32];
  zxs_perfmon_buffer_header_t h;
  size_t n = read_buffer(ctl, 2, r, 32, &h);
  assert_int_equal(h.version, 0);
  assert_int_equal(h.arch, zxs_perfmon_host_arch());
  assert_int_equal(h.flags, 0);
  assert_int_equal(h.ticks_per_second, 1000000000);
  assert_int_equal(n, 4 + 4 + 2 + 5);
  expect_rec(&r[0], ZXS_PERFMON_RECORD_TIME, 0, 100);
  expect_rec(&r[1], ZXS_PERFMON_RECORD_PC, CPU_CLOCK, 100);
  assert_true(r[1].pc.aspace == aspace && r[1].pc.pc == 0x1234);
  assert_int_equal(ZXS_PERFMON_ASPACE_PID(r[1].pc.aspace), 42);
  assert_int_equal(ZXS_PERFMON_ASPACE_TID(r[1].pc.aspace), 43);
  expect_rec(&r[2], ZXS_PERFMON_RECORD_COUNT, PF, 100);
  assert_int_equal(r[2].count, 10);
  expect_rec(&r[3], ZXS_PERFMON_RECORD_VALUE, VALUE_EV, 100);
  assert_int_equal(r[3].value, 77);
  expect_rec(&r[4], ZXS_PERFMON_RECORD_TIME, 0, 200);
  expect_rec(&r[5], ZXS_PERFMON_RECORD_PC, CPU_CLOCK, 200);
  assert_int_equal(r[5].pc.pc, 0x5678);
  expect_rec(&r[6], ZXS_PERFMON_RECORD_COUNT, PF, 200);
  assert_int_equal(r[6].count, 15);
  expect_rec(&r[7], ZXS_PERFMON_RECORD_VALUE, VALUE_EV, 200);
  assert_int_equal(r[7].value, 78);
  expect_rec(&r[8], ZXS_PERFMON_RECORD_TIME, 0, 300);
  expect_rec(&r[9], ZXS_PERFMON_RECORD_TICK, CS, 300);
  expect_rec(&r[10], ZXS_PERFMON_RECORD_TIME, 0, 400);
  expect_rec(&r[11], ZXS_PERFMON_RECORD_COUNT, CPU_CLOCK, 400);
  assert_int_equal(r[11].count, 500);
  expect_rec(&r[12], ZXS_PERFMON_RECORD_COUNT, PF, 400);
  assert_int_equal(r[12].count, 5);
  expect_rec(&r[13], ZXS_PERFMON_RECORD_COUNT, CS, 400);
  assert_int_equal(r[13].count, 2);
  expect_rec(&r[14], ZXS_PERFMON_RECORD_VALUE, VALUE_EV, 400);
  assert_int_equal(r[14].value, 80);
  // Every other buffer: only the final records, all zero.
  n = read_buffer(ctl, 0, r, 32, NULL);
  assert_int_equal(n, 5);
  expect_rec(&r[0], ZXS_PERFMON_RECORD_TIME, 0, 400);
  for (size_t i = 1; i < 4; i++) assert_int_equal(r[i].count, 0);
  // A restart begins the buffers afresh.
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  zxs_perfmon_run_buffer_t* b = &fake_perfmon_run()->buffers[2];
  zxs_perfmon_reader_t rd;
  assert_int_equal(zxs_perfmon_reader_init(&rd, b->base, b->size), ZX_OK);
  assert_int_equal(rd.header.capture_end, ZXS_PERFMON_BUFFER_HEADER_SIZE);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

static void counting_without_timebase(void** state) {
  (void)state;
  zx_handle_t ctl = initialized(1);
  zxs_perfmon_config_t c;
  memset(&c, 0, sizeof(c));
  c.events[0] = (zxs_perfmon_event_config_t){PF, 0, OS_USER};
  c.events[1] = (zxs_perfmon_event_config_t){TASK_CLOCK, 0, ZXS_PERFMON_EVENT_FLAG_COLLECT_USER};
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  assert_false(fake_perfmon_run()->events[0].uses_timebase);
  // A sample of an event without a rate is refused (never a record).
  zxs_perfmon_sample_t s = {.event = 0, .time = 5};
  assert_true(fake_perfmon_fire(1, &s));
  for (uint32_t b = 0; b < 4; b++) {
    fake_perfmon_set_total(b, 0, 1000 + b);
    fake_perfmon_set_total(b, 1, 5000 + b);
  }
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  for (uint32_t b = 0; b < 4; b++) {
    zxs_perfmon_record_t r[8];
    assert_int_equal(read_buffer(ctl, b, r, 8, NULL), 3);
    assert_int_equal(r[0].type, ZXS_PERFMON_RECORD_TIME);
    expect_rec(&r[1], ZXS_PERFMON_RECORD_COUNT, PF, 2000);
    assert_int_equal(r[1].count, 1000 + b);
    expect_rec(&r[2], ZXS_PERFMON_RECORD_COUNT, TASK_CLOCK, 2000);
    assert_int_equal(r[2].count, 5000 + b);
  }
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

static void full_buffer(void** state) {
  (void)state;
  zx_handle_t ctl = initialized(1);
  zxs_perfmon_config_t c;
  memset(&c, 0, sizeof(c));
  c.events[0] = (zxs_perfmon_event_config_t){CPU_CLOCK, 100, TIMEBASE | PC_FLAG | OS_USER};
  c.events[1] = (zxs_perfmon_event_config_t){PF, 0, OS_USER};
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  uint64_t values[ZXS_PERFMON_MAX_NUM_EVENTS] = {0};
  // 44 bytes per sample: 92 fit in 4096 - 24 bytes, and then not the final 36.
  uint32_t fired = 0;
  for (; fired < 200; fired++) {
    values[1] = fired;
    zxs_perfmon_sample_t s = {.event = 0, .time = fired, .pc = fired, .values = values};
    fake_perfmon_fire(0, &s);
  }
  fake_perfmon_set_total(0, 0, 100 * 200 + 50);
  fake_perfmon_set_total(0, 1, 500);
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  zxs_perfmon_record_t r[400];
  zxs_perfmon_buffer_header_t h;
  size_t n = read_buffer(ctl, 0, r, 400, &h);
  assert_int_equal(h.flags, ZXS_PERFMON_BUFFER_FLAG_FULL);
  assert_true(h.capture_end <= 4096);
  // Whole groups only: TIME, PC, COUNT, repeated; the final group did not fit either.
  assert_int_equal(n % 3, 0);
  for (size_t i = 0; i < n; i += 3) {
    assert_int_equal(r[i].type, ZXS_PERFMON_RECORD_TIME);
    assert_int_equal(r[i + 1].type, ZXS_PERFMON_RECORD_PC);
    assert_int_equal(r[i + 2].type, ZXS_PERFMON_RECORD_COUNT);
  }
  assert_int_equal(n / 3, (4096 - 24) / 44);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

static void last_branch_records(void** state) {
  (void)state;
  fake_perfmon_set_pmu(true, true);
  zx_handle_t ctl = initialized(1);
  zxs_perfmon_config_t c = one_event(CYCLES, 100000, LBR | OS_USER);
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  zxs_perfmon_last_branch_t br[40];
  for (uint32_t i = 0; i < 40; i++) br[i] = (zxs_perfmon_last_branch_t){i, i + 100, i << 16};
  zxs_perfmon_sample_t s = {.event = 0, .time = 9, .aspace = 3, .num_branches = 3, .branches = br};
  fake_perfmon_fire(1, &s);
  s.num_branches = 40;  // clamped to 32
  fake_perfmon_fire(1, &s);
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  zxs_perfmon_record_t r[16];
  assert_int_equal(read_buffer(ctl, 1, r, 16, NULL), 3 + 3 + 2);
  expect_rec(&r[1], ZXS_PERFMON_RECORD_TICK, CYCLES, 9);
  expect_rec(&r[2], ZXS_PERFMON_RECORD_LAST_BRANCH, CYCLES, 9);
  assert_int_equal(r[2].size, ZXS_PERFMON_LAST_BRANCH_RECORD_SIZE(3));
  assert_int_equal(r[2].last_branch.num_branches, 3);
  assert_int_equal(r[2].last_branch.aspace, 3);
  assert_memory_equal(r[2].last_branch.branches, br, 3 * sizeof(br[0]));
  assert_int_equal(ZXS_PERFMON_LAST_BRANCH_INFO_MISPRED(r[2].last_branch.branches[1].info), 1);
  assert_int_equal(r[5].last_branch.num_branches, 32);
  assert_memory_equal(r[5].last_branch.branches, br, 32 * sizeof(br[0]));
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

// --- Fork ---------------------------------------------------------------------------------------

static void fork_child_forgets_the_run(void** state) {
  (void)state;
  zx_handle_t ctl = initialized(1);
  zxs_perfmon_config_t c = one_event(PF, 0, OS_USER);
  assert_int_equal(zxs_perfmon_stage_config(ctl, &c), ZX_OK);
  assert_int_equal(zxs_perfmon_start(ctl), ZX_OK);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int bad = 0;
    zxs_perfmon_properties_t p;
    bad |= zxs_perfmon_get_properties(ctl, &p) != ZX_ERR_BAD_STATE;
    bad |= zxs_perfmon_stop(ctl) != ZX_ERR_BAD_STATE;
    bad |= (fake_perfmon_run() != NULL) << 1;
    zx_handle_t mine;
    bad |= (zxs_perfmon_open(g_rsrc, &mine) != ZX_OK) << 2;
    bad |= (zxs_handle_close(mine) != ZX_OK) << 3;
    bad |= (zxs_handle_close(ctl) != ZX_OK) << 4;
    bad |= (fake_perfmon_stops() != 0) << 5;  // the child never stopped the parent's run
    _exit(bad);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  // The parent's run goes on.
  assert_non_null(fake_perfmon_run());
  assert_int_equal(zxs_perfmon_stop(ctl), ZX_OK);
  assert_int_equal(fake_perfmon_stops(), 1);
  assert_int_equal(zxs_handle_close(ctl), ZX_OK);
}

// --- Event names --------------------------------------------------------------------------------

static void event_names(void** state) {
  (void)state;
  static const struct {
    const char* name;
    uint16_t id;
  } kNames[] = {
      {"page-faults", PF},
      {"faults", PF},
      {"misc:page_faults", PF},
      {"MISC:Page_Faults", PF},
      {"cs", CS},
      {"context-switches", CS},
      {"cpu-clock", CPU_CLOCK},
      {"task-clock", TASK_CLOCK},
      {"minor-faults", ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 0x405)},
      {"major-faults", ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 0x406)},
      {"migrations", ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 0x404)},
      {"cycles", 0x0800},
      {"arch:unhalted_core_cycles", 0x0800},
      {"instructions", 0x0801},
      {"ref-cycles", 0x0802},
      {"cache-references", 0x0803},
      {"cache-misses", 0x0804},
      {"branches", 0x0805},
      {"branch-misses", 0x0806},
      {"fixed:instructions_retired", 0x1001},
      {"fixed:unhalted_core_cycles", 0x1002},
      {"fixed:unhalted_reference_cycles", 0x1003},
  };
  for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); i++) {
    uint16_t id = 0;
    assert_int_equal(zxs_perfmon_event_id(kNames[i].name, &id), ZX_OK);
    if (id != kNames[i].id) fail_msg("%s: 0x%x, want 0x%x", kNames[i].name, id, kNames[i].id);
    const char* canonical = zxs_perfmon_event_name(id);
    assert_non_null(canonical);
    uint16_t back = 0;
    assert_int_equal(zxs_perfmon_event_id(canonical, &back), ZX_OK);
    assert_int_equal(back, id);
  }
  uint16_t id = 7;
  assert_int_equal(zxs_perfmon_event_id("page-fault", &id), ZX_ERR_NOT_FOUND);
  assert_int_equal(zxs_perfmon_event_id("", &id), ZX_ERR_NOT_FOUND);
  assert_int_equal(zxs_perfmon_event_id(NULL, &id), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_perfmon_event_id("cycles", NULL), ZX_ERR_INVALID_ARGS);
  assert_null(zxs_perfmon_event_name(0));
  assert_null(zxs_perfmon_event_name(VALUE_EV));
  assert_string_equal(zxs_perfmon_event_name(PF), "misc:page_faults");
  assert_int_equal(ZXS_PERFMON_EVENT_ID_UNIT(PF), ZXS_PERFMON_UNIT_MISC);
  assert_int_equal(ZXS_PERFMON_EVENT_ID_EVENT(PF), 0x402);
}

// --- The reader on malformed buffers
// ----------------------------------------------------------------

static size_t header(uint8_t* out, uint16_t version, uint64_t capture_end) {
  zxs_perfmon_buffer_header_t h = {.version = version,
                                   .arch = 1,
                                   .flags = 0,
                                   .ticks_per_second = 1000,
                                   .capture_end = capture_end};
  return zxs_perfmon_encode_header(out, &h);
}

static void reader_rejects_bad_headers(void** state) {
  (void)state;
  uint8_t buf[64] = {0};
  zxs_perfmon_reader_t r;
  zxs_perfmon_record_t rec;
  assert_int_equal(zxs_perfmon_reader_init(NULL, buf, sizeof(buf)), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_perfmon_reader_init(&r, NULL, 8), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_perfmon_reader_init(&r, NULL, 0), ZX_ERR_IO_DATA_INTEGRITY);
  assert_int_equal(zxs_perfmon_reader_init(&r, buf, 23), ZX_ERR_IO_DATA_INTEGRITY);
  assert_false(zxs_perfmon_reader_next(&r, &rec));
  header(buf, 1, 24);
  assert_int_equal(zxs_perfmon_reader_init(&r, buf, 64), ZX_ERR_NOT_SUPPORTED);
  header(buf, 0, 20);
  assert_int_equal(zxs_perfmon_reader_init(&r, buf, 64), ZX_ERR_IO_DATA_INTEGRITY);
  assert_string_equal(r.error, "capture_end inside the header");
  header(buf, 0, 68);
  assert_int_equal(zxs_perfmon_reader_init(&r, buf, 64), ZX_ERR_IO_DATA_INTEGRITY);
  header(buf, 0, UINT64_MAX);
  assert_int_equal(zxs_perfmon_reader_init(&r, buf, 64), ZX_ERR_IO_DATA_INTEGRITY);
  header(buf, 0, 26);
  assert_int_equal(zxs_perfmon_reader_init(&r, buf, 64), ZX_ERR_IO_DATA_INTEGRITY);
  assert_false(zxs_perfmon_reader_next(&r, &rec));
  header(buf, 0, 24);
  assert_int_equal(zxs_perfmon_reader_init(&r, buf, 24), ZX_OK);
  assert_false(zxs_perfmon_reader_next(&r, &rec));
  assert_int_equal(r.status, ZX_OK);
}

static void reader_rejects_bad_records(void** state) {
  (void)state;
  static const struct {
    const char* what;
    uint8_t bytes[24];
    size_t len;
    size_t good;  // records read before the error
  } kCases[] = {
      {"reserved type", {0, 0, 0, 0}, 4, 0},
      {"unknown type", {7, 0, 0, 0}, 4, 0},
      {"unknown type 255", {255, 0, 1, 0}, 4, 0},
      {"TIME cut short", {1, 0, 0, 0, 1, 2, 3, 4}, 8, 0},
      {"PC cut short", {2, 0, 1, 0, 5, 0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8}, 16, 1},
      {"LAST_BRANCH header cut short", {6, 0, 1, 0}, 4, 0},
      {"LAST_BRANCH of 33", {6, 0, 1, 0, 33, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 16, 0},
      {"LAST_BRANCH of 2^32-1",
       {6, 0, 1, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0},
       16,
       0},
      {"LAST_BRANCH of 1 cut short", {6, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 16, 0},
  };
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); i++) {
    uint8_t buf[64];
    memset(buf, 0xee, sizeof(buf));
    header(buf, 0, 24 + kCases[i].len);
    memcpy(buf + 24, kCases[i].bytes, kCases[i].len);
    zxs_perfmon_reader_t r;
    zxs_perfmon_record_t rec;
    assert_int_equal(zxs_perfmon_reader_init(&r, buf, sizeof(buf)), ZX_OK);
    size_t n = 0;
    while (zxs_perfmon_reader_next(&r, &rec)) n++;
    if (n != kCases[i].good || r.status != ZX_ERR_IO_DATA_INTEGRITY) {
      fail_msg("%s: %zu records, status %s", kCases[i].what, n, zxs_status_string(r.status));
    }
    assert_true(r.error[0] != '\0');
    assert_false(zxs_perfmon_reader_next(&r, &rec));  // stays stopped
  }
}

static void reader_any_alignment(void** state) {
  (void)state;
  uint8_t enc[256];
  size_t n = ZXS_PERFMON_BUFFER_HEADER_SIZE;
  n += zxs_perfmon_encode_time(enc + n, 0, -5);
  n += zxs_perfmon_encode_pc(enc + n, PF, UINT64_C(0x1122334455667788), UINT64_C(0xfedcba98));
  n += zxs_perfmon_encode_count(enc + n, CS, 12345678901234ull);
  n += zxs_perfmon_encode_value(enc + n, VALUE_EV, 7);
  n += zxs_perfmon_encode_tick(enc + n, CYCLES);
  header(enc, 0, n);
  for (size_t shift = 0; shift < 8; shift++) {
    uint8_t* copy = malloc(n + shift);
    memcpy(copy + shift, enc, n);
    zxs_perfmon_reader_t r;
    zxs_perfmon_record_t rec[5];
    assert_int_equal(zxs_perfmon_reader_init(&r, copy + shift, n), ZX_OK);
    for (int i = 0; i < 5; i++) assert_true(zxs_perfmon_reader_next(&r, &rec[i]));
    assert_false(zxs_perfmon_reader_next(&r, &rec[0]));
    assert_int_equal(r.status, ZX_OK);
    assert_int_equal(rec[0].time, -5);
    assert_true(rec[1].pc.aspace == UINT64_C(0x1122334455667788) && rec[1].pc.pc == 0xfedcba98);
    assert_int_equal(rec[1].time, -5);
    assert_true(rec[2].count == 12345678901234ull);
    assert_int_equal(rec[3].value, 7);
    assert_int_equal(rec[4].size, 4);
    // Re-encoding gives the bytes back.
    uint8_t again[256];
    size_t m = ZXS_PERFMON_BUFFER_HEADER_SIZE;
    for (int i = 0; i < 5; i++) m += zxs_perfmon_encode_record(again + m, &rec[i]);
    assert_int_equal(m, n);
    assert_memory_equal(again + 24, enc + 24, n - 24);
    free(copy);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(open_statuses, setup, teardown),
      cmocka_unit_test_setup_teardown(handle_checks_come_first, setup, teardown),
      cmocka_unit_test_setup_teardown(properties, setup, teardown),
      cmocka_unit_test_setup_teardown(before_initialize, setup, teardown),
      cmocka_unit_test_setup_teardown(initialize_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(run_order, setup, teardown),
      cmocka_unit_test_setup_teardown(failed_stage_drops_the_config, setup, teardown),
      cmocka_unit_test_setup_teardown(start_failure_runs_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(config_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(all_events_at_once, setup, teardown),
      cmocka_unit_test_setup_teardown(buffer_handles, setup, teardown),
      cmocka_unit_test_setup_teardown(timebase_records, setup, teardown),
      cmocka_unit_test_setup_teardown(counting_without_timebase, setup, teardown),
      cmocka_unit_test_setup_teardown(full_buffer, setup, teardown),
      cmocka_unit_test_setup_teardown(last_branch_records, setup, teardown),
      cmocka_unit_test_setup_teardown(fork_child_forgets_the_run, setup, teardown),
      cmocka_unit_test_setup_teardown(event_names, setup, teardown),
      cmocka_unit_test_setup_teardown(reader_rejects_bad_headers, setup, teardown),
      cmocka_unit_test_setup_teardown(reader_rejects_bad_records, setup, teardown),
      cmocka_unit_test_setup_teardown(reader_any_alignment, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
