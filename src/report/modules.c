// Loaded-module capture (dl_iterate_phdr) and address-to-module lookups.
#define _GNU_SOURCE

#include "modules.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>
#define ZXS_MODULES_HAVE_DL_ITERATE_PHDR 1
#endif

void zxs_modules_free(zxs_module_list_t* list) {
  if (list == NULL) {
    return;
  }
  for (size_t i = 0; i < list->count; i++) {
    free(list->modules[i].path);
    free(list->modules[i].segments);
  }
  free(list->modules);
  list->modules = NULL;
  list->count = 0;
}

static int compare_modules(const void* a, const void* b) {
  const zxs_module_t* ma = a;
  const zxs_module_t* mb = b;
  if (ma->start != mb->start) {
    return ma->start < mb->start ? -1 : 1;
  }
  return ma->end < mb->end ? -1 : (ma->end > mb->end ? 1 : 0);
}

zx_status_t zxs_modules_index(zxs_module_list_t* list) {
  if (list == NULL || (list->count > 0 && list->modules == NULL)) {
    return ZX_ERR_INVALID_ARGS;
  }
  for (size_t i = 0; i < list->count; i++) {
    zxs_module_t* m = &list->modules[i];
    uint64_t lo = UINT64_MAX;
    uint64_t hi = 0;
    for (size_t j = 0; j < m->segment_count; j++) {
      const zxs_segment_t* s = &m->segments[j];
      uint64_t start = m->load_bias + s->vaddr;  // wraps like the loader's arithmetic
      if (s->memsz > UINT64_MAX - start) {
        return ZX_ERR_INVALID_ARGS;
      }
      if (s->memsz == 0) {
        continue;
      }
      if (start < lo) {
        lo = start;
      }
      if (start + s->memsz > hi) {
        hi = start + s->memsz;
      }
    }
    m->start = lo <= hi ? lo : 0;
    m->end = lo <= hi ? hi : 0;
  }
  if (list->count > 1) {
    qsort(list->modules, list->count, sizeof(list->modules[0]), compare_modules);
  }
  return ZX_OK;
}

