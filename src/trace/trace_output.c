// Output files written beside their target and renamed into place (see trace_output.h).
#define _GNU_SOURCE
#include "trace_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void say(char* error, size_t size, const char* path, const char* why) {
  if (error != NULL && size > 0) {
    snprintf(error, size, "cannot write the profile to %s: %s", path, why);
  }
}

// Why a target that is there is not a regular file, in words.
static const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "it is a directory";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "it is a device, not a regular file";
  if (S_ISFIFO(mode)) return "it is a FIFO, not a regular file";
  if (S_ISSOCK(mode)) return "it is a socket, not a regular file";
  return "it is not a regular file";
}

// A new file of a name not yet taken, O_EXCL, mode 0666 less the umask (as any new file).
static int create_temp(char* temp, size_t size, const char* target) {
  static unsigned counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned seed = (unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 16);
  for (int attempt = 0; attempt < 100; attempt++) {
    seed = seed * 1103515245u + 12345u + __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    if (snprintf(temp, size, "%s.%08x.tmp", target, seed) >= (int)size) {
      errno = ENAMETOOLONG;
      return -1;
    }
    int fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

zx_status_t zxs_trace_output_open(const char* path, zxs_trace_output_t* out, char* error,
                                  size_t error_size) {
  memset(out, 0, sizeof(*out));
  if (path == NULL || path[0] == '\0') {
    say(error, error_size, "''", "no file named");
    return ZX_ERR_INVALID_ARGS;
  }
  if (strlen(path) >= sizeof(out->target) - 16) {
    say(error, error_size, path, strerror(ENAMETOOLONG));
    return ZX_ERR_INVALID_ARGS;
  }
  snprintf(out->target, sizeof(out->target), "%s", path);
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    // A link: the file it names is replaced, the link kept.
    char* resolved = realpath(path, NULL);
    if (resolved == NULL) {
      say(error, error_size, path,
          errno == ENOENT ? "it is a symbolic link to nothing" : strerror(errno));
      return errno == ENOMEM ? ZX_ERR_NO_MEMORY : ZX_ERR_WRONG_TYPE;
    }
    const bool fits = strlen(resolved) < sizeof(out->target) - 16;
    if (fits) snprintf(out->target, sizeof(out->target), "%s", resolved);
    free(resolved);
    if (!fits) {
      say(error, error_size, path, strerror(ENAMETOOLONG));
      return ZX_ERR_INVALID_ARGS;
    }
    if (stat(out->target, &st) != 0) {
      say(error, error_size, path, strerror(errno));
      return ZX_ERR_IO;
    }
  } else if (lstat(path, &st) != 0) {
    if (errno != ENOENT) {
      say(error, error_size, path, strerror(errno));
      return ZX_ERR_IO;
    }
    st.st_mode = 0;
  }
  if (st.st_mode != 0) {
    if (!S_ISREG(st.st_mode)) {
      say(error, error_size, path, kind_of(st.st_mode));
      return ZX_ERR_WRONG_TYPE;
    }
    out->existed = true;
    out->mode = st.st_mode & 07777;
    out->uid = st.st_uid;
    out->gid = st.st_gid;
  }
  const int fd = create_temp(out->temp, sizeof(out->temp), out->target);
  if (fd < 0) {
    say(error, error_size, path, strerror(errno));
    out->temp[0] = '\0';
    return ZX_ERR_IO;
  }
  out->file = fdopen(fd, "wb");
  if (out->file == NULL) {
    say(error, error_size, path, strerror(errno));
    close(fd);
    unlink(out->temp);
    out->temp[0] = '\0';
    return ZX_ERR_NO_MEMORY;
  }
  return ZX_OK;
}

zx_status_t zxs_trace_output_commit(zxs_trace_output_t* out, char* error, size_t error_size) {
  if (out->file == NULL) {
    say(error, error_size, out->target, "not open");
    return ZX_ERR_BAD_STATE;
  }
  zx_status_t status = ZX_OK;
  const int fd = fileno(out->file);
  if (out->existed) {
    if (geteuid() == 0) (void)fchown(fd, out->uid, out->gid);
    (void)fchmod(fd, out->mode);
  }
  if (fflush(out->file) != 0) {
    say(error, error_size, out->target, strerror(errno));
    status = ZX_ERR_IO;
  }
  if (fclose(out->file) != 0 && status == ZX_OK) {
    say(error, error_size, out->target, strerror(errno));
    status = ZX_ERR_IO;
  }
  out->file = NULL;
  struct stat st;
  if (status == ZX_OK && lstat(out->target, &st) == 0 && !S_ISREG(st.st_mode)) {
    say(error, error_size, out->target, kind_of(st.st_mode));  // it changed meanwhile
    status = ZX_ERR_WRONG_TYPE;
  }
  if (status == ZX_OK && rename(out->temp, out->target) != 0) {
    say(error, error_size, out->target, strerror(errno));
    status = ZX_ERR_IO;
  }
  if (status != ZX_OK) unlink(out->temp);
  out->temp[0] = '\0';
  return status;
}

void zxs_trace_output_abandon(zxs_trace_output_t* out) {
  if (out->file != NULL) fclose(out->file);
  out->file = NULL;
  if (out->temp[0] != '\0') unlink(out->temp);
  out->temp[0] = '\0';
}
