// CFI unwinding over a stack copy (see cfi_unwind.h): our own unwinder over .eh_frame_hdr and
// .eh_frame, each row of unwind rules reduced to a compact rule and cached by PC; libunwind's
// remote API for the samples whose CFI it does not reduce (and for all of them with
// ZXSAMPLER_CFI=libunwind).
//
// The own walk follows libunwind 1.6's x86-64 step exactly where both apply (same frames, same
// end and truncation), so that falling back in the middle of a sample, which redoes the whole
// sample with libunwind, gives what libunwind alone would have given:
//   - a frame with an FDE: CFA from rsp (the previous CFA) or rbp plus an offset, or the PLT
//     expression; rbp unchanged, saved at CFA+k, or undefined (then the walk ends); the return
//     address at CFA+k, or undefined (the walk ends); the PC looked up is the return address
//     minus one except after the first frame and after a signal frame ("S");
//   - a frame without an FDE (no module, no table entry, or the PC outside the FDE's range):
//     libunwind's frame-pointer guess (rbp must be 0 to end, or lie at most 16 KiB above the
//     CFA; RA at rbp+8; the next CFA is the previous one plus 16); its signal-trampoline, PLT and
//     bad-PC heuristics are left to libunwind (fallback);
//   - an unchanged PC and CFA is an error, a failed read is an error (a truncation when it was a
//     read above the copy), as in libunwind.
// libunwind's row cache is keyed by PC alone (the PC or the byte before it may have been looked
// up): the rows it caches for a PC whose two lookups differ are dropped after use (ambiguous_pc),
// so that its frames, like the own walk's, do not depend on the samples unwound before.
// Anything else (CFA from another register or another expression, a return address or rbp in a
// register or an expression, registers numbered above 16, a malformed or unsupported entry)
// reduces to "complex": the sample is unwound with libunwind.
#define _GNU_SOURCE
#include "cfi_unwind.h"

#include "zxs_config.h"

#if ZXS_HAVE_LIBUNWIND && defined(__x86_64__)

#include <fcntl.h>
#include <libunwind.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/sorted_search.h"

// libunwind's table search, exported but not declared in its headers (perf uses it the same way).
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
                                              unw_dyn_info_t* di, unw_proc_info_t* pi,
                                              int need_unwind_info, void* arg);

#define PT_LOAD_TYPE 1u
#define PT_GNU_EH_FRAME_TYPE 0x6474e550u
// Pointer encodings (DW_EH_PE_*): value formats in the low nibble, applications above.
#define EH_PE_ABSPTR 0x00u
#define EH_PE_ULEB128 0x01u
#define EH_PE_UDATA2 0x02u
#define EH_PE_UDATA4 0x03u
#define EH_PE_UDATA8 0x04u
#define EH_PE_SLEB128 0x09u
#define EH_PE_SDATA2 0x0au
#define EH_PE_SDATA4 0x0bu
#define EH_PE_SDATA8 0x0cu
#define EH_PE_PCREL 0x10u
#define EH_PE_DATAREL 0x30u
#define EH_PE_INDIRECT 0x80u
#define EH_PE_OMIT 0xffu

// DWARF registers (x86-64).
#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16
#define DW_LIMIT 17  // libunwind's DWARF_NUM_PRESERVED_REGS: higher numbers are errors there

typedef struct load {
  uint64_t vaddr, filesz, offset;
} load_t;

// An FDE by the first PC it covers (link-time addresses).
typedef struct fde_ref {
  uint64_t pc, fde;
} fde_ref_t;

typedef struct cfi_file {
  char* path;
  const uint8_t* data;  // the whole file, mapped (or copied: `owned`); NULL if unusable
  size_t size;
  bool owned;
  load_t* loads;
  size_t load_count;
  uint64_t min_vaddr, max_vaddr;
  uint64_t hdr_vaddr;  // .eh_frame_hdr, 0 if none usable
  uint64_t fde_count;
  const uint8_t* hdr_table;  // its sorted table (fde_count pairs), NULL if none usable
  fde_ref_t* index;          // without a usable table: FDEs of .eh_frame, sorted by pc
  size_t index_count;
} cfi_file_t;

// --- Rows: the unwind rules at one PC, reduced -------------------------------------------------

enum { ROW_STEP = 1, ROW_NOFDE, ROW_COMPLEX };
enum { CFA_RSP, CFA_RBP, CFA_PLT };
enum { RBP_SAME, RBP_SAVED, RBP_UNDEF };

typedef struct row {
  uint8_t kind;
  uint8_t cfa;       // CFA_*
  uint8_t rbp;       // RBP_*
  uint8_t signal;    // the FDE's CIE says "S": the caller's PC is looked up as is
  uint8_t ra_undef;  // the outermost frame
  uint8_t plt_k;     // CFA_PLT: CFA = rsp + cfa_off + ((pc & 15) >= plt_k ? 8 : 0)
  int32_t cfa_off, ra_off, rbp_off;
} row_t;

typedef struct row_slot {
  const cfi_file_t* file;
  uint64_t vaddr;  // the PC looked up, as a link-time address of `file`
  row_t row;
} row_slot_t;

#define ROW_CACHE_BITS 14
#define ROW_CACHE_SIZE ((size_t)1 << ROW_CACHE_BITS)

struct zxs_cfi_unwinder {
  cfi_file_t** files;  // each allocated on its own: spaces and cached rows point at them
  size_t count, cap;
  bool own;          // our unwinder first (else libunwind for every sample)
  row_slot_t* rows;  // ROW_CACHE_SIZE slots, direct-mapped
  zxs_cfi_stats_t stats;
};

typedef struct space_module {
  const cfi_file_t* file;
  uint64_t bias, start, end;  // runtime [start, end)
} space_module_t;

struct zxs_cfi_space {
  zxs_cfi_unwinder_t* unwinder;
  unw_addr_space_t as;
  space_module_t* modules;  // sorted by start
  size_t count;
  // The sample being unwound.
  const zxs_cfi_regs_t* regs;
  uint64_t copy_start;
  const uint8_t* copy;
  size_t copy_len;
  bool read_past_copy;
};

static uint64_t le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// --- Bounded reading of CFI ---------------------------------------------------------------------

// A position in a module's data, with its link-time address; reads past `end` set `bad` and
// yield 0, so a malformed entry is noticed once, at the end of what used it.
typedef struct cur {
  const uint8_t* p;
  const uint8_t* end;
  uint64_t vaddr;
  bool bad;
} cur_t;

static uint64_t cur_u(cur_t* c, size_t n) {
  if (c->bad || (size_t)(c->end - c->p) < n) {
    c->bad = true;
    return 0;
  }
  const uint64_t v = le(c->p, n);
  c->p += n;
  c->vaddr += n;
  return v;
}

