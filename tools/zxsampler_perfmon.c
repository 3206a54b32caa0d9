// zxsampler perfmon: the CPU performance monitor (<zxsampler/perfmon.h>) from the command line.
//
//   zxsampler perfmon stat [-e EVENTS] [-x SEP] [-o FILE] [-- PROGRAM [ARGS...]]
//   zxsampler perfmon record [-e EVENT@RATE] [-o FILE] [-f FORMAT] [-b MB] [-- PROGRAM [ARGS...]]
//
// The usage and the events' parsing; the runs are the recording engine's
// (src/record/perfmon_run.h): counting on every CPU, every process, while PROGRAM runs, and for
// `record` a trace of PROGRAM's PC samples with its modules.
#define _GNU_SOURCE
#include "zxsampler_perfmon.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zxsampler/perfmon.h>
#include <zxsampler/profiler.h>

#include "cli.h"
#include "perfmon_run.h"

#define DEFAULT_STAT_EVENTS "cpu-clock,context-switches,cpu-migrations,page-faults"
#define DEFAULT_RECORD_EVENT "cpu-clock@1000000"

static const char* g_prog = "zxsampler perfmon";

// --- Usage --------------------------------------------------------------------------------------

static void usage_main(FILE* out) {
  fprintf(out,
          "usage: %s <command> [options] [-- PROGRAM [ARGS...]]\n"
          "\n"
          "The CPU performance monitor (fuchsia.perfmon.cpu on Linux perf events): events are\n"
          "counted on every CPU, for every process, while PROGRAM runs (or, without PROGRAM,\n"
          "until Ctrl-C). Needs root, CAP_PERFMON or kernel.perf_event_paranoid <= 0.\n"
          "\n"
          "commands:\n"
          "  stat     count events, per CPU and in total (like perf stat -a)\n"
          "  record   sample PCs every RATE events into a profile 'zxsampler report' reads\n"
          "\n"
          "Events: cpu-clock, task-clock, page-faults (faults), minor-faults, major-faults,\n"
          "context-switches (cs), cpu-migrations (migrations); with a PMU also cycles,\n"
          "instructions, ref-cycles, cache-references, cache-misses, branches, branch-misses;\n"
          "or Fuchsia's names (misc:page_faults, arch:instructions_retired, fixed:...).\n"
          "Append :u or :k to count only in user or kernel mode (an event is counted once per\n"
          "run, in one mode).\n",
          g_prog);
}

static void usage_stat(FILE* out) {
  fprintf(out,
          "usage: %s stat [options] [-- PROGRAM [ARGS...]]\n"
          "\n"
          "Counts events on every CPU while PROGRAM runs, or until SIGINT/SIGTERM/SIGHUP, and\n"
          "prints the counts per CPU and in total.\n"
          "\n"
          "options:\n"
          "  -e, --events LIST        comma-separated events (default %s)\n"
          "  -x, --field-separator S  machine-readable: one line per event and CPU,\n"
          "                           CPU S COUNT S EVENT (CPU is CPUn or total)\n"
          "  -o, --output FILE        write the counts there (default: standard error)\n"
          "  -h, --help               this text\n",
          g_prog, DEFAULT_STAT_EVENTS);
}

static void usage_record(FILE* out) {
  fprintf(out,
          "usage: %s record [options] [-- PROGRAM [ARGS...]]\n"
          "\n"
          "Samples the PC on every CPU each RATE occurrences of EVENT and writes the samples of\n"
          "PROGRAM's process (of every process without PROGRAM, then unsymbolized) as a\n"
          "profile: 'zxsampler report FILE' prints or converts it.\n"
          "\n"
          "options:\n"
          "  -e, --event EVENT@RATE   what to sample (default %s: every ms of CPU\n"
          "                           time); more, comma-separated; an event without @RATE\n"
          "                           is counted\n"
          "  -o, --output FILE        where to write the profile (default zxsampler-perfmon.fxt)\n"
          "  -f, --format FMT         fxt (default), pprof, folded, svg, markup or top\n"
          "  -b, --buffer MB          buffer per CPU in MiB (default 16)\n"
          "  -h, --help               this text\n",
          g_prog, DEFAULT_RECORD_EVENT);
}

static int fail_usage(void (*usage)(FILE*), const char* format, const char* arg) {
  return cli_fail_usage_as(g_prog, usage, format, arg);
}

// --- Events -------------------------------------------------------------------------------------

