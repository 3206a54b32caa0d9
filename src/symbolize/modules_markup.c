// Module lists as symbolizer markup (modules_markup.h): the one writer of {{{module}}} and
// {{{mmap}}} elements, for trace files and for the markup export.
#include "modules_markup.h"

#include <inttypes.h>

zx_status_t zxs_modules_check(const zxs_module_list_t* modules) {
  if (modules->count > 0 && modules->modules == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  for (size_t i = 0; i < modules->count; i++) {
    const zxs_module_t* m = &modules->modules[i];
    if ((m->segment_count > 0 && m->segments == NULL) || m->build_id_size > ZXS_BUILD_ID_MAX) {
      return ZX_ERR_INVALID_ARGS;
    }
  }
  return ZX_OK;
}

// Writes the module's path with the characters that end a markup field replaced.
static void write_module_name(FILE* out, const char* path) {
  if (path == NULL || path[0] == '\0') {
    path = "unknown";
  }
  for (const char* c = path; *c != '\0'; c++) {
    unsigned char ch = (unsigned char)*c;
    fputc(ch == ':' || ch == '{' || ch == '}' || ch < 0x20 || ch == 0x7f ? '_' : ch, out);
  }
}

void zxs_modules_markup_elements(const zxs_module_list_t* modules, bool file_offsets, FILE* out) {
  size_t id = 0;  // contiguous over the modules written
  for (size_t i = 0; i < modules->count; i++) {
    const zxs_module_t* m = &modules->modules[i];
    char build_id[2 * ZXS_BUILD_ID_MAX + 1];
    // The element needs a build ID: without one the module cannot be named to a symbolizer.
    if (m->build_id_size == 0 ||
        zxs_build_id_to_hex(m->build_id, m->build_id_size, build_id, sizeof(build_id)) != ZX_OK) {
      continue;
    }
    fprintf(out, "{{{module:%zu:", id);
    write_module_name(out, m->path);
    fprintf(out, ":elf:%s}}}\n", build_id);
    for (size_t j = 0; j < m->segment_count; j++) {
      const zxs_segment_t* s = &m->segments[j];
      char perms[4];
      size_t n = 0;
      if (s->flags & ZXS_SEGMENT_R) perms[n++] = 'r';
      if (s->flags & ZXS_SEGMENT_W) perms[n++] = 'w';
      if (s->flags & ZXS_SEGMENT_X) perms[n++] = 'x';
      perms[n] = '\0';
      if (s->memsz == 0 || n == 0) {
        continue;
      }
      fprintf(out, "{{{mmap:0x%" PRIx64 ":0x%" PRIx64 ":load:%zu:%s:0x%" PRIx64 "}}}\n",
              m->load_bias + s->vaddr, s->memsz, id, perms, s->vaddr);
      if (file_offsets) {
        fprintf(out, ZXS_MARKUP_FILE_OFFSET_PREFIX "0x%" PRIx64 "\n", s->offset);
      }
    }
    id++;
  }
}

zx_status_t zxs_modules_write_markup(const zxs_module_list_t* modules, uint32_t flags, FILE* out) {
  if (modules == NULL || out == NULL || (flags & ~ZXS_MODULES_MARKUP_FILE_OFFSETS) != 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  zx_status_t status = zxs_modules_check(modules);
  if (status != ZX_OK) {
    return status;
  }
  zxs_modules_markup_elements(modules, (flags & ZXS_MODULES_MARKUP_FILE_OFFSETS) != 0, out);
  return ferror(out) ? ZX_ERR_IO : ZX_OK;
}
