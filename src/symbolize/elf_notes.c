#include "elf_notes.h"

#include <string.h>

#define NOTE_HEADER_SIZE 12u  // namesz, descsz, type: three 32-bit words
#define NT_GNU_BUILD_ID 3u
#define NT_GO_BUILD_ID 4u  // cmd/link's ELF_NOTE_GOBUILDID_TAG

static uint64_t align_up(uint64_t value, uint64_t align) {
  return (value + align - 1) & ~(align - 1);
}

static uint32_t word(const uint8_t* p, zxs_elf_byte_order_t order) {
  if (order == ZXS_ELF_HOST_ORDER) {
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
  }
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

bool zxs_elf_notes_find(const uint8_t* notes, uint64_t size, uint64_t align,
                        zxs_elf_byte_order_t order, zxs_elf_id_note_t which, const uint8_t** desc,
                        size_t* desc_size) {
  const bool go = which == ZXS_ELF_NOTE_GO_BUILD_ID;
  const uint32_t wanted_type = go ? NT_GO_BUILD_ID : NT_GNU_BUILD_ID;
  const char* wanted_name = go ? "Go" : "GNU";  // with its NUL, as namesz counts it
  const uint32_t wanted_namesz = go ? 3 : 4;
  align = align == 8 ? 8 : 4;
  uint64_t pos = 0;
  while (size - pos >= NOTE_HEADER_SIZE) {
    const uint32_t namesz = word(notes + pos, order);
    const uint32_t descsz = word(notes + pos + 4, order);
    const uint32_t type = word(notes + pos + 8, order);
    pos += NOTE_HEADER_SIZE;
    const uint64_t name_span = align_up(namesz, align);
    if (name_span > size - pos) {
      return false;
    }
    const uint8_t* name = notes + pos;
    pos += name_span;
    if (descsz > size - pos) {
      return false;
    }
    if (type == wanted_type && namesz == wanted_namesz &&
        memcmp(name, wanted_name, wanted_namesz) == 0) {
      *desc = notes + pos;
      *desc_size = descsz;
      return true;
    }
    const uint64_t desc_span = align_up(descsz, align);
    if (desc_span > size - pos) {
      return false;
    }
    pos += desc_span;
  }
  return false;
}

bool zxs_elf_notes_build_id(const uint8_t* notes, uint64_t size, uint64_t align,
                            zxs_elf_byte_order_t order, const uint8_t** id, size_t* id_size) {
  return zxs_elf_notes_find(notes, size, align, order, ZXS_ELF_NOTE_GNU_BUILD_ID, id, id_size);
}
