// zxsampler record: its options, over the recording engine's run (src/record/record_run.h),
// which samples a program's process tree (or a running process) from outside with perf events.
// We exit with the program's exit status, or die of the signal that killed it, after writing
// the profile.
#define _GNU_SOURCE
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/profiler.h>

#include "cli.h"
#include "record_run.h"

#define DEFAULT_PERIOD_US 1000
// Ring per CPU: room for about a quarter second of samples at 2000/s with the copy in use, so a
// recorder kept off the CPU that long by the program loses nothing (smaller where locked memory
// is limited: the ring halves until it maps).
#define RING_MB_FP 4
#define RING_MB_DWARF 16
// Bytes of user stack copied per sample: deeper stacks are cut there, counted and marked.
// Frame pointers need only the frame records, CFI every spilled register on the way up.
#define STACK_COPY_FP 8192u
#define STACK_COPY_DWARF 32768u
#define STACK_COPY_MAX 65528u

static void usage_record(FILE* out) {
  fprintf(out,
          "usage: zxsampler record [options] -- PROGRAM [ARGS...]\n"
          "       zxsampler record [options] -p PID\n"
          "\n"
          "Samples every thread of PROGRAM and of the processes it starts (fork, exec), while\n"
          "they run on a CPU, from outside with perf events: the program runs unchanged and\n"
          "may end any way it likes (exit, _exit, exec, a signal, SIGKILL). The profile is\n"
          "written when the program exits; zxsampler then exits with the program's status\n"
          "(or dies of the signal that killed it). With -p, samples a running process until\n"
          "it exits, Ctrl-C, or the --duration.\n"
          "\n"
          "options:\n"
          "      --in-process     (first) preload the library into PROGRAM instead: for where\n"
          "                       perf events are refused ('record --in-process --help')\n"
          "  -o, --output FILE    where to write the profile (default zxsampler.fxt)\n"
          "  -f, --format FMT     fxt (default), pprof, folded, svg, markup or top\n"
          "  -F, --frequency HZ   samples per second of a thread's CPU time (default 1000)\n"
          "      --period US      microseconds of CPU time between samples (instead of -F)\n"
          "  -b, --buffer MB      ring buffer per CPU in MiB (default %d with dwarf, %d with fp)\n"
          "  -p, --pid PID        sample this running process instead of starting one\n"
          "  -d, --duration S     with -p: stop after S seconds\n"
          "      --no-inherit     sample the first process only, not its children\n"
          "  -q, --quiet          no summary at the end (losses are still reported)\n"
          "      --unwind HOW     dwarf: unwind user stacks with their CFI (.eh_frame), frame\n"
          "                       pointers where a frame has none (default where built with\n"
          "                       libunwind); fp: frame pointers only, the kernel's walk;\n"
          "                       ZXSAMPLER_UNWIND=fp|dwarf sets the default\n"
          "      --stack-copy N   bytes of user stack copied per sample (default %u with dwarf,\n"
          "                       %u with fp; at most %u); deeper stacks end in [truncated].\n"
          "                       Where the locked-memory limit cuts the rings, the default\n"
          "                       shrinks until a ring holds 256 samples (not below 8192)\n"
          "      --user-only      never sample kernel code (default: kernel too, where the\n"
          "                       host allows it: root, CAP_PERFMON or perf_event_paranoid <= 1)\n"
          "      --no-runtime     do not measure where each thread's time went (RFC-0084; by\n"
          "                       default cpu and queue time, which cost the program nothing)\n"
          "      --runtime-events also time every page fault and kernel-lock contention\n"
          "                       (about 1 us of the program's CPU per fault; locks: root)\n"
          "  -h, --help           this text\n",
          RING_MB_DWARF, RING_MB_FP, STACK_COPY_DWARF, STACK_COPY_FP, STACK_COPY_MAX);
}

