// Regions over a shared-memory file (regions_fd.h): the mappings and their release, common to
// the backends whose regions are files.
#include "regions_fd.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "errno_status.h"

// The status for a failed ftruncate or mmap: an argument they refuse is a size they cannot give.
static zx_status_t sizing_status(int err) {
  const zx_status_t status = zxs_posix_errno_status(err);
  return status == ZX_ERR_INVALID_ARGS ? ZX_ERR_NO_MEMORY : status;
}

zx_status_t zxs_fd_region_init(int fd, size_t size, zxs_prim_region_t* out) {
  // Pages are only allocated when written.
  if (ftruncate(fd, (off_t)size) != 0) {
    return sizing_status(errno);
  }
  void* base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    return sizing_status(errno);
  }
  out->base = base;
  out->size = size;
  out->native = fd;
  return ZX_OK;
}

zx_status_t zxs_prim_unmap(void* addr, size_t len) {
  if (munmap(addr, len) != 0) {
    return zxs_posix_errno_status(errno);
  }
  return ZX_OK;
}
