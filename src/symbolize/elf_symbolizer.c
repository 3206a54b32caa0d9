// ELF symbol tables, build ID and (optionally, via libdw) line tables for one file; Mach-O
// symbol tables, UUID and segments (macOS).
//
// The file is read with pread into owned buffers rather than mapped: a file truncated while
// mapped would fault (SIGBUS), and only headers, symbol and string tables and notes are needed.
// Fields are decoded byte by byte as little-endian, so the code is independent of host byte
// order and alignment, and of <elf.h> (absent on some hosts).
#define _GNU_SOURCE

#include "elf_symbolizer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array_grow.h"
#include "elf_notes.h"
#include "sorted_search.h"

#if defined(ZXS_HAVE_LIBDW) && ZXS_HAVE_LIBDW
#define ZXS_ELF_USE_LIBDW 1
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#else
#define ZXS_ELF_USE_LIBDW 0
#endif

// ELF constants (the spec's values; prefixed so they cannot clash with <elf.h>, which libdw
// pulls in).
#define E_EHDR_SIZE 64u
#define E_PHDR_SIZE 56u
#define E_SHDR_SIZE 64u
#define E_SYM_SIZE 24u
#define E_ELFCLASS32 1u
#define E_ELFCLASS64 2u
#define E_ELFDATA2LSB 1u
#define E_ELFDATA2MSB 2u
#define E_EV_CURRENT 1u
#define E_PT_LOAD 1u
#define E_PT_NOTE 4u
#define E_PN_XNUM 0xffffu
#define E_SHT_NULL 0u
#define E_SHT_SYMTAB 2u
#define E_SHT_STRTAB 3u
#define E_SHT_NOTE 7u
#define E_SHT_NOBITS 8u
#define E_SHT_DYNSYM 11u
#define E_SHF_EXECINSTR 0x4u
#define E_SHN_UNDEF 0u
#define E_SHN_LORESERVE 0xff00u
#define E_SHN_XINDEX 0xffffu
#define E_STT_NOTYPE 0u
#define E_STT_FUNC 2u
#define E_STT_GNU_IFUNC 10u
#define E_STB_GLOBAL 1u
#define E_STB_WEAK 2u
#define E_STB_GNU_UNIQUE 10u

// Note sections are small; a larger one is read only up to this (a build ID comes first).
#define MAX_NOTE_READ (64u * 1024u)
// How many preceding symbols a lookup tries when the nearest one ends before the address
// (symbols nested in a larger one, e.g. a local label symbol inside a function).
#define MAX_ENCLOSING_STEPS 16u
// Nesting of scopes (namespaces, subprograms, blocks, inlined calls) followed to an address.
#define MAX_SCOPE_DEPTH 64

typedef struct sym_entry {
  uint64_t address;
  uint64_t size;  // st_size
  uint64_t end;   // exclusive end used for lookups
  uint64_t section_end;
  const char* name;
  uint8_t source;  // zxs_elf_symbol_source_t
  uint8_t rank;    // higher wins among aliases at one address
} sym_entry_t;

struct zxs_elf {
  char* path;  // NULL for memory images
  uint8_t build_id[ZXS_BUILD_ID_MAX];
  size_t build_id_size;
  uint8_t derived_id[ZXS_DERIVED_ID_SIZE];  // the module ID where there is no build ID
  bool has_derived_id;
  zxs_segment_t* segments;  // PT_LOAD segments, in program-header order
  size_t segment_count;
  bool has_symtab;  // a .symtab (not only .dynsym)
  bool is_macho;    // a Mach-O file: names from LC_SYMTAB, no DWARF lookups
  char* debuglink;  // .gnu_debuglink's file name, if any
  char** strtabs;   // owned string tables the names point into
  size_t strtab_count;
  sym_entry_t* syms;
  size_t sym_count;
#if ZXS_ELF_USE_LIBDW
  bool dwfl_tried;
  Dwfl* dwfl;
  Dwfl_Module* dwfl_module;
  struct cu_range* cu_ranges;  // sorted by start
  size_t cu_range_count;
  Dwarf_Addr dwfl_bias;             // Dwfl address = file address + dwfl_bias
  zxs_elf_inline_frame_t* inlined;  // the last lookup's inline frames
  size_t inlined_capacity;
#endif
};

typedef struct reader {
  int fd;              // -1 for memory
  const uint8_t* mem;  // NULL for files
  uint64_t size;
} reader_t;

typedef struct section {
  uint32_t name;  // offset in the section-name table
  uint32_t type;
  uint64_t flags;
  uint64_t addr;
  uint64_t offset;
  uint64_t size;
  uint32_t link;
  uint64_t addralign;
  uint64_t entsize;
} section_t;

static uint16_t le16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static uint32_t le32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t le64(const uint8_t* p) { return (uint64_t)le32(p) | ((uint64_t)le32(p + 4) << 32); }

// True if [offset, offset + len) lies within the image.
static bool in_bounds(const reader_t* r, uint64_t offset, uint64_t len) {
  return offset <= r->size && len <= r->size - offset;
}

static zx_status_t read_at(const reader_t* r, uint64_t offset, void* buf, size_t len) {
  if (!in_bounds(r, offset, len)) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  if (r->mem != NULL) {
    memcpy(buf, r->mem + offset, len);
    return ZX_OK;
  }
  uint8_t* out = buf;
  while (len > 0) {
    if (offset > (uint64_t)INT64_MAX) {
      return ZX_ERR_IO_DATA_INTEGRITY;
    }
    ssize_t n = pread(r->fd, out, len, (off_t)offset);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return ZX_ERR_IO;
    }
    if (n == 0) {
      return ZX_ERR_IO_DATA_INTEGRITY;  // the file shrank since fstat
    }
    out += n;
    len -= (size_t)n;
    offset += (uint64_t)n;
  }
  return ZX_OK;
}

// Reads [offset, offset + len) into a new buffer with a NUL after it (so string tables are
// always terminated).
static zx_status_t read_alloc(const reader_t* r, uint64_t offset, uint64_t len, uint8_t** out) {
  if (!in_bounds(r, offset, len)) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  if (len >= SIZE_MAX) {
    return ZX_ERR_NO_MEMORY;
  }
  uint8_t* buf = malloc((size_t)len + 1);
  if (buf == NULL) {
    return ZX_ERR_NO_MEMORY;
  }
  zx_status_t status = read_at(r, offset, buf, (size_t)len);
  if (status != ZX_OK) {
    free(buf);
    return status;
  }
  buf[len] = 0;
  *out = buf;
  return ZX_OK;
}

// Looks for the note `which` in the notes at [offset, offset + size): the GNU build ID is kept,
// Go's build ID becomes the derived ID (modules.h).
static zx_status_t read_id_note(zxs_elf_t* elf, const reader_t* r, uint64_t offset, uint64_t size,
                                uint64_t align, zxs_elf_id_note_t which, bool* found) {
  if (size > MAX_NOTE_READ) {
    size = MAX_NOTE_READ;
  }
  uint8_t* notes = NULL;
  zx_status_t status = read_alloc(r, offset, size, &notes);
  if (status != ZX_OK) {
    return status;
  }
  const uint8_t* desc = NULL;
  size_t desc_size = 0;
  *found = zxs_elf_notes_find(notes, size, align, ZXS_ELF_LITTLE_ENDIAN, which, &desc, &desc_size);
  if (*found && which == ZXS_ELF_NOTE_GNU_BUILD_ID && desc_size > 0 &&
      desc_size <= sizeof(elf->build_id)) {
    memcpy(elf->build_id, desc, desc_size);
    elf->build_id_size = desc_size;
  } else if (*found && which == ZXS_ELF_NOTE_GO_BUILD_ID && desc_size > 0) {
    zxs_derived_id(ZXS_ID_FROM_GO_BUILD_ID, desc, desc_size, elf->derived_id);
    elf->has_derived_id = true;
  }
  free(notes);
  return ZX_OK;
}

