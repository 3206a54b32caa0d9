// Trace files of a process tree, as `zxsampler record` writes them: one process record per
// program image, each with its own modules (a Large BLOB with metadata naming the process),
// kernel symbols, and what the recording lost. Read back into a profile and selected.
#define _GNU_SOURCE  // open_memstream
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
// cmocka after the standard headers it needs.
#include <cmocka.h>
#include <zxsampler/fxt.h>
#include <zxsampler/profiler.h>

#include "export.h"
#include "fake_platform.h"
#include "profile.h"
#include "trace_file.h"

#define PID 4242u
#define EXEC_KOID (PID | (1ull << 32))  // the same pid after exec
#define CHILD 4243u
#define KERNEL_PC 0xffffffff81000010ull

static zxs_fxt_str_ref_t str(const char* s) { return zxs_fxt_str_inline(s, strlen(s)); }

static void write_process(zxs_fxt_buf_t* buf, zx_koid_t koid, uint64_t pid, const char* name,
                          bool first) {
  zxs_fxt_arg_t args[4] = {
      {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_PID_ARG), .u64 = pid},
      {.type = ZXS_FXT_ARG_STRING, .name = str(ZXS_TRACE_SAMPLED_ARG), .str = str("user+kernel")},
      {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_LOST_ARG), .u64 = 17},
      {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_CHILDREN_NOT_FOLLOWED_ARG), .u64 = 2}};
  zxs_fxt_kernel_object_t object = {
      .obj_type = ZX_OBJ_TYPE_PROCESS, .koid = koid, .name = str(name)};
  assert_int_equal(zxs_fxt_write_kernel_object(buf, &object, args, first ? 4 : 2), ZX_OK);
}

// One module at [0x400000, 0x401000) in each process, under a different path.
static void write_modules(zxs_fxt_buf_t* buf, zx_koid_t koid, const char* path) {
  char text[256];
  snprintf(text, sizeof(text),
           "{{{module:0:%s:elf:0102030405060708}}}\n"
           "{{{mmap:0x400000:0x1000:load:0:rx:0x0}}}\n",
           path);
  zxs_fxt_large_blob_t blob = {.category = str(ZXS_TRACE_CATEGORY),
                               .name = str(ZXS_TRACE_MODULES_NAME),
                               .thread = {.process_koid = koid},
                               .payload = {.data = text, .size = strlen(text)}};
  assert_int_equal(zxs_fxt_write_large_blob(buf, &blob, NULL, 0), ZX_OK);
}

static void write_sample(zxs_fxt_buf_t* buf, zx_koid_t koid, zx_koid_t tid, uint64_t ticks,
                         const uint64_t* pcs, size_t n) {
  uint64_t words[ZXS_FXT_SAMPLE_WORDS(64)];
  size_t count = zxs_fxt_encode_sample(words, ticks, koid, tid, pcs, n);
  assert_int_equal(zxs_fxt_write_raw(buf, words, count * 8), ZX_OK);
}

static void make_trace(zxs_fxt_buf_t* buf) {
  zxs_fxt_buf_init(buf);
  zxs_fxt_write_magic(buf);
  zxs_fxt_write_initialization(buf, 1000000000u);
  write_process(buf, PID, PID, "sh", true);
  write_modules(buf, PID, "/bin/sh-like");
  write_process(buf, EXEC_KOID, PID, "prog", false);
  write_modules(buf, EXEC_KOID, "/usr/bin/prog-like");
  write_process(buf, CHILD, CHILD, "prog", false);
  write_modules(buf, CHILD, "/usr/bin/prog-like");
  const char* ksyms = "ffffffff81000000 ffffffff81000100 do_syscall_64\n";
  zxs_fxt_large_blob_t blob = {.category = str(ZXS_TRACE_CATEGORY),
                               .name = str(ZXS_TRACE_KERNEL_SYMBOLS_NAME),
                               .payload = {.data = ksyms, .size = strlen(ksyms)}};
  assert_int_equal(zxs_fxt_write_attachment(buf, &blob), ZX_OK);
  const uint64_t user[] = {0x400100, 0x400200};
  const uint64_t kernel[] = {KERNEL_PC, 0x400100};
  write_sample(buf, PID, PID, 1, user, 2);
  write_sample(buf, EXEC_KOID, PID, 2, user, 2);
  write_sample(buf, EXEC_KOID, PID, 3, kernel, 2);
  write_sample(buf, CHILD, CHILD, 4, user, 2);
  assert_int_equal(buf->status, ZX_OK);
}

static const char* module_path(const zxs_profile_t* p, uint32_t location) {
  int32_t m = p->locations[location].module;
  return m >= 0 ? p->modules.modules[m].path : NULL;
}

