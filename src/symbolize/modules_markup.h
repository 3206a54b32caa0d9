// Module lists as symbolizer markup (LLVM's "Symbolizer Markup Format", from Fuchsia): the
// {{{module}}} and {{{mmap}}} elements that name a process's modules to a symbolizer. Trace files
// carry a process's modules this way (trace_file.h); the markup export writes them before its
// backtraces (export.h). Internal; read-only over the list: concurrent calls are safe.
#ifndef ZXSAMPLER_SRC_SYMBOLIZE_MODULES_MARKUP_H_
#define ZXSAMPLER_SRC_SYMBOLIZE_MODULES_MARKUP_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <zxsampler/types.h>

#include "modules.h"

// ZX_OK if the list's arrays are there as counted and no build ID is longer than
// ZXS_BUILD_ID_MAX, else ZX_ERR_INVALID_ARGS.
zx_status_t zxs_modules_check(const zxs_module_list_t* modules);

// Flag of zxs_modules_write_markup(): after each mmap element, a line "file_offset:0xOFFSET", the
// segment's offset in its file, which markup has no field for (plain text, which symbolizers
// pass through and older readers of trace files skip). Trace files carry it.
#define ZXS_MODULES_MARKUP_FILE_OFFSETS (1u << 0)
#define ZXS_MARKUP_FILE_OFFSET_PREFIX "file_offset:"

// Writes the {{{module}}} and {{{mmap}}} lines of `modules` (no reset, no backtraces). Modules
// without a build ID and segments without permissions or size cannot be expressed (LLVM rejects
// them) and are left out. The list needs no zxs_modules_index(). ZX_ERR_INVALID_ARGS for NULL
// arguments, unknown flags or a list zxs_modules_check() refuses; ZX_ERR_IO if the stream saw a
// write error; else ZX_OK.
zx_status_t zxs_modules_write_markup(const zxs_module_list_t* modules, uint32_t flags, FILE* out);

// The elements alone, for a list already checked (the markup export's).
void zxs_modules_markup_elements(const zxs_module_list_t* modules, bool file_offsets, FILE* out);

#endif  // ZXSAMPLER_SRC_SYMBOLIZE_MODULES_MARKUP_H_