static int leading_underscores(const char* name) {
  int n = 0;
  while (name[n] == '_') {
    n++;
  }
  return n;
}

static int compare_syms(const void* a, const void* b) {
  const sym_entry_t* sa = a;
  const sym_entry_t* sb = b;
  if (sa->address != sb->address) {
    return sa->address < sb->address ? -1 : 1;
  }
  if (sa->rank != sb->rank) {
    return sa->rank > sb->rank ? -1 : 1;
  }
  int ua = leading_underscores(sa->name);
  int ub = leading_underscores(sb->name);
  if (ua != ub) {
    return ua < ub ? -1 : 1;
  }
  if (sa->source != sb->source) {
    return sa->source < sb->source ? -1 : 1;  // .symtab before .dynsym
  }
  return strcmp(sa->name, sb->name);
}

static uint8_t symbol_rank(uint64_t size, uint8_t bind, uint8_t type) {
  uint8_t rank = 0;
  if (size > 0) {
    rank |= 8;
  }
  if (bind == E_STB_GLOBAL || bind == E_STB_GNU_UNIQUE) {
    rank |= 4;
  } else if (bind == E_STB_WEAK) {
    rank |= 2;
  }
  if (type != E_STT_NOTYPE) {
    rank |= 1;
  }
  return rank;
}

// Whether a defined symbol of `type` named `name` in section `shndx` is code: a function, or an
// assembly entry point. *section_end: where that section ends (UINT64_MAX when unknown).
static bool symbol_is_code(const section_t* sections, size_t shnum, const char* name, uint8_t type,
                           uint16_t shndx, uint64_t* section_end) {
  *section_end = UINT64_MAX;
  if (shndx == E_SHN_XINDEX) {
    // The real index is in SHT_SYMTAB_SHNDX; without reading it, trust typed functions only.
    return type == E_STT_FUNC || type == E_STT_GNU_IFUNC;
  }
  if (shndx >= E_SHN_LORESERVE || shndx >= shnum) {
    return false;  // absolute or common (not code), or no such section
  }
  const section_t* in = &sections[shndx];
  if (type == E_STT_NOTYPE) {
    // Untyped symbols in code are hand-written assembly entry points; skip local labels and
    // ARM/AArch64 mapping symbols ($x, $d).
    const bool exec = (in->flags & E_SHF_EXECINSTR) != 0;
    if (!exec || name[0] == '$' || (name[0] == '.' && name[1] == 'L')) {
      return false;
    }
  } else if (type != E_STT_FUNC && type != E_STT_GNU_IFUNC) {
    return false;
  }
  if (in->size <= UINT64_MAX - in->addr) {
    *section_end = in->addr + in->size;
  }
  return true;
}

// Reads the string table of `size` bytes at `offset` and keeps it with the file (the symbols'
// names point into it).
static zx_status_t keep_string_table(zxs_elf_t* elf, const reader_t* r, uint64_t offset,
                                     uint64_t size, uint8_t** strtab) {
  char** strtabs = realloc(elf->strtabs, (elf->strtab_count + 1) * sizeof(*strtabs));
  if (strtabs == NULL) {
    return ZX_ERR_NO_MEMORY;
  }
  elf->strtabs = strtabs;
  zx_status_t status = read_alloc(r, offset, size, strtab);
  if (status != ZX_OK) {
    return status;
  }
  elf->strtabs[elf->strtab_count++] = (char*)*strtab;
  return ZX_OK;
}

// Appends the function symbols of symbol table `sec` (whose string table is sections[link]).
static zx_status_t add_symbol_table(zxs_elf_t* elf, const reader_t* r, const section_t* sections,
                                    size_t shnum, const section_t* sec, size_t* capacity) {
  if (sec->entsize != E_SYM_SIZE || sec->link >= shnum) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  const section_t* str = &sections[sec->link];
  if (str->type != E_SHT_STRTAB) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  uint64_t count = sec->size / E_SYM_SIZE;
  if (count == 0) {
    return ZX_OK;
  }
  uint8_t* strtab = NULL;
  zx_status_t status = keep_string_table(elf, r, str->offset, str->size, &strtab);
  if (status != ZX_OK) {
    return status;
  }
  uint8_t* table = NULL;
  status = read_alloc(r, sec->offset, count * E_SYM_SIZE, &table);
  if (status != ZX_OK) {
    return status;
  }
  uint8_t source = sec->type == E_SHT_SYMTAB ? ZXS_ELF_SOURCE_SYMTAB : ZXS_ELF_SOURCE_DYNSYM;
  for (uint64_t i = 1; i < count; i++) {  // entry 0 is the null symbol
    const uint8_t* s = table + i * E_SYM_SIZE;
    uint32_t name = le32(s);
    uint8_t type = s[4] & 0xf;
    uint8_t bind = s[4] >> 4;
    uint16_t shndx = le16(s + 6);
    uint64_t value = le64(s + 8);
    uint64_t size = le64(s + 16);
    uint64_t section_end;
    if (name == 0 || name >= str->size || strtab[name] == '\0' || value == 0 ||
        size > UINT64_MAX - value || shndx == E_SHN_UNDEF ||
        !symbol_is_code(sections, shnum, (const char*)strtab + name, type, shndx, &section_end)) {
      continue;
    }
    if (!zxs_array_grow((void**)&elf->syms, capacity, elf->sym_count + 1, sizeof(*elf->syms))) {
      free(table);
      return ZX_ERR_NO_MEMORY;
    }
    elf->syms[elf->sym_count++] = (sym_entry_t){.address = value,
                                                .size = size,
                                                .end = 0,
                                                .section_end = section_end,
                                                .name = (const char*)strtab + name,
                                                .source = source,
                                                .rank = symbol_rank(size, bind, type)};
  }
  free(table);
  return ZX_OK;
}

// Sorts, keeps the best alias per address, and settles each symbol's lookup end.
static void finish_symbols(zxs_elf_t* elf) {
  if (elf->sym_count == 0) {
    return;
  }
  qsort(elf->syms, elf->sym_count, sizeof(elf->syms[0]), compare_syms);
  size_t kept = 0;
  for (size_t i = 0; i < elf->sym_count; i++) {
    if (kept > 0 && elf->syms[kept - 1].address == elf->syms[i].address) {
      continue;
    }
    elf->syms[kept++] = elf->syms[i];
  }
  elf->sym_count = kept;
  for (size_t i = 0; i < kept; i++) {
    sym_entry_t* e = &elf->syms[i];
    if (e->size > 0) {
      e->end = e->address + e->size;
      continue;
    }
    // Unsized: up to the next symbol, but not past its section.
    uint64_t end = e->section_end;
    if (i + 1 < kept && elf->syms[i + 1].address < end) {
      end = elf->syms[i + 1].address;
    }
    if (end == UINT64_MAX && e->section_end == UINT64_MAX) {
      end = e->address + 1;  // nothing bounds it: the exact address only
    }
    e->end = end > e->address ? end : e->address + 1;
  }
}

