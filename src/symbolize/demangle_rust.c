// Rust demangling (see demangle_rust.h), written from the published grammars: the legacy scheme
// (Itanium-style `_ZN` paths with `$..$` escapes and a hash) and v0
// (https://doc.rust-lang.org/rustc/symbol-mangling/v0.html). Output follows rustc-demangle's
// alternate form. Our own: libiberty's demangler would pull in its plain-LGPL safe-ctype.o.
#include "demangle_rust.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array_grow.h"

enum {
  kRustNameMax = 64 * 1024,   // longer output: not demangled (backrefs can blow up exponentially)
  kMaxDepth = 256,            // nesting of paths, types and consts, backrefs included
  kMaxSteps = 1 << 20,        // parse steps per symbol, output or not
  kMaxBoundLifetimes = 64,    // `for<'a, ...>` lifetimes in scope
  kMaxIdentCodePoints = 256,  // a punycode identifier's decoded length
};

// Output: grows up to kRustNameMax; overflow and allocation failure are sticky.
typedef struct {
  char* data;
  size_t len;
  size_t cap;
  bool failed;
} rust_out_t;

static void out_append(rust_out_t* out, const char* s, size_t len) {
  if (out->failed) return;
  if (len > kRustNameMax - out->len ||
      !zxs_array_grow((void**)&out->data, &out->cap, out->len + len + 1, 1)) {
    out->failed = true;
    return;
  }
  memcpy(out->data + out->len, s, len);
  out->len += len;
  out->data[out->len] = '\0';
}

static void out_puts(rust_out_t* out, const char* s) { out_append(out, s, strlen(s)); }

static void out_decimal(rust_out_t* out, uint64_t v) {
  char digits[20];
  size_t n = 0;
  do {
    digits[sizeof(digits) - 1 - n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  out_append(out, digits + sizeof(digits) - n, n);
}

static void out_utf8(rust_out_t* out, uint32_t c) {
  char b[4];
  size_t n;
  if (c < 0x80) {
    b[0] = (char)c;
    n = 1;
  } else if (c < 0x800) {
    b[0] = (char)(0xc0 | (c >> 6));
    b[1] = (char)(0x80 | (c & 0x3f));
    n = 2;
  } else if (c < 0x10000) {
    b[0] = (char)(0xe0 | (c >> 12));
    b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
    b[2] = (char)(0x80 | (c & 0x3f));
    n = 3;
  } else {
    b[0] = (char)(0xf0 | (c >> 18));
    b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    b[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    b[3] = (char)(0x80 | (c & 0x3f));
    n = 4;
  }
  out_append(out, b, n);
}

static bool is_code_point(uint64_t c) { return c <= 0x10ffff && !(c >= 0xd800 && c <= 0xdfff); }

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// A `.llvm.<hex>` suffix (ThinLTO's promoted locals; '@' for a symbol version after it) is
// dropped, as rustc-demangle does: it names the link, not the function.
static size_t without_llvm_suffix(const char* name, size_t len) {
  const char* llvm = strstr(name, ".llvm.");
  if (llvm == NULL) return len;
  for (const char* p = llvm + 6; *p != '\0'; p++) {
    if (hex_value(*p) < 0 && !(*p >= 'A' && *p <= 'F') && *p != '@') return len;
  }
  return (size_t)(llvm - name);
}

// What may follow a name: empty, or `.`/`$` and printable ASCII (".cold", ".0.0").
static bool is_plain_suffix(const char* s, size_t len) {
  if (len == 0) return true;
  if (s[0] != '.' && s[0] != '$') return false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] <= ' ' || s[i] > '~') return false;
  }
  return true;
}

// --- Legacy: _ZN <len><element>... E, the last element "h" and 16 hex digits. ---

static bool is_legacy_hash(const char* s, size_t len) {
  if (len != 17 || s[0] != 'h') return false;
  for (size_t i = 1; i < len; i++) {
    if (hex_value(s[i]) < 0) return false;
  }
  return true;
}

