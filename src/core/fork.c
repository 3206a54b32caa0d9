// The library's one pthread_atfork registration (fork.h).
#include "fork.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

static _Atomic(const zxs_fork_steps_t*) g_steps[ZXS_FORK_STAGE_COUNT];
// The steps the forking thread prepared, for its parent and child steps: a stage registered
// while the fork was in flight (between prepare and parent) takes no part in it, so no step
// releases what its prepare did not take. The child's thread is the forking thread, whose copy
// of this was touched (allocated) in prepare.
static _Thread_local const zxs_fork_steps_t* t_prepared[ZXS_FORK_STAGE_COUNT];

static void on_prepare(void) {
  for (int stage = 0; stage < ZXS_FORK_STAGE_COUNT; stage++) {
    const zxs_fork_steps_t* s = atomic_load_explicit(&g_steps[stage], memory_order_acquire);
    t_prepared[stage] = s;
    if (s != NULL && s->prepare != NULL) s->prepare();
  }
}

static void on_parent(void) {
  for (int stage = ZXS_FORK_STAGE_COUNT - 1; stage >= 0; stage--) {
    const zxs_fork_steps_t* s = t_prepared[stage];
    if (s != NULL && s->parent != NULL) s->parent();
  }
}

// [signal-safe] as the steps are.
static void on_child(void) {
  for (int stage = ZXS_FORK_STAGE_COUNT - 1; stage >= 0; stage--) {
    const zxs_fork_steps_t* s = t_prepared[stage];
    if (s != NULL && s->child != NULL) s->child();
  }
}

static void register_handlers(void) { (void)pthread_atfork(on_prepare, on_parent, on_child); }

void zxs_fork_register(zxs_fork_stage_t stage, const zxs_fork_steps_t* steps) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if ((int)stage < 0 || stage >= ZXS_FORK_STAGE_COUNT || steps == NULL) return;
  pthread_once(&once, register_handlers);
  const zxs_fork_steps_t* expected = NULL;  // the first registration of a stage stays
  atomic_compare_exchange_strong_explicit(&g_steps[stage], &expected, steps, memory_order_release,
                                          memory_order_relaxed);
}
