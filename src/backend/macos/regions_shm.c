// macOS: regions are POSIX shared memory objects (shm_open), unlinked at once so that only the
// descriptor names them; they are mapped by src/backend/posix/regions_fd.c, and keep their
// descriptor for the readers' mappings.
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

// The region keeps its descriptor (Linux, regions_memfd.c, keeps none once mapped).
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
