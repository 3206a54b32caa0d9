// The Fuchsia Trace Format (FXT) records this library writes and reads.
// Layouts: docs/fxt-records.md (and Fuchsia's trace-format.md).
#ifndef ZXSAMPLER_FXT_H_
#define ZXSAMPLER_FXT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>

#ifdef __cplusplus
extern "C" {
#endif

// NULL: every zxs_fxt_write_*() answers a NULL buf with ZX_ERR_INVALID_ARGS; the calls without
// a status (zxs_fxt_buf_init/destroy/reset, zxs_fxt_region_iter_init, zxs_fxt_reader_destroy)
// do nothing with NULL, as free() does; zxs_fxt_region_next() and zxs_fxt_reader_next() answer
// false for a NULL iterator, reader or record (and leave their state as it was).

// --- The sampler's record ---------------------------------------------------------------------

// Words of the kernel's sample record for n PCs: 6 + n.
#define ZXS_FXT_SAMPLE_WORDS(n) ((size_t)6u + (size_t)(n))

// Encodes the record the Zircon kernel writes for one sample of n PCs (1 <= n <= 64), a
// Large BLOB with metadata: header, 0 (empty category and name, no arguments, inline thread),
// ticks, process koid, thread koid, 8 * n, then the PCs innermost first.
// `out` has room for ZXS_FXT_SAMPLE_WORDS(n) words; the header is stored last.
// Returns the number of words written, 0 if n is out of range or out or pcs is NULL.
// Async-signal-safe.
ZXS_API size_t zxs_fxt_encode_sample(uint64_t* out, uint64_t ticks, zx_koid_t process_koid,
                                     zx_koid_t thread_koid, const uint64_t* pcs, size_t n);

// --- Shared definitions ----------------------------------------------------------------------

// Record types (header bits [0..3]).
#define ZXS_FXT_TYPE_METADATA 0u
#define ZXS_FXT_TYPE_INITIALIZATION 1u
#define ZXS_FXT_TYPE_STRING 2u
#define ZXS_FXT_TYPE_THREAD 3u
#define ZXS_FXT_TYPE_EVENT 4u
#define ZXS_FXT_TYPE_KERNEL_OBJECT 7u
#define ZXS_FXT_TYPE_LARGE 15u

// The magic number record, the first word of every trace file.
#define ZXS_FXT_MAGIC UINT64_C(0x0016547846040010)

#define ZXS_FXT_MAX_RECORD_WORDS 0xfffu      // size field of types 0..14
#define ZXS_FXT_MAX_LARGE_WORDS 0xffffffffu  // size field of type 15
#define ZXS_FXT_MAX_ARGS 15u
#define ZXS_FXT_MAX_STRING_INDEX 0x7fffu
#define ZXS_FXT_MAX_STRING_LEN 0x7fffu  // of an inline string; records may allow less
#define ZXS_FXT_MAX_THREAD_INDEX 255u
#define ZXS_FXT_MAX_PROVIDER_NAME 255u

// A string reference. Writing: a non-zero `index` (1..0x7fff) refers to the string table and
// wins over data/len; otherwise len == 0 is the empty string and len > 0 an inline string of
// `len` bytes at `data`. Reading: `index` is the table index if the record used one (else 0) and
// data/len are the string, resolved and pointing into the input (not NUL-terminated); data is
// NULL for the empty string and for indices left unresolved (region iteration).
typedef struct zxs_fxt_str_ref {
  uint32_t index;
  const char* data;
  size_t len;
} zxs_fxt_str_ref_t;

// A ref to string table entry `index` (0: the empty string). Async-signal-safe.
static inline zxs_fxt_str_ref_t zxs_fxt_str_index(uint32_t index) {
  zxs_fxt_str_ref_t ref = {index, NULL, 0};
  return ref;
}

// A ref to `len` bytes at `data`, stored inline (len 0: the empty string). Async-signal-safe.
static inline zxs_fxt_str_ref_t zxs_fxt_str_inline(const char* data, size_t len) {
  zxs_fxt_str_ref_t ref = {0, data, len};
  return ref;
}

// A thread reference: index 0 stores the koids inline in the record; 1..255 refers to the
// thread table. Reading: koids are resolved from the table when `index` is non-zero (0 if left
// unresolved by region iteration).
typedef struct zxs_fxt_thread_ref {
  uint32_t index;
  zx_koid_t process_koid;
  zx_koid_t thread_koid;
} zxs_fxt_thread_ref_t;

// Bytes: a blob argument's value or a blob's payload. Read: points into the input, NULL when
// size is 0.
typedef struct zxs_fxt_bytes {
  const void* data;
  size_t size;
} zxs_fxt_bytes_t;

typedef enum zxs_fxt_arg_type {
  ZXS_FXT_ARG_NULL = 0,
  ZXS_FXT_ARG_INT32 = 1,
  ZXS_FXT_ARG_UINT32 = 2,
  ZXS_FXT_ARG_INT64 = 3,
  ZXS_FXT_ARG_UINT64 = 4,
  ZXS_FXT_ARG_DOUBLE = 5,
  ZXS_FXT_ARG_STRING = 6,
  ZXS_FXT_ARG_POINTER = 7,
  ZXS_FXT_ARG_KOID = 8,
  ZXS_FXT_ARG_BOOL = 9,
  ZXS_FXT_ARG_BLOB = 10,
} zxs_fxt_arg_type_t;

// An argument: a name and a value of `type` (the union member of that type; none for NULL).
typedef struct zxs_fxt_arg {
  zxs_fxt_arg_type_t type;
  zxs_fxt_str_ref_t name;
  union {
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    double f64;
    zxs_fxt_str_ref_t str;
    uint64_t pointer;
    zx_koid_t koid;
    bool b;
    zxs_fxt_bytes_t blob;  // at most 0xffffffff bytes
  };
} zxs_fxt_arg_t;

// A kernel object record's fields (its arguments travel separately).
typedef struct zxs_fxt_kernel_object {
  zx_obj_type_t obj_type;  // 0..255: ZX_OBJ_TYPE_PROCESS, ZX_OBJ_TYPE_THREAD, ...
  zx_koid_t koid;
  zxs_fxt_str_ref_t name;
} zxs_fxt_kernel_object_t;

// A Large BLOB's fields. `ticks` and `thread` exist only in the "with metadata" format (the
// sampler's record); an attachment has category, name and payload only.
typedef struct zxs_fxt_large_blob {
  zxs_fxt_str_ref_t category;
  zxs_fxt_str_ref_t name;
  uint64_t ticks;
  zxs_fxt_thread_ref_t thread;
  zxs_fxt_bytes_t payload;
} zxs_fxt_large_blob_t;

// An event record's fields (its arguments travel separately). Only instant events (event type
// ZXS_FXT_EVENT_INSTANT: a moment, no duration) are written and decoded by this library.
#define ZXS_FXT_EVENT_INSTANT 0u
typedef struct zxs_fxt_event {
  uint32_t event_type;  // ZXS_FXT_EVENT_INSTANT
  uint64_t ticks;
  zxs_fxt_thread_ref_t thread;
  zxs_fxt_str_ref_t category;
  zxs_fxt_str_ref_t name;
} zxs_fxt_event_t;

// --- Writer (trace files) --------------------------------------------------------------------
//
// Appends records to a growable buffer. Appends allocate, so they are not async-signal-safe; a
// buffer is used by one thread at a time. Each append validates all of its input before it
// writes anything, so a failed append leaves no partial record. The first failure is sticky:
// later appends write nothing and return it, so a caller may check once at the end.
// Statuses of every append: ZX_OK; ZX_ERR_INVALID_ARGS (an index, length, size or count out of
// range, a NULL pointer with a non-zero length, or the record over its size field);
// ZX_ERR_NO_MEMORY (allocation failed or the size overflows); or the buffer's earlier failure.

typedef struct zxs_fxt_buf {
  uint8_t* data;  // the records; len bytes, always a multiple of 8
  size_t len;
  size_t cap;
  zx_status_t status;  // ZX_OK, or the first failure (sticky)
} zxs_fxt_buf_t;

// Initializes an empty buffer (no allocation). Async-signal-safe.
ZXS_API void zxs_fxt_buf_init(zxs_fxt_buf_t* buf);

// Frees the buffer's memory and leaves it empty, as after init.
ZXS_API void zxs_fxt_buf_destroy(zxs_fxt_buf_t* buf);

// Empties the buffer and clears its status, keeping the memory. Async-signal-safe.
ZXS_API void zxs_fxt_buf_reset(zxs_fxt_buf_t* buf);

// Appends `size` bytes of whole records as they are (e.g. copied from a region).
// ZX_ERR_INVALID_ARGS: size is not a multiple of 8, or data is NULL with size > 0.
ZXS_API zx_status_t zxs_fxt_write_raw(zxs_fxt_buf_t* buf, const void* data, size_t size);

// Appends the magic number record (ZXS_FXT_MAGIC), which must start every trace file.
ZXS_API zx_status_t zxs_fxt_write_magic(zxs_fxt_buf_t* buf);

// Appends an initialization record. ZX_ERR_INVALID_ARGS: ticks_per_second is 0.
ZXS_API zx_status_t zxs_fxt_write_initialization(zxs_fxt_buf_t* buf, uint64_t ticks_per_second);

// Appends a provider info metadata record. ZX_ERR_INVALID_ARGS: name_len > 255.
ZXS_API zx_status_t zxs_fxt_write_provider_info(zxs_fxt_buf_t* buf, uint32_t provider_id,
                                                const char* name, size_t name_len);

// Appends a provider section metadata record.
ZXS_API zx_status_t zxs_fxt_write_provider_section(zxs_fxt_buf_t* buf, uint32_t provider_id);

// Appends a string record defining table entry `index`.
// ZX_ERR_INVALID_ARGS: index not in 1..0x7fff, len > 0x7fff, or the record over 4095 words.
ZXS_API zx_status_t zxs_fxt_write_string(zxs_fxt_buf_t* buf, uint32_t index, const char* data,
                                         size_t len);

// Appends a thread record defining table entry `index`.
// ZX_ERR_INVALID_ARGS: index not in 1..255.
ZXS_API zx_status_t zxs_fxt_write_thread(zxs_fxt_buf_t* buf, uint32_t index, zx_koid_t process_koid,
                                         zx_koid_t thread_koid);

// Appends a kernel object record. A thread should carry a ZXS_FXT_ARG_KOID argument named
// "process" (viewers use it to place the thread). ZX_ERR_INVALID_ARGS: obj_type > 255, more
// than 15 arguments, a bad string ref or argument, or the record over 4095 words.
ZXS_API zx_status_t zxs_fxt_write_kernel_object(zxs_fxt_buf_t* buf,
                                                const zxs_fxt_kernel_object_t* obj,
                                                const zxs_fxt_arg_t* args, size_t num_args);

// Appends a Large BLOB with metadata (the sampler's record format, any refs and arguments).
// ZX_ERR_INVALID_ARGS: thread index > 255, more than 15 arguments, a bad string ref or
// argument, or the record over 0xffffffff words.
ZXS_API zx_status_t zxs_fxt_write_large_blob(zxs_fxt_buf_t* buf, const zxs_fxt_large_blob_t* blob,
                                             const zxs_fxt_arg_t* args, size_t num_args);

// Appends a Large BLOB without metadata (an attachment): blob's category, name and payload;
// its ticks and thread are ignored. ZX_ERR_INVALID_ARGS: a bad string ref or size.
ZXS_API zx_status_t zxs_fxt_write_attachment(zxs_fxt_buf_t* buf, const zxs_fxt_large_blob_t* blob);

// Appends an instant event record (event type ZXS_FXT_EVENT_INSTANT whatever event->event_type
// says): timestamp, thread (inline koids for index 0), category, name, arguments.
// ZX_ERR_INVALID_ARGS: thread index > 255, more than 15 arguments, a bad string ref or argument,
// or the record over 4095 words.
ZXS_API zx_status_t zxs_fxt_write_instant_event(zxs_fxt_buf_t* buf, const zxs_fxt_event_t* event,
                                                const zxs_fxt_arg_t* args, size_t num_args);

// --- Reader ------------------------------------------------------------------------------------
//
// Decoded records point into the input, which must outlive them. Input may be any bytes, at
// any alignment: malformed data stops the reading with ZX_ERR_IO_DATA_INTEGRITY and a message,
// never a read outside [data, data + size). An iterator or reader is used by one thread at a
// time. Reading formats error messages (snprintf), so it is not async-signal-safe.

#define ZXS_FXT_ERROR_MAX 128

typedef struct zxs_fxt_error {
  size_t offset;                    // byte offset of the offending record in the input
  char message[ZXS_FXT_ERROR_MAX];  // e.g. "record at byte 64: size is 0 words"; "" if none
} zxs_fxt_error_t;

typedef enum zxs_fxt_record_kind {
  ZXS_FXT_RECORD_OTHER = 0,         // a type this reader does not decode; see `type`, `data`
  ZXS_FXT_RECORD_MAGIC,             // the magic number record
  ZXS_FXT_RECORD_PROVIDER_INFO,     // provider: id and name
  ZXS_FXT_RECORD_PROVIDER_SECTION,  // provider: id
  ZXS_FXT_RECORD_INITIALIZATION,    // ticks_per_second
  ZXS_FXT_RECORD_STRING,            // string: index and value
  ZXS_FXT_RECORD_THREAD,            // thread: index and koids
  ZXS_FXT_RECORD_KERNEL_OBJECT,     // kernel_object, args
  ZXS_FXT_RECORD_LARGE_BLOB,        // blob (with metadata), args
  ZXS_FXT_RECORD_ATTACHMENT,        // blob (without metadata: category, name, payload)
  // event, args: an instant event. Events of other types, and an instant event whose fields
  // overrun its record or name a table entry never defined, are ZXS_FXT_RECORD_OTHER (skipped by
  // their size, as readers skip events they do not understand).
  ZXS_FXT_RECORD_EVENT,
} zxs_fxt_record_kind_t;

typedef struct zxs_fxt_provider {
  uint32_t id;
  zxs_fxt_str_ref_t name;  // empty for a section
} zxs_fxt_provider_t;

// One decoded record: `kind` says which union member and whether `args` are valid.
typedef struct zxs_fxt_record {
  zxs_fxt_record_kind_t kind;
  uint32_t type;        // the FXT record type, 0..15
  size_t offset;        // byte offset in the input
  const uint8_t* data;  // the whole record (header included), size bytes, in the input
  size_t size;
  union {
    zxs_fxt_provider_t provider;
    uint64_t ticks_per_second;
    zxs_fxt_str_ref_t string;
    zxs_fxt_thread_ref_t thread;
    zxs_fxt_kernel_object_t kernel_object;
    zxs_fxt_large_blob_t blob;
    zxs_fxt_event_t event;
  };
  size_t num_args;
  zxs_fxt_arg_t args[ZXS_FXT_MAX_ARGS];
} zxs_fxt_record_t;

// Iterates over the records of one per-CPU sampler region. Does not allocate. Read a region
// after zxs_sampler_stop() returned (no byte changes after that), or a copy of it. Fields are
// read-only for the caller; status and error say why iteration ended.
typedef struct zxs_fxt_region_iter {
  const uint8_t* data;
  size_t size;
  size_t offset;
  bool done;
  zx_status_t status;  // ZX_OK, or ZX_ERR_IO_DATA_INTEGRITY once malformed data was met
  zxs_fxt_error_t error;
} zxs_fxt_region_iter_t;

// Starts iterating over `size` bytes at `data` (NULL allowed when size is 0).
ZXS_API void zxs_fxt_region_iter_init(zxs_fxt_region_iter_t* it, const void* data, size_t size);

// Decodes the next record into *rec and returns true. String and thread indices are not
// resolved (regions have no tables; the kernel writes inline refs). Returns false at the end:
// a 0 header word or the end of the buffer (status ZX_OK), or malformed data (status
// ZX_ERR_IO_DATA_INTEGRITY, `error` set): a record of 0 words or past the end of the buffer, a
// partial header word, a record whose contents overrun it, or an invalid field (index 0 in a
// string or thread record, 0 ticks per second, an unknown argument type). Once false, stays
// false.
ZXS_API bool zxs_fxt_region_next(zxs_fxt_region_iter_t* it, zxs_fxt_record_t* rec);

struct zxs_fxt_tables;

// Reads a whole trace file: the magic record first, then any records, with the string and
// thread tables kept as they are defined. Fields are read-only for the caller.
typedef struct zxs_fxt_reader {
  const uint8_t* data;
  size_t size;
  size_t offset;
  struct zxs_fxt_tables* tables;
  bool done;
  uint64_t ticks_per_second;  // from the last initialization record; 0 before one (1 ns/tick)
  zx_status_t status;         // ZX_OK, or why reading stopped early
  zxs_fxt_error_t error;
} zxs_fxt_reader_t;

// Prepares to read `size` bytes at `data` (NULL allowed when size is 0); allocates the tables.
// ZX_ERR_INVALID_ARGS: reader NULL, or data NULL with size > 0. ZX_ERR_NO_MEMORY.
// On failure the reader is left destroyed (destroy is still allowed).
ZXS_API zx_status_t zxs_fxt_reader_init(zxs_fxt_reader_t* reader, const void* data, size_t size);

// Frees the tables. Records already returned stay valid (they point into the input).
ZXS_API void zxs_fxt_reader_destroy(zxs_fxt_reader_t* reader);

// Decodes the next record into *rec and returns true; string and thread references are
// resolved through the tables, and string, thread and initialization records update them.
// Records of other types are returned as ZXS_FXT_RECORD_OTHER (skipped by their size).
// Returns false at the end of the input (status ZX_OK) or on malformed data (status
// ZX_ERR_IO_DATA_INTEGRITY, `error` set): no magic record first, a 0 header word, a truncated
// record, a size past the end, contents overrunning their record, a string or thread index
// never defined, index 0 in a string or thread record, 0 ticks per second, an unknown argument
// type. Once false, stays false.
ZXS_API bool zxs_fxt_reader_next(zxs_fxt_reader_t* reader, zxs_fxt_record_t* rec);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ZXSAMPLER_FXT_H_
