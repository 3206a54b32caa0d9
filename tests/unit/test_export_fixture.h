// A hand-built profile shared by the export tests and the helper programs: three modules (one
// without a build ID), three threads (one with a name that breaks formats, one unnamed), and
// seven samples whose stacks and counts the tests know. Static data: never zxs_profile_free() it.
#ifndef ZXSAMPLER_TESTS_UNIT_TEST_EXPORT_FIXTURE_H_
#define ZXSAMPLER_TESTS_UNIT_TEST_EXPORT_FIXTURE_H_

#include <stdbool.h>
#include <string.h>

#include "profile.h"

#define FIXTURE_APP_BIAS 0x555500000000ull
#define FIXTURE_FOO_BIAS 0x7f0000000000ull
#define FIXTURE_NOID_BIAS 0x7f1000000000ull
#define FIXTURE_PERIOD 1000000  // 1 ms
#define FIXTURE_SAMPLES 7

static zxs_segment_t fixture_app_segments[] = {
    {.vaddr = 0x0, .memsz = 0x1000, .offset = 0x0, .flags = ZXS_SEGMENT_R},
    {.vaddr = 0x1000, .memsz = 0x2000, .offset = 0x1000, .flags = ZXS_SEGMENT_R | ZXS_SEGMENT_X},
    {.vaddr = 0x3e00, .memsz = 0x300, .offset = 0x2e00, .flags = ZXS_SEGMENT_R | ZXS_SEGMENT_W},
};
static zxs_segment_t fixture_foo_segments[] = {
    {.vaddr = 0x0, .memsz = 0x800, .offset = 0x0, .flags = ZXS_SEGMENT_R},
    {.vaddr = 0x1000, .memsz = 0x1000, .offset = 0x1000, .flags = ZXS_SEGMENT_R | ZXS_SEGMENT_X},
    {.vaddr = 0x2000, .memsz = 0x100, .offset = 0x2000, .flags = 0},          // no permissions
    {.vaddr = 0x3000, .memsz = 0, .offset = 0x3000, .flags = ZXS_SEGMENT_R},  // empty
};
static zxs_segment_t fixture_noid_segments[] = {
    {.vaddr = 0x0, .memsz = 0x4000, .offset = 0x0, .flags = ZXS_SEGMENT_R | ZXS_SEGMENT_X},
};

static zxs_module_t fixture_modules[3];

static zxs_profile_thread_t fixture_threads[] = {
    {.pid = 100, .tid = 101, .name = "main"}, {.pid = 100, .tid = 102, .name = "worker;1\n"},
    // tid 103 samples but has no thread record.
};

enum {
  L_MAIN,         // main, return address
  L_COMPUTE,      // compute, return address
  L_LEAF,         // leaf<a&b>, exact
  L_FOO,          // foo_work in libfoo.so, exact
  L_FOO_UNKNOWN,  // no function, in libfoo.so
  L_NO_MODULE,    // no function, no module
  L_COMPUTE2,     // compute again, another return address
  L_BAD_NAME,     // a name with ';' and '\n', return address
  L_COUNT,
};

static zxs_profile_location_t fixture_locations[L_COUNT] = {
    [L_MAIN] = {.address = FIXTURE_APP_BIAS + 0x1105,
                .is_return_address = true,
                .module = 0,
                .file_address = 0x1105,
                .function = "main",
                .file = "app.c",
                .line = 10},
    [L_COMPUTE] = {.address = FIXTURE_APP_BIAS + 0x1205,
                   .is_return_address = true,
                   .module = 0,
                   .file_address = 0x1205,
                   .function = "compute",
                   .file = "app.c",
                   .line = 20},
    [L_LEAF] = {.address = FIXTURE_APP_BIAS + 0x1300,
                .is_return_address = false,
                .module = 0,
                .file_address = 0x1300,
                .function = "leaf<a&b>",
                .file = "app.c",
                .line = 30},
    [L_FOO] = {.address = FIXTURE_FOO_BIAS + 0x1010,
               .is_return_address = false,
               .module = 1,
               .file_address = 0x1010,
               .function = "foo_work",
               .file = "foo.c",
               .line = 5},
    [L_FOO_UNKNOWN] = {.address = FIXTURE_FOO_BIAS + 0x1400,
                       .is_return_address = false,
                       .module = 1,
                       .file_address = 0x1400},
    [L_NO_MODULE] = {.address = 0xdead0000, .is_return_address = false, .module = -1},
    [L_COMPUTE2] = {.address = FIXTURE_APP_BIAS + 0x1210,
                    .is_return_address = true,
                    .module = 0,
                    .file_address = 0x1210,
                    .function = "compute",
                    .file = "app.c",
                    .line = 21},
    [L_BAD_NAME] = {.address = FIXTURE_APP_BIAS + 0x1405,
                    .is_return_address = true,
                    .module = 0,
                    .file_address = 0x1405,
                    .function = "bad;name\nx",
                    .file = "app.c"},
};

