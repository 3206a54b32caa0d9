// JIT code names: perf maps and jitdump files made by hand (malformed lines and records
// included), the later of overlapping symbols winning, the files the capture refuses, and a
// trace carrying a process's JIT symbols read back into a profile named one row per function.
#define _GNU_SOURCE  // open_memstream
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/fxt.h>

#include "export.h"
#include "jit_capture.h"
#include "jit_symbols.h"
#include "profile.h"
#include "trace_file.h"

static const char* name_at(const zxs_jit_symbols_t* set, uint64_t address) {
  const zxs_jit_symbol_t* s = zxs_jit_symbols_lookup(set, address);
  return s != NULL ? zxs_jit_symbol_name(set, s) : NULL;
}

static void perf_map_lines_and_malformed_ones(void** state) {
  (void)state;
  static const char kMap[] =
      "1000 10 LazyCompile:*hot /tmp/a.js:1\n"   // node's form
      "0x2000 0X20 JS:*with prefix\r\n"          // 0x prefixes, a CRLF line end
      "\n"                                       // blank: nothing
      "zz 10 not hex\n"                          // malformed: start
      "3000 10\n"                                // malformed: no name
      "3000 yy name\n"                           // malformed: size
      "3000 0 zero size\n"                       // skipped: empty range
      "ffffffffffffff00 200 wraps around\n"      // skipped: past the end of the address space
      "12345678901234567 10 seventeen digits\n"  // malformed: too long a number
      "4000 8 last line without newline";
  zxs_jit_symbols_t set = {0};
  assert_int_equal(zxs_jit_parse_perf_map(&set, kMap, strlen(kMap)), ZX_OK);
  assert_int_equal(set.count, 3);
  assert_int_equal(set.skipped, 6);
  assert_int_equal(zxs_jit_symbols_resolve(&set), ZX_OK);
  assert_string_equal(name_at(&set, 0x1000), "LazyCompile:*hot /tmp/a.js:1");
  assert_string_equal(name_at(&set, 0x100f), "LazyCompile:*hot /tmp/a.js:1");
  assert_null(name_at(&set, 0x1010));
  assert_null(name_at(&set, 0xfff));
  assert_string_equal(name_at(&set, 0x201f), "JS:*with prefix");
  assert_string_equal(name_at(&set, 0x4007), "last line without newline");
  assert_null(name_at(&set, 0x3000));
  // An empty text, and NULL with no bytes.
  assert_int_equal(zxs_jit_parse_perf_map(&set, NULL, 0), ZX_OK);
  zxs_jit_symbols_free(&set);
}

static void later_symbols_win_where_they_overlap(void** state) {
  (void)state;
  static const char kMap[] =
      "1000 100 A\n"
      "1040 20 B\n"   // inside A: B there, A around it
      "1000 10 C\n"   // the start of A reused
      "1090 100 D\n"  // past A's end
      "5000 10 E\n"
      "5000 10 F\n";  // the same range again: F
  zxs_jit_symbols_t set = {0};
  assert_int_equal(zxs_jit_parse_perf_map(&set, kMap, strlen(kMap)), ZX_OK);
  assert_int_equal(zxs_jit_symbols_resolve(&set), ZX_OK);
  assert_string_equal(name_at(&set, 0x1000), "C");
  assert_string_equal(name_at(&set, 0x100f), "C");
  assert_string_equal(name_at(&set, 0x1010), "A");
  assert_string_equal(name_at(&set, 0x103f), "A");
  assert_string_equal(name_at(&set, 0x1040), "B");
  assert_string_equal(name_at(&set, 0x105f), "B");
  assert_string_equal(name_at(&set, 0x1060), "A");
  assert_string_equal(name_at(&set, 0x108f), "A");
  assert_string_equal(name_at(&set, 0x1090), "D");
  assert_string_equal(name_at(&set, 0x118f), "D");
  assert_null(name_at(&set, 0x1190));
  assert_string_equal(name_at(&set, 0x5000), "F");
  // Disjoint and sorted: C, A, B, A, D, F.
  assert_int_equal(set.count, 6);
  for (size_t i = 1; i < set.count; i++) {
    assert_true(set.symbols[i - 1].start + set.symbols[i - 1].size <= set.symbols[i].start);
  }
  // Written out and read again: the same symbols.
  char* text;
  size_t size;
  assert_int_equal(zxs_jit_symbols_write_perf_map(&set, &text, &size), ZX_OK);
  assert_non_null(strstr(text, "1040 20 B\n"));
  zxs_jit_symbols_t again = {0};
  assert_int_equal(zxs_jit_parse_perf_map(&again, text, size), ZX_OK);
  assert_int_equal(zxs_jit_symbols_resolve(&again), ZX_OK);
  assert_int_equal(again.count, set.count);
  assert_string_equal(name_at(&again, 0x1060), "A");
  free(text);
  zxs_jit_symbols_free(&again);
  zxs_jit_symbols_free(&set);
}

