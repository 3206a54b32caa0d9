// Module lists: indexing and address-to-module lookups (capture: modules_capture.c).
#include "modules.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sorted_search.h"

const zxs_segment_t* zxs_segment_at_page(const zxs_segment_t* segments, size_t count,
                                         uint64_t pgoff) {
  for (size_t k = 0; k < count; k++) {
    if ((segments[k].offset & ~(uint64_t)4095) == (pgoff & ~(uint64_t)4095)) return &segments[k];
  }
  return NULL;
}

bool zxs_segment_remapped(const zxs_segment_t* segments, size_t count, uint64_t pgoff, uint64_t len,
                          uint32_t flags, zxs_segment_t* piece) {
  // A segment that starts in this page first: its page may also end the segment before it
  // (p_vaddr - p_offset differs between segments, as in rustc's and lld's output).
  const zxs_segment_t* seg = zxs_segment_at_page(segments, count, pgoff);
  for (size_t k = 0; k < count && seg == NULL; k++) {
    const zxs_segment_t* s = &segments[k];
    if ((s->offset & ~(uint64_t)4095) <= pgoff && pgoff - s->offset < s->memsz) seg = s;
  }
  if (seg == NULL) return false;
  const uint64_t segment_left = seg->offset + seg->memsz - pgoff;  // no bytes past the segment
  *piece = (zxs_segment_t){.vaddr = seg->vaddr + (pgoff - seg->offset),  // wraps back for
                                                                         // pgoff < offset
                           .memsz = len < segment_left ? len : segment_left,
                           .offset = pgoff,
                           .flags = flags};
  return true;
}

void zxs_modules_free(zxs_module_list_t* list) {
  if (list == NULL) {
    return;
  }
  for (size_t i = 0; i < list->count; i++) {
    free(list->modules[i].path);
    free(list->modules[i].segments);
  }
  free(list->modules);
  list->modules = NULL;
  list->count = 0;
}

static int compare_modules(const void* a, const void* b) {
  const zxs_module_t* ma = a;
  const zxs_module_t* mb = b;
  if (ma->start != mb->start) {
    return ma->start < mb->start ? -1 : 1;
  }
  return ma->end < mb->end ? -1 : (ma->end > mb->end ? 1 : 0);
}

zx_status_t zxs_modules_index(zxs_module_list_t* list) {
  if (list == NULL || (list->count > 0 && list->modules == NULL)) {
    return ZX_ERR_INVALID_ARGS;
  }
  for (size_t i = 0; i < list->count; i++) {
    zxs_module_t* m = &list->modules[i];
    uint64_t lo = UINT64_MAX;
    uint64_t hi = 0;
    for (size_t j = 0; j < m->segment_count; j++) {
      const zxs_segment_t* s = &m->segments[j];
      uint64_t start = m->load_bias + s->vaddr;  // wraps like the loader's arithmetic
      if (s->memsz > UINT64_MAX - start) {
        return ZX_ERR_INVALID_ARGS;
      }
      if (s->memsz == 0) {
        continue;
      }
      if (start < lo) {
        lo = start;
      }
      if (start + s->memsz > hi) {
        hi = start + s->memsz;
      }
    }
    m->start = lo <= hi ? lo : 0;
    m->end = lo <= hi ? hi : 0;
  }
  if (list->count > 1) {
    qsort(list->modules, list->count, sizeof(list->modules[0]), compare_modules);
  }
  return ZX_OK;
}

zx_status_t zxs_modules_find(const zxs_module_list_t* list, uint64_t pc,
                             const zxs_module_t** module, const zxs_segment_t** segment) {
  if (list == NULL || (list->count > 0 && list->modules == NULL)) {
    return ZX_ERR_INVALID_ARGS;
  }
  // Last module with start <= pc. Modules do not overlap (the loader reserves each one's whole
  // span), so it is the only candidate.
  const size_t lo = zxs_sorted_count_at_or_below(
      list->modules, list->count, sizeof(list->modules[0]), offsetof(zxs_module_t, start), pc);
  // Walk back over empty modules (start == end) that sort in front of real ones.
  for (size_t i = lo; i > 0; i--) {
    const zxs_module_t* m = &list->modules[i - 1];
    if (m->start == m->end) {
      continue;
    }
    if (pc >= m->end) {
      return ZX_ERR_NOT_FOUND;
    }
    for (size_t j = 0; j < m->segment_count; j++) {
      const zxs_segment_t* s = &m->segments[j];
      uint64_t start = m->load_bias + s->vaddr;
      if (pc >= start && pc - start < s->memsz) {
        if (module != NULL) {
          *module = m;
        }
        if (segment != NULL) {
          *segment = s;
        }
        return ZX_OK;
      }
    }
    return ZX_ERR_NOT_FOUND;
  }
  return ZX_ERR_NOT_FOUND;
}

