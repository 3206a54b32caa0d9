// The CFI unwinder on a real stack built without frame pointers: this file is compiled with
// -fomit-frame-pointer; level3() takes its own registers and a copy of its stack, as the kernel
// does for a perf sample, and unwinds it over this process's own mappings and module files, with
// our own unwinder and with libunwind (the same frames). Then crafted CFI in a made-up module
// (every rule the own unwinder reduces, the fallback, a module without .eh_frame_hdr) over
// crafted stacks, and malformed CFI and garbage registers, which must not fault.
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>

#include "cfi_unwind.h"
#include "frame_walk.h"

#define COPY_MAX 65536

typedef struct snapshot {
  zxs_cfi_regs_t regs;
  uint8_t copy[COPY_MAX];
  size_t copy_len;
  uint64_t returns[3];  // return addresses into level2, level1, the caller of level1
} snapshot_t;

static snapshot_t g_snap;
static volatile int g_sink;

// /proc/self/maps' file mappings, as perf's MMAP2 records would give them.
static size_t self_mappings(zxs_cfi_mapping_t* out, size_t max, char paths[][256]) {
  FILE* f = fopen("/proc/self/maps", "r");
  size_t n = 0;
  char line[512];
  while (f != NULL && n < max && fgets(line, sizeof(line), f) != NULL) {
    unsigned long long start, end, offset;
    char perms[8];
    int at = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &at) < 4 ||
        at == 0 || perms[2] != 'x' || line[at] != '/') {
      continue;
    }
    line[strcspn(line, "\n")] = '\0';
    snprintf(paths[n], 256, "%s", line + at);
    out[n] = (zxs_cfi_mapping_t){.path = paths[n], .start = start, .pgoff = offset};
    n++;
  }
  if (f != NULL) fclose(f);
  return n;
}

// The stack as the kernel copies it: byte by byte, past what a sanitizer would let memcpy read.
__attribute__((no_sanitize_address)) static void copy_stack(uint8_t* out, const uint8_t* from,
                                                            size_t len) {
  for (size_t i = 0; i < len; i++) out[i] = ((const volatile uint8_t*)from)[i];
}

__attribute__((noinline)) static void level3(void) {
  ucontext_t uc;
  getcontext(&uc);
  const greg_t* g = uc.uc_mcontext.gregs;
  // DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip.
  const int from[ZXS_CFI_REG_COUNT] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                       REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                       REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
  for (int i = 0; i < ZXS_CFI_REG_COUNT; i++) g_snap.regs.r[i] = (uint64_t)g[from[i]];
  // The stack from rsp up to its end (or COPY_MAX), as the kernel copies it.
  pthread_attr_t attr;
  void* base;
  size_t size;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  const uintptr_t sp = (uintptr_t)g[REG_RSP], top = (uintptr_t)base + size;
  g_snap.copy_len = top - sp < COPY_MAX ? top - sp : COPY_MAX;
  copy_stack(g_snap.copy, (const uint8_t*)sp, g_snap.copy_len);
  g_snap.returns[0] = (uint64_t)__builtin_return_address(0);
  g_sink++;
}

__attribute__((noinline)) static void level2(void) {
  level3();
  g_snap.returns[1] = (uint64_t)__builtin_return_address(0);
  g_sink++;
}

__attribute__((noinline)) static void level1(void) {
  level2();
  g_snap.returns[2] = (uint64_t)__builtin_return_address(0);
  g_sink++;
}

static bool contains(const uint64_t* pcs, size_t n, uint64_t pc) {
  for (size_t i = 0; i < n; i++) {
    if (pcs[i] == pc) return true;
  }
  return false;
}

