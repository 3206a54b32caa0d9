// peer_workload: the program bench/compare_peers.sh profiles with each profiler. A fixed amount
// of CPU-bound, frame-pointer work split over a few threads; exits when done and prints its own
// CPU time (the process's, all threads, user + system) measured from the start of main() to the
// end of the work, so a profiler's start-up and its write at exit are not in it.
//
//   peer_workload [-t THREADS] [-u UNITS_PER_THREAD] [-d DEPTH] [-n ITERATIONS]
//
// Output, one line: peer_workload: threads=3 units=... depth=... cpu_s=... sys_s=... wall_s=...
// maxrss_kb=... checksum=...   (checksum is the same in every run with the same arguments)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // before any system header: bench_work.h needs it too
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench_work.h"

typedef struct {
  uint64_t units;
  int depth;
  uint64_t n;
  uint64_t seed;
  uint64_t result;
} job_t;

static void* run(void* arg) {
  job_t* job = arg;
  job->result = bench_work(job->units, job->depth, job->n, job->seed);
  return NULL;
}

int main(int argc, char** argv) {
  int threads = 3, depth = 12;
  long long units = 8000, n = 20000;
  int opt;
  while ((opt = getopt(argc, argv, "t:u:d:n:")) != -1) {
    switch (opt) {
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
      default:
        fprintf(stderr, "usage: peer_workload [-t THREADS] [-u UNITS] [-d DEPTH] [-n ITERS]\n");
        return 2;
    }
  }
  if (threads < 1 || threads > 64 || units < 1 || depth < 0 || depth > 1000 || n < 1) {
    fprintf(stderr, "peer_workload: bad arguments\n");
    return 2;
  }
  const double cpu0 = bench_process_cpu(), wall0 = bench_now(CLOCK_MONOTONIC);
  const double sys0 = bench_process_sys();
  job_t jobs[64];
  pthread_t tids[64];
  for (int i = 0; i < threads; i++) {
    jobs[i] = (job_t){
        .units = (uint64_t)units, .depth = depth, .n = (uint64_t)n, .seed = (uint64_t)i * 7919u};
    if (pthread_create(&tids[i], NULL, run, &jobs[i]) != 0) {
      fprintf(stderr, "peer_workload: pthread_create failed\n");
      return 1;
    }
  }
  uint64_t checksum = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tids[i], NULL);
    checksum ^= jobs[i].result;
  }
  const double cpu = bench_process_cpu() - cpu0, wall = bench_now(CLOCK_MONOTONIC) - wall0;
  const double sys = bench_process_sys() - sys0;
  printf(
      "peer_workload: threads=%d units=%lld depth=%d cpu_s=%.4f sys_s=%.4f wall_s=%.4f "
      "maxrss_kb=%ld checksum=%016llx\n",
      threads, units, depth, cpu, sys, wall, bench_max_rss_kb(), (unsigned long long)checksum);
  fflush(stdout);
  return 0;
}
