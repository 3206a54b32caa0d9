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

// Linux keeps no descriptor once a region is mapped (regions_memfd.c has its own).
#ifndef __linux__
void zxs_prim_region_destroy(zxs_prim_region_t* region) {
  if (region->base != NULL) {
    munmap(region->base, region->size);
  }
  if (region->native >= 0) {
    close((int)region->native);
  }
  region->base = NULL;
  region->size = 0;
  region->native = -1;
}

zx_status_t zxs_prim_region_map_readonly(const zxs_prim_region_t* region, size_t offset, size_t len,
                                         void** out) {
  *out = NULL;
  if (region->native < 0) {
    return ZX_ERR_BAD_STATE;
  }
  void* addr = mmap(NULL, len, PROT_READ, MAP_SHARED, (int)region->native, (off_t)offset);
  if (addr == MAP_FAILED) {
    return zxs_posix_errno_status(errno);
  }
  *out = addr;
  return ZX_OK;
}

#endif  // __linux__

zx_status_t zxs_prim_unmap(void* addr, size_t len) {
  if (munmap(addr, len) != 0) {
    return zxs_posix_errno_status(errno);
  }
  return ZX_OK;
}
