// Module capture and ELF symbolization, on this test process's own modules, plus malformed
// input (meant to run under ASan/UBSan: "never crashes" is what those check).
// Built by tests/meson.build (test 'symbolize'), linked with -rdynamic to exercise .dynsym too.
#define _GNU_SOURCE

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

// cmocka.h needs the headers above first.
#include <cmocka.h>

#include "elf_symbolizer.h"
#include "modules.h"

// --- Functions to find ----------------------------------------------------------------------

// Non-static: in .symtab always, in .dynsym too when linked with -rdynamic.
__attribute__((noinline)) int zxs_test_exported_target(int x);
static const int kExportedTargetLine = __LINE__ + 1;
__attribute__((noinline)) int zxs_test_exported_target(int x) {
  volatile int v = x;
  return v * 3 + 1;
}

// Static: only in .symtab (LOCAL binding).
__attribute__((noinline)) static int static_target(int x) {
  volatile int v = x;
  return v * 5 + 2;
}

static volatile uintptr_t g_return_address;
static int g_call_line;

__attribute__((noinline)) static int callee_records_return_address(int x) {
  g_return_address = (uintptr_t)__builtin_return_address(0);
  volatile int v = x;
  return v + 1;
}

// Calls the callee and uses its result afterwards, so the call is not a tail call and the
// return address lies inside this function.
__attribute__((noinline)) int zxs_test_caller(int x);
__attribute__((noinline)) int zxs_test_caller(int x) {
  g_call_line = __LINE__ + 1;
  int r = callee_records_return_address(x);
  volatile int v = r;
  return v * 2;
}

// --- Helpers ----------------------------------------------------------------------------------

static uint64_t fn_address(uintptr_t address) { return (uint64_t)address; }

static const zxs_module_t* find_module(const zxs_module_list_t* list, zxs_module_kind_t kind,
                                       const char* path_part) {
  for (size_t i = 0; i < list->count; i++) {
    const zxs_module_t* m = &list->modules[i];
    if (m->kind == kind && (path_part == NULL || strstr(m->path, path_part) != NULL)) {
      return m;
    }
  }
  return NULL;
}

static const zxs_module_t* find_libc(const zxs_module_list_t* list) {
  for (size_t i = 0; i < list->count; i++) {
    const zxs_module_t* m = &list->modules[i];
    const char* base = strrchr(m->path, '/');
    base = base != NULL ? base + 1 : m->path;
    if (strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0) {
      return m;
    }
  }
  return NULL;
}

// libc's own malloc: under ASan plain `malloc` is the sanitizer's interceptor, but dlsym on
// libc's handle searches libc (and its dependencies) only.
static uint64_t libc_malloc_address(void) {
  void* handle = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
  assert_non_null(handle);
  void* sym = dlsym(handle, "malloc");
  dlclose(handle);
  assert_non_null(sym);
  return (uint64_t)(uintptr_t)sym;
}

static uint8_t* read_whole_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  assert_true(n > 0);
  assert_int_equal(fseek(f, 0, SEEK_SET), 0);
  uint8_t* data = malloc((size_t)n);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *size = (size_t)n;
  return data;
}

static void write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  assert_non_null(f);
  if (size > 0) {
    assert_int_equal(fwrite(data, 1, size, f), size);
  }
  assert_int_equal(fclose(f), 0);
}

// An independent build-ID reader (section-based, with <elf.h> structs, unlike the symbolizer's
// segment-first byte decoder): what `readelf -n` reports. Returns the size, 0 if none.
static size_t reference_build_id(const uint8_t* data, size_t size, uint8_t* id, size_t id_max) {
  Elf64_Ehdr eh;
  assert_true(size >= sizeof(eh));
  memcpy(&eh, data, sizeof(eh));
  assert_true(eh.e_shoff > 0 && eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) <= size);
  for (size_t i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, data + eh.e_shoff + i * sizeof(sh), sizeof(sh));
    if (sh.sh_type != SHT_NOTE) {
      continue;
    }
    assert_true(sh.sh_offset + sh.sh_size <= size);
    size_t align = sh.sh_addralign == 8 ? 8 : 4;
    size_t pos = 0;
    while (pos + sizeof(Elf64_Nhdr) <= sh.sh_size) {
      Elf64_Nhdr nh;
      memcpy(&nh, data + sh.sh_offset + pos, sizeof(nh));
      size_t name_at = pos + sizeof(nh);
      size_t desc_at = name_at + ((nh.n_namesz + align - 1) & ~(align - 1));
      size_t next = desc_at + ((nh.n_descsz + align - 1) & ~(align - 1));
      if (next > sh.sh_size) {
        break;
      }
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
          memcmp(data + sh.sh_offset + name_at, "GNU", 4) == 0) {
        assert_true(nh.n_descsz <= id_max);
        memcpy(id, data + sh.sh_offset + desc_at, nh.n_descsz);
        return nh.n_descsz;
      }
      pos = next;
    }
  }
  return 0;
}

// `readelf -n`'s "Build ID: <hex>", if readelf is installed; false if it is not.
static bool readelf_build_id(const char* path, char* hex, size_t hex_size) {
  if (system("command -v readelf >/dev/null 2>&1") != 0) {
    return false;
  }
  char command[PATH_MAX + 64];
  snprintf(command, sizeof(command), "readelf -n '%s' 2>/dev/null", path);
  FILE* p = popen(command, "r");
  if (p == NULL) {
    return false;
  }
  char line[512];
  hex[0] = '\0';
  while (fgets(line, sizeof(line), p) != NULL) {
    const char* at = strstr(line, "Build ID: ");
    if (at != NULL && hex[0] == '\0') {
      at += strlen("Build ID: ");
      size_t n = strcspn(at, " \r\n");
      if (n < hex_size) {
        memcpy(hex, at, n);
        hex[n] = '\0';
      }
    }
  }
  pclose(p);
  return true;
}