uint64_t zxs_module_file_address(const zxs_module_t* module, uint64_t pc) {
  return pc - module->load_bias;
}

zx_status_t zxs_modules_file_address(const zxs_module_list_t* list, uint64_t pc, uint32_t flags,
                                     const zxs_module_t** module, uint64_t* file_address) {
  if ((flags & ~ZXS_MODULES_RETURN_ADDRESS) != 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  uint64_t probe = pc;
  if ((flags & ZXS_MODULES_RETURN_ADDRESS) != 0) {
    if (pc == 0) {
      return ZX_ERR_NOT_FOUND;
    }
    probe = pc - 1;
  }
  const zxs_module_t* m = NULL;
  zx_status_t status = zxs_modules_find(list, probe, &m, NULL);
  if (status != ZX_OK) {
    return status;
  }
  if (module != NULL) {
    *module = m;
  }
  if (file_address != NULL) {
    *file_address = zxs_module_file_address(m, pc);
  }
  return ZX_OK;
}

zx_status_t zxs_build_id_to_hex(const uint8_t* id, size_t size, char* buf, size_t buf_size) {
  static const char kDigits[] = "0123456789abcdef";
  if ((id == NULL && size > 0) || buf == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (size > (SIZE_MAX - 1) / 2 || buf_size < 2 * size + 1) {
    return ZX_ERR_BUFFER_TOO_SMALL;
  }
  for (size_t i = 0; i < size; i++) {
    buf[2 * i] = kDigits[id[i] >> 4];
    buf[2 * i + 1] = kDigits[id[i] & 0xf];
  }
  buf[2 * size] = '\0';
  return ZX_OK;
}

#define FNV64_OFFSET_BASIS 0xcbf29ce484222325ull
#define FNV64_PRIME 0x100000001b3ull

void zxs_id_hash_init(zxs_id_hash_t* hash, zxs_id_source_t source) {
  // Lane 1 starts from the basis with the source mixed in twice, so the lanes differ.
  hash->lanes[0] = (FNV64_OFFSET_BASIS ^ (uint64_t)source) * FNV64_PRIME;
  hash->lanes[1] = (hash->lanes[0] ^ 0xff) * FNV64_PRIME;
}

void zxs_id_hash_add(zxs_id_hash_t* hash, const void* data, size_t size) {
  const uint8_t* bytes = data;
  uint64_t a = hash->lanes[0];
  uint64_t b = hash->lanes[1];
  for (size_t i = 0; i < size; i++) {
    a = (a ^ bytes[i]) * FNV64_PRIME;
    b = (b ^ (uint8_t)~bytes[i]) * FNV64_PRIME;  // the complement: b is not a shifted a
  }
  hash->lanes[0] = a;
  hash->lanes[1] = b;
}

void zxs_id_hash_finish(const zxs_id_hash_t* hash, uint8_t id[ZXS_DERIVED_ID_SIZE]) {
  for (size_t lane = 0; lane < 2; lane++) {
    for (size_t i = 0; i < 8; i++) {  // big-endian: the hex reads as the two numbers
      id[8 * lane + i] = (uint8_t)(hash->lanes[lane] >> (56 - 8 * i));
    }
  }
}

void zxs_derived_id(zxs_id_source_t source, const void* data, size_t size,
                    uint8_t id[ZXS_DERIVED_ID_SIZE]) {
  zxs_id_hash_t hash;
  zxs_id_hash_init(&hash, source);
  zxs_id_hash_add(&hash, data, size);
  zxs_id_hash_finish(&hash, id);
}