// One `$..$` escape's text, NULL if unknown. `\u`-style escapes are decoded by the caller.
static const char* legacy_escape(const char* s, size_t len) {
  static const struct {
    const char* code;
    const char* text;
  } kEscapes[] = {{"SP", "@"}, {"BP", "*"}, {"RF", "&"}, {"LT", "<"},
                  {"GT", ">"}, {"LP", "("}, {"RP", ")"}, {"C", ","}};
  for (size_t i = 0; i < sizeof(kEscapes) / sizeof(kEscapes[0]); i++) {
    if (strlen(kEscapes[i].code) == len && memcmp(kEscapes[i].code, s, len) == 0) {
      return kEscapes[i].text;
    }
  }
  return NULL;
}

static void legacy_print_element(rust_out_t* out, const char* s, size_t len) {
  if (len >= 2 && s[0] == '_' && s[1] == '$') {
    s++;
    len--;
  }
  while (len > 0) {
    if (s[0] == '.') {
      bool pair = len >= 2 && s[1] == '.';
      out_puts(out, pair ? "::" : ".");
      s += pair ? 2 : 1;
      len -= pair ? 2 : 1;
    } else if (s[0] == '$') {
      const char* end = memchr(s + 1, '$', len - 1);
      if (end == NULL) break;
      size_t code_len = (size_t)(end - s - 1);
      const char* text = legacy_escape(s + 1, code_len);
      if (text != NULL) {
        out_puts(out, text);
      } else if (code_len >= 2 && code_len <= 7 && s[1] == 'u') {
        uint32_t c = 0;
        for (size_t i = 2; i <= code_len; i++) {
          int v = hex_value(s[i]);
          if (v < 0) goto raw;
          c = c * 16 + (uint32_t)v;
        }
        if (!is_code_point(c) || c < 0x20 || c == 0x7f) goto raw;
        out_utf8(out, c);
      } else {
        goto raw;
      }
      len -= code_len + 2;
      s = end + 1;
    } else {
      size_t i = 0;
      while (i < len && s[i] != '$' && s[i] != '.') i++;
      out_append(out, s, i);
      s += i;
      len -= i;
    }
  }
raw:
  out_append(out, s, len);
}

static char* demangle_legacy(const char* sym, size_t len) {
  // Pass 1: find the elements and check the shape; pass 2 prints.
  size_t pos = 3;  // after "_ZN"
  size_t elements = 0;
  size_t last_start = 0;
  size_t last_len = 0;
  while (pos < len && sym[pos] != 'E') {
    if (sym[pos] < '1' || sym[pos] > '9') return NULL;
    size_t n = 0;
    while (pos < len && sym[pos] >= '0' && sym[pos] <= '9') {
      n = n * 10 + (size_t)(sym[pos++] - '0');
      if (n > len) return NULL;
    }
    if (n > len - pos) return NULL;
    for (size_t i = pos; i < pos + n; i++) {
      if ((unsigned char)sym[i] >= 0x80) return NULL;
    }
    last_start = pos;
    last_len = n;
    pos += n;
    elements++;
  }
  if (pos >= len || elements < 2 || !is_legacy_hash(sym + last_start, last_len)) return NULL;
  pos++;  // 'E'
  if (!is_plain_suffix(sym + pos, len - pos)) return NULL;

  rust_out_t out = {0};
  size_t p = 3;
  for (size_t e = 0; e + 1 < elements; e++) {
    size_t n = 0;
    while (sym[p] >= '0' && sym[p] <= '9') n = n * 10 + (size_t)(sym[p++] - '0');
    if (e > 0) out_puts(&out, "::");
    legacy_print_element(&out, sym + p, n);
    p += n;
  }
  out_append(&out, sym + pos, len - pos);
  if (out.failed) {
    free(out.data);
    return NULL;
  }
  return out.data;
}

// --- v0 ---

typedef struct {
  const char* sym;  // after "_R"
  size_t len;
  size_t pos;
  bool error;
  unsigned skipping;  // > 0 while parsing what is not printed (an impl's own path)
  unsigned depth;
  unsigned long steps;
  uint64_t bound_lifetimes;
  rust_out_t* out;
} v0_t;

static void v0_print(v0_t* d, const char* s) {
  if (d->skipping == 0) out_puts(d->out, s);
}

static void v0_print_n(v0_t* d, const char* s, size_t len) {
  if (d->skipping == 0) out_append(d->out, s, len);
}

