// The one way internal code grows a heap array (internal; not async-signal-safe: it allocates).
#ifndef ZXSAMPLER_SRC_UTIL_ARRAY_GROW_H_
#define ZXSAMPLER_SRC_UTIL_ARRAY_GROW_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

// Makes room for `need` elements of `elem` bytes in *array (capacity *cap, in elements), doubling
// from 16. True when there is room; false (the array untouched) when the allocation failed or the
// size would overflow.
static inline bool zxs_array_grow(void** array, size_t* cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t cap2 = *cap == 0 ? 16 : *cap;
  while (cap2 < need) {
    if (cap2 > SIZE_MAX / 2) return false;
    cap2 *= 2;
  }
  if (elem != 0 && cap2 > SIZE_MAX / elem) return false;
  void* grown = realloc(*array, cap2 * elem);
  if (grown == NULL) return false;
  *array = grown;
  *cap = cap2;
  return true;
}

#endif  // ZXSAMPLER_SRC_UTIL_ARRAY_GROW_H_
