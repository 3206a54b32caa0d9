// errno -> zx_status_t for the POSIX backends (Linux, macOS): the one table. A call whose
// contract folds statuses together (perf sources: "use another source"; perfmon: the statuses
// perfmon.h lists) refines what this returns, and says how, where it does.
#ifndef ZXSAMPLER_SRC_BACKEND_POSIX_ERRNO_STATUS_H_
#define ZXSAMPLER_SRC_BACKEND_POSIX_ERRNO_STATUS_H_

#include <zxsampler/types.h>

// ENOMEM, ENOSPC, EFBIG, EOVERFLOW: NO_MEMORY (a size the system cannot give). EMFILE, ENFILE,
// EBUSY: NO_RESOURCES. EACCES, EPERM: ACCESS_DENIED. ESRCH (the thread or process is gone),
// EBADF: BAD_STATE. EINVAL: INVALID_ARGS. ENOENT, ENODEV, ENOSYS, EOPNOTSUPP, ENOTSUP:
// NOT_SUPPORTED. Anything else: INTERNAL.
zx_status_t zxs_posix_errno_status(int err);

#endif  // ZXSAMPLER_SRC_BACKEND_POSIX_ERRNO_STATUS_H_