static void v0_print_decimal(v0_t* d, uint64_t v) {
  if (d->skipping == 0) out_decimal(d->out, v);
}

static bool v0_fail(v0_t* d) {
  d->error = true;
  return false;
}

// False (and the error set) when this input has used its depth or steps.
static bool v0_enter(v0_t* d) {
  if (d->error || d->depth >= kMaxDepth || ++d->steps > kMaxSteps || d->out->failed) {
    return v0_fail(d);
  }
  d->depth++;
  return true;
}

static void v0_leave(v0_t* d) { d->depth--; }

static char v0_peek(const v0_t* d) { return d->pos < d->len ? d->sym[d->pos] : '\0'; }

static bool v0_eat(v0_t* d, char c) {
  if (d->error || v0_peek(d) != c) return false;
  d->pos++;
  return true;
}

static char v0_next(v0_t* d) {
  char c = v0_peek(d);
  if (c == '\0') {
    v0_fail(d);
    return '\0';
  }
  d->pos++;
  return c;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }

// <base-62-number>: "_" is 0, digits then "_" are their value + 1.
static uint64_t v0_base62(v0_t* d) {
  if (v0_eat(d, '_')) return 0;
  uint64_t x = 0;
  for (;;) {
    char c = v0_next(d);
    if (d->error) return 0;
    if (c == '_') break;
    uint64_t digit;
    if (is_digit(c)) {
      digit = (uint64_t)(c - '0');
    } else if (is_lower(c)) {
      digit = 10 + (uint64_t)(c - 'a');
    } else if (is_upper(c)) {
      digit = 36 + (uint64_t)(c - 'A');
    } else {
      v0_fail(d);
      return 0;
    }
    if (x > (UINT64_MAX - digit) / 62) {
      v0_fail(d);
      return 0;
    }
    x = x * 62 + digit;
  }
  if (x == UINT64_MAX) v0_fail(d);
  return x + 1;
}

// `tag` <base-62-number>, or 0 when the tag is absent (disambiguators, binders).
static uint64_t v0_opt_base62(v0_t* d, char tag) {
  if (!v0_eat(d, tag)) return 0;
  uint64_t x = v0_base62(d);
  if (x == UINT64_MAX) v0_fail(d);
  return d->error ? 0 : x + 1;
}

static uint64_t v0_decimal(v0_t* d) {
  char c = v0_peek(d);
  if (!is_digit(c)) {
    v0_fail(d);
    return 0;
  }
  d->pos++;
  if (c == '0') return 0;
  uint64_t x = (uint64_t)(c - '0');
  while (is_digit(v0_peek(d))) {
    if (x > (UINT64_MAX - 9) / 10) {
      v0_fail(d);
      return 0;
    }
    x = x * 10 + (uint64_t)(v0_next(d) - '0');
  }
  return x;
}

typedef struct {
  const char* ascii;  // the part as it is
  size_t ascii_len;
  const char* punycode;  // the encoded rest; NULL when not punycode
  size_t punycode_len;
} v0_ident_t;

static v0_ident_t v0_ident(v0_t* d) {
  v0_ident_t id = {0};
  bool punycode = v0_eat(d, 'u');
  uint64_t len = v0_decimal(d);
  v0_eat(d, '_');
  if (d->error || len > d->len - d->pos) {
    v0_fail(d);
    return id;
  }
  const char* s = d->sym + d->pos;
  d->pos += (size_t)len;
  if (!punycode) {
    id.ascii = s;
    id.ascii_len = (size_t)len;
    return id;
  }
  // "ascii_punycode": the last '_' separates the basic code points from the encoded ones.
  size_t split = (size_t)len;
  while (split > 0 && s[split - 1] != '_') split--;
  id.ascii = s;
  id.ascii_len = split > 0 ? split - 1 : 0;
  id.punycode = s + split;
  id.punycode_len = (size_t)len - split;
  if (id.punycode_len == 0) v0_fail(d);
  return id;
}

static bool v0_ident_empty(const v0_ident_t* id) {
  return id->ascii_len == 0 && id->punycode_len == 0;
}

static int punycode_digit(char c) {
  if (is_lower(c)) return c - 'a';
  if (is_digit(c)) return 26 + (c - '0');
  return -1;
}

