// FXT writer for trace files: validates a whole record, reserves it once, then stores its words
// little-endian byte by byte (so output does not depend on the host's byte order).
#include <stdlib.h>
#include <string.h>
#include <zxsampler/fxt.h>

#define WORDS(bytes) (((bytes) + 7u) / 8u)

void zxs_fxt_buf_init(zxs_fxt_buf_t* buf) {
  if (buf == NULL) return;
  buf->data = NULL;
  buf->len = 0;
  buf->cap = 0;
  buf->status = ZX_OK;
}

void zxs_fxt_buf_destroy(zxs_fxt_buf_t* buf) {
  if (buf == NULL) return;
  free(buf->data);
  zxs_fxt_buf_init(buf);
}

void zxs_fxt_buf_reset(zxs_fxt_buf_t* buf) {
  if (buf == NULL) return;
  buf->len = 0;
  buf->status = ZX_OK;
}

// Records the first failure; later appends return it.
static zx_status_t fail(zxs_fxt_buf_t* buf, zx_status_t status) {
  if (buf->status == ZX_OK) {
    buf->status = status;
  }
  return status;
}

// Returns room for `words` more words at the end of the buffer, NULL on failure.
static uint8_t* reserve(zxs_fxt_buf_t* buf, uint64_t words) {
  // Refuse sizes malloc cannot serve before asking it (sanitizers abort on absurd requests).
  const uint64_t max_bytes = (uint64_t)(SIZE_MAX / 2);
  if (words > max_bytes / 8u || words * 8u > max_bytes - buf->len) {
    fail(buf, ZX_ERR_NO_MEMORY);
    return NULL;
  }
  const size_t need = buf->len + (size_t)words * 8u;
  if (need > buf->cap) {
    size_t cap = buf->cap < 256 ? 256 : buf->cap;
    while (cap < need) {
      cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    }
    uint8_t* data = realloc(buf->data, cap);
    if (data == NULL) {
      fail(buf, ZX_ERR_NO_MEMORY);
      return NULL;
    }
    buf->data = data;
    buf->cap = cap;
  }
  uint8_t* out = buf->data + buf->len;
  buf->len = need;
  return out;
}

static void put_word(uint8_t** p, uint64_t v) {
  for (int i = 0; i < 8; i++) {
    (*p)[i] = (uint8_t)(v >> (8 * i));
  }
  *p += 8;
}

// Stores `len` bytes zero-padded to a whole number of words.
static void put_bytes(uint8_t** p, const void* data, size_t len) {
  if (len == 0) {
    return;
  }
  const size_t padded = WORDS(len) * 8u;
  memcpy(*p, data, len);
  memset(*p + len, 0, padded - len);
  *p += padded;
}

// Encodes a string ref: its 16-bit field and the words its inline bytes take.
static bool encode_str(const zxs_fxt_str_ref_t* s, uint16_t* field, size_t* words) {
  if (s->index != 0) {
    if (s->index > ZXS_FXT_MAX_STRING_INDEX) {
      return false;
    }
    *field = (uint16_t)s->index;
    *words = 0;
  } else if (s->len == 0) {
    *field = 0;
    *words = 0;
  } else {
    if (s->data == NULL || s->len > ZXS_FXT_MAX_STRING_LEN) {
      return false;
    }
    *field = (uint16_t)(0x8000u | s->len);
    *words = WORDS(s->len);
  }
  return true;
}

static void put_str(uint8_t** p, const zxs_fxt_str_ref_t* s) {
  if (s->index == 0) {
    put_bytes(p, s->data, s->len);
  }
}

// Validates one argument and returns its size in words (0 if invalid).
static size_t arg_words(const zxs_fxt_arg_t* a) {
  uint16_t field = 0;
  size_t name_words = 0;
  if (!encode_str(&a->name, &field, &name_words)) {
    return 0;
  }
  size_t value_words = 0;
  switch (a->type) {
    case ZXS_FXT_ARG_NULL:
    case ZXS_FXT_ARG_INT32:
    case ZXS_FXT_ARG_UINT32:
    case ZXS_FXT_ARG_BOOL:
      break;
    case ZXS_FXT_ARG_INT64:
    case ZXS_FXT_ARG_UINT64:
    case ZXS_FXT_ARG_DOUBLE:
    case ZXS_FXT_ARG_POINTER:
    case ZXS_FXT_ARG_KOID:
      value_words = 1;
      break;
    case ZXS_FXT_ARG_STRING:
      if (!encode_str(&a->str, &field, &value_words)) {
        return 0;
      }
      break;
    case ZXS_FXT_ARG_BLOB:
      if (a->blob.size > 0xffffffffu || (a->blob.data == NULL && a->blob.size != 0)) {
        return 0;
      }
      value_words = WORDS(a->blob.size);
      break;
    default:
      return 0;
  }
  const size_t words = 1 + name_words + value_words;
  return words > ZXS_FXT_MAX_RECORD_WORDS ? 0 : words;
}