static void unwinds_without_frame_pointers(bool own) {
  if (!zxs_cfi_available()) skip();  // no libunwind in this build
  level1();
  static zxs_cfi_mapping_t mappings[256];
  static char paths[256][256];
  size_t count = self_mappings(mappings, 256, paths);
  assert_true(count > 0);
  zxs_cfi_unwinder_t* u = zxs_cfi_unwinder_new();
  assert_non_null(u);
  zxs_cfi_unwinder_set_own(u, own);
  zxs_cfi_space_t* space = zxs_cfi_space_new(u, mappings, count);
  assert_non_null(space);
  uint64_t pcs[128];
  bool truncated = true;
  size_t n =
      zxs_cfi_unwind(space, &g_snap.regs, g_snap.copy, g_snap.copy_len, pcs, 128, &truncated);
  assert_true(n >= 5);
  assert_int_equal(pcs[0], g_snap.regs.r[16]);  // the interrupted pc first
  for (int i = 0; i < 3; i++) assert_true(contains(pcs, n, g_snap.returns[i]));
  assert_false(truncated);  // it reached the outermost frame inside the copy
  if (own) {
    // The same frames as libunwind's, without falling back to it.
    zxs_cfi_stats_t st;
    zxs_cfi_unwinder_stats(u, &st);
    assert_int_equal(st.own, 1);
    assert_int_equal(st.fallbacks, 0);
    zxs_cfi_unwinder_t* lu = zxs_cfi_unwinder_new();
    zxs_cfi_unwinder_set_own(lu, false);
    zxs_cfi_space_t* ls = zxs_cfi_space_new(lu, mappings, count);
    uint64_t lpcs[128];
    bool ltrunc = true;
    size_t ln = zxs_cfi_unwind(ls, &g_snap.regs, g_snap.copy, g_snap.copy_len, lpcs, 128, &ltrunc);
    assert_int_equal(ln, n);
    assert_memory_equal(lpcs, pcs, n * sizeof(*pcs));
    assert_false(ltrunc);
    zxs_cfi_space_free(ls);
    zxs_cfi_unwinder_free(lu);
  }
  // Frame pointers get nowhere here: rbp is a general register in this code.
  zxs_regs_t fp = {.pc = g_snap.regs.r[16], .fp = g_snap.regs.r[6], .sp = g_snap.regs.r[7]};
  uint64_t fp_pcs[128];
  size_t fp_n = zxs_frame_walk_copy(&fp, 0, UINTPTR_MAX, g_snap.copy, g_snap.copy_len, fp_pcs, 128,
                                    NULL, NULL);
  assert_false(contains(fp_pcs, fp_n, g_snap.returns[1]) &&
               contains(fp_pcs, fp_n, g_snap.returns[2]));

  // A copy too short for the callers: cut, and said so.
  n = zxs_cfi_unwind(space, &g_snap.regs, g_snap.copy, 64, pcs, 128, &truncated);
  assert_true(n >= 1);
  assert_true(truncated);
  // No room: cut, and said so.
  n = zxs_cfi_unwind(space, &g_snap.regs, g_snap.copy, g_snap.copy_len, pcs, 2, &truncated);
  assert_int_equal(n, 2);
  assert_true(truncated);
  // No modules known: the first pc still, nothing invented.
  zxs_cfi_space_t* empty = zxs_cfi_space_new(u, NULL, 0);
  assert_non_null(empty);
  n = zxs_cfi_unwind(empty, &g_snap.regs, g_snap.copy, g_snap.copy_len, pcs, 128, &truncated);
  assert_true(n >= 1);
  assert_int_equal(pcs[0], g_snap.regs.r[16]);
  zxs_cfi_space_free(empty);
  zxs_cfi_space_free(space);
  zxs_cfi_unwinder_free(u);
}

static void test_unwinds_without_frame_pointers_own(void** state) {
  (void)state;
  unwinds_without_frame_pointers(true);
}

static void test_unwinds_without_frame_pointers_libunwind(void** state) {
  (void)state;
  unwinds_without_frame_pointers(false);
}

// --- Crafted CFI ------------------------------------------------------------------------------
// A made-up module "crafted" (ELF64, one PT_LOAD from offset 0 at vaddr 0, loaded at BIAS) with
// an .eh_frame_hdr and an .eh_frame describing made-up functions (rows: pc -> CFA; RA at CFA-8
// unless said):
//   A [0x2000,0x2040) CIE "zR": 0x2000 rsp+8; 0x2001 rsp+16, rbp at CFA-16; 0x2004 rbp+16;
//                     0x2030 rsp+8 (remember_state .. restore_state at 0x2031)
//   B [0x2040,0x2080) CIE "zPLR" (an LSDA pointer): 0x2044 rsp+32 (advance_loc1, _sf forms)
//   C [0x2080,0x20c0) RA undefined: the outermost frame
//   P [0x2100,0x2140) the PLT expression: rsp + 8 + ((pc & 15) >= 11 ? 8 : 0)
//   X [0x2140,0x2180) CFA = rbx + 8: not reduced, libunwind's
//   S [0x2180,0x21c0) CIE "zRS": a signal frame, rsp+8
//   no FDE at [0x2200, 0x2300): libunwind's frame-pointer guess.
#define IMG_SIZE 0x2400
#define IMG_HDR 0x200
#define IMG_EH 0x400
#define IMG_SH 0x1000
#define BIAS 0x400000ull
#define S0 0x7ff000000000ull

