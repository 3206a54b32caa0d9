// The export formats (src/export/export.h) on hand-built profiles: pprof decoded by a small
// protobuf reader of its own, folded stacks, markup and the top report compared line by line,
// the flame graph's SVG checked for structure and proportions. Meant to run under ASan/UBSan.
// Built by tests/meson.build (test 'export').
#define _GNU_SOURCE

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// cmocka.h needs the headers above first.
#include <cmocka.h>

#include "export.h"
#include "modules_markup.h"
#include "protobuf_writer.h"
#include "test_export_fixture.h"

// The fixture's process (pid 100) after an exec: a new process object, koid pid | 1 << 32.
#define EXEC_KOID (100ull | (1ull << 32))

// --- Capturing output -------------------------------------------------------------------------

typedef zx_status_t (*export_fn)(const zxs_profile_t* profile, uint32_t flags, FILE* out);

static zx_status_t folded_fn(const zxs_profile_t* p, uint32_t flags, FILE* out) {
  return zxs_export_folded(p, flags, out);
}
static zx_status_t flamegraph_fn(const zxs_profile_t* p, uint32_t flags, FILE* out) {
  return zxs_export_flamegraph(p, flags, NULL, out);
}
static zx_status_t markup_fn(const zxs_profile_t* p, uint32_t flags, FILE* out) {
  (void)flags;
  return zxs_export_markup(p, out);
}
static zx_status_t top_fn(const zxs_profile_t* p, uint32_t flags, FILE* out) {
  return zxs_export_top(p, 0, flags, out);
}
static zx_status_t pprof_fn(const zxs_profile_t* p, uint32_t flags, FILE* out) {
  (void)flags;
  return zxs_export_pprof(p, out);
}

// Everything written to `f` so far, malloc'd and NUL-terminated; closes f.
static char* read_back(FILE* f, size_t* size_out) {
  long n = ftell(f);
  assert_true(n >= 0);
  char* data = malloc((size_t)n + 1);
  assert_non_null(data);
  rewind(f);
  assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
  data[n] = '\0';
  assert_int_equal(fclose(f), 0);
  if (size_out != NULL) {
    *size_out = (size_t)n;
  }
  return data;
}

// Runs an exporter into a temporary file; returns what it wrote.
static char* export_to_memory(export_fn fn, const zxs_profile_t* p, uint32_t flags,
                              size_t* size_out) {
  FILE* out = tmpfile();
  assert_non_null(out);
  assert_int_equal(fn(p, flags, out), ZX_OK);
  return read_back(out, size_out);
}

// A plain scan: under ASan, strstr and memmem check the whole haystack on every call.
static size_t count_occurrences(const char* haystack, const char* needle) {
  size_t n = 0;
  size_t needle_len = strlen(needle);
  for (const char* at = haystack; *at != '\0'; at++) {
    if (*at == needle[0] && strncmp(at, needle, needle_len) == 0) {
      n++;
    }
  }
  return n;
}

// --- A small protobuf reader ------------------------------------------------------------------

typedef struct pb_field {
  uint32_t number;
  uint32_t wire;
  uint64_t varint;      // wire type 0
  const uint8_t* data;  // wire type 2
  size_t len;
} pb_field_t;

static uint64_t read_varint(const uint8_t** p, const uint8_t* end) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    assert_true(*p < end);
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      return v;
    }
  }
  fail_msg("varint too long");
  return 0;
}

// The next field of a message; false at its end.
static bool next_field(const uint8_t** p, const uint8_t* end, pb_field_t* f) {
  if (*p >= end) {
    return false;
  }
  uint64_t key = read_varint(p, end);
  f->number = (uint32_t)(key >> 3);
  f->wire = (uint32_t)(key & 7);
  assert_true(f->number > 0);
  if (f->wire == 0) {
    f->varint = read_varint(p, end);
  } else if (f->wire == 2) {
    f->len = (size_t)read_varint(p, end);
    assert_true(f->len <= (size_t)(end - *p));
    f->data = *p;
    *p += f->len;
  } else {
    fail_msg("unexpected wire type %u", f->wire);
  }
  return true;
}

// Appends the values of a repeated varint field, packed or not.
static void repeated_varints(const pb_field_t* f, uint64_t* values, size_t* count, size_t max) {
  if (f->wire == 0) {
    assert_true(*count < max);
    values[(*count)++] = f->varint;
    return;
  }
  const uint8_t* p = f->data;
  const uint8_t* end = f->data + f->len;
  while (p < end) {
    assert_true(*count < max);
    values[(*count)++] = read_varint(&p, end);
  }
}

#define MAX_FRAMES 80
#define MAX_LABELS 4

typedef struct dec_label {
  uint64_t key, str, num;
} dec_label_t;

typedef struct dec_sample {
  uint64_t location[MAX_FRAMES];
  size_t location_count;
  uint64_t value[4];
  size_t value_count;
  dec_label_t label[MAX_LABELS];
  size_t label_count;
} dec_sample_t;

typedef struct dec_location {
  uint64_t id, mapping_id, address;
  uint64_t function_id, line;  // of the first Line
  size_t line_count;
} dec_location_t;

typedef struct dec_function {
  uint64_t id, name, system_name, filename;
} dec_function_t;

typedef struct dec_mapping {
  uint64_t id, start, limit, offset, filename, build_id;
  bool has_functions, has_filenames, has_lines;
} dec_mapping_t;

typedef struct dec_profile {
  uint64_t sample_type[4][2];
  size_t sample_type_count;
  dec_sample_t* samples;
  size_t sample_count;
  dec_location_t* locations;
  size_t location_count;
  dec_function_t* functions;
  size_t function_count;
  dec_mapping_t mappings[16];
  size_t mapping_count;
  char** strings;
  size_t string_count;
  uint64_t period_type[2];
  uint64_t period, duration, default_sample_type;
  uint64_t comments[4];
  size_t comment_count;
} dec_profile_t;

#define DEC_MAX 4096

static void decode_value_type(const pb_field_t* f, uint64_t out[2]) {
  const uint8_t* p = f->data;
  pb_field_t g = {0};
  out[0] = out[1] = 0;
  while (next_field(&p, f->data + f->len, &g)) {
    if (g.number == 1 || g.number == 2) {
      out[g.number - 1] = g.varint;
    }
  }
}

static void decode_sample(const pb_field_t* f, dec_sample_t* s) {
  memset(s, 0, sizeof(*s));
  const uint8_t* p = f->data;
  pb_field_t g = {0};
  while (next_field(&p, f->data + f->len, &g)) {
    if (g.number == 1) {
      repeated_varints(&g, s->location, &s->location_count, MAX_FRAMES);
    } else if (g.number == 2) {
      repeated_varints(&g, s->value, &s->value_count, 4);
    } else if (g.number == 3) {
      assert_true(s->label_count < MAX_LABELS);
      dec_label_t* l = &s->label[s->label_count++];
      const uint8_t* q = g.data;
      pb_field_t h = {0};
      while (next_field(&q, g.data + g.len, &h)) {
        if (h.number == 1) l->key = h.varint;
        if (h.number == 2) l->str = h.varint;
        if (h.number == 3) l->num = h.varint;
      }
    }
  }
}

static void decode_location(const pb_field_t* f, dec_location_t* l) {
  memset(l, 0, sizeof(*l));
  const uint8_t* p = f->data;
  pb_field_t g = {0};
  while (next_field(&p, f->data + f->len, &g)) {
    if (g.number == 1) l->id = g.varint;
    if (g.number == 2) l->mapping_id = g.varint;
    if (g.number == 3) l->address = g.varint;
    if (g.number == 4) {
      if (l->line_count++ == 0) {
        const uint8_t* q = g.data;
        pb_field_t h = {0};
        while (next_field(&q, g.data + g.len, &h)) {
          if (h.number == 1) l->function_id = h.varint;
          if (h.number == 2) l->line = h.varint;
        }
      }
    }
  }
}

static void decode_function(const pb_field_t* f, dec_function_t* fn) {
  memset(fn, 0, sizeof(*fn));
  const uint8_t* p = f->data;
  pb_field_t g = {0};
  while (next_field(&p, f->data + f->len, &g)) {
    if (g.number == 1) fn->id = g.varint;
    if (g.number == 2) fn->name = g.varint;
    if (g.number == 3) fn->system_name = g.varint;
    if (g.number == 4) fn->filename = g.varint;
  }
}

