// A stand-in for Fuchsia's <zircon/types.h>, for the test that our headers defer to the
// system's when __Fuchsia__ is defined. Its definitions differ on purpose from ours (other macro
// bodies, long long rather than int64_t): were ours to define any of them again, the build of
// test_fuchsia_defers would fail.
#ifndef ZIRCON_TYPES_H_
#define ZIRCON_TYPES_H_

#include <stdint.h>
#include <zircon/errors.h>
#include <zircon/limits.h>
#include <zircon/rights.h>
#include <zircon/time.h>

#define ZXS_FAKE_SYSROOT_TYPES 1

typedef uint32_t zx_handle_t;
typedef int32_t zx_status_t;
typedef uint32_t zx_vm_option_t;
typedef unsigned long long zx_koid_t;
#define ZX_HANDLE_INVALID 0u
#define ZX_VM_PERM_READ 1u
#define ZX_VM_SPECIFIC 16u
#define ZX_OBJ_TYPE_IOB 33u

#endif  // ZIRCON_TYPES_H_
