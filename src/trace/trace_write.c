// Writes the complete trace file of a stopped session (layout in trace_file.h).
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <zxsampler/fxt.h>
#include <zxsampler/object.h>
#include <zxsampler/sampler.h>

#include "jit_capture.h"
#include "modules_markup.h"
#include "process_facts.h"
#include "trace_file.h"

#define MAX_TRACE_THREADS 4096

static zxs_fxt_str_ref_t str(const char* s) { return zxs_fxt_str_inline(s, strlen(s)); }

typedef struct {
  zx_koid_t tids[MAX_TRACE_THREADS];
  size_t count;
} tid_set_t;

static void tid_set_add(tid_set_t* set, zx_koid_t tid) {
  for (size_t i = 0; i < set->count; i++) {
    if (set->tids[i] == tid) return;
  }
  if (set->count < MAX_TRACE_THREADS) set->tids[set->count++] = tid;
}

static zx_status_t write_kernel_objects(zxs_fxt_buf_t* buf, zx_koid_t pid, zx_duration_t period,
                                        uint64_t samples_lost, const tid_set_t* tids) {
  char name[256];
  if (zxs_facts_process_name(name, sizeof(name)) != ZX_OK) snprintf(name, sizeof(name), "%s", "");
  const zxs_fxt_arg_t process_args[] = {
      {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_PERIOD_ARG), .u64 = (uint64_t)period},
      {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_LOST_ARG), .u64 = samples_lost}};
  zxs_fxt_kernel_object_t process = {
      .obj_type = ZX_OBJ_TYPE_PROCESS, .koid = pid, .name = str(name)};
  zxs_fxt_write_kernel_object(buf, &process, process_args, samples_lost > 0 ? 2 : 1);
  for (size_t i = 0; i < tids->count; i++) {
    if (zxs_facts_thread_name(tids->tids[i], name, sizeof(name)) != ZX_OK) {
      snprintf(name, sizeof(name), "%s", "");
    }
    zxs_fxt_arg_t process_arg = {.type = ZXS_FXT_ARG_KOID, .name = str("process")};
    process_arg.koid = pid;
    zxs_fxt_kernel_object_t thread = {
        .obj_type = ZX_OBJ_TYPE_THREAD, .koid = tids->tids[i], .name = str(name)};
    zxs_fxt_write_kernel_object(buf, &thread, &process_arg, 1);
  }
  return buf->status;
}

void zxs_trace_write_header(zxs_fxt_buf_t* buf, uint64_t ticks_per_second) {
  zxs_fxt_write_magic(buf);
  zxs_fxt_write_provider_info(buf, ZXS_TRACE_PROVIDER_ID, "zxsampler", strlen("zxsampler"));
  zxs_fxt_write_provider_section(buf, ZXS_TRACE_PROVIDER_ID);
  zxs_fxt_write_initialization(buf, ticks_per_second);
}

zx_status_t zxs_trace_modules_payload(const zxs_module_list_t* modules, char** text, size_t* size) {
  *text = NULL;
  *size = 0;
  FILE* mem = open_memstream(text, size);
  if (mem == NULL) return ZX_ERR_NO_MEMORY;
  zx_status_t status = zxs_modules_write_markup(modules, ZXS_MODULES_MARKUP_FILE_OFFSETS, mem);
  if (fclose(mem) != 0 && status == ZX_OK) status = ZX_ERR_NO_MEMORY;
  if (status != ZX_OK) {
    free(*text);
    *text = NULL;
    *size = 0;
  }
  return status;
}

// The loaded modules as a markup attachment.
static zx_status_t write_modules(zxs_fxt_buf_t* buf) {
  zxs_module_list_t modules = {0};
  zx_status_t status = zxs_modules_capture(&modules);
  if (status != ZX_OK) return status;
  char* text = NULL;
  size_t size = 0;
  status = zxs_trace_modules_payload(&modules, &text, &size);
  zxs_modules_free(&modules);
  if (status == ZX_OK) {
    zxs_fxt_large_blob_t blob = {.category = str(ZXS_TRACE_CATEGORY),
                                 .name = str(ZXS_TRACE_MODULES_NAME),
                                 .payload = {.data = text, .size = size}};
    status = zxs_fxt_write_attachment(buf, &blob);
  }
  free(text);
  return status;
}

zx_status_t zxs_trace_write_vdso(zxs_fxt_buf_t* buf) {
  void* image = NULL;
  size_t size = 0;
  if (zxs_modules_vdso_self(&image, &size) != ZX_OK) return buf->status;
  zxs_fxt_large_blob_t blob = {.category = str(ZXS_TRACE_CATEGORY),
                               .name = str(ZXS_TRACE_VDSO_NAME),
                               .payload = {.data = image, .size = size}};
  zx_status_t status = zxs_fxt_write_attachment(buf, &blob);
  free(image);
  return status;
}

zx_status_t zxs_trace_write_jit_symbols(zxs_fxt_buf_t* buf, zx_koid_t koid,
                                        const zxs_jit_symbols_t* symbols) {
  char* text = NULL;
  size_t size = 0;
  zx_status_t status = zxs_jit_symbols_write_perf_map(symbols, &text, &size);
  if (status == ZX_OK && size > 0) {
    zxs_fxt_large_blob_t blob = {.category = str(ZXS_TRACE_CATEGORY),
                                 .name = str(ZXS_TRACE_JIT_SYMBOLS_NAME),
                                 .thread = {.process_koid = koid},
                                 .payload = {.data = text, .size = size}};
    status = zxs_fxt_write_large_blob(buf, &blob, NULL, 0);
  }
  free(text);
  return status;
}

