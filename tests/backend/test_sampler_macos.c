// The macOS backend end to end through the public API: the sampler thread that suspends, reads
// and walks. On Linux it runs against the Mach double (ZXS_MACH_DOUBLE: tests/mach_double),
// whose counters add checks a real Mac cannot give (no thread left suspended, send rights
// released, the time-constraint policy asked for, a suspension held in flight).
//
// No timed assertion: the threads spin for CPU time and the checks are about which threads were
// sampled, where, and in what order things happened.
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <mach/mach.h>
#include <mach/mach_time.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/fxt.h>
#include <zxsampler/zircon.h>
#include <zxsampler/zxsampler.h>

#if ZXS_MACH_DOUBLE
#include <malloc.h>  // mallopt: glibc, the double's host

#include "mach_double.h"
#endif

#define PERIOD 1000000  // 1 ms

static zx_handle_t g_rsrc = ZX_HANDLE_INVALID;

static void sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

__attribute__((noinline)) void macos_busy(void) {
  uint64_t x = 1;
  for (int i = 0; i < 20000; i++) x = x * 6364136223846793005u + (uint64_t)i;
  __asm__ volatile("" : : "r"(x) : "memory");
}

static uint64_t thread_cpu_ns(mach_port_t port) {
  thread_basic_info_data_t info;
  mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
  assert_int_equal(thread_info(port, THREAD_BASIC_INFO, (thread_info_t)&info, &count),
                   KERN_SUCCESS);
  return (uint64_t)(info.user_time.seconds + info.system_time.seconds) * 1000000000u +
         (uint64_t)(info.user_time.microseconds + info.system_time.microseconds) * 1000u;
}

// Returns once `thread` has had `ns` more of CPU time.
static void wait_for_cpu(pthread_t thread, uint64_t ns) {
  const mach_port_t port = pthread_mach_thread_np(thread);
  const uint64_t start = thread_cpu_ns(port);
  while (thread_cpu_ns(port) - start < ns) sleep_ms(5);
}

static integer_t run_state(pthread_t thread) {
  thread_basic_info_data_t info;
  mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
  if (thread_info(pthread_mach_thread_np(thread), THREAD_BASIC_INFO, (thread_info_t)&info,
                  &count) != KERN_SUCCESS) {
    return -1;
  }
  return info.run_state;
}

static zx_koid_t koid_of(pthread_t thread) {
  uint64_t id = 0;
  assert_int_equal(pthread_threadid_np(thread, &id), 0);
  return (zx_koid_t)id;
}

// --- Threads the tests run --------------------------------------------------------------------

typedef struct spinner {
  pthread_t thread;
  atomic_bool stop;
  bool attach_self;
  zx_handle_t iob;
  zx_status_t self_status;
  int64_t cpu_ms;  // > 0: spin this much of its own CPU time, then exit
  _Atomic zx_koid_t koid;
} spinner_t;

static void* spin_main(void* arg) {
  spinner_t* s = arg;
  uint64_t id = 0;
  pthread_threadid_np(pthread_self(), &id);
  atomic_store(&s->koid, (zx_koid_t)id);
  if (s->attach_self) s->self_status = zxs_sampler_attach(s->iob, zxs_thread_self());
  const mach_port_t self = pthread_mach_thread_np(pthread_self());
  const uint64_t start = thread_cpu_ns(self);
  while (!atomic_load(&s->stop)) {
    macos_busy();
    if (s->cpu_ms > 0 && thread_cpu_ns(self) - start >= (uint64_t)s->cpu_ms * 1000000u) break;
  }
  return NULL;
}

static void spinner_start(spinner_t* s) {
  atomic_store(&s->stop, false);
  assert_int_equal(pthread_create(&s->thread, NULL, spin_main, s), 0);
}

static void spinner_join(spinner_t* s) {
  atomic_store(&s->stop, true);
  assert_int_equal(pthread_join(s->thread, NULL), 0);
}

typedef struct blocker {
  pthread_t thread;
  int pipe[2];
} blocker_t;

static void* block_main(void* arg) {
  blocker_t* b = arg;
  char c;
  while (read(b->pipe[0], &c, 1) < 0) {
  }
  return NULL;
}

