// The loaded modules as the dynamic loader lists them (dl_iterate_phdr): what the Linux and
// Fuchsia backends share of zxs_prim_modules_each(); each names its main executable and vDSO.
#define _GNU_SOURCE

#include "modules_dl.h"

#include <link.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct walk_state {
  zxs_prim_module_fn fn;
  void* ctx;
  zx_status_t status;
  uintptr_t main_phdr;  // the main executable's program headers, or 0 (modules_dl.h)
  uintptr_t vdso_ehdr;  // the vDSO's ELF header, or 0
  bool have_main;
} walk_state_t;

// The vDSO's ELF header starts its first page: a PT_LOAD at file offset 0 maps it there. The
// kernel maps the whole image, page-rounded; its section headers lie past that segment's memsz.
static void find_vdso_image(const walk_state_t* state, zxs_prim_module_t* m) {
  for (size_t i = 0; i < m->phdr_count && state->vdso_ehdr != 0; i++) {
    const zxs_prim_phdr_t* ph = &m->phdrs[i];
    if (ph->type != ZXS_PRIM_PT_LOAD || ph->offset != 0 ||
        m->load_bias + ph->vaddr != (uint64_t)state->vdso_ehdr) {
      continue;
    }
    const long sc = sysconf(_SC_PAGESIZE);
    const uint64_t page = sc > 0 ? (uint64_t)sc : 4096;
    m->is_vdso = true;
    if (ph->memsz > SIZE_MAX - page) {
      return;  // no image to give
    }
    m->image = (const void*)(uintptr_t)(m->load_bias + ph->vaddr);
    m->image_size = (size_t)((ph->memsz + page - 1) / page * page);
    return;
  }
}

static int walk_one(struct dl_phdr_info* info, size_t info_size, void* arg) {
  (void)info_size;
  walk_state_t* state = arg;
  zxs_prim_phdr_t* phdrs = calloc(info->dlpi_phnum + 1u, sizeof(*phdrs));
  if (phdrs == NULL) {
    state->status = ZX_ERR_NO_MEMORY;
    return 1;
  }
  zxs_prim_module_t m = {.name = info->dlpi_name != NULL ? info->dlpi_name : "",
                         .load_bias = (uint64_t)info->dlpi_addr,
                         .phdrs = phdrs};
  bool loads = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD && ph->p_type != PT_NOTE) {
      continue;
    }
    loads = loads || ph->p_type == PT_LOAD;
    phdrs[m.phdr_count++] = (zxs_prim_phdr_t){.type = ph->p_type,
                                              .flags = ph->p_flags,
                                              .vaddr = ph->p_vaddr,
                                              .memsz = ph->p_memsz,
                                              .offset = ph->p_offset,
                                              .align = ph->p_align};
  }
  if (loads) {
    find_vdso_image(state, &m);
    if (!m.is_vdso && !state->have_main &&
        ((uintptr_t)info->dlpi_phdr == state->main_phdr || m.name[0] == '\0')) {
      m.is_main = true;
      state->have_main = true;
    }
    state->status = state->fn(&m, state->ctx);
  }
  free(phdrs);
  return state->status != ZX_OK;
}

zx_status_t zxs_dl_modules_each(zxs_prim_module_fn fn, void* ctx, uintptr_t main_phdr,
                                uintptr_t vdso_ehdr) {
  walk_state_t state = {
      .fn = fn, .ctx = ctx, .status = ZX_OK, .main_phdr = main_phdr, .vdso_ehdr = vdso_ehdr};
  dl_iterate_phdr(walk_one, &state);
  return state.status;
}