typedef struct record_args {
  const char* output;
  zxs_profile_format_t format;
  long long period_us, ring_mb, duration_s, stack_copy;
  pid_t pid;
  bool inherit, kernel, quiet, dwarf, runtime, runtime_events;
  bool stack_copy_given;
  char** program;
} record_args_t;

enum {
  OPT_PERIOD = 256,
  OPT_NO_INHERIT,
  OPT_USER_ONLY,
  OPT_UNWIND,
  OPT_STACK_COPY,
  OPT_NO_RUNTIME,
  OPT_RUNTIME_EVENTS
};

// `how` ("fp" or "dwarf", from `where`) into a->dwarf: -1 when taken, else the exit status.
static int choose_unwind(record_args_t* a, const char* how, const char* where) {
  if (strcmp(how, "fp") == 0) {
    a->dwarf = false;
  } else if (strcmp(how, "dwarf") == 0) {
    if (!record_run_cfi_available()) {
      fprintf(stderr, "%s: %s dwarf: this build has no CFI unwinder (libunwind)\n", ZXSAMPLER_PROG,
              where);
      return 2;
    }
    a->dwarf = true;
  } else {
    fprintf(stderr, "%s: %s takes fp or dwarf, not '%s'\n\n", ZXSAMPLER_PROG, where, how);
    usage_record(stderr);
    return 2;
  }
  return -1;
}

// Takes option `opt` with its argument. Returns -1 when taken, else the status to exit with.
static int take_option(int opt, const char* arg, record_args_t* a) {
  long long n;
  switch (opt) {
    case 'o':
      a->output = arg;
      break;
    case 'f':
      if (!zxs_profile_format_from_name(arg, &a->format)) {
        return cli_fail_usage(usage_record, "unknown format '%s'", arg);
      }
      break;
    case 'F':
      if (!cli_parse_positive(arg, 100000, &n)) {
        return cli_fail_usage(usage_record, "--frequency takes Hz from 1 to 100000, not '%s'", arg);
      }
      a->period_us = 1000000 / n;
      break;
    case OPT_PERIOD:
      if (!cli_parse_positive(arg, 1000000000, &a->period_us) || a->period_us < 10) {
        return cli_fail_usage(usage_record, "--period takes microseconds >= 10, not '%s'", arg);
      }
      break;
    case 'b':
      if (!cli_parse_positive(arg, 1024, &a->ring_mb)) {
        return cli_fail_usage(usage_record, "--buffer takes MiB from 1 to 1024, not '%s'", arg);
      }
      break;
    case 'p':
      if (!cli_parse_positive(arg, INT_MAX, &n)) {
        return cli_fail_usage(usage_record, "--pid takes a process id, not '%s'", arg);
      }
      a->pid = (pid_t)n;
      break;
    case 'd':
      if (!cli_parse_positive(arg, 100000000, &a->duration_s)) {
        return cli_fail_usage(usage_record, "--duration takes whole seconds, not '%s'", arg);
      }
      break;
    case OPT_NO_INHERIT:
      a->inherit = false;
      break;
    case OPT_USER_ONLY:
      a->kernel = false;
      break;
    case OPT_RUNTIME_EVENTS:
      a->runtime_events = true;
      break;
    case OPT_NO_RUNTIME:
      a->runtime = false;
      break;
    case 'q':
      a->quiet = true;
      break;
    case OPT_UNWIND:
      return choose_unwind(a, arg, "--unwind");
    case OPT_STACK_COPY:
      if (!cli_parse_positive(arg, STACK_COPY_MAX, &a->stack_copy) || a->stack_copy < 512) {
        return cli_fail_usage(usage_record, "--stack-copy takes bytes from 512 to 65528, not '%s'",
                              arg);
      }
      a->stack_copy &= ~7ll;  // the kernel wants a multiple of 8
      a->stack_copy_given = true;
      break;
    case 'h':
      usage_record(stdout);
      return 0;
    default:
      usage_record(stderr);
      return 2;
  }
  return -1;
}