// A thread blocked in read() until blocker_end(); returns once the kernel says it waits.
static void blocker_start(blocker_t* b) {
  assert_int_equal(pipe(b->pipe), 0);
  assert_int_equal(pthread_create(&b->thread, NULL, block_main, b), 0);
  while (run_state(b->thread) != TH_STATE_WAITING) sched_yield();
}

static void blocker_end(blocker_t* b) {
  assert_int_equal(write(b->pipe[1], "x", 1), 1);
  assert_int_equal(pthread_join(b->thread, NULL), 0);
  close(b->pipe[0]);
  close(b->pipe[1]);
}

// --- Sessions ---------------------------------------------------------------------------------

static zx_handle_t create_session(zx_duration_t period, size_t buffer_size) {
  if (g_rsrc == ZX_HANDLE_INVALID) assert_int_equal(zxs_debug_resource_get(&g_rsrc), ZX_OK);
  zx_sampler_config_t config = {.period = period, .buffer_size = buffer_size};
  zx_handle_t iob = ZX_HANDLE_INVALID;
  assert_int_equal(zxs_sampler_create(g_rsrc, 0, &config, sizeof(config), &iob), ZX_OK);
  return iob;
}

static zx_status_t attach(zx_handle_t iob, pthread_t thread) {
  zx_handle_t handle;
  zx_status_t status = zxs_thread_get(thread, &handle);
  if (status != ZX_OK) return status;
  status = zxs_sampler_attach(iob, handle);
  zx_handle_close(handle);
  return status;
}

typedef struct census {
  zx_koid_t koids[8];
  size_t samples[8];  // per koid above
  size_t busy_top;    // samples of koids[0] whose PC is in macos_busy
  size_t deep;        // samples with a return address past the PC
  size_t records;
  size_t other;  // samples of a thread not in koids
} census_t;

static void count_record(const zxs_fxt_record_t* rec, census_t* c) {
  assert_int_equal(rec->kind, ZXS_FXT_RECORD_LARGE_BLOB);
  assert_int_equal(rec->blob.thread.process_koid, (zx_koid_t)getpid());
  const size_t n = rec->blob.payload.size / 8;
  assert_in_range(n, 1, ZX_SAMPLER_MAX_FRAMES);
  uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
  memcpy(pcs, rec->blob.payload.data, n * 8);
  c->records++;
  c->deep += n >= 2;
  size_t i = 0;
  while (i < 8 && c->koids[i] != rec->blob.thread.thread_koid) i++;
  if (i == 8) {
    c->other++;
    return;
  }
  c->samples[i]++;
  const uint64_t busy = (uint64_t)(uintptr_t)macos_busy;
  if (i == 0 && pcs[0] >= busy && pcs[0] < busy + 512) c->busy_top++;
}

// Calls `fn` for every record of the stopped session, with the region it lies in.
static void each_record(zx_handle_t iob, void (*fn)(const zxs_fxt_record_t*, uint32_t, void*),
                        void* ctx) {
  zx_iob_region_info_t regions[ZX_IOB_MAX_REGIONS];
  size_t actual = 0;
  assert_int_equal(
      zx_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions, sizeof(regions), &actual, NULL), ZX_OK);
  // No CPU attribution: a region for every CPU below the limit.
  assert_int_equal(actual, (size_t)sysconf(_SC_NPROCESSORS_CONF));
  for (uint32_t r = 0; r < actual; r++) {
    const size_t size = regions[r].region.size;
    zx_vaddr_t addr = 0;
    assert_int_equal(
        zx_vmar_map_iob(zx_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, r, 0, size, &addr), ZX_OK);
    zxs_fxt_region_iter_t it;
    zxs_fxt_record_t rec;
    zxs_fxt_region_iter_init(&it, (const uint8_t*)addr, size);
    while (zxs_fxt_region_next(&it, &rec)) fn(&rec, r, ctx);
    assert_int_equal(it.status, ZX_OK);
    assert_int_equal(zx_vmar_unmap(zx_vmar_root_self(), addr, size), ZX_OK);
  }
}

static void census_record(const zxs_fxt_record_t* rec, uint32_t region, void* ctx) {
  (void)region;
  count_record(rec, ctx);
}

// Reads every region of the stopped session into *c.
static void read_session(zx_handle_t iob, census_t* c) { each_record(iob, census_record, c); }

