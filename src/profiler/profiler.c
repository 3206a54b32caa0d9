// The handle-free profiler API (profiler.h) and format conversion.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zxsampler/fxt.h>
#include <zxsampler/object.h>
#include <zxsampler/profiler.h>
#include <zxsampler/sampler.h>

#include "export.h"
#include "process_facts.h"
#include "trace_file.h"
#include "trace_output.h"

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
  // The fields not named are 0: iobuffer_discipline is ZX_IOB_DISCIPLINE_TYPE_NONE where the
  // config has one (hosts; Fuchsia's "attach" sampler revision; the "read" one has none).
  zx_sampler_config_t config = {
      .period = options != NULL && options->period != 0 ? options->period : DEFAULT_PERIOD,
      .buffer_size = options != NULL && options->buffer_size != 0 ? options->buffer_size
                                                                  : DEFAULT_BUFFER_SIZE};
  pthread_mutex_lock(&g_lock);
  zx_status_t status = ZX_ERR_BAD_STATE;
  if (g_iob == ZX_HANDLE_INVALID) {
    zx_handle_t rsrc, iob = ZX_HANDLE_INVALID;
    status = zxs_debug_resource_get(&rsrc);
    if (status == ZX_OK) {
      status = zxs_sampler_create(rsrc, 0, &config, sizeof(config), &iob);
      zxs_handle_close(rsrc);
    }
    // Fuchsia's "read" sampler revision has no attach (ZX_ERR_NOT_SUPPORTED): this profiler,
    // which reads the session's IOBuffer regions, does not run there.
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
    // Beside the target, renamed into place (a device, FIFO or directory is refused).
    zxs_trace_output_t out;
    status = zxs_trace_output_open(path, &out, NULL, 0);
    if (status == ZX_OK) {
      status = convert_buffer(trace, size, out.file, format, NULL, NULL, 0);
      if (status == ZX_OK) {
        status = zxs_trace_output_commit(&out, NULL, 0);
      } else {
        zxs_trace_output_abandon(&out);
      }
    }
  }
  free(trace);
  return status;
}

// --- Serving a supervisor ----------------------------------------------------------------------

typedef struct serve {
  int socket;
  struct stat id;  // the socket, known by this if the program closed it and reused its number
  zxs_profile_format_t format;
  char path[];
} serve_t;

// A thread of the library's, every signal blocked: one profile on request.
static void* serve_thread(void* arg) {
  serve_t* s = arg;
  zxs_facts_thread_is_library();
  char request;
  ssize_t n;
  while ((n = read(s->socket, &request, 1)) < 0 && errno == EINTR) {
  }
  if (n == 1 && request == 'w') {
    (void)zxs_profiler_stop(s->path, s->format);
    struct stat now;
    if (fstat(s->socket, &now) == 0 && now.st_ino == s->id.st_ino && now.st_dev == s->id.st_dev) {
      (void)!write(s->socket, "w", 1);
    }
  }
  free(s);
  return NULL;
}

zx_status_t zxs_profiler_serve(int socket, const char* path, zxs_profile_format_t format) {
  if (socket < 0 || path == NULL || path[0] == '\0' || format > ZXS_FORMAT_TOP) {
    return ZX_ERR_INVALID_ARGS;
  }
  pthread_mutex_lock(&g_lock);
  const bool running = g_iob != ZX_HANDLE_INVALID;
  pthread_mutex_unlock(&g_lock);
  if (!running) return ZX_ERR_BAD_STATE;
  const size_t len = strlen(path);
  serve_t* s = malloc(sizeof(*s) + len + 1);
  if (s == NULL) return ZX_ERR_NO_MEMORY;
  s->socket = socket;
  s->format = format;
  memcpy(s->path, path, len + 1);
  if (fstat(socket, &s->id) != 0) {
    free(s);
    return ZX_ERR_INVALID_ARGS;
  }
  pthread_t thread;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the thread inherits the full mask
  const int err = pthread_create(&thread, NULL, serve_thread, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) {
    free(s);
    return ZX_ERR_NO_RESOURCES;
  }
  pthread_detach(thread);
  return ZX_OK;
}

// --- Files ------------------------------------------------------------------------------------

static void set_error(char* error, size_t size, const char* what, const char* path) {
  if (error != NULL && size > 0) snprintf(error, size, "%s %s: %s", what, path, strerror(errno));
}

// A trace file's bytes: mapped (a regular file: the page cache holds them, no copy on the heap,
// whatever the file's size) or read into the heap (a pipe).
typedef struct trace_bytes {
  void* data;
  size_t size;
  bool mapped;
} trace_bytes_t;

static void release_trace(trace_bytes_t* t) {
  if (t->mapped) {
    munmap(t->data, t->size);
  } else {
    free(t->data);
  }
  t->data = NULL;
}

// Maps a regular file of `size` bytes read-only. ZX_OK, or the failure (said in `error`).
static zx_status_t map_file(FILE* in, const char* path, size_t size, trace_bytes_t* out,
                            char* error, size_t error_size) {
  void* data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fileno(in), 0);
  fclose(in);
  if (data == MAP_FAILED) {
    set_error(error, error_size, "cannot read", path);
    return errno == ENOMEM ? ZX_ERR_NO_MEMORY : ZX_ERR_IO;
  }
  *out = (trace_bytes_t){.data = data, .size = size, .mapped = true};
  return ZX_OK;
}

