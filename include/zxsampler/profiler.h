// Profiling without handles: start, stop and write a file; convert between formats.
//
//   zxs_profiler_options_t options = {.period = 1000000};   // 1 ms of CPU time per sample
//   zxs_profiler_start(&options);                            // samples the calling thread
//   ...                                                      // other threads:
//   zxs_profiler_attach_current_thread();                    //   call this from each one
//   zxs_profiler_stop("out.pb.gz", ZXS_FORMAT_PPROF);
//
// Built on the sampler calls (sampler.h); uses the one session of the process, so it cannot run
// while the program holds its own session. None of these calls is async-signal-safe; all are
// thread-safe.
#ifndef ZXSAMPLER_PROFILER_H_
#define ZXSAMPLER_PROFILER_H_

#include <pthread.h>
#include <stdbool.h>
#include <zxsampler/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zxs_profile_format {
  ZXS_FORMAT_FXT = 0,     // complete FXT trace file (the native format; converts to the others)
  ZXS_FORMAT_PPROF,       // gzip'd profile.proto, for go tool pprof and friends
  ZXS_FORMAT_FOLDED,      // folded stacks, one line per stack, for flame-graph tools
  ZXS_FORMAT_FLAMEGRAPH,  // self-contained SVG flame graph
  ZXS_FORMAT_MARKUP,      // Fuchsia symbolizer markup (llvm-symbolizer --filter-markup)
  ZXS_FORMAT_TOP,         // text report of the top functions
} zxs_profile_format_t;

typedef struct zxs_profiler_options {
  zx_duration_t period;  // ns of a thread's CPU time between samples; 0 = 1 ms
  size_t buffer_size;    // bytes per CPU; 0 = 16 MiB. Samples a full buffer cannot take are
                         // lost and counted: the profile says how many ("Lost" in the report)
  // Must be zero (initialize the struct with = {...} or memset): options added later take
  // these, zero meaning their default, so the struct keeps its size.
  uint64_t reserved[6];
} zxs_profiler_options_t;

// Creates a session (with the debug resource), attaches the calling thread and starts.
//   ZX_ERR_INVALID_ARGS   a reserved field is not zero.
//   ZX_ERR_BAD_STATE      the profiler is already running.
//   ZX_ERR_ALREADY_EXISTS the program holds its own sampler session.
//   and the statuses of zxs_sampler_create() / attach() / start().
ZXS_API zx_status_t zxs_profiler_start(const zxs_profiler_options_t* options);

// Attaches the calling thread / another thread to the running profiler.
//   ZX_ERR_BAD_STATE not running; the statuses of zxs_sampler_attach().
ZXS_API zx_status_t zxs_profiler_attach_current_thread(void);
ZXS_API zx_status_t zxs_profiler_attach_thread(pthread_t thread);

// Stops, records the loaded modules and thread names, writes the profile to `path` in `format`
// and ends the session. On failure the session is ended all the same.
//   ZX_ERR_BAD_STATE not running; ZX_ERR_INVALID_ARGS path NULL or unknown format;
//   ZX_ERR_IO the file could not be written; ZX_ERR_NO_MEMORY.
ZXS_API zx_status_t zxs_profiler_stop(const char* path, zxs_profile_format_t format);

// Reads an FXT trace file written by this library (zxsampler record, zxs_profiler_stop) and
// writes it to `out_path` in `format`, symbolizing with the module files found on this machine
// (matched by build ID). `error` (may be NULL) receives a message naming the problem.
//   ZX_ERR_INVALID_ARGS bad arguments; ZX_ERR_IO unreadable input or unwritable output;
//   ZX_ERR_IO_DATA_INTEGRITY malformed input; ZX_ERR_NO_MEMORY.
ZXS_API zx_status_t zxs_profile_convert(const char* in_path, const char* out_path,
                                        zxs_profile_format_t format, char* error,
                                        size_t error_size);

// Which samples a conversion keeps: those of processes with this pid (0: any) and this name
// (NULL: any). A profile recorded by `zxsampler record` may hold a whole process tree. And how
// the formats show them: the top report's code without a name one row per module (default) or
// per address; folded stacks and the flame graph with the process's name as the root frame of
// each stack (default: programs of a tree stay apart, processes of one program merge) or not.
typedef struct zxs_profile_selection {
  uint64_t pid;
  const char* name;
  bool addresses;
  bool no_process_frame;
} zxs_profile_selection_t;

// As zxs_profile_convert(), keeping only the samples `selection` names (NULL: all, shown as
// the defaults above). The output names the first process kept (the top report's `Process:`,
// pprof's comment and first mapping). FXT output is a copy of the input whatever the
// selection. A selection of processes that have no samples is not an error: the output says
// there are no samples.
//   ZX_ERR_NOT_FOUND the profile holds no process with that pid and name; `error` lists the
//   ones it holds (the first few). And zxs_profile_convert()'s statuses.
ZXS_API zx_status_t zxs_profile_convert_selected(const char* in_path, const char* out_path,
                                                 zxs_profile_format_t format,
                                                 const zxs_profile_selection_t* selection,
                                                 char* error, size_t error_size);

// Hands the running profiler a control socket (a connected stream socket; the other end belongs
// to whoever supervises the program, e.g. `zxsampler record --in-process`): a thread of the
// library's waits on it, and a byte 'w' makes it stop the profiler and write the profile to
// `path` in `format` (as zxs_profiler_stop() does), then answer 'w' on the same socket. One
// request; the thread ends after it or when the socket closes. The socket stays the caller's
// descriptor (the library never closes it). Not async-signal-safe.
//   ZX_ERR_INVALID_ARGS socket < 0, path NULL or empty, unknown format;
//   ZX_ERR_BAD_STATE the profiler is not running; ZX_ERR_NO_RESOURCES no thread.
ZXS_API zx_status_t zxs_profiler_serve(int socket, const char* path, zxs_profile_format_t format);

// Whether a profile can be written to `path` as zxs_profiler_stop() and zxs_profile_convert()
// write one: into a temporary file beside it, renamed into place. A regular file (kept until a
// new profile replaces it) or nothing yet; a symbolic link's target file; never a directory,
// device, FIFO or socket, nor an empty path. Creates and removes the temporary file; `error`
// (may be NULL) says what is wrong.
//   ZX_ERR_INVALID_ARGS NULL or empty path; ZX_ERR_WRONG_TYPE not a regular file;
//   ZX_ERR_IO the folder takes no file; ZX_ERR_NO_MEMORY.
ZXS_API zx_status_t zxs_profile_check_output(const char* path, char* error, size_t error_size);

// How many samples the FXT trace file at `path` holds, and how many its recording lost (the
// kernel's or the regions' full buffers), into *samples and *lost (either may be NULL).
//   Statuses as zxs_profile_convert()'s reading of its input.
ZXS_API zx_status_t zxs_profile_count_samples(const char* path, uint64_t* samples, uint64_t* lost,
                                              char* error, size_t error_size);

// "fxt", "pprof", "folded", "svg" (or "flamegraph"), "markup", "top". False if unknown, or if
// name or out is NULL.
ZXS_API bool zxs_profile_format_from_name(const char* name, zxs_profile_format_t* out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ZXSAMPLER_PROFILER_H_
