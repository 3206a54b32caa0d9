// The one launcher of the recording commands: PROGRAM started held before its exec, so that
// whatever watches it (perf events, the performance monitor) exists before its first
// instruction; then released, and waited for. A program that cannot be run ends as a shell's
// would: 127 when it is not found, 126 when it cannot be run.
#ifndef ZXSAMPLER_SRC_RECORD_LAUNCHER_H_
#define ZXSAMPLER_SRC_RECORD_LAUNCHER_H_

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct record_launch {
  pid_t pid;   // the child, held before its exec
  int go;      // written (or closed) to let it go
  int status;  // the child's errno when its exec failed; EOF once the exec closed it
} record_launch_t;

// Forks a child that waits for record_launch_release() and then execvp(argv[0], argv); if the
// go pipe closes first it exits 127 without running anything. False with errno (pipe, fork).
bool record_launch_start(char** argv, record_launch_t* out);

// Lets the child exec. Returns 0 when the exec succeeded; else the errno why not (as
// record_exec_errno() reads it), the child reaped into *wstatus (its status: 127 or 126).
int record_launch_release(record_launch_t* launch, int* wstatus);

// Gives up on a child not yet released: it exits without running PROGRAM, and is reaped.
void record_launch_abandon(record_launch_t* launch);

// Waits for `pid` to exit (EINTR retried) into *wstatus. False (errno) when it cannot be waited
// for.
bool record_launch_wait(pid_t pid, int* wstatus);

// What a failed execvp(program) means, as a shell reads it: execvp says EACCES when some folder
// of PATH could not be searched even though the program is in none of them, where a shell says
// "command not found" (ENOENT, status 127); a folder it cannot search holds nothing it can run.
// Async-signal-safe but for getenv (which takes no lock in glibc): for a child between fork and
// exec.
static inline int record_exec_errno(const char* program, int e) {
  if (e != EACCES || strchr(program, '/') != NULL) return e;
  const char* path = getenv("PATH");
  if (path == NULL) path = "/bin:/usr/bin";
  const size_t length = strlen(program);
  for (const char* dir = path;; dir++) {
    const char* end = strchr(dir, ':');
    const size_t dir_length = end != NULL ? (size_t)(end - dir) : strlen(dir);
    char file[4096];
    if (dir_length + 1 + length < sizeof(file)) {
      memcpy(file, dir, dir_length);
      file[dir_length] = '/';
      memcpy(file + dir_length + 1, program, length + 1);
      struct stat st;
      if (stat(dir_length == 0 ? program : file, &st) == 0) return e;  // there, not runnable
    }
    if (end == NULL) return ENOENT;
    dir = end;
  }
}

// The exit status a shell gives a program it could not run: 127 not found, 126 not runnable.
static inline int record_exec_status(int e) { return e == ENOENT ? 127 : 126; }

#endif  // ZXSAMPLER_SRC_RECORD_LAUNCHER_H_
