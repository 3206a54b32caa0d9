// interrupt_floor: what sampling costs a thread before any profiler code runs. Runs the same
// workload as peer_workload (bench_work.h), each worker thread with its own interrupt source
// armed on itself, in one of these modes:
//
//   none      no source: the baseline.
//   count     a perf_event software task-clock event on the thread, sample_period = the period,
//             exclude_kernel (as libzxsampler opens it) and NO O_ASYNC: on each overflow the
//             kernel takes its hrtimer interrupt, runs the overflow path, finds nobody to notify
//             and re-arms. This is the floor: the cost of the interrupt alone.
//             Why not "O_ASYNC with the signal blocked": a blocked real-time signal is still
//             generated and queued on every overflow (the queueing cost would be in the floor),
//             and once RLIMIT_SIGPENDING is reached the kernel falls back to SIGIO, which kills
//             the process (see src/backend/linux/source_perf.c).
//   signal    count + O_ASYNC / F_SETSIG / F_OWNER_TID: every overflow sends a real-time signal
//             to the thread, whose handler only counts it. Free-running (no re-arm).
//   oneshot   signal, run the way libzxsampler runs it: the event is enabled for one overflow
//             (PERF_EVENT_IOC_REFRESH 1) and the handler re-enables it with that ioctl, after a
//             gettid() as the library's handler does. Everything the library's perf source does
//             per sample except the walk and the write. Variants for the analysis in
//             docs/PERFORMANCE.md: -r K enables K overflows per refresh (re-armed only on the
//             K-th, POLL_HUP); -G leaves the gettid() out.
//   threadcpu count, the way perf-ring and `perf record` arm a thread: one task-clock event per
//             CPU (cpu = c), of which the scheduler enables the one of the CPU the thread is on.
//   percpu    one cpu-clock event per CPU for every task (pid -1; root or perf_event_paranoid
//             <= 0), count only, the threads arming nothing: a timer per CPU, as Zircon's
//             sampler has, instead of one per thread that the scheduler moves at every switch.
//   timer     a POSIX timer on the thread's CPU-time clock (SIGEV_THREAD_ID) with an empty
//             handler: the floor of the library's cputimer source (the scheduler tick that
//             checks it runs whether or not a timer is armed).
//   record    threadcpu, and on each overflow the kernel writes a sample of tid, time and CPU
//             into the ring of the CPU (one per CPU, shared by the threads' events through
//             PERF_EVENT_IOC_SET_OUTPUT, as perf-ring and `perf record` share them): what any
//             profiler's record costs the thread, above the interrupt. Nobody reads the
//             records: a thread of this program only hands the space back (data_tail =
//             data_head) every 50 ms, so no collector's CPU counts.
//   stack     record with the sample perf-ring asks for: user registers (fp, sp, pc) and -s
//             BYTES of stack (default 2048, what perf-ring's adaptive copy settles at for these
//             threads): the kernel's side of perf-ring without its collector. The attributes
//             follow src/backend/linux/ring_attr.c by hand (the register mask is shared through
//             perf_regs.h): this program links no library code, so that the floor has none.
//   callchain record with the kernel's user call chain (PERF_SAMPLE_IP | TID | TIME | PERIOD |
//             CALLCHAIN, as `perf record -g` asks): the kernel's side of `perf record -g`.
//
//   interrupt_floor [-m MODE] [-p PERIOD_US] [-t THREADS] [-u UNITS] [-d DEPTH] [-n ITERS]
//                   [-r K] [-G] [-s BYTES]
//
// Output, one line: interrupt_floor: mode=... period_us=... threads=... cpu_s=... wall_s=...
// events=... expected=... ring_bytes=... (events: signals handled; in count mode and the modes
// that write samples, periods elapsed as read from the counter, an upper bound on interrupts
// taken; ring_bytes: what the kernel wrote into the rings). Defaults: 3 threads, 10000 units of
// depth 12 (peer_workload defaults to 8000 units; compare_peers.sh passes the same -t/-u to both).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // before any system header: bench_work.h needs it too
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench_work.h"
#include "perf_regs.h"

typedef enum {
  MODE_NONE,
  MODE_COUNT,
  MODE_SIGNAL,
  MODE_ONESHOT,
  MODE_TIMER,
  MODE_THREADCPU,
  MODE_PERCPU,
  MODE_RECORD,
  MODE_STACK,
  MODE_CALLCHAIN
} mode_t_;

