// The version API says the version the build was configured with, in both forms.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/zxsampler.h>

#include "zxs_config.h"

static void version_matches_the_build(void** state) {
  (void)state;
  assert_string_equal(zxs_version_string(), ZXS_VERSION);
  assert_int_equal(zxs_version(), ZXS_VERSION_NUMBER);
  char text[32];
  snprintf(text, sizeof(text), "%u.%u.%u", zxs_version() >> 16, (zxs_version() >> 8) & 0xffu,
           zxs_version() & 0xffu);
  assert_string_equal(text, zxs_version_string());
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(version_matches_the_build)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