// Validates the argument list; *words is its total size.
static bool args_words(const zxs_fxt_arg_t* args, size_t num_args, size_t* words) {
  if (num_args > ZXS_FXT_MAX_ARGS || (args == NULL && num_args != 0)) {
    return false;
  }
  *words = 0;
  for (size_t i = 0; i < num_args; i++) {
    const size_t w = arg_words(&args[i]);
    if (w == 0) {
      return false;
    }
    *words += w;
  }
  return true;
}

static void put_args(uint8_t** p, const zxs_fxt_arg_t* args, size_t num_args) {
  for (size_t i = 0; i < num_args; i++) {
    const zxs_fxt_arg_t* a = &args[i];
    uint16_t name_field = 0;
    uint16_t value_field = 0;
    size_t unused = 0;
    encode_str(&a->name, &name_field, &unused);
    if (a->type == ZXS_FXT_ARG_STRING) {
      encode_str(&a->str, &value_field, &unused);
    }
    uint64_t high = 0;  // bits [32..63] of the header
    switch (a->type) {
      case ZXS_FXT_ARG_INT32:
        high = (uint32_t)a->i32;
        break;
      case ZXS_FXT_ARG_UINT32:
        high = a->u32;
        break;
      case ZXS_FXT_ARG_STRING:
        high = value_field;
        break;
      case ZXS_FXT_ARG_BOOL:
        high = a->b ? 1u : 0u;
        break;
      case ZXS_FXT_ARG_BLOB:
        high = a->blob.size;
        break;
      default:
        break;
    }
    put_word(p, (uint64_t)a->type | ((uint64_t)arg_words(a) << 4) | ((uint64_t)name_field << 16) |
                    (high << 32));
    put_str(p, &a->name);
    switch (a->type) {
      case ZXS_FXT_ARG_INT64:
        put_word(p, (uint64_t)a->i64);
        break;
      case ZXS_FXT_ARG_UINT64:
        put_word(p, a->u64);
        break;
      case ZXS_FXT_ARG_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &a->f64, sizeof(bits));
        put_word(p, bits);
        break;
      }
      case ZXS_FXT_ARG_POINTER:
        put_word(p, a->pointer);
        break;
      case ZXS_FXT_ARG_KOID:
        put_word(p, a->koid);
        break;
      case ZXS_FXT_ARG_STRING:
        put_str(p, &a->str);
        break;
      case ZXS_FXT_ARG_BLOB:
        put_bytes(p, a->blob.data, a->blob.size);
        break;
      default:
        break;
    }
  }
}

static uint64_t header(uint32_t type, size_t words) {
  return (uint64_t)type | ((uint64_t)words << 4);
}

// What every writer checks first: a buffer (NULL: ZX_ERR_INVALID_ARGS) that has not failed (its
// first failure is answered again, and nothing more is written).
static zx_status_t writable(const zxs_fxt_buf_t* buf) {
  if (buf == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  return buf->status;
}
zx_status_t zxs_fxt_write_raw(zxs_fxt_buf_t* buf, const void* data, size_t size) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  if (size % 8u != 0 || (data == NULL && size != 0)) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  uint8_t* p = reserve(buf, size / 8u);
  if (p == NULL) {
    return buf->status;
  }
  put_bytes(&p, data, size);
  return ZX_OK;
}

zx_status_t zxs_fxt_write_magic(zxs_fxt_buf_t* buf) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  uint8_t* p = reserve(buf, 1);
  if (p == NULL) {
    return buf->status;
  }
  put_word(&p, ZXS_FXT_MAGIC);
  return ZX_OK;
}

zx_status_t zxs_fxt_write_initialization(zxs_fxt_buf_t* buf, uint64_t ticks_per_second) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  if (ticks_per_second == 0) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  uint8_t* p = reserve(buf, 2);
  if (p == NULL) {
    return buf->status;
  }
  put_word(&p, header(ZXS_FXT_TYPE_INITIALIZATION, 2));
  put_word(&p, ticks_per_second);
  return ZX_OK;
}