typedef struct buf {
  uint8_t* d;
  size_t at;
} buf_t;

static void put(buf_t* b, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++) b->d[b->at++] = (uint8_t)(v >> (8 * i));
}

static void put_bytes(buf_t* b, const char* p, size_t n) {
  memcpy(b->d + b->at, p, n);
  b->at += n;
}

// Opens an entry (its length filled by end_entry, padded with DW_CFA_nop).
static size_t begin_entry(buf_t* b) {
  size_t start = b->at;
  put(b, 0, 4);
  return start;
}

static void end_entry(buf_t* b, size_t start) {
  while ((b->at - start) % 8 != 0) put(b, 0, 1);
  const uint64_t len = b->at - start - 4;
  for (int i = 0; i < 4; i++) b->d[start + i] = (uint8_t)(len >> (8 * i));
}

// A CIE: code_align 1, data_align -8, RA r16; CFA = rsp+8, RA at CFA-8.
static size_t put_cie(buf_t* b, const char* aug, const char* aug_data, size_t aug_len) {
  size_t start = begin_entry(b);
  put(b, 0, 4);  // CIE id
  put(b, 1, 1);  // version
  put_bytes(b, aug, strlen(aug) + 1);
  put_bytes(b, "\x01\x78\x10", 3);  // code_align 1, data_align sleb -8, RA 16
  put(b, aug_len, 1);
  put_bytes(b, aug_data, aug_len);
  put_bytes(b, "\x0c\x07\x08\x90\x01", 5);  // def_cfa rsp 8; offset r16 at CFA-8
  end_entry(b, start);
  return start;
}

// An FDE of the CIE at `cie` for [begin, begin + range): pcrel sdata4.
static size_t put_fde(buf_t* b, size_t cie, uint64_t begin, uint64_t range, size_t aug_len,
                      const char* instr, size_t len) {
  size_t start = begin_entry(b);
  put(b, b->at - cie, 4);
  put(b, begin - b->at, 4);
  put(b, range, 4);
  put(b, aug_len, 1);
  for (size_t i = 0; i < aug_len; i++) put(b, 0, 1);
  put_bytes(b, instr, len);
  end_entry(b, start);
  return start;
}

