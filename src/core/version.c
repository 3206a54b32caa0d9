// The library's version (version.h), checked against the build's project version.
#include <zxsampler/version.h>

#include "zxs_config.h"

#define ZXS_STR2(x) #x
#define ZXS_STR(x) ZXS_STR2(x)
#define ZXS_VERSION_TEXT \
  ZXS_STR(ZXS_VERSION_MAJOR) "." ZXS_STR(ZXS_VERSION_MINOR) "." ZXS_STR(ZXS_VERSION_PATCH)

// meson.build's version and version.h's macros are one version: a build with them apart fails.
_Static_assert(ZXS_VERSION_MAJOR == ZXS_PROJECT_VERSION_MAJOR &&
                   ZXS_VERSION_MINOR == ZXS_PROJECT_VERSION_MINOR &&
                   ZXS_VERSION_PATCH == ZXS_PROJECT_VERSION_PATCH,
               "include/zxsampler/version.h and meson.build name different versions");

uint32_t zxs_version(void) { return ZXS_VERSION_NUMBER; }

const char* zxs_version_string(void) { return ZXS_VERSION_TEXT; }