static void decode_mapping(const pb_field_t* f, dec_mapping_t* m) {
  memset(m, 0, sizeof(*m));
  const uint8_t* p = f->data;
  pb_field_t g = {0};
  while (next_field(&p, f->data + f->len, &g)) {
    switch (g.number) {
      case 1:
        m->id = g.varint;
        break;
      case 2:
        m->start = g.varint;
        break;
      case 3:
        m->limit = g.varint;
        break;
      case 4:
        m->offset = g.varint;
        break;
      case 5:
        m->filename = g.varint;
        break;
      case 6:
        m->build_id = g.varint;
        break;
      case 7:
        m->has_functions = g.varint != 0;
        break;
      case 8:
        m->has_filenames = g.varint != 0;
        break;
      case 9:
        m->has_lines = g.varint != 0;
        break;
      default:
        break;
    }
  }
}

static void decode_profile(const uint8_t* data, size_t size, dec_profile_t* d) {
  memset(d, 0, sizeof(*d));
  d->samples = calloc(DEC_MAX, sizeof(d->samples[0]));
  d->locations = calloc(DEC_MAX, sizeof(d->locations[0]));
  d->functions = calloc(DEC_MAX, sizeof(d->functions[0]));
  d->strings = calloc(DEC_MAX, sizeof(d->strings[0]));
  assert_true(d->samples && d->locations && d->functions && d->strings);
  const uint8_t* p = data;
  pb_field_t f = {0};
  while (next_field(&p, data + size, &f)) {
    switch (f.number) {
      case 1:
        assert_true(d->sample_type_count < 4);
        decode_value_type(&f, d->sample_type[d->sample_type_count++]);
        break;
      case 2:
        assert_true(d->sample_count < DEC_MAX);
        decode_sample(&f, &d->samples[d->sample_count++]);
        break;
      case 3:
        assert_true(d->mapping_count < 16);
        decode_mapping(&f, &d->mappings[d->mapping_count++]);
        break;
      case 4:
        assert_true(d->location_count < DEC_MAX);
        decode_location(&f, &d->locations[d->location_count++]);
        break;
      case 5:
        assert_true(d->function_count < DEC_MAX);
        decode_function(&f, &d->functions[d->function_count++]);
        break;
      case 6:
        assert_int_equal(f.wire, 2);
        assert_true(d->string_count < DEC_MAX);
        d->strings[d->string_count] = strndup((const char*)f.data, f.len);
        d->string_count++;
        break;
      case 10:
        d->duration = f.varint;
        break;
      case 11:
        decode_value_type(&f, d->period_type);
        break;
      case 12:
        d->period = f.varint;
        break;
      case 13:
        repeated_varints(&f, d->comments, &d->comment_count, 4);
        break;
      case 14:
        d->default_sample_type = f.varint;
        break;
      default:
        break;
    }
  }
  assert_true(p == data + size);
}

static void free_decoded(dec_profile_t* d) {
  for (size_t i = 0; i < d->string_count; i++) {
    free(d->strings[i]);
  }
  free(d->strings);
  free(d->samples);
  free(d->locations);
  free(d->functions);
}

static const char* dstr(const dec_profile_t* d, uint64_t index) {
  assert_true(index < d->string_count);
  return d->strings[index];
}

static const dec_function_t* dfunction(const dec_profile_t* d, uint64_t id) {
  for (size_t i = 0; i < d->function_count; i++) {
    if (d->functions[i].id == id) return &d->functions[i];
  }
  fail_msg("no function %" PRIu64, id);
  return NULL;
}

static const dec_location_t* dlocation(const dec_profile_t* d, uint64_t id) {
  for (size_t i = 0; i < d->location_count; i++) {
    if (d->locations[i].id == id) return &d->locations[i];
  }
  fail_msg("no location %" PRIu64, id);
  return NULL;
}

static const dec_label_t* dlabel(const dec_profile_t* d, const dec_sample_t* s, const char* key) {
  for (size_t i = 0; i < s->label_count; i++) {
    if (strcmp(dstr(d, s->label[i].key), key) == 0) return &s->label[i];
  }
  return NULL;
}

// The sample whose location ids are exactly `ids` (leaf first), or NULL.
static const dec_sample_t* find_sample(const dec_profile_t* d, const uint64_t* ids, size_t n) {
  for (size_t i = 0; i < d->sample_count; i++) {
    const dec_sample_t* s = &d->samples[i];
    if (s->location_count == n && memcmp(s->location, ids, n * sizeof(ids[0])) == 0) return s;
  }
  return NULL;
}

// Every id a profile refers to exists (what pprof's CheckValid insists on).
static void check_references(const dec_profile_t* d) {
  for (size_t i = 0; i < d->sample_count; i++) {
    assert_int_equal(d->samples[i].value_count, d->sample_type_count);
    for (size_t j = 0; j < d->samples[i].location_count; j++) {
      dlocation(d, d->samples[i].location[j]);
    }
    for (size_t j = 0; j < d->samples[i].label_count; j++) {
      dstr(d, d->samples[i].label[j].key);
      dstr(d, d->samples[i].label[j].str);
    }
  }
  for (size_t i = 0; i < d->location_count; i++) {
    assert_true(d->locations[i].id != 0);
    if (d->locations[i].line_count > 0) dfunction(d, d->locations[i].function_id);
    if (d->locations[i].mapping_id != 0) {
      bool found = false;
      for (size_t m = 0; m < d->mapping_count; m++) {
        found = found || d->mappings[m].id == d->locations[i].mapping_id;
      }
      assert_true(found);
    }
  }
  for (size_t i = 0; i < d->function_count; i++) {
    dstr(d, d->functions[i].name);
    dstr(d, d->functions[i].filename);
  }
}

// --- pprof ----------------------------------------------------------------------------------

static void test_protobuf_writer(void** state) {
  (void)state;
  zxs_pb_t pb;
  zxs_pb_init(&pb);
  zxs_pb_varint(&pb, 0);
  zxs_pb_varint(&pb, 1);
  zxs_pb_varint(&pb, 300);                   // ac 02
  zxs_pb_varint(&pb, UINT64_MAX);            // ten bytes
  zxs_pb_varint_field(&pb, 1, 150);          // 08 96 01
  zxs_pb_bytes_field(&pb, 2, "testing", 7);  // 12 07 ...
  zxs_pb_varint_field_nz(&pb, 3, 0);         // nothing
  static const uint8_t expect[] = {0x00, 0x01, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0x01, 0x08, 0x96, 0x01, 0x12,
                                   0x07, 't',  'e',  's',  't',  'i',  'n',  'g'};
  assert_int_equal(pb.size, sizeof(expect));
  assert_memory_equal(pb.data, expect, sizeof(expect));
  zxs_pb_free(&pb);

  // Nested messages, one longer than 127 bytes (a two-byte length moved into place).
  zxs_pb_init(&pb);
  size_t outer = zxs_pb_begin(&pb, 4);
  size_t inner = zxs_pb_begin(&pb, 5);
  for (int i = 0; i < 100; i++) {
    zxs_pb_varint_field(&pb, 1, 1);  // 2 bytes each
  }
  zxs_pb_end(&pb, inner);
  zxs_pb_end(&pb, outer);
  size_t size;
  uint8_t* data = zxs_pb_release(&pb, &size);
  assert_false(zxs_pb_failed(&pb));
  // outer: key, len 203 (2 bytes); inner: key, len 200 (2 bytes), 200 bytes.
  assert_int_equal(size, 1 + 2 + 1 + 2 + 200);
  const uint8_t* p = data;
  pb_field_t f = {0};
  assert_true(next_field(&p, data + size, &f));
  assert_int_equal(f.number, 4);
  assert_int_equal(f.len, 203);
  const uint8_t* q = f.data;
  pb_field_t g = {0};
  assert_true(next_field(&q, f.data + f.len, &g));
  assert_int_equal(g.number, 5);
  assert_int_equal(g.len, 200);
  assert_false(next_field(&q, f.data + f.len, &g));
  free(data);
}