// Innermost first, per sample.
static uint32_t fixture_frames[] = {
    L_LEAF,        L_COMPUTE,  L_MAIN,  // 0: tid 101
    L_LEAF,        L_COMPUTE,  L_MAIN,  // 1: tid 101, same stack
    L_LEAF,        L_COMPUTE2, L_MAIN,  // 2: tid 101, same functions, another address
    L_FOO,         L_COMPUTE,  L_MAIN,  // 3: tid 102
    L_FOO_UNKNOWN, L_MAIN,              // 4: tid 102
    L_NO_MODULE,                        // 5: tid 103
    L_LEAF,        L_BAD_NAME, L_MAIN,  // 6: tid 101
};

static zxs_profile_sample_t fixture_samples[FIXTURE_SAMPLES] = {
    {.pid = 100, .tid = 101, .ticks = 1000000000, .depth = 3, .first_frame = 0},
    {.pid = 100, .tid = 101, .ticks = 1001000000, .depth = 3, .first_frame = 3},
    {.pid = 100, .tid = 101, .ticks = 1002000000, .depth = 3, .first_frame = 6},
    {.pid = 100, .tid = 102, .ticks = 1003000000, .depth = 3, .first_frame = 9},
    {.pid = 100, .tid = 102, .ticks = 1004000000, .depth = 2, .first_frame = 12},
    {.pid = 100, .tid = 103, .ticks = 1005000000, .depth = 1, .first_frame = 14},
    {.pid = 100, .tid = 101, .ticks = 1006000000, .depth = 3, .first_frame = 15},
};

static void fixture_profile(zxs_profile_t* p) {
  memset(fixture_modules, 0, sizeof(fixture_modules));
  zxs_module_t* app = &fixture_modules[0];
  app->path = (char*)"/usr/bin/app";
  app->kind = ZXS_MODULE_MAIN;
  static const uint8_t app_id[] = {0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89};
  memcpy(app->build_id, app_id, sizeof(app_id));
  app->build_id_size = sizeof(app_id);
  app->load_bias = FIXTURE_APP_BIAS;
  app->segments = fixture_app_segments;
  app->segment_count = 3;
  zxs_module_t* foo = &fixture_modules[1];
  foo->path = (char*)"/lib/libfoo.so";
  for (int i = 0; i < 20; i++) {
    foo->build_id[i] = (uint8_t)(0x10 + i);
  }
  foo->build_id_size = 20;
  foo->load_bias = FIXTURE_FOO_BIAS;
  foo->segments = fixture_foo_segments;
  foo->segment_count = 4;
  zxs_module_t* noid = &fixture_modules[2];
  noid->path = (char*)"/lib/noid.so";
  noid->load_bias = FIXTURE_NOID_BIAS;
  noid->segments = fixture_noid_segments;
  noid->segment_count = 1;

  memset(p, 0, sizeof(*p));
  p->ticks_per_second = 1000000000;
  p->period = FIXTURE_PERIOD;
  p->pid = 100;
  p->process_name = "app";
  p->modules.modules = fixture_modules;
  p->modules.count = 3;
  p->threads = fixture_threads;
  p->thread_count = sizeof(fixture_threads) / sizeof(fixture_threads[0]);
  p->locations = fixture_locations;
  p->location_count = L_COUNT;
  p->samples = fixture_samples;
  p->sample_count = FIXTURE_SAMPLES;
  p->frames = fixture_frames;
  p->frame_count = sizeof(fixture_frames) / sizeof(fixture_frames[0]);
}

#endif  // ZXSAMPLER_TESTS_UNIT_TEST_EXPORT_FIXTURE_H_
