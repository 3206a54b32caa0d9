// The per-CPU state protocol, one deterministic interleaving at a time. Shutdown's waits call
// zxs_prim_relax(), which the fake backend turns into a hook: the hook observes the wait and
// plays the other side (ends a write, clears a timer) on a chosen relax.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
// cmocka needs the headers above first.
#include <cmocka.h>

#include "fake_platform.h"
#include "percpu_state.h"

#define NCPU 4
#define REGION_BYTES 512

static zxs_percpu_t g_cpus[NCPU];
static _Alignas(8) uint8_t g_regions[NCPU][REGION_BYTES];

static int setup(void** state) {
  (void)state;
  fake_reset();
  memset(g_cpus, 0, sizeof(g_cpus));
  memset(g_regions, 0, sizeof(g_regions));
  for (int i = 0; i < NCPU; i++) {
    zxs_percpu_setup(&g_cpus[i], g_regions[i], REGION_BYTES, 7);
  }
  return 0;
}

static void enable_all(void) {
  for (int i = 0; i < NCPU; i++) zxs_percpu_enable_writes(&g_cpus[i]);
}

// --- A relax hook that plays the other side of the protocol -----------------------------------

typedef struct {
  zxs_percpu_t* cpu;   // the state the action applies to
  uint64_t end_at[2];  // relax call numbers at which to end one write each (UINT64_MAX: never)
  uint64_t clear_at;   // relax call at which to clear one timer (UINT64_MAX: never)
  zxs_percpu_t* timer_cpu;
  uint64_t calls;  // relaxes seen
  uint32_t ended;  // writes ended from the hook
  bool cleared;
  // What the hook saw on each call (first 16).
  uint32_t seen_writes[16];
  uint32_t seen_timers[16];
  bool seen_enabled[16];
  bool late_begin_admitted;  // a writer arriving during shutdown got in (must not happen)
} hook_t;

static void hook_init(hook_t* h, zxs_percpu_t* cpu) {
  memset(h, 0, sizeof(*h));
  h->cpu = cpu;
  h->end_at[0] = h->end_at[1] = UINT64_MAX;
  h->clear_at = UINT64_MAX;
}

static void relax_hook(void* ctx, uint64_t call) {
  hook_t* h = ctx;
  assert_int_equal(call, h->calls);  // the fake numbers relaxes 0, 1, 2...
  h->calls++;
  if (call < 16) {
    h->seen_writes[call] = zxs_percpu_pending_writes(h->cpu);
    h->seen_timers[call] = zxs_percpu_pending_timers(h->timer_cpu ? h->timer_cpu : h->cpu);
    h->seen_enabled[call] = zxs_percpu_writes_enabled(h->cpu);
  }
  // A writer arriving now (after phase 1) is refused and holds nothing.
  if (zxs_percpu_begin_write(h->cpu)) {
    h->late_begin_admitted = true;
    zxs_percpu_end_write(h->cpu);
  }
  if (call == h->clear_at) {
    zxs_percpu_timer_clear(h->timer_cpu);
    h->cleared = true;
  }
  for (int i = 0; i < 2; i++) {
    if (call == h->end_at[i]) {
      zxs_percpu_end_write(h->cpu);
      h->ended++;
    }
  }
  assert_true(call < 1000);  // a wait that never ends fails the test instead of hanging
}

// --- Writers -------------------------------------------------------------------------------------

static void test_begin_requires_enabled(void** state) {
  (void)state;
  zxs_percpu_t* cpu = &g_cpus[0];
  assert_false(zxs_percpu_writes_enabled(cpu));
  assert_false(zxs_percpu_begin_write(cpu));
  assert_int_equal(zxs_percpu_pending_writes(cpu), 0);

  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_writes_enabled(cpu));
  assert_true(zxs_percpu_begin_write(cpu));
  assert_int_equal(zxs_percpu_pending_writes(cpu), 1);
  zxs_percpu_end_write(cpu);
  assert_int_equal(zxs_percpu_pending_writes(cpu), 0);
  // Other CPUs were not touched.
  assert_false(zxs_percpu_writes_enabled(&g_cpus[1]));
}

static void test_shutdown_waits_for_writer_begun_before_disable(void** state) {
  (void)state;
  enable_all();
  zxs_percpu_t* cpu = &g_cpus[2];
  assert_true(zxs_percpu_begin_write(cpu));

  hook_t h;
  hook_init(&h, cpu);
  h.end_at[0] = 3;  // the writer finishes during the 4th relax
  fake_set_relax_hook(relax_hook, &h);
  zxs_percpu_shutdown(g_cpus, NCPU, NULL, NULL);

  // Shutdown kept waiting until the write ended, and returned right after.
  assert_int_equal(h.ended, 1);
  assert_int_equal(h.calls, 4);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(h.seen_writes[i], 1);
    assert_false(h.seen_enabled[i]);  // phase 1 came before any wait
  }
  assert_false(h.late_begin_admitted);
  assert_int_equal(zxs_percpu_pending_writes(cpu), 0);
}

