// The flight recorder's API on the real backend: statuses, the rate limit, and that an alert's
// trace holds its event, the window's samples and the late period's breakdown.
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// cmocka needs the headers above first.
#include <cmocka.h>
#include <zxsampler/zxsampler.h>

static char g_dir[64];

static int setup(void** state) {
  (void)state;
  snprintf(g_dir, sizeof(g_dir), "/tmp/zxs-recorder-api.XXXXXX");
  return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int teardown(void** state) {
  (void)state;
  DIR* dir = opendir(g_dir);
  for (struct dirent* e; dir != NULL && (e = readdir(dir)) != NULL;) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", g_dir, e->d_name);
    if (e->d_name[0] != '.') remove(path);
  }
  if (dir != NULL) closedir(dir);
  rmdir(g_dir);
  return 0;
}

// The alert traces in the directory whose names start with `prefix`: how many, and the path of
// one of them (if `path`).
static int count_traces(const char* prefix, char* path, size_t size) {
  int n = 0;
  DIR* dir = opendir(g_dir);
  for (struct dirent* e; dir != NULL && (e = readdir(dir)) != NULL;) {
    if (strstr(e->d_name, ".fxt") == NULL || strncmp(e->d_name, prefix, strlen(prefix)) != 0) {
      continue;
    }
    n++;
    if (path != NULL) snprintf(path, size, "%s/%s", g_dir, e->d_name);
  }
  if (dir != NULL) closedir(dir);
  return n;
}

static void spin_ms(int ms) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  const int64_t end = ts.tv_sec * 1000000000ll + ts.tv_nsec + ms * 1000000ll;
  volatile uint64_t x = 1;
  do {
    for (int i = 0; i < 10000; i++) x = x * 6364136223846793005u + (uint64_t)i;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  } while (ts.tv_sec * 1000000000ll + ts.tv_nsec < end);
}

// The calling thread's koid, as the library names it (Linux: its tid; macOS: its thread id).
static zx_koid_t self_koid(void) {
  zx_info_handle_basic_t basic;
  assert_int_equal(zxs_object_get_info(zxs_thread_self(), ZX_INFO_HANDLE_BASIC, &basic,
                                       sizeof(basic), NULL, NULL),
                   ZX_OK);
  return basic.koid;
}

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc(*size);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, *size, f), *size);
  fclose(f);
  return data;
}

static void test_statuses(void** state) {
  (void)state;
  assert_int_equal(zxs_recorder_stop(), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_recorder_attach_current_thread(), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_trace_alert("x"), ZX_ERR_BAD_STATE);
  zxs_recorder_options_t bad = {.output_dir = g_dir};
  bad.reserved[0] = 1;
  assert_int_equal(zxs_recorder_start(&bad), ZX_ERR_INVALID_ARGS);
  bad = (zxs_recorder_options_t){.period = 10, .output_dir = g_dir};  // below the minimum
  assert_int_equal(zxs_recorder_start(&bad), ZX_ERR_INVALID_ARGS);
  bad = (zxs_recorder_options_t){.window = -1, .output_dir = g_dir};
  assert_int_equal(zxs_recorder_start(&bad), ZX_ERR_INVALID_ARGS);

  const zxs_recorder_options_t options = {.output_dir = g_dir, .alert_interval = ZX_SEC(60)};
  assert_int_equal(zxs_recorder_start(&options), ZX_OK);
  assert_int_equal(zxs_recorder_start(&options), ZX_ERR_BAD_STATE);
  // The one session of the process is the recorder's.
  const zxs_profiler_options_t profiler = {0};
  assert_int_equal(zxs_profiler_start(&profiler), ZX_ERR_ALREADY_EXISTS);
  assert_int_equal(zxs_recorder_attach_current_thread(), ZX_OK);  // already attached: fine
  assert_int_equal(zxs_trace_alert("first"), ZX_OK);
  assert_int_equal(zxs_trace_alert("second"), ZX_ERR_SHOULD_WAIT);  // within the minute
  assert_int_equal(zxs_recorder_stop(), ZX_OK);
  assert_int_equal(count_traces("first-", NULL, 0), 1);  // stop wrote it
  assert_int_equal(zxs_trace_alert("late"), ZX_ERR_BAD_STATE);
}