static void test_pprof_fixture(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  uint8_t* data;
  size_t size;
  assert_int_equal(zxs_export_pprof_encode(&p, &data, &size), ZX_OK);
  dec_profile_t d;
  decode_profile(data, size, &d);
  check_references(&d);

  // Strings: "" first, no duplicates.
  assert_true(d.string_count > 1);
  assert_string_equal(d.strings[0], "");
  for (size_t i = 0; i < d.string_count; i++) {
    for (size_t j = i + 1; j < d.string_count; j++) {
      assert_string_not_equal(d.strings[i], d.strings[j]);
    }
  }
  // Sample and period types.
  assert_int_equal(d.sample_type_count, 2);
  assert_string_equal(dstr(&d, d.sample_type[0][0]), "samples");
  assert_string_equal(dstr(&d, d.sample_type[0][1]), "count");
  assert_string_equal(dstr(&d, d.sample_type[1][0]), "cpu");
  assert_string_equal(dstr(&d, d.sample_type[1][1]), "nanoseconds");
  assert_string_equal(dstr(&d, d.period_type[0]), "cpu");
  assert_string_equal(dstr(&d, d.period_type[1]), "nanoseconds");
  assert_int_equal(d.period, FIXTURE_PERIOD);
  assert_string_equal(dstr(&d, d.default_sample_type), "cpu");
  assert_int_equal(d.duration, 7000000);  // 6 ms between samples + 1 period
  assert_int_equal(d.comment_count, 1);
  assert_string_equal(dstr(&d, d.comments[0]), "process app (pid 100)");

  // Samples: the two identical stacks of tid 101 merged.
  assert_int_equal(d.sample_count, FIXTURE_SAMPLES - 1);
  uint64_t total = 0;
  for (size_t i = 0; i < d.sample_count; i++) {
    assert_int_equal(d.samples[i].value_count, 2);
    assert_int_equal(d.samples[i].value[1], d.samples[i].value[0] * FIXTURE_PERIOD);
    total += d.samples[i].value[0];
  }
  assert_int_equal(total, FIXTURE_SAMPLES);
  const uint64_t twice[] = {L_LEAF + 1, L_COMPUTE + 1, L_MAIN + 1};
  const dec_sample_t* s = find_sample(&d, twice, 3);
  assert_non_null(s);
  assert_int_equal(s->value[0], 2);
  assert_int_equal(s->value[1], 2 * FIXTURE_PERIOD);
  assert_int_equal(dlabel(&d, s, "thread")->num, 101);
  assert_string_equal(dstr(&d, dlabel(&d, s, "thread_name")->str), "main");
  assert_int_equal(dlabel(&d, s, "pid")->num, 100);
  const uint64_t other_address[] = {L_LEAF + 1, L_COMPUTE2 + 1, L_MAIN + 1};
  s = find_sample(&d, other_address, 3);
  assert_non_null(s);
  assert_int_equal(s->value[0], 1);
  const uint64_t worker[] = {L_FOO + 1, L_COMPUTE + 1, L_MAIN + 1};
  s = find_sample(&d, worker, 3);
  assert_non_null(s);
  assert_int_equal(dlabel(&d, s, "thread")->num, 102);
  assert_string_equal(dstr(&d, dlabel(&d, s, "thread_name")->str), "worker;1\n");
  const uint64_t unnamed[] = {L_NO_MODULE + 1};
  s = find_sample(&d, unnamed, 1);
  assert_non_null(s);
  assert_int_equal(dlabel(&d, s, "thread")->num, 103);
  assert_null(dlabel(&d, s, "thread_name"));

  // Locations: return addresses moved into the call, exact PCs kept.
  assert_int_equal(d.location_count, L_COUNT);
  const dec_location_t* l = dlocation(&d, L_MAIN + 1);
  assert_int_equal(l->address, FIXTURE_APP_BIAS + 0x1104);
  assert_int_equal(l->mapping_id, 1);
  assert_int_equal(l->line, 10);
  assert_string_equal(dstr(&d, dfunction(&d, l->function_id)->name), "main");
  l = dlocation(&d, L_LEAF + 1);
  assert_int_equal(l->address, FIXTURE_APP_BIAS + 0x1300);
  const dec_function_t* fn = dfunction(&d, l->function_id);
  assert_string_equal(dstr(&d, fn->name), "leaf<a&b>");
  assert_string_equal(dstr(&d, fn->system_name), "leaf<a&b>");
  assert_string_equal(dstr(&d, fn->filename), "app.c");
  l = dlocation(&d, L_FOO + 1);
  assert_int_equal(l->mapping_id, 2);
  assert_int_equal(l->address, FIXTURE_FOO_BIAS + 0x1010);
  l = dlocation(&d, L_FOO_UNKNOWN + 1);
  assert_int_equal(l->line_count, 0);
  assert_int_equal(l->mapping_id, 2);
  l = dlocation(&d, L_NO_MODULE + 1);
  assert_int_equal(l->line_count, 0);
  assert_int_equal(l->mapping_id, 0);
  assert_int_equal(l->address, 0xdead0000);
  // One function per (name, file): both compute locations share one.
  assert_int_equal(dlocation(&d, L_COMPUTE + 1)->function_id,
                   dlocation(&d, L_COMPUTE2 + 1)->function_id);
  assert_int_equal(dlocation(&d, L_COMPUTE2 + 1)->line, 21);
  assert_int_equal(d.function_count, 5);  // main compute leaf foo_work bad;name

  // Mappings from the executable segments.
  assert_int_equal(d.mapping_count, 3);
  const dec_mapping_t* m = &d.mappings[0];
  assert_int_equal(m->id, 1);
  assert_int_equal(m->start, FIXTURE_APP_BIAS + 0x1000);
  assert_int_equal(m->limit, FIXTURE_APP_BIAS + 0x3000);
  assert_int_equal(m->offset, 0x1000);
  assert_string_equal(dstr(&d, m->filename), "/usr/bin/app");
  assert_string_equal(dstr(&d, m->build_id), "abcdef0123456789");
  assert_true(m->has_functions);
  assert_true(m->has_filenames);
  assert_true(m->has_lines);  // any location with a line says so (bad;name has none)
  m = &d.mappings[1];
  assert_int_equal(m->id, 2);
  assert_int_equal(m->start, FIXTURE_FOO_BIAS + 0x1000);
  assert_int_equal(m->limit, FIXTURE_FOO_BIAS + 0x2000);
  assert_string_equal(dstr(&d, m->build_id), "101112131415161718191a1b1c1d1e1f20212223");
  assert_true(m->has_functions);  // foo_work is named: pprof must show our names, not its own
  m = &d.mappings[2];
  assert_int_equal(m->id, 3);
  assert_string_equal(dstr(&d, m->filename), "/lib/noid.so");
  assert_string_equal(dstr(&d, m->build_id), "");
  assert_false(m->has_functions);  // no locations at all

  free_decoded(&d);
  free(data);
}

static uint8_t* gunzip(const uint8_t* in, size_t in_size, size_t* out_size) {
  z_stream z;
  memset(&z, 0, sizeof(z));
  assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);  // gzip only
  size_t cap = 4096;
  uint8_t* out = malloc(cap);
  assert_non_null(out);
  z.next_in = (Bytef*)(uintptr_t)in;
  z.avail_in = (uInt)in_size;
  int rc;
  do {
    if (z.total_out == cap) {
      cap *= 2;
      out = realloc(out, cap);
      assert_non_null(out);
    }
    z.next_out = out + z.total_out;
    z.avail_out = (uInt)(cap - z.total_out);
    rc = inflate(&z, Z_NO_FLUSH);
    assert_true(rc == Z_OK || rc == Z_STREAM_END);
  } while (rc != Z_STREAM_END);
  assert_int_equal(z.avail_in, 0);  // nothing after the gzip member
  *out_size = z.total_out;
  inflateEnd(&z);
  return out;
}

