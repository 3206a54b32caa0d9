// Reads a trace file into a symbolized profile (layout in trace_file.h).
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/fxt.h>

#include "array_grow.h"
#include "demangle.h"
#include "elf_symbolizer.h"
#include "hex_digit.h"
#include "modules_markup.h"
#include "sorted_search.h"
#include "trace_file.h"

// --- The modules attachment -------------------------------------------------------------------

static bool parse_u64(const char** p, const char* end, int base, uint64_t* out) {
  char tmp[32];
  size_t n = 0;
  if (base == 16 && end - *p > 2 && (*p)[0] == '0' && ((*p)[1] == 'x' || (*p)[1] == 'X')) *p += 2;
  while (*p < end && n < sizeof(tmp) - 1 && **p != ':' && **p != '}') tmp[n++] = *(*p)++;
  if (n == 0) return false;
  tmp[n] = '\0';
  char* stop;
  unsigned long long v = strtoull(tmp, &stop, base);
  if (*stop != '\0') return false;
  *out = v;
  return true;
}

static bool expect(const char** p, const char* end, const char* word) {
  size_t len = strlen(word);
  if ((size_t)(end - *p) < len || memcmp(*p, word, len) != 0) return false;
  *p += len;
  return true;
}

static zx_status_t add_module(zxs_module_list_t* list, uint64_t id, const char* name, size_t len,
                              const char* hex, size_t hex_len) {
  if (id != list->count || hex_len % 2 != 0 || hex_len / 2 > ZXS_BUILD_ID_MAX) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  zxs_module_t* grown = realloc(list->modules, (list->count + 1) * sizeof(*grown));
  if (grown == NULL) return ZX_ERR_NO_MEMORY;
  list->modules = grown;
  zxs_module_t* m = &list->modules[list->count];
  memset(m, 0, sizeof(*m));
  m->path = malloc(len + 1);
  if (m->path == NULL) return ZX_ERR_NO_MEMORY;
  memcpy(m->path, name, len);
  m->path[len] = '\0';
  m->kind = strcmp(m->path, "[vdso]") == 0 ? ZXS_MODULE_VDSO : ZXS_MODULE_SHARED;
  // In the list from here on, so that zxs_modules_free() frees its path whatever comes next.
  list->count++;
  for (size_t i = 0; i < hex_len / 2; i++) {
    const int hi = zxs_hex_digit(hex[2 * i]), lo = zxs_hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return ZX_ERR_IO_DATA_INTEGRITY;  // not hex (sscanf took "+1", " 1")
    m->build_id[i] = (uint8_t)(hi << 4 | lo);
  }
  m->build_id_size = hex_len / 2;
  return ZX_OK;
}

// Offsets not given yet (traces from before the file_offset line) are UINT64_MAX until
// derive_missing_offsets().
#define OFFSET_UNKNOWN UINT64_MAX

static zx_status_t add_segment(zxs_module_list_t* list, uint64_t id, uint64_t start, uint64_t size,
                               const char* perms, size_t perms_len, uint64_t vaddr) {
  if (id >= list->count) return ZX_ERR_IO_DATA_INTEGRITY;
  zxs_module_t* m = &list->modules[id];
  zxs_segment_t* grown = realloc(m->segments, (m->segment_count + 1) * sizeof(*grown));
  if (grown == NULL) return ZX_ERR_NO_MEMORY;
  m->segments = grown;
  uint32_t flags = 0;
  for (size_t i = 0; i < perms_len; i++) {
    flags |= perms[i] == 'r'   ? ZXS_SEGMENT_R
             : perms[i] == 'w' ? ZXS_SEGMENT_W
             : perms[i] == 'x' ? ZXS_SEGMENT_X
                               : 0;
  }
  m->segments[m->segment_count] =
      (zxs_segment_t){.vaddr = vaddr, .memsz = size, .offset = OFFSET_UNKNOWN, .flags = flags};
  m->segment_count++;
  m->load_bias = start - vaddr;
  return ZX_OK;
}

// Older traces carry no file offsets: for the usual layouts (first PT_LOAD at file offset 0) a
// segment's offset is its address minus the page-aligned address of its module's first one.
static void derive_missing_offsets(zxs_module_list_t* list) {
  for (size_t i = 0; i < list->count; i++) {
    zxs_module_t* m = &list->modules[i];
    for (size_t j = 0; j < m->segment_count; j++) {
      if (m->segments[j].offset == OFFSET_UNKNOWN) {
        m->segments[j].offset = m->segments[j].vaddr - (m->segments[0].vaddr & ~(uint64_t)0xfff);
      }
    }
  }
}

static zx_status_t parse_module_line(const char* p, const char* eol, zxs_module_list_t* out) {
  uint64_t id;
  if (!parse_u64(&p, eol, 10, &id) || !expect(&p, eol, ":")) return ZX_ERR_IO_DATA_INTEGRITY;
  const char* name = p;
  const char* colon = memchr(p, ':', (size_t)(eol - p));
  if (colon == NULL) return ZX_ERR_IO_DATA_INTEGRITY;
  p = colon;
  const char* hex = p + 5;  // ":elf:"
  const char* close = hex <= eol ? strstr(hex, "}}}") : NULL;
  if (!expect(&p, eol, ":elf:") || close == NULL || close > eol) return ZX_ERR_IO_DATA_INTEGRITY;
  return add_module(out, id, name, (size_t)(colon - name), hex, (size_t)(close - hex));
}