static uint64_t cur_uleb(cur_t* c) {
  uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    if (c->bad || c->p >= c->end) {
      c->bad = true;
      return 0;
    }
    const uint8_t b = *c->p++;
    c->vaddr++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
}

static int64_t cur_sleb(cur_t* c) {
  uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    if (c->bad || c->p >= c->end) {
      c->bad = true;
      return 0;
    }
    const uint8_t b = *c->p++;
    c->vaddr++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      if (shift + 7 < 64 && (b & 0x40) != 0) v |= ~(uint64_t)0 << (shift + 7);
      return (int64_t)v;
    }
  }
}

static void cur_skip(cur_t* c, uint64_t n) {
  if (c->bad || (uint64_t)(c->end - c->p) < n) {
    c->bad = true;
    return;
  }
  c->p += n;
  c->vaddr += n;
}

// A value in the format of encoding `enc` (its low nibble), not applied.
static uint64_t cur_format(cur_t* c, uint8_t enc) {
  switch (enc & 0x0fu) {
    case EH_PE_ABSPTR:
    case EH_PE_UDATA8:
    case EH_PE_SDATA8:
      return cur_u(c, 8);
    case EH_PE_ULEB128:
      return cur_uleb(c);
    case EH_PE_UDATA2:
      return cur_u(c, 2);
    case EH_PE_UDATA4:
      return cur_u(c, 4);
    case EH_PE_SLEB128:
      return (uint64_t)cur_sleb(c);
    case EH_PE_SDATA2:
      return (uint64_t)(int64_t)(int16_t)cur_u(c, 2);
    case EH_PE_SDATA4:
      return (uint64_t)(int64_t)(int32_t)cur_u(c, 4);
    default:
      c->bad = true;
      return 0;
  }
}

// An encoded address: absolute, pc-relative or relative to `datarel` (.eh_frame_hdr; 0: none).
// `skip_only`: the value is not used (a personality routine), any application goes.
static uint64_t cur_pointer(cur_t* c, uint8_t enc, uint64_t datarel, bool skip_only) {
  const uint64_t at = c->vaddr;
  if (enc == EH_PE_OMIT) {
    c->bad = true;
    return 0;
  }
  const uint64_t v = cur_format(c, enc);
  if (skip_only) return 0;
  if ((enc & EH_PE_INDIRECT) != 0) c->bad = true;
  switch (enc & 0x70u) {
    case 0:
      return v;
    case EH_PE_PCREL:
      return at + v;
    case EH_PE_DATAREL:
      if (datarel == 0) c->bad = true;
      return datarel + v;
    default:  // textrel, funcrel, aligned: not on x86-64 Linux
      c->bad = true;
      return 0;
  }
}

// The module's data at link-time address `vaddr`, up to the end of its segment in the file.
static bool file_cur(const cfi_file_t* f, uint64_t vaddr, cur_t* c) {
  for (size_t i = 0; i < f->load_count; i++) {
    const load_t* l = &f->loads[i];
    if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz) {
      c->p = f->data + l->offset + (vaddr - l->vaddr);
      c->end = f->data + l->offset + l->filesz;
      c->vaddr = vaddr;
      c->bad = false;
      return true;
    }
  }
  return false;
}

// The body of the CIE or FDE at `c`: `c` moves past its length and `body` ends with it. False at
// the terminator or when it does not fit.
static bool entry_body(cur_t* c, cur_t* body, bool* is64) {
  uint64_t len = cur_u(c, 4);
  *is64 = len == 0xffffffffu;
  if (*is64) len = cur_u(c, 8);
  if (c->bad || len == 0 || len > (uint64_t)(c->end - c->p)) return false;
  *body = *c;
  body->end = c->p + len;
  cur_skip(c, len);
  return true;
}

typedef struct cie {
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_reg;
  uint8_t fde_enc;
  bool has_z, signal;
  cur_t instr;  // initial instructions
} cie_t;

static bool parse_cie(const cfi_file_t* f, uint64_t vaddr, uint64_t datarel, cie_t* cie) {
  cur_t c, b;
  bool is64;
  if (!file_cur(f, vaddr, &c) || !entry_body(&c, &b, &is64)) return false;
  if (cur_u(&b, is64 ? 8 : 4) != 0) return false;  // not a CIE
  const uint64_t version = cur_u(&b, 1);
  if (version != 1 && version != 3) return false;
  char aug[8];
  size_t aug_len = 0;
  for (;;) {
    const uint64_t ch = cur_u(&b, 1);
    if (b.bad || aug_len == sizeof(aug)) return false;
    aug[aug_len++] = (char)ch;
    if (ch == 0) break;
  }
  *cie = (cie_t){.fde_enc = EH_PE_ABSPTR};
  cie->code_align = cur_uleb(&b);
  cie->data_align = cur_sleb(&b);
  cie->ra_reg = version == 1 ? cur_u(&b, 1) : cur_uleb(&b);
  if (aug[0] != '\0' && aug[0] != 'z') return false;  // "eh" and the like: layout unknown
  if (aug[0] == 'z') {
    cie->has_z = true;
    const uint64_t len = cur_uleb(&b);
    if (b.bad || len > (uint64_t)(b.end - b.p)) return false;
    cur_t a = b;
    a.end = b.p + len;
    for (size_t i = 1; aug[i] != '\0' && !a.bad; i++) {
      if (aug[i] == 'R') {
        cie->fde_enc = (uint8_t)cur_u(&a, 1);
      } else if (aug[i] == 'L') {
        cur_u(&a, 1);
      } else if (aug[i] == 'P') {
        const uint8_t enc = (uint8_t)cur_u(&a, 1);
        cur_pointer(&a, enc, datarel, true);
      } else if (aug[i] == 'S') {
        cie->signal = true;
      } else if (aug[i] != 'B' && aug[i] != 'G') {
        break;  // unknown: the length skips the rest
      }
    }
    if (a.bad) return false;
    cur_skip(&b, len);
  }
  if (b.bad) return false;
  cie->instr = b;
  return true;
}

// The FDE at `vaddr`: its CIE, range and instructions.
static bool parse_fde(const cfi_file_t* f, uint64_t vaddr, uint64_t datarel, cie_t* cie,
                      uint64_t* pc_begin, uint64_t* pc_range, cur_t* instr) {
  cur_t c, b;
  bool is64;
  if (!file_cur(f, vaddr, &c) || !entry_body(&c, &b, &is64)) return false;
  const uint64_t at = b.vaddr;
  const uint64_t id = cur_u(&b, is64 ? 8 : 4);
  if (b.bad || id == 0 || id > at) return false;  // a CIE, or a pointer before the start
  if (!parse_cie(f, at - id, datarel, cie)) return false;
  *pc_begin = cur_pointer(&b, cie->fde_enc, datarel, false);
  *pc_range = cur_format(&b, cie->fde_enc);
  if (cie->has_z) cur_skip(&b, cur_uleb(&b));
  if (b.bad) return false;
  *instr = b;
  return true;
}

