// micro: throughput of the reading and export side, and how long stop takes (a meson
// benchmark(); prints tables and asserts nothing about time).
//
//   micro [-m MIB] [-s SAMPLES] [-r REPEATS] [-n CYCLE_MS] [-p fxt|export|stop] [-q]
//
//   -m MIB      size of the synthetic region for the FXT reader (default 64)
//   -s SAMPLES  samples in the large trace file for the exports (default 200000)
//   -r REPEATS  start/stop cycles per source for the stop latency (default 30)
//   -n MS       sampling time of each start/stop cycle (default 50)
//   -p PART     run only this part
//   -q          quick: 8 MiB, 20000 samples, 10 cycles
//
// 1. FXT: zxs_fxt_encode_sample into a region, then zxs_fxt_region_next (the per-CPU region
//    iterator) and zxs_fxt_reader_next (the trace-file reader) over it: MB/s and records/s,
//    best of 5 passes.
// 2. Export: a real recording (zxs_profiler_start/stop, 2 threads, ~1 s, FXT), then the same
//    file with its sample records repeated up to SAMPLES; zxs_profile_convert to every format,
//    timed once each (symbolization of the modules included).
// 3. Stop latency: 8 threads attached and spinning, sampled every 1 ms; the time
//    zxs_sampler_stop() takes to return, and zxs_sampler_start() for comparison, per source;
//    for start also the caller's own CPU time (the rest of its wall time is waiting for a CPU).
//    The first start is timed apart: in a process that has not armed a perf source before, it
//    includes the library's calibration (on the calling thread, competing with the spinners).
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zxsampler/zxsampler.h>

#include "bench_common.h"
#include "bench_work.h"

static size_t g_region_mib = 64;
static size_t g_samples = 200000;
static int g_repeats = 30;
static long g_cycle_ms = 50;
static char g_dir[64];

// --- 1. FXT reader --------------------------------------------------------------------------

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void fxt_reader(void) {
  const size_t size = g_region_mib << 20;
  // One extra word in front for the magic record (the file reader wants it first).
  uint64_t* buf = calloc(size / 8 + 1, 8);
  if (buf == NULL) {
    exit(1);
  }
  buf[0] = ZXS_FXT_MAGIC;
  uint64_t* region = buf + 1;
  uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
  size_t words = 0, records = 0;
  const double e0 = bench_now(CLOCK_MONOTONIC);
  for (;;) {
    const size_t n = 8 + (size_t)(rng() % 57);  // 8..64 frames
    if ((words + ZXS_FXT_SAMPLE_WORDS(n)) * 8 > size) {
      break;
    }
    for (size_t i = 0; i < n; i++) {
      pcs[i] = 0x400000 + (rng() & 0xfffff);
    }
    words += zxs_fxt_encode_sample(region + words, 1000 + records, 100, 101 + records % 4, pcs, n);
    records++;
  }
  const double encode_s = bench_now(CLOCK_MONOTONIC) - e0;
  const double mb = (double)(words * 8) / 1e6;

  double best_region = 1e18, best_file = 1e18;
  size_t seen_region = 0, seen_file = 0;
  uint64_t checksum = 0;
  for (int pass = 0; pass < 5; pass++) {
    zxs_fxt_region_iter_t it;
    zxs_fxt_record_t rec;
    double t0 = bench_now(CLOCK_MONOTONIC);
    zxs_fxt_region_iter_init(&it, region, words * 8);
    seen_region = 0;
    while (zxs_fxt_region_next(&it, &rec)) {
      seen_region++;
      checksum += rec.blob.payload.size;
    }
    double t = bench_now(CLOCK_MONOTONIC) - t0;
    best_region = t < best_region ? t : best_region;

    zxs_fxt_reader_t reader;
    t0 = bench_now(CLOCK_MONOTONIC);
    bench_check("zxs_fxt_reader_init", zxs_fxt_reader_init(&reader, buf, words * 8 + 8));
    seen_file = 0;
    while (zxs_fxt_reader_next(&reader, &rec)) {
      seen_file++;
      checksum += rec.size;
    }
    if (reader.status != ZX_OK) {
      fprintf(stderr, "micro: reader: %s\n", reader.error.message);
      exit(1);
    }
    zxs_fxt_reader_destroy(&reader);
    t = bench_now(CLOCK_MONOTONIC) - t0;
    best_file = t < best_file ? t : best_file;
  }
  printf(
      "## FXT encode and read (%.1f MB of sample records, %zu records of 8..64 frames; best of "
      "5 passes)\n\n",
      mb, records);
  printf("| operation | MB/s | records/s (M) |\n|---|---:|---:|\n");
  printf("| zxs_fxt_encode_sample (incl. generating PCs) | %.0f | %.2f |\n", mb / encode_s,
         (double)records / encode_s / 1e6);
  printf("| zxs_fxt_region_next (region iterator) | %.0f | %.2f |\n", mb / best_region,
         (double)seen_region / best_region / 1e6);
  printf("| zxs_fxt_reader_next (trace-file reader) | %.0f | %.2f |\n", mb / best_file,
         (double)(seen_file - 1) / best_file / 1e6);
  printf("\n(checksum %llu)\n\n", (unsigned long long)checksum);
  free(buf);
}