static void test_processes_and_their_modules(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  make_trace(&buf);
  zxs_profile_t p;
  char error[128];
  assert_int_equal(zxs_profile_from_trace(buf.data, buf.len, &p, error, sizeof(error)), ZX_OK);
  assert_int_equal(p.process_count, 3);
  assert_int_equal(p.processes[1].koid, EXEC_KOID);
  assert_int_equal(p.processes[1].pid, PID);  // the koid's pid, from the argument
  assert_string_equal(p.processes[1].name, "prog");
  assert_string_equal(p.process_name, "sh");
  assert_int_equal(p.sampled, ZXS_PROFILE_SAMPLED_USER_KERNEL);
  assert_int_equal(p.samples_lost, 17);
  assert_int_equal(p.children_not_followed, 2);
  assert_int_equal(p.sample_count, 4);
  // The same address is another module in each image: sh before exec, prog after it.
  assert_string_equal(module_path(&p, p.frames[p.samples[0].first_frame]), "/bin/sh-like");
  assert_string_equal(module_path(&p, p.frames[p.samples[1].first_frame]), "/usr/bin/prog-like");
  assert_string_equal(module_path(&p, p.frames[p.samples[3].first_frame]), "/usr/bin/prog-like");
  // Kernel frames are named from the trace's kernel symbols.
  const zxs_profile_location_t* k = &p.locations[p.frames[p.samples[2].first_frame]];
  assert_int_equal(k->address, KERNEL_PC);
  assert_non_null(k->function);
  assert_string_equal(k->function, "do_syscall_64");
  zxs_profile_free(&p);
  zxs_fxt_buf_destroy(&buf);
}

static void test_select(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  make_trace(&buf);
  zxs_profile_t p;
  assert_int_equal(zxs_profile_from_trace(buf.data, buf.len, &p, NULL, 0), ZX_OK);
  assert_int_equal(zxs_profile_select(&p, PID, NULL), 3);  // sh and prog: one pid
  zxs_profile_free(&p);
  assert_int_equal(zxs_profile_from_trace(buf.data, buf.len, &p, NULL, 0), ZX_OK);
  assert_int_equal(zxs_profile_select(&p, 0, "prog"), 3);  // both images named prog
  assert_int_equal(p.processes[1].samples, 2);
  assert_int_equal(p.processes[2].samples, 1);
  // The profile is now named after the first process kept, not the tree's first (sh).
  assert_string_equal(p.process_name, "prog");
  assert_int_equal(p.pid, EXEC_KOID);
  zxs_profile_free(&p);
  assert_int_equal(zxs_profile_from_trace(buf.data, buf.len, &p, NULL, 0), ZX_OK);
  assert_int_equal(zxs_profile_select(&p, CHILD, "sh"), 0);
  zxs_profile_free(&p);
  zxs_fxt_buf_destroy(&buf);
}

// The list as a trace file carries it, read back.
static void round_trip(const zxs_module_list_t* list, zxs_module_list_t* read) {
  char* text = NULL;
  size_t size = 0;
  assert_int_equal(zxs_trace_modules_payload(list, &text, &size), ZX_OK);
  assert_int_equal(zxs_modules_from_markup(text, size, read), ZX_OK);
  free(text);
}

// File offsets travel with the modules: each segment's as its file has it, even where the 4 KiB
// rule of older traces would guess another (here a data segment whose page is not its offset's).
static void test_module_file_offsets(void** state) {
  (void)state;
  zxs_segment_t segments[2] = {
      {.vaddr = 0x0, .memsz = 0x1800, .offset = 0x0, .flags = ZXS_SEGMENT_R | ZXS_SEGMENT_X},
      {.vaddr = 0x3e10, .memsz = 0x300, .offset = 0x1e10, .flags = ZXS_SEGMENT_R | ZXS_SEGMENT_W}};
  zxs_module_t module = {.path = "/lib/libodd.so",
                         .build_id = {1, 2, 3, 4},
                         .build_id_size = 4,
                         .load_bias = 0x7f0000000000,
                         .segments = segments,
                         .segment_count = 2};
  const zxs_module_list_t list = {.modules = &module, .count = 1};
  zxs_module_list_t read = {0};
  round_trip(&list, &read);
  assert_int_equal(read.count, 1);
  assert_int_equal(read.modules[0].segment_count, 2);
  assert_int_equal(read.modules[0].load_bias, 0x7f0000000000);
  assert_int_equal(read.modules[0].segments[1].offset, 0x1e10);
  zxs_modules_free(&read);

  // An older trace: no file_offset lines, offsets derived as before.
  static const char kOld[] =
      "{{{module:0:/lib/libodd.so:elf:01020304}}}\n"
      "{{{mmap:0x7f0000000000:0x1800:load:0:rx:0x0}}}\n"
      "{{{mmap:0x7f0000003e10:0x300:load:0:rw:0x3e10}}}\n";
  assert_int_equal(zxs_modules_from_markup(kOld, strlen(kOld), &read), ZX_OK);
  assert_int_equal(read.modules[0].segments[1].offset, 0x3e10);
  zxs_modules_free(&read);

  static const char kOrphan[] = "file_offset:0x1000\n";
  assert_int_equal(zxs_modules_from_markup(kOrphan, strlen(kOrphan), &read),
                   ZX_ERR_IO_DATA_INTEGRITY);
}