static void check_nothing_suspended(void) {
#if ZXS_MACH_DOUBLE
  assert_int_equal(mach_double_suspended_now(), 0);
#endif
}

// --- Tests ------------------------------------------------------------------------------------

// Only attached threads, only while they run: a spinner attached from this thread is sampled
// (its stack walked into macos_busy), a blocked attached thread and an unattached spinner are
// not; the stats say what ran.
static void samples_attached_running_threads_only(void** state) {
  (void)state;
  spinner_t sampled = {0}, unattached = {0};
  blocker_t blocked;
  blocker_start(&blocked);
  spinner_start(&sampled);
  spinner_start(&unattached);
  zx_handle_t iob = create_session(PERIOD, 1u << 20);
  assert_int_equal(attach(iob, sampled.thread), ZX_OK);
  assert_int_equal(attach(iob, blocked.thread), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  wait_for_cpu(sampled.thread, 150000000u);
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  check_nothing_suspended();

  census_t c = {.koids = {koid_of(sampled.thread), koid_of(blocked.thread)}};
  read_session(iob, &c);
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.source, ZXS_SOURCE_SAMPLER_THREAD);
  assert_string_equal(stats.backend, "macos");
  assert_int_equal(stats.requested_period, PERIOD);
  assert_int_equal(stats.effective_period, PERIOD);
  assert_int_equal(stats.attached_threads, 2);
  assert_int_equal(stats.samples_written, c.records);
  assert_int_equal(c.other, 0);
  assert_true(c.samples[0] > 10);
  assert_int_equal(c.samples[1], 0);
  assert_true(c.busy_top > c.samples[0] / 2);  // most of its time is in macos_busy
  assert_true(c.deep > c.samples[0] / 2);      // and the walk went past it
#if ZXS_MACH_DOUBLE
  // The sampler has a time-constraint policy sized for 1 ms (in 24 MHz ticks): a round within
  // half the period, a quarter of it reserved (what XNU grants for that constraint).
  thread_time_constraint_policy_data_t policy;
  assert_true(mach_double_time_constraint(&policy));
  assert_int_equal(policy.period, 24000);
  assert_int_equal(policy.computation, 6000);
  assert_int_equal(policy.constraint, 12000);
  assert_int_equal(stats.source_failures, 0);
  assert_true(mach_double_suspends() >= c.records);
#endif
  assert_int_equal(zx_handle_close(iob), ZX_OK);
  spinner_join(&sampled);
  spinner_join(&unattached);
  blocker_end(&blocked);
}

// Threads that exit while attached: one attached itself (its exit hook detaches it at once),
// one was attached from here (reaped at the next call); both leave nothing behind.
static void exited_threads_are_detached(void** state) {
  (void)state;
  zx_handle_t iob = create_session(PERIOD, 1u << 20);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  spinner_t self = {.attach_self = true, .iob = iob, .cpu_ms = 30};
  spinner_t other = {.cpu_ms = 30};
  spinner_start(&self);
  spinner_start(&other);
  const mach_port_t other_port = pthread_mach_thread_np(other.thread);
  const zx_status_t attached = attach(iob, other.thread);
  assert_true(attached == ZX_OK || attached == ZX_ERR_BAD_STATE);  // it may have finished
  assert_int_equal(pthread_join(self.thread, NULL), 0);
  assert_int_equal(pthread_join(other.thread, NULL), 0);
  assert_int_equal(self.self_status, ZX_OK);
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.attached_threads, 0);
#if ZXS_MACH_DOUBLE
  // Our send right on the exited thread's port was released with its source.
  if (attached == ZX_OK) assert_int_equal(mach_double_send_refs(other_port), 1);
#else
  (void)other_port;
#endif
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  check_nothing_suspended();
  assert_int_equal(zx_handle_close(iob), ZX_OK);
}

// Threads that take malloc's lock all the time while they are suspended: the sampler must
// never need it between suspend and resume (on glibc, one arena makes every thread share one
// lock). The test ends: that is the check, with the samples taken.
typedef struct mallocer {
  pthread_t thread;
  atomic_bool* stop;
} mallocer_t;