static char g_tmpdir[PATH_MAX];

// Sets buf to g_tmpdir/name.
static void tmp_path(char* buf, size_t size, const char* name) {
  int n = snprintf(buf, size, "%s/%s", g_tmpdir, name);
  assert_true(n > 0 && (size_t)n < size);
}

static int make_tmpdir(void** state) {
  (void)state;
  const char* base = getenv("TMPDIR");
  snprintf(g_tmpdir, sizeof(g_tmpdir), "%s/zxs_symbolize_XXXXXX",
           base != NULL && base[0] != '\0' ? base : "/tmp");
  return mkdtemp(g_tmpdir) != NULL ? 0 : -1;
}

static int remove_tmpdir(void** state) {
  (void)state;
  char command[PATH_MAX + 16];
  snprintf(command, sizeof(command), "rm -rf '%s'", g_tmpdir);
  return system(command) == 0 ? 0 : -1;
}

// Captures the modules and opens the main executable's file.
static void open_main(zxs_module_list_t* list, const zxs_module_t** main_module, zxs_elf_t** elf) {
  assert_int_equal(zxs_modules_capture(list), ZX_OK);
  *main_module = find_module(list, ZXS_MODULE_MAIN, NULL);
  assert_non_null(*main_module);
  assert_int_equal(zxs_elf_open((*main_module)->path, elf), ZX_OK);
}

// Whether lines can be expected: libdw built in and the test binary compiled with -g.
static bool expect_lines(void) {
  if (!zxs_elf_have_line_info()) {
    return false;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  size_t size = 0;
  uint8_t* data = read_whole_file(exe, &size);
  Elf64_Ehdr eh;
  memcpy(&eh, data, sizeof(eh));
  Elf64_Shdr names;
  memcpy(&names, data + eh.e_shoff + eh.e_shstrndx * sizeof(names), sizeof(names));
  bool found = false;
  for (size_t i = 0; i < eh.e_shnum && !found; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, data + eh.e_shoff + i * sizeof(sh), sizeof(sh));
    found = strcmp((const char*)data + names.sh_offset + sh.sh_name, ".debug_line") == 0;
  }
  free(data);
  return found;
}

// --- Module capture ---------------------------------------------------------------------------

static void test_capture_finds_main_and_libc(void** state) {
  (void)state;
  zxs_module_list_t list;
  assert_int_equal(zxs_modules_capture(&list), ZX_OK);
  assert_true(list.count >= 2);

  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  const zxs_module_t* main_module = find_module(&list, ZXS_MODULE_MAIN, NULL);
  assert_non_null(main_module);
  assert_string_equal(main_module->path, exe);

  const zxs_module_t* libc = find_libc(&list);
  assert_non_null(libc);
  assert_int_equal(libc->kind, ZXS_MODULE_SHARED);
  assert_true(libc->build_id_size > 0);

  // Sorted, non-overlapping, every module with a path and segments.
  for (size_t i = 0; i < list.count; i++) {
    const zxs_module_t* m = &list.modules[i];
    assert_non_null(m->path);
    assert_true(m->segment_count > 0);
    assert_true(m->start < m->end);
    if (i > 0) {
      assert_true(list.modules[i - 1].end <= m->start);
    }
    if (m->kind == ZXS_MODULE_VDSO) {
      assert_string_equal(m->path, "[vdso]");
    }
  }

  // Code addresses land in executable segments of the right modules.
  const zxs_module_t* m = NULL;
  const zxs_segment_t* seg = NULL;
  uint64_t pc = fn_address((uintptr_t)&zxs_test_exported_target);
  assert_int_equal(zxs_modules_find(&list, pc, &m, &seg), ZX_OK);
  assert_ptr_equal(m, main_module);
  assert_true(seg->flags & ZXS_SEGMENT_X);
  assert_true(seg->flags & ZXS_SEGMENT_R);
  assert_false(seg->flags & ZXS_SEGMENT_W);

  assert_int_equal(zxs_modules_find(&list, libc_malloc_address(), &m, &seg), ZX_OK);
  assert_ptr_equal(m, libc);
  assert_true(seg->flags & ZXS_SEGMENT_X);

  // Data lands in a writable segment of the main executable.
  static int data_in_main = 1;
  assert_int_equal(zxs_modules_find(&list, (uint64_t)(uintptr_t)&data_in_main, &m, &seg), ZX_OK);
  assert_ptr_equal(m, main_module);
  assert_true(seg->flags & ZXS_SEGMENT_W);

  // The vDSO, where the kernel maps one.
  uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  if (vdso != 0) {
    assert_int_equal(zxs_modules_find(&list, vdso, &m, NULL), ZX_OK);
    assert_int_equal(m->kind, ZXS_MODULE_VDSO);
    assert_string_equal(m->path, "[vdso]");
  }

  // Stack and null are in no module.
  int local = 0;
  assert_int_equal(zxs_modules_find(&list, (uint64_t)(uintptr_t)&local, NULL, NULL),
                   ZX_ERR_NOT_FOUND);
  assert_int_equal(zxs_modules_find(&list, 0, NULL, NULL), ZX_ERR_NOT_FOUND);
  zxs_modules_free(&list);
  assert_null(list.modules);
  assert_int_equal(list.count, 0);
  zxs_modules_free(&list);  // twice is fine
}