zx_status_t zxs_fxt_write_provider_info(zxs_fxt_buf_t* buf, uint32_t provider_id, const char* name,
                                        size_t name_len) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  if (name_len > ZXS_FXT_MAX_PROVIDER_NAME || (name == NULL && name_len != 0)) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  const size_t words = 1 + WORDS(name_len);
  uint8_t* p = reserve(buf, words);
  if (p == NULL) {
    return buf->status;
  }
  put_word(&p, header(ZXS_FXT_TYPE_METADATA, words) | ((uint64_t)1 << 16) |
                   ((uint64_t)provider_id << 20) | ((uint64_t)name_len << 52));
  put_bytes(&p, name, name_len);
  return ZX_OK;
}

zx_status_t zxs_fxt_write_provider_section(zxs_fxt_buf_t* buf, uint32_t provider_id) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  uint8_t* p = reserve(buf, 1);
  if (p == NULL) {
    return buf->status;
  }
  put_word(&p,
           header(ZXS_FXT_TYPE_METADATA, 1) | ((uint64_t)2 << 16) | ((uint64_t)provider_id << 20));
  return ZX_OK;
}

zx_status_t zxs_fxt_write_string(zxs_fxt_buf_t* buf, uint32_t index, const char* data, size_t len) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  if (index == 0 || index > ZXS_FXT_MAX_STRING_INDEX || len > ZXS_FXT_MAX_STRING_LEN ||
      (data == NULL && len != 0) || 1 + WORDS(len) > ZXS_FXT_MAX_RECORD_WORDS) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  const size_t words = 1 + WORDS(len);
  uint8_t* p = reserve(buf, words);
  if (p == NULL) {
    return buf->status;
  }
  put_word(&p,
           header(ZXS_FXT_TYPE_STRING, words) | ((uint64_t)index << 16) | ((uint64_t)len << 32));
  put_bytes(&p, data, len);
  return ZX_OK;
}

zx_status_t zxs_fxt_write_thread(zxs_fxt_buf_t* buf, uint32_t index, zx_koid_t process_koid,
                                 zx_koid_t thread_koid) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  if (index == 0 || index > ZXS_FXT_MAX_THREAD_INDEX) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  uint8_t* p = reserve(buf, 3);
  if (p == NULL) {
    return buf->status;
  }
  put_word(&p, header(ZXS_FXT_TYPE_THREAD, 3) | ((uint64_t)index << 16));
  put_word(&p, process_koid);
  put_word(&p, thread_koid);
  return ZX_OK;
}

zx_status_t zxs_fxt_write_kernel_object(zxs_fxt_buf_t* buf, const zxs_fxt_kernel_object_t* obj,
                                        const zxs_fxt_arg_t* args, size_t num_args) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  uint16_t name_field = 0;
  size_t name_words = 0;
  size_t arg_total = 0;
  if (obj == NULL || obj->obj_type > 0xffu || !encode_str(&obj->name, &name_field, &name_words) ||
      !args_words(args, num_args, &arg_total)) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  const size_t words = 2 + name_words + arg_total;
  if (words > ZXS_FXT_MAX_RECORD_WORDS) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  uint8_t* p = reserve(buf, words);
  if (p == NULL) {
    return buf->status;
  }
  put_word(&p, header(ZXS_FXT_TYPE_KERNEL_OBJECT, words) | ((uint64_t)obj->obj_type << 16) |
                   ((uint64_t)name_field << 24) | ((uint64_t)num_args << 40));
  put_word(&p, obj->koid);
  put_str(&p, &obj->name);
  put_args(&p, args, num_args);
  return ZX_OK;
}

zx_status_t zxs_fxt_write_instant_event(zxs_fxt_buf_t* buf, const zxs_fxt_event_t* event,
                                        const zxs_fxt_arg_t* args, size_t num_args) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  uint16_t category_field = 0, name_field = 0;
  size_t category_words = 0, name_words = 0, arg_total = 0;
  if (event == NULL || event->thread.index > ZXS_FXT_MAX_THREAD_INDEX ||
      !encode_str(&event->category, &category_field, &category_words) ||
      !encode_str(&event->name, &name_field, &name_words) ||
      !args_words(args, num_args, &arg_total)) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  const size_t thread_words = event->thread.index == 0 ? 2 : 0;
  const size_t words = 2 + thread_words + category_words + name_words + arg_total;
  if (words > ZXS_FXT_MAX_RECORD_WORDS) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  uint8_t* p = reserve(buf, words);
  if (p == NULL) {
    return buf->status;
  }
  put_word(&p, header(ZXS_FXT_TYPE_EVENT, words) | ((uint64_t)ZXS_FXT_EVENT_INSTANT << 16) |
                   ((uint64_t)num_args << 20) | ((uint64_t)event->thread.index << 24) |
                   ((uint64_t)category_field << 32) | ((uint64_t)name_field << 48));
  put_word(&p, event->ticks);
  if (event->thread.index == 0) {
    put_word(&p, event->thread.process_koid);
    put_word(&p, event->thread.thread_koid);
  }
  put_str(&p, &event->category);
  put_str(&p, &event->name);
  put_args(&p, args, num_args);
  return ZX_OK;
}

