// A growable NUL-terminated string (internal to src/export), and the growth of a byte buffer
// that it and the protobuf writer share.
#ifndef ZXSAMPLER_SRC_REPORT_STRING_BUILDER_H_
#define ZXSAMPLER_SRC_REPORT_STRING_BUILDER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Makes room for `more` bytes after the `used` ones of the malloc'd buffer *data of *capacity
// bytes (NULL and 0 at first): doubles the capacity (from `first_capacity`) and reallocs. False
// when out of memory or past SIZE_MAX / 2; the buffer is unchanged then.
bool zxs_reserve_bytes(void** data, size_t* capacity, size_t used, size_t more,
                       size_t first_capacity);

// A growable NUL-terminated string; allocation failure is sticky (`failed`).
typedef struct zxs_sb {
  char* data;  // NULL until something is appended
  size_t len;
  size_t cap;
  bool failed;
} zxs_sb_t;

void zxs_sb_append(zxs_sb_t* sb, const char* s, size_t len);
void zxs_sb_puts(zxs_sb_t* sb, const char* s);
void zxs_sb_printf(zxs_sb_t* sb, const char* format, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
// The content ("" when empty); stays owned by the builder.
const char* zxs_sb_str(const zxs_sb_t* sb);
void zxs_sb_free(zxs_sb_t* sb);

// Appends n / total as a percentage with two decimals ("12.34"), without the locale-dependent
// %f; "0.00" when total is 0.
void zxs_sb_percent(zxs_sb_t* sb, uint64_t n, uint64_t total);

#endif  // ZXSAMPLER_SRC_REPORT_STRING_BUILDER_H_
