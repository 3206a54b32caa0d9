// The flight recorder on a real-time loop: an audio mixer with a 10 ms period and about 2 ms of
// work, which some periods make late on purpose, each in its own way:
//   faults  it touches fresh memory (first-touch page faults);
//   locks   other threads storm the address space with mmap/munmap while it maps its buffers
//           (the kernel's mmap lock, contended);
//   work    it simply has more to mix.
// Every period is bracketed by zxs_deadline_begin/end; a late one raises an alert and the
// recorder writes the last second of samples, with the period's breakdown, to a trace file.
// A period made late on purpose names its deadline after the cause ("late-faults", "late-locks",
// "late-work"), so that `zxsampler report` on each file can be checked against it; a period late
// for no reason of ours (a loaded machine) is "mixer".
//
//   audio_mixer [-o DIR] [-n PERIODS] [-i faults,locks,work]
//
// DIR (default ".") is created if missing, with its parents (as mkdir -p).
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/recorder.h>
#include <zxsampler/zircon.h>

#include "example_os.h"

#define PERIOD ZX_MSEC(10)
#define WORK ZX_MSEC(2)          // the mixer's own CPU time per period
#define EXTRA_WORK ZX_MSEC(25)   // "work": more than two periods' worth
#define FAULT_BYTES (64u << 20)  // "faults": 16384 first touches of 4 KiB pages
#define MIXED_PER_PAGE 128u      // words the mixer writes in each fresh page
#define HAMMERS 3

static zx_time_t now(void) { return example_now_ns(); }

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Spins for `ns` of the thread's CPU time. noinline: each caller stays on the stack.
static __attribute__((noinline)) void spin_cpu(zx_duration_t ns) {
  const int64_t end = thread_cpu_ns() + ns;
  volatile uint64_t x = 1;
  do {  // the clock is a system call: rarely, so that this is nearly all user time
    for (int i = 0; i < 20000; i++) x = x * 6364136223846793005u + (uint64_t)i;
  } while (thread_cpu_ns() < end);
}

static __attribute__((noinline)) void mix_audio(void) { spin_cpu(WORK); }

// --- What makes a period late -----------------------------------------------------------------

// Mixes into a fresh buffer: the first touch of every page faults (small pages, so many faults),
// and each page takes a little of our own work too, so that a sampler that sees user code only
// still catches this function at it. The mapping is returned and unmapped after the period.
static __attribute__((noinline)) uint64_t* inject_page_faults(void) {
  uint64_t* p = mmap(NULL, FAULT_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  example_no_huge_pages(p, FAULT_BYTES);
  uint64_t x = 1;
  for (size_t page = 0; page < FAULT_BYTES / sizeof(uint64_t); page += 4096 / sizeof(uint64_t)) {
    for (size_t i = 0; i < MIXED_PER_PAGE; i++) p[page + i] = x = x * 6364136223846793005u + i;
  }
  return p;
}

static atomic_bool g_hammer;  // the storm is on
static atomic_bool g_quit;
static atomic_ulong g_storm;  // munmaps the storm has done

// One of the threads that storm the address space: each munmap of populated memory holds the
// process's mmap lock while it tears the pages down.
static void* hammer_address_space(void* arg) {
  example_pin_to_cpu(*(const int*)arg);
  while (!atomic_load(&g_quit)) {
    if (!atomic_load(&g_hammer)) {
      struct timespec pause = {0, 200000};
      nanosleep(&pause, NULL);
      continue;
    }
    const size_t bytes = 8u << 20;
    void* p = example_map_populated(bytes);
    if (p != MAP_FAILED) munmap(p, bytes);
    atomic_fetch_add(&g_storm, 1);
  }
  return NULL;
}

static __attribute__((noinline)) void map_buffer(void) {
  void* p = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) munmap(p, 64 << 10);
}

// The mixer maps and unmaps its buffers while the storm runs: each call waits for the lock.
// Between calls it mixes a little (in cache), which a user-only sampler catches here.
static volatile uint64_t g_mixed;

static __attribute__((noinline)) void inject_lock_contention(void) {
  uint64_t x = 1;
  for (int i = 0; i < 50; i++) {
    map_buffer();
    for (int j = 0; j < 16384; j++) x = x * 6364136223846793005u + (uint64_t)j;
    g_mixed = x;
  }
}

// More to mix (not a tail call: this frame stays on the stack under spin_cpu).
static __attribute__((noinline)) void inject_extra_work(void) {
  spin_cpu(EXTRA_WORK);
  g_mixed = g_mixed + 1;
}

// --- The output folder ------------------------------------------------------------------------

// Creates `dir` and its missing parents, as mkdir -p (the recorder writes into a folder that must
// exist). False with errno set when a part cannot be created or is not a folder.
static bool make_dirs(const char* dir) {
  char path[4096];
  const size_t len = strlen(dir);
  if (len == 0 || len >= sizeof(path)) {
    errno = len == 0 ? ENOENT : ENAMETOOLONG;
    return false;
  }
  memcpy(path, dir, len + 1);
  for (char* p = path + 1;; p++) {
    const bool end = *p == '\0';
    if (*p != '/' && !end) continue;
    *p = '\0';
    struct stat st;
    if (mkdir(path, 0777) != 0 && errno != EEXIST) return false;
    if (stat(path, &st) != 0) return false;
    if (!S_ISDIR(st.st_mode)) {
      errno = ENOTDIR;
      return false;
    }
    if (end) return true;
    *p = '/';
  }
}

