// FXT codec: golden vectors of fxt-records.md, writer->reader round trips, and malformed input.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
// cmocka needs the headers above first.
#include <cmocka.h>
#include <zxsampler/fxt.h>

static const char kPayload[] = "Some data to write into the buffer";  // 34 bytes
#define PAYLOAD_LEN (sizeof(kPayload) - 1)

static uint64_t load_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) {
    v = (v << 8) | p[i];
  }
  return v;
}

static uint64_t word_at(const zxs_fxt_buf_t* buf, size_t i) {
  assert_true((i + 1) * 8 <= buf->len);
  return load_le(buf->data + i * 8);
}

// Appends hand-made words (little-endian whatever the host).
static void append_words(zxs_fxt_buf_t* buf, const uint64_t* words, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint8_t b[8];
    for (int j = 0; j < 8; j++) {
      b[j] = (uint8_t)(words[i] >> (8 * j));
    }
    assert_int_equal(zxs_fxt_write_raw(buf, b, 8), ZX_OK);
  }
}

static bool str_is(const zxs_fxt_str_ref_t* s, const char* expected) {
  return s->len == strlen(expected) && (s->len == 0 || memcmp(s->data, expected, s->len) == 0);
}

static zxs_fxt_arg_t arg_of(zxs_fxt_arg_type_t type, zxs_fxt_str_ref_t name) {
  zxs_fxt_arg_t a;
  memset(&a, 0, sizeof(a));
  a.type = type;
  a.name = name;
  return a;
}

static zxs_fxt_large_blob_t blob_of(zxs_fxt_str_ref_t category, zxs_fxt_str_ref_t name,
                                    const void* payload, size_t size) {
  zxs_fxt_large_blob_t b;
  memset(&b, 0, sizeof(b));
  b.category = category;
  b.name = name;
  b.payload.data = payload;
  b.payload.size = size;
  return b;
}

// --- Golden vectors ------------------------------------------------------------------------------

static void test_golden_magic(void** state) {
  (void)state;
  static const uint8_t kBytes[8] = {0x10, 0x00, 0x04, 0x46, 0x78, 0x54, 0x16, 0x00};
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  assert_int_equal(zxs_fxt_write_magic(&buf), ZX_OK);
  assert_int_equal(buf.len, 8);
  assert_memory_equal(buf.data, kBytes, 8);
  assert_int_equal(word_at(&buf, 0), 0x0016547846040010ull);
  zxs_fxt_buf_destroy(&buf);
}

static void fill_pcs(uint64_t* pcs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    pcs[i] = 0x7f0000001000ull + 0x10 * i;
  }
}

