// The loaded modules, as a feature may ask for them (process_facts.h). Apart from
// process_facts.c so that a program that captures modules needs only the backend's modules part.
#include "platform.h"
#include "process_facts.h"

zx_status_t zxs_facts_modules_each(zxs_prim_module_fn fn, void* ctx) {
  return zxs_prim_modules_each(fn, ctx);
}

zx_status_t zxs_facts_main_path(char** path) { return zxs_prim_modules_main_path(path); }

zx_status_t zxs_facts_exec_mappings_each(zxs_prim_mapping_fn fn, void* ctx) {
  return zxs_prim_exec_mappings_each(fn, ctx);
}