// An on-time period raises nothing; a late one answers ZX_ERR_TIMED_OUT and leaves a trace whose
// alert event carries the breakdown (cpu_time + queue_time within the wall time) and whose
// samples include the late thread's.
static void test_late_period_trace(void** state) {
  (void)state;
  const zxs_recorder_options_t options = {.output_dir = g_dir, .window = ZX_MSEC(500)};
  assert_int_equal(zxs_recorder_start(&options), ZX_OK);
  zxs_deadline_t d = {.name = "period/with spaces"};
  assert_int_equal(zxs_deadline_begin(&d, ZX_SEC(10)), ZX_OK);
  spin_ms(5);
  assert_int_equal(zxs_deadline_end(&d), ZX_OK);
  assert_int_equal(zxs_deadline_begin(&d, ZX_MSEC(5)), ZX_OK);
  spin_ms(40);
  assert_int_equal(zxs_deadline_end(&d), ZX_ERR_TIMED_OUT);
  assert_int_equal(zxs_recorder_stop(), ZX_OK);
  char path[512] = "";
  assert_int_equal(count_traces("period_with_spaces-", path, sizeof(path)), 1);

  size_t size;
  void* data = read_file(path, &size);
  zxs_fxt_reader_t r;
  zxs_fxt_record_t rec;
  assert_int_equal(zxs_fxt_reader_init(&r, data, size), ZX_OK);
  int alerts = 0, samples = 0;
  uint64_t wall = 0, budget = 0, cpu = 0, queue = 0;
  while (zxs_fxt_reader_next(&r, &rec)) {
    if (rec.kind == ZXS_FXT_RECORD_LARGE_BLOB && rec.blob.category.len == 0) samples++;
    if (rec.kind != ZXS_FXT_RECORD_EVENT) continue;
    alerts++;
    assert_int_equal(rec.event.category.len, 5);
    assert_memory_equal(rec.event.category.data, "alert", 5);
    assert_int_equal(rec.event.thread.thread_koid, self_koid());
    for (size_t i = 0; i < rec.num_args; i++) {
      const zxs_fxt_str_ref_t* n = &rec.args[i].name;
      if (n->len == 4 && memcmp(n->data, "wall", 4) == 0) wall = rec.args[i].u64;
      if (n->len == 6 && memcmp(n->data, "budget", 6) == 0) budget = rec.args[i].u64;
      if (n->len == 8 && memcmp(n->data, "cpu_time", 8) == 0) cpu = rec.args[i].u64;
      if (n->len == 10 && memcmp(n->data, "queue_time", 10) == 0) queue = rec.args[i].u64;
    }
  }
  assert_int_equal(r.status, ZX_OK);
  zxs_fxt_reader_destroy(&r);
  free(data);
  assert_int_equal(alerts, 1);
  assert_true(samples > 0);
  assert_int_equal(budget, ZX_MSEC(5));
  assert_true(wall > budget);
  assert_true(cpu >= ZX_MSEC(40));   // it spun 40 ms of CPU in the period
  assert_true(cpu + queue <= wall);  // the wall time holds both, whatever the load

  // And it converts like any profile.
  char out[600];
  snprintf(out, sizeof(out), "%s/top.txt", g_dir);
  char error[256];
  assert_int_equal(zxs_profile_convert(path, out, ZXS_FORMAT_TOP, error, sizeof(error)), ZX_OK);
  size_t text_size;
  char* text = read_file(out, &text_size);
  assert_non_null(memmem(text, text_size, "Why this period was late", 24));
  free(text);
}