static void test_writer_after_disable_gets_false(void** state) {
  (void)state;
  zxs_percpu_t* cpu = &g_cpus[0];
  zxs_percpu_enable_writes(cpu);
  zxs_percpu_disable_writes(cpu);
  uint64_t before = atomic_load(&cpu->state);
  assert_false(zxs_percpu_begin_write(cpu));
  assert_int_equal(atomic_load(&cpu->state), before);  // holds nothing, changed nothing
  assert_int_equal(zxs_percpu_pending_writes(cpu), 0);

  // So shutdown has nothing to wait for.
  hook_t h;
  hook_init(&h, cpu);
  fake_set_relax_hook(relax_hook, &h);
  zxs_percpu_shutdown(g_cpus, NCPU, NULL, NULL);
  assert_int_equal(h.calls, 0);
}

static void test_shutdown_idle_does_not_wait(void** state) {
  (void)state;
  enable_all();
  hook_t h;
  hook_init(&h, &g_cpus[0]);
  fake_set_relax_hook(relax_hook, &h);
  zxs_percpu_shutdown(g_cpus, NCPU, NULL, NULL);
  assert_int_equal(h.calls, 0);
  for (int i = 0; i < NCPU; i++) assert_false(zxs_percpu_writes_enabled(&g_cpus[i]));
  // Shutdown of states that never started is fine too.
  zxs_percpu_shutdown(g_cpus, NCPU, NULL, NULL);
  assert_int_equal(h.calls, 0);
}

static void test_nested_writers_both_must_end(void** state) {
  (void)state;
  enable_all();
  zxs_percpu_t* cpu = &g_cpus[1];
  // A writer is interrupted mid-record by a handler that writes on the same CPU.
  assert_true(zxs_percpu_begin_write(cpu));
  uint8_t* outer = zxs_percpu_reserve(cpu, 16);
  assert_true(zxs_percpu_begin_write(cpu));
  uint8_t* inner = zxs_percpu_reserve(cpu, 24);
  assert_int_equal(zxs_percpu_pending_writes(cpu), 2);
  assert_ptr_equal(outer, g_regions[1]);
  assert_ptr_equal(inner, g_regions[1] + 16);  // disjoint, in reservation order

  hook_t h;
  hook_init(&h, cpu);
  h.end_at[0] = 1;  // the inner one ends first...
  h.end_at[1] = 4;  // ...the outer one later
  fake_set_relax_hook(relax_hook, &h);
  zxs_percpu_shutdown(g_cpus, NCPU, NULL, NULL);

  assert_int_equal(h.ended, 2);
  assert_int_equal(h.calls, 5);
  assert_int_equal(h.seen_writes[0], 2);
  assert_int_equal(h.seen_writes[1], 2);  // seen before the hook's action on that call
  for (int i = 2; i <= 4; i++) assert_int_equal(h.seen_writes[i], 1);  // one still in flight
  assert_int_equal(zxs_percpu_pending_writes(cpu), 0);
}

static void test_migrated_writer_ends_where_it_began(void** state) {
  (void)state;
  enable_all();
  // The handler picks the state of the CPU it runs on, then keeps that pointer: a thread that
  // migrates mid-write still reserves in and ends on the state it began on.
  fake_set_current_cpu(0);
  zxs_percpu_t* held = &g_cpus[zxs_prim_current_cpu()];
  assert_true(zxs_percpu_begin_write(held));
  fake_set_current_cpu(1);  // preempted and migrated
  assert_int_equal(zxs_prim_current_cpu(), 1);
  uint8_t* p = zxs_percpu_reserve(held, 8);
  assert_ptr_equal(p, g_regions[0]);
  assert_int_equal(atomic_load(&g_cpus[1].reserved), 0);
  assert_int_equal(zxs_percpu_pending_writes(&g_cpus[0]), 1);
  assert_int_equal(zxs_percpu_pending_writes(&g_cpus[1]), 0);

  // Shutdown waits on CPU 0's state, where the write is held, until it ends there.
  hook_t h;
  hook_init(&h, held);
  h.end_at[0] = 2;
  fake_set_relax_hook(relax_hook, &h);
  zxs_percpu_shutdown(g_cpus, NCPU, NULL, NULL);
  assert_int_equal(h.ended, 1);
  assert_int_equal(h.calls, 3);
  for (int i = 0; i < NCPU; i++) assert_int_equal(zxs_percpu_pending_writes(&g_cpus[i]), 0);
}

