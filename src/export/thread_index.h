// A profile's thread names by tid (internal to src/export).
#ifndef ZXSAMPLER_SRC_REPORT_THREAD_INDEX_H_
#define ZXSAMPLER_SRC_REPORT_THREAD_INDEX_H_

#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>

#include "profile.h"

typedef struct zxs_thread_index_entry {
  uint64_t tid;  // the thread's, where sorted_search.h finds it
  const zxs_profile_thread_t* thread;
} zxs_thread_index_entry_t;

// Thread names by tid.
typedef struct zxs_thread_index {
  zxs_thread_index_entry_t* sorted;  // by tid
  size_t count;
} zxs_thread_index_t;

zx_status_t zxs_thread_index_init(zxs_thread_index_t* index, const zxs_profile_t* profile);
// The thread's name, NULL when unknown (no thread record or an empty name).
const char* zxs_thread_index_name(const zxs_thread_index_t* index, zx_koid_t tid);
void zxs_thread_index_free(zxs_thread_index_t* index);

#endif  // ZXSAMPLER_SRC_REPORT_THREAD_INDEX_H_
