// <pthread.h> with the Darwin extensions the macOS backend uses (Apple's declarations), on top
// of the host's own <pthread.h>; implemented by tests/mach_double.
#ifndef ZXS_MACH_DOUBLE_PTHREAD_H_
#define ZXS_MACH_DOUBLE_PTHREAD_H_

#include <mach/mach.h>
#include_next <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

mach_port_t pthread_mach_thread_np(pthread_t thread);
void* pthread_get_stackaddr_np(pthread_t thread);  // the stack's top (highest address)
size_t pthread_get_stacksize_np(pthread_t thread);
int pthread_threadid_np(pthread_t thread, uint64_t* thread_id);

#ifdef __cplusplus
}
#endif

#endif  // ZXS_MACH_DOUBLE_PTHREAD_H_
