#include "profile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char* zxs_profile_location_label(const zxs_profile_t* profile, uint32_t location, char* buf,
                                       size_t buf_size) {
  const zxs_profile_location_t* loc = &profile->locations[location];
  if (loc->function != NULL) {
    snprintf(buf, buf_size, "%s", loc->function);
  } else if (loc->module >= 0) {
    const char* path = profile->modules.modules[loc->module].path;
    const char* base = strrchr(path, '/');
    snprintf(buf, buf_size, "%s+0x%" PRIx64, base != NULL ? base + 1 : path, loc->file_address);
  } else {
    snprintf(buf, buf_size, "0x%" PRIx64, loc->address);
  }
  return buf;
}

typedef struct string_block {
  struct string_block* next;
  char text[];
} string_block_t;

const char* zxs_profile_strdup(zxs_profile_t* profile, const char* s) {
  size_t len = strlen(s);
  string_block_t* block = malloc(sizeof(*block) + len + 1);
  if (block == NULL) return NULL;
  memcpy(block->text, s, len + 1);
  block->next = profile->strings;
  profile->strings = block;
  return block->text;
}

void zxs_profile_free(zxs_profile_t* profile) {
  for (string_block_t* b = profile->strings; b != NULL;) {
    string_block_t* next = b->next;
    free(b);
    b = next;
  }
  zxs_modules_free(&profile->modules);
  free(profile->threads);
  free(profile->locations);
  free(profile->samples);
  free(profile->frames);
  memset(profile, 0, sizeof(*profile));
}