static void* malloc_main(void* arg) {
  mallocer_t* m = arg;
  void* held[64] = {0};
  for (unsigned i = 0; !atomic_load(m->stop); i++) {
    free(held[i % 64]);
    held[i % 64] = malloc(16 + (i * 7919u) % 4096);
  }
  for (int i = 0; i < 64; i++) free(held[i]);
  return NULL;
}

static void sampler_never_waits_on_malloc(void** state) {
  (void)state;
  enum { THREADS = 4 };
  atomic_bool stop = false;
  mallocer_t threads[THREADS];
  zx_handle_t iob = create_session(100000, 4u << 20);  // the shortest period the sampler keeps
  for (int i = 0; i < THREADS; i++) {
    threads[i].stop = &stop;
    assert_int_equal(pthread_create(&threads[i].thread, NULL, malloc_main, &threads[i]), 0);
    assert_int_equal(attach(iob, threads[i].thread), ZX_OK);
  }
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  wait_for_cpu(threads[0].thread, 100000000u);
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  check_nothing_suspended();
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_true(stats.samples_written > 0);
  atomic_store(&stop, true);
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_join(threads[i].thread, NULL), 0);
  assert_int_equal(zx_handle_close(iob), ZX_OK);
}

typedef struct koid_list {
  const zx_koid_t* koids;
  size_t count;
} koid_list_t;

static void check_known_koid(const zxs_fxt_record_t* rec, uint32_t region, void* ctx) {
  (void)region;
  const koid_list_t* list = ctx;
  bool known = false;
  for (size_t k = 0; k < list->count; k++) known |= list->koids[k] == rec->blob.thread.thread_koid;
  assert_true(known);
}

// Waves of short-lived threads attach (themselves, or from here) while the session samples and
// is stopped and restarted; every record names one of them, nothing is left attached or
// suspended.
static void thread_churn(void** state) {
  (void)state;
  enum { WAVES = 12, WAVE = 8 };
  zx_handle_t iob = create_session(100000, 4u << 20);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  census_t c = {0};
  zx_koid_t* koids = calloc(WAVES * WAVE, sizeof(*koids));
  assert_non_null(koids);
  for (int wave = 0; wave < WAVES; wave++) {
    spinner_t s[WAVE];
    memset(s, 0, sizeof(s));
    for (int i = 0; i < WAVE; i++) {
      s[i].attach_self = i % 2 == 0;
      s[i].iob = iob;
      s[i].cpu_ms = i % 4 == 3 ? 0 : 5;
      if (s[i].cpu_ms == 0) atomic_store(&s[i].stop, true);  // exits right after starting
      assert_int_equal(pthread_create(&s[i].thread, NULL, spin_main, &s[i]), 0);
      if (!s[i].attach_self) {
        const zx_status_t status = attach(iob, s[i].thread);
        assert_true(status == ZX_OK || status == ZX_ERR_BAD_STATE);
      }
    }
    if (wave % 4 == 3) {  // stop and restart while threads still exit
      assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
      check_nothing_suspended();
      assert_int_equal(zxs_sampler_start(iob), ZX_OK);
    }
    for (int i = 0; i < WAVE; i++) {
      assert_int_equal(pthread_join(s[i].thread, NULL), 0);
      koids[wave * WAVE + i] = atomic_load(&s[i].koid);
      assert_true(s[i].self_status == ZX_OK || !s[i].attach_self);
    }
  }
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  check_nothing_suspended();
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.attached_threads, 0);
  assert_int_equal(stats.dropped_full, 0);
  read_session(iob, &c);
  assert_int_equal(stats.samples_written, c.records);
  // Every record is of a churned thread (census keeps 8 koids: check them all here).
  koid_list_t churned = {.koids = koids, .count = WAVES * WAVE};
  each_record(iob, check_known_koid, &churned);
  free(koids);
  assert_int_equal(zx_handle_close(iob), ZX_OK);
}

// Where each of two threads' samples went, and in what order.
typedef struct per_thread {
  zx_koid_t koids[2];
  int64_t region[2];  // -1 until its first sample
  uint64_t last_ticks[2];
  size_t samples[2];
} per_thread_t;

