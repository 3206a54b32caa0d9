// The report's symbolizer on Mach-O files (macOS): a dylib and an object built for
// x86_64-apple-macos by clang and ld64.lld at build time, and a universal file made here
// around the dylib. Names come from LC_SYMTAB, the build ID from LC_UUID, segments from
// LC_SEGMENT_64.
//
//   test_macho_symbols DYLIB OBJECT
#define _GNU_SOURCE  // mkstemp
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_symbolizer.h"

static const char* g_dylib;
static const char* g_object;

typedef struct found {
  bool alpha, beta, hidden;
  size_t named;
} found_t;

// Looks up every address of the executable segments, noting the names met.
static void scan(zxs_elf_t* elf, found_t* f) {
  memset(f, 0, sizeof(*f));
  const zxs_segment_t* segments;
  size_t count;
  assert_int_equal(zxs_elf_load_segments(elf, &segments, &count), ZX_OK);
  assert_true(count > 0);
  for (size_t i = 0; i < count; i++) {
    if ((segments[i].flags & ZXS_SEGMENT_X) == 0) continue;
    for (uint64_t a = segments[i].vaddr; a < segments[i].vaddr + segments[i].memsz; a++) {
      zxs_elf_location_t loc;
      if (zxs_elf_lookup(elf, a, ZXS_ELF_LOOKUP_NO_LINES, &loc) != ZX_OK || loc.name == NULL) {
        continue;
      }
      f->named++;
      f->alpha |= strcmp(loc.name, "macho_alpha") == 0;
      f->beta |= strcmp(loc.name, "macho_beta") == 0;
      f->hidden |= strcmp(loc.name, "macho_hidden") == 0;
    }
  }
}

static void dylib_names_functions_and_has_uuid(void** state) {
  (void)state;
  zxs_elf_t* elf = NULL;
  assert_int_equal(zxs_elf_open(g_dylib, &elf), ZX_OK);
  const uint8_t* id;
  size_t size;
  assert_int_equal(zxs_elf_build_id(elf, &id, &size), ZX_OK);
  assert_int_equal(size, 16);  // LC_UUID
  assert_true(zxs_elf_symbol_count(elf) >= 2);
  found_t f;
  scan(elf, &f);
  assert_true(f.alpha);
  assert_true(f.beta);
  zxs_elf_close(elf);
}

static void object_names_functions_without_uuid(void** state) {
  (void)state;
  zxs_elf_t* elf = NULL;
  assert_int_equal(zxs_elf_open(g_object, &elf), ZX_OK);
  const uint8_t* id;
  size_t size;
  assert_int_equal(zxs_elf_build_id(elf, &id, &size), ZX_ERR_NOT_FOUND);
  found_t f;
  scan(elf, &f);
  assert_true(f.alpha);
  assert_true(f.beta);
  assert_true(f.hidden);  // a static function keeps its local symbol in an object
  zxs_elf_close(elf);
}

static uint8_t* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* data = malloc(*size);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, *size, f), *size);
  fclose(f);
  return data;
}

static void put_be32(uint8_t* p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

// A universal file holding the dylib as its one x86_64 slice, at 4096: the same answers.
static void universal_file_reads_its_slice(void** state) {
  (void)state;
  size_t size;
  uint8_t* dylib = read_file(g_dylib, &size);
  uint8_t header[4096] = {0};
  put_be32(header, 0xcafebabeu);
  put_be32(header + 4, 1);
  put_be32(header + 8, 0x01000007u);  // CPU_TYPE_X86_64
  put_be32(header + 12, 3);
  put_be32(header + 16, sizeof(header));
  put_be32(header + 20, (uint32_t)size);
  put_be32(header + 24, 12);
  char path[] = "/tmp/zxs_macho_fat_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, header, sizeof(header)), (ssize_t)sizeof(header));
  assert_int_equal(write(fd, dylib, size), (ssize_t)size);
  close(fd);
  zxs_elf_t* thin = NULL;
  zxs_elf_t* fat = NULL;
  assert_int_equal(zxs_elf_open(g_dylib, &thin), ZX_OK);
  assert_int_equal(zxs_elf_open(path, &fat), ZX_OK);
  const uint8_t *thin_id, *fat_id;
  size_t thin_size, fat_size;
  assert_int_equal(zxs_elf_build_id(thin, &thin_id, &thin_size), ZX_OK);
  assert_int_equal(zxs_elf_build_id(fat, &fat_id, &fat_size), ZX_OK);
  assert_int_equal(fat_size, thin_size);
  assert_memory_equal(fat_id, thin_id, thin_size);
  found_t f;
  scan(fat, &f);
  assert_true(f.alpha && f.beta);
  zxs_elf_close(thin);
  zxs_elf_close(fat);
  unlink(path);
  free(dylib);
}

// Cut short anywhere, the file is refused or read, never read out of bounds (ASan checks).
static void truncated_files_are_refused(void** state) {
  (void)state;
  size_t size;
  uint8_t* dylib = read_file(g_dylib, &size);
  for (size_t cut = 0; cut < size; cut += cut < 1024 ? 1 : 97) {
    zxs_elf_t* elf = NULL;
    if (zxs_elf_open_memory(dylib, cut, &elf) == ZX_OK) {
      found_t f;
      if (zxs_elf_symbol_count(elf) > 0) scan(elf, &f);
      zxs_elf_close(elf);
    }
  }
  free(dylib);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s DYLIB OBJECT\n", argv[0]);
    return 2;
  }
  g_dylib = argv[1];
  g_object = argv[2];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dylib_names_functions_and_has_uuid),
      cmocka_unit_test(object_names_functions_without_uuid),
      cmocka_unit_test(universal_file_reads_its_slice),
      cmocka_unit_test(truncated_files_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
