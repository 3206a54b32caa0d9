// Runs a function through a second mapping of its own executable, made at a file offset inside
// the text segment (as node maps V8's builtins near its JIT code): the samples there must be
// named from the mapping's file offset. `remap_target [SECONDS]` prints
// "remapped: OFFSET (inside|at the start of) the segment at OFFSET".
#define _GNU_SOURCE  // dl_iterate_phdr
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u

// Position-independent as it is: no calls and no data, so a copy at another address runs the
// same (unsigned, and not instrumented by sanitizers, whose checks would call out of it).
// Page-aligned so that the page mapped again holds all of it and starts past the segment's first
// page.
__attribute__((noinline, aligned(PAGE), no_sanitize("address", "undefined"))) unsigned long
remapped_spin(unsigned long n) {
  unsigned long acc = 0;
  for (unsigned long i = 0; i < n; i++) {
    acc = acc * 31 + (i ^ (acc >> 7));
  }
  return acc;
}

typedef struct text_place {
  uintptr_t address;  // of remapped_spin
  long file_offset;   // its offset in the executable
  long segment_offset;
} text_place_t;

static int find_offset(struct dl_phdr_info* info, size_t size, void* ctx) {
  (void)size;
  text_place_t* place = ctx;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && place->address >= start && place->address - start < ph->p_memsz) {
      place->file_offset = (long)(place->address - start + ph->p_offset);
      place->segment_offset = (long)ph->p_offset;
      return 1;
    }
  }
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 1.0;
  text_place_t place = {.address = (uintptr_t)&remapped_spin, .file_offset = -1};
  dl_iterate_phdr(find_offset, &place);
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (place.file_offset < 0 || fd < 0) {
    perror("remap_target: finding its own text");
    return 1;
  }
  const long page_offset = place.file_offset & ~(long)(PAGE - 1);
  void* copy = mmap(NULL, 2 * PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, page_offset);
  close(fd);
  if (copy == MAP_FAILED) {
    perror("remap_target: mmap");
    return 1;
  }
  unsigned long (*spin)(unsigned long) = (unsigned long (*)(unsigned long))(
      (uintptr_t)copy + (uintptr_t)(place.file_offset - page_offset));
  if (spin(1000) != remapped_spin(1000)) {
    fprintf(stderr, "remap_target: the copy computes something else\n");
    return 1;
  }
  unsigned long total = 0;
  const double end = now() + seconds;
  while (now() < end) {
    total += spin(200000);
  }
  printf("remapped: 0x%lx (%s the segment at 0x%lx) %lu\n", page_offset,
         page_offset > place.segment_offset ? "inside" : "at the start of", place.segment_offset,
         total & 1);
  return 0;
}
