// Names of JIT-compiled code (internal): the perf map a JIT writes (/tmp/perf-PID.map: node
// --perf-basic-prof, the JVM's perf-map-agent, LuaJIT, .NET, Python 3.12's -X perf) and jitdump
// files (jit-PID.dump, Linux perf's tools/perf/Documentation/jitdump-specification.txt).
//
// A set collects the symbols of one process in the order the JIT announced them; resolving it
// makes the ranges disjoint, the later of two overlapping symbols winning where they overlap
// (the JIT reused the memory), as perf does. Plain data; nothing here touches files (see
// jit_capture.h) and nothing is async-signal-safe.
#ifndef ZXSAMPLER_SRC_SYMBOLIZE_JIT_SYMBOLS_H_
#define ZXSAMPLER_SRC_SYMBOLIZE_JIT_SYMBOLS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>

// Longer names are cut to this many bytes.
#define ZXS_JIT_NAME_MAX 1024u
// What one set may hold (symbols and names, in bytes) unless its `limit` says less.
#define ZXS_JIT_SET_MAX_BYTES (64u << 20)

typedef struct zxs_jit_symbol {
  uint64_t start, size;  // code at [start, start + size); size > 0, no overflow
  size_t name;           // offset of its NUL-terminated name in the set's `names`
  size_t order;          // announcement order (later wins)
} zxs_jit_symbol_t;

typedef struct zxs_jit_symbols {
  zxs_jit_symbol_t* symbols;  // announcement order; sorted by start and disjoint once resolved
  size_t count, cap;
  char* names;
  size_t names_len, names_cap;
  size_t limit;      // bytes this set may use (0: ZXS_JIT_SET_MAX_BYTES)
  bool resolved;     // zxs_jit_symbols_resolve() ran since the last add
  uint64_t skipped;  // malformed lines or records, and symbols over the limit, left out
} zxs_jit_symbols_t;

// Adds code [start, start + size) named `name` (`len` bytes, cut at a line break or
// ZXS_JIT_NAME_MAX). A size of 0, a range that wraps around or an empty name is counted in
// `skipped` and ZX_OK. ZX_ERR_NO_MEMORY: no memory, or the set is at its limit (counted too).
zx_status_t zxs_jit_symbols_add(zxs_jit_symbols_t* set, uint64_t start, uint64_t size,
                                const char* name, size_t len);

// Parses perf map text: lines "START SIZE NAME", START and SIZE hex (with or without 0x), the name
// to the end of the line. Malformed lines are counted in `skipped`. ZX_OK, or ZX_ERR_NO_MEMORY
// (the symbols parsed so far stay).
zx_status_t zxs_jit_parse_perf_map(zxs_jit_symbols_t* set, const char* text, size_t size);

// Parses a jitdump file in this machine's byte order: JIT_CODE_LOAD names code, JIT_CODE_MOVE
// moves a loaded function (by its code index), other records are skipped by their size, and a
// truncated last record (a JIT still writing) ends the file. ZX_ERR_IO_DATA_INTEGRITY: not a
// jitdump file (magic, header size); ZX_ERR_NOT_SUPPORTED: a file of the other byte order;
// ZX_ERR_NO_MEMORY as above.
zx_status_t zxs_jit_parse_jitdump(zxs_jit_symbols_t* set, const void* data, size_t size);

// Sorts the set by start and makes the ranges disjoint: where symbols overlap, the later one
// keeps the range and the earlier keeps what is left of its own (in pieces). ZX_ERR_NO_MEMORY
// leaves the set as it was.
zx_status_t zxs_jit_symbols_resolve(zxs_jit_symbols_t* set);

// The symbol of a resolved set whose range holds `address`, or NULL.
const zxs_jit_symbol_t* zxs_jit_symbols_lookup(const zxs_jit_symbols_t* set, uint64_t address);

// The name of a symbol of `set`.
static inline const char* zxs_jit_symbol_name(const zxs_jit_symbols_t* set,
                                              const zxs_jit_symbol_t* symbol) {
  return set->names + symbol->name;
}

// The set as perf map text ("%llx %llx NAME\n" lines, in the set's order), malloc'd into *text
// (caller frees; NULL when empty). ZX_ERR_NO_MEMORY.
zx_status_t zxs_jit_symbols_write_perf_map(const zxs_jit_symbols_t* set, char** text, size_t* size);

// Frees what the set holds and empties it (its limit stays).
void zxs_jit_symbols_free(zxs_jit_symbols_t* set);

#endif  // ZXSAMPLER_SRC_SYMBOLIZE_JIT_SYMBOLS_H_
