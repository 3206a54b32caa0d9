// Symbolizer markup (LLVM's "Symbolizer Markup Format", from Fuchsia): the text Fuchsia's
// profiler of this era wrote, turned into symbolized backtraces by llvm-symbolizer
// --filter-markup or Fuchsia's symbolizer.
#include <inttypes.h>

#include "export.h"
#include "export_check.h"

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

// With `file_offsets`, each mmap element is followed by a line "file_offset:0xOFFSET" (see
// ZXS_EXPORT_MARKUP_FILE_OFFSETS).
static void write_modules(const zxs_module_list_t* modules, bool file_offsets, FILE* out) {
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

zx_status_t zxs_export_markup_modules(const zxs_module_list_t* modules, uint32_t flags, FILE* out) {
  if (modules == NULL || out == NULL || (flags & ~ZXS_EXPORT_MARKUP_FILE_OFFSETS) != 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  zx_status_t status = zxs_export_check_modules(modules);
  if (status != ZX_OK) {
    return status;
  }
  write_modules(modules, (flags & ZXS_EXPORT_MARKUP_FILE_OFFSETS) != 0, out);
  return zxs_export_stream_status(out);
}

zx_status_t zxs_export_markup(const zxs_profile_t* profile, FILE* out) {
  zx_status_t status = zxs_export_check(profile, out);
  if (status != ZX_OK) {
    return status;
  }
  fputs("{{{reset}}}\n", out);
  write_modules(&profile->modules, false, out);
  for (size_t i = 0; i < profile->sample_count; i++) {
    const zxs_profile_sample_t* s = &profile->samples[i];
    fprintf(out, "pid:%" PRIu64 " tid:%" PRIu64 "\n", s->pid, s->tid);
    for (uint32_t d = 0; d < s->depth; d++) {
      const zxs_profile_location_t* loc = &profile->locations[profile->frames[s->first_frame + d]];
      fprintf(out, "{{{bt:%" PRIu32 ":0x%" PRIx64 ":%s}}}\n", d, loc->address,
              loc->is_return_address ? "ra" : "pc");
    }
  }
  return zxs_export_stream_status(out);
}