// --- Timers --------------------------------------------------------------------------------------

static void test_timer_set_refused_when_disabled(void** state) {
  (void)state;
  zxs_percpu_t* cpu = &g_cpus[0];
  assert_false(zxs_percpu_timer_set(cpu));  // never enabled
  assert_int_equal(zxs_percpu_pending_timers(cpu), 0);

  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_timer_set(cpu));
  assert_int_equal(zxs_percpu_pending_timers(cpu), 1);
  assert_int_equal(zxs_percpu_pending_writes(cpu), 0);  // the counts do not mix

  zxs_percpu_disable_writes(cpu);
  assert_false(zxs_percpu_timer_set(cpu));
  assert_int_equal(zxs_percpu_pending_timers(cpu), 1);  // the earlier mark stays until cleared
  zxs_percpu_timer_clear(cpu);
  assert_int_equal(zxs_percpu_pending_timers(cpu), 0);
}

static void test_rearm_after_disable_drops_mark(void** state) {
  (void)state;
  zxs_percpu_t* cpu = &g_cpus[0];
  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_timer_set(cpu));
  assert_true(zxs_percpu_timer_rearm(cpu));  // still enabled: keep the mark, re-arm
  assert_int_equal(zxs_percpu_pending_timers(cpu), 1);

  zxs_percpu_disable_writes(cpu);
  assert_false(zxs_percpu_timer_rearm(cpu));  // the callback's last run
  assert_int_equal(zxs_percpu_pending_timers(cpu), 0);
  assert_false(zxs_percpu_writes_enabled(cpu));
}

typedef struct {
  hook_t* hook;
  uint32_t calls;
} cancel_ctx_t;

static void cancel_timers(void* ctx) {
  cancel_ctx_t* c = ctx;
  c->calls++;
  // Between phase 1 and the phase-2 wait: everything disabled, nothing waited for yet.
  for (int i = 0; i < NCPU; i++) assert_false(zxs_percpu_writes_enabled(&g_cpus[i]));
  assert_int_equal(c->hook->calls, 0);
  assert_int_equal(zxs_percpu_pending_timers(&g_cpus[0]), 1);
  assert_int_equal(zxs_percpu_pending_timers(&g_cpus[3]), 1);
  // CPU 0's timer was cancelled before it fired; CPU 3's callback is running and will drop its
  // mark later (the hook plays it).
  zxs_percpu_timer_clear(&g_cpus[0]);
}

static void test_cancel_timers_between_phase1_and_phase2(void** state) {
  (void)state;
  enable_all();
  assert_true(zxs_percpu_timer_set(&g_cpus[0]));
  assert_true(zxs_percpu_timer_set(&g_cpus[3]));
  assert_true(zxs_percpu_begin_write(&g_cpus[3]));

  hook_t h;
  hook_init(&h, &g_cpus[3]);
  h.timer_cpu = &g_cpus[3];
  h.clear_at = 2;   // phase 2 ends during the 3rd relax
  h.end_at[0] = 5;  // phase 3 ends during the 6th
  fake_set_relax_hook(relax_hook, &h);
  cancel_ctx_t c = {.hook = &h};
  zxs_percpu_shutdown(g_cpus, NCPU, cancel_timers, &c);

  assert_int_equal(c.calls, 1);
  assert_true(h.cleared);
  assert_int_equal(h.ended, 1);
  assert_int_equal(h.calls, 6);
  // Relaxes 0..2 waited for the timer (the writer still in flight), 3..5 for the writer alone.
  for (int i = 0; i <= 2; i++) {
    assert_int_equal(h.seen_timers[i], 1);
    assert_int_equal(h.seen_writes[i], 1);
  }
  for (int i = 3; i <= 5; i++) {
    assert_int_equal(h.seen_timers[i], 0);
    assert_int_equal(h.seen_writes[i], 1);
  }
  for (int i = 0; i < NCPU; i++) {
    assert_int_equal(zxs_percpu_pending_timers(&g_cpus[i]), 0);
    assert_int_equal(zxs_percpu_pending_writes(&g_cpus[i]), 0);
  }
}

