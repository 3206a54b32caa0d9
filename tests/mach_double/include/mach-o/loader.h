// <mach-o/loader.h>: the parts of the Mach-O format the macOS backend reads (Apple's names and
// values); the Mach double hands out images described this way.
#ifndef ZXS_MACH_DOUBLE_MACH_O_LOADER_H_
#define ZXS_MACH_DOUBLE_MACH_O_LOADER_H_

#include <stdint.h>

typedef int cpu_type_t;
typedef int cpu_subtype_t;
typedef int vm_prot_t;

#define VM_PROT_READ ((vm_prot_t)0x01)
#define VM_PROT_WRITE ((vm_prot_t)0x02)
#define VM_PROT_EXECUTE ((vm_prot_t)0x04)

struct mach_header {
  uint32_t magic;
  cpu_type_t cputype;
  cpu_subtype_t cpusubtype;
  uint32_t filetype;
  uint32_t ncmds;
  uint32_t sizeofcmds;
  uint32_t flags;
};

struct mach_header_64 {
  uint32_t magic;
  cpu_type_t cputype;
  cpu_subtype_t cpusubtype;
  uint32_t filetype;
  uint32_t ncmds;
  uint32_t sizeofcmds;
  uint32_t flags;
  uint32_t reserved;
};

#define MH_MAGIC_64 0xfeedfacfu
#define MH_EXECUTE 0x2u
#define MH_DYLIB 0x6u
#define MH_BUNDLE 0x8u

struct load_command {
  uint32_t cmd;
  uint32_t cmdsize;
};

#define LC_SEGMENT_64 0x19u
#define LC_UUID 0x1bu

struct segment_command_64 {
  uint32_t cmd;
  uint32_t cmdsize;
  char segname[16];
  uint64_t vmaddr;
  uint64_t vmsize;
  uint64_t fileoff;
  uint64_t filesize;
  vm_prot_t maxprot;
  vm_prot_t initprot;
  uint32_t nsects;
  uint32_t flags;
};

struct uuid_command {
  uint32_t cmd;
  uint32_t cmdsize;
  uint8_t uuid[16];
};

#endif  // ZXS_MACH_DOUBLE_MACH_O_LOADER_H_
