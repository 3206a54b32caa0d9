// The pthread_create interposer (internal): one implementation, compiled into each library that
// needs one, libzxsampler-threads (the flight recorder's thread hook, recorder.h) and
// libzxsampler-preload (the profiler in an unmodified program). libzxsampler itself never
// interposes, so that linking it changes no program's threads.
//
// Each new thread runs the hooks added to its library's copy, in the order added, before its
// start routine. A library adds its own hooks directly; libzxsampler's recorder reaches the
// threads library's copy through the one entry that library exports, zxs_thread_hook_add.
//
// With both libraries in one program (a program linked with libzxsampler-threads, profiled with
// the preload library), the first in the loader's search order (the preloaded one) defines the
// program's pthread_create: it runs its hooks and creates the thread with the next definition,
// the other library's, which runs its own hooks in turn and calls the C library's. Each hook
// runs once per thread.
#ifndef ZXSAMPLER_SRC_RECORDER_THREAD_HOOK_H_
#define ZXSAMPLER_SRC_RECORDER_THREAD_HOOK_H_

#include <pthread.h>
#include <stdbool.h>

typedef void (*zxs_thread_start_fn)(void);

// Adds `fn` to what each thread created from now on runs as it starts (not async-signal-safe:
// it runs as an ordinary function in the new thread). Idempotent; safe from any thread. False
// when the hooks are full (a handful: there are two users).
bool zxs_thread_start_hook_add(zxs_thread_start_fn fn);

// What libzxsampler-threads exports for libzxsampler's recorder, which looks it up by name
// (dlsym): zxs_thread_start_hook_add of that library's copy.
typedef bool (*zxs_thread_hook_add_fn)(zxs_thread_start_fn fn);
#define ZXS_THREAD_HOOK_ADD_SYMBOL "zxs_thread_hook_add"

#endif  // ZXSAMPLER_SRC_RECORDER_THREAD_HOOK_H_