static void test_golden_kernel_sample_64(void** state) {
  (void)state;
  uint64_t region[80];
  memset(region, 0, sizeof(region));
  uint64_t pcs[64];
  fill_pcs(pcs, 64);
  const uint64_t ts = 0x1122334455667788ull;
  assert_int_equal(zxs_fxt_encode_sample(region, ts, 1234, 5678, pcs, 64), 70);
  static const uint8_t kHeader[8] = {0x6f, 0x04, 0, 0, 0, 0, 0, 0};
  assert_memory_equal(region, kHeader, 8);
  const uint8_t* bytes = (const uint8_t*)region;
  assert_int_equal(load_le(bytes), 0x46Full);
  assert_int_equal(load_le(bytes + 8), 0);
  assert_int_equal(load_le(bytes + 16), ts);
  assert_int_equal(load_le(bytes + 24), 1234);
  assert_int_equal(load_le(bytes + 32), 5678);
  assert_int_equal(load_le(bytes + 40), 512);
  for (size_t i = 0; i < 64; i++) {
    assert_int_equal(load_le(bytes + 48 + 8 * i), pcs[i]);
  }
  assert_int_equal(load_le(bytes + 70 * 8), 0);

  // The writer produces the same bytes for the same record.
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  zxs_fxt_large_blob_t b = blob_of(zxs_fxt_str_index(0), zxs_fxt_str_index(0), pcs, sizeof(pcs));
  b.ticks = ts;
  b.thread.process_koid = 1234;
  b.thread.thread_koid = 5678;
  assert_int_equal(zxs_fxt_write_large_blob(&buf, &b, NULL, 0), ZX_OK);
  assert_int_equal(buf.len, 560);
  assert_memory_equal(buf.data, region, 560);
  zxs_fxt_buf_destroy(&buf);

  // A region with it stops at the following 0 word.
  zxs_fxt_region_iter_t it;
  zxs_fxt_record_t rec;
  zxs_fxt_region_iter_init(&it, region, sizeof(region));
  assert_true(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(rec.kind, ZXS_FXT_RECORD_LARGE_BLOB);
  assert_int_equal(rec.size, 560);
  assert_int_equal(rec.blob.ticks, ts);
  assert_int_equal(rec.blob.thread.index, 0);
  assert_int_equal(rec.blob.thread.process_koid, 1234);
  assert_int_equal(rec.blob.thread.thread_koid, 5678);
  assert_null(rec.blob.category.data);
  assert_null(rec.blob.name.data);
  assert_int_equal(rec.num_args, 0);
  assert_int_equal(rec.blob.payload.size, 512);
  for (size_t i = 0; i < 64; i++) {
    assert_int_equal(load_le((const uint8_t*)rec.blob.payload.data + 8 * i), pcs[i]);
  }
  assert_false(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(it.status, ZX_OK);
  assert_int_equal(it.offset, 560);

  assert_int_equal(zxs_fxt_encode_sample(region, ts, 1, 2, pcs, 0), 0);
  assert_int_equal(zxs_fxt_encode_sample(region, ts, 1, 2, pcs, 65), 0);
}

// Vector 3's record (indices refer to tables the vector does not define).
static void write_vector3(zxs_fxt_buf_t* buf) {
  zxs_fxt_large_blob_t b =
      blob_of(zxs_fxt_str_index(0x7AAA), zxs_fxt_str_index(0x7BBB), kPayload, PAYLOAD_LEN);
  b.ticks = 0xAABBCCDDEEFF0011ull;
  b.thread.index = 0xCC;
  zxs_fxt_arg_t arg = arg_of(ZXS_FXT_ARG_BOOL, zxs_fxt_str_index(0x2345));
  arg.b = true;
  assert_int_equal(zxs_fxt_write_large_blob(buf, &b, &arg, 1), ZX_OK);
}

static void check_payload_words(const zxs_fxt_buf_t* buf, size_t first) {
  assert_memory_equal(buf->data + first * 8, kPayload, 32);
  static const uint8_t kLast[8] = {'e', 'r', 0, 0, 0, 0, 0, 0};
  assert_memory_equal(buf->data + (first + 4) * 8, kLast, 8);
}

static void test_golden_large_blob_with_metadata(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  write_vector3(&buf);
  assert_int_equal(buf.len, 10 * 8);
  const uint64_t w0 = word_at(&buf, 0);
  assert_int_equal(w0 & 0xf, 15);
  assert_int_equal((w0 >> 4) & 0xffffffff, 10);
  assert_int_equal((w0 >> 36) & 0xf, 0);
  assert_int_equal((w0 >> 40) & 0xf, 0);
  assert_int_equal(w0, 0xAFull);
  assert_int_equal(word_at(&buf, 1), 0x00000CC17BBB7AAAull);
  assert_int_equal(word_at(&buf, 2), 0xAABBCCDDEEFF0011ull);
  assert_int_equal(word_at(&buf, 3), 0x0000000123450019ull);
  assert_int_equal(word_at(&buf, 4), 34);
  check_payload_words(&buf, 5);

  // Region decoding leaves the indices unresolved.
  zxs_fxt_region_iter_t it;
  zxs_fxt_record_t rec;
  zxs_fxt_region_iter_init(&it, buf.data, buf.len);
  assert_true(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(rec.kind, ZXS_FXT_RECORD_LARGE_BLOB);
  assert_int_equal(rec.blob.category.index, 0x7AAA);
  assert_null(rec.blob.category.data);
  assert_int_equal(rec.blob.name.index, 0x7BBB);
  assert_int_equal(rec.blob.thread.index, 0xCC);
  assert_int_equal(rec.blob.thread.process_koid, 0);
  assert_int_equal(rec.blob.ticks, 0xAABBCCDDEEFF0011ull);
  assert_int_equal(rec.num_args, 1);
  assert_int_equal(rec.args[0].type, ZXS_FXT_ARG_BOOL);
  assert_int_equal(rec.args[0].name.index, 0x2345);
  assert_true(rec.args[0].b);
  assert_int_equal(rec.blob.payload.size, 34);
  assert_memory_equal(rec.blob.payload.data, kPayload, 34);
  assert_false(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(it.status, ZX_OK);
  zxs_fxt_buf_destroy(&buf);
}

static void test_golden_large_blob_without_metadata(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  zxs_fxt_large_blob_t b =
      blob_of(zxs_fxt_str_index(0x7AAA), zxs_fxt_str_index(0x7BBB), kPayload, PAYLOAD_LEN);
  assert_int_equal(zxs_fxt_write_attachment(&buf, &b), ZX_OK);
  assert_int_equal(buf.len, 8 * 8);
  const uint64_t w0 = word_at(&buf, 0);
  assert_int_equal(w0, 0xF | (8ull << 4) | (1ull << 40));
  assert_true(w0 & (1ull << 40));
  assert_int_equal(word_at(&buf, 1), 0x7BBB7AAAull);
  assert_int_equal(word_at(&buf, 2), 34);
  check_payload_words(&buf, 3);
  zxs_fxt_buf_destroy(&buf);
}

// --- Round trips -------------------------------------------------------------------------------

// One argument of every type (and a second string by index), names inline and indexed.
static size_t make_all_args(zxs_fxt_arg_t* args) {
  static const uint8_t kBlob[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  size_t n = 0;
  args[n++] = arg_of(ZXS_FXT_ARG_NULL, zxs_fxt_str_inline("null", 4));
  args[n] = arg_of(ZXS_FXT_ARG_INT32, zxs_fxt_str_index(3));
  args[n++].i32 = -7;
  args[n] = arg_of(ZXS_FXT_ARG_UINT32, zxs_fxt_str_inline("u32", 3));
  args[n++].u32 = 0xdeadbeefu;
  args[n] = arg_of(ZXS_FXT_ARG_INT64, zxs_fxt_str_inline("i64", 3));
  args[n++].i64 = INT64_MIN + 5;
  args[n] = arg_of(ZXS_FXT_ARG_UINT64, zxs_fxt_str_inline("eight bytes!", 12));
  args[n++].u64 = UINT64_MAX - 1;
  args[n] = arg_of(ZXS_FXT_ARG_DOUBLE, zxs_fxt_str_inline("pi", 2));
  args[n++].f64 = -3.25;
  args[n] = arg_of(ZXS_FXT_ARG_STRING, zxs_fxt_str_inline("s", 1));
  args[n++].str = zxs_fxt_str_inline("hello, world", 12);
  args[n] = arg_of(ZXS_FXT_ARG_POINTER, zxs_fxt_str_inline("ptr", 3));
  args[n++].pointer = 0xffff800012345678ull;
  args[n] = arg_of(ZXS_FXT_ARG_KOID, zxs_fxt_str_inline("process", 7));
  args[n++].koid = 1001;
  args[n] = arg_of(ZXS_FXT_ARG_BOOL, zxs_fxt_str_inline("no", 2));
  args[n++].b = false;
  args[n] = arg_of(ZXS_FXT_ARG_BLOB, zxs_fxt_str_inline("blob", 4));
  args[n].blob.data = kBlob;
  args[n++].blob.size = sizeof(kBlob);
  args[n] = arg_of(ZXS_FXT_ARG_STRING, zxs_fxt_str_index(0x7fff));
  args[n++].str = zxs_fxt_str_index(1);
  args[n] = arg_of(ZXS_FXT_ARG_BLOB, zxs_fxt_str_index(0));
  args[n++].blob.size = 0;
  return n;
}

static void check_all_args(const zxs_fxt_record_t* rec) {
  assert_int_equal(rec->num_args, 13);
  const zxs_fxt_arg_t* a = rec->args;
  assert_int_equal(a[0].type, ZXS_FXT_ARG_NULL);
  assert_true(str_is(&a[0].name, "null"));
  assert_int_equal(a[1].type, ZXS_FXT_ARG_INT32);
  assert_int_equal(a[1].name.index, 3);
  assert_true(str_is(&a[1].name, "argname"));
  assert_int_equal(a[1].i32, -7);
  assert_int_equal(a[2].u32, 0xdeadbeefu);
  assert_true(a[3].i64 == INT64_MIN + 5);
  assert_true(str_is(&a[4].name, "eight bytes!"));
  assert_int_equal(a[4].u64, UINT64_MAX - 1);
  assert_true(a[5].f64 == -3.25);
  assert_int_equal(a[6].type, ZXS_FXT_ARG_STRING);
  assert_true(str_is(&a[6].str, "hello, world"));
  assert_int_equal(a[7].pointer, 0xffff800012345678ull);
  assert_int_equal(a[8].type, ZXS_FXT_ARG_KOID);
  assert_int_equal(a[8].koid, 1001);
  assert_int_equal(a[9].type, ZXS_FXT_ARG_BOOL);
  assert_false(a[9].b);
  assert_int_equal(a[10].blob.size, 10);
  assert_int_equal(((const uint8_t*)a[10].blob.data)[9], 9);
  assert_true(str_is(&a[11].name, "max index"));
  assert_int_equal(a[11].str.index, 1);
  assert_true(str_is(&a[11].str, "cpu"));
  assert_int_equal(a[12].type, ZXS_FXT_ARG_BLOB);
  assert_int_equal(a[12].blob.size, 0);
  assert_int_equal(a[12].name.len, 0);
}

// A file with every record kind; the writer statuses are checked once, through the sticky status.
static void build_file(zxs_fxt_buf_t* buf) {
  zxs_fxt_arg_t args[ZXS_FXT_MAX_ARGS];
  const size_t n = make_all_args(args);
  zxs_fxt_write_magic(buf);
  zxs_fxt_write_initialization(buf, 24000000);
  zxs_fxt_write_provider_info(buf, 7, "zxsampler", 9);
  zxs_fxt_write_provider_info(buf, 8, NULL, 0);
  zxs_fxt_write_provider_section(buf, 7);
  zxs_fxt_write_string(buf, 1, "cpu", 3);
  zxs_fxt_write_string(buf, 2, "worker thread", 13);
  zxs_fxt_write_string(buf, 3, "argname", 7);
  zxs_fxt_write_string(buf, 4, NULL, 0);
  zxs_fxt_write_string(buf, 0x7fff, "max index", 9);
  zxs_fxt_write_thread(buf, 1, 100, 101);
  zxs_fxt_write_thread(buf, 255, 200, 201);

  zxs_fxt_kernel_object_t obj = {ZX_OBJ_TYPE_PROCESS, 100, zxs_fxt_str_inline("app", 3)};
  zxs_fxt_write_kernel_object(buf, &obj, NULL, 0);
  zxs_fxt_arg_t process = arg_of(ZXS_FXT_ARG_KOID, zxs_fxt_str_inline("process", 7));
  process.koid = 100;
  zxs_fxt_kernel_object_t thread = {ZX_OBJ_TYPE_THREAD, 101, zxs_fxt_str_index(2)};
  zxs_fxt_write_kernel_object(buf, &thread, &process, 1);
  zxs_fxt_kernel_object_t all = {ZX_OBJ_TYPE_THREAD, 102, zxs_fxt_str_index(0)};
  zxs_fxt_write_kernel_object(buf, &all, args, n);

  zxs_fxt_large_blob_t b =
      blob_of(zxs_fxt_str_index(1), zxs_fxt_str_inline("sample", 6), kPayload, PAYLOAD_LEN);
  b.ticks = 42;
  b.thread.index = 255;
  zxs_fxt_write_large_blob(buf, &b, args, n);
  const uint64_t pc = 0x401000;
  b = blob_of(zxs_fxt_str_index(0), zxs_fxt_str_index(0), &pc, sizeof(pc));
  b.ticks = 43;
  b.thread.process_koid = 300;
  b.thread.thread_koid = 301;
  zxs_fxt_write_large_blob(buf, &b, NULL, 0);
  b = blob_of(zxs_fxt_str_inline("cat", 3), zxs_fxt_str_index(3), kPayload, PAYLOAD_LEN);
  zxs_fxt_write_attachment(buf, &b);
  b = blob_of(zxs_fxt_str_index(0), zxs_fxt_str_index(0), NULL, 0);
  zxs_fxt_write_attachment(buf, &b);

  // Types the reader skips by size: an event (4) and a large record of large type 1.
  static const uint64_t kEvent[3] = {0x4 | (3 << 4), 1, 2};
  append_words(buf, kEvent, 3);
  static const uint64_t kLarge[2] = {0xF | (2 << 4) | (1ull << 36), 0};
  append_words(buf, kLarge, 2);

  // A redefined string: later references see the new value.
  zxs_fxt_write_string(buf, 1, "cpu2", 4);
  b = blob_of(zxs_fxt_str_index(1), zxs_fxt_str_index(0), NULL, 0);
  b.thread.index = 1;
  zxs_fxt_write_large_blob(buf, &b, NULL, 0);
  assert_int_equal(buf->status, ZX_OK);
}

static const zxs_fxt_record_kind_t kFileKinds[] = {
    ZXS_FXT_RECORD_MAGIC,
    ZXS_FXT_RECORD_INITIALIZATION,
    ZXS_FXT_RECORD_PROVIDER_INFO,
    ZXS_FXT_RECORD_PROVIDER_INFO,
    ZXS_FXT_RECORD_PROVIDER_SECTION,
    ZXS_FXT_RECORD_STRING,
    ZXS_FXT_RECORD_STRING,
    ZXS_FXT_RECORD_STRING,
    ZXS_FXT_RECORD_STRING,
    ZXS_FXT_RECORD_STRING,
    ZXS_FXT_RECORD_THREAD,
    ZXS_FXT_RECORD_THREAD,
    ZXS_FXT_RECORD_KERNEL_OBJECT,
    ZXS_FXT_RECORD_KERNEL_OBJECT,
    ZXS_FXT_RECORD_KERNEL_OBJECT,
    ZXS_FXT_RECORD_LARGE_BLOB,
    ZXS_FXT_RECORD_LARGE_BLOB,
    ZXS_FXT_RECORD_ATTACHMENT,
    ZXS_FXT_RECORD_ATTACHMENT,
    ZXS_FXT_RECORD_OTHER,
    ZXS_FXT_RECORD_OTHER,
    ZXS_FXT_RECORD_STRING,
    ZXS_FXT_RECORD_LARGE_BLOB,
};
#define FILE_RECORDS (sizeof(kFileKinds) / sizeof(kFileKinds[0]))

// Writes a decoded record again; the bytes must come out the same.
static void reencode(const zxs_fxt_record_t* rec, zxs_fxt_buf_t* out) {
  switch (rec->kind) {
    case ZXS_FXT_RECORD_MAGIC:
      zxs_fxt_write_magic(out);
      break;
    case ZXS_FXT_RECORD_PROVIDER_INFO:
      zxs_fxt_write_provider_info(out, rec->provider.id, rec->provider.name.data,
                                  rec->provider.name.len);
      break;
    case ZXS_FXT_RECORD_PROVIDER_SECTION:
      zxs_fxt_write_provider_section(out, rec->provider.id);
      break;
    case ZXS_FXT_RECORD_INITIALIZATION:
      zxs_fxt_write_initialization(out, rec->ticks_per_second);
      break;
    case ZXS_FXT_RECORD_STRING:
      zxs_fxt_write_string(out, rec->string.index, rec->string.data, rec->string.len);
      break;
    case ZXS_FXT_RECORD_THREAD:
      zxs_fxt_write_thread(out, rec->thread.index, rec->thread.process_koid,
                           rec->thread.thread_koid);
      break;
    case ZXS_FXT_RECORD_KERNEL_OBJECT:
      zxs_fxt_write_kernel_object(out, &rec->kernel_object, rec->args, rec->num_args);
      break;
    case ZXS_FXT_RECORD_LARGE_BLOB:
      zxs_fxt_write_large_blob(out, &rec->blob, rec->args, rec->num_args);
      break;
    case ZXS_FXT_RECORD_ATTACHMENT:
      zxs_fxt_write_attachment(out, &rec->blob);
      break;
    case ZXS_FXT_RECORD_EVENT:
      zxs_fxt_write_instant_event(out, &rec->event, rec->args, rec->num_args);
      break;
    case ZXS_FXT_RECORD_OTHER:
      zxs_fxt_write_raw(out, rec->data, rec->size);
      break;
  }
}

static void test_round_trip_file(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  build_file(&buf);

  zxs_fxt_reader_t r;
  assert_int_equal(zxs_fxt_reader_init(&r, buf.data, buf.len), ZX_OK);
  zxs_fxt_buf_t again;
  zxs_fxt_buf_init(&again);
  zxs_fxt_record_t rec;
  size_t i = 0;
  size_t offset = 0;
  while (zxs_fxt_reader_next(&r, &rec)) {
    assert_true(i < FILE_RECORDS);
    assert_int_equal(rec.kind, kFileKinds[i]);
    assert_int_equal(rec.offset, offset);
    assert_ptr_equal(rec.data, buf.data + offset);
    offset += rec.size;
    reencode(&rec, &again);
    switch (i) {
      case 1:
        assert_int_equal(rec.ticks_per_second, 24000000);
        assert_int_equal(r.ticks_per_second, 24000000);
        break;
      case 2:
        assert_int_equal(rec.provider.id, 7);
        assert_true(str_is(&rec.provider.name, "zxsampler"));
        break;
      case 3:
        assert_int_equal(rec.provider.id, 8);
        assert_null(rec.provider.name.data);
        break;
      case 4:
        assert_int_equal(rec.provider.id, 7);
        break;
      case 6:
        assert_int_equal(rec.string.index, 2);
        assert_true(str_is(&rec.string, "worker thread"));
        break;
      case 8:
        assert_int_equal(rec.string.index, 4);
        assert_int_equal(rec.string.len, 0);
        break;
      case 11:
        assert_int_equal(rec.thread.index, 255);
        assert_int_equal(rec.thread.process_koid, 200);
        assert_int_equal(rec.thread.thread_koid, 201);
        break;
      case 12:
        assert_int_equal(rec.kernel_object.obj_type, ZX_OBJ_TYPE_PROCESS);
        assert_int_equal(rec.kernel_object.koid, 100);
        assert_true(str_is(&rec.kernel_object.name, "app"));
        assert_int_equal(rec.num_args, 0);
        break;
      case 13:
        assert_int_equal(rec.kernel_object.obj_type, ZX_OBJ_TYPE_THREAD);
        assert_int_equal(rec.kernel_object.name.index, 2);
        assert_true(str_is(&rec.kernel_object.name, "worker thread"));
        assert_int_equal(rec.num_args, 1);
        assert_true(str_is(&rec.args[0].name, "process"));
        assert_int_equal(rec.args[0].koid, 100);
        break;
      case 14:
        assert_int_equal(rec.kernel_object.koid, 102);
        check_all_args(&rec);
        break;
      case 15:
        assert_true(str_is(&rec.blob.category, "cpu"));
        assert_true(str_is(&rec.blob.name, "sample"));
        assert_int_equal(rec.blob.ticks, 42);
        assert_int_equal(rec.blob.thread.index, 255);
        assert_int_equal(rec.blob.thread.process_koid, 200);
        assert_int_equal(rec.blob.thread.thread_koid, 201);
        check_all_args(&rec);
        assert_int_equal(rec.blob.payload.size, PAYLOAD_LEN);
        assert_memory_equal(rec.blob.payload.data, kPayload, PAYLOAD_LEN);
        break;
      case 16:
        assert_int_equal(rec.blob.thread.process_koid, 300);
        assert_int_equal(rec.blob.payload.size, 8);
        assert_int_equal(load_le(rec.blob.payload.data), 0x401000);
        break;
      case 17:
        assert_true(str_is(&rec.blob.category, "cat"));
        assert_true(str_is(&rec.blob.name, "argname"));
        assert_memory_equal(rec.blob.payload.data, kPayload, PAYLOAD_LEN);
        break;
      case 18:
        assert_int_equal(rec.blob.payload.size, 0);
        break;
      case 19:
        assert_int_equal(rec.type, 4);
        assert_int_equal(rec.size, 24);
        break;
      case 20:
        assert_int_equal(rec.type, 15);
        assert_int_equal(rec.size, 16);
        break;
      case 22:
        assert_true(str_is(&rec.blob.category, "cpu2"));
        assert_int_equal(rec.blob.thread.index, 1);
        assert_int_equal(rec.blob.thread.thread_koid, 101);
        assert_null(rec.blob.payload.data);
        assert_int_equal(rec.blob.payload.size, 0);
        break;
      default:
        break;
    }
    i++;
  }
  assert_int_equal(r.status, ZX_OK);
  assert_string_equal(r.error.message, "");
  assert_int_equal(i, FILE_RECORDS);
  assert_int_equal(offset, buf.len);
  assert_false(zxs_fxt_reader_next(&r, &rec));  // stays at the end

  assert_int_equal(again.status, ZX_OK);
  assert_int_equal(again.len, buf.len);
  assert_memory_equal(again.data, buf.data, buf.len);
  zxs_fxt_buf_destroy(&again);
  zxs_fxt_reader_destroy(&r);
  zxs_fxt_buf_destroy(&buf);
}

static void test_skips_large_record_over_4095_words(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  zxs_fxt_write_magic(&buf);
  const size_t words = 5000;  // needs the 32-bit size field
  uint64_t* big = calloc(words, 8);
  assert_non_null(big);
  big[0] = 0xF | ((uint64_t)words << 4) | (3ull << 36);
  append_words(&buf, big, words);
  free(big);
  zxs_fxt_write_provider_section(&buf, 9);
  zxs_fxt_reader_t r;
  zxs_fxt_record_t rec;
  assert_int_equal(zxs_fxt_reader_init(&r, buf.data, buf.len), ZX_OK);
  assert_true(zxs_fxt_reader_next(&r, &rec));
  assert_true(zxs_fxt_reader_next(&r, &rec));
  assert_int_equal(rec.kind, ZXS_FXT_RECORD_OTHER);
  assert_int_equal(rec.size, words * 8);
  assert_true(zxs_fxt_reader_next(&r, &rec));
  assert_int_equal(rec.kind, ZXS_FXT_RECORD_PROVIDER_SECTION);
  assert_int_equal(rec.provider.id, 9);
  assert_false(zxs_fxt_reader_next(&r, &rec));
  assert_int_equal(r.status, ZX_OK);
  zxs_fxt_reader_destroy(&r);
  zxs_fxt_buf_destroy(&buf);
}

// --- Writer argument checks ----------------------------------------------------------------------

static void expect_invalid(zx_status_t status, zxs_fxt_buf_t* buf) {
  assert_int_equal(status, ZX_ERR_INVALID_ARGS);
  assert_int_equal(buf->len, 0);  // nothing partial
  assert_int_equal(buf->status, ZX_ERR_INVALID_ARGS);
  zxs_fxt_buf_reset(buf);
}

static void test_writer_invalid_args(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  static char big[40000];
  memset(big, 'x', sizeof(big));
  expect_invalid(zxs_fxt_write_initialization(&buf, 0), &buf);
  expect_invalid(zxs_fxt_write_provider_info(&buf, 1, big, 256), &buf);
  expect_invalid(zxs_fxt_write_string(&buf, 0, "a", 1), &buf);
  expect_invalid(zxs_fxt_write_string(&buf, 0x8000, "a", 1), &buf);
  expect_invalid(zxs_fxt_write_string(&buf, 1, NULL, 1), &buf);
  expect_invalid(zxs_fxt_write_string(&buf, 1, big, 0x7fff), &buf);  // over 4095 words
  assert_int_equal(zxs_fxt_write_string(&buf, 1, big, 4094 * 8), ZX_OK);
  zxs_fxt_buf_reset(&buf);
  expect_invalid(zxs_fxt_write_thread(&buf, 0, 1, 2), &buf);
  expect_invalid(zxs_fxt_write_thread(&buf, 256, 1, 2), &buf);

  zxs_fxt_kernel_object_t obj = {256, 1, zxs_fxt_str_index(0)};
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, NULL, 0), &buf);
  expect_invalid(zxs_fxt_write_kernel_object(&buf, NULL, NULL, 0), &buf);
  obj.obj_type = ZX_OBJ_TYPE_PROCESS;
  obj.name = zxs_fxt_str_index(0x8000);
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, NULL, 0), &buf);
  obj.name = zxs_fxt_str_inline(big, 0x8000);
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, NULL, 0), &buf);
  obj.name = zxs_fxt_str_inline(big, 0x7fff);  // a valid ref, but the record is too big
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, NULL, 0), &buf);
  obj.name = zxs_fxt_str_inline(NULL, 3);
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, NULL, 0), &buf);
  obj.name = zxs_fxt_str_index(0);
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, NULL, 1), &buf);

  zxs_fxt_arg_t args[16];
  for (size_t i = 0; i < 16; i++) {
    args[i] = arg_of(ZXS_FXT_ARG_NULL, zxs_fxt_str_index(0));
  }
  assert_int_equal(zxs_fxt_write_kernel_object(&buf, &obj, args, 15), ZX_OK);
  zxs_fxt_buf_reset(&buf);
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, args, 16), &buf);
  args[0].type = (zxs_fxt_arg_type_t)11;
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, args, 1), &buf);
  args[0] = arg_of(ZXS_FXT_ARG_BLOB, zxs_fxt_str_index(0));
  args[0].blob.data = big;
  args[0].blob.size = 4095 * 8;  // the argument is over its 12-bit size field
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, args, 1), &buf);
  args[0].blob.data = NULL;
  args[0].blob.size = 1;
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, args, 1), &buf);
  args[0] = arg_of(ZXS_FXT_ARG_NULL, zxs_fxt_str_index(0x8000));
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, args, 1), &buf);
  args[0] = arg_of(ZXS_FXT_ARG_STRING, zxs_fxt_str_index(0));
  args[0].str = zxs_fxt_str_index(0x9000);
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, args, 1), &buf);
  args[0] = arg_of(ZXS_FXT_ARG_STRING, zxs_fxt_str_inline(big, 8000));  // 1001 words
  args[1] = args[0];  // each argument fits, both do not
  args[2] = args[0];
  args[3] = args[0];
  args[4] = args[0];
  expect_invalid(zxs_fxt_write_kernel_object(&buf, &obj, args, 5), &buf);
  assert_int_equal(zxs_fxt_write_kernel_object(&buf, &obj, args, 4), ZX_OK);
  zxs_fxt_buf_reset(&buf);

  zxs_fxt_large_blob_t b = blob_of(zxs_fxt_str_index(0), zxs_fxt_str_index(0), NULL, 1);
  expect_invalid(zxs_fxt_write_large_blob(&buf, &b, NULL, 0), &buf);
  expect_invalid(zxs_fxt_write_attachment(&buf, &b), &buf);
  expect_invalid(zxs_fxt_write_large_blob(&buf, NULL, NULL, 0), &buf);
  expect_invalid(zxs_fxt_write_attachment(&buf, NULL), &buf);
  b = blob_of(zxs_fxt_str_index(0), zxs_fxt_str_index(0), NULL, 0);
  b.thread.index = 256;
  expect_invalid(zxs_fxt_write_large_blob(&buf, &b, NULL, 0), &buf);
  b.thread.index = 0;
  expect_invalid(zxs_fxt_write_large_blob(&buf, &b, args, 16), &buf);
  b.category = zxs_fxt_str_index(0x8000);
  expect_invalid(zxs_fxt_write_attachment(&buf, &b), &buf);
  b.category = zxs_fxt_str_index(0);
  b.name = zxs_fxt_str_inline(NULL, 1);
  expect_invalid(zxs_fxt_write_large_blob(&buf, &b, NULL, 0), &buf);
  // Payloads over the 32-bit record size (checked before anything is read).
  if (SIZE_MAX > 0xffffffffu) {
    b = blob_of(zxs_fxt_str_index(0), zxs_fxt_str_index(0), big,
                (size_t)((uint64_t)0xfffffffc * 8));
    expect_invalid(zxs_fxt_write_large_blob(&buf, &b, NULL, 0), &buf);
    b.payload.size = (size_t)((uint64_t)0xfffffffe * 8);
    expect_invalid(zxs_fxt_write_attachment(&buf, &b), &buf);
  }
  expect_invalid(zxs_fxt_write_raw(&buf, big, 7), &buf);
  expect_invalid(zxs_fxt_write_raw(&buf, NULL, 8), &buf);
  zxs_fxt_buf_destroy(&buf);
}