// Validates what both Large BLOB formats share: category, name, payload.
static bool blob_common(const zxs_fxt_large_blob_t* blob, uint16_t* category, uint16_t* name,
                        uint64_t* words) {
  size_t category_words = 0;
  size_t name_words = 0;
  if (blob == NULL || !encode_str(&blob->category, category, &category_words) ||
      !encode_str(&blob->name, name, &name_words) ||
      (blob->payload.data == NULL && blob->payload.size != 0)) {
    return false;
  }
  // The size word is 64-bit; the record's 32-bit word count bounds the payload.
  // Checked before rounding: WORDS() of a size near SIZE_MAX wraps to 0.
  if ((uint64_t)blob->payload.size > (uint64_t)ZXS_FXT_MAX_LARGE_WORDS * 8u) {
    return false;
  }
  const uint64_t payload_words = WORDS((uint64_t)blob->payload.size);
  if (payload_words > ZXS_FXT_MAX_LARGE_WORDS) {
    return false;
  }
  *words = category_words + name_words + payload_words;
  return true;
}

static uint64_t large_blob_header(uint64_t words, unsigned format) {
  return header(ZXS_FXT_TYPE_LARGE, 0) | (words << 4) | ((uint64_t)format << 40);
}

zx_status_t zxs_fxt_write_large_blob(zxs_fxt_buf_t* buf, const zxs_fxt_large_blob_t* blob,
                                     const zxs_fxt_arg_t* args, size_t num_args) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  uint16_t category = 0;
  uint16_t name = 0;
  uint64_t common_words = 0;
  size_t arg_total = 0;
  if (!blob_common(blob, &category, &name, &common_words) ||
      blob->thread.index > ZXS_FXT_MAX_THREAD_INDEX || !args_words(args, num_args, &arg_total)) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  // Header, format word, ticks, (koids), args, size word.
  const uint64_t words =
      4 + (blob->thread.index == 0 ? 2u : 0u) + (uint64_t)arg_total + common_words;
  if (words > ZXS_FXT_MAX_LARGE_WORDS) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  uint8_t* p = reserve(buf, words);
  if (p == NULL) {
    return buf->status;
  }
  put_word(&p, large_blob_header(words, 0));
  put_word(&p, (uint64_t)category | ((uint64_t)name << 16) | ((uint64_t)num_args << 32) |
                   ((uint64_t)blob->thread.index << 36));
  put_str(&p, &blob->category);
  put_str(&p, &blob->name);
  put_word(&p, blob->ticks);
  if (blob->thread.index == 0) {
    put_word(&p, blob->thread.process_koid);
    put_word(&p, blob->thread.thread_koid);
  }
  put_args(&p, args, num_args);
  put_word(&p, blob->payload.size);
  put_bytes(&p, blob->payload.data, blob->payload.size);
  return ZX_OK;
}

zx_status_t zxs_fxt_write_attachment(zxs_fxt_buf_t* buf, const zxs_fxt_large_blob_t* blob) {
  const zx_status_t ready = writable(buf);
  if (ready != ZX_OK) {
    return ready;
  }
  uint16_t category = 0;
  uint16_t name = 0;
  uint64_t common_words = 0;
  if (!blob_common(blob, &category, &name, &common_words)) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  const uint64_t words = 3 + common_words;  // header, format word, size word
  if (words > ZXS_FXT_MAX_LARGE_WORDS) {
    return fail(buf, ZX_ERR_INVALID_ARGS);
  }
  uint8_t* p = reserve(buf, words);
  if (p == NULL) {
    return buf->status;
  }
  put_word(&p, large_blob_header(words, 1));
  put_word(&p, (uint64_t)category | ((uint64_t)name << 16));
  put_str(&p, &blob->category);
  put_str(&p, &blob->name);
  put_word(&p, blob->payload.size);
  put_bytes(&p, blob->payload.data, blob->payload.size);
  return ZX_OK;
}
