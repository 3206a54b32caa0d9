// macOS: regions are POSIX shared memory objects (shm_open), unlinked at once so that only the
// descriptor names them; their mappings are the common ones of src/backend/posix/regions_fd.c.
// macOS cannot resize a shared memory object after its first ftruncate, which is the seal
// Linux's memfds add that matters here (no writable mapping can shrink under the sampler).
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "errno_status.h"
#include "macos_internal.h"
#include "platform.h"
#include "regions_fd.h"

// A new, empty shared memory object that no name reaches any more; -1 with errno on failure.
static int open_anonymous_shm(void) {
  static _Atomic uint32_t counter;
  for (int attempt = 0; attempt < 64; attempt++) {
    char name[32];  // macOS: at most PSHMNAMLEN (31) characters
    snprintf(name, sizeof(name), "/zxs.%ld.%u", (long)getpid(),
             (unsigned)atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed));
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      shm_unlink(name);
      // shm_open's descriptor is close-on-exec by POSIX; say so where it is not.
      (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
      return fd;
    }
    if (errno != EEXIST) {
      return -1;
    }
  }
  errno = EEXIST;
  return -1;
}

zx_status_t zxs_prim_region_create(size_t size, zxs_prim_region_t* out) {
  out->base = NULL;
  out->size = 0;
  out->native = -1;
  if (size == 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  int fd = open_anonymous_shm();
  if (fd < 0) {
    return errno == EEXIST ? ZX_ERR_NO_RESOURCES : zxs_posix_errno_status(errno);
  }
  const zx_status_t status = zxs_fd_region_init(fd, size, out);
  if (status != ZX_OK) {
    close(fd);
  }
  return status;
}