static void test_phase2_waits_for_timer_after_writes_are_done(void** state) {
  (void)state;
  enable_all();
  // A timer callback still running after cancel, and a writer that finishes first: shutdown
  // must not return until the callback dropped its mark.
  assert_true(zxs_percpu_timer_set(&g_cpus[1]));
  assert_true(zxs_percpu_begin_write(&g_cpus[1]));

  hook_t h;
  hook_init(&h, &g_cpus[1]);
  h.timer_cpu = &g_cpus[1];
  h.end_at[0] = 1;
  h.clear_at = 4;
  fake_set_relax_hook(relax_hook, &h);
  zxs_percpu_shutdown(g_cpus, NCPU, NULL, NULL);  // no cancel callback: allowed

  assert_int_equal(h.ended, 1);
  assert_true(h.cleared);
  assert_int_equal(h.calls, 5);  // phase 2 alone waited, through relax 4
  for (int i = 0; i <= 4; i++) assert_int_equal(h.seen_timers[i], 1);
  assert_int_equal(h.seen_writes[2], 0);
  assert_int_equal(zxs_percpu_pending_timers(&g_cpus[1]), 0);
}

// --- Reservation --------------------------------------------------------------------------------

static void test_reserve_exactly_fills(void** state) {
  (void)state;
  zxs_percpu_t* cpu = &g_cpus[0];
  zxs_percpu_setup(cpu, g_regions[0], 64, 7);
  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_begin_write(cpu));
  assert_ptr_equal(zxs_percpu_reserve(cpu, 24), g_regions[0]);
  assert_ptr_equal(zxs_percpu_reserve(cpu, 40), g_regions[0] + 24);  // ends exactly at 64
  assert_false(atomic_load(&cpu->full));
  assert_null(zxs_percpu_reserve(cpu, 8));
  assert_true(atomic_load(&cpu->full));
  zxs_percpu_end_write(cpu);
}

static void test_reserve_failure_holds_until_reopen(void** state) {
  (void)state;
  zxs_percpu_t* cpu = &g_cpus[0];
  zxs_percpu_setup(cpu, g_regions[0], 64, 7);
  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_begin_write(cpu));
  assert_non_null(zxs_percpu_reserve(cpu, 48));
  assert_null(zxs_percpu_reserve(cpu, 24));  // 16 left
  assert_true(atomic_load(&cpu->full));
  // A smaller record would fit in the 16 bytes left, but must not follow the gap.
  assert_null(zxs_percpu_reserve(cpu, 8));
  assert_null(zxs_percpu_reserve(cpu, 16));
  zxs_percpu_end_write(cpu);

  zxs_percpu_shutdown(cpu, 1, NULL, NULL);
  zxs_percpu_enable_writes(cpu);  // enabled again without reopen: still full
  assert_true(zxs_percpu_begin_write(cpu));
  assert_true(atomic_load(&cpu->full));
  assert_null(zxs_percpu_reserve(cpu, 8));
  zxs_percpu_end_write(cpu);
  zxs_percpu_shutdown(cpu, 1, NULL, NULL);

  // Reopened (what start does): writes resume where the data ended, with no gap.
  zxs_percpu_reopen(cpu);
  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_begin_write(cpu));
  assert_false(atomic_load(&cpu->full));
  assert_null(zxs_percpu_reserve(cpu, 24));             // still does not fit
  assert_ptr_equal(zxs_percpu_reserve(cpu, 16), NULL);  // after a failure: none
  zxs_percpu_end_write(cpu);
  zxs_percpu_shutdown(cpu, 1, NULL, NULL);
  zxs_percpu_reopen(cpu);
  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_begin_write(cpu));
  assert_ptr_equal(zxs_percpu_reserve(cpu, 16), g_regions[0] + 48);  // fits exactly
  assert_null(zxs_percpu_reserve(cpu, 8));
  zxs_percpu_end_write(cpu);
  zxs_percpu_shutdown(cpu, 1, NULL, NULL);
}

static void test_full_even_without_the_flag(void** state) {
  (void)state;
  // Two writers raced: one passed the `full` check before the other's failure set it. Its add
  // lands past the end too, so it fails however small it is.
  zxs_percpu_t* cpu = &g_cpus[0];
  zxs_percpu_setup(cpu, g_regions[0], 64, 7);
  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_begin_write(cpu));
  assert_non_null(zxs_percpu_reserve(cpu, 48));
  assert_null(zxs_percpu_reserve(cpu, 24));
  atomic_store(&cpu->full, false);  // as seen by the racing writer
  assert_null(zxs_percpu_reserve(cpu, 8));
  assert_true(atomic_load(&cpu->full));
  zxs_percpu_end_write(cpu);
}

