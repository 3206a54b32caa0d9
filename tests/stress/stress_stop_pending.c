// Stop (or close, or restart) while a sampling signal is pending in a thread that blocks it.
//
//   stress_stop_pending
//
// A worker attaches itself and spins; once sampling works, it blocks the library's signal (found
// by looking for the handler that lives in libzxsampler; variant "all" blocks every real-time
// signal instead) and keeps spinning until that signal is pending for it. Then the main thread
//   stop:    stops the session (stop must return: a pending, undelivered signal is not a write
//            in flight), hashes every region, lets the worker unblock, and hashes again: the late
//            signal must change nothing (same hash, same stats, records == samples written);
//   close:   closes the session instead; the late signal must not crash anything;
//   restart: stops and starts again before the worker unblocks: the stale signal is ignored,
//            sampling goes on, and at the end records == samples written, all well-formed.
// For each source; nothing may leak (fds, memfds, perf events, POSIX timers).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "stress_util.h"

typedef enum { MODE_STOP, MODE_CLOSE, MODE_RESTART } mode_t_;
static const char* const kModes[] = {"stop", "close", "restart"};

typedef struct shared {
  zx_handle_t iob;
  bool block_all;
  _Atomic int sig;      // the library's signal, found by main
  atomic_int phase;     // 0 run, 1 block now, 2 pending (worker), 3 unblock now, 4 done
  atomic_bool gave_up;  // the signal never became pending
  _Atomic zx_koid_t tid;
  zx_status_t attach;
} shared_t;

static void* worker_main(void* p) {
  shared_t* sh = p;
  atomic_store(&sh->tid, (zx_koid_t)stress_tid());
  sh->attach = zxs_sampler_attach(sh->iob, zxs_thread_self());
  while (atomic_load(&sh->phase) == 0) stress_busy(2000);
  sigset_t set;
  sigemptyset(&set);
  if (sh->block_all) {
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++) sigaddset(&set, s);
  } else {
    sigaddset(&set, atomic_load(&sh->sig));
  }
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  // Spin until the signal is pending (bounded by CPU time).
  const int64_t limit = thread_cpu_ns() + 3000000000LL;
  for (;;) {
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, atomic_load(&sh->sig))) break;
    if (thread_cpu_ns() > limit) {
      atomic_store(&sh->gave_up, true);
      break;
    }
    stress_busy(20000);
  }
  atomic_store(&sh->phase, 2);
  while (atomic_load(&sh->phase) != 3) sleep_ms(1);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);  // the late signal is delivered here
  spin_cpu_ns(20000000, NULL);
  atomic_store(&sh->phase, 4);
  return NULL;
}

static void run(const char* source, mode_t_ mode, bool block_all) {
  printf("%s, %s, blocking %s\n", source, kModes[mode],
         block_all ? "every real-time signal" : "the library's signal");
  warm_up_library();  // once-per-process set-up is not a leak
  const leak_probe_t before = leak_probe();

  static shared_t sh;
  memset(&sh, 0, sizeof(sh));
  sh.block_all = block_all;
  REQUIRE_OK(create_session(1000000, 1u << 20, &sh.iob));
  REQUIRE_OK(zxs_sampler_start(sh.iob));
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, worker_main, &sh) == 0, "pthread_create");
  // Let it be sampled unblocked for a while first. The library installs its handler when a
  // signal source first arms (the worker's attach): look for it then.
  while (atomic_load(&sh.tid) == 0) sleep_ms(1);
  sleep_ms(30);
  int sig = 0;
  for (int i = 0; i < 5000 && (sig = library_signal()) == 0; i++) sleep_ms(1);
  REQUIRE(sig != 0, "no signal handler of libzxsampler found after the worker attached");
  atomic_store(&sh.sig, sig);
  atomic_store(&sh.phase, 1);
  while (atomic_load(&sh.phase) != 2) sleep_ms(1);
  CHECK(sh.attach == ZX_OK, "worker attach: %s", zxs_status_string(sh.attach));
  CHECK(!atomic_load(&sh.gave_up), "signal %d never became pending in the blocking thread", sig);

  zxs_sampler_stats_t s1, s2;
  uint64_t h1 = 0, h2 = 0;
  if (mode == MODE_CLOSE) {
    CHECK_OK(zxs_handle_close(sh.iob));
  } else {
    CHECK_OK(zxs_sampler_stop(sh.iob));  // must return although a signal is pending
    CHECK_OK(zxs_sampler_get_stats(sh.iob, &s1));
    CHECK_OK(hash_regions(sh.iob, &h1));
    if (mode == MODE_RESTART) CHECK_OK(zxs_sampler_start(sh.iob));
  }
  atomic_store(&sh.phase, 3);  // unblock: the stale signal arrives now
  while (atomic_load(&sh.phase) != 4) sleep_ms(1);
  pthread_join(t, NULL);

  if (mode == MODE_STOP) {
    CHECK_OK(zxs_sampler_get_stats(sh.iob, &s2));
    CHECK_OK(hash_regions(sh.iob, &h2));
    CHECK(h1 == h2, "regions changed after stop (a late signal wrote)");
    CHECK(s1.samples_written == s2.samples_written, "samples written %llu after stop, %llu later",
          (unsigned long long)s1.samples_written, (unsigned long long)s2.samples_written);
  } else if (mode == MODE_RESTART) {
    CHECK_OK(zxs_sampler_stop(sh.iob));
    CHECK_OK(zxs_sampler_get_stats(sh.iob, &s2));
    CHECK(s2.samples_written >= s1.samples_written, "samples went down");
  }
  if (mode != MODE_CLOSE) {
    tid_set_t set;
    tid_set_init(&set);
    tid_set_add(&set, atomic_load(&sh.tid));
    region_scan_t scan;
    CHECK_OK(scan_regions(sh.iob, tid_set_check, &set, &scan));
    CHECK(!scan.malformed, "malformed region: %s", scan.error);
    CHECK(scan.records == s2.samples_written, "records %llu != samples written %llu",
          (unsigned long long)scan.records, (unsigned long long)s2.samples_written);
    CHECK(scan.bad == 0 && scan.other == 0, "%llu bad records", (unsigned long long)scan.bad);
    printf("  samples at stop %llu, at the end %llu; records %llu\n",
           (unsigned long long)s1.samples_written, (unsigned long long)s2.samples_written,
           (unsigned long long)scan.records);
    CHECK_OK(zxs_handle_close(sh.iob));
  }
  CHECK_NO_LEAK(before, "after the session");
}

int main(void) {
  stress_require_sampler("stress_stop_pending");
  const char* sources[3];
  const int n = stress_sources(sources);
  for (int i = 0; i < n; i++) {
    // perf-ring sends no signal: there is nothing to hold pending.
    if (strcmp(sources[i], "perf-ring") == 0 || !use_source(sources[i])) continue;
    for (int mode = MODE_STOP; mode <= MODE_RESTART; mode++) {
      run(sources[i], (mode_t_)mode, false);
    }
    run(sources[i], MODE_STOP, true);
  }
  return stress_result("stress_stop_pending");
}
