// What a feature may ask of the platform, on every platform (process_facts.h).
#include "process_facts.h"

#include "platform.h"

zx_koid_t zxs_facts_process_koid(void) { return zxs_prim_process_koid(); }

zx_status_t zxs_facts_process_name(char* buf, size_t size) {
  return zxs_prim_process_name(buf, size);
}

void zxs_facts_thread_is_library(void) { zxs_prim_thread_is_library(); }

zx_status_t zxs_facts_thread_name(zx_koid_t koid, char* buf, size_t size) {
  return zxs_prim_thread_name(koid, buf, size);
}

uint64_t zxs_facts_ticks_per_second(void) { return zxs_prim_ticks_per_second(); }