// The file name in .gnu_debuglink (name, NUL, padding, CRC), for a file without .symtab.
static zx_status_t read_debuglink(zxs_elf_t* elf, const reader_t* r, const section_t* sections,
                                  uint64_t shnum, uint64_t shstrndx) {
  static const char kName[] = ".gnu_debuglink";
  if (shstrndx == 0 || shstrndx >= shnum) return ZX_OK;
  const section_t* names = &sections[shstrndx];
  for (uint64_t i = 1; i < shnum; i++) {
    char name[sizeof(kName)];
    if (sections[i].name > names->size || names->size - sections[i].name < sizeof(name) ||
        read_at(r, names->offset + sections[i].name, name, sizeof(name)) != ZX_OK ||
        memcmp(name, kName, sizeof(name)) != 0 || sections[i].size < 2 || sections[i].size > 4096) {
      continue;
    }
    uint8_t* data = NULL;
    zx_status_t status = read_alloc(r, sections[i].offset, sections[i].size, &data);
    if (status != ZX_OK) return status;
    size_t len = strnlen((const char*)data, (size_t)sections[i].size);
    if (len > 0 && len < sections[i].size && memchr(data, '/', len) == NULL) {
      elf->debuglink = strndup((const char*)data, len);
    }
    free(data);
    return ZX_OK;  // without memory for the name, the file is read without its debug link
  }
  return ZX_OK;
}

// What parse() needs of the ELF header.
typedef struct elf_header {
  uint64_t phoff;
  uint64_t shoff;
  uint16_t phentsize;
  uint64_t phnum;
  uint16_t shentsize;
  uint64_t shnum;
  uint16_t shstrndx;
} elf_header_t;

// Reads and checks the ELF header: a 64-bit little-endian file, or a status saying why not.
static zx_status_t read_header(const reader_t* r, elf_header_t* h) {
  uint8_t eh[E_EHDR_SIZE];
  if (r->size < E_EHDR_SIZE) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  zx_status_t status = read_at(r, 0, eh, sizeof(eh));
  if (status != ZX_OK) {
    return status;
  }
  if (memcmp(eh, "\177ELF", 4) != 0) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  if ((eh[4] != E_ELFCLASS32 && eh[4] != E_ELFCLASS64) ||
      (eh[5] != E_ELFDATA2LSB && eh[5] != E_ELFDATA2MSB) || eh[6] != E_EV_CURRENT) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  if (eh[4] != E_ELFCLASS64 || eh[5] != E_ELFDATA2LSB) {
    return ZX_ERR_NOT_SUPPORTED;
  }
  *h = (elf_header_t){.phoff = le64(eh + 32),
                      .shoff = le64(eh + 40),
                      .phentsize = le16(eh + 54),
                      .phnum = le16(eh + 56),
                      .shentsize = le16(eh + 58),
                      .shnum = le16(eh + 60),
                      .shstrndx = le16(eh + 62)};
  return le16(eh + 52) < E_EHDR_SIZE ? ZX_ERR_IO_DATA_INTEGRITY : ZX_OK;
}

static void decode_section(const uint8_t* s, section_t* sec) {
  sec->name = le32(s);
  sec->type = le32(s + 4);
  sec->flags = le64(s + 8);
  sec->addr = le64(s + 16);
  sec->offset = le64(s + 24);
  sec->size = le64(s + 32);
  sec->link = le32(s + 40);
  sec->addralign = le64(s + 48);
  sec->entsize = le64(s + 56);
}

// The section headers into *out (calloc'd; NULL and h->shnum = 0 when the file has none).
// Counts of 0xff00 and more live in section 0 (extended numbering), which also fixes h->phnum.
// Every section with file contents must be in the file: a truncated file is rejected here,
// before anything (libdw included) reads it.
static zx_status_t read_sections(const reader_t* r, elf_header_t* h, section_t** out) {
  *out = NULL;
  if (h->shoff == 0) {
    h->shnum = 0;
    return ZX_OK;
  }
  if (h->shentsize != E_SHDR_SIZE) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  uint8_t sh0[E_SHDR_SIZE];
  zx_status_t status = read_at(r, h->shoff, sh0, sizeof(sh0));
  if (status != ZX_OK) {
    return status;
  }
  if (h->shnum == 0) {
    h->shnum = le64(sh0 + 32);
  }
  if (h->phnum == E_PN_XNUM) {
    h->phnum = le32(sh0 + 44);
  }
  if (h->shnum == 0 || h->shnum > (r->size - h->shoff) / E_SHDR_SIZE) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  if (h->shnum > SIZE_MAX / sizeof(section_t)) {
    return ZX_ERR_NO_MEMORY;
  }
  uint8_t* raw = NULL;
  status = read_alloc(r, h->shoff, h->shnum * E_SHDR_SIZE, &raw);
  if (status != ZX_OK) {
    return status;
  }
  section_t* sections = calloc((size_t)h->shnum, sizeof(*sections));
  if (sections == NULL) {
    free(raw);
    return ZX_ERR_NO_MEMORY;
  }
  for (uint64_t i = 0; i < h->shnum; i++) {
    section_t* sec = &sections[i];
    decode_section(raw + i * E_SHDR_SIZE, sec);
    if (i > 0 && sec->type != E_SHT_NULL && sec->type != E_SHT_NOBITS &&
        !in_bounds(r, sec->offset, sec->size)) {
      status = ZX_ERR_IO_DATA_INTEGRITY;
    }
  }
  free(raw);
  *out = sections;  // the caller frees them, even on error
  return status;
}

// The program headers into *out (malloc'd; NULL when there are none). Loaded and note segments
// must be in the file too.
static zx_status_t read_program_headers(const reader_t* r, const elf_header_t* h, uint8_t** out) {
  *out = NULL;
  if (h->phnum == 0) {
    return ZX_OK;
  }
  if (h->phentsize != E_PHDR_SIZE || h->phoff == 0 || h->phnum > r->size / E_PHDR_SIZE) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  zx_status_t status = read_alloc(r, h->phoff, h->phnum * E_PHDR_SIZE, out);
  for (uint64_t i = 0; status == ZX_OK && i < h->phnum; i++) {
    const uint8_t* p = *out + i * E_PHDR_SIZE;
    uint32_t type = le32(p);
    if ((type == E_PT_LOAD || type == E_PT_NOTE) && !in_bounds(r, le64(p + 8), le64(p + 32))) {
      status = ZX_ERR_IO_DATA_INTEGRITY;
    }
  }
  return status;
}

