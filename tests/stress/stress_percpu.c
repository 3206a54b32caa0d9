// Writers and timers hammer a few CPU states while the main thread loops enable -> run ->
// shutdown. After every shutdown: no writer is inside, nothing is pending, and the regions do
// not change any more however long the writers keep trying. Meant to run under TSan as well.
// Progress is counted in operations, never in time, so the test asserts no timing.
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
// cmocka needs the headers above first.
#include <cmocka.h>
#include <zxsampler/fxt.h>

#include "fake_platform.h"
#include "percpu_state.h"
#include "sample_writer.h"

#define NCPU 3
#define NWRITERS 4
#define ROUNDS 400
#define ROUNDS_PER_SESSION 10
#define MAX_REGION_BYTES 65536
#define PID 42u

static const size_t kRegionBytes[] = {4096, 16384, MAX_REGION_BYTES};

static zxs_percpu_t g_cpus[NCPU];
static _Alignas(8) uint8_t g_regions[NCPU][MAX_REGION_BYTES];
static uint8_t g_snapshot[NCPU][MAX_REGION_BYTES];
static size_t g_snapshot_bytes[NCPU];

// The test's own counters are relaxed: seq_cst ones would synchronise writers with the main
// thread by themselves and hide a missing release/acquire in the protocol from TSan.
#define RELAXED memory_order_relaxed
static _Atomic int g_inside;  // writers between a successful begin and their end
static _Atomic bool g_quit;
static _Atomic uint32_t g_gen;       // the session writers believe in (may be stale)
static _Atomic uint64_t g_attempts;  // begin attempts, successful or not
static _Atomic uint64_t g_admitted;  // successful begins
static _Atomic uint64_t g_timer_fires;

static uint64_t pc_of(uint64_t tid, size_t i) { return tid * 1000u + i; }

// Writes one record through the low-level protocol calls, as a backend's handler would.
static void encode_into(zxs_percpu_t* cpu, uint64_t tid, size_t n) {
  uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
  for (size_t i = 0; i < n; i++) pcs[i] = pc_of(tid, i);
  uint8_t* p = zxs_percpu_reserve(cpu, ZXS_FXT_SAMPLE_WORDS(n) * 8);
  if (p != NULL) {
    zxs_fxt_encode_sample((uint64_t*)(void*)p, 7, PID, tid, pcs, n);
  }
}

static bool enter(zxs_percpu_t* cpu) {
  atomic_fetch_add_explicit(&g_attempts, 1, RELAXED);
  if (!zxs_percpu_begin_write(cpu)) return false;
  atomic_fetch_add_explicit(&g_inside, 1, RELAXED);  // only after begin succeeded
  atomic_fetch_add_explicit(&g_admitted, 1, RELAXED);
  return true;
}

static void leave(zxs_percpu_t* cpu) {
  atomic_fetch_sub_explicit(&g_inside, 1, RELAXED);  // before end_write
  zxs_percpu_end_write(cpu);
}

// Being preempted for a while: long enough, now and then, that a shutdown has to wait.
static void linger(uint64_t k) {
  const int yields = k % 32 < 2 ? 8 : k % 8 == 3 ? 1 : 0;
  for (int i = 0; i < yields; i++) sched_yield();
}

static void* writer_main(void* arg) {
  const uint64_t tid = 100u + (uint64_t)(uintptr_t)arg;
  uint64_t k = (uint64_t)(uintptr_t)arg;
  while (!atomic_load_explicit(&g_quit, memory_order_relaxed)) {
    k++;
    // The state picked at the start is the one used to the end, wherever the thread runs.
    zxs_percpu_t* cpu = &g_cpus[k % NCPU];
    // Mostly short records, so regions last several rounds; now and then the longest one.
    size_t n = k % 16 == 5 ? ZX_SAMPLER_MAX_FRAMES : 1 + (size_t)(k * 7 % 8);
    switch (k % 4) {
      case 0: {  // the full writer, with a possibly stale session
        uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
        for (size_t i = 0; i < n; i++) pcs[i] = pc_of(tid, i);
        if (enter(cpu)) {  // held around the writer, as the sampling path does
          zxs_sample_write(cpu, atomic_load_explicit(&g_gen, RELAXED), 7, PID, tid, pcs, n);
          leave(cpu);
        }
        break;
      }
      case 1:
      case 2:
        if (enter(cpu)) {
          encode_into(cpu, tid, n);
          linger(k);  // preempted inside: shutdown has to wait for us
          leave(cpu);
        }
        break;
      case 3:  // a writer interrupted by a handler writing on the same state
        if (enter(cpu)) {
          uint8_t* outer = zxs_percpu_reserve(cpu, ZXS_FXT_SAMPLE_WORDS(1) * 8);
          if (enter(cpu)) {
            encode_into(cpu, tid, n);
            leave(cpu);
          }
          linger(k + 1);
          if (outer != NULL) {
            const uint64_t pc = pc_of(tid, 0);
            zxs_fxt_encode_sample((uint64_t*)(void*)outer, 7, PID, tid, &pc, 1);
          }
          leave(cpu);
        }
        break;
    }
    if (k % 64 == 0) sched_yield();
  }
  return NULL;
}

