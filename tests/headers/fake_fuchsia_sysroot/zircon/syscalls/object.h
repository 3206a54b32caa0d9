// Stand-in for Fuchsia's <zircon/syscalls/object.h> (see ../types.h).
#ifndef ZIRCON_SYSCALLS_OBJECT_H_
#define ZIRCON_SYSCALLS_OBJECT_H_
#include <stdint.h>
#include <zircon/syscalls/iob.h>
#include <zircon/types.h>
#define ZXS_FAKE_SYSROOT_OBJECT 1
typedef uint32_t zx_object_info_topic_t;
#define ZX_INFO_IOB 34u
typedef struct zx_info_iob {
  uint64_t stub;
} zx_info_iob_t;
#endif  // ZIRCON_SYSCALLS_OBJECT_H_
