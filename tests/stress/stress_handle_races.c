// Handle operations racing with the last close of the sampler's IOBuffer.
//
//   stress_handle_races [sessions=80000]
//
//   dup/close: the main thread creates a session, publishes its handle briefly and closes it;
//     another thread duplicates whatever handle is published. A duplicate either fails
//     (BAD_HANDLE) or keeps the session alive: it must never name a session that was already
//     destroyed. (LIBRARY BUG, see below.) The duplicating thread is interrupted often by a
//     timer signal whose handler spins for a few microseconds, which widens the window between
//     the lookup of the source handle and the creation of the copy.
//     If such a copy turns up, the test also shows what it breaks: the copy is held while a
//     new session samples this thread, then closed: the new session must keep sampling.
//   close/close: two threads close the same handles: exactly one close succeeds per handle.
//
// LIBRARY BUG (handle_table.c, zxs_handle_duplicate): the source handle is looked up under the
// table lock (zxs_handle_get), the lock is dropped, and the copy is made later
// (zxs_handle_make). A last close in between runs the session's on_last_handle (stop, detach,
// release the per-CPU states, destroy the regions); the copy then brings the handle count from
// 0 back to 1 on the destroyed session, and closing the copy runs on_last_handle a second time,
// which releases the per-CPU states of whatever session is live at that moment: that session
// stops recording (its samples count as dropped_other), and a writer racing the release can
// read a NULL region base.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "stress_util.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static _Atomic zx_handle_t g_current;
static atomic_bool g_stop;
static _Atomic zx_handle_t g_zombie;  // a live copy that names a destroyed session
static _Atomic uint64_t g_dups, g_dup_bad_handle;

static void on_tick(int sig) {
  (void)sig;
  // Spin ~10 us: long enough for the main thread to finish a close meanwhile.
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do {
    clock_gettime(CLOCK_MONOTONIC, &b);
  } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 10000);
}

static void* duplicator(void* arg) {
  (void)arg;
  struct sigevent sev;
  memset(&sev, 0, sizeof(sev));
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGUSR2;
  sev._sigev_un._tid = stress_tid();
  timer_t timer;
  REQUIRE(timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0, "timer_create");
  struct itimerspec its = {{0, 100000}, {0, 100000}};
  timer_settime(timer, 0, &its, NULL);
  while (!atomic_load(&g_stop)) {
    const zx_handle_t h = atomic_load(&g_current);
    if (h == ZX_HANDLE_INVALID) continue;
    zx_handle_t dup;
    const zx_status_t s = zxs_handle_duplicate(h, ZX_RIGHT_SAME_RIGHTS, &dup);
    if (s != ZX_OK) {
      CHECK(s == ZX_ERR_BAD_HANDLE, "duplicate: %s", zxs_status_string(s));
      atomic_fetch_add(&g_dup_bad_handle, 1);
      continue;
    }
    atomic_fetch_add(&g_dups, 1);
    zxs_sampler_stats_t stats;
    const zx_status_t st = zxs_sampler_get_stats(dup, &stats);
    if (st == ZX_ERR_BAD_STATE) {
      zx_handle_t none = ZX_HANDLE_INVALID;
      if (atomic_compare_exchange_strong(&g_zombie, &none, dup)) break;  // kept for the demo
      CHECK_OK(zxs_handle_close(dup));
      break;
    }
    CHECK(st == ZX_OK, "stats through a fresh copy: %s", zxs_status_string(st));
    CHECK_OK(zxs_handle_close(dup));
  }
  timer_delete(timer);
  return NULL;
}

#define DUPLICATORS 2

