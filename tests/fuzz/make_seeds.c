// Writes the fuzzers' seed corpora: region images and trace files made with the library's own
// sample encoder and FXT writer (plus deliberately broken variants of them), and API programs
// for fuzz_sampler_api (fuzz_api_ops.h) that walk the sampler's life cycle. Run once; the
// outputs are committed under tests/fuzz/corpus/.
//
//   make_seeds OUTDIR    # writes OUTDIR/region/, OUTDIR/trace/, OUTDIR/api/, OUTDIR/perfmon/
//                        # (dirs must exist)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/zxsampler.h>

#include "fuzz_api_ops.h"
#include "perfmon_records.h"

static const char* g_out;

static void write_seed(const char* dir, const char* name, const void* data, size_t size) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s/%s", g_out, dir, name);
  FILE* f = fopen(path, "wb");
  if (f == NULL || (size != 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    fprintf(stderr, "make_seeds: cannot write %s\n", path);
    exit(1);
  }
}

static void must(zx_status_t status, const char* what) {
  if (status != ZX_OK) {
    fprintf(stderr, "make_seeds: %s: %s\n", what, zxs_status_string(status));
    exit(1);
  }
}

// --- FXT seeds ----------------------------------------------------------------------------------

// Appends one kernel sample of n PCs, as the sampler writes it into a region.
static void put_sample(zxs_fxt_buf_t* buf, uint64_t ticks, size_t n) {
  uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
  uint64_t words[ZXS_FXT_SAMPLE_WORDS(ZX_SAMPLER_MAX_FRAMES)];
  for (size_t i = 0; i < n; i++) pcs[i] = 0x400000u + 0x10u * i;
  const size_t w = zxs_fxt_encode_sample(words, ticks, 42, 1000 + n, pcs, n);
  must(w == 0 ? ZX_ERR_INTERNAL : ZX_OK, "encode_sample");
  // Host order is the format's (the library's tests are little-endian hosts).
  must(zxs_fxt_write_raw(buf, words, w * 8), "write sample");
}

static void put_zero_words(zxs_fxt_buf_t* buf, size_t n) {
  static const uint64_t zero[64];
  while (n > 0) {
    const size_t k = n < 64 ? n : 64;
    must(zxs_fxt_write_raw(buf, zero, k * 8), "write zeros");
    n -= k;
  }
}

static void put_word(zxs_fxt_buf_t* buf, uint64_t w) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(w >> (8 * i));
  must(zxs_fxt_write_raw(buf, b, 8), "write word");
}