// --- The CFA program ----------------------------------------------------------------------------

enum { RULE_SAME, RULE_UNDEF, RULE_CFA, RULE_OTHER };
enum { CFAH_NONE, CFAH_REG, CFAH_PLT, CFAH_OTHER };

typedef struct rule {
  uint8_t how;  // RULE_*
  int64_t off;  // RULE_CFA: saved at CFA + off
} rule_t;

// What the row says about the registers the walk uses; the CFA register and offset are kept
// apart as DWARF (and libunwind) keep them: def_cfa_offset after an expression keeps it.
typedef struct cfa_state {
  uint8_t cfa_how;  // CFAH_*
  uint8_t plt_k;
  uint64_t cfa_reg;
  int64_t cfa_off, plt_off;
  rule_t rbp, ra;
} cfa_state_t;

#define REMEMBER_MAX 16

// Recognizes the expression linkers emit for .plt: rsp + N + ((rip & 15) >= K) << 3.
static bool match_plt(cur_t e, int64_t* off, uint8_t* k) {
  if (cur_u(&e, 1) != 0x77) return false;  // DW_OP_breg7 (rsp)
  *off = cur_sleb(&e);
  if (cur_u(&e, 1) != 0x80 || cur_sleb(&e) != 0) return false;         // DW_OP_breg16 (rip) 0
  if (cur_u(&e, 1) != 0x3f || cur_u(&e, 1) != 0x1a) return false;      // lit15, and
  const uint64_t lit = cur_u(&e, 1);                                   // litK
  if (lit < 0x30 || lit > 0x4f || cur_u(&e, 1) != 0x2a) return false;  // ge
  if (cur_u(&e, 1) != 0x33 || cur_u(&e, 1) != 0x24) return false;      // lit3, shl
  if (cur_u(&e, 1) != 0x22 || e.bad || e.p != e.end) return false;     // plus, the end
  *k = (uint8_t)(lit - 0x30);
  return true;
}

static rule_t* rule_of(cfa_state_t* st, uint64_t reg, uint64_t ra_reg) {
  if (reg == DW_RBP) return &st->rbp;
  if (reg == ra_reg) return &st->ra;
  return NULL;
}

// A register's new rule, as one instruction gives it.
typedef struct reg_rule_op {
  uint64_t reg;
  int how;  // RULE_*; -1: the instruction sets no register's rule
  int64_t off;
} reg_rule_op_t;

// The rule DW_CFA_restore gives r->reg: the CIE's (`initial`), or same-value while the CIE's own
// instructions run (`initial` NULL).
static void restore_rule(const cfa_state_t* initial, const cie_t* cie, reg_rule_op_t* r) {
  r->how = RULE_SAME;
  if (initial != NULL) {
    const rule_t* from = rule_of((cfa_state_t*)initial, r->reg, cie->ra_reg);
    if (from != NULL) r->how = from->how, r->off = from->off;
  }
}

// Decodes an instruction that sets a register's rule into *r. False when `op` is not one.
static bool rule_op(uint8_t op, cur_t* c, const cie_t* cie, const cfa_state_t* initial,
                    reg_rule_op_t* r) {
  *r = (reg_rule_op_t){.reg = op & 0x3fu, .how = -1};
  switch (op & 0xc0u) {
    case 0x80:  // DW_CFA_offset
      r->how = RULE_CFA;
      r->off = (int64_t)cur_uleb(c) * cie->data_align;
      return true;
    case 0xc0:  // DW_CFA_restore
      restore_rule(initial, cie, r);
      return true;
    case 0x40:  // DW_CFA_advance_loc
      return false;
    default:
      break;
  }
  switch (op) {
    case 0x05:  // offset_extended
      r->reg = cur_uleb(c);
      r->how = RULE_CFA;
      r->off = (int64_t)cur_uleb(c) * cie->data_align;
      return true;
    case 0x06:  // restore_extended (a register past DW_LIMIT fails when the rule is applied)
      r->reg = cur_uleb(c);
      restore_rule(initial, cie, r);
      return true;
    case 0x07:  // undefined
      r->reg = cur_uleb(c);
      r->how = RULE_UNDEF;
      return true;
    case 0x08:  // same_value
      r->reg = cur_uleb(c);
      r->how = RULE_SAME;
      return true;
    case 0x09:  // register
    case 0x14:  // val_offset
      r->reg = cur_uleb(c);
      cur_uleb(c);
      r->how = RULE_OTHER;
      return true;
    case 0x10:  // expression
    case 0x16:  // val_expression
      r->reg = cur_uleb(c);
      cur_skip(c, cur_uleb(c));
      r->how = RULE_OTHER;
      return true;
    case 0x11:  // offset_extended_sf
      r->reg = cur_uleb(c);
      r->how = RULE_CFA;
      r->off = cur_sleb(c) * cie->data_align;
      return true;
    case 0x15:  // val_offset_sf
      r->reg = cur_uleb(c);
      cur_sleb(c);
      r->how = RULE_OTHER;
      return true;
    case 0x2f:  // GNU_negative_offset_extended
      r->reg = cur_uleb(c);
      r->how = RULE_CFA;
      r->off = -(int64_t)cur_uleb(c) * cie->data_align;
      return true;
    default:
      return false;
  }
}

// Applies an instruction that defines the CFA to *st (c->bad when it is malformed). False when
// `op` is not one.
static bool cfa_op(uint8_t op, cur_t* c, const cie_t* cie, cfa_state_t* st) {
  switch (op) {
    case 0x0c:  // def_cfa
      st->cfa_how = CFAH_REG;
      st->cfa_reg = cur_uleb(c);
      st->cfa_off = (int64_t)cur_uleb(c);
      return true;
    case 0x0d:  // def_cfa_register
      st->cfa_how = CFAH_REG;
      st->cfa_reg = cur_uleb(c);
      return true;
    case 0x0e:  // def_cfa_offset
      st->cfa_off = (int64_t)cur_uleb(c);
      return true;
    case 0x0f: {  // def_cfa_expression
      const uint64_t len = cur_uleb(c);
      if (c->bad || len > (uint64_t)(c->end - c->p)) {
        c->bad = true;
        return true;
      }
      cur_t e = *c;
      e.end = c->p + len;
      st->cfa_how = match_plt(e, &st->plt_off, &st->plt_k) ? CFAH_PLT : CFAH_OTHER;
      cur_skip(c, len);
      return true;
    }
    case 0x12:  // def_cfa_sf
      st->cfa_how = CFAH_REG;
      st->cfa_reg = cur_uleb(c);
      st->cfa_off = cur_sleb(c) * cie->data_align;
      return true;
    case 0x13:  // def_cfa_offset_sf
      st->cfa_off = cur_sleb(c) * cie->data_align;
      return true;
    default:
      return false;
  }
}