static void dup_vs_close(long sessions) {
  signal(SIGUSR2, on_tick);
  zx_handle_t rsrc;
  REQUIRE_OK(zxs_debug_resource_get(&rsrc));
  zx_sampler_config_t c = {.period = 1000000, .buffer_size = 1u << 16, .iobuffer_discipline = 0};
  pthread_t t[DUPLICATORS];
  for (int k = 0; k < DUPLICATORS; k++) {
    REQUIRE(pthread_create(&t[k], NULL, duplicator, NULL) == 0, "pthread_create");
  }
  long created = 0, i = 0;
  // Bounded by sessions made (each costs some system calls), and by attempts in case copies
  // keep the session alive most of the time.
  for (; created < sessions && i < 200 * sessions && atomic_load(&g_zombie) == ZX_HANDLE_INVALID;
       i++) {
    zx_handle_t iob;
    const zx_status_t s = zxs_sampler_create(rsrc, 0, &c, sizeof(c), &iob);
    if (s != ZX_OK) {
      // The duplicator's copy still holds the session.
      CHECK(s == ZX_ERR_ALREADY_EXISTS, "create: %s", zxs_status_string(s));
      continue;
    }
    created++;
    atomic_store(&g_current, iob);
    for (volatile int k = 0; k < 3000; k++) {
    }
    CHECK_OK(zxs_handle_close(iob));  // still published: a copy may be under way
    atomic_store(&g_current, ZX_HANDLE_INVALID);
  }
  atomic_store(&g_stop, true);
  for (int k = 0; k < DUPLICATORS; k++) pthread_join(t[k], NULL);
  signal(SIGUSR2, SIG_DFL);
  printf("dup/close: %ld iterations, %ld sessions, %llu copies made, %llu refused\n", i, created,
         (unsigned long long)atomic_load(&g_dups),
         (unsigned long long)atomic_load(&g_dup_bad_handle));

  const zx_handle_t zombie = atomic_load(&g_zombie);
  CHECK(zombie == ZX_HANDLE_INVALID,
        "LIBRARY BUG: zxs_handle_duplicate() racing the last close made a live handle to a "
        "destroyed session (its stats say BAD_STATE); closing it runs the session's teardown "
        "again");
  if (zombie != ZX_HANDLE_INVALID) {
    // What the second teardown breaks: the session that is live when the copy is closed.
    zx_handle_t iob;
    REQUIRE_OK(zxs_sampler_create(rsrc, 0, &c, sizeof(c), &iob));
    CHECK_OK(zxs_sampler_attach(iob, zxs_thread_self()));
    CHECK_OK(zxs_sampler_start(iob));
    spin_cpu_ns(50000000, NULL);
    zxs_sampler_stats_t before, after;
    CHECK_OK(zxs_sampler_get_stats(iob, &before));
    CHECK_OK(zxs_handle_close(zombie));
    spin_cpu_ns(100000000, NULL);
    CHECK_OK(zxs_sampler_stop(iob));
    CHECK_OK(zxs_sampler_get_stats(iob, &after));
    printf(
        "  live session: %llu samples before the stale copy was closed, %llu after "
        "100 ms more of CPU; dropped_other %llu -> %llu\n",
        (unsigned long long)before.samples_written, (unsigned long long)after.samples_written,
        (unsigned long long)before.dropped_other, (unsigned long long)after.dropped_other);
    CHECK(after.dropped_other == before.dropped_other &&
              after.samples_written > before.samples_written,
          "closing the stale copy broke the live session: it stopped recording");
    CHECK_OK(zxs_handle_close(iob));
  }
  CHECK_OK(zxs_handle_close(rsrc));
}

// --- close/close ------------------------------------------------------------------------------

#define CLOSE_BATCH 256
static zx_handle_t g_batch[CLOSE_BATCH];
static _Atomic int g_close_ok[2];
static pthread_barrier_t g_barrier;
static int g_rounds;

static void* closer(void* arg) {
  const int me = (int)(uintptr_t)arg;
  for (int r = 0; r < g_rounds; r++) {
    pthread_barrier_wait(&g_barrier);
    for (int i = 0; i < CLOSE_BATCH; i++) {
      const int k = me == 0 ? i : CLOSE_BATCH - 1 - i;
      const zx_status_t s = zxs_handle_close(g_batch[k]);
      if (s == ZX_OK) {
        atomic_fetch_add(&g_close_ok[me], 1);
      } else {
        CHECK(s == ZX_ERR_BAD_HANDLE, "close: %s", zxs_status_string(s));
      }
    }
    pthread_barrier_wait(&g_barrier);
  }
  return NULL;
}

static void close_vs_close(int rounds) {
  g_rounds = rounds;
  REQUIRE(pthread_barrier_init(&g_barrier, NULL, 3) == 0, "barrier");
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    REQUIRE(pthread_create(&t[i], NULL, closer, (void*)(uintptr_t)i) == 0, "pthread_create");
  }
  zx_handle_t iob;
  REQUIRE_OK(create_session(1000000, 1u << 16, &iob));
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < CLOSE_BATCH; i++) {
      // Copies of the session and of the process: the last close of the session may be any.
      const zx_handle_t src = (i % 2 == 0) ? iob : zxs_process_self();
      REQUIRE_OK(zxs_handle_duplicate(src, ZX_RIGHT_SAME_RIGHTS, &g_batch[i]));
    }
    pthread_barrier_wait(&g_barrier);
    pthread_barrier_wait(&g_barrier);
  }
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&g_barrier);
  const int total = atomic_load(&g_close_ok[0]) + atomic_load(&g_close_ok[1]);
  printf("close/close: %d rounds of %d handles: %d + %d successful closes\n", rounds, CLOSE_BATCH,
         atomic_load(&g_close_ok[0]), atomic_load(&g_close_ok[1]));
  CHECK(total == rounds * CLOSE_BATCH, "%d successful closes of %d handles", total,
        rounds * CLOSE_BATCH);
  // The session is still alive (iob was never closed) and works.
  zxs_sampler_stats_t stats;
  CHECK_OK(zxs_sampler_get_stats(iob, &stats));
  CHECK_OK(zxs_handle_close(iob));
  zx_handle_t again;
  CHECK_OK(create_session(1000000, 1u << 16, &again));
  CHECK_OK(zxs_handle_close(again));
}

int main(int argc, char** argv) {
  stress_require_sampler("stress_handle_races");
  const bool light = under_valgrind() || SANITIZED;
  const long sessions = argc > 1 ? atol(argv[1]) : (light ? 5000 : 80000);
  REQUIRE(sessions > 0, "usage: %s [sessions]", argv[0]);
  warm_up_library();  // once-per-process set-up is not a leak
  const leak_probe_t before = leak_probe();
  close_vs_close(light ? 20 : 200);
  dup_vs_close(sessions);
  CHECK_NO_LEAK(before, "after the races");
  return stress_result("stress_handle_races");
}
