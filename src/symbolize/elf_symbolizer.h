// Symbolization of file addresses in one ELF file: function names from .symtab and .dynsym,
// the GNU build ID, and (with libdw) source file and line. A 64-bit Mach-O file (macOS; thin,
// or universal: this host's slice, else the first 64-bit one) opens too: names from LC_SYMTAB's
// symbols in code sections (without Darwin's leading underscore), LC_UUID as the build ID,
// LC_SEGMENT_64s as the load segments; no lines.
//
// Only 64-bit little-endian ELF is read, of any machine, so files of another host can be
// symbolized here. Input is untrusted: every offset and size is checked against the file, and
// a malformed file yields a status, never a crash or an out-of-bounds read. Structural damage
// (a section or segment reaching past the end of the file, bad table entry sizes) rejects the
// whole file; individual bad symbols (name out of range) are skipped.
//
// Source lines come from elfutils' libdw when this file is compiled with ZXS_HAVE_LIBDW=1 (and
// linked with -ldw); libdw also finds separate debug files (/usr/lib/debug/.build-id/..,
// .gnu_debuglink; and, if DEBUGINFOD_URLS is set in the environment, libdw's debuginfod client
// may fetch them over the network). Without it, lookups give names only.
//
// Addresses are file addresses (link-time virtual addresses; see modules.h for how a runtime
// PC becomes one).
#ifndef ZXSAMPLER_SRC_REPORT_ELF_SYMBOLIZER_H_
#define ZXSAMPLER_SRC_REPORT_ELF_SYMBOLIZER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>

#include "modules.h"

// An opened ELF file. Not thread-safe: use one handle from one thread at a time (libdw's state
// is created lazily and is not safe for concurrent queries); separate handles are independent.
typedef struct zxs_elf zxs_elf_t;

// Where a name came from.
typedef enum zxs_elf_symbol_source {
  ZXS_ELF_SOURCE_NONE = 0,    // no name found (only a line)
  ZXS_ELF_SOURCE_SYMTAB = 1,  // .symtab (includes static functions; often stripped)
  ZXS_ELF_SOURCE_DYNSYM = 2,  // .dynsym (exported symbols only)
  ZXS_ELF_SOURCE_DWARF = 3,   // DWARF subprogram, via libdw (maybe a separate debug file)
} zxs_elf_symbol_source_t;

// A function inlined at the looked-up address (see zxs_elf_location_t.inlined).
typedef struct zxs_elf_inline_frame {
  const char* name;  // as in the file (linkage name preferred); NULL if DWARF gives none
  const char* file;  // where this frame is at the address; NULL if unknown
  uint32_t line;     // 0 if unknown
  uint32_t column;   // 0 if unknown
} zxs_elf_inline_frame_t;

// The result of a lookup. Strings stay valid until zxs_elf_close() of the handle.
typedef struct zxs_elf_location {
  const char* name;                // function name as in the file (not demangled); NULL if none
  uint64_t symbol_address;         // file address where the function starts
  uint64_t symbol_size;            // 0 if unknown
  uint64_t offset;                 // queried address - symbol_address (before any - 1)
  zxs_elf_symbol_source_t source;  // where name came from
  const char* file;                // source file (path as recorded in DWARF); NULL if unknown
  uint32_t line;                   // 1-based; 0 if unknown
  uint32_t column;                 // 1-based; 0 if unknown
  // With libdw, the calls inlined at the address, innermost first. The innermost has the
  // address's own line; each other frame, and then `file`/`line` above, the call site of the
  // frame inside it, so that every function gets its own line. Points into the handle: valid
  // until the next lookup or zxs_elf_close(). NULL and 0 when nothing is inlined there.
  const zxs_elf_inline_frame_t* inlined;
  size_t inline_count;
} zxs_elf_location_t;

// Opens and indexes the ELF file at `path`: reads its headers, symbol tables and build ID, then
// closes the file (libdw, when used, reopens it on the first line lookup). Returns ZX_OK,
// ZX_ERR_INVALID_ARGS, ZX_ERR_NOT_FOUND (no such file), ZX_ERR_ACCESS_DENIED, ZX_ERR_NOT_FILE
// (not a regular file), ZX_ERR_IO (read error), ZX_ERR_IO_DATA_INTEGRITY (not ELF, truncated
// or malformed), ZX_ERR_NOT_SUPPORTED (ELF, but 32-bit or big-endian) or ZX_ERR_NO_MEMORY.
// Thread-safe (each call makes its own handle).
zx_status_t zxs_elf_open(const char* path, zxs_elf_t** out);

