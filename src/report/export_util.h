// Helpers shared by the exporters (internal to src/report/export*.c).
#ifndef ZXSAMPLER_SRC_REPORT_EXPORT_UTIL_H_
#define ZXSAMPLER_SRC_REPORT_EXPORT_UTIL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <zxsampler/types.h>

#include "profile.h"

// ZX_OK if `out` is not NULL and every index in the profile is in range (see export.h), else
// ZX_ERR_INVALID_ARGS. Exporters that write to memory pass a non-NULL token for `out`.
zx_status_t zxs_export_check(const zxs_profile_t* profile, const void* out);

// ZX_ERR_IO if the stream has seen a write error, else ZX_OK.
zx_status_t zxs_export_stream_status(FILE* out);

// A growable NUL-terminated string; allocation failure is sticky (`failed`).
typedef struct zxs_sb {
  char* data;  // NULL until something is appended
  size_t len;
  size_t cap;
  bool failed;
} zxs_sb_t;

void zxs_sb_append(zxs_sb_t* sb, const char* s, size_t len);
void zxs_sb_puts(zxs_sb_t* sb, const char* s);
void zxs_sb_printf(zxs_sb_t* sb, const char* format, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
// The content ("" when empty); stays owned by the builder.
const char* zxs_sb_str(const zxs_sb_t* sb);
void zxs_sb_free(zxs_sb_t* sb);

// Appends the display label of a location: its function, else "<module base name>+0x<file
// address>", else "0x<address>". Raw: no escaping.
void zxs_export_append_label(zxs_sb_t* sb, const zxs_profile_t* profile, uint32_t location);

// Inline frames are labelled "<function> (inlined)" ("??" when unnamed), as perf shows them,
// so that a function inlined and the same one called stay apart.
#define ZXS_EXPORT_INLINED_SUFFIX " (inlined)"
void zxs_export_append_inline_label(zxs_sb_t* sb, const zxs_profile_inline_frame_t* frame);

// The base name of a path (after the last '/'); "" for NULL.
const char* zxs_export_basename(const char* path);

// Thread names by tid.
typedef struct zxs_thread_index {
  const zxs_profile_thread_t** sorted;  // by tid
  size_t count;
} zxs_thread_index_t;

zx_status_t zxs_thread_index_init(zxs_thread_index_t* index, const zxs_profile_t* profile);
// The thread's name, NULL when unknown (no thread record or an empty name).
const char* zxs_thread_index_name(const zxs_thread_index_t* index, zx_koid_t tid);
void zxs_thread_index_free(zxs_thread_index_t* index);

// Interned strings: each distinct string gets the next index, from 0.
typedef struct zxs_strtab {
  char** strings;  // by index, owned
  size_t count;
  size_t strings_cap;
  uint32_t* slots;  // open addressing: index + 1, 0 = empty
  size_t slot_count;
} zxs_strtab_t;

// The index of `s` (added if new); -1 when out of memory.
int64_t zxs_strtab_intern(zxs_strtab_t* tab, const char* s);
void zxs_strtab_free(zxs_strtab_t* tab);

// One unique stack of the folded format: "outer;...;inner" and its sample count.
typedef struct zxs_export_stack {
  char* line;
  uint64_t count;
} zxs_export_stack_t;

// The profile's stacks collapsed as zxs_export_folded() describes (flags: thread roots), sorted
// by byte order. Frame-wise order instead (frame names compared one by one, so that stacks
// sharing leading frames are adjacent and siblings are sorted) when `framewise`.
zx_status_t zxs_export_collapse(const zxs_profile_t* profile, uint32_t flags, bool framewise,
                                zxs_export_stack_t** stacks, size_t* count);
void zxs_export_stacks_free(zxs_export_stack_t* stacks, size_t count);

// Appends n / total as a percentage with two decimals ("12.34"), without the locale-dependent
// %f; "0.00" when total is 0.
void zxs_sb_percent(zxs_sb_t* sb, uint64_t n, uint64_t total);

// The profile's duration in ns: first to last sample's ticks, plus one period when it is known
// (each sample stands for one period). 0 without samples.
uint64_t zxs_export_duration_ns(const zxs_profile_t* profile);

// 32-bit FNV-1a of a string (deterministic colours, hashing).
uint32_t zxs_export_hash(const char* s, size_t len);

#endif  // ZXSAMPLER_SRC_REPORT_EXPORT_UTIL_H_