// Sets *last to the segment added.
static zx_status_t parse_mmap_line(const char* p, const char* eol, zxs_module_list_t* out,
                                   zxs_segment_t** last) {
  uint64_t start, len, id, vaddr;
  if (!parse_u64(&p, eol, 16, &start) || !expect(&p, eol, ":") || !parse_u64(&p, eol, 16, &len) ||
      !expect(&p, eol, ":load:") || !parse_u64(&p, eol, 10, &id) || !expect(&p, eol, ":")) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  const char* perms = p;
  while (p < eol && *p != ':') p++;
  const char* perms_end = p;
  if (!expect(&p, eol, ":") || !parse_u64(&p, eol, 16, &vaddr) || !expect(&p, eol, "}}}")) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  zx_status_t status = add_segment(out, id, start, len, perms, (size_t)(perms_end - perms), vaddr);
  if (status == ZX_OK) {
    zxs_module_t* m = &out->modules[id];
    *last = &m->segments[m->segment_count - 1];
  }
  return status;
}

// The file offset of the segment of the mmap line just before.
static zx_status_t parse_file_offset_line(const char* p, const char* eol, zxs_segment_t* last) {
  uint64_t offset;
  if (last == NULL || !parse_u64(&p, eol, 16, &offset) || p != eol) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  last->offset = offset;
  return ZX_OK;
}

zx_status_t zxs_modules_from_markup(const char* text, size_t size, zxs_module_list_t* out) {
  memset(out, 0, sizeof(*out));
  // An empty payload may come as NULL: NULL + 0 is undefined in C (the fuzzer found it).
  const char* end = text != NULL ? text + size : NULL;
  zx_status_t status = ZX_OK;
  zxs_segment_t* last = NULL;  // of the last mmap line, until the next line
  for (const char* line = text; line < end && status == ZX_OK;) {
    const char* eol = memchr(line, '\n', (size_t)(end - line));
    if (eol == NULL) eol = end;
    const char* p = line;
    zxs_segment_t* previous = last;
    last = NULL;
    if (expect(&p, eol, "{{{module:")) {
      status = parse_module_line(p, eol, out);
    } else if (expect(&p, eol, "{{{mmap:")) {
      status = parse_mmap_line(p, eol, out, &last);
    } else if (expect(&p, eol, ZXS_MARKUP_FILE_OFFSET_PREFIX)) {
      status = parse_file_offset_line(p, eol, previous);
    }
    line = eol + 1;
  }
  if (status == ZX_OK) {
    derive_missing_offsets(out);
    status = zxs_modules_index(out);
  }
  if (status != ZX_OK) zxs_modules_free(out);
  return status;
}

// --- Locations --------------------------------------------------------------------------------

typedef struct {
  zxs_profile_t* profile;
  size_t location_cap, sample_cap, frame_cap, thread_cap, process_cap, kernel_symbol_cap;
  uint32_t* table;  // open addressing: location index + 1, 0 = empty
  size_t table_size;
  zxs_module_list_t* modules;  // per process, until they are joined into profile->modules
  zxs_jit_symbols_t* jit;      // per process (jit_symbols.h), for its code outside modules
  zxs_fxt_bytes_t vdso;        // the vDSO's image, if the trace carries one
  size_t last_process;         // of the last sample: samples come in runs
} builder_t;

static uint64_t hash_location(uint32_t process, uint64_t address, bool ra) {
  uint64_t h =
      (address ^ (ra ? 0x9e3779b97f4a7c15u : 0) ^ ((uint64_t)process << 40)) * 0xff51afd7ed558ccdu;
  return h ^ (h >> 29);
}

static bool rehash(builder_t* b) {
  size_t size = b->table_size == 0 ? 1024 : b->table_size * 2;
  uint32_t* table = calloc(size, sizeof(uint32_t));
  if (table == NULL) return false;
  for (size_t i = 0; i < b->profile->location_count; i++) {
    const zxs_profile_location_t* loc = &b->profile->locations[i];
    size_t slot = hash_location(loc->process, loc->address, loc->is_return_address) & (size - 1);
    while (table[slot] != 0) slot = (slot + 1) & (size - 1);
    table[slot] = (uint32_t)i + 1;
  }
  free(b->table);
  b->table = table;
  b->table_size = size;
  return true;
}

// The index of location (process, address, ra), added if new; UINT32_MAX on allocation failure.
static uint32_t intern_location(builder_t* b, uint32_t process, uint64_t address, bool ra) {
  zxs_profile_t* p = b->profile;
  if (2 * (p->location_count + 1) > b->table_size && !rehash(b)) return UINT32_MAX;
  size_t slot = hash_location(process, address, ra) & (b->table_size - 1);
  while (b->table[slot] != 0) {
    const zxs_profile_location_t* loc = &p->locations[b->table[slot] - 1];
    if (loc->address == address && loc->is_return_address == ra && loc->process == process) {
      return b->table[slot] - 1;
    }
    slot = (slot + 1) & (b->table_size - 1);
  }
  if (!zxs_array_grow((void**)&p->locations, &b->location_cap, p->location_count + 1,
                      sizeof(*p->locations))) {
    return UINT32_MAX;
  }
  p->locations[p->location_count] = (zxs_profile_location_t){
      .address = address, .is_return_address = ra, .process = process, .module = -1};
  b->table[slot] = (uint32_t)p->location_count + 1;
  return (uint32_t)p->location_count++;
}

