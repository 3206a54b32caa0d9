// Reading a perf_event ring buffer: the records between the consumer's tail and the kernel's
// head, in order, each handed over where it lies, or copied out whole when it wraps around the
// end of the data area. Not copying matters: a sample with a stack copy is 8 KiB.
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>

#include "linux_internal.h"

static void ring_copy(const uint8_t* data, size_t data_size, uint64_t pos, void* out, size_t len) {
  const size_t at = (size_t)(pos & (data_size - 1));
  const size_t first = len < data_size - at ? len : data_size - at;
  memcpy(out, data + at, first);
  memcpy((uint8_t*)out + first, data, len - first);
}

// Asks the CPU for the `len` bytes at ring position `pos` (the record after the one being
// handed over): the kernel wrote them on the sampled CPU, usually long enough ago for them to
// have left this CPU's caches, and the walk's loads then each waited out a miss in turn (40% of
// the collector's time). Prefetched while the current record is handled, the misses overlap.
#ifndef PREFETCH_MAX
#define PREFETCH_MAX 4096u
#endif
static void ring_prefetch(const uint8_t* data, size_t data_size, uint64_t pos, size_t len) {
  enum { kLine = 64 };
  if (len > PREFETCH_MAX) len = PREFETCH_MAX;
  for (size_t off = 0; off < len; off += kLine) {
    __builtin_prefetch(data + ((pos + off) & (data_size - 1)), 0, 3);
  }
}

void zxs_linux_ring_read(uint8_t* base, size_t page, size_t data_size, uint64_t* scratch,
                         zxs_linux_record_fn on_record, void* ctx) {
  struct perf_event_mmap_page* meta = (struct perf_event_mmap_page*)(void*)base;
  const uint8_t* data = base + page;
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;  // only the consumer writes it
  while (head - tail >= sizeof(struct perf_event_header)) {
    struct perf_event_header hdr;
    ring_copy(data, data_size, tail, &hdr, sizeof(hdr));
    if (hdr.size < sizeof(hdr) || hdr.size > head - tail) {
      tail = head;  // cannot happen with a sane kernel; never loop on it
      break;
    }
    if (hdr.size % 8 == 0) {  // a u16: always fits the 64 KiB scratch record
      const size_t at = (size_t)(tail & (data_size - 1));
      const uint64_t* record = (const uint64_t*)(const void*)(data + at);  // 8-aligned
      if (hdr.size > data_size - at) {
        ring_copy(data, data_size, tail, scratch, hdr.size);
        record = scratch;
      }
      const uint64_t next = tail + hdr.size;
      // Assumes the next record is as long as this one (samples of one thread are).
      ring_prefetch(data, data_size, next, head - next < hdr.size ? head - next : hdr.size);
      on_record(ctx, hdr.type, record + 1, hdr.size / 8 - 1);
    }
    tail += hdr.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

uint64_t zxs_linux_perf_id(int fd) {
  uint64_t id = 0;
  return fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 ? id : 0;
}

bool zxs_linux_perf_fd_is(int fd, uint64_t id) { return id != 0 && zxs_linux_perf_id(fd) == id; }
