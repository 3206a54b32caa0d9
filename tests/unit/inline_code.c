// Code with calls forced inline, built -O2 -g (tests/meson.build) for test_inline_frames: one
// PC, the return address of inline_probe(), sits in inline_inner() inlined into inline_middle()
// inlined into inline_outer(). Each function records the line it makes its call from.
#include "inline_code.h"

uintptr_t inline_probe_return_address;
int inline_line[3];  // [0] inner's call of the probe, [1] middle's of inner, [2] outer's of middle
volatile uint64_t inline_sink;

__attribute__((noinline)) void inline_probe(int line) {
  inline_line[0] = line;
  inline_probe_return_address = (uintptr_t)__builtin_return_address(0);
  __asm__ volatile("" ::: "memory");  // no tail call into here, nothing folded away
}

static inline __attribute__((always_inline)) uint64_t inline_inner(uint64_t x, int line) {
  inline_line[1] = line;
  inline_probe(__LINE__);
  return x * 3 + inline_sink;  // work after the call keeps it a call, not a jump
}

static inline __attribute__((always_inline)) uint64_t inline_middle(uint64_t x, int line) {
  inline_line[2] = line;
  uint64_t y = inline_inner(x + 1, __LINE__);
  return y ^ inline_sink;
}

__attribute__((noinline)) uint64_t inline_outer(uint64_t x) {
  uint64_t y = inline_middle(x, __LINE__);
  return y + inline_sink;
}