// RFC 3492's bias adaptation.
static uint64_t punycode_adapt(uint64_t delta, uint64_t points, bool first) {
  delta = first ? delta / 700 : delta / 2;
  delta += delta / points;
  uint64_t k = 0;
  while (delta > (36 - 1) * 26 / 2) {
    delta /= 36 - 1;
    k += 36;
  }
  return k + (36 * delta) / (delta + 38);
}

// Decodes RFC 3492 punycode over the ASCII part and prints the identifier as UTF-8.
static void v0_print_punycode(v0_t* d, const v0_ident_t* id) {
  uint32_t points[kMaxIdentCodePoints];
  size_t count = 0;
  if (id->ascii_len > kMaxIdentCodePoints) {
    v0_fail(d);
    return;
  }
  for (size_t i = 0; i < id->ascii_len; i++) points[count++] = (unsigned char)id->ascii[i];
  uint64_t n = 0x80;
  uint64_t i = 0;
  uint64_t bias = 72;
  const char* p = id->punycode;
  const char* end = p + id->punycode_len;
  while (p < end) {
    uint64_t old_i = i;
    uint64_t w = 1;
    for (uint64_t k = 36;; k += 36) {
      int digit = p < end ? punycode_digit(*p++) : -1;
      if (digit < 0 || (uint64_t)digit > (UINT32_MAX - i) / w) {
        v0_fail(d);
        return;
      }
      i += (uint64_t)digit * w;
      uint64_t t = k <= bias ? 1 : (k >= bias + 26 ? 26 : k - bias);
      if ((uint64_t)digit < t) break;
      w *= 36 - t;
      if (w > UINT32_MAX) {
        v0_fail(d);
        return;
      }
    }
    if (count >= kMaxIdentCodePoints) {
      v0_fail(d);
      return;
    }
    bias = punycode_adapt(i - old_i, count + 1, old_i == 0);
    n += i / (count + 1);
    i %= count + 1;
    if (!is_code_point(n)) {
      v0_fail(d);
      return;
    }
    memmove(&points[i + 1], &points[i], (count - (size_t)i) * sizeof(points[0]));
    points[i] = (uint32_t)n;
    count++;
    i++;
  }
  if (d->skipping == 0) {
    for (size_t k = 0; k < count; k++) out_utf8(d->out, points[k]);
  }
}

static void v0_print_ident(v0_t* d, const v0_ident_t* id) {
  if (d->error) return;
  if (id->punycode == NULL) {
    v0_print_n(d, id->ascii, id->ascii_len);
  } else {
    v0_print_punycode(d, id);
  }
}

static void v0_path(v0_t* d, bool in_value);
static void v0_type(v0_t* d);
static void v0_const(v0_t* d, bool in_value);

typedef enum { kBackrefPath, kBackrefPathValue, kBackrefType, kBackrefConst } v0_backref_kind_t;

// "B" <base-62-number>: what starts at an earlier offset, printed again. Not followed while
// skipping (nothing to print, and following costs work).
static void v0_backref(v0_t* d, v0_backref_kind_t kind) {
  size_t start = d->pos - 1;  // the 'B'
  uint64_t target = v0_base62(d);
  if (d->error) return;
  if (target >= start) {
    v0_fail(d);
    return;
  }
  if (d->skipping > 0) return;
  size_t saved = d->pos;
  d->pos = (size_t)target;
  switch (kind) {
    case kBackrefPath:
      v0_path(d, false);
      break;
    case kBackrefPathValue:
      v0_path(d, true);
      break;
    case kBackrefType:
      v0_type(d);
      break;
    case kBackrefConst:
      v0_const(d, true);
      break;
  }
  d->pos = saved;
}

static void v0_lifetime(v0_t* d, uint64_t index) {
  v0_print(d, "'");
  if (index == 0) {
    v0_print(d, "_");
    return;
  }
  if (index > d->bound_lifetimes) {
    v0_fail(d);
    return;
  }
  uint64_t depth = d->bound_lifetimes - index;
  if (depth < 26) {
    char c[2] = {(char)('a' + depth), '\0'};
    v0_print(d, c);
  } else {
    v0_print(d, "_");
    v0_print_decimal(d, depth);
  }
}