// The profile's process (a selection's, here the exec'd cc1plus, not the g++ that started it)
// names the pprof profile: its modules' mappings come first (pprof's `File:`), the comment
// gives its pid, not its koid.
static void test_pprof_names_own_process(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  zxs_profile_process_t processes[] = {
      {.koid = 100, .pid = 100, .name = "g++", .module_first = 0, .module_count = 1},
      {.koid = EXEC_KOID, .pid = 100, .name = "cc1plus", .module_first = 1, .module_count = 2}};
  p.processes = processes;
  p.process_count = 2;
  p.pid = EXEC_KOID;
  p.process_name = "cc1plus";
  uint8_t* data;
  size_t size;
  assert_int_equal(zxs_export_pprof_encode(&p, &data, &size), ZX_OK);
  dec_profile_t d;
  decode_profile(data, size, &d);
  check_references(&d);
  assert_int_equal(d.mapping_count, 3);
  assert_int_equal(d.mappings[0].id, 2);
  assert_string_equal(dstr(&d, d.mappings[0].filename), "/lib/libfoo.so");
  assert_int_equal(d.mappings[2].id, 1);
  assert_int_equal(d.comment_count, 1);
  assert_string_equal(dstr(&d, d.comments[0]), "process cc1plus (pid 100)");
  free_decoded(&d);
  free(data);
}

static void test_pprof_gzip(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  size_t gz_size;
  char* gz = export_to_memory(pprof_fn, &p, 0, &gz_size);
  assert_true(gz_size > 18);
  assert_int_equal((uint8_t)gz[0], 0x1f);  // gzip magic
  assert_int_equal((uint8_t)gz[1], 0x8b);
  size_t size;
  uint8_t* raw = gunzip((const uint8_t*)gz, gz_size, &size);
  uint8_t* encoded;
  size_t encoded_size;
  assert_int_equal(zxs_export_pprof_encode(&p, &encoded, &encoded_size), ZX_OK);
  assert_int_equal(size, encoded_size);
  assert_memory_equal(raw, encoded, size);
  free(encoded);
  free(raw);
  free(gz);
}

static void test_pprof_empty_and_unknown_period(void** state) {
  (void)state;
  zxs_profile_t p;
  memset(&p, 0, sizeof(p));
  p.ticks_per_second = 1000000000;
  uint8_t* data;
  size_t size;
  assert_int_equal(zxs_export_pprof_encode(&p, &data, &size), ZX_OK);
  dec_profile_t d;
  decode_profile(data, size, &d);
  assert_string_equal(d.strings[0], "");
  assert_int_equal(d.sample_type_count, 2);
  assert_int_equal(d.sample_count, 0);
  assert_int_equal(d.location_count, 0);
  assert_int_equal(d.period, 0);
  assert_string_equal(dstr(&d, d.default_sample_type), "samples");  // cpu would be all 0
  assert_int_equal(d.comment_count, 0);
  free_decoded(&d);
  free(data);

  // And it gzips.
  size_t gz_size;
  char* gz = export_to_memory(pprof_fn, &p, 0, &gz_size);
  size_t raw_size;
  free(gunzip((const uint8_t*)gz, gz_size, &raw_size));
  assert_int_equal(raw_size, size);
  free(gz);
}

// --- Folded stacks --------------------------------------------------------------------------

static void test_folded(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  char* text = export_to_memory(folded_fn, &p, 0, NULL);
  assert_string_equal(text,
                      "0xdead0000 1\n"
                      "main;bad:name x;leaf<a&b> 1\n"
                      "main;compute;foo_work 1\n"
                      "main;compute;leaf<a&b> 3\n"
                      "main;libfoo.so+0x1400 1\n");
  free(text);

  text = export_to_memory(folded_fn, &p, ZXS_EXPORT_THREAD_ROOT, NULL);
  assert_string_equal(text,
                      "main;main;bad:name x;leaf<a&b> 1\n"
                      "main;main;compute;leaf<a&b> 3\n"
                      "thread-103;0xdead0000 1\n"
                      "worker:1 ;main;compute;foo_work 1\n"
                      "worker:1 ;main;libfoo.so+0x1400 1\n");
  free(text);

  text = export_to_memory(folded_fn, &p, ZXS_EXPORT_THREAD_ROOT_TID, NULL);
  assert_string_equal(text,
                      "main-101;main;bad:name x;leaf<a&b> 1\n"
                      "main-101;main;compute;leaf<a&b> 3\n"
                      "thread-103;0xdead0000 1\n"
                      "worker:1 -102;main;compute;foo_work 1\n"
                      "worker:1 -102;main;libfoo.so+0x1400 1\n");
  free(text);
}

// Two threads with one name merge under ZXS_EXPORT_THREAD_ROOT, not with the tid.
static void test_folded_same_thread_names(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  zxs_profile_thread_t threads[] = {{.pid = 100, .tid = 101, .name = "pool"},
                                    {.pid = 100, .tid = 102, .name = "pool"},
                                    {.pid = 100, .tid = 103, .name = "pool"}};
  p.threads = threads;
  p.thread_count = 3;
  uint32_t frames[] = {L_LEAF, L_LEAF};
  zxs_profile_sample_t samples[] = {{.pid = 100, .tid = 101, .depth = 1, .first_frame = 0},
                                    {.pid = 100, .tid = 102, .depth = 1, .first_frame = 1}};
  p.samples = samples;
  p.sample_count = 2;
  p.frames = frames;
  p.frame_count = 2;
  char* text = export_to_memory(folded_fn, &p, ZXS_EXPORT_THREAD_ROOT, NULL);
  assert_string_equal(text, "pool;leaf<a&b> 2\n");
  free(text);
  text = export_to_memory(folded_fn, &p, ZXS_EXPORT_THREAD_ROOT_TID, NULL);
  assert_string_equal(text, "pool-101;leaf<a&b> 1\npool-102;leaf<a&b> 1\n");
  free(text);
}

// A process tree: sh, then xz by exec (same pid, another koid), another xz and a process
// without a name, each sampled in main -> leaf.
static zxs_profile_process_t tree_processes[] = {{.koid = 100, .pid = 100, .name = "sh"},
                                                 {.koid = EXEC_KOID, .pid = 100, .name = "xz"},
                                                 {.koid = 200, .pid = 200, .name = "xz"},
                                                 {.koid = 300, .pid = 300, .name = ""}};
static uint32_t tree_frames[] = {L_LEAF, L_MAIN};
static zxs_profile_sample_t tree_samples[] = {{.pid = 100, .tid = 101, .depth = 2},
                                              {.pid = EXEC_KOID, .tid = 101, .depth = 2},
                                              {.pid = 200, .tid = 102, .depth = 2},
                                              {.pid = 300, .tid = 103, .depth = 2}};

static void tree_profile(zxs_profile_t* p) {
  fixture_profile(p);
  p->processes = tree_processes;
  p->process_count = 4;
  p->samples = tree_samples;
  p->sample_count = 4;
  p->frames = tree_frames;
  p->frame_count = 2;
}

// ZXS_EXPORT_PROCESS_ROOT: programs stay apart, one program's processes merge; outside the
// thread root.
static void test_folded_process_root(void** state) {
  (void)state;
  zxs_profile_t p;
  tree_profile(&p);
  char* text = export_to_memory(folded_fn, &p, 0, NULL);
  assert_string_equal(text, "main;leaf<a&b> 4\n");
  free(text);
  text = export_to_memory(folded_fn, &p, ZXS_EXPORT_PROCESS_ROOT, NULL);
  assert_string_equal(text,
                      "process-300;main;leaf<a&b> 1\n"
                      "sh;main;leaf<a&b> 1\n"
                      "xz;main;leaf<a&b> 2\n");
  free(text);
  text = export_to_memory(folded_fn, &p, ZXS_EXPORT_PROCESS_ROOT | ZXS_EXPORT_THREAD_ROOT, NULL);
  assert_string_equal(text,
                      "process-300;thread-103;main;leaf<a&b> 1\n"
                      "sh;main;main;leaf<a&b> 1\n"
                      "xz;main;main;leaf<a&b> 1\n"
                      "xz;worker:1 ;main;leaf<a&b> 1\n");
  free(text);
  text = export_to_memory(flamegraph_fn, &p, ZXS_EXPORT_PROCESS_ROOT, NULL);
  assert_int_equal(count_occurrences(text, "<title>xz (2 samples, 50.00%)</title>"), 1);
  assert_int_equal(count_occurrences(text, "<title>sh (1 sample, 25.00%)</title>"), 1);
  assert_int_equal(count_occurrences(text, "<title>main ("), 3);  // one per program
  free(text);
}