// The index of the process with `koid`, added (unnamed) if new; SIZE_MAX without memory.
static size_t find_process(builder_t* b, zx_koid_t koid) {
  zxs_profile_t* p = b->profile;
  if (b->last_process < p->process_count && p->processes[b->last_process].koid == koid) {
    return b->last_process;
  }
  for (size_t i = 0; i < p->process_count; i++) {
    if (p->processes[i].koid == koid) return b->last_process = i;
  }
  size_t cap = b->process_cap;
  if (!zxs_array_grow((void**)&p->processes, &b->process_cap, p->process_count + 1,
                      sizeof(*p->processes))) {
    return SIZE_MAX;
  }
  if (b->process_cap != cap) {
    zxs_module_list_t* grown = realloc(b->modules, b->process_cap * sizeof(*grown));
    if (grown == NULL) return SIZE_MAX;
    b->modules = grown;
    zxs_jit_symbols_t* jit = realloc(b->jit, b->process_cap * sizeof(*jit));
    if (jit == NULL) return SIZE_MAX;
    b->jit = jit;
  }
  memset(&b->modules[p->process_count], 0, sizeof(b->modules[0]));
  memset(&b->jit[p->process_count], 0, sizeof(b->jit[0]));
  p->processes[p->process_count] = (zxs_profile_process_t){.koid = koid, .pid = koid, .name = ""};
  if (p->process_count == 0) p->pid = koid;
  return b->last_process = p->process_count++;
}

static zx_status_t add_thread(builder_t* b, zx_koid_t pid, zx_koid_t tid, const char* name,
                              size_t len) {
  zxs_profile_t* p = b->profile;
  char buf[256];
  snprintf(buf, sizeof(buf), "%.*s", (int)(len < 255 ? len : 255), name != NULL ? name : "");
  for (size_t i = 0; i < p->thread_count; i++) {
    if (p->threads[i].tid == tid && p->threads[i].pid == pid) {
      if (buf[0] != '\0') p->threads[i].name = zxs_profile_strdup(p, buf);
      return p->threads[i].name != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
    }
  }
  if (!zxs_array_grow((void**)&p->threads, &b->thread_cap, p->thread_count + 1,
                      sizeof(*p->threads))) {
    return ZX_ERR_NO_MEMORY;
  }
  const char* copy = zxs_profile_strdup(p, buf);
  if (copy == NULL) return ZX_ERR_NO_MEMORY;
  p->threads[p->thread_count++] = (zxs_profile_thread_t){.pid = pid, .tid = tid, .name = copy};
  return ZX_OK;
}

static zx_status_t add_sample(builder_t* b, const zxs_fxt_record_t* rec) {
  zxs_profile_t* p = b->profile;
  const zxs_fxt_large_blob_t* blob = &rec->blob;
  size_t depth = blob->payload.size / 8;
  if (blob->payload.size % 8 != 0 || depth == 0 || depth > ZXS_TRACE_MAX_FRAMES) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  if (!zxs_array_grow((void**)&p->samples, &b->sample_cap, p->sample_count + 1,
                      sizeof(*p->samples)) ||
      !zxs_array_grow((void**)&p->frames, &b->frame_cap, p->frame_count + depth,
                      sizeof(*p->frames))) {
    return ZX_ERR_NO_MEMORY;
  }
  const size_t process = find_process(b, blob->thread.process_koid);
  if (process == SIZE_MAX) return ZX_ERR_NO_MEMORY;
  p->processes[process].samples++;
  const uint8_t* payload = blob->payload.data;
  for (size_t i = 0; i < depth; i++) {
    uint64_t pc = 0;  // little-endian words, whatever the host
    for (int k = 7; k >= 0; k--) pc = (pc << 8) | payload[8 * i + (size_t)k];
    uint32_t loc = intern_location(b, (uint32_t)process, pc, i > 0);
    if (loc == UINT32_MAX) return ZX_ERR_NO_MEMORY;
    p->frames[p->frame_count + i] = loc;
  }
  p->samples[p->sample_count++] = (zxs_profile_sample_t){.pid = blob->thread.process_koid,
                                                         .tid = blob->thread.thread_koid,
                                                         .ticks = blob->ticks,
                                                         .depth = (uint32_t)depth,
                                                         .first_frame = p->frame_count};
  p->frame_count += depth;
  return ZX_OK;
}

// --- Symbolization ----------------------------------------------------------------------------

