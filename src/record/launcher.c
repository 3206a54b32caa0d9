// The launcher of the recording commands (see launcher.h).
#define _GNU_SOURCE
#include "launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

// The child: waits for go, execs, or sends errno down `status` and exits as a shell would.
static void run_child(char** argv, int go, int status) {
  char byte;
  if (read(go, &byte, 1) != 1) _exit(127);  // the recorder gave up
  execvp(argv[0], argv);
  const int e = record_exec_errno(argv[0], errno);
  ssize_t ignored = write(status, &e, sizeof(e));
  (void)ignored;
  _exit(record_exec_status(e));
}

bool record_launch_start(char** argv, record_launch_t* out) {
  int go[2], status[2];
  if (pipe2(go, O_CLOEXEC) != 0) return false;
  if (pipe2(status, O_CLOEXEC) != 0) {
    const int e = errno;
    close(go[0]);
    close(go[1]);
    errno = e;
    return false;
  }
  const pid_t child = fork();
  if (child == 0) {
    close(go[1]);
    close(status[0]);
    run_child(argv, go[0], status[1]);
  }
  const int e = errno;
  close(go[0]);
  close(status[1]);
  if (child < 0) {
    close(go[1]);
    close(status[0]);
    errno = e;
    return false;
  }
  *out = (record_launch_t){.pid = child, .go = go[1], .status = status[0]};
  return true;
}

int record_launch_release(record_launch_t* l, int* wstatus) {
  int e = 0;
  if (write(l->go, "g", 1) != 1) e = errno;
  close(l->go);
  l->go = -1;
  const ssize_t n = read(l->status, &e, sizeof(e));  // EOF: exec succeeded (closed on exec)
  close(l->status);
  l->status = -1;
  if (n <= 0) return 0;
  record_launch_wait(l->pid, wstatus);
  return e;
}

void record_launch_abandon(record_launch_t* l) {
  close(l->go);
  close(l->status);
  l->go = l->status = -1;
  int ignored;
  record_launch_wait(l->pid, &ignored);
}

bool record_launch_wait(pid_t pid, int* wstatus) {
  while (waitpid(pid, wstatus, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return true;
}
