// Several threads create, start, stop and close sessions at once.
//
//   stress_session_cycles [threads=4] [iterations=60]
//
// Each thread loops trying to create the session. Exactly one session exists at a time: a
// create succeeds only while no other thread owns one (checked with a counter of owners), every
// other create says ZX_ERR_ALREADY_EXISTS, and only while a session exists (checked with a count
// of the threads holding or making a handle to one).
//   Phase A: the owner publishes its handle, attaches itself, starts, spins, stops, checks that
//     nothing was lost (samples written == records read, no record from a foreign thread) and
//     closes. The others attach themselves to the published handle and read its stats meanwhile:
//     only OK, BAD_HANDLE (closed before the call looked it up) or BAD_STATE (closed while the
//     call held it: the session was destroyed under it, "no session").
//   Phase B: the others also start and stop the published session at random moments: start and
//     stop say only OK, BAD_STATE or BAD_HANDLE; the owner closes a session that may be running.
// Then a fresh session must work end to end, and nothing may have leaked (fds, memfds, perf
// events, POSIX timers; memory under LSan).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "stress_util.h"

#define MAX_THREADS 16

static _Atomic zx_handle_t g_current;  // the owner's handle, published
static _Atomic int g_owners;           // threads that hold a session now (0 or 1)
static int g_iterations;
static tid_set_t g_set;
static pthread_barrier_t g_phase_barrier;  // every thread ends phase A before B begins
static _Atomic uint64_t g_owned, g_already, g_foreign_ops;
// Threads that hold a handle to a session or are making one (create, duplicate), and a count of
// changes to that number: a create refused while the calling thread was the only one counted,
// with no change during the call, was refused though no session existed.
static _Atomic int g_holders;
static _Atomic uint64_t g_holder_changes;

static void hold(void) {
  atomic_fetch_add(&g_holders, 1);
  atomic_fetch_add(&g_holder_changes, 1);
}

static void unhold(void) {
  atomic_fetch_add(&g_holder_changes, 1);
  atomic_fetch_sub(&g_holders, 1);
}

// xorshift, per thread.
static uint32_t next_random(uint32_t* state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *state = x;
}

#define CHECK_ONE_OF(status, what, ...)                                                     \
  do {                                                                                      \
    const zx_status_t one_of_status = (status);                                             \
    const zx_status_t one_of_allowed[] = {__VA_ARGS__};                                     \
    bool one_of_ok = false;                                                                 \
    for (size_t k = 0; k < sizeof(one_of_allowed) / sizeof(one_of_allowed[0]); k++) {       \
      one_of_ok |= one_of_status == one_of_allowed[k];                                      \
    }                                                                                       \
    CHECK(one_of_ok, "%s: %s is not allowed here", what, zxs_status_string(one_of_status)); \
  } while (0)

static void own_session(zx_handle_t iob, bool chaos) {
  const int prev = atomic_fetch_add(&g_owners, 1);
  CHECK(prev == 0, "create succeeded while %d other session(s) existed", prev);
  atomic_fetch_add(&g_owned, 1);
  atomic_store(&g_current, iob);
  CHECK_OK(zxs_sampler_attach(iob, zxs_thread_self()));
  zx_status_t s = zxs_sampler_start(iob);
  if (chaos) {
    CHECK_ONE_OF(s, "owner start", ZX_OK, ZX_ERR_BAD_STATE);
  } else {
    CHECK_OK(s);
  }
  spin_cpu_ns(2000000, NULL);
  s = zxs_sampler_stop(iob);
  if (chaos) {
    CHECK_ONE_OF(s, "owner stop", ZX_OK, ZX_ERR_BAD_STATE);
  } else {
    CHECK_OK(s);
    // Nothing lost: every sample counted is in the regions, and each names a thread of ours.
    zxs_sampler_stats_t stats;
    CHECK_OK(zxs_sampler_get_stats(iob, &stats));
    region_scan_t scan;
    CHECK_OK(scan_regions(iob, tid_set_check, &g_set, &scan));
    CHECK(!scan.malformed, "malformed region: %s", scan.error);
    CHECK(scan.records == stats.samples_written, "records %llu != samples written %llu",
          (unsigned long long)scan.records, (unsigned long long)stats.samples_written);
    CHECK(scan.bad == 0 && scan.other == 0, "%llu bad and %llu foreign records",
          (unsigned long long)scan.bad, (unsigned long long)scan.other);
    CHECK(stats.dropped_full == 0, "%llu dropped", (unsigned long long)stats.dropped_full);
  }
  atomic_store(&g_current, ZX_HANDLE_INVALID);
  atomic_fetch_sub(&g_owners, 1);  // before close: the next create may succeed only after it
  CHECK_OK(zxs_handle_close(iob));
}

