// The capture of this process's modules and of its vDSO's image, over the backend's
// zxs_facts_modules_each (process_facts.h): the module list a trace file records.
#define _GNU_SOURCE  // strdup

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "elf_notes.h"
#include "elf_symbolizer.h"
#include "modules.h"
#include "process_facts.h"

// ELF's p_flags bits (zxs_prim_phdr_t.flags).
#define PF_X 1u
#define PF_W 2u
#define PF_R 4u

typedef struct vdso_search {
  uint64_t load_bias;  // of the vDSO wanted; any vDSO when `any`
  bool any;
  const void* image;
  size_t image_size;
} vdso_search_t;

static zx_status_t find_vdso(const zxs_prim_module_t* module, void* ctx) {
  vdso_search_t* search = ctx;
  if (module->is_vdso && module->image != NULL &&
      (search->any || module->load_bias == search->load_bias)) {
    search->image = module->image;
    search->image_size = module->image_size;
    return ZX_ERR_STOP;
  }
  return ZX_OK;
}

// This process's vDSO image (the one at `load_bias` unless `any`). ZX_ERR_NOT_FOUND when none.
static zx_status_t vdso_image(vdso_search_t* search) {
  zx_status_t status = zxs_facts_modules_each(find_vdso, search);
  if (status == ZX_ERR_STOP) {
    return ZX_OK;
  }
  return status == ZX_OK ? ZX_ERR_NOT_FOUND : status;
}