// Runs `c` from `loc` while the location stays <= `target` (DWARF's row lookup). `initial`: the
// state after the CIE's instructions (DW_CFA_restore), NULL while running them.
static bool run_cfa(const cie_t* cie, cur_t c, uint64_t loc, uint64_t target, uint64_t datarel,
                    cfa_state_t* st, const cfa_state_t* initial) {
  cfa_state_t stack[REMEMBER_MAX];
  size_t depth = 0;
  while (c.p < c.end && !c.bad) {
    const uint8_t op = (uint8_t)cur_u(&c, 1);
    uint64_t delta = 0;
    bool advance = false;
    reg_rule_op_t r = {.how = -1};
    if ((op & 0xc0u) == 0x40) {  // DW_CFA_advance_loc
      delta = op & 0x3fu;
      advance = true;
    } else if (op >= 0x02 && op <= 0x04) {  // advance_loc1, 2, 4
      delta = cur_u(&c, op == 0x02 ? 1 : op == 0x03 ? 2 : 4);
      advance = true;
    } else if (op == 0x01) {  // set_loc
      const uint64_t to = cur_pointer(&c, cie->fde_enc, datarel, false);
      if (c.bad) return false;
      if (to > target) return true;
      loc = to;
    } else if (op == 0x0a) {  // remember_state
      if (depth == REMEMBER_MAX) return false;
      stack[depth++] = *st;
    } else if (op == 0x0b) {  // restore_state
      if (depth == 0) return false;
      *st = stack[--depth];
    } else if (op == 0x2e) {  // GNU_args_size
      cur_uleb(&c);
    } else if (op != 0x00 && !cfa_op(op, &c, cie, st) && !rule_op(op, &c, cie, initial, &r)) {
      return false;  // not an instruction we know (0x00: nop)
    }
    if (c.bad) return false;
    if (advance) {
      const uint64_t step = delta * cie->code_align;
      if ((cie->code_align != 0 && step / cie->code_align != delta) || step > target - loc) {
        return true;  // the next row starts past the target
      }
      loc += step;
    }
    if (r.how >= 0) {
      if (r.reg >= DW_LIMIT) return false;
      rule_t* to = rule_of(st, r.reg, cie->ra_reg);
      if (to != NULL) *to = (rule_t){.how = (uint8_t)r.how, .off = r.off};
    }
  }
  return !c.bad;
}

static bool fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

static row_t reduce(const cfa_state_t* st, bool signal) {
  const row_t complex = {.kind = ROW_COMPLEX};
  row_t r = {.kind = ROW_STEP, .signal = signal};
  if (st->cfa_how == CFAH_REG && (st->cfa_reg == DW_RSP || st->cfa_reg == DW_RBP) &&
      fits32(st->cfa_off)) {
    r.cfa = st->cfa_reg == DW_RSP ? CFA_RSP : CFA_RBP;
    r.cfa_off = (int32_t)st->cfa_off;
  } else if (st->cfa_how == CFAH_PLT && fits32(st->plt_off)) {
    r.cfa = CFA_PLT;
    r.cfa_off = (int32_t)st->plt_off;
    r.plt_k = st->plt_k;
  } else {
    return complex;
  }
  if (st->ra.how == RULE_UNDEF) {
    r.ra_undef = 1;
  } else if (st->ra.how == RULE_CFA && fits32(st->ra.off)) {
    r.ra_off = (int32_t)st->ra.off;
  } else {
    return complex;
  }
  if (st->rbp.how == RULE_SAME) {
    r.rbp = RBP_SAME;
  } else if (st->rbp.how == RULE_UNDEF) {
    r.rbp = RBP_UNDEF;
  } else if (st->rbp.how == RULE_CFA && fits32(st->rbp.off)) {
    r.rbp = RBP_SAVED;
    r.rbp_off = (int32_t)st->rbp.off;
  } else {
    return complex;
  }
  return r;
}

// The FDE whose range may hold `vaddr`: the last one starting at or below it.
static bool find_fde(const cfi_file_t* f, uint64_t vaddr, uint64_t* fde) {
  if (f->hdr_table != NULL) {
    // Entries of two int32_t offsets from the table's address: the initial PC, then the FDE.
    const size_t n = zxs_sorted_count_at_or_below_i32le(f->hdr_table, f->fde_count, 8, 0,
                                                        (int64_t)(vaddr - f->hdr_vaddr));
    if (n == 0) return false;
    *fde = f->hdr_vaddr + (uint64_t)(int64_t)(int32_t)le(f->hdr_table + (n - 1) * 8 + 4, 4);
    return true;
  }
  const size_t n = zxs_sorted_count_at_or_below(f->index, f->index_count, sizeof(*f->index),
                                                offsetof(fde_ref_t, pc), vaddr);
  if (n == 0) return false;
  *fde = f->index[n - 1].fde;
  return true;
}

static row_t compute_row(const cfi_file_t* f, uint64_t vaddr) {
  const row_t nofde = {.kind = ROW_NOFDE}, complex = {.kind = ROW_COMPLEX};
  uint64_t fde, pc_begin = 0, pc_range = 0;
  cie_t cie;
  cur_t instr;
  if (!find_fde(f, vaddr, &fde)) return nofde;
  if (!parse_fde(f, fde, f->hdr_vaddr, &cie, &pc_begin, &pc_range, &instr)) return complex;
  if (vaddr < pc_begin || vaddr - pc_begin >= pc_range) return nofde;
  if (cie.ra_reg != DW_RA) return complex;
  cfa_state_t st = {.cfa_how = CFAH_NONE};
  if (!run_cfa(&cie, cie.instr, 0, UINT64_MAX, f->hdr_vaddr, &st, NULL)) return complex;
  const cfa_state_t initial = st;
  if (!run_cfa(&cie, instr, pc_begin, vaddr, f->hdr_vaddr, &st, &initial)) return complex;
  return reduce(&st, cie.signal);
}

static size_t row_hash(const cfi_file_t* f, uint64_t vaddr) {
  const uint64_t h =
      (vaddr ^ ((uint64_t)(uintptr_t)f >> 4) * 0xff51afd7ed558ccdull) * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> (64 - ROW_CACHE_BITS));
}

