// Frame-pointer stack walk over a register snapshot and known stack bounds. [signal-safe]
#ifndef ZXSAMPLER_SRC_CORE_FRAME_WALK_H_
#define ZXSAMPLER_SRC_CORE_FRAME_WALK_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The interrupted context, as a backend extracts it.
typedef struct zxs_regs {
  uintptr_t pc;  // interrupted instruction
  uintptr_t fp;  // frame pointer (rbp / x29)
  uintptr_t sp;  // stack pointer
} zxs_regs_t;

// [signal-safe] A code address read from a stack or a register, without the pointer
// authentication code arm64 may have signed it with (xpaclri, a no-op on cores without pointer
// authentication: macOS signs return addresses in arm64e code, Linux with pac-ret); unchanged on
// other architectures.
static inline uintptr_t zxs_strip_code_address(uintptr_t address) {
#if defined(__aarch64__)
  register uintptr_t lr __asm__("x30") = address;
  __asm__("hint #7" : "+r"(lr));  // xpaclri: strips x30
  return lr;
#else
  return address;
#endif
}

// Writes regs->pc, then the return addresses found by following frame pointers, innermost
// first, at most `max` entries; returns how many. A frame record is {saved fp, return address}
// at fp (x86-64 and aarch64 alike). The walk ends at a frame pointer outside
// [max(stack_lo, sp), stack_hi - 16], not 8-byte aligned, or not strictly above the previous
// one, or at a zero return address; it never reads outside the bounds. *truncated (may be
// NULL) is set when entries ran out while a further valid frame remained.
size_t zxs_frame_walk(const zxs_regs_t* regs, uintptr_t stack_lo, uintptr_t stack_hi, uint64_t* pcs,
                      size_t max, bool* truncated);

// The same walk over a copy of the stack taken at the interrupt: `copy` holds the `copy_len`
// bytes that were at [regs->sp, regs->sp + copy_len). Same rules, addresses compared as the
// thread saw them; records are read from the copy, so frames above the copy end the walk, and
// *truncated is set when a further valid frame lay above it. *needed (may be NULL) is the copy
// this walk needed: the bytes from sp to the end of the last frame record it read, or of the
// record above the copy that ended it (then more than copy_len).
size_t zxs_frame_walk_copy(const zxs_regs_t* regs, uintptr_t stack_lo, uintptr_t stack_hi,
                           const void* copy, size_t copy_len, uint64_t* pcs, size_t max,
                           bool* truncated, size_t* needed);

#endif  // ZXSAMPLER_SRC_CORE_FRAME_WALK_H_