static void test_restart_continues_at_same_offset(void** state) {
  (void)state;
  zxs_percpu_t* cpu = &g_cpus[1];
  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_begin_write(cpu));
  assert_ptr_equal(zxs_percpu_reserve(cpu, 56), g_regions[1]);
  zxs_percpu_end_write(cpu);
  zxs_percpu_shutdown(cpu, 1, NULL, NULL);

  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_begin_write(cpu));
  assert_ptr_equal(zxs_percpu_reserve(cpu, 56), g_regions[1] + 56);
  zxs_percpu_end_write(cpu);
  zxs_percpu_shutdown(cpu, 1, NULL, NULL);
  assert_int_equal(atomic_load(&cpu->reserved), 112);
}

static void test_reserve_rejects_bad_sizes(void** state) {
  (void)state;
  zxs_percpu_t* cpu = &g_cpus[0];
  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_begin_write(cpu));
  assert_null(zxs_percpu_reserve(cpu, 0));
  assert_null(zxs_percpu_reserve(cpu, 12));
  assert_false(atomic_load(&cpu->full));  // a caller's mistake does not stop the CPU
  assert_int_equal(atomic_load(&cpu->reserved), 0);
  // A record larger than the whole region does not fit: the CPU is full.
  assert_null(zxs_percpu_reserve(cpu, REGION_BYTES + 8));
  assert_true(atomic_load(&cpu->full));
  zxs_percpu_end_write(cpu);
}

static void test_setup_and_release(void** state) {
  (void)state;
  zxs_percpu_t* cpu = &g_cpus[0];
  zxs_percpu_setup(cpu, g_regions[0], 16, 7);
  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_begin_write(cpu));
  assert_null(zxs_percpu_reserve(cpu, 24));
  atomic_store(&cpu->written, 3);
  zxs_percpu_end_write(cpu);
  zxs_percpu_shutdown(cpu, 1, NULL, NULL);

  zxs_percpu_release(cpu);
  assert_null(cpu->base);
  assert_int_equal(atomic_load(&cpu->session_gen), 0);
  assert_false(zxs_percpu_begin_write(cpu));  // a late writer after the session

  // A new session: fresh position, flag and counters; the protocol word is left alone.
  zxs_percpu_setup(cpu, g_regions[2], REGION_BYTES, 8);
  assert_int_equal(atomic_load(&cpu->reserved), 0);
  assert_false(atomic_load(&cpu->full));
  assert_int_equal(atomic_load(&cpu->written), 0);
  assert_int_equal(atomic_load(&cpu->session_gen), 8);
  assert_false(zxs_percpu_writes_enabled(cpu));
  zxs_percpu_enable_writes(cpu);
  assert_true(zxs_percpu_begin_write(cpu));
  assert_ptr_equal(zxs_percpu_reserve(cpu, 8), g_regions[2]);
  zxs_percpu_end_write(cpu);
}

static void test_state_is_lock_free(void** state) {
  (void)state;
  assert_true(atomic_is_lock_free(&g_cpus[0].state));
  assert_true(atomic_is_lock_free(&g_cpus[0].reserved));
  assert_true(atomic_is_lock_free(&g_cpus[0].session_gen));
  assert_true(atomic_is_lock_free(&g_cpus[0].full));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_begin_requires_enabled, setup),
      cmocka_unit_test_setup(test_shutdown_waits_for_writer_begun_before_disable, setup),
      cmocka_unit_test_setup(test_writer_after_disable_gets_false, setup),
      cmocka_unit_test_setup(test_shutdown_idle_does_not_wait, setup),
      cmocka_unit_test_setup(test_nested_writers_both_must_end, setup),
      cmocka_unit_test_setup(test_migrated_writer_ends_where_it_began, setup),
      cmocka_unit_test_setup(test_timer_set_refused_when_disabled, setup),
      cmocka_unit_test_setup(test_rearm_after_disable_drops_mark, setup),
      cmocka_unit_test_setup(test_cancel_timers_between_phase1_and_phase2, setup),
      cmocka_unit_test_setup(test_phase2_waits_for_timer_after_writes_are_done, setup),
      cmocka_unit_test_setup(test_reserve_exactly_fills, setup),
      cmocka_unit_test_setup(test_reserve_failure_holds_until_reopen, setup),
      cmocka_unit_test_setup(test_full_even_without_the_flag, setup),
      cmocka_unit_test_setup(test_restart_continues_at_same_offset, setup),
      cmocka_unit_test_setup(test_reserve_rejects_bad_sizes, setup),
      cmocka_unit_test_setup(test_setup_and_release, setup),
      cmocka_unit_test_setup(test_state_is_lock_free, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