static row_t lookup_row(zxs_cfi_unwinder_t* u, const cfi_file_t* f, uint64_t vaddr) {
  row_slot_t* slot = &u->rows[row_hash(f, vaddr)];
  if (slot->file == f && slot->vaddr == vaddr) {
    u->stats.row_hits++;
    return slot->row;
  }
  u->stats.row_misses++;
  *slot = (row_slot_t){.file = f, .vaddr = vaddr, .row = compute_row(f, vaddr)};
  return slot->row;
}

// --- Module files -------------------------------------------------------------------------------

static int compare_refs(const void* a, const void* b) {
  const fde_ref_t* x = a;
  const fde_ref_t* y = b;
  return x->pc < y->pc ? -1 : x->pc > y->pc;
}

// Without a usable .eh_frame_hdr: an index of the FDEs in the .eh_frame section.
static void index_eh_frame(cfi_file_t* f) {
  const uint8_t* d = f->data;
  const uint64_t shoff = le(d + 40, 8), shentsize = le(d + 58, 2), shnum = le(d + 60, 2);
  const uint64_t shstrndx = le(d + 62, 2);
  if (shoff == 0 || shentsize != 64 || shoff > f->size || shnum > (f->size - shoff) / 64 ||
      shstrndx >= shnum) {
    return;
  }
  const uint8_t* strtab = d + shoff + shstrndx * 64;
  const uint64_t str_off = le(strtab + 24, 8), str_size = le(strtab + 32, 8);
  if (str_off > f->size || str_size > f->size - str_off) return;
  uint64_t addr = 0, size = 0;
  for (uint64_t i = 0; i < shnum; i++) {
    const uint8_t* sh = d + shoff + i * 64;
    const uint64_t name = le(sh, 4);
    if (name < str_size && str_size - name >= sizeof(".eh_frame") &&
        memcmp(d + str_off + name, ".eh_frame", sizeof(".eh_frame")) == 0 && le(sh + 16, 8) != 0) {
      addr = le(sh + 16, 8);
      size = le(sh + 32, 8);
      break;
    }
  }
  cur_t c;
  if (size == 0 || !file_cur(f, addr, &c)) return;
  if (size < (uint64_t)(c.end - c.p)) c.end = c.p + size;
  size_t cap = 0;
  while (c.p < c.end && !c.bad) {
    const uint64_t at = c.vaddr;
    cur_t body;
    bool is64;
    if (!entry_body(&c, &body, &is64)) break;
    if (cur_u(&body, is64 ? 8 : 4) == 0) continue;  // a CIE
    cie_t cie;
    uint64_t pc = 0, range = 0;
    cur_t instr;
    if (!parse_fde(f, at, 0, &cie, &pc, &range, &instr) || range == 0) continue;
    if (f->index_count == cap) {
      cap = cap == 0 ? 256 : 2 * cap;
      fde_ref_t* grown = realloc(f->index, cap * sizeof(*grown));
      if (grown == NULL) break;
      f->index = grown;
    }
    f->index[f->index_count++] = (fde_ref_t){.pc = pc, .fde = at};
  }
  if (f->index_count > 0) qsort(f->index, f->index_count, sizeof(*f->index), compare_refs);
}

// Reads the program headers of a mapped ELF64 little-endian file.
static bool parse_file(cfi_file_t* f) {
  const uint8_t* d = f->data;
  if (f->size < 64 ||
      memcmp(d,
             "\x7f"
             "ELF",
             4) != 0 ||
      d[4] != 2 || d[5] != 1)
    return false;
  const uint64_t phoff = le(d + 32, 8);
  const uint64_t phentsize = le(d + 54, 2), phnum = le(d + 56, 2);
  if (phentsize != 56 || phoff > f->size || phnum > (f->size - phoff) / 56) return false;
  f->loads = calloc(phnum + 1, sizeof(*f->loads));
  if (f->loads == NULL) return false;
  uint64_t hdr_offset = 0, hdr_size = 0;
  f->min_vaddr = UINT64_MAX;
  for (uint64_t i = 0; i < phnum; i++) {
    const uint8_t* p = d + phoff + i * 56;
    const uint32_t type = (uint32_t)le(p, 4);
    const uint64_t offset = le(p + 8, 8), vaddr = le(p + 16, 8), filesz = le(p + 32, 8);
    const uint64_t memsz = le(p + 40, 8);
    if (type == PT_LOAD_TYPE && offset <= f->size && filesz <= f->size - offset &&
        vaddr <= UINT64_MAX - memsz) {
      f->loads[f->load_count++] = (load_t){.vaddr = vaddr, .filesz = filesz, .offset = offset};
      if (vaddr < f->min_vaddr) f->min_vaddr = vaddr;
      if (vaddr + memsz > f->max_vaddr) f->max_vaddr = vaddr + memsz;
    } else if (type == PT_GNU_EH_FRAME_TYPE && offset <= f->size && filesz <= f->size - offset) {
      f->hdr_vaddr = vaddr;
      hdr_offset = offset;
      hdr_size = filesz;
    }
  }
  // version 1, eh_frame_ptr pcrel sdata4, fde_count udata4, table datarel sdata4.
  if (hdr_size >= 12 && d[hdr_offset] == 1 && d[hdr_offset + 2] == EH_PE_UDATA4 &&
      d[hdr_offset + 3] == (EH_PE_DATAREL | EH_PE_SDATA4)) {
    f->fde_count = le(d + hdr_offset + 8, 4);
    if (f->fde_count > (hdr_size - 12) / 8) f->hdr_vaddr = 0;
  } else {
    f->hdr_vaddr = 0;
  }
  if (f->load_count == 0) return false;
  if (f->hdr_vaddr != 0) {
    f->hdr_table = d + hdr_offset + 12;
  } else {
    index_eh_frame(f);
  }
  return true;
}

// A new entry for `path` (data still NULL).
static cfi_file_t* add_file(zxs_cfi_unwinder_t* u, const char* path) {
  if (u->count == u->cap) {
    size_t cap = u->cap == 0 ? 16 : 2 * u->cap;
    cfi_file_t** grown = realloc(u->files, cap * sizeof(*grown));
    if (grown == NULL) return NULL;
    u->files = grown;
    u->cap = cap;
  }
  cfi_file_t* f = calloc(1, sizeof(*f));
  if (f == NULL || (f->path = strdup(path)) == NULL) {
    free(f);
    return NULL;
  }
  u->files[u->count++] = f;
  return f;
}