// Opens each module's file once; a module whose file is missing or whose ID differs
// stays unsymbolized rather than being named wrongly.
static zxs_elf_t* open_module(const zxs_module_t* m, const zxs_fxt_bytes_t* vdso) {
  zxs_elf_t* elf;
  if (m->kind == ZXS_MODULE_VDSO) {  // from the image in the trace
    if (vdso->size == 0 || zxs_elf_open_memory(vdso->data, vdso->size, &elf) != ZX_OK) {
      return NULL;
    }
  } else if (m->path[0] == '\0' || zxs_elf_open(m->path, &elf) != ZX_OK) {
    return NULL;
  }
  const uint8_t* id;
  size_t id_size;
  if (m->build_id_size > 0 &&
      (zxs_elf_module_id(elf, &id, &id_size) != ZX_OK || id_size != m->build_id_size ||
       memcmp(id, m->build_id, id_size) != 0)) {
    zxs_elf_close(elf);
    return NULL;
  }
  return elf;
}

static const zxs_profile_kernel_symbol_t* find_kernel_symbol(const zxs_profile_t* p,
                                                             uint64_t address) {
  const size_t lo = zxs_sorted_count_at_or_below(
      p->kernel_symbols, p->kernel_symbol_count, sizeof(p->kernel_symbols[0]),
      offsetof(zxs_profile_kernel_symbol_t, start), address);
  if (lo == 0) return NULL;
  const zxs_profile_kernel_symbol_t* sym = &p->kernel_symbols[lo - 1];
  return address < sym->end ? sym : NULL;
}

// Demangled into *function, with the raw name in *system_name when they differ. False when out
// of memory.
static bool set_name(zxs_profile_t* p, const char* name, const char** function,
                     const char** system_name) {
  char* demangled = zxs_demangle(name);
  *function = zxs_profile_strdup(p, demangled != NULL ? demangled : name);
  if (demangled != NULL) *system_name = zxs_profile_strdup(p, name);
  bool ok = *function != NULL && (demangled == NULL || *system_name != NULL);
  free(demangled);
  return ok;
}

static zx_status_t add_inline_frames(zxs_profile_t* p, zxs_profile_location_t* loc,
                                     const zxs_elf_location_t* where, size_t* capacity) {
  if (where->inline_count > UINT32_MAX ||
      where->inline_count > SIZE_MAX / sizeof(zxs_profile_inline_frame_t) - p->inline_frame_count) {
    return ZX_ERR_NO_MEMORY;
  }
  const size_t needed = p->inline_frame_count + where->inline_count;
  if (!zxs_array_grow((void**)&p->inline_frames, capacity, needed, sizeof(*p->inline_frames))) {
    return ZX_ERR_NO_MEMORY;
  }
  for (size_t i = 0; i < where->inline_count; i++) {
    const zxs_elf_inline_frame_t* in = &where->inlined[i];
    zxs_profile_inline_frame_t* f = &p->inline_frames[p->inline_frame_count + i];
    *f = (zxs_profile_inline_frame_t){.line = in->line};
    if ((in->name != NULL && !set_name(p, in->name, &f->function, &f->system_name)) ||
        (in->file != NULL && (f->file = zxs_profile_strdup(p, in->file)) == NULL)) {
      return ZX_ERR_NO_MEMORY;
    }
  }
  loc->inline_first = p->inline_frame_count;
  loc->inline_count = (uint32_t)where->inline_count;
  p->inline_frame_count = needed;
  return ZX_OK;
}

// Names code that no module names from its process's JIT symbols. False when out of memory.
static bool name_jit_code(zxs_profile_t* p, zxs_profile_location_t* loc,
                          const zxs_jit_symbols_t* jit) {
  const uint64_t at = loc->is_return_address ? loc->address - 1 : loc->address;
  const zxs_jit_symbol_t* symbol = zxs_jit_symbols_lookup(jit, at);
  return symbol == NULL ||
         set_name(p, zxs_jit_symbol_name(jit, symbol), &loc->function, &loc->system_name);
}

