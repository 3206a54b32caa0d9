// Fuzzes zxs_fxt_reader (whole trace files, with string and thread tables) over arbitrary bytes.
//
// Pass 1 reads an exactly-sized heap copy of the input, checks every decoded record (pointers
// inside the input, every pointed-to byte read) and re-encodes each one with the writer. Pass 2
// reads the re-encoded file back and compares its records with pass 1's field by field: whatever
// the reader accepts, the writer must be able to express, and reading that back must give the same
// records (a round trip over the decoded prefix).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/fxt.h>

#include "fuzz_fxt_check.h"

// Appends `rec` to `out` with the writer call for its kind. Table references keep their index
// (the writer emits an index when it is non-zero), so the copy needs the same tables, which it
// gets because every string and thread record is copied too, in order.
static zx_status_t rewrite(zxs_fxt_buf_t* out, const zxs_fxt_record_t* rec) {
  switch (rec->kind) {
    case ZXS_FXT_RECORD_MAGIC:
      return zxs_fxt_write_magic(out);
    case ZXS_FXT_RECORD_PROVIDER_INFO:
      return zxs_fxt_write_provider_info(out, rec->provider.id, rec->provider.name.data,
                                         rec->provider.name.len);
    case ZXS_FXT_RECORD_PROVIDER_SECTION:
      return zxs_fxt_write_provider_section(out, rec->provider.id);
    case ZXS_FXT_RECORD_INITIALIZATION:
      return zxs_fxt_write_initialization(out, rec->ticks_per_second);
    case ZXS_FXT_RECORD_STRING:
      return zxs_fxt_write_string(out, rec->string.index, rec->string.data, rec->string.len);
    case ZXS_FXT_RECORD_THREAD:
      return zxs_fxt_write_thread(out, rec->thread.index, rec->thread.process_koid,
                                  rec->thread.thread_koid);
    case ZXS_FXT_RECORD_KERNEL_OBJECT:
      return zxs_fxt_write_kernel_object(out, &rec->kernel_object, rec->args, rec->num_args);
    case ZXS_FXT_RECORD_LARGE_BLOB:
      return zxs_fxt_write_large_blob(out, &rec->blob, rec->args, rec->num_args);
    case ZXS_FXT_RECORD_ATTACHMENT:
      return zxs_fxt_write_attachment(out, &rec->blob);
    case ZXS_FXT_RECORD_EVENT:
      return zxs_fxt_write_instant_event(out, &rec->event, rec->args, rec->num_args);
    case ZXS_FXT_RECORD_OTHER:
    default:
      // Types the reader does not decode travel as they are.
      return zxs_fxt_write_raw(out, rec->data, rec->size);
  }
}

static bool bytes_equal(const void* a, size_t a_len, const void* b, size_t b_len) {
  return a_len == b_len && (a_len == 0 || memcmp(a, b, a_len) == 0);
}

static void check_str_equal(const zxs_fxt_str_ref_t* a, const zxs_fxt_str_ref_t* b) {
  FUZZ_CHECK(a->index == b->index);
  FUZZ_CHECK(bytes_equal(a->data, a->len, b->data, b->len));
}

static void check_thread_equal(const zxs_fxt_thread_ref_t* a, const zxs_fxt_thread_ref_t* b) {
  FUZZ_CHECK(a->index == b->index);
  FUZZ_CHECK(a->process_koid == b->process_koid && a->thread_koid == b->thread_koid);
}