bool zxs_cfi_unwinder_add_image(zxs_cfi_unwinder_t* u, const char* path, const void* data,
                                size_t size) {
  cfi_file_t* f = add_file(u, path);
  uint8_t* copy = f != NULL ? malloc(size) : NULL;
  if (copy == NULL) return false;
  memcpy(copy, data, size);
  f->data = copy;
  f->size = size;
  f->owned = true;
  if (!parse_file(f)) {
    free(copy);
    f->data = NULL;
    return false;
  }
  return true;
}

static const cfi_file_t* open_file(zxs_cfi_unwinder_t* u, const char* path) {
  for (size_t i = 0; i < u->count; i++) {
    if (strcmp(u->files[i]->path, path) == 0) return u->files[i];
  }
  cfi_file_t* f = add_file(u, path);
  if (f == NULL) return NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void* map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      f->data = map;
      f->size = (size_t)st.st_size;
      if (!parse_file(f)) {
        munmap(map, f->size);
        f->data = NULL;
      }
    }
  }
  if (fd >= 0) close(fd);
  return f;
}

bool zxs_cfi_available(void) { return true; }

zxs_cfi_unwinder_t* zxs_cfi_unwinder_new(void) {
  zxs_cfi_unwinder_t* u = calloc(1, sizeof(*u));
  if (u == NULL) return NULL;
  u->rows = calloc(ROW_CACHE_SIZE, sizeof(*u->rows));
  if (u->rows == NULL) {
    free(u);
    return NULL;
  }
  const char* how = getenv("ZXSAMPLER_CFI");
  u->own = how == NULL || strcmp(how, "libunwind") != 0;
  return u;
}

void zxs_cfi_unwinder_set_own(zxs_cfi_unwinder_t* u, bool own) {
  if (u != NULL) u->own = own;
}

void zxs_cfi_unwinder_stats(const zxs_cfi_unwinder_t* u, zxs_cfi_stats_t* stats) {
  *stats = u != NULL ? u->stats : (zxs_cfi_stats_t){0};
}

void zxs_cfi_unwinder_free(zxs_cfi_unwinder_t* u) {
  if (u == NULL) return;
  for (size_t i = 0; i < u->count; i++) {
    if (u->files[i]->owned) {
      free((void*)u->files[i]->data);
    } else if (u->files[i]->data != NULL) {
      munmap((void*)u->files[i]->data, u->files[i]->size);
    }
    free(u->files[i]->loads);
    free(u->files[i]->index);
    free(u->files[i]->path);
    free(u->files[i]);
  }
  free(u->files);
  free(u->rows);
  free(u);
}

// --- Memory of the sampled process ------------------------------------------------------------

static const space_module_t* find_module(const zxs_cfi_space_t* s, uint64_t addr) {
  const size_t n = zxs_sorted_count_at_or_below(s->modules, s->count, sizeof(*s->modules),
                                                offsetof(space_module_t, start), addr);
  if (n == 0 || addr >= s->modules[n - 1].end) return NULL;
  return &s->modules[n - 1];
}

// Eight bytes at a runtime address: from the stack copy, else from a module's file.
static bool read_word(zxs_cfi_space_t* s, uint64_t addr, uint64_t* out) {
  if (addr >= s->copy_start && addr - s->copy_start <= s->copy_len &&
      s->copy_len - (addr - s->copy_start) >= 8) {
    memcpy(out, s->copy + (addr - s->copy_start), 8);
    return true;
  }
  const space_module_t* m = find_module(s, addr);
  if (m == NULL) {
    // Above the copy, in what is likely the rest of the stack: the copy was too short.
    if (addr >= s->copy_start) s->read_past_copy = true;
    return false;
  }
  const uint64_t vaddr = addr - m->bias;
  for (size_t i = 0; i < m->file->load_count; i++) {
    const load_t* l = &m->file->loads[i];
    if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz && l->filesz - (vaddr - l->vaddr) >= 8) {
      memcpy(out, m->file->data + l->offset + (vaddr - l->vaddr), 8);
      return true;
    }
  }
  return false;
}

// --- Our own walk
// ---------------------------------------------------------------------------------

// The walk's registers: the PC, the CFA (the current frame's rsp) and rbp, as a value or as the
// address it was saved at (read when first needed, as libunwind does).
typedef struct walk {
  uint64_t ip, cfa, rbp, rbp_at;
  bool rbp_saved, rbp_null, use_prev;
} walk_t;

enum { STEP_ERROR = -1, STEP_END = 0, STEP_OK = 1, STEP_FALLBACK = 2 };

static bool walk_rbp(zxs_cfi_space_t* s, walk_t* w, uint64_t* rbp) {
  if (w->rbp_saved) {
    if (!read_word(s, w->rbp_at, &w->rbp)) return false;
    w->rbp_saved = false;
  }
  *rbp = w->rbp;
  return true;
}

// libunwind's step for a frame without an FDE.
static int guess_step(zxs_cfi_space_t* s, walk_t* w) {
  uint64_t w0 = 0, w1 = 0;
  const bool code = read_word(s, w->ip, &w0);
  if (code && read_word(s, w->ip + 8, &w1) &&
      ((w0 == 0x0f0000000fc0c748ull && (w1 & 0xff) == 0x05) ||  // mov $15, %rax; syscall
       ((w0 & 0xffff) == 0x25ff && ((w0 >> 48) & 0xff) == 0x68 && ((w1 >> 24) & 0xff) == 0xe9))) {
    return STEP_FALLBACK;  // a signal trampoline or a PLT entry without CFI
  }
  if (w->rbp_null) return STEP_END;
  uint64_t rbp, rbp1;
  if (!walk_rbp(s, w, &rbp)) return STEP_ERROR;
  if (!code) return STEP_FALLBACK;  // a PC in no module: libunwind's own guesses
  if (rbp == 0) return STEP_END;
  if (!read_word(s, rbp, &rbp1) || rbp < w->cfa || rbp - w->cfa > 0x4000) return STEP_END;
  w->cfa += 16;
  w->rbp = rbp1;
  uint64_t ra;
  if (!read_word(s, rbp + 8, &ra)) return STEP_ERROR;
  w->ip = ra;
  w->use_prev = true;
  return STEP_OK;
}