static zx_status_t symbolize(zxs_profile_t* p, const zxs_fxt_bytes_t* vdso,
                             zxs_jit_symbols_t* jit) {
  size_t inline_capacity = 0;
  zxs_elf_t** elves = calloc(p->modules.count + 1, sizeof(*elves));
  bool* tried = calloc(p->modules.count + 1, sizeof(*tried));
  zx_status_t status = elves != NULL && tried != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
  for (size_t i = 0; jit != NULL && i < p->process_count && status == ZX_OK; i++) {
    status = zxs_jit_symbols_resolve(&jit[i]);
  }
  for (size_t i = 0; i < p->location_count && status == ZX_OK; i++) {
    zxs_profile_location_t* loc = &p->locations[i];
    if (loc->address == ZXS_TRACE_TRUNCATED_PC) {
      loc->function = ZXS_TRACE_TRUNCATED_NAME;
      continue;
    }
    if (zxs_profile_is_kernel_address(loc->address)) {
      const uint64_t at = loc->is_return_address ? loc->address - 1 : loc->address;
      const zxs_profile_kernel_symbol_t* sym = find_kernel_symbol(p, at);
      loc->function = sym != NULL ? sym->name : "[kernel]";
      continue;
    }
    const zxs_profile_process_t* process = &p->processes[loc->process];
    // No modules at all: NULL, not NULL + 0 (undefined in C; the fuzzer found it).
    const zxs_module_list_t view = {
        .modules = p->modules.modules != NULL ? p->modules.modules + process->module_first : NULL,
        .count = process->module_count};
    const zxs_module_t* m;
    uint64_t file_address;
    if (zxs_modules_file_address(&view, loc->address,
                                 loc->is_return_address ? ZXS_MODULES_RETURN_ADDRESS : 0, &m,
                                 &file_address) != ZX_OK) {
      if (jit != NULL && !name_jit_code(p, loc, &jit[loc->process])) status = ZX_ERR_NO_MEMORY;
      continue;
    }
    size_t index = (size_t)(m - p->modules.modules);
    loc->module = (int32_t)index;
    loc->file_address = file_address;
    if (!tried[index]) {
      tried[index] = true;
      elves[index] = open_module(m, vdso);
    }
    zxs_elf_location_t where;
    if (elves[index] == NULL ||
        zxs_elf_lookup(elves[index], file_address,
                       loc->is_return_address ? ZXS_ELF_LOOKUP_RETURN_ADDRESS : 0,
                       &where) != ZX_OK) {
      // A mapped file that is no ELF file the JIT may name (.NET's ready-to-run images).
      if (jit != NULL && !name_jit_code(p, loc, &jit[loc->process])) status = ZX_ERR_NO_MEMORY;
      continue;
    }
    if (where.name != NULL && !set_name(p, where.name, &loc->function, &loc->system_name)) {
      status = ZX_ERR_NO_MEMORY;
    }
    if (where.file != NULL && (loc->file = zxs_profile_strdup(p, where.file)) == NULL) {
      status = ZX_ERR_NO_MEMORY;
    }
    loc->line = where.line;
    if (where.inline_count > 0 && status == ZX_OK) {
      status = add_inline_frames(p, loc, &where, &inline_capacity);
    }
  }
  for (size_t i = 0; elves != NULL && i < p->modules.count; i++) {
    if (elves[i] != NULL) zxs_elf_close(elves[i]);
  }
  free(elves);
  free(tried);
  return status;
}

// Joins the per-process module lists into profile->modules, one range per process, each
// indexed on its own (the lists' strings and segments move, not copied).
static zx_status_t join_modules(builder_t* b) {
  zxs_profile_t* p = b->profile;
  size_t total = 0;
  for (size_t i = 0; i < p->process_count; i++) total += b->modules[i].count;
  zxs_module_t* all = total > 0 ? calloc(total, sizeof(*all)) : NULL;
  if (total > 0 && all == NULL) return ZX_ERR_NO_MEMORY;
  size_t at = 0;
  for (size_t i = 0; i < p->process_count; i++) {
    zxs_module_list_t* list = &b->modules[i];
    p->processes[i].module_first = at;
    p->processes[i].module_count = list->count;
    if (list->count > 0) memcpy(all + at, list->modules, list->count * sizeof(*all));
    at += list->count;
    free(list->modules);
    *list = (zxs_module_list_t){0};
  }
  p->modules = (zxs_module_list_t){.modules = all, .count = total};
  return ZX_OK;
}

