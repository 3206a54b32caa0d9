// The loader's module list (dl_iterate_phdr), shared by the backends whose C library has it.
#ifndef ZXSAMPLER_SRC_BACKEND_ELF_MODULES_DL_H_
#define ZXSAMPLER_SRC_BACKEND_ELF_MODULES_DL_H_

#include <stdint.h>

#include "platform.h"

// zxs_prim_modules_each() over dl_iterate_phdr. `main_phdr` is the address of the main
// executable's program headers (Linux: AT_PHDR); 0, or no match, makes the first module without
// a name the main one. `vdso_ehdr` is the vDSO's ELF header (Linux: AT_SYSINFO_EHDR); 0 where
// the vDSO is an ordinary module of the list (Fuchsia's libzircon.so). Statuses as
// zxs_prim_modules_each(). Not signal-safe.
zx_status_t zxs_dl_modules_each(zxs_prim_module_fn fn, void* ctx, uintptr_t main_phdr,
                                uintptr_t vdso_ehdr);

#endif  // ZXSAMPLER_SRC_BACKEND_ELF_MODULES_DL_H_
