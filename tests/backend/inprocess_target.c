// A program for test_record_inprocess.sh: two threads spend CPU in named functions, then the
// program ends as its first argument says: "return" (status 7), "_exit" (status 3, which
// runs no atexit handler, so a preloaded profiler writes nothing), "dump" (raises SIGUSR1,
// waits for ZXSAMPLER_OUTPUT to appear, then _exit(3)) or "fork" (a child that
// returns from main first, running the atexit handlers it inherited; then status 7), or "wait
// FILE" (creates FILE, then waits for a signal to end it).
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// Spins for `seconds` of this thread's CPU time.
__attribute__((noinline)) static void spin_for(double seconds) {
  const double end = cpu_seconds() + seconds;
  while (cpu_seconds() < end) {
    for (unsigned long i = 0; i < 100000; i++) sink += i * 7;
  }
}

// Each calls and then does more, so that the call is not a tail call: both stay on the stack.
__attribute__((noinline)) void inprocess_thread_work(void) {
  spin_for(0.3);
  sink++;
}
__attribute__((noinline)) void inprocess_main_work(void) {
  spin_for(0.3);
  sink++;
}

static void* thread_main(void* arg) {
  (void)arg;
  inprocess_thread_work();
  return NULL;
}

int main(int argc, char** argv) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, thread_main, NULL) != 0) return 1;
  inprocess_main_work();
  pthread_join(thread, NULL);
  if (argc > 1 && strcmp(argv[1], "_exit") == 0) _exit(3);
  if (argc > 1 && strcmp(argv[1], "dump") == 0) {
    // ZXSAMPLER_DUMP_SIGNAL asks the library for the profile now; the library's thread writes
    // it (waited for, at most 10 s), then the program leaves without exit handlers.
    const char* out = getenv("ZXSAMPLER_OUTPUT");
    raise(SIGUSR1);
    const struct timespec tick = {0, 10000000};
    for (int i = 0; out != NULL && i < 1000 && access(out, F_OK) != 0; i++) nanosleep(&tick, NULL);
    _exit(3);
  }
  if (argc > 2 && strcmp(argv[1], "wait") == 0) {
    const int fd = open(argv[2], O_WRONLY | O_CREAT, 0644);
    if (fd < 0) return 1;
    close(fd);
    for (;;) pause();
  }
  if (argc > 1 && strcmp(argv[1], "fork") == 0) {
    const pid_t child = fork();
    if (child == 0) return 0;
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0) return 1;
  }
  return 7;
}
