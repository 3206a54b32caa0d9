// The value of a hex digit (internal): the one parser of hex text's digits.
#ifndef ZXSAMPLER_SRC_UTIL_HEX_DIGIT_H_
#define ZXSAMPLER_SRC_UTIL_HEX_DIGIT_H_

// 0..15 for '0'-'9', 'a'-'f', 'A'-'F'; -1 for any other character.
static inline int zxs_hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

#endif  // ZXSAMPLER_SRC_UTIL_HEX_DIGIT_H_