// "NAME[:u|:k|:uk][@RATE]" -> an event. False with a message in err.
static bool parse_event(const char* item, bool allow_rate, perfmon_event_t* out, char* err,
                        size_t err_size) {
  memset(out, 0, sizeof(*out));
  char name[96];
  const char* at = strchr(item, '@');
  const size_t len = at != NULL ? (size_t)(at - item) : strlen(item);
  if (len == 0 || len >= sizeof(name)) {
    snprintf(err, err_size, "bad event '%s'", item);
    return false;
  }
  memcpy(name, item, len);
  name[len] = '\0';
  snprintf(out->text, sizeof(out->text), "%s", name);
  if (at != NULL) {
    if (!allow_rate) {
      snprintf(err, err_size, "'%s': stat counts; sample with 'record'", item);
      return false;
    }
    char* end;
    errno = 0;
    unsigned long long rate = strtoull(at + 1, &end, 10);
    if (errno != 0 || end == at + 1 || *end != '\0' || rate == 0 || rate > UINT32_MAX) {
      snprintf(err, err_size, "'%s': RATE must be a count from 1 to %u", item, UINT32_MAX);
      return false;
    }
    out->rate = (uint32_t)rate;
  }
  out->flags = PERFMON_OS_USER;
  if (zxs_perfmon_event_id(name, &out->id) != ZX_OK) {
    // A modifier after the last ':' ("page-faults:u", "misc:page_faults:k").
    char* colon = strrchr(name, ':');
    bool user = false, kernel = false, ok = colon != NULL && colon[1] != '\0';
    for (const char* m = colon != NULL ? colon + 1 : ""; ok && *m != '\0'; m++) {
      user |= *m == 'u';
      kernel |= *m == 'k';
      ok = *m == 'u' || *m == 'k';
    }
    if (ok) *colon = '\0';
    if (!ok || zxs_perfmon_event_id(name, &out->id) != ZX_OK) {
      snprintf(err, err_size, "unknown event '%s'", out->text);
      return false;
    }
    out->flags = (user ? ZXS_PERFMON_EVENT_FLAG_COLLECT_USER : 0) |
                 (kernel ? ZXS_PERFMON_EVENT_FLAG_COLLECT_OS : 0);
  }
  if (out->rate > 0) out->flags |= ZXS_PERFMON_EVENT_FLAG_COLLECT_PC;
  return true;
}

// An event as the user wrote it, with its @RATE.
static void event_display(const perfmon_event_t* ev, char* out, size_t size) {
  if (ev->rate > 0) {
    snprintf(out, size, "%s@%" PRIu32, ev->text, ev->rate);
  } else {
    snprintf(out, size, "%s", ev->text);
  }
}

// Two items of one list that name the same event. The controller takes each event once per run
// (fuchsia.perfmon.cpu's rule: its records name an event by id, not by mode or rate), so two
// modes of one event cannot be counted side by side: say so, and what to do instead.
static void same_event_error(const perfmon_event_t* first, const perfmon_event_t* again, char* err,
                             size_t err_size) {
  char a[112], b[112];
  event_display(first, a, sizeof(a));
  event_display(again, b, sizeof(b));
  const char* name = zxs_perfmon_event_name(again->id);
  if (name == NULL) name = "?";
  if (strcasecmp(a, b) == 0) {
    snprintf(err, err_size, "'%s' given twice", b);
  } else if ((first->flags & PERFMON_OS_USER) != (again->flags & PERFMON_OS_USER)) {
    // The event without its modifier: both modes.
    char both[96];
    snprintf(both, sizeof(both), "%s",
             (first->flags & PERFMON_OS_USER) == PERFMON_OS_USER ? first->text : again->text);
    char* colon = strrchr(both, ':');
    if ((first->flags & PERFMON_OS_USER) != PERFMON_OS_USER &&
        (again->flags & PERFMON_OS_USER) != PERFMON_OS_USER && colon != NULL) {
      *colon = '\0';
    }
    snprintf(err, err_size,
             "'%s' and '%s' are one event (%s) in different modes: the performance monitor "
             "counts an event once per run, in one mode; count '%s' for both modes, or one mode "
             "per run",
             a, b, name, both);
  } else {
    snprintf(err, err_size,
             "'%s' and '%s' are one event (%s): the performance monitor takes an event once "
             "per run",
             a, b, name);
  }
}

static bool parse_events(const char* list, bool allow_rate, perfmon_events_t* out, char* err,
                         size_t err_size) {
  char* copy = strdup(list);
  if (copy == NULL) {
    snprintf(err, err_size, "out of memory");
    return false;
  }
  bool ok = true;
  char* save = NULL;
  for (char* item = strtok_r(copy, ",", &save); ok && item != NULL;
       item = strtok_r(NULL, ",", &save)) {
    if (out->count == ZXS_PERFMON_MAX_NUM_EVENTS) {
      snprintf(err, err_size, "at most %d events", ZXS_PERFMON_MAX_NUM_EVENTS);
      ok = false;
      break;
    }
    ok = parse_event(item, allow_rate, &out->ev[out->count], err, err_size);
    for (uint32_t i = 0; ok && i < out->count; i++) {
      if (out->ev[i].id == out->ev[out->count].id) {
        same_event_error(&out->ev[i], &out->ev[out->count], err, err_size);
        ok = false;
      }
    }
    if (ok) out->count++;
  }
  free(copy);
  if (ok && out->count == 0) {
    snprintf(err, err_size, "no event given");
    ok = false;
  }
  return ok;
}

