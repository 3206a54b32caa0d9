// zxsampler: profile an unmodified program, and turn profiles into reports.
//
//   zxsampler record [options] -- PROGRAM [ARGS...]
//   zxsampler report [options] FILE
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zxsampler/profiler.h>
#include <zxsampler/sampler.h>

#ifndef ZXS_PRELOAD_INSTALL_PATH
#define ZXS_PRELOAD_INSTALL_PATH "/usr/local/lib/zxsampler/libzxsampler-preload.so"
#endif
#define PRELOAD_NAME "libzxsampler-preload.so"

static const char* g_prog = "zxsampler";

static void usage_main(FILE* out) {
  fprintf(out,
          "usage: zxsampler <command> [options]\n"
          "\n"
          "commands:\n"
          "  record   run a program and sample its threads' stacks\n"
          "  report   print or convert a profile\n"
          "\n"
          "'zxsampler <command> --help' describes each command.\n");
}

static void usage_record(FILE* out) {
  fprintf(out,
          "usage: zxsampler record [options] -- PROGRAM [ARGS...]\n"
          "\n"
          "Runs PROGRAM (dynamically linked, unmodified) with libzxsampler preloaded, samples\n"
          "every thread it runs (threads created later too) while they run on a CPU, and\n"
          "writes the profile when the program exits, on SIGINT/SIGTERM/SIGHUP (if the\n"
          "program does not handle them), or on the --signal given.\n"
          "\n"
          "options:\n"
          "  -o, --output FILE    where to write the profile (default zxsampler.fxt)\n"
          "  -f, --format FMT     fxt (default), pprof, folded, svg, markup or top\n"
          "  -p, --period US      microseconds of a thread's CPU time between samples\n"
          "                       (default 1000; minimum 10)\n"
          "  -b, --buffer MB      buffer per CPU in MiB (default 16)\n"
          "  -s, --signal SIG     also write the profile on this signal (number or name,\n"
          "                       e.g. USR2); the program keeps running, unsampled\n"
          "  -h, --help           this text\n");
}

static void usage_report(FILE* out) {
  fprintf(out,
          "usage: zxsampler report [options] FILE\n"
          "\n"
          "Reads a profile written by 'zxsampler record' (FXT) and prints the top functions,\n"
          "or converts it. Functions are named from the binaries on this machine, matched\n"
          "by build ID.\n"
          "\n"
          "options:\n"
          "  -f, --format FMT     top (default), pprof, folded, svg, markup or fxt\n"
          "  -o, --output FILE    where to write (default: standard output)\n"
          "  -h, --help           this text\n");
}

static int fail_usage(void (*usage)(FILE*), const char* format, const char* arg) {
  fprintf(stderr, "%s: ", g_prog);
  fprintf(stderr, format, arg);
  fprintf(stderr, "\n\n");
  usage(stderr);
  return 2;
}

static bool parse_positive(const char* s, long long max, long long* out) {
  char* end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v <= 0 || v > max) return false;
  *out = v;
  return true;
}

static int parse_signal(const char* s) {
  long long n;
  if (parse_positive(s, NSIG - 1, &n)) return (int)n;
  const char* name = strncmp(s, "SIG", 3) == 0 ? s + 3 : s;
  for (int sig = 1; sig < NSIG; sig++) {
    const char* abbrev = sigabbrev_np(sig);
    if (abbrev != NULL && strcmp(abbrev, name) == 0) return sig;
  }
  return 0;
}

// The preload library: next to this executable (build tree), else where it was installed.
static bool find_preload(char* out, size_t size) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    snprintf(out, size, "%s/%s", dirname(self), PRELOAD_NAME);
    if (access(out, R_OK) == 0) return true;
  }
  snprintf(out, size, "%s", ZXS_PRELOAD_INSTALL_PATH);
  return access(out, R_OK) == 0;
}