// --- The loop -----------------------------------------------------------------------------------

enum { INJECT_FAULTS = 1, INJECT_LOCKS = 2, INJECT_WORK = 4 };

static int parse_kinds(const char* s) {
  int kinds = 0;
  if (strstr(s, "faults") != NULL) kinds |= INJECT_FAULTS;
  if (strstr(s, "locks") != NULL) kinds |= INJECT_LOCKS;
  if (strstr(s, "work") != NULL) kinds |= INJECT_WORK;
  return kinds;
}

// The injection of `period`: one kind every 25 periods (a quarter of a second apart, well
// clear of the alert rate limit), cycling through those asked for; 0 for an ordinary period.
static int injection_of(int period, int kinds) {
  static const int kOrder[] = {INJECT_FAULTS, INJECT_LOCKS, INJECT_WORK};
  if (period % 25 != 12) return 0;
  int turn = period / 25;
  for (int tries = 0; tries < 3; tries++, turn++) {
    if (kinds & kOrder[turn % 3]) return kOrder[turn % 3];
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* out_dir = ".";
  int periods = 150;
  int kinds = INJECT_FAULTS | INJECT_LOCKS | INJECT_WORK;
  for (int opt; (opt = getopt(argc, argv, "o:n:i:")) != -1;) {
    if (opt == 'o') out_dir = optarg;
    if (opt == 'n') periods = atoi(optarg);
    if (opt == 'i') kinds = parse_kinds(optarg);
    if (opt == '?') {
      fprintf(stderr, "usage: audio_mixer [-o DIR] [-n PERIODS] [-i faults,locks,work]\n");
      return 2;
    }
  }
  if (!make_dirs(out_dir)) {
    fprintf(stderr, "audio_mixer: cannot create the output folder '%s': %s\n", out_dir,
            strerror(errno));
    return 1;
  }
  if (access(out_dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "audio_mixer: cannot write into the output folder '%s': %s\n", out_dir,
            strerror(errno));
    return 1;
  }
  // The mixer on CPU 0, the storm on CPU 1 (a machine with one CPU runs them all there; macOS
  // pins nothing). A real-time priority, where we may, keeps other programs from making periods
  // late.
  static int storm_cpu;
  storm_cpu = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 0;
  pthread_t hammers[HAMMERS];
  for (int i = 0; i < HAMMERS; i++) {
    pthread_create(&hammers[i], NULL, hammer_address_space, &storm_cpu);
  }
  example_pin_to_cpu(0);
  example_name_thread("mixer");
  const bool realtime = example_make_realtime(10);

  // Sampling every 250 us of the mixer's CPU time: a late period's few milliseconds of its own
  // work still hold enough samples to show where they went.
  zxs_recorder_options_t options = {.period = ZX_USEC(250),
                                    .window = ZX_SEC(1),
                                    .output_dir = out_dir,
                                    .alert_interval = ZX_MSEC(1)};
  zx_status_t status = zxs_recorder_start(&options);  // samples this thread, the mixer
  if (status != ZX_OK) {
    fprintf(stderr, "audio_mixer: zxs_recorder_start: %s\n", zxs_status_string(status));
    return 1;
  }
  printf("mixer: %d periods of %d ms%s; alerts in %s\n", periods, (int)(PERIOD / ZX_MSEC(1)),
         realtime ? " (SCHED_FIFO)" : "", out_dir);
  int late = 0;
  zx_time_t next = now();
  for (int period = 0; period < periods; period++) {
    const int inject = injection_of(period, kinds);
    zxs_deadline_t d = {.name = inject == INJECT_FAULTS  ? "late-faults"
                                : inject == INJECT_LOCKS ? "late-locks"
                                : inject == INJECT_WORK  ? "late-work"
                                                         : "mixer"};
    if (inject == INJECT_LOCKS) {  // the storm is under way before the period begins
      const unsigned long storm_before = atomic_load(&g_storm);
      atomic_store(&g_hammer, true);
      for (int wait = 0; wait < 1000 && atomic_load(&g_storm) - storm_before < HAMMERS; wait++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
      }
    }
    zxs_deadline_begin(&d, PERIOD);
    mix_audio();
    uint64_t* touched = NULL;
    if (inject == INJECT_FAULTS) touched = inject_page_faults();
    if (inject == INJECT_LOCKS) inject_lock_contention();
    if (inject == INJECT_WORK) inject_extra_work();
    const bool missed = zxs_deadline_end(&d) == ZX_ERR_TIMED_OUT;
    atomic_store(&g_hammer, false);
    if (touched != NULL) munmap(touched, FAULT_BYTES);
    if (missed) {
      late++;
      printf("period %3d late (%s): %.2f ms\n", period, d.name, (double)(now() - d.begin) / 1e6);
    }
    next += PERIOD;
    if (now() > next) next = now();  // late: the next period starts now
    example_sleep_until(next);
  }
  status = zxs_recorder_stop();
  atomic_store(&g_quit, true);
  for (int i = 0; i < HAMMERS; i++) pthread_join(hammers[i], NULL);
  printf("%d of %d periods late; recorder: %s\n", late, periods, zxs_status_string(status));
  if (status == ZX_ERR_IO) {
    fprintf(stderr, "audio_mixer: some alert traces could not be written to '%s'\n", out_dir);
  }
  return status == ZX_OK ? 0 : 1;
}
