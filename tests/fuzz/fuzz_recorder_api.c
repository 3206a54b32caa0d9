// Fuzzes the flight recorder's API (recorder.h) with sequences of calls read from the input:
// start (options from the bytes, some invalid), attach, stop, alerts, deadlines begun and ended
// in any order, with NULL and nonsensical budgets. Every call must answer one of its documented
// statuses (a model tracks which), nothing may crash or leak, and a deadline that is not open
// must never raise an alert. Each input ends with the recorder stopped and its files removed.
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zxsampler/recorder.h>

#include "fuzz_fxt_check.h"

#define DEADLINES 3

static char g_dir[64];

static void remove_files(void) {
  DIR* dir = opendir(g_dir);
  for (struct dirent* e; dir != NULL && (e = readdir(dir)) != NULL;) {
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", g_dir, e->d_name);
    if (e->d_name[0] != '.') remove(path);
  }
  if (dir != NULL) closedir(dir);
}

typedef struct {
  const uint8_t* data;
  size_t size;
} input_t;

static uint8_t next_u8(input_t* in) {
  if (in->size == 0) return 0;
  in->size--;
  return *in->data++;
}

static int64_t next_i64(input_t* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)next_u8(in) << (8 * i);
  return (int64_t)v;
}

// A duration: mostly small, sometimes 0, negative or extreme.
static int64_t next_duration(input_t* in) {
  switch (next_u8(in) % 6) {
    case 0:
      return 0;
    case 1:
      return -(int64_t)(next_u8(in) + 1) * 1000;
    case 2:
      return next_i64(in);
    case 3:
      return 1;
    default:
      return (int64_t)(next_u8(in) + 1) * 100000;  // 0.1 to 25.6 ms
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (g_dir[0] == '\0') {
    snprintf(g_dir, sizeof(g_dir), "/tmp/zxs-fuzz-recorder.XXXXXX");
    FUZZ_CHECK(mkdtemp(g_dir) != NULL);
  }
  input_t in = {data, size};
  zxs_deadline_t deadlines[DEADLINES];
  memset(deadlines, 0, sizeof(deadlines));
  bool open[DEADLINES] = {false};
  bool running = false;
  for (int ops = 0; in.size > 0 && ops < 64; ops++) {
    const uint8_t op = next_u8(&in);
    const uint8_t which = next_u8(&in);
    zxs_deadline_t* d = which % (DEADLINES + 1) == DEADLINES ? NULL : &deadlines[which % DEADLINES];
    bool* is_open = d == NULL ? NULL : &open[which % DEADLINES];
    switch (op % 7) {
      case 0: {
        zxs_recorder_options_t o;
        memset(&o, 0, sizeof(o));
        o.period = (next_u8(&in) % 4) * 250000;  // 0 (default), 0.25 ms (below the minimum?), ...
        o.window = next_u8(&in) % 8 == 0 ? -1 : (int64_t)(next_u8(&in) % 50) * 1000000;
        o.alert_interval = next_u8(&in) % 8 == 0 ? -1 : (int64_t)(next_u8(&in) % 4);
        o.output_dir = next_u8(&in) % 8 == 0 ? "/nonexistent/zxs-fuzz" : g_dir;
        o.dont_attach_caller = next_u8(&in) & 1;
        if (next_u8(&in) % 16 == 0) o.reserved[next_u8(&in) % 6] = 1;
        const zx_status_t s = zxs_recorder_start(next_u8(&in) % 16 == 0 ? NULL : &o);
        if (running) FUZZ_CHECK(s == ZX_ERR_BAD_STATE || s == ZX_ERR_INVALID_ARGS);
        if (s == ZX_OK) running = true;
        break;
      }
      case 1: {
        const zx_status_t s = zxs_recorder_attach_current_thread();
        if (!running) FUZZ_CHECK(s == ZX_ERR_BAD_STATE);
        break;
      }
      case 2: {
        const zx_status_t s = zxs_recorder_stop();
        FUZZ_CHECK(running ? (s == ZX_OK || s == ZX_ERR_IO) : s == ZX_ERR_BAD_STATE);
        running = false;
        break;
      }
      case 3: {
        char name[8];
        for (size_t i = 0; i < sizeof(name); i++) name[i] = (char)next_u8(&in);
        name[sizeof(name) - 1] = '\0';
        const zx_status_t s = zxs_trace_alert(which & 1 ? NULL : name);
        FUZZ_CHECK(running ? (s == ZX_OK || s == ZX_ERR_SHOULD_WAIT || s == ZX_ERR_NO_RESOURCES)
                           : s == ZX_ERR_BAD_STATE);
        break;
      }
      case 4: {
        const int64_t budget = next_duration(&in);
        const zx_status_t s = zxs_deadline_begin(d, budget);
        FUZZ_CHECK(s == (d == NULL || budget <= 0 ? ZX_ERR_INVALID_ARGS : ZX_OK));
        if (is_open != NULL) *is_open = s == ZX_OK;
        break;
      }
      case 5: {
        const zx_status_t s = zxs_deadline_end(d);
        if (d == NULL) {
          FUZZ_CHECK(s == ZX_ERR_INVALID_ARGS);
        } else if (!*is_open) {
          FUZZ_CHECK(s == ZX_ERR_BAD_STATE);
        } else {
          FUZZ_CHECK(s == ZX_OK || s == ZX_ERR_TIMED_OUT);
        }
        if (is_open != NULL) *is_open = false;
        break;
      }
      default:  // let some time pass (a period goes late)
        usleep((useconds_t)(which % 4) * 500);
        break;
    }
  }
  if (running) {
    const zx_status_t s = zxs_recorder_stop();
    FUZZ_CHECK(s == ZX_OK || s == ZX_ERR_IO);
  }
  remove_files();
  return 0;
}
