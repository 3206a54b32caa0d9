// The sampler calls on Fuchsia: the kernel's zx_sampler_*, passed through with their statuses.
// What the library adds is the debug resource the program hands it (the profiler API needs one)
// and the config_size check of the five-parameter form.
//
// Two published revisions of the kernel's sampler exist (meson detects which the SDK has and
// sets ZXS_FUCHSIA_SAMPLER_ATTACH): "attach" (zx_sampler_attach selects threads; the session's
// samples are read by mapping its IOBuffer's per-CPU regions) and "read" (no attach: the
// session samples every thread of the system; zx_sampler_read copies the records out).
#include <pthread.h>
#include <zxsampler/sampler.h>

#include "zircon_syscalls.h"
#include "zxs_config.h"

// What meson found agrees with the layout the SDK's header gives (Fuchsia is LP64 only).
_Static_assert(sizeof(zx_sampler_config_t) == (ZXS_FUCHSIA_SAMPLER_DISCIPLINE ? 24 : 16),
               "zx_sampler_config_t is not the detected revision's");

static pthread_mutex_t g_resource_lock = PTHREAD_MUTEX_INITIALIZER;
static zx_handle_t g_debug_resource = ZX_HANDLE_INVALID;

zx_status_t zxs_debug_resource_set(zx_handle_t rsrc) {
  if (rsrc == ZX_HANDLE_INVALID) return ZX_ERR_BAD_HANDLE;
  pthread_mutex_lock(&g_resource_lock);
  zx_handle_t previous = g_debug_resource;
  g_debug_resource = rsrc;
  pthread_mutex_unlock(&g_resource_lock);
  if (previous != ZX_HANDLE_INVALID) zx_handle_close(previous);
  return ZX_OK;
}

zx_status_t zxs_debug_resource_get(zx_handle_t* out) {
  if (out == NULL) return ZX_ERR_INVALID_ARGS;
  *out = ZX_HANDLE_INVALID;
  pthread_mutex_lock(&g_resource_lock);
  zx_status_t status = g_debug_resource == ZX_HANDLE_INVALID
                           ? ZX_ERR_NOT_FOUND
                           : zx_handle_duplicate(g_debug_resource, ZX_RIGHT_SAME_RIGHTS, out);
  pthread_mutex_unlock(&g_resource_lock);
  return status;
}

// The kernel's boot option decides (kernel.enable-debugging-syscalls): the library never says
// NOT_SUPPORTED in its place.
bool zxs_debugging_syscalls_enabled(void) { return true; }
void zxs_set_debugging_syscalls_enabled(bool enabled) { (void)enabled; }

bool zxs_sampler_compiled_in(void) { return ZXS_SAMPLER_ENABLED != 0; }

zx_status_t zxs_sampler_create(zx_handle_t rsrc, uint64_t options,
                               const zx_sampler_config_t* config, size_t config_size,
                               zx_handle_t* iob_out) {
  if (iob_out != NULL) *iob_out = ZX_HANDLE_INVALID;
  if (!zxs_sampler_compiled_in()) return ZX_ERR_NOT_SUPPORTED;
  if (config != NULL && config_size != sizeof(*config)) return ZX_ERR_INVALID_ARGS;
  return zx_sampler_create(rsrc, options, config, iob_out);
}

zx_status_t zxs_sampler_attach(zx_handle_t iob, zx_handle_t thread) {
#if ZXS_FUCHSIA_SAMPLER_ATTACH
  return zxs_sampler_compiled_in() ? zx_sampler_attach(iob, thread) : ZX_ERR_NOT_SUPPORTED;
#else
  // The "read" revision selects no thread: its kernel samples them all. Saying ZX_OK would
  // promise a selection the kernel does not make.
  (void)iob;
  (void)thread;
  return ZX_ERR_NOT_SUPPORTED;
#endif
}

zx_status_t zxs_sampler_start(zx_handle_t iob) {
  return zxs_sampler_compiled_in() ? zx_sampler_start(iob) : ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_sampler_stop(zx_handle_t iob) {
  return zxs_sampler_compiled_in() ? zx_sampler_stop(iob) : ZX_ERR_NOT_SUPPORTED;
}

// The kernel keeps no counters a program can read.
zx_status_t zxs_sampler_get_stats(zx_handle_t iob, zxs_sampler_stats_t* stats) {
  (void)iob;
  (void)stats;
  return ZX_ERR_NOT_SUPPORTED;
}