// --- 2. Export --------------------------------------------------------------------------------

static _Atomic bool g_spin_stop;

static void* profiled_worker(void* arg) {
  (void)arg;
  zxs_profiler_attach_current_thread();
  const double t0 = bench_thread_cpu();
  uint64_t seed = 1;
  while (bench_thread_cpu() - t0 < 1.0) {
    seed = bench_work(20, 12, 20000, seed);
  }
  return (void*)(uintptr_t)(seed & 1);
}

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc(*size);
  if (data == NULL || fread(data, 1, *size, f) != *size) {
    fclose(f);
    free(data);
    return NULL;
  }
  fclose(f);
  return data;
}

// Copies a trace file and repeats its sample records until it holds `target` samples.
static size_t enlarge(const char* in, const char* out, size_t target) {
  size_t size;
  void* data = read_file(in, &size);
  if (data == NULL) {
    fprintf(stderr, "micro: cannot read %s\n", in);
    exit(1);
  }
  zxs_fxt_buf_t head, samples;
  zxs_fxt_buf_init(&head);
  zxs_fxt_buf_init(&samples);
  zxs_fxt_reader_t reader;
  zxs_fxt_record_t rec;
  bench_check("zxs_fxt_reader_init", zxs_fxt_reader_init(&reader, data, size));
  size_t count = 0;
  while (zxs_fxt_reader_next(&reader, &rec)) {
    if (rec.kind == ZXS_FXT_RECORD_LARGE_BLOB) {
      zxs_fxt_write_raw(&samples, rec.data, rec.size);
      count++;
    } else {
      zxs_fxt_write_raw(&head, rec.data, rec.size);
    }
  }
  zxs_fxt_reader_destroy(&reader);
  FILE* f = fopen(out, "wb");
  if (f == NULL || count == 0) {
    fprintf(stderr, "micro: cannot write %s (or no samples recorded)\n", out);
    exit(1);
  }
  fwrite(head.data, 1, head.len, f);
  size_t written = 0;
  while (written < target) {
    fwrite(samples.data, 1, samples.len, f);
    written += count;
  }
  fclose(f);
  zxs_fxt_buf_destroy(&head);
  zxs_fxt_buf_destroy(&samples);
  free(data);
  return written;
}

static double file_mb(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? (double)st.st_size / 1e6 : 0;
}

