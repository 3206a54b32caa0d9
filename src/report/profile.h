// A symbolized profile in memory: what every export format is written from (internal).
//
// Built from a trace file (profile_fxt.c) or from a stopped session; exporters only read it.
// Frames refer to unique locations; a location is an address plus whether it was sampled as
// the interrupted instruction (frame 0: exact) or as a return address (every other frame: the
// call that returns there is at address - 1, and that is what was symbolized).
#ifndef ZXSAMPLER_SRC_REPORT_PROFILE_H_
#define ZXSAMPLER_SRC_REPORT_PROFILE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/types.h>

#include "modules.h"

typedef struct zxs_profile_location {
  uint64_t address;        // as sampled (a return address is not adjusted here)
  bool is_return_address;  // symbolized at address - 1
  int32_t module;          // index into modules.modules, -1 if in none
  uint64_t file_address;   // address - load bias of the module (0 without a module)
  const char* function;    // NULL if unknown
  const char* file;        // NULL if unknown
  uint32_t line;           // 0 if unknown
} zxs_profile_location_t;

typedef struct zxs_profile_thread {
  zx_koid_t pid;
  zx_koid_t tid;
  const char* name;  // "" if unknown
} zxs_profile_thread_t;

typedef struct zxs_profile_sample {
  zx_koid_t pid;
  zx_koid_t tid;
  uint64_t ticks;
  uint32_t depth;      // frames in this sample (1..64)
  size_t first_frame;  // index into frames: frames[first_frame .. first_frame + depth)
} zxs_profile_sample_t;

typedef struct zxs_profile {
  uint64_t ticks_per_second;  // non-zero
  zx_duration_t period;       // sampling period in ns (0 if unknown)
  zx_koid_t pid;
  const char* process_name;  // "" if unknown
  zxs_module_list_t modules;
  zxs_profile_thread_t* threads;
  size_t thread_count;
  zxs_profile_location_t* locations;
  size_t location_count;
  zxs_profile_sample_t* samples;
  size_t sample_count;
  uint32_t* frames;  // location indices, innermost first per sample
  size_t frame_count;
  void* strings;  // zxs_profile_strdup()'s allocations (a chain)
} zxs_profile_t;

// The name to show for a location: its function, else "module+0xoffset", else "0xaddress".
// Writes into buf (always NUL-terminated) and returns buf.
const char* zxs_profile_location_label(const zxs_profile_t* profile, uint32_t location, char* buf,
                                       size_t buf_size);

// A copy of `s` owned by the profile (freed with it); NULL on allocation failure.
const char* zxs_profile_strdup(zxs_profile_t* profile, const char* s);

// Frees everything the profile owns (modules, arrays, strings) and empties it. A profile built
// by hand with static strings and NULL `strings` may be freed too (or just not).
void zxs_profile_free(zxs_profile_t* profile);

#endif  // ZXSAMPLER_SRC_REPORT_PROFILE_H_
