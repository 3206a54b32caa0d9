// A program whose runtime `perf` can measure independently (bench/check_runtime_with_perf.sh):
//   runtime_probe faults   the calling thread touches 64 MiB of fresh memory (16384 faults)
//   runtime_probe locks    3 threads map, touch and unmap one page 10000 times each
// Each measured thread queries ZX_INFO_TASK_RUNTIME before and after its work; the program
// prints the sum of the differences: "page_fault_time NS" or "lock_contention_time NS".
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <zxsampler/zircon.h>

static _Atomic int64_t g_total;

static zx_info_task_runtime_t now(zx_handle_t self) {
  zx_info_task_runtime_t info = {0};
  zx_object_get_info(self, ZX_INFO_TASK_RUNTIME, &info, sizeof(info), NULL, NULL);
  return info;
}

static void* map_unmap(void* arg) {
  (void)arg;
  const zx_handle_t self = zx_thread_self();
  const zx_info_task_runtime_t before = now(self);
  for (int i = 0; i < 10000; i++) {
    void* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *(volatile char*)p = 1;
    munmap(p, 4096);
  }
  atomic_fetch_add(&g_total, now(self).lock_contention_time - before.lock_contention_time);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "locks") == 0) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, map_unmap, NULL);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    printf("lock_contention_time %lld\n", (long long)atomic_load(&g_total));
    return 0;
  }
  const size_t bytes = 64u << 20;
  char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  const zx_handle_t self = zx_thread_self();
  const zx_info_task_runtime_t before = now(self);
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
  printf("page_fault_time %lld\n", (long long)(now(self).page_fault_time - before.page_fault_time));
  return 0;
}