static void check_arg_equal(const zxs_fxt_arg_t* a, const zxs_fxt_arg_t* b) {
  FUZZ_CHECK(a->type == b->type);
  check_str_equal(&a->name, &b->name);
  switch (a->type) {
    case ZXS_FXT_ARG_INT32:
      FUZZ_CHECK(a->i32 == b->i32);
      break;
    case ZXS_FXT_ARG_UINT32:
      FUZZ_CHECK(a->u32 == b->u32);
      break;
    case ZXS_FXT_ARG_INT64:
      FUZZ_CHECK(a->i64 == b->i64);
      break;
    case ZXS_FXT_ARG_UINT64:
      FUZZ_CHECK(a->u64 == b->u64);
      break;
    case ZXS_FXT_ARG_DOUBLE:  // by bits: NaNs must survive too
      FUZZ_CHECK(memcmp(&a->f64, &b->f64, sizeof(a->f64)) == 0);
      break;
    case ZXS_FXT_ARG_STRING:
      check_str_equal(&a->str, &b->str);
      break;
    case ZXS_FXT_ARG_POINTER:
      FUZZ_CHECK(a->pointer == b->pointer);
      break;
    case ZXS_FXT_ARG_KOID:
      FUZZ_CHECK(a->koid == b->koid);
      break;
    case ZXS_FXT_ARG_BOOL:
      FUZZ_CHECK(a->b == b->b);
      break;
    case ZXS_FXT_ARG_BLOB:
      FUZZ_CHECK(bytes_equal(a->blob.data, a->blob.size, b->blob.data, b->blob.size));
      break;
    default:
      break;
  }
}

// What both Large BLOB formats have.
static void check_blob_common(const zxs_fxt_large_blob_t* a, const zxs_fxt_large_blob_t* b) {
  check_str_equal(&a->category, &b->category);
  check_str_equal(&a->name, &b->name);
  FUZZ_CHECK(bytes_equal(a->payload.data, a->payload.size, b->payload.data, b->payload.size));
}

static void check_record_equal(const zxs_fxt_record_t* a, const zxs_fxt_record_t* b) {
  FUZZ_CHECK(a->kind == b->kind && a->type == b->type);
  FUZZ_CHECK(a->num_args == b->num_args);
  switch (a->kind) {
    case ZXS_FXT_RECORD_OTHER:
      FUZZ_CHECK(bytes_equal(a->data, a->size, b->data, b->size));
      break;
    case ZXS_FXT_RECORD_MAGIC:
      break;
    case ZXS_FXT_RECORD_PROVIDER_INFO:
    case ZXS_FXT_RECORD_PROVIDER_SECTION:
      FUZZ_CHECK(a->provider.id == b->provider.id);
      check_str_equal(&a->provider.name, &b->provider.name);
      break;
    case ZXS_FXT_RECORD_INITIALIZATION:
      FUZZ_CHECK(a->ticks_per_second == b->ticks_per_second);
      break;
    case ZXS_FXT_RECORD_STRING:
      check_str_equal(&a->string, &b->string);
      break;
    case ZXS_FXT_RECORD_THREAD:
      check_thread_equal(&a->thread, &b->thread);
      break;
    case ZXS_FXT_RECORD_KERNEL_OBJECT:
      FUZZ_CHECK(a->kernel_object.obj_type == b->kernel_object.obj_type);
      FUZZ_CHECK(a->kernel_object.koid == b->kernel_object.koid);
      check_str_equal(&a->kernel_object.name, &b->kernel_object.name);
      break;
    case ZXS_FXT_RECORD_LARGE_BLOB:
      FUZZ_CHECK(a->blob.ticks == b->blob.ticks);
      check_thread_equal(&a->blob.thread, &b->blob.thread);
      check_blob_common(&a->blob, &b->blob);
      break;
    case ZXS_FXT_RECORD_ATTACHMENT:
      check_blob_common(&a->blob, &b->blob);
      break;
    case ZXS_FXT_RECORD_EVENT:
      FUZZ_CHECK(a->event.event_type == b->event.event_type && a->event.ticks == b->event.ticks);
      check_thread_equal(&a->event.thread, &b->event.thread);
      check_str_equal(&a->event.category, &b->event.category);
      check_str_equal(&a->event.name, &b->event.name);
      break;
    default:
      FUZZ_CHECK(!"unknown record kind");
  }
  for (size_t i = 0; i < a->num_args; i++) check_arg_equal(&a->args[i], &b->args[i]);
}

