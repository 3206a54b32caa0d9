// Symbolizer markup (LLVM's "Symbolizer Markup Format", from Fuchsia): the text Fuchsia's
// profiler of this era wrote, turned into symbolized backtraces by llvm-symbolizer
// --filter-markup or Fuchsia's symbolizer.
#include <inttypes.h>

#include "export.h"
#include "export_check.h"
#include "modules_markup.h"

zx_status_t zxs_export_markup(const zxs_profile_t* profile, FILE* out) {
  zx_status_t status = zxs_export_check(profile, out);
  if (status != ZX_OK) {
    return status;
  }
  fputs("{{{reset}}}\n", out);
  zxs_modules_markup_elements(&profile->modules, false, out);
  for (size_t i = 0; i < profile->sample_count; i++) {
    const zxs_profile_sample_t* s = &profile->samples[i];
    fprintf(out, "pid:%" PRIu64 " tid:%" PRIu64 "\n", s->pid, s->tid);
    for (uint32_t d = 0; d < s->depth; d++) {
      const zxs_profile_location_t* loc = &profile->locations[profile->frames[s->first_frame + d]];
      fprintf(out, "{{{bt:%" PRIu32 ":0x%" PRIx64 ":%s}}}\n", d, loc->address,
              loc->is_return_address ? "ra" : "pc");
    }
  }
  return zxs_export_stream_status(out);
}
