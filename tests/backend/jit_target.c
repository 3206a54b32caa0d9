// A tiny JIT for `zxsampler record`'s JIT test: it writes two functions' machine code into
// anonymous memory and names one in its perf map (/tmp/perf-PID.map), the other in a jitdump
// file (DIR/jit-PID.dump, mapped executable as the jitdump specification asks, so that
// recorders find it), then runs both for SECONDS. Prints its pid first.
//
//   jit_target DIR SECONDS [symlink]
//
// With "symlink", the perf map is a symbolic link to DIR/real.map: recorders must refuse it.
// Exits 77 on an architecture it has no code for (x86_64 and aarch64 only).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

// uint64_t f(uint64_t n): counts n down to 0 through a few instructions, so that samples land on
// several addresses of one function.
#if defined(__x86_64__)
static const uint8_t kCountdown[] = {
    0x48, 0x89, 0xf8,        // mov rax, rdi
    0x48, 0xff, 0xc8,        // 1: dec rax
    0x90, 0x90, 0x90, 0x90,  // nop x4
    0x75, 0xf7,              // jnz 1b
    0xc3,                    // ret
};
#define ELF_MACHINE 62u  // EM_X86_64
#elif defined(__aarch64__)
static const uint32_t kCountdownWords[] = {
    0xf1000400u,  // 1: subs x0, x0, #1
    0xd503201fu,  // nop
    0xd503201fu,  // nop
    0xd503201fu,  // nop
    0x54ffff81u,  // b.ne 1b
    0xd65f03c0u,  // ret
};
#define kCountdown kCountdownWords
#define ELF_MACHINE 183u  // EM_AARCH64
#endif

#ifdef ELF_MACHINE
typedef uint64_t (*countdown_fn)(uint64_t);

static void put(FILE* f, const void* data, size_t size) {
  if (fwrite(data, 1, size, f) != size) {
    perror("jitdump");
    exit(1);
  }
}
static void put32(FILE* f, uint32_t v) { put(f, &v, 4); }
static void put64(FILE* f, uint64_t v) { put(f, &v, 8); }

// DIR/jit-PID.dump with one JIT_CODE_LOAD, mapped executable (kept mapped until exit).
static void write_jitdump(const char* dir, uint64_t addr, const char* name) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, (int)getpid());
  FILE* f = fopen(path, "w+b");
  if (f == NULL) {
    perror(path);
    exit(1);
  }
  put32(f, 0x4A695444u);  // magic "JiTD"
  put32(f, 1);            // version
  put32(f, 40);           // header size
  put32(f, ELF_MACHINE);
  put32(f, 0);
  put32(f, (uint32_t)getpid());
  put64(f, 0);  // timestamp
  put64(f, 0);  // flags
  const size_t name_size = strlen(name) + 1;
  put32(f, 0);  // JIT_CODE_LOAD
  put32(f, (uint32_t)(16 + 40 + name_size + sizeof(kCountdown)));
  put64(f, 0);
  put32(f, (uint32_t)getpid());
  put32(f, (uint32_t)gettid());
  put64(f, addr);  // vma
  put64(f, addr);  // code address
  put64(f, sizeof(kCountdown));
  put64(f, 1);  // code index
  put(f, name, name_size);
  put(f, kCountdown, sizeof(kCountdown));
  fflush(f);
  if (mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0) ==
      MAP_FAILED) {
    perror("mmap jitdump");
    exit(1);
  }
  fclose(f);
}

static void write_perf_map(const char* dir, uint64_t addr, const char* name, bool symlinked) {
  char path[64], real[4096];
  snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
  snprintf(real, sizeof(real), "%s/real.map", dir);
  unlink(path);
  FILE* f = fopen(symlinked ? real : path, "w");
  if (f == NULL ||
      fprintf(f, "%llx %zx %s\n", (unsigned long long)addr, sizeof(kCountdown), name) < 0 ||
      fclose(f) != 0 || (symlinked && symlink(real, path) != 0)) {
    perror("perf map");
    exit(1);
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DIR SECONDS [symlink]\n", argv[0]);
    return 2;
  }
  printf("%d\n", (int)getpid());
  fflush(stdout);
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  uint8_t* code = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (code == MAP_FAILED) return 1;
  memcpy(code, kCountdown, sizeof(kCountdown));
  memcpy(code + page, kCountdown, sizeof(kCountdown));
  if (mprotect(code, 2 * page, PROT_READ | PROT_EXEC) != 0) return 1;
  __builtin___clear_cache((char*)code, (char*)code + 2 * page);
  write_perf_map(argv[1], (uint64_t)(uintptr_t)code, "hot_jit_perfmap",
                 argc > 3 && strcmp(argv[3], "symlink") == 0);
  write_jitdump(argv[1], (uint64_t)(uintptr_t)(code + page), "hot_jit_dump");
  countdown_fn from_map = (countdown_fn)(uintptr_t)code;
  countdown_fn from_dump = (countdown_fn)(uintptr_t)(code + page);
  const double end = now() + atof(argv[2]);
  uint64_t sum = 0;
  while (now() < end) sum += from_map(2000000) + from_dump(2000000);
  return sum == 0 ? 0 : 3;  // every call counts down to 0
}
#else
int main(void) {
  puts("no JIT code for this architecture");
  return 77;
}
#endif
