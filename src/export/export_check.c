// The exporters' argument checks (export_check.h).
#include "export_check.h"

#include "modules_markup.h"

zx_status_t zxs_export_check(const zxs_profile_t* profile, const void* out) {
  if (out == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (profile == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  if ((profile->thread_count > 0 && profile->threads == NULL) ||
      (profile->location_count > 0 && profile->locations == NULL) ||
      (profile->sample_count > 0 && profile->samples == NULL) ||
      (profile->frame_count > 0 && profile->frames == NULL) ||
      (profile->inline_frame_count > 0 && profile->inline_frames == NULL) ||
      zxs_modules_check(&profile->modules) != ZX_OK) {
    return ZX_ERR_INVALID_ARGS;
  }
  for (size_t i = 0; i < profile->location_count; i++) {
    const zxs_profile_location_t* loc = &profile->locations[i];
    if (loc->module < -1 || (loc->module >= 0 && (size_t)loc->module >= profile->modules.count) ||
        loc->inline_first > profile->inline_frame_count ||
        loc->inline_count > profile->inline_frame_count - loc->inline_first) {
      return ZX_ERR_INVALID_ARGS;
    }
  }
  for (size_t i = 0; i < profile->sample_count; i++) {
    const zxs_profile_sample_t* s = &profile->samples[i];
    if (s->first_frame > profile->frame_count || s->depth > profile->frame_count - s->first_frame) {
      return ZX_ERR_INVALID_ARGS;
    }
  }
  for (size_t i = 0; i < profile->frame_count; i++) {
    if (profile->frames[i] >= profile->location_count) {
      return ZX_ERR_INVALID_ARGS;
    }
  }
  return ZX_OK;
}

zx_status_t zxs_export_stream_status(FILE* out) { return ferror(out) ? ZX_ERR_IO : ZX_OK; }
