// A minimal protocol-buffers encoder (internal): just what the pprof exporter needs.
//
// Writes varint and length-delimited fields into a growable byte buffer. Allocation failures
// are sticky: every later call does nothing and zxs_pb_failed() reports it, so callers check
// once at the end. Not thread-safe per buffer; distinct buffers are independent.
#ifndef ZXSAMPLER_SRC_REPORT_PROTOBUF_WRITER_H_
#define ZXSAMPLER_SRC_REPORT_PROTOBUF_WRITER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zxs_pb {
  uint8_t* data;  // malloc'd; owned by the buffer until zxs_pb_release()
  size_t size;
  size_t capacity;
  bool failed;  // an allocation failed: the content is incomplete
} zxs_pb_t;

// Wire types (the low 3 bits of a field key).
#define ZXS_PB_WIRE_VARINT 0u
#define ZXS_PB_WIRE_LEN 2u

void zxs_pb_init(zxs_pb_t* pb);
void zxs_pb_free(zxs_pb_t* pb);
bool zxs_pb_failed(const zxs_pb_t* pb);

// Hands the bytes to the caller (to free()) and empties the buffer.
uint8_t* zxs_pb_release(zxs_pb_t* pb, size_t* size);

// A bare varint (no key).
void zxs_pb_varint(zxs_pb_t* pb, uint64_t value);

// Field `field` as a varint. Covers uint64, bool and int64 (an int64 is cast: negative values
// take 10 bytes, as protobuf's int64 encoding does). Proto3 omits zero values; so does
// zxs_pb_varint_field_nz().
void zxs_pb_varint_field(zxs_pb_t* pb, uint32_t field, uint64_t value);
void zxs_pb_varint_field_nz(zxs_pb_t* pb, uint32_t field, uint64_t value);

// Field `field` as length-delimited bytes (strings, embedded messages already encoded).
void zxs_pb_bytes_field(zxs_pb_t* pb, uint32_t field, const void* bytes, size_t size);

// A packed repeated varint field (omitted when count is 0).
void zxs_pb_packed_field(zxs_pb_t* pb, uint32_t field, const uint64_t* values, size_t count);

// An embedded message written in place: zxs_pb_begin() writes the key and returns a mark;
// write the message's fields, then zxs_pb_end() inserts their length. Nesting is fine.
size_t zxs_pb_begin(zxs_pb_t* pb, uint32_t field);
void zxs_pb_end(zxs_pb_t* pb, size_t mark);

#endif  // ZXSAMPLER_SRC_REPORT_PROTOBUF_WRITER_H_
