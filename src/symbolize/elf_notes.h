// ELF notes (internal): the one parser of note segments and sections, for files read by
// elf_symbolizer.c and for images mapped in this process (modules.c).
#ifndef ZXSAMPLER_SRC_REPORT_ELF_NOTES_H_
#define ZXSAMPLER_SRC_REPORT_ELF_NOTES_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Byte order of the words of a note header.
typedef enum zxs_elf_byte_order {
  ZXS_ELF_LITTLE_ENDIAN = 0,
  ZXS_ELF_HOST_ORDER = 1,  // notes mapped in this process
} zxs_elf_byte_order_t;

// The notes that identify a build.
typedef enum zxs_elf_id_note {
  ZXS_ELF_NOTE_GNU_BUILD_ID = 0,  // name "GNU", type NT_GNU_BUILD_ID (3): the GNU build ID
  ZXS_ELF_NOTE_GO_BUILD_ID = 1,   // name "Go", type 4 (.note.go.buildid): Go's build ID string
} zxs_elf_id_note_t;

// Looks for the note `which` in `size` bytes of notes aligned to `align` (8 for 8; anything
// else is taken as 4). True when found, with *desc pointing into `notes` and *desc_size its
// length (which may be 0 or too long to use: callers decide); false when the notes hold none or
// are malformed before it. Reads nothing outside `notes`. Pure.
bool zxs_elf_notes_find(const uint8_t* notes, uint64_t size, uint64_t align,
                        zxs_elf_byte_order_t order, zxs_elf_id_note_t which, const uint8_t** desc,
                        size_t* desc_size);

// zxs_elf_notes_find() of the GNU build ID.
bool zxs_elf_notes_build_id(const uint8_t* notes, uint64_t size, uint64_t align,
                            zxs_elf_byte_order_t order, const uint8_t** id, size_t* id_size);

#endif  // ZXSAMPLER_SRC_REPORT_ELF_NOTES_H_
