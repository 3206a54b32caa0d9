// CFI unwinding over a stack copy with libunwind's remote API (see cfi_unwind.h).
#define _GNU_SOURCE
#include "cfi_unwind.h"

#include "zxs_config.h"

#if ZXS_HAVE_LIBUNWIND && defined(__x86_64__)

#include <fcntl.h>
#include <libunwind.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// libunwind's table search, exported but not declared in its headers (perf uses it the same way).
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
                                              unw_dyn_info_t* di, unw_proc_info_t* pi,
                                              int need_unwind_info, void* arg);

#define PT_LOAD_TYPE 1u
#define PT_GNU_EH_FRAME_TYPE 0x6474e550u
// .eh_frame_hdr encodings libunwind's remote table takes: pc-relative, data-relative sdata4.
#define EH_PE_UDATA4 0x03u
#define EH_PE_SDATA4 0x0bu
#define EH_PE_PCREL 0x10u
#define EH_PE_DATAREL 0x30u

typedef struct load {
  uint64_t vaddr, filesz, offset;
} load_t;

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
} cfi_file_t;

struct zxs_cfi_unwinder {
  cfi_file_t** files;  // each allocated on its own: spaces point at them
  size_t count, cap;
};

typedef struct space_module {
  const cfi_file_t* file;
  uint64_t bias, start, end;  // runtime [start, end)
} space_module_t;

struct zxs_cfi_space {
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
    if (type == PT_LOAD_TYPE && offset <= f->size && filesz <= f->size - offset) {
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
  return f->load_count > 0;
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

zxs_cfi_unwinder_t* zxs_cfi_unwinder_new(void) { return calloc(1, sizeof(zxs_cfi_unwinder_t)); }

void zxs_cfi_unwinder_free(zxs_cfi_unwinder_t* u) {
  if (u == NULL) return;
  for (size_t i = 0; i < u->count; i++) {
    if (u->files[i]->owned) {
      free((void*)u->files[i]->data);
    } else if (u->files[i]->data != NULL) {
      munmap((void*)u->files[i]->data, u->files[i]->size);
    }
    free(u->files[i]->loads);
    free(u->files[i]->path);
    free(u->files[i]);
  }
  free(u->files);
  free(u);
}

// --- Memory of the sampled process ------------------------------------------------------------

static const space_module_t* find_module(const zxs_cfi_space_t* s, uint64_t addr) {
  size_t lo = 0, hi = s->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->modules[mid].start <= addr) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0 || addr >= s->modules[lo - 1].end) return NULL;
  return &s->modules[lo - 1];
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
    if (vaddr >= l->vaddr && vaddr - l->vaddr + 8 <= l->filesz) {
      memcpy(out, m->file->data + l->offset + (vaddr - l->vaddr), 8);
      return true;
    }
  }
  return false;
}

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
  if (m == NULL || m->file->hdr_vaddr == 0) return -UNW_ENOINFO;
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

zxs_cfi_space_t* zxs_cfi_space_new(zxs_cfi_unwinder_t* u, const zxs_cfi_mapping_t* mappings,
                                   size_t count) {
  zxs_cfi_space_t* s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
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
    if (f == NULL || f->data == NULL ||
        !mapping_bias(f, mappings[i].start, mappings[i].pgoff, &bias)) {
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
  s->regs = regs;
  s->copy = copy;
  s->copy_len = copy != NULL ? copy_len : 0;
  s->copy_start = regs->r[UNW_X86_64_RSP];
  s->read_past_copy = false;
  unw_cursor_t cursor;
  if (max > 0 && unw_init_remote(&cursor, s->as, s) == 0) {
    for (;;) {
      unw_word_t ip;
      if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
      pcs[n++] = ip;
      if (n == max) {
        cut = true;  // a further frame may remain: we do not look
        break;
      }
      int step = unw_step(&cursor);
      if (step <= 0) {
        cut = step < 0 && s->read_past_copy;
        break;
      }
    }
  }
  if (n == 0 && max > 0) pcs[n++] = regs->r[UNW_X86_64_RIP];
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
