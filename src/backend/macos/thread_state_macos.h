// macOS: the registers of a suspended thread (thread_state_macos.c). Apart from
// macos_internal.h so that it needs nothing but Mach's declarations and frame_walk.h: both
// architectures' paths compile on any host (tests/mach_double checks them with clang
// --target=arm64-apple-macos / x86_64-apple-macos).
#ifndef ZXSAMPLER_SRC_BACKEND_MACOS_THREAD_STATE_MACOS_H_
#define ZXSAMPLER_SRC_BACKEND_MACOS_THREAD_STATE_MACOS_H_

#include <mach/mach.h>

#include "frame_walk.h"

// [signal-safe] The suspended thread's pc, fp and sp (x86_64: rip, rbp, rsp; arm64: pc, x29,
// sp, pointer authentication stripped from the pc). A Mach status; KERN_SUCCESS fills *regs.
kern_return_t zxs_macos_thread_regs(mach_port_t port, zxs_regs_t* regs);

#endif  // ZXSAMPLER_SRC_BACKEND_MACOS_THREAD_STATE_MACOS_H_
