// Fuchsia's cpu-trace record format: the encoder (internal; the reader is public, perfmon.h).
//
// Layouts are in perfmon.h. Every function writes little-endian bytes at any alignment and
// returns the bytes written; none allocates, locks or fails. Async-signal-safe.
#ifndef ZXSAMPLER_SRC_CORE_PERFMON_RECORDS_H_
#define ZXSAMPLER_SRC_CORE_PERFMON_RECORDS_H_

#include <stddef.h>
#include <stdint.h>
#include <zxsampler/perfmon.h>

// The largest record: LAST_BRANCH with 32 branches.
#define ZXS_PERFMON_MAX_RECORD_SIZE ZXS_PERFMON_LAST_BRANCH_RECORD_SIZE(32)

// The architecture this library was built for (ZXS_PERFMON_ARCH_*).
uint16_t zxs_perfmon_host_arch(void);

// ZXS_PERFMON_BUFFER_HEADER_SIZE bytes.
size_t zxs_perfmon_encode_header(uint8_t* out, const zxs_perfmon_buffer_header_t* header);
size_t zxs_perfmon_encode_time(uint8_t* out, uint16_t event, zx_ticks_t time);
size_t zxs_perfmon_encode_tick(uint8_t* out, uint16_t event);
size_t zxs_perfmon_encode_count(uint8_t* out, uint16_t event, uint64_t count);
size_t zxs_perfmon_encode_value(uint8_t* out, uint16_t event, uint64_t value);
size_t zxs_perfmon_encode_pc(uint8_t* out, uint16_t event, uint64_t aspace, uint64_t pc);
// n is clamped to ZXS_PERFMON_MAX_NUM_LAST_BRANCH.
size_t zxs_perfmon_encode_last_branch(uint8_t* out, uint16_t event, uint64_t aspace,
                                      const zxs_perfmon_last_branch_t* branches, uint32_t n);
// Re-encodes a record the reader decoded (its type decides the layout); 0 for an unknown type.
size_t zxs_perfmon_encode_record(uint8_t* out, const zxs_perfmon_record_t* record);

#endif  // ZXSAMPLER_SRC_CORE_PERFMON_RECORDS_H_
