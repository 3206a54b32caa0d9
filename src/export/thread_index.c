// Thread names by tid (thread_index.h).
#include "thread_index.h"

#include <stdlib.h>

static int compare_thread_ptrs(const void* a, const void* b) {
  const zxs_profile_thread_t* ta = *(const zxs_profile_thread_t* const*)a;
  const zxs_profile_thread_t* tb = *(const zxs_profile_thread_t* const*)b;
  return ta->tid < tb->tid ? -1 : (ta->tid > tb->tid ? 1 : 0);
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
    index->sorted[i] = &profile->threads[i];
  }
  index->count = profile->thread_count;
  qsort(index->sorted, index->count, sizeof(index->sorted[0]), compare_thread_ptrs);
  return ZX_OK;
}

const char* zxs_thread_index_name(const zxs_thread_index_t* index, zx_koid_t tid) {
  size_t lo = 0;
  size_t hi = index->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (index->sorted[mid]->tid < tid) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  // The first record of that tid with a name (hand-built profiles may repeat a tid).
  for (; lo < index->count && index->sorted[lo]->tid == tid; lo++) {
    const char* name = index->sorted[lo]->name;
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
