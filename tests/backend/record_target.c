// A program for test_record_tree.sh to record: it spends CPU in named functions and then ends in
// the way its first argument names.
//
//   record_target MODE [SECONDS]
//
// Modes: return (status 5), exit (4), _exit (3), _Exit (2), thread_exit (6: exit_group from a
// second thread), abort, segv, kill9 (SIGKILL to itself), exec (execs `sh -c 'exit 9'`),
// tree (three levels of processes: level0 forks level1 forks level2), vfork (a vfork child
// that execs itself in `spin` mode), spin (spins for SECONDS), syscalls (SECONDS of CPU in
// getppid and writes to /dev/null: kernel time), deep (spins 200 calls deep: stacks cut at the
// depth limit), runtime (where a thread's time went, RFC-0084: a thread "spinner" that spins
// SECONDS of CPU while "toucher" first-touches 256 MiB; then "pinned-1" and "pinned-2", pinned to
// CPU 0, each spin SECONDS of CPU there; then four "mapper-N" threads mmap and munmap for SECONDS,
// contending on the address-space lock. Each thread sleeps 300 ms before it exits, so that the
// recorder reads its final run delay; it prints "NAME TID CPU_MS WALL_MS" of its busy part).
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// CPU time, not wall time: the machine may be busy.
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// Each with its own constant, so that the compiler cannot fold them into one function.
#define SPINNER(name, k)                                          \
  __attribute__((noinline)) static void name(double secs) {       \
    const double end = cpu_now() + secs;                          \
    while (cpu_now() < end) {                                     \
      for (int i = 0; i < 100000; i++) sink += (unsigned)i * (k); \
    }                                                             \
  }
SPINNER(spin_main, 3)
SPINNER(spin_thread, 5)
SPINNER(level0, 7)
SPINNER(level1, 11)
SPINNER(level2, 13)

__attribute__((noinline)) static void syscall_loop(double secs) {
  int fd = open("/dev/null", O_WRONLY);
  char buf[4096] = {0};
  const double end = cpu_now() + secs;  // user and kernel time both count
  while (cpu_now() < end) {
    for (int i = 0; i < 100; i++) {
      sink += (unsigned long)getppid();
      if (write(fd, buf, sizeof(buf)) < 0) sink++;
    }
  }
  close(fd);
}

__attribute__((noinline)) static void recurse(int depth, double secs) {
  if (depth > 0) {
    recurse(depth - 1, secs);
    sink++;  // not a tail call
    return;
  }
  spin_main(secs);
}

static void* exit_from_thread(void* arg) {
  (void)arg;
  spin_thread(0.2);
  _exit(6);
}

// --- runtime ---

typedef struct rt_job {
  char name[16];
  double secs;
  int kind;  // 0 spin, 1 touch, 2 pinned spin, 3 map
} rt_job_t;

__attribute__((noinline)) static void first_touch(void) {
  const size_t size = 256u << 20;
  char* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  for (size_t i = 0; i < size; i += 4096) p[i] = 1;
  munmap(p, size);
}

__attribute__((noinline)) static void map_loop(double secs) {
  const double end = now() + secs;
  while (now() < end) {
    for (int i = 0; i < 64; i++) {
      char* p = mmap(NULL, 1u << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) continue;
      p[0] = 1;
      munmap(p, 1u << 16);
    }
  }
}

static void* rt_thread(void* arg) {
  rt_job_t* job = arg;
  pthread_setname_np(pthread_self(), job->name);
  if (job->kind == 2) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
  const double wall0 = now(), cpu0 = cpu_now();
  if (job->kind == 0 || job->kind == 2) spin_thread(job->secs);
  if (job->kind == 1) first_touch();
  if (job->kind == 3) map_loop(job->secs);
  printf("%s %ld %.3f %.3f\n", job->name, (long)syscall(SYS_gettid), (cpu_now() - cpu0) * 1e3,
         (now() - wall0) * 1e3);
  fflush(stdout);
  struct timespec rest = {0, 300000000};
  nanosleep(&rest, NULL);
  return NULL;
}

static void rt_phase(rt_job_t* jobs, int n) {
  pthread_t threads[8];
  for (int i = 0; i < n; i++) pthread_create(&threads[i], NULL, rt_thread, &jobs[i]);
  for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
}

static void runtime(double secs) {
  rt_job_t first[] = {{"spinner", secs, 0}, {"toucher", 0, 1}};
  rt_phase(first, 2);
  rt_job_t pinned[] = {{"pinned-1", secs, 2}, {"pinned-2", secs, 2}};
  rt_phase(pinned, 2);
  rt_job_t mappers[] = {
      {"mapper-1", secs, 3}, {"mapper-2", secs, 3}, {"mapper-3", secs, 3}, {"mapper-4", secs, 3}};
  rt_phase(mappers, 4);
}

static void wait_all(void) {
  while (wait(NULL) > 0) {
  }
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "return";
  const double secs = argc > 2 ? atof(argv[2]) : 0.3;
  if (strcmp(mode, "spin") == 0) {
    spin_main(secs);
    return 0;
  }
  if (strcmp(mode, "deep") == 0) {
    recurse(200, secs);
    return 0;
  }
  if (strcmp(mode, "runtime") == 0) {
    runtime(secs);
    return 0;
  }
  if (strcmp(mode, "syscalls") == 0) {
    syscall_loop(secs);
    return 0;
  }
  if (strcmp(mode, "tree") == 0) {
    if (fork() == 0) {
      if (fork() == 0) {
        level2(secs);
        _exit(0);
      }
      level1(secs);
      wait_all();
      _exit(0);
    }
    level0(secs);
    wait_all();
    return 0;
  }
  if (strcmp(mode, "vfork") == 0) {
    pid_t child = vfork();
    if (child == 0) {
      execl("/proc/self/exe", argv[0], "spin", "0.3", (char*)NULL);
      _exit(127);
    }
    spin_main(0.3);
    wait_all();
    return 0;
  }
  spin_main(secs);
  if (strcmp(mode, "exit") == 0) exit(4);
  if (strcmp(mode, "_exit") == 0) _exit(3);
  if (strcmp(mode, "_Exit") == 0) _Exit(2);
  if (strcmp(mode, "abort") == 0) abort();
  if (strcmp(mode, "segv") == 0) raise(SIGSEGV);
  if (strcmp(mode, "kill9") == 0) kill(getpid(), SIGKILL);
  if (strcmp(mode, "exec") == 0) {
    // The new program spins ~50 ms so that it earns samples of its own (an `exit 9` alone ran
    // for less than one period and was sometimes not sampled at all).
    execlp("sh", "sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; exit 9",
           (char*)NULL);
  }
  if (strcmp(mode, "thread_exit") == 0) {
    pthread_t thread;
    pthread_create(&thread, NULL, exit_from_thread, NULL);
    spin_main(60);  // ended by the thread's _exit
  }
  return 5;
}
