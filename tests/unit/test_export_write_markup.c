// Writes symbolizer markup for a sample of this very process, for check_markup_with_llvm.sh:
// frame 0 is an exact PC in zxs_export_test_leaf(), frame 1 the return address into
// zxs_export_test_caller(), with the modules captured from this process. Prints the build ID
// of the module holding them (the symbolizer finds the binary by it). Exits 3 when that
// module has no build ID (linked without --build-id): nothing to check then.
//   test_export_write_markup PATH
#define _GNU_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "modules.h"

static volatile uintptr_t g_return_address;

// Non-static and not inlined: in the symbol table, with a real call whose return address
// lies inside the caller.
__attribute__((noinline)) int zxs_export_test_leaf(int x);
__attribute__((noinline)) int zxs_export_test_leaf(int x) {
  g_return_address = (uintptr_t)__builtin_return_address(0);
  volatile int v = x;
  return v * 7;
}

__attribute__((noinline)) int zxs_export_test_caller(int x);
__attribute__((noinline)) int zxs_export_test_caller(int x) {
  int r = zxs_export_test_leaf(x);
  volatile int v = r;  // keeps the call from being a tail call
  return v + 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH\n", argv[0]);
    return 2;
  }
  zxs_export_test_caller(3);
  zxs_profile_t profile;
  memset(&profile, 0, sizeof(profile));
  if (zxs_modules_capture(&profile.modules) != ZX_OK) {
    fprintf(stderr, "module capture failed\n");
    return 1;
  }
  // Two bytes into the leaf: an instruction inside it, wherever the compiler put it.
  uint64_t pc = (uint64_t)(uintptr_t)&zxs_export_test_leaf + 2;
  const zxs_module_t* module;
  if (zxs_modules_find(&profile.modules, pc, &module, NULL) != ZX_OK) {
    fprintf(stderr, "no module holds the test functions\n");
    zxs_modules_free(&profile.modules);
    return 1;
  }
  if (module->build_id_size == 0) {
    fprintf(stderr, "the test binary has no build ID\n");
    zxs_modules_free(&profile.modules);
    return 3;
  }
  int32_t index = (int32_t)(module - profile.modules.modules);
  zxs_profile_location_t locations[2] = {
      {.address = pc, .is_return_address = false, .module = index},
      {.address = g_return_address, .is_return_address = true, .module = index},
  };
  uint32_t frames[2] = {0, 1};
  zxs_profile_sample_t sample = {.pid = (zx_koid_t)getpid(), .tid = 1, .depth = 2};
  profile.ticks_per_second = 1000000000;
  profile.locations = locations;
  profile.location_count = 2;
  profile.frames = frames;
  profile.frame_count = 2;
  profile.samples = &sample;
  profile.sample_count = 1;

  char hex[2 * ZXS_BUILD_ID_MAX + 1];
  zxs_build_id_to_hex(module->build_id, module->build_id_size, hex, sizeof(hex));
  FILE* out = fopen(argv[1], "w");
  zx_status_t status = out != NULL ? zxs_export_markup(&profile, out) : ZX_ERR_IO;
  if (out != NULL && fclose(out) != 0) {
    status = ZX_ERR_IO;
  }
  zxs_modules_free(&profile.modules);
  if (status != ZX_OK) {
    fprintf(stderr, "export failed: %d\n", (int)status);
    return 1;
  }
  printf("%s\n", hex);
  return 0;
}
