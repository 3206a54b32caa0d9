// A program that profiles itself through the Fuchsia calls: three worker threads spend known
// shares of their time in three functions; the program samples them, reads every region and
// prints where the samples landed, symbolized in process with dladdr (link with -rdynamic so
// the functions are in the dynamic symbol table).
//
//   profile_self [seconds] [period_us]
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zxsampler/fxt.h>
#include <zxsampler/zircon.h>

#define WORKERS 3
#define MAX_FUNCTIONS 256

static atomic_bool g_stop;

// The same loop in each function, so the time split follows the iteration counts.
#define SPIN(n)                                                          \
  do {                                                                   \
    uint64_t x = 1;                                                      \
    for (uint64_t i = 0; i < (n); i++) x = x * 6364136223846793005u + i; \
    __asm__ volatile("" : : "r"(x) : "memory");                          \
  } while (0)

__attribute__((noinline)) void work_alpha(uint64_t n) { SPIN(3 * n); }  // 3/6 of the work
__attribute__((noinline)) void work_beta(uint64_t n) { SPIN(1 * n); }   // 1/6
__attribute__((noinline)) void work_gamma(uint64_t n) { SPIN(2 * n); }  // 2/6

void* worker(void* arg);
void* worker(void* arg) {
  (void)arg;
  while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
    work_alpha(100000);
    work_beta(100000);
    work_gamma(100000);
  }
  return NULL;
}

typedef struct {
  const char* name;
  unsigned self, total;
} function_count_t;

static function_count_t g_functions[MAX_FUNCTIONS];
static size_t g_function_count;

static function_count_t* function_of(uint64_t pc) {
  Dl_info info;
  const char* name = "[unknown]";
  if (dladdr((void*)(uintptr_t)pc, &info) != 0 && info.dli_sname != NULL) name = info.dli_sname;
  for (size_t i = 0; i < g_function_count; i++) {
    if (strcmp(g_functions[i].name, name) == 0) return &g_functions[i];
  }
  if (g_function_count == MAX_FUNCTIONS) return NULL;
  g_functions[g_function_count].name = name;
  return &g_functions[g_function_count++];
}

// Counts one sample: its first PC is the interrupted instruction (self time); return addresses
// are looked up at pc - 1 so a call at the end of a function is not taken for the next one.
static void count_sample(const uint8_t* payload, size_t size) {
  function_count_t* seen[64];
  size_t seen_count = 0;
  for (size_t i = 0; i < size / 8 && i < 64; i++) {
    uint64_t pc;
    memcpy(&pc, payload + 8 * i, 8);
    function_count_t* f = function_of(i == 0 ? pc : pc - 1);
    if (f == NULL) continue;
    if (i == 0) f->self++;
    bool counted = false;
    for (size_t j = 0; j < seen_count; j++) counted |= seen[j] == f;
    if (!counted) {
      f->total++;
      seen[seen_count++] = f;
    }
  }
}

static int by_self(const void* a, const void* b) {
  const function_count_t* fa = a;
  const function_count_t* fb = b;
  return (int)fb->self - (int)fa->self;
}

static int check(const char* what, zx_status_t status) {
  if (status != ZX_OK) {
    fprintf(stderr, "profile_self: %s failed: %s\n", what, zxs_status_string(status));
    exit(1);
  }
  return 0;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 2.0;
  long period_us = argc > 2 ? atol(argv[2]) : 1000;
  if (seconds <= 0 || period_us <= 0) {
    fprintf(stderr, "usage: profile_self [seconds > 0] [period_us > 0]\n");
    return 2;
  }

  zx_handle_t debug_resource;
  check("zxs_debug_resource_get", zxs_debug_resource_get(&debug_resource));
  zx_sampler_config_t config = {.period = ZX_USEC(period_us),
                                .buffer_size = 8u << 20,
                                .iobuffer_discipline = ZX_IOB_DISCIPLINE_NONE};
  zx_handle_t iob;
  check("zx_sampler_create", zx_sampler_create(debug_resource, 0, &config, sizeof(config), &iob));

  pthread_t threads[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    if (pthread_create(&threads[i], NULL, worker, NULL) != 0) return 1;
    zx_handle_t thread;
    check("zxs_thread_get", zxs_thread_get(threads[i], &thread));
    check("zx_sampler_attach", zx_sampler_attach(iob, thread));
    zx_handle_close(thread);
  }
  check("zx_sampler_start", zx_sampler_start(iob));
  struct timespec nap = {.tv_sec = (time_t)seconds,
                         .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&nap, NULL);
  check("zx_sampler_stop", zx_sampler_stop(iob));
  atomic_store(&g_stop, true);
  for (int i = 0; i < WORKERS; i++) pthread_join(threads[i], NULL);

  zxs_sampler_stats_t stats;
  check("zxs_sampler_get_stats", zxs_sampler_get_stats(iob, &stats));

  // Read every region: stop has returned, so nothing changes under us.
  zx_iob_region_info_t regions[ZX_IOB_MAX_REGIONS];
  size_t region_count = 0;
  check("zx_object_get_info", zx_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions, sizeof(regions),
                                                 &region_count, NULL));
  unsigned samples = 0;
  for (uint32_t r = 0; r < region_count; r++) {
    zx_vaddr_t addr;
    check("zx_vmar_map_iob", zx_vmar_map_iob(zx_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, r, 0,
                                             regions[r].region.size, &addr));
    zxs_fxt_region_iter_t it;
    zxs_fxt_record_t rec;
    zxs_fxt_region_iter_init(&it, (const void*)addr, regions[r].region.size);
    while (zxs_fxt_region_next(&it, &rec)) {
      if (rec.kind != ZXS_FXT_RECORD_LARGE_BLOB) continue;
      count_sample(rec.blob.payload.data, rec.blob.payload.size);
      samples++;
    }
    if (it.status != ZX_OK) fprintf(stderr, "region %u: %s\n", r, it.error.message);
    zx_vmar_unmap(zx_vmar_root_self(), addr, regions[r].region.size);
  }
  zx_handle_close(iob);
  zx_handle_close(debug_resource);

  printf(
      "libzxsampler: %d threads for %.1f s, period %ld us, source %s (effective period %lld us)\n",
      WORKERS, seconds, period_us, zxs_sample_source_name(stats.source),
      (long long)(stats.effective_period / 1000));
  printf(
      "samples: %llu written, %llu lost to full regions, %llu truncated walks, %llu throttled, "
      "%llu overruns\n",
      (unsigned long long)stats.samples_written, (unsigned long long)stats.dropped_full,
      (unsigned long long)stats.walks_truncated, (unsigned long long)stats.throttled,
      (unsigned long long)stats.overruns);
  if (samples == 0) {
    printf("no samples\n");
    return 1;
  }
  qsort(g_functions, g_function_count, sizeof(g_functions[0]), by_self);
  printf("\n  self%%  total%%  samples  function\n");
  for (size_t i = 0; i < g_function_count && i < 10; i++) {
    const function_count_t* f = &g_functions[i];
    if (f->self == 0) break;  // callers only: `zxsampler report` shows those too
    const char* expected = strcmp(f->name, "work_alpha") == 0   ? "  (work share 50%)"
                           : strcmp(f->name, "work_gamma") == 0 ? "  (work share 33%)"
                           : strcmp(f->name, "work_beta") == 0  ? "  (work share 17%)"
                                                                : "";
    printf(" %5.1f  %6.1f  %7u  %s%s\n", 100.0 * f->self / samples, 100.0 * f->total / samples,
           f->self, f->name, expected);
  }
  return 0;
}
