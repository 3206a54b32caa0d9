// macOS: the registers of a suspended thread, x86_64 and arm64 (the only two architectures
// macOS runs on).
#include "thread_state_macos.h"

#include <mach/mach.h>

kern_return_t zxs_macos_thread_regs(mach_port_t port, zxs_regs_t* regs) {
#if defined(__x86_64__)
  x86_thread_state64_t state;
  mach_msg_type_number_t count = x86_THREAD_STATE64_COUNT;
  kern_return_t kr = thread_get_state(port, x86_THREAD_STATE64, (thread_state_t)&state, &count);
  if (kr != KERN_SUCCESS) {
    return kr;
  }
  regs->pc = (uintptr_t)state.__rip;
  regs->fp = (uintptr_t)state.__rbp;
  regs->sp = (uintptr_t)state.__rsp;
  return KERN_SUCCESS;
#elif defined(__aarch64__) || defined(__arm64__)
  arm_thread_state64_t state;
  mach_msg_type_number_t count = ARM_THREAD_STATE64_COUNT;
  kern_return_t kr = thread_get_state(port, ARM_THREAD_STATE64, (thread_state_t)&state, &count);
  if (kr != KERN_SUCCESS) {
    return kr;
  }
  // The SDK's accessors read the opaque (signed) fields of arm64e; the pc may still carry a
  // pointer authentication code, which a symbolizer must not see.
  regs->pc = zxs_strip_code_address((uintptr_t)arm_thread_state64_get_pc(state));
  regs->fp = (uintptr_t)arm_thread_state64_get_fp(state);
  regs->sp = (uintptr_t)arm_thread_state64_get_sp(state);
  return KERN_SUCCESS;
#else
#error "macOS runs on x86_64 and arm64 only"
#endif
}
