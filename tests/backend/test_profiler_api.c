// The handle-free profiler (profiler.h) on the real backend: start, attach another thread,
// stop into each format, and read the results back.
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zxsampler/zxsampler.h>

static atomic_bool g_stop;

__attribute__((noinline)) void profiler_api_busy(void) {
  uint64_t x = 1;
  for (int i = 0; i < 200000; i++) x = x * 6364136223846793005u + (uint64_t)i;
  __asm__ volatile("" : : "r"(x) : "memory");
}

static void* spin(void* arg) {
  (void)arg;
  while (!atomic_load(&g_stop)) profiler_api_busy();
  return NULL;
}

static void spin_for_cpu_ms(int ms) {
  struct timespec start, now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do {
    profiler_api_busy();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

static char* read_all(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* data = malloc((size_t)n + 1);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
  data[n] = '\0';
  fclose(f);
  *size = (size_t)n;
  return data;
}

// Profiles this thread and one other for ~150 ms of CPU each and writes `format` to `path`.
static void record_to(const char* path, zxs_profile_format_t format) {
  zxs_profiler_options_t options = {.period = 1000000, .buffer_size = 1u << 20};
  options.reserved[5] = 1;  // a field this library does not know: refused, nothing started
  assert_int_equal(zxs_profiler_start(&options), ZX_ERR_INVALID_ARGS);
  options.reserved[5] = 0;
  assert_int_equal(zxs_profiler_start(&options), ZX_OK);
  assert_int_equal(zxs_profiler_start(&options), ZX_ERR_BAD_STATE);
  atomic_store(&g_stop, false);
  pthread_t other;
  assert_int_equal(pthread_create(&other, NULL, spin, NULL), 0);
  assert_int_equal(zxs_profiler_attach_thread(other), ZX_OK);
  spin_for_cpu_ms(150);
  assert_int_equal(zxs_profiler_stop(path, format), ZX_OK);
  atomic_store(&g_stop, true);
  pthread_join(other, NULL);
  assert_int_equal(zxs_profiler_stop(path, format), ZX_ERR_BAD_STATE);
}

static void fxt_file_reads_back_with_samples_threads_and_modules(void** state) {
  (void)state;
  char path[] = "/tmp/zxs_profiler_api_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  record_to(path, ZXS_FORMAT_FXT);
  size_t size;
  char* data = read_all(path, &size);
  zxs_fxt_reader_t reader;
  assert_int_equal(zxs_fxt_reader_init(&reader, data, size), ZX_OK);
  zxs_fxt_record_t rec;
  size_t samples = 0, threads = 0, modules = 0, vdso = 0;
  while (zxs_fxt_reader_next(&reader, &rec)) {
    if (rec.kind == ZXS_FXT_RECORD_LARGE_BLOB) {
      samples++;
      assert_int_equal(rec.blob.thread.process_koid, (zx_koid_t)getpid());
    } else if (rec.kind == ZXS_FXT_RECORD_KERNEL_OBJECT &&
               rec.kernel_object.obj_type == ZX_OBJ_TYPE_THREAD) {
      threads++;
    } else if (rec.kind == ZXS_FXT_RECORD_ATTACHMENT) {
      modules += rec.blob.name.len == 7 && memcmp(rec.blob.name.data, "modules", 7) == 0;
      vdso += rec.blob.name.len == 4 && memcmp(rec.blob.name.data, "vdso", 4) == 0;
    }
  }
  assert_int_equal(reader.status, ZX_OK);
  assert_int_equal(reader.ticks_per_second, 1000000000u);
  zxs_fxt_reader_destroy(&reader);
  assert_true(samples > 10);
  assert_int_equal(threads, 2);
  assert_int_equal(modules, 1);
  assert_int_equal(vdso, 1);  // the vDSO's image, to name its functions

  // And it converts, naming the function that ran.
  char top[] = "/tmp/zxs_profiler_top_XXXXXX";
  fd = mkstemp(top);
  close(fd);
  char error[256];
  assert_int_equal(zxs_profile_convert(path, top, ZXS_FORMAT_TOP, error, sizeof(error)), ZX_OK);
  size_t top_size;
  char* text = read_all(top, &top_size);
  assert_non_null(strstr(text, "profiler_api_busy"));
  assert_null(strstr(text, "Lost:"));  // 1 MiB a CPU holds 150 ms of two threads
  free(text);
  free(data);
  unlink(top);
  unlink(path);
}

// A region that fills loses the samples after it; the profile says how many.
static void a_full_buffer_is_reported_as_lost(void** state) {
  (void)state;
  zxs_profiler_options_t options = {.period = 250000, .buffer_size = 4096};
  assert_int_equal(zxs_profiler_start(&options), ZX_OK);
  spin_for_cpu_ms(600);  // 2400 samples at 4000/s (150 at a 4 ms tick): a page holds ~50
  char path[] = "/tmp/zxs_profiler_lost_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  assert_int_equal(zxs_profiler_stop(path, ZXS_FORMAT_FXT), ZX_OK);
  // The counts as zxs_profile_count_samples reads them, and the report's.
  uint64_t samples = 0, lost_count = 0;
  assert_int_equal(zxs_profile_count_samples(path, &samples, &lost_count, NULL, 0), ZX_OK);
  assert_true(samples > 0);
  assert_true(lost_count > 0);
  char top[] = "/tmp/zxs_profiler_lost_top_XXXXXX";
  close(mkstemp(top));
  assert_int_equal(zxs_profile_convert(path, top, ZXS_FORMAT_TOP, NULL, 0), ZX_OK);
  size_t size;
  char* text = read_all(top, &size);
  const char* lost = strstr(text, "Lost: ");
  assert_non_null(lost);
  assert_int_equal(strtoull(lost + strlen("Lost: "), NULL, 10), lost_count);
  free(text);
  unlink(top);
  unlink(path);
}

// zxs_profiler_serve: a supervisor asks over a socket, the library writes the profile and says so.
static void serve_writes_the_profile_on_request(void** state) {
  (void)state;
  int pair[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  assert_int_equal(zxs_profiler_serve(pair[1], "/tmp/x.fxt", ZXS_FORMAT_FXT), ZX_ERR_BAD_STATE);
  zxs_profiler_options_t options = {.period = 1000000};
  assert_int_equal(zxs_profiler_start(&options), ZX_OK);
  assert_int_equal(zxs_profiler_serve(-1, "/tmp/x.fxt", ZXS_FORMAT_FXT), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_profiler_serve(pair[1], "", ZXS_FORMAT_FXT), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_profiler_serve(pair[1], NULL, ZXS_FORMAT_FXT), ZX_ERR_INVALID_ARGS);
  char path[] = "/tmp/zxs_profiler_serve_XXXXXX";
  close(mkstemp(path));
  assert_int_equal(zxs_profiler_serve(pair[1], path, ZXS_FORMAT_FXT), ZX_OK);
  spin_for_cpu_ms(100);
  assert_int_equal(write(pair[0], "w", 1), 1);
  char answer = 0;
  assert_int_equal(read(pair[0], &answer, 1), 1);  // blocks until the file is written
  assert_int_equal(answer, 'w');
  uint64_t samples = 0;
  assert_int_equal(zxs_profile_count_samples(path, &samples, NULL, NULL, 0), ZX_OK);
  assert_true(samples > 0);
  // The request stopped the profiler: a later stop has nothing to write.
  assert_int_equal(zxs_profiler_stop(path, ZXS_FORMAT_FXT), ZX_ERR_BAD_STATE);
  unlink(path);
  close(pair[0]);
  close(pair[1]);
}

// zxs_profile_check_output: the rules every writer follows, checked before anything is written.
static void check_output_follows_the_writers_rules(void** state) {
  (void)state;
  char error[512];
  assert_int_equal(zxs_profile_check_output(NULL, error, sizeof(error)), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_profile_check_output("", error, sizeof(error)), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_profile_check_output("/dev/null", error, sizeof(error)), ZX_ERR_WRONG_TYPE);
  assert_non_null(strstr(error, "/dev/null"));
  assert_int_equal(zxs_profile_check_output("/tmp", error, sizeof(error)), ZX_ERR_WRONG_TYPE);
  assert_int_equal(zxs_profile_check_output("/nonexistent/dir/x.fxt", error, sizeof(error)),
                   ZX_ERR_IO);
  // A folder that takes files: nothing is left behind, an existing file is untouched.
  char dir[] = "/tmp/zxs_profiler_out_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof(path), "%s/p.fxt", dir);
  assert_int_equal(zxs_profile_check_output(path, NULL, 0), ZX_OK);
  assert_int_equal(access(path, F_OK), -1);
  FILE* f = fopen(path, "w");
  assert_non_null(f);
  fputs("old", f);
  fclose(f);
  assert_int_equal(zxs_profile_check_output(path, error, sizeof(error)), ZX_OK);
  size_t size;
  char* text = read_all(path, &size);
  assert_string_equal(text, "old");
  free(text);
  unlink(path);
  assert_int_equal(rmdir(dir), 0);  // empty: the temporary file is gone
}

static void every_format_is_written(void** state) {
  (void)state;
  const struct {
    zxs_profile_format_t format;
    const char* expect;  // bytes the file starts with or contains
  } cases[] = {{ZXS_FORMAT_PPROF, "\x1f\x8b"},
               {ZXS_FORMAT_FOLDED, "profiler_api_busy"},
               {ZXS_FORMAT_FLAMEGRAPH, "<svg"},
               {ZXS_FORMAT_MARKUP, "{{{module:"},
               {ZXS_FORMAT_TOP, "profiler_api_busy"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char path[] = "/tmp/zxs_profiler_fmt_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    record_to(path, cases[i].format);
    size_t size;
    char* data = read_all(path, &size);
    assert_true(size > 0);
    assert_true(memmem(data, size, cases[i].expect, strlen(cases[i].expect)) != NULL);
    free(data);
    unlink(path);
  }
}

static void convert_reports_bad_input(void** state) {
  (void)state;
  char error[256];
  assert_int_equal(
      zxs_profile_convert("/nonexistent/x.fxt", "/tmp/out", ZXS_FORMAT_TOP, error, sizeof(error)),
      ZX_ERR_IO);
  assert_non_null(strstr(error, "/nonexistent/x.fxt"));
  char path[] = "/tmp/zxs_profiler_bad_XXXXXX";
  int fd = mkstemp(path);
  assert_int_equal(write(fd, "not a trace file", 16), 16);
  close(fd);
  assert_int_equal(
      zxs_profile_convert(path, "/tmp/zxs_profiler_bad_out", ZXS_FORMAT_TOP, error, sizeof(error)),
      ZX_ERR_IO_DATA_INTEGRITY);
  assert_true(strlen(error) > 0);
  unlink(path);
  unlink("/tmp/zxs_profiler_bad_out");
  zxs_profile_format_t f;
  assert_false(zxs_profile_format_from_name("jpeg", &f));
  assert_true(zxs_profile_format_from_name("svg", &f));
  assert_int_equal(f, ZXS_FORMAT_FLAMEGRAPH);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fxt_file_reads_back_with_samples_threads_and_modules),
      cmocka_unit_test(every_format_is_written),
      cmocka_unit_test(a_full_buffer_is_reported_as_lost),
      cmocka_unit_test(convert_reports_bad_input),
      cmocka_unit_test(check_output_follows_the_writers_rules),
      cmocka_unit_test(serve_writes_the_profile_on_request),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
