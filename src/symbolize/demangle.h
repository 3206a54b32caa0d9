// Human names for mangled symbols (internal).
#ifndef ZXSAMPLER_SRC_REPORT_DEMANGLE_H_
#define ZXSAMPLER_SRC_REPORT_DEMANGLE_H_

// The demangled form of a Rust (legacy or v0) or C++ (Itanium ABI) symbol, malloc'd; NULL when
// `name` is not mangled (and has no symbol version) or cannot be demangled (C++ needs libstdc++'s
// __cxa_demangle in this build). An ELF symbol version ("@GLIBC_2.2.5", "@@GLIBC_2.34") is
// dropped, mangled or not. Rust names read as rustc-demangle's alternate form and perf show
// them: no hash, no crate disambiguators, no ThinLTO ".llvm.<hex>" suffix (demangle_rust.h).
// Thread-safe.
char* zxs_demangle(const char* name);

#endif  // ZXSAMPLER_SRC_REPORT_DEMANGLE_H_
