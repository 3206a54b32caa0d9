// Checks shared by the FXT fuzz targets: every pointer a decoded record carries lies where the
// reader's contract says (its record, or earlier input for resolved table entries), and every byte
// it points at is read, so AddressSanitizer reports an over-read at the decoder's call site.
#ifndef ZXSAMPLER_TESTS_FUZZ_FUZZ_FXT_CHECK_H_
#define ZXSAMPLER_TESTS_FUZZ_FUZZ_FXT_CHECK_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/fxt.h>

// Checks stay on in every build type (NDEBUG must not turn a fuzzer into a no-op).
#define FUZZ_CHECK(cond)                                       \
  do {                                                         \
    if (!(cond)) fuzz_check_failed(__FILE__, __LINE__, #cond); \
  } while (0)

static inline void fuzz_check_failed(const char* file, int line, const char* what) {
  fprintf(stderr, "%s:%d: fuzz invariant violated: %s\n", file, line, what);
  abort();
}

// Accumulates the bytes we touch so the compiler cannot drop the loads.
static volatile uint8_t fuzz_sink;

static inline void fuzz_touch(const void* p, size_t n) {
  const volatile uint8_t* b = (const volatile uint8_t*)p;
  uint8_t acc = 0;
  for (size_t i = 0; i < n; i++) acc ^= b[i];
  fuzz_sink ^= acc;
}

// Little-endian word at any alignment (the inputs are byte buffers).
static inline uint64_t fuzz_load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

// [p, p + n) inside [lo, lo + lo_size); compared as integers, the objects may differ.
static inline bool fuzz_within(const void* p, size_t n, const void* lo, size_t lo_size) {
  uintptr_t a = (uintptr_t)p;
  uintptr_t b = (uintptr_t)lo;
  return a >= b && a - b <= lo_size && n <= lo_size - (a - b);
}

typedef struct fuzz_span {
  const uint8_t* rec;  // the record being checked
  size_t rec_size;
  const uint8_t* input;  // the whole input (resolved strings point at earlier records)
  size_t input_size;
  bool tables;  // false: region iteration, indices stay unresolved
} fuzz_span_t;

static inline void fuzz_check_str(const fuzz_span_t* s, const zxs_fxt_str_ref_t* ref) {
  FUZZ_CHECK(ref->index <= ZXS_FXT_MAX_STRING_INDEX);
  FUZZ_CHECK(ref->len <= ZXS_FXT_MAX_STRING_LEN);
  if (ref->data == NULL) {
    FUZZ_CHECK(ref->len == 0);
    return;
  }
  FUZZ_CHECK(ref->len != 0);
  if (ref->index == 0) {
    FUZZ_CHECK(fuzz_within(ref->data, ref->len, s->rec, s->rec_size));  // inline: in its record
  } else {
    FUZZ_CHECK(s->tables);  // region iteration leaves indices unresolved
    FUZZ_CHECK(fuzz_within(ref->data, ref->len, s->input, s->input_size));
  }
  fuzz_touch(ref->data, ref->len);
}

static inline void fuzz_check_bytes(const fuzz_span_t* s, const zxs_fxt_bytes_t* b) {
  if (b->data == NULL) {
    FUZZ_CHECK(b->size == 0);
    return;
  }
  FUZZ_CHECK(b->size != 0);
  FUZZ_CHECK(fuzz_within(b->data, b->size, s->rec, s->rec_size));
  fuzz_touch(b->data, b->size);
}

static inline void fuzz_check_thread(const fuzz_span_t* s, const zxs_fxt_thread_ref_t* t) {
  FUZZ_CHECK(t->index <= ZXS_FXT_MAX_THREAD_INDEX);
  if (!s->tables && t->index != 0) {
    FUZZ_CHECK(t->process_koid == 0 && t->thread_koid == 0);
  }
}

static inline void fuzz_check_arg(const fuzz_span_t* s, const zxs_fxt_arg_t* a) {
  FUZZ_CHECK((unsigned)a->type <= ZXS_FXT_ARG_BLOB);
  fuzz_check_str(s, &a->name);
  if (a->type == ZXS_FXT_ARG_STRING) fuzz_check_str(s, &a->str);
  if (a->type == ZXS_FXT_ARG_BLOB) {
    FUZZ_CHECK(a->blob.size <= 0xffffffffu);
    fuzz_check_bytes(s, &a->blob);
  }
}

// Everything the header promises about one decoded record.
static inline void fuzz_check_record(const zxs_fxt_record_t* rec, const uint8_t* input,
                                     size_t input_size, bool tables) {
  FUZZ_CHECK(rec->size >= 8 && rec->size % 8 == 0);
  FUZZ_CHECK(rec->data == input + rec->offset);
  FUZZ_CHECK(fuzz_within(rec->data, rec->size, input, input_size));
  fuzz_touch(rec->data, rec->size);
  const uint64_t h = fuzz_load_le64(rec->data);
  FUZZ_CHECK(rec->type == (h & 0xfu));
  const uint64_t words =
      rec->type == ZXS_FXT_TYPE_LARGE ? (h >> 4) & 0xffffffffu : (h >> 4) & 0xfffu;
  FUZZ_CHECK(words * 8u == rec->size);
  FUZZ_CHECK(rec->num_args <= ZXS_FXT_MAX_ARGS);
  if (rec->kind != ZXS_FXT_RECORD_KERNEL_OBJECT && rec->kind != ZXS_FXT_RECORD_LARGE_BLOB &&
      rec->kind != ZXS_FXT_RECORD_EVENT) {
    FUZZ_CHECK(rec->num_args == 0);
  }
  const fuzz_span_t s = {rec->data, rec->size, input, input_size, tables};
  switch (rec->kind) {
    case ZXS_FXT_RECORD_OTHER:
      break;
    case ZXS_FXT_RECORD_MAGIC:
      FUZZ_CHECK(rec->type == ZXS_FXT_TYPE_METADATA && h == ZXS_FXT_MAGIC);
      break;
    case ZXS_FXT_RECORD_PROVIDER_INFO:
      FUZZ_CHECK(rec->type == ZXS_FXT_TYPE_METADATA);
      FUZZ_CHECK(rec->provider.name.index == 0);
      FUZZ_CHECK(rec->provider.name.len <= ZXS_FXT_MAX_PROVIDER_NAME);
      fuzz_check_str(&s, &rec->provider.name);
      break;
    case ZXS_FXT_RECORD_PROVIDER_SECTION:
      FUZZ_CHECK(rec->type == ZXS_FXT_TYPE_METADATA);
      break;
    case ZXS_FXT_RECORD_INITIALIZATION:
      FUZZ_CHECK(rec->type == ZXS_FXT_TYPE_INITIALIZATION && rec->ticks_per_second != 0);
      break;
    case ZXS_FXT_RECORD_STRING: {
      FUZZ_CHECK(rec->type == ZXS_FXT_TYPE_STRING);
      FUZZ_CHECK(rec->string.index >= 1 && rec->string.index <= ZXS_FXT_MAX_STRING_INDEX);
      // The string record's own value is inline in it, even though `index` is set.
      fuzz_span_t own = s;
      own.tables = true;
      own.input = rec->data;
      own.input_size = rec->size;
      fuzz_check_str(&own, &rec->string);
      break;
    }
    case ZXS_FXT_RECORD_THREAD:
      FUZZ_CHECK(rec->type == ZXS_FXT_TYPE_THREAD);
      FUZZ_CHECK(rec->thread.index >= 1 && rec->thread.index <= ZXS_FXT_MAX_THREAD_INDEX);
      break;
    case ZXS_FXT_RECORD_KERNEL_OBJECT:
      FUZZ_CHECK(rec->type == ZXS_FXT_TYPE_KERNEL_OBJECT);
      FUZZ_CHECK(rec->kernel_object.obj_type <= 0xffu);
      fuzz_check_str(&s, &rec->kernel_object.name);
      break;
    case ZXS_FXT_RECORD_LARGE_BLOB:
    case ZXS_FXT_RECORD_ATTACHMENT:
      FUZZ_CHECK(rec->type == ZXS_FXT_TYPE_LARGE);
      fuzz_check_str(&s, &rec->blob.category);
      fuzz_check_str(&s, &rec->blob.name);
      fuzz_check_bytes(&s, &rec->blob.payload);
      if (rec->kind == ZXS_FXT_RECORD_LARGE_BLOB) {
        fuzz_check_thread(&s, &rec->blob.thread);
      }
      break;
    case ZXS_FXT_RECORD_EVENT:
      FUZZ_CHECK(rec->type == ZXS_FXT_TYPE_EVENT);
      FUZZ_CHECK(rec->event.event_type == ZXS_FXT_EVENT_INSTANT);
      fuzz_check_thread(&s, &rec->event.thread);
      fuzz_check_str(&s, &rec->event.category);
      fuzz_check_str(&s, &rec->event.name);
      break;
    default:
      FUZZ_CHECK(!"unknown record kind");
  }
  for (size_t i = 0; i < rec->num_args; i++) fuzz_check_arg(&s, &rec->args[i]);
}

// The error a failed iteration leaves: a NUL-terminated, non-empty message.
static inline void fuzz_check_error(const zxs_fxt_error_t* err, bool expect_message) {
  FUZZ_CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL);
  FUZZ_CHECK((err->message[0] != '\0') == expect_message);
}

#endif  // ZXSAMPLER_TESTS_FUZZ_FUZZ_FXT_CHECK_H_