// Loaded segments: what a module recorded as mappings needs to find its load bias.
static zx_status_t add_load_segments(zxs_elf_t* elf, const uint8_t* phdrs, uint64_t phnum) {
  size_t loads = 0;
  for (uint64_t i = 0; i < phnum; i++) {
    loads += le32(phdrs + i * E_PHDR_SIZE) == E_PT_LOAD;
  }
  if (loads > 0 && (elf->segments = calloc(loads, sizeof(*elf->segments))) == NULL) {
    return ZX_ERR_NO_MEMORY;
  }
  for (uint64_t i = 0; i < phnum; i++) {
    const uint8_t* p = phdrs + i * E_PHDR_SIZE;
    if (le32(p) != E_PT_LOAD) continue;
    const uint32_t pf = le32(p + 4);  // PF_X 1, PF_W 2, PF_R 4
    elf->segments[elf->segment_count++] =
        (zxs_segment_t){.vaddr = le64(p + 16),
                        .memsz = le64(p + 40),
                        .offset = le64(p + 8),
                        .flags = ((pf & 4) ? ZXS_SEGMENT_R : 0) | ((pf & 2) ? ZXS_SEGMENT_W : 0) |
                                 ((pf & 1) ? ZXS_SEGMENT_X : 0)};
  }
  return ZX_OK;
}

// The note `which`: loaded notes first (what the running module has), then note sections.
static zx_status_t find_id_note(zxs_elf_t* elf, const reader_t* r, const uint8_t* phdrs,
                                uint64_t phnum, const section_t* sections, uint64_t shnum,
                                zxs_elf_id_note_t which) {
  bool found = false;
  zx_status_t status = ZX_OK;
  for (uint64_t i = 0; status == ZX_OK && !found && i < phnum; i++) {
    const uint8_t* p = phdrs + i * E_PHDR_SIZE;
    if (le32(p) == E_PT_NOTE) {
      status = read_id_note(elf, r, le64(p + 8), le64(p + 32), le64(p + 48), which, &found);
    }
  }
  for (uint64_t i = 1; status == ZX_OK && !found && i < shnum; i++) {
    if (sections[i].type == E_SHT_NOTE) {
      status = read_id_note(elf, r, sections[i].offset, sections[i].size, sections[i].addralign,
                            which, &found);
    }
  }
  return status;
}

// The GNU build ID, else (a Go binary) Go's build ID.
static zx_status_t find_build_id(zxs_elf_t* elf, const reader_t* r, const uint8_t* phdrs,
                                 uint64_t phnum, const section_t* sections, uint64_t shnum) {
  zx_status_t status =
      find_id_note(elf, r, phdrs, phnum, sections, shnum, ZXS_ELF_NOTE_GNU_BUILD_ID);
  if (status == ZX_OK && elf->build_id_size == 0) {
    status = find_id_note(elf, r, phdrs, phnum, sections, shnum, ZXS_ELF_NOTE_GO_BUILD_ID);
  }
  return status;
}

// The derived ID of a whole image (modules.h): every byte, read in chunks.
static zx_status_t hash_image(const reader_t* r, uint8_t id[ZXS_DERIVED_ID_SIZE]) {
  zxs_id_hash_t hash;
  zxs_id_hash_init(&hash, ZXS_ID_FROM_FILE);
  if (r->mem != NULL) {
    zxs_id_hash_add(&hash, r->mem, (size_t)r->size);
  } else {
    enum { CHUNK = 1 << 16 };
    uint8_t* chunk = malloc(CHUNK);
    if (chunk == NULL) {
      return ZX_ERR_NO_MEMORY;
    }
    for (uint64_t at = 0; at < r->size;) {
      const size_t n = r->size - at < CHUNK ? (size_t)(r->size - at) : CHUNK;
      zx_status_t status = read_at(r, at, chunk, n);
      if (status != ZX_OK) {
        free(chunk);
        return status;
      }
      zxs_id_hash_add(&hash, chunk, n);
      at += n;
    }
    free(chunk);
  }
  zxs_id_hash_finish(&hash, id);
  return ZX_OK;
}

// Symbols from .symtab and .dynsym; the debug link of a file without .symtab.
static zx_status_t read_symbols(zxs_elf_t* elf, const reader_t* r, const section_t* sections,
                                const elf_header_t* h) {
  zx_status_t status = ZX_OK;
  size_t capacity = 0;
  for (uint64_t i = 1; status == ZX_OK && i < h->shnum; i++) {
    if (sections[i].type == E_SHT_SYMTAB || sections[i].type == E_SHT_DYNSYM) {
      status = add_symbol_table(elf, r, sections, (size_t)h->shnum, &sections[i], &capacity);
      elf->has_symtab = elf->has_symtab || sections[i].type == E_SHT_SYMTAB;
    }
  }
  if (status == ZX_OK && !elf->has_symtab) {
    status = read_debuglink(elf, r, sections, h->shnum, h->shstrndx);
  }
  if (status == ZX_OK) {
    finish_symbols(elf);
  }
  return status;
}

// --- Mach-O (macOS): segments, LC_UUID as the build ID, LC_SYMTAB's defined symbols ---------

#define MACHO_MAGIC_64 0xfeedfacfu   // as read little-endian
#define MACHO_FAT_MAGIC 0xcafebabeu  // as read big-endian
#define MACHO_HEADER_SIZE 32u
#define MACHO_LC_SYMTAB 0x2u
#define MACHO_LC_SEGMENT_64 0x19u
#define MACHO_LC_UUID 0x1bu
#define MACHO_SECTION_64_SIZE 80u
#define MACHO_NLIST_64_SIZE 16u
#define MACHO_N_STAB 0xe0u
#define MACHO_N_TYPE 0x0eu
#define MACHO_N_SECT 0x0eu
#define MACHO_N_EXT 0x01u
#define MACHO_S_ATTR_PURE_INSTRUCTIONS 0x80000000u
#define MACHO_S_ATTR_SOME_INSTRUCTIONS 0x00000400u
#define MACHO_MAX_SECTIONS 255u  // n_sect is one byte
#if defined(__aarch64__)
#define MACHO_HOST_CPU 0x0100000cu  // CPU_TYPE_ARM64
#else
#define MACHO_HOST_CPU 0x01000007u  // CPU_TYPE_X86_64
#endif

