// Fuchsia's cpu-trace record format: encoder and bounds-checked reader.
#include "perfmon_records.h"

#include <string.h>

uint16_t zxs_perfmon_host_arch(void) {
#if defined(__x86_64__)
  return ZXS_PERFMON_ARCH_X64;
#elif defined(__aarch64__)
  return ZXS_PERFMON_ARCH_ARM64;
#else
  return ZXS_PERFMON_ARCH_UNKNOWN;
#endif
}

// --- Little-endian stores and loads at any alignment
// ----------------------------------------------

static void put16(uint8_t* p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

// --- Encoder ------------------------------------------------------------------------------------

static size_t put_record_header(uint8_t* out, uint8_t type, uint16_t event) {
  out[0] = type;
  out[1] = 0;
  put16(out + 2, event);
  return 4;
}

size_t zxs_perfmon_encode_header(uint8_t* out, const zxs_perfmon_buffer_header_t* header) {
  put16(out, header->version);
  put16(out + 2, header->arch);
  put32(out + 4, header->flags);
  put64(out + 8, (uint64_t)header->ticks_per_second);
  put64(out + 16, header->capture_end);
  return ZXS_PERFMON_BUFFER_HEADER_SIZE;
}

size_t zxs_perfmon_encode_time(uint8_t* out, uint16_t event, zx_ticks_t time) {
  put_record_header(out, ZXS_PERFMON_RECORD_TIME, event);
  put64(out + 4, (uint64_t)time);
  return ZXS_PERFMON_TIME_RECORD_SIZE;
}

size_t zxs_perfmon_encode_tick(uint8_t* out, uint16_t event) {
  return put_record_header(out, ZXS_PERFMON_RECORD_TICK, event);
}

size_t zxs_perfmon_encode_count(uint8_t* out, uint16_t event, uint64_t count) {
  put_record_header(out, ZXS_PERFMON_RECORD_COUNT, event);
  put64(out + 4, count);
  return ZXS_PERFMON_COUNT_RECORD_SIZE;
}

size_t zxs_perfmon_encode_value(uint8_t* out, uint16_t event, uint64_t value) {
  put_record_header(out, ZXS_PERFMON_RECORD_VALUE, event);
  put64(out + 4, value);
  return ZXS_PERFMON_VALUE_RECORD_SIZE;
}

size_t zxs_perfmon_encode_pc(uint8_t* out, uint16_t event, uint64_t aspace, uint64_t pc) {
  put_record_header(out, ZXS_PERFMON_RECORD_PC, event);
  put64(out + 4, aspace);
  put64(out + 12, pc);
  return ZXS_PERFMON_PC_RECORD_SIZE;
}

size_t zxs_perfmon_encode_last_branch(uint8_t* out, uint16_t event, uint64_t aspace,
                                      const zxs_perfmon_last_branch_t* branches, uint32_t n) {
  if (n > ZXS_PERFMON_MAX_NUM_LAST_BRANCH) n = ZXS_PERFMON_MAX_NUM_LAST_BRANCH;
  put_record_header(out, ZXS_PERFMON_RECORD_LAST_BRANCH, event);
  put32(out + 4, n);
  put64(out + 8, aspace);
  for (uint32_t i = 0; i < n; i++) {
    uint8_t* e = out + 16 + 24 * i;
    put64(e, branches[i].from);
    put64(e + 8, branches[i].to);
    put64(e + 16, branches[i].info);
  }
  return ZXS_PERFMON_LAST_BRANCH_RECORD_SIZE(n);
}

size_t zxs_perfmon_encode_record(uint8_t* out, const zxs_perfmon_record_t* r) {
  size_t n;
  switch (r->type) {
    case ZXS_PERFMON_RECORD_TIME:
      n = zxs_perfmon_encode_time(out, r->event, r->time);
      break;
    case ZXS_PERFMON_RECORD_TICK:
      n = zxs_perfmon_encode_tick(out, r->event);
      break;
    case ZXS_PERFMON_RECORD_COUNT:
      n = zxs_perfmon_encode_count(out, r->event, r->count);
      break;
    case ZXS_PERFMON_RECORD_VALUE:
      n = zxs_perfmon_encode_value(out, r->event, r->value);
      break;
    case ZXS_PERFMON_RECORD_PC:
      n = zxs_perfmon_encode_pc(out, r->event, r->pc.aspace, r->pc.pc);
      break;
    case ZXS_PERFMON_RECORD_LAST_BRANCH:
      n = zxs_perfmon_encode_last_branch(out, r->event, r->last_branch.aspace,
                                         r->last_branch.branches, r->last_branch.num_branches);
      break;
    default:
      return 0;
  }
  out[1] = r->reserved_flags;
  return n;
}

// --- Reader -------------------------------------------------------------------------------------

static zx_status_t reader_fail(zxs_perfmon_reader_t* r, zx_status_t status, const char* error,
                               size_t offset) {
  r->status = status;
  r->error = error;
  r->error_offset = offset;
  r->done = true;
  return status;
}

zx_status_t zxs_perfmon_reader_init(zxs_perfmon_reader_t* r, const void* buffer, size_t size) {
  if (r == NULL) return ZX_ERR_INVALID_ARGS;
  memset(r, 0, sizeof(*r));
  r->error = "";
  r->done = true;
  if (buffer == NULL && size > 0) {
    return reader_fail(r, ZX_ERR_INVALID_ARGS, "buffer is NULL", 0);
  }
  r->data = buffer;
  r->size = size;
  if (size < ZXS_PERFMON_BUFFER_HEADER_SIZE) {
    return reader_fail(r, ZX_ERR_IO_DATA_INTEGRITY, "buffer smaller than its header", 0);
  }
  const uint8_t* p = r->data;
  r->header.version = get16(p);
  r->header.arch = get16(p + 2);
  r->header.flags = get32(p + 4);
  r->header.ticks_per_second = (zx_ticks_t)get64(p + 8);
  r->header.capture_end = get64(p + 16);
  if (r->header.version != ZXS_PERFMON_BUFFER_VERSION) {
    return reader_fail(r, ZX_ERR_NOT_SUPPORTED, "unknown buffer version", 0);
  }
  if (r->header.capture_end < ZXS_PERFMON_BUFFER_HEADER_SIZE) {
    return reader_fail(r, ZX_ERR_IO_DATA_INTEGRITY, "capture_end inside the header", 16);
  }
  if (r->header.capture_end > size) {
    return reader_fail(r, ZX_ERR_IO_DATA_INTEGRITY, "capture_end past the buffer", 16);
  }
  if (r->header.capture_end % 4 != 0) {
    return reader_fail(r, ZX_ERR_IO_DATA_INTEGRITY, "capture_end not 4-byte aligned", 16);
  }
  r->offset = ZXS_PERFMON_BUFFER_HEADER_SIZE;
  r->end = (size_t)r->header.capture_end;
  r->done = false;
  return ZX_OK;
}

// The size of the record of `type` starting at `p`, with `avail` bytes readable from p (>= 4);
// 0 and *error for a record that is malformed or does not fit.
static size_t record_size(const uint8_t* p, size_t avail, const char** error) {
  size_t size;
  switch (p[0]) {
    case ZXS_PERFMON_RECORD_TIME:
      size = ZXS_PERFMON_TIME_RECORD_SIZE;
      break;
    case ZXS_PERFMON_RECORD_TICK:
      size = ZXS_PERFMON_TICK_RECORD_SIZE;
      break;
    case ZXS_PERFMON_RECORD_COUNT:
      size = ZXS_PERFMON_COUNT_RECORD_SIZE;
      break;
    case ZXS_PERFMON_RECORD_VALUE:
      size = ZXS_PERFMON_VALUE_RECORD_SIZE;
      break;
    case ZXS_PERFMON_RECORD_PC:
      size = ZXS_PERFMON_PC_RECORD_SIZE;
      break;
    case ZXS_PERFMON_RECORD_LAST_BRANCH: {
      if (avail < 8) {
        *error = "record crosses capture_end";
        return 0;
      }
      uint32_t n = get32(p + 4);
      if (n > ZXS_PERFMON_MAX_NUM_LAST_BRANCH) {
        *error = "last-branch record with more than 32 branches";
        return 0;
      }
      size = ZXS_PERFMON_LAST_BRANCH_RECORD_SIZE(n);
      break;
    }
    case ZXS_PERFMON_RECORD_RESERVED:
      *error = "record of the reserved type 0";
      return 0;
    default:
      *error = "record of an unknown type";
      return 0;
  }
  if (size > avail) {
    *error = "record crosses capture_end";
    return 0;
  }
  return size;
}

bool zxs_perfmon_reader_next(zxs_perfmon_reader_t* r, zxs_perfmon_record_t* rec) {
  if (r == NULL || rec == NULL || r->done) return false;
  // offset and end are 4-byte aligned and offset <= end <= size: checked at init, kept by
  // every record size being a multiple of 4.
  if (r->offset >= r->end) {
    r->done = true;
    return false;
  }
  const uint8_t* p = r->data + r->offset;
  const size_t avail = r->end - r->offset;  // >= 4
  const char* error = "";
  const size_t size = record_size(p, avail, &error);
  if (size == 0) {
    reader_fail(r, ZX_ERR_IO_DATA_INTEGRITY, error, r->offset);
    return false;
  }
  memset(rec, 0, sizeof(*rec));
  rec->type = p[0];
  rec->reserved_flags = p[1];
  rec->event = get16(p + 2);
  rec->offset = r->offset;
  rec->size = size;
  switch (rec->type) {
    case ZXS_PERFMON_RECORD_TIME:
      r->time = (zx_ticks_t)get64(p + 4);
      break;
    case ZXS_PERFMON_RECORD_COUNT:
      rec->count = get64(p + 4);
      break;
    case ZXS_PERFMON_RECORD_VALUE:
      rec->value = get64(p + 4);
      break;
    case ZXS_PERFMON_RECORD_PC:
      rec->pc.aspace = get64(p + 4);
      rec->pc.pc = get64(p + 12);
      break;
    case ZXS_PERFMON_RECORD_LAST_BRANCH:
      rec->last_branch.num_branches = get32(p + 4);
      rec->last_branch.aspace = get64(p + 8);
      for (uint32_t i = 0; i < rec->last_branch.num_branches; i++) {
        const uint8_t* e = p + 16 + 24 * i;
        rec->last_branch.branches[i].from = get64(e);
        rec->last_branch.branches[i].to = get64(e + 8);
        rec->last_branch.branches[i].info = get64(e + 16);
      }
      break;
    default:
      break;
  }
  rec->time = r->time;
  r->offset += size;
  return true;
}
