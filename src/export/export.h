// Export formats of a profile (internal): what users open in the tools they already have.
//
// Every exporter only reads the profile (src/trace/profile.h) and writes to a stdio stream the
// caller opened: a file, stdout, or memory (open_memstream() / fmemopen()). Streams are written
// in binary-safe chunks and are neither flushed nor closed here.
//
// Common to every function below:
// - Statuses: ZX_OK; ZX_ERR_INVALID_ARGS for a NULL profile or stream, or an inconsistent
//   profile (a frame naming no location, a sample's frames outside `frames`, a location's
//   module outside `modules`, non-zero counts with NULL arrays); ZX_ERR_NO_MEMORY;
//   ZX_ERR_IO when the stream reports a write error (ferror()). After an error the stream may
//   hold a partial export.
// - Empty profiles (no samples, no modules) export fine: a valid, empty document.
// - Missing data never fails an export: a location without a function is shown as
//   "module+0xfile_address" (the module's base name) or "0xaddress" without a module; a NULL or
//   empty thread or process name is treated as unknown.
// - Thread-safety: the profile is only read, so any number of exports of one profile may run
//   at once, as long as nobody modifies or frees it meanwhile; each needs its own stream.
//   Not async-signal-safe (they allocate).
// - Output is deterministic: the same profile gives the same bytes.
#ifndef ZXSAMPLER_SRC_REPORT_EXPORT_H_
#define ZXSAMPLER_SRC_REPORT_EXPORT_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <zxsampler/types.h>

#include "profile.h"

// Flags for the stack-based exports (folded stacks, flame graph).
// The root frame of each stack is the sampled thread's name ("thread-<tid>" when unknown), so
// stacks are split per thread; threads of the same name are merged.
#define ZXS_EXPORT_THREAD_ROOT (1u << 0)
// Like ZXS_EXPORT_THREAD_ROOT, with the tid appended ("<name>-<tid>"): one root per thread.
#define ZXS_EXPORT_THREAD_ROOT_TID (1u << 1)
// The root frame of each stack (outside the thread root, if any) is the sampled process's name
// ("process-<pid>" when unknown), as stackcollapse-perf.pl writes the comm: different programs
// of a process tree stay apart, and processes of one program (every cc1plus of a build) merge.
#define ZXS_EXPORT_PROCESS_ROOT (1u << 2)

// --- pprof ----------------------------------------------------------------------------------
//
// The profile as pprof's profile.proto (github.com/google/pprof/proto/profile.proto), for
// `go tool pprof`, `pprof` and the many viewers that read it:
// - sample_type: ["samples"/"count", "cpu"/"nanoseconds"]; values [n, n * period]. Samples of
//   one thread with identical stacks are merged (n > 1). period_type "cpu"/"nanoseconds",
//   period = profile->period. When the period is unknown (0) the "cpu" values are 0 and
//   default_sample_type is "samples"; otherwise it is "cpu".
// - Labels per sample: "thread" (num = tid), "thread_name" (str, when known) and "pid" (num).
// - One Location per profile location (id = index + 1), leaf first in each sample as pprof
//   wants. Location.address is the runtime address of the instruction: the exact PC for an
//   interrupted instruction (frame 0), address - 1 for a return address (every other frame):
//   inside the call, which is what the location's function and line describe.
// - A Location has one Line (function, line) when its function is known, none otherwise (pprof
//   can then symbolize it from the binary, found by build ID or path), preceded by one Line per
//   call inlined there, innermost first, each with its own line. Functions are
//   deduplicated by (name, file); name == system_name (names are stored demangled or not as
//   the symbolizer gave them).
// - One Mapping per module with loaded segments (id = module index + 1): memory_start/limit
//   and file_offset from its first executable segment (its first non-empty segment if none is
//   executable), filename = path, build_id = lowercase hex. has_functions / has_filenames /
//   has_line_numbers / has_inline_frames are set when any location of the module has them
//   (pprof then leaves the mapping alone rather than symbolizing the binary itself). The
//   profile's process (profile->pid) has its modules first: pprof's `File:` is the first.
// - duration_nanos spans the first to the last sample's ticks plus one period (each sample
//   stands for one period); a comment names the profile's process.
//
// zxs_export_pprof() writes the gzip-compressed encoding (what pprof files are).
zx_status_t zxs_export_pprof(const zxs_profile_t* profile, FILE* out);

// The same encoding, uncompressed, into a malloc'd buffer (*data, to free(); NULL and 0 on
// error). Statuses as above, without ZX_ERR_IO; ZX_ERR_INVALID_ARGS also for NULL data/size.
zx_status_t zxs_export_pprof_encode(const zxs_profile_t* profile, uint8_t** data, size_t* size);

