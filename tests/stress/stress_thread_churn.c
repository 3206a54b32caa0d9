// Many short-lived threads come and go while a session samples them.
//
//   stress_thread_churn [threads=200] [cpu_ms_per_thread=10] [variants=AB]
//
// For each source (perf, cputimer; or the one ZXSAMPLER_SOURCE names):
//   A. waves of 16 threads; each attaches itself (zxs_thread_self) while sampling runs, spins
//      for some CPU time (one in four exits right after attaching) and exits; every fourth wave
//      the session is stopped and restarted while threads are still exiting.
//   B. the same threads attached from the main thread (zxs_thread_get) while they run and exit
//      (so attach races with exit: OK or BAD_STATE only).
// Then stop and check: nothing lost (stats.samples_written == records read from the regions, no
// region full), every record names this process and one of the threads attached, exited
// threads are detached, and nothing leaked (fds, memfds and perf fds, POSIX timers, threads;
// memory: LSan in the ASan build).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "stress_util.h"

#define WAVE 16

typedef struct worker {
  zx_handle_t iob;
  int index;
  int64_t spin_ns;
  bool attach_self;
  tid_set_t* set;
  _Atomic zx_koid_t tid;
  zx_status_t status;
  atomic_bool go;
} worker_t;

static void* worker_main(void* p) {
  worker_t* w = p;
  const zx_koid_t tid = (zx_koid_t)stress_tid();
  tid_set_add(w->set, tid);
  atomic_store(&w->tid, tid);
  if (w->attach_self) {
    w->status = zxs_sampler_attach(w->iob, zxs_thread_self());
  } else {
    while (!atomic_load(&w->go)) stress_busy(100);  // running while the main thread attaches
    if (w->index % 3 == 0) return NULL;  // a racer: exits while the main thread attaches it
  }
  if (w->index % 4 != 0) spin_cpu_ns(w->spin_ns, NULL);
  return NULL;
}

