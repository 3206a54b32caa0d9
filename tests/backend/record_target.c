// A program for test_record_tree.sh to record: it spends CPU in named functions and then ends in
// the way its first argument names.
//
//   record_target MODE [SECONDS]
//
// Modes: return (status 5), exit (4), _exit (3), _Exit (2), thread_exit (6: exit_group from a
// second thread), abort, segv, kill9 (SIGKILL to itself), exec (execs `sh -c 'exit 9'`),
// tree (three levels of processes: level0 forks level1 forks level2), vfork (a vfork child
// that execs itself in `spin` mode), spin (spins for SECONDS), syscalls (SECONDS of getppid
// and writes to /dev/null: kernel time), deep (spins 200 calls deep: stacks cut at the depth
// limit).
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  const double end = now() + secs;
  while (now() < end) {
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
