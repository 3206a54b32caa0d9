// Interned strings (string_table.h).
#include "string_table.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array_grow.h"

uint32_t zxs_hash_string(const char* s, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) {
    h = (h ^ (uint8_t)s[i]) * 16777619u;
  }
  return h;
}

static bool strtab_grow(zxs_strtab_t* tab) {
  size_t slot_count = tab->slot_count != 0 ? tab->slot_count * 2 : 256;
  uint32_t* slots = calloc(slot_count, sizeof(slots[0]));
  if (slots == NULL) {
    return false;
  }
  for (size_t i = 0; i < tab->count; i++) {
    const char* s = tab->strings[i];
    size_t at = zxs_hash_string(s, strlen(s)) & (slot_count - 1);
    while (slots[at] != 0) {
      at = (at + 1) & (slot_count - 1);
    }
    slots[at] = (uint32_t)(i + 1);
  }
  free(tab->slots);
  tab->slots = slots;
  tab->slot_count = slot_count;
  return true;
}

int64_t zxs_strtab_intern(zxs_strtab_t* tab, const char* s) {
  if (tab->count >= UINT32_MAX - 1) {
    return -1;
  }
  // Keep the load factor under 1/2.
  if ((tab->count + 1) * 2 > tab->slot_count && !strtab_grow(tab)) {
    return -1;
  }
  size_t len = strlen(s);
  size_t at = zxs_hash_string(s, len) & (tab->slot_count - 1);
  while (tab->slots[at] != 0) {
    uint32_t index = tab->slots[at] - 1;
    if (strcmp(tab->strings[index], s) == 0) {
      return index;
    }
    at = (at + 1) & (tab->slot_count - 1);
  }
  if (!zxs_array_grow((void**)&tab->strings, &tab->strings_cap, tab->count + 1,
                      sizeof(tab->strings[0]))) {
    return -1;
  }
  char* copy = malloc(len + 1);
  if (copy == NULL) {
    return -1;
  }
  memcpy(copy, s, len + 1);
  tab->strings[tab->count] = copy;
  tab->slots[at] = (uint32_t)(tab->count + 1);
  return (int64_t)tab->count++;
}

void zxs_strtab_free(zxs_strtab_t* tab) {
  for (size_t i = 0; i < tab->count; i++) {
    free(tab->strings[i]);
  }
  free(tab->strings);
  free(tab->slots);
  memset(tab, 0, sizeof(*tab));
}
