// Frame-pointer walk within known stack bounds (signal-safe: loads and stores only).
#include "frame_walk.h"

// The walk reads a stack it does not own (another frame's saved registers; on some backends
// another, suspended thread's stack). The bounds checks below are what keeps it safe; sanitizer
// instrumentation would only report those deliberate reads, so it is turned off here.
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
#define ZXS_NO_SANITIZE_STACK_READS __attribute__((no_sanitize("address", "thread")))
#endif
#endif
#ifndef ZXS_NO_SANITIZE_STACK_READS
#define ZXS_NO_SANITIZE_STACK_READS
#endif

// Where the stack's bytes are read from: the stack itself (base 0, delta 0), or a copy of
// [base, base + len) (read at copy + (address - base)).
typedef struct stack_view {
  uintptr_t base;
  uintptr_t end;  // one past the last readable byte
  uintptr_t copy;
  uintptr_t reached;  // out: the end of the last record read, or of the one the view missed
} stack_view_t;

static void set_truncated(bool* truncated) {
  if (truncated != NULL) *truncated = true;
}

ZXS_NO_SANITIZE_STACK_READS
static size_t walk(const zxs_regs_t* regs, uintptr_t stack_lo, uintptr_t stack_hi,
                   stack_view_t* view, uint64_t* pcs, size_t max, bool* truncated) {
  if (truncated != NULL) {
    *truncated = false;
  }
  if (max == 0) {
    set_truncated(truncated);  // not even the PC fit
    return 0;
  }
  pcs[0] = regs->pc;
  size_t n = 1;

  // A frame record is 16 bytes at fp, so fp may range over [max(lo, sp), hi - 16]. Below sp
  // lies memory the thread is not using (stale frames, the red zone).
  const uintptr_t lo = regs->sp > stack_lo ? regs->sp : stack_lo;
  if (stack_hi < 16 || lo > stack_hi - 16) {
    return n;
  }
  const uintptr_t last = stack_hi - 16;

  uintptr_t fp = regs->fp;
  uintptr_t prev = 0;  // so a null fp ends the walk even with lo == 0
  for (;;) {
    // Strictly increasing also bounds the loop: a cycle in the chain cannot repeat.
    if (fp < lo || fp > last || (fp & 7u) != 0 || fp <= prev) {
      break;
    }
    view->reached = fp + 16;
    if (fp < view->base || fp > view->end || view->end - fp < 16) {
      set_truncated(truncated);  // a valid frame the copy does not reach
      break;
    }
    // Validated: [fp, fp + 16) is in bounds and in the view, and 8-aligned there (fp is, and
    // a copy's base and copy are).
    const uintptr_t* record = (const uintptr_t*)(fp - view->base + view->copy);
    const uintptr_t next_fp = record[0];
    const uintptr_t ret = record[1];
    if (ret == 0) {
      break;  // the outermost frame (e.g. a thread's entry) ends the chain
    }
    if (n == max) {
      set_truncated(truncated);
      break;
    }
    pcs[n++] = zxs_strip_code_address(ret);
    prev = fp;
    fp = next_fp;
  }
  return n;
}

size_t zxs_frame_walk(const zxs_regs_t* regs, uintptr_t stack_lo, uintptr_t stack_hi, uint64_t* pcs,
                      size_t max, bool* truncated) {
  stack_view_t direct = {.base = 0, .end = UINTPTR_MAX, .copy = 0};
  return walk(regs, stack_lo, stack_hi, &direct, pcs, max, truncated);
}

size_t zxs_frame_walk_copy(const zxs_regs_t* regs, uintptr_t stack_lo, uintptr_t stack_hi,
                           const void* copy, size_t copy_len, uint64_t* pcs, size_t max,
                           bool* truncated, size_t* needed) {
  // Records are read as aligned words: with sp or the copy unaligned, the PC alone.
  const bool aligned = (regs->sp & 7u) == 0 && ((uintptr_t)copy & 7u) == 0;
  const size_t len = aligned ? copy_len : 0;
  const uintptr_t end = len <= UINTPTR_MAX - regs->sp ? regs->sp + len : UINTPTR_MAX;
  stack_view_t view = {.base = regs->sp, .end = end, .copy = (uintptr_t)copy, .reached = regs->sp};
  const size_t n = walk(regs, stack_lo, stack_hi, &view, pcs, max, truncated);
  if (needed != NULL) *needed = (size_t)(view.reached - regs->sp);
  return n;
}
