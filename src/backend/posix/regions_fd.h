// Regions over a shared-memory file (Linux: a memfd; macOS: an unlinked shm_open object): the
// sampling path writes through one shared mapping, readers map the same file read-only, and a
// mapping holds its own reference, so readers' mappings outlive the region. Each backend makes
// the file its own way; this part is common.
#ifndef ZXSAMPLER_SRC_BACKEND_POSIX_REGIONS_FD_H_
#define ZXSAMPLER_SRC_BACKEND_POSIX_REGIONS_FD_H_

#include <stddef.h>

#include "platform.h"

// Sizes the new, empty file `fd` to `size` bytes (they read as zeros) and maps them writable and
// shared into *out (base, size, native = fd). On failure nothing is mapped and fd stays open:
// ZX_ERR_NO_MEMORY (a size the system refuses too), or zxs_posix_errno_status() of the errno.
zx_status_t zxs_fd_region_init(int fd, size_t size, zxs_prim_region_t* out);

#endif  // ZXSAMPLER_SRC_BACKEND_POSIX_REGIONS_FD_H_
