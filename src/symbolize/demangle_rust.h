// Rust symbol names, legacy and v0 (internal; used by demangle.c).
#ifndef ZXSAMPLER_SRC_SYMBOLIZE_DEMANGLE_RUST_H_
#define ZXSAMPLER_SRC_SYMBOLIZE_DEMANGLE_RUST_H_

// The Rust name `name` stands for, malloc'd, as rustc-demangle's alternate form (`{:#}`) prints
// it, which is what perf shows: legacy names (`_ZN...17h<16 hex>E`) lose their hash and have
// their `$LT$`-style escapes decoded; v0 names (`_R...`, https://doc.rust-lang.org/rustc/
// symbol-mangling/v0.html) are decoded in full without crate disambiguators or const types. A
// ThinLTO `.llvm.<hex>` suffix is dropped; another `.`-suffix (`.cold`, `.0.0`) is kept as it is.
// NULL when `name` is not a Rust name, is malformed, or decodes to more than 64 KiB. Work and
// recursion are bounded on any input. Thread-safe.
char* zxs_demangle_rust(const char* name);

#endif  // ZXSAMPLER_SRC_SYMBOLIZE_DEMANGLE_RUST_H_
