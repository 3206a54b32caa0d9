// Perf maps and jitdump files into JIT symbol sets (jit_symbols.h).
#define _GNU_SOURCE
#include "jit_symbols.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_grow.h"
#include "hex_digit.h"
#include "sorted_search.h"
#include "u64_map.h"

zx_status_t zxs_jit_symbols_add(zxs_jit_symbols_t* set, uint64_t start, uint64_t size,
                                const char* name, size_t len) {
  for (size_t i = 0; i < len; i++) {
    if (name[i] == '\n' || name[i] == '\r' || name[i] == '\0') len = i;
  }
  if (len > ZXS_JIT_NAME_MAX) len = ZXS_JIT_NAME_MAX;
  if (size == 0 || start + size < start || len == 0) {
    set->skipped++;
    return ZX_OK;
  }
  const size_t limit = set->limit != 0 ? set->limit : ZXS_JIT_SET_MAX_BYTES;
  const size_t used = (set->count + 1) * sizeof(*set->symbols) + set->names_len + len + 1;
  if (used > limit ||
      !zxs_array_grow((void**)&set->symbols, &set->cap, set->count + 1, sizeof(*set->symbols)) ||
      !zxs_array_grow((void**)&set->names, &set->names_cap, set->names_len + len + 1, 1)) {
    set->skipped++;
    return ZX_ERR_NO_MEMORY;
  }
  memcpy(set->names + set->names_len, name, len);
  set->names[set->names_len + len] = '\0';
  set->symbols[set->count] =
      (zxs_jit_symbol_t){.start = start, .size = size, .name = set->names_len, .order = set->count};
  set->count++;
  set->names_len += len + 1;
  set->resolved = false;
  return ZX_OK;
}

// --- Perf maps --------------------------------------------------------------------------------

// A hex number (optional 0x, 1 to 16 digits) at *p, which moves past it.
static bool parse_hex(const char** p, const char* end, uint64_t* out) {
  const char* at = *p;
  if (end - at > 2 && at[0] == '0' && (at[1] == 'x' || at[1] == 'X')) at += 2;
  uint64_t v = 0;
  int digits = 0;
  for (int d; at < end && (d = zxs_hex_digit(*at)) >= 0; at++) {
    if (++digits > 16) return false;
    v = v << 4 | (uint64_t)d;
  }
  if (digits == 0) return false;
  *out = v;
  *p = at;
  return true;
}

// Skips blanks; false when there were none.
static bool skip_blanks(const char** p, const char* end) {
  const char* at = *p;
  while (*p < end && (**p == ' ' || **p == '\t')) (*p)++;
  return *p != at;
}

zx_status_t zxs_jit_parse_perf_map(zxs_jit_symbols_t* set, const char* text, size_t size) {
  const char* end = text != NULL ? text + size : NULL;  // (NULL + 0 is undefined)
  for (const char* line = text; line < end;) {
    const char* eol = memchr(line, '\n', (size_t)(end - line));
    if (eol == NULL) eol = end;
    const char* p = line;
    uint64_t start, length;
    if (eol == line) {  // blank line
    } else if (parse_hex(&p, eol, &start) && skip_blanks(&p, eol) && parse_hex(&p, eol, &length) &&
               skip_blanks(&p, eol)) {
      const char* name_end = eol;
      while (name_end > p && (name_end[-1] == '\r' || name_end[-1] == ' ')) name_end--;
      zx_status_t status = zxs_jit_symbols_add(set, start, length, p, (size_t)(name_end - p));
      if (status != ZX_OK) return status;
    } else {
      set->skipped++;
    }
    line = eol + 1;
  }
  return ZX_OK;
}

// --- jitdump ----------------------------------------------------------------------------------

#define JITDUMP_MAGIC 0x4A695444u  // "JiTD" as the writer's u32
#define JITDUMP_MAGIC_SWAPPED 0x4454694Au
#define JITDUMP_HEADER_SIZE 40u
#define JITDUMP_PREFIX_SIZE 16u  // id, total_size, timestamp
enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1, JIT_CODE_CLOSE = 3 };
// After the prefix: pid, tid, vma, code_addr, code_size, code_index, then the name.
#define LOAD_NAME_OFFSET (JITDUMP_PREFIX_SIZE + 40u)
// After the prefix: pid, tid, vma, old_code_addr, new_code_addr, code_size, code_index.
#define MOVE_SIZE (JITDUMP_PREFIX_SIZE + 48u)

static uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

