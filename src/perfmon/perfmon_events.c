// The perfmon event catalogue: ids in Fuchsia's encoding, Fuchsia-style names and Linux perf
// aliases. Which events a host can collect is the backend's business (zxs_prim_perfmon_event).
#include <stddef.h>
#include <zxsampler/perfmon.h>

typedef struct {
  uint16_t id;
  const char* name;      // "unit:name", as Fuchsia's tools spell events
  const char* alias[2];  // Linux perf names
} event_name_t;

#define ARCH(n) ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_ARCH, n)
#define FIXED(n) ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_FIXED, n)
#define MISC(n) ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, ZXS_PERFMON_MISC_SOFTWARE_BASE + (n))

// Arch and fixed ids are those of Fuchsia's intel-pm-events.inc; the misc unit's software events
// are this library's (0x400 + Linux's PERF_COUNT_SW_* number).
static const event_name_t g_events[] = {
    {ARCH(0), "arch:unhalted_core_cycles", {"cycles", "cpu-cycles"}},
    {ARCH(1), "arch:instructions_retired", {"instructions", NULL}},
    {ARCH(2), "arch:unhalted_reference_cycles", {"ref-cycles", NULL}},
    {ARCH(3), "arch:llc_references", {"cache-references", NULL}},
    {ARCH(4), "arch:llc_misses", {"cache-misses", NULL}},
    {ARCH(5), "arch:branch_instructions_retired", {"branches", "branch-instructions"}},
    {ARCH(6), "arch:branch_misses_retired", {"branch-misses", NULL}},
    {FIXED(1), "fixed:instructions_retired", {NULL, NULL}},
    {FIXED(2), "fixed:unhalted_core_cycles", {NULL, NULL}},
    {FIXED(3), "fixed:unhalted_reference_cycles", {NULL, NULL}},
    {MISC(0), "misc:cpu_clock", {"cpu-clock", NULL}},
    {MISC(1), "misc:task_clock", {"task-clock", NULL}},
    {MISC(2), "misc:page_faults", {"page-faults", "faults"}},
    {MISC(3), "misc:context_switches", {"context-switches", "cs"}},
    {MISC(4), "misc:cpu_migrations", {"cpu-migrations", "migrations"}},
    {MISC(5), "misc:minor_faults", {"minor-faults", NULL}},
    {MISC(6), "misc:major_faults", {"major-faults", NULL}},
};

// ASCII case-insensitive equality (no locale: async-signal-safe).
static bool same_name(const char* a, const char* b) {
  for (;; a++, b++) {
    char x = *a, y = *b;
    if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = (char)(y - 'A' + 'a');
    if (x != y) return false;
    if (x == '\0') return true;
  }
}

zx_status_t zxs_perfmon_event_id(const char* name, uint16_t* id) {
  if (name == NULL || id == NULL) return ZX_ERR_INVALID_ARGS;
  for (size_t i = 0; i < sizeof(g_events) / sizeof(g_events[0]); i++) {
    const event_name_t* e = &g_events[i];
    if (same_name(name, e->name) || (e->alias[0] != NULL && same_name(name, e->alias[0])) ||
        (e->alias[1] != NULL && same_name(name, e->alias[1]))) {
      *id = e->id;
      return ZX_OK;
    }
  }
  return ZX_ERR_NOT_FOUND;
}

const char* zxs_perfmon_event_name(uint16_t id) {
  for (size_t i = 0; i < sizeof(g_events) / sizeof(g_events[0]); i++) {
    if (g_events[i].id == id) return g_events[i].name;
  }
  return NULL;
}
