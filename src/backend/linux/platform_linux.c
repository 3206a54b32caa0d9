// Linux: capabilities, CPUs, time and process identity.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "linux_internal.h"
#include "platform.h"

// glibc 2.35+ registers rseq for every thread and says where the area is; the kernel keeps its
// cpu_id current, so reading it is one load (DESIGN.md: ~0.3 ns against sched_getcpu's 1.4 ns).
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#include <sys/rseq.h>
#define ZXS_HAVE_GLIBC_RSEQ 1
#else
#define ZXS_HAVE_GLIBC_RSEQ 0
#endif

// Parses a kernel cpulist ("0-3,6,8-9\n"). Calls `each(cpu, ctx)` for every CPU listed, in order;
// false on a malformed list.
static bool parse_cpulist(const char* text, void (*each)(uint32_t cpu, void* ctx), void* ctx) {
  const char* p = text;
  bool any = false;
  while (*p != '\0' && *p != '\n') {
    char* end = NULL;
    errno = 0;
    unsigned long lo = strtoul(p, &end, 10);
    if (end == p || errno != 0 || lo > UINT32_MAX) {
      return false;
    }
    unsigned long hi = lo;
    p = end;
    if (*p == '-') {
      p++;
      hi = strtoul(p, &end, 10);
      if (end == p || errno != 0 || hi < lo || hi > UINT32_MAX) {
        return false;
      }
      p = end;
    }
    for (unsigned long cpu = lo; cpu <= hi; cpu++) {
      each((uint32_t)cpu, ctx);
    }
    any = true;
    if (*p == ',') {
      p++;
    } else if (*p != '\0' && *p != '\n') {
      return false;
    }
  }
  return any;
}

// Reads a small sysfs file into buf (NUL-terminated). False if it cannot.
static bool read_small_file(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  size_t used = 0;
  while (used + 1 < size) {
    ssize_t n = read(fd, buf + used, size - 1 - used);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    used += (size_t)n;
  }
  close(fd);
  buf[used] = '\0';
  return used > 0;
}

static void note_max(uint32_t cpu, void* ctx) {
  uint32_t* max_plus_one = ctx;
  if (cpu + 1 > *max_plus_one) {
    *max_plus_one = cpu + 1;
  }
}

// Every CPU number the kernel can ever report is below the highest possible CPU + 1 (the count of
// CPUs can be smaller when numbering is sparse, so it is not enough on its own).
static uint32_t cpu_number_limit(void) {
  uint32_t limit = 0;
  char buf[4096];
  if (read_small_file("/sys/devices/system/cpu/possible", buf, sizeof(buf))) {
    uint32_t from_mask = 0;
    if (parse_cpulist(buf, note_max, &from_mask)) {
      limit = from_mask;
    }
  }
  long conf = sysconf(_SC_NPROCESSORS_CONF);
  if (conf > 0 && (unsigned long)conf > limit) {
    limit = (uint32_t)conf;
  }
  return limit > 0 ? limit : 1;
}

static zxs_prim_caps_t g_caps;
static pthread_once_t g_caps_once = PTHREAD_ONCE_INIT;

static void fill_caps(void) {
  long page = sysconf(_SC_PAGESIZE);
  g_caps.name = "linux";
  g_caps.page_size = page > 0 ? (size_t)page : 4096u;
  g_caps.cpu_number_limit = cpu_number_limit();
  g_caps.has_cpu_attribution = true;
  g_caps.can_interrupt_other_thread = true;
}

void zxs_prim_get_caps(zxs_prim_caps_t* caps) {
  pthread_once(&g_caps_once, fill_caps);
  *caps = g_caps;
}

typedef struct cpu_collect {
  uint32_t* cpus;
  uint32_t max;
  uint32_t count;  // CPUs seen (may exceed max)
} cpu_collect_t;

static void collect_cpu(uint32_t cpu, void* ctx) {
  cpu_collect_t* c = ctx;
  if (c->count < c->max) {
    c->cpus[c->count] = cpu;
  }
  c->count++;
}

zx_status_t zxs_prim_online_cpus(uint32_t* cpus, uint32_t max, uint32_t* count) {
  cpu_collect_t c = {.cpus = cpus, .max = max, .count = 0};
  char buf[4096];
  if (!read_small_file("/sys/devices/system/cpu/online", buf, sizeof(buf)) ||
      !parse_cpulist(buf, collect_cpu, &c)) {
    // No sysfs (some containers): the CPUs this process may run on are the best we know.
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
      return ZX_ERR_INTERNAL;
    }
    c.count = 0;
    for (uint32_t cpu = 0; cpu < CPU_SETSIZE; cpu++) {
      if (CPU_ISSET(cpu, &set)) {
        collect_cpu(cpu, &c);
      }
    }
  }
  *count = c.count < max ? c.count : max;
  return c.count > max ? ZX_ERR_BUFFER_TOO_SMALL : ZX_OK;
}

uint32_t zxs_prim_current_cpu(void) {
#if ZXS_HAVE_GLIBC_RSEQ
  if (__rseq_size > 0) {
    const struct rseq* rs =
        (const struct rseq*)(void*)((char*)__builtin_thread_pointer() + __rseq_offset);
    // Negative while unregistered (RSEQ_CPU_ID_UNINITIALIZED / _REGISTRATION_FAILED).
    int32_t cpu = (int32_t)__atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
    if (cpu >= 0) {
      return (uint32_t)cpu;
    }
  }
#endif
  const int saved_errno = errno;
  int cpu = sched_getcpu();
  errno = saved_errno;
  return cpu >= 0 ? (uint32_t)cpu : 0u;
}

uint64_t zxs_prim_ticks(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t zxs_prim_ticks_per_second(void) { return 1000000000u; }

void zxs_prim_relax(void) { sched_yield(); }

zx_koid_t zxs_prim_process_koid(void) { return (zx_koid_t)getpid(); }