// As zxs_elf_open(), the file alone: no separate debug file is looked for and nothing is fetched
// (for a module captured in process, where the program is still running). Thread-safe.
zx_status_t zxs_elf_open_file_only(const char* path, zxs_elf_t** out);

// As zxs_elf_open(), for an image of `size` bytes in memory laid out as the file (e.g. the
// vDSO, whose whole file is mapped at AT_SYSINFO_EHDR). Everything needed is copied: `data`
// need not outlive the call. Such a handle has no source lines (libdw needs a file).
zx_status_t zxs_elf_open_memory(const void* data, size_t size, zxs_elf_t** out);

// Releases the handle and every string it returned. NULL is fine.
void zxs_elf_close(zxs_elf_t* elf);

// The file's GNU build ID (from PT_NOTE segments, else SHT_NOTE sections). *id points into the
// handle. Returns ZX_OK, ZX_ERR_NOT_FOUND (none, or longer than 64 bytes) or
// ZX_ERR_INVALID_ARGS.
zx_status_t zxs_elf_build_id(const zxs_elf_t* elf, const uint8_t** id, size_t* size);

// The ID that names the module in traces (modules.h): the GNU build ID (Mach-O: LC_UUID) where
// there is one, else the derived ID (ZXS_DERIVED_ID_SIZE bytes) of the Go build ID note, else of
// the file's bytes (hashed when the file is opened). *id points into the handle. Returns ZX_OK
// or ZX_ERR_INVALID_ARGS.
zx_status_t zxs_elf_module_id(const zxs_elf_t* elf, const uint8_t** id, size_t* size);

// zxs_elf_module_id() of the file at `path`, copied into `id` (for a module captured in process:
// no separate debug file is looked for, nothing is fetched). Statuses of zxs_elf_open().
// Thread-safe.
zx_status_t zxs_elf_file_id(const char* path, uint8_t id[ZXS_BUILD_ID_MAX], size_t* size);

// The file's PT_LOAD segments, in program-header order (*segments points into the handle; NULL
// with *count 0 when there are none). Returns ZX_OK or ZX_ERR_INVALID_ARGS.
zx_status_t zxs_elf_load_segments(const zxs_elf_t* elf, const zxs_segment_t** segments,
                                  size_t* count);

// How many function symbols were indexed (after merging aliases at one address).
size_t zxs_elf_symbol_count(const zxs_elf_t* elf);

// Whether this build can give source lines and inline frames (compiled with ZXS_HAVE_LIBDW=1).
bool zxs_elf_have_line_info(void);

// Lookup flags.
//
// Return addresses (every frame but the innermost one of a stack sample, e.g. entries 1.. of
// zxs_frame_walk()) point after the call, possibly into the next line or function. Pass them
// unchanged with ZXS_ELF_LOOKUP_RETURN_ADDRESS: the lookup is then done at address - 1 (inside
// the call instruction), while `offset` is still reported from the address given. The caller
// must not subtract 1 itself as well. The innermost PC is looked up without the flag.
#define ZXS_ELF_LOOKUP_RETURN_ADDRESS (1u << 0)
// Names only: skip libdw even when it is available (cheaper; no lines, no inline frames).
#define ZXS_ELF_LOOKUP_NO_LINES (1u << 1)

// Symbolizes file address `address`: the function whose symbol covers it (a sized symbol's
// [start, start + size), or for size-0 symbols up to the next symbol or the end of its
// section), and with libdw the source file, line and column, and the calls inlined there.
// Where the symbol tables have no cover but DWARF has (e.g. a stripped file with a separate
// debug file), the DWARF function name is used. Among aliases at one address it prefers sized,
// global, FUNC, then the fewest leading underscores (so "malloc" over "__libc_malloc"). Returns
// ZX_OK when a name or a line was found (*out filled; name or file may still be NULL),
// ZX_ERR_NOT_FOUND when neither was, ZX_ERR_INVALID_ARGS for NULL arguments or unknown flags. Not
// thread-safe (see zxs_elf_t).
zx_status_t zxs_elf_lookup(zxs_elf_t* elf, uint64_t address, uint32_t flags,
                           zxs_elf_location_t* out);

#endif  // ZXSAMPLER_SRC_REPORT_ELF_SYMBOLIZER_H_