// Every argument type once, names inline or from the table (index 1 must be defined).
static size_t all_args(zxs_fxt_arg_t* args, bool indexed) {
  static const uint8_t blob[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const zxs_fxt_str_ref_t n = indexed ? zxs_fxt_str_index(1) : zxs_fxt_str_inline("arg", 3);
  size_t k = 0;
  memset(args, 0, sizeof(zxs_fxt_arg_t) * ZXS_FXT_MAX_ARGS);
  args[k++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_NULL, .name = n};
  args[k++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_INT32, .name = n, .i32 = -5};
  args[k++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_UINT32, .name = n, .u32 = 0xfffffffeu};
  args[k++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_INT64, .name = n, .i64 = INT64_MIN};
  args[k++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_UINT64, .name = n, .u64 = UINT64_MAX};
  args[k++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_DOUBLE, .name = n, .f64 = -1.5};
  args[k++] =
      (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_STRING,
                      .name = n,
                      .str = indexed ? zxs_fxt_str_index(2) : zxs_fxt_str_inline("value!!!x", 9)};
  args[k++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_POINTER, .name = n, .pointer = 0x7fff0000u};
  args[k++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_KOID, .name = n, .koid = 42};
  args[k++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_BOOL, .name = n, .b = true};
  args[k++] = (zxs_fxt_arg_t){
      .type = ZXS_FXT_ARG_BLOB, .name = n, .blob = {.data = blob, .size = sizeof(blob)}};
  return k;
}

// Records of every kind the writer makes (the string and thread tables defined first).
static void put_all_records(zxs_fxt_buf_t* buf) {
  zxs_fxt_arg_t args[ZXS_FXT_MAX_ARGS];
  must(zxs_fxt_write_provider_info(buf, 7, "zxsampler", 9), "provider info");
  must(zxs_fxt_write_provider_section(buf, 7), "provider section");
  must(zxs_fxt_write_initialization(buf, 1000000000u), "initialization");
  must(zxs_fxt_write_string(buf, 1, "name", 4), "string 1");
  must(zxs_fxt_write_string(buf, 2, "category", 8), "string 2");
  must(zxs_fxt_write_string(buf, ZXS_FXT_MAX_STRING_INDEX, "", 0), "string max");
  must(zxs_fxt_write_thread(buf, 1, 42, 1001), "thread 1");
  must(zxs_fxt_write_thread(buf, ZXS_FXT_MAX_THREAD_INDEX, 42, 1002), "thread 255");
  zxs_fxt_kernel_object_t process = {ZX_OBJ_TYPE_PROCESS, 42, zxs_fxt_str_inline("proc", 4)};
  must(zxs_fxt_write_kernel_object(buf, &process, NULL, 0), "process");
  zxs_fxt_arg_t parent = {
      .type = ZXS_FXT_ARG_KOID, .name = zxs_fxt_str_inline("process", 7), .koid = 42};
  zxs_fxt_kernel_object_t thread = {ZX_OBJ_TYPE_THREAD, 1001, zxs_fxt_str_index(1)};
  must(zxs_fxt_write_kernel_object(buf, &thread, &parent, 1), "thread object");
  size_t n = all_args(args, false);
  must(zxs_fxt_write_kernel_object(buf, &thread, args, n), "object, inline args");
  n = all_args(args, true);
  must(zxs_fxt_write_kernel_object(buf, &thread, args, n), "object, indexed args");
  const uint64_t pcs[3] = {0x401000, 0x402000, 0x403000};
  zxs_fxt_large_blob_t blob = {.category = zxs_fxt_str_index(2),
                               .name = zxs_fxt_str_inline("sample", 6),
                               .ticks = 123456,
                               .thread = {.index = 1},
                               .payload = {pcs, sizeof(pcs)}};
  must(zxs_fxt_write_large_blob(buf, &blob, args, 4), "blob, indexed");
  blob.thread = (zxs_fxt_thread_ref_t){0, 42, 1003};
  blob.category = zxs_fxt_str_inline("cat", 3);
  must(zxs_fxt_write_large_blob(buf, &blob, NULL, 0), "blob, inline");
  const char text[] = "attached text, not a multiple of eight";
  zxs_fxt_large_blob_t attachment = {.category = zxs_fxt_str_inline("c", 1),
                                     .name = zxs_fxt_str_index(1),
                                     .payload = {text, sizeof(text) - 1}};
  must(zxs_fxt_write_attachment(buf, &attachment), "attachment");
  put_sample(buf, 1000, 1);
  put_sample(buf, 2000, ZX_SAMPLER_MAX_FRAMES);
  // Types the reader does not decode: an event (4) and a large record of type 1.
  put_word(buf, 4u | (2u << 4) | (1u << 16));
  put_word(buf, 77);
  put_word(buf, 15u | (2u << 4) | ((uint64_t)1 << 36));
  put_word(buf, 0);
}

// The buffer's bytes with one word replaced (a corrupted copy).
static void write_patched(const char* dir, const char* name, const zxs_fxt_buf_t* buf, size_t word,
                          uint64_t value, size_t size) {
  uint8_t* copy = malloc(buf->len);
  must(copy == NULL ? ZX_ERR_NO_MEMORY : ZX_OK, "malloc");
  memcpy(copy, buf->data, buf->len);
  for (int i = 0; i < 8 && word * 8 + 8 <= buf->len; i++) {
    copy[word * 8 + (size_t)i] = (uint8_t)(value >> (8 * i));
  }
  write_seed(dir, name, copy, size < buf->len ? size : buf->len);
  free(copy);
}

static void region_seeds(void) {
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  write_seed("region", "empty", "", 0);

  put_sample(&buf, 1000, 1);
  put_zero_words(&buf, 9);
  write_seed("region", "one-sample-zero-tail", buf.data, buf.len);

  zxs_fxt_buf_reset(&buf);
  put_sample(&buf, 1000, 1);
  put_sample(&buf, 1001, 3);
  put_sample(&buf, 1002, ZX_SAMPLER_MAX_FRAMES);
  put_word(&buf, 0);
  write_seed("region", "three-samples", buf.data, buf.len);
  // Truncations and corruptions of it.
  write_seed("region", "cut-in-record", buf.data, 8 * 9);
  write_seed("region", "cut-in-header", buf.data, 8 * 7 + 5);
  write_patched("region", "size-zero", &buf, 7, 0xf, buf.len);
  write_patched("region", "size-past-end", &buf, 7, 0xf | ((uint64_t)0xffff << 4), buf.len);
  write_patched("region", "payload-size-huge", &buf, 5, UINT64_MAX, buf.len);
  write_patched("region", "thread-index", &buf, 1, (uint64_t)5 << 36, buf.len);
  write_patched("region", "args-count", &buf, 1, (uint64_t)3 << 32, buf.len);

  // Exactly full: two 64-frame records fill 1120 bytes, no zero word after them.
  zxs_fxt_buf_reset(&buf);
  put_sample(&buf, 1, ZX_SAMPLER_MAX_FRAMES);
  put_sample(&buf, 2, ZX_SAMPLER_MAX_FRAMES);
  write_seed("region", "exactly-full", buf.data, buf.len);

  // A region holding every record kind (iteration decodes any FXT; indices stay unresolved).
  zxs_fxt_buf_reset(&buf);
  put_all_records(&buf);
  write_seed("region", "all-record-kinds", buf.data, buf.len);
  zxs_fxt_buf_destroy(&buf);
}

static void trace_seeds(void) {
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  must(zxs_fxt_write_magic(&buf), "magic");
  write_seed("trace", "magic-only", buf.data, buf.len);
  put_all_records(&buf);
  write_seed("trace", "all-record-kinds", buf.data, buf.len);
  write_seed("trace", "truncated", buf.data, buf.len - 12);
  write_patched("trace", "no-magic", &buf, 0, 0x21, buf.len);  // an initialization header
  write_patched("trace", "zero-header", &buf, 1, 0, buf.len);

  // What the profiler writes: header records, then raw region contents.
  zxs_fxt_buf_reset(&buf);
  must(zxs_fxt_write_magic(&buf), "magic");
  must(zxs_fxt_write_initialization(&buf, 1000000000u), "init");
  zxs_fxt_arg_t parent = {
      .type = ZXS_FXT_ARG_KOID, .name = zxs_fxt_str_inline("process", 7), .koid = 42};
  zxs_fxt_kernel_object_t process = {ZX_OBJ_TYPE_PROCESS, 42, zxs_fxt_str_inline("demo", 4)};
  zxs_fxt_kernel_object_t thread = {ZX_OBJ_TYPE_THREAD, 1001, zxs_fxt_str_inline("main", 4)};
  must(zxs_fxt_write_kernel_object(&buf, &process, NULL, 0), "process");
  must(zxs_fxt_write_kernel_object(&buf, &thread, &parent, 1), "thread");
  for (size_t n = 1; n <= 8; n++) put_sample(&buf, 1000 * n, n * 8);
  write_seed("trace", "profile", buf.data, buf.len);

  // A flight recorder's alert: an instant event with the late period's breakdown, then samples.
  zxs_fxt_buf_reset(&buf);
  must(zxs_fxt_write_magic(&buf), "magic");
  must(zxs_fxt_write_initialization(&buf, 1000000000u), "init");
  must(zxs_fxt_write_kernel_object(&buf, &process, NULL, 0), "process");
  must(zxs_fxt_write_kernel_object(&buf, &thread, &parent, 1), "thread");
  must(zxs_fxt_write_string(&buf, 1, "alert", 5), "category");
  static const char* const kBreakdown[] = {"wall",       "budget",          "cpu_time",
                                           "queue_time", "page_fault_time", "lock_contention_time"};
  zxs_fxt_arg_t breakdown[6];
  for (size_t i = 0; i < 6; i++) {
    breakdown[i] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_UINT64,
                                   .name = zxs_fxt_str_inline(kBreakdown[i], strlen(kBreakdown[i])),
                                   .u64 = 1000000 * (i + 1)};
  }
  zxs_fxt_event_t alert = {.ticks = 9000,
                           .thread = {.process_koid = 42, .thread_koid = 1001},
                           .category = zxs_fxt_str_index(1),
                           .name = zxs_fxt_str_inline("mixer", 5)};
  must(zxs_fxt_write_instant_event(&buf, &alert, breakdown, 6), "alert");
  for (size_t n = 1; n <= 8; n++) put_sample(&buf, 1000 * n, n * 8);
  write_seed("trace", "alert", buf.data, buf.len);

  // JIT code names (for the alert target, which reads traces into profiles): a "jit-symbols"
  // blob of perf map lines for the process, good, overlapping and malformed ones, and one for a
  // process never described.
  zxs_fxt_buf_reset(&buf);
  must(zxs_fxt_write_magic(&buf), "magic");
  must(zxs_fxt_write_initialization(&buf, 1000000000u), "init");
  must(zxs_fxt_write_kernel_object(&buf, &process, NULL, 0), "process");
  must(zxs_fxt_write_kernel_object(&buf, &thread, &parent, 1), "thread");
  static const char kJit[] =
      "400000 20 JS:*hot /a.js:1\n400010 40 later wins\nzz 10 bad\n400080 0 zero\n"
      "0x4000c0 0X10 prefixed\r\nffffffffffffff00 200 wraps\n400100 10";
  zxs_fxt_large_blob_t jit = {.category = zxs_fxt_str_inline("zxsampler", 9),
                              .name = zxs_fxt_str_inline("jit-symbols", 11),
                              .thread = {.process_koid = 42},
                              .payload = {kJit, sizeof(kJit) - 1}};
  must(zxs_fxt_write_large_blob(&buf, &jit, NULL, 0), "jit-symbols");
  jit.thread.process_koid = 43;
  jit.payload = (zxs_fxt_bytes_t){"1 1 x\n", 6};
  must(zxs_fxt_write_large_blob(&buf, &jit, NULL, 0), "jit-symbols of another process");
  for (size_t n = 1; n <= 8; n++) put_sample(&buf, 1000 * n, n * 2);
  write_seed("alert", "jit-symbols", buf.data, buf.len);

  // References to table entries never defined.
  zxs_fxt_buf_reset(&buf);
  must(zxs_fxt_write_magic(&buf), "magic");
  zxs_fxt_kernel_object_t undefined = {ZX_OBJ_TYPE_THREAD, 5, zxs_fxt_str_index(9)};
  must(zxs_fxt_write_kernel_object(&buf, &undefined, NULL, 0), "undefined string");
  write_seed("trace", "undefined-string", buf.data, buf.len);
  zxs_fxt_buf_reset(&buf);
  must(zxs_fxt_write_magic(&buf), "magic");
  zxs_fxt_large_blob_t blob = {.thread = {.index = 3}, .payload = {"12345678", 8}};
  must(zxs_fxt_write_large_blob(&buf, &blob, NULL, 0), "undefined thread");
  write_seed("trace", "undefined-thread", buf.data, buf.len);

  // Redefinitions and larger payloads (seeds stay under 4 KiB: libFuzzer's default max_len
  // follows the largest seed, and long inputs slow every run down).
  zxs_fxt_buf_reset(&buf);
  must(zxs_fxt_write_magic(&buf), "magic");
  static char big[2000];
  memset(big, 'x', sizeof(big));
  must(zxs_fxt_write_string(&buf, 1, "first", 5), "string");
  must(zxs_fxt_write_string(&buf, 1, big, 1001), "long string");
  must(zxs_fxt_write_thread(&buf, 1, 1, 2), "thread");
  must(zxs_fxt_write_thread(&buf, 1, 3, 4), "thread again");
  zxs_fxt_large_blob_t att = {.name = zxs_fxt_str_index(1), .payload = {big, sizeof(big)}};
  must(zxs_fxt_write_attachment(&buf, &att), "large attachment");
  write_seed("trace", "redefinitions-and-large", buf.data, buf.len);
  zxs_fxt_buf_destroy(&buf);
}

