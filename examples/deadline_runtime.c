// RFC-0084's example: a real-time task with a 10 ms deadline per period reads its own
// ZX_INFO_TASK_RUNTIME before and after each period and, when it misses the deadline, prints
// where the period's time went: running, waiting for a CPU, in page faults, blocked on kernel
// locks. Some periods are made late on purpose: one touches fresh memory (page faults), one
// competes with threads that hammer the address-space lock (mmap/munmap), one shares its CPU
// with a spinning thread (queue time). The mixer runs on CPU 0, the lock hammers on CPU 1 (a
// machine with one CPU runs them all there).
//
//   deadline_runtime [periods]
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <zxsampler/zircon.h>

#include "example_os.h"

#define PERIOD ZX_MSEC(10)
#define WORK ZX_MSEC(2)  // the task's own CPU time per period
#define ALL_FIELDS                                                                              \
  (ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME | ZXS_TASK_RUNTIME_PAGE_FAULT_TIME | \
   ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME)

static zx_time_t now(void) { return example_now_ns(); }

static zx_info_task_runtime_t runtime(zx_handle_t thread) {
  zx_info_task_runtime_t info = {0};
  zx_object_get_info(thread, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL);
  return info;
}

static void mix_audio(void) {  // WORK of CPU time
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  const int64_t end = ts.tv_sec * 1000000000ll + ts.tv_nsec + WORK;
  volatile uint64_t x = 1;
  do {
    for (int i = 0; i < 1000; i++) x = x * 6364136223846793005u + (uint64_t)i;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  } while (ts.tv_sec * 1000000000ll + ts.tv_nsec < end);
}

// --- What makes a period late -----------------------------------------------------------------

static void touch_fresh_memory(void) {  // page faults: the RFC's paged-out executable
  const size_t bytes = 16u << 20;
  char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
  munmap(p, bytes);
}

static atomic_int g_hammer;  // >0: the hammer threads run
static atomic_bool g_quit;

static void* hammer_address_space(void* arg) {  // the RFC's contended kernel heap mutex
  example_pin_to_cpu(*(const int*)arg);
  while (!atomic_load(&g_quit)) {
    if (atomic_load(&g_hammer) == 0) {
      struct timespec pause = {0, 1000000};
      nanosleep(&pause, NULL);
      continue;
    }
    void* p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) munmap(p, 1 << 20);
  }
  return NULL;
}

static atomic_bool g_compete;

static void* compete_for_cpu(void* arg) {  // an oversubscribed CPU: queue time
  example_pin_to_cpu(*(const int*)arg);
  while (!atomic_load(&g_quit)) {
    if (!atomic_load(&g_compete)) {
      struct timespec pause = {0, 1000000};
      nanosleep(&pause, NULL);
      continue;
    }
    for (volatile int i = 0; i < 100000; i++) {
    }
  }
  return NULL;
}

static void print_fields(uint32_t fields) {
  printf("measured here:%s%s%s%s\n", fields & ZXS_TASK_RUNTIME_CPU_TIME ? " cpu" : "",
         fields & ZXS_TASK_RUNTIME_QUEUE_TIME ? " queue" : "",
         fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME ? " page-faults" : "",
         fields & ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME ? " lock-contention" : "");
  if ((fields & ALL_FIELDS) == ALL_FIELDS) return;
  static const char kQueue[] = " queue (needs /proc/self/task/TID/schedstat)";
  static const char kFaults[] =
      " page-faults (needs root, CAP_PERFMON or perf_event_paranoid <= 2)";
  static const char kLocks[] =
      " lock-contention (needs root, or CAP_PERFMON and a readable tracefs)";
  printf("not measured, shown as -:%s%s%s%s\n", fields & ZXS_TASK_RUNTIME_CPU_TIME ? "" : " cpu",
         fields & ZXS_TASK_RUNTIME_QUEUE_TIME ? "" : kQueue,
         fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME ? "" : kFaults,
         fields & ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME ? "" : kLocks);
}

// "LABEL   1.23" for a measured field, "LABEL      -" for one the host does not measure: a
// field that is not measured reads 0, which must not pass for "no time".
static void print_ms(const char* label, uint32_t fields, uint32_t field, int64_t ns) {
  if (fields & field) {
    printf("%s %6.2f", label, (double)ns / 1e6);
  } else {
    printf("%s %6s", label, "-");
  }
}

int main(int argc, char** argv) {
  const int periods = argc > 1 ? atoi(argv[1]) : 60;
  static int cpu0 = 0, cpu1 = 1;
  example_pin_to_cpu(cpu0);  // the mixer runs on CPU 0 (macOS pins nothing)
  const zx_handle_t self = zx_thread_self();
  uint32_t fields = 0;
  zxs_task_runtime_fields(self, &fields);  // measuring starts here
  print_fields(fields);

  pthread_t hammers[3], competitor;
  for (int i = 0; i < 3; i++) pthread_create(&hammers[i], NULL, hammer_address_space, &cpu1);
  pthread_create(&competitor, NULL, compete_for_cpu, &cpu0);

  int missed = 0;
  zx_time_t start = now();
  for (int period = 0; period < periods; period++) {
    const zx_time_t deadline = start + PERIOD;
    const zx_info_task_runtime_t before = runtime(self);
    switch (period % 15) {  // trouble, now and then
      case 5:
        touch_fresh_memory();
        break;
      case 10:
        atomic_store(&g_hammer, 1);
        break;
      case 13:
        atomic_store(&g_compete, true);
        break;
    }
    mix_audio();
    if (period % 15 == 10) {  // the mixer maps its buffers while the hammers run
      for (int i = 0; i < 1000; i++) {
        void* p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) munmap(p, 1 << 20);
      }
    }
    atomic_store(&g_hammer, 0);
    atomic_store(&g_compete, false);
    const zx_time_t finished = now();
    if (finished > deadline) {
      const zx_info_task_runtime_t after = runtime(self);
      missed++;
      printf("period %3d missed its deadline by %6.2f ms:", period,
             (double)(finished - deadline) / 1e6);
      print_ms(" cpu", fields, ZXS_TASK_RUNTIME_CPU_TIME, after.cpu_time - before.cpu_time);
      print_ms("  queue", fields, ZXS_TASK_RUNTIME_QUEUE_TIME,
               after.queue_time - before.queue_time);
      print_ms("  page faults", fields, ZXS_TASK_RUNTIME_PAGE_FAULT_TIME,
               after.page_fault_time - before.page_fault_time);
      print_ms("  kernel locks", fields, ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME,
               after.lock_contention_time - before.lock_contention_time);
      printf(" ms\n");
      start = finished;  // begin the next period now
    } else {
      example_sleep_until(deadline);
      start = deadline;
    }
  }
  atomic_store(&g_quit, true);
  for (int i = 0; i < 3; i++) pthread_join(hammers[i], NULL);
  pthread_join(competitor, NULL);
  printf("%d of %d periods missed the deadline\n", missed, periods);
  return 0;
}
