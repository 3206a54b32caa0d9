// macOS: capabilities, CPUs, time, process identity, and what macOS does not offer here (the
// CPU performance monitor).
//
// macOS does not say which CPU a thread ran on (there is no public call for another thread, and
// the calling thread's is not stable), so caps say !has_cpu_attribution: every CPU below the
// limit counts as online and each thread's samples go to the region of its slot index (the
// seam's ZXS_CPU_UNKNOWN rule).
#include <libproc.h>
#include <mach/mach.h>
#include <mach/mach_time.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macos_internal.h"
#include "platform.h"

zx_status_t zxs_macos_status(kern_return_t kr) {
  switch (kr) {
    case KERN_SUCCESS:
      return ZX_OK;
    case KERN_RESOURCE_SHORTAGE:
      return ZX_ERR_NO_MEMORY;
    case KERN_NO_SPACE:
    case KERN_UREFS_OVERFLOW:
      return ZX_ERR_NO_RESOURCES;
    case KERN_INVALID_ARGUMENT:
    case KERN_INVALID_VALUE:
      return ZX_ERR_INVALID_ARGS;
    // The thread is gone: its port became a dead name, or the thread terminated.
    case KERN_INVALID_NAME:
    case KERN_INVALID_RIGHT:
    case KERN_INVALID_CAPABILITY:
    case KERN_TERMINATED:
    case MACH_SEND_INVALID_DEST:
      return ZX_ERR_BAD_STATE;
    case KERN_NO_ACCESS:
    case KERN_PROTECTION_FAILURE:
    case KERN_DENIED:
      return ZX_ERR_ACCESS_DENIED;
    case KERN_NOT_SUPPORTED:
    case KERN_INVALID_POLICY:
      return ZX_ERR_NOT_SUPPORTED;
    case KERN_OPERATION_TIMED_OUT:
      return ZX_ERR_TIMED_OUT;
    case KERN_ABORTED:
      return ZX_ERR_CANCELED;
    default:
      return ZX_ERR_INTERNAL;
  }
}

static zxs_prim_caps_t g_caps;
static mach_timebase_info_data_t g_timebase;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void fill_caps(void) {
  long page = sysconf(_SC_PAGESIZE);
  long cpus = sysconf(_SC_NPROCESSORS_CONF);
  g_caps.name = "macos";
  g_caps.page_size = page > 0 ? (size_t)page : 16384u;
  g_caps.cpu_number_limit = cpus > 0 ? (uint32_t)cpus : 1u;
  g_caps.has_cpu_attribution = false;
  g_caps.can_interrupt_other_thread = true;
  if (mach_timebase_info(&g_timebase) != KERN_SUCCESS || g_timebase.numer == 0 ||
      g_timebase.denom == 0) {
    g_timebase.numer = 1;
    g_timebase.denom = 1;
  }
}

void zxs_prim_get_caps(zxs_prim_caps_t* caps) {
  pthread_once(&g_once, fill_caps);
  *caps = g_caps;
}

// The seam's rule for a platform without CPU attribution: every CPU below the limit is online,
// so each has a region.
zx_status_t zxs_prim_online_cpus(uint32_t* cpus, uint32_t max, uint32_t* count) {
  pthread_once(&g_once, fill_caps);
  const uint32_t n = g_caps.cpu_number_limit;
  for (uint32_t i = 0; i < n && i < max; i++) cpus[i] = i;
  *count = n < max ? n : max;
  return n > max ? ZX_ERR_BUFFER_TOO_SMALL : ZX_OK;
}

// Never consulted (caps say the CPU is unknown); 0 is below every limit.
uint32_t zxs_prim_current_cpu(void) { return 0; }

uint64_t zxs_prim_ticks(void) { return mach_absolute_time(); }

uint64_t zxs_prim_ticks_per_second(void) {
  pthread_once(&g_once, fill_caps);
  // ns = ticks * numer / denom, so one second is 1e9 * denom / numer ticks (24 MHz on Apple
  // silicon: 125/3; 1 GHz on Intel: 1/1).
  return (uint64_t)1000000000u * g_timebase.denom / g_timebase.numer;
}

uint64_t zxs_macos_ns_to_ticks(uint64_t ns) {
  pthread_once(&g_once, fill_caps);
  // Split so that no product overflows (the factors are small: 125/3, 1/1).
  const uint64_t n = g_timebase.numer, d = g_timebase.denom;
  return ns / n * d + ns % n * d / n;
}

void zxs_prim_relax(void) { sched_yield(); }

zx_koid_t zxs_prim_process_koid(void) { return (zx_koid_t)getpid(); }

zx_status_t zxs_prim_process_name(char* buf, size_t size) {
  if (buf == NULL || size == 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (proc_name(getpid(), buf, (uint32_t)(size > UINT32_MAX ? UINT32_MAX : size)) <= 0) {
    buf[0] = '\0';
  }
  buf[size - 1] = '\0';
  return ZX_OK;
}

// --- CPU performance monitor: none on macOS (kpc is private) -----------------------------------

void zxs_prim_perfmon_properties(zxs_perfmon_properties_t* properties) {
  const uint16_t api_version = properties->api_version;
  const uint16_t max_num_events = properties->max_num_events;
  memset(properties, 0, sizeof(*properties));
  properties->api_version = api_version;
  properties->max_num_events = max_num_events;
}

zx_status_t zxs_prim_perfmon_check_access(void) { return ZX_ERR_NOT_SUPPORTED; }

zx_status_t zxs_prim_perfmon_event(uint16_t id, bool* counting) {
  (void)id;
  *counting = false;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_prim_perfmon_start(zxs_perfmon_run_t* run) {
  (void)run;
  return ZX_ERR_NOT_SUPPORTED;
}

void zxs_prim_perfmon_stop(zxs_perfmon_run_t* run) { (void)run; }

void zxs_prim_perfmon_after_fork_child(zxs_perfmon_run_t* run) { (void)run; }
