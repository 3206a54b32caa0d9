// Thread names by tid (thread_index.h).
#include "thread_index.h"

#include <stddef.h>
#include <stdlib.h>

#include "sorted_search.h"

static int compare_entries(const void* a, const void* b) {
  const zxs_thread_index_entry_t* ea = a;
  const zxs_thread_index_entry_t* eb = b;
  if (ea->tid != eb->tid) return ea->tid < eb->tid ? -1 : 1;
  // One tid's records in the profile's order, whatever qsort does with equal keys.
  return ea->thread < eb->thread ? -1 : (ea->thread > eb->thread ? 1 : 0);
}

zx_status_t zxs_thread_index_init(zxs_thread_index_t* index, const zxs_profile_t* profile) {
  index->count = 0;
  index->sorted = NULL;
  if (profile->thread_count == 0) {
    return ZX_OK;
  }
  index->sorted = malloc(profile->thread_count * sizeof(index->sorted[0]));
  if (index->sorted == NULL) {
    return ZX_ERR_NO_MEMORY;
  }
  for (size_t i = 0; i < profile->thread_count; i++) {
    index->sorted[i] =
        (zxs_thread_index_entry_t){.tid = profile->threads[i].tid, .thread = &profile->threads[i]};
  }
  index->count = profile->thread_count;
  qsort(index->sorted, index->count, sizeof(index->sorted[0]), compare_entries);
  return ZX_OK;
}

const char* zxs_thread_index_name(const zxs_thread_index_t* index, zx_koid_t tid) {
  size_t i = zxs_sorted_count_below(index->sorted, index->count, sizeof(index->sorted[0]),
                                    offsetof(zxs_thread_index_entry_t, tid), tid);
  // The first record of that tid with a name (hand-built profiles may repeat a tid).
  for (; i < index->count && index->sorted[i].tid == tid; i++) {
    const char* name = index->sorted[i].thread->name;
    if (name != NULL && name[0] != '\0') {
      return name;
    }
  }
  return NULL;
}

void zxs_thread_index_free(zxs_thread_index_t* index) {
  free(index->sorted);
  index->sorted = NULL;
  index->count = 0;
}