static uint32_t be32(const uint8_t* p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

// Where the 64-bit Mach-O image starts: 0 for a thin file; in a universal file, the slice of
// this host's architecture, else the first 64-bit one. ZX_ERR_NOT_SUPPORTED when it has none.
static zx_status_t macho_slice(const reader_t* r, uint64_t* base) {
  uint8_t head[8];
  zx_status_t status = read_at(r, 0, head, sizeof(head));
  if (status != ZX_OK) return status;
  *base = 0;
  if (be32(head) != MACHO_FAT_MAGIC) return ZX_OK;
  const uint32_t count = be32(head + 4);
  bool found = false;
  for (uint32_t i = 0; i < count && i < 64; i++) {
    uint8_t arch[20];  // cputype, cpusubtype, offset, size, align (big-endian)
    status = read_at(r, 8 + (uint64_t)i * sizeof(arch), arch, sizeof(arch));
    if (status != ZX_OK) return status;
    const uint32_t cpu = be32(arch);
    if ((cpu & 0x01000000u) == 0) continue;  // not 64-bit
    if (!found || cpu == MACHO_HOST_CPU) *base = be32(arch + 8);
    found = true;
    if (cpu == MACHO_HOST_CPU) break;
  }
  return found ? ZX_OK : ZX_ERR_NOT_SUPPORTED;
}

// Appends the defined symbols of section-relative type from LC_SYMTAB that lie in a section of
// code (`code`: n_sect -> [start, end), end 0 for a section that is not code).
static zx_status_t macho_symbols(zxs_elf_t* elf, const reader_t* r, uint64_t base,
                                 const uint8_t* cmd, const uint64_t (*code)[2]) {
  const uint64_t symoff = le32(cmd + 8), nsyms = le32(cmd + 12);
  const uint64_t stroff = le32(cmd + 16), strsize = le32(cmd + 20);
  if (nsyms == 0) return ZX_OK;
  uint8_t* strtab = NULL;
  zx_status_t status = keep_string_table(elf, r, base + stroff, strsize, &strtab);
  if (status != ZX_OK) return status;
  uint8_t* table = NULL;
  status = read_alloc(r, base + symoff, nsyms * MACHO_NLIST_64_SIZE, &table);
  if (status != ZX_OK) return status;
  size_t capacity = 0;
  for (uint64_t i = 0; i < nsyms; i++) {
    const uint8_t* n = table + i * MACHO_NLIST_64_SIZE;
    const uint32_t strx = le32(n);
    const uint8_t type = n[4], sect = n[5];
    const uint64_t value = le64(n + 8);
    if ((type & MACHO_N_STAB) != 0 || (type & MACHO_N_TYPE) != MACHO_N_SECT || strx == 0 ||
        strx >= strsize || sect == 0 || code[sect][1] == 0 || value < code[sect][0] ||
        value >= code[sect][1]) {
      continue;
    }
    const char* name = (const char*)strtab + strx;
    if (name[0] == 'l' || name[0] == 'L') continue;  // assembler-local labels (ltmp0, L...)
    if (name[0] == '_') name++;                      // the prefix Darwin gives C names
    if (name[0] == '\0') continue;
    if (!zxs_array_grow((void**)&elf->syms, &capacity, elf->sym_count + 1, sizeof(*elf->syms))) {
      free(table);
      return ZX_ERR_NO_MEMORY;
    }
    elf->syms[elf->sym_count++] =
        (sym_entry_t){.address = value,
                      .section_end = code[sect][1],
                      .name = name,
                      .source = ZXS_ELF_SOURCE_SYMTAB,
                      .rank = (uint8_t)(((type & MACHO_N_EXT) ? 4 : 0) | 1)};
  }
  free(table);
  return ZX_OK;
}

// A 64-bit Mach-O file (thin or universal): its segments, LC_UUID and function symbols.
static zx_status_t parse_macho(zxs_elf_t* elf, const reader_t* r) {
  uint64_t base = 0;
  zx_status_t status = macho_slice(r, &base);
  if (status != ZX_OK) return status;
  uint8_t h[MACHO_HEADER_SIZE];
  status = read_at(r, base, h, sizeof(h));
  if (status != ZX_OK) return status;
  if (le32(h) != MACHO_MAGIC_64) return ZX_ERR_IO_DATA_INTEGRITY;
  const uint32_t ncmds = le32(h + 16), sizeofcmds = le32(h + 20);
  uint8_t* cmds = NULL;
  status = read_alloc(r, base + MACHO_HEADER_SIZE, sizeofcmds, &cmds);
  if (status != ZX_OK) return status;
  elf->is_macho = true;
  elf->has_symtab = true;  // no separate debug file to look for
  // Code sections by n_sect (1-based, in load-command order): [start, end), or end 0.
  uint64_t(*code)[2] = calloc(MACHO_MAX_SECTIONS + 1, sizeof(*code));
  elf->segments = calloc(ncmds > 0 ? ncmds : 1, sizeof(*elf->segments));
  if (code == NULL || elf->segments == NULL) {
    free(code);
    free(cmds);
    return ZX_ERR_NO_MEMORY;
  }
  const uint8_t* symtab = NULL;
  uint32_t sections = 0;
  uint64_t at = 0;
  for (uint32_t i = 0; i < ncmds && status == ZX_OK; i++) {
    if (sizeofcmds - at < 8) {
      status = ZX_ERR_IO_DATA_INTEGRITY;
      break;
    }
    const uint8_t* c = cmds + at;
    const uint32_t cmd = le32(c), size = le32(c + 4);
    if (size < 8 || size > sizeofcmds - at) {
      status = ZX_ERR_IO_DATA_INTEGRITY;
      break;
    }
    if (cmd == MACHO_LC_SEGMENT_64 && size >= 72) {
      const uint32_t prot = le32(c + 60), nsects = le32(c + 64);
      if (prot != 0 && le64(c + 32) > 0) {  // not __PAGEZERO
        elf->segments[elf->segment_count++] = (zxs_segment_t){
            .vaddr = le64(c + 24),
            .memsz = le64(c + 32),
            .offset = le64(c + 40),
            .flags = ((prot & 1) ? ZXS_SEGMENT_R : 0) | ((prot & 2) ? ZXS_SEGMENT_W : 0) |
                     ((prot & 4) ? ZXS_SEGMENT_X : 0)};
      }
      for (uint32_t s = 0; s < nsects && 72 + (uint64_t)(s + 1) * MACHO_SECTION_64_SIZE <= size;
           s++) {
        const uint8_t* sec = c + 72 + (uint64_t)s * MACHO_SECTION_64_SIZE;
        if (++sections > MACHO_MAX_SECTIONS) break;
        const uint64_t addr = le64(sec + 32), len = le64(sec + 40);
        const uint32_t flags = le32(sec + 64);
        if ((flags & (MACHO_S_ATTR_PURE_INSTRUCTIONS | MACHO_S_ATTR_SOME_INSTRUCTIONS)) != 0 &&
            len > 0 && len <= UINT64_MAX - addr) {
          code[sections][0] = addr;
          code[sections][1] = addr + len;
        }
      }
    } else if (cmd == MACHO_LC_UUID && size >= 24) {
      memcpy(elf->build_id, c + 8, 16);
      elf->build_id_size = 16;
    } else if (cmd == MACHO_LC_SYMTAB && size >= 24) {
      symtab = c;
    }
    at += size;
  }
  if (status == ZX_OK && symtab != NULL) {
    status = macho_symbols(elf, r, base, symtab, (const uint64_t(*)[2])code);
  }
  free(code);
  free(cmds);
  if (status == ZX_OK) finish_symbols(elf);
  return status;
}

static bool is_macho(const reader_t* r) {
  uint8_t head[4];
  return read_at(r, 0, head, sizeof(head)) == ZX_OK &&
         (le32(head) == MACHO_MAGIC_64 || be32(head) == MACHO_FAT_MAGIC);
}

static zx_status_t parse(zxs_elf_t* elf, const reader_t* r) {
  if (is_macho(r)) {
    return parse_macho(elf, r);
  }
  elf_header_t h;
  zx_status_t status = read_header(r, &h);
  if (status != ZX_OK) {
    return status;
  }
  section_t* sections = NULL;
  uint8_t* phdrs = NULL;
  status = read_sections(r, &h, &sections);
  if (status == ZX_OK) {
    status = read_program_headers(r, &h, &phdrs);
  }
  if (status == ZX_OK) {
    status = add_load_segments(elf, phdrs, h.phnum);
  }
  if (status == ZX_OK) {
    status = find_build_id(elf, r, phdrs, h.phnum, sections, h.shnum);
  }
  free(phdrs);
  if (status == ZX_OK) {
    status = read_symbols(elf, r, sections, &h);
  }
  free(sections);
  return status;
}

void zxs_elf_close(zxs_elf_t* elf) {
  if (elf == NULL) {
    return;
  }
#if ZXS_ELF_USE_LIBDW
  if (elf->dwfl != NULL) {
    dwfl_end(elf->dwfl);
  }
  free(elf->cu_ranges);
  free(elf->inlined);
#endif
  for (size_t i = 0; i < elf->strtab_count; i++) {
    free(elf->strtabs[i]);
  }
  free(elf->strtabs);
  free(elf->segments);
  free(elf->debuglink);
  free(elf->syms);
  free(elf->path);
  free(elf);
}

static zx_status_t open_image(const reader_t* r, const char* path, zxs_elf_t** out) {
  zxs_elf_t* elf = calloc(1, sizeof(*elf));
  if (elf == NULL) {
    return ZX_ERR_NO_MEMORY;
  }
  if (path != NULL) {
    size_t n = strlen(path) + 1;
    elf->path = malloc(n);
    if (elf->path == NULL) {
      zxs_elf_close(elf);
      return ZX_ERR_NO_MEMORY;
    }
    memcpy(elf->path, path, n);
  }
  zx_status_t status = parse(elf, r);
  if (status == ZX_OK && elf->build_id_size == 0 && !elf->has_derived_id) {
    status = hash_image(r, elf->derived_id);  // the file itself is its ID
    elf->has_derived_id = status == ZX_OK;
  }
  if (status != ZX_OK) {
    zxs_elf_close(elf);
    return status;
  }
  *out = elf;
  return ZX_OK;
}

// Takes the symbol table of `debug` (a separate debug file of the same build) instead of
// `elf`'s .dynsym-only one.
static void adopt_symbols(zxs_elf_t* elf, zxs_elf_t* debug) {
  for (size_t i = 0; i < elf->strtab_count; i++) free(elf->strtabs[i]);
  free(elf->strtabs);
  free(elf->syms);
  elf->strtabs = debug->strtabs;
  elf->strtab_count = debug->strtab_count;
  elf->syms = debug->syms;
  elf->sym_count = debug->sym_count;
  elf->has_symtab = true;
  debug->strtabs = NULL;
  debug->strtab_count = 0;
  debug->syms = NULL;
  debug->sym_count = 0;
}

// A stripped file's names from its separate debug file, where distributions keep them:
// DEBUG/.build-id/xx/rest.debug by build ID, then .gnu_debuglink next to the file, in .debug/
// beside it and under DEBUG (DEBUG: /usr/lib/debug, or $ZXSAMPLER_DEBUG_DIR). A file of another
// build (build IDs differ) is not used. Nothing found is not an error.
static zx_status_t adopt_debug_symbols(zxs_elf_t* elf, const char* path) {
  const char* root = getenv("ZXSAMPLER_DEBUG_DIR");
  if (root == NULL || root[0] == '\0') root = "/usr/lib/debug";
  char dir[PATH_MAX];
  const char* slash = strrchr(path, '/');
  snprintf(dir, sizeof(dir), "%.*s", slash != NULL ? (int)(slash - path) : 1,
           slash != NULL ? path : ".");
  char candidates[4][3 * PATH_MAX];
  size_t count = 0;
  if (elf->build_id_size > 1) {
    char hex[2 * ZXS_BUILD_ID_MAX + 1];
    for (size_t i = 0; i < elf->build_id_size; i++) {
      snprintf(hex + 2 * i, 3, "%02x", elf->build_id[i]);
    }
    snprintf(candidates[count++], sizeof(candidates[0]), "%s/.build-id/%.2s/%s.debug", root, hex,
             hex + 2);
  }
  if (elf->debuglink != NULL) {
    snprintf(candidates[count++], sizeof(candidates[0]), "%s/%s", dir, elf->debuglink);
    snprintf(candidates[count++], sizeof(candidates[0]), "%s/.debug/%s", dir, elf->debuglink);
    snprintf(candidates[count++], sizeof(candidates[0]), "%s%s/%s", root, dir, elf->debuglink);
  }
  for (size_t i = 0; i < count; i++) {
    if (strcmp(candidates[i], path) == 0) continue;
    zxs_elf_t* debug = NULL;
    if (zxs_elf_open(candidates[i], &debug) != ZX_OK) continue;
    bool same =
        debug->has_symtab && (elf->build_id_size == 0 ||
                              (debug->build_id_size == elf->build_id_size &&
                               memcmp(debug->build_id, elf->build_id, elf->build_id_size) == 0));
    if (same) adopt_symbols(elf, debug);
    zxs_elf_close(debug);
    if (same) break;
  }
  return ZX_OK;
}

// zxs_elf_open() without looking for a separate debug file.
static zx_status_t open_file(const char* path, zxs_elf_t** out) {
  if (path == NULL || out == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  *out = NULL;
  // O_NONBLOCK: opening a FIFO must not hang; it is then rejected as not a regular file.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    switch (errno) {
      case ENOENT:
      case ENOTDIR:
        return ZX_ERR_NOT_FOUND;
      case EACCES:
      case EPERM:
        return ZX_ERR_ACCESS_DENIED;
      case ENOMEM:
        return ZX_ERR_NO_MEMORY;
      default:
        return ZX_ERR_IO;
    }
  }
  struct stat st;
  zx_status_t status = ZX_OK;
  if (fstat(fd, &st) != 0) {
    status = ZX_ERR_IO;
  } else if (!S_ISREG(st.st_mode)) {
    status = ZX_ERR_NOT_FILE;
  } else {
    reader_t r = {.fd = fd, .mem = NULL, .size = (uint64_t)st.st_size};
    status = open_image(&r, path, out);
  }
  close(fd);
  return status;
}

