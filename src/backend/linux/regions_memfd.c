// Linux: regions are memfds, sealed, and no descriptor is kept once they are mapped: a program
// that closes every descriptor it inherited (as daemons do) cannot close ours, nor have us close
// or map its own file that took the number (issue #26). The region holds two mappings of the
// file: the writable one the sampling path writes through (base), and a read-only one (native)
// that readers' mappings are duplicated from (mremap with old_size 0 makes a new mapping of the
// same shared pages, with the same rights: the seals made it one that can never be writable).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "errno_status.h"
#include "linux_internal.h"
#include "platform.h"
#include "regions_fd.h"

#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE 1
#endif

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
  void* readable = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  out->native = -1;
  if (readable == MAP_FAILED) {
    munmap(out->base, out->size);
    out->base = NULL;
    out->size = 0;
    return zxs_posix_errno_status(err);
  }
  out->native = (intptr_t)readable;
  return ZX_OK;
}

void zxs_prim_region_destroy(zxs_prim_region_t* region) {
  if (region->base != NULL) {
    munmap(region->base, region->size);
  }
  if (region->native != -1) {
    munmap((void*)region->native, region->size);
  }
  region->base = NULL;
  region->size = 0;
  region->native = -1;
}

zx_status_t zxs_prim_region_map_readonly(const zxs_prim_region_t* region, size_t offset, size_t len,
                                         void** out) {
  *out = NULL;
  if (region->native == -1) {
    return ZX_ERR_BAD_STATE;
  }
  // A new mapping of the same pages, which holds its own reference to the file: it outlives
  // the region.
  const uint8_t* pages = (const uint8_t*)region->native + offset;
  void* addr = mremap((void*)pages, 0, len, MREMAP_MAYMOVE);
  if (addr == MAP_FAILED && errno == EINVAL) {
    // Where duplicating a shared mapping is not supported (valgrind, which runs the stress tests,
    // refuses old_size 0): a private copy of the pages as they are now, read-only. It does not
    // follow later writes; readers map a region to read what a stopped session holds.
    addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (addr != MAP_FAILED) {
      memcpy(addr, pages, len);
      (void)mprotect(addr, len, PROT_READ);
    }
  }
  if (addr == MAP_FAILED) {
    return zxs_posix_errno_status(errno);
  }
  *out = addr;
  return ZX_OK;
}