// A launcher that sampled nothing (sh, forking xz): the header names it, the process list says
// whose samples these are.
static void test_top_lists_the_one_sampled_process(void** state) {
  (void)state;
  zxs_profile_t p;
  tree_profile(&p);
  zxs_profile_process_t processes[] = {{.koid = 100, .pid = 100, .name = "sh"},
                                       {.koid = 200, .pid = 200, .name = "xz", .samples = 1}};
  zxs_profile_sample_t samples[] = {{.pid = 200, .tid = 102, .depth = 2}};
  p.processes = processes;
  p.process_count = 2;
  p.process_name = "sh";
  p.samples = samples;
  p.sample_count = 1;
  char* text = export_to_memory(top_fn, &p, 0, NULL);
  assert_non_null(strstr(text, "Process: sh (pid 100)\n"));
  assert_non_null(strstr(text, "Processes: 1\n         1 100.00%  xz (pid 200)\n"));
  free(text);
  processes[0].samples = 1;  // the header's process is the one sampled: no list
  samples[0].pid = 100;
  processes[1].samples = 0;
  text = export_to_memory(top_fn, &p, 0, NULL);
  assert_null(strstr(text, "Processes:"));
  free(text);
}

// Kernel frames are marked as perf marks them: "_[k]" in folded stacks, " [k]" in top.
static void test_kernel_frames_marked(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  zxs_profile_location_t locations[L_COUNT + 2];
  memcpy(locations, fixture_locations, sizeof(fixture_locations));
  locations[L_COUNT] = (zxs_profile_location_t){
      .address = 0xffffffff81000010ull, .module = -1, .function = "do_syscall_64"};
  locations[L_COUNT + 1] = (zxs_profile_location_t){.address = 0xffffffff81000020ull,
                                                    .is_return_address = true,
                                                    .module = -1,
                                                    .function = "entry_SYSCALL_64"};
  uint32_t frames[] = {L_COUNT, L_COUNT + 1, L_MAIN};
  zxs_profile_sample_t samples[] = {{.pid = 100, .tid = 101, .depth = 3}};
  p.locations = locations;
  p.location_count = L_COUNT + 2;
  p.frames = frames;
  p.frame_count = 3;
  p.samples = samples;
  p.sample_count = 1;
  char* text = export_to_memory(folded_fn, &p, 0, NULL);
  assert_string_equal(text, "main;entry_SYSCALL_64_[k];do_syscall_64_[k] 1\n");
  free(text);
  text = export_to_memory(top_fn, &p, 0, NULL);
  assert_non_null(strstr(text, "       1  100.00%        1  100.00%  do_syscall_64 [k]\n"));
  assert_non_null(strstr(text, "  entry_SYSCALL_64 [k]\n"));
  assert_non_null(strstr(text, "  main\n"));
  free(text);
}

// --- Flame graph ----------------------------------------------------------------------------

// Checks that elements nest properly (comments, CDATA and the XML declaration skipped).
static void check_balanced_tags(const char* svg) {
  const char* stack[64];
  size_t lens[64];
  size_t depth = 0;
  for (const char* p = strchr(svg, '<'); p != NULL; p = strchr(p, '<')) {
    if (strncmp(p, "<?", 2) == 0) {
      p = strstr(p, "?>");
    } else if (strncmp(p, "<![CDATA[", 9) == 0) {
      p = strstr(p, "]]>");
    } else if (strncmp(p, "<!--", 4) == 0) {
      p = strstr(p, "-->");
    } else if (p[1] == '/') {
      size_t n = strcspn(p + 2, " >");
      assert_true(depth > 0);
      depth--;
      assert_int_equal(n, lens[depth]);
      assert_memory_equal(p + 2, stack[depth], n);
      p = strchr(p, '>');
    } else {
      const char* end = strchr(p, '>');
      assert_non_null(end);
      if (end[-1] != '/') {
        assert_true(depth < 64);
        stack[depth] = p + 1;
        lens[depth] = strcspn(p + 1, " />");
        depth++;
      }
      p = end;
    }
    assert_non_null(p);
  }
  assert_int_equal(depth, 0);
}

typedef struct svg_frame {
  char title[256];
  uint64_t samples;
  double x, width;
  int y;
  char fill[32];
} svg_frame_t;

// The frames of our flame graph, parsed back.
static size_t parse_frames(const char* svg, svg_frame_t* frames, size_t max) {
  size_t n = 0;
  for (const char* p = strstr(svg, "<g class=\"f\">"); p != NULL;
       p = strstr(p + 1, "<g class=\"f\">")) {
    assert_true(n < max);
    svg_frame_t* f = &frames[n++];
    const char* title = p + strlen("<g class=\"f\">");
    assert_memory_equal(title, "<title>", 7);  // every frame has its tooltip, first
    title += 7;
    const char* title_end = strstr(title, "</title>");
    assert_true(title_end != NULL && (size_t)(title_end - title) < sizeof(f->title));
    memcpy(f->title, title, (size_t)(title_end - title));
    f->title[title_end - title] = '\0';
    const char* counts = strrchr(f->title, '(');
    assert_non_null(counts);
    f->samples = strtoull(counts + 1, NULL, 10);
    const char* rect = title_end + strlen("</title>");
    assert_memory_equal(rect, "<rect ", 6);
    assert_int_equal(
        sscanf(rect, "<rect x=\"%lf\" y=\"%d\" width=\"%lf\"", &f->x, &f->y, &f->width), 3);
    const char* fill = strstr(rect, "fill=\"");
    assert_non_null(fill);
    sscanf(fill, "fill=\"%31[^\"]\"", f->fill);
    assert_non_null(strstr(rect, "<text"));
  }
  return n;
}

static const svg_frame_t* find_frame(const svg_frame_t* frames, size_t n, const char* title) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(frames[i].title, title) == 0) return &frames[i];
  }
  fail_msg("no frame %s", title);
  return NULL;
}

static void test_flamegraph(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  size_t size;
  char* svg = export_to_memory(flamegraph_fn, &p, 0, &size);
  assert_int_equal(strlen(svg), size);
  assert_memory_equal(svg, "<?xml", 5);
  assert_non_null(strstr(svg, "<svg "));
  assert_string_equal(svg + size - 7, "</svg>\n");
  check_balanced_tags(svg);
  assert_non_null(strstr(svg, "<title>"));
  assert_non_null(strstr(svg, ">CPU samples of app (pid 100)</text>"));
  // Names are escaped: no raw '&' but entities (before the script, whose CDATA may have any).
  assert_null(strstr(svg, "leaf<a&b>"));
  const char* script = strstr(svg, "<script");
  assert_non_null(script);
  for (const char* amp = strchr(svg, '&'); amp != NULL && amp < script;
       amp = strchr(amp + 1, '&')) {
    assert_true(strncmp(amp, "&amp;", 5) == 0 || strncmp(amp, "&lt;", 4) == 0 ||
                strncmp(amp, "&gt;", 4) == 0 || strncmp(amp, "&quot;", 6) == 0 ||
                strncmp(amp, "&apos;", 6) == 0);
  }

  svg_frame_t frames[32];
  size_t n = parse_frames(svg, frames, 32);
  // all, 0xdead0000, main, bad:name x, leaf (under it), compute, foo_work, leaf (under
  // compute), libfoo.so+0x1400.
  assert_int_equal(n, 9);
  assert_int_equal(count_occurrences(svg, "<rect"), n);  // every rect is a frame with a title
  assert_int_equal(count_occurrences(svg, "<title>"), n);
  const svg_frame_t* all = find_frame(frames, n, "all (7 samples, 100.00%)");
  assert_true(all->x == 10.0 && all->width == 1180.0);
  for (size_t i = 0; i < n; i++) {
    double expect = 1180.0 * (double)frames[i].samples / FIXTURE_SAMPLES;
    assert_true(frames[i].width > expect - 0.011 && frames[i].width < expect + 0.011);
  }
  const svg_frame_t* main_frame = find_frame(frames, n, "main (6 samples, 85.71%)");
  const svg_frame_t* compute = find_frame(frames, n, "compute (4 samples, 57.14%)");
  const svg_frame_t* leaf3 = find_frame(frames, n, "leaf&lt;a&amp;b&gt; (3 samples, 42.86%)");
  const svg_frame_t* leaf1 = find_frame(frames, n, "leaf&lt;a&amp;b&gt; (1 sample, 14.29%)");
  find_frame(frames, n, "bad:name x (1 sample, 14.29%)");
  find_frame(frames, n, "0xdead0000 (1 sample, 14.29%)");
  // Stacked: root at the bottom, each child one row up and inside its parent.
  assert_int_equal(main_frame->y, all->y - 16);
  assert_int_equal(compute->y, main_frame->y - 16);
  assert_int_equal(leaf3->y, compute->y - 16);
  assert_true(compute->x >= main_frame->x &&
              compute->x + compute->width <= main_frame->x + main_frame->width + 0.001);
  assert_true(leaf3->x >= compute->x &&
              leaf3->x + leaf3->width <= compute->x + compute->width + 0.001);
  // Colours come from names.
  assert_string_equal(leaf3->fill, leaf1->fill);
  free(svg);

  // Deterministic.
  char* again = export_to_memory(flamegraph_fn, &p, 0, NULL);
  char* first = export_to_memory(flamegraph_fn, &p, 0, NULL);
  assert_string_equal(again, first);
  free(again);
  free(first);
}

