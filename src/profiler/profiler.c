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
#include "string_builder.h"
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

// Writes a profile (read from a trace) in one of the derived formats, as `selection` (may be
// NULL) asks.
static zx_status_t export_profile(const zxs_profile_t* profile, zxs_profile_format_t format,
                                  const zxs_profile_selection_t* selection, FILE* out) {
  const uint32_t stack_flags =
      selection != NULL && selection->no_process_frame ? 0 : ZXS_EXPORT_PROCESS_ROOT;
  const uint32_t top_flags =
      selection != NULL && selection->addresses ? ZXS_EXPORT_TOP_ADDRESSES : 0;
  switch (format) {
    case ZXS_FORMAT_PPROF:
      return zxs_export_pprof(profile, out);
    case ZXS_FORMAT_FOLDED:
      return zxs_export_folded(profile, stack_flags, out);
    case ZXS_FORMAT_FLAMEGRAPH:
      return zxs_export_flamegraph(profile, stack_flags, NULL, out);
    case ZXS_FORMAT_MARKUP:
      return zxs_export_markup(profile, out);
    case ZXS_FORMAT_TOP:
      return zxs_export_top(profile, 20, top_flags, out);
    default:
      return ZX_ERR_INVALID_ARGS;
  }
}

// ZX_ERR_NOT_FOUND, with the processes the profile does hold in `error`, when `selection` names
// no process of it (a process that is there but has no samples is fine).
static zx_status_t check_selection(const zxs_profile_t* profile,
                                   const zxs_profile_selection_t* selection, char* error,
                                   size_t error_size) {
  if (selection == NULL || (selection->pid == 0 && selection->name == NULL)) return ZX_OK;
  for (size_t i = 0; i < profile->process_count; i++) {
    if (zxs_profile_process_matches(&profile->processes[i], selection->pid, selection->name)) {
      return ZX_OK;
    }
  }
  if (error == NULL || error_size == 0) return ZX_ERR_NOT_FOUND;
  enum { kListed = 8 };
  zxs_sb_t msg = {0};
  zxs_sb_puts(&msg, "no process");
  if (selection->pid != 0)
    zxs_sb_printf(&msg, " with pid %llu", (unsigned long long)selection->pid);
  if (selection->name != NULL) zxs_sb_printf(&msg, " named '%s'", selection->name);
  zxs_sb_puts(&msg, " in the profile; its processes:");
  for (size_t i = 0; i < profile->process_count && i < kListed; i++) {
    const zxs_profile_process_t* p = &profile->processes[i];
    zxs_sb_printf(&msg, "%s %s (pid %llu)", i > 0 ? "," : "",
                  p->name[0] != '\0' ? p->name : "unknown", (unsigned long long)p->pid);
  }
  if (profile->process_count > kListed) {
    zxs_sb_printf(&msg, " and %zu more", profile->process_count - kListed);
  }
  if (profile->process_count == 0) zxs_sb_puts(&msg, " none");
  snprintf(error, error_size, "%s",
           msg.failed ? "no such process in the profile" : zxs_sb_str(&msg));
  zxs_sb_free(&msg);
  return ZX_ERR_NOT_FOUND;
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
  status = check_selection(&profile, selection, error, error_size);
  if (status == ZX_OK) {
    if (selection != NULL) zxs_profile_select(&profile, selection->pid, selection->name);
    status = export_profile(&profile, format, selection, out);
  }
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

// A trace file's bytes, mapped: the page cache holds them, no copy on the heap, whatever the
// file's size (a pipe's are spooled to a file first).
typedef struct trace_bytes {
  void* data;
  size_t size;
} trace_bytes_t;

static void release_trace(trace_bytes_t* t) {
  munmap(t->data, t->size);
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
  *out = (trace_bytes_t){.data = data, .size = size};
  return ZX_OK;
}

// Copies what a pipe carries into an unlinked file in $TMPDIR (else /tmp) and maps that, so a
// trace from a pipe costs no more heap than one from a file, whatever its size.
static zx_status_t spool_pipe(FILE* in, const char* path, uint64_t magic, trace_bytes_t* out,
                              char* error, size_t error_size) {
  const char* dir = getenv("TMPDIR");
  if (dir == NULL || dir[0] == '\0') dir = "/tmp";
  char spool_path[4096];
  snprintf(spool_path, sizeof(spool_path), "%s/zxsampler-report-XXXXXX", dir);
  const int fd = mkstemp(spool_path);
  FILE* spool = fd >= 0 ? fdopen(fd, "w+b") : NULL;
  if (spool == NULL) {
    if (error != NULL && error_size > 0) {
      snprintf(error, error_size, "%s: cannot make a file in %s to hold it: %s", path, dir,
               strerror(errno));
    }
    if (fd >= 0) close(fd);
    fclose(in);
    return ZX_ERR_IO;
  }
  unlink(spool_path);  // gone with its last reference, the mapping
  char chunk[1u << 16];
  size_t total = sizeof(magic);
  bool read_failed = false, write_failed = fwrite(&magic, sizeof(magic), 1, spool) != 1;
  while (!write_failed) {
    const size_t n = fread(chunk, 1, sizeof(chunk), in);
    if (n == 0) {
      read_failed = ferror(in) != 0;
      break;
    }
    write_failed = fwrite(chunk, 1, n, spool) != n;
    total += n;
  }
  fclose(in);
  write_failed = write_failed || fflush(spool) != 0;
  if (read_failed || write_failed) {
    if (read_failed) {
      set_error(error, error_size, "cannot read", path);
    } else if (error != NULL && error_size > 0) {
      snprintf(error, error_size, "%s: cannot hold it in %s after %zu bytes: %s", path, dir, total,
               strerror(errno));
    }
    fclose(spool);
    return ZX_ERR_IO;
  }
  return map_file(spool, path, total, out, error, error_size);
}

// A trace file's bytes: a regular file (mapped) or a pipe (spooled to a file, mapped); anything
// else (a device such as /dev/zero, a directory) is refused, and so is what does not start with the
// FXT magic, before more than its first record is read.
static zx_status_t read_trace(const char* path, trace_bytes_t* out, char* error,
                              size_t error_size) {
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
  return spool_pipe(in, path, magic, out, error, error_size);
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