static void a_set_stays_within_its_limit(void** state) {
  (void)state;
  zxs_jit_symbols_t set = {.limit = 4 * sizeof(zxs_jit_symbol_t) + 64};
  char line[64];
  zx_status_t status = ZX_OK;
  size_t added = 0;
  for (int i = 0; i < 100 && status == ZX_OK; i++, added++) {
    const int n = snprintf(line, sizeof(line), "%x 10 function_%d\n", 0x1000 + 0x10 * i, i);
    status = zxs_jit_parse_perf_map(&set, line, (size_t)n);
  }
  assert_int_equal(status, ZX_ERR_NO_MEMORY);
  assert_true(set.count >= 1 && set.count < 5);
  assert_int_equal(set.skipped, 1);
  zxs_jit_symbols_free(&set);
}

// --- jitdump ----------------------------------------------------------------------------------

typedef struct {
  uint8_t bytes[4096];
  size_t len;
} dump_t;

static void put(dump_t* d, const void* data, size_t size) {
  assert_true(d->len + size <= sizeof(d->bytes));
  memcpy(d->bytes + d->len, data, size);
  d->len += size;
}
static void put32(dump_t* d, uint32_t v) { put(d, &v, 4); }
static void put64(dump_t* d, uint64_t v) { put(d, &v, 8); }

static void dump_header(dump_t* d, uint32_t magic) {
  put32(d, magic);
  put32(d, 1);   // version
  put32(d, 40);  // header size
  put32(d, 62);  // EM_X86_64
  put32(d, 0);
  put32(d, 4242);  // pid
  put64(d, 1);     // timestamp
  put64(d, 0);     // flags
}

static void dump_load(dump_t* d, uint64_t addr, uint64_t size, uint64_t index, const char* name,
                      size_t code_bytes) {
  const size_t name_size = strlen(name) + 1;
  put32(d, 0);  // JIT_CODE_LOAD
  put32(d, (uint32_t)(16 + 40 + name_size + code_bytes));
  put64(d, 2);
  put32(d, 4242);
  put32(d, 4243);
  put64(d, addr);  // vma
  put64(d, addr);  // code_addr
  put64(d, size);
  put64(d, index);
  put(d, name, name_size);
  static const uint8_t kCode[64] = {0xc3};
  assert_true(code_bytes <= sizeof(kCode));
  put(d, kCode, code_bytes);
}

static void dump_move(dump_t* d, uint64_t from, uint64_t to, uint64_t size, uint64_t index) {
  put32(d, 1);  // JIT_CODE_MOVE
  put32(d, 16 + 48);
  put64(d, 3);
  put32(d, 4242);
  put32(d, 4243);
  put64(d, to);  // vma
  put64(d, from);
  put64(d, to);
  put64(d, size);
  put64(d, index);
}

static void make_dump(dump_t* d) {
  memset(d, 0, sizeof(*d));
  dump_header(d, 0x4A695444u);
  dump_load(d, 0x5000, 0x40, 1, "jd_one", 16);
  dump_load(d, 0x6000, 0x20, 2, "jd_two", 0);
  // A debug info record (optional for us): skipped by its size.
  put32(d, 2);
  put32(d, 16 + 16);
  put64(d, 4);
  put64(d, 0x5000);
  put64(d, 0);
  // A record of an unknown kind: skipped too.
  put32(d, 99);
  put32(d, 16 + 8);
  put64(d, 5);
  put64(d, 0);
  dump_move(d, 0x5000, 0x7000, 0x40, 1);
  dump_move(d, 0x9000, 0xa000, 0x40, 77);  // an index never loaded: skipped
  // A load record too short for its fields: skipped.
  put32(d, 0);
  put32(d, 16 + 8);
  put64(d, 6);
  put64(d, 0);
}

