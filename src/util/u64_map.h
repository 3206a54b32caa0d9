// The one map of integer keys internal code uses: open addressing with linear probing, at most
// half full, doubling from 256 slots (internal; not async-signal-safe: it allocates). Every key
// but UINT64_MAX can be kept (keys are stored + 1, so that 0 marks an empty slot).
#ifndef ZXSAMPLER_SRC_UTIL_U64_MAP_H_
#define ZXSAMPLER_SRC_UTIL_U64_MAP_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct zxs_u64_map {
  uint64_t* keys;  // key + 1; 0: empty
  uint64_t* values;
  size_t size;  // a power of two, or 0 before the first put
  size_t used;
} zxs_u64_map_t;

static inline size_t zxs_u64_map_slot(const zxs_u64_map_t* m, uint64_t stored) {
  size_t slot = (size_t)((stored * 0x9e3779b97f4a7c15u) >> 32) & (m->size - 1);
  while (m->keys[slot] != 0 && m->keys[slot] != stored) slot = (slot + 1) & (m->size - 1);
  return slot;
}

// Sets `key` to `value`. False (the map untouched) when the key is UINT64_MAX or there is no
// memory to grow.
static inline bool zxs_u64_map_put(zxs_u64_map_t* m, uint64_t key, uint64_t value) {
  if (key == UINT64_MAX) return false;
  if (2 * (m->used + 1) > m->size) {
    zxs_u64_map_t grown = {.size = m->size == 0 ? 256 : 2 * m->size, .used = m->used};
    grown.keys = (uint64_t*)calloc(grown.size, sizeof(*grown.keys));
    grown.values = (uint64_t*)malloc(grown.size * sizeof(*grown.values));
    if (grown.keys == NULL || grown.values == NULL) {
      free(grown.keys);
      free(grown.values);
      return false;
    }
    for (size_t i = 0; i < m->size; i++) {
      if (m->keys[i] == 0) continue;
      const size_t slot = zxs_u64_map_slot(&grown, m->keys[i]);
      grown.keys[slot] = m->keys[i];
      grown.values[slot] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    *m = grown;
  }
  const size_t slot = zxs_u64_map_slot(m, key + 1);
  if (m->keys[slot] == 0) m->used++;
  m->keys[slot] = key + 1;
  m->values[slot] = value;
  return true;
}

// True, with its value in *value, when `key` is in the map.
static inline bool zxs_u64_map_get(const zxs_u64_map_t* m, uint64_t key, uint64_t* value) {
  if (m->size == 0 || key == UINT64_MAX) return false;
  const size_t slot = zxs_u64_map_slot(m, key + 1);
  if (m->keys[slot] == 0) return false;
  *value = m->values[slot];
  return true;
}

// For walking the map: true, with the entry's key, when slot `slot` (< m->size) holds one.
static inline bool zxs_u64_map_key_at(const zxs_u64_map_t* m, size_t slot, uint64_t* key) {
  if (m->keys[slot] == 0) return false;
  *key = m->keys[slot] - 1;
  return true;
}

static inline void zxs_u64_map_free(zxs_u64_map_t* m) {
  free(m->keys);
  free(m->values);
  *m = (zxs_u64_map_t){0};
}

#endif  // ZXSAMPLER_SRC_UTIL_U64_MAP_H_
