// Code compiled for macOS (Mach-O) at build time by test_macho_symbols' build: the functions
// the test looks for by name.
int macho_alpha(int x);
int macho_beta(int x);

__attribute__((noinline)) int macho_alpha(int x) { return x * 3 + 1; }

__attribute__((noinline)) static int macho_hidden(int x) { return x ^ 5; }

__attribute__((noinline)) int macho_beta(int x) { return macho_hidden(x) + macho_alpha(x); }