static void make_image(uint8_t* img, bool with_hdr) {
  memset(img, 0, IMG_SIZE);
  buf_t b = {.d = img, .at = IMG_EH};
  const size_t cie1 = put_cie(&b, "zR", "\x1b", 1);
  const size_t cie2 = put_cie(&b, "zPLR", "\x9b\0\0\0\0\x1b\x1b", 7);
  const size_t cie3 = put_cie(&b, "zRS", "\x1b", 1);
  // adv 1; def_cfa_offset 16; offset_extended_sf rbp 2 (-16); adv 3; def_cfa_register rbp;
  // adv 44; remember; def_cfa rsp 8; restore rbp; adv 1; restore_state.
  static const char a[] = "\x41\x0e\x10\x11\x06\x02\x43\x0d\x06\x6c\x0a\x0c\x07\x08\xc6\x41\x0b";
  // advance_loc1 4; def_cfa_offset_sf -4 (32); GNU_args_size 0; nop.
  static const char bb[] = "\x02\x04\x13\x7c\x2e\x00\x00";
  static const char c[] = "\x07\x10";  // undefined r16
  static const char p[] = "\x0f\x0b\x77\x08\x80\x00\x3f\x1a\x3b\x2a\x33\x24\x22";
  static const char x[] = "\x0c\x03\x08";  // def_cfa rbx 8
  const uint64_t fdes[6][2] = {
      {0x2000, put_fde(&b, cie1, 0x2000, 0x40, 0, a, sizeof(a) - 1)},
      {0x2040, put_fde(&b, cie2, 0x2040, 0x40, 4, bb, sizeof(bb) - 1)},
      {0x2080, put_fde(&b, cie1, 0x2080, 0x40, 0, c, sizeof(c) - 1)},
      {0x2100, put_fde(&b, cie1, 0x2100, 0x40, 0, p, sizeof(p) - 1)},
      {0x2140, put_fde(&b, cie1, 0x2140, 0x40, 0, x, sizeof(x) - 1)},
      {0x2180, put_fde(&b, cie3, 0x2180, 0x40, 0, "", 0)},
  };
  const size_t eh_len = b.at - IMG_EH + 4;
  put(&b, 0, 4);  // terminator
  assert_true(b.at < IMG_SH);
  // .eh_frame_hdr
  b.at = IMG_HDR;
  put_bytes(&b, "\x01\x1b\x03\x3b", 4);
  put(&b, IMG_EH - (IMG_HDR + 4), 4);
  put(&b, 6, 4);
  for (int i = 0; i < 6; i++) {
    put(&b, fdes[i][0] - IMG_HDR, 4);
    put(&b, fdes[i][1] - IMG_HDR, 4);
  }
  const size_t hdr_len = b.at - IMG_HDR;
  // ELF header, program headers, section headers (.eh_frame, .shstrtab).
  b.at = 0;
  put_bytes(&b,
            "\x7f"
            "ELF\x02\x01\x01",
            7);
  b.at = 16;
  put(&b, 3, 2), put(&b, 62, 2), put(&b, 1, 4), put(&b, 0, 8);
  put(&b, 64, 8), put(&b, IMG_SH, 8), put(&b, 0, 4);
  put(&b, 64, 2), put(&b, 56, 2), put(&b, 2, 2), put(&b, 64, 2), put(&b, 3, 2), put(&b, 2, 2);
  put(&b, 1, 4), put(&b, 5, 4), put(&b, 0, 8), put(&b, 0, 8), put(&b, 0, 8);
  put(&b, IMG_SIZE, 8), put(&b, IMG_SIZE, 8), put(&b, 0x1000, 8);
  put(&b, with_hdr ? 0x6474e550u : 0u, 4), put(&b, 4, 4), put(&b, IMG_HDR, 8);
  put(&b, IMG_HDR, 8), put(&b, IMG_HDR, 8), put(&b, hdr_len, 8), put(&b, hdr_len, 8);
  put(&b, 4, 8);
  b.at = IMG_SH + 64;
  put(&b, 1, 4), put(&b, 1, 4), put(&b, 2, 8), put(&b, IMG_EH, 8), put(&b, IMG_EH, 8);
  put(&b, eh_len, 8);
  b.at = IMG_SH + 128;
  put(&b, 11, 4), put(&b, 3, 4), put(&b, 0, 8), put(&b, 0, 8), put(&b, IMG_SH + 0x100, 8);
  put(&b, 21, 8);
  b.at = IMG_SH + 0x100;
  put_bytes(&b, "\0.eh_frame\0.shstrtab\0", 21);
}

static zxs_cfi_regs_t crafted_regs(uint64_t rip, uint64_t rsp, uint64_t rbp) {
  zxs_cfi_regs_t r = {{0}};
  r.r[16] = rip;
  r.r[7] = rsp;
  r.r[6] = rbp;
  return r;
}

typedef struct crafted_result {
  uint64_t pcs[16];
  size_t n;
  bool truncated;
  zxs_cfi_stats_t stats;
} crafted_result_t;

static crafted_result_t crafted_unwind(const uint8_t* img, bool own, const zxs_cfi_regs_t* regs,
                                       const uint64_t* stack, size_t copy_len, size_t max) {
  crafted_result_t res = {.truncated = false};
  zxs_cfi_unwinder_t* u = zxs_cfi_unwinder_new();
  assert_non_null(u);
  zxs_cfi_unwinder_set_own(u, own);
  assert_true(zxs_cfi_unwinder_add_image(u, "crafted", img, IMG_SIZE));
  const zxs_cfi_mapping_t m = {.path = "crafted", .start = BIAS, .pgoff = 0};
  zxs_cfi_space_t* space = zxs_cfi_space_new(u, &m, 1);
  assert_non_null(space);
  res.n = zxs_cfi_unwind(space, regs, stack, copy_len, res.pcs, max, &res.truncated);
  zxs_cfi_unwinder_stats(u, &res.stats);
  zxs_cfi_space_free(space);
  zxs_cfi_unwinder_free(u);
  return res;
}

