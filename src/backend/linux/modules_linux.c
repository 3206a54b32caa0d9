// The calling process's loaded modules (platform.h): the loader's list (modules_dl.c), the
// auxiliary vector and /proc/self/exe; its executable file mappings from /proc/self/maps.
#define _GNU_SOURCE

#include <errno.h>
#include <stdio.h>
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

// /proc/self/maps: "START-END PERMS OFFSET DEV INODE PATH". A path the kernel marks " (deleted)"
// no longer names the file mapped, and is left out.
zx_status_t zxs_prim_exec_mappings_each(zxs_prim_mapping_fn fn, void* ctx) {
  FILE* maps = fopen("/proc/self/maps", "re");
  if (maps == NULL) return errno == ENOMEM ? ZX_ERR_NO_MEMORY : ZX_ERR_NOT_SUPPORTED;
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  zx_status_t status = ZX_OK;
  static const char kDeleted[] = " (deleted)";
  while (status == ZX_OK && (len = getline(&line, &cap, maps)) > 0) {
    if (line[len - 1] == '\n') line[--len] = '\0';
    unsigned long long start, end, offset;
    char perms[5];
    int path_at = 0;
    if (sscanf(line, "%llx-%llx %4s %llx %*s %*s %n", &start, &end, perms, &offset, &path_at) !=
            4 ||
        path_at == 0 || perms[2] != 'x' || line[path_at] != '/') {
      continue;
    }
    const size_t path_len = (size_t)len - (size_t)path_at;
    if (path_len >= sizeof(kDeleted) - 1 &&
        strcmp(line + len - (sizeof(kDeleted) - 1), kDeleted) == 0) {
      continue;
    }
    const zxs_prim_mapping_t mapping = {.start = start,
                                        .end = end,
                                        .offset = offset,
                                        .prot = (perms[0] == 'r' ? ZXS_PRIM_PROT_R : 0) |
                                                (perms[1] == 'w' ? ZXS_PRIM_PROT_W : 0) |
                                                ZXS_PRIM_PROT_X,
                                        .path = line + path_at};
    status = fn(&mapping, ctx);
  }
  free(line);
  fclose(maps);
  return status;
}