static int own_step(zxs_cfi_space_t* s, walk_t* w) {
  const uint64_t pc = w->use_prev ? w->ip - 1 : w->ip;
  const space_module_t* m = find_module(s, pc);
  row_t r = {.kind = ROW_NOFDE};
  if (m != NULL && (m->file->hdr_table != NULL || m->file->index != NULL)) {
    r = lookup_row(s->unwinder, m->file, pc - m->bias);
  }
  if (r.kind == ROW_COMPLEX) return STEP_FALLBACK;
  if (r.kind == ROW_NOFDE) return guess_step(s, w);
  uint64_t cfa;
  if (r.cfa == CFA_RBP) {
    uint64_t rbp;
    if (w->rbp_null || !walk_rbp(s, w, &rbp)) return STEP_ERROR;
    cfa = rbp + (uint64_t)(int64_t)r.cfa_off;
  } else {
    cfa = w->cfa + (uint64_t)(int64_t)r.cfa_off;
    if (r.cfa == CFA_PLT && (w->ip & 15) >= r.plt_k) cfa += 8;
  }
  if (r.rbp == RBP_SAVED) {
    w->rbp_at = cfa + (uint64_t)(int64_t)r.rbp_off;
    w->rbp_saved = true;
  } else if (r.rbp == RBP_UNDEF) {
    w->rbp_null = true;
  }
  const uint64_t prev_ip = w->ip, prev_cfa = w->cfa;
  w->cfa = cfa;
  if (r.ra_undef) return STEP_END;
  uint64_t ra;
  if (!read_word(s, cfa + (uint64_t)(int64_t)r.ra_off, &ra)) return STEP_ERROR;
  if (ra == prev_ip && cfa == prev_cfa) return STEP_ERROR;  // no progress
  w->ip = ra;
  w->use_prev = !r.signal;
  return w->rbp_null ? STEP_END : STEP_OK;
}

// False when a frame needs libunwind: the sample is then unwound again from the start by it.
static bool own_unwind(zxs_cfi_space_t* s, const zxs_cfi_regs_t* regs, uint64_t* pcs, size_t max,
                       size_t* count, bool* cut) {
  walk_t w = {.ip = regs->r[DW_RA], .cfa = regs->r[DW_RSP], .rbp = regs->r[DW_RBP]};
  size_t n = 0;
  *cut = false;
  while (w.ip != 0) {
    pcs[n++] = w.ip;
    if (n == max) {
      *cut = true;  // a further frame may remain: we do not look
      break;
    }
    const int step = own_step(s, &w);
    if (step == STEP_FALLBACK) return false;
    if (step <= 0) {
      *cut = step < 0 && s->read_past_copy;
      break;
    }
  }
  *count = n;
  return true;
}

