// Inline frames end to end: a return address inside inline_inner() (inline_code.c, built -O2 -g,
// inlined twice) is looked up as [inline_inner, inline_middle] inlined into inline_outer, each
// with the line it makes its call from; read back from a trace, the folded, top and pprof
// exports show every one. Without libdw there are no inline frames: one frame per PC.
//   test_inline_frames                run the tests
//   test_inline_frames PATH.pb.gz     write the pprof export there and print "NAME LINE" per
//                                     frame of that PC, innermost first (check_pprof_with_go.sh)
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/fxt.h>

#include "elf_symbolizer.h"
#include "export.h"
#include "inline_code.h"
#include "modules.h"
#include "modules_markup.h"
#include "profile.h"
#include "trace_file.h"

#define PID 777u

static const char* const kNames[3] = {"inline_inner", "inline_middle", "inline_outer"};

static const char* base_name(const char* path) {
  const char* slash = path != NULL ? strrchr(path, '/') : NULL;
  return slash != NULL ? slash + 1 : path;
}

static void run_probe(void) {
  inline_probe_return_address = 0;
  (void)inline_outer(1);
  assert_true(inline_probe_return_address != 0);
}

static void test_lookup_chain(void** state) {
  (void)state;
  run_probe();
  zxs_module_list_t list;
  assert_int_equal(zxs_modules_capture(&list), ZX_OK);
  const zxs_module_t* m = NULL;
  uint64_t file_address = 0;
  assert_int_equal(zxs_modules_file_address(&list, inline_probe_return_address,
                                            ZXS_MODULES_RETURN_ADDRESS, &m, &file_address),
                   ZX_OK);
  zxs_elf_t* elf = NULL;
  assert_int_equal(zxs_elf_open(m->path, &elf), ZX_OK);
  zxs_elf_location_t loc;
  assert_int_equal(zxs_elf_lookup(elf, file_address, ZXS_ELF_LOOKUP_RETURN_ADDRESS, &loc), ZX_OK);
  assert_string_equal(loc.name, "inline_outer");
  if (!zxs_elf_have_line_info()) {
    assert_int_equal(loc.inline_count, 0);
  } else {
    assert_int_equal(loc.inline_count, 2);
    for (size_t i = 0; i < 2; i++) {
      assert_string_equal(loc.inlined[i].name, kNames[i]);
      assert_string_equal(base_name(loc.inlined[i].file), "inline_code.c");
      assert_int_equal(loc.inlined[i].line, inline_line[i]);
    }
    // The outer function gets its own call's line, not the callee's.
    assert_string_equal(base_name(loc.file), "inline_code.c");
    assert_int_equal(loc.line, inline_line[2]);
  }
  // Names only: no inline frames either.
  assert_int_equal(zxs_elf_lookup(elf, file_address,
                                  ZXS_ELF_LOOKUP_RETURN_ADDRESS | ZXS_ELF_LOOKUP_NO_LINES, &loc),
                   ZX_OK);
  assert_int_equal(loc.inline_count, 0);
  assert_null(loc.inlined);
  zxs_elf_close(elf);
  zxs_modules_free(&list);
}

static zxs_fxt_str_ref_t str(const char* s) { return zxs_fxt_str_inline(s, strlen(s)); }

// A trace of this process with one sample: inline_probe() (exact) called from the inlined code.
static void make_profile(zxs_profile_t* p) {
  run_probe();
  zxs_module_list_t list;
  assert_int_equal(zxs_modules_capture(&list), ZX_OK);
  char* markup = NULL;
  size_t markup_size = 0;
  FILE* out = open_memstream(&markup, &markup_size);
  assert_non_null(out);
  assert_int_equal(zxs_modules_write_markup(&list, 0, out), ZX_OK);
  assert_int_equal(fclose(out), 0);
  zxs_modules_free(&list);

  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  zxs_fxt_write_magic(&buf);
  zxs_fxt_write_initialization(&buf, 1000000000u);
  zxs_fxt_kernel_object_t object = {
      .obj_type = ZX_OBJ_TYPE_PROCESS, .koid = PID, .name = str("inline")};
  assert_int_equal(zxs_fxt_write_kernel_object(&buf, &object, NULL, 0), ZX_OK);
  zxs_fxt_large_blob_t blob = {.category = str(ZXS_TRACE_CATEGORY),
                               .name = str(ZXS_TRACE_MODULES_NAME),
                               .thread = {.process_koid = PID},
                               .payload = {.data = markup, .size = markup_size}};
  assert_int_equal(zxs_fxt_write_large_blob(&buf, &blob, NULL, 0), ZX_OK);
  const uint64_t pcs[] = {(uint64_t)(uintptr_t)&inline_probe, inline_probe_return_address};
  uint64_t words[ZXS_FXT_SAMPLE_WORDS(2)];
  size_t count = zxs_fxt_encode_sample(words, 1, PID, PID + 1, pcs, 2);
  assert_int_equal(zxs_fxt_write_raw(&buf, words, count * 8), ZX_OK);
  assert_int_equal(buf.status, ZX_OK);
  char error[128] = "";
  assert_int_equal(zxs_profile_from_trace(buf.data, buf.len, p, error, sizeof(error)), ZX_OK);
  assert_int_equal(p->sample_count, 1);
  zxs_fxt_buf_destroy(&buf);
  free(markup);
}

