// macOS: task runtime (RFC-0084), CPU time only. The kernel counts every thread's CPU time from
// its start, so measuring starts nothing; libproc reads a thread's by its id, getrusage the
// process's (its exited threads included). macOS has no public per-thread run-queue delay, page
// fault time or lock contention time: those fields are left out, and an exited thread's totals
// are not kept.
#include <errno.h>
#include <libproc.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zxsampler/object.h>

#include "errno_status.h"
#include "macos_internal.h"
#include "platform.h"

zx_status_t zxs_prim_runtime_measure(const zxs_prim_thread_t* thread) {
  return zxs_prim_thread_alive(thread) ? ZX_OK : ZX_ERR_BAD_STATE;
}

zx_status_t zxs_prim_runtime_thread(zx_koid_t koid, zxs_prim_runtime_t* out) {
  struct proc_threadinfo info;
  if (proc_pidinfo(getpid(), PROC_PIDTHREADID64INFO, koid, &info, (int)sizeof(info)) !=
      (int)sizeof(info)) {
    return ZX_ERR_NOT_FOUND;
  }
  memset(out, 0, sizeof(*out));
  out->info.cpu_time = (zx_duration_t)(info.pth_user_time + info.pth_system_time);
  out->fields = ZXS_TASK_RUNTIME_CPU_TIME;
  return ZX_OK;
}

zx_status_t zxs_prim_runtime_process(zxs_prim_runtime_t* out) {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) {
    return zxs_posix_errno_status(errno);
  }
  memset(out, 0, sizeof(*out));
  out->info.cpu_time = (zx_duration_t)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000000 +
                       (zx_duration_t)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1000;
  out->fields = ZXS_TASK_RUNTIME_CPU_TIME;
  return ZX_OK;
}

// The flight recorder's deadlines (recorder.h): no page-fault or lock-contention time is kept,
// and no run-queue time can be read, so a late period's breakdown holds its CPU time only.
zx_status_t zxs_prim_runtime_keep_history(const zxs_prim_thread_t* thread) {
  (void)thread;
  return ZX_ERR_NOT_SUPPORTED;
}

zx_status_t zxs_prim_runtime_between(zx_koid_t koid, zx_time_t since, zx_time_t until,
                                     zxs_prim_runtime_t* out) {
  (void)koid;
  (void)since;
  (void)until;
  (void)out;
  return ZX_ERR_NOT_FOUND;
}

zx_status_t zxs_prim_runtime_self_prepare(void) { return ZX_ERR_NOT_SUPPORTED; }

uint32_t zxs_prim_runtime_self_now(int64_t* cpu_time, int64_t* queue_time) {
  *queue_time = 0;
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
    *cpu_time = 0;
    return 0;
  }
  *cpu_time = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  return ZXS_TASK_RUNTIME_CPU_TIME;
}
