// Interned strings and the string hash (internal to src/export).
#ifndef ZXSAMPLER_SRC_REPORT_STRING_TABLE_H_
#define ZXSAMPLER_SRC_REPORT_STRING_TABLE_H_

#include <stddef.h>
#include <stdint.h>

// Interned strings: each distinct string gets the next index, from 0.
typedef struct zxs_strtab {
  char** strings;  // by index, owned
  size_t count;
  size_t strings_cap;
  uint32_t* slots;  // open addressing: index + 1, 0 = empty
  size_t slot_count;
} zxs_strtab_t;

// The index of `s` (added if new); -1 when out of memory.
int64_t zxs_strtab_intern(zxs_strtab_t* tab, const char* s);
void zxs_strtab_free(zxs_strtab_t* tab);

// 32-bit FNV-1a of a string (deterministic colours, hashing).
uint32_t zxs_hash_string(const char* s, size_t len);

#endif  // ZXSAMPLER_SRC_REPORT_STRING_TABLE_H_
