// Output files, written the one safe way: into a temporary file beside the target (same folder,
// so that the rename is atomic and the folder is known to take files before any work is done),
// then renamed into place. Until the commit, what was at the target stays; a failed write
// leaves it untouched.
//
// What a target may be: a regular file, or nothing yet. Anything else (a directory, a device
// such as /dev/null, a FIFO, a socket) is refused, never replaced. A symbolic link is followed:
// the file it points to is replaced (the link stays); a link to nothing, or to something not a
// regular file, is refused. An empty path is refused. A replaced file keeps its mode (and, for
// root, its owner); a new one gets the mode any new file would (0666 less the umask).
//
// Every writer of profiles uses it: zxs_profiler_stop and zxs_profile_convert (profiler.c, and
// so the preload library), `zxsampler record` and `perfmon record` (src/record/).
#ifndef ZXSAMPLER_SRC_TRACE_TRACE_OUTPUT_H_
#define ZXSAMPLER_SRC_TRACE_TRACE_OUTPUT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <zxsampler/object.h>

#define ZXS_TRACE_OUTPUT_PATH_MAX 4096

typedef struct zxs_trace_output {
  char target[ZXS_TRACE_OUTPUT_PATH_MAX];  // what the commit replaces (a link's target file)
  char temp[ZXS_TRACE_OUTPUT_PATH_MAX];    // the temporary file beside it
  FILE* file;                              // open on `temp` for writing (and reading back)
  bool existed;                            // `target` was there: its mode and owner are kept
  mode_t mode;
  uid_t uid;
  gid_t gid;
} zxs_trace_output_t;

// Checks `path` (the rules above) and creates the temporary file beside it. On failure nothing
// is created, `error` says why ("cannot write the profile to PATH: ...") and the status is
// ZX_ERR_INVALID_ARGS (empty path), ZX_ERR_WRONG_TYPE (not a regular file), ZX_ERR_IO (the
// folder takes no file: errno's words in `error`) or ZX_ERR_NO_MEMORY.
zx_status_t zxs_trace_output_open(const char* path, zxs_trace_output_t* out, char* error,
                                  size_t error_size);

// Closes the temporary file and renames it over the target. On failure (a write error, the
// target turned into something else meanwhile) the temporary file is removed, the target left
// as it was, and `error` says why.
zx_status_t zxs_trace_output_commit(zxs_trace_output_t* out, char* error, size_t error_size);

// Closes and removes the temporary file; the target stays as it was.
void zxs_trace_output_abandon(zxs_trace_output_t* out);

#endif  // ZXSAMPLER_SRC_TRACE_TRACE_OUTPUT_H_