// The profiler's name lookup answers false for NULL (an output NULL crashed it).
static void test_format_from_name_null(void** state) {
  (void)state;
  zxs_profile_format_t format = ZXS_FORMAT_FXT;
  assert_false(zxs_profile_format_from_name("pprof", NULL));
  assert_false(zxs_profile_format_from_name(NULL, &format));
  assert_false(zxs_profile_format_from_name(NULL, NULL));
  assert_true(zxs_profile_format_from_name("pprof", &format));
  assert_int_equal(format, ZXS_FORMAT_PPROF);
}

// A module line that fails to parse is refused and leaves nothing behind (LeakSanitizer found
// the path of a module whose build ID was not hex kept out of the list, and so never freed).
static void test_malformed_module_lines(void** state) {
  (void)state;
  static const char* const kBad[] = {
      "{{{module:0:/lib/a.so:elf:zz}}}\n",   // build ID not hex
      "{{{module:0:/lib/a.so:elf:+1}}}\n",   // sscanf's sign, not a digit
      "{{{module:0:/lib/a.so:elf: 1}}}\n",   // nor a space
      "{{{module:0:/lib/a.so:elf:012}}}\n",  // odd length
      "{{{module:1:/lib/a.so:elf:01}}}\n",   // not the next id
      "{{{module:0:/lib/a.so:elf:01}}}\n{{{module:1:/lib/b.so:elf:0g}}}\n",  // the second bad
      "{{{module:0:/lib/a.so:elf:01}}}\n{{{mmap:0x1000:0x10:load:0:r:zz}}}\n",
      "{{{module:0:/lib/a.so:elf:01\n",  // unterminated
      "{{{module:0:/lib/a.so:elf:}}",    // cut short
      "{{{module:x:/lib/a.so:elf:01}}}\n",
  };
  for (size_t i = 0; i < sizeof(kBad) / sizeof(kBad[0]); i++) {
    zxs_module_list_t read;
    assert_int_equal(zxs_modules_from_markup(kBad[i], strlen(kBad[i]), &read),
                     ZX_ERR_IO_DATA_INTEGRITY);
    assert_int_equal(read.count, 0);
    assert_null(read.modules);
  }
  static const char kUpper[] = "{{{module:0:/lib/a.so:elf:0aFF}}}\n";
  zxs_module_list_t read;
  assert_int_equal(zxs_modules_from_markup(kUpper, strlen(kUpper), &read), ZX_OK);
  assert_int_equal(read.modules[0].build_id_size, 2);
  assert_int_equal(read.modules[0].build_id[1], 0xff);
  zxs_modules_free(&read);
}

// The capture goes through the backend (here the fake's one module): kind, path and every
// segment's file offset reach the trace's modules and come back from it.
static void test_captured_modules_through_the_trace(void** state) {
  (void)state;
  zxs_module_list_t captured = {0};
  assert_int_equal(zxs_modules_capture(&captured), ZX_OK);
  assert_int_equal(captured.count, 1);
  assert_int_equal(captured.modules[0].kind, ZXS_MODULE_MAIN);
  assert_string_equal(captured.modules[0].path, FAKE_MAIN_PATH);
  assert_int_equal(captured.modules[0].segments[1].offset, 0x2e10);
  // Markup wants a build ID: give it one, as a real module has.
  captured.modules[0].build_id[0] = 0xab;
  captured.modules[0].build_id_size = 1;
  zxs_module_list_t read = {0};
  round_trip(&captured, &read);
  assert_int_equal(read.modules[0].load_bias, captured.modules[0].load_bias);
  assert_int_equal(read.modules[0].segments[1].offset, 0x2e10);
  zxs_modules_free(&read);
  zxs_modules_free(&captured);
}

// Task runtime (RFC-0084): the first process says which fields were measured and why not the
// others; each thread record carries its own; an absent field reads as not measured.
static void write_thread(zxs_fxt_buf_t* buf, zx_koid_t process, zx_koid_t tid, const char* name,
                         bool with_runtime) {
  zxs_fxt_arg_t args[6] = {
      {.type = ZXS_FXT_ARG_KOID, .name = str("process"), .koid = process},
      {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_CPU_TIME_ARG), .u64 = 300000000},
      {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_QUEUE_TIME_ARG), .u64 = 25000000},
      {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_PAGE_FAULT_TIME_ARG), .u64 = 7000000},
      {.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_PAGE_FAULTS_ARG), .u64 = 1234},
      {.type = ZXS_FXT_ARG_UINT64, .name = str("some_future_arg"), .u64 = 1}};
  zxs_fxt_kernel_object_t object = {.obj_type = ZX_OBJ_TYPE_THREAD, .koid = tid, .name = str(name)};
  assert_int_equal(zxs_fxt_write_kernel_object(buf, &object, args, with_runtime ? 6 : 1), ZX_OK);
}

