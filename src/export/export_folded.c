// Folded (collapsed) stacks: Brendan Gregg's flamegraph.pl input format.
#include <inttypes.h>

#include "export.h"
#include "export_check.h"
#include "stack_collapse.h"

zx_status_t zxs_export_folded(const zxs_profile_t* profile, uint32_t flags, FILE* out) {
  zx_status_t status = zxs_export_check(profile, out);
  if (status != ZX_OK) {
    return status;
  }
  zxs_export_stack_t* stacks;
  size_t count;
  status = zxs_export_collapse(profile, flags, false, &stacks, &count);
  if (status != ZX_OK) {
    return status;
  }
  for (size_t i = 0; i < count; i++) {
    fprintf(out, "%s %" PRIu64 "\n", stacks[i].line, stacks[i].count);
  }
  zxs_export_stacks_free(stacks, count);
  return zxs_export_stream_status(out);
}