// This process's JIT code names (jit_capture.h), read now: a JIT rewrites its files as it goes,
// and they are usually gone after it exits. A capture that fails leaves the frames unnamed.
static zx_status_t write_jit_symbols_self(zxs_fxt_buf_t* buf) {
  zxs_jit_capture_t* capture = zxs_jit_capture_new();
  if (capture == NULL) return buf->status;
  zxs_jit_capture_self(capture);
  const zx_koid_t koid = zxs_facts_process_koid();
  const zxs_jit_symbols_t* symbols = zxs_jit_capture_find(capture, koid);
  zx_status_t status = symbols != NULL ? zxs_trace_write_jit_symbols(buf, koid, symbols) : ZX_OK;
  zxs_jit_capture_free(capture);
  return status;
}

// The threads of the sample records in `samples` (whole records, checked by the caller).
static void add_sample_tids(const zxs_fxt_buf_t* samples, tid_set_t* tids) {
  zxs_fxt_region_iter_t it;
  zxs_fxt_record_t rec;
  zxs_fxt_region_iter_init(&it, samples->data, samples->len);
  while (zxs_fxt_region_next(&it, &rec)) {
    if (rec.kind == ZXS_FXT_RECORD_LARGE_BLOB) tid_set_add(tids, rec.blob.thread.thread_koid);
  }
}

zx_status_t zxs_trace_write_samples(const zxs_fxt_buf_t* samples, const zxs_fxt_buf_t* events,
                                    zx_koid_t extra_tid, zx_duration_t period,
                                    uint64_t samples_lost, FILE* out) {
  tid_set_t* tids = calloc(1, sizeof(*tids));
  if (tids == NULL) return ZX_ERR_NO_MEMORY;
  if (extra_tid != 0) tid_set_add(tids, extra_tid);
  add_sample_tids(samples, tids);
  zxs_fxt_buf_t head;
  zxs_fxt_buf_init(&head);
  zxs_trace_write_header(&head, zxs_facts_ticks_per_second());
  zx_status_t status =
      write_kernel_objects(&head, zxs_facts_process_koid(), period, samples_lost, tids);
  if (status == ZX_OK) status = write_modules(&head);
  if (status == ZX_OK) status = zxs_trace_write_vdso(&head);
  if (status == ZX_OK) status = write_jit_symbols_self(&head);
  if (status == ZX_OK) status = samples->status;
  if (status == ZX_OK && events != NULL) status = events->status;
  if (status == ZX_OK) {
    const size_t events_len = events != NULL ? events->len : 0;
    // (An empty buffer has no data pointer, which fwrite must not be given.)
    if (fwrite(head.data, 1, head.len, out) != head.len ||
        (events_len != 0 && fwrite(events->data, 1, events_len, out) != events_len) ||
        (samples->len != 0 && fwrite(samples->data, 1, samples->len, out) != samples->len)) {
      status = ZX_ERR_IO;
    }
  }
  zxs_fxt_buf_destroy(&head);
  free(tids);
  return status;
}

zx_status_t zxs_trace_write_session(zx_handle_t iob, zx_duration_t period, FILE* out) {
  zx_iob_region_info_t regions[ZX_IOB_MAX_REGIONS];
  size_t region_count = 0;
  zx_status_t status =
      zxs_object_get_info(iob, ZX_INFO_IOB_REGIONS, regions, sizeof(regions), &region_count, NULL);
  if (status != ZX_OK) return status;

  zxs_fxt_buf_t samples;
  zxs_fxt_buf_init(&samples);
  for (uint32_t r = 0; r < region_count && status == ZX_OK; r++) {
    zx_vaddr_t addr;
    status = zxs_vmar_map_iob(zxs_vmar_root_self(), ZX_VM_PERM_READ, 0, iob, r, 0,
                              regions[r].region.size, &addr);
    if (status != ZX_OK) break;
    zxs_fxt_region_iter_t it;
    zxs_fxt_record_t rec;
    zxs_fxt_region_iter_init(&it, (const void*)addr, regions[r].region.size);
    while (zxs_fxt_region_next(&it, &rec)) zxs_fxt_write_raw(&samples, rec.data, rec.size);
    if (it.status != ZX_OK) status = it.status;
    zxs_vmar_unmap(zxs_vmar_root_self(), addr, regions[r].region.size);
  }
  // What the session could not store (full regions, a source's own losses). A platform whose
  // kernel keeps no counters (Fuchsia) has nothing to say here.
  zxs_sampler_stats_t stats;
  const uint64_t lost = status == ZX_OK && zxs_sampler_get_stats(iob, &stats) == ZX_OK
                            ? stats.dropped_full + stats.dropped_other
                            : 0;
  if (status == ZX_OK) status = zxs_trace_write_samples(&samples, NULL, 0, period, lost, out);
  zxs_fxt_buf_destroy(&samples);
  return status;
}