// [<binder>]: "G" <base-62-number> introduces that many + 1 lifetimes: `for<'a, 'b> `.
// Returns how many to take out of scope after the bound item.
static uint64_t v0_binder(v0_t* d) {
  uint64_t count = v0_opt_base62(d, 'G');
  if (d->error) return 0;
  if (count > kMaxBoundLifetimes || d->bound_lifetimes + count > kMaxBoundLifetimes) {
    v0_fail(d);
    return 0;
  }
  if (count == 0) return 0;
  v0_print(d, "for<");
  for (uint64_t i = 0; i < count; i++) {
    if (i > 0) v0_print(d, ", ");
    d->bound_lifetimes++;
    v0_lifetime(d, 1);
  }
  v0_print(d, "> ");
  return count;
}

static void v0_generic_arg(v0_t* d) {
  if (v0_eat(d, 'L')) {
    v0_lifetime(d, v0_base62(d));
  } else if (v0_eat(d, 'K')) {
    v0_const(d, false);
  } else {
    v0_type(d);
  }
}

// Elements until "E", separated; returns how many.
static size_t v0_list(v0_t* d, void (*element)(v0_t*), const char* separator) {
  size_t count = 0;
  while (!d->error && !v0_eat(d, 'E')) {
    if (v0_peek(d) == '\0') {
      v0_fail(d);
      break;
    }
    if (count > 0) v0_print(d, separator);
    element(d);
    count++;
  }
  return count;
}

static void v0_path(v0_t* d, bool in_value) {
  if (!v0_enter(d)) return;
  char tag = v0_next(d);
  switch (tag) {
    case 'C': {  // crate root; its disambiguator (the crate's hash) is not shown
      v0_opt_base62(d, 's');
      v0_ident_t name = v0_ident(d);
      v0_print_ident(d, &name);
      break;
    }
    case 'N': {  // nested: <namespace> <path> <identifier>
      char ns = v0_next(d);
      if (!is_lower(ns) && !is_upper(ns)) {
        v0_fail(d);
        break;
      }
      v0_path(d, in_value);
      uint64_t dis = v0_opt_base62(d, 's');
      v0_ident_t name = v0_ident(d);
      if (d->error) break;
      if (is_upper(ns)) {  // closures, shims: `{closure#0}`, `{closure:name#1}`
        v0_print(d, "::{");
        if (ns == 'C') {
          v0_print(d, "closure");
        } else if (ns == 'S') {
          v0_print(d, "shim");
        } else {
          v0_print_n(d, &ns, 1);
        }
        if (!v0_ident_empty(&name)) {
          v0_print(d, ":");
          v0_print_ident(d, &name);
        }
        v0_print(d, "#");
        v0_print_decimal(d, dis);
        v0_print(d, "}");
      } else if (!v0_ident_empty(&name)) {
        v0_print(d, "::");
        v0_print_ident(d, &name);
      }
      break;
    }
    case 'M':            // <T>: inherent impl
    case 'X':            // <T as Trait>: trait impl
    case 'Y': {          // <T as Trait>: trait definition
      if (tag != 'Y') {  // the impl's own path is not shown
        v0_opt_base62(d, 's');
        d->skipping++;
        v0_path(d, false);
        d->skipping--;
      }
      v0_print(d, "<");
      v0_type(d);
      if (tag != 'M') {
        v0_print(d, " as ");
        v0_path(d, false);
      }
      v0_print(d, ">");
      break;
    }
    case 'I':  // generic arguments: `path::<A, B>` in values, `path<A, B>` in types
      v0_path(d, in_value);
      if (in_value) v0_print(d, "::");
      v0_print(d, "<");
      v0_list(d, v0_generic_arg, ", ");
      v0_print(d, ">");
      break;
    case 'B':
      v0_backref(d, in_value ? kBackrefPathValue : kBackrefPath);
      break;
    default:
      v0_fail(d);
      break;
  }
  v0_leave(d);
}

