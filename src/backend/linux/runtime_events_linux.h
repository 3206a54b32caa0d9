// Page-fault and kernel-lock time of one thread from per-thread perf events (internal to the
// Linux backend; see runtime_events_linux.c). Not thread-safe: the caller serializes.
#ifndef ZXSAMPLER_SRC_BACKEND_LINUX_RUNTIME_EVENTS_LINUX_H_
#define ZXSAMPLER_SRC_BACKEND_LINUX_RUNTIME_EVENTS_LINUX_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime_pairs_linux.h"

enum {
  ZXS_RT_FAULT_BEGIN,
  ZXS_RT_FAULT_END_MIN,
  ZXS_RT_FAULT_END_MAJ,
  ZXS_RT_LOCK_BEGIN,
  ZXS_RT_LOCK_END,
  ZXS_RT_EVENT_COUNT
};

typedef struct zxs_rt_events {
  int fds[ZXS_RT_EVENT_COUNT];  // -1: not open
  uint64_t ids[ZXS_RT_EVENT_COUNT];
  int ring_fd;  // the event whose ring the others write into; -1: none
  uint8_t* ring;
  size_t page;
  size_t data_size;
  uint32_t fields;       // ZXS_TASK_RUNTIME_PAGE_FAULT_TIME / _LOCK_CONTENTION_TIME opened
  zxs_rt_pairs_t pairs;  // pairing state and totals (page_fault_ns, lock_contention_ns)
  uint64_t lost;         // records the kernel dropped (full ring)
} zxs_rt_events_t;

// Nothing open.
void zxs_rt_events_init(zxs_rt_events_t* ev);
// Ring sizes (data pages): a measured thread's, and a followed one's (the recorder's deadlines:
// 1 MiB, ~43000 records, so a burst of 16384 faults fits whole while the drainer is slow to run).
#define ZXS_RT_RING_PAGES 8u
#define ZXS_RT_FOLLOWED_RING_PAGES 256u

// Opens the events of thread `tid` with a ring of `ring_pages` data pages (a power of two; fewer
// when the locked-memory limit refuses them); returns the fields they measure (0: none).
uint32_t zxs_rt_events_open(zxs_rt_events_t* ev, pid_t tid, size_t ring_pages);
// The CPU time a page fault costs outside its timed pair (exception entry and exit, the end
// record), measured on the calling thread at the first call (a few milliseconds: 1280 fresh
// pages touched with the thread's fault events open); 0 when it cannot be measured. Callers
// serialize with zxs_rt_events_drain(), which adds it to each fault it pairs once measured
// (zxs_rt_pairs_t.fault_edge_ns).
int64_t zxs_rt_fault_edge_ns(void);
// Reads what the ring holds into the totals.
void zxs_rt_events_drain(zxs_rt_events_t* ev);
// The CPU time of the thread since its events were opened (the time its events ran), also
// after it exited, when they still are: false when none is open or it cannot be read.
bool zxs_rt_events_running_ns(const zxs_rt_events_t* ev, int64_t* ns);
// Drains (unless `forget`: after fork, the ring is the parent's business) and closes; the
// totals stay.
void zxs_rt_events_close(zxs_rt_events_t* ev, bool forget);

#endif  // ZXSAMPLER_SRC_BACKEND_LINUX_RUNTIME_EVENTS_LINUX_H_