zx_status_t zxs_elf_open(const char* path, zxs_elf_t** out) {
  zx_status_t status = open_file(path, out);
  if (status == ZX_OK && !(*out)->has_symtab) {
    status = adopt_debug_symbols(*out, path);
  }
  return status;
}

zx_status_t zxs_elf_open_file_only(const char* path, zxs_elf_t** out) {
  return open_file(path, out);
}

zx_status_t zxs_elf_open_memory(const void* data, size_t size, zxs_elf_t** out) {
  if ((data == NULL && size > 0) || out == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  *out = NULL;
  reader_t r = {.fd = -1, .mem = data, .size = size};
  if (data == NULL) {
    return ZX_ERR_IO_DATA_INTEGRITY;  // an empty image
  }
  return open_image(&r, NULL, out);
}

zx_status_t zxs_elf_build_id(const zxs_elf_t* elf, const uint8_t** id, size_t* size) {
  if (elf == NULL || id == NULL || size == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (elf->build_id_size == 0) {
    return ZX_ERR_NOT_FOUND;
  }
  *id = elf->build_id;
  *size = elf->build_id_size;
  return ZX_OK;
}

zx_status_t zxs_elf_module_id(const zxs_elf_t* elf, const uint8_t** id, size_t* size) {
  if (elf == NULL || id == NULL || size == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (elf->build_id_size > 0) {
    return zxs_elf_build_id(elf, id, size);
  }
  *id = elf->derived_id;
  *size = sizeof(elf->derived_id);
  return ZX_OK;
}

zx_status_t zxs_elf_file_id(const char* path, uint8_t id[ZXS_BUILD_ID_MAX], size_t* size) {
  zxs_elf_t* elf = NULL;
  const uint8_t* found = NULL;
  zx_status_t status = zxs_elf_open_file_only(path, &elf);
  if (status == ZX_OK) {
    status = zxs_elf_module_id(elf, &found, size);
  }
  if (status == ZX_OK) {
    memcpy(id, found, *size);
  }
  zxs_elf_close(elf);
  return status;
}

zx_status_t zxs_elf_load_segments(const zxs_elf_t* elf, const zxs_segment_t** segments,
                                  size_t* count) {
  if (elf == NULL || segments == NULL || count == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  *segments = elf->segments;
  *count = elf->segment_count;
  return ZX_OK;
}

size_t zxs_elf_symbol_count(const zxs_elf_t* elf) { return elf != NULL ? elf->sym_count : 0; }

bool zxs_elf_have_line_info(void) { return ZXS_ELF_USE_LIBDW != 0; }

// The symbol covering `address`, or NULL.
static const sym_entry_t* find_symbol(const zxs_elf_t* elf, uint64_t address) {
  size_t lo = zxs_sorted_count_at_or_below(elf->syms, elf->sym_count, sizeof(elf->syms[0]),
                                           offsetof(sym_entry_t, address), address);
  for (size_t steps = 0; lo > 0 && steps < MAX_ENCLOSING_STEPS; lo--, steps++) {
    const sym_entry_t* e = &elf->syms[lo - 1];
    if (address < e->end) {
      return e;
    }
  }
  return NULL;
}

#if ZXS_ELF_USE_LIBDW

// Dwfl-address ranges of the compile units. Built here because libdw before 0.191 maps
// addresses to CUs only through .debug_aranges, which clang does not emit by default.
typedef struct cu_range {
  Dwarf_Addr start;  // Dwfl addresses, [start, end)
  Dwarf_Addr end;
  Dwarf_Addr bias;  // Dwfl address - DWARF address in this CU
  Dwarf_Die* cu;    // owned by the Dwfl, stable until dwfl_end
} cu_range_t;

static int compare_cu_ranges(const void* a, const void* b) {
  const cu_range_t* ra = a;
  const cu_range_t* rb = b;
  if (ra->start != rb->start) {
    return ra->start < rb->start ? -1 : 1;
  }
  return 0;
}

static void index_cus(zxs_elf_t* elf) {
  size_t capacity = 0;
  Dwarf_Addr bias = 0;
  for (Dwarf_Die* cu = dwfl_module_nextcu(elf->dwfl_module, NULL, &bias); cu != NULL;
       cu = dwfl_module_nextcu(elf->dwfl_module, cu, &bias)) {
    Dwarf_Addr base = 0;
    Dwarf_Addr start = 0;
    Dwarf_Addr end = 0;
    for (ptrdiff_t offset = dwarf_ranges(cu, 0, &base, &start, &end); offset > 0;
         offset = dwarf_ranges(cu, offset, &base, &start, &end)) {
      if (start >= end || end > UINT64_MAX - bias) {
        continue;
      }
      if (!zxs_array_grow((void**)&elf->cu_ranges, &capacity, elf->cu_range_count + 1,
                          sizeof(*elf->cu_ranges))) {
        return;  // keep what was indexed: fewer lines, still correct ones
      }
      elf->cu_ranges[elf->cu_range_count++] =
          (cu_range_t){.start = start + bias, .end = end + bias, .bias = bias, .cu = cu};
    }
  }
  if (elf->cu_range_count > 1) {
    qsort(elf->cu_ranges, elf->cu_range_count, sizeof(elf->cu_ranges[0]), compare_cu_ranges);
  }
}

static const cu_range_t* find_cu(const zxs_elf_t* elf, Dwarf_Addr address) {
  _Static_assert(sizeof(Dwarf_Addr) == sizeof(uint64_t), "cu_range_t keys are 64-bit");
  size_t lo =
      zxs_sorted_count_at_or_below(elf->cu_ranges, elf->cu_range_count, sizeof(elf->cu_ranges[0]),
                                   offsetof(cu_range_t, start), address);
  // Ranges rarely overlap; look a few back in case one nests in another.
  for (size_t steps = 0; lo > 0 && steps < MAX_ENCLOSING_STEPS; lo--, steps++) {
    if (address < elf->cu_ranges[lo - 1].end) {
      return &elf->cu_ranges[lo - 1];
    }
  }
  return NULL;
}

// Sets up libdw for this file on first use. Offline reporting treats the file as not loaded;
// the standard callbacks find separate debug files by build ID or .gnu_debuglink.
static bool dwfl_ready(zxs_elf_t* elf) {
  if (elf->dwfl_tried) {
    return elf->dwfl_module != NULL;
  }
  elf->dwfl_tried = true;
  if (elf->path == NULL || elf->is_macho) {
    return false;
  }
  static const Dwfl_Callbacks callbacks = {
      .find_elf = dwfl_build_id_find_elf,
      .find_debuginfo = dwfl_standard_find_debuginfo,
      .section_address = dwfl_offline_section_address,
  };
  Dwfl* dwfl = dwfl_begin(&callbacks);
  if (dwfl == NULL) {
    return false;
  }
  Dwfl_Module* module = dwfl_report_offline(dwfl, elf->path, elf->path, -1);
  GElf_Addr bias = 0;
  if (dwfl_report_end(dwfl, NULL, NULL) != 0 || module == NULL ||
      dwfl_module_getelf(module, &bias) == NULL) {
    dwfl_end(dwfl);
    return false;
  }
  // The file may have been replaced since it was opened: then its lines would be wrong.
  const unsigned char* bits = NULL;
  GElf_Addr vaddr = 0;
  int len = dwfl_module_build_id(module, &bits, &vaddr);
  if (elf->build_id_size > 0 &&
      (len != (int)elf->build_id_size || memcmp(bits, elf->build_id, elf->build_id_size) != 0)) {
    dwfl_end(dwfl);
    return false;
  }
  elf->dwfl = dwfl;
  elf->dwfl_module = module;
  elf->dwfl_bias = bias;
  index_cus(elf);
  return true;
}

// The name of a DIE, preferring the linkage name (what symbol tables hold), following
// DW_AT_specification / DW_AT_abstract_origin.
static const char* die_function_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* name = NULL;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) != NULL) {
    name = dwarf_formstring(&attr);
  }
  if (name == NULL && dwarf_attr_integrate(die, DW_AT_name, &attr) != NULL) {
    name = dwarf_formstring(&attr);
  }
  return name;
}

// Where an inlined call was made: DW_AT_call_file indexes the line table of the DIE's own unit.
static void call_site(Dwarf_Die* die, const char** file, uint32_t* line, uint32_t* column) {
  *file = NULL;
  *line = 0;
  *column = 0;
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  Dwarf_Die unit;
  Dwarf_Files* files = NULL;
  size_t file_count = 0;
  if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &value) == 0 &&
      dwarf_diecu(die, &unit, NULL, NULL) != NULL &&
      dwarf_getsrcfiles(&unit, &files, &file_count) == 0 && value < file_count) {
    *file = dwarf_filesrc(files, value, NULL, NULL);
  }
  if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &value) == 0 &&
      value <= UINT32_MAX) {
    *line = (uint32_t)value;
  }
  if (dwarf_formudata(dwarf_attr(die, DW_AT_call_column, &attr), &value) == 0 &&
      value <= UINT32_MAX) {
    *column = (uint32_t)value;
  }
}

