// Status names from the one list in types.h (internal).
#ifndef ZXSAMPLER_SRC_CORE_STATUS_NAMES_H_
#define ZXSAMPLER_SRC_CORE_STATUS_NAMES_H_

#include <zxsampler/types.h>

// The name of a listed status ("ZX_ERR_TIMED_OUT"), or NULL. Async-signal-safe.
const char* zxs_status_name(zx_status_t status);

#endif  // ZXSAMPLER_SRC_CORE_STATUS_NAMES_H_
