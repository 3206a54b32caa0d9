// Helpers shared by the stress programs (real Linux backend, public API only): checks that count
// failures, CPU-time spinning, leak probes (file descriptors, POSIX timers, threads), reading and
// hashing every region of a session, and finding the signal the library samples with.
//
// Every program prints one line per failed check and exits non-zero if any failed. Nothing is
// timed: work is measured in CPU time of the spinning thread, and counts are compared with
// generous bounds.
#ifndef ZXSAMPLER_TESTS_STRESS_STRESS_UTIL_H_
#define ZXSAMPLER_TESTS_STRESS_STRESS_UTIL_H_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/zxsampler.h>

static _Atomic int g_failures;

#define CHECK(cond, ...)                                               \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "FAIL %s:%d: (%s) ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                    \
      fputc('\n', stderr);                                             \
      atomic_fetch_add(&g_failures, 1);                                \
    }                                                                  \
  } while (0)

// A check the rest of the program cannot do without.
#define REQUIRE(cond, ...)                                              \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "FATAL %s:%d: (%s) ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                     \
      fputc('\n', stderr);                                              \
      exit(1);                                                          \
    }                                                                   \
  } while (0)

#define CHECK_OK(call)                                                         \
  do {                                                                         \
    zx_status_t check_ok_status = (call);                                      \
    CHECK(check_ok_status == ZX_OK, "%s", zxs_status_string(check_ok_status)); \
  } while (0)

#define REQUIRE_OK(call)                                                             \
  do {                                                                               \
    zx_status_t require_ok_status = (call);                                          \
    REQUIRE(require_ok_status == ZX_OK, "%s", zxs_status_string(require_ok_status)); \
  } while (0)

static inline int stress_result(const char* name) {
  const int failures = atomic_load(&g_failures);
  if (failures != 0) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

// Exit status meson counts as "skipped".
#define STRESS_SKIP 77

// Skips the program when sampling is compiled out or switched off (meson -Dsampler=false,
// ZXSAMPLER_DEBUGGING_SYSCALLS=0).
static inline void stress_require_sampler(const char* name) {
  if (!zxs_sampler_compiled_in() || !zxs_debugging_syscalls_enabled()) {
    printf("%s: sampling is compiled out or switched off: skipped\n", name);
    exit(STRESS_SKIP);
  }
}

static inline pid_t stress_tid(void) { return (pid_t)syscall(SYS_gettid); }

// --- CPU time ---------------------------------------------------------------------------------

static inline int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Frame-pointer-friendly busy work, not inlined so samples land in a named function.
__attribute__((noinline)) static uint64_t stress_busy(uint64_t n) {
  uint64_t x = 1;
  for (uint64_t i = 0; i < n; i++) x = x * 6364136223846793005u + i;
  __asm__ volatile("" : "+r"(x) : : "memory");
  return x;
}

// Spins until the calling thread used `ns` more nanoseconds of CPU (and, if stop is given,
// returns early once *stop is set).
static inline void spin_cpu_ns(int64_t ns, const atomic_bool* stop) {
  const int64_t end = thread_cpu_ns() + ns;
  while (thread_cpu_ns() < end) {
    if (stop != NULL && atomic_load_explicit(stop, memory_order_relaxed)) return;
    stress_busy(2000);
  }
}

static inline void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// --- Leak probes ------------------------------------------------------------------------------

// Open file descriptors of this process (-1 without /proc).
static inline int count_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] != '.') n++;
  }
  closedir(d);
  return n - 1;  // the directory's own descriptor
}

// POSIX timers of this process (/proc/self/timers, one "ID:" line each); -1 if absent.
static inline int count_timers(void) {
  FILE* f = fopen("/proc/self/timers", "r");
  if (f == NULL) return -1;
  char line[256];
  int n = 0;
  while (fgets(line, sizeof(line), f) != NULL) {
    if (strncmp(line, "ID:", 3) == 0) n++;
  }
  fclose(f);
  return n;
}

