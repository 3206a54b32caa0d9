// Timing faults and contentions from the kernel's events; schedstat (see runtime_pairs_linux.h).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "runtime_pairs_linux.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// include/trace/events/lock.h: the contention is on a spin lock.
#define LCB_F_SPIN (1u << 0)

static const char* const kTracefs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

static bool read_small_file(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

// The offset of `field` in a tracepoint's format file ("field:TYPE NAME;\toffset:N;").
static bool field_offset(const char* format, const char* field, uint32_t* offset) {
  char needle[64];
  snprintf(needle, sizeof(needle), " %s;", field);
  const char* at = strstr(format, needle);
  if (at == NULL) return false;
  at = strstr(at, "offset:");
  if (at == NULL) return false;
  *offset = (uint32_t)strtoul(at + 7, NULL, 10);
  return true;
}

static zxs_rt_tracepoint_t find_tracepoint(const char* name, bool with_flags) {
  zxs_rt_tracepoint_t tp = {0};
  for (size_t i = 0; i < sizeof(kTracefs) / sizeof(kTracefs[0]) && !tp.found; i++) {
    char path[128], text[4096];
    snprintf(path, sizeof(path), "%s/events/lock/%s/id", kTracefs[i], name);
    if (!read_small_file(path, text, sizeof(text))) continue;
    tp.id = strtoull(text, NULL, 10);
    snprintf(path, sizeof(path), "%s/events/lock/%s/format", kTracefs[i], name);
    tp.found = read_small_file(path, text, sizeof(text)) &&
               field_offset(text, "lock_addr", &tp.addr_offset) &&
               (!with_flags || field_offset(text, "flags", &tp.flags_offset));
  }
  return tp;
}

static zxs_rt_tracepoint_t g_begin, g_end;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void find_tracepoints(void) {
  g_begin = find_tracepoint("contention_begin", true);
  g_end = find_tracepoint("contention_end", false);
}

bool zxs_rt_lock_tracepoints(zxs_rt_tracepoint_t* begin, zxs_rt_tracepoint_t* end) {
  pthread_once(&g_once, find_tracepoints);
  *begin = g_begin;
  *end = g_end;
  return g_begin.found && g_end.found;
}

// A raw field of `size` bytes at `offset`, or 0 when the record is too short.
static uint64_t raw_field(const uint8_t* raw, size_t raw_size, uint32_t offset, size_t size) {
  if (raw == NULL || (size_t)offset + size > raw_size) return 0;
  uint64_t value = 0;
  memcpy(&value, raw + offset, size);  // little-endian hosts: the low bytes
  return value;
}

// Adds [begin, end) to the buckets it covers, each its own part.
static void history_add(zxs_rt_history_t* h, bool fault, uint64_t begin, uint64_t end) {
  if (h == NULL || end <= begin) return;
  // A fault longer than the history only leaves its end there.
  const uint64_t span = (uint64_t)ZXS_RT_HISTORY_BUCKETS << ZXS_RT_HISTORY_SHIFT;
  if (end - begin > span) begin = end - span;
  for (uint64_t t = begin; t < end;) {
    const uint64_t number = t >> ZXS_RT_HISTORY_SHIFT;
    const uint64_t next = (number + 1) << ZXS_RT_HISTORY_SHIFT;
    const uint64_t part = (next < end ? next : end) - t;
    const size_t i = (size_t)(number % ZXS_RT_HISTORY_BUCKETS);
    if (h->number[i] < number) {  // holds an older bucket: reuse it
      h->number[i] = number;
      h->fault_ns[i] = 0;
      h->lock_ns[i] = 0;
    }
    if (h->number[i] == number) *(fault ? &h->fault_ns[i] : &h->lock_ns[i]) += (uint32_t)part;
    t += part;
  }
}

void zxs_rt_history_between(const zxs_rt_history_t* h, uint64_t since, uint64_t until,
                            int64_t* fault_ns, int64_t* lock_ns) {
  *fault_ns = 0;
  *lock_ns = 0;
  if (h == NULL || until < since) return;
  const uint64_t last = until >> ZXS_RT_HISTORY_SHIFT;
  if (last - (since >> ZXS_RT_HISTORY_SHIFT) >= ZXS_RT_HISTORY_BUCKETS) {
    since = (last - ZXS_RT_HISTORY_BUCKETS + 1) << ZXS_RT_HISTORY_SHIFT;  // what it can hold
  }
  const uint64_t width = (uint64_t)1 << ZXS_RT_HISTORY_SHIFT;
  for (uint64_t number = since >> ZXS_RT_HISTORY_SHIFT; number <= until >> ZXS_RT_HISTORY_SHIFT;
       number++) {
    const size_t i = (size_t)(number % ZXS_RT_HISTORY_BUCKETS);
    if (h->number[i] != number) continue;
    const uint64_t lo = number << ZXS_RT_HISTORY_SHIFT;
    const uint64_t from = since > lo ? since : lo;
    const uint64_t to = until < lo + width - 1 ? until + 1 : lo + width;
    // The part of the bucket inside the interval, in 1/65536ths.
    const uint64_t share = to > from ? to - from : 0;
    *fault_ns += (int64_t)((h->fault_ns[i] * share) >> ZXS_RT_HISTORY_SHIFT);
    *lock_ns += (int64_t)((h->lock_ns[i] * share) >> ZXS_RT_HISTORY_SHIFT);
  }
}

// False for a record older than the last one fed (drained late from another CPU's ring).
static bool in_order(zxs_rt_pairs_t* p, uint64_t time) {
  if (time < p->last_time) return false;
  p->last_time = time;
  return true;
}

void zxs_rt_pairs_fault_begin(zxs_rt_pairs_t* p, uint64_t time) {
  if (in_order(p, time)) p->fault_begin = time;
}

void zxs_rt_pairs_fault_end(zxs_rt_pairs_t* p, uint64_t time) {
  if (!in_order(p, time)) return;
  if (p->fault_begin != 0) {
    // The edge goes before the begin event (the exception's entry), never back past the
    // previous fault's end: faults are never counted twice, so their sum stays within the
    // time they happened in however rough the estimate.
    const uint64_t edge = p->fault_edge_ns > 0 ? (uint64_t)p->fault_edge_ns : 0;
    uint64_t begin = p->fault_begin > edge ? p->fault_begin - edge : 0;
    if (begin < p->last_fault_end) begin = p->last_fault_end;
    p->page_fault_ns += (int64_t)(time - begin);
    p->faults++;
    p->last_fault_end = time;
    history_add(p->history, true, begin, time);
  }
  p->fault_begin = 0;
}

void zxs_rt_pairs_lock_begin(zxs_rt_pairs_t* p, const zxs_rt_tracepoint_t* tp, uint64_t time,
                             const uint8_t* raw, size_t raw_size) {
  if (!in_order(p, time)) return;
  if ((raw_field(raw, raw_size, tp->flags_offset, 4) & LCB_F_SPIN) == 0) {
    p->lock_begin = time;
    p->lock_addr = raw_field(raw, raw_size, tp->addr_offset, 8);
  }
}

void zxs_rt_pairs_lock_end(zxs_rt_pairs_t* p, const zxs_rt_tracepoint_t* tp, uint64_t time,
                           const uint8_t* raw, size_t raw_size) {
  if (!in_order(p, time)) return;
  if (p->lock_begin != 0 && raw_field(raw, raw_size, tp->addr_offset, 8) == p->lock_addr) {
    p->lock_contention_ns += (int64_t)(time - p->lock_begin);
    p->contentions++;
    history_add(p->history, false, p->lock_begin, time);
    p->lock_begin = 0;
  }
}

void zxs_rt_pairs_break(zxs_rt_pairs_t* p) {
  p->fault_begin = 0;
  p->lock_begin = 0;
}

bool zxs_rt_parse_schedstat(const char* text, int64_t* run_ns, int64_t* delay_ns) {
  unsigned long long run = 0, wait = 0;
  if (sscanf(text, "%llu %llu", &run, &wait) != 2) return false;
  *run_ns = (int64_t)run;
  *delay_ns = (int64_t)wait;
  return true;
}

bool zxs_rt_read_schedstat(pid_t pid, pid_t tid, int64_t* run_ns, int64_t* delay_ns) {
  char path[64], text[128];
  snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
  return read_small_file(path, text, sizeof(text)) &&
         zxs_rt_parse_schedstat(text, run_ns, delay_ns);
}
