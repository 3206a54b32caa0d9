// Fuzzes zxs_fxt_region_iter over arbitrary bytes, as if they were a per-CPU sampler region.
//
// The input is copied to an exactly-sized heap buffer so AddressSanitizer catches any read past
// its end, and iterated again at an odd alignment: the reader promises any alignment, so both
// passes must agree. Records the kernel's sample encoder could have written are re-encoded with
// zxs_fxt_encode_sample() and decoded again (encoder/decoder agreement).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zxsampler/fxt.h>
#include <zxsampler/sampler.h>

#include "fuzz_fxt_check.h"

// FNV-1a over what an iteration produced, to compare the two alignments.
static uint64_t mix(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; i++) {
    h ^= (v >> (8 * i)) & 0xffu;
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

// A record the sampler itself could have produced: re-encode it and read it back.
static void check_sample_round_trip(const zxs_fxt_record_t* rec) {
  const zxs_fxt_large_blob_t* b = &rec->blob;
  if (rec->kind != ZXS_FXT_RECORD_LARGE_BLOB || b->category.len != 0 || b->category.index != 0 ||
      b->name.len != 0 || b->name.index != 0 || rec->num_args != 0 || b->thread.index != 0 ||
      b->payload.size == 0 || b->payload.size % 8 != 0 ||
      b->payload.size / 8 > ZX_SAMPLER_MAX_FRAMES) {
    return;
  }
  const size_t n = b->payload.size / 8;
  uint64_t pcs[ZX_SAMPLER_MAX_FRAMES];
  for (size_t i = 0; i < n; i++) pcs[i] = fuzz_load_le64((const uint8_t*)b->payload.data + 8 * i);
  uint64_t words[ZXS_FXT_SAMPLE_WORDS(ZX_SAMPLER_MAX_FRAMES)];
  const size_t w =
      zxs_fxt_encode_sample(words, b->ticks, b->thread.process_koid, b->thread.thread_koid, pcs, n);
  FUZZ_CHECK(w == ZXS_FXT_SAMPLE_WORDS(n));
  // Exactly sized again, so the second decode is bounds-checked too.
  uint8_t* copy = malloc(w * 8);
  FUZZ_CHECK(copy != NULL);
  memcpy(copy, words, w * 8);
  zxs_fxt_region_iter_t it;
  zxs_fxt_record_t back;
  zxs_fxt_region_iter_init(&it, copy, w * 8);
  FUZZ_CHECK(zxs_fxt_region_next(&it, &back));
  fuzz_check_record(&back, copy, w * 8, false);
  FUZZ_CHECK(back.kind == ZXS_FXT_RECORD_LARGE_BLOB && back.size == w * 8);
  FUZZ_CHECK(back.blob.ticks == b->ticks);
  FUZZ_CHECK(back.blob.thread.index == 0);
  FUZZ_CHECK(back.blob.thread.process_koid == b->thread.process_koid);
  FUZZ_CHECK(back.blob.thread.thread_koid == b->thread.thread_koid);
  FUZZ_CHECK(back.blob.payload.size == b->payload.size);
  FUZZ_CHECK(memcmp(back.blob.payload.data, b->payload.data, b->payload.size) == 0);
  FUZZ_CHECK(!zxs_fxt_region_next(&it, &back) && it.status == ZX_OK);
  free(copy);
}

// Iterates over `size` bytes at `buf`, checks every invariant, and returns a digest of the
// records and the outcome.
static uint64_t iterate(const uint8_t* buf, size_t size) {
  zxs_fxt_region_iter_t it;
  zxs_fxt_record_t rec;
  zxs_fxt_region_iter_init(&it, buf, size);
  uint64_t digest = UINT64_C(0xcbf29ce484222325);
  size_t expect_offset = 0;
  size_t count = 0;
  while (zxs_fxt_region_next(&it, &rec)) {
    // Every record is at least one word, so this also proves termination.
    FUZZ_CHECK(++count <= size / 8);
    FUZZ_CHECK(rec.offset == expect_offset);
    fuzz_check_record(&rec, buf, size, false);
    expect_offset += rec.size;
    FUZZ_CHECK(it.offset == expect_offset && it.offset <= size);
    FUZZ_CHECK(it.status == ZX_OK && !it.done);
    check_sample_round_trip(&rec);
    digest = mix(digest, rec.kind);
    digest = mix(digest, rec.offset);
    digest = mix(digest, rec.size);
    digest = mix(digest, rec.num_args);
  }
  FUZZ_CHECK(it.done);
  FUZZ_CHECK(it.offset == expect_offset);
  if (it.status == ZX_OK) {
    // Only the end of the buffer or a zero header word ends iteration cleanly.
    FUZZ_CHECK(it.offset == size ||
               (size - it.offset >= 8 && fuzz_load_le64(buf + it.offset) == 0));
    fuzz_check_error(&it.error, false);
  } else {
    FUZZ_CHECK(it.status == ZX_ERR_IO_DATA_INTEGRITY);
    FUZZ_CHECK(it.error.offset == it.offset);  // the offending record is the next one
    fuzz_check_error(&it.error, true);
  }
  // Once false, stays false.
  FUZZ_CHECK(!zxs_fxt_region_next(&it, &rec));
  FUZZ_CHECK(it.done && it.offset == expect_offset);
  digest = mix(digest, (uint64_t)(int64_t)it.status);
  digest = mix(digest, it.error.offset);
  return digest;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t* exact = malloc(size == 0 ? 1 : size);
  FUZZ_CHECK(exact != NULL);
  if (size != 0) memcpy(exact, data, size);
  const uint64_t aligned = iterate(size == 0 ? NULL : exact, size);

  // The same bytes at an odd address; the end still abuts the allocation's end.
  const size_t shift = 1 + size % 7;
  uint8_t* odd = malloc(size + shift);
  FUZZ_CHECK(odd != NULL);
  if (size != 0) memcpy(odd + shift, data, size);
  FUZZ_CHECK(iterate(odd + shift, size) == aligned);
  free(odd);
  free(exact);

  // The encoder refuses what no sample can be.
  uint64_t words[ZXS_FXT_SAMPLE_WORDS(ZX_SAMPLER_MAX_FRAMES + 1)] = {0};
  FUZZ_CHECK(zxs_fxt_encode_sample(words, 0, 0, 0, words, 0) == 0);
  FUZZ_CHECK(zxs_fxt_encode_sample(words, 0, 0, 0, words, ZX_SAMPLER_MAX_FRAMES + 1) == 0);
  return 0;
}
