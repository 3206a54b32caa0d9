// The kernel's sample record (signal-safe: no allocation, no calls).
#include <zxsampler/fxt.h>
#include <zxsampler/sampler.h>

size_t zxs_fxt_encode_sample(uint64_t* out, uint64_t ticks, zx_koid_t process_koid,
                             zx_koid_t thread_koid, const uint64_t* pcs, size_t n) {
  if (out == NULL || pcs == NULL || n == 0 || n > ZX_SAMPLER_MAX_FRAMES) {
    return 0;
  }
  const size_t words = ZXS_FXT_SAMPLE_WORDS(n);
  out[1] = 0;  // empty category and name, no arguments, inline thread
  out[2] = ticks;
  out[3] = process_koid;
  out[4] = thread_koid;
  out[5] = 8u * (uint64_t)n;
  for (size_t i = 0; i < n; i++) {
    out[6 + i] = pcs[i];
  }
  // Type 15 (large), size in words, large type 0 (blob), format 0 (with metadata). Stored last
  // so a region never shows a header whose body is not there yet.
  __atomic_store_n(&out[0], (uint64_t)0xF | ((uint64_t)words << 4), __ATOMIC_RELEASE);
  return words;
}