static void export_formats(void) {
  char recorded[128], large[128];
  snprintf(recorded, sizeof(recorded), "%s/recorded.fxt", g_dir);
  snprintf(large, sizeof(large), "%s/large.fxt", g_dir);
  zxs_profiler_options_t options = {.period = 250000, .buffer_size = 0};
  bench_check("zxs_profiler_start", zxs_profiler_start(&options));
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    pthread_create(&t[i], NULL, profiled_worker, NULL);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
  }
  const double s0 = bench_now(CLOCK_MONOTONIC);
  bench_check("zxs_profiler_stop", zxs_profiler_stop(recorded, ZXS_FORMAT_FXT));
  const double stop_write_s = bench_now(CLOCK_MONOTONIC) - s0;
  size_t rec_samples = 0;
  {
    size_t size;
    void* data = read_file(recorded, &size);
    zxs_fxt_reader_t reader;
    zxs_fxt_record_t rec;
    if (data != NULL && zxs_fxt_reader_init(&reader, data, size) == ZX_OK) {
      while (zxs_fxt_reader_next(&reader, &rec)) {
        rec_samples += rec.kind == ZXS_FXT_RECORD_LARGE_BLOB;
      }
      zxs_fxt_reader_destroy(&reader);
    }
    free(data);
  }
  const size_t large_samples = enlarge(recorded, large, g_samples);

  static const struct {
    const char* name;
    zxs_profile_format_t format;
  } kFormats[] = {{"fxt", ZXS_FORMAT_FXT},       {"pprof", ZXS_FORMAT_PPROF},
                  {"folded", ZXS_FORMAT_FOLDED}, {"svg", ZXS_FORMAT_FLAMEGRAPH},
                  {"markup", ZXS_FORMAT_MARKUP}, {"top", ZXS_FORMAT_TOP}};
  printf("## Export (zxs_profile_convert; symbolization included)\n\n");
  printf(
      "Recorded: 2 threads x ~1 s of CPU at 250 us -> %zu samples, %.2f MB; "
      "zxs_profiler_stop() writing it took %.1f ms. Large: the same sample records repeated to "
      "%zu samples, %.1f MB.\n\n",
      rec_samples, file_mb(recorded), stop_write_s * 1e3, large_samples, file_mb(large));
  printf(
      "| format | recorded: time | large: time | large: samples/s | large: input MB/s | "
      "large: output size |\n|---|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < sizeof(kFormats) / sizeof(kFormats[0]); i++) {
    char out[160], error[256];
    double took[2];
    const char* inputs[2] = {recorded, large};
    for (int k = 0; k < 2; k++) {
      snprintf(out, sizeof(out), "%s/out.%d.%s", g_dir, k, kFormats[i].name);
      const double t0 = bench_now(CLOCK_MONOTONIC);
      zx_status_t status =
          zxs_profile_convert(inputs[k], out, kFormats[i].format, error, sizeof(error));
      took[k] = bench_now(CLOCK_MONOTONIC) - t0;
      if (status != ZX_OK) {
        fprintf(stderr, "micro: convert to %s: %s\n", kFormats[i].name, error);
        exit(1);
      }
    }
    printf("| %s | %.1f ms | %.0f ms | %.2f M | %.1f | %.0f kB |\n", kFormats[i].name,
           took[0] * 1e3, took[1] * 1e3, (double)large_samples / took[1] / 1e6,
           file_mb(large) / took[1], file_mb(out) * 1e3);
    unlink(out);
    snprintf(out, sizeof(out), "%s/out.0.%s", g_dir, kFormats[i].name);
    unlink(out);
  }
  unlink(recorded);
  unlink(large);
  printf("\n");
}

// --- 3. Stop latency --------------------------------------------------------------------------

#define SPINNERS 8

static void* spinner(void* arg) {
  (void)arg;
  uint64_t seed = 1;
  while (!atomic_load_explicit(&g_spin_stop, memory_order_relaxed)) {
    seed = bench_work(1, 12, 20000, seed);
  }
  return (void*)(uintptr_t)(seed & 1);
}