// Unwinds with both unwinders: the same frames, and those expected (`fallback`: the own unwinder
// hands the sample to libunwind).
static void expect(const uint8_t* img, const zxs_cfi_regs_t* regs, const uint64_t* stack,
                   size_t copy_len, size_t max, const uint64_t* want, size_t want_n,
                   bool want_truncated, bool fallback) {
  crafted_result_t own = crafted_unwind(img, true, regs, stack, copy_len, max);
  crafted_result_t lib = crafted_unwind(img, false, regs, stack, copy_len, max);
  assert_int_equal(own.n, want_n);
  assert_memory_equal(own.pcs, want, want_n * sizeof(*want));
  assert_int_equal(own.truncated, want_truncated);
  assert_int_equal(own.stats.fallbacks, fallback ? 1 : 0);
  assert_int_equal(lib.n, own.n);
  assert_memory_equal(lib.pcs, own.pcs, own.n * sizeof(*own.pcs));
  assert_int_equal(lib.truncated, own.truncated);
}

static void test_crafted_cfi(void** state) {
  (void)state;
  if (!zxs_cfi_available()) skip();
  static uint8_t img[IMG_SIZE];
  make_image(img, true);
  uint64_t stack[64] = {0};
  const uint64_t b = BIAS;
  // B (CFA rsp+32) called by A (CFA rbp+16, rbp saved) called by C (outermost).
  stack[3] = b + 0x2011;      // B's RA at S0+24
  stack[0x100 / 8] = 0x1234;  // A's saved rbp
  stack[0x108 / 8] = b + 0x2091;
  zxs_cfi_regs_t r = crafted_regs(b + 0x2050, S0, S0 + 0x100);
  const uint64_t want[] = {b + 0x2050, b + 0x2011, b + 0x2091};
  expect(img, &r, stack, sizeof(stack), 16, want, 3, false, false);
  // A copy that ends before A's return address: cut, and said so.
  expect(img, &r, stack, 0x100, 16, want, 2, true, false);
  // No room: cut, and said so.
  expect(img, &r, stack, sizeof(stack), 2, want, 2, true, false);
  // A's prologue (rsp+8, then rsp+16 after the push) and its epilogue after remember_state.
  memset(stack, 0, sizeof(stack));
  stack[0] = b + 0x2091;
  r = crafted_regs(b + 0x2000, S0, 0);
  const uint64_t at_entry[] = {b + 0x2000, b + 0x2091};
  expect(img, &r, stack, sizeof(stack), 16, at_entry, 2, false, false);
  r = crafted_regs(b + 0x2030, S0, 0);
  const uint64_t at_ret[] = {b + 0x2030, b + 0x2091};
  expect(img, &r, stack, sizeof(stack), 16, at_ret, 2, false, false);
  stack[1] = b + 0x2092;
  r = crafted_regs(b + 0x2002, S0, 0);
  const uint64_t pushed[] = {b + 0x2002, b + 0x2092};
  expect(img, &r, stack, sizeof(stack), 16, pushed, 2, false, false);
  // The PLT expression: CFA rsp+16 at offset 12 of a 16-byte entry, rsp+8 at offset 2.
  r = crafted_regs(b + 0x210c, S0, 0);
  const uint64_t plt_late[] = {b + 0x210c, b + 0x2092};
  expect(img, &r, stack, sizeof(stack), 16, plt_late, 2, false, false);
  r = crafted_regs(b + 0x2102, S0, 0);
  const uint64_t plt_early[] = {b + 0x2102, b + 0x2091};
  expect(img, &r, stack, sizeof(stack), 16, plt_early, 2, false, false);
  // A signal frame: its caller's PC (A's first byte) is looked up as is, not minus one.
  stack[0] = b + 0x2000;
  stack[1] = b + 0x2091;
  r = crafted_regs(b + 0x2190, S0, 0);
  const uint64_t sig[] = {b + 0x2190, b + 0x2000, b + 0x2091};
  expect(img, &r, stack, sizeof(stack), 16, sig, 3, false, false);
  // CFA from rbx: libunwind's, the same frames.
  memset(stack, 0, sizeof(stack));
  stack[3] = b + 0x2091;  // CFA = rbx + 8 = S0 + 0x20
  r = crafted_regs(b + 0x2150, S0, 0);
  r.r[3] = S0 + 0x18;
  const uint64_t rbx[] = {b + 0x2150, b + 0x2091};
  expect(img, &r, stack, sizeof(stack), 16, rbx, 2, false, true);
  // No FDE: the frame-pointer guess (saved rbp at rbp, RA above it).
  stack[8] = 0;
  stack[9] = b + 0x2091;
  r = crafted_regs(b + 0x2210, S0, S0 + 0x40);
  const uint64_t guess[] = {b + 0x2210, b + 0x2091};
  expect(img, &r, stack, sizeof(stack), 16, guess, 2, false, false);
  // ... which ends at a zero rbp, and gives up on an rbp below the stack pointer.
  r = crafted_regs(b + 0x2210, S0, 0);
  expect(img, &r, stack, sizeof(stack), 16, guess, 1, false, false);
  r = crafted_regs(b + 0x2210, S0 + 0x100, S0 + 0x40);
  expect(img, &r, stack, sizeof(stack), 16, guess, 1, false, false);
}