static void check_one_region(const zxs_fxt_record_t* rec, uint32_t region, void* ctx) {
  per_thread_t* seen = ctx;
  const int t = rec->blob.thread.thread_koid == seen->koids[0] ? 0 : 1;
  assert_int_equal(rec->blob.thread.thread_koid, seen->koids[t]);
  if (seen->region[t] < 0) seen->region[t] = region;
  assert_int_equal(seen->region[t], region);  // one region per thread
  assert_true(rec->blob.ticks >= seen->last_ticks[t]);
  seen->last_ticks[t] = rec->blob.ticks;
  seen->samples[t]++;
}

// Periods below the sampler thread's floor (100 us) are raised to it, and said in the stats (as
// the timer's resolution, not throttling); a thread's samples all go to the region of its slot
// (no CPU attribution), in time order.
static void period_floor_and_one_region_per_thread(void** state) {
  (void)state;
  spinner_t a = {0}, b = {0};
  spinner_start(&a);
  spinner_start(&b);
  zx_handle_t iob = create_session(ZX_SAMPLER_MIN_PERIOD, 4u << 20);
  assert_int_equal(attach(iob, a.thread), ZX_OK);
  assert_int_equal(attach(iob, b.thread), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  wait_for_cpu(a.thread, 50000000u);
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  zxs_sampler_stats_t stats;
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.requested_period, ZX_SAMPLER_MIN_PERIOD);
  assert_int_equal(stats.effective_period, 100000);
  assert_int_equal(stats.throttled, 0);

  per_thread_t seen = {.koids = {koid_of(a.thread), koid_of(b.thread)}, .region = {-1, -1}};
  each_record(iob, check_one_region, &seen);
  assert_true(seen.samples[0] > 0 && seen.samples[1] > 0);
  // Two slots next to each other land in two regions where there are two or more.
  if (sysconf(_SC_NPROCESSORS_CONF) > 1) assert_int_not_equal(seen.region[0], seen.region[1]);
  assert_int_equal(zx_handle_close(iob), ZX_OK);
  spinner_join(&a);
  spinner_join(&b);
}

#if ZXS_MACH_DOUBLE
// The double refuses what XNU's thread_policy_set_internal refuses (a computation outside
// [50 us, 50 ms] or above the constraint) and raises a computation below half the constraint,
// as XNU stores it. In 24 MHz ticks: 50 us is 1200, 50 ms 1200000.
static void double_follows_xnu_time_constraint_rules(void** state) {
  (void)state;
  const mach_port_t self = mach_thread_self();
  static const struct {
    thread_time_constraint_policy_data_t asked;
    kern_return_t result;
    uint32_t stored_computation;
  } kCases[] = {
      {{.period = 24000, .computation = 1199, .constraint = 12000}, KERN_INVALID_ARGUMENT, 0},
      {{.period = 0, .computation = 1200001, .constraint = 2400000}, KERN_INVALID_ARGUMENT, 0},
      {{.period = 24000, .computation = 6000, .constraint = 5999}, KERN_INVALID_ARGUMENT, 0},
      // The sampler's old request at its 100 us floor: a tenth of the period.
      {{.period = 2400, .computation = 240, .constraint = 1200}, KERN_INVALID_ARGUMENT, 0},
      {{.period = 24000, .computation = 1200, .constraint = 1200}, KERN_SUCCESS, 1200},
      {{.period = 24000, .computation = 2400, .constraint = 12000}, KERN_SUCCESS, 6000},
      {{.period = 0, .computation = 1200, .constraint = 24000000}, KERN_SUCCESS, 1200000},
  };
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); i++) {
    thread_time_constraint_policy_data_t asked = kCases[i].asked;
    assert_int_equal(thread_policy_set(self, THREAD_TIME_CONSTRAINT_POLICY, (thread_policy_t)&asked,
                                       THREAD_TIME_CONSTRAINT_POLICY_COUNT),
                     kCases[i].result);
    thread_time_constraint_policy_data_t stored;
    if (kCases[i].result == KERN_SUCCESS) {
      assert_true(mach_double_time_constraint(&stored));
      assert_int_equal(stored.computation, kCases[i].stored_computation);
      assert_int_equal(stored.constraint, kCases[i].asked.constraint);
    }
  }
  thread_time_constraint_policy_data_t short_count = {.computation = 1200, .constraint = 2400};
  assert_int_equal(
      thread_policy_set(self, THREAD_TIME_CONSTRAINT_POLICY, (thread_policy_t)&short_count, 3),
      KERN_INVALID_ARGUMENT);
  mach_port_deallocate(mach_task_self(), self);
}

