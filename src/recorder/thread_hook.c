// The pthread_create interposer (thread_hook.h).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "thread_hook.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define MAX_HOOKS 4

typedef int (*create_fn)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

static _Atomic(zxs_thread_start_fn) g_hooks[MAX_HOOKS];

HIDDEN bool zxs_thread_start_hook_add(zxs_thread_start_fn fn) {
  for (int i = 0; i < MAX_HOOKS; i++) {
    zxs_thread_start_fn expected = NULL;
    if (atomic_compare_exchange_strong(&g_hooks[i], &expected, fn) || expected == fn) return true;
  }
  return false;
}

static create_fn real_create(void) {
  static _Atomic(create_fn) real;
  create_fn fn = atomic_load_explicit(&real, memory_order_relaxed);
  if (fn == NULL) {
    void* sym = dlsym(RTLD_NEXT, "pthread_create");
    memcpy(&fn, &sym, sizeof(fn));  // POSIX: dlsym results convert to function pointers
    atomic_store_explicit(&real, fn, memory_order_relaxed);
  }
  return fn;
}

typedef struct trampoline {
  void* (*start)(void*);
  void* arg;
} trampoline_t;

static void* trampoline(void* p) {
  const trampoline_t t = *(trampoline_t*)p;
  free(p);
  for (int i = 0; i < MAX_HOOKS; i++) {
    const zxs_thread_start_fn fn = atomic_load_explicit(&g_hooks[i], memory_order_acquire);
    if (fn != NULL) fn();
  }
  return t.start(t.arg);
}

static bool any_hook(void) {
  for (int i = 0; i < MAX_HOOKS; i++) {
    if (atomic_load_explicit(&g_hooks[i], memory_order_acquire) != NULL) return true;
  }
  return false;
}

// Every thread the program creates runs the hooks as it starts (interposed below).
static int create_hooked(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                         void* arg) {
  const create_fn real = real_create();
  if (real == NULL) return EAGAIN;
  if (!any_hook()) return real(thread, attr, start, arg);
  trampoline_t* t = malloc(sizeof(*t));
  if (t == NULL) return real(thread, attr, start, arg);  // created, without the hooks
  t->start = start;
  t->arg = arg;
  const int err = real(thread, attr, trampoline, t);
  if (err != 0) free(t);
  return err;
}

#ifdef __APPLE__
// dyld binds each image's calls to libSystem directly (two-level namespace): an inserted or
// linked library interposes a function only through a __DATA,__interpose pair (replacement,
// original), which dyld applies to every other image.
static const struct {
  const void* replacement;
  const void* original;
} g_interpose[] __attribute__((used, section("__DATA,__interpose"))) = {
    {(const void*)create_hooked, (const void*)pthread_create},
};
#else
__attribute__((visibility("default"))) int pthread_create(pthread_t* thread,
                                                          const pthread_attr_t* attr,
                                                          void* (*start)(void*), void* arg) {
  return create_hooked(thread, attr, start, arg);
}
#endif
