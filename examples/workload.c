// An ordinary program that knows nothing of libzxsampler, for `zxsampler record`: the main
// thread and two threads it starts later spend known shares of their time in three functions.
//
//   workload [seconds]
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double g_seconds = 1.0;

#define SPIN(n)                                                          \
  do {                                                                   \
    uint64_t x = 1;                                                      \
    for (uint64_t i = 0; i < (n); i++) x = x * 6364136223846793005u + i; \
    __asm__ volatile("" : : "r"(x) : "memory");                          \
  } while (0)

__attribute__((noinline)) static void parse_input(void) { SPIN(300000); }    // 3/6
__attribute__((noinline)) static void update_model(void) { SPIN(200000); }   // 2/6
__attribute__((noinline)) static void render_output(void) { SPIN(100000); }  // 1/6

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void* run(void* arg) {
  (void)arg;
  double end = now() + g_seconds;
  while (now() < end) {
    parse_input();
    update_model();
    render_output();
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) g_seconds = atof(argv[1]);
  if (g_seconds <= 0) {
    fprintf(stderr, "usage: workload [seconds > 0]\n");
    return 2;
  }
  pthread_t threads[2];
  for (int i = 0; i < 2; i++) pthread_create(&threads[i], NULL, run, NULL);
  run(NULL);
  for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
  printf("workload: done\n");
  return 0;
}