// The export of `format` into a malloc'd string.
static char* export_text(const zxs_profile_t* p, const char* format) {
  char* text = NULL;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  assert_non_null(out);
  zx_status_t status =
      strcmp(format, "top") == 0 ? zxs_export_top(p, 0, 0, out) : zxs_export_folded(p, 0, out);
  assert_int_equal(status, ZX_OK);
  assert_int_equal(fclose(out), 0);
  return text;
}

// Self and total of the top row named `name`; false when there is none.
static bool top_row(const char* text, const char* name, unsigned* self, unsigned* total) {
  for (const char* line = text; *line != '\0';) {
    const char* eol = strchr(line, '\n');
    size_t len = eol != NULL ? (size_t)(eol - line) : strlen(line);
    size_t name_len = strlen(name);
    if (len > name_len + 2 && memcmp(line + len - name_len - 2, "  ", 2) == 0 &&
        memcmp(line + len - name_len, name, name_len) == 0 &&
        sscanf(line, "%u %*s %u", self, total) == 2) {
      return true;
    }
    line += len + (eol != NULL);
  }
  return false;
}

static void test_profile_and_exports(void** state) {
  (void)state;
  zxs_profile_t p;
  make_profile(&p);
  const zxs_profile_sample_t* s = &p.samples[0];
  assert_int_equal(s->depth, 2);
  const zxs_profile_location_t* leaf = &p.locations[p.frames[s->first_frame]];
  const zxs_profile_location_t* caller = &p.locations[p.frames[s->first_frame + 1]];
  assert_string_equal(leaf->function, "inline_probe");
  assert_int_equal(leaf->inline_count, 0);
  assert_string_equal(caller->function, "inline_outer");
  char* folded = export_text(&p, "folded");
  char* top = export_text(&p, "top");
  unsigned self = 0;
  unsigned total = 0;
  if (!zxs_elf_have_line_info()) {
    assert_int_equal(caller->inline_count, 0);
    assert_string_equal(folded, "inline_outer;inline_probe 1\n");
    assert_false(top_row(top, "inline_inner (inlined)", &self, &total));
  } else {
    assert_int_equal(caller->inline_count, 2);
    for (size_t i = 0; i < 2; i++) {
      const zxs_profile_inline_frame_t* f = &p.inline_frames[caller->inline_first + i];
      assert_string_equal(f->function, kNames[i]);
      assert_string_equal(base_name(f->file), "inline_code.c");
      assert_int_equal(f->line, inline_line[i]);
    }
    assert_int_equal(caller->line, inline_line[2]);
    // Outermost first; inlined calls marked as perf marks them.
    assert_string_equal(folded,
                        "inline_outer;inline_middle (inlined);inline_inner (inlined);"
                        "inline_probe 1\n");
    for (size_t i = 0; i < 2; i++) {
      char name[64];
      snprintf(name, sizeof(name), "%s (inlined)", kNames[i]);
      assert_true(top_row(top, name, &self, &total));
      assert_int_equal(self, 0);
      assert_int_equal(total, 1);
    }
    // pprof: one Location, three Lines; the function names are in its string table.
    uint8_t* data = NULL;
    size_t size = 0;
    assert_int_equal(zxs_export_pprof_encode(&p, &data, &size), ZX_OK);
    for (size_t i = 0; i < 3; i++) {
      assert_non_null(memmem(data, size, kNames[i], strlen(kNames[i])));
    }
    free(data);
  }
  assert_true(top_row(top, "inline_outer", &self, &total));
  assert_int_equal(total, 1);
  assert_true(top_row(top, "inline_probe", &self, &total));
  assert_int_equal(self, 1);
  free(folded);
  free(top);
  zxs_profile_free(&p);
}

// For check_pprof_with_go.sh: the pprof export and the frames it must show.
static int write_pprof(const char* path) {
  zxs_profile_t p;
  make_profile(&p);
  FILE* out = fopen(path, "wb");
  if (out == NULL || zxs_export_pprof(&p, out) != ZX_OK || fclose(out) != 0) {
    perror(path);
    return 1;
  }
  const zxs_profile_location_t* caller = &p.locations[p.frames[p.samples[0].first_frame + 1]];
  for (uint32_t i = 0; i < caller->inline_count; i++) {
    const zxs_profile_inline_frame_t* f = &p.inline_frames[caller->inline_first + i];
    printf("%s %u\n", f->function, f->line);
  }
  printf("%s %u\n", caller->function, caller->line);
  zxs_profile_free(&p);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2) {
    return write_pprof(argv[1]);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lookup_chain),
      cmocka_unit_test(test_profile_and_exports),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
