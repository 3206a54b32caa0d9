// The handle-free profiler API (profiler.h) and format conversion.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/object.h>
#include <zxsampler/profiler.h>
#include <zxsampler/sampler.h>

#include "export.h"
#include "trace_file.h"

#define DEFAULT_PERIOD 1000000           // 1 ms
#define DEFAULT_BUFFER_SIZE (16u << 20)  // per CPU

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static zx_handle_t g_iob = ZX_HANDLE_INVALID;
static zx_duration_t g_period;

zx_status_t zxs_profiler_start(const zxs_profiler_options_t* options) {
  if (options != NULL) {
    for (size_t i = 0; i < sizeof(options->reserved) / sizeof(options->reserved[0]); i++) {
      if (options->reserved[i] != 0) return ZX_ERR_INVALID_ARGS;
    }
  }
  zx_sampler_config_t config = {
      .period = options != NULL && options->period != 0 ? options->period : DEFAULT_PERIOD,
      .buffer_size =
          options != NULL && options->buffer_size != 0 ? options->buffer_size : DEFAULT_BUFFER_SIZE,
      .iobuffer_discipline = ZX_IOB_DISCIPLINE_NONE};
  pthread_mutex_lock(&g_lock);
  zx_status_t status = ZX_ERR_BAD_STATE;
  if (g_iob == ZX_HANDLE_INVALID) {
    zx_handle_t rsrc, iob = ZX_HANDLE_INVALID;
    status = zxs_debug_resource_get(&rsrc);
    if (status == ZX_OK) {
      status = zxs_sampler_create(rsrc, 0, &config, sizeof(config), &iob);
      zxs_handle_close(rsrc);
    }
    if (status == ZX_OK) status = zxs_sampler_attach(iob, zxs_thread_self());
    if (status == ZX_OK) status = zxs_sampler_start(iob);
    if (status == ZX_OK) {
      g_iob = iob;
      g_period = config.period;
    } else {
      zxs_handle_close(iob);
    }
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

static zx_status_t attach(zx_handle_t thread) {
  pthread_mutex_lock(&g_lock);
  zx_status_t status =
      g_iob == ZX_HANDLE_INVALID ? ZX_ERR_BAD_STATE : zxs_sampler_attach(g_iob, thread);
  pthread_mutex_unlock(&g_lock);
  return status;
}

zx_status_t zxs_profiler_attach_current_thread(void) { return attach(zxs_thread_self()); }

zx_status_t zxs_profiler_attach_thread(pthread_t thread) {
  zx_handle_t handle;
  zx_status_t status = zxs_thread_get(thread, &handle);
  if (status != ZX_OK) return status;
  status = attach(handle);
  zxs_handle_close(handle);
  return status;
}

bool zxs_profile_format_from_name(const char* name, zxs_profile_format_t* out) {
  if (name == NULL || out == NULL) return false;
  static const struct {
    const char* name;
    zxs_profile_format_t format;
  } names[] = {{"fxt", ZXS_FORMAT_FXT},
               {"pprof", ZXS_FORMAT_PPROF},
               {"folded", ZXS_FORMAT_FOLDED},
               {"svg", ZXS_FORMAT_FLAMEGRAPH},
               {"flamegraph", ZXS_FORMAT_FLAMEGRAPH},
               {"markup", ZXS_FORMAT_MARKUP},
               {"top", ZXS_FORMAT_TOP}};
  for (size_t i = 0; name != NULL && i < sizeof(names) / sizeof(names[0]); i++) {
    if (strcmp(name, names[i].name) == 0) {
      *out = names[i].format;
      return true;
    }
  }
  return false;
}

// Writes a profile (read from a trace) in one of the derived formats.
static zx_status_t export_profile(const zxs_profile_t* profile, zxs_profile_format_t format,
                                  uint32_t top_flags, FILE* out) {
  switch (format) {
    case ZXS_FORMAT_PPROF:
      return zxs_export_pprof(profile, out);
    case ZXS_FORMAT_FOLDED:
      return zxs_export_folded(profile, 0, out);
    case ZXS_FORMAT_FLAMEGRAPH:
      return zxs_export_flamegraph(profile, 0, NULL, out);
    case ZXS_FORMAT_MARKUP:
      return zxs_export_markup(profile, out);
    case ZXS_FORMAT_TOP:
      return zxs_export_top(profile, 20, top_flags, out);
    default:
      return ZX_ERR_INVALID_ARGS;
  }
}

static zx_status_t convert_buffer(const void* trace, size_t size, FILE* out,
                                  zxs_profile_format_t format,
                                  const zxs_profile_selection_t* selection, char* error,
                                  size_t error_size) {
  if (format == ZXS_FORMAT_FXT) {
    return fwrite(trace, 1, size, out) == size ? ZX_OK : ZX_ERR_IO;
  }
  zxs_profile_t profile;
  zx_status_t status = zxs_profile_from_trace(trace, size, &profile, error, error_size);
  if (status != ZX_OK) return status;
  if (selection != NULL) zxs_profile_select(&profile, selection->pid, selection->name);
  status =
      export_profile(&profile, format,
                     selection != NULL && selection->addresses ? ZXS_EXPORT_TOP_ADDRESSES : 0, out);
  zxs_profile_free(&profile);
  return status;
}

zx_status_t zxs_profiler_stop(const char* path, zxs_profile_format_t format) {
  pthread_mutex_lock(&g_lock);
  zx_handle_t iob = g_iob;
  g_iob = ZX_HANDLE_INVALID;
  pthread_mutex_unlock(&g_lock);
  if (iob == ZX_HANDLE_INVALID) return ZX_ERR_BAD_STATE;
  zx_status_t status = zxs_sampler_stop(iob);
  if (path == NULL || format > ZXS_FORMAT_TOP) status = ZX_ERR_INVALID_ARGS;
  char* trace = NULL;
  size_t size = 0;
  if (status == ZX_OK) {
    FILE* mem = open_memstream(&trace, &size);
    status = mem != NULL ? zxs_trace_write_session(iob, g_period, mem) : ZX_ERR_NO_MEMORY;
    if (mem != NULL) fclose(mem);
  }
  zxs_handle_close(iob);
  if (status == ZX_OK) {
    FILE* out = fopen(path, "wb");
    if (out == NULL) {
      status = ZX_ERR_IO;
    } else {
      status = convert_buffer(trace, size, out, format, NULL, NULL, 0);
      if (fclose(out) != 0 && status == ZX_OK) status = ZX_ERR_IO;
    }
  }
  free(trace);
  return status;
}

static void set_error(char* error, size_t size, const char* what, const char* path) {
  if (error != NULL && size > 0) snprintf(error, size, "%s %s: %s", what, path, strerror(errno));
}

// Reads a whole file into memory.
static zx_status_t read_file(const char* path, void** data, size_t* size, char* error,
                             size_t error_size) {
  FILE* in = fopen(path, "rb");
  if (in == NULL) {
    set_error(error, error_size, "cannot open", path);
    return ZX_ERR_IO;
  }
  char* buf = NULL;
  size_t len = 0, cap = 0;
  zx_status_t status = ZX_OK;
  for (;;) {
    if (len == cap) {
      cap = cap == 0 ? 1u << 16 : cap * 2;
      char* grown = realloc(buf, cap);
      if (grown == NULL) {
        status = ZX_ERR_NO_MEMORY;
        break;
      }
      buf = grown;
    }
    size_t n = fread(buf + len, 1, cap - len, in);
    len += n;
    if (n == 0) {
      if (ferror(in)) {
        set_error(error, error_size, "cannot read", path);
        status = ZX_ERR_IO;
      }
      break;
    }
  }
  fclose(in);
  if (status != ZX_OK) {
    free(buf);
    return status;
  }
  *data = buf;
  *size = len;
  return ZX_OK;
}

zx_status_t zxs_profile_convert(const char* in_path, const char* out_path,
                                zxs_profile_format_t format, char* error, size_t error_size) {
  return zxs_profile_convert_selected(in_path, out_path, format, NULL, error, error_size);
}

zx_status_t zxs_profile_convert_selected(const char* in_path, const char* out_path,
                                         zxs_profile_format_t format,
                                         const zxs_profile_selection_t* selection, char* error,
                                         size_t error_size) {
  if (error != NULL && error_size > 0) error[0] = '\0';
  if (in_path == NULL || out_path == NULL || format > ZXS_FORMAT_TOP) return ZX_ERR_INVALID_ARGS;
  void* trace;
  size_t size;
  zx_status_t status = read_file(in_path, &trace, &size, error, error_size);
  if (status != ZX_OK) return status;
  bool to_stdout = strcmp(out_path, "-") == 0;
  FILE* out = to_stdout ? stdout : fopen(out_path, "wb");
  if (out == NULL) {
    set_error(error, error_size, "cannot create", out_path);
    free(trace);
    return ZX_ERR_IO;
  }
  status = convert_buffer(trace, size, out, format, selection, error, error_size);
  if ((to_stdout ? fflush(out) : fclose(out)) != 0 && status == ZX_OK) {
    set_error(error, error_size, "cannot write", out_path);
    status = ZX_ERR_IO;
  }
  if (status != ZX_OK && error != NULL && error_size > 0 && error[0] == '\0') {
    snprintf(error, error_size, "%s: %s", in_path, zxs_status_string(status));
  }
  free(trace);
  return status;
}
