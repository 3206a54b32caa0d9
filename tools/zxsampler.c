// zxsampler: profile an unmodified program or a running process, and turn profiles into
// reports.
//
//   zxsampler record [options] -- PROGRAM [ARGS...]
//   zxsampler record [options] -p PID
//   zxsampler report [options] FILE
//   zxsampler perfmon COMMAND [options] [-- PROGRAM [ARGS...]]   (zxsampler_perfmon.c)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zxsampler/profiler.h>
#include <zxsampler/version.h>

#include "cli.h"
#include "zxs_config.h"

// `record` and `perfmon` are Linux's (perf events); a Fuchsia build has `report` alone.
#ifndef ZXSAMPLER_WITH_RECORD
#define ZXSAMPLER_WITH_RECORD 1
#endif
// `record` with the library preloaded into the program: macOS's `record`, Linux's
// `record --in-process` (record_inprocess.c).
#ifndef ZXSAMPLER_WITH_INPROCESS_RECORD
#define ZXSAMPLER_WITH_INPROCESS_RECORD 1
#endif
#if ZXSAMPLER_WITH_RECORD
#include "zxsampler_perfmon.h"
#endif

static void usage_main(FILE* out) {
  fprintf(out,
          "usage: zxsampler <command> [options]\n"
          "\n"
          "commands:\n"
#if ZXSAMPLER_WITH_RECORD
          "  record   run a program (or attach to a process) and sample its threads' stacks\n"
#elif ZXSAMPLER_WITH_INPROCESS_RECORD
          "  record   run a program with the library preloaded and sample its threads' stacks\n"
#endif
          "  report   print or convert a profile\n"
#if ZXSAMPLER_WITH_RECORD
          "  perfmon  count or sample CPU events on every CPU (fuchsia.perfmon.cpu)\n"
#endif
          "\n"
          "'zxsampler <command> --help' describes each command; 'zxsampler --version' prints\n"
          "the version.\n");
}

static void usage_report(FILE* out) {
  fprintf(out,
          "usage: zxsampler report [options] FILE\n"
          "\n"
          "Reads a profile written by 'zxsampler record' or the library (FXT) and prints the\n"
          "top functions, or converts it. Functions are named from the binaries on this\n"
          "machine, matched by build ID.\n"
          "\n"
          "options:\n"
          "  -f, --format FMT     top (default), pprof, folded, svg, markup or fxt\n"
          "  -o, --output FILE    where to write (default: standard output)\n"
          "      --pid PID        only the samples of process PID\n"
          "      --comm NAME      only the samples of processes named NAME\n"
          "      --addresses      top: code without a name one row per address, not per\n"
          "                       module\n"
          "      --no-process-frame\n"
          "                       folded, svg: no process name at the root of each stack\n"
          "  -h, --help           this text\n");
}

static int report(int argc, char** argv) {
  enum { OPT_PID = 256, OPT_COMM, OPT_ADDRESSES, OPT_NO_PROCESS_FRAME };
  static const struct option options[] = {
      {"output", required_argument, NULL, 'o'},
      {"format", required_argument, NULL, 'f'},
      {"pid", required_argument, NULL, OPT_PID},
      {"comm", required_argument, NULL, OPT_COMM},
      {"addresses", no_argument, NULL, OPT_ADDRESSES},
      {"no-process-frame", no_argument, NULL, OPT_NO_PROCESS_FRAME},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char* output = "-";
  zxs_profile_selection_t selection = {0};
  long long pid;
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
          return cli_fail_usage(usage_report, "unknown format '%s'", optarg);
        }
        break;
      case OPT_PID:
        if (!cli_parse_positive(optarg, UINT32_MAX, &pid)) {
          return cli_fail_usage(usage_report, "--pid takes a process id, not '%s'", optarg);
        }
        selection.pid = (uint64_t)pid;
        break;
      case OPT_COMM:
        selection.name = optarg;
        break;
      case OPT_ADDRESSES:
        selection.addresses = true;
        break;
      case OPT_NO_PROCESS_FRAME:
        selection.no_process_frame = true;
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
    return cli_fail_usage(usage_report, "%s",
                          optind >= argc ? "no profile given" : "one profile only");
  }
  if (format == ZXS_FORMAT_PPROF && strcmp(output, "-") == 0 && isatty(STDOUT_FILENO)) {
    return cli_fail_usage(usage_report, "%s", "pprof is binary: give --output FILE");
  }
  // A FIFO or a character device (a reader, /dev/null) is written into as a stream, never
  // replaced; a file is written beside itself and renamed into place (the library's rule).
  struct stat st;
  if (strcmp(output, "-") != 0 && stat(output, &st) == 0 &&
      (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
    const int fd = open(output, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) {
      fprintf(stderr, "%s: cannot write %s: %s\n", ZXSAMPLER_PROG, output, strerror(errno));
      return 1;
    }
    close(fd);
    output = "-";
  }
  char error[1024];
  zx_status_t status =
      zxs_profile_convert_selected(argv[optind], output, format, &selection, error, sizeof(error));
  if (status != ZX_OK) {
    fprintf(stderr, "%s: %s\n", ZXSAMPLER_PROG, error);
    // --pid or --comm naming no process of the profile: a usage error, without the usage text
    // (the message lists the processes to choose from).
    return status == ZX_ERR_NOT_FOUND ? 2 : 1;
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
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    // The tool's version, and the library's where a different one was loaded.
    printf("zxsampler %s\n", ZXS_VERSION);
    if (strcmp(zxs_version_string(), ZXS_VERSION) != 0) {
      printf("libzxsampler %s (loaded)\n", zxs_version_string());
    }
    return 0;
  }
  // getopt names the program by argv[0] in its messages.
#if ZXSAMPLER_WITH_INPROCESS_RECORD
  if (strcmp(argv[1], "record") == 0 &&
      (!ZXSAMPLER_WITH_RECORD || (argc > 2 && strcmp(argv[2], "--in-process") == 0))) {
    const int skip = ZXSAMPLER_WITH_RECORD ? 2 : 1;  // "record" and "--in-process"
    argv[skip] = "zxsampler record";
    return zxsampler_record_inprocess_main(argc - skip, argv + skip);
  }
#endif
#if ZXSAMPLER_WITH_RECORD
  if (strcmp(argv[1], "record") == 0) {
    argv[1] = "zxsampler record";
    return zxsampler_record_main(argc - 1, argv + 1);
  }
  if (strcmp(argv[1], "perfmon") == 0) {
    argv[1] = "zxsampler perfmon";
    return zxsampler_perfmon_main(argc - 1, argv + 1);
  }
#endif
  if (strcmp(argv[1], "report") == 0) {
    argv[1] = "zxsampler report";
    return report(argc - 1, argv + 1);
  }
  fprintf(stderr, "%s: unknown command '%s'\n\n", ZXSAMPLER_PROG, argv[1]);
  usage_main(stderr);
  return 2;
}