// --- Folded stacks --------------------------------------------------------------------------
//
// Brendan Gregg's collapsed-stack format (flamegraph.pl, speedscope, inferno, ...): one line
// per unique stack, "outer;...;inner COUNT\n", frames outermost first, sorted by byte order
// (as LC_ALL=C sort). Frames are labelled as said above (identical labels of different
// addresses merge); a location with inlined calls is several frames, each inlined one
// labelled "<function> (inlined)". Kernel frames end in "_[k]" (stackcollapse-perf.pl
// --kernel's mark, which flamegraph.pl colours). In labels, ';' becomes ':' and control
// characters (newlines, tabs) become ' '; an empty label is "[unknown]". `flags`: 0 or any of
// ZXS_EXPORT_PROCESS_ROOT and ZXS_EXPORT_THREAD_ROOT[_TID]. An empty profile writes nothing.
zx_status_t zxs_export_folded(const zxs_profile_t* profile, uint32_t flags, FILE* out);

// --- Flame graph ----------------------------------------------------------------------------
//
// A self-contained SVG flame graph (root "all" at the bottom, children sorted by name, width
// proportional to samples), written from the folded stacks above (same labels and flags): one
// <g> per frame with a <title> tooltip "LABEL (N samples, P%)", a <rect> and the label cut to
// fit ("..", none when under 3 characters fit). Colours are a deterministic hash of the label.
// An inline script adds click-to-zoom, hover details and a search box (hidden without
// scripting: the graph and its tooltips need none). Frames narrower than 0.1 px are left out,
// as flamegraph.pl does. `title` NULL means "CPU samples of <process> (pid N)". Text is
// XML-escaped, invalid UTF-8 replaced by U+FFFD. An empty profile gives an SVG that says
// "No samples".
zx_status_t zxs_export_flamegraph(const zxs_profile_t* profile, uint32_t flags, const char* title,
                                  FILE* out);

// --- Symbolizer markup ----------------------------------------------------------------------
//
// Fuchsia's symbolizer markup, as Fuchsia's own profiler of this era wrote samples, for
// `llvm-symbolizer --filter-markup` (LLVM >= 15) or Fuchsia's `symbolizer`:
//   {{{reset}}}
//   {{{module:ID:NAME:elf:BUILDID}}}                     per module with a build ID
//   {{{mmap:0xSTART:0xSIZE:load:ID:PERMS:0xVADDR}}}      per non-empty loaded segment
//   pid:PID tid:TID                                      per sample (plain text), then
//   {{{bt:0:0xPC:pc}}}                                   the interrupted instruction
//   {{{bt:N:0xADDRESS:ra}}}                              each return address
// IDs count from 0 over the modules written, in list order; NAME is the module's path (':',
// '{', '}' and control characters replaced by '_'; "unknown" when empty): LLVM finds the
// binary by build ID and shows the name, trace_read.c opens the path. BUILDID is lowercase
// hex, START the segment's runtime start, VADDR its file address, PERMS "r", "rx", "rw", ...
// Modules without a build ID and segments without permissions or size cannot be expressed
// (LLVM rejects them) and are left out: their PCs stay unsymbolized. A frame is ":pc" or ":ra"
// as the location records it (frame 0 is exact, the others are return addresses); addresses
// are written as sampled.
zx_status_t zxs_export_markup(const zxs_profile_t* profile, FILE* out);

// The module lines alone (a symbolizer context for backtraces written separately):
// zxs_modules_write_markup() in src/symbolize/modules_markup.h.

// --- Top functions --------------------------------------------------------------------------
//
// A text report: a header (process, samples, threads with samples, period, duration as for
// pprof, in ms), then
// one row per function label (kernel functions marked " [k]", as perf report does), inlined
// calls as their own "<function> (inlined)" rows:
// self (samples where it is the innermost frame) and total
// (samples where it is anywhere in the stack, once per sample even when recursive), as counts
// and percent of all samples, sorted by self (then total, then name) descending; the first
// `max_rows` rows (0 = all).
// Flags: ZXS_EXPORT_TOP_BY_TOTAL sorts by total first; ZXS_EXPORT_TOP_PER_THREAD adds the
// same table for each thread (by sample count, descending; percent of that thread's samples).
#define ZXS_EXPORT_TOP_BY_TOTAL (1u << 8)
#define ZXS_EXPORT_TOP_PER_THREAD (1u << 9)
// Code without a name is one row per module ("[libfoo.so.1]") unless this flag asks for one row
// per address ("libfoo.so.1+0x1234").
#define ZXS_EXPORT_TOP_ADDRESSES (1u << 10)
zx_status_t zxs_export_top(const zxs_profile_t* profile, size_t max_rows, uint32_t flags,
                           FILE* out);

#endif  // ZXSAMPLER_SRC_REPORT_EXPORT_H_