static void test_writer_sticky_status(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  assert_int_equal(zxs_fxt_write_magic(&buf), ZX_OK);
  // A size no allocation can serve fails before reading the source.
  static const uint8_t dummy[8];
  assert_int_equal(zxs_fxt_write_raw(&buf, dummy, SIZE_MAX - 7), ZX_ERR_NO_MEMORY);
  assert_int_equal(buf.status, ZX_ERR_NO_MEMORY);
  assert_int_equal(zxs_fxt_write_magic(&buf), ZX_ERR_NO_MEMORY);
  assert_int_equal(zxs_fxt_write_initialization(&buf, 0), ZX_ERR_NO_MEMORY);  // first one sticks
  assert_int_equal(buf.len, 8);
  zxs_fxt_buf_reset(&buf);
  assert_int_equal(buf.len, 0);
  assert_int_equal(zxs_fxt_write_magic(&buf), ZX_OK);
  // Growth keeps earlier records.
  for (uint32_t i = 1; i <= 2000; i++) {
    assert_int_equal(zxs_fxt_write_thread(&buf, 1 + i % 255, i, i + 1), ZX_OK);
  }
  assert_int_equal(buf.len, 8 + 2000 * 24);
  assert_int_equal(word_at(&buf, 0), ZXS_FXT_MAGIC);
  assert_int_equal(word_at(&buf, 1 + 3 * 1999 + 2), 2001);
  zxs_fxt_buf_destroy(&buf);
  assert_null(buf.data);
  assert_int_equal(buf.len, 0);
}