// Every period the sampler keeps gets a time-constraint policy XNU accepts: a quarter of the
// period reserved within [50 us, 50 ms], a round within half the period (never below the
// computation), as XNU stores it (nothing raised). No source failure.
static void time_constraint_accepted_for_every_period(void** state) {
  (void)state;
  static const struct {
    zx_duration_t period;
    uint32_t ticks, computation, constraint;
  } kCases[] = {
      {ZX_SAMPLER_MIN_PERIOD, 2400, 1200, 1200},      // raised to the 100 us floor
      {ZX_USEC(150), 3600, 1200, 1800},               // a quarter would be under 50 us
      {ZX_USEC(200), 4800, 1200, 2400},               // a quarter is 50 us
      {ZX_MSEC(4), 96000, 24000, 48000},              //
      {ZX_MSEC(300), 7200000, 1200000, 3600000},      // a quarter would be over 50 ms
      {ZX_SEC(10), 240000000u, 1200000, 120000000u},  //
  };
  blocker_t blocked;
  blocker_start(&blocked);
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); i++) {
    zx_handle_t iob = create_session(kCases[i].period, 1u << 16);
    assert_int_equal(attach(iob, blocked.thread), ZX_OK);
    assert_int_equal(zxs_sampler_start(iob), ZX_OK);  // arms: the policy is asked for
    thread_time_constraint_policy_data_t policy;
    assert_true(mach_double_time_constraint(&policy));
    assert_int_equal(policy.period, kCases[i].ticks);
    assert_int_equal(policy.computation, kCases[i].computation);
    assert_int_equal(policy.constraint, kCases[i].constraint);
    assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
    zxs_sampler_stats_t stats;
    assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
    assert_int_equal(stats.source_failures, 0);
    assert_int_equal(zx_handle_close(iob), ZX_OK);
  }
  blocker_end(&blocked);
}

// Refused (as XNU refuses a thread whose work interval may not be real-time), the sampler runs
// at the default policy and samples on; each thread armed meanwhile counts a source failure.
static void time_constraint_refused_falls_back_visibly(void** state) {
  (void)state;
  thread_time_constraint_policy_data_t before;
  assert_true(mach_double_time_constraint(&before));
  mach_double_refuse_time_constraint(KERN_INVALID_POLICY);
  spinner_t spinning = {0};
  blocker_t blocked;
  spinner_start(&spinning);
  blocker_start(&blocked);
  zx_handle_t iob = create_session(ZX_USEC(1500), 1u << 20);  // a period not asked for before
  assert_int_equal(attach(iob, spinning.thread), ZX_OK);
  assert_int_equal(attach(iob, blocked.thread), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  // Sampled all the same: wait for the first samples (the sampler may still be sleeping out a
  // slice of an earlier long period), for 10 s at most.
  zxs_sampler_stats_t stats = {0};
  for (int waited = 0; waited < 2000 && stats.samples_written == 0; waited++) {
    wait_for_cpu(spinning.thread, 5000000u);
    assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  }
  assert_int_equal(zxs_sampler_stop(iob), ZX_OK);
  mach_double_refuse_time_constraint(KERN_SUCCESS);
  assert_int_equal(zxs_sampler_get_stats(iob, &stats), ZX_OK);
  assert_int_equal(stats.source_failures, 2);  // both armed threads
  assert_true(stats.samples_written > 0);
  assert_int_equal(stats.effective_period, ZX_USEC(1500));
  thread_time_constraint_policy_data_t after;
  assert_true(mach_double_time_constraint(&after));
  assert_int_equal(after.period, before.period);  // nothing was stored
  check_nothing_suspended();
  assert_int_equal(zx_handle_close(iob), ZX_OK);
  spinner_join(&spinning);
  blocker_end(&blocked);
}

// Stop while a suspension is in flight: the double holds the target suspended inside
// thread_suspend (the hook) until stop has been called; stop must return only after the target
// was resumed.
typedef struct in_flight {
  atomic_int phase;  // 0 waiting for a suspension, 1 held (stop may be called), 2 released
  atomic_bool stop_called;
} in_flight_t;

static void hold_suspension(mach_port_t name, void* ctx) {
  (void)name;
  in_flight_t* f = ctx;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&f->phase, &expected, 1)) return;
  while (!atomic_load(&f->stop_called)) sched_yield();
  // Stop has begun (it is waiting or about to): give it every chance to return too early.
  for (int i = 0; i < 20; i++) sched_yield();
  atomic_store(&f->phase, 2);
}

