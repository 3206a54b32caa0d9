// How exporters name a location and an inlined call (internal to src/export/).
#ifndef ZXSAMPLER_SRC_REPORT_EXPORT_LABELS_H_
#define ZXSAMPLER_SRC_REPORT_EXPORT_LABELS_H_

#include <stdint.h>

#include "profile.h"
#include "string_builder.h"

// Appends the display label of a location: its function, else "<module base name>+0x<file
// address>", else "0x<address>". Raw: no escaping.
void zxs_export_append_label(zxs_sb_t* sb, const zxs_profile_t* profile, uint32_t location);

// Inline frames are labelled "<function> (inlined)" ("??" when unnamed), as perf shows them,
// so that a function inlined and the same one called stay apart.
#define ZXS_EXPORT_INLINED_SUFFIX " (inlined)"
void zxs_export_append_inline_label(zxs_sb_t* sb, const zxs_profile_inline_frame_t* frame);

// Kernel functions are marked as perf marks them: folded stacks (and the flame graph) as
// stackcollapse-perf.pl --kernel does, the top report as perf report's "[k]".
#define ZXS_EXPORT_FOLDED_KERNEL_SUFFIX "_[k]"
#define ZXS_EXPORT_TOP_KERNEL_SUFFIX " [k]"

// The base name of a path (after the last '/'); "" for NULL.
const char* zxs_export_basename(const char* path);

#endif  // ZXSAMPLER_SRC_REPORT_EXPORT_LABELS_H_