// DIEs that hold no code themselves but may hold functions that do: Rust (LLVM) nests its
// subprograms in namespaces (`rust_target::{impl#0}`) and types, where C and C++ compilers put
// them at the unit's top level. libdw's dwarf_getscopes never looks inside a DIE without
// addresses, so it found no scope at all in Rust units: no inline frames.
static bool may_hold_code(int tag) {
  switch (tag) {
    case DW_TAG_namespace:
    case DW_TAG_module:
    case DW_TAG_structure_type:
    case DW_TAG_class_type:
    case DW_TAG_union_type:
    case DW_TAG_interface_type:
      return true;
    default:
      return false;
  }
}

// Fills `scopes` from index `depth` with the DIEs under `parent` whose addresses hold `pc`,
// outermost first (the subprogram, then lexical blocks and inlined calls); returns the new
// depth. With `into_containers`, DIEs without addresses that may hold code are searched too,
// `nesting` of them deep.
static int find_scopes(Dwarf_Die* parent, Dwarf_Addr pc, bool into_containers, Dwarf_Die* scopes,
                       int depth, int nesting) {
  Dwarf_Die child;
  if (depth >= MAX_SCOPE_DEPTH || nesting >= MAX_SCOPE_DEPTH || dwarf_child(parent, &child) != 0) {
    return depth;
  }
  do {
    if (dwarf_hasattr(&child, DW_AT_low_pc) || dwarf_hasattr(&child, DW_AT_ranges)) {
      if (dwarf_haspc(&child, pc) > 0) {
        scopes[depth] = child;
        return find_scopes(&scopes[depth], pc, into_containers, scopes, depth + 1, nesting);
      }
    } else if (into_containers && may_hold_code(dwarf_tag(&child)) && dwarf_haschildren(&child)) {
      int found = find_scopes(&child, pc, into_containers, scopes, depth, nesting + 1);
      if (found > depth) {
        return found;
      }
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return depth;
}

// Appends one inline frame to the handle's buffer; false when out of memory (the chain is then
// dropped whole: a partial one would give the outer function a callee's line).
static bool push_inline_frame(zxs_elf_t* elf, size_t count, const zxs_elf_inline_frame_t* frame) {
  if (!zxs_array_grow((void**)&elf->inlined, &elf->inlined_capacity, count + 1,
                      sizeof(*elf->inlined))) {
    return false;
  }
  elf->inlined[count] = *frame;
  return true;
}

static void lookup_dwarf(zxs_elf_t* elf, uint64_t probe, uint64_t address, bool want_name,
                         zxs_elf_location_t* out) {
  if (!dwfl_ready(elf) || probe > UINT64_MAX - elf->dwfl_bias) {
    return;
  }
  Dwarf_Addr dwfl_addr = probe + elf->dwfl_bias;
  const cu_range_t* range = find_cu(elf, dwfl_addr);
  if (range == NULL) {
    return;
  }
  Dwarf_Die* cu = range->cu;
  Dwarf_Addr cu_bias = range->bias;
  Dwarf_Line* line = dwarf_getsrc_die(cu, dwfl_addr - cu_bias);
  if (line != NULL) {
    int lineno = 0;
    int column = 0;
    const char* file = dwarf_linesrc(line, NULL, NULL);
    if (file != NULL) {
      (void)dwarf_lineno(line, &lineno);
      (void)dwarf_linecol(line, &column);
      out->file = file;
      out->line = lineno > 0 ? (uint32_t)lineno : 0;
      out->column = column > 0 ? (uint32_t)column : 0;
    }
  }
  Dwarf_Die scopes[MAX_SCOPE_DEPTH];
  // C and C++ units keep their code at the top level: look there first, at the cost
  // dwarf_getscopes had; inside namespaces and types (Rust) only when that finds nothing.
  int n = find_scopes(cu, dwfl_addr - cu_bias, false, scopes, 0, 0);
  if (n == 0) {
    n = find_scopes(cu, dwfl_addr - cu_bias, true, scopes, 0, 0);
  }
  // Innermost last: the subprogram the code physically belongs to, then lexical blocks and
  // inlined calls (DW_TAG_inlined_subroutine) nested in it. Each inline frame takes the line
  // the frame inside it was called from; the innermost keeps the line table's.
  size_t count = 0;
  bool complete = true;
  zxs_elf_inline_frame_t here = {.file = out->file, .line = out->line, .column = out->column};
  for (int i = n - 1; i >= 0; i--) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine) {
      here.name = die_function_name(&scopes[i]);
      complete = complete && push_inline_frame(elf, count++, &here);
      call_site(&scopes[i], &here.file, &here.line, &here.column);
      continue;
    }
    if (tag != DW_TAG_subprogram) {
      continue;
    }
    if (complete && count > 0) {
      out->inlined = elf->inlined;
      out->inline_count = count;
      out->file = here.file;
      out->line = here.line;
      out->column = here.column;
    }
    const char* name = want_name ? die_function_name(&scopes[i]) : NULL;
    if (name != NULL) {
      out->name = name;
      out->source = ZXS_ELF_SOURCE_DWARF;
      Dwarf_Addr entry = 0;
      if (dwarf_entrypc(&scopes[i], &entry) == 0 && entry + cu_bias >= elf->dwfl_bias) {
        out->symbol_address = entry + cu_bias - elf->dwfl_bias;
        out->offset = address - out->symbol_address;
      }
    }
    break;
  }
}