// A trace file's bytes: a regular file (mapped) or a pipe (read); anything else (a device such as
// /dev/zero, a directory) is refused, and so is what does not start with the FXT magic, before
// more than its first record is read.
static zx_status_t read_trace(const char* path, trace_bytes_t* out, char* error,
                              size_t error_size) {
  void** data = &out->data;
  size_t* size = &out->size;
  out->mapped = false;
  FILE* in = fopen(path, "rb");
  if (in == NULL) {
    set_error(error, error_size, "cannot open", path);
    return ZX_ERR_IO;
  }
  struct stat st;
  if (fstat(fileno(in), &st) != 0) {
    set_error(error, error_size, "cannot read", path);
    fclose(in);
    return ZX_ERR_IO;
  }
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    if (error != NULL && error_size > 0) {
      snprintf(error, error_size, "%s: %s", path,
               S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file or a pipe");
    }
    fclose(in);
    return ZX_ERR_WRONG_TYPE;
  }
  uint64_t magic = 0;
  const size_t head = fread(&magic, 1, sizeof(magic), in);
  if (head != sizeof(magic) || magic != ZXS_FXT_MAGIC) {
    const bool failed = ferror(in) != 0;
    if (failed) {
      set_error(error, error_size, "cannot read", path);
    } else if (error != NULL && error_size > 0) {
      snprintf(error, error_size, "%s: not a trace file (no FXT magic at its start)", path);
    }
    fclose(in);
    return failed ? ZX_ERR_IO : ZX_ERR_IO_DATA_INTEGRITY;
  }
  if (S_ISREG(st.st_mode)) return map_file(in, path, (size_t)st.st_size, out, error, error_size);
  size_t cap = 1u << 16;
  if (cap < sizeof(magic)) cap = sizeof(magic);
  char* buf = malloc(cap);
  size_t len = sizeof(magic);
  zx_status_t status = buf != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
  if (buf != NULL) memcpy(buf, &magic, sizeof(magic));
  while (status == ZX_OK) {
    if (len == cap) {
      char* grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (grown == NULL) {
        status = ZX_ERR_NO_MEMORY;
        break;
      }
      buf = grown;
      cap *= 2;
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
  if (status == ZX_ERR_NO_MEMORY && error != NULL && error_size > 0) {
    snprintf(error, error_size, "%s: out of memory reading it (%zu bytes read)", path, len);
  }
  if (status != ZX_OK) {
    free(buf);
    return status;
  }
  *data = buf;
  *size = len;
  return ZX_OK;
}

zx_status_t zxs_profile_check_output(const char* path, char* error, size_t error_size) {
  if (error != NULL && error_size > 0) error[0] = '\0';
  if (path == NULL) return ZX_ERR_INVALID_ARGS;
  zxs_trace_output_t out;
  char why[512];
  zx_status_t status = zxs_trace_output_open(path, &out, why, sizeof(why));
  if (status == ZX_OK) {
    zxs_trace_output_abandon(&out);
  } else if (error != NULL && error_size > 0) {
    snprintf(error, error_size, "%s", why);
  }
  return status;
}

zx_status_t zxs_profile_count_samples(const char* path, uint64_t* samples, uint64_t* lost,
                                      char* error, size_t error_size) {
  if (error != NULL && error_size > 0) error[0] = '\0';
  if (path == NULL) return ZX_ERR_INVALID_ARGS;
  trace_bytes_t trace;
  zx_status_t status = read_trace(path, &trace, error, error_size);
  if (status != ZX_OK) return status;
  zxs_profile_t profile;
  status = zxs_profile_from_trace(trace.data, trace.size, &profile, error, error_size);
  release_trace(&trace);
  if (status != ZX_OK) return status;
  if (samples != NULL) *samples = profile.sample_count;
  if (lost != NULL) *lost = profile.samples_lost;
  zxs_profile_free(&profile);
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
  trace_bytes_t trace;
  zx_status_t status = read_trace(in_path, &trace, error, error_size);
  if (status != ZX_OK) return status;
  if (strcmp(out_path, "-") == 0) {
    status = convert_buffer(trace.data, trace.size, stdout, format, selection, error, error_size);
    if (fflush(stdout) != 0 && status == ZX_OK) {
      set_error(error, error_size, "cannot write", out_path);
      status = ZX_ERR_IO;
    }
  } else {
    // Beside the target, renamed into place: an old file stays until the new one is whole.
    zxs_trace_output_t out;
    status = zxs_trace_output_open(out_path, &out, error, error_size);
    if (status == ZX_OK) {
      status =
          convert_buffer(trace.data, trace.size, out.file, format, selection, error, error_size);
      if (status == ZX_OK) {
        status = zxs_trace_output_commit(&out, error, error_size);
      } else {
        zxs_trace_output_abandon(&out);
      }
    }
  }
  if (status != ZX_OK && error != NULL && error_size > 0 && error[0] == '\0') {
    snprintf(error, error_size, "%s: %s", in_path, zxs_status_string(status));
  }
  release_trace(&trace);
  return status;
}