static void meddle(uint32_t* rnd, bool chaos) {
  const zx_handle_t h = atomic_load(&g_current);
  if (h == ZX_HANDLE_INVALID) return;
  atomic_fetch_add(&g_foreign_ops, 1);
  CHECK_ONE_OF(zxs_sampler_attach(h, zxs_thread_self()), "attach to another's session", ZX_OK,
               ZX_ERR_BAD_HANDLE, ZX_ERR_BAD_STATE);
  zxs_sampler_stats_t stats;
  CHECK_ONE_OF(zxs_sampler_get_stats(h, &stats), "stats of another's session", ZX_OK,
               ZX_ERR_BAD_HANDLE, ZX_ERR_BAD_STATE);
  if (chaos) {
    const uint32_t r = next_random(rnd) % 4;
    if (r == 0) {
      CHECK_ONE_OF(zxs_sampler_start(h), "start of another's session", ZX_OK, ZX_ERR_BAD_STATE,
                   ZX_ERR_BAD_HANDLE);
    } else if (r == 1) {
      CHECK_ONE_OF(zxs_sampler_stop(h), "stop of another's session", ZX_OK, ZX_ERR_BAD_STATE,
                   ZX_ERR_BAD_HANDLE);
    } else if (r == 2) {
      zx_handle_t dup;
      hold();
      zx_status_t s = zxs_handle_duplicate(h, ZX_RIGHT_SAME_RIGHTS, &dup);
      // A duplicate made while the owner's close runs names a destroyed session: its calls say
      // BAD_STATE (not live), and its close is then harmless.
      CHECK_ONE_OF(s, "duplicate of another's session", ZX_OK, ZX_ERR_BAD_HANDLE);
      if (s == ZX_OK) {
        // Holding a duplicate keeps the session alive a little longer: the owner's close must
        // not destroy it, and ours may be the last close.
        CHECK_ONE_OF(zxs_sampler_stop(dup), "stop through a duplicate", ZX_OK, ZX_ERR_BAD_STATE);
        CHECK_OK(zxs_handle_close(dup));
      }
      unhold();
    }
  }
}

static void* cycler(void* arg) {
  uint32_t rnd = 2463534242u ^ (uint32_t)(uintptr_t)arg;
  tid_set_add(&g_set, (zx_koid_t)stress_tid());
  for (int phase = 0; phase < 2; phase++) {
    const bool chaos = phase == 1;
    pthread_barrier_wait(&g_phase_barrier);
    for (int i = 0; i < g_iterations; i++) {
      zx_handle_t iob = ZX_HANDLE_INVALID;
      hold();
      const uint64_t changes = atomic_load(&g_holder_changes);
      const int holders = atomic_load(&g_holders);
      const zx_status_t s = create_session(1000000, 1u << 20, &iob);
      if (s == ZX_OK) {
        own_session(iob, chaos);
        unhold();  // closed
      } else {
        const bool alone = holders == 1 && atomic_load(&g_holder_changes) == changes;
        unhold();
        CHECK_ONE_OF(s, "create", ZX_ERR_ALREADY_EXISTS);
        CHECK(iob == ZX_HANDLE_INVALID, "create failed but returned handle %#x", iob);
        CHECK(!alone,
              "LIBRARY BUG: create refused (%s) while no other thread held or was making a "
              "handle to a session",
              zxs_status_string(s));
        atomic_fetch_add(&g_already, 1);
        meddle(&rnd, chaos);
      }
      spin_cpu_ns(200000 + (int64_t)(next_random(&rnd) % 500000), NULL);
    }
  }
  return NULL;
}

