// Linux: regions are memfds, sealed; their mappings are the common ones of
// src/backend/posix/regions_fd.c.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "errno_status.h"
#include "linux_internal.h"
#include "platform.h"
#include "regions_fd.h"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001u
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002u
#endif
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

// A new, empty, close-on-exec shared-memory file; -1 with errno set on failure.
static int open_shared_file(void) {
  int fd = memfd_create("zxsampler", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd >= 0 || errno != ENOSYS) {
    return fd;
  }
  // Kernels or sandboxes without memfd_create: an unnamed file on tmpfs does the same job.
  return open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

zx_status_t zxs_prim_region_create(size_t size, zxs_prim_region_t* out) {
  out->base = NULL;
  out->size = 0;
  out->native = -1;
  if (size == 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  int fd = open_shared_file();
  if (fd < 0) {
    return errno == ENOSYS ? ZX_ERR_NO_MEMORY : zxs_posix_errno_status(errno);
  }
  zx_status_t status = zxs_fd_region_init(fd, size, out);
  if (status != ZX_OK) {
    close(fd);
    return status;
  }
  // Seals, once our writable mapping exists: the size is fixed (the sampling path writes through
  // that mapping inside signal handlers, where a shrunk file would turn stores into SIGBUS), and
  // no later mapping can ever be made writable, so readers' mappings stay read-only even against
  // mprotect(). Best effort: F_SEAL_FUTURE_WRITE needs Linux 5.1; the /dev/shm fallback has no
  // seals at all.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE) != 0) {
    (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
  }
  (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL);
  return ZX_OK;
}
