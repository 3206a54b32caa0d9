// Small helpers the zxsampler commands share (tools only).
#ifndef ZXSAMPLER_TOOLS_CLI_H_
#define ZXSAMPLER_TOOLS_CLI_H_

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

// The name messages start with.
#define ZXSAMPLER_PROG "zxsampler"

// Prints "PROG: <message>" and the command's usage to stderr; returns the usage status 2.
static inline int cli_fail_usage_as(const char* prog, void (*usage)(FILE*), const char* format,
                                    const char* arg) {
  fprintf(stderr, "%s: ", prog);
  fprintf(stderr, format, arg);
  fprintf(stderr, "\n\n");
  usage(stderr);
  return 2;
}

// The same, as "zxsampler: <message>".
static inline int cli_fail_usage(void (*usage)(FILE*), const char* format, const char* arg) {
  return cli_fail_usage_as(ZXSAMPLER_PROG, usage, format, arg);
}

// A decimal integer in [1, max].
static inline bool cli_parse_positive(const char* s, long long max, long long* out) {
  char* end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v <= 0 || v > max) return false;
  *out = v;
  return true;
}

// Exits as a child did: its status, or its death by the same signal (without a core dump of
// ours). Returns only for a signal that does not kill by default.
static inline int cli_exit_like(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  int sig = WTERMSIG(wstatus);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  raise(sig);
  return 128 + sig;
}

// `zxsampler record` (perf events, record_command.c).
int zxsampler_record_main(int argc, char** argv);
// `zxsampler record` in process: the library preloaded into the program (record_inprocess.c).
int zxsampler_record_inprocess_main(int argc, char** argv);

#endif  // ZXSAMPLER_TOOLS_CLI_H_