static void* call_stop(void* arg) {
  zx_handle_t iob = *(zx_handle_t*)arg;
  return (void*)(intptr_t)zxs_sampler_stop(iob);
}

static void stop_waits_for_suspension_in_flight(void** state) {
  (void)state;
  spinner_t s = {0};
  spinner_start(&s);
  in_flight_t f = {0};
  mach_double_set_suspend_hook(hold_suspension, &f);
  zx_handle_t iob = create_session(PERIOD, 1u << 20);
  assert_int_equal(attach(iob, s.thread), ZX_OK);
  assert_int_equal(zxs_sampler_start(iob), ZX_OK);
  while (atomic_load(&f.phase) == 0) sleep_ms(1);
  pthread_t stopper;
  assert_int_equal(pthread_create(&stopper, NULL, call_stop, &iob), 0);
  atomic_store(&f.stop_called, true);
  void* result;
  assert_int_equal(pthread_join(stopper, &result), 0);
  assert_int_equal((zx_status_t)(intptr_t)result, ZX_OK);
  // stop returned: the suspension it found in flight had ended, and the thread was resumed.
  assert_int_equal(atomic_load(&f.phase), 2);
  assert_int_equal(mach_double_suspended_now(), 0);
  mach_double_set_suspend_hook(NULL, NULL);
  assert_int_equal(zx_handle_close(iob), ZX_OK);
  spinner_join(&s);
}
#endif

// The main executable's LC_UUID as dyld shows it, in hex; false when it has none.
static bool main_uuid_hex(char hex[33]) {
  for (uint32_t i = 0; i < _dyld_image_count(); i++) {
    const struct mach_header_64* h =
        (const struct mach_header_64*)(const void*)_dyld_get_image_header(i);
    if (h == NULL || h->magic != MH_MAGIC_64 || h->filetype != MH_EXECUTE) continue;
    const uint8_t* cmd = (const uint8_t*)(h + 1);
    for (uint32_t c = 0; c < h->ncmds; c++) {
      struct load_command lc;
      memcpy(&lc, cmd, sizeof(lc));
      if (lc.cmd == LC_UUID) {
        struct uuid_command u;
        memcpy(&u, cmd, sizeof(u));
        for (int b = 0; b < 16; b++) snprintf(hex + 2 * b, 3, "%02x", u.uuid[b]);
        return true;
      }
      cmd += lc.cmdsize;
    }
  }
  return false;
}

