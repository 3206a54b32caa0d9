// errno -> zx_status_t for the POSIX backends (errno_status.h).
#include "errno_status.h"

#include <errno.h>

zx_status_t zxs_posix_errno_status(int err) {
  switch (err) {
    case ENOMEM:
    case ENOSPC:
    case EFBIG:
    case EOVERFLOW:
      return ZX_ERR_NO_MEMORY;
    case EMFILE:
    case ENFILE:
    case EBUSY:
      return ZX_ERR_NO_RESOURCES;
    case EACCES:
    case EPERM:
      return ZX_ERR_ACCESS_DENIED;
    case ESRCH:
    case EBADF:
      return ZX_ERR_BAD_STATE;
    case EINVAL:
      return ZX_ERR_INVALID_ARGS;
    case ENOENT:
    case ENODEV:
    case ENOSYS:
    case EOPNOTSUPP:
#if ENOTSUP != EOPNOTSUPP  // one value on Linux, two on macOS
    case ENOTSUP:
#endif
      return ZX_ERR_NOT_SUPPORTED;
    default:
      return ZX_ERR_INTERNAL;
  }
}
