// JIT symbols captured at record time (jit_capture.h).
#define _GNU_SOURCE
#include "jit_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array_grow.h"
#include "process_facts.h"

typedef struct captured {
  uint64_t koid;
  zxs_jit_symbols_t* symbols;  // NULL: none
} captured_t;

struct zxs_jit_capture {
  captured_t* processes;
  size_t count, cap;
  size_t bytes;  // what the sets hold
};

zxs_jit_capture_t* zxs_jit_capture_new(void) { return calloc(1, sizeof(zxs_jit_capture_t)); }

static const captured_t* find(const zxs_jit_capture_t* c, uint64_t koid) {
  for (size_t i = 0; i < c->count; i++) {
    if (c->processes[i].koid == koid) return &c->processes[i];
  }
  return NULL;
}

bool zxs_jit_capture_has(const zxs_jit_capture_t* c, uint64_t koid) {
  return find(c, koid) != NULL;
}

const zxs_jit_symbols_t* zxs_jit_capture_find(const zxs_jit_capture_t* c, uint64_t koid) {
  const captured_t* p = find(c, koid);
  return p != NULL ? p->symbols : NULL;
}

bool zxs_jit_read_file(const char* path, uint32_t owner, size_t max, void** data, size_t* size) {
  *data = NULL;
  *size = 0;
  // O_NONBLOCK: a FIFO planted under the name must not hang the recorder (it is refused below).
  const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size > max ||
      !(st.st_uid == 0 || st.st_uid == geteuid() || st.st_uid == owner)) {
    close(fd);
    return false;
  }
  // The file may grow while it is read (a JIT still running): read to its end, up to `max`.
  size_t cap = (size_t)st.st_size + 1, len = 0;
  uint8_t* buf = malloc(cap);
  bool ok = buf != NULL;
  while (ok) {
    if (len == cap && (len >= max || !zxs_array_grow((void**)&buf, &cap, len + 1, 1))) break;
    const size_t want = (cap < max ? cap : max) - len;
    if (want == 0) break;
    const ssize_t n = read(fd, buf + len, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  if (!ok || len == 0) {
    free(buf);
    return ok;
  }
  *data = buf;
  *size = len;
  return true;
}

// The uid of a live (or zombie) process, or (uid_t)-1.
static uint32_t process_uid(uint32_t pid) {
  char path[32];
  snprintf(path, sizeof(path), "/proc/%u", pid);
  struct stat st;
  return stat(path, &st) == 0 ? (uint32_t)st.st_uid : UINT32_MAX;
}

static bool is_jitdump_of(const char* path, uint32_t pid) {
  const char* slash = strrchr(path, '/');
  char expected[32];
  snprintf(expected, sizeof(expected), "jit-%u.dump", pid);
  return strcmp(slash != NULL ? slash + 1 : path, expected) == 0;
}

static size_t set_bytes(const zxs_jit_symbols_t* set) {
  return set->cap * sizeof(*set->symbols) + set->names_cap;
}

void zxs_jit_capture_process(zxs_jit_capture_t* c, uint64_t koid, uint32_t pid,
                             const char* const* mapped_paths, size_t path_count) {
  if (zxs_jit_capture_has(c, koid) ||
      !zxs_array_grow((void**)&c->processes, &c->cap, c->count + 1, sizeof(*c->processes))) {
    return;
  }
  captured_t* entry = &c->processes[c->count++];
  *entry = (captured_t){.koid = koid};
  // (A set may hold up to twice its limit: arrays grow by doubling.)
  const size_t left =
      c->bytes < ZXS_JIT_CAPTURE_MAX_BYTES ? ZXS_JIT_CAPTURE_MAX_BYTES - c->bytes : 0;
  zxs_jit_symbols_t set = {.limit = left < ZXS_JIT_SET_MAX_BYTES ? left : ZXS_JIT_SET_MAX_BYTES};
  if (set.limit == 0) return;
  const uint32_t owner = process_uid(pid);
  char path[64];
  snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
  void* data;
  size_t size;
  zx_status_t status = ZX_OK;
  if (zxs_jit_read_file(path, owner, ZXS_JIT_FILE_MAX, &data, &size)) {
    status = zxs_jit_parse_perf_map(&set, data, size);
    free(data);
  }
  for (size_t i = 0; i < path_count && status == ZX_OK; i++) {
    if (mapped_paths[i] == NULL || !is_jitdump_of(mapped_paths[i], pid)) continue;
    // The same dump mapped twice is read once.
    bool seen = false;
    for (size_t k = 0; k < i && !seen; k++) {
      seen = mapped_paths[k] != NULL && strcmp(mapped_paths[k], mapped_paths[i]) == 0;
    }
    if (seen || !zxs_jit_read_file(mapped_paths[i], owner, ZXS_JIT_FILE_MAX, &data, &size)) {
      continue;
    }
    const zx_status_t parsed = zxs_jit_parse_jitdump(&set, data, size);
    if (parsed == ZX_ERR_NO_MEMORY) status = parsed;
    free(data);
  }
  // What was read before running out stays; without memory to resolve, nothing does.
  if (set.count == 0 || zxs_jit_symbols_resolve(&set) != ZX_OK ||
      (entry->symbols = malloc(sizeof(set))) == NULL) {
    zxs_jit_symbols_free(&set);
    return;
  }
  *entry->symbols = set;
  c->bytes += set_bytes(&set);
}

typedef struct jitdump_paths {
  char** paths;
  size_t count, cap;
} jitdump_paths_t;

// Keeps the mapped files that may be jitdump files (jit-*.dump: zxs_jit_capture_process checks
// the pid), not the many libraries.
static zx_status_t add_jitdump_path(const zxs_prim_mapping_t* mapping, void* ctx) {
  jitdump_paths_t* found = ctx;
  const char* base = strrchr(mapping->path, '/');
  base = base != NULL ? base + 1 : mapping->path;
  if (strncmp(base, "jit-", 4) != 0) return ZX_OK;
  if (!zxs_array_grow((void**)&found->paths, &found->cap, found->count + 1,
                      sizeof(*found->paths)) ||
      (found->paths[found->count] = strdup(mapping->path)) == NULL) {
    return ZX_ERR_NO_MEMORY;
  }
  found->count++;
  return ZX_OK;
}

void zxs_jit_capture_self(zxs_jit_capture_t* c) {
  jitdump_paths_t found = {0};
  // Without the list (another platform, or no memory) there is nothing to read with confidence.
  if (zxs_facts_exec_mappings_each(add_jitdump_path, &found) == ZX_OK) {
    const zx_koid_t koid = zxs_facts_process_koid();  // the OS pid where mappings are listed
    zxs_jit_capture_process(c, koid, (uint32_t)koid, (const char* const*)found.paths, found.count);
  }
  for (size_t i = 0; i < found.count; i++) free(found.paths[i]);
  free(found.paths);
}

void zxs_jit_capture_free(zxs_jit_capture_t* c) {
  if (c == NULL) return;
  for (size_t i = 0; i < c->count; i++) {
    if (c->processes[i].symbols != NULL) zxs_jit_symbols_free(c->processes[i].symbols);
    free(c->processes[i].symbols);
  }
  free(c->processes);
  free(c);
}
