// libzxsampler-threads: the flight recorder's thread hook (recorder.h, attach_new_threads).
//
// Interposes pthread_create (thread_hook.c) so that every thread the program creates runs, as it
// starts, the step the recorder adds when it starts with attach_new_threads: the thread attaches
// itself. It is a library of its own, linked or preloaded only by the programs that ask for it,
// so that libzxsampler changes no other program's threads.
#include <stdbool.h>

#include "thread_hook.h"

// The recorder's tests look this up to know the hook is in the process (and, linked with
// -Wl,--no-as-needed, it keeps the library where a sanitizer runtime defines pthread_create).
__attribute__((visibility("default"))) const int zxs_thread_hook_installed = 1;

// libzxsampler's recorder looks this up (ZXS_THREAD_HOOK_ADD_SYMBOL) and adds its step here.
__attribute__((visibility("default"))) bool zxs_thread_hook_add(zxs_thread_start_fn fn) {
  return zxs_thread_start_hook_add(fn);
}