static void test_flamegraph_labels_and_utf8(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  char long_name[400];
  memset(long_name, 'x', sizeof(long_name) - 1);
  long_name[sizeof(long_name) - 1] = '\0';
  zxs_profile_location_t locations[] = {
      {.address = 1, .module = -1, .function = long_name},
      {.address = 2, .module = -1, .function = "caf\xc3\xa9 \xff\xfe bad \x01 \"q\" 'a'"},
  };
  uint32_t frames[] = {1, 0};
  zxs_profile_sample_t samples[] = {{.tid = 1, .depth = 2, .first_frame = 0}};
  p.locations = locations;
  p.location_count = 2;
  p.frames = frames;
  p.frame_count = 2;
  p.samples = samples;
  p.sample_count = 1;
  p.process_name = "a<b";
  char* svg = export_to_memory(flamegraph_fn, &p, 0, NULL);
  check_balanced_tags(svg);
  assert_non_null(strstr(svg, ">CPU samples of a&lt;b (pid 100)<"));
  // Valid UTF-8 kept, invalid bytes replaced, control characters blanked (as in folded
  // stacks), quotes escaped.
  assert_non_null(
      strstr(svg, "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd bad   &quot;q&quot; &apos;a&apos;"));
  assert_null(strchr(svg, '\x01'));
  assert_null(strchr(svg, '\xff'));
  // The long name is cut to fit 1180 px: (1180 - 6) / 7.08 = 165 characters, 163 + "..".
  char cut[180];
  memset(cut, 'x', 163);
  strcpy(cut + 163, "..</text>");
  assert_non_null(strstr(svg, cut));
  assert_non_null(strstr(svg, long_name));  // whole in the title
  free(svg);

  svg = export_to_memory(flamegraph_fn, &p, 0, NULL);
  free(svg);
  // A custom title.
  FILE* out = tmpfile();
  assert_non_null(out);
  assert_int_equal(zxs_export_flamegraph(&p, 0, "My <title>", out), ZX_OK);
  char* data = read_back(out, NULL);
  assert_non_null(strstr(data, ">My &lt;title&gt;</text>"));
  free(data);
}

// --- Markup ---------------------------------------------------------------------------------

static void test_markup(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  char* text = export_to_memory(markup_fn, &p, 0, NULL);
  assert_string_equal(text,
                      "{{{reset}}}\n"
                      "{{{module:0:/usr/bin/app:elf:abcdef0123456789}}}\n"
                      "{{{mmap:0x555500000000:0x1000:load:0:r:0x0}}}\n"
                      "{{{mmap:0x555500001000:0x2000:load:0:rx:0x1000}}}\n"
                      "{{{mmap:0x555500003e00:0x300:load:0:rw:0x3e00}}}\n"
                      "{{{module:1:/lib/libfoo.so:elf:101112131415161718191a1b1c1d1e1f20212223}}}\n"
                      "{{{mmap:0x7f0000000000:0x800:load:1:r:0x0}}}\n"
                      "{{{mmap:0x7f0000001000:0x1000:load:1:rx:0x1000}}}\n"
                      "pid:100 tid:101\n"
                      "{{{bt:0:0x555500001300:pc}}}\n"
                      "{{{bt:1:0x555500001205:ra}}}\n"
                      "{{{bt:2:0x555500001105:ra}}}\n"
                      "pid:100 tid:101\n"
                      "{{{bt:0:0x555500001300:pc}}}\n"
                      "{{{bt:1:0x555500001205:ra}}}\n"
                      "{{{bt:2:0x555500001105:ra}}}\n"
                      "pid:100 tid:101\n"
                      "{{{bt:0:0x555500001300:pc}}}\n"
                      "{{{bt:1:0x555500001210:ra}}}\n"
                      "{{{bt:2:0x555500001105:ra}}}\n"
                      "pid:100 tid:102\n"
                      "{{{bt:0:0x7f0000001010:pc}}}\n"
                      "{{{bt:1:0x555500001205:ra}}}\n"
                      "{{{bt:2:0x555500001105:ra}}}\n"
                      "pid:100 tid:102\n"
                      "{{{bt:0:0x7f0000001400:pc}}}\n"
                      "{{{bt:1:0x555500001105:ra}}}\n"
                      "pid:100 tid:103\n"
                      "{{{bt:0:0xdead0000:pc}}}\n"
                      "pid:100 tid:101\n"
                      "{{{bt:0:0x555500001300:pc}}}\n"
                      "{{{bt:1:0x555500001405:ra}}}\n"
                      "{{{bt:2:0x555500001105:ra}}}\n");
  free(text);

  // Names that would end a field.
  fixture_modules[0].path = (char*)"/weird/a:b{c}";
  text = export_to_memory(markup_fn, &p, 0, NULL);
  assert_non_null(strstr(text, "{{{module:0:/weird/a_b_c_:elf:abcdef0123456789}}}\n"));
  free(text);
}

// The modules alone, as a trace file stores them: IDs stay contiguous over the modules written
// (a reader may insist), even when one without a build ID comes first.
static void test_markup_modules(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  zxs_module_t modules[3] = {fixture_modules[2], fixture_modules[0], fixture_modules[1]};
  zxs_module_list_t list = {.modules = modules, .count = 3};
  FILE* out = tmpfile();
  assert_non_null(out);
  assert_int_equal(zxs_modules_write_markup(&list, 0, out), ZX_OK);
  char* text = read_back(out, NULL);
  assert_string_equal(text,
                      "{{{module:0:/usr/bin/app:elf:abcdef0123456789}}}\n"
                      "{{{mmap:0x555500000000:0x1000:load:0:r:0x0}}}\n"
                      "{{{mmap:0x555500001000:0x2000:load:0:rx:0x1000}}}\n"
                      "{{{mmap:0x555500003e00:0x300:load:0:rw:0x3e00}}}\n"
                      "{{{module:1:/lib/libfoo.so:elf:101112131415161718191a1b1c1d1e1f20212223}}}\n"
                      "{{{mmap:0x7f0000000000:0x800:load:1:r:0x0}}}\n"
                      "{{{mmap:0x7f0000001000:0x1000:load:1:rx:0x1000}}}\n");
  free(text);

  zxs_module_list_t empty = {0};
  out = tmpfile();
  assert_non_null(out);
  assert_int_equal(zxs_modules_write_markup(&empty, 0, out), ZX_OK);
  assert_int_equal(zxs_modules_write_markup(NULL, 0, out), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_modules_write_markup(&list, 0, NULL), ZX_ERR_INVALID_ARGS);
  modules[1].segments = NULL;
  assert_int_equal(zxs_modules_write_markup(&list, 0, out), ZX_ERR_INVALID_ARGS);
  text = read_back(out, NULL);
  assert_string_equal(text, "");
  free(text);
}

// --- Top ------------------------------------------------------------------------------------