// Misused deadlines answer a status and raise nothing: NULL, a budget of 0 or less, an end with
// no begin (or a second end), an end after a refused begin. None leaves a trace.
static void test_deadline_misuse(void** state) {
  (void)state;
  const zxs_recorder_options_t options = {.output_dir = g_dir, .alert_interval = 1};
  assert_int_equal(zxs_recorder_start(&options), ZX_OK);
  assert_int_equal(zxs_deadline_begin(NULL, ZX_MSEC(1)), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_deadline_end(NULL), ZX_ERR_INVALID_ARGS);

  zxs_deadline_t never = {.name = "never"};  // zero-initialized, as the header asks
  assert_int_equal(zxs_deadline_end(&never), ZX_ERR_BAD_STATE);  // was: "uptime ms late"

  zxs_deadline_t negative = {.name = "negative"};
  assert_int_equal(zxs_deadline_begin(&negative, -ZX_MSEC(5)), ZX_ERR_INVALID_ARGS);
  spin_ms(2);
  assert_int_equal(zxs_deadline_end(&negative), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_deadline_begin(&negative, 0), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_deadline_end(&negative), ZX_ERR_BAD_STATE);
  // A refused begin closes a period that was open.
  assert_int_equal(zxs_deadline_begin(&negative, ZX_MSEC(1)), ZX_OK);
  assert_int_equal(zxs_deadline_begin(&negative, INT64_MIN), ZX_ERR_INVALID_ARGS);
  spin_ms(2);
  assert_int_equal(zxs_deadline_end(&negative), ZX_ERR_BAD_STATE);

  zxs_deadline_t twice = {.name = "twice"};
  assert_int_equal(zxs_deadline_begin(&twice, ZX_SEC(10)), ZX_OK);
  assert_int_equal(zxs_deadline_end(&twice), ZX_OK);
  assert_int_equal(zxs_deadline_end(&twice), ZX_ERR_BAD_STATE);
  // A begin on a period not ended starts it again: on time from the second begin.
  assert_int_equal(zxs_deadline_begin(&twice, ZX_MSEC(1)), ZX_OK);
  spin_ms(3);
  assert_int_equal(zxs_deadline_begin(&twice, ZX_SEC(10)), ZX_OK);
  assert_int_equal(zxs_deadline_end(&twice), ZX_OK);

  assert_int_equal(zxs_recorder_stop(), ZX_OK);
  assert_int_equal(count_traces("", NULL, 0), 0);
  // Not running: the statuses are the same, and a late period still says so.
  assert_int_equal(zxs_deadline_end(&never), ZX_ERR_BAD_STATE);
  assert_int_equal(zxs_deadline_begin(&twice, 1), ZX_OK);
  spin_ms(1);
  assert_int_equal(zxs_deadline_end(&twice), ZX_ERR_TIMED_OUT);
  assert_int_equal(count_traces("", NULL, 0), 0);
}

static zxs_deadline_t g_handed;
static zx_status_t g_handed_status;

static void* end_handed_deadline(void* unused) {
  (void)unused;
  g_handed_status = zxs_deadline_end(&g_handed);
  return NULL;
}

// A period begun on one thread and ended on another: late, and its alert carries the wall time
// and budget only (the other thread's CPU and queue times are not the period's).
static void test_deadline_ended_elsewhere(void** state) {
  (void)state;
  const zxs_recorder_options_t options = {.output_dir = g_dir, .window = ZX_MSEC(200)};
  assert_int_equal(zxs_recorder_start(&options), ZX_OK);
  g_handed = (zxs_deadline_t){.name = "handed"};
  assert_int_equal(zxs_deadline_begin(&g_handed, 1), ZX_OK);
  spin_ms(2);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, end_handed_deadline, NULL), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(g_handed_status, ZX_ERR_TIMED_OUT);
  assert_int_equal(zxs_recorder_stop(), ZX_OK);
  char path[512] = "";
  assert_int_equal(count_traces("handed-", path, sizeof(path)), 1);
  size_t size;
  void* data = read_file(path, &size);
  zxs_fxt_reader_t r;
  zxs_fxt_record_t rec;
  assert_int_equal(zxs_fxt_reader_init(&r, data, size), ZX_OK);
  int alerts = 0;
  while (zxs_fxt_reader_next(&r, &rec)) {
    if (rec.kind != ZXS_FXT_RECORD_EVENT) continue;
    alerts++;
    assert_int_equal(rec.num_args, 2);  // wall, budget
  }
  assert_int_equal(r.status, ZX_OK);
  zxs_fxt_reader_destroy(&r);
  free(data);
  assert_int_equal(alerts, 1);
}

