// Module IDs without a GNU build ID (modules.h): the note reader finds Go's build ID note, the
// derived ID is a fixed function of its bytes (traces written earlier must still match), and an
// ELF image gets its GNU build ID, else the ID of its Go note, else of its bytes.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <string.h>

#include "elf_notes.h"
#include "elf_symbolizer.h"
#include "modules.h"

// Appends a note (name with its NUL, 4-byte alignment) at `at`; returns the new end.
static size_t put_note(uint8_t* buf, size_t at, const char* name, uint32_t type, const void* desc,
                       uint32_t desc_size) {
  const uint32_t namesz = (uint32_t)strlen(name) + 1;
  memcpy(buf + at, &namesz, 4);
  memcpy(buf + at + 4, &desc_size, 4);
  memcpy(buf + at + 8, &type, 4);
  at += 12;
  memcpy(buf + at, name, namesz);
  at += (namesz + 3) & ~3u;
  memcpy(buf + at, desc, desc_size);
  return at + ((desc_size + 3) & ~3u);
}

static const char kGoId[] =
    "pnj0Qr8GrHif5_r4I3-h/xCuOKeGDFL6tQ4iAkeJC/XGdXhrs_rNQDgHqbFF6j/OmQJvT8IKFUl-qgCaJm-";

static void test_notes_find_go_build_id(void** state) {
  (void)state;
  uint8_t notes[256] = {0};
  const uint8_t property[16] = {1, 2, 3};
  size_t size = put_note(notes, 0, "GNU", 5, property, sizeof(property));
  size = put_note(notes, size, "Go", 4, kGoId, sizeof(kGoId) - 1);
  const uint8_t* desc = NULL;
  size_t desc_size = 0;
  assert_true(zxs_elf_notes_find(notes, size, 4, ZXS_ELF_HOST_ORDER, ZXS_ELF_NOTE_GO_BUILD_ID,
                                 &desc, &desc_size));
  assert_int_equal(desc_size, sizeof(kGoId) - 1);
  assert_memory_equal(desc, kGoId, desc_size);
  // No GNU build ID there (type 5 is not 3), and a "Go" note of another type is not Go's ID.
  assert_false(zxs_elf_notes_build_id(notes, size, 4, ZXS_ELF_HOST_ORDER, &desc, &desc_size));
  uint8_t other[64] = {0};
  const size_t other_size = put_note(other, 0, "Go", 1, "x", 1);
  assert_false(zxs_elf_notes_find(other, other_size, 4, ZXS_ELF_HOST_ORDER,
                                  ZXS_ELF_NOTE_GO_BUILD_ID, &desc, &desc_size));
  // A descriptor that runs past the notes is not read.
  assert_false(zxs_elf_notes_find(notes, size - 4, 4, ZXS_ELF_HOST_ORDER, ZXS_ELF_NOTE_GO_BUILD_ID,
                                  &desc, &desc_size));
}

static void test_derived_id_is_fixed(void** state) {
  (void)state;
  uint8_t id[ZXS_DERIVED_ID_SIZE];
  char hex[2 * ZXS_DERIVED_ID_SIZE + 1];
  // Golden values (FNV-1a 64 as modules.c seeds it, checked with Python): changing them makes
  // every trace written before unnamed.
  zxs_derived_id(ZXS_ID_FROM_GO_BUILD_ID, kGoId, sizeof(kGoId) - 1, id);
  assert_int_equal(zxs_build_id_to_hex(id, sizeof(id), hex, sizeof(hex)), ZX_OK);
  assert_string_equal(hex, "55f50dcd4ea24f1aa6726a248745029e");
  zxs_derived_id(ZXS_ID_FROM_FILE, "", 0, id);
  assert_int_equal(zxs_build_id_to_hex(id, sizeof(id), hex, sizeof(hex)), ZX_OK);
  assert_string_equal(hex, "af63bf4c8601bb450839c907b4f1fd0e");
  // Any split of the bytes gives the same ID; another source another.
  uint8_t whole[ZXS_DERIVED_ID_SIZE], split[ZXS_DERIVED_ID_SIZE];
  zxs_derived_id(ZXS_ID_FROM_FILE, kGoId, sizeof(kGoId) - 1, whole);
  zxs_id_hash_t hash;
  zxs_id_hash_init(&hash, ZXS_ID_FROM_FILE);
  zxs_id_hash_add(&hash, kGoId, 10);
  zxs_id_hash_add(&hash, kGoId + 10, sizeof(kGoId) - 11);
  zxs_id_hash_finish(&hash, split);
  assert_memory_equal(whole, split, sizeof(whole));
  zxs_derived_id(ZXS_ID_FROM_GO_BUILD_ID, kGoId, sizeof(kGoId) - 1, split);
  assert_memory_not_equal(whole, split, sizeof(whole));
}

