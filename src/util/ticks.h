// Ticks and nanoseconds (internal). [signal-safe]: pure arithmetic.
#ifndef ZXSAMPLER_SRC_UTIL_TICKS_H_
#define ZXSAMPLER_SRC_UTIL_TICKS_H_

#include <stdint.h>

// `ticks` of a clock of `per_second` ticks a second, in nanoseconds (rounded down, no overflow
// for any uint64_t tick count below 2^64 / 10^9 seconds' worth). per_second == 0 is taken as
// nanoseconds.
static inline uint64_t zxs_ticks_to_ns(uint64_t ticks, uint64_t per_second) {
  if (per_second == 0 || per_second == 1000000000u) return ticks;
  return (ticks / per_second) * 1000000000u + (ticks % per_second) * 1000000000u / per_second;
}

// The inverse: nanoseconds in ticks of a clock of `per_second` ticks a second.
static inline uint64_t zxs_ns_to_ticks(uint64_t ns, uint64_t per_second) {
  if (per_second == 0 || per_second == 1000000000u) return ns;
  return (ns / 1000000000u) * per_second + (ns % 1000000000u) * per_second / 1000000000u;
}

#endif  // ZXSAMPLER_SRC_UTIL_TICKS_H_
