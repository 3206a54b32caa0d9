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
    status = zxs_modules_index(&state.list);
  }
  if (status != ZX_OK) {
    zxs_modules_free(&state.list);
  }
  *out = state.list;
  return status;
}
