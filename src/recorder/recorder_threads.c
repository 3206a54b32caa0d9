// libzxsampler-threads: the flight recorder's thread hook (recorder.h, attach_new_threads).
//
// Interposes pthread_create so that every thread the program creates calls
// zxs_recorder_thread_started() first, which attaches it when the recorder runs with
// attach_new_threads and does nothing otherwise. It is a library of its own, linked or preloaded
// only by the programs that ask for it, so that libzxsampler changes no other program's threads.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/recorder.h>

// The recorder looks this up to know the hook is in the process.
__attribute__((visibility("default"))) const int zxs_thread_hook_installed = 1;

typedef int (*create_fn)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

static create_fn real_create(void) {
  static _Atomic(create_fn) real;
  create_fn fn = real;
  if (fn == NULL) {
    void* sym = dlsym(RTLD_NEXT, "pthread_create");
    memcpy(&fn, &sym, sizeof(fn));  // POSIX: dlsym results convert to function pointers
    real = fn;
  }
  return fn;
}

typedef struct start {
  void* (*fn)(void*);
  void* arg;
} start_t;

static void* hooked_start(void* p) {
  const start_t s = *(start_t*)p;
  free(p);
  zxs_recorder_thread_started();
  return s.fn(s.arg);
}

__attribute__((visibility("default"))) int pthread_create(pthread_t* thread,
                                                          const pthread_attr_t* attr,
                                                          void* (*fn)(void*), void* arg) {
  const create_fn real = real_create();
  if (real == NULL) return EAGAIN;
  start_t* s = malloc(sizeof(*s));
  if (s == NULL) return real(thread, attr, fn, arg);  // not attached, but created
  s->fn = fn;
  s->arg = arg;
  const int err = real(thread, attr, hooked_start, s);
  if (err != 0) free(s);
  return err;
}