// A minimal ELF image: header, a PT_LOAD of the whole image and a PT_NOTE of `notes`.
static size_t make_elf(uint8_t* image, size_t cap, const uint8_t* notes, size_t notes_size) {
  enum { EHDR = 64, PHDR = 56 };
  const size_t notes_at = EHDR + 2 * PHDR;
  const size_t size = notes_at + notes_size;
  assert_true(size <= cap);
  memset(image, 0, size);
  memcpy(image,
         "\x7f"
         "ELF",
         4);
  image[4] = 2;  // 64-bit
  image[5] = 1;  // little-endian
  image[6] = 1;  // version
  const uint16_t type = 3, machine = 62, ehsize = EHDR, phentsize = PHDR, phnum = 2;
  const uint32_t version = 1;
  const uint64_t phoff = EHDR;
  memcpy(image + 16, &type, 2);
  memcpy(image + 18, &machine, 2);
  memcpy(image + 20, &version, 4);
  memcpy(image + 32, &phoff, 8);
  memcpy(image + 52, &ehsize, 2);
  memcpy(image + 54, &phentsize, 2);
  memcpy(image + 56, &phnum, 2);
  uint8_t* load = image + EHDR;
  const uint32_t pt_load = 1, pf_rx = 5, pt_note = 4, pf_r = 4;
  const uint64_t zero = 0, whole = size, page = 4096, at = notes_at, len = notes_size, four = 4;
  memcpy(load, &pt_load, 4);
  memcpy(load + 4, &pf_rx, 4);
  memcpy(load + 8, &zero, 8);    // p_offset
  memcpy(load + 16, &zero, 8);   // p_vaddr
  memcpy(load + 32, &whole, 8);  // p_filesz
  memcpy(load + 40, &whole, 8);  // p_memsz
  memcpy(load + 48, &page, 8);
  uint8_t* note = image + EHDR + PHDR;
  memcpy(note, &pt_note, 4);
  memcpy(note + 4, &pf_r, 4);
  memcpy(note + 8, &at, 8);
  memcpy(note + 16, &at, 8);
  memcpy(note + 32, &len, 8);
  memcpy(note + 40, &len, 8);
  memcpy(note + 48, &four, 8);
  memcpy(image + notes_at, notes, notes_size);
  return size;
}

static void expect_module_id(const uint8_t* image, size_t size, const uint8_t* want,
                             size_t want_size) {
  zxs_elf_t* elf = NULL;
  assert_int_equal(zxs_elf_open_memory(image, size, &elf), ZX_OK);
  const uint8_t* id = NULL;
  size_t id_size = 0;
  assert_int_equal(zxs_elf_module_id(elf, &id, &id_size), ZX_OK);
  assert_int_equal(id_size, want_size);
  assert_memory_equal(id, want, want_size);
  zxs_elf_close(elf);
}

static void test_elf_module_id(void** state) {
  (void)state;
  uint8_t notes[256] = {0};
  uint8_t image[1024];
  uint8_t want[ZXS_DERIVED_ID_SIZE];
  // Go's note only: the ID of the note, and no GNU build ID.
  size_t notes_size = put_note(notes, 0, "Go", 4, kGoId, sizeof(kGoId) - 1);
  size_t size = make_elf(image, sizeof(image), notes, notes_size);
  zxs_derived_id(ZXS_ID_FROM_GO_BUILD_ID, kGoId, sizeof(kGoId) - 1, want);
  expect_module_id(image, size, want, sizeof(want));
  zxs_elf_t* elf = NULL;
  assert_int_equal(zxs_elf_open_memory(image, size, &elf), ZX_OK);
  const uint8_t* id;
  size_t id_size;
  assert_int_equal(zxs_elf_build_id(elf, &id, &id_size), ZX_ERR_NOT_FOUND);
  zxs_elf_close(elf);
  // A GNU build ID as well: it wins.
  const uint8_t gnu[8] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4};
  notes_size = put_note(notes, notes_size, "GNU", 3, gnu, sizeof(gnu));
  size = make_elf(image, sizeof(image), notes, notes_size);
  expect_module_id(image, size, gnu, sizeof(gnu));
  // No ID note at all: the ID of the image's bytes, which changes with any of them.
  notes_size = put_note(notes, 0, "GNU", 5, gnu, sizeof(gnu));
  size = make_elf(image, sizeof(image), notes, notes_size);
  zxs_derived_id(ZXS_ID_FROM_FILE, image, size, want);
  expect_module_id(image, size, want, sizeof(want));
  image[size - 1] ^= 1;
  uint8_t changed[ZXS_DERIVED_ID_SIZE];
  zxs_derived_id(ZXS_ID_FROM_FILE, image, size, changed);
  assert_memory_not_equal(want, changed, sizeof(want));
  expect_module_id(image, size, changed, sizeof(changed));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_notes_find_go_build_id),
      cmocka_unit_test(test_derived_id_is_fixed),
      cmocka_unit_test(test_elf_module_id),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