// A backend's per-CPU timers: IDLE, ARMED (mark held) or FIRING (callback running, mark held).
enum { T_IDLE, T_ARMED, T_FIRING };
static pthread_mutex_t g_timer_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_timer[NCPU];
// What a callback uses outside the lock and the owner resets after shutdown (plain memory: only
// the protocol's release/acquire on the timer mark orders the two).
static uint64_t g_callback_data[NCPU];

static void* timer_main(void* arg) {
  (void)arg;
  const uint64_t tid = 99;
  const uint64_t pc = pc_of(tid, 0);
  for (uint64_t k = 1; !atomic_load_explicit(&g_quit, memory_order_relaxed); k++) {
    for (int c = 0; c < NCPU; c++) {
      pthread_mutex_lock(&g_timer_lock);
      int t = g_timer[c];
      if (t == T_IDLE && zxs_percpu_timer_set(&g_cpus[c])) g_timer[c] = T_ARMED;
      if (t == T_ARMED) g_timer[c] = T_FIRING;
      pthread_mutex_unlock(&g_timer_lock);
      if (t != T_ARMED) continue;
      // The callback runs outside the lock, so a cancel can pass it by; its rearm then decides.
      atomic_fetch_add_explicit(&g_timer_fires, 1, RELAXED);
      if (zxs_percpu_begin_write(&g_cpus[c])) {
        zxs_sample_write(&g_cpus[c], atomic_load_explicit(&g_gen, RELAXED), 8, PID, tid, &pc, 1);
        zxs_percpu_end_write(&g_cpus[c]);
      }
      linger(k);  // a slow callback: cancel may pass it by, and phase 2 waits for its rearm
      g_callback_data[c]++;
      bool again = zxs_percpu_timer_rearm(&g_cpus[c]);
      pthread_mutex_lock(&g_timer_lock);
      g_timer[c] = again ? T_ARMED : T_IDLE;
      pthread_mutex_unlock(&g_timer_lock);
    }
    if (k % 8 == 0) sched_yield();
  }
  return NULL;
}

static void cancel_timers(void* ctx) {
  (void)ctx;
  pthread_mutex_lock(&g_timer_lock);
  for (int c = 0; c < NCPU; c++) {
    if (g_timer[c] == T_ARMED) {  // cancelled before it fired
      zxs_percpu_timer_clear(&g_cpus[c]);
      g_timer[c] = T_IDLE;
    }
  }
  pthread_mutex_unlock(&g_timer_lock);
}

// Shutdown's waits: counted, then the CPU is given away as the real backends do.
static _Atomic uint64_t g_relaxes;
static void relax_hook(void* ctx, uint64_t call) {
  (void)ctx;
  (void)call;
  atomic_fetch_add_explicit(&g_relaxes, 1, RELAXED);
  sched_yield();
}

static uint64_t hash_regions(size_t bytes) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over words
  for (int c = 0; c < NCPU; c++) {
    const uint64_t* w = (const uint64_t*)(const void*)g_regions[c];
    for (size_t i = 0; i < bytes / 8; i++) h = (h ^ w[i]) * 1099511628211ull;
  }
  return h;
}

// Parses a region after shutdown: well-formed records back to back from offset 0, then zeros
// only (no record after a gap). Returns the bytes of data.
static size_t check_region(int c, size_t size) {
  const uint64_t* w = (const uint64_t*)(const void*)g_regions[c];
  const size_t words = size / 8;
  size_t at = 0;
  while (at < words && w[at] != 0) {
    const uint64_t n = (w[at] >> 4) - 6;
    assert_true(n >= 1 && n <= ZX_SAMPLER_MAX_FRAMES);
    assert_int_equal(w[at], 0xFu | ((6u + n) << 4));
    assert_true(at + 6 + n <= words);
    assert_int_equal(w[at + 1], 0);
    assert_int_equal(w[at + 3], PID);
    assert_int_equal(w[at + 5], 8 * n);
    for (size_t i = 0; i < n; i++) assert_int_equal(w[at + 6 + i], pc_of(w[at + 4], i));
    at += 6 + n;
  }
  for (size_t i = at; i < words; i++) assert_int_equal(w[i], 0);
  return at * 8;
}