static void test_top(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  char* text = export_to_memory(top_fn, &p, ZXS_EXPORT_TOP_PER_THREAD, NULL);
  assert_string_equal(text,
                      "Process: app (pid 100)\n"
                      "Samples: 7  Threads: 3  Period: 1000000 ns (1000 Hz)  Duration: 0.007 s\n"
                      "Sampled: user code only (kernel time not seen)\n"
                      "\n"
                      "    Self    Self%    Total   Total%  Function\n"
                      "       4   57.14%        4   57.14%  leaf<a&b>\n"
                      "       1   14.29%        1   14.29%  0xdead0000\n"
                      "       1   14.29%        1   14.29%  [libfoo.so]\n"
                      "       1   14.29%        1   14.29%  foo_work\n"
                      "       0    0.00%        6   85.71%  main\n"
                      "       0    0.00%        4   57.14%  compute\n"
                      "       0    0.00%        1   14.29%  bad;name x\n"
                      "\n"
                      "Thread main (tid 101): 4 samples (57.14% of all)\n"
                      "    Self    Self%    Total   Total%  Function\n"
                      "       4  100.00%        4  100.00%  leaf<a&b>\n"
                      "       0    0.00%        4  100.00%  main\n"
                      "       0    0.00%        3   75.00%  compute\n"
                      "       0    0.00%        1   25.00%  bad;name x\n"
                      "\n"
                      "Thread worker;1  (tid 102): 2 samples (28.57% of all)\n"
                      "    Self    Self%    Total   Total%  Function\n"
                      "       1   50.00%        1   50.00%  [libfoo.so]\n"
                      "       1   50.00%        1   50.00%  foo_work\n"
                      "       0    0.00%        2  100.00%  main\n"
                      "       0    0.00%        1   50.00%  compute\n"
                      "\n"
                      "Thread unknown (tid 103): 1 sample (14.29% of all)\n"
                      "    Self    Self%    Total   Total%  Function\n"
                      "       1  100.00%        1  100.00%  0xdead0000\n");
  free(text);

  // Code without a name: one row per address when asked.
  text = export_to_memory(top_fn, &p, ZXS_EXPORT_TOP_ADDRESSES, NULL);
  assert_non_null(strstr(text, "  libfoo.so+0x1400\n"));
  assert_null(strstr(text, "[libfoo.so]"));
  free(text);

  // First rows only, sorted by total.
  FILE* out = tmpfile();
  assert_non_null(out);
  assert_int_equal(zxs_export_top(&p, 2, ZXS_EXPORT_TOP_BY_TOTAL, out), ZX_OK);
  char* data = read_back(out, NULL);
  const char* table = strstr(data, "    Self");
  assert_non_null(table);
  assert_string_equal(table,
                      "    Self    Self%    Total   Total%  Function\n"
                      "       0    0.00%        6   85.71%  main\n"
                      "       4   57.14%        4   57.14%  leaf<a&b>\n"
                      "(5 more functions not shown)\n");
  free(data);
}

// A recursive function counts once per sample in total.
static void test_top_recursion(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  uint32_t frames[] = {L_COMPUTE, L_COMPUTE2, L_COMPUTE, L_MAIN};
  zxs_profile_sample_t samples[] = {{.pid = 100, .tid = 101, .depth = 4, .first_frame = 0}};
  p.frames = frames;
  p.frame_count = 4;
  p.samples = samples;
  p.sample_count = 1;
  p.period = 0;
  char* text = export_to_memory(top_fn, &p, 0, NULL);
  assert_non_null(strstr(text, "Samples: 1  Threads: 1  Period: unknown  Duration: 0.000 s\n"));
  assert_non_null(strstr(text,
                         "       1  100.00%        1  100.00%  compute\n"
                         "       0    0.00%        1  100.00%  main\n"));
  free(text);
}

// --- Empty, incomplete and invalid profiles -------------------------------------------------

static void test_empty_profile(void** state) {
  (void)state;
  zxs_profile_t p;
  memset(&p, 0, sizeof(p));
  char* text = export_to_memory(folded_fn, &p, ZXS_EXPORT_THREAD_ROOT, NULL);
  assert_string_equal(text, "");
  free(text);
  text = export_to_memory(markup_fn, &p, 0, NULL);
  assert_string_equal(text, "{{{reset}}}\n");
  free(text);
  text = export_to_memory(top_fn, &p, ZXS_EXPORT_TOP_PER_THREAD, NULL);
  assert_string_equal(text,
                      "Process: unknown (pid 0)\n"
                      "Samples: 0  Threads: 0  Period: unknown\n"
                      "Sampled: user code only (kernel time not seen)\n"
                      "\n"
                      "No samples.\n");
  free(text);
  text = export_to_memory(flamegraph_fn, &p, 0, NULL);
  check_balanced_tags(text);
  assert_non_null(strstr(text, ">No samples</text>"));
  assert_null(strstr(text, "<rect"));
  free(text);
  free(export_to_memory(pprof_fn, &p, 0, NULL));
}

// Nothing named anywhere: NULL names, NULL and empty paths, no threads, depth-0 samples.
static void test_missing_names(void** state) {
  (void)state;
  zxs_segment_t seg = {.vaddr = 0, .memsz = 0x1000, .offset = 0, .flags = ZXS_SEGMENT_X};
  zxs_module_t modules[2];
  memset(modules, 0, sizeof(modules));
  modules[0].path = NULL;
  modules[0].build_id_size = 1;
  modules[0].segments = &seg;
  modules[0].segment_count = 1;
  modules[1].path = (char*)"";
  modules[1].load_bias = 0x10000;
  modules[1].build_id_size = 2;
  modules[1].segments = &seg;
  modules[1].segment_count = 1;
  zxs_profile_thread_t threads[] = {{.tid = 5, .name = NULL}, {.tid = 6, .name = ""}};
  zxs_profile_location_t locations[] = {
      {.address = 0x10, .module = 0, .file_address = 0x10},
      {.address = 0x10020, .module = 1, .file_address = 0x20, .is_return_address = true},
      {.address = 0x99, .module = -1, .function = ""},
  };
  uint32_t frames[] = {0, 1, 2};
  zxs_profile_sample_t samples[] = {{.tid = 5, .depth = 3, .first_frame = 0},
                                    {.tid = 6, .depth = 0, .first_frame = 3},
                                    {.tid = 7, .depth = 1, .first_frame = 2}};
  zxs_profile_t p = {.ticks_per_second = 0,
                     .modules = {.modules = modules, .count = 2},
                     .threads = threads,
                     .thread_count = 2,
                     .locations = locations,
                     .location_count = 3,
                     .samples = samples,
                     .sample_count = 3,
                     .frames = frames,
                     .frame_count = 3};
  char* text = export_to_memory(folded_fn, &p, 0, NULL);
  assert_string_equal(text, "0x99 1\n0x99;0x10020;0x10 1\n");  // depth 0: no stack
  free(text);
  text = export_to_memory(folded_fn, &p, ZXS_EXPORT_THREAD_ROOT, NULL);
  assert_string_equal(text, "thread-5;0x99;0x10020;0x10 1\nthread-6 1\nthread-7;0x99 1\n");
  free(text);
  text = export_to_memory(markup_fn, &p, 0, NULL);
  assert_non_null(strstr(text, "{{{module:0:unknown:elf:00}}}\n"));
  assert_non_null(strstr(text, "{{{module:1:unknown:elf:0000}}}\n"));
  free(text);
  text = export_to_memory(top_fn, &p, ZXS_EXPORT_TOP_PER_THREAD, NULL);
  assert_non_null(strstr(text, "Process: unknown (pid 0)\nSamples: 3  Threads: 3"));
  assert_non_null(strstr(text, "Thread unknown (tid 6): 1 sample"));
  free(text);
  text = export_to_memory(flamegraph_fn, &p, ZXS_EXPORT_THREAD_ROOT_TID, NULL);
  check_balanced_tags(text);
  free(text);

  uint8_t* data;
  size_t size;
  assert_int_equal(zxs_export_pprof_encode(&p, &data, &size), ZX_OK);
  dec_profile_t d;
  decode_profile(data, size, &d);
  check_references(&d);
  assert_int_equal(d.function_count, 0);
  assert_int_equal(d.sample_count, 3);
  free_decoded(&d);
  free(data);
}