zx_status_t zxs_modules_find(const zxs_module_list_t* list, uint64_t pc,
                             const zxs_module_t** module, const zxs_segment_t** segment) {
  if (list == NULL || (list->count > 0 && list->modules == NULL)) {
    return ZX_ERR_INVALID_ARGS;
  }
  // Last module with start <= pc. Modules do not overlap (the loader reserves each one's whole
  // span), so it is the only candidate.
  size_t lo = 0;
  size_t hi = list->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (list->modules[mid].start <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  // Walk back over empty modules (start == end) that sort in front of real ones.
  for (size_t i = lo; i > 0; i--) {
    const zxs_module_t* m = &list->modules[i - 1];
    if (m->start == m->end) {
      continue;
    }
    if (pc >= m->end) {
      return ZX_ERR_NOT_FOUND;
    }
    for (size_t j = 0; j < m->segment_count; j++) {
      const zxs_segment_t* s = &m->segments[j];
      uint64_t start = m->load_bias + s->vaddr;
      if (pc >= start && pc - start < s->memsz) {
        if (module != NULL) {
          *module = m;
        }
        if (segment != NULL) {
          *segment = s;
        }
        return ZX_OK;
      }
    }
    return ZX_ERR_NOT_FOUND;
  }
  return ZX_ERR_NOT_FOUND;
}

uint64_t zxs_module_file_address(const zxs_module_t* module, uint64_t pc) {
  return pc - module->load_bias;
}

uint64_t zxs_segment_file_offset(const zxs_module_t* module, const zxs_segment_t* segment,
                                 uint64_t pc) {
  return pc - module->load_bias - segment->vaddr + segment->offset;
}

zx_status_t zxs_modules_file_address(const zxs_module_list_t* list, uint64_t pc, uint32_t flags,
                                     const zxs_module_t** module, uint64_t* file_address) {
  if ((flags & ~ZXS_MODULES_RETURN_ADDRESS) != 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  uint64_t probe = pc;
  if ((flags & ZXS_MODULES_RETURN_ADDRESS) != 0) {
    if (pc == 0) {
      return ZX_ERR_NOT_FOUND;
    }
    probe = pc - 1;
  }
  const zxs_module_t* m = NULL;
  zx_status_t status = zxs_modules_find(list, probe, &m, NULL);
  if (status != ZX_OK) {
    return status;
  }
  if (module != NULL) {
    *module = m;
  }
  if (file_address != NULL) {
    *file_address = zxs_module_file_address(m, pc);
  }
  return ZX_OK;
}

zx_status_t zxs_module_vdso_image(const zxs_module_t* module, const void** data, size_t* size) {
  if (module == NULL || data == NULL || size == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (module->kind != ZXS_MODULE_VDSO) {
    return ZX_ERR_WRONG_TYPE;
  }
  for (size_t i = 0; i < module->segment_count; i++) {
    const zxs_segment_t* s = &module->segments[i];
    if (s->offset != 0) {
      continue;
    }
    uint64_t page = 4096;
#if defined(ZXS_MODULES_HAVE_DL_ITERATE_PHDR)
    long sc = sysconf(_SC_PAGESIZE);
    if (sc > 0) {
      page = (uint64_t)sc;
    }
#endif
    if (s->memsz > SIZE_MAX - page) {
      return ZX_ERR_INVALID_ARGS;
    }
    *data = (const void*)(uintptr_t)(module->load_bias + s->vaddr);
    *size = (size_t)((s->memsz + page - 1) / page * page);
    return ZX_OK;
  }
  return ZX_ERR_NOT_FOUND;
}

zx_status_t zxs_modules_vdso_self(void** data, size_t* size) {
  zxs_module_list_t list = {0};
  zx_status_t status = zxs_modules_capture(&list);
  if (status != ZX_OK) return status;
  status = ZX_ERR_NOT_FOUND;
  for (size_t i = 0; i < list.count && status == ZX_ERR_NOT_FOUND; i++) {
    const void* image;
    size_t image_size;
    if (zxs_module_vdso_image(&list.modules[i], &image, &image_size) != ZX_OK) continue;
    *data = malloc(image_size);
    if (*data == NULL) {
      status = ZX_ERR_NO_MEMORY;
    } else {
      memcpy(*data, image, image_size);
      *size = image_size;
      status = ZX_OK;
    }
  }
  zxs_modules_free(&list);
  return status;
}

zx_status_t zxs_build_id_to_hex(const uint8_t* id, size_t size, char* buf, size_t buf_size) {
  static const char kDigits[] = "0123456789abcdef";
  if ((id == NULL && size > 0) || buf == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (size > (SIZE_MAX - 1) / 2 || buf_size < 2 * size + 1) {
    return ZX_ERR_BUFFER_TOO_SMALL;
  }
  for (size_t i = 0; i < size; i++) {
    buf[2 * i] = kDigits[id[i] >> 4];
    buf[2 * i + 1] = kDigits[id[i] & 0xf];
  }
  buf[2 * size] = '\0';
  return ZX_OK;
}

#if defined(ZXS_MODULES_HAVE_DL_ITERATE_PHDR)

#define NOTE_GNU_BUILD_ID 3u

typedef struct capture_state {
  zxs_module_list_t list;
  size_t capacity;
  zx_status_t status;
  uintptr_t main_phdr;  // AT_PHDR: identifies the main executable's entry
  uintptr_t vdso_ehdr;  // AT_SYSINFO_EHDR: identifies the vDSO's entry
  bool have_main;
} capture_state_t;

static size_t align_up(size_t value, size_t align) { return (value + align - 1) & ~(align - 1); }

// Scans a mapped note segment for NT_GNU_BUILD_ID. The loader mapped it, so it is readable and
// in this process's byte order; sizes are still checked, since the image may be odd.
static void parse_build_id_notes(const uint8_t* notes, size_t size, size_t align, zxs_module_t* m) {
  size_t pos = 0;
  while (size - pos >= sizeof(ElfW(Nhdr))) {
    ElfW(Nhdr) nhdr;
    memcpy(&nhdr, notes + pos, sizeof(nhdr));
    pos += sizeof(nhdr);
    size_t name_size = align_up(nhdr.n_namesz, align);
    if (nhdr.n_namesz > size - pos || name_size > size - pos) {
      return;
    }
    const uint8_t* name = notes + pos;
    pos += name_size;
    size_t desc_size = align_up(nhdr.n_descsz, align);
    if (nhdr.n_descsz > size - pos) {
      return;
    }
    if (nhdr.n_type == NOTE_GNU_BUILD_ID && nhdr.n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
      if (nhdr.n_descsz > 0 && nhdr.n_descsz <= ZXS_BUILD_ID_MAX) {
        memcpy(m->build_id, notes + pos, nhdr.n_descsz);
        m->build_id_size = nhdr.n_descsz;
      }
      return;
    }
    if (desc_size > size - pos) {
      return;
    }
    pos += desc_size;
  }
}

static char* dup_string(const char* s) {
  size_t n = strlen(s) + 1;
  char* copy = malloc(n);
  if (copy != NULL) {
    memcpy(copy, s, n);
  }
  return copy;
}

static int capture_one(struct dl_phdr_info* info, size_t info_size, void* arg) {
  (void)info_size;
  capture_state_t* state = arg;
  size_t loads = 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type == PT_LOAD) {
      loads++;
    }
  }
  if (loads == 0) {
    return 0;
  }
  if (state->list.count == state->capacity) {
    size_t capacity = state->capacity == 0 ? 16 : 2 * state->capacity;
    zxs_module_t* grown = realloc(state->list.modules, capacity * sizeof(*grown));
    if (grown == NULL) {
      state->status = ZX_ERR_NO_MEMORY;
      return 1;
    }
    state->list.modules = grown;
    state->capacity = capacity;
  }
  zxs_module_t* m = &state->list.modules[state->list.count];
  memset(m, 0, sizeof(*m));
  m->load_bias = (uint64_t)info->dlpi_addr;
  m->segments = calloc(loads, sizeof(*m->segments));
  if (m->segments == NULL) {
    state->status = ZX_ERR_NO_MEMORY;
    return 1;
  }
  state->list.count++;  // from here on zxs_modules_free() releases it

  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) {
      continue;
    }
    zxs_segment_t* s = &m->segments[m->segment_count++];
    s->vaddr = ph->p_vaddr;
    s->memsz = ph->p_memsz;
    s->offset = ph->p_offset;
    s->flags = ((ph->p_flags & PF_R) ? ZXS_SEGMENT_R : 0) |
               ((ph->p_flags & PF_W) ? ZXS_SEGMENT_W : 0) |
               ((ph->p_flags & PF_X) ? ZXS_SEGMENT_X : 0);
  }
  // Notes are read in place, but only where they lie inside a readable PT_LOAD segment: a
  // PT_NOTE outside any mapping would fault.
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && m->build_id_size == 0; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE || ph->p_memsz == 0) {
      continue;
    }
    bool mapped = false;
    for (size_t j = 0; j < m->segment_count; j++) {
      const zxs_segment_t* s = &m->segments[j];
      if ((s->flags & ZXS_SEGMENT_R) && ph->p_vaddr >= s->vaddr &&
          ph->p_vaddr - s->vaddr <= s->memsz &&
          ph->p_memsz <= s->memsz - (ph->p_vaddr - s->vaddr)) {
        mapped = true;
        break;
      }
    }
    if (mapped) {
      size_t align = ph->p_align == 8 ? 8 : 4;
      parse_build_id_notes((const uint8_t*)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, align, m);
    }
  }

  const char* name = info->dlpi_name != NULL ? info->dlpi_name : "";
  if (state->vdso_ehdr != 0) {
    // The vDSO's ELF header starts its first page: a PT_LOAD at offset 0 maps it there.
    for (size_t j = 0; j < m->segment_count; j++) {
      if (m->segments[j].offset == 0 &&
          m->load_bias + m->segments[j].vaddr == (uint64_t)state->vdso_ehdr) {
        m->kind = ZXS_MODULE_VDSO;
        name = "[vdso]";
        break;
      }
    }
  }
  if (m->kind != ZXS_MODULE_VDSO && !state->have_main &&
      ((uintptr_t)info->dlpi_phdr == state->main_phdr || name[0] == '\0')) {
    m->kind = ZXS_MODULE_MAIN;
    state->have_main = true;
  }
  // The main executable's path is filled in after the walk (readlink outside the loader lock).
  m->path = dup_string(m->kind == ZXS_MODULE_MAIN ? "" : name);
  if (m->path == NULL) {
    state->status = ZX_ERR_NO_MEMORY;
    return 1;
  }
  return 0;
}