static void test_task_runtime(void** state) {
  (void)state;
  zxs_fxt_buf_t buf;
  zxs_fxt_buf_init(&buf);
  zxs_fxt_write_magic(&buf);
  zxs_fxt_write_initialization(&buf, 1000000000u);
  const char* missing = "lock_contention_time: tracefs does not name lock:contention_begin/end";
  zxs_fxt_arg_t args[3] = {{.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_PID_ARG), .u64 = PID},
                           {.type = ZXS_FXT_ARG_STRING,
                            .name = str(ZXS_TRACE_RUNTIME_ARG),
                            .str = str("cpu_time queue_time page_fault_time")},
                           {.type = ZXS_FXT_ARG_STRING,
                            .name = str(ZXS_TRACE_RUNTIME_MISSING_ARG),
                            .str = str(missing)}};
  zxs_fxt_kernel_object_t object = {
      .obj_type = ZX_OBJ_TYPE_PROCESS, .koid = PID, .name = str("prog")};
  assert_int_equal(zxs_fxt_write_kernel_object(&buf, &object, args, 3), ZX_OK);
  write_modules(&buf, PID, "/usr/bin/prog-like");
  write_thread(&buf, PID, PID + 1, "worker", true);
  write_thread(&buf, PID, PID + 2, "idle", false);
  const uint64_t user[] = {0x400100, 0x400200};
  write_sample(&buf, PID, PID + 1, 1, user, 2);
  assert_int_equal(buf.status, ZX_OK);

  zxs_profile_t p;
  assert_int_equal(zxs_profile_from_trace(buf.data, buf.len, &p, NULL, 0), ZX_OK);
  assert_int_equal(p.runtime_fields,
                   ZXS_PROFILE_RUNTIME_CPU | ZXS_PROFILE_RUNTIME_QUEUE | ZXS_PROFILE_RUNTIME_FAULT);
  assert_string_equal(p.runtime_missing, missing);
  assert_int_equal(p.thread_count, 2);
  const zxs_profile_runtime_t* rt = &p.threads[0].runtime;
  assert_int_equal(rt->fields,
                   ZXS_PROFILE_RUNTIME_CPU | ZXS_PROFILE_RUNTIME_QUEUE | ZXS_PROFILE_RUNTIME_FAULT);
  assert_int_equal(rt->cpu_time, 300000000);
  assert_int_equal(rt->queue_time, 25000000);
  assert_int_equal(rt->page_fault_time, 7000000);
  assert_int_equal(rt->page_faults, 1234);
  assert_int_equal(p.threads[1].runtime.fields, 0);  // no runtime: not measured, not zero

  // The report's header: the process, the thread, "-" for what was not measured, and why.
  char* text = NULL;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  assert_non_null(out);
  assert_int_equal(zxs_export_top(&p, 0, 0, out), ZX_OK);
  fclose(out);
  assert_non_null(strstr(text, "Task runtime (ms):"));
  assert_non_null(strstr(text, " prog (pid 4242)"));
  assert_non_null(strstr(text, "  worker (tid 4243)"));
  assert_non_null(strstr(text, "300.000      25.000       7.000           -\n"));
  assert_non_null(strstr(text, "Not measured: lock_contention_time: tracefs"));
  free(text);
  zxs_profile_free(&p);
  zxs_fxt_buf_destroy(&buf);

  // An older trace: no runtime anywhere, and no runtime in the report.
  make_trace(&buf);
  assert_int_equal(zxs_profile_from_trace(buf.data, buf.len, &p, NULL, 0), ZX_OK);
  assert_int_equal(p.runtime_fields, 0);
  assert_null(p.runtime_missing);
  out = open_memstream(&text, &size);
  assert_int_equal(zxs_export_top(&p, 0, 0, out), ZX_OK);
  fclose(out);
  assert_null(strstr(text, "Task runtime"));
  free(text);
  zxs_profile_free(&p);
  zxs_fxt_buf_destroy(&buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_processes_and_their_modules),
      cmocka_unit_test(test_select),
      cmocka_unit_test(test_module_file_offsets),
      cmocka_unit_test(test_malformed_module_lines),
      cmocka_unit_test(test_format_from_name_null),
      cmocka_unit_test(test_captured_modules_through_the_trace),
      cmocka_unit_test(test_task_runtime),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
