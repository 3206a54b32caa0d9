// FXT reader: frames records by their header, decodes them in place (no copies), and checks every
// length against the record before touching the bytes it covers, so arbitrary input is safe.
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/fxt.h>

#define WORDS(bytes) (((bytes) + 7u) / 8u)

struct zxs_fxt_tables {
  bool string_defined[ZXS_FXT_MAX_STRING_INDEX + 1];
  bool thread_defined[ZXS_FXT_MAX_THREAD_INDEX + 1];
  zxs_fxt_str_ref_t strings[ZXS_FXT_MAX_STRING_INDEX + 1];
  zxs_fxt_thread_ref_t threads[ZXS_FXT_MAX_THREAD_INDEX + 1];
};

// Input may be unaligned: assemble words from bytes.
static uint64_t load_word(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) {
    v = (v << 8) | p[i];
  }
  return v;
}

#if defined(__GNUC__) || defined(__clang__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

static void set_error(zxs_fxt_error_t* err, size_t offset, const char* fmt, ...) PRINTF_LIKE(3, 4);

// Formats "record at byte N: <problem>".
static void set_error(zxs_fxt_error_t* err, size_t offset, const char* fmt, ...) {
  err->offset = offset;
  int n = snprintf(err->message, sizeof(err->message), "record at byte %zu: ", offset);
  if (n < 0 || (size_t)n >= sizeof(err->message)) {
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message + n, sizeof(err->message) - (size_t)n, fmt, ap);
  va_end(ap);
}

// Decoding state for one record, or for one argument inside it.
typedef struct decoder {
  const uint8_t* p;                     // first word
  size_t words;                         // words available
  size_t pos;                           // next word to read
  size_t offset;                        // the record's byte offset in the input
  int arg;                              // argument number for messages, -1 for the record itself
  const struct zxs_fxt_tables* tables;  // NULL: leave indices unresolved
  zxs_fxt_error_t* err;
} decoder_t;

static bool fail(decoder_t* d, const char* fmt, ...) PRINTF_LIKE(2, 3);

