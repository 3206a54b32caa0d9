// What tests ask the Mach double (test-only; the backend never includes this).
#ifndef ZXS_TESTS_MACH_DOUBLE_MACH_DOUBLE_H_
#define ZXS_TESTS_MACH_DOUBLE_MACH_DOUBLE_H_

#include <mach/mach.h>
#include <stdbool.h>
#include <stdint.h>

// Threads parked by thread_suspend now (suspended and not yet resumed).
uint32_t mach_double_suspended_now(void);
// thread_suspend calls that suspended a thread, since the process started.
uint64_t mach_double_suspends(void);
// Nanoseconds threads spent suspended, from thread_suspend's return to thread_resume, summed.
uint64_t mach_double_suspended_ns(void);
// Send rights (user references) held on `name`; -1 when it names no port.
int32_t mach_double_send_refs(mach_port_t name);
// The last THREAD_TIME_CONSTRAINT_POLICY accepted by thread_policy_set, as XNU stores it (a
// computation below half the constraint raised); false if none.
bool mach_double_time_constraint(thread_time_constraint_policy_data_t* out);
// Makes thread_policy_set refuse the time-constraint policy with `kr` whatever its values, as
// XNU does for a thread whose work interval may not be real-time (KERN_INVALID_POLICY);
// KERN_SUCCESS returns to XNU's rules.
void mach_double_refuse_time_constraint(kern_return_t kr);
// Called by thread_suspend on the suspending thread once the target is parked, before it
// returns: a test can hold a suspension in flight there. NULL removes it. The hook runs while a
// thread is suspended: it must not allocate or lock.
void mach_double_set_suspend_hook(void (*hook)(mach_port_t name, void* ctx), void* ctx);

#endif  // ZXS_TESTS_MACH_DOUBLE_MACH_DOUBLE_H_