static const char* v0_basic_type(char tag) {
  switch (tag) {
    case 'a':
      return "i8";
    case 'b':
      return "bool";
    case 'c':
      return "char";
    case 'd':
      return "f64";
    case 'e':
      return "str";
    case 'f':
      return "f32";
    case 'h':
      return "u8";
    case 'i':
      return "isize";
    case 'j':
      return "usize";
    case 'l':
      return "i32";
    case 'm':
      return "u32";
    case 'n':
      return "i128";
    case 'o':
      return "u128";
    case 'p':
      return "_";
    case 's':
      return "i16";
    case 't':
      return "u16";
    case 'u':
      return "()";
    case 'v':
      return "...";
    case 'x':
      return "i64";
    case 'y':
      return "u64";
    case 'z':
      return "!";
    default:
      return NULL;
  }
}

// A path whose generic arguments stay open (no `>`), so that a `dyn` trait's associated-type
// bindings go inside them: true when they were left open.
static bool v0_path_maybe_open_generics(v0_t* d) {
  bool open = false;
  if (!v0_enter(d)) return false;
  if (v0_eat(d, 'B')) {
    size_t start = d->pos - 1;
    uint64_t target = v0_base62(d);
    if (!d->error && target >= start) v0_fail(d);
    if (!d->error && d->skipping == 0) {
      size_t saved = d->pos;
      d->pos = (size_t)target;
      open = v0_path_maybe_open_generics(d);
      d->pos = saved;
    }
  } else if (v0_eat(d, 'I')) {
    v0_path(d, false);
    v0_print(d, "<");
    v0_list(d, v0_generic_arg, ", ");
    open = true;
  } else {
    v0_path(d, false);
  }
  v0_leave(d);
  return open;
}

// A trait in `dyn`, with its associated-type bindings: `FnOnce<(), Output = ()>`.
static void v0_dyn_trait(v0_t* d) {
  bool open = v0_path_maybe_open_generics(d);
  while (!d->error && v0_eat(d, 'p')) {
    v0_print(d, open ? ", " : "<");
    open = true;
    v0_ident_t name = v0_ident(d);
    v0_print_ident(d, &name);
    v0_print(d, " = ");
    v0_type(d);
  }
  if (open) v0_print(d, ">");
}

static void v0_type(v0_t* d) {
  if (!v0_enter(d)) return;
  char tag = v0_next(d);
  const char* basic = v0_basic_type(tag);
  if (basic != NULL) {
    v0_print(d, basic);
    v0_leave(d);
    return;
  }
  switch (tag) {
    case 'R':  // &'a T
    case 'Q':  // &'a mut T
      v0_print(d, "&");
      if (v0_eat(d, 'L')) {
        uint64_t lifetime = v0_base62(d);
        if (lifetime != 0) {
          v0_lifetime(d, lifetime);
          v0_print(d, " ");
        }
      }
      if (tag == 'Q') v0_print(d, "mut ");
      v0_type(d);
      break;
    case 'P':
      v0_print(d, "*const ");
      v0_type(d);
      break;
    case 'O':
      v0_print(d, "*mut ");
      v0_type(d);
      break;
    case 'A':  // [T; N]
    case 'S':  // [T]
      v0_print(d, "[");
      v0_type(d);
      if (tag == 'A') {
        v0_print(d, "; ");
        v0_const(d, true);
      }
      v0_print(d, "]");
      break;
    case 'T': {  // tuple
      v0_print(d, "(");
      size_t count = v0_list(d, v0_type, ", ");
      if (count == 1) v0_print(d, ",");
      v0_print(d, ")");
      break;
    }
    case 'F': {  // fn pointer: [binder] ["U"] ["K" abi] {type} "E" return-type
      uint64_t bound = v0_binder(d);
      bool is_unsafe = v0_eat(d, 'U');
      v0_ident_t abi = {0};
      bool has_abi = v0_eat(d, 'K');
      bool abi_c = has_abi && v0_eat(d, 'C');
      if (has_abi && !abi_c) {
        abi = v0_ident(d);
        if (abi.ascii_len == 0 || abi.punycode != NULL) v0_fail(d);
      }
      if (is_unsafe) v0_print(d, "unsafe ");
      if (has_abi && !d->error) {
        v0_print(d, "extern \"");
        if (abi_c) {
          v0_print(d, "C");
        } else {  // '-' in an ABI name is mangled as '_'
          for (size_t i = 0; i < abi.ascii_len; i++) {
            v0_print_n(d, abi.ascii[i] == '_' ? "-" : &abi.ascii[i], 1);
          }
        }
        v0_print(d, "\" ");
      }
      v0_print(d, "fn(");
      v0_list(d, v0_type, ", ");
      v0_print(d, ")");
      if (!v0_eat(d, 'u')) {  // `-> ()` is not shown
        v0_print(d, " -> ");
        v0_type(d);
      }
      d->bound_lifetimes -= bound;
      break;
    }
    case 'D': {  // dyn Trait + ... + 'a
      v0_print(d, "dyn ");
      uint64_t bound = v0_binder(d);
      v0_list(d, v0_dyn_trait, " + ");
      d->bound_lifetimes -= bound;
      if (!v0_eat(d, 'L')) {
        v0_fail(d);
        break;
      }
      uint64_t lifetime = v0_base62(d);
      if (lifetime != 0) {
        v0_print(d, " + ");
        v0_lifetime(d, lifetime);
      }
      break;
    }
    case 'B':
      v0_backref(d, kBackrefType);
      break;
    default:  // a named type: a path
      d->pos--;
      v0_path(d, false);
      break;
  }
  v0_leave(d);
}