static void jitdump_loads_and_moves(void** state) {
  (void)state;
  dump_t d;
  make_dump(&d);
  // A torn last record (a JIT still writing) ends the file.
  const size_t whole = d.len;
  dump_load(&d, 0x8000, 0x10, 3, "torn", 0);
  d.len -= 3;
  zxs_jit_symbols_t set = {0};
  assert_int_equal(zxs_jit_parse_jitdump(&set, d.bytes, d.len), ZX_OK);
  assert_int_equal(zxs_jit_symbols_resolve(&set), ZX_OK);
  assert_string_equal(name_at(&set, 0x5010), "jd_one");
  assert_string_equal(name_at(&set, 0x703f), "jd_one");  // moved
  assert_string_equal(name_at(&set, 0x6000), "jd_two");
  assert_null(name_at(&set, 0x6020));
  assert_null(name_at(&set, 0xa000));
  assert_null(name_at(&set, 0x8000));
  assert_int_equal(set.skipped, 2);
  zxs_jit_symbols_free(&set);

  // A close record ends it too.
  d.len = whole;
  put32(&d, 3);
  put32(&d, 16);
  put64(&d, 7);
  dump_load(&d, 0x8000, 0x10, 3, "after close", 0);
  assert_int_equal(zxs_jit_parse_jitdump(&set, d.bytes, d.len), ZX_OK);
  assert_int_equal(zxs_jit_symbols_resolve(&set), ZX_OK);
  assert_null(name_at(&set, 0x8000));
  zxs_jit_symbols_free(&set);

  // A record whose size is below its prefix stops the reading where it is.
  d.len = whole;
  put32(&d, 0);
  put32(&d, 8);
  put64(&d, 8);
  dump_load(&d, 0x8000, 0x10, 3, "after a bad size", 0);
  assert_int_equal(zxs_jit_parse_jitdump(&set, d.bytes, d.len), ZX_OK);
  assert_int_equal(zxs_jit_symbols_resolve(&set), ZX_OK);
  assert_null(name_at(&set, 0x8000));
  assert_string_equal(name_at(&set, 0x6000), "jd_two");
  zxs_jit_symbols_free(&set);
}

static void jitdump_headers_refused(void** state) {
  (void)state;
  zxs_jit_symbols_t set = {0};
  dump_t d = {0};
  dump_header(&d, 0x4454694Au);  // the other byte order
  assert_int_equal(zxs_jit_parse_jitdump(&set, d.bytes, d.len), ZX_ERR_NOT_SUPPORTED);
  d.len = 0;
  dump_header(&d, 0x12345678u);
  assert_int_equal(zxs_jit_parse_jitdump(&set, d.bytes, d.len), ZX_ERR_IO_DATA_INTEGRITY);
  d.len = 0;
  dump_header(&d, 0x4A695444u);
  assert_int_equal(zxs_jit_parse_jitdump(&set, d.bytes, 39), ZX_ERR_IO_DATA_INTEGRITY);
  assert_int_equal(zxs_jit_parse_jitdump(&set, NULL, 0), ZX_ERR_IO_DATA_INTEGRITY);
  const uint32_t huge = 4096;
  memcpy(d.bytes + 8, &huge, 4);  // a header size past the file
  assert_int_equal(zxs_jit_parse_jitdump(&set, d.bytes, d.len), ZX_ERR_IO_DATA_INTEGRITY);
  // A header and nothing else: no symbols.
  const uint32_t plain = 40;
  memcpy(d.bytes + 8, &plain, 4);
  assert_int_equal(zxs_jit_parse_jitdump(&set, d.bytes, d.len), ZX_OK);
  assert_int_equal(set.count, 0);
  zxs_jit_symbols_free(&set);
}

// --- Files ------------------------------------------------------------------------------------

static void write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, size, f), size);
  assert_int_equal(fclose(f), 0);
}

