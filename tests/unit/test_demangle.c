// Demangled names for people; mangled ones left for tools.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>

#include "demangle.h"

static void expect(const char* mangled, const char* want) {
  char* got = zxs_demangle(mangled);
  if (want == NULL) {
    assert_null(got);
  } else {
    assert_non_null(got);
    assert_string_equal(got, want);
  }
  free(got);
}

static void test_cxx(void** state) {
  (void)state;
  if (ZXS_HAVE_CXA_DEMANGLE == 0) skip();  // no C++ runtime in this build
  expect("_ZN3foo3barEv", "foo::bar()");
  expect("_ZSt4sortIPiEvT_S1_", "void std::sort<int*>(int*, int*)");
  expect("_Z14bitmap_set_bitP11bitmap_headi", "bitmap_set_bit(bitmap_head*, int)");
}

static void test_rust_legacy_loses_its_hash(void** state) {
  (void)state;
  if (ZXS_HAVE_CXA_DEMANGLE == 0) skip();
  expect("_ZN4core3ptr13drop_in_place17h0123456789abcdefE", "core::ptr::drop_in_place");
}

static void test_symbol_version_dropped(void** state) {
  (void)state;
  expect("__libc_start_main@@GLIBC_2.34", "__libc_start_main");
  expect("memcpy@GLIBC_2.2.5", "memcpy");
  if (ZXS_HAVE_CXA_DEMANGLE != 0) expect("_ZN3foo3barEv@@V1", "foo::bar()");
  expect("@", NULL);  // nothing before it: not a version
}

static void test_not_mangled(void** state) {
  (void)state;
  expect("main", NULL);
  expect("", NULL);
  expect(NULL, NULL);
  expect("_Zgarbage!", NULL);
  expect("_RNvCs1234_5crate4main", NULL);  // Rust v0: left as it is
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cxx),
      cmocka_unit_test(test_rust_legacy_loses_its_hash),
      cmocka_unit_test(test_not_mangled),
      cmocka_unit_test(test_symbol_version_dropped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
