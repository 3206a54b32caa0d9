// CFI unwinding of a stack sample taken elsewhere: the registers and a copy of the top of the
// stack, as the kernel puts them in a perf ring, plus the modules mapped in the sampled process.
// Our own unwinder over the module files on this machine (.eh_frame_hdr's table, or an index of
// .eh_frame without one): each row of unwind rules at a PC is reduced to a compact rule (CFA =
// rsp or rbp + N, or the PLT expression; return address and rbp at CFA + k) and cached by PC in
// the unwinder. Samples with a frame whose CFI does not reduce so, and every sample with
// ZXSAMPLER_CFI=libunwind in the environment when the unwinder is made, are unwound with
// libunwind's remote-unwinding API instead; the two give the same frames (the own walk follows
// libunwind's steps). A frame without CFI is stepped by libunwind's frame-pointer guess, so code
// with frame pointers unwinds as before.
//
// Only where the build has libunwind (ZXS_HAVE_LIBUNWIND) and for x86-64; elsewhere
// zxs_cfi_available() is false and callers walk frame pointers. Not async-signal-safe
// (allocates, opens files): for collectors and tools, never a signal handler. An unwinder and
// its spaces are used by one thread at a time (the row cache is the unwinder's, without locks).
// Reads of the sampled stack go only to the copy; malformed CFI or garbage registers end the walk
// early, never fault.
#ifndef ZXSAMPLER_SRC_UNWIND_CFI_UNWIND_H_
#define ZXSAMPLER_SRC_UNWIND_CFI_UNWIND_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The registers CFI may need, in DWARF numbering (x86-64: rax rdx rcx rbx rsi rdi rbp rsp
// r8..r15 rip).
#define ZXS_CFI_REG_COUNT 17
typedef struct zxs_cfi_regs {
  uint64_t r[ZXS_CFI_REG_COUNT];
} zxs_cfi_regs_t;

// A file mapping of the sampled process: `path` mapped at `start` from file offset `pgoff` (what
// /proc/PID/maps and perf's MMAP2 records say). The module's load bias is found from the file's
// program headers. A mapping that starts inside a segment (code mapped again elsewhere, as node
// maps V8's builtins) covers only its own `len` bytes (0: unknown, such a mapping is left out).
typedef struct zxs_cfi_mapping {
  const char* path;
  uint64_t start;
  uint64_t pgoff;
  uint64_t len;
} zxs_cfi_mapping_t;

typedef struct zxs_cfi_unwinder zxs_cfi_unwinder_t;
typedef struct zxs_cfi_space zxs_cfi_space_t;

// Whether this build unwinds with CFI.
bool zxs_cfi_available(void);

// An unwinder: the module files it has read (mapped read-only, parsed once). NULL when not
// available or out of memory.
zxs_cfi_unwinder_t* zxs_cfi_unwinder_new(void);
void zxs_cfi_unwinder_free(zxs_cfi_unwinder_t* unwinder);

// Our own unwinder first (the default; ZXSAMPLER_CFI=libunwind makes new unwinders start with
// false), or libunwind for every sample.
void zxs_cfi_unwinder_set_own(zxs_cfi_unwinder_t* unwinder, bool own);

// What the unwinder did so far.
typedef struct zxs_cfi_stats {
  uint64_t samples;     // zxs_cfi_unwind calls
  uint64_t own;         // unwound by our own unwinder
  uint64_t fallbacks;   // begun by it, unwound by libunwind (a frame it does not reduce)
  uint64_t row_hits;    // rows found in the cache
  uint64_t row_misses;  // rows computed from the CFI
} zxs_cfi_stats_t;
void zxs_cfi_unwinder_stats(const zxs_cfi_unwinder_t* unwinder, zxs_cfi_stats_t* stats);

// Adds a module that has no file (the vDSO) under `path`, from its ELF image as mapped
// (copied). Mappings named `path` then use it. False when out of memory or not ELF.
bool zxs_cfi_unwinder_add_image(zxs_cfi_unwinder_t* unwinder, const char* path, const void* data,
                                size_t size);

// The address space of one sampled process, from its file mappings (nothing of them is kept),
// and libunwind's cache of what it found in them (the own unwinder's rows are cached in
// the unwinder, by module file). Replace it when the process maps other
// modules. NULL when not available or out of memory.
zxs_cfi_space_t* zxs_cfi_space_new(zxs_cfi_unwinder_t* unwinder, const zxs_cfi_mapping_t* mappings,
                                   size_t count);
void zxs_cfi_space_free(zxs_cfi_space_t* space);

// Unwinds one sample: `copy` holds the `copy_len` bytes that were at [regs->r[rsp], ... +
// copy_len). Writes the interrupted PC, then return addresses, innermost first, at most `max`;
// returns how many. *truncated is set when the walk stopped for want of room or of stack copy while
// a further frame may exist (not at the outermost frame, whose return address is 0 or whose CFI
// says it is the last).
size_t zxs_cfi_unwind(zxs_cfi_space_t* space, const zxs_cfi_regs_t* regs, const void* copy,
                      size_t copy_len, uint64_t* pcs, size_t max, bool* truncated);

#endif  // ZXSAMPLER_SRC_UNWIND_CFI_UNWIND_H_