// --- Commands ------------------------------------------------------------------------------------

static int stat_command(int argc, char** argv) {
  static const struct option options[] = {{"events", required_argument, NULL, 'e'},
                                          {"field-separator", required_argument, NULL, 'x'},
                                          {"output", required_argument, NULL, 'o'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char* list = DEFAULT_STAT_EVENTS;
  const char* sep = NULL;
  const char* output = NULL;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "+e:x:o:h", options, NULL)) != -1) {
    switch (opt) {
      case 'e':
        list = optarg;
        break;
      case 'x':
        sep = optarg;
        break;
      case 'o':
        output = optarg;
        break;
      case 'h':
        usage_stat(stdout);
        return 0;
      default:
        usage_stat(stderr);
        return 2;
    }
  }
  perfmon_events_t events;
  memset(&events, 0, sizeof(events));
  char err[512];
  if (!parse_events(list, false, &events, err, sizeof(err))) {
    return fail_usage(usage_stat, "%s", err);
  }
  const perfmon_stat_options_t run = {.prog = g_prog,
                                      .events = &events,
                                      .separator = sep,
                                      .output = output,
                                      .program = optind < argc ? &argv[optind] : NULL};
  return perfmon_stat_run(&run);
}

static int record_command(int argc, char** argv) {
  static const struct option options[] = {{"event", required_argument, NULL, 'e'},
                                          {"events", required_argument, NULL, 'e'},
                                          {"output", required_argument, NULL, 'o'},
                                          {"format", required_argument, NULL, 'f'},
                                          {"buffer", required_argument, NULL, 'b'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char* list = DEFAULT_RECORD_EVENT;
  const char* output = "zxsampler-perfmon.fxt";
  zxs_profile_format_t format = ZXS_FORMAT_FXT;
  long long buffer_mb = 16;
  int opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "+e:o:f:b:h", options, NULL)) != -1) {
    switch (opt) {
      case 'e':
        list = optarg;
        break;
      case 'o':
        output = optarg;
        break;
      case 'f':
        if (!zxs_profile_format_from_name(optarg, &format)) {
          return fail_usage(usage_record, "unknown format '%s'", optarg);
        }
        break;
      case 'b':
        if (!cli_parse_positive(optarg, 256, &buffer_mb)) {
          return fail_usage(usage_record, "--buffer takes MiB from 1 to 256, not '%s'", optarg);
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
  perfmon_events_t events;
  memset(&events, 0, sizeof(events));
  char err[512];
  if (!parse_events(list, true, &events, err, sizeof(err))) {
    return fail_usage(usage_record, "%s", err);
  }
  bool sampling = false;
  for (uint32_t i = 0; i < events.count; i++) sampling |= events.ev[i].rate > 0;
  if (!sampling) return fail_usage(usage_record, "%s", "no EVENT@RATE to sample");
  const perfmon_record_options_t run = {.prog = g_prog,
                                        .events = &events,
                                        .output = output,
                                        .format = format,
                                        .buffer_pages = (uint32_t)(buffer_mb * 256),
                                        .program = optind < argc ? &argv[optind] : NULL};
  return perfmon_record_run(&run);
}

// --- Entry --------------------------------------------------------------------------------------

int zxsampler_perfmon_main(int argc, char** argv) {
  g_prog = argc > 0 && argv[0] != NULL ? argv[0] : "zxsampler perfmon";
  if (argc < 2) {
    usage_main(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage_main(stdout);
    return 0;
  }
  // getopt names the command by argv[0] in its messages.
  char name[128];
  if (strcmp(argv[1], "stat") == 0 || strcmp(argv[1], "record") == 0) {
    snprintf(name, sizeof(name), "%s %s", g_prog, argv[1]);
    const bool stat = strcmp(argv[1], "stat") == 0;
    char* saved = argv[1];
    argv[1] = name;
    int code = stat ? stat_command(argc - 1, argv + 1) : record_command(argc - 1, argv + 1);
    argv[1] = saved;
    return code;
  }
  fprintf(stderr, "%s: unknown command '%s'\n\n", g_prog, argv[1]);
  usage_main(stderr);
  return 2;
}
