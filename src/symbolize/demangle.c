// Demangling (see demangle.h): Rust names by demangle_rust.c; C++ by libstdc++'s __cxa_demangle,
// the demangler GCC's own tools use, maintained with the ABI; linked under the GCC Runtime Library
// Exception.
#define _GNU_SOURCE  // strndup
#include "demangle.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "demangle_rust.h"

#if ZXS_HAVE_CXA_DEMANGLE
// Declared in <cxxabi.h>, a C++ header.
char* __cxa_demangle(const char* mangled, char* buf, size_t* length, int* status);

static char* demangle_cxx(const char* name) {
  if (strncmp(name, "_Z", 2) != 0) return NULL;
  int status = 0;
  char* out = __cxa_demangle(name, NULL, NULL, &status);
  if (status != 0) {
    free(out);
    return NULL;
  }
  return out;
}
#else
static char* demangle_cxx(const char* name) {
  (void)name;
  return NULL;
}
#endif

static char* demangle_base(const char* name) {
  char* rust = zxs_demangle_rust(name);
  return rust != NULL ? rust : demangle_cxx(name);
}

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
