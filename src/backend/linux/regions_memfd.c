// Linux: regions are memfds. The sampling path writes through one shared mapping; readers get
// their own read-only mappings of the same file, which stay valid after the region is destroyed
// because a mapping holds its own reference to the file.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "linux_internal.h"
#include "platform.h"

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
    return errno == ENOSYS ? ZX_ERR_NO_MEMORY : zxs_linux_status(errno);
  }
  // A new file grown by ftruncate reads as zeros, and pages are only allocated when written.
  if (ftruncate(fd, (off_t)size) != 0) {
    zx_status_t status = zxs_linux_status(errno);
    close(fd);
    return status == ZX_ERR_INVALID_ARGS ? ZX_ERR_NO_MEMORY : status;
  }
  void* base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    zx_status_t status = zxs_linux_status(errno);
    close(fd);
    return status == ZX_ERR_INVALID_ARGS ? ZX_ERR_NO_MEMORY : status;
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
  out->base = base;
  out->size = size;
  out->native = fd;
  return ZX_OK;
}

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
    return zxs_linux_status(errno);
  }
  *out = addr;
  return ZX_OK;
}

zx_status_t zxs_prim_unmap(void* addr, size_t len) {
  if (munmap(addr, len) != 0) {
    return zxs_linux_status(errno);
  }
  return ZX_OK;
}