zx_status_t zxs_module_vdso_image(const zxs_module_t* module, const void** data, size_t* size) {
  if (module == NULL || data == NULL || size == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (module->kind != ZXS_MODULE_VDSO) {
    return ZX_ERR_WRONG_TYPE;
  }
  vdso_search_t search = {.load_bias = module->load_bias};
  zx_status_t status = vdso_image(&search);
  if (status == ZX_OK) {
    *data = search.image;
    *size = search.image_size;
  }
  return status;
}

zx_status_t zxs_modules_vdso_self(void** data, size_t* size) {
  vdso_search_t search = {.any = true};
  zx_status_t status = vdso_image(&search);
  if (status != ZX_OK) {
    return status;
  }
  *data = malloc(search.image_size);
  if (*data == NULL) {
    return ZX_ERR_NO_MEMORY;
  }
  memcpy(*data, search.image, search.image_size);
  *size = search.image_size;
  return ZX_OK;
}

typedef struct capture_state {
  zxs_module_list_t list;
  size_t capacity;
} capture_state_t;

// A new zeroed module at the end of the list with room for `loads` segments; NULL when out of
// memory. Once added, zxs_modules_free() releases it.
static zxs_module_t* append_module(capture_state_t* state, size_t loads) {
  if (state->list.count == state->capacity) {
    size_t capacity = state->capacity == 0 ? 16 : 2 * state->capacity;
    zxs_module_t* grown = realloc(state->list.modules, capacity * sizeof(*grown));
    if (grown == NULL) {
      return NULL;
    }
    state->list.modules = grown;
    state->capacity = capacity;
  }
  zxs_module_t* m = &state->list.modules[state->list.count];
  memset(m, 0, sizeof(*m));
  m->segments = calloc(loads, sizeof(*m->segments));
  if (m->segments == NULL) {
    return NULL;
  }
  state->list.count++;
  return m;
}

static void add_load_segments(const zxs_prim_module_t* module, zxs_module_t* m) {
  for (size_t i = 0; i < module->phdr_count; i++) {
    const zxs_prim_phdr_t* ph = &module->phdrs[i];
    if (ph->type != ZXS_PRIM_PT_LOAD) {
      continue;
    }
    zxs_segment_t* s = &m->segments[m->segment_count++];
    s->vaddr = ph->vaddr;
    s->memsz = ph->memsz;
    s->offset = ph->offset;
    s->flags = ((ph->flags & PF_R) ? ZXS_SEGMENT_R : 0) | ((ph->flags & PF_W) ? ZXS_SEGMENT_W : 0) |
               ((ph->flags & PF_X) ? ZXS_SEGMENT_X : 0);
  }
}

// True when [vaddr, vaddr + memsz) lies inside a readable PT_LOAD segment of the module.
static bool mapped_readable(const zxs_module_t* m, uint64_t vaddr, uint64_t memsz) {
  for (size_t j = 0; j < m->segment_count; j++) {
    const zxs_segment_t* s = &m->segments[j];
    if ((s->flags & ZXS_SEGMENT_R) && vaddr >= s->vaddr && vaddr - s->vaddr <= s->memsz &&
        memsz <= s->memsz - (vaddr - s->vaddr)) {
      return true;
    }
  }
  return false;
}

// A Mach-O image's build ID is its LC_UUID. An ELF image's notes are read in place, but only where
// they lie inside a readable PT_LOAD segment: a PT_NOTE outside any mapping would fault. No GNU
// build ID: a Go binary's build ID note gives the derived ID (modules.h).
static void read_build_id_in_place(const zxs_prim_module_t* module, zxs_module_t* m) {
  if (module->uuid != NULL) {  // a Mach-O image: its LC_UUID is its build ID
    memcpy(m->build_id, module->uuid, 16);
    m->build_id_size = 16;
    return;
  }
  static const zxs_elf_id_note_t kNotes[] = {ZXS_ELF_NOTE_GNU_BUILD_ID, ZXS_ELF_NOTE_GO_BUILD_ID};
  for (size_t n = 0; n < sizeof(kNotes) / sizeof(kNotes[0]) && m->build_id_size == 0; n++) {
    for (size_t i = 0; i < module->phdr_count && m->build_id_size == 0; i++) {
      const zxs_prim_phdr_t* ph = &module->phdrs[i];
      if (ph->type != ZXS_PRIM_PT_NOTE || ph->memsz == 0 ||
          !mapped_readable(m, ph->vaddr, ph->memsz)) {
        continue;
      }
      const uint8_t* id;
      size_t id_size;
      if (!zxs_elf_notes_find((const uint8_t*)(uintptr_t)(module->load_bias + ph->vaddr), ph->memsz,
                              ph->align, ZXS_ELF_HOST_ORDER, kNotes[n], &id, &id_size) ||
          id_size == 0) {
        continue;
      }
      if (kNotes[n] == ZXS_ELF_NOTE_GO_BUILD_ID) {
        zxs_derived_id(ZXS_ID_FROM_GO_BUILD_ID, id, id_size, m->build_id);
        m->build_id_size = ZXS_DERIVED_ID_SIZE;
      } else if (id_size <= ZXS_BUILD_ID_MAX) {
        memcpy(m->build_id, id, id_size);
        m->build_id_size = id_size;
      }
    }
  }
}

static zx_status_t capture_one(const zxs_prim_module_t* module, void* ctx) {
  capture_state_t* state = ctx;
  size_t loads = 0;
  for (size_t i = 0; i < module->phdr_count; i++) {
    loads += module->phdrs[i].type == ZXS_PRIM_PT_LOAD;
  }
  if (loads == 0) {
    return ZX_OK;
  }
  zxs_module_t* m = append_module(state, loads);
  if (m == NULL) {
    return ZX_ERR_NO_MEMORY;
  }
  m->load_bias = module->load_bias;
  m->kind = module->is_vdso   ? ZXS_MODULE_VDSO
            : module->is_main ? ZXS_MODULE_MAIN
                              : ZXS_MODULE_SHARED;
  add_load_segments(module, m);
  read_build_id_in_place(module, m);
  // The main executable's path is filled in after the walk (outside the loader's lock).
  m->path = strdup(m->kind == ZXS_MODULE_VDSO   ? "[vdso]"
                   : m->kind == ZXS_MODULE_MAIN ? ""
                                                : module->name);
  return m->path != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
}

// An executable file mapping that no loaded module covers (a file's code mapped again).
typedef struct remap {
  uint64_t start, len, offset;
  uint32_t flags;
  char* path;
} remap_t;

typedef struct remap_search {
  const zxs_module_list_t* loaded;
  remap_t* found;
  size_t count, cap;
} remap_search_t;

// Whether [start, end) meets a segment of a loaded module (from its first page: the loader maps
// whole pages).
static bool covered(const zxs_module_list_t* loaded, uint64_t start, uint64_t end) {
  for (size_t i = 0; i < loaded->count; i++) {
    const zxs_module_t* m = &loaded->modules[i];
    for (size_t j = 0; j < m->segment_count; j++) {
      const uint64_t from = m->load_bias + m->segments[j].vaddr;
      if (start < from + m->segments[j].memsz && (from & ~(uint64_t)4095) < end) return true;
    }
  }
  return false;
}

static zx_status_t find_remap(const zxs_prim_mapping_t* mapping, void* ctx) {
  remap_search_t* search = ctx;
  if (covered(search->loaded, mapping->start, mapping->end)) return ZX_OK;
  if (search->count == search->cap) {
    const size_t cap = search->cap == 0 ? 4 : 2 * search->cap;
    remap_t* grown = realloc(search->found, cap * sizeof(*grown));
    if (grown == NULL) return ZX_ERR_NO_MEMORY;
    search->found = grown;
    search->cap = cap;
  }
  remap_t* r = &search->found[search->count];
  *r = (remap_t){.start = mapping->start,
                 .len = mapping->end - mapping->start,
                 .offset = mapping->offset,
                 .flags = ((mapping->prot & ZXS_PRIM_PROT_R) ? ZXS_SEGMENT_R : 0) |
                          ((mapping->prot & ZXS_PRIM_PROT_W) ? ZXS_SEGMENT_W : 0) |
                          ((mapping->prot & ZXS_PRIM_PROT_X) ? ZXS_SEGMENT_X : 0),
                 .path = strdup(mapping->path)};
  if (r->path == NULL) return ZX_ERR_NO_MEMORY;
  search->count++;
  return ZX_OK;
}

// Appends a module for remap `r` of the ELF file `elf` (left out when the file is no ELF, or is
// not the file a loaded module of the same path was built from).
static zx_status_t add_remap(capture_state_t* state, const remap_t* r, const zxs_elf_t* elf) {
  const uint8_t* id;
  size_t id_size;
  const zxs_segment_t* segments;
  size_t count;
  zxs_segment_t piece;
  if (zxs_elf_module_id(elf, &id, &id_size) != ZX_OK || id_size > ZXS_BUILD_ID_MAX ||
      zxs_elf_load_segments(elf, &segments, &count) != ZX_OK ||
      !zxs_segment_remapped(segments, count, r->offset, r->len, r->flags, &piece)) {
    return ZX_OK;
  }
  for (size_t i = 0; i < state->list.count; i++) {
    const zxs_module_t* loaded = &state->list.modules[i];
    if (strcmp(loaded->path, r->path) == 0 &&
        (loaded->build_id_size != id_size || memcmp(loaded->build_id, id, id_size) != 0)) {
      return ZX_OK;
    }
  }
  zxs_module_t* m = append_module(state, 1);
  if (m == NULL) return ZX_ERR_NO_MEMORY;
  m->kind = ZXS_MODULE_SHARED;
  m->load_bias = r->start - piece.vaddr;
  m->segments[0] = piece;
  m->segment_count = 1;
  memcpy(m->build_id, id, id_size);
  m->build_id_size = id_size;
  m->path = strdup(r->path);
  return m->path != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
}

// Each executable file mapping outside the loaded modules (code mapped again from its file, as
// node maps V8's builtins) as a module of its own, as `record` names them. Where the platform
// lists no mappings, nothing is added.
static zx_status_t add_remaps(capture_state_t* state) {
  remap_search_t search = {.loaded = &state->list};
  zx_status_t status = zxs_facts_exec_mappings_each(find_remap, &search);
  if (status == ZX_ERR_NOT_SUPPORTED) status = ZX_OK;
  zxs_elf_t* elf = NULL;
  const char* open_path = NULL;  // the file `elf` is, read once for its mappings in a row
  for (size_t i = 0; i < search.count && status == ZX_OK; i++) {
    const remap_t* r = &search.found[i];
    if (open_path == NULL || strcmp(open_path, r->path) != 0) {
      zxs_elf_close(elf);
      elf = NULL;
      open_path = r->path;
      if (zxs_elf_open_file_only(r->path, &elf) != ZX_OK) elf = NULL;
    }
    if (elf != NULL) status = add_remap(state, r, elf);
  }
  zxs_elf_close(elf);
  for (size_t i = 0; i < search.count; i++) free(search.found[i].path);
  free(search.found);
  return status;
}

zx_status_t zxs_modules_capture(zxs_module_list_t* out) {
  if (out == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  capture_state_t state = {0};
  zx_status_t status = zxs_facts_modules_each(capture_one, &state);
  for (size_t i = 0; i < state.list.count && status == ZX_OK; i++) {
    zxs_module_t* m = &state.list.modules[i];
    if (m->kind == ZXS_MODULE_MAIN) {
      char* path = NULL;
      status = zxs_facts_main_path(&path);
      if (status == ZX_OK) {
        free(m->path);
        m->path = path;
      }
    }
    // No ID in memory: the file's bytes are its ID (read here, outside the loader's lock).
    if (status == ZX_OK && m->build_id_size == 0 && m->kind != ZXS_MODULE_VDSO &&
        m->path[0] == '/' && zxs_elf_file_id(m->path, m->build_id, &m->build_id_size) != ZX_OK) {
      m->build_id_size = 0;
    }
  }
  if (status == ZX_OK) {
    status = add_remaps(&state);
  }
  if (status == ZX_OK) {
    status = zxs_modules_index(&state.list);
  }
  if (status != ZX_OK) {
    zxs_modules_free(&state.list);
  }
  *out = state.list;
  return status;
}
