// Demangled names for people; mangled ones left for tools.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>

#include "demangle.h"

static void expect(const char* mangled, const char* want) {
  char* got = zxs_demangle(mangled);
  if (want == NULL) {
    assert_null(got);
  } else if (got == NULL || strcmp(got, want) != 0) {
    fail_msg("%s: got %s, want %s", mangled, got != NULL ? got : "NULL", want);
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

// Rust names as rustc-demangle's alternate form (and perf) show them; the v0 vectors are the
// published ones of rustc-demangle's tests.
static void test_rust_legacy(void** state) {
  (void)state;
  expect("_ZN4core3ptr13drop_in_place17h0123456789abcdefE", "core::ptr::drop_in_place");
  expect("_ZN49_$LT$rsmix..Xorshift$u20$as$u20$rsmix..Kernel$GT$3run17h5d2bd0e1a2b3c4d5E",
         "<rsmix::Xorshift as rsmix::Kernel>::run");
  expect(
      "_ZN71_$LT$Test$u20$$u2b$$u20$$u27$static$u20$as$u20$foo..Bar$LT$Test$GT$$GT$3bar"
      "17h930b740aa94f1d3aE",
      "<Test + 'static as foo::Bar<Test>>::bar");
  expect("_ZN23$RP$$RF$$LP$$C$$SP$$BP$4test17h0123456789abcdefE", ")&(,@*::test");
  expect("_ZN4test1a2bc17h0123456789abcdefE", "test::a::bc");
  expect("_ZN3foo3bar17h05af221e174051e9E.llvm.4055521917", "foo::bar");
  expect("_ZN3foo3bar17h05af221e174051e9E.cold.12", "foo::bar.cold.12");
  expect("_ZN3foo3bar17h05af221e174051e9E@@V1", "foo::bar");
  expect("_ZN3foo27$u7b$$u7b$closure$u7d$$u7d$17h05af221e174051e9E", "foo::{{closure}}");
  expect("_ZN10alloc$u7f$3foo17h05af221e174051e9E", "alloc$u7f$::foo");  // control: kept
}

static void test_rust_v0(void** state) {
  (void)state;
  expect("_RNvC6_123foo3bar", "123foo::bar");
  expect("_RNvCs1234_5crate4main", "crate::main");
  expect("_RNqCs4fqI2P2rA04_11utf8_identsu30____7hkackfecea1cbdathfdh9hlq6y",
         "utf8_idents::საჭმელად_გემრიელი_სადილი");
  expect("_RNCNCNgCs6DXkGYLi8lr_2cc5spawn00B5_", "cc::spawn::{closure#0}::{closure#0}");
  expect(
      "_RNCINkXs25_NgCsbmNqQUJIY6D_4core5sliceINyB9_4IterhENuNgNoBb_4iter8iterator8Iterator"
      "9rpositionNCNgNpB9_6memchr7memrchrs_0E0Bb_",
      "<core::slice::Iter<u8> as core::iter::iterator::Iterator>::rposition::"
      "<core::slice::memchr::memrchr::{closure#1}>::{closure#0}");
  expect(
      "_RINbNbCskIICzLVDPPb_5alloc5alloc8box_freeDINbNiB4_5boxed5FnBoxuEp6OutputuEL_"
      "ECs1iopQbuBiw2_3std",
      "alloc::alloc::box_free::<dyn alloc::boxed::FnBox<(), Output = ()>>");
  expect("_RMC0INtC8arrayvec8ArrayVechKj7b_E", "<arrayvec::ArrayVec<u8, 123>>");
  expect("_RMCs4fqI2P2rA04_13const_genericINtB0_8UnsignedKhb_E", "<const_generic::Unsigned<11>>");
  expect("_RMCs4fqI2P2rA04_13const_genericINtB0_6SignedKs98_E", "<const_generic::Signed<152>>");
  expect("_RMCs4fqI2P2rA04_13const_genericINtB0_6SignedKanb_E", "<const_generic::Signed<-11>>");
  expect("_RMCs4fqI2P2rA04_13const_genericINtB0_4BoolKb0_E", "<const_generic::Bool<false>>");
  expect("_RMCs4fqI2P2rA04_13const_genericINtB0_4BoolKb1_E", "<const_generic::Bool<true>>");
  expect("_RMCs4fqI2P2rA04_13const_genericINtB0_4CharKc76_E", "<const_generic::Char<'v'>>");
  expect("_RMCs4fqI2P2rA04_13const_genericINtB0_4CharKca_E", "<const_generic::Char<'\\n'>>");
  expect("_RMCs4fqI2P2rA04_13const_genericINtB0_4CharKc2202_E", "<const_generic::Char<'∂'>>");
  expect("_RNvNvMCs4fqI2P2rA04_13const_genericINtB4_3FooKpE3foo3FOO",
         "<const_generic::Foo<_>>::foo::FOO");
  // Backrefs that double at each level: 2^6 copies, printed in full.
  char* tuples = zxs_demangle("_RMC0TTTTTTpB8_EB7_EB6_EB5_EB4_EB3_E");
  assert_non_null(tuples);
  assert_int_equal(strlen(tuples), 2 + 64 + 63 * 2 + 63 * 2);
  free(tuples);
  // ThinLTO and other suffixes.
  expect("_RC3foo.llvm.9D1C9369", "foo");
  expect("_RC3foo.llvm.9D1C9369@@16", "foo");
  expect("_RNvC9backtrace3foo.llvm.A5310EB9", "backtrace::foo");
  expect("_RNvNtNtNtNtCs92dm3009vxr_4rand4rngs7adapter9reseeding4fork23FORK_HANDLER_REGISTERED.0.0",
         "rand::rngs::adapter::reseeding::fork::FORK_HANDLER_REGISTERED.0.0");
}

// Types: references with lifetimes, pointers, arrays, slices, tuples, fn pointers, dyn.
static void test_rust_v0_types(void** state) {
  (void)state;
  expect("_RMC0RL_e", "<&str>");
  expect("_RMC0QSh", "<&mut [u8]>");
  expect("_RMC0PAhj4_", "<*const [u8; 4]>");
  expect("_RMC0OTlE", "<*mut (i32,)>");
  expect("_RMC0TlmE", "<(i32, u32)>");
  expect("_RMC0FKCmEl", "<extern \"C\" fn(u32) -> i32>");
  expect("_RMC0FUK9rust_callEu", "<unsafe extern \"rust-call\" fn()>");
  expect("_RMC0FG_RL0_hEu", "<for<'a> fn(&'a u8)>");
  expect("_RMC0DNvC4core3AnyEL_", "<dyn core::Any>");
  expect("_RMC0DG_INtC4core2FnTRL0_hEEp6OutputuEL_",
         "<dyn for<'a> core::Fn<(&'a u8,), Output = ()>>");
  expect("_RINvC1a1fKRe616263_E", "a::f::<{\"abc\"}>");
}

// Malformed or hostile input: no crash, nothing demangled, bounded work.
static void test_rust_malformed(void** state) {
  (void)state;
  const char* bad[] = {
      "_R",
      "_RN",
      "_RNv",
      "_RC",
      "_RC9abc",
      "_RNvC3foo",
      "_RB_",
      "_RNvB_3foo",
      "_RMC0",
      "_RMC0A",
      "_RMC0Ah",
      "_RMC0AhK",
      "_RMC0Kj",
      "_RC3foo3bar",
      "_RC3foo!",
      "_RNvC3foou3BAR",
      "_RNvC3foou1_",
      "_RMC0FG99999999999_uEu",
      "_RC0u2_zz",
      "_RMC0Kc110000_",
      "_R0C3foo",
      "_ZN3foo3bar17h0123456789abcdeE",

      "_ZN99999999999999999999999foo17h0123456789abcdefE",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char* got = zxs_demangle(bad[i]);
    if (got != NULL) fail_msg("%s demangled to %s", bad[i], got);
  }
  // Deep nesting stops at the depth bound; a backref to itself loops no more than that.
  char deep[4096] = "_RMC0";
  for (size_t i = 5; i < sizeof(deep) - 2; i++) deep[i] = 'R';
  deep[sizeof(deep) - 2] = 'u';
  assert_null(zxs_demangle(deep));
  assert_null(zxs_demangle("_RNvNvB0_1a1b"));
  // Exponential backrefs (as in rustc-demangle's test, 40 levels deep): each tuple level repeats
  // the one inside it, 2^40 copies; past the output bound, not demangled, and quick.
  static const char kBase62[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  char blowup[256] = "_RMC0";
  size_t len = strlen(blowup);
  for (int i = 0; i < 40; i++) blowup[len++] = 'T';
  blowup[len++] = 'p';
  for (int level = 39; level >= 0; level--) {  // the level at offset 3 + level refers to 4 + level
    blowup[len++] = 'B';
    blowup[len++] = kBase62[3 + level];
    blowup[len++] = '_';
    blowup[len++] = 'E';
  }
  blowup[len] = '\0';
  assert_null(zxs_demangle(blowup));
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
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cxx),
      cmocka_unit_test(test_rust_legacy),
      cmocka_unit_test(test_rust_v0),
      cmocka_unit_test(test_rust_v0_types),
      cmocka_unit_test(test_rust_malformed),
      cmocka_unit_test(test_not_mangled),
      cmocka_unit_test(test_symbol_version_dropped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
