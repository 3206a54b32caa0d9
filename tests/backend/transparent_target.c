// A program for test_inprocess_transparent.sh: each mode does one thing a profiled program must
// be able to do exactly as it would without the library (issue #26), and says what it saw.
//   dispositions  prints the disposition of every signal (DFL, IGN or handler)
//   python-int    installs a SIGINT handler only over SIG_DFL (as Python does), raises SIGINT:
//                 exit 0 when its handler ran
//   fork-term     forks a child that spins, kills it with SIGTERM, reaps it: prints
//                 "child-killed" and exits 0 when the child died of SIGTERM and we did not
//   pthread-exit  the main thread calls pthread_exit while another thread works: the process
//                 ends (status 0) when that thread returns
//   sigwait       blocks every signal, works, then takes SIGUSR1 (sent to itself) in
//                 sigwaitinfo: prints what it took; exits 0 when that was SIGUSR1 from kill()
//                 and no other signal was pending
//   close-all     closes every inherited descriptor from 3 up (as daemons do), opens files that
//                 take the freed numbers, lets a thread started before exit, works: 0 when its
//                 own files are all still open
//   threads       works, then prints "foreign-unblocked N": threads of this process that it did
//                 not start and that leave a signal unblocked
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// Spins for `seconds` of this thread's CPU time (samples to take).
__attribute__((noinline)) static void transparent_work(double seconds) {
  const double end = cpu_seconds() + seconds;
  while (cpu_seconds() < end) {
    for (unsigned long i = 0; i < 100000; i++) sink += i * 7;
  }
}

static int dispositions(void) {
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) != 0) continue;
    // SIG_DFL and SIG_IGN are the null and 1 handlers in both members of the union.
    const bool dfl =
        (sa.sa_flags & SA_SIGINFO) != 0 ? sa.sa_sigaction == NULL : sa.sa_handler == SIG_DFL;
    const bool ign = (sa.sa_flags & SA_SIGINFO) == 0 && sa.sa_handler == SIG_IGN;
    const char* what = dfl ? "DFL" : ign ? "IGN" : "handler";
    printf("%d %s\n", sig, what);
  }
  return 0;
}

static volatile sig_atomic_t g_interrupted;
static void on_int(int sig) {
  (void)sig;
  g_interrupted = 1;
}

static int python_int(void) {
  struct sigaction old;
  if (sigaction(SIGINT, NULL, &old) != 0) return 1;
  if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) {
    printf("SIGINT is not SIG_DFL: not installing the handler\n");
  } else {
    signal(SIGINT, on_int);
  }
  transparent_work(0.1);
  raise(SIGINT);
  printf("interrupted %d\n", (int)g_interrupted);
  return g_interrupted ? 0 : 1;
}

static int fork_term(void) {
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    for (;;) transparent_work(1.0);
  }
  transparent_work(0.1);
  if (kill(child, SIGTERM) != 0) return 1;
  int status = 0;
  if (waitpid(child, &status, 0) != child) return 1;
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGTERM) {
    printf("child status %#x\n", status);
    return 1;
  }
  printf("child-killed\n");
  return 0;
}

static void* worker(void* arg) {
  (void)arg;
  transparent_work(0.2);
  printf("worker-done\n");
  fflush(stdout);
  return NULL;
}

static int pthread_exit_mode(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, worker, NULL) != 0) return 1;
  pthread_exit(NULL);
}