// <const-data>: ["n"] {hex digit} "_"; the digits.
static const char* v0_hex(v0_t* d, size_t* len) {
  const char* start = d->sym + d->pos;
  size_t n = 0;
  while (hex_value(v0_peek(d)) >= 0) {
    d->pos++;
    n++;
  }
  if (!v0_eat(d, '_')) v0_fail(d);
  *len = n;
  return start;
}

static void v0_const_uint(v0_t* d) {
  size_t len;
  const char* hex = v0_hex(d, &len);
  if (d->error) return;
  while (len > 1 && hex[0] == '0') {
    hex++;
    len--;
  }
  if (len > 16) {  // past u64: as rustc-demangle, in hex
    v0_print(d, "0x");
    v0_print_n(d, hex, len);
    return;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) v = v * 16 + (uint64_t)hex_value(hex[i]);
  v0_print_decimal(d, v);
}

// A char or a str byte as Rust's Debug shows it (printable ASCII and non-ASCII as they are).
static void v0_print_escaped(v0_t* d, uint32_t c, char quote) {
  static const char kHex[] = "0123456789abcdef";
  if (c == '\t') {
    v0_print(d, "\\t");
  } else if (c == '\r') {
    v0_print(d, "\\r");
  } else if (c == '\n') {
    v0_print(d, "\\n");
  } else if (c == '\\' || c == (uint32_t)quote) {
    char e[3] = {'\\', (char)c, '\0'};
    v0_print(d, e);
  } else if (c < 0x20 || c == 0x7f) {
    char e[] = {'\\', 'u', '{', kHex[c >> 4], kHex[c & 0xf], '}', '\0'};
    v0_print(d, e);
  } else if (d->skipping == 0) {
    out_utf8(d->out, c);
  }
}

static void v0_const_char(v0_t* d) {
  size_t len;
  const char* hex = v0_hex(d, &len);
  if (d->error) return;
  if (len > 8) {
    v0_fail(d);
    return;
  }
  uint32_t c = 0;
  for (size_t i = 0; i < len; i++) c = c * 16 + (uint32_t)hex_value(hex[i]);
  if (!is_code_point(c)) {
    v0_fail(d);
    return;
  }
  v0_print(d, "'");
  v0_print_escaped(d, c, '\'');
  v0_print(d, "'");
}

// A str constant: UTF-8 bytes in hex, shown as a literal.
static void v0_const_str(v0_t* d) {
  size_t len;
  const char* hex = v0_hex(d, &len);
  if (d->error) return;
  if (len % 2 != 0) {
    v0_fail(d);
    return;
  }
  v0_print(d, "\"");
  for (size_t i = 0; i < len; i += 2) {
    uint32_t byte = (uint32_t)(hex_value(hex[i]) * 16 + hex_value(hex[i + 1]));
    if (byte < 0x80) {
      v0_print_escaped(d, byte, '"');
    } else {
      char b = (char)byte;
      v0_print_n(d, &b, 1);
    }
  }
  v0_print(d, "\"");
}

static void v0_const_field(v0_t* d) {
  v0_ident_t name = v0_ident(d);
  v0_print_ident(d, &name);
  v0_print(d, ": ");
  v0_const(d, true);
}

