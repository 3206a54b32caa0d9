// The loaded modules (ELF images) of a process: what a symbolizer needs to turn sampled PCs
// into (module, module-relative address) pairs, here or on another machine.
//
// Addresses:
// - A "runtime address" is an address in the sampled process (a PC).
// - A "file address" is the link-time virtual address inside the module's ELF file, the one
//   its symbol tables and DWARF use: file address = runtime address - load_bias.
// - A "file offset" is a byte offset in the ELF file (what pprof-style mappings want).
//
// Everything here runs outside signal handlers: capture allocates. Lists are plain data (every
// pointer is malloc'd), so a reader of recorded data may build one by hand, call
// zxs_modules_index() and then use the lookups.
#ifndef ZXSAMPLER_SRC_REPORT_MODULES_H_
#define ZXSAMPLER_SRC_REPORT_MODULES_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>

// GNU build IDs longer than this are treated as absent (real ones are 8 to 32 bytes).
#define ZXS_BUILD_ID_MAX 64

// Segment permission bits (same values as ZX_VM_PERM_READ / WRITE / EXECUTE).
#define ZXS_SEGMENT_R 1u
#define ZXS_SEGMENT_W 2u
#define ZXS_SEGMENT_X 4u

typedef enum zxs_module_kind {
  ZXS_MODULE_SHARED = 0,  // a shared library (or any dlopen'd / loader-mapped ELF)
  ZXS_MODULE_MAIN = 1,    // the main executable
  ZXS_MODULE_VDSO = 2,    // the kernel-provided vDSO; it has no file, path is "[vdso]"
} zxs_module_kind_t;

// One PT_LOAD segment. Loaded at runtime [load_bias + vaddr, load_bias + vaddr + memsz).
typedef struct zxs_segment {
  uint64_t vaddr;   // p_vaddr (a file address)
  uint64_t memsz;   // p_memsz
  uint64_t offset;  // p_offset in the file
  uint32_t flags;   // ZXS_SEGMENT_R | ZXS_SEGMENT_W | ZXS_SEGMENT_X
} zxs_segment_t;

// Modules without a GNU build ID still need an ID: the trace names modules by it (symbolizer
// markup's {{{module}}} requires one) and the reader checks it against the file it opens. Such a
// module's ID is made from what identifies its build: a Go binary's Go build ID note
// (.note.go.buildid, which `go build` writes from the binary's content hash), else the whole
// file's bytes (a file that changes in any byte gets another ID; a copy elsewhere keeps it,
// which a path or mtime would not). The ID is two 64-bit FNV-1a hashes of those bytes, each lane
// seeded with the source, 16 bytes; ELF and Mach-O files alike.
#define ZXS_DERIVED_ID_SIZE 16

typedef enum zxs_id_source {
  ZXS_ID_FROM_GO_BUILD_ID = 1,  // the descriptor of the note named "Go", type 4
  ZXS_ID_FROM_FILE = 2,         // every byte of the file (or of an in-memory image)
} zxs_id_source_t;

typedef struct zxs_id_hash {
  uint64_t lanes[2];
} zxs_id_hash_t;

// Starts, extends (bytes in order; any split) and ends a derived ID. Pure, thread-safe.
void zxs_id_hash_init(zxs_id_hash_t* hash, zxs_id_source_t source);
void zxs_id_hash_add(zxs_id_hash_t* hash, const void* data, size_t size);
void zxs_id_hash_finish(const zxs_id_hash_t* hash, uint8_t id[ZXS_DERIVED_ID_SIZE]);

// The three above over `size` bytes at `data`. Pure, thread-safe.
void zxs_derived_id(zxs_id_source_t source, const void* data, size_t size,
                    uint8_t id[ZXS_DERIVED_ID_SIZE]);

typedef struct zxs_module {
  char* path;  // as the loader names it, /proc/self/exe's target for the main executable,
               // "[vdso]" for the vDSO; never NULL after capture ("" if unknown)
  zxs_module_kind_t kind;
  uint8_t build_id[ZXS_BUILD_ID_MAX];  // GNU build ID (NT_GNU_BUILD_ID descriptor bytes), else
                                       // a derived ID (ZXS_DERIVED_ID_SIZE bytes, see above)
  size_t build_id_size;                // 0 if the module has none
  uint64_t load_bias;                  // runtime address - file address (dlpi_addr)
  zxs_segment_t* segments;             // PT_LOAD segments, in program-header order
  size_t segment_count;
  // Set by zxs_modules_index(): the runtime span of the segments, [start, end).
  uint64_t start;
  uint64_t end;
} zxs_module_t;

typedef struct zxs_module_list {
  zxs_module_t* modules;  // sorted by start after zxs_modules_index()
  size_t count;
} zxs_module_list_t;

// The segment of `segments` whose first page is the page of file offset `pgoff`: where a mapping
// of the file at `pgoff` starts loading it (mappings start at a page boundary at or below the
// segment's p_offset). NULL when none. Pure.
const zxs_segment_t* zxs_segment_at_page(const zxs_segment_t* segments, size_t count,
                                         uint64_t pgoff);

