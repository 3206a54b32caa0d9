// The calling process's loaded modules (platform.h): the loader's list (modules_dl.c), the
// auxiliary vector and /proc/self/exe.
#define _GNU_SOURCE

#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "../elf/modules_dl.h"
#include "platform.h"

zx_status_t zxs_prim_modules_each(zxs_prim_module_fn fn, void* ctx) {
  return zxs_dl_modules_each(fn, ctx, (uintptr_t)getauxval(AT_PHDR),
                             (uintptr_t)getauxval(AT_SYSINFO_EHDR));
}

// /proc/self/exe names the file even when argv[0] or AT_EXECFN was relative; AT_EXECFN serves
// where /proc is not mounted.
zx_status_t zxs_prim_modules_main_path(char** path) {
  for (size_t size = 256; size <= 65536; size *= 2) {
    char* buf = malloc(size);
    if (buf == NULL) {
      return ZX_ERR_NO_MEMORY;
    }
    ssize_t n = readlink("/proc/self/exe", buf, size);
    if (n >= 0 && (size_t)n < size) {
      buf[n] = '\0';
      *path = buf;
      return ZX_OK;
    }
    free(buf);
    if (n < 0) {
      break;
    }
  }
  const char* execfn = (const char*)getauxval(AT_EXECFN);
  *path = strdup(execfn != NULL ? execfn : "");
  return *path != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
}