static void v0_const_element(v0_t* d) { v0_const(d, true); }

// <const>: a typed value; structured ones (refs, arrays, tuples, variants, str) are written in
// braces where they stand as a generic argument, as Rust source would.
static void v0_const(v0_t* d, bool in_value) {
  if (!v0_enter(d)) return;
  char tag = v0_next(d);
  bool braced = !in_value && strchr("RQATVe", tag) != NULL && tag != '\0';
  if (braced) v0_print(d, "{");
  switch (tag) {
    case 'p':
      v0_print(d, "_");
      break;
    case 'h':
    case 't':
    case 'm':
    case 'y':
    case 'o':
    case 'j':
      v0_const_uint(d);
      break;
    case 'a':
    case 's':
    case 'l':
    case 'x':
    case 'n':
    case 'i':
      if (v0_eat(d, 'n')) v0_print(d, "-");
      v0_const_uint(d);
      break;
    case 'b': {
      size_t len;
      const char* hex = v0_hex(d, &len);
      if (!d->error && len == 1 && (hex[0] == '0' || hex[0] == '1')) {
        v0_print(d, hex[0] == '1' ? "true" : "false");
      } else {
        v0_fail(d);
      }
      break;
    }
    case 'c':
      v0_const_char(d);
      break;
    case 'e':
      v0_print(d, "*");
      v0_const_str(d);
      break;
    case 'R':
    case 'Q':
      if (tag == 'R' && v0_eat(d, 'e')) {  // &str: the literal itself
        v0_const_str(d);
        break;
      }
      v0_print(d, tag == 'R' ? "&" : "&mut ");
      v0_const(d, true);
      break;
    case 'A':
      v0_print(d, "[");
      v0_list(d, v0_const_element, ", ");
      v0_print(d, "]");
      break;
    case 'T': {
      v0_print(d, "(");
      size_t count = v0_list(d, v0_const_element, ", ");
      if (count == 1) v0_print(d, ",");
      v0_print(d, ")");
      break;
    }
    case 'V': {  // a variant or struct value: path, then unit, tuple or named fields
      v0_path(d, true);
      char kind = v0_next(d);
      if (kind == 'T') {
        v0_print(d, "(");
        v0_list(d, v0_const_element, ", ");
        v0_print(d, ")");
      } else if (kind == 'S') {
        v0_print(d, " { ");
        v0_list(d, v0_const_field, ", ");
        v0_print(d, " }");
      } else if (kind != 'U') {
        v0_fail(d);
      }
      break;
    }
    case 'B':
      v0_backref(d, kBackrefConst);
      break;
    default:
      v0_fail(d);
      break;
  }
  if (braced) v0_print(d, "}");
  v0_leave(d);
}

static char* demangle_v0(const char* sym, size_t len) {
  rust_out_t out = {0};
  v0_t d = {.sym = sym + 2, .len = len - 2, .out = &out};
  // The path starts with an uppercase tag; a leading digit would be an unknown encoding version.
  if (!is_upper(v0_peek(&d))) return NULL;
  for (size_t i = 0; i < d.len && sym[2 + i] != '.' && sym[2 + i] != '$'; i++) {
    char c = sym[2 + i];
    if (!is_digit(c) && !is_lower(c) && !is_upper(c) && c != '_') return NULL;
  }
  v0_path(&d, true);
  if (!d.error && is_upper(v0_peek(&d))) {  // the instantiating crate: not shown
    d.skipping++;
    v0_path(&d, false);
    d.skipping--;
  }
  if (!d.error && is_plain_suffix(d.sym + d.pos, d.len - d.pos)) {
    out_append(&out, d.sym + d.pos, d.len - d.pos);
  } else {
    d.error = true;
  }
  if (d.error || out.failed || out.data == NULL) {
    free(out.data);
    return NULL;
  }
  return out.data;
}

char* zxs_demangle_rust(const char* name) {
  if (name == NULL) return NULL;
  size_t len = without_llvm_suffix(name, strlen(name));
  if (len > 2 && name[0] == '_' && name[1] == 'R') return demangle_v0(name, len);
  if (len > 3 && memcmp(name, "_ZN", 3) == 0) return demangle_legacy(name, len);
  return NULL;
}
