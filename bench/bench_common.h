// Small helpers the benchmark programs share (internal to bench/): statistics, a sampler session
// over a set of threads, and reading every sample record of a session.
#ifndef ZXSAMPLER_BENCH_BENCH_COMMON_H_
#define ZXSAMPLER_BENCH_BENCH_COMMON_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/zxsampler.h>

static inline int bench_cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

// Quantile q (0..1) of n values, linear interpolation; sorts a copy. 0 when n == 0.
static inline double bench_quantile(const double* v, size_t n, double q) {
  if (n == 0) {
    return 0;
  }
  double* c = malloc(n * sizeof(double));
  if (c == NULL) {
    return 0;
  }
  memcpy(c, v, n * sizeof(double));
  qsort(c, n, sizeof(double), bench_cmp_double);
  const double pos = q * (double)(n - 1);
  const size_t i = (size_t)pos;
  const double frac = pos - (double)i;
  const double r = i + 1 < n ? c[i] * (1 - frac) + c[i + 1] * frac : c[i];
  free(c);
  return r;
}

static inline double bench_median(const double* v, size_t n) { return bench_quantile(v, n, 0.5); }

static inline void bench_check(const char* what, zx_status_t status) {
  if (status != ZX_OK) {
    fprintf(stderr, "bench: %s failed: %s\n", what, zxs_status_string(status));
    exit(1);
  }
}

// Creates a session with `buffer_size` bytes per CPU and attaches `count` threads.
static inline zx_handle_t bench_session(zx_duration_t period, size_t buffer_size,
                                        const pthread_t* threads, size_t count) {
  zx_handle_t rsrc, iob;
  bench_check("zxs_debug_resource_get", zxs_debug_resource_get(&rsrc));
  zx_sampler_config_t config = {
      .period = period, .buffer_size = buffer_size, .iobuffer_discipline = 0};
  bench_check("zxs_sampler_create", zxs_sampler_create(rsrc, 0, &config, sizeof(config), &iob));
  zxs_handle_close(rsrc);
  for (size_t i = 0; i < count; i++) {
    zx_handle_t thread;
    bench_check("zxs_thread_get", zxs_thread_get(threads[i], &thread));
    bench_check("zxs_sampler_attach", zxs_sampler_attach(iob, thread));
    zxs_handle_close(thread);
  }
  return iob;
}

// Calls fn(ctx, payload, size) for every sample record in every region of a stopped session.
static inline void bench_for_each_sample(zx_handle_t iob, void (*fn)(void*, const void*, size_t),
                                         void* ctx) {
  zx_iob_region_info_t regions[64];
  size_t count = 0;
  bench_check("zxs_object_get_info", zxs_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions,
                                                         sizeof(regions), &count, NULL));
  for (size_t r = 0; r < count; r++) {
    zx_vaddr_t addr;
    bench_check("zxs_vmar_map_iob",
                zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, (uint32_t)r, 0,
                                 regions[r].region.size, &addr));
    zxs_fxt_region_iter_t it;
    zxs_fxt_record_t rec;
    zxs_fxt_region_iter_init(&it, (const void*)addr, regions[r].region.size);
    while (zxs_fxt_region_next(&it, &rec)) {
      if (rec.kind == ZXS_FXT_RECORD_LARGE_BLOB) {
        fn(ctx, rec.blob.payload.data, rec.blob.payload.size);
      }
    }
    zxs_vmar_unmap(zxs_vmar_root_self(), addr, regions[r].region.size);
  }
}

#endif  // ZXSAMPLER_BENCH_BENCH_COMMON_H_