// libunwind caches a row by the frame's PC alone, whether the PC itself was looked up (the
// interrupted frame) or the byte before it (a return address): the unwinder must not let one
// sample's lookup decide another's. Both unwinders, each over one space for all the samples, give
// the frames of a fresh unwinder.
static void unwind_in_turn(const uint8_t* img, bool own, const zxs_cfi_regs_t* regs,
                           const uint64_t (*stacks)[64], size_t count, crafted_result_t* out) {
  zxs_cfi_unwinder_t* u = zxs_cfi_unwinder_new();
  assert_non_null(u);
  zxs_cfi_unwinder_set_own(u, own);
  assert_true(zxs_cfi_unwinder_add_image(u, "crafted", img, IMG_SIZE));
  const zxs_cfi_mapping_t m = {.path = "crafted", .start = BIAS, .pgoff = 0};
  zxs_cfi_space_t* space = zxs_cfi_space_new(u, &m, 1);
  assert_non_null(space);
  for (size_t i = 0; i < count; i++) {
    out[i] = (crafted_result_t){.truncated = false};
    out[i].n = zxs_cfi_unwind(space, &regs[i], stacks[i], sizeof(stacks[i]), out[i].pcs, 16,
                              &out[i].truncated);
  }
  zxs_cfi_unwinder_stats(u, &out[count - 1].stats);
  zxs_cfi_space_free(space);
  zxs_cfi_unwinder_free(u);
}

static void test_crafted_pc_looked_up_both_ways(void** state) {
  (void)state;
  if (!zxs_cfi_available()) skip();
  static uint8_t img[IMG_SIZE];
  make_image(img, true);
  const uint64_t b = BIAS;
  static uint64_t stacks[4][64];
  memset(stacks, 0, sizeof(stacks));
  zxs_cfi_regs_t regs[4];
  // 0: interrupted at A's first byte (CFA rsp+8), called by C.
  regs[0] = crafted_regs(b + 0x2000, S0, 0);
  stacks[0][0] = b + 0x2091;
  // 1: B (CFA rsp+32) returning to A's first byte, as a stale function pointer on the stack would
  // be unwound: its caller is looked up at 0x1fff, without an FDE, and the frame-pointer guess
  // ends at the zero rbp. A's entry rule would instead take C (at S0+32) as its caller.
  regs[1] = crafted_regs(b + 0x2050, S0, 0);
  stacks[1][3] = b + 0x2000;
  stacks[1][4] = b + 0x2091;
  // 2: B returning to A's second byte: looked up at 0x2000 (CFA rsp+8), C its caller.
  regs[2] = crafted_regs(b + 0x2050, S0, 0);
  stacks[2][3] = b + 0x2001;
  stacks[2][4] = b + 0x2091;
  // 3: interrupted at A's second byte, after its push: CFA rsp+16, C at S0+8 (the rule of 0x2000
  // would take the saved rbp at S0, 0x2092, as the return address).
  regs[3] = crafted_regs(b + 0x2001, S0, 0);
  stacks[3][0] = b + 0x2092;
  stacks[3][1] = b + 0x2091;
  const uint64_t want[4][3] = {{b + 0x2000, b + 0x2091},
                               {b + 0x2050, b + 0x2000},
                               {b + 0x2050, b + 0x2001, b + 0x2091},
                               {b + 0x2001, b + 0x2091}};
  const size_t want_n[4] = {2, 2, 3, 2};
  // In both orders: each PC looked up as itself first, then as a return address, and the reverse.
  const size_t orders[2][4] = {{0, 1, 2, 3}, {2, 3, 0, 1}};
  for (int o = 0; o < 2; o++) {
    zxs_cfi_regs_t r[4];
    static uint64_t st[4][64];
    for (int i = 0; i < 4; i++) {
      r[i] = regs[orders[o][i]];
      memcpy(st[i], stacks[orders[o][i]], sizeof(st[i]));
    }
    for (int own = 0; own < 2; own++) {
      crafted_result_t res[4];
      unwind_in_turn(img, own != 0, r, (const uint64_t(*)[64])st, 4, res);
      for (int i = 0; i < 4; i++) {
        const size_t k = orders[o][i];
        assert_int_equal(res[i].n, want_n[k]);
        assert_memory_equal(res[i].pcs, want[k], want_n[k] * sizeof(uint64_t));
        assert_false(res[i].truncated);
      }
      if (own) assert_int_equal(res[3].stats.fallbacks, 0);
    }
  }
}

