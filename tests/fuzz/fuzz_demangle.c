// Fuzzes the demangler (zxs_demangle: Rust legacy and v0 by demangle_rust.c, C++ where built
// with __cxa_demangle): any bytes as a symbol name. Whatever the name, no crash, no read past it
// (ASan), a bounded answer, the same one twice, nothing leaked (LeakSanitizer).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "demangle_rust.h"
#include "fuzz_fxt_check.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* name = malloc(size + 1);  // exactly sized: reads past the NUL are caught
  FUZZ_CHECK(name != NULL);
  if (size != 0) memcpy(name, data, size);
  name[size] = '\0';
  char* rust = zxs_demangle_rust(name);
  if (rust != NULL) {
    FUZZ_CHECK(strlen(rust) <= 64 * 1024);  // the output bound
    char* again = zxs_demangle_rust(name);
    FUZZ_CHECK(again != NULL && strcmp(again, rust) == 0);
    free(again);
  }
  char* any = zxs_demangle(name);
  // A Rust name without a symbol version reads the same either way.
  if (rust != NULL && strchr(name, '@') == NULL) FUZZ_CHECK(any != NULL && strcmp(any, rust) == 0);
  free(any);
  free(rust);
  free(name);
  return 0;
}