// The end state every finished reader must be in.
static void check_finished(zxs_fxt_reader_t* r, zxs_fxt_record_t* rec) {
  FUZZ_CHECK(r->done);
  if (r->status == ZX_OK) {
    FUZZ_CHECK(r->offset == r->size && r->size != 0);  // an empty input has no magic record
    fuzz_check_error(&r->error, false);
  } else {
    FUZZ_CHECK(r->status == ZX_ERR_IO_DATA_INTEGRITY);
    FUZZ_CHECK(r->error.offset == r->offset);
    fuzz_check_error(&r->error, true);
  }
  const size_t offset = r->offset;
  FUZZ_CHECK(!zxs_fxt_reader_next(r, rec));  // once false, stays false
  FUZZ_CHECK(r->offset == offset);
}

// The records of pass 1, kept for pass 2 (a reader costs a large table allocation, so the input
// is not read a third time). They point into the input, which outlives them.
typedef struct record_list {
  zxs_fxt_record_t* items;
  size_t count;
  size_t cap;
} record_list_t;

static zxs_fxt_record_t* record_list_add(record_list_t* list) {
  if (list->count == list->cap) {
    list->cap = list->cap == 0 ? 4 : list->cap * 2;
    list->items = realloc(list->items, list->cap * sizeof(*list->items));
    FUZZ_CHECK(list->items != NULL);
  }
  return &list->items[list->count++];
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t* input = malloc(size == 0 ? 1 : size);
  FUZZ_CHECK(input != NULL);
  if (size != 0) memcpy(input, data, size);

  // Pass 1: read, check, re-encode.
  zxs_fxt_reader_t reader;
  FUZZ_CHECK(zxs_fxt_reader_init(&reader, size == 0 ? NULL : input, size) == ZX_OK);
  zxs_fxt_buf_t out;
  zxs_fxt_buf_init(&out);
  record_list_t records = {NULL, 0, 0};
  size_t expect_offset = 0;
  for (;;) {
    zxs_fxt_record_t* rec = record_list_add(&records);
    if (!zxs_fxt_reader_next(&reader, rec)) {
      check_finished(&reader, rec);
      records.count--;
      break;
    }
    FUZZ_CHECK(records.count <= size / 8);  // every record is a word at least: termination
    FUZZ_CHECK(rec->offset == expect_offset);
    if (records.count == 1) FUZZ_CHECK(rec->kind == ZXS_FXT_RECORD_MAGIC);
    fuzz_check_record(rec, input, size, true);
    expect_offset += rec->size;
    FUZZ_CHECK(reader.offset == expect_offset);
    if (rec->kind == ZXS_FXT_RECORD_INITIALIZATION) {
      FUZZ_CHECK(reader.ticks_per_second == rec->ticks_per_second);
    }
    // A record the reader accepted is one the writer can express.
    FUZZ_CHECK(rewrite(&out, rec) == ZX_OK);
  }
  const uint64_t ticks_per_second = reader.ticks_per_second;
  zxs_fxt_reader_destroy(&reader);
  FUZZ_CHECK(out.status == ZX_OK && out.len % 8 == 0);

  // Pass 2: the re-encoded file, exactly sized, record by record against pass 1.
  if (records.count != 0) {
    uint8_t* copy = malloc(out.len);
    FUZZ_CHECK(copy != NULL);
    memcpy(copy, out.data, out.len);
    zxs_fxt_reader_t reread;
    FUZZ_CHECK(zxs_fxt_reader_init(&reread, copy, out.len) == ZX_OK);
    zxs_fxt_record_t* back = malloc(sizeof(*back));  // large: 15 inline arguments
    FUZZ_CHECK(back != NULL);
    for (size_t i = 0; i < records.count; i++) {
      FUZZ_CHECK(zxs_fxt_reader_next(&reread, back));
      fuzz_check_record(back, copy, out.len, true);
      check_record_equal(&records.items[i], back);
    }
    // The copy holds only what was decoded, so it reads cleanly to its end.
    FUZZ_CHECK(!zxs_fxt_reader_next(&reread, back));
    FUZZ_CHECK(reread.status == ZX_OK);
    check_finished(&reread, back);
    FUZZ_CHECK(reread.ticks_per_second == ticks_per_second);
    zxs_fxt_reader_destroy(&reread);
    free(back);
    free(copy);
  }
  zxs_fxt_buf_destroy(&out);
  free(records.items);
  free(input);
  return 0;
}