static void test_build_ids_match_files(void** state) {
  (void)state;
  zxs_module_list_t list;
  assert_int_equal(zxs_modules_capture(&list), ZX_OK);
  size_t checked = 0;
  for (size_t i = 0; i < list.count; i++) {
    const zxs_module_t* m = &list.modules[i];
    if (m->kind == ZXS_MODULE_VDSO || m->path[0] != '/') {
      continue;
    }
    size_t size = 0;
    uint8_t* data = read_whole_file(m->path, &size);
    uint8_t ref[ZXS_BUILD_ID_MAX];
    size_t ref_size = reference_build_id(data, size, ref, sizeof(ref));
    free(data);
    // What the loaded image says equals what the file on disk says.
    assert_int_equal(m->build_id_size, ref_size);
    assert_memory_equal(m->build_id, ref, ref_size);

    zxs_elf_t* elf = NULL;
    assert_int_equal(zxs_elf_open(m->path, &elf), ZX_OK);
    const uint8_t* id = NULL;
    size_t id_size = 0;
    zx_status_t status = zxs_elf_build_id(elf, &id, &id_size);
    if (ref_size == 0) {
      assert_int_equal(status, ZX_ERR_NOT_FOUND);
    } else {
      assert_int_equal(status, ZX_OK);
      assert_int_equal(id_size, ref_size);
      assert_memory_equal(id, ref, ref_size);
    }
    zxs_elf_close(elf);

    char ours[2 * ZXS_BUILD_ID_MAX + 1];
    assert_int_equal(zxs_build_id_to_hex(m->build_id, m->build_id_size, ours, sizeof(ours)), ZX_OK);
    char theirs[2 * ZXS_BUILD_ID_MAX + 1];
    if (readelf_build_id(m->path, theirs, sizeof(theirs))) {
      assert_string_equal(ours, theirs);
    }
    checked++;
  }
  assert_true(checked >= 2);  // the executable and libc at least
  zxs_modules_free(&list);
}

static void test_vdso_from_memory(void** state) {
  (void)state;
  zxs_module_list_t list;
  assert_int_equal(zxs_modules_capture(&list), ZX_OK);
  const zxs_module_t* vdso = find_module(&list, ZXS_MODULE_VDSO, NULL);
  if (vdso == NULL) {
    zxs_modules_free(&list);
    skip();
  }
  const void* image = NULL;
  size_t image_size = 0;
  assert_int_equal(zxs_module_vdso_image(vdso, &image, &image_size), ZX_OK);
  zxs_elf_t* elf = NULL;
  assert_int_equal(zxs_elf_open_memory(image, image_size, &elf), ZX_OK);
  assert_true(zxs_elf_symbol_count(elf) > 0);
  const uint8_t* id = NULL;
  size_t id_size = 0;
  if (zxs_elf_build_id(elf, &id, &id_size) == ZX_OK) {
    assert_int_equal(id_size, vdso->build_id_size);
    assert_memory_equal(id, vdso->build_id, id_size);
  }
  // Its functions are named: each sized function of its .dynsym (read here with <elf.h>)
  // resolves, from its middle, to a symbol starting where it starts.
  const uint8_t* bytes = image;
  Elf64_Ehdr eh;
  memcpy(&eh, bytes, sizeof(eh));
  size_t functions = 0;
  for (size_t i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, bytes + eh.e_shoff + i * sizeof(sh), sizeof(sh));
    if (sh.sh_type != SHT_DYNSYM) {
      continue;
    }
    for (size_t j = 1; j < sh.sh_size / sizeof(Elf64_Sym); j++) {
      Elf64_Sym sym;
      memcpy(&sym, bytes + sh.sh_offset + j * sizeof(sym), sizeof(sym));
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0) {
        continue;
      }
      uint64_t runtime = vdso->load_bias + sym.st_value + sym.st_size / 2;
      uint64_t file_address = 0;
      assert_int_equal(zxs_modules_file_address(&list, runtime, 0, NULL, &file_address), ZX_OK);
      zxs_elf_location_t loc;
      assert_int_equal(zxs_elf_lookup(elf, file_address, 0, &loc), ZX_OK);
      assert_int_equal(loc.symbol_address, sym.st_value);
      assert_int_equal(loc.source, ZXS_ELF_SOURCE_DYNSYM);
      functions++;
    }
  }
  assert_true(functions > 0);
  zxs_elf_close(elf);
  assert_int_equal(zxs_module_vdso_image(find_libc(&list), &image, &image_size), ZX_ERR_WRONG_TYPE);
  zxs_modules_free(&list);
}

