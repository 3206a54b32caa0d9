// Stand-in for Fuchsia's <zircon/syscalls/object.h>: the topics and info structs come with
// <zxsampler/types.h> (on Fuchsia: this sysroot's generated <zircon/types.h>); the property the
// backend reads is declared here, with Fuchsia's value.
#ifndef ZXS_SYSROOT_ZIRCON_SYSCALLS_OBJECT_H_
#define ZXS_SYSROOT_ZIRCON_SYSCALLS_OBJECT_H_
#if defined(__Fuchsia__)
#include <zircon/types.h>  // a Fuchsia target: the SDK's names only
#else
#include <zxsampler/types.h>  // the double's host: the library's
#endif
#define ZX_PROP_NAME ((uint32_t)3u)
#endif