// The checks between options and the defaults that depend on them, once all are taken.
// Returns -1 when the arguments hold together, else the status to exit with.
static int finish_args(int argc, char** argv, record_args_t* a) {
  if (a->pid != 0 && optind < argc) {
    return cli_fail_usage(usage_record, "%s", "give a program or -p PID, not both");
  }
  if (a->pid == 0 && optind >= argc) return cli_fail_usage(usage_record, "%s", "no program to run");
  if (a->pid == 0 && a->duration_s != 0) {
    return cli_fail_usage(usage_record, "%s", "--duration goes with -p");
  }
  a->program = a->pid == 0 ? &argv[optind] : NULL;
  if (a->stack_copy == 0) a->stack_copy = a->dwarf ? STACK_COPY_DWARF : STACK_COPY_FP;
  if (a->ring_mb == 0) a->ring_mb = a->dwarf ? RING_MB_DWARF : RING_MB_FP;
  return -1;
}

// Returns -1 when parsed, else the status to exit with.
static int parse_args(int argc, char** argv, record_args_t* a) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"format", required_argument, NULL, 'f'},
                                          {"frequency", required_argument, NULL, 'F'},
                                          {"period", required_argument, NULL, OPT_PERIOD},
                                          {"buffer", required_argument, NULL, 'b'},
                                          {"pid", required_argument, NULL, 'p'},
                                          {"duration", required_argument, NULL, 'd'},
                                          {"no-inherit", no_argument, NULL, OPT_NO_INHERIT},
                                          {"user-only", no_argument, NULL, OPT_USER_ONLY},
                                          {"no-runtime", no_argument, NULL, OPT_NO_RUNTIME},
                                          {"runtime-events", no_argument, NULL, OPT_RUNTIME_EVENTS},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"unwind", required_argument, NULL, OPT_UNWIND},
                                          {"stack-copy", required_argument, NULL, OPT_STACK_COPY},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  *a = (record_args_t){.output = "zxsampler.fxt",
                       .format = ZXS_FORMAT_FXT,
                       .period_us = DEFAULT_PERIOD_US,
                       .inherit = true,
                       .kernel = true,
                       .runtime = true,
                       .dwarf = record_run_cfi_available()};
  // ZXSAMPLER_UNWIND=fp|dwarf sets the default; --unwind overrides it.
  const char* env = getenv("ZXSAMPLER_UNWIND");
  if (env != NULL && env[0] != '\0') {
    const int status = choose_unwind(a, env, "ZXSAMPLER_UNWIND");
    if (status != -1) return status;
  }
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "+o:f:F:b:p:d:qh", options, NULL)) != -1) {
    const int status = take_option(opt, optarg, a);
    if (status != -1) return status;
  }
  return finish_args(argc, argv, a);
}

int zxsampler_record_main(int argc, char** argv) {
  record_args_t a;
  const int status = parse_args(argc, argv, &a);
  if (status >= 0) return status;
  const record_run_options_t options = {.output = a.output,
                                        .format = a.format,
                                        .program = a.program,
                                        .pid = a.pid,
                                        .duration_s = (uint64_t)a.duration_s,
                                        .period_ns = (uint64_t)a.period_us * 1000u,
                                        .ring_bytes = (size_t)a.ring_mb << 20,
                                        .stack_copy = (uint32_t)a.stack_copy,
                                        .stack_copy_given = a.stack_copy_given,
                                        .inherit = a.inherit,
                                        .kernel = a.kernel,
                                        .quiet = a.quiet,
                                        .dwarf = a.dwarf,
                                        .runtime = a.runtime,
                                        .runtime_events = a.runtime_events};
  int wstatus = 0;
  const int code = record_run(&options, &wstatus);
  return code == RECORD_RUN_EXIT_LIKE_PROGRAM ? cli_exit_like(wstatus) : code;
}