static void test_invalid_arguments(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  FILE* out = tmpfile();
  assert_non_null(out);
  uint8_t* data;
  size_t size;
  assert_int_equal(zxs_export_pprof(NULL, out), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_export_pprof(&p, NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_export_pprof_encode(&p, NULL, &size), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_export_folded(NULL, 0, out), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_export_flamegraph(&p, 0, NULL, NULL), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_export_markup(NULL, out), ZX_ERR_INVALID_ARGS);
  assert_int_equal(zxs_export_top(&p, 0, 0, NULL), ZX_ERR_INVALID_ARGS);

  // Inconsistent profiles are refused by every exporter, before writing anything.
  export_fn fns[] = {folded_fn, flamegraph_fn, markup_fn, top_fn, pprof_fn};
  for (int c = 0; c < 5; c++) {
    fixture_profile(&p);
    uint32_t bad_frames[] = {L_COUNT};
    zxs_profile_sample_t bad_sample = {.depth = 1, .first_frame = 0};
    zxs_profile_location_t bad_location = {.module = 3};
    switch (c) {
      case 0:
        p.frames = bad_frames;
        p.frame_count = 1;
        p.samples = &bad_sample;
        p.sample_count = 1;
        break;  // a frame naming no location
      case 1:
        bad_sample.first_frame = p.frame_count;
        p.samples = &bad_sample;
        p.sample_count = 1;
        break;  // frames past the end
      case 2:
        p.locations = &bad_location;
        p.location_count = 1;
        break;  // no such module
      case 3:
        p.samples = NULL;
        break;  // count without array
      default:
        p.modules.modules[0].build_id_size = ZXS_BUILD_ID_MAX + 1;
        break;
    }
    for (size_t f = 0; f < 5; f++) {
      assert_int_equal(fns[f](&p, 0, out), ZX_ERR_INVALID_ARGS);
    }
    assert_int_equal(zxs_export_pprof_encode(&p, &data, &size), ZX_ERR_INVALID_ARGS);
    assert_null(data);
  }
  assert_int_equal(ftell(out), 0);
  fclose(out);
}

static void test_write_error(void** state) {
  (void)state;
  zxs_profile_t p;
  fixture_profile(&p);
  export_fn fns[] = {folded_fn, flamegraph_fn, markup_fn, top_fn, pprof_fn};
  for (size_t f = 0; f < 5; f++) {
    FILE* in = fopen("/dev/null", "r");  // writes fail
    assert_non_null(in);
    assert_int_equal(fns[f](&p, 0, in), ZX_ERR_IO);
    fclose(in);
  }
}

// --- A bigger, generated profile -------------------------------------------------------------

static uint32_t next_random(uint32_t* state) {
  *state = *state * 1103515245u + 12345u;
  return *state >> 8;
}

static void test_generated_profile(void** state) {
  (void)state;
  enum { kLocations = 300, kSamples = 3000, kMaxDepth = 64 };
  static char names[kLocations][200];
  static zxs_profile_location_t locations[kLocations];
  static zxs_profile_sample_t samples[kSamples];
  static uint32_t frames[kSamples * kMaxDepth];
  zxs_profile_thread_t threads[] = {{.tid = 1, .name = "a"}, {.tid = 2, .name = "b"}};
  uint32_t seed = 12345;
  for (int i = 0; i < kLocations; i++) {
    // Long names (multi-byte lengths in pprof); every third one unnamed.
    snprintf(names[i], sizeof(names[i]), "ns::function_%d_%0150d", i % 100, 0);
    locations[i] = (zxs_profile_location_t){.address = 0x1000 + 16u * (unsigned)i,
                                            .is_return_address = i >= 20,
                                            .module = i % 2 == 0 ? 0 : -1,
                                            .file_address = 0x1000 + 16u * (unsigned)i,
                                            .function = i % 3 == 2 ? NULL : names[i],
                                            .file = "gen.c",
                                            .line = (uint32_t)i};
  }
  // Stacks are prefixes of 50 call paths (outermost first), so that many of them merge.
  static uint32_t paths[50][kMaxDepth];
  for (int i = 0; i < 50; i++) {
    for (int d = 0; d < kMaxDepth; d++) {
      paths[i][d] = 20 + next_random(&seed) % (kLocations - 20);
    }
  }
  size_t frame_count = 0;
  for (int i = 0; i < kSamples; i++) {
    uint32_t depth = 1 + next_random(&seed) % kMaxDepth;
    const uint32_t* path = paths[next_random(&seed) % 50];
    samples[i] = (zxs_profile_sample_t){.pid = 1,
                                        .tid = 1 + (uint64_t)(i % 2),
                                        .ticks = (uint64_t)i * 1000,
                                        .depth = depth,
                                        .first_frame = frame_count};
    frames[frame_count++] = next_random(&seed) % 4;  // an exact PC
    for (uint32_t d = depth - 1; d > 0; d--) {
      frames[frame_count++] = path[d - 1];
    }
  }
  zxs_profile_t p;
  fixture_profile(&p);
  p.modules.count = 1;
  p.threads = threads;
  p.thread_count = 2;
  p.locations = locations;
  p.location_count = kLocations;
  p.samples = samples;
  p.sample_count = kSamples;
  p.frames = frames;
  p.frame_count = frame_count;

  uint8_t* data;
  size_t size;
  assert_int_equal(zxs_export_pprof_encode(&p, &data, &size), ZX_OK);
  dec_profile_t d;
  decode_profile(data, size, &d);
  check_references(&d);
  uint64_t total = 0;
  for (size_t i = 0; i < d.sample_count; i++) total += d.samples[i].value[0];
  assert_int_equal(total, kSamples);
  assert_int_equal(d.function_count, 100);  // 200 named locations, 100 names, one file
  free_decoded(&d);
  free(data);

  char* folded = export_to_memory(folded_fn, &p, ZXS_EXPORT_THREAD_ROOT, NULL);
  total = 0;
  const char* prev = NULL;
  for (char* line = strtok(folded, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    char* space = strrchr(line, ' ');
    assert_non_null(space);
    total += strtoull(space + 1, NULL, 10);
    if (prev != NULL) assert_true(strcmp(prev, line) < 0);  // sorted, unique
    prev = line;
  }
  assert_int_equal(total, kSamples);
  free(folded);

  char* svg = export_to_memory(flamegraph_fn, &p, 0, NULL);
  check_balanced_tags(svg);
  assert_int_equal(count_occurrences(svg, "<rect"), count_occurrences(svg, "<title>"));
  free(svg);
  free(export_to_memory(markup_fn, &p, 0, NULL));
  char* top = export_to_memory(top_fn, &p, ZXS_EXPORT_TOP_PER_THREAD, NULL);
  assert_non_null(strstr(top, "Samples: 3000  Threads: 2  Period: 1000000 ns (1000 Hz)"));
  free(top);
}

int main(void) {
  // clang-format off
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_protobuf_writer),
      cmocka_unit_test(test_pprof_fixture),
      cmocka_unit_test(test_pprof_names_own_process),
      cmocka_unit_test(test_pprof_gzip),
      cmocka_unit_test(test_pprof_empty_and_unknown_period),
      cmocka_unit_test(test_folded),
      cmocka_unit_test(test_folded_same_thread_names),
      cmocka_unit_test(test_folded_process_root),
      cmocka_unit_test(test_kernel_frames_marked),
      cmocka_unit_test(test_top_lists_the_one_sampled_process),
      cmocka_unit_test(test_flamegraph),
      cmocka_unit_test(test_flamegraph_labels_and_utf8),
      cmocka_unit_test(test_markup),
      cmocka_unit_test(test_markup_modules),
      cmocka_unit_test(test_top),
      cmocka_unit_test(test_top_recursion),
      cmocka_unit_test(test_empty_profile),
      cmocka_unit_test(test_missing_names),
      cmocka_unit_test(test_invalid_arguments),
      cmocka_unit_test(test_write_error),
      cmocka_unit_test(test_generated_profile),
  };
  // clang-format on
  return cmocka_run_group_tests(tests, NULL, NULL);
}