// --- API programs (see fuzz_api_ops.h) ----------------------------------------------------------

// Handle selectors: the four every input starts with, then handles in creation order.
enum { H_PROCESS = 0, H_VMAR = 1, H_SELF = 2, H_RSRC = 3, H_FIRST_NEW = 4 };
#define STACK_WORDS (FUZZ_API_STACK_BYTES / 8)

typedef struct prog {
  uint8_t b[8192];
  size_t n;
} prog_t;

static void b8(prog_t* p, uint8_t v) {
  if (p->n == sizeof(p->b)) {
    fprintf(stderr, "make_seeds: program too long\n");
    exit(1);
  }
  p->b[p->n++] = v;
}
static void le(prog_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) b8(p, (uint8_t)(v >> (8 * i)));
}
static void op(prog_t* p, enum fuzz_api_op o) { b8(p, (uint8_t)o); }

static void start_prog(prog_t* p, uint8_t stack_mode) {
  p->n = 0;
  b8(p, stack_mode);
}

// A create with a well-formed config of `buffer_size` bytes (1..12288) or an edge case: each
// pick operand is 0 (well-formed) unless given as 0xc0 + edge index.
static void create_ex(prog_t* p, uint8_t rsrc, uint8_t options, uint8_t config, uint8_t size,
                      uint8_t period, size_t buffer_size, uint8_t buffer, uint8_t discipline,
                      uint8_t out) {
  op(p, FUZZ_OP_CREATE);
  b8(p, rsrc);
  b8(p, options);
  b8(p, config);
  b8(p, size);
  b8(p, period);
  le(p, buffer_size - 1, 2);
  b8(p, buffer);
  b8(p, discipline);
  b8(p, out);
}
static void create(prog_t* p, size_t buffer_size) {
  create_ex(p, H_RSRC, 0, 0, 0, 0, buffer_size, 0, 0, 0);
}
static void attach(prog_t* p, uint8_t iob, uint8_t thread) {
  op(p, FUZZ_OP_ATTACH);
  b8(p, iob);
  b8(p, thread);
}
static void start(prog_t* p, uint8_t iob) {
  op(p, FUZZ_OP_START);
  b8(p, iob);
}
static void stop(prog_t* p, uint8_t iob) {
  op(p, FUZZ_OP_STOP);
  b8(p, iob);
}
static void close_h(prog_t* p, uint8_t h) {
  op(p, FUZZ_OP_CLOSE);
  b8(p, h);
}
static void dup(prog_t* p, uint8_t h, uint8_t mode, uint32_t bits) {
  op(p, FUZZ_OP_DUPLICATE);
  b8(p, h);
  b8(p, mode);
  le(p, bits, 4);
  b8(p, 0);
}
static void get_info(prog_t* p, uint8_t h, uint8_t topic, uint8_t size, uint8_t flags) {
  op(p, FUZZ_OP_GET_INFO);
  b8(p, h);
  b8(p, topic);
  b8(p, size);
  le(p, 0, 2);
  b8(p, flags);
}
static void stats(prog_t* p, uint8_t iob) {
  b8(p, FUZZ_OP_STATS_BYTE);
  b8(p, iob);
  b8(p, 0);
}
static void map_ex(prog_t* p, uint8_t options, uint8_t vmar_offset, uint8_t iob, uint8_t index,
                   uint8_t offset, uint8_t len, uint8_t out) {
  op(p, FUZZ_OP_MAP);
  b8(p, 0);  // the root VMAR
  b8(p, options);
  b8(p, vmar_offset);
  b8(p, iob);
  b8(p, index);
  b8(p, offset);
  b8(p, len);
  b8(p, out);
}
static void map(prog_t* p, uint8_t iob, uint8_t index) { map_ex(p, 0, 0, iob, index, 0, 0, 0); }
static void check_mapping(prog_t* p, uint8_t which) {
  op(p, FUZZ_OP_CHECK_MAPPING);
  b8(p, which);
}
static void unmap(prog_t* p, uint8_t which, int page_delta) {
  op(p, FUZZ_OP_UNMAP);
  b8(p, 0);
  b8(p, (uint8_t)(page_delta + 2));
  b8(p, which);
  b8(p, 0);  // one page
}
// Fires `thread`'s source with fp at byte `fp_off` of the fake stack, sp zero.
static void fire(prog_t* p, uint8_t thread, uint64_t pc, uint16_t fp_off) {
  op(p, FUZZ_OP_FIRE);
  b8(p, thread);
  b8(p, 0);
  le(p, pc, 8);
  le(p, fp_off + 32u, 2);
}
static void fire_sp(prog_t* p, uint8_t thread, uint16_t fp_off, uint16_t sp_off) {
  op(p, FUZZ_OP_FIRE);
  b8(p, thread);
  b8(p, 2u << 2);
  le(p, 0x401234, 8);
  le(p, fp_off + 32u, 2);
  le(p, sp_off + 32u, 2);
}
static void late_fire(prog_t* p, uint8_t which) {
  op(p, FUZZ_OP_LATE_FIRE);
  b8(p, which);
  b8(p, 0);
  le(p, 0x405678, 8);
  le(p, 32, 2);  // fp: the stack base
}
static void simple(prog_t* p, enum fuzz_api_op o, uint8_t arg) {
  op(p, o);
  b8(p, arg);
}
static void stack_ptr(prog_t* p, uint16_t word, uint16_t target_off) {
  op(p, FUZZ_OP_STACK_WORD);
  le(p, word, 2);
  b8(p, 0);
  le(p, target_off + 32u, 2);
}
static void stack_raw(prog_t* p, uint16_t word, uint64_t v) {
  op(p, FUZZ_OP_STACK_WORD);
  le(p, word, 2);
  b8(p, 0xa0);
  le(p, v, 8);
}
// A chain of `frames` frame records from word `first`, 16 bytes apart, ending at a zero return
// address. Firing with fp = 8 * first walks all of them.
static void chain(prog_t* p, uint16_t first, int frames) {
  for (int i = 0; i < frames; i++) {
    const uint16_t w = (uint16_t)(first + 2 * i);
    stack_ptr(p, w, (uint16_t)(8 * (w + 2)));
    stack_raw(p, (uint16_t)(w + 1), 0x500000u + 0x10u * (unsigned)i);
  }
}
static void save(prog_t* p, const char* name) { write_seed("api", name, p->b, p->n); }

