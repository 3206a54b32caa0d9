// How exporters name a location (export_labels.h).
#include "export_labels.h"

#include <inttypes.h>
#include <string.h>

const char* zxs_export_basename(const char* path) {
  if (path == NULL) {
    return "";
  }
  const char* slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

void zxs_export_append_label(zxs_sb_t* sb, const zxs_profile_t* profile, uint32_t location) {
  const zxs_profile_location_t* loc = &profile->locations[location];
  if (loc->function != NULL && loc->function[0] != '\0') {
    zxs_sb_puts(sb, loc->function);
    return;
  }
  const char* base =
      loc->module >= 0 ? zxs_export_basename(profile->modules.modules[loc->module].path) : "";
  if (base[0] != '\0') {
    zxs_sb_printf(sb, "%s+0x%" PRIx64, base, loc->file_address);
  } else {
    zxs_sb_printf(sb, "0x%" PRIx64, loc->address);
  }
}

void zxs_export_append_inline_label(zxs_sb_t* sb, const zxs_profile_inline_frame_t* frame) {
  zxs_sb_puts(sb, frame->function != NULL && frame->function[0] != '\0' ? frame->function : "??");
  zxs_sb_puts(sb, ZXS_EXPORT_INLINED_SUFFIX);
}