static void stop_latency(void) {
  pthread_t t[SPINNERS];
  atomic_store(&g_spin_stop, false);
  for (int i = 0; i < SPINNERS; i++) {
    pthread_create(&t[i], NULL, spinner, NULL);
  }
  printf(
      "## Stop latency (%d threads attached and spinning on %ld CPUs, period 1 ms, %d "
      "start/stop cycles with %ld ms of sampling each)\n\n",
      SPINNERS, sysconf(_SC_NPROCESSORS_ONLN), g_repeats, g_cycle_ms);
  printf(
      "| source | first start | its CPU | stop: median | p90 | max | start: median | p90 | max "
      "| start CPU: median | p90 | samples per cycle |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  const char* sources[] = {"perf-ring", "perf", "cputimer"};
  for (int s = 0; s < (int)(sizeof(sources) / sizeof(sources[0])); s++) {
    setenv("ZXSAMPLER_SOURCE", sources[s], 1);
    zx_handle_t iob = bench_session(1000000, (size_t)8 << 20, t, SPINNERS);
    // The first perf start of a process also calibrates (throttle.c): timed apart.
    // Beside the wall time, the caller's own CPU time: with 8 spinners on 2 CPUs most of a
    // slow start is waiting for a CPU, not work.
    const double f0 = bench_now(CLOCK_MONOTONIC);
    const double fc0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
    bench_check("zxs_sampler_start", zxs_sampler_start(iob));
    const double first_cpu_ms = (bench_now(CLOCK_THREAD_CPUTIME_ID) - fc0) * 1e3;
    const double first_ms = (bench_now(CLOCK_MONOTONIC) - f0) * 1e3;
    bench_check("zxs_sampler_stop", zxs_sampler_stop(iob));
    zxs_sampler_stats_t st0;
    bench_check("zxs_sampler_get_stats", zxs_sampler_get_stats(iob, &st0));
    double stop_us[256], start_us[256], start_cpu_us[256];
    for (int i = 0; i < g_repeats; i++) {
      double t0 = bench_now(CLOCK_MONOTONIC);
      const double c0 = bench_now(CLOCK_THREAD_CPUTIME_ID);
      bench_check("zxs_sampler_start", zxs_sampler_start(iob));
      start_cpu_us[i] = (bench_now(CLOCK_THREAD_CPUTIME_ID) - c0) * 1e6;
      start_us[i] = (bench_now(CLOCK_MONOTONIC) - t0) * 1e6;
      struct timespec nap = {.tv_sec = g_cycle_ms / 1000, .tv_nsec = g_cycle_ms % 1000 * 1000000};
      nanosleep(&nap, NULL);
      t0 = bench_now(CLOCK_MONOTONIC);
      bench_check("zxs_sampler_stop", zxs_sampler_stop(iob));
      stop_us[i] = (bench_now(CLOCK_MONOTONIC) - t0) * 1e6;
    }
    zxs_sampler_stats_t st;
    bench_check("zxs_sampler_get_stats", zxs_sampler_get_stats(iob, &st));
    zxs_handle_close(iob);
    printf(
        "| %s | %.1f ms | %.1f ms | %.0f us | %.0f us | %.0f us | %.0f us | %.0f us | %.0f us | "
        "%.0f us | %.0f us | %.1f |\n",
        zxs_sample_source_name(st.source), first_ms, first_cpu_ms,
        bench_median(stop_us, (size_t)g_repeats), bench_quantile(stop_us, (size_t)g_repeats, 0.9),
        bench_quantile(stop_us, (size_t)g_repeats, 1.0), bench_median(start_us, (size_t)g_repeats),
        bench_quantile(start_us, (size_t)g_repeats, 0.9),
        bench_quantile(start_us, (size_t)g_repeats, 1.0),
        bench_median(start_cpu_us, (size_t)g_repeats),
        bench_quantile(start_cpu_us, (size_t)g_repeats, 0.9),
        (double)(st.samples_written - st0.samples_written) / g_repeats);
  }
  atomic_store(&g_spin_stop, true);
  for (int i = 0; i < SPINNERS; i++) {
    pthread_join(t[i], NULL);
  }
  printf("\n");
}

int main(int argc, char** argv) {
  int opt;
  const char* part = NULL;
  while ((opt = getopt(argc, argv, "m:s:r:n:p:q")) != -1) {
    switch (opt) {
      case 'n':
        g_cycle_ms = atol(optarg);
        break;
      case 'p':
        part = optarg;
        break;
      case 'm':
        g_region_mib = (size_t)atol(optarg);
        break;
      case 's':
        g_samples = (size_t)atol(optarg);
        break;
      case 'r':
        g_repeats = atoi(optarg);
        break;
      case 'q':
        g_region_mib = 8;
        g_samples = 20000;
        g_repeats = 10;
        break;
      default:
        fprintf(stderr,
                "usage: micro [-m MIB] [-s SAMPLES] [-r REPEATS] [-n CYCLE_MS] "
                "[-p fxt|export|stop] [-q]\n");
        return 2;
    }
  }
  if (g_region_mib < 1 || g_region_mib > 4096 || g_samples < 1 || g_repeats < 1 ||
      g_repeats > 256 || g_cycle_ms < 1 ||
      (part != NULL && strcmp(part, "fxt") != 0 && strcmp(part, "export") != 0 &&
       strcmp(part, "stop") != 0)) {
    fprintf(stderr, "micro: bad arguments\n");
    return 2;
  }
  snprintf(g_dir, sizeof(g_dir), "/tmp/zxs-micro.XXXXXX");
  if (mkdtemp(g_dir) == NULL) {
    fprintf(stderr, "micro: mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  double load[1] = {0};
  getloadavg(load, 1);
  printf("# micro: %ld CPUs online, load average %.2f at start\n\n", sysconf(_SC_NPROCESSORS_ONLN),
         load[0]);
  if (part == NULL || strcmp(part, "fxt") == 0) {
    fxt_reader();
  }
  if (part == NULL || strcmp(part, "export") == 0) {
    export_formats();
  }
  if (part == NULL || strcmp(part, "stop") == 0) {
    stop_latency();
  }
  rmdir(g_dir);
  return 0;
}
