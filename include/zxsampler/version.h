// The library's version: the macros say what a program was compiled against, the functions
// what it runs with. Semantic versioning: a new minor version adds, a new major one breaks.
#ifndef ZXSAMPLER_VERSION_H_
#define ZXSAMPLER_VERSION_H_

#include <stdint.h>
#include <zxsampler/types.h>

#define ZXS_VERSION_MAJOR 0
#define ZXS_VERSION_MINOR 1
#define ZXS_VERSION_PATCH 0
// One number that orders versions: major << 16 | minor << 8 | patch.
#define ZXS_VERSION_NUMBER \
  ((ZXS_VERSION_MAJOR << 16) | (ZXS_VERSION_MINOR << 8) | ZXS_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

// The version of the library in use, as ZXS_VERSION_NUMBER. Async-signal-safe.
ZXS_API uint32_t zxs_version(void);
// The same as "MAJOR.MINOR.PATCH", a static string. Async-signal-safe.
ZXS_API const char* zxs_version_string(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ZXSAMPLER_VERSION_H_
