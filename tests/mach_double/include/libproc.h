// <libproc.h> and the <sys/proc_info.h> parts it needs, as Apple's SDK declares them;
// implemented by tests/mach_double.
#ifndef ZXS_MACH_DOUBLE_LIBPROC_H_
#define ZXS_MACH_DOUBLE_LIBPROC_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAXTHREADNAMESIZE 64
#define PROC_PIDTHREADID64INFO 15

struct proc_threadinfo {
  uint64_t pth_user_time;
  uint64_t pth_system_time;
  int32_t pth_cpu_usage;
  int32_t pth_policy;
  int32_t pth_run_state;
  int32_t pth_flags;
  int32_t pth_sleep_time;
  int32_t pth_curpri;
  int32_t pth_priority;
  int32_t pth_maxpriority;
  char pth_name[MAXTHREADNAMESIZE];
};

int proc_pidinfo(int pid, int flavor, uint64_t arg, void* buffer, int buffersize);
int proc_name(int pid, void* buffer, uint32_t buffersize);

#ifdef __cplusplus
}
#endif

#endif  // ZXS_MACH_DOUBLE_LIBPROC_H_