// Threads of this process.
static inline int count_threads(void) {
  DIR* d = opendir("/proc/self/task");
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] != '.') n++;
  }
  closedir(d);
  return n;
}

static inline void* stress_noop_thread(void* arg) { return arg; }

// Threads of this process once runtime helpers exist: a sanitizer runtime (TSan) starts a
// background thread with the first pthread_create, which is not a leak of the library's.
static inline int count_threads_settled(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, stress_noop_thread, NULL) == 0) pthread_join(t, NULL);
  return count_threads();
}

// Descriptors that belong to the library: its memfds and perf events.
static inline int count_library_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[300], target[256];
    snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(path, target, sizeof(target) - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    if (strstr(target, "zxsampler") != NULL || strstr(target, "perf_event") != NULL) n++;
  }
  closedir(d);
  return n;
}

typedef struct leak_probe {
  int fds, timers, library_fds;
} leak_probe_t;

static inline leak_probe_t leak_probe(void) {
  leak_probe_t p = {count_fds(), count_timers(), count_library_fds()};
  return p;
}

#define CHECK_NO_LEAK(before, what)                                                            \
  do {                                                                                         \
    leak_probe_t after_probe = leak_probe();                                                   \
    CHECK(after_probe.fds == (before).fds, "%s: %d fds before, %d after", what, (before).fds,  \
          after_probe.fds);                                                                    \
    CHECK(after_probe.timers == (before).timers, "%s: %d POSIX timers before, %d after", what, \
          (before).timers, after_probe.timers);                                                \
    CHECK(after_probe.library_fds == (before).library_fds,                                     \
          "%s: %d memfd/perf fds before, %d after", what, (before).library_fds,                \
          after_probe.library_fds);                                                            \
  } while (0)

// --- Sessions ---------------------------------------------------------------------------------

static inline zx_status_t create_session(zx_duration_t period, size_t buffer_size,
                                         zx_handle_t* iob) {
  zx_handle_t rsrc;
  zx_status_t s = zxs_debug_resource_get(&rsrc);
  if (s != ZX_OK) return s;
  zx_sampler_config_t config = {
      .period = period, .buffer_size = buffer_size, .iobuffer_discipline = 0};
  s = zxs_sampler_create(rsrc, 0, &config, sizeof(config), iob);
  zxs_handle_close(rsrc);
  return s;
}

static inline void* stress_spin_thread(void* arg) {
  spin_cpu_ns(2000000, (const atomic_bool*)arg);
  return NULL;
}

// Sets up what the library keeps for the life of the process (its signal handler, per-CPU
// states, calibration, the watcher thread and its epoll descriptor for threads attached from
// outside), so that leak checks compare like with like: a session samples this thread and
// another one attached from here, then everything is closed.
static inline bool under_valgrind(void);

static inline void warm_up_library(void) {
  zx_handle_t iob;
  REQUIRE_OK(create_session(1000000, 1u << 16, &iob));
  // Not the main thread under valgrind: valgrind cannot always grow the main thread's stack for
  // a signal frame and kills the program ("Can't extend stack ... during signal delivery").
  if (!under_valgrind()) REQUIRE_OK(zxs_sampler_attach(iob, zxs_thread_self()));
  REQUIRE_OK(zxs_sampler_start(iob));
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, stress_spin_thread, NULL) == 0, "pthread_create");
  zx_handle_t thread;
  if (zxs_thread_get(t, &thread) == ZX_OK) {
    (void)zxs_sampler_attach(iob, thread);  // may have exited already: BAD_STATE is fine
    zxs_handle_close(thread);
  }
  spin_cpu_ns(2000000, NULL);
  pthread_join(t, NULL);
  REQUIRE_OK(zxs_sampler_stop(iob));
  REQUIRE_OK(zxs_handle_close(iob));
}