// --- Regions -------------------------------------------------------------------------------------

// Three kernel samples of 1, 5 and 64 PCs; returns the words used.
static size_t fill_region(uint64_t* region, size_t capacity_words) {
  uint64_t pcs[64];
  fill_pcs(pcs, 64);
  memset(region, 0, capacity_words * 8);
  size_t used = 0;
  used += zxs_fxt_encode_sample(region + used, 10, 1, 2, pcs, 1);
  used += zxs_fxt_encode_sample(region + used, 20, 1, 3, pcs, 5);
  used += zxs_fxt_encode_sample(region + used, 30, 4, 5, pcs, 64);
  assert_int_equal(used, 7 + 11 + 70);
  return used;
}

static void test_region_stops_at_zero_header(void** state) {
  (void)state;
  uint64_t region[128];
  fill_region(region, 128);
  zxs_fxt_region_iter_t it;
  zxs_fxt_record_t rec;
  zxs_fxt_region_iter_init(&it, region, sizeof(region));
  static const uint64_t kTicks[3] = {10, 20, 30};
  static const size_t kFrames[3] = {1, 5, 64};
  for (size_t i = 0; i < 3; i++) {
    assert_true(zxs_fxt_region_next(&it, &rec));
    assert_int_equal(rec.kind, ZXS_FXT_RECORD_LARGE_BLOB);
    assert_int_equal(rec.blob.ticks, kTicks[i]);
    assert_int_equal(rec.blob.payload.size, 8 * kFrames[i]);
  }
  assert_false(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(it.status, ZX_OK);
  assert_int_equal(it.offset, 88 * 8);
  assert_false(zxs_fxt_region_next(&it, &rec));

  // A zero word ends the data even with records after it (never read).
  region[7] = 0;
  zxs_fxt_region_iter_init(&it, region, sizeof(region));
  assert_true(zxs_fxt_region_next(&it, &rec));
  assert_false(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(it.status, ZX_OK);
  assert_int_equal(it.offset, 56);

  // Empty regions.
  zxs_fxt_region_iter_init(&it, NULL, 0);
  assert_false(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(it.status, ZX_OK);
  zxs_fxt_region_iter_init(&it, region + 100, 8);
  assert_false(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(it.status, ZX_OK);
}

static void test_region_malformed(void** state) {
  (void)state;
  uint64_t region[128];
  zxs_fxt_region_iter_t it;
  zxs_fxt_record_t rec;

  fill_region(region, 128);
  region[7] = 0xF;  // second record: 0 words
  zxs_fxt_region_iter_init(&it, region, sizeof(region));
  assert_true(zxs_fxt_region_next(&it, &rec));
  assert_false(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(it.status, ZX_ERR_IO_DATA_INTEGRITY);
  assert_int_equal(it.error.offset, 56);
  assert_non_null(strstr(it.error.message, "record at byte 56"));
  assert_non_null(strstr(it.error.message, "0 words"));
  assert_false(zxs_fxt_region_next(&it, &rec));  // stays stopped

  fill_region(region, 128);
  region[7] = 0xF | (129ull << 4);  // past the end of the buffer
  zxs_fxt_region_iter_init(&it, region, sizeof(region));
  assert_true(zxs_fxt_region_next(&it, &rec));
  assert_false(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(it.status, ZX_ERR_IO_DATA_INTEGRITY);
  assert_non_null(strstr(it.error.message, "past the end"));

  fill_region(region, 128);
  region[5] = 9 * 8;  // payload bigger than the record
  zxs_fxt_region_iter_init(&it, region, sizeof(region));
  assert_false(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(it.status, ZX_ERR_IO_DATA_INTEGRITY);
  assert_int_equal(it.error.offset, 0);
  assert_non_null(strstr(it.error.message, "blob of 72 bytes past the end of the record"));

  // A buffer ending inside a header word.
  fill_region(region, 128);
  zxs_fxt_region_iter_init(&it, region, 7 * 8 + 3);
  assert_true(zxs_fxt_region_next(&it, &rec));
  assert_false(zxs_fxt_region_next(&it, &rec));
  assert_int_equal(it.status, ZX_ERR_IO_DATA_INTEGRITY);
  assert_non_null(strstr(it.error.message, "inside a header word"));
}

// Copies `len` bytes to a block of exactly that size so ASan sees any read past it.
static uint8_t* exact_copy(const uint8_t* data, size_t len) {
  uint8_t* copy = malloc(len == 0 ? 1 : len);
  assert_non_null(copy);
  memcpy(copy, data, len);
  return copy;
}

static void test_region_truncated_everywhere(void** state) {
  (void)state;
  uint64_t region[128];
  const size_t used = fill_region(region, 128) * 8;
  static const size_t kEnds[3] = {7 * 8, 18 * 8, 88 * 8};
  for (size_t cut = 0; cut <= used; cut++) {
    uint8_t* copy = exact_copy((const uint8_t*)region, cut);
    zxs_fxt_region_iter_t it;
    zxs_fxt_record_t rec;
    zxs_fxt_region_iter_init(&it, copy, cut);
    size_t records = 0;
    while (zxs_fxt_region_next(&it, &rec)) {
      records++;
    }
    size_t complete = 0;
    bool boundary = cut == 0;
    for (size_t i = 0; i < 3; i++) {
      complete += kEnds[i] <= cut;
      boundary = boundary || kEnds[i] == cut;
    }
    assert_int_equal(records, complete);
    assert_int_equal(it.status, boundary ? ZX_OK : ZX_ERR_IO_DATA_INTEGRITY);
    free(copy);
  }
}

// --- Trace files: malformed input
// ------------------------------------------------------------------

// Reads a whole input; returns the records read and leaves the reader's outcome in *out.
static size_t read_all(const uint8_t* data, size_t len, zxs_fxt_reader_t* out) {
  assert_int_equal(zxs_fxt_reader_init(out, data, len), ZX_OK);
  zxs_fxt_record_t rec;
  size_t n = 0;
  while (zxs_fxt_reader_next(out, &rec)) {
    n++;
  }
  if (out->status != ZX_OK) {
    assert_int_equal(out->status, ZX_ERR_IO_DATA_INTEGRITY);
    assert_non_null(strstr(out->error.message, "record at byte"));
  }
  zxs_fxt_reader_destroy(out);
  return n;
}

// Expects the magic record, then one record failing at byte 8 with `needle` in the message.
static void expect_bad_record(const uint64_t* words, size_t n, const char* needle) {
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  zxs_fxt_write_magic(&buf);
  append_words(&buf, words, n);
  zxs_fxt_reader_t r;
  assert_int_equal(read_all(buf.data, buf.len, &r), 1);
  assert_int_equal(r.status, ZX_ERR_IO_DATA_INTEGRITY);
  zxs_fxt_buf_destroy(&buf);
  assert_int_equal(r.error.offset, 8);
  if (strstr(r.error.message, needle) == NULL) {
    fail_msg("message \"%s\" lacks \"%s\"", r.error.message, needle);
  }
}

static void test_reader_malformed(void** state) {
  (void)state;
  zxs_fxt_reader_t r;
  static const uint8_t kNotMagic[8] = {0x11, 0, 4, 0x46, 0x78, 0x54, 0x16, 0};
  assert_int_equal(read_all(kNotMagic, 8, &r), 0);
  assert_int_equal(r.status, ZX_ERR_IO_DATA_INTEGRITY);
  assert_non_null(strstr(r.error.message, "magic"));
  assert_int_equal(read_all(NULL, 0, &r), 0);
  assert_int_equal(r.status, ZX_ERR_IO_DATA_INTEGRITY);

  assert_int_equal(zxs_fxt_reader_init(NULL, kNotMagic, 8), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_fxt_reader_init(&r, NULL, 8), ZX_ERR_INVALID_ARGS);
  zxs_fxt_record_t rec;
  assert_false(zxs_fxt_reader_next(&r, &rec));
  zxs_fxt_reader_destroy(&r);

  const uint64_t zero[2] = {0, 0};
  expect_bad_record(zero, 2, "zero header");
  const uint64_t size0[1] = {0x2 | (3ull << 16)};
  expect_bad_record(size0, 1, "size is 0 words");
  const uint64_t past[2] = {0x3 | (3ull << 4) | (1ull << 16), 1};
  expect_bad_record(past, 2, "past the end of the input");
  const uint64_t long_string[2] = {0x2 | (2ull << 4) | (1ull << 16) | (9ull << 32), 0};
  expect_bad_record(long_string, 2, "string of 9 bytes past the end of the record");
  const uint64_t string0[2] = {0x2 | (2ull << 4) | (3ull << 32), 0};
  expect_bad_record(string0, 2, "index 0");
  const uint64_t thread0[3] = {0x3 | (3ull << 4), 1, 2};
  expect_bad_record(thread0, 3, "index 0");
  const uint64_t short_thread[2] = {0x3 | (2ull << 4) | (5ull << 16), 1};
  expect_bad_record(short_thread, 2, "thread koid past the end");
  const uint64_t init0[2] = {0x1 | (2ull << 4), 0};
  expect_bad_record(init0, 2, "0 ticks per second");
  const uint64_t provider[2] = {0x0 | (2ull << 4) | (1ull << 16) | (9ull << 52), 0};
  expect_bad_record(provider, 2, "provider name of 9 bytes");

  // Kernel objects: an inline name longer than the record, undefined name, bad arguments.
  const uint64_t long_name[3] = {0x7 | (3ull << 4) | (1ull << 16) | (0x8009ull << 24), 1, 0};
  expect_bad_record(long_name, 3, "name of 9 bytes past the end of the record");
  const uint64_t undefined[2] = {0x7 | (2ull << 4) | (1ull << 16) | (5ull << 24), 1};
  expect_bad_record(undefined, 2, "string index 5 never defined");
  const uint64_t arg0[3] = {0x7 | (3ull << 4) | (1ull << 40), 1, 0x3};
  expect_bad_record(arg0, 3, "argument 0: size is 0 words");
  const uint64_t arg_past[4] = {0x7 | (4ull << 4) | (1ull << 40), 1, 0x3 | (3ull << 4), 5};
  expect_bad_record(arg_past, 4, "argument 0: size of 3 words past the end of the record");
  const uint64_t arg_short[3] = {0x7 | (3ull << 4) | (1ull << 40), 1, 0x3 | (1ull << 4)};
  expect_bad_record(arg_short, 3, "argument 0: value past the end of the argument");
  const uint64_t arg_missing[3] = {0x7 | (3ull << 4) | (2ull << 40), 1, 0x9 | (1ull << 4)};
  expect_bad_record(arg_missing, 3, "argument 1: header past the end of the record");
  const uint64_t arg_name[4] = {0x7 | (4ull << 4) | (1ull << 40), 1,
                                0x0 | (2ull << 4) | (0x8010ull << 16), 0};
  expect_bad_record(arg_name, 4, "argument 0: name of 16 bytes past the end of the argument");
  const uint64_t arg_str[5] = {0x7 | (5ull << 4) | (1ull << 40), 1,
                               0x6 | (2ull << 4) | (0x8009ull << 32), 0, 0};
  expect_bad_record(arg_str, 5, "argument 0: value of 9 bytes past the end of the argument");
  const uint64_t arg_blob[4] = {0x7 | (4ull << 4) | (1ull << 40), 1,
                                0xA | (2ull << 4) | (9ull << 32), 0};
  expect_bad_record(arg_blob, 4, "argument 0: blob of 9 bytes past the end of the argument");
  const uint64_t arg_type[3] = {0x7 | (3ull << 4) | (1ull << 40), 1, 0xB | (1ull << 4)};
  expect_bad_record(arg_type, 3, "unknown argument type 11");

  // Large blobs: undefined thread, blob size past the record, truncated metadata.
  const uint64_t no_thread[5] = {0xF | (5ull << 4), 7ull << 36, 1, 0, 0};
  expect_bad_record(no_thread, 5, "thread index 7 never defined");
  const uint64_t big_blob[7] = {0xF | (7ull << 4), 0, 1, 2, 3, 9, 0};
  expect_bad_record(big_blob, 7, "blob of 9 bytes past the end of the record");
  const uint64_t huge_blob[7] = {0xF | (7ull << 4), 0, 1, 2, 3, UINT64_MAX, 0};
  expect_bad_record(huge_blob, 7, "blob of 18446744073709551615 bytes");
  const uint64_t no_size[5] = {0xF | (5ull << 4), 0, 1, 2, 3};
  expect_bad_record(no_size, 5, "blob size past the end of the record");
  const uint64_t no_ts[2] = {0xF | (2ull << 4), 0};
  expect_bad_record(no_ts, 2, "timestamp past the end");
  const uint64_t attach[3] = {0xF | (3ull << 4) | (1ull << 40), 0x8020, 0};
  expect_bad_record(attach, 3, "category of 32 bytes past the end of the record");
}

static void test_reader_truncated_everywhere(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  build_file(&buf);
  size_t ends[FILE_RECORDS];
  zxs_fxt_reader_t r;
  zxs_fxt_record_t rec;
  assert_int_equal(zxs_fxt_reader_init(&r, buf.data, buf.len), ZX_OK);
  for (size_t i = 0; i < FILE_RECORDS; i++) {
    assert_true(zxs_fxt_reader_next(&r, &rec));
    ends[i] = rec.offset + rec.size;
  }
  zxs_fxt_reader_destroy(&r);

  for (size_t cut = 0; cut <= buf.len; cut++) {
    uint8_t* copy = exact_copy(buf.data, cut);
    const size_t records = read_all(copy, cut, &r);
    size_t complete = 0;
    bool boundary = false;
    for (size_t i = 0; i < FILE_RECORDS; i++) {
      complete += ends[i] <= cut;
      boundary = boundary || ends[i] == cut;
    }
    assert_int_equal(records, complete);
    assert_int_equal(r.status, boundary ? ZX_OK : ZX_ERR_IO_DATA_INTEGRITY);
    free(copy);
  }
  zxs_fxt_buf_destroy(&buf);
}

// Rewrites the size field of the record at `offset`.
static void set_size(uint8_t* data, size_t offset, uint64_t words) {
  uint64_t h = load_le(data + offset);
  if ((h & 0xf) == 15) {
    h = (h & ~(0xffffffffull << 4)) | (words << 4);
  } else {
    h = (h & ~(0xfffull << 4)) | (words << 4);
  }
  for (int j = 0; j < 8; j++) {
    data[offset + j] = (uint8_t)(h >> (8 * j));
  }
}

static void test_reader_flipped_sizes(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  build_file(&buf);
  size_t offsets[FILE_RECORDS];
  size_t words[FILE_RECORDS];
  zxs_fxt_reader_t r;
  zxs_fxt_record_t rec;
  assert_int_equal(zxs_fxt_reader_init(&r, buf.data, buf.len), ZX_OK);
  for (size_t i = 0; i < FILE_RECORDS; i++) {
    assert_true(zxs_fxt_reader_next(&r, &rec));
    offsets[i] = rec.offset;
    words[i] = rec.size / 8;
  }
  zxs_fxt_reader_destroy(&r);

  for (size_t i = 0; i < FILE_RECORDS; i++) {
    const bool large = (load_le(buf.data + offsets[i]) & 0xf) == 15;
    const uint64_t sizes[3] = {0, large ? 0xffffffffu : 0xfffu, words[i] - 1};
    for (size_t k = 0; k < 3; k++) {
      // A shrunk record of a skipped type is still well-formed.
      if (k == 2 && (kFileKinds[i] == ZXS_FXT_RECORD_OTHER || words[i] == 1)) {
        continue;
      }
      uint8_t* copy = exact_copy(buf.data, buf.len);
      set_size(copy, offsets[i], sizes[k]);
      const size_t records = read_all(copy, buf.len, &r);
      assert_int_equal(r.status, ZX_ERR_IO_DATA_INTEGRITY);
      assert_int_equal(records, i);
      assert_int_equal(r.error.offset, offsets[i]);
      free(copy);
    }
  }
  zxs_fxt_buf_destroy(&buf);
}

// Random byte changes: the reader ends cleanly or with an error, never reads out of bounds.
static void test_reader_mutations(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  build_file(&buf);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int iter = 0; iter < 3000; iter++) {
    uint8_t* copy = exact_copy(buf.data, buf.len);
    const int changes = 1 + iter % 4;
    for (int c = 0; c < changes; c++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      copy[(x >> 8) % buf.len] ^= (uint8_t)(1u << (x & 7));
    }
    zxs_fxt_reader_t r;
    read_all(copy, buf.len, &r);
    zxs_fxt_region_iter_t it;
    zxs_fxt_record_t rec;
    zxs_fxt_region_iter_init(&it, copy, buf.len);
    while (zxs_fxt_region_next(&it, &rec)) {
    }
    free(copy);
  }
  zxs_fxt_buf_destroy(&buf);
}

// An instant event comes back with its fields and arguments; one whose fields overrun its record
// is skipped by size as before (OTHER), and reading goes on.
static void test_instant_event(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  zxs_fxt_write_magic(&buf);
  zxs_fxt_write_string(&buf, 1, "alert", 5);
  zxs_fxt_arg_t args[2] = {arg_of(ZXS_FXT_ARG_UINT64, zxs_fxt_str_inline("wall", 4)),
                           arg_of(ZXS_FXT_ARG_UINT64, zxs_fxt_str_index(1))};
  args[0].u64 = 12000000;
  args[1].u64 = 7;
  zxs_fxt_event_t ev = {.ticks = 99,
                        .thread = {.process_koid = 10, .thread_koid = 11},
                        .category = zxs_fxt_str_index(1),
                        .name = zxs_fxt_str_inline("mixer", 5)};
  assert_int_equal(zxs_fxt_write_instant_event(&buf, &ev, args, 2), ZX_OK);
  static const uint64_t kShort[2] = {0x4 | (2 << 4), 5};  // inline thread koids missing
  append_words(&buf, kShort, 2);
  zxs_fxt_write_provider_section(&buf, 3);
  assert_int_equal(buf.status, ZX_OK);

  zxs_fxt_reader_t r;
  zxs_fxt_record_t rec;
  assert_int_equal(zxs_fxt_reader_init(&r, buf.data, buf.len), ZX_OK);
  assert_true(zxs_fxt_reader_next(&r, &rec));  // magic
  assert_true(zxs_fxt_reader_next(&r, &rec));  // string
  assert_true(zxs_fxt_reader_next(&r, &rec));
  assert_int_equal(rec.kind, ZXS_FXT_RECORD_EVENT);
  assert_int_equal(rec.type, ZXS_FXT_TYPE_EVENT);
  assert_int_equal(rec.event.event_type, ZXS_FXT_EVENT_INSTANT);
  assert_int_equal(rec.event.ticks, 99);
  assert_int_equal(rec.event.thread.process_koid, 10);
  assert_int_equal(rec.event.thread.thread_koid, 11);
  assert_int_equal(rec.event.category.len, 5);
  assert_memory_equal(rec.event.category.data, "alert", 5);
  assert_memory_equal(rec.event.name.data, "mixer", 5);
  assert_int_equal(rec.num_args, 2);
  assert_int_equal(rec.args[0].u64, 12000000);
  assert_memory_equal(rec.args[1].name.data, "alert", 5);
  assert_int_equal(rec.args[1].u64, 7);
  assert_true(zxs_fxt_reader_next(&r, &rec));
  assert_int_equal(rec.kind, ZXS_FXT_RECORD_OTHER);
  assert_int_equal(rec.size, 16);
  assert_true(zxs_fxt_reader_next(&r, &rec));
  assert_int_equal(rec.kind, ZXS_FXT_RECORD_PROVIDER_SECTION);
  assert_false(zxs_fxt_reader_next(&r, &rec));
  assert_int_equal(r.status, ZX_OK);
  zxs_fxt_reader_destroy(&r);
  zxs_fxt_buf_destroy(&buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_magic),
      cmocka_unit_test(test_golden_kernel_sample_64),
      cmocka_unit_test(test_golden_large_blob_with_metadata),
      cmocka_unit_test(test_golden_large_blob_without_metadata),
      cmocka_unit_test(test_round_trip_file),
      cmocka_unit_test(test_skips_large_record_over_4095_words),
      cmocka_unit_test(test_writer_invalid_args),
      cmocka_unit_test(test_writer_sticky_status),
      cmocka_unit_test(test_region_stops_at_zero_header),
      cmocka_unit_test(test_region_malformed),
      cmocka_unit_test(test_region_truncated_everywhere),
      cmocka_unit_test(test_reader_malformed),
      cmocka_unit_test(test_reader_truncated_everywhere),
      cmocka_unit_test(test_reader_flipped_sizes),
      cmocka_unit_test(test_reader_mutations),
      cmocka_unit_test(test_instant_event),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