// A mapping of a module's file (PT_LOAD `segments`) at file offset `pgoff`, `len` bytes, `flags`
// (ZXS_SEGMENT_*), made away from the module's own load (code mapped again, as node maps V8's
// builtins next to its JIT code), as the one segment of a module of its own: named from the
// mapping's file offset (address -> offset -> ELF address by the PT_LOAD holding the offset),
// cut at that segment's end. The module's load bias is then the mapping's start - piece->vaddr.
// False when no segment holds `pgoff`. Pure.
bool zxs_segment_remapped(const zxs_segment_t* segments, size_t count, uint64_t pgoff, uint64_t len,
                          uint32_t flags, zxs_segment_t* piece);

// Captures the calling process's loaded modules (as the backend lists them:
// zxs_facts_modules_each() in process_facts.h) into *out, indexed (see zxs_modules_index),
// replacing whatever *out held without freeing it. Build IDs are read from each module's mapped
// PT_NOTE segments. Where the platform lists its file mappings (zxs_facts_exec_mappings_each),
// each executable mapping of an ELF file outside every loaded module becomes a module of its own
// (zxs_segment_remapped). Modules that map no PT_LOAD segment are left out. Returns ZX_OK,
// ZX_ERR_INVALID_ARGS (out is NULL), ZX_ERR_NO_MEMORY, or ZX_ERR_NOT_SUPPORTED where the
// platform cannot list its modules (on error *out is empty). Thread-safe (the loader serializes
// with dlopen/dlclose); not async-signal-safe (allocates).
zx_status_t zxs_modules_capture(zxs_module_list_t* out);

// Frees every path and segment array of the list and the array itself, and empties the list.
// NULL and empty lists are fine. Not thread-safe with other users of the same list.
void zxs_modules_free(zxs_module_list_t* list);

// Computes each module's [start, end) from its segments and sorts the modules by start; call
// after building or changing a list by hand. Modules without segments get start == end == 0.
// Returns ZX_OK or ZX_ERR_INVALID_ARGS (list is NULL, or a segment's end overflows 64 bits).
// Not thread-safe with other users of the same list.
zx_status_t zxs_modules_index(zxs_module_list_t* list);

// Finds the module and loaded segment whose runtime range contains `pc` (binary search; the
// list must be indexed). Either out pointer may be NULL. Returns ZX_OK, ZX_ERR_NOT_FOUND
// (also for addresses in gaps between a module's segments) or ZX_ERR_INVALID_ARGS. Read-only:
// concurrent calls on one list are safe.
zx_status_t zxs_modules_find(const zxs_module_list_t* list, uint64_t pc,
                             const zxs_module_t** module, const zxs_segment_t** segment);

// The file address of runtime address `pc` in `module` (pc - load_bias, modulo 2^64). Pure.
uint64_t zxs_module_file_address(const zxs_module_t* module, uint64_t pc);

// Flag for zxs_modules_file_address(): `pc` is a return address (a frame other than the
// innermost), so the module is found at pc - 1, the call instruction's last byte; a call that
// ends a module's last segment then stays in that module. The file address returned is still
// that of `pc` itself: pass ZXS_ELF_LOOKUP_RETURN_ADDRESS to zxs_elf_lookup() with it, which
// does the same - 1 for the symbol and line. Never subtract 1 yourself as well.
#define ZXS_MODULES_RETURN_ADDRESS (1u << 0)

// zxs_modules_find() then zxs_module_file_address(): the module containing `pc` and the file
// address to give its symbolizer. `flags` is 0 or ZXS_MODULES_RETURN_ADDRESS. Either out
// pointer may be NULL. Statuses as for zxs_modules_find(). Read-only: concurrent calls are safe.
zx_status_t zxs_modules_file_address(const zxs_module_list_t* list, uint64_t pc, uint32_t flags,
                                     const zxs_module_t** module, uint64_t* file_address);

// The in-memory ELF image of a vDSO module captured from this process, for
// zxs_elf_open_memory() (the vDSO has no file; saving this image lets another machine
// symbolize it): the whole image as the kernel maps it (zxs_prim_module_t.image), section
// headers included. Returns ZX_OK, ZX_ERR_WRONG_TYPE (not a vDSO), ZX_ERR_NOT_FOUND (this
// process has no vDSO at the module's load bias) or ZX_ERR_INVALID_ARGS. Only meaningful for a
// list captured in this process and while it runs. Thread-safe.
zx_status_t zxs_module_vdso_image(const zxs_module_t* module, const void** data, size_t* size);

// The ELF image of this process's vDSO (see zxs_module_vdso_image()), copied into a malloc'd
// buffer. ZX_OK, ZX_ERR_NOT_FOUND (no vDSO), ZX_ERR_NOT_SUPPORTED or ZX_ERR_NO_MEMORY.
// Thread-safe.
zx_status_t zxs_modules_vdso_self(void** data, size_t* size);

// Writes the build ID as lowercase hex plus a NUL into buf (2 * size + 1 bytes needed).
// Returns ZX_OK, ZX_ERR_BUFFER_TOO_SMALL or ZX_ERR_INVALID_ARGS. Pure, thread-safe.
zx_status_t zxs_build_id_to_hex(const uint8_t* id, size_t size, char* buf, size_t buf_size);

#endif  // ZXSAMPLER_SRC_REPORT_MODULES_H_
