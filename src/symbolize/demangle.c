// Demangling with libstdc++'s __cxa_demangle (see demangle.h): the demangler GCC's own tools use,
// maintained with the ABI; linked under the GCC Runtime Library Exception.
#define _GNU_SOURCE  // strndup
#include "demangle.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if ZXS_HAVE_CXA_DEMANGLE
// Declared in <cxxabi.h>, a C++ header.
char* __cxa_demangle(const char* mangled, char* buf, size_t* length, int* status);

// Rust legacy symbols end in a hash path segment: "::h" and 16 hex digits.
static void strip_rust_hash(char* name) {
  size_t len = strlen(name);
  if (len < 19 || memcmp(name + len - 19, "::h", 3) != 0) return;
  for (size_t i = len - 16; i < len; i++) {
    bool hex = (name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f');
    if (!hex) return;
  }
  name[len - 19] = '\0';
}

static char* demangle_base(const char* name) {
  if (strncmp(name, "_Z", 2) != 0) return NULL;
  int status = 0;
  char* out = __cxa_demangle(name, NULL, NULL, &status);
  if (status != 0) {
    free(out);
    return NULL;
  }
  if (strncmp(name, "_ZN", 3) == 0) strip_rust_hash(out);
  return out;
}
#else
static char* demangle_base(const char* name) {
  (void)name;
  return NULL;
}
#endif

char* zxs_demangle(const char* name) {
  if (name == NULL) return NULL;
  // An ELF symbol version ("memcpy@GLIBC_2.2.5", "__libc_start_main@@GLIBC_2.34") names the
  // ABI, not the function: people read the name without it (as perf shows it).
  const char* at = strchr(name, '@');
  if (at == NULL || at == name) return demangle_base(name);
  char* base = strndup(name, (size_t)(at - name));
  if (base == NULL) return NULL;
  char* demangled = demangle_base(base);
  if (demangled == NULL) return base;
  free(base);
  return demangled;
}