// The main executable's path: /proc/self/exe names the file even when argv[0] or AT_EXECFN was
// relative; AT_EXECFN serves where /proc is not mounted. NULL if out of memory.
static char* main_executable_path(void) {
  for (size_t size = 256; size <= 65536; size *= 2) {
    char* buf = malloc(size);
    if (buf == NULL) {
      return NULL;
    }
    ssize_t n = readlink("/proc/self/exe", buf, size);
    if (n >= 0 && (size_t)n < size) {
      buf[n] = '\0';
      return buf;
    }
    free(buf);
    if (n < 0) {
      break;
    }
  }
  const char* execfn = (const char*)getauxval(AT_EXECFN);
  return dup_string(execfn != NULL ? execfn : "");
}

zx_status_t zxs_modules_capture(zxs_module_list_t* out) {
  if (out == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  capture_state_t state;
  memset(&state, 0, sizeof(state));
  state.status = ZX_OK;
  state.main_phdr = (uintptr_t)getauxval(AT_PHDR);
  state.vdso_ehdr = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  dl_iterate_phdr(capture_one, &state);
  for (size_t i = 0; i < state.list.count && state.status == ZX_OK; i++) {
    zxs_module_t* m = &state.list.modules[i];
    if (m->kind == ZXS_MODULE_MAIN) {
      char* path = main_executable_path();
      if (path == NULL) {
        state.status = ZX_ERR_NO_MEMORY;
        break;
      }
      free(m->path);
      m->path = path;
    }
  }
  if (state.status == ZX_OK) {
    state.status = zxs_modules_index(&state.list);
  }
  if (state.status != ZX_OK) {
    zxs_modules_free(&state.list);
  }
  *out = state.list;
  return state.status;
}

#else  // !ZXS_MODULES_HAVE_DL_ITERATE_PHDR

zx_status_t zxs_modules_capture(zxs_module_list_t* out) {
  if (out == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  out->modules = NULL;
  out->count = 0;
  return ZX_ERR_NOT_SUPPORTED;
}

#endif  // ZXS_MODULES_HAVE_DL_ITERATE_PHDR
