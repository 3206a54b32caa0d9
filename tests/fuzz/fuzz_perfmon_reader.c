// Fuzzes the perfmon buffer reader (zxs_perfmon_reader_*) over arbitrary bytes, read twice:
//   - as a whole buffer, header included (the header decides how much is read);
//   - as records behind a valid header whose capture_end covers them all (so random bytes reach
//     the record decoder, which a random header would rarely let them).
// Each input is copied to an exactly-sized heap buffer so AddressSanitizer catches a read past
// its end, and read again at an odd alignment: both passes must agree. Every decoded record is
// re-encoded with the core's encoder and must give back the exact input bytes.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/perfmon.h>

#include "fuzz_fxt_check.h"
#include "perfmon_records.h"

static uint64_t mix(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; i++) {
    h ^= (v >> (8 * i)) & 0xffu;
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

// Reads `size` bytes at `buf` and checks every invariant; returns a digest of what was read.
static uint64_t read_buffer(const uint8_t* buf, size_t size) {
  zxs_perfmon_reader_t r;
  zxs_perfmon_record_t rec;
  uint64_t digest = UINT64_C(0xcbf29ce484222325);
  const zx_status_t init = zxs_perfmon_reader_init(&r, size == 0 ? NULL : buf, size);
  digest = mix(digest, (uint64_t)(int64_t)init);
  if (init != ZX_OK) {
    FUZZ_CHECK(init == ZX_ERR_IO_DATA_INTEGRITY || init == ZX_ERR_NOT_SUPPORTED);
    FUZZ_CHECK(r.done && r.status == init && r.error != NULL && r.error[0] != '\0');
    FUZZ_CHECK(!zxs_perfmon_reader_next(&r, &rec));
    return digest;
  }
  FUZZ_CHECK(r.end >= ZXS_PERFMON_BUFFER_HEADER_SIZE && r.end <= size && r.end % 4 == 0);
  FUZZ_CHECK(r.header.capture_end == r.end);
  size_t expect = ZXS_PERFMON_BUFFER_HEADER_SIZE, count = 0;
  zx_ticks_t time = 0;
  while (zxs_perfmon_reader_next(&r, &rec)) {
    FUZZ_CHECK(++count <= size / 4);  // every record is at least 4 bytes: termination
    FUZZ_CHECK(rec.offset == expect);
    FUZZ_CHECK(rec.size >= 4 && rec.size % 4 == 0 && rec.size <= r.end - rec.offset);
    FUZZ_CHECK(rec.size <= ZXS_PERFMON_MAX_RECORD_SIZE);
    FUZZ_CHECK(rec.type >= ZXS_PERFMON_RECORD_TIME && rec.type <= ZXS_PERFMON_RECORD_LAST_BRANCH);
    if (rec.type == ZXS_PERFMON_RECORD_TIME) time = rec.time;
    FUZZ_CHECK(rec.time == time);
    if (rec.type == ZXS_PERFMON_RECORD_LAST_BRANCH) {
      FUZZ_CHECK(rec.last_branch.num_branches <= ZXS_PERFMON_MAX_NUM_LAST_BRANCH);
    }
    // The encoder gives the record's bytes back.
    uint8_t again[ZXS_PERFMON_MAX_RECORD_SIZE];
    FUZZ_CHECK(zxs_perfmon_encode_record(again, &rec) == rec.size);
    FUZZ_CHECK(memcmp(again, buf + rec.offset, rec.size) == 0);
    expect += rec.size;
    FUZZ_CHECK(r.offset == expect && r.status == ZX_OK && !r.done);
    digest = mix(digest, rec.type);
    digest = mix(digest, rec.event);
    digest = mix(digest, rec.size);
    digest = mix(digest, (uint64_t)rec.time);
  }
  FUZZ_CHECK(r.done);
  if (r.status == ZX_OK) {
    FUZZ_CHECK(r.offset == r.end);  // only capture_end ends reading cleanly
  } else {
    FUZZ_CHECK(r.status == ZX_ERR_IO_DATA_INTEGRITY);
    FUZZ_CHECK(r.error_offset == r.offset && r.offset < r.end);  // the offending record
    FUZZ_CHECK(r.error != NULL && r.error[0] != '\0');
  }
  FUZZ_CHECK(!zxs_perfmon_reader_next(&r, &rec));  // once false, stays false
  digest = mix(digest, (uint64_t)(int64_t)r.status);
  return mix(digest, r.offset);
}

// Reads `data` exactly sized and at an odd address; both must agree.
static void read_both_ways(const uint8_t* data, size_t size) {
  uint8_t* exact = calloc(1, size == 0 ? 1 : size);
  FUZZ_CHECK(exact != NULL);
  if (size != 0) memcpy(exact, data, size);
  const uint64_t aligned = read_buffer(exact, size);
  const size_t shift = 1 + size % 3;
  uint8_t* odd = calloc(1, size + shift);
  FUZZ_CHECK(odd != NULL);
  if (size != 0) memcpy(odd + shift, data, size);
  FUZZ_CHECK(read_buffer(odd + shift, size) == aligned);
  free(odd);
  free(exact);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read_both_ways(data, size);
  // The same bytes as records behind a valid header.
  const size_t records = size & ~(size_t)3;
  uint8_t* framed = malloc(ZXS_PERFMON_BUFFER_HEADER_SIZE + size);
  FUZZ_CHECK(framed != NULL);
  const zxs_perfmon_buffer_header_t header = {
      .version = ZXS_PERFMON_BUFFER_VERSION,
      .arch = ZXS_PERFMON_ARCH_X64,
      .ticks_per_second = 1000000000,
      .capture_end = ZXS_PERFMON_BUFFER_HEADER_SIZE + records};
  zxs_perfmon_encode_header(framed, &header);
  if (size != 0) memcpy(framed + ZXS_PERFMON_BUFFER_HEADER_SIZE, data, size);
  read_both_ways(framed, ZXS_PERFMON_BUFFER_HEADER_SIZE + size);
  free(framed);
  return 0;
}
