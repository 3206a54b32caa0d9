// The one binary search of the library (internal), over arrays of structs sorted by a
// uint64_t key: module starts, symbol addresses, compile-unit ranges, kernel symbols.
#ifndef ZXSAMPLER_SRC_UTIL_SORTED_SEARCH_H_
#define ZXSAMPLER_SRC_UTIL_SORTED_SEARCH_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

// How many leading elements of `base` (`count` elements of `stride` bytes, sorted ascending by
// the uint64_t at `key_offset` in each) have a key <= `key`: the index just past the last such
// element, 0 when there is none. Callers step back from there to the element covering `key`.
static inline size_t zxs_sorted_count_at_or_below(const void* base, size_t count, size_t stride,
                                                  size_t key_offset, uint64_t key) {
  const unsigned char* bytes = base;
  size_t lo = 0;
  size_t hi = count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint64_t mid_key;
    memcpy(&mid_key, bytes + mid * stride + key_offset, sizeof(mid_key));
    if (mid_key <= key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

#endif  // ZXSAMPLER_SRC_UTIL_SORTED_SEARCH_H_
