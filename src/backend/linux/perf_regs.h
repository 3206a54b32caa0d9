// The user registers a frame-pointer walk needs from a perf sample (PERF_SAMPLE_REGS_USER):
// the mask to ask for, and where each lands (the kernel writes them in ascending bit order:
// fp, sp, pc on both architectures). Shared by the perf-ring source and `zxsampler record`.
#ifndef ZXSAMPLER_SRC_BACKEND_LINUX_PERF_REGS_H_
#define ZXSAMPLER_SRC_BACKEND_LINUX_PERF_REGS_H_

#include <asm/perf_regs.h>

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

#endif  // ZXSAMPLER_SRC_BACKEND_LINUX_PERF_REGS_H_