static void files_the_capture_refuses(void** state) {
  (void)state;
  char dir[] = "/tmp/zxs-jit-test.XXXXXX";
  assert_non_null(mkdtemp(dir));
  char file[128], link[128], fifo[128], sub[128];
  snprintf(file, sizeof(file), "%s/perf.map", dir);
  snprintf(link, sizeof(link), "%s/link.map", dir);
  snprintf(fifo, sizeof(fifo), "%s/fifo.map", dir);
  snprintf(sub, sizeof(sub), "%s/sub", dir);
  write_file(file, "1000 10 f\n", 10);
  assert_int_equal(symlink(file, link), 0);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(mkdir(sub, 0700), 0);
  void* data;
  size_t size;
  assert_true(zxs_jit_read_file(file, UINT32_MAX, 1024, &data, &size));
  assert_int_equal(size, 10);
  assert_memory_equal(data, "1000 10 f\n", 10);
  free(data);
  assert_false(zxs_jit_read_file(link, UINT32_MAX, 1024, &data, &size));  // a link
  assert_false(zxs_jit_read_file(fifo, UINT32_MAX, 1024, &data, &size));  // not regular
  assert_false(zxs_jit_read_file(sub, UINT32_MAX, 1024, &data, &size));   // a directory
  assert_false(zxs_jit_read_file(file, UINT32_MAX, 9, &data, &size));     // too big
  assert_null(data);
  char missing[160];
  snprintf(missing, sizeof(missing), "%s/missing", dir);
  assert_false(zxs_jit_read_file(missing, UINT32_MAX, 1024, &data, &size));
  // Another user's file (only root can make one here).
  if (geteuid() == 0) {
    assert_int_equal(chown(file, 12345, 12345), 0);
    assert_false(zxs_jit_read_file(file, UINT32_MAX, 1024, &data, &size));
    assert_true(zxs_jit_read_file(file, 12345, 1024, &data, &size));  // the process's own
    free(data);
  }
  unlink(file);
  unlink(link);
  unlink(fifo);
  rmdir(sub);
  rmdir(dir);
}

// This process's own perf map and a jitdump it "mapped": the dump's symbols come later and win.
static void capture_reads_perf_map_then_jitdumps(void** state) {
  (void)state;
  const uint32_t pid = (uint32_t)getpid();
  char map[64], dir[] = "/tmp/zxs-jit-test.XXXXXX", dump_path[128], other[128];
  snprintf(map, sizeof(map), "/tmp/perf-%u.map", pid);
  assert_non_null(mkdtemp(dir));
  snprintf(dump_path, sizeof(dump_path), "%s/jit-%u.dump", dir, pid);
  snprintf(other, sizeof(other), "%s/jit-%u.dump", dir, pid + 1);  // another pid's: not read
  static const char kMap[] = "5000 100 from_the_map\n9000 10 only_in_the_map\n";
  write_file(map, kMap, strlen(kMap));
  dump_t d;
  make_dump(&d);
  write_file(dump_path, d.bytes, d.len);
  memset(&d, 0, sizeof(d));
  dump_header(&d, 0x4A695444u);
  dump_load(&d, 0x9000, 0x10, 1, "from_another_pid", 0);
  write_file(other, d.bytes, d.len);

  zxs_jit_capture_t* capture = zxs_jit_capture_new();
  assert_non_null(capture);
  const char* paths[] = {"/usr/lib/libc.so.6", other, dump_path, dump_path, NULL};
  zxs_jit_capture_process(capture, 77, pid, paths, 5);
  assert_true(zxs_jit_capture_has(capture, 77));
  const zxs_jit_symbols_t* set = zxs_jit_capture_find(capture, 77);
  assert_non_null(set);
  assert_string_equal(name_at(set, 0x5000), "jd_one");
  assert_string_equal(name_at(set, 0x5040), "from_the_map");
  assert_string_equal(name_at(set, 0x7000), "jd_one");
  assert_string_equal(name_at(set, 0x9000), "only_in_the_map");
  // A second capture of the same process does nothing; a process without files has no set.
  zxs_jit_capture_process(capture, 77, pid, NULL, 0);
  assert_ptr_equal(zxs_jit_capture_find(capture, 77), set);
  unlink(map);
  zxs_jit_capture_process(capture, 78, pid, NULL, 0);
  assert_true(zxs_jit_capture_has(capture, 78));
  assert_null(zxs_jit_capture_find(capture, 78));
  zxs_jit_capture_free(capture);
  unlink(dump_path);
  unlink(other);
  rmdir(dir);
}

// --- In a trace -------------------------------------------------------------------------------

#define PID 4242u

static zxs_fxt_str_ref_t str(const char* s) { return zxs_fxt_str_inline(s, strlen(s)); }

static void write_sample(zxs_fxt_buf_t* buf, const uint64_t* pcs, size_t n) {
  uint64_t words[ZXS_FXT_SAMPLE_WORDS(64)];
  size_t count = zxs_fxt_encode_sample(words, 1, PID, PID, pcs, n);
  assert_int_equal(zxs_fxt_write_raw(buf, words, count * 8), ZX_OK);
}