static void* final_session(void* arg) {
  (void)arg;
  tid_set_init(&g_set);
  tid_set_add(&g_set, (zx_koid_t)stress_tid());
  zx_handle_t iob;
  REQUIRE_OK(create_session(1000000, 1u << 20, &iob));
  CHECK_OK(zxs_sampler_attach(iob, zxs_thread_self()));
  CHECK_OK(zxs_sampler_start(iob));
  spin_cpu_ns(20000000, NULL);
  CHECK_OK(zxs_sampler_stop(iob));
  zxs_sampler_stats_t stats;
  CHECK_OK(zxs_sampler_get_stats(iob, &stats));
  CHECK(stats.attached_threads == 1, "%u attached", stats.attached_threads);
  region_scan_t scan;
  CHECK_OK(scan_regions(iob, tid_set_check, &g_set, &scan));
  CHECK(scan.records == stats.samples_written && scan.records > 0 && scan.bad == 0,
        "final session: %llu records, %llu written, %llu bad", (unsigned long long)scan.records,
        (unsigned long long)stats.samples_written, (unsigned long long)scan.bad);
  CHECK_OK(zxs_handle_close(iob));
  return NULL;
}

int main(int argc, char** argv) {
  stress_require_sampler("stress_session_cycles");
  const bool light = under_valgrind();
  const int threads = argc > 1 ? atoi(argv[1]) : 4;
  g_iterations = argc > 2 ? atoi(argv[2]) : (light ? 8 : 60);
  REQUIRE(threads > 0 && threads <= MAX_THREADS && g_iterations > 0,
          "usage: %s [threads <= 16] [iterations]", argv[0]);
  const char* sources[3];
  const int n = stress_sources(sources);
  for (int k = 0; k < n; k++) {
    if (!use_source(sources[k])) continue;
    warm_up_library();  // once-per-process set-up is not a leak
    const leak_probe_t before = leak_probe();
    const int threads_before = count_threads_settled();

    tid_set_init(&g_set);
    atomic_store(&g_owned, 0);
    atomic_store(&g_already, 0);
    atomic_store(&g_foreign_ops, 0);
    pthread_t t[MAX_THREADS];
    REQUIRE(pthread_barrier_init(&g_phase_barrier, NULL, (unsigned)threads) == 0, "barrier");
    for (int i = 0; i < threads; i++) {
      REQUIRE(pthread_create(&t[i], NULL, cycler, (void*)(uintptr_t)(i + 1)) == 0, "create");
    }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&g_phase_barrier);
    printf(
        "%s: %d threads x %d iterations x 2 phases: %llu sessions owned, %llu creates "
        "refused, %llu operations on another thread's session\n",
        sources[k], threads, g_iterations, (unsigned long long)atomic_load(&g_owned),
        (unsigned long long)atomic_load(&g_already),
        (unsigned long long)atomic_load(&g_foreign_ops));
    CHECK(atomic_load(&g_owners) == 0, "%d owners left", atomic_load(&g_owners));
    // How many creates succeed depends on how the threads' turns fell (a few dozen here); what
    // holds whatever the machine's load is that each was refused only while a session existed
    // (checked at each refusal), and that each phase's first create, with none left from the
    // phase before, succeeded.
    CHECK(atomic_load(&g_owned) >= 2, "only %llu sessions were created",
          (unsigned long long)atomic_load(&g_owned));

    // The library still works: a fresh session, end to end (on a new thread: under valgrind
    // the main thread is never sampled).
    pthread_t last;
    REQUIRE(pthread_create(&last, NULL, final_session, NULL) == 0, "pthread_create");
    pthread_join(last, NULL);
    CHECK(count_threads() == threads_before, "%d threads, %d before", count_threads(),
          threads_before);
    CHECK_NO_LEAK(before, sources[k]);
  }
  return stress_result("stress_session_cycles");
}
