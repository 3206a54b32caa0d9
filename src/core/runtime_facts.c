// What a feature may ask of the platform where sessions are the library's own: the clock, the
// calling thread and its runtime, buffered samples (process_facts.h).
#include <string.h>

#include "platform.h"
#include "process_facts.h"
#include "ticks.h"

zx_time_t zxs_facts_now_ns(void) {
  return (zx_time_t)zxs_ticks_to_ns(zxs_prim_ticks(), zxs_prim_ticks_per_second());
}

zx_koid_t zxs_facts_current_thread_koid(void) { return zxs_prim_current_thread_koid(); }

void zxs_facts_follow_current_thread(void) {
  (void)zxs_prim_runtime_self_prepare();  // without it: no queue time
  zxs_prim_thread_t self;
  if (zxs_prim_thread_self(&self) == ZX_OK) (void)zxs_prim_runtime_keep_history(&self);
}

uint32_t zxs_facts_runtime_self_now(int64_t* cpu_time, int64_t* queue_time) {
  return zxs_prim_runtime_self_now(cpu_time, queue_time);
}

uint32_t zxs_facts_runtime_between(zx_koid_t koid, zx_time_t since, zx_time_t until,
                                   zx_info_task_runtime_t* out) {
  zxs_prim_runtime_t rt;
  memset(out, 0, sizeof(*out));
  if (zxs_prim_runtime_between(koid, since, until, &rt) != ZX_OK) return 0;
  *out = rt.info;
  return rt.fields;
}

void zxs_facts_flush_samples(void) { zxs_prim_sampling_flush(); }
