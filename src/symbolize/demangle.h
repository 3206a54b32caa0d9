// Human names for mangled symbols (internal).
#ifndef ZXSAMPLER_SRC_REPORT_DEMANGLE_H_
#define ZXSAMPLER_SRC_REPORT_DEMANGLE_H_

// The demangled form of a C++ (Itanium ABI) or Rust legacy symbol, malloc'd; NULL when `name`
// is not mangled (and has no symbol version), cannot be demangled, or this build has no
// demangler (libstdc++'s __cxa_demangle). An ELF symbol version ("@GLIBC_2.2.5", "@@GLIBC_2.34")
// is dropped, mangled or not. Rust legacy names lose their "::h<hash>" suffix, as rustc-demangle
// shows them; Rust v0 names (_R...) are left as they are. Thread-safe.
char* zxs_demangle(const char* name);

#endif  // ZXSAMPLER_SRC_REPORT_DEMANGLE_H_
