// A copy of the running test program and of the library it uses, in a folder any user may read,
// for tests that re-run themselves as another user (uid 65534): the build tree may not be
// readable by that user (a clone under a 0700 home), and the loader then fails with exit 127.
//
//   readable_copy_t copy;
//   assert_true(readable_copy_make(&copy, "test_x", library_symbol));
//   fork(); ... execve(copy.program, args, (char*[]){copy.library_path_env, NULL});
//   readable_copy_remove(&copy);
//
// `library_symbol` is the address of any function of the library: the object holding it is
// copied (nothing where the library is linked into the program), under its soname, and found
// by LD_LIBRARY_PATH, which the loader searches before the program's RUNPATH.
#ifndef ZXS_TESTS_BACKEND_READABLE_COPY_H_
#define ZXS_TESTS_BACKEND_READABLE_COPY_H_

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  char dir[64];
  char program[128];
  char library[320];  // the copied library, or "" where none was copied
  char library_path_env[96];
} readable_copy_t;

// Copies the file at `from` to `to`, mode 0755.
static inline bool readable_copy_file(const char* from, const char* to) {
  FILE* in = fopen(from, "rb");
  FILE* out = in != NULL ? fopen(to, "wb") : NULL;
  bool ok = in != NULL && out != NULL;
  char buf[65536];
  size_t n;
  while (ok && (n = fread(buf, 1, sizeof(buf), in)) > 0) ok = fwrite(buf, 1, n, out) == n;
  if (in != NULL) ok = !ferror(in) && fclose(in) == 0 && ok;
  if (out != NULL) ok = fclose(out) == 0 && ok;
  return ok && chmod(to, 0755) == 0;
}

static inline void readable_copy_remove(readable_copy_t* copy) {
  if (copy->library[0] != 0) unlink(copy->library);
  unlink(copy->program);
  rmdir(copy->dir);
}

static inline bool readable_copy_make(readable_copy_t* copy, const char* name,
                                      void* library_symbol) {
  memset(copy, 0, sizeof(*copy));
  snprintf(copy->dir, sizeof(copy->dir), "/tmp/zxs-readable-XXXXXX");
  if (mkdtemp(copy->dir) == NULL) return false;
  snprintf(copy->program, sizeof(copy->program), "%s/%s", copy->dir, name);
  snprintf(copy->library_path_env, sizeof(copy->library_path_env), "LD_LIBRARY_PATH=%s", copy->dir);
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  Dl_info lib;
  bool ok = chmod(copy->dir, 0755) == 0 && n > 0 && dladdr(library_symbol, &lib) != 0 &&
            lib.dli_fname != NULL;
  if (ok) {
    self[n] = 0;
    ok = readable_copy_file(self, copy->program);
  }
  if (ok && lib.dli_fname[0] == '/' && strcmp(lib.dli_fname, self) != 0) {
    const char* base = strrchr(lib.dli_fname, '/') + 1;
    snprintf(copy->library, sizeof(copy->library), "%s/%s", copy->dir, base);
    ok = readable_copy_file(lib.dli_fname, copy->library);
  }
  if (!ok) readable_copy_remove(copy);
  return ok;
}

#endif  // ZXS_TESTS_BACKEND_READABLE_COPY_H_