static mode_t_ g_mode = MODE_NONE;
static long long g_period_ns = 1000000;
static int g_signal;
static int g_refresh = 1;     // oneshot: overflows allowed per PERF_EVENT_IOC_REFRESH
static bool g_gettid = true;  // oneshot: the library's gettid() check in the handler
static _Atomic uint64_t g_events;
static int g_cpus = 1;                // threadcpu and percpu: CPUs configured (at most 64)
static unsigned g_stack_copy = 2048;  // stack: bytes of stack per sample

// record, stack, callchain: each CPU's ring and the dummy event that owns it (the main
// thread's), handed back by drain_rings().
// 2 MiB, halved while the locked-memory limit refuses: 50 ms of 2 KiB samples at 4000/s is
// 400 KiB (a full ring loses samples: ring_bytes would say so).
#define RING_DATA_PAGES 512u
static struct perf_event_mmap_page* g_rings[64];
static int g_ring_fds[64];
static atomic_bool g_draining = true;

static bool writes_samples(void) {
  return g_mode == MODE_RECORD || g_mode == MODE_STACK || g_mode == MODE_CALLCHAIN;
}

typedef struct {
  uint64_t units;
  int depth;
  uint64_t n;
  uint64_t seed;
  uint64_t result;
  uint64_t periods;  // count mode: counter value / period
  int failed;
} job_t;

static void on_signal(int sig, siginfo_t* info, void* uc) {
  (void)sig;
  (void)uc;
  const int saved = errno;
  atomic_fetch_add_explicit(&g_events, 1, memory_order_relaxed);
  if (g_mode == MODE_ONESHOT && (info->si_code == POLL_IN || info->si_code == POLL_HUP)) {
    if (g_gettid) {
      (void)syscall(SYS_gettid);
    }
    // The kernel disables the event after the last allowed overflow and says so with POLL_HUP.
    if (g_refresh == 1 || info->si_code == POLL_HUP) {
      ioctl(info->si_fd, PERF_EVENT_IOC_REFRESH, g_refresh);
    }
  }
  errno = saved;
}

// What this mode's events sample, for `config`.
static void event_attr(struct perf_event_attr* a, uint64_t config) {
  *a = (struct perf_event_attr){.size = sizeof(*a),
                                .type = PERF_TYPE_SOFTWARE,
                                .config = config,
                                .sample_period = (uint64_t)g_period_ns,
                                .disabled = 1,
                                .exclude_kernel = 1,
                                .exclude_hv = 1};
  if (g_mode == MODE_RECORD || g_mode == MODE_STACK) {
    a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
  }
  if (g_mode == MODE_STACK) {
    a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a->sample_regs_user = ZXS_PERF_REGS_MASK;
    a->sample_stack_user = g_stack_copy;
  }
  if (g_mode == MODE_CALLCHAIN) {
    a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
                     PERF_SAMPLE_CALLCHAIN;
    a->exclude_callchain_kernel = 1;
  }
}