// What reading a session's regions found.
typedef struct region_scan {
  uint64_t records;  // sample records
  uint64_t other;    // records of another kind
  uint64_t bad;      // sample records with a wrong pid, unknown tid or odd payload
  uint64_t bytes;    // bytes of records
  bool malformed;    // iteration stopped on malformed data
  char error[ZXS_FXT_ERROR_MAX + 32];
} region_scan_t;

// Called for every sample record; returns false if the record is not acceptable.
typedef bool (*sample_check_fn)(zx_koid_t pid, zx_koid_t tid, const uint8_t* pcs, size_t n,
                                void* ctx);

// Maps every region of `iob`, iterates its records and unmaps it.
static inline zx_status_t scan_regions(zx_handle_t iob, sample_check_fn check, void* ctx,
                                       region_scan_t* out) {
  memset(out, 0, sizeof(*out));
  zx_iob_region_info_t regions[ZX_IOB_MAX_REGIONS];
  size_t count = 0;
  zx_status_t s =
      zxs_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions, sizeof(regions), &count, NULL);
  if (s != ZX_OK) return s;
  for (size_t r = 0; r < count; r++) {
    zx_vaddr_t addr;
    const size_t size = (size_t)regions[r].region.size;
    s = zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, (uint32_t)r, 0, size,
                         &addr);
    if (s != ZX_OK) return s;
    zxs_fxt_region_iter_t it;
    zxs_fxt_record_t rec;
    zxs_fxt_region_iter_init(&it, (const void*)addr, size);
    while (zxs_fxt_region_next(&it, &rec)) {
      out->bytes += rec.size;
      if (rec.kind != ZXS_FXT_RECORD_LARGE_BLOB) {
        out->other++;
        continue;
      }
      out->records++;
      const size_t n = rec.blob.payload.size / 8;
      if (rec.blob.payload.size % 8 != 0 || n < 1 || n > ZX_SAMPLER_MAX_FRAMES ||
          (check != NULL && !check(rec.blob.thread.process_koid, rec.blob.thread.thread_koid,
                                   rec.blob.payload.data, n, ctx))) {
        out->bad++;
      }
    }
    if (it.status != ZX_OK && !out->malformed) {
      out->malformed = true;
      snprintf(out->error, sizeof(out->error), "region %zu: %s", r, it.error.message);
    }
    zxs_vmar_unmap(zxs_vmar_root_self(), addr, size);
  }
  return ZX_OK;
}

// FNV-1a over every byte of every region (mapped read-only).
static inline zx_status_t hash_regions(zx_handle_t iob, uint64_t* hash) {
  zx_iob_region_info_t regions[ZX_IOB_MAX_REGIONS];
  size_t count = 0;
  zx_status_t s =
      zxs_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions, sizeof(regions), &count, NULL);
  if (s != ZX_OK) return s;
  uint64_t h = 1469598103934665603u;
  for (size_t r = 0; r < count; r++) {
    zx_vaddr_t addr;
    const size_t size = (size_t)regions[r].region.size;
    s = zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, (uint32_t)r, 0, size,
                         &addr);
    if (s != ZX_OK) return s;
    const uint8_t* p = (const uint8_t*)addr;
    for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 1099511628211u;
    zxs_vmar_unmap(zxs_vmar_root_self(), addr, size);
  }
  *hash = h;
  return ZX_OK;
}

// A set of tids (the threads a test attached), for checking records.
#define TID_SET_MAX 1024
typedef struct tid_set {
  pthread_mutex_t lock;
  uint32_t count;
  zx_koid_t tids[TID_SET_MAX];
  uint64_t samples[TID_SET_MAX];  // records seen per tid by the last scan
  zx_koid_t pid;
} tid_set_t;

static inline void tid_set_init(tid_set_t* set) {
  memset(set, 0, sizeof(*set));
  pthread_mutex_init(&set->lock, NULL);
  set->pid = (zx_koid_t)getpid();
}