static int compare_kernel_symbols(const void* a, const void* b) {
  const zxs_profile_kernel_symbol_t* x = a;
  const zxs_profile_kernel_symbol_t* y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

// Lines "START END NAME" (hex addresses).
static zx_status_t read_kernel_symbols(builder_t* b, const char* text, size_t size) {
  zxs_profile_t* p = b->profile;
  if (text == NULL) return ZX_OK;  // empty (and NULL + 0 is undefined)
  for (const char* line = text; line < text + size;) {
    const char* eol = memchr(line, '\n', (size_t)(text + size - line));
    if (eol == NULL) eol = text + size;
    char buf[320];
    size_t len = (size_t)(eol - line) < sizeof(buf) - 1 ? (size_t)(eol - line) : sizeof(buf) - 1;
    memcpy(buf, line, len);
    buf[len] = '\0';
    unsigned long long start, end;
    char name[257];
    if (sscanf(buf, "%llx %llx %256s", &start, &end, name) == 3 && start < end) {
      if (!zxs_array_grow((void**)&p->kernel_symbols, &b->kernel_symbol_cap,
                          p->kernel_symbol_count + 1, sizeof(*p->kernel_symbols))) {
        return ZX_ERR_NO_MEMORY;
      }
      const char* copy = zxs_profile_strdup(p, name);
      if (copy == NULL) return ZX_ERR_NO_MEMORY;
      p->kernel_symbols[p->kernel_symbol_count++] =
          (zxs_profile_kernel_symbol_t){.start = start, .end = end, .name = copy};
    }
    line = eol + 1;
  }
  if (p->kernel_symbol_count > 1) {
    qsort(p->kernel_symbols, p->kernel_symbol_count, sizeof(*p->kernel_symbols),
          compare_kernel_symbols);
  }
  return ZX_OK;
}

// --- The file ---------------------------------------------------------------------------------

static bool str_is(const zxs_fxt_str_ref_t* ref, const char* s) {
  return ref->len == strlen(s) && (ref->len == 0 || memcmp(ref->data, s, ref->len) == 0);
}

static void set_error(char* error, size_t size, const char* format, ...) {
  if (error == NULL || size == 0) return;
  va_list args;
  va_start(args, format);
  vsnprintf(error, size, format, args);
  va_end(args);
}

static zx_status_t copy_name(zxs_profile_t* p, const zxs_fxt_str_ref_t* ref, const char** out) {
  char name[256];
  snprintf(name, sizeof(name), "%.*s", (int)(ref->len < 255 ? ref->len : 255),
           ref->data != NULL ? ref->data : "");
  *out = zxs_profile_strdup(p, name);
  return *out != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
}

// Text of any length (a name is cut at 255 bytes, a sentence is not).
static zx_status_t copy_text(zxs_profile_t* p, const zxs_fxt_str_ref_t* ref, const char** out) {
  char* text = malloc(ref->len + 1);
  if (text == NULL) return ZX_ERR_NO_MEMORY;
  if (ref->len > 0) memcpy(text, ref->data, ref->len);
  text[ref->len] = '\0';
  *out = zxs_profile_strdup(p, text);
  free(text);
  return *out != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
}

// "cpu_time queue_time ..." -> ZXS_PROFILE_RUNTIME_* (unknown names are skipped).
static uint32_t runtime_fields_from_names(const zxs_fxt_str_ref_t* names) {
  uint32_t fields = 0;
  const char* at = names->data;
  const char* end = at != NULL ? at + names->len : NULL;
  while (at != NULL && at < end) {
    const char* space = memchr(at, ' ', (size_t)(end - at));
    const size_t len = (size_t)((space != NULL ? space : end) - at);
    for (uint32_t bit = 0; bit < ZXS_TRACE_RUNTIME_FIELD_COUNT; bit++) {
      const char* name = zxs_trace_runtime_field_name(bit);
      if (strlen(name) == len && memcmp(name, at, len) == 0) fields |= 1u << bit;
    }
    at += len + 1;
  }
  return fields;
}

// A thread record's task runtime arguments (an absent one was not measured).
static void read_thread_runtime(const zxs_fxt_record_t* rec, zxs_profile_runtime_t* out) {
  static const struct {
    const char* name;
    uint32_t field;
    size_t offset;
  } kArgs[] = {
      {ZXS_TRACE_CPU_TIME_ARG, ZXS_PROFILE_RUNTIME_CPU, offsetof(zxs_profile_runtime_t, cpu_time)},
      {ZXS_TRACE_QUEUE_TIME_ARG, ZXS_PROFILE_RUNTIME_QUEUE,
       offsetof(zxs_profile_runtime_t, queue_time)},
      {ZXS_TRACE_PAGE_FAULT_TIME_ARG, ZXS_PROFILE_RUNTIME_FAULT,
       offsetof(zxs_profile_runtime_t, page_fault_time)},
      {ZXS_TRACE_LOCK_CONTENTION_TIME_ARG, ZXS_PROFILE_RUNTIME_LOCK,
       offsetof(zxs_profile_runtime_t, lock_contention_time)},
      {ZXS_TRACE_PAGE_FAULTS_ARG, 0, offsetof(zxs_profile_runtime_t, page_faults)},
      {ZXS_TRACE_LOCK_CONTENTIONS_ARG, 0, offsetof(zxs_profile_runtime_t, lock_contentions)},
  };
  for (size_t i = 0; i < rec->num_args; i++) {
    const zxs_fxt_arg_t* arg = &rec->args[i];
    if (arg->type != ZXS_FXT_ARG_UINT64) continue;
    for (size_t k = 0; k < sizeof(kArgs) / sizeof(kArgs[0]); k++) {
      if (!str_is(&arg->name, kArgs[k].name)) continue;
      memcpy((uint8_t*)out + kArgs[k].offset, &arg->u64, sizeof(uint64_t));
      out->fields |= kArgs[k].field;
    }
  }
}

// A recorder alert: its instant event and the breakdown in its arguments.
static zx_status_t read_alert(zxs_profile_t* p, const zxs_fxt_record_t* rec) {
  static const struct {
    const char* name;
    uint32_t field;
    size_t offset;
  } kArgs[] = {
      {ZXS_TRACE_ALERT_WALL_ARG, ZXS_PROFILE_ALERT_WALL, offsetof(zxs_profile_alert_t, wall)},
      {ZXS_TRACE_ALERT_BUDGET_ARG, ZXS_PROFILE_ALERT_BUDGET, offsetof(zxs_profile_alert_t, budget)},
      {ZXS_TRACE_ALERT_CPU_ARG, ZXS_PROFILE_ALERT_CPU, offsetof(zxs_profile_alert_t, cpu_time)},
      {ZXS_TRACE_ALERT_QUEUE_ARG, ZXS_PROFILE_ALERT_QUEUE,
       offsetof(zxs_profile_alert_t, queue_time)},
      {ZXS_TRACE_ALERT_FAULT_ARG, ZXS_PROFILE_ALERT_FAULT,
       offsetof(zxs_profile_alert_t, page_fault_time)},
      {ZXS_TRACE_ALERT_LOCK_ARG, ZXS_PROFILE_ALERT_LOCK,
       offsetof(zxs_profile_alert_t, lock_contention_time)},
  };
  zxs_profile_alert_t alert = {.pid = rec->event.thread.process_koid,
                               .tid = rec->event.thread.thread_koid,
                               .ticks = rec->event.ticks};
  for (size_t i = 0; i < rec->num_args; i++) {
    const zxs_fxt_arg_t* arg = &rec->args[i];
    if (arg->type != ZXS_FXT_ARG_UINT64) continue;
    for (size_t k = 0; k < sizeof(kArgs) / sizeof(kArgs[0]); k++) {
      if (!str_is(&arg->name, kArgs[k].name)) continue;
      memcpy((uint8_t*)&alert + kArgs[k].offset, &arg->u64, sizeof(uint64_t));
      alert.fields |= kArgs[k].field;
    }
  }
  zx_status_t status = copy_name(p, &rec->event.name, &alert.name);
  if (status != ZX_OK) return status;
  zxs_profile_alert_t* grown = realloc(p->alerts, (p->alert_count + 1) * sizeof(*grown));
  if (grown == NULL) return ZX_ERR_NO_MEMORY;
  p->alerts = grown;
  p->alerts[p->alert_count++] = alert;
  return ZX_OK;
}

static zx_status_t read_process(builder_t* b, const zxs_fxt_record_t* rec) {
  zxs_profile_t* p = b->profile;
  const size_t index = find_process(b, rec->kernel_object.koid);
  if (index == SIZE_MAX) return ZX_ERR_NO_MEMORY;
  zxs_profile_process_t* process = &p->processes[index];
  zx_status_t status = copy_name(p, &rec->kernel_object.name, &process->name);
  if (status != ZX_OK) return status;
  if (index == 0) p->process_name = process->name;
  for (size_t i = 0; i < rec->num_args; i++) {
    const zxs_fxt_arg_t* arg = &rec->args[i];
    if (arg->type == ZXS_FXT_ARG_STRING && str_is(&arg->name, ZXS_TRACE_SAMPLED_ARG)) {
      p->sampled = str_is(&arg->str, "user+kernel") ? ZXS_PROFILE_SAMPLED_USER_KERNEL
                                                    : ZXS_PROFILE_SAMPLED_USER;
    }
    if (arg->type == ZXS_FXT_ARG_STRING && str_is(&arg->name, ZXS_TRACE_RUNTIME_ARG)) {
      p->runtime_fields = runtime_fields_from_names(&arg->str);
    }
    if (arg->type == ZXS_FXT_ARG_STRING && str_is(&arg->name, ZXS_TRACE_RUNTIME_MISSING_ARG)) {
      status = copy_text(p, &arg->str, &p->runtime_missing);
      if (status != ZX_OK) return status;
    }
    if (arg->type != ZXS_FXT_ARG_UINT64) continue;
    if (str_is(&arg->name, ZXS_TRACE_RUNTIME_LOST_ARG)) p->runtime_records_lost += arg->u64;
    if (str_is(&arg->name, ZXS_TRACE_PERIOD_ARG)) p->period = (zx_duration_t)arg->u64;
    if (str_is(&arg->name, ZXS_TRACE_PID_ARG)) process->pid = arg->u64;
    if (str_is(&arg->name, ZXS_TRACE_LOST_ARG)) p->samples_lost += arg->u64;
    if (str_is(&arg->name, ZXS_TRACE_CHILDREN_NOT_FOLLOWED_ARG)) {
      p->children_not_followed += arg->u64;
    }
    if (str_is(&arg->name, ZXS_TRACE_THREADS_NOT_ATTACHED_ARG)) {
      p->threads_not_attached += arg->u64;
    }
  }
  return ZX_OK;
}

// The modules of process `koid` (a second list for the same process replaces the first).
static zx_status_t read_modules(builder_t* b, zx_koid_t koid, const zxs_fxt_bytes_t* payload) {
  const size_t index = find_process(b, koid);
  if (index == SIZE_MAX) return ZX_ERR_NO_MEMORY;
  zxs_modules_free(&b->modules[index]);
  return zxs_modules_from_markup((const char*)payload->data, payload->size, &b->modules[index]);
}

// The JIT symbols of process `koid` (a second list for the same process replaces the first).
// Malformed lines are skipped, and what does not fit the set's limit is left out.
static zx_status_t read_jit_symbols(builder_t* b, zx_koid_t koid, const zxs_fxt_bytes_t* payload) {
  const size_t index = find_process(b, koid);
  if (index == SIZE_MAX) return ZX_ERR_NO_MEMORY;
  zxs_jit_symbols_free(&b->jit[index]);
  zxs_jit_parse_perf_map(&b->jit[index], (const char*)payload->data, payload->size);
  return ZX_OK;
}

static zx_status_t read_record(builder_t* b, const zxs_fxt_record_t* rec) {
  zxs_profile_t* p = b->profile;
  switch (rec->kind) {
    case ZXS_FXT_RECORD_KERNEL_OBJECT: {
      const zxs_fxt_kernel_object_t* obj = &rec->kernel_object;
      if (obj->obj_type == ZX_OBJ_TYPE_PROCESS) return read_process(b, rec);
      if (obj->obj_type == ZX_OBJ_TYPE_THREAD) {
        zx_koid_t pid = 0;
        for (size_t i = 0; i < rec->num_args; i++) {
          if (str_is(&rec->args[i].name, "process") && rec->args[i].type == ZXS_FXT_ARG_KOID) {
            pid = rec->args[i].koid;
          }
        }
        zx_status_t status = add_thread(b, pid, obj->koid, obj->name.data, obj->name.len);
        zxs_profile_runtime_t runtime = {0};
        read_thread_runtime(rec, &runtime);
        for (size_t i = p->thread_count; status == ZX_OK && runtime.fields != 0 && i-- > 0;) {
          if (p->threads[i].tid == obj->koid && p->threads[i].pid == pid) {
            p->threads[i].runtime = runtime;
            break;
          }
        }
        return status;
      }
      return ZX_OK;
    }
    case ZXS_FXT_RECORD_ATTACHMENT:
      if (!str_is(&rec->blob.category, ZXS_TRACE_CATEGORY)) return ZX_OK;
      // In-process traces: one process, whose record came first.
      if (str_is(&rec->blob.name, ZXS_TRACE_MODULES_NAME)) {
        return read_modules(b, p->process_count > 0 ? p->processes[0].koid : 0, &rec->blob.payload);
      }
      if (str_is(&rec->blob.name, ZXS_TRACE_VDSO_NAME)) {
        b->vdso = rec->blob.payload;
        return ZX_OK;
      }
      if (str_is(&rec->blob.name, ZXS_TRACE_KERNEL_SYMBOLS_NAME)) {
        return read_kernel_symbols(b, (const char*)rec->blob.payload.data, rec->blob.payload.size);
      }
      return ZX_OK;
    case ZXS_FXT_RECORD_LARGE_BLOB:
      // The sampler's records: empty category and name.
      if (rec->blob.category.len == 0 && rec->blob.name.len == 0) return add_sample(b, rec);
      if (str_is(&rec->blob.category, ZXS_TRACE_CATEGORY) &&
          str_is(&rec->blob.name, ZXS_TRACE_MODULES_NAME)) {
        return read_modules(b, rec->blob.thread.process_koid, &rec->blob.payload);
      }
      if (str_is(&rec->blob.category, ZXS_TRACE_CATEGORY) &&
          str_is(&rec->blob.name, ZXS_TRACE_JIT_SYMBOLS_NAME)) {
        return read_jit_symbols(b, rec->blob.thread.process_koid, &rec->blob.payload);
      }
      return ZX_OK;
    case ZXS_FXT_RECORD_EVENT:
      return str_is(&rec->event.category, ZXS_TRACE_ALERT_CATEGORY) ? read_alert(p, rec) : ZX_OK;
    default:
      return ZX_OK;
  }
}

zx_status_t zxs_profile_from_trace(const void* data, size_t size, zxs_profile_t* out, char* error,
                                   size_t error_size) {
  memset(out, 0, sizeof(*out));
  builder_t b = {.profile = out};
  zxs_fxt_reader_t reader;
  zx_status_t status = zxs_fxt_reader_init(&reader, data, size);
  if (status != ZX_OK) {
    set_error(error, error_size, "cannot read the trace: %s", zxs_status_string(status));
    return status;
  }
  zxs_fxt_record_t rec;
  while (status == ZX_OK && zxs_fxt_reader_next(&reader, &rec)) {
    status = read_record(&b, &rec);
    if (status != ZX_OK) {
      set_error(error, error_size, "record at byte %zu: %s", rec.offset,
                status == ZX_ERR_NO_MEMORY ? "out of memory" : "malformed sampler data");
    }
  }
  if (status == ZX_OK && reader.status != ZX_OK) {
    status = reader.status;
    set_error(error, error_size, "%s", reader.error.message);
  }
  out->ticks_per_second = reader.ticks_per_second != 0 ? reader.ticks_per_second : 1000000000u;
  zxs_fxt_reader_destroy(&reader);
  free(b.table);
  if (status == ZX_OK) {
    status = join_modules(&b);
  }
  for (size_t i = 0; b.modules != NULL && i < out->process_count; i++) {
    zxs_modules_free(&b.modules[i]);
  }
  free(b.modules);
  // Threads seen only in samples still get an entry.
  for (size_t i = 0; status == ZX_OK && i < out->sample_count; i++) {
    const zxs_profile_sample_t* s = &out->samples[i];
    bool known = i > 0 && s->tid == s[-1].tid && s->pid == s[-1].pid;
    for (size_t t = 0; t < out->thread_count && !known; t++) {
      known = out->threads[t].tid == s->tid && out->threads[t].pid == s->pid;
    }
    if (!known) status = add_thread(&b, out->samples[i].pid, out->samples[i].tid, "", 0);
  }
  if (status == ZX_OK && out->process_name == NULL) {
    out->process_name = zxs_profile_strdup(out, "");
    if (out->process_name == NULL) status = ZX_ERR_NO_MEMORY;
  }
  if (status == ZX_OK) status = symbolize(out, &b.vdso, b.jit);
  for (size_t i = 0; b.jit != NULL && i < out->process_count; i++) zxs_jit_symbols_free(&b.jit[i]);
  free(b.jit);
  if (status != ZX_OK) zxs_profile_free(out);
  return status;
}
