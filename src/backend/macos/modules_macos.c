// macOS: the calling process's loaded images (platform.h), from dyld's image list: each image's
// Mach-O header in memory, its segments as PT_LOAD headers, its LC_UUID as the build ID.
//
// dyld offers no lock to hold over the walk: an image dlclose'd meanwhile may be missed, or
// listed by an index that shifted (dyld rarely unmaps an image, and never one of the shared
// cache). Images of the shared cache have no file on disk since macOS 11: their names are kept
// for the reader, who needs the cache (or a symbol server) to name their functions.
#include <limits.h>
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <stdlib.h>
#include <string.h>

#include "macos_internal.h"
#include "platform.h"

// ELF's p_flags bits (zxs_prim_phdr_t.flags).
#define PF_X 1u
#define PF_W 2u
#define PF_R 4u

static uint32_t elf_flags(vm_prot_t prot) {
  return ((prot & VM_PROT_READ) ? PF_R : 0u) | ((prot & VM_PROT_WRITE) ? PF_W : 0u) |
         ((prot & VM_PROT_EXECUTE) ? PF_X : 0u);
}

// Describes one image from its header into *m (phdrs: room for every load command). False
// when the header is not one of a 64-bit image or its load commands run past their size.
static bool describe_image(const struct mach_header_64* h, zxs_prim_phdr_t* phdrs,
                           zxs_prim_module_t* m) {
  const uint8_t* cmd = (const uint8_t*)(h + 1);
  const uint8_t* end = cmd + h->sizeofcmds;
  for (uint32_t i = 0; i < h->ncmds; i++) {
    struct load_command lc;
    if ((size_t)(end - cmd) < sizeof(lc)) return false;
    memcpy(&lc, cmd, sizeof(lc));
    if (lc.cmdsize < sizeof(lc) || lc.cmdsize > (size_t)(end - cmd)) return false;
    if (lc.cmd == LC_SEGMENT_64 && lc.cmdsize >= sizeof(struct segment_command_64)) {
      struct segment_command_64 seg;
      memcpy(&seg, cmd, sizeof(seg));
      // __PAGEZERO (no access, nothing from the file) maps nothing a sample can land in.
      if (seg.initprot != 0 && seg.vmsize > 0) {
        phdrs[m->phdr_count++] = (zxs_prim_phdr_t){.type = ZXS_PRIM_PT_LOAD,
                                                   .flags = elf_flags(seg.initprot),
                                                   .vaddr = seg.vmaddr,
                                                   .memsz = seg.vmsize,
                                                   .offset = seg.fileoff,
                                                   .align = 4096};
      }
    } else if (lc.cmd == LC_UUID && lc.cmdsize >= sizeof(struct uuid_command)) {
      m->uuid = ((const struct uuid_command*)(const void*)cmd)->uuid;
    }
    cmd += lc.cmdsize;
  }
  return true;
}

zx_status_t zxs_prim_modules_each(zxs_prim_module_fn fn, void* ctx) {
  const uint32_t count = _dyld_image_count();
  for (uint32_t i = 0; i < count; i++) {
    const struct mach_header_64* h =
        (const struct mach_header_64*)(const void*)_dyld_get_image_header(i);
    if (h == NULL || h->magic != MH_MAGIC_64) continue;  // gone since the count, or 32-bit
    zxs_prim_phdr_t* phdrs = calloc(h->ncmds + 1u, sizeof(*phdrs));
    if (phdrs == NULL) return ZX_ERR_NO_MEMORY;
    const char* name = _dyld_get_image_name(i);
    zxs_prim_module_t m = {.name = name != NULL ? name : "",
                           .load_bias = (uint64_t)_dyld_get_image_vmaddr_slide(i),
                           .is_main = h->filetype == MH_EXECUTE,
                           .phdrs = phdrs};
    zx_status_t status = ZX_OK;
    if (describe_image(h, phdrs, &m) && m.phdr_count > 0) status = fn(&m, ctx);
    free(phdrs);
    if (status != ZX_OK) return status;
  }
  return ZX_OK;
}

// dyld's path of the main executable, resolved (it is the path the program was started by,
// which may be relative or go through links).
zx_status_t zxs_prim_modules_main_path(char** path) {
  uint32_t size = PATH_MAX;
  char* raw = malloc(size);
  if (raw != NULL && _NSGetExecutablePath(raw, &size) != 0) {
    free(raw);
    raw = malloc(size);  // size now says what it needs
    if (raw != NULL && _NSGetExecutablePath(raw, &size) != 0) raw[0] = '\0';
  }
  if (raw == NULL) return ZX_ERR_NO_MEMORY;
  char* resolved = realpath(raw, NULL);
  if (resolved != NULL) {
    free(raw);
    *path = resolved;
  } else {
    *path = raw;
  }
  return ZX_OK;
}

// dyld's list is the one macOS offers (no /proc): code mapped by other means stays unlisted.
zx_status_t zxs_prim_exec_mappings_each(zxs_prim_mapping_fn fn, void* ctx) {
  (void)fn;
  (void)ctx;
  return ZX_ERR_NOT_SUPPORTED;
}
