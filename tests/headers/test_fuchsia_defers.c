// Built for Fuchsia (__Fuchsia__ defined, here against a stand-in sysroot: fake_fuchsia_sysroot/),
// types.h and zircon.h define no zircon name of their own: they include the system's headers.
// The stand-ins define those names differently from ours, so a definition of ours that did not
// defer would fail this build (a macro redefined, a conflicting typedef or function). Compiled as
// C11 and C++17, -pedantic-errors -Werror; it only needs to build and run.
#include <zxsampler/types.h>
#include <zxsampler/zircon.h>

#if !defined(ZXS_FAKE_SYSROOT_TYPES) || !defined(ZXS_FAKE_SYSROOT_ERRORS) ||  \
    !defined(ZXS_FAKE_SYSROOT_LIMITS) || !defined(ZXS_FAKE_SYSROOT_RIGHTS) || \
    !defined(ZXS_FAKE_SYSROOT_TIME) || !defined(ZXS_FAKE_SYSROOT_IOB) ||      \
    !defined(ZXS_FAKE_SYSROOT_OBJECT) || !defined(ZXS_FAKE_SYSROOT_SYSCALLS)
#error "a system header was not included"
#endif

// No name Fuchsia's headers lack: the older IOBuffer names and zx_resource_t are the host's only
// (a typedef of ours would conflict with this one).
#if defined(ZX_IOB_EP0_CAN_MAP_READ) || defined(ZX_IOB_DISCIPLINE_NONE)
#error "an IOBuffer name Fuchsia does not have is defined in a Fuchsia build"
#endif
typedef struct not_a_handle* zx_resource_t;

int main(void) {
  zx_handle_t rsrc = ZX_HANDLE_INVALID;
  zx_time_t infinite = ZX_TIME_INFINITE;
  int count = ZXS_STATUS_COUNT;
  return (int)rsrc + (infinite > 0 ? 0 : 1) + (count > 0 ? 0 : 1);
}