// --- libunwind's accessors ----------------------------------------------------------------------

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t* value, int write,
                      void* arg) {
  (void)as;
  if (write) return -UNW_EINVAL;
  uint64_t v;
  if (!read_word(arg, addr, &v)) return -UNW_EINVAL;
  *value = v;
  return 0;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t* value, int write,
                      void* arg) {
  (void)as;
  const zxs_cfi_space_t* s = arg;
  if (write || reg < 0 || reg >= ZXS_CFI_REG_COUNT) return -UNW_EBADREG;
  *value = s->regs->r[reg];
  return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t* value, int write,
                        void* arg) {
  (void)as, (void)reg, (void)value, (void)write, (void)arg;
  return -UNW_EBADREG;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t* pi,
                          int need_unwind_info, void* arg) {
  const zxs_cfi_space_t* s = arg;
  const space_module_t* m = find_module(s, ip);
  // A remapped piece (add_remapped) does not hold its file's table: libunwind could not read it,
  // and would end the walk there instead of guessing from the frame pointer.
  if (m == NULL || m->file->hdr_vaddr == 0 || m->bias + m->file->hdr_vaddr < m->start ||
      m->bias + m->file->hdr_vaddr >= m->end) {
    return -UNW_ENOINFO;
  }
  unw_dyn_info_t di;
  memset(&di, 0, sizeof(di));
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.start_ip = m->start;
  di.end_ip = m->end;
  di.u.rti.segbase = m->bias + m->file->hdr_vaddr;
  di.u.rti.table_data = m->bias + m->file->hdr_vaddr + 12;
  di.u.rti.table_len = m->file->fde_count * 8 / sizeof(unw_word_t);
  return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t* pi, void* arg) {
  (void)as, (void)pi, (void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t* addr, void* arg) {
  (void)as, (void)addr, (void)arg;
  return -UNW_ENOINFO;
}

static int resume(unw_addr_space_t as, unw_cursor_t* cursor, void* arg) {
  (void)as, (void)cursor, (void)arg;
  return -UNW_EINVAL;
}

static unw_accessors_t g_accessors = {
    .find_proc_info = find_proc_info,
    .put_unwind_info = put_unwind_info,
    .get_dyn_info_list_addr = get_dyn_info_list_addr,
    .access_mem = access_mem,
    .access_reg = access_reg,
    .access_fpreg = access_fpreg,
    .resume = resume,
};

static bool same_row(const row_t* a, const row_t* b) {
  return a->kind == b->kind && a->cfa == b->cfa && a->rbp == b->rbp && a->signal == b->signal &&
         a->ra_undef == b->ra_undef && a->plt_k == b->plt_k && a->cfa_off == b->cfa_off &&
         a->ra_off == b->ra_off && a->rbp_off == b->rbp_off;
}

// libunwind's row cache (UNW_CACHE_GLOBAL) is keyed by the frame's PC alone, not by what was
// looked up for it: the PC itself (the interrupted frame, or after a signal frame) or the byte
// before it (after a call). Whichever lookup of a PC comes first is then used for the other, in
// later samples as in the same one: a sample interrupted at a function's first byte gives its
// entry rule to a later return address equal to that byte (a stale function pointer unwound as
// one, a call to a noreturn function at the end of the previous one), whose caller should be
// found from the byte before (often without CFI: the frame-pointer guess), and the reverse.
// libunwind's frames would so depend on the samples unwound before, the own walk's do not.
// True when the two lookups of `ip` give different rules, so that its cache entry must not stay.
static bool ambiguous_pc(zxs_cfi_space_t* s, uint64_t ip) {
  const space_module_t* m = find_module(s, ip);
  if (m == NULL || m->file->hdr_table == NULL || ip == m->start) {
    // libunwind caches nothing for it (it finds no CFI), or the byte before is elsewhere.
    return m != NULL && m->file->hdr_table != NULL;
  }
  const uint64_t v = ip - m->bias;
  const row_t at = lookup_row(s->unwinder, m->file, v);
  const row_t before = lookup_row(s->unwinder, m->file, v - 1);
  if (at.kind != before.kind) return true;
  if (at.kind == ROW_COMPLEX) {  // not reduced: the same FDE is taken to give the same rules
    uint64_t fa = 0, fb = 0;
    return !find_fde(m->file, v, &fa) || !find_fde(m->file, v - 1, &fb) || fa != fb;
  }
  return !same_row(&at, &before);
}

static size_t libunwind_unwind(zxs_cfi_space_t* s, uint64_t* pcs, size_t max, bool* cut) {
  size_t n = 0;
  unw_cursor_t cursor;
  *cut = false;
  if (unw_init_remote(&cursor, s->as, s) == 0) {
    for (;;) {
      unw_word_t ip;
      if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
      pcs[n++] = ip;
      if (n == max) {
        *cut = true;  // a further frame may remain: we do not look
        break;
      }
      int step = unw_step(&cursor);
      // The step cached a row under `ip` (see ambiguous_pc): drop the cache before it misleads
      // a later step (libunwind flushes it lazily, at its next lookup).
      if (ambiguous_pc(s, ip)) unw_flush_cache(s->as, 0, 0);
      if (step <= 0) {
        *cut = step < 0 && s->read_past_copy;
        break;
      }
    }
  }
  return n;
}

// --- Spaces and unwinding ---------------------------------------------------------------------

static int compare_modules(const void* a, const void* b) {
  const space_module_t* x = a;
  const space_module_t* y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

// The load bias that puts file offset `pgoff` at `start`: from the PT_LOAD segment that starts
// in that page (bias = start + p_offset - pgoff - p_vaddr).
static bool mapping_bias(const cfi_file_t* f, uint64_t start, uint64_t pgoff, uint64_t* bias) {
  for (size_t k = 0; k < f->load_count; k++) {
    if ((f->loads[k].offset & ~(uint64_t)4095) == (pgoff & ~(uint64_t)4095)) {
      *bias = start + f->loads[k].offset - pgoff - f->loads[k].vaddr;
      return true;
    }
  }
  return false;
}

// A mapping of `f` that starts inside a PT_LOAD segment (code mapped again elsewhere): a module
// of the mapping's own bytes, biased by the segment holding its offset.
static void add_remapped(zxs_cfi_space_t* s, const cfi_file_t* f, const zxs_cfi_mapping_t* m) {
  for (size_t k = 0; k < f->load_count && m->len > 0; k++) {
    const load_t* l = &f->loads[k];
    if (m->pgoff > l->offset && m->pgoff - l->offset < l->filesz) {
      const uint64_t bias = m->start + l->offset - m->pgoff - l->vaddr;
      const uint64_t left = l->filesz - (m->pgoff - l->offset);
      s->modules[s->count++] = (space_module_t){.file = f,
                                                .bias = bias,
                                                .start = m->start,
                                                .end = m->start + (m->len < left ? m->len : left)};
      return;
    }
  }
}

zxs_cfi_space_t* zxs_cfi_space_new(zxs_cfi_unwinder_t* u, const zxs_cfi_mapping_t* mappings,
                                   size_t count) {
  zxs_cfi_space_t* s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->unwinder = u;
  s->modules = calloc(count + 1, sizeof(*s->modules));
  s->as = unw_create_addr_space(&g_accessors, 0);
  if (s->modules == NULL || s->as == NULL) {
    zxs_cfi_space_free(s);
    return NULL;
  }
  // The global cache: without a cache every step re-parses CFI (165-250 us a sample here against
  // 51-143 us); Debian's libunwind has no per-thread cache, so each cache access costs a
  // sigprocmask pair (most of what is left: see docs/PERFORMANCE.md).
  unw_set_caching_policy(s->as, UNW_CACHE_GLOBAL);
  for (size_t i = 0; i < count; i++) {
    const cfi_file_t* f = open_file(u, mappings[i].path);
    uint64_t bias;
    if (f == NULL || f->data == NULL) continue;
    if (!mapping_bias(f, mappings[i].start, mappings[i].pgoff, &bias)) {
      add_remapped(s, f, &mappings[i]);
      continue;
    }
    bool known = false;  // a file's other mappings give the same module
    for (size_t k = 0; k < s->count && !known; k++) known = s->modules[k].file == f;
    if (known) continue;
    s->modules[s->count++] = (space_module_t){
        .file = f, .bias = bias, .start = bias + f->min_vaddr, .end = bias + f->max_vaddr};
  }
  qsort(s->modules, s->count, sizeof(*s->modules), compare_modules);
  return s;
}

void zxs_cfi_space_free(zxs_cfi_space_t* s) {
  if (s == NULL) return;
  if (s->as != NULL) unw_destroy_addr_space(s->as);
  free(s->modules);
  free(s);
}

size_t zxs_cfi_unwind(zxs_cfi_space_t* s, const zxs_cfi_regs_t* regs, const void* copy,
                      size_t copy_len, uint64_t* pcs, size_t max, bool* truncated) {
  bool cut = false;
  size_t n = 0;
  zxs_cfi_unwinder_t* u = s->unwinder;
  s->regs = regs;
  s->copy = copy;
  s->copy_len = copy != NULL ? copy_len : 0;
  s->copy_start = regs->r[DW_RSP];
  s->read_past_copy = false;
  u->stats.samples++;
  if (max > 0) {
    if (u->own && own_unwind(s, regs, pcs, max, &n, &cut)) {
      u->stats.own++;
    } else {
      if (u->own) u->stats.fallbacks++;
      s->read_past_copy = false;
      n = libunwind_unwind(s, pcs, max, &cut);
    }
  }
  if (n == 0 && max > 0) pcs[n++] = regs->r[DW_RA];
  if (truncated != NULL) *truncated = cut;
  return n;
}

#else  // no libunwind, or not x86-64: frame pointers only

bool zxs_cfi_unwinder_add_image(zxs_cfi_unwinder_t* u, const char* path, const void* data,
                                size_t size) {
  (void)u, (void)path, (void)data, (void)size;
  return false;
}
bool zxs_cfi_available(void) { return false; }
zxs_cfi_unwinder_t* zxs_cfi_unwinder_new(void) { return NULL; }
void zxs_cfi_unwinder_set_own(zxs_cfi_unwinder_t* u, bool own) { (void)u, (void)own; }
void zxs_cfi_unwinder_stats(const zxs_cfi_unwinder_t* u, zxs_cfi_stats_t* stats) {
  (void)u;
  *stats = (zxs_cfi_stats_t){0};
}
void zxs_cfi_unwinder_free(zxs_cfi_unwinder_t* u) { (void)u; }
zxs_cfi_space_t* zxs_cfi_space_new(zxs_cfi_unwinder_t* u, const zxs_cfi_mapping_t* mappings,
                                   size_t count) {
  (void)u, (void)mappings, (void)count;
  return NULL;
}
void zxs_cfi_space_free(zxs_cfi_space_t* s) { (void)s; }
size_t zxs_cfi_unwind(zxs_cfi_space_t* s, const zxs_cfi_regs_t* regs, const void* copy,
                      size_t copy_len, uint64_t* pcs, size_t max, bool* truncated) {
  (void)s, (void)regs, (void)copy, (void)copy_len, (void)pcs, (void)max;
  if (truncated != NULL) *truncated = false;
  return 0;
}

#endif
