// See inline_code.c.
#ifndef ZXSAMPLER_TESTS_UNIT_INLINE_CODE_H_
#define ZXSAMPLER_TESTS_UNIT_INLINE_CODE_H_

#include <stdint.h>

extern uintptr_t inline_probe_return_address;
extern int inline_line[3];
extern volatile uint64_t inline_sink;

void inline_probe(int line);
uint64_t inline_outer(uint64_t x);

#endif  // ZXSAMPLER_TESTS_UNIT_INLINE_CODE_H_
