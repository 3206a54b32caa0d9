// A profile's samples collapsed into unique stacks, as the folded format and the flame graph
// show them (internal to src/export/).
#ifndef ZXSAMPLER_SRC_REPORT_STACK_COLLAPSE_H_
#define ZXSAMPLER_SRC_REPORT_STACK_COLLAPSE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>

#include "profile.h"

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

#endif  // ZXSAMPLER_SRC_REPORT_STACK_COLLAPSE_H_
