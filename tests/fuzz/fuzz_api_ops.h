// The program format of fuzz_sampler_api.c, shared with make_seeds.c so seeds stay in step.
//
// An input is: one byte choosing the calling thread's stack bounds (0: the whole fake stack),
// then operations until the input ends (at most 256). An operation is one byte, taken modulo
// FUZZ_OP_COUNT, followed by its operands. Multi-byte operands are little-endian; a missing byte
// reads as 0.
//
// Common operands:
//   handle  1 byte b: b < 0xe0 picks the input's b-th handle modulo how many it has (0 process,
//           1 root VMAR, 2 this thread, 3 a debug resource, then each handle in the order the
//           library returned it, closed ones included); 0xe0..0xef ZX_HANDLE_INVALID; 0xf0..
//           raw: 4 more bytes.
//   pick    1 byte b: b < 0xc0 the well-formed value; 0xc0 + i the i-th edge case listed at the
//           call; past the list: 8 more bytes, the raw value.
//   regs    mode byte m, pc (8 bytes); fp by m & 3: 0-1 stack-relative (2 bytes r: stack base +
//           r % (STACK + 64) - 32), 2 raw (8 bytes), 3 zero; sp by (m >> 2) & 3: 0-1 zero,
//           2 stack-relative (2 bytes), 3 raw (8 bytes).
#ifndef ZXSAMPLER_TESTS_FUZZ_FUZZ_API_OPS_H_
#define ZXSAMPLER_TESTS_FUZZ_FUZZ_API_OPS_H_

// The fake stack's size in bytes (stack-relative operands are offsets into it, plus 32).
#define FUZZ_API_STACK_BYTES 8192u

enum fuzz_api_op {
  // handle rsrc, pick options {1, ~0}, config byte (>= 0xf0: NULL), pick config_size
  // {0, 23, 25, 32, 16}, pick period {MIN, MIN-1, 0, -1, INT64_MAX, INT64_MIN}, 2 bytes s (the
  // well-formed buffer size is 1 + s % 12288), pick buffer_size {0, 1, 4096, 4097, 64K, 64K+1,
  // MAX, MAX+1, SIZE_MAX}, pick discipline {1, ~0}, byte (>= 0xf0: iob_out NULL).
  FUZZ_OP_CREATE = 0,
  FUZZ_OP_ATTACH = 1,  // handle iob, handle thread
  FUZZ_OP_START = 2,   // handle iob
  FUZZ_OP_STOP = 3,    // handle iob
  // handle, mode byte (% 4: same rights, held & bits, bits, held minus APPLY_PROFILE),
  // 4 bytes bits, byte (>= 0xf0: out NULL)
  FUZZ_OP_DUPLICATE = 4,
  FUZZ_OP_CLOSE = 5,  // handle
  // handle, topic byte t (% 6: BASIC, IOB, IOB_REGIONS, the byte itself, the raw 2 bytes,
  // TASK_RUNTIME or, when t / 6 is odd, TASK_RUNTIME_V1),
  // size byte (% 6: 0-1 exact, record - 1, 0, records * (b % 10) (+7 if b & 0x40), raw % 4096),
  // 2 bytes raw, flags (low nibble 0xf: buffer NULL; 0x10 actual NULL; 0x20 avail NULL)
  FUZZ_OP_GET_INFO = 6,
  // vmar byte (< 0xc0: root VMAR, else a handle follows), pick options {0, R|W, R|X, W,
  // R|SPECIFIC, SPECIFIC, ~0}, pick vmar_offset {4096, 1}, handle iob, index byte (< 0xf0: % 9,
  // else 4 bytes), offset byte (< 0xa0: 0; < 0xf0: (b % 20) pages; < 0xf8: b; else 8 bytes),
  // length byte (< 0xa0: the rest of the region; < 0xf0: (b % 20) pages; < 0xf8: b; else 8
  // bytes), byte (>= 0xf8: mapped_addr NULL)
  FUZZ_OP_MAP = 7,
  // vmar byte (as for map), mode byte (< 0xc0 with a mapping: that mapping + (mode % 5 - 2)
  // pages; < 0xe0: 4 bytes, page-aligned; else 8 bytes), mapping byte, length byte (< 0xe0:
  // (1 + b % 16) pages; < 0xf0: 0; else b)
  FUZZ_OP_UNMAP = 8,
  FUZZ_OP_CHECK_MAPPING = 9,  // mapping byte: compares it with the model
  FUZZ_OP_FIRE = 10,          // thread byte (& 1: 0 this thread, 1 the other), regs
  FUZZ_OP_FIRE_ALT = 11,      // the same (sampling is the point: two opcodes)
  // late-signal byte (which attachment; & 0x80: a stale generation), regs
  FUZZ_OP_LATE_FIRE = 12,
  FUZZ_OP_SET_CPU = 13,         // byte: % 10 (8 and 9 are past the fake's CPU limit)
  FUZZ_OP_SET_TICKS = 14,       // 8 bytes
  FUZZ_OP_SET_ONLINE = 15,      // byte: bit mask of CPUs 0..7 (0 means CPU 0)
  FUZZ_OP_FAIL_REGION = 16,     // the next region allocation fails
  FUZZ_OP_FAIL_ARM = 17,        // the next source arm fails
  FUZZ_OP_SWITCH = 18,          // byte & 1: debugging syscalls on/off
  FUZZ_OP_DEBUG_RESOURCE = 19,  // byte (>= 0xf0: out NULL)
  FUZZ_OP_THREAD_GET = 20,      // byte (>= 0xf0: out NULL; odd: a thread the backend cannot name)
  FUZZ_OP_OTHER_THREAD = 21,    // byte & 1: alive; byte & 1: the exit hook runs
  // 2 bytes word index (% 1024), mode byte (< 0xa0: stack-relative, 2 bytes; < 0xf0: 8 bytes
  // raw; else 0)
  FUZZ_OP_STACK_WORD = 22,
  // opcode byte & 0x80: zxs_thread_self() is constant; else get_stats: handle iob, byte
  // (>= 0xf0: stats NULL)
  FUZZ_OP_STATS_OR_SELF = 23,
  FUZZ_OP_COUNT = 24,
};

// Opcode bytes for the two halves of FUZZ_OP_STATS_OR_SELF (both are 23 modulo 24).
#define FUZZ_OP_STATS_BYTE 23u
#define FUZZ_OP_SELF_BYTE 143u  // 23 + 5 * 24: has bit 0x80

#endif  // ZXSAMPLER_TESTS_FUZZ_FUZZ_API_OPS_H_