#endif  // ZXS_ELF_USE_LIBDW

zx_status_t zxs_elf_lookup(zxs_elf_t* elf, uint64_t address, uint32_t flags,
                           zxs_elf_location_t* out) {
  if (elf == NULL || out == NULL ||
      (flags & ~(ZXS_ELF_LOOKUP_RETURN_ADDRESS | ZXS_ELF_LOOKUP_NO_LINES)) != 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  memset(out, 0, sizeof(*out));
  uint64_t probe = address;
  if ((flags & ZXS_ELF_LOOKUP_RETURN_ADDRESS) != 0) {
    if (address == 0) {
      return ZX_ERR_NOT_FOUND;
    }
    probe = address - 1;  // inside the call instruction
  }
  const sym_entry_t* e = find_symbol(elf, probe);
  if (e != NULL) {
    out->name = e->name;
    out->symbol_address = e->address;
    out->symbol_size = e->size;
    out->offset = address - e->address;
    out->source = (zxs_elf_symbol_source_t)e->source;
  }
#if ZXS_ELF_USE_LIBDW
  if ((flags & ZXS_ELF_LOOKUP_NO_LINES) == 0) {
    lookup_dwarf(elf, probe, address, e == NULL, out);
  }
#endif
  return out->name != NULL || out->file != NULL ? ZX_OK : ZX_ERR_NOT_FOUND;
}
