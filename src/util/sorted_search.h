// The one binary search of the library (internal), over arrays of structs sorted by a
// uint64_t key: module starts, symbol addresses, compile-unit ranges, kernel symbols, thread ids,
// the unwinder's FDE index and modules; or by a little-endian int32_t key: .eh_frame_hdr's
// table, whose entries are offsets from the table's address.
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

// How many leading elements have a key < `key` (the index of the first element with that key or
// above): for arrays where several elements may share a key and the first one is wanted.
static inline size_t zxs_sorted_count_below(const void* base, size_t count, size_t stride,
                                            size_t key_offset, uint64_t key) {
  return key == 0 ? 0 : zxs_sorted_count_at_or_below(base, count, stride, key_offset, key - 1);
}

// zxs_sorted_count_at_or_below for elements whose key is the little-endian int32_t at
// `key_offset` (sign-extended before the comparison with `key`).
static inline size_t zxs_sorted_count_at_or_below_i32le(const void* base, size_t count,
                                                        size_t stride, size_t key_offset,
                                                        int64_t key) {
  const unsigned char* bytes = base;
  size_t lo = 0;
  size_t hi = count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const unsigned char* k = bytes + mid * stride + key_offset;
    const int32_t mid_key = (int32_t)((uint32_t)k[0] | (uint32_t)k[1] << 8 | (uint32_t)k[2] << 16 |
                                      (uint32_t)k[3] << 24);
    if (mid_key <= key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

#endif  // ZXSAMPLER_SRC_UTIL_SORTED_SEARCH_H_
