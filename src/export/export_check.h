// What every exporter checks before it writes (internal to src/export/).
#ifndef ZXSAMPLER_SRC_REPORT_EXPORT_CHECK_H_
#define ZXSAMPLER_SRC_REPORT_EXPORT_CHECK_H_

#include <stdio.h>
#include <zxsampler/types.h>

#include "modules.h"
#include "profile.h"

// ZX_OK if `out` is not NULL and every index in the profile is in range (see export.h), else
// ZX_ERR_INVALID_ARGS. Exporters that write to memory pass a non-NULL token for `out`.
zx_status_t zxs_export_check(const zxs_profile_t* profile, const void* out);

// ZX_ERR_IO if the stream has seen a write error, else ZX_OK.
zx_status_t zxs_export_stream_status(FILE* out);

#endif  // ZXSAMPLER_SRC_REPORT_EXPORT_CHECK_H_