static bool fail(decoder_t* d, const char* fmt, ...) {
  char detail[ZXS_FXT_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  if (d->arg >= 0) {
    set_error(d->err, d->offset, "argument %d: %s", d->arg, detail);
  } else {
    set_error(d->err, d->offset, "%s", detail);
  }
  return false;
}

static const char* scope(const decoder_t* d) { return d->arg >= 0 ? "argument" : "record"; }

static bool take_word(decoder_t* d, uint64_t* v, const char* what) {
  if (d->pos >= d->words) {
    return fail(d, "%s past the end of the %s (%zu words)", what, scope(d), d->words);
  }
  *v = load_word(d->p + d->pos * 8u);
  d->pos++;
  return true;
}

// Takes `len` bytes plus their padding. len is 64-bit: blob sizes come from a whole word.
static bool take_bytes(decoder_t* d, uint64_t len, const uint8_t** out, const char* what) {
  const uint64_t left = (uint64_t)(d->words - d->pos) * 8u;
  if (len > left) {
    return fail(d, "%s of %" PRIu64 " bytes past the end of the %s", what, len, scope(d));
  }
  *out = d->p + d->pos * 8u;
  d->pos += (size_t)WORDS(len);
  return true;
}

// Decodes a 16-bit string ref; inline bytes follow at the current position.
static bool take_str(decoder_t* d, uint32_t field, zxs_fxt_str_ref_t* out, const char* what) {
  out->index = 0;
  out->data = NULL;
  out->len = 0;
  if (field == 0) {
    return true;
  }
  if (field & 0x8000u) {
    const uint8_t* bytes = NULL;
    const size_t len = field & 0x7fffu;
    if (!take_bytes(d, len, &bytes, what)) {
      return false;
    }
    if (len != 0) {
      out->data = (const char*)bytes;
      out->len = len;
    }
    return true;
  }
  out->index = field;
  if (d->tables != NULL) {
    if (!d->tables->string_defined[field]) {
      return fail(d, "%s: string index %" PRIu32 " never defined", what, field);
    }
    *out = d->tables->strings[field];
  }
  return true;
}

static bool resolve_thread(decoder_t* d, uint32_t index, zxs_fxt_thread_ref_t* out) {
  out->index = index;
  out->process_koid = 0;
  out->thread_koid = 0;
  if (d->tables != NULL) {
    if (!d->tables->thread_defined[index]) {
      return fail(d, "thread index %" PRIu32 " never defined", index);
    }
    *out = d->tables->threads[index];
  }
  return true;
}

static bool take_arg(decoder_t* d, int n, zxs_fxt_arg_t* a) {
  d->arg = n;  // messages below name the argument
  if (d->pos >= d->words) {
    return fail(d, "header past the end of the record (%zu words)", d->words);
  }
  const uint64_t h = load_word(d->p + d->pos * 8u);
  d->pos++;
  const size_t words = (size_t)((h >> 4) & 0xfffu);
  if (words == 0) {
    return fail(d, "size is 0 words");
  }
  if (words > d->words - d->pos + 1) {
    return fail(d, "size of %zu words past the end of the record", words);
  }
  // Decode inside the argument's own bounds.
  decoder_t sub = *d;
  sub.p = d->p + (d->pos - 1) * 8u;
  sub.words = words;
  sub.pos = 1;
  memset(a, 0, sizeof(*a));
  a->type = (zxs_fxt_arg_type_t)(h & 0xfu);
  if (!take_str(&sub, (uint32_t)((h >> 16) & 0xffffu), &a->name, "name")) {
    return false;
  }
  const uint64_t high = h >> 32;
  uint64_t v = 0;
  bool ok = true;
  switch (a->type) {
    case ZXS_FXT_ARG_NULL:
      break;
    case ZXS_FXT_ARG_INT32:
      a->i32 = (int32_t)(uint32_t)high;
      break;
    case ZXS_FXT_ARG_UINT32:
      a->u32 = (uint32_t)high;
      break;
    case ZXS_FXT_ARG_BOOL:
      a->b = (high & 1u) != 0;
      break;
    case ZXS_FXT_ARG_INT64:
      ok = take_word(&sub, &v, "value");
      a->i64 = (int64_t)v;
      break;
    case ZXS_FXT_ARG_UINT64:
      ok = take_word(&sub, &v, "value");
      a->u64 = v;
      break;
    case ZXS_FXT_ARG_DOUBLE:
      ok = take_word(&sub, &v, "value");
      memcpy(&a->f64, &v, sizeof(v));
      break;
    case ZXS_FXT_ARG_POINTER:
      ok = take_word(&sub, &v, "value");
      a->pointer = v;
      break;
    case ZXS_FXT_ARG_KOID:
      ok = take_word(&sub, &v, "value");
      a->koid = v;
      break;
    case ZXS_FXT_ARG_STRING:
      ok = take_str(&sub, (uint32_t)(high & 0xffffu), &a->str, "value");
      break;
    case ZXS_FXT_ARG_BLOB: {
      const uint8_t* bytes = NULL;
      a->blob.size = (size_t)(high & 0xffffffffu);
      ok = take_bytes(&sub, a->blob.size, &bytes, "blob");
      a->blob.data = a->blob.size != 0 ? bytes : NULL;
      break;
    }
    default:
      return fail(d, "unknown argument type %u", (unsigned)a->type);
  }
  if (!ok) {
    return false;
  }
  d->pos += words - 1;
  d->arg = -1;
  return true;
}

static bool take_args(decoder_t* d, size_t count, zxs_fxt_record_t* rec) {
  for (size_t i = 0; i < count; i++) {
    if (!take_arg(d, (int)i, &rec->args[i])) {
      return false;
    }
  }
  rec->num_args = count;
  return true;
}

static bool take_large_blob(decoder_t* d, unsigned format, zxs_fxt_record_t* rec) {
  zxs_fxt_large_blob_t* b = &rec->blob;
  uint64_t fw = 0;
  if (!take_word(d, &fw, "format word") ||
      !take_str(d, (uint32_t)(fw & 0xffffu), &b->category, "category") ||
      !take_str(d, (uint32_t)((fw >> 16) & 0xffffu), &b->name, "name")) {
    return false;
  }
  if (format == 0) {
    const uint32_t thread = (uint32_t)((fw >> 36) & 0xffu);
    if (!take_word(d, &b->ticks, "timestamp")) {
      return false;
    }
    if (thread == 0) {
      b->thread.index = 0;
      if (!take_word(d, &b->thread.process_koid, "process koid") ||
          !take_word(d, &b->thread.thread_koid, "thread koid")) {
        return false;
      }
    } else if (!resolve_thread(d, thread, &b->thread)) {
      return false;
    }
    if (!take_args(d, (size_t)((fw >> 32) & 0xfu), rec)) {
      return false;
    }
  }
  uint64_t size = 0;
  const uint8_t* payload = NULL;
  if (!take_word(d, &size, "blob size") || !take_bytes(d, size, &payload, "blob")) {
    return false;
  }
  b->payload.data = size != 0 ? payload : NULL;
  b->payload.size = (size_t)size;  // fits: it is within the input
  rec->kind = format == 0 ? ZXS_FXT_RECORD_LARGE_BLOB : ZXS_FXT_RECORD_ATTACHMENT;
  return true;
}

static bool take_metadata(decoder_t* d, uint64_t h, zxs_fxt_record_t* rec) {
  switch ((h >> 16) & 0xfu) {
    case 1: {  // provider info
      const uint8_t* name = NULL;
      const size_t len = (size_t)((h >> 52) & 0xffu);
      if (!take_bytes(d, len, &name, "provider name")) {
        return false;
      }
      rec->provider.id = (uint32_t)((h >> 20) & 0xffffffffu);
      if (len != 0) {
        rec->provider.name.data = (const char*)name;
        rec->provider.name.len = len;
      }
      rec->kind = ZXS_FXT_RECORD_PROVIDER_INFO;
      return true;
    }
    case 2:  // provider section
      rec->provider.id = (uint32_t)((h >> 20) & 0xffffffffu);
      rec->kind = ZXS_FXT_RECORD_PROVIDER_SECTION;
      return true;
    default:
      if (h == ZXS_FXT_MAGIC) {
        rec->kind = ZXS_FXT_RECORD_MAGIC;
      }
      return true;
  }
}

// An instant event; anything else of type 4, or one that does not decode, stays OTHER.
static bool take_event(decoder_t* d, uint64_t h, zxs_fxt_record_t* rec) {
  if (((h >> 16) & 0xfu) != ZXS_FXT_EVENT_INSTANT) {
    return true;
  }
  zxs_fxt_error_t scratch;  // a failure here is not the input's: the record is skipped
  decoder_t e = *d;
  e.err = &scratch;
  zxs_fxt_event_t* ev = &rec->event;
  const uint32_t thread = (uint32_t)((h >> 24) & 0xffu);
  bool ok = take_word(&e, &ev->ticks, "timestamp");
  if (ok && thread == 0) {
    ok = take_word(&e, &ev->thread.process_koid, "process koid") &&
         take_word(&e, &ev->thread.thread_koid, "thread koid");
  } else if (ok) {
    ok = resolve_thread(&e, thread, &ev->thread);
  }
  ok = ok && take_str(&e, (uint32_t)((h >> 32) & 0xffffu), &ev->category, "category") &&
       take_str(&e, (uint32_t)((h >> 48) & 0xffffu), &ev->name, "name") &&
       take_args(&e, (size_t)((h >> 20) & 0xfu), rec);
  if (!ok) {
    memset(ev, 0, sizeof(*ev));
    rec->num_args = 0;
    return true;
  }
  ev->event_type = ZXS_FXT_EVENT_INSTANT;
  rec->kind = ZXS_FXT_RECORD_EVENT;
  return true;
}

// Decodes the record of `words` words at `p` (bounds already checked against the input).
static bool decode(const uint8_t* p, size_t words, size_t offset,
                   const struct zxs_fxt_tables* tables, zxs_fxt_record_t* rec,
                   zxs_fxt_error_t* err) {
  memset(rec, 0, offsetof(zxs_fxt_record_t, args));
  const uint64_t h = load_word(p);
  rec->kind = ZXS_FXT_RECORD_OTHER;
  rec->type = (uint32_t)(h & 0xfu);
  rec->offset = offset;
  rec->data = p;
  rec->size = words * 8u;
  decoder_t d = {p, words, 1, offset, -1, tables, err};
  switch (rec->type) {
    case ZXS_FXT_TYPE_METADATA:
      return take_metadata(&d, h, rec);
    case ZXS_FXT_TYPE_INITIALIZATION:
      if (!take_word(&d, &rec->ticks_per_second, "ticks per second")) {
        return false;
      }
      if (rec->ticks_per_second == 0) {
        return fail(&d, "initialization record with 0 ticks per second");
      }
      rec->kind = ZXS_FXT_RECORD_INITIALIZATION;
      return true;
    case ZXS_FXT_TYPE_STRING: {
      const uint8_t* bytes = NULL;
      const size_t len = (size_t)((h >> 32) & 0x7fffu);
      rec->string.index = (uint32_t)((h >> 16) & 0x7fffu);
      if (rec->string.index == 0) {
        return fail(&d, "string record with index 0");
      }
      if (!take_bytes(&d, len, &bytes, "string")) {
        return false;
      }
      if (len != 0) {
        rec->string.data = (const char*)bytes;
        rec->string.len = len;
      }
      rec->kind = ZXS_FXT_RECORD_STRING;
      return true;
    }
    case ZXS_FXT_TYPE_THREAD:
      rec->thread.index = (uint32_t)((h >> 16) & 0xffu);
      if (rec->thread.index == 0) {
        return fail(&d, "thread record with index 0");
      }
      if (!take_word(&d, &rec->thread.process_koid, "process koid") ||
          !take_word(&d, &rec->thread.thread_koid, "thread koid")) {
        return false;
      }
      rec->kind = ZXS_FXT_RECORD_THREAD;
      return true;
    case ZXS_FXT_TYPE_EVENT:
      return take_event(&d, h, rec);
    case ZXS_FXT_TYPE_KERNEL_OBJECT:
      rec->kernel_object.obj_type = (zx_obj_type_t)((h >> 16) & 0xffu);
      if (!take_word(&d, &rec->kernel_object.koid, "koid") ||
          !take_str(&d, (uint32_t)((h >> 24) & 0xffffu), &rec->kernel_object.name, "name") ||
          !take_args(&d, (size_t)((h >> 40) & 0xfu), rec)) {
        return false;
      }
      rec->kind = ZXS_FXT_RECORD_KERNEL_OBJECT;
      return true;
    case ZXS_FXT_TYPE_LARGE: {
      const unsigned large_type = (unsigned)((h >> 36) & 0xfu);
      const unsigned format = (unsigned)((h >> 40) & 0xfu);
      if (large_type != 0 || format > 1) {
        return true;  // not a blob we know: skipped by its size
      }
      return take_large_blob(&d, format, rec);
    }
    default:
      return true;
  }
}

// Reads the size of the record whose header is at `offset` and checks it lies in the input.
static bool frame(size_t size, size_t offset, uint64_t h, size_t* words, zxs_fxt_error_t* err) {
  const uint64_t w = (h & 0xfu) == ZXS_FXT_TYPE_LARGE ? (h >> 4) & 0xffffffffu : (h >> 4) & 0xfffu;
  if (w == 0) {
    set_error(err, offset, "size is 0 words (header 0x%016" PRIx64 ")", h);
    return false;
  }
  const uint64_t left = (uint64_t)((size - offset) / 8u);
  if (w > left) {
    set_error(err, offset,
              "size of %" PRIu64 " words past the end of the input (%" PRIu64 " words left)", w,
              left);
    return false;
  }
  *words = (size_t)w;
  return true;
}

void zxs_fxt_region_iter_init(zxs_fxt_region_iter_t* it, const void* data, size_t size) {
  if (it == NULL) return;
  it->data = (const uint8_t*)data;
  it->size = data == NULL ? 0 : size;
  it->offset = 0;
  it->done = false;
  it->status = ZX_OK;
  it->error.offset = 0;
  it->error.message[0] = '\0';
}

bool zxs_fxt_region_next(zxs_fxt_region_iter_t* it, zxs_fxt_record_t* rec) {
  if (it == NULL || rec == NULL || it->done) {
    return false;
  }
  size_t words = 0;
  bool ok = false;
  if (it->size - it->offset == 0) {
    it->done = true;
    return false;
  }
  if (it->size - it->offset < 8) {
    set_error(&it->error, it->offset, "buffer ends inside a header word (%zu bytes left)",
              it->size - it->offset);
  } else {
    const uint64_t h = load_word(it->data + it->offset);
    if (h == 0) {
      it->done = true;  // the kernel's end of data
      return false;
    }
    ok = frame(it->size, it->offset, h, &words, &it->error) &&
         decode(it->data + it->offset, words, it->offset, NULL, rec, &it->error);
  }
  if (!ok) {
    it->done = true;
    it->status = ZX_ERR_IO_DATA_INTEGRITY;
    return false;
  }
  it->offset += words * 8u;
  return true;
}

zx_status_t zxs_fxt_reader_init(zxs_fxt_reader_t* reader, const void* data, size_t size) {
  if (reader == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  memset(reader, 0, sizeof(*reader));
  reader->done = true;  // until fully initialized
  if (data == NULL && size != 0) {
    reader->status = ZX_ERR_INVALID_ARGS;
    return reader->status;
  }
  reader->tables = calloc(1, sizeof(*reader->tables));
  if (reader->tables == NULL) {
    reader->status = ZX_ERR_NO_MEMORY;
    return reader->status;
  }
  reader->data = (const uint8_t*)data;
  reader->size = size;
  reader->done = false;
  return ZX_OK;
}

void zxs_fxt_reader_destroy(zxs_fxt_reader_t* reader) {
  if (reader == NULL) return;
  free(reader->tables);
  reader->tables = NULL;
  reader->done = true;
}

static bool reader_step(zxs_fxt_reader_t* r, zxs_fxt_record_t* rec) {
  const size_t left = r->size - r->offset;
  if (r->offset == 0 && (left < 8 || load_word(r->data) != ZXS_FXT_MAGIC)) {
    set_error(&r->error, 0, "input does not start with the FXT magic record");
    return false;
  }
  if (left < 8) {
    set_error(&r->error, r->offset, "input ends inside a header word (%zu bytes left)", left);
    return false;
  }
  const uint64_t h = load_word(r->data + r->offset);
  if (h == 0) {
    set_error(&r->error, r->offset, "zero header word (a region's unused tail not stripped?)");
    return false;
  }
  size_t words = 0;
  if (!frame(r->size, r->offset, h, &words, &r->error) ||
      !decode(r->data + r->offset, words, r->offset, r->tables, rec, &r->error)) {
    return false;
  }
  switch (rec->kind) {
    case ZXS_FXT_RECORD_STRING:
      r->tables->string_defined[rec->string.index] = true;
      r->tables->strings[rec->string.index] = rec->string;
      break;
    case ZXS_FXT_RECORD_THREAD:
      r->tables->thread_defined[rec->thread.index] = true;
      r->tables->threads[rec->thread.index] = rec->thread;
      break;
    case ZXS_FXT_RECORD_INITIALIZATION:
      r->ticks_per_second = rec->ticks_per_second;
      break;
    default:
      break;
  }
  r->offset += words * 8u;
  return true;
}

bool zxs_fxt_reader_next(zxs_fxt_reader_t* reader, zxs_fxt_record_t* rec) {
  if (reader == NULL || rec == NULL || reader->done || reader->tables == NULL) {
    return false;
  }
  if (reader->offset == reader->size && reader->offset != 0) {
    reader->done = true;
    return false;
  }
  if (!reader_step(reader, rec)) {
    reader->done = true;
    reader->status = ZX_ERR_IO_DATA_INTEGRITY;
    return false;
  }
  return true;
}