static void run(const char* source, bool attach_self, int threads, int64_t spin_ns) {
  const char* variant = attach_self ? "A (threads attach themselves)" : "B (main attaches them)";
  printf("%s, variant %s: %d threads, %lld ms of CPU each\n", source, variant, threads,
         (long long)(spin_ns / 1000000));
  zx_handle_t iob;
  warm_up_library();
  const leak_probe_t before = leak_probe();
  const int threads_before = count_threads_settled();
  static tid_set_t set;
  tid_set_init(&set);
  tid_set_add(&set, (zx_koid_t)stress_tid());

  REQUIRE_OK(create_session(1000000, 4u << 20, &iob));
  // Under valgrind the main thread is not sampled: valgrind cannot always grow the main
  // thread's stack for a signal frame ("Can't extend stack ... during signal delivery") and
  // kills the program with SIGSEGV. Thread stacks do not grow, so workers are fine.
  const uint32_t main_attached = under_valgrind() ? 0 : 1;
  if (main_attached) REQUIRE_OK(zxs_sampler_attach(iob, zxs_thread_self()));
  REQUIRE_OK(zxs_sampler_start(iob));

  worker_t* workers = calloc((size_t)threads, sizeof(worker_t));
  REQUIRE(workers != NULL, "calloc");
  int ok = 0, bad_state = 0;
  for (int first = 0; first < threads; first += WAVE) {
    const int last = first + WAVE < threads ? first + WAVE : threads;
    pthread_t tids[WAVE];
    for (int i = first; i < last; i++) {
      worker_t* w = &workers[i];
      w->iob = iob;
      w->index = i;
      w->spin_ns = spin_ns;
      w->attach_self = attach_self;
      w->set = &set;
      REQUIRE(pthread_create(&tids[i - first], NULL, worker_main, w) == 0, "pthread_create");
    }
    if (!attach_self) {
      for (int i = first; i < last; i++) {
        zx_handle_t thread;
        zx_status_t s = zxs_thread_get(tids[i - first], &thread);
        if (s == ZX_OK) {
          // Racers start exiting now, so attach races with their exit.
          if (i % 3 == 0) atomic_store(&workers[i].go, true);
          s = zxs_sampler_attach(iob, thread);
          zxs_handle_close(thread);
        }
        atomic_store(&workers[i].go, true);
        workers[i].status = s;
      }
    }
    for (int i = first; i < last; i++) pthread_join(tids[i - first], NULL);
    for (int i = first; i < last; i++) {
      const zx_status_t s = workers[i].status;
      if (s == ZX_OK) {
        ok++;
      } else if (s == ZX_ERR_BAD_STATE && !attach_self) {
        bad_state++;  // the thread had exited: allowed
      } else if (s == ZX_ERR_NO_RESOURCES && !attach_self && i % 3 == 0) {
        // A thread that exits after attach's liveness check makes its arm fail, with whatever
        // errno the failing step saw; the contract says BAD_STATE for a thread that has exited,
        // so attach checks liveness again after a failed arm (session.c).
        CHECK(false,
              "thread %d (exiting): attach: ZX_ERR_NO_RESOURCES, expected ZX_ERR_BAD_STATE "
              "(LIBRARY BUG: an arm that failed because the thread exited is reported as "
              "NO_RESOURCES)",
              i);
      } else {
        CHECK(false, "thread %d: attach: %s", i, zxs_status_string(s));
      }
    }
    zxs_sampler_stats_t stats;
    CHECK_OK(zxs_sampler_get_stats(iob, &stats));
    if (attach_self) {
      // Each exiting thread detached itself (its exit hook ran before join returned).
      CHECK(stats.attached_threads == main_attached,
            "wave at %d: %u threads attached, expected %u (main)", first, stats.attached_threads,
            main_attached);
    }
    if ((first / WAVE) % 4 == 3) {
      CHECK_OK(zxs_sampler_stop(iob));
      CHECK_OK(zxs_sampler_start(iob));
    }
    spin_cpu_ns(1000000, NULL);  // the main thread is sampled too
  }
  CHECK_OK(zxs_sampler_stop(iob));

  zxs_sampler_stats_t stats;
  CHECK_OK(zxs_sampler_get_stats(iob, &stats));
  CHECK(stats.attached_threads == main_attached,
        "%u threads attached after stop, expected %u (main)", stats.attached_threads,
        main_attached);
  CHECK(strcmp(zxs_sample_source_name(stats.source), source) == 0, "source %s, expected %s",
        zxs_sample_source_name(stats.source), source);
  region_scan_t scan;
  CHECK_OK(scan_regions(iob, tid_set_check, &set, &scan));
  printf(
      "  attach OK %d, BAD_STATE %d; samples written %llu, records %llu, dropped full %llu, "
      "dropped other %llu, overruns %llu, throttled %llu, source failures %llu; "
      "%u of %u threads sampled\n",
      ok, bad_state, (unsigned long long)stats.samples_written, (unsigned long long)scan.records,
      (unsigned long long)stats.dropped_full, (unsigned long long)stats.dropped_other,
      (unsigned long long)stats.overruns, (unsigned long long)stats.throttled,
      (unsigned long long)stats.source_failures, tid_set_sampled(&set), set.count);
  CHECK(!scan.malformed, "malformed region: %s", scan.error);
  CHECK(scan.records == stats.samples_written, "records read %llu != samples written %llu",
        (unsigned long long)scan.records, (unsigned long long)stats.samples_written);
  CHECK(scan.other == 0, "%llu records that are not samples", (unsigned long long)scan.other);
  CHECK(scan.bad == 0, "%llu records with a foreign pid, an unknown tid or a bad payload",
        (unsigned long long)scan.bad);
  CHECK(stats.dropped_full == 0, "%llu samples lost to full regions",
        (unsigned long long)stats.dropped_full);
  CHECK(scan.records > 0, "no samples at all");
  // Three in four threads spun for spin_ns of CPU with a 1 ms period, so most of them must show
  // up. Generous bounds: a quarter of all threads with perf; a tenth with the CPU-clock timer,
  // which fires at most once per scheduler tick and whose signal is lost when the thread exits
  // before it runs again.
  const uint32_t div = strcmp(source, "perf") == 0 ? 4 : 10;
  if (spin_ns >= 5000000) {
    CHECK(tid_set_sampled(&set) * div >= set.count, "only %u of %u threads were sampled",
          tid_set_sampled(&set), set.count);
  }
  CHECK_OK(zxs_handle_close(iob));
  free(workers);

  CHECK(count_threads() == threads_before, "%d threads now, %d before", count_threads(),
        threads_before);
  CHECK_NO_LEAK(before, "after the session");
}

int main(int argc, char** argv) {
  stress_require_sampler("stress_thread_churn");
  const bool light = under_valgrind();
  const int threads = argc > 1 ? atoi(argv[1]) : (light ? 16 : 200);
  const long cpu_ms = argc > 2 ? atol(argv[2]) : (light ? 20 : 10);
  const char* variants = argc > 3 ? argv[3] : "AB";
  REQUIRE(threads > 0 && threads < TID_SET_MAX && cpu_ms >= 0, "usage: %s [threads] [cpu_ms]",
          argv[0]);
  const char* sources[3];
  const int n = stress_sources(sources);
  for (int i = 0; i < n; i++) {
    if (!use_source(sources[i])) continue;
    if (strchr(variants, 'A') != NULL) run(sources[i], true, threads, cpu_ms * 1000000);
    if (strchr(variants, 'B') != NULL) run(sources[i], false, threads, cpu_ms * 1000000);
  }
  return stress_result("stress_thread_churn");
}
