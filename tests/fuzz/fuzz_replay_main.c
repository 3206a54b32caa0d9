// Replays corpora through a fuzz target without libFuzzer (gcc builds, CI): runs
// LLVMFuzzerTestOneInput once on every regular file of the directories (or files) given as
// arguments, in name order, and prints how many it ran. A crash or failed check aborts the run;
// a missing or empty corpus is an error, so a wrong path in the build cannot pass silently.
#define _DEFAULT_SOURCE  // scandir, alphasort
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// Reads a whole file into an exactly-sized buffer (NULL and 0 for an empty file).
static int read_file(const char* path, uint8_t** data, size_t* size) {
  *data = NULL;
  *size = 0;
  FILE* f = fopen(path, "rb");
  if (f == NULL) return -1;
  int rc = -1;
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && st.st_size >= 0) {
    *size = (size_t)st.st_size;
    *data = malloc(*size == 0 ? 1 : *size);
    if (*data != NULL && fread(*data, 1, *size, f) == *size) rc = 0;
  }
  fclose(f);
  if (rc != 0) {
    free(*data);
    *data = NULL;
  }
  return rc;
}

static int run_file(const char* path) {
  uint8_t* data;
  size_t size;
  if (read_file(path, &data, &size) != 0) {
    fprintf(stderr, "fuzz_replay: cannot read %s: %s\n", path, strerror(errno));
    return -1;
  }
  // Exactly `size` bytes from the file: the targets make their own exactly-sized copies.
  LLVMFuzzerTestOneInput(size == 0 ? (const uint8_t*)"" : data, size);
  free(data);
  return 0;
}

static int skip_dots(const struct dirent* e) { return e->d_name[0] != '.'; }

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  size_t ran = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "fuzz_replay: %s: %s\n", argv[i], strerror(errno));
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (run_file(argv[i]) != 0) return 1;
      ran++;
      continue;
    }
    struct dirent** names;
    int n = scandir(argv[i], &names, skip_dots, alphasort);
    if (n < 0) {
      fprintf(stderr, "fuzz_replay: %s: %s\n", argv[i], strerror(errno));
      return 1;
    }
    int rc = 0;
    for (int j = 0; j < n; j++) {
      char path[4096];
      snprintf(path, sizeof(path), "%s/%s", argv[i], names[j]->d_name);
      if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        if (run_file(path) != 0) rc = 1;
        ran++;
      }
      free(names[j]);
    }
    free(names);
    if (rc != 0) return rc;
  }
  printf("fuzz_replay: ran %zu inputs\n", ran);
  if (ran == 0) {
    fprintf(stderr, "fuzz_replay: no inputs found\n");
    return 1;
  }
  return 0;
}
