// macOS: naming threads (thread id, Mach port, stack bounds, name), telling whether they still
// live, and the exit hook.
//
// A thread's koid is its pthread_threadid_np() id: 64 bits, never reused while the system runs.
// Its native name is the Mach port libpthread holds for it (pthread_mach_thread_np); a port
// name can be reused once the thread has gone, so liveness checks that the port still names the
// thread with that id, and the sampler holds a send right of its own while armed (the name then
// stays a dead name rather than being reused).
#include <errno.h>
#include <libproc.h>
#include <mach/mach.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macos_internal.h"
#include "platform.h"
#include "sampling.h"

bool zxs_macos_thread_id(mach_port_t port, uint64_t* id) {
  thread_identifier_info_data_t info;
  mach_msg_type_number_t count = THREAD_IDENTIFIER_INFO_COUNT;
  if (port == MACH_PORT_NULL ||
      thread_info(port, THREAD_IDENTIFIER_INFO, (thread_info_t)&info, &count) != KERN_SUCCESS) {
    return false;
  }
  *id = info.thread_id;
  return true;
}

// Describes a live pthread: its id, port and stack ([top - size, top)).
static zx_status_t describe(pthread_t thread, zxs_prim_thread_t* out) {
  memset(out, 0, sizeof(*out));
  uint64_t id = 0;
  int err = pthread_threadid_np(thread, &id);
  if (err != 0 || id == 0) {
    return err == ESRCH ? ZX_ERR_BAD_STATE : ZX_ERR_INTERNAL;
  }
  const mach_port_t port = pthread_mach_thread_np(thread);
  const uintptr_t top = (uintptr_t)pthread_get_stackaddr_np(thread);
  const size_t size = pthread_get_stacksize_np(thread);
  if (port == MACH_PORT_NULL || top == 0 || size == 0 || size > top) {
    return ZX_ERR_BAD_STATE;
  }
  out->koid = (zx_koid_t)id;
  out->native = (uint64_t)port;
  out->stack_lo = top - size;
  out->stack_hi = top;
  return ZX_OK;
}

zx_status_t zxs_prim_thread_self(zxs_prim_thread_t* out) { return describe(pthread_self(), out); }

zx_koid_t zxs_prim_current_thread_koid(void) {
  uint64_t id = 0;
  return pthread_threadid_np(pthread_self(), &id) == 0 ? (zx_koid_t)id : 0;
}

zx_status_t zxs_prim_thread_from_native(const void* native, zxs_prim_thread_t* out) {
  memset(out, 0, sizeof(*out));
  if (native == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  zxs_prim_thread_t candidate;
  zx_status_t status = describe(*(const pthread_t*)native, &candidate);
  if (status != ZX_OK) {
    return status;
  }
  if (!zxs_prim_thread_alive(&candidate)) {
    return ZX_ERR_BAD_STATE;
  }
  *out = candidate;
  return ZX_OK;
}

bool zxs_prim_thread_alive(const zxs_prim_thread_t* thread) {
  uint64_t id;
  return thread != NULL && thread->koid != 0 &&
         zxs_macos_thread_id((mach_port_t)thread->native, &id) && id == thread->koid;
}

// No pthread_exit hook on macOS keeps a list of the library's threads: nothing to mark.
void zxs_prim_thread_is_library(void) {}

zx_status_t zxs_prim_thread_name(zx_koid_t koid, char* buf, size_t size) {
  if (buf == NULL || size == 0 || koid == 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  struct proc_threadinfo info;
  if (proc_pidinfo(getpid(), PROC_PIDTHREADID64INFO, koid, &info, (int)sizeof(info)) !=
      (int)sizeof(info)) {
    buf[0] = '\0';
    return ZX_ERR_NOT_FOUND;
  }
  info.pth_name[sizeof(info.pth_name) - 1] = '\0';
  snprintf(buf, size, "%s", info.pth_name);
  return ZX_OK;
}

// --- Exit hook ---------------------------------------------------------------------------------

static pthread_key_t g_exit_key;
static bool g_exit_key_ok;
static pthread_once_t g_exit_once = PTHREAD_ONCE_INIT;

// Runs in the exiting thread, before its Mach thread terminates.
static void on_thread_exit(void* value) { zxs_core_thread_exited((zx_koid_t)(uintptr_t)value); }

static void create_exit_key(void) {
  g_exit_key_ok = pthread_key_create(&g_exit_key, on_thread_exit) == 0;
}

zx_status_t zxs_prim_notify_on_thread_exit(void) {
  pthread_once(&g_exit_once, create_exit_key);
  if (!g_exit_key_ok) {
    return ZX_ERR_NO_RESOURCES;
  }
  if (pthread_getspecific(g_exit_key) != NULL) {
    return ZX_OK;  // already registered for this thread
  }
  uint64_t id = 0;
  if (pthread_threadid_np(pthread_self(), &id) != 0 || id == 0 || id > UINTPTR_MAX) {
    return ZX_ERR_INTERNAL;
  }
  // The value is the id (never 0), so the destructor runs and needs no call to find it.
  if (pthread_setspecific(g_exit_key, (void*)(uintptr_t)id) != 0) {
    return ZX_ERR_NO_MEMORY;
  }
  return ZX_OK;
}

// macOS has no call that reports another thread's exit to a third thread without a Mach
// notification port and a thread to serve it; the core reaps such threads at its next call, and
// the sampler skips a thread whose port is dead.
zx_status_t zxs_prim_watch_thread_exit(const zxs_prim_thread_t* thread) {
  (void)thread;
  return ZX_ERR_NOT_SUPPORTED;
}

void zxs_prim_unwatch_thread_exit(zx_koid_t koid) { (void)koid; }

void zxs_macos_internal_thread_started(void) {
  uint64_t id = 0;
  if (pthread_threadid_np(pthread_self(), &id) == 0) {
    zxs_core_thread_exited((zx_koid_t)id);
  }
}