static void test_hand_built_list(void** state) {
  (void)state;
  zxs_module_list_t list = {.modules = calloc(3, sizeof(zxs_module_t)), .count = 3};
  assert_non_null(list.modules);
  // B (two segments with a gap) before A, and an empty module.
  zxs_module_t* b = &list.modules[0];
  b->path = strdup("/b.so");
  b->load_bias = 0x200000;
  b->segment_count = 2;
  b->segments = calloc(2, sizeof(zxs_segment_t));
  b->segments[0] = (zxs_segment_t){.vaddr = 0, .memsz = 0x1000, .offset = 0, .flags = 1};
  b->segments[1] = (zxs_segment_t){.vaddr = 0x3000, .memsz = 0x800, .offset = 0x1000, .flags = 5};
  zxs_module_t* a = &list.modules[1];
  a->path = strdup("/a");
  a->kind = ZXS_MODULE_MAIN;
  a->load_bias = 0;
  a->segment_count = 1;
  a->segments = calloc(1, sizeof(zxs_segment_t));
  a->segments[0] = (zxs_segment_t){.vaddr = 0x10000, .memsz = 0x2000, .offset = 0, .flags = 5};
  list.modules[2].path = strdup("/empty");
  assert_int_equal(zxs_modules_index(&list), ZX_OK);
  assert_string_equal(list.modules[0].path, "/empty");
  assert_string_equal(list.modules[1].path, "/a");
  assert_string_equal(list.modules[2].path, "/b.so");

  const zxs_module_t* m = NULL;
  const zxs_segment_t* s = NULL;
  assert_int_equal(zxs_modules_find(&list, 0x10000, &m, &s), ZX_OK);
  assert_string_equal(m->path, "/a");
  assert_int_equal(zxs_modules_find(&list, 0x11fff, &m, &s), ZX_OK);
  assert_int_equal(zxs_modules_find(&list, 0x12000, &m, &s), ZX_ERR_NOT_FOUND);
  assert_int_equal(zxs_modules_find(&list, 0xffff, &m, &s), ZX_ERR_NOT_FOUND);
  assert_int_equal(zxs_modules_find(&list, 0x201000, &m, &s), ZX_ERR_NOT_FOUND);  // gap
  assert_int_equal(zxs_modules_find(&list, 0x203010, &m, &s), ZX_OK);
  assert_string_equal(m->path, "/b.so");
  assert_int_equal(s->flags, 5);
  assert_int_equal(zxs_module_file_address(m, 0x203010), 0x3010);
  assert_int_equal(s->offset, 0x1000);

  // A return address equal to a segment's end belongs to the call before it.
  uint64_t file_address = 0;
  assert_int_equal(zxs_modules_file_address(&list, 0x203800, 0, &m, &file_address),
                   ZX_ERR_NOT_FOUND);
  assert_int_equal(
      zxs_modules_file_address(&list, 0x203800, ZXS_MODULES_RETURN_ADDRESS, &m, &file_address),
      ZX_OK);
  assert_int_equal(file_address, 0x3800);
  assert_int_equal(zxs_modules_file_address(&list, 0x203800, 0x80, &m, &file_address),
                   ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_modules_find(NULL, 0, NULL, NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_modules_index(NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_modules_capture(NULL), ZX_ERR_INVALID_ARGS);
  zxs_modules_free(&list);

  zxs_module_list_t empty = {0};
  assert_int_equal(zxs_modules_find(&empty, 0x1000, NULL, NULL), ZX_ERR_NOT_FOUND);

  const uint8_t id[] = {0x00, 0xab, 0x7f, 0xff};
  char hex[9];
  assert_int_equal(zxs_build_id_to_hex(id, sizeof(id), hex, sizeof(hex)), ZX_OK);
  assert_string_equal(hex, "00ab7fff");
  assert_int_equal(zxs_build_id_to_hex(id, sizeof(id), hex, 8), ZX_ERR_BUFFER_TOO_SMALL);
  assert_int_equal(zxs_build_id_to_hex(NULL, 0, hex, 1), ZX_OK);
  assert_string_equal(hex, "");
}

// --- Symbolization ----------------------------------------------------------------------------

static void test_symtab_functions(void** state) {
  (void)state;
  zxs_module_list_t list;
  const zxs_module_t* main_module = NULL;
  zxs_elf_t* elf = NULL;
  open_main(&list, &main_module, &elf);
  assert_true(zxs_elf_symbol_count(elf) > 0);

  const zxs_module_t* m = NULL;
  uint64_t file_address = 0;
  uint64_t pc = fn_address((uintptr_t)&zxs_test_exported_target);
  assert_int_equal(zxs_modules_file_address(&list, pc, 0, &m, &file_address), ZX_OK);
  assert_ptr_equal(m, main_module);
  zxs_elf_location_t loc;
  assert_int_equal(zxs_elf_lookup(elf, file_address, ZXS_ELF_LOOKUP_NO_LINES, &loc), ZX_OK);
  assert_string_equal(loc.name, "zxs_test_exported_target");
  assert_int_equal(loc.offset, 0);
  assert_int_equal(loc.symbol_address, file_address);
  assert_true(loc.symbol_size > 4);
  assert_int_equal(loc.source, ZXS_ELF_SOURCE_SYMTAB);  // .symtab wins over a .dynsym copy
  assert_null(loc.file);

  // Inside the function, and its last byte.
  assert_int_equal(zxs_elf_lookup(elf, file_address + 3, ZXS_ELF_LOOKUP_NO_LINES, &loc), ZX_OK);
  assert_string_equal(loc.name, "zxs_test_exported_target");
  assert_int_equal(loc.offset, 3);
  uint64_t last = file_address + loc.symbol_size - 1;
  assert_int_equal(zxs_elf_lookup(elf, last, ZXS_ELF_LOOKUP_NO_LINES, &loc), ZX_OK);
  assert_string_equal(loc.name, "zxs_test_exported_target");

  // A static function (LOCAL, .symtab only).
  pc = fn_address((uintptr_t)&static_target);
  assert_int_equal(zxs_modules_file_address(&list, pc, 0, NULL, &file_address), ZX_OK);
  assert_int_equal(zxs_elf_lookup(elf, file_address, 0, &loc), ZX_OK);
  assert_string_equal(loc.name, "static_target");
  assert_int_equal(loc.source, ZXS_ELF_SOURCE_SYMTAB);

  // Outside any function.
  assert_int_equal(zxs_elf_lookup(elf, 0, ZXS_ELF_LOOKUP_NO_LINES, &loc), ZX_ERR_NOT_FOUND);
  assert_int_equal(zxs_elf_lookup(elf, UINT64_MAX, ZXS_ELF_LOOKUP_NO_LINES, &loc),
                   ZX_ERR_NOT_FOUND);
  assert_int_equal(zxs_elf_lookup(elf, 0, 0x100, &loc), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_elf_lookup(NULL, 0, 0, &loc), ZX_ERR_INVALID_ARGS);
  zxs_elf_close(elf);
  zxs_modules_free(&list);
}

static void test_return_address(void** state) {
  (void)state;
  // Through a volatile pointer, so the compiler cannot clone the function for a constant.
  int (*volatile caller)(int) = zxs_test_caller;
  assert_int_equal(caller(1), 4);
  zxs_module_list_t list;
  const zxs_module_t* main_module = NULL;
  zxs_elf_t* elf = NULL;
  open_main(&list, &main_module, &elf);

  uint64_t file_address = 0;
  assert_int_equal(zxs_modules_file_address(&list, g_return_address, ZXS_MODULES_RETURN_ADDRESS,
                                            NULL, &file_address),
                   ZX_OK);
  zxs_elf_location_t loc;
  assert_int_equal(zxs_elf_lookup(elf, file_address, ZXS_ELF_LOOKUP_RETURN_ADDRESS, &loc), ZX_OK);
  assert_string_equal(loc.name, "zxs_test_caller");
  // The offset is that of the return address itself, not of address - 1.
  assert_int_equal(loc.offset, file_address - loc.symbol_address);
  assert_true(loc.offset > 0);
  if (expect_lines()) {
    // The line of the call, not whatever follows it.
    assert_non_null(loc.file);
    assert_int_equal(loc.line, (uint32_t)g_call_line);
  }
  assert_int_equal(zxs_elf_lookup(elf, 0, ZXS_ELF_LOOKUP_RETURN_ADDRESS, &loc), ZX_ERR_NOT_FOUND);
  zxs_elf_close(elf);
  zxs_modules_free(&list);
}

// libc on Debian is stripped: its names come from .dynsym.
static void test_libc_malloc(void** state) {
  (void)state;
  zxs_module_list_t list;
  assert_int_equal(zxs_modules_capture(&list), ZX_OK);
  const zxs_module_t* libc = find_libc(&list);
  assert_non_null(libc);
  const zxs_module_t* m = NULL;
  uint64_t file_address = 0;
  assert_int_equal(zxs_modules_file_address(&list, libc_malloc_address() + 4, 0, &m, &file_address),
                   ZX_OK);
  assert_ptr_equal(m, libc);
  zxs_elf_t* elf = NULL;
  assert_int_equal(zxs_elf_open(libc->path, &elf), ZX_OK);
  zxs_elf_location_t loc;
  assert_int_equal(zxs_elf_lookup(elf, file_address, 0, &loc), ZX_OK);
  assert_non_null(loc.name);
  // Aliases at one address: the public name is preferred.
  assert_string_equal(loc.name, "malloc");
  assert_int_equal(loc.offset, 4);
  assert_true(loc.source == ZXS_ELF_SOURCE_DYNSYM || loc.source == ZXS_ELF_SOURCE_SYMTAB ||
              loc.source == ZXS_ELF_SOURCE_DWARF);

  // Cross-check with the loader's own answer for an exported function.
  Dl_info info;
  void* handle = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
  assert_non_null(handle);
  void* sym = dlsym(handle, "qsort");
  dlclose(handle);
  assert_non_null(sym);
  assert_true(dladdr(sym, &info) != 0);
  assert_int_equal(
      zxs_modules_file_address(&list, (uint64_t)(uintptr_t)sym, 0, NULL, &file_address), ZX_OK);
  assert_int_equal(zxs_elf_lookup(elf, file_address, ZXS_ELF_LOOKUP_NO_LINES, &loc), ZX_OK);
  assert_string_equal(loc.name, info.dli_sname);
  zxs_elf_close(elf);
  zxs_modules_free(&list);
}

// The test binary with its .symtab hidden (type set to PROGBITS), opened from memory: only
// .dynsym is left. With -rdynamic the exported function is still found there; without it, it
// must not be misnamed.
static void test_dynsym_only(void** state) {
  (void)state;
  zxs_module_list_t list;
  const zxs_module_t* main_module = NULL;
  zxs_elf_t* elf = NULL;
  open_main(&list, &main_module, &elf);
  zxs_elf_close(elf);
  size_t size = 0;
  uint8_t* data = read_whole_file(main_module->path, &size);
  Elf64_Ehdr eh;
  memcpy(&eh, data, sizeof(eh));
  bool hid = false;
  for (size_t i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    size_t at = eh.e_shoff + i * sizeof(sh);
    memcpy(&sh, data + at, sizeof(sh));
    if (sh.sh_type == SHT_SYMTAB) {
      sh.sh_type = SHT_PROGBITS;
      memcpy(data + at, &sh, sizeof(sh));
      hid = true;
    }
  }
  assert_true(hid);
  assert_int_equal(zxs_elf_open_memory(data, size, &elf), ZX_OK);
  free(data);  // the handle keeps copies

  uint64_t file_address = 0;
  assert_int_equal(zxs_modules_file_address(&list, fn_address((uintptr_t)&zxs_test_exported_target),
                                            0, NULL, &file_address),
                   ZX_OK);
  zxs_elf_location_t loc;
  zx_status_t status = zxs_elf_lookup(elf, file_address, 0, &loc);
  // The loader sees the function exactly when it is in .dynsym.
  bool exported = dlsym(RTLD_DEFAULT, "zxs_test_exported_target") != NULL;
  if (exported) {
    assert_int_equal(status, ZX_OK);
    assert_string_equal(loc.name, "zxs_test_exported_target");
    assert_int_equal(loc.source, ZXS_ELF_SOURCE_DYNSYM);
  } else {
    print_message("(test binary not linked with -rdynamic: .dynsym lacks the function)\n");
    assert_int_equal(status, ZX_ERR_NOT_FOUND);
  }
  // A static function is never in .dynsym: not found, rather than named after a neighbour.
  assert_int_equal(zxs_modules_file_address(&list, fn_address((uintptr_t)&static_target), 0, NULL,
                                            &file_address),
                   ZX_OK);
  assert_int_equal(zxs_elf_lookup(elf, file_address, 0, &loc), ZX_ERR_NOT_FOUND);
  zxs_elf_close(elf);
  zxs_modules_free(&list);
}

static void test_line_info(void** state) {
  (void)state;
  if (!expect_lines()) {
    print_message("(built without ZXS_HAVE_LIBDW, or test binary without -g: no lines)\n");
    skip();
  }
  zxs_module_list_t list;
  const zxs_module_t* main_module = NULL;
  zxs_elf_t* elf = NULL;
  open_main(&list, &main_module, &elf);
  uint64_t file_address = 0;
  assert_int_equal(zxs_modules_file_address(&list, fn_address((uintptr_t)&zxs_test_exported_target),
                                            0, NULL, &file_address),
                   ZX_OK);
  zxs_elf_location_t loc;
  assert_int_equal(zxs_elf_lookup(elf, file_address, 0, &loc), ZX_OK);
  assert_string_equal(loc.name, "zxs_test_exported_target");
  assert_non_null(loc.file);
  const char* base = strrchr(loc.file, '/');
  assert_string_equal(base != NULL ? base + 1 : loc.file, "test_symbolize.c");
  assert_true(loc.line >= (uint32_t)kExportedTargetLine);
  assert_true(loc.line <= (uint32_t)kExportedTargetLine + 3);

  // The names-only flag really skips libdw.
  assert_int_equal(zxs_elf_lookup(elf, file_address, ZXS_ELF_LOOKUP_NO_LINES, &loc), ZX_OK);
  assert_null(loc.file);
  assert_int_equal(loc.line, 0);
  zxs_elf_close(elf);

  // A copy with both symbol tables hidden: the name comes from DWARF.
  size_t size = 0;
  uint8_t* data = read_whole_file(main_module->path, &size);
  Elf64_Ehdr eh;
  memcpy(&eh, data, sizeof(eh));
  for (size_t i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    size_t at = eh.e_shoff + i * sizeof(sh);
    memcpy(&sh, data + at, sizeof(sh));
    if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
      sh.sh_type = SHT_PROGBITS;
      memcpy(data + at, &sh, sizeof(sh));
    }
  }
  char path[PATH_MAX];
  tmp_path(path, sizeof(path), "no_symbols");
  write_file(path, data, size);
  free(data);
  assert_int_equal(zxs_elf_open(path, &elf), ZX_OK);
  assert_int_equal(zxs_elf_symbol_count(elf), 0);
  assert_int_equal(zxs_elf_lookup(elf, file_address + 2, 0, &loc), ZX_OK);
  assert_string_equal(loc.name, "zxs_test_exported_target");
  assert_int_equal(loc.source, ZXS_ELF_SOURCE_DWARF);
  assert_int_equal(loc.symbol_address, file_address);
  assert_int_equal(loc.offset, 2);
  assert_non_null(loc.file);
  assert_int_equal(zxs_elf_lookup(elf, file_address + 2, ZXS_ELF_LOOKUP_NO_LINES, &loc),
                   ZX_ERR_NOT_FOUND);
  zxs_elf_close(elf);
  zxs_modules_free(&list);
}

// A stripped copy of the test binary plus its debug file (objcopy --only-keep-debug, found
// through .gnu_debuglink): the debug file alone symbolizes from its .symtab, and with libdw the
// stripped file gets names and lines from the debug file. Needs binutils' objcopy.
static void test_separate_debug_file(void** state) {
  (void)state;
  if (system("command -v objcopy >/dev/null 2>&1") != 0) {
    print_message("(objcopy not installed)\n");
    skip();
  }
  zxs_module_list_t list;
  const zxs_module_t* main_module = NULL;
  zxs_elf_t* elf = NULL;
  open_main(&list, &main_module, &elf);
  zxs_elf_close(elf);
  char debug[PATH_MAX];
  char stripped[PATH_MAX];
  tmp_path(debug, sizeof(debug), "self.debug");
  tmp_path(stripped, sizeof(stripped), "self.stripped");
  char command[3 * PATH_MAX + 128];
  int n = snprintf(command, sizeof(command),
                   "objcopy --only-keep-debug '%s' '%s' && "
                   "objcopy --strip-all --add-gnu-debuglink='%s' '%s' '%s'",
                   main_module->path, debug, debug, main_module->path, stripped);
  assert_true(n > 0 && (size_t)n < sizeof(command));
  assert_int_equal(system(command), 0);

  uint64_t file_address = 0;
  assert_int_equal(zxs_modules_file_address(&list, fn_address((uintptr_t)&static_target), 0, NULL,
                                            &file_address),
                   ZX_OK);
  zxs_elf_location_t loc;
  // The debug file: same build ID, and its .symtab names the function.
  assert_int_equal(zxs_elf_open(debug, &elf), ZX_OK);
  const uint8_t* id = NULL;
  size_t id_size = 0;
  assert_int_equal(zxs_elf_build_id(elf, &id, &id_size), ZX_OK);
  assert_int_equal(id_size, main_module->build_id_size);
  assert_memory_equal(id, main_module->build_id, id_size);
  assert_int_equal(zxs_elf_lookup(elf, file_address, ZXS_ELF_LOOKUP_NO_LINES, &loc), ZX_OK);
  assert_string_equal(loc.name, "static_target");
  zxs_elf_close(elf);

  // The stripped file has no .symtab: the static function is named from the debug file's,
  // found through .gnu_debuglink (with or without libdw), and given a line by libdw.
  assert_int_equal(zxs_elf_open(stripped, &elf), ZX_OK);
  assert_int_equal(zxs_elf_lookup(elf, file_address, 0, &loc), ZX_OK);
  assert_string_equal(loc.name, "static_target");
  assert_int_equal(loc.source, ZXS_ELF_SOURCE_SYMTAB);
  if (expect_lines()) {
    assert_non_null(loc.file);
    assert_true(loc.line > 0);
  }
  zxs_elf_close(elf);
  // Without the debug file, nothing names it.
  assert_int_equal(unlink(debug), 0);
  assert_int_equal(zxs_elf_open(stripped, &elf), ZX_OK);
  assert_int_equal(zxs_elf_lookup(elf, file_address, ZXS_ELF_LOOKUP_NO_LINES, &loc),
                   ZX_ERR_NOT_FOUND);
  zxs_elf_close(elf);
  zxs_modules_free(&list);
}

// --- Malformed input --------------------------------------------------------------------------

static uint8_t* g_self;
static size_t g_self_size;

static int load_self(void** state) {
  if (make_tmpdir(state) != 0) {
    return -1;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) {
    return -1;
  }
  exe[n] = '\0';
  g_self = read_whole_file(exe, &g_self_size);
  return 0;
}

static int unload_self(void** state) {
  free(g_self);
  g_self = NULL;
  return remove_tmpdir(state);
}

static zx_status_t open_file_bytes(const char* name, const void* data, size_t size) {
  char path[PATH_MAX];
  tmp_path(path, sizeof(path), name);
  write_file(path, data, size);
  zxs_elf_t* elf = (zxs_elf_t*)(uintptr_t)1;  // must be reset on failure
  zx_status_t status = zxs_elf_open(path, &elf);
  if (status == ZX_OK) {
    zxs_elf_location_t loc;
    (void)zxs_elf_lookup(elf, 0x1000, 0, &loc);
    zxs_elf_close(elf);
  } else {
    assert_null(elf);
  }
  return status;
}

static void test_garbage_files(void** state) {
  (void)state;
  assert_int_equal(open_file_bytes("empty", "", 0), ZX_ERR_IO_DATA_INTEGRITY);
  assert_int_equal(open_file_bytes("magic", "\177ELF", 4), ZX_ERR_IO_DATA_INTEGRITY);

  uint8_t header[64];
  memcpy(header, g_self, sizeof(header));
  assert_int_equal(open_file_bytes("header_only", header, sizeof(header)),
                   ZX_ERR_IO_DATA_INTEGRITY);
  assert_int_equal(open_file_bytes("truncated_header", header, 40), ZX_ERR_IO_DATA_INTEGRITY);
  header[EI_CLASS] = ELFCLASS32;
  assert_int_equal(open_file_bytes("elf32", header, sizeof(header)), ZX_ERR_NOT_SUPPORTED);
  header[EI_CLASS] = ELFCLASS64;
  header[EI_DATA] = ELFDATA2MSB;
  assert_int_equal(open_file_bytes("big_endian", header, sizeof(header)), ZX_ERR_NOT_SUPPORTED);
  header[EI_DATA] = 7;
  assert_int_equal(open_file_bytes("bad_data", header, sizeof(header)), ZX_ERR_IO_DATA_INTEGRITY);

  // A header with no tables at all is a valid, empty ELF file.
  memcpy(header, g_self, sizeof(header));
  memset(header + 32, 0, 16);  // e_phoff, e_shoff
  memset(header + 56, 0, 2);   // e_phnum
  memset(header + 60, 0, 4);   // e_shnum, e_shstrndx
  assert_int_equal(open_file_bytes("no_tables", header, sizeof(header)), ZX_OK);

  uint8_t random_bytes[4096];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof(random_bytes); i++) {
    x = x * 1103515245u + 12345u;
    random_bytes[i] = (uint8_t)(x >> 16);
  }
  assert_int_equal(open_file_bytes("random", random_bytes, sizeof(random_bytes)),
                   ZX_ERR_IO_DATA_INTEGRITY);
  memcpy(random_bytes, "\177ELF\2\1\1", 7);  // a plausible ident, then noise
  assert_true(open_file_bytes("random_elf", random_bytes, sizeof(random_bytes)) != ZX_OK);

  // Truncated copies of a real ELF on disk.
  for (size_t i = 0; i < 40; i++) {
    size_t cut = (g_self_size / 40) * i + i;
    assert_int_not_equal(open_file_bytes("truncated", g_self, cut), ZX_OK);
  }
  assert_int_not_equal(open_file_bytes("truncated", g_self, g_self_size - 1), ZX_OK);
  assert_int_equal(open_file_bytes("whole", g_self, g_self_size), ZX_OK);

  // Not files.
  zxs_elf_t* elf = NULL;
  assert_int_equal(zxs_elf_open(g_tmpdir, &elf), ZX_ERR_NOT_FILE);
  char path[PATH_MAX];
  tmp_path(path, sizeof(path), "fifo");
  assert_int_equal(mkfifo(path, 0600), 0);
  assert_int_equal(zxs_elf_open(path, &elf), ZX_ERR_NOT_FILE);  // and does not block
  tmp_path(path, sizeof(path), "missing");
  assert_int_equal(zxs_elf_open(path, &elf), ZX_ERR_NOT_FOUND);
  assert_int_equal(zxs_elf_open(NULL, &elf), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_elf_open(path, NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_elf_open_memory(NULL, 0, &elf), ZX_ERR_IO_DATA_INTEGRITY);
  assert_int_equal(zxs_elf_open_memory(NULL, 5, &elf), ZX_ERR_INVALID_ARGS);
  zxs_elf_close(NULL);
}

// Every prefix up to 8 KiB, then a prime stride to the end: all rejected, none read outside.
static void test_truncated_at_many_offsets(void** state) {
  (void)state;
  size_t tried = 0;
  for (size_t cut = 0; cut < g_self_size; cut += (cut < 8192 ? 1 : 61)) {
    // A fresh, exactly sized buffer, so ASan sees any read past the cut.
    uint8_t* copy = malloc(cut > 0 ? cut : 1);
    assert_non_null(copy);
    memcpy(copy, g_self, cut);
    zxs_elf_t* elf = NULL;
    zx_status_t status = zxs_elf_open_memory(copy, cut, &elf);
    assert_int_not_equal(status, ZX_OK);
    assert_null(elf);
    free(copy);
    tried++;
  }
  assert_true(tried > 8192);
}

static uint32_t g_rng = 0x2545f491u;

static uint32_t next_random(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 17;
  g_rng ^= g_rng << 5;
  return g_rng;
}

// Flips bytes and overwrites fields of the headers and symbol tables with random and extreme
// values; whatever opens must also survive lookups.
static void mutate(uint8_t* data, size_t size) {
  Elf64_Ehdr eh;
  memcpy(&eh, g_self, sizeof(eh));
  int edits = 1 + (int)(next_random() % 4);
  for (int e = 0; e < edits; e++) {
    size_t at;
    switch (next_random() % 4) {
      case 0:
        at = next_random() % sizeof(eh);
        break;
      case 1:
        at = eh.e_shoff + next_random() % ((size_t)eh.e_shnum * sizeof(Elf64_Shdr));
        break;
      case 2:
        at = eh.e_phoff + next_random() % ((size_t)eh.e_phnum * sizeof(Elf64_Phdr));
        break;
      default:
        at = next_random() % size;
        break;
    }
    static const uint64_t kValues[] = {0, 1, 0xff, 0xffff, 0xffffffffu, UINT64_MAX, 0x40, 24};
    uint64_t value = (next_random() & 1) ? kValues[next_random() % 8]
                                         : ((uint64_t)next_random() << 32 | next_random());
    size_t width = (size_t)1 << (next_random() % 4);
    for (size_t i = 0; i < width && at + i < size; i++) {
      data[at + i] = (uint8_t)(value >> (8 * i));
    }
  }
}

static void probe(zxs_elf_t* elf) {
  zxs_elf_location_t loc;
  for (int i = 0; i < 8; i++) {
    uint64_t address = (uint64_t)next_random() % (1u << 20);
    (void)zxs_elf_lookup(elf, address, (next_random() & 1) ? ZXS_ELF_LOOKUP_RETURN_ADDRESS : 0,
                         &loc);
  }
  const uint8_t* id = NULL;
  size_t id_size = 0;
  (void)zxs_elf_build_id(elf, &id, &id_size);
  (void)zxs_elf_symbol_count(elf);
}

static void test_mutations_never_crash(void** state) {
  (void)state;
  uint8_t* copy = malloc(g_self_size);
  assert_non_null(copy);
  size_t opened = 0;
  for (int round = 0; round < 3000; round++) {
    memcpy(copy, g_self, g_self_size);
    mutate(copy, g_self_size);
    zxs_elf_t* elf = NULL;
    if (zxs_elf_open_memory(copy, g_self_size, &elf) == ZX_OK) {
      probe(elf);
      zxs_elf_close(elf);
      opened++;
    }
  }
  // Through files too, where libdw (if built in) gets to read what was accepted.
  for (int round = 0; round < 40; round++) {
    memcpy(copy, g_self, g_self_size);
    mutate(copy, g_self_size);
    char path[PATH_MAX];
    tmp_path(path, sizeof(path), "mutated");
    write_file(path, copy, g_self_size);
    zxs_elf_t* elf = NULL;
    if (zxs_elf_open(path, &elf) == ZX_OK) {
      probe(elf);
      zxs_elf_close(elf);
    }
  }
  free(copy);
  print_message("(%zu of 3000 mutated images opened)\n", opened);
  assert_true(opened > 0);  // most edits hit fields that do not matter
}

int main(void) {
  const struct CMUnitTest capture_tests[] = {
      cmocka_unit_test(test_capture_finds_main_and_libc),
      cmocka_unit_test(test_build_ids_match_files),
      cmocka_unit_test(test_vdso_from_memory),
      cmocka_unit_test(test_hand_built_list),
      cmocka_unit_test(test_symtab_functions),
      cmocka_unit_test(test_return_address),
      cmocka_unit_test(test_libc_malloc),
      cmocka_unit_test(test_dynsym_only),
      cmocka_unit_test(test_line_info),
      cmocka_unit_test(test_separate_debug_file),
  };
  const struct CMUnitTest malformed_tests[] = {
      cmocka_unit_test(test_garbage_files),
      cmocka_unit_test(test_truncated_at_many_offsets),
      cmocka_unit_test(test_mutations_never_crash),
  };
  int failed = cmocka_run_group_tests_name("symbolize", capture_tests, make_tmpdir, remove_tmpdir);
  failed +=
      cmocka_run_group_tests_name("symbolize_malformed", malformed_tests, load_self, unload_self);
  return failed != 0;
}