static inline void tid_set_add(tid_set_t* set, zx_koid_t tid) {
  pthread_mutex_lock(&set->lock);
  if (set->count < TID_SET_MAX) set->tids[set->count++] = tid;
  pthread_mutex_unlock(&set->lock);
}

// A sample_check_fn: the record's pid is ours and its tid is in the set (counted).
static inline bool tid_set_check(zx_koid_t pid, zx_koid_t tid, const uint8_t* pcs, size_t n,
                                 void* ctx) {
  (void)pcs;
  (void)n;
  tid_set_t* set = ctx;
  if (pid != set->pid) return false;
  for (uint32_t i = 0; i < set->count; i++) {
    if (set->tids[i] == tid) {
      set->samples[i]++;
      return true;
    }
  }
  return false;
}

static inline uint32_t tid_set_sampled(const tid_set_t* set) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < set->count; i++) n += set->samples[i] > 0;
  return n;
}

static inline uint64_t tid_set_samples_of(const tid_set_t* set, zx_koid_t tid) {
  for (uint32_t i = 0; i < set->count; i++) {
    if (set->tids[i] == tid) return set->samples[i];
  }
  return 0;
}

// --- The library's signal ---------------------------------------------------------------------

// Whether a handler lives in the object that defines the library's calls (the shared library, or
// this program where it is linked in statically). Compared by load address, never by file name:
// a clone's path may contain the library's name too.
static inline bool handler_in_library(const struct sigaction* sa) {
  if ((sa->sa_flags & SA_SIGINFO) == 0 || sa->sa_sigaction == NULL) return false;
  void* addr;
  void* library;
  memcpy(&addr, &sa->sa_sigaction, sizeof(addr));  // POSIX: function pointers fit void*
  zx_status_t (*const api)(zx_handle_t) = zxs_sampler_start;
  memcpy(&library, &api, sizeof(library));
  Dl_info info, library_info;
  return dladdr(addr, &info) != 0 && dladdr(library, &library_info) != 0 &&
         info.dli_fbase == library_info.dli_fbase;
}

// The signal whose handler is the library's (after a start), or 0.
static inline int library_signal(void) {
  for (int sig = 1; sig <= SIGRTMAX; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) == 0 && handler_in_library(&sa)) return sig;
  }
  return 0;
}

// Sources to run: the one ZXSAMPLER_SOURCE names, else all three.
static inline int stress_sources(const char* out[3]) {
  const char* env = getenv("ZXSAMPLER_SOURCE");
  if (env != NULL &&
      (strcmp(env, "perf") == 0 || strcmp(env, "cputimer") == 0 || strcmp(env, "perf-ring") == 0)) {
    out[0] = env;
    return 1;
  }
  out[0] = "perf-ring";
  out[1] = "perf";
  out[2] = "cputimer";
  return 3;
}

// Whether a perf task-clock event can be opened here (the perf source can work at all).
static inline bool perf_usable(void) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = 1000000;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// Selects the source for the next arms (the library reads ZXSAMPLER_SOURCE at every arm). False
// when it cannot work here (perf forbidden), after saying so.
static inline bool use_source(const char* source) {
  if (strncmp(source, "perf", 4) == 0 && !perf_usable()) {
    printf("perf_event_open is not usable here: the perf source is skipped\n");
    return false;
  }
  setenv("ZXSAMPLER_SOURCE", source, 1);
  return true;
}

// Runs under valgrind (everything is ~50x slower: programs scale their work down).
static inline bool under_valgrind(void) {
  const char* p = getenv("LD_PRELOAD");
  return (p != NULL && strstr(p, "vgpreload") != NULL) || getenv("ZXS_STRESS_LIGHT") != NULL;
}

#endif  // ZXSAMPLER_TESTS_STRESS_STRESS_UTIL_H_