static void api_seeds(void) {
  prog_t p;
  const uint8_t IOB = H_FIRST_NEW;

  start_prog(&p, 0);
  create(&p, 8192);
  attach(&p, IOB, H_SELF);
  start(&p, IOB);
  chain(&p, 16, 5);
  fire(&p, 0, 0x401000, 8 * 16);
  simple(&p, FUZZ_OP_SET_TICKS, 7);
  fire(&p, 0, 0x401100, 8 * 18);
  fire(&p, 0, 0x401200, 8 * 16 + 4);  // unaligned fp: the PC only
  stop(&p, IOB);
  map(&p, IOB, 0);
  check_mapping(&p, 0);
  get_info(&p, IOB, 0, 0, 0);
  get_info(&p, IOB, 1, 0, 0);
  get_info(&p, IOB, 2, 0, 0);
  stats(&p, IOB);
  close_h(&p, IOB);
  save(&p, "lifecycle");

  start_prog(&p, 0);
  create(&p, 4096);
  attach(&p, IOB, H_SELF);
  start(&p, IOB);
  chain(&p, 0, 70);
  fire(&p, 0, 0x401000, 0);  // 64 frames, truncated
  fire(&p, 0, 0x401000, 8 * 60);
  stats(&p, IOB);
  stop(&p, IOB);
  map(&p, IOB, 0);
  save(&p, "deep-stack-truncated");

  // 63 frames: 64-PC records of 560 bytes; the 8th does not fit 4096 bytes.
  start_prog(&p, 0);
  create(&p, 4096);
  attach(&p, IOB, H_SELF);
  start(&p, IOB);
  chain(&p, 0, 63);
  for (int i = 0; i < 9; i++) fire(&p, 0, 0x401000, 0);
  fire(&p, 0, 0x401000, 8 * 120);  // small, still dropped: writes stopped until the next start
  stats(&p, IOB);
  stop(&p, IOB);
  map(&p, IOB, 0);
  check_mapping(&p, 0);
  save(&p, "fill-region");

  start_prog(&p, 0);
  create(&p, 8192);
  simple(&p, FUZZ_OP_THREAD_GET, 0);  // handle 5: the other thread
  attach(&p, IOB, IOB + 1);
  start(&p, IOB);
  fire(&p, 1, 0x402000, 0);
  op(&p, FUZZ_OP_OTHER_THREAD);  // exits, no hook: reaped by stop
  b8(&p, 0);
  b8(&p, 0);
  stop(&p, IOB);
  attach(&p, IOB, IOB + 1);           // BAD_STATE
  simple(&p, FUZZ_OP_THREAD_GET, 0);  // BAD_STATE
  op(&p, FUZZ_OP_OTHER_THREAD);       // alive again
  b8(&p, 1);
  b8(&p, 0);
  attach(&p, IOB, IOB + 1);
  stats(&p, IOB);
  op(&p, FUZZ_OP_OTHER_THREAD);  // the exit hook detaches it
  b8(&p, 1);
  b8(&p, 1);
  stats(&p, IOB);
  simple(&p, FUZZ_OP_THREAD_GET, 1);  // a thread the backend cannot name
  save(&p, "other-thread");

  start_prog(&p, 0);
  create(&p, 8192);
  attach(&p, IOB, H_SELF);
  simple(&p, FUZZ_OP_THREAD_GET, 0);
  op(&p, FUZZ_OP_FAIL_ARM);
  start(&p, IOB);  // this thread stays attached, unarmed
  fire(&p, 0, 1, 0);
  stop(&p, IOB);
  start(&p, IOB);
  fire(&p, 0, 2, 0);
  op(&p, FUZZ_OP_FAIL_ARM);
  attach(&p, IOB, IOB + 1);  // NO_RESOURCES while running
  stats(&p, IOB);
  save(&p, "arm-failures");

  start_prog(&p, 0);
  create(&p, 8192);
  attach(&p, IOB, H_SELF);
  start(&p, IOB);
  fire(&p, 0, 1, 0);
  stop(&p, IOB);
  late_fire(&p, 0);  // writes disabled
  start(&p, IOB);
  late_fire(&p, 0);     // the current attachment: written
  late_fire(&p, 0x80);  // a stale generation: dropped
  close_h(&p, IOB);
  late_fire(&p, 0);
  create(&p, 4096);
  attach(&p, IOB + 1, H_SELF);
  start(&p, IOB + 1);
  late_fire(&p, 0);  // the old attachment's slot is reused
  late_fire(&p, 1);
  stop(&p, IOB + 1);
  stats(&p, IOB + 1);
  save(&p, "late-signals");

  start_prog(&p, 0);
  create(&p, 8192);
  dup(&p, IOB, 3, 0);  // handle 5: without APPLY_PROFILE
  attach(&p, IOB + 1, H_SELF);
  start(&p, IOB + 1);
  dup(&p, IOB, 1, ZX_RIGHT_INSPECT | ZX_RIGHT_DUPLICATE);  // handle 6
  get_info(&p, IOB + 2, 2, 0, 0);
  map(&p, IOB + 2, 0);                // ACCESS_DENIED: no MAP
  dup(&p, IOB + 2, 2, ZX_RIGHT_MAP);  // INVALID_ARGS: not a subset
  dup(&p, IOB, 1, 0);                 // handle 7: no rights at all
  dup(&p, IOB + 3, 0, 0);             // ACCESS_DENIED: no DUPLICATE
  dup(&p, H_RSRC, 0, 0);
  dup(&p, H_SELF, 0, 0);
  close_h(&p, IOB);
  start(&p, IOB + 1);  // ACCESS_DENIED: the session lives on through its duplicates
  get_info(&p, IOB + 2, 1, 0, 0);
  close_h(&p, IOB + 1);
  close_h(&p, IOB + 2);
  close_h(&p, IOB + 3);  // the last handle: destroyed
  create(&p, 4096);
  close_h(&p, H_PROCESS);  // pinned: stays
  close_h(&p, 0xe0);
  save(&p, "rights-and-duplicates");

  start_prog(&p, 0);
  simple(&p, FUZZ_OP_SWITCH, 0);
  create(&p, 4096);
  attach(&p, IOB, H_SELF);
  start(&p, IOB);
  stop(&p, IOB);
  simple(&p, FUZZ_OP_SWITCH, 1);
  create(&p, 4096);
  simple(&p, FUZZ_OP_SWITCH, 0);
  get_info(&p, IOB, 1, 0, 0);  // not gated
  start(&p, IOB);
  save(&p, "switched-off");

  start_prog(&p, 0);
  create_ex(&p, 0xe0, 0, 0, 0, 0, 4096, 0, 0, 0);       // invalid handle
  create_ex(&p, H_PROCESS, 0, 0, 0, 0, 4096, 0, 0, 0);  // WRONG_TYPE
  create_ex(&p, H_RSRC, 0xc0, 0, 0, 0, 4096, 0, 0, 0);  // options
  create_ex(&p, H_RSRC, 0, 0xf0, 0, 0, 4096, 0, 0, 0);  // config NULL
  for (uint8_t e = 0; e < 5; e++) create_ex(&p, H_RSRC, 0, 0, 0xc0 + e, 0, 4096, 0, 0, 0);
  for (uint8_t e = 0; e < 6; e++) create_ex(&p, H_RSRC, 0, 0, 0, 0xc0 + e, 4096, 0, 0, 0);
  for (uint8_t e = 0; e < 9; e++) create_ex(&p, H_RSRC, 0, 0, 0, 0, 4096, 0xc0 + e, 0, 0);
  create_ex(&p, H_RSRC, 0, 0, 0, 0, 4096, 0, 0xc0, 0);  // discipline
  create_ex(&p, H_RSRC, 0, 0, 0, 0, 4096, 0, 0, 0xf0);  // iob_out NULL
  op(&p, FUZZ_OP_FAIL_REGION);
  create(&p, 4096);  // NO_MEMORY
  create(&p, 4096);
  create(&p, 4096);  // ALREADY_EXISTS
  save(&p, "create-statuses");

  start_prog(&p, 0);
  create(&p, 4096);
  attach(&p, IOB, H_SELF);
  start(&p, IOB);
  fire(&p, 0, 0x40aaaa, 0);
  stop(&p, IOB);
  map(&p, IOB, 0);
  map_ex(&p, 0, 0, IOB, 1, 0, 0, 0);
  close_h(&p, IOB);
  check_mapping(&p, 0);  // outlives its session
  create(&p, 4096);
  attach(&p, IOB + 1, H_SELF);
  start(&p, IOB + 1);
  fire(&p, 0, 0x40bbbb, 0);
  map(&p, IOB + 1, 0);
  check_mapping(&p, 0);
  check_mapping(&p, 2);
  unmap(&p, 0, 1);  // a neighbour page
  unmap(&p, 0, 0);
  unmap(&p, 0, -1);
  save(&p, "mappings-outlive-sessions");

  start_prog(&p, 0);
  simple(&p, FUZZ_OP_SET_ONLINE, 0xa5);  // CPUs 0, 2, 5, 7
  create(&p, 4096);
  attach(&p, IOB, H_SELF);
  start(&p, IOB);
  const uint8_t cpus[] = {2, 1, 9, 7, 5, 0, 8};
  for (size_t i = 0; i < sizeof(cpus); i++) {
    simple(&p, FUZZ_OP_SET_CPU, cpus[i]);
    fire(&p, 0, 0x400000 + i, 0);
  }
  stop(&p, IOB);
  for (uint8_t r = 0; r < 5; r++) map(&p, IOB, r);
  get_info(&p, IOB, 2, 22, 0);    // room for 2 of 4 regions
  get_info(&p, IOB, 2, 2, 0x30);  // room for none; actual/avail NULL
  stats(&p, IOB);
  save(&p, "cpus");

  start_prog(&p, 0);
  create(&p, 3 * 4096);
  const uint8_t options[] = {0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6};
  for (size_t i = 0; i < sizeof(options); i++) map_ex(&p, options[i], 0, IOB, 0, 0, 0, 0);
  map_ex(&p, 0, 0xc0, IOB, 0, 0, 0, 0);     // vmar_offset
  map_ex(&p, 0, 0, IOB, 0, 0xf1, 0, 0);     // unaligned offset
  map_ex(&p, 0, 0, IOB, 0, 0, 0xa0, 0);     // length 0
  map_ex(&p, 0, 0, IOB, 0, 0, 0xf1, 0);     // unaligned length
  map_ex(&p, 0, 0, IOB, 0, 0xa2, 0xa2, 0);  // pages 2..3: past the end
  map_ex(&p, 0, 0, IOB, 0, 0xa1, 0xa2, 0);  // pages 1..2: fits
  map_ex(&p, 0, 0, IOB, 8, 0, 0, 0);        // no such region
  map_ex(&p, 0, 0, IOB, 0, 0, 0, 0xf8);     // mapped_addr NULL
  map_ex(&p, 0, 0, H_PROCESS, 0, 0, 0, 0);  // WRONG_TYPE
  get_info(&p, H_PROCESS, 0, 0, 0);
  get_info(&p, H_VMAR, 0, 2, 0);  // too small
  get_info(&p, IOB, 1, 3, 0x0f);  // buffer NULL, size 0
  get_info(&p, IOB, 1, 0, 0x0f);  // buffer NULL, size > 0
  get_info(&p, IOB, 3, 0, 0);     // unknown topic
  get_info(&p, H_RSRC, 1, 0, 0);  // WRONG_TYPE
  save(&p, "map-and-info-errors");

  // Stack bounds and frame-walk edges: bounds inside the stack, sp above fp, a cycle.
  start_prog(&p, 1);
  le(&p, 64, 2);   // lo: word 64
  le(&p, 512, 2);  // hi: word 512
  create(&p, 8192);
  attach(&p, IOB, H_SELF);
  start(&p, IOB);
  chain(&p, 60, 20);
  fire(&p, 0, 1, 8 * 60);  // starts below lo
  fire(&p, 0, 2, 8 * 64);
  fire_sp(&p, 0, 8 * 64, 8 * 70);  // sp above fp
  stack_ptr(&p, 100, 8 * 80);      // a frame pointing back down: the walk stops
  stack_raw(&p, 101, 0x77);
  fire(&p, 0, 3, 8 * 80);
  stack_ptr(&p, 510, 8 * 510);
  stack_raw(&p, 511, 9);
  fire(&p, 0, 4, 8 * 510);  // the last frame that fits below hi
  stats(&p, IOB);
  save(&p, "stack-bounds");

  start_prog(&p, 3);  // no stack bounds at all
  create(&p, 4096);
  attach(&p, IOB, H_SELF);
  start(&p, IOB);
  fire(&p, 0, 5, 0);
  stop(&p, IOB);
  start(&p, IOB);  // a restart continues where the last run left off
  fire(&p, 0, 6, 0);
  start(&p, IOB);  // BAD_STATE
  stop(&p, IOB);
  stop(&p, IOB);  // BAD_STATE
  map(&p, IOB, 0);
  check_mapping(&p, 0);
  b8(&p, FUZZ_OP_SELF_BYTE);
  save(&p, "restart-continues");

  // Writes stop at buffer_size (120), not at the region's page-rounded end, and a restart takes
  // records again where the data ends: 56 bytes, then a 72-byte record does not fit (full), then
  // a 56-byte one that would fit is dropped all the same; after stop + start it is written.
  start_prog(&p, 0);
  create(&p, 120);
  attach(&p, IOB, H_SELF);
  start(&p, IOB);
  chain(&p, 16, 2);
  fire(&p, 0, 0x401000, 0);       // the PC only: 56 bytes
  fire(&p, 0, 0x401100, 8 * 16);  // three PCs: 72 bytes, past 120
  fire(&p, 0, 0x401200, 0);       // dropped: the CPU is full
  stats(&p, IOB);
  stop(&p, IOB);
  start(&p, IOB);
  fire(&p, 0, 0x401300, 0);  // written at 56
  fire(&p, 0, 0x401400, 0);  // past 120 again
  stats(&p, IOB);
  stop(&p, IOB);
  map(&p, IOB, 0);
  check_mapping(&p, 0);
  save(&p, "restart-reopens-full-region");

  // ZX_INFO_TASK_RUNTIME (topic byte 5) and _V1 (11) on threads and the process: an exited thread
  // answers only if a query measured it while it lived; the process sums the measured ones.
  const uint8_t OTHER = H_FIRST_NEW;
  start_prog(&p, 0);
  simple(&p, FUZZ_OP_THREAD_GET, 0);  // handle 4: the other thread
  op(&p, FUZZ_OP_OTHER_THREAD);       // exits before any query
  b8(&p, 0);
  b8(&p, 0);
  get_info(&p, OTHER, 5, 0, 0);      // BAD_STATE
  get_info(&p, H_PROCESS, 5, 0, 0);  // this thread's runtime only
  op(&p, FUZZ_OP_OTHER_THREAD);      // alive again
  b8(&p, 1);
  b8(&p, 0);
  get_info(&p, OTHER, 5, 2, 0);  // BUFFER_TOO_SMALL, measured all the same
  op(&p, FUZZ_OP_OTHER_THREAD);  // exits, measured
  b8(&p, 0);
  b8(&p, 0);
  get_info(&p, OTHER, 5, 0, 0);
  get_info(&p, OTHER, 11, 0, 0);
  get_info(&p, H_PROCESS, 5, 0, 0);   // both threads
  get_info(&p, H_PROCESS, 11, 0, 0);  // V1
  get_info(&p, H_SELF, 5, 0, 0x0f);   // buffer NULL, size > 0
  get_info(&p, H_VMAR, 5, 0, 0);      // WRONG_TYPE
  dup(&p, H_SELF, 1, ~(uint32_t)ZX_RIGHT_INSPECT);
  get_info(&p, OTHER + 1, 5, 0, 0);  // ACCESS_DENIED
  save(&p, "task-runtime");
}

