// Stand-in for Fuchsia's <zircon/syscalls/iob.h> (see ../types.h).
#ifndef ZIRCON_SYSCALLS_IOB_H_
#define ZIRCON_SYSCALLS_IOB_H_
#include <stdint.h>
#define ZXS_FAKE_SYSROOT_IOB 1
typedef uint64_t zx_iob_discipline_type_t;
typedef uint32_t zx_iob_access_t;
#define ZX_IOB_DISCIPLINE_TYPE_NONE 0ull
#define ZX_IOB_ACCESS_EP0_CAN_MAP_READ 1u
typedef struct zx_iob_region {
  uint64_t stub;
} zx_iob_region_t;
#endif  // ZIRCON_SYSCALLS_IOB_H_