static int record(int argc, char** argv) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"format", required_argument, NULL, 'f'},
                                          {"period", required_argument, NULL, 'p'},
                                          {"buffer", required_argument, NULL, 'b'},
                                          {"signal", required_argument, NULL, 's'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char* output = "zxsampler.fxt";
  zxs_profile_format_t format = ZXS_FORMAT_FXT;
  long long period_us = 1000, buffer_mb = 16;
  int dump_signal = 0;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "+o:f:p:b:s:h", options, NULL)) != -1) {
    switch (opt) {
      case 'o':
        output = optarg;
        break;
      case 'f':
        if (!zxs_profile_format_from_name(optarg, &format)) {
          return fail_usage(usage_record, "unknown format '%s'", optarg);
        }
        break;
      case 'p':
        if (!parse_positive(optarg, 1000000000, &period_us) || period_us < 10) {
          return fail_usage(usage_record, "--period takes microseconds >= 10, not '%s'", optarg);
        }
        break;
      case 'b':
        if (!parse_positive(optarg, 1024, &buffer_mb)) {
          return fail_usage(usage_record, "--buffer takes MiB from 1 to 1024, not '%s'", optarg);
        }
        break;
      case 's':
        if ((dump_signal = parse_signal(optarg)) == 0) {
          return fail_usage(usage_record, "unknown signal '%s'", optarg);
        }
        break;
      case 'h':
        usage_record(stdout);
        return 0;
      default:
        usage_record(stderr);
        return 2;
    }
  }
  if (optind >= argc) return fail_usage(usage_record, "%s", "no program to run");

  char preload[PATH_MAX];
  if (!find_preload(preload, sizeof(preload))) {
    fprintf(stderr, "%s: cannot find %s (looked next to this program and at %s)\n", g_prog,
            PRELOAD_NAME, ZXS_PRELOAD_INSTALL_PATH);
    return 1;
  }
  // The program writes FXT; other formats are converted from it afterwards.
  char trace[PATH_MAX];
  if (format == ZXS_FORMAT_FXT) {
    snprintf(trace, sizeof(trace), "%s", output);
  } else {
    snprintf(trace, sizeof(trace), "%s.fxt.tmp", output);
  }
  unlink(trace);

  pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "%s: fork: %s\n", g_prog, strerror(errno));
    return 1;
  }
  if (child == 0) {
    char number[32];
    const char* old = getenv("LD_PRELOAD");
    char* value = NULL;
    if (asprintf(&value, "%s%s%s", preload, old != NULL && *old ? ":" : "", old ? old : "") < 0) {
      _exit(127);
    }
    setenv("LD_PRELOAD", value, 1);
    setenv("ZXSAMPLER_OUTPUT", trace, 1);
    snprintf(number, sizeof(number), "%lld", period_us * 1000);
    setenv("ZXSAMPLER_PERIOD_NS", number, 1);
    snprintf(number, sizeof(number), "%lld", buffer_mb << 20);
    setenv("ZXSAMPLER_BUFFER_SIZE", number, 1);
    if (dump_signal != 0) {
      snprintf(number, sizeof(number), "%d", dump_signal);
      setenv("ZXSAMPLER_DUMP_SIGNAL", number, 1);
    }
    execvp(argv[optind], &argv[optind]);
    fprintf(stderr, "%s: cannot run %s: %s\n", g_prog, argv[optind], strerror(errno));
    _exit(127);
  }
  // Ctrl-C goes to the program; we wait for it and then write the result.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  int wstatus;
  while (waitpid(child, &wstatus, 0) < 0 && errno == EINTR) {
  }
  int exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  if (WIFEXITED(wstatus) && exit_code == 127) return exit_code;  // exec failed: said above

  struct stat st;
  if (stat(trace, &st) != 0) {
    fprintf(stderr,
            "%s: the program ended without writing a profile (killed by SIGKILL, or "
            "statically linked?)\n",
            g_prog);
    return exit_code != 0 ? exit_code : 1;
  }
  if (format != ZXS_FORMAT_FXT) {
    char error[256];
    zx_status_t status = zxs_profile_convert(trace, output, format, error, sizeof(error));
    unlink(trace);
    if (status != ZX_OK) {
      fprintf(stderr, "%s: %s\n", g_prog, error);
      return 1;
    }
  }
  fprintf(stderr, "%s: profile written to %s\n", g_prog, output);
  return exit_code;
}

static int report(int argc, char** argv) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"format", required_argument, NULL, 'f'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char* output = "-";
  zxs_profile_format_t format = ZXS_FORMAT_TOP;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "o:f:h", options, NULL)) != -1) {
    switch (opt) {
      case 'o':
        output = optarg;
        break;
      case 'f':
        if (!zxs_profile_format_from_name(optarg, &format)) {
          return fail_usage(usage_report, "unknown format '%s'", optarg);
        }
        break;
      case 'h':
        usage_report(stdout);
        return 0;
      default:
        usage_report(stderr);
        return 2;
    }
  }
  if (optind != argc - 1) {
    return fail_usage(usage_report, "%s", optind >= argc ? "no profile given" : "one profile only");
  }
  if (format == ZXS_FORMAT_PPROF && strcmp(output, "-") == 0 && isatty(STDOUT_FILENO)) {
    return fail_usage(usage_report, "%s", "pprof is binary: give --output FILE");
  }
  char error[256];
  zx_status_t status = zxs_profile_convert(argv[optind], output, format, error, sizeof(error));
  if (status != ZX_OK) {
    fprintf(stderr, "%s: %s\n", g_prog, error);
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    usage_main(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage_main(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("zxsampler (libzxsampler)\n");
    return 0;
  }
  // getopt names the program by argv[0] in its messages.
  if (strcmp(argv[1], "record") == 0) {
    argv[1] = "zxsampler record";
    return record(argc - 1, argv + 1);
  }
  if (strcmp(argv[1], "report") == 0) {
    argv[1] = "zxsampler report";
    return report(argc - 1, argv + 1);
  }
  fprintf(stderr, "%s: unknown command '%s'\n\n", g_prog, argv[1]);
  usage_main(stderr);
  return 2;
}