static void test_crafted_without_eh_frame_hdr(void** state) {
  (void)state;
  if (!zxs_cfi_available()) skip();
  static uint8_t img[IMG_SIZE];
  make_image(img, false);
  uint64_t stack[64] = {0};
  const uint64_t b = BIAS;
  stack[3] = b + 0x2011;
  stack[0x108 / 8] = b + 0x2091;
  zxs_cfi_regs_t r = crafted_regs(b + 0x2050, S0, S0 + 0x100);
  // The own unwinder indexes .eh_frame itself (libunwind finds nothing without the table).
  crafted_result_t own = crafted_unwind(img, true, &r, stack, sizeof(stack), 16);
  assert_int_equal(own.n, 3);
  assert_true(own.pcs[1] == b + 0x2011 && own.pcs[2] == b + 0x2091);
  assert_false(own.truncated);
  assert_int_equal(own.stats.fallbacks, 0);
}

static uint64_t g_rand = 88172645463325252ull;
static uint64_t next_rand(void) {
  g_rand ^= g_rand << 13;
  g_rand ^= g_rand >> 7;
  g_rand ^= g_rand << 17;
  return g_rand;
}

// Damaged CFI (bytes of .eh_frame_hdr and .eh_frame changed at random) and garbage registers and
// stacks: never a fault, the interrupted PC first, never more than asked.
static void test_malformed_cfi_and_garbage_registers(void** state) {
  (void)state;
  if (!zxs_cfi_available()) skip();
  static uint8_t good[IMG_SIZE], img[IMG_SIZE];
  make_image(good, true);
  uint64_t stack[64];
  const uint64_t pcs_of_interest[] = {0x2000, 0x2002, 0x2011, 0x2030, 0x2050, 0x2091,
                                      0x210c, 0x2150, 0x2190, 0x2210, 0x3000};
  for (int round = 0; round < 3000; round++) {
    memcpy(img, good, sizeof(img));
    const int flips = 1 + (int)(next_rand() % 8);
    for (int i = 0; i < flips; i++) {
      const size_t at = IMG_HDR + next_rand() % (0x800 - IMG_HDR);
      img[at] = (uint8_t)next_rand();
    }
    if (round % 4 == 3) make_image(img, false), img[IMG_EH + next_rand() % 0x300] ^= 0xff;
    for (size_t i = 0; i < 64; i++) {
      stack[i] =
          next_rand() % 3 == 0 ? BIAS + 0x2000 + next_rand() % 0x300 : S0 + next_rand() % 0x400;
    }
    zxs_cfi_regs_t r = crafted_regs(
        BIAS + pcs_of_interest[next_rand() % (sizeof(pcs_of_interest) / 8)],
        round % 5 == 0 ? next_rand() : S0, round % 3 == 0 ? next_rand() : S0 + next_rand() % 0x300);
    r.r[3] = next_rand() % 2 ? S0 + 8 * (next_rand() % 64) : next_rand();
    const size_t max = 1 + next_rand() % 16;
    crafted_result_t own = crafted_unwind(img, true, &r, stack, 8 * (next_rand() % 65), max);
    assert_true(own.n >= 1 && own.n <= max);
    assert_int_equal(own.pcs[0], r.r[16]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unwinds_without_frame_pointers_own),
      cmocka_unit_test(test_unwinds_without_frame_pointers_libunwind),
      cmocka_unit_test(test_crafted_cfi),
      cmocka_unit_test(test_crafted_pc_looked_up_both_ways),
      cmocka_unit_test(test_crafted_without_eh_frame_hdr),
      cmocka_unit_test(test_malformed_cfi_and_garbage_registers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
