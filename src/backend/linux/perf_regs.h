// The user registers a frame-pointer walk needs from a perf sample (PERF_SAMPLE_REGS_USER):
// the mask to ask for, and where each lands (the kernel writes them in ascending bit order:
// fp, sp, pc on both architectures). Shared by the perf-ring source and `zxsampler record`.
#ifndef ZXSAMPLER_SRC_BACKEND_LINUX_PERF_REGS_H_
#define ZXSAMPLER_SRC_BACKEND_LINUX_PERF_REGS_H_

#include <asm/perf_regs.h>
#include <stdint.h>

#if defined(__x86_64__)
#define ZXS_PERF_REGS_MASK \
  ((1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP))
#elif defined(__aarch64__)
#define ZXS_PERF_REGS_MASK \
  ((1ull << PERF_REG_ARM64_X29) | (1ull << PERF_REG_ARM64_SP) | (1ull << PERF_REG_ARM64_PC))
#else
#error "perf_regs.h: name the frame pointer, stack pointer and pc perf registers"
#endif

enum { ZXS_PERF_REG_FP = 0, ZXS_PERF_REG_SP = 1, ZXS_PERF_REG_PC = 2, ZXS_PERF_REG_COUNT = 3 };

// What CFI unwinding needs: every general register (x86-64 only, where zxsampler record
// unwinds with CFI). They arrive in perf's order (ax bx cx dx si di bp sp ip r8..r15);
// zxs_perf_regs_to_dwarf() puts them in DWARF order (rax rdx rcx rbx rsi rdi rbp rsp r8..r15
// rip), and their fp, sp and pc are at the _DWARF_ positions.
#if defined(__x86_64__)
#define ZXS_PERF_REGS_MASK_DWARF                                                          \
  ((1ull << PERF_REG_X86_AX) | (1ull << PERF_REG_X86_BX) | (1ull << PERF_REG_X86_CX) |    \
   (1ull << PERF_REG_X86_DX) | (1ull << PERF_REG_X86_SI) | (1ull << PERF_REG_X86_DI) |    \
   (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP) |    \
   (1ull << PERF_REG_X86_R8) | (1ull << PERF_REG_X86_R9) | (1ull << PERF_REG_X86_R10) |   \
   (1ull << PERF_REG_X86_R11) | (1ull << PERF_REG_X86_R12) | (1ull << PERF_REG_X86_R13) | \
   (1ull << PERF_REG_X86_R14) | (1ull << PERF_REG_X86_R15))
enum { ZXS_PERF_REG_DWARF_COUNT = 17 };
static inline void zxs_perf_regs_to_dwarf(const uint64_t* sampled, uint64_t* dwarf) {
  static const unsigned char kFrom[17] = {0, 3, 2, 1, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 8};
  for (unsigned i = 0; i < 17; i++) dwarf[i] = sampled[kFrom[i]];
}
enum { ZXS_DWARF_REG_FP = 6, ZXS_DWARF_REG_SP = 7, ZXS_DWARF_REG_PC = 16 };
#else  // no CFI unwinding here: the frame-pointer registers stand in
#define ZXS_PERF_REGS_MASK_DWARF ZXS_PERF_REGS_MASK
enum { ZXS_PERF_REG_DWARF_COUNT = ZXS_PERF_REG_COUNT };
static inline void zxs_perf_regs_to_dwarf(const uint64_t* sampled, uint64_t* dwarf) {
  for (unsigned i = 0; i < ZXS_PERF_REG_COUNT; i++) dwarf[i] = sampled[i];
}
enum {
  ZXS_DWARF_REG_FP = ZXS_PERF_REG_FP,
  ZXS_DWARF_REG_SP = ZXS_PERF_REG_SP,
  ZXS_DWARF_REG_PC = ZXS_PERF_REG_PC
};
#endif

#endif  // ZXSAMPLER_SRC_BACKEND_LINUX_PERF_REGS_H_
