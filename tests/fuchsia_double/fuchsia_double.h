// The Fuchsia double's own hook (tests only): what a Fuchsia program would get from the
// fuchsia.kernel.DebugResource protocol.
#ifndef ZXSAMPLER_TESTS_FUCHSIA_DOUBLE_FUCHSIA_DOUBLE_H_
#define ZXSAMPLER_TESTS_FUCHSIA_DOUBLE_FUCHSIA_DOUBLE_H_

#include <zxsampler/types.h>

// A new handle to the debug resource of the double's emulated kernel. Statuses as
// zxs_debug_resource_get() of a Linux build.
zx_status_t zxs_double_debug_resource_get(zx_handle_t* out);

#endif  // ZXSAMPLER_TESTS_FUCHSIA_DOUBLE_FUCHSIA_DOUBLE_H_
