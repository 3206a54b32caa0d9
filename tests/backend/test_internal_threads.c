// The library's own threads (the perf-ring collector, the thread-exit watcher) are never sampled,
// even when the program interposes pthread_create and attaches every new thread before it runs,
// as `zxsampler record`'s preload does. This program is such an interposer.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/zircon.h>
#include <zxsampler/zxsampler.h>

static _Atomic zx_handle_t g_attach_to;  // while set, every new thread attaches itself here
static atomic_int g_interposed;          // threads started through the trampoline

typedef int (*pthread_create_fn)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

typedef struct {
  void* (*start)(void*);
  void* arg;
} trampoline_t;

static void* trampoline(void* p) {
  trampoline_t t = *(trampoline_t*)p;
  free(p);
  const zx_handle_t iob = atomic_load(&g_attach_to);
  if (iob != ZX_HANDLE_INVALID) {
    (void)zx_sampler_attach(iob, zx_thread_self());
    atomic_fetch_add(&g_interposed, 1);
  }
  return t.start(t.arg);
}

// Interposed, for the library's calls too (the executable comes first in symbol lookup).
int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                   void* arg) {
  static pthread_create_fn real;
  if (real == NULL) {
    void* sym = dlsym(RTLD_NEXT, "pthread_create");
    memcpy(&real, &sym, sizeof(real));
  }
  trampoline_t* t = malloc(sizeof(*t));
  if (t == NULL) return real(thread, attr, start, arg);
  t->start = start;
  t->arg = arg;
  const int err = real(thread, attr, trampoline, t);
  if (err != 0) free(t);
  return err;
}

static atomic_bool g_stop;

static void* spin(void* arg) {
  (void)arg;
  uint64_t x = 1;
  while (!atomic_load(&g_stop)) {
    x = x * 6364136223846793005u + 1;
    __asm__ volatile("" : "+r"(x));
  }
  return NULL;
}

static void sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000};
  nanosleep(&ts, NULL);
}

static uint32_t attached(zx_handle_t iob) {
  zxs_sampler_stats_t st;
  assert_int_equal(zxs_sampler_get_stats(iob, &st), ZX_OK);
  return st.attached_threads;
}

// Waits up to 5 s for `want` attached threads; returns what it saw last.
static uint32_t settle(zx_handle_t iob, uint32_t want) {
  uint32_t n = attached(iob);
  for (int i = 0; i < 500 && n != want; i++) {
    sleep_ms(10);
    n = attached(iob);
  }
  return n;
}

static void test_library_threads_detach(void** state) {
  (void)state;
  zx_handle_t rsrc, iob;
  assert_int_equal(zxs_debug_resource_get(&rsrc), ZX_OK);
  zx_sampler_config_t config = {
      .period = ZX_MSEC(1), .buffer_size = 1u << 20, .iobuffer_discipline = 0};
  assert_int_equal(zx_sampler_create(rsrc, 0, &config, sizeof(config), &iob), ZX_OK);
  assert_int_equal(zx_sampler_attach(iob, zx_thread_self()), ZX_OK);
  // A thread of the program's, attached from here: the exit watcher starts (where the kernel
  // has thread pidfds) through the interposer.
  pthread_t worker;
  assert_int_equal(pthread_create(&worker, NULL, spin, NULL), 0);
  atomic_store(&g_attach_to, iob);
  zx_handle_t th;
  assert_int_equal(zxs_thread_get(worker, &th), ZX_OK);
  // The first start creates perf-ring's collector, through the interposer too.
  assert_int_equal(zx_sampler_start(iob), ZX_OK);
  assert_int_equal(zx_sampler_attach(iob, th), ZX_OK);
  sleep_ms(50);
  const uint32_t n = settle(iob, 2);
  zxs_sampler_stats_t st;
  assert_int_equal(zxs_sampler_get_stats(iob, &st), ZX_OK);
  print_message("source %s: %d library threads went through the interposer; %u attached\n",
                zxs_sample_source_name(st.source), atomic_load(&g_interposed), n);
  assert_int_equal(n, 2);  // this thread and the worker only
  atomic_store(&g_attach_to, ZX_HANDLE_INVALID);
  assert_int_equal(zx_sampler_stop(iob), ZX_OK);
  atomic_store(&g_stop, true);
  assert_int_equal(pthread_join(worker, NULL), 0);
  assert_int_equal(zx_handle_close(th), ZX_OK);
  assert_int_equal(zx_handle_close(iob), ZX_OK);
  assert_int_equal(zx_handle_close(rsrc), ZX_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_library_threads_detach)};
  return cmocka_run_group_tests_name("internal_threads", tests, NULL, NULL);
}
