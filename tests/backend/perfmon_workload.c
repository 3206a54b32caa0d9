// A workload for the perfmon tests (test_perfmon_cli.sh): no libzxsampler inside.
//
//   perfmon_workload pages N   touches N fresh pages once each: N page faults
//   perfmon_workload spin MS   spins MS milliseconds in perfmon_hot_spin()
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Where the samples of `spin` must land.
__attribute__((noinline)) uint64_t perfmon_hot_spin(uint64_t n) {
  uint64_t x = 1;
  for (uint64_t i = 0; i < n; i++) x = x * 6364136223846793005u + i;
  __asm__ volatile("" : : "r"(x) : "memory");
  return x;
}

// The stores to fresh pages, unchecked by the sanitizers (in sanitizer builds their shadow
// memory would fault in pages of its own).
__attribute__((no_sanitize("address", "thread"))) static void touch(char* m, size_t pages,
                                                                    size_t page) {
  for (size_t i = 0; i < pages; i++) ((volatile char*)m)[i * page] = 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "pages") == 0) {
    const size_t pages = strtoul(argv[2], NULL, 10);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (pages > 0) {
      char* m =
          mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) return 1;
      madvise(m, pages * page, MADV_NOHUGEPAGE);  // one fault per page, not per huge page
      touch(m, pages, page);
    }
    printf("perfmon_workload: touched %zu pages\n", pages);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "spin") == 0) {
    const int64_t end = now_ns() + (int64_t)strtol(argv[2], NULL, 10) * 1000000;
    while (now_ns() < end) perfmon_hot_spin(200000);
    printf("perfmon_workload: spun\n");
    return 0;
  }
  fprintf(stderr, "usage: perfmon_workload pages N | spin MS\n");
  return 2;
}
