#include "protobuf_writer.h"

#include <stdlib.h>
#include <string.h>

#include "string_builder.h"

void zxs_pb_init(zxs_pb_t* pb) { memset(pb, 0, sizeof(*pb)); }

void zxs_pb_free(zxs_pb_t* pb) {
  free(pb->data);
  memset(pb, 0, sizeof(*pb));
}

bool zxs_pb_failed(const zxs_pb_t* pb) { return pb->failed; }

uint8_t* zxs_pb_release(zxs_pb_t* pb, size_t* size) {
  uint8_t* data = pb->data;
  *size = pb->size;
  memset(pb, 0, sizeof(*pb));
  return data;
}

static bool reserve(zxs_pb_t* pb, size_t more) {
  if (pb->failed) {
    return false;
  }
  if (!zxs_reserve_bytes((void**)&pb->data, &pb->capacity, pb->size, more, 256)) {
    pb->failed = true;
    return false;
  }
  return true;
}

static size_t encode_varint(uint8_t* out, uint64_t value) {
  size_t n = 0;
  while (value >= 0x80) {
    out[n++] = (uint8_t)(value | 0x80);
    value >>= 7;
  }
  out[n++] = (uint8_t)value;
  return n;
}

void zxs_pb_varint(zxs_pb_t* pb, uint64_t value) {
  if (reserve(pb, 10)) {
    pb->size += encode_varint(pb->data + pb->size, value);
  }
}

static void key(zxs_pb_t* pb, uint32_t field, uint32_t wire_type) {
  zxs_pb_varint(pb, ((uint64_t)field << 3) | wire_type);
}

void zxs_pb_varint_field(zxs_pb_t* pb, uint32_t field, uint64_t value) {
  key(pb, field, ZXS_PB_WIRE_VARINT);
  zxs_pb_varint(pb, value);
}

void zxs_pb_varint_field_nz(zxs_pb_t* pb, uint32_t field, uint64_t value) {
  if (value != 0) {
    zxs_pb_varint_field(pb, field, value);
  }
}

void zxs_pb_bytes_field(zxs_pb_t* pb, uint32_t field, const void* bytes, size_t size) {
  key(pb, field, ZXS_PB_WIRE_LEN);
  zxs_pb_varint(pb, size);
  if (size > 0 && reserve(pb, size)) {
    memcpy(pb->data + pb->size, bytes, size);
    pb->size += size;
  }
}

void zxs_pb_packed_field(zxs_pb_t* pb, uint32_t field, const uint64_t* values, size_t count) {
  if (count == 0) {
    return;
  }
  size_t mark = zxs_pb_begin(pb, field);
  for (size_t i = 0; i < count; i++) {
    zxs_pb_varint(pb, values[i]);
  }
  zxs_pb_end(pb, mark);
}

size_t zxs_pb_begin(zxs_pb_t* pb, uint32_t field) {
  key(pb, field, ZXS_PB_WIRE_LEN);
  // One byte reserved for the length: most messages are short; zxs_pb_end() moves the body
  // when the length needs more.
  if (reserve(pb, 1)) {
    pb->data[pb->size++] = 0;
  }
  return pb->size;
}

void zxs_pb_end(zxs_pb_t* pb, size_t mark) {
  if (pb->failed) {
    return;
  }
  size_t length = pb->size - mark;
  uint8_t prefix[10];
  size_t n = encode_varint(prefix, length);
  if (n > 1) {
    if (!reserve(pb, n - 1)) {
      return;
    }
    memmove(pb->data + mark + n - 1, pb->data + mark, length);
    pb->size += n - 1;
  }
  memcpy(pb->data + mark - 1, prefix, n);
}