static uint64_t u64_at(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

// Code index -> the index of the symbol last loaded with it.
static bool code_map_put(zxs_u64_map_t* m, uint64_t code_index, size_t symbol) {
  return code_index == UINT64_MAX || zxs_u64_map_put(m, code_index, symbol);  // not kept
}

// The symbol loaded with `code_index`, or SIZE_MAX.
static size_t code_map_get(const zxs_u64_map_t* m, uint64_t code_index) {
  uint64_t symbol;
  return zxs_u64_map_get(m, code_index, &symbol) ? (size_t)symbol : SIZE_MAX;
}

// A JIT_CODE_MOVE: the function loaded with that code index now lives at its new address.
static zx_status_t move_code(zxs_jit_symbols_t* set, zxs_u64_map_t* loaded, const uint8_t* r) {
  const uint64_t new_addr = u64_at(r + 40), code_size = u64_at(r + 48), code_index = u64_at(r + 56);
  const size_t symbol = code_map_get(loaded, code_index);
  if (symbol == SIZE_MAX) {
    set->skipped++;
    return ZX_OK;
  }
  char name[ZXS_JIT_NAME_MAX + 1];  // (adding may move the names)
  snprintf(name, sizeof(name), "%s", zxs_jit_symbol_name(set, &set->symbols[symbol]));
  const size_t before = set->count;
  zx_status_t status = zxs_jit_symbols_add(set, new_addr, code_size, name, strlen(name));
  if (status == ZX_OK && set->count > before && !code_map_put(loaded, code_index, before)) {
    status = ZX_ERR_NO_MEMORY;
  }
  return status;
}

zx_status_t zxs_jit_parse_jitdump(zxs_jit_symbols_t* set, const void* data, size_t size) {
  const uint8_t* bytes = data;
  if (data == NULL || size < JITDUMP_HEADER_SIZE) return ZX_ERR_IO_DATA_INTEGRITY;
  if (u32_at(bytes) == JITDUMP_MAGIC_SWAPPED) return ZX_ERR_NOT_SUPPORTED;
  const uint32_t header_size = u32_at(bytes + 8);
  if (u32_at(bytes) != JITDUMP_MAGIC || header_size < JITDUMP_HEADER_SIZE || header_size > size) {
    return ZX_ERR_IO_DATA_INTEGRITY;
  }
  zxs_u64_map_t loaded = {0};
  zx_status_t status = ZX_OK;
  for (size_t at = header_size; status == ZX_OK && size - at >= JITDUMP_PREFIX_SIZE;) {
    const uint8_t* r = bytes + at;
    const uint32_t id = u32_at(r), record_size = u32_at(r + 4);
    if (record_size < JITDUMP_PREFIX_SIZE || record_size > size - at) break;  // torn tail
    if (id == JIT_CODE_CLOSE) break;
    if (id == JIT_CODE_LOAD && record_size > LOAD_NAME_OFFSET) {
      const char* name = (const char*)r + LOAD_NAME_OFFSET;
      const size_t max = record_size - LOAD_NAME_OFFSET;
      const size_t before = set->count;
      status = zxs_jit_symbols_add(set, u64_at(r + 32), u64_at(r + 40), name, strnlen(name, max));
      if (status == ZX_OK && set->count > before &&
          !code_map_put(&loaded, u64_at(r + 48), before)) {
        status = ZX_ERR_NO_MEMORY;
      }
    } else if (id == JIT_CODE_MOVE && record_size >= MOVE_SIZE) {
      status = move_code(set, &loaded, r);
    } else if (id == JIT_CODE_LOAD || id == JIT_CODE_MOVE) {
      set->skipped++;  // too short for its fields
    }
    at += record_size;
  }
  zxs_u64_map_free(&loaded);
  return status;
}

// --- Resolving overlaps -----------------------------------------------------------------------

static int compare_by_start(const void* a, const void* b) {
  const zxs_jit_symbol_t* x = a;
  const zxs_jit_symbol_t* y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static int compare_u64(const void* a, const void* b) {
  const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

// A max-heap of symbols (indices into `sorted`) by announcement order.
typedef struct order_heap {
  size_t* items;
  size_t count;
  const zxs_jit_symbol_t* sorted;
} order_heap_t;

static bool heap_above(const order_heap_t* h, size_t i, size_t j) {
  return h->sorted[h->items[i]].order > h->sorted[h->items[j]].order;
}

static void heap_swap(order_heap_t* h, size_t i, size_t j) {
  const size_t t = h->items[i];
  h->items[i] = h->items[j];
  h->items[j] = t;
}

static void heap_push(order_heap_t* h, size_t item) {
  size_t i = h->count++;
  h->items[i] = item;
  while (i > 0 && heap_above(h, i, (i - 1) / 2)) {
    heap_swap(h, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}

static void heap_pop(order_heap_t* h) {
  h->items[0] = h->items[--h->count];
  for (size_t i = 0;;) {
    size_t top = i;
    const size_t l = 2 * i + 1, r = 2 * i + 2;
    if (l < h->count && heap_above(h, l, top)) top = l;
    if (r < h->count && heap_above(h, r, top)) top = r;
    if (top == i) break;
    heap_swap(h, i, top);
    i = top;
  }
}

zx_status_t zxs_jit_symbols_resolve(zxs_jit_symbols_t* set) {
  const size_t n = set->count;
  if (set->resolved || n == 0) {
    set->resolved = true;
    return ZX_OK;
  }
  zxs_jit_symbol_t* sorted = malloc(n * sizeof(*sorted));
  uint64_t* points = malloc(2 * n * sizeof(*points));
  size_t* heap_items = malloc(n * sizeof(*heap_items));
  zxs_jit_symbol_t* pieces = malloc(2 * n * sizeof(*pieces));  // at most one per gap of points
  if (sorted == NULL || points == NULL || heap_items == NULL || pieces == NULL) {
    free(sorted);
    free(points);
    free(heap_items);
    free(pieces);
    return ZX_ERR_NO_MEMORY;
  }
  memcpy(sorted, set->symbols, n * sizeof(*sorted));
  qsort(sorted, n, sizeof(*sorted), compare_by_start);
  for (size_t i = 0; i < n; i++) {
    points[2 * i] = sorted[i].start;
    points[2 * i + 1] = sorted[i].start + sorted[i].size;
  }
  qsort(points, 2 * n, sizeof(*points), compare_u64);
  size_t point_count = 0;
  for (size_t i = 0; i < 2 * n; i++) {
    if (point_count == 0 || points[point_count - 1] != points[i]) points[point_count++] = points[i];
  }
  // Sweep the gaps between points; the latest symbol covering a gap owns it.
  order_heap_t heap = {.items = heap_items, .sorted = sorted};
  size_t next = 0, piece_count = 0;
  for (size_t k = 0; k + 1 < point_count; k++) {
    const uint64_t from = points[k], to = points[k + 1];
    while (next < n && sorted[next].start <= from) heap_push(&heap, next++);
    while (heap.count > 0 && sorted[heap.items[0]].start + sorted[heap.items[0]].size <= from) {
      heap_pop(&heap);
    }
    if (heap.count == 0) continue;
    const zxs_jit_symbol_t* owner = &sorted[heap.items[0]];
    zxs_jit_symbol_t* last = piece_count > 0 ? &pieces[piece_count - 1] : NULL;
    if (last != NULL && last->order == owner->order && last->start + last->size == from) {
      last->size += to - from;
    } else {
      pieces[piece_count++] = (zxs_jit_symbol_t){
          .start = from, .size = to - from, .name = owner->name, .order = owner->order};
    }
  }
  free(sorted);
  free(points);
  free(heap_items);
  free(set->symbols);
  set->symbols = pieces;
  set->count = piece_count;
  set->cap = 2 * n;
  set->resolved = true;
  return ZX_OK;
}

const zxs_jit_symbol_t* zxs_jit_symbols_lookup(const zxs_jit_symbols_t* set, uint64_t address) {
  const size_t below = zxs_sorted_count_at_or_below(set->symbols, set->count, sizeof(*set->symbols),
                                                    offsetof(zxs_jit_symbol_t, start), address);
  if (below == 0) return NULL;
  const zxs_jit_symbol_t* symbol = &set->symbols[below - 1];
  return address - symbol->start < symbol->size ? symbol : NULL;
}

zx_status_t zxs_jit_symbols_write_perf_map(const zxs_jit_symbols_t* set, char** text,
                                           size_t* size) {
  *text = NULL;
  *size = 0;
  if (set->count == 0) return ZX_OK;
  FILE* mem = open_memstream(text, size);
  if (mem == NULL) return ZX_ERR_NO_MEMORY;
  for (size_t i = 0; i < set->count; i++) {
    const zxs_jit_symbol_t* s = &set->symbols[i];
    fprintf(mem, "%" PRIx64 " %" PRIx64 " %s\n", s->start, s->size, zxs_jit_symbol_name(set, s));
  }
  const bool failed = ferror(mem) != 0;
  if (fclose(mem) != 0 || failed) {
    free(*text);
    *text = NULL;
    *size = 0;
    return ZX_ERR_NO_MEMORY;
  }
  return ZX_OK;
}

void zxs_jit_symbols_free(zxs_jit_symbols_t* set) {
  free(set->symbols);
  free(set->names);
  *set = (zxs_jit_symbols_t){.limit = set->limit};
}