// The child of a fork has no writer thread and no session: its recorder is not running, and the
// parent's goes on. (The child starts no thread: TSan cannot follow that after a fork.)
static void test_fork_child_not_running(void** state) {
  (void)state;
  const zxs_recorder_options_t options = {.output_dir = g_dir};
  assert_int_equal(zxs_recorder_start(&options), ZX_OK);
  const pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    const bool ok = zxs_trace_alert("child") == ZX_ERR_BAD_STATE &&
                    zxs_recorder_stop() == ZX_ERR_BAD_STATE &&
                    zxs_recorder_attach_current_thread() == ZX_ERR_BAD_STATE;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(zxs_trace_alert("parent"), ZX_OK);
  assert_int_equal(zxs_recorder_stop(), ZX_OK);
  assert_int_equal(count_traces("parent-", NULL, 0), 1);
  assert_int_equal(count_traces("child-", NULL, 0), 0);
}

// attach_new_threads: without the thread hook the recorder says so; with it (this file built
// again with ZXS_WITH_THREAD_HOOK, linked with libzxsampler-threads) a thread created after the
// start is sampled, and the recorder's own threads and the caller (dont_attach_caller) are not.
#ifdef ZXS_WITH_THREAD_HOOK
// The hook's marker, used so that the linker keeps the hook even where a sanitizer runtime,
// linked first, already defines pthread_create (as a program would with -Wl,--no-as-needed).
extern const int zxs_thread_hook_installed;

__attribute__((noinline)) static void new_thread_work(void) {
  spin_ms(300);
  __asm__ volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
}

static void* new_thread_main(void* arg) {
  (void)arg;
  new_thread_work();
  return NULL;
}
#endif

static void test_new_threads(void** state) {
  (void)state;
  const zxs_recorder_options_t options = {
      .output_dir = g_dir, .dont_attach_caller = true, .attach_new_threads = true};
#ifndef ZXS_WITH_THREAD_HOOK
  assert_int_equal(zxs_recorder_start(&options), ZX_ERR_NOT_SUPPORTED);
  assert_int_equal(zxs_recorder_stop(), ZX_ERR_BAD_STATE);  // nothing was left running
#else
  assert_int_equal(zxs_thread_hook_installed, 1);
  assert_int_equal(zxs_recorder_start(&options), ZX_OK);
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, new_thread_main, NULL), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  spin_ms(100);  // the caller is not attached: none of this is sampled
  assert_int_equal(zxs_trace_alert("newthreads"), ZX_OK);
  assert_int_equal(zxs_recorder_stop(), ZX_OK);
  char path[512], out[600], error[256];
  assert_int_equal(count_traces("newthreads-", path, sizeof(path)), 1);
  snprintf(out, sizeof(out), "%s/folded.txt", g_dir);
  assert_int_equal(zxs_profile_convert(path, out, ZXS_FORMAT_FOLDED, error, sizeof(error)), ZX_OK);
  size_t size;
  char* text = read_file(out, &size);
  assert_non_null(memmem(text, size, "new_thread_work", 15));
  assert_null(memmem(text, size, "test_new_threads", 16));
  free(text);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_new_threads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_statuses, setup, teardown),
      cmocka_unit_test_setup_teardown(test_late_period_trace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deadline_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deadline_ended_elsewhere, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fork_child_not_running, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