// --- perfmon buffer seeds ------------------------------------------------------------------------

// A perfmon buffer: header then records; capture_end covers the records unless `end` says
// otherwise (0: the records' end).
typedef struct {
  uint8_t b[2048];
  size_t n;
} pm_buf_t;

static void pm_begin(pm_buf_t* p) {
  memset(p, 0, sizeof(*p));
  p->n = ZXS_PERFMON_BUFFER_HEADER_SIZE;
}

static void pm_header(pm_buf_t* p, uint16_t version, uint32_t flags, uint64_t end) {
  const zxs_perfmon_buffer_header_t h = {.version = version,
                                         .arch = ZXS_PERFMON_ARCH_X64,
                                         .flags = flags,
                                         .ticks_per_second = 1000000000,
                                         .capture_end = end != 0 ? end : p->n};
  zxs_perfmon_encode_header(p->b, &h);
}

static void pm_save(const pm_buf_t* p, const char* name) {
  write_seed("perfmon", name, p->b, p->n);
}

static void perfmon_seeds(void) {
  const uint16_t pf = ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 0x402);
  const uint16_t clock = ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_MISC, 0x400);
  const uint16_t cycles = ZXS_PERFMON_EVENT_ID(ZXS_PERFMON_UNIT_ARCH, 0);
  zxs_perfmon_last_branch_t br[3] = {{0x1000, 0x2000, 5}, {0x3000, 0x4000, 1u << 16}, {1, 2, 3}};
  pm_buf_t p;
  // A run's buffer: timebase samples with PCs and counts, a tick, branches, the final group.
  pm_begin(&p);
  for (int i = 0; i < 3; i++) {
    p.n += zxs_perfmon_encode_time(p.b + p.n, 0, 1000 * (i + 1));
    p.n += zxs_perfmon_encode_pc(p.b + p.n, clock, ((uint64_t)42 << 32) | 43, 0x401000u + i);
    p.n += zxs_perfmon_encode_count(p.b + p.n, pf, 10u * i);
    p.n += zxs_perfmon_encode_value(p.b + p.n, cycles, 7);
  }
  p.n += zxs_perfmon_encode_time(p.b + p.n, 0, 5000);
  p.n += zxs_perfmon_encode_tick(p.b + p.n, cycles);
  p.n += zxs_perfmon_encode_last_branch(p.b + p.n, cycles, 9, br, 3);
  p.n += zxs_perfmon_encode_last_branch(p.b + p.n, cycles, 9, br, 0);
  p.n += zxs_perfmon_encode_time(p.b + p.n, 0, 9000);
  p.n += zxs_perfmon_encode_count(p.b + p.n, clock, 500);
  p.n += zxs_perfmon_encode_count(p.b + p.n, pf, 4);
  const size_t run_end = p.n;
  pm_header(&p, 0, 0, 0);
  pm_save(&p, "run");
  // The same with bytes past capture_end (the rest of a buffer) and the FULL flag.
  memset(p.b + p.n, 0xa5, 64);
  p.n += 64;
  pm_header(&p, 0, ZXS_PERFMON_BUFFER_FLAG_FULL, run_end);
  pm_save(&p, "run-full-with-tail");
  // Broken headers.
  pm_begin(&p);
  pm_header(&p, 0, 0, 0);
  pm_save(&p, "empty");
  pm_header(&p, 1, 0, 0);
  pm_save(&p, "version-1");
  pm_header(&p, 0, 0, 16);
  pm_save(&p, "capture-end-in-header");
  pm_header(&p, 0, 0, 4096);
  pm_save(&p, "capture-end-past-buffer");
  p.n += zxs_perfmon_encode_tick(p.b + p.n, pf);
  pm_header(&p, 0, 0, p.n - 2);
  pm_save(&p, "capture-end-unaligned");
  p.n = 20;
  pm_save(&p, "short-header");
  // Broken records.
  pm_begin(&p);
  p.n += zxs_perfmon_encode_time(p.b + p.n, 0, 1);
  p.n += zxs_perfmon_encode_pc(p.b + p.n, clock, 1, 2);
  pm_header(&p, 0, 0, p.n - 8);
  pm_save(&p, "pc-crosses-capture-end");
  pm_begin(&p);
  p.n += zxs_perfmon_encode_last_branch(p.b + p.n, cycles, 9, br, 3);
  p.b[ZXS_PERFMON_BUFFER_HEADER_SIZE + 4] = 33;  // num_branches
  pm_header(&p, 0, 0, 0);
  pm_save(&p, "last-branch-33");
  pm_begin(&p);
  p.n += zxs_perfmon_encode_tick(p.b + p.n, pf);
  p.b[p.n] = 0;  // a reserved record
  p.n += 4;
  pm_header(&p, 0, 0, 0);
  pm_save(&p, "reserved-type");
  pm_begin(&p);
  p.n += zxs_perfmon_encode_count(p.b + p.n, pf, 3);
  p.b[p.n] = 9;  // an unknown type
  p.n += 4;
  pm_header(&p, 0, 0, 0);
  pm_save(&p, "unknown-type");
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  g_out = argv[1];
  region_seeds();
  trace_seeds();
  api_seeds();
  perfmon_seeds();
  return 0;
}
