// The Mach interface libzxsampler's macOS backend uses, as Apple's SDK declares it (<mach/mach.h>
// and the headers it includes: kern_return.h, thread_act.h, thread_info.h, thread_policy.h,
// thread_status.h, mach_port.h). Declarations only, for building the backend on Linux against
// tests/mach_double, which implements them. Names, types and values are Apple's.
#ifndef ZXS_MACH_DOUBLE_MACH_MACH_H_
#define ZXS_MACH_DOUBLE_MACH_MACH_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int kern_return_t;
typedef unsigned int natural_t;
typedef int integer_t;
#if defined(__x86_64__)
typedef unsigned int boolean_t;
#else
typedef int boolean_t;
#endif

typedef natural_t mach_port_name_t;
typedef mach_port_name_t mach_port_t;
typedef mach_port_t ipc_space_t;
typedef mach_port_t task_t;
typedef mach_port_t thread_t;
typedef mach_port_t thread_act_t;
typedef mach_port_t thread_read_t;
typedef mach_port_t thread_inspect_t;
typedef natural_t mach_msg_type_number_t;
typedef natural_t mach_port_right_t;
typedef integer_t mach_port_delta_t;

#define MACH_PORT_NULL ((mach_port_t)0)
#define MACH_PORT_RIGHT_SEND ((mach_port_right_t)0)

// kern_return.h, mach/message.h
#define KERN_SUCCESS 0
#define KERN_INVALID_ADDRESS 1
#define KERN_PROTECTION_FAILURE 2
#define KERN_NO_SPACE 3
#define KERN_INVALID_ARGUMENT 4
#define KERN_FAILURE 5
#define KERN_RESOURCE_SHORTAGE 6
#define KERN_NO_ACCESS 8
#define KERN_ABORTED 14
#define KERN_INVALID_NAME 15
#define KERN_INVALID_TASK 16
#define KERN_INVALID_RIGHT 17
#define KERN_INVALID_VALUE 18
#define KERN_UREFS_OVERFLOW 19
#define KERN_INVALID_CAPABILITY 20
#define KERN_INVALID_POLICY 28
#define KERN_TERMINATED 37
#define KERN_NOT_SUPPORTED 46
#define KERN_OPERATION_TIMED_OUT 49
#define KERN_DENIED 53
#define KERN_NOT_FOUND 56
#define MACH_SEND_INVALID_DEST 0x10000003

// mach_init.h
extern mach_port_t mach_task_self_;
#define mach_task_self() mach_task_self_
mach_port_t mach_thread_self(void);

// mach_port.h
kern_return_t mach_port_mod_refs(ipc_space_t task, mach_port_name_t name, mach_port_right_t right,
                                 mach_port_delta_t delta);
kern_return_t mach_port_deallocate(ipc_space_t task, mach_port_name_t name);

// thread_status.h (x86_64 and arm64)
typedef int thread_state_flavor_t;
typedef natural_t* thread_state_t;

#define x86_THREAD_STATE64 4
typedef struct __darwin_x86_thread_state64 {
  uint64_t __rax, __rbx, __rcx, __rdx, __rdi, __rsi, __rbp, __rsp;
  uint64_t __r8, __r9, __r10, __r11, __r12, __r13, __r14, __r15;
  uint64_t __rip, __rflags, __cs, __fs, __gs;
} x86_thread_state64_t;
#define x86_THREAD_STATE64_COUNT \
  ((mach_msg_type_number_t)(sizeof(x86_thread_state64_t) / sizeof(int)))

#define ARM_THREAD_STATE64 6
typedef struct __darwin_arm_thread_state64 {
  uint64_t __x[29];
  uint64_t __fp;
  uint64_t __lr;
  uint64_t __sp;
  uint64_t __pc;
  uint32_t __cpsr;
  uint32_t __pad;
} arm_thread_state64_t;
#define ARM_THREAD_STATE64_COUNT \
  ((mach_msg_type_number_t)(sizeof(arm_thread_state64_t) / sizeof(uint32_t)))
// The SDK's accessors (they authenticate or strip pointer authentication where the state is
// opaque, arm64e); plain field reads here.
#define arm_thread_state64_get_pc(ts) ((uintptr_t)(ts).__pc)
#define arm_thread_state64_get_lr(ts) ((uintptr_t)(ts).__lr)
#define arm_thread_state64_get_sp(ts) ((uintptr_t)(ts).__sp)
#define arm_thread_state64_get_fp(ts) ((uintptr_t)(ts).__fp)

// thread_info.h
typedef natural_t thread_flavor_t;
typedef integer_t* thread_info_t;
typedef struct time_value {
  integer_t seconds;
  integer_t microseconds;
} time_value_t;
typedef integer_t policy_t;

#define THREAD_BASIC_INFO 3
struct thread_basic_info {
  time_value_t user_time;
  time_value_t system_time;
  integer_t cpu_usage;
  policy_t policy;
  integer_t run_state;
  integer_t flags;
  integer_t suspend_count;
  integer_t sleep_time;
};
typedef struct thread_basic_info thread_basic_info_data_t;
#define THREAD_BASIC_INFO_COUNT \
  ((mach_msg_type_number_t)(sizeof(thread_basic_info_data_t) / sizeof(natural_t)))

#define THREAD_IDENTIFIER_INFO 4
struct thread_identifier_info {
  uint64_t thread_id;
  uint64_t thread_handle;
  uint64_t dispatch_qaddr;
};
typedef struct thread_identifier_info thread_identifier_info_data_t;
#define THREAD_IDENTIFIER_INFO_COUNT \
  ((mach_msg_type_number_t)(sizeof(thread_identifier_info_data_t) / sizeof(natural_t)))

#define TH_STATE_RUNNING 1
#define TH_STATE_STOPPED 2
#define TH_STATE_WAITING 3
#define TH_STATE_UNINTERRUPTIBLE 4
#define TH_STATE_HALTED 5
#define TH_FLAGS_SWAPPED 0x1
#define TH_FLAGS_IDLE 0x2

// thread_policy.h
typedef natural_t thread_policy_flavor_t;
typedef integer_t* thread_policy_t;
#define THREAD_TIME_CONSTRAINT_POLICY 2
struct thread_time_constraint_policy {
  uint32_t period;
  uint32_t computation;
  uint32_t constraint;
  boolean_t preemptible;
};
typedef struct thread_time_constraint_policy thread_time_constraint_policy_data_t;
#define THREAD_TIME_CONSTRAINT_POLICY_COUNT \
  ((mach_msg_type_number_t)(sizeof(thread_time_constraint_policy_data_t) / sizeof(integer_t)))

// thread_act.h
kern_return_t thread_suspend(thread_read_t target_act);
kern_return_t thread_resume(thread_read_t target_act);
kern_return_t thread_get_state(thread_read_t target_act, thread_state_flavor_t flavor,
                               thread_state_t old_state, mach_msg_type_number_t* old_stateCnt);
kern_return_t thread_info(thread_inspect_t target_act, thread_flavor_t flavor,
                          thread_info_t thread_info_out,
                          mach_msg_type_number_t* thread_info_outCnt);
kern_return_t thread_policy_set(thread_act_t thread, thread_policy_flavor_t flavor,
                                thread_policy_t policy_info, mach_msg_type_number_t policy_infoCnt);

#ifdef __cplusplus
}
#endif

#endif  // ZXS_MACH_DOUBLE_MACH_MACH_H_