// The profiler API (profiler.h) end to end: record this thread and another into an FXT file,
// read it back: samples, both threads, the modules from dyld (no vDSO on macOS), ticks at Mach
// absolute time's rate; then convert it.
static void profiler_records_and_converts(void** state) {
  (void)state;
  char path[] = "/tmp/zxs_macos_profile_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  zxs_profiler_options_t options = {.period = PERIOD, .buffer_size = 1u << 20};
  assert_int_equal(zxs_profiler_start(&options), ZX_OK);
  spinner_t other = {0};
  spinner_start(&other);
  assert_int_equal(zxs_profiler_attach_thread(other.thread), ZX_OK);
  const mach_port_t self = pthread_mach_thread_np(pthread_self());
  const uint64_t start = thread_cpu_ns(self);
  while (thread_cpu_ns(self) - start < 150000000u) macos_busy();
  assert_int_equal(zxs_profiler_stop(path, ZXS_FORMAT_FXT), ZX_OK);
  spinner_join(&other);

  FILE* f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  const long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* data = malloc((size_t)size);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  zxs_fxt_reader_t reader;
  assert_int_equal(zxs_fxt_reader_init(&reader, data, (size_t)size), ZX_OK);
  zxs_fxt_record_t rec;
  size_t samples = 0, threads = 0, modules = 0, vdso = 0;
  while (zxs_fxt_reader_next(&reader, &rec)) {
    if (rec.kind == ZXS_FXT_RECORD_LARGE_BLOB) {
      samples++;
    } else if (rec.kind == ZXS_FXT_RECORD_KERNEL_OBJECT &&
               rec.kernel_object.obj_type == ZX_OBJ_TYPE_THREAD) {
      threads++;
    } else if (rec.kind == ZXS_FXT_RECORD_ATTACHMENT) {
      modules += rec.blob.name.len == 7 && memcmp(rec.blob.name.data, "modules", 7) == 0;
      vdso += rec.blob.name.len == 4 && memcmp(rec.blob.name.data, "vdso", 4) == 0;
    }
  }
  assert_int_equal(reader.status, ZX_OK);
  mach_timebase_info_data_t timebase;
  assert_int_equal(mach_timebase_info(&timebase), KERN_SUCCESS);
  assert_int_equal(reader.ticks_per_second,
                   (uint64_t)1000000000u * timebase.denom / timebase.numer);
  zxs_fxt_reader_destroy(&reader);
  free(data);
  assert_true(samples > 10);
  assert_int_equal(threads, 2);
  assert_int_equal(modules, 1);
  assert_int_equal(vdso, 0);

  char top[] = "/tmp/zxs_macos_top_XXXXXX";
  fd = mkstemp(top);
  close(fd);
  char error[256];
  assert_int_equal(zxs_profile_convert(path, top, ZXS_FORMAT_TOP, error, sizeof(error)), ZX_OK);
  // Samples fall in the main executable's segments as dyld described them (slide, LC_SEGMENT_64):
  // the report attributes them to it. (Names: on a Mac the report reads the Mach-O file, whose
  // LC_UUID matches; the double's LC_UUID, 16 bytes of the ELF build ID, does not match its ELF
  // file's 20-byte ID, so the report rightly leaves that file unread.)
  f = fopen(top, "r");
  assert_non_null(f);
  char line[512];
  bool attributed = false;
  while (fgets(line, sizeof(line), f) != NULL) {
    attributed |= strstr(line, "[test_sampler_macos]") != NULL;
  }
  fclose(f);
  assert_true(attributed);
#if !ZXS_MACH_DOUBLE
  // On a Mac the executable is a Mach-O file whose LC_UUID is the trace's: its functions are
  // named.
  f = fopen(top, "r");
  assert_non_null(f);
  bool named = false;
  while (fgets(line, sizeof(line), f) != NULL) named |= strstr(line, "macos_busy") != NULL;
  fclose(f);
  assert_true(named);
#endif
  // The trace keeps the executable's LC_UUID as its build ID (the markup export names it).
  char uuid[33];
  assert_true(main_uuid_hex(uuid));
  assert_int_equal(zxs_profile_convert(path, top, ZXS_FORMAT_MARKUP, error, sizeof(error)), ZX_OK);
  f = fopen(top, "r");
  assert_non_null(f);
  bool identified = false;
  while (fgets(line, sizeof(line), f) != NULL) {
    identified |= strstr(line, "{{{module:") != NULL &&
                  strstr(line, "test_sampler_macos") != NULL && strstr(line, uuid) != NULL;
  }
  fclose(f);
  assert_true(identified);
  unlink(top);
  unlink(path);
}

int main(void) {
#if ZXS_MACH_DOUBLE
  // One malloc arena: every thread takes the same lock (glibc gives threads arenas of their own).
  mallopt(M_ARENA_MAX, 1);
#endif
  const struct CMUnitTest tests[] = {
#if ZXS_MACH_DOUBLE
    cmocka_unit_test(double_follows_xnu_time_constraint_rules),  // first: it sets the policy
#endif
    cmocka_unit_test(samples_attached_running_threads_only),
    cmocka_unit_test(exited_threads_are_detached),
    cmocka_unit_test(sampler_never_waits_on_malloc),
    cmocka_unit_test(thread_churn),
    cmocka_unit_test(period_floor_and_one_region_per_thread),
#if ZXS_MACH_DOUBLE
    cmocka_unit_test(stop_waits_for_suspension_in_flight),
    cmocka_unit_test(time_constraint_accepted_for_every_period),
    cmocka_unit_test(time_constraint_refused_falls_back_visibly),
#endif
    cmocka_unit_test(profiler_records_and_converts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