// record, stack, callchain: CPU `cpu`'s ring, owned by a dummy event of the calling thread.
static bool open_ring(int cpu) {
  struct perf_event_attr attr;
  event_attr(&attr, PERF_COUNT_SW_DUMMY);
  attr.disabled = 0;
  g_ring_fds[cpu] = (int)syscall(SYS_perf_event_open, &attr, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (g_ring_fds[cpu] < 0) return false;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  void* ring = MAP_FAILED;
  for (size_t pages = RING_DATA_PAGES; ring == MAP_FAILED && pages >= 32; pages /= 2) {
    ring = mmap(NULL, (1 + pages) * page, PROT_READ | PROT_WRITE, MAP_SHARED, g_ring_fds[cpu], 0);
  }
  g_rings[cpu] = ring == MAP_FAILED ? NULL : ring;
  return g_rings[cpu] != NULL;
}

// A task-clock event on thread `tid` (any CPU, or only `cpu`), or with tid -1 a cpu-clock event
// on `cpu` for every task.
static int open_event(pid_t tid, int cpu) {
  struct perf_event_attr attr;
  event_attr(&attr, tid < 0 ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_TASK_CLOCK);
  int fd = (int)syscall(SYS_perf_event_open, &attr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    return -1;
  }
  if (g_mode == MODE_SIGNAL || g_mode == MODE_ONESHOT) {
    struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = tid};
    int flags;
    if (fcntl(fd, F_SETSIG, g_signal) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
        (flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags | O_ASYNC) != 0) {
      close(fd);
      return -1;
    }
  }
  if (writes_samples() && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, g_ring_fds[cpu]) != 0) {
    close(fd);
    return -1;
  }
  int rc = g_mode == MODE_ONESHOT ? ioctl(fd, PERF_EVENT_IOC_REFRESH, g_refresh)
                                  : ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  if (rc != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// record, stack, callchain: hands every ring's space back to the kernel every 50 ms, unread.
static void* drain_rings(void* arg) {
  (void)arg;
  const struct timespec tick = {.tv_nsec = 50 * 1000 * 1000};
  while (atomic_load(&g_draining)) {
    nanosleep(&tick, NULL);
    for (int c = 0; c < g_cpus; c++) {
      struct perf_event_mmap_page* ring = g_rings[c];
      __atomic_store_n(&ring->data_tail, __atomic_load_n(&ring->data_head, __ATOMIC_ACQUIRE),
                       __ATOMIC_RELEASE);
    }
  }
  return NULL;
}

static void* run(void* arg) {
  job_t* job = arg;
  const pid_t tid = (pid_t)syscall(SYS_gettid);
  int fd = -1;
  int cpu_fds[64];
  int cpu_fd_count = 0;
  timer_t timer;
  bool have_timer = false;
  if (g_mode == MODE_COUNT || g_mode == MODE_SIGNAL || g_mode == MODE_ONESHOT) {
    fd = open_event(tid, -1);
    if (fd < 0) {
      job->failed = errno != 0 ? errno : 1;
      return NULL;
    }
  } else if (g_mode == MODE_THREADCPU || writes_samples()) {
    for (; cpu_fd_count < g_cpus; cpu_fd_count++) {
      if ((cpu_fds[cpu_fd_count] = open_event(tid, cpu_fd_count)) < 0) {
        job->failed = errno != 0 ? errno : 1;
        return NULL;
      }
    }
  } else if (g_mode == MODE_TIMER) {
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = g_signal;
    sev._sigev_un._tid = tid;
    clockid_t clock;
    if (pthread_getcpuclockid(pthread_self(), &clock) != 0 ||
        timer_create(clock, &sev, &timer) != 0) {
      job->failed = errno != 0 ? errno : 1;
      return NULL;
    }
    have_timer = true;
    struct itimerspec its = {
        .it_interval = {.tv_sec = g_period_ns / 1000000000, .tv_nsec = g_period_ns % 1000000000},
        .it_value = {.tv_sec = g_period_ns / 1000000000, .tv_nsec = g_period_ns % 1000000000}};
    timer_settime(timer, 0, &its, NULL);
  }
  job->result = bench_work(job->units, job->depth, job->n, job->seed);
  if (fd >= 0) {
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t count = 0;
    if (read(fd, &count, sizeof(count)) == (ssize_t)sizeof(count)) {
      job->periods = count / (uint64_t)g_period_ns;
    }
    close(fd);
  }
  for (int c = 0; c < cpu_fd_count; c++) {
    ioctl(cpu_fds[c], PERF_EVENT_IOC_DISABLE, 0);
    uint64_t count = 0;
    if (read(cpu_fds[c], &count, sizeof(count)) == (ssize_t)sizeof(count)) {
      job->periods += count / (uint64_t)g_period_ns;
    }
    close(cpu_fds[c]);
  }
  if (have_timer) {
    timer_delete(timer);
  }
  return NULL;
}

static const char* const kModes[] = {"none",      "count",  "signal", "oneshot", "timer",
                                     "threadcpu", "percpu", "record", "stack",   "callchain"};
#define MODE_COUNT_ (int)(sizeof(kModes) / sizeof(kModes[0]))

int main(int argc, char** argv) {
  int threads = 3, depth = 12;
  long long units = 10000, n = 20000, period_us = 1000;
  int opt;
  while ((opt = getopt(argc, argv, "m:p:t:u:d:n:r:Gs:")) != -1) {
    switch (opt) {
      case 'm': {
        bool found = false;
        for (int i = 0; i < MODE_COUNT_; i++) {
          if (strcmp(optarg, kModes[i]) == 0) {
            g_mode = (mode_t_)i;
            found = true;
          }
        }
        if (!found) {
          fprintf(stderr, "interrupt_floor: unknown mode '%s'\n", optarg);
          return 2;
        }
        break;
      }
      case 'p':
        period_us = atoll(optarg);
        break;
      case 't':
        threads = atoi(optarg);
        break;
      case 'u':
        units = atoll(optarg);
        break;
      case 'd':
        depth = atoi(optarg);
        break;
      case 'n':
        n = atoll(optarg);
        break;
      case 'r':
        g_refresh = atoi(optarg);
        break;
      case 'G':
        g_gettid = false;
        break;
      case 's':
        g_stack_copy = (unsigned)atoi(optarg) & ~7u;
        break;
      default:
        fprintf(
            stderr,
            "usage: interrupt_floor [-m none|count|signal|oneshot|timer|threadcpu|percpu|record|"
            "stack|callchain] [-p PERIOD_US] [-t THREADS] [-u UNITS] [-d DEPTH] [-n ITERS] "
            "[-r K] [-G] [-s BYTES]\n");
        return 2;
    }
  }
  if (threads < 1 || threads > 64 || units < 1 || depth < 0 || n < 1 || period_us < 10 ||
      g_refresh < 1 || g_refresh > 64 || g_stack_copy < 8 || g_stack_copy > 65000) {
    fprintf(stderr, "interrupt_floor: bad arguments\n");
    return 2;
  }
  g_period_ns = period_us * 1000;
  g_signal = SIGRTMIN + 4;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(g_signal, &sa, NULL);

  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  g_cpus = cpus < 1 ? 1 : cpus > 64 ? 64 : (int)cpus;
  int percpu_fds[64];
  for (int c = 0; g_mode == MODE_PERCPU && c < g_cpus; c++) {
    if ((percpu_fds[c] = open_event(-1, c)) < 0) {
      fprintf(stderr, "interrupt_floor: mode percpu: %s (needs root or perf_event_paranoid <= 0)\n",
              strerror(errno));
      return 1;
    }
  }

  for (int c = 0; writes_samples() && c < g_cpus; c++) {
    if (!open_ring(c)) {
      fprintf(stderr, "interrupt_floor: mode %s: cannot map the ring of CPU %d: %s\n",
              kModes[g_mode], c, strerror(errno));
      return 1;
    }
  }
  pthread_t drainer;
  if (writes_samples() && pthread_create(&drainer, NULL, drain_rings, NULL) != 0) {
    return 1;
  }
  const double cpu0 = bench_process_cpu(), wall0 = bench_now(CLOCK_MONOTONIC);
  job_t jobs[64];
  pthread_t tids[64];
  for (int i = 0; i < threads; i++) {
    jobs[i] = (job_t){
        .units = (uint64_t)units, .depth = depth, .n = (uint64_t)n, .seed = (uint64_t)i * 7919u};
    if (pthread_create(&tids[i], NULL, run, &jobs[i]) != 0) {
      return 1;
    }
  }
  uint64_t checksum = 0, periods = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tids[i], NULL);
    if (jobs[i].failed) {
      fprintf(stderr, "interrupt_floor: mode %s: cannot arm the source: %s\n", kModes[g_mode],
              strerror(jobs[i].failed));
      return 1;
    }
    checksum ^= jobs[i].result;
    periods += jobs[i].periods;
  }
  const double cpu = bench_process_cpu() - cpu0, wall = bench_now(CLOCK_MONOTONIC) - wall0;
  if (writes_samples()) {
    atomic_store(&g_draining, false);
    pthread_join(drainer, NULL);
  }
  for (int c = 0; g_mode == MODE_PERCPU && c < g_cpus; c++) close(percpu_fds[c]);
  const uint64_t events = g_mode == MODE_COUNT || g_mode == MODE_THREADCPU || writes_samples()
                              ? periods
                              : atomic_load(&g_events);
  const double expected = g_mode == MODE_NONE ? 0 : cpu * 1e9 / (double)g_period_ns;
  uint64_t ring_bytes = 0;  // what the kernel wrote into the rings: data_head only grows
  for (int c = 0; writes_samples() && c < g_cpus; c++) {
    ring_bytes += __atomic_load_n(&g_rings[c]->data_head, __ATOMIC_ACQUIRE);
  }
  printf(
      "interrupt_floor: mode=%s period_us=%lld threads=%d refresh=%d gettid=%d cpu_s=%.4f "
      "wall_s=%.4f events=%llu expected=%.0f ring_bytes=%llu maxrss_kb=%ld checksum=%016llx\n",
      kModes[g_mode], period_us, threads, g_refresh, g_gettid ? 1 : 0, cpu, wall,
      (unsigned long long)events, expected, (unsigned long long)ring_bytes, bench_max_rss_kb(),
      (unsigned long long)checksum);
  return 0;
}