static int sigwait_mode(void) {
  sigset_t all;
  sigfillset(&all);
  if (pthread_sigmask(SIG_SETMASK, &all, NULL) != 0) return 1;
  pthread_t thread;  // a thread of the program's, with every signal blocked too
  if (pthread_create(&thread, NULL, worker, NULL) != 0) return 1;
  transparent_work(0.2);
  pthread_join(thread, NULL);
  if (kill(getpid(), SIGUSR1) != 0) return 1;
  siginfo_t info;
  const int sig = sigwaitinfo(&all, &info);
  printf("took %d code %d\n", sig, info.si_code);
  const struct timespec zero = {0, 0};
  const int more = sigtimedwait(&all, &info, &zero);
  if (more > 0) printf("also pending %d code %d\n", more, info.si_code);
  return sig == SIGUSR1 && info.si_code == SI_USER && more < 0 ? 0 : 1;
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_closed;  // close-all: the main thread closed and reopened its descriptors

// Started before the descriptors are closed (its sampling holds some), it exits after: the
// library lets go of its sampling then, and must not close what the program opened since.
static void* closing_worker(void* arg) {
  (void)arg;
  transparent_work(0.1);
  pthread_mutex_lock(&g_lock);
  while (!g_closed) pthread_cond_wait(&g_cond, &g_lock);
  pthread_mutex_unlock(&g_lock);
  transparent_work(0.1);
  return NULL;
}

static int close_all(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, closing_worker, NULL) != 0) return 1;
  transparent_work(0.1);
  struct rlimit files;
  const int top =
      getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 65536 ? (int)files.rlim_cur : 65536;
  for (int fd = 3; fd < top; fd++) close(fd);
  // The freed numbers, taken by files of the program's.
  int mine[16];
  for (int i = 0; i < 16; i++) {
    if ((mine[i] = open("/dev/null", O_RDONLY)) < 0) return 1;
  }
  pthread_mutex_lock(&g_lock);
  g_closed = 1;
  pthread_cond_signal(&g_cond);
  pthread_mutex_unlock(&g_lock);
  pthread_join(thread, NULL);
  transparent_work(0.2);
  int lost = 0;
  for (int i = 0; i < 16; i++) {
    char byte;
    if (fcntl(mine[i], F_GETFD) < 0 || read(mine[i], &byte, 1) != 0) lost++;
  }
  printf("descriptors-lost %d\n", lost);
  return lost == 0 ? 0 : 1;
}

// The signal mask of a task of this process, from its status file ("SigBlk:\t" in hex).
static unsigned long long blocked_of(const char* tid) {
  char path[128], line[256];
  snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
  FILE* f = fopen(path, "r");
  if (f == NULL) return ~0ull;
  unsigned long long mask = ~0ull;
  while (fgets(line, sizeof(line), f) != NULL) {
    if (strncmp(line, "SigBlk:", 7) == 0) mask = strtoull(line + 7, NULL, 16);
  }
  fclose(f);
  return mask;
}

static int threads(void) {
  transparent_work(0.2);
  DIR* dir = opendir("/proc/self/task");
  if (dir == NULL) return 1;
  const long self = syscall(SYS_gettid);
  int foreign = 0, unblocked = 0;
  struct dirent* e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.' || atol(e->d_name) == self) continue;
    foreign++;
    // Every signal a thread can block: all but SIGKILL and SIGSTOP, and glibc's two below
    // SIGRTMIN (cancellation and setxid), which its sigfillset and pthread_sigmask leave out.
    unsigned long long blockable = ~((1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1)));
    for (int sig = 32; sig < SIGRTMIN; sig++) blockable &= ~(1ull << (sig - 1));
    if ((blocked_of(e->d_name) & blockable) != blockable) unblocked++;
  }
  closedir(dir);
  printf("foreign %d\nforeign-unblocked %d\n", foreign, unblocked);
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "dispositions") == 0) return dispositions();
  if (strcmp(mode, "python-int") == 0) return python_int();
  if (strcmp(mode, "fork-term") == 0) return fork_term();
  if (strcmp(mode, "pthread-exit") == 0) return pthread_exit_mode();
  if (strcmp(mode, "sigwait") == 0) return sigwait_mode();
  if (strcmp(mode, "close-all") == 0) return close_all();
  if (strcmp(mode, "threads") == 0) return threads();
  fprintf(stderr, "usage: %s MODE\n", argv[0]);
  return 2;
}