// Waits until `counter` has grown by `by`, or a bounded number of yields went by (progress is
// not asserted here: a slow machine only makes the round weaker, never wrong).
static void wait_for_progress(_Atomic uint64_t* counter, uint64_t by) {
  const uint64_t start = atomic_load_explicit(counter, RELAXED);
  for (int i = 0; i < 20000 && atomic_load_explicit(counter, RELAXED) - start < by; i++) {
    sched_yield();
  }
}

static void test_stress(void** state) {
  (void)state;
  fake_reset();
  fake_set_relax_hook(relax_hook, NULL);  // before the threads start
  pthread_t writers[NWRITERS], timer;
  for (uintptr_t i = 0; i < NWRITERS; i++) {
    assert_int_equal(pthread_create(&writers[i], NULL, writer_main, (void*)i), 0);
  }
  assert_int_equal(pthread_create(&timer, NULL, timer_main, NULL), 0);

  size_t size = 0;
  uint64_t grew = 0;  // CPU-rounds that added records (reported, not asserted)
  for (int round = 0; round < ROUNDS; round++) {
    if (round % ROUNDS_PER_SESSION == 0) {
      // A new session on the same states: new regions' contents, new generation.
      const uint32_t gen = 1u + (uint32_t)(round / ROUNDS_PER_SESSION);
      size = kRegionBytes[(round / ROUNDS_PER_SESSION) % 3];
      for (int c = 0; c < NCPU; c++) {
        if (round > 0) zxs_percpu_release(&g_cpus[c]);
        memset(g_regions[c], 0, MAX_REGION_BYTES);
        zxs_percpu_setup(&g_cpus[c], g_regions[c], size, gen);
        g_snapshot_bytes[c] = 0;
      }
      atomic_store_explicit(&g_gen, gen, RELAXED);
    }
    for (int c = 0; c < NCPU; c++) zxs_percpu_enable_writes(&g_cpus[c]);
    wait_for_progress(&g_admitted, 40);
    zxs_percpu_shutdown(g_cpus, NCPU, cancel_timers, NULL);

    // Nothing inside, nothing pending.
    assert_int_equal(atomic_load_explicit(&g_inside, RELAXED), 0);
    for (int c = 0; c < NCPU; c++) {
      assert_int_equal(zxs_percpu_pending_writes(&g_cpus[c]), 0);
      assert_int_equal(zxs_percpu_pending_timers(&g_cpus[c]), 0);
      assert_false(zxs_percpu_writes_enabled(&g_cpus[c]));
    }
    // The regions stay as they are while the writers keep knocking.
    for (int c = 0; c < NCPU; c++) g_callback_data[c] = 0;  // "teardown" of callback state
    const uint64_t before = hash_regions(size);
    const uint64_t admitted = atomic_load_explicit(&g_admitted, RELAXED);
    wait_for_progress(&g_attempts, 200);
    assert_int_equal(atomic_load_explicit(&g_admitted, RELAXED), admitted);
    assert_int_equal(atomic_load_explicit(&g_inside, RELAXED), 0);
    assert_int_equal(hash_regions(size), before);

    for (int c = 0; c < NCPU; c++) {
      const size_t bytes = check_region(c, size);
      // A restart continues where the last run stopped: the old data is a prefix of the new.
      assert_true(bytes >= g_snapshot_bytes[c]);
      grew += bytes > g_snapshot_bytes[c];
      assert_memory_equal(g_snapshot[c], g_regions[c], g_snapshot_bytes[c]);
      if (!atomic_load(&g_cpus[c].full)) {
        assert_int_equal(bytes, atomic_load(&g_cpus[c].reserved));
      }
      memcpy(g_snapshot[c], g_regions[c], bytes);
      g_snapshot_bytes[c] = bytes;
    }
  }

  atomic_store(&g_quit, true);
  for (int i = 0; i < NWRITERS; i++) pthread_join(writers[i], NULL);
  pthread_join(timer, NULL);
  print_message("%llu of %u CPU-rounds added records\n", (unsigned long long)grew, ROUNDS * NCPU);
  print_message(
      "admitted %llu of %llu attempts, %llu timer callbacks, %llu waits in shutdown\n",
      (unsigned long long)atomic_load(&g_admitted), (unsigned long long)atomic_load(&g_attempts),
      (unsigned long long)atomic_load(&g_timer_fires), (unsigned long long)atomic_load(&g_relaxes));
  assert_true(atomic_load(&g_admitted) > 0);  // the test exercised something
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stress),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
