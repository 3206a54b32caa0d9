// The string builder (string_builder.h).
#include "string_builder.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kFirstCapacity = 64 };

bool zxs_reserve_bytes(void** data, size_t* capacity, size_t used, size_t more,
                       size_t first_capacity) {
  if (*data != NULL && more <= *capacity - used) {
    return true;
  }
  if (more > SIZE_MAX / 2 - used) {
    return false;
  }
  size_t grown = *capacity != 0 ? *capacity : first_capacity;
  while (more > grown - used) {
    grown *= 2;
  }
  void* moved = realloc(*data, grown);
  if (moved == NULL) {
    return false;
  }
  *data = moved;
  *capacity = grown;
  return true;
}

// Room for `more` bytes and the NUL after them.
static bool sb_reserve(zxs_sb_t* sb, size_t more) {
  if (sb->failed) {
    return false;
  }
  if (more == SIZE_MAX ||
      !zxs_reserve_bytes((void**)&sb->data, &sb->cap, sb->len, more + 1, kFirstCapacity)) {
    sb->failed = true;
    return false;
  }
  return true;
}

void zxs_sb_append(zxs_sb_t* sb, const char* s, size_t len) {
  if (sb_reserve(sb, len)) {
    memcpy(sb->data + sb->len, s, len);
    sb->len += len;
    sb->data[sb->len] = '\0';
  }
}

void zxs_sb_puts(zxs_sb_t* sb, const char* s) { zxs_sb_append(sb, s, strlen(s)); }

void zxs_sb_printf(zxs_sb_t* sb, const char* format, ...) {
  char small[128];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(small, sizeof(small), format, args);
  va_end(args);
  if (n < 0) {
    sb->failed = true;
    return;
  }
  if ((size_t)n < sizeof(small)) {
    zxs_sb_append(sb, small, (size_t)n);
    return;
  }
  if (sb_reserve(sb, (size_t)n)) {
    va_start(args, format);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, format, args);
    va_end(args);
    sb->len += (size_t)n;
  }
}

const char* zxs_sb_str(const zxs_sb_t* sb) { return sb->data != NULL ? sb->data : ""; }

void zxs_sb_free(zxs_sb_t* sb) {
  free(sb->data);
  memset(sb, 0, sizeof(*sb));
}

void zxs_sb_percent(zxs_sb_t* sb, uint64_t n, uint64_t total) {
  uint64_t hundredths = total == 0 ? 0 : (uint64_t)((double)n * 10000.0 / (double)total + 0.5);
  zxs_sb_printf(sb, "%" PRIu64 ".%02" PRIu64, hundredths / 100, hundredths % 100);
}
