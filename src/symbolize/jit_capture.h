// JIT code names captured while recording (internal; Linux): each process's perf map
// (/tmp/perf-PID.map) and the jitdump files it mapped (jit-PID.dump), read when the process
// exits or the recording ends (in process: when the library writes its trace), since JITs leave
// these files to be deleted or rewritten by the next process of the same pid. Not
// async-signal-safe.
//
// A file is read only when it is a regular file (not a link: O_NOFOLLOW), owned by root, by the
// recorder's effective uid or by the process's uid (/proc/PID, while it exists), and at most
// ZXS_JIT_FILE_MAX bytes. All sets together keep at most ZXS_JIT_CAPTURE_MAX_BYTES.
#ifndef ZXSAMPLER_SRC_SYMBOLIZE_JIT_CAPTURE_H_
#define ZXSAMPLER_SRC_SYMBOLIZE_JIT_CAPTURE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jit_symbols.h"

#define ZXS_JIT_FILE_MAX (64u << 20)
#define ZXS_JIT_CAPTURE_MAX_BYTES (256u << 20)

typedef struct zxs_jit_capture zxs_jit_capture_t;

// An empty capture; NULL without memory.
zxs_jit_capture_t* zxs_jit_capture_new(void);

// Whether process `koid` was captured already (whether or not it had JIT symbols).
bool zxs_jit_capture_has(const zxs_jit_capture_t* capture, uint64_t koid);

// Reads the JIT symbols of process `koid` (OS pid `pid`): /tmp/perf-<pid>.map, then each of
// `mapped_paths` (the files the process mapped executable) whose base name is jit-<pid>.dump, in
// that order (later symbols win where they overlap). Files that are missing, refused (see above)
// or malformed add nothing; a process without symbols keeps none. Marks `koid` captured.
void zxs_jit_capture_process(zxs_jit_capture_t* capture, uint64_t koid, uint32_t pid,
                             const char* const* mapped_paths, size_t path_count);

// Reads the JIT symbols of the calling process (the library in process, writing its own trace)
// as zxs_jit_capture_process does, under its koid: its perf map and the jitdump files among its
// executable file mappings (process_facts.h). Nothing where the platform lists no mappings
// (perf maps and jitdump files are Linux's).
void zxs_jit_capture_self(zxs_jit_capture_t* capture);

// The resolved symbols of process `koid` (jit_symbols.h), or NULL when it has none.
const zxs_jit_symbols_t* zxs_jit_capture_find(const zxs_jit_capture_t* capture, uint64_t koid);

// Frees the capture and its sets. NULL is fine.
void zxs_jit_capture_free(zxs_jit_capture_t* capture);

// Reads a whole file for the capture: `path` must name a regular file (the last component not a
// link) owned by uid 0, geteuid() or `owner` ((uid_t)-1: none), of at most `max` bytes. malloc'd
// into *data (caller frees; NULL for an empty file). False when missing, refused or unreadable.
bool zxs_jit_read_file(const char* path, uint32_t owner, size_t max, void** data, size_t* size);

#endif  // ZXSAMPLER_SRC_SYMBOLIZE_JIT_CAPTURE_H_