static void trace_names_jit_frames_one_row_per_function(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  zxs_fxt_write_magic(&buf);
  zxs_fxt_write_initialization(&buf, 1000000000u);
  zxs_fxt_kernel_object_t process = {
      .obj_type = ZX_OBJ_TYPE_PROCESS, .koid = PID, .name = str("node")};
  assert_int_equal(zxs_fxt_write_kernel_object(&buf, &process, NULL, 0), ZX_OK);
  // A mapped file that is no ELF file here (as .NET's images are): its code named by the JIT.
  static const char kModules[] =
      "{{{module:0:/nonexistent-zxs/app.dll:elf:}}}\n{{{mmap:0x500000:0x1000:load:0:rx:0x0}}}\n";
  zxs_fxt_large_blob_t modules = {.category = str(ZXS_TRACE_CATEGORY),
                                  .name = str(ZXS_TRACE_MODULES_NAME),
                                  .thread = {.process_koid = PID},
                                  .payload = {.data = kModules, .size = strlen(kModules)}};
  assert_int_equal(zxs_fxt_write_large_blob(&buf, &modules, NULL, 0), ZX_OK);
  static const char kMap[] =
      "7f0000001000 40 JS:*hot /x.js:1\n7f0000002000 20 JS:~caller\n500000 100 App.Main()\n";
  zxs_jit_symbols_t set = {0};
  assert_int_equal(zxs_jit_parse_perf_map(&set, kMap, strlen(kMap)), ZX_OK);
  assert_int_equal(zxs_jit_symbols_resolve(&set), ZX_OK);
  assert_int_equal(zxs_trace_write_jit_symbols(&buf, PID, &set), ZX_OK);
  zxs_jit_symbols_free(&set);
  // A second process whose malformed list is skipped line by line.
  static const char kBad[] = "zz\n1 0 zero\n7f0000001000 10 other process\n";
  zxs_fxt_large_blob_t blob = {.category = str(ZXS_TRACE_CATEGORY),
                               .name = str(ZXS_TRACE_JIT_SYMBOLS_NAME),
                               .thread = {.process_koid = PID + 1},
                               .payload = {.data = kBad, .size = strlen(kBad)}};
  assert_int_equal(zxs_fxt_write_large_blob(&buf, &blob, NULL, 0), ZX_OK);
  // Three samples at three addresses of the hot function, called from the caller; one outside.
  const uint64_t a[] = {0x7f0000001000, 0x7f0000002008};
  const uint64_t b[] = {0x7f0000001010, 0x7f0000002008};
  const uint64_t c[] = {0x7f000000103f, 0x7f0000002010};
  const uint64_t outside[] = {0x7f0000003000};
  const uint64_t in_image[] = {0x500010};
  write_sample(&buf, a, 2);
  write_sample(&buf, b, 2);
  write_sample(&buf, c, 2);
  write_sample(&buf, outside, 1);
  write_sample(&buf, in_image, 1);
  assert_int_equal(buf.status, ZX_OK);

  zxs_profile_t profile;
  char error[256];
  assert_int_equal(zxs_profile_from_trace(buf.data, buf.len, &profile, error, sizeof(error)),
                   ZX_OK);
  char* text = NULL;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  assert_int_equal(zxs_export_folded(&profile, 0, out), ZX_OK);
  fclose(out);
  assert_string_equal(text, "0x7f0000003000 1\nApp.Main() 1\nJS:~caller;JS:*hot /x.js:1 3\n");
  free(text);
  out = open_memstream(&text, &size);
  assert_int_equal(zxs_export_top(&profile, 10, 0, out), ZX_OK);
  fclose(out);
  const char* row = strstr(text, "JS:*hot /x.js:1");
  assert_non_null(row);
  assert_null(strstr(row + 1, "JS:*hot /x.js:1"));  // one row
  free(text);
  zxs_profile_free(&profile);
  zxs_fxt_buf_destroy(&buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(perf_map_lines_and_malformed_ones),
      cmocka_unit_test(later_symbols_win_where_they_overlap),
      cmocka_unit_test(a_set_stays_within_its_limit),
      cmocka_unit_test(jitdump_loads_and_moves),
      cmocka_unit_test(jitdump_headers_refused),
      cmocka_unit_test(files_the_capture_refuses),
      cmocka_unit_test(capture_reads_perf_map_then_jitdumps),
      cmocka_unit_test(trace_names_jit_frames_one_row_per_function),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
