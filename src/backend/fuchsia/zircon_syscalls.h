// The Fuchsia system calls the thin backend makes (internal).
//
// Built for Fuchsia (__Fuchsia__) the headers are the system's: the vDSO's calls, the sampler's
// from <zircon/syscalls-next.h> or <zircon/syscalls.h> (by revision: zxs_config.h's
// ZXS_FUCHSIA_SAMPLER_ATTACH, which meson detects), thrd_get_zx_handle() from the C library. Built
// for a Linux host against the Fuchsia double (tests/fuchsia_double/, the tests' stand-in for the
// kernel), and for the compile check of scripts/check-fuchsia-compile.sh, they are
// tests/fuchsia_sysroot/'s declarations, with Fuchsia's prototypes.
#ifndef ZXSAMPLER_SRC_BACKEND_FUCHSIA_ZIRCON_SYSCALLS_H_
#define ZXSAMPLER_SRC_BACKEND_FUCHSIA_ZIRCON_SYSCALLS_H_

#include <assert.h>  // static_assert for <zircon/syscalls-next.h> in C before C23
#include <pthread.h>
#include <threads.h>
#include <zircon/process.h>
#include <zircon/syscalls-next.h>
#include <zircon/syscalls.h>
#include <zircon/threads.h>
#include <zxsampler/sampler.h>
#include <zxsampler/types.h>

// The C library's handle of a thread (borrowed: the caller duplicates it). Fuchsia's pthread_t
// and thrd_t name the same thread structure, as glibc's (the double's host) do.
static inline zx_handle_t zxs_fuchsia_thread_handle(pthread_t thread) {
  return thrd_get_zx_handle((thrd_t)thread);
}

#endif  // ZXSAMPLER_SRC_BACKEND_FUCHSIA_ZIRCON_SYSCALLS_H_
