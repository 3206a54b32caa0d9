// pprof export: profile.proto (github.com/google/pprof/proto/profile.proto), gzip-compressed.
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "array_grow.h"
#include "export.h"
#include "export_check.h"
#include "protobuf_writer.h"
#include "string_builder.h"
#include "string_table.h"
#include "thread_index.h"

// profile.proto field numbers.
enum {
  kProfileSampleType = 1,
  kProfileSample = 2,
  kProfileMapping = 3,
  kProfileLocation = 4,
  kProfileFunction = 5,
  kProfileStringTable = 6,
  kProfileDurationNanos = 10,
  kProfilePeriodType = 11,
  kProfilePeriod = 12,
  kProfileComment = 13,
  kProfileDefaultSampleType = 14,
  kValueTypeType = 1,
  kValueTypeUnit = 2,
  kSampleLocationId = 1,
  kSampleValue = 2,
  kSampleLabel = 3,
  kLabelKey = 1,
  kLabelStr = 2,
  kLabelNum = 3,
  kMappingId = 1,
  kMappingMemoryStart = 2,
  kMappingMemoryLimit = 3,
  kMappingFileOffset = 4,
  kMappingFilename = 5,
  kMappingBuildId = 6,
  kMappingHasFunctions = 7,
  kMappingHasFilenames = 8,
  kMappingHasLineNumbers = 9,
  kMappingHasInlineFrames = 10,
  kLocationId = 1,
  kLocationMappingId = 2,
  kLocationAddress = 3,
  kLocationLine = 4,
  kLineFunctionId = 1,
  kLineLine = 2,
  kFunctionId = 1,
  kFunctionName = 2,
  kFunctionSystemName = 3,
  kFunctionFilename = 4,
};

typedef struct pprof_state {
  const zxs_profile_t* profile;
  zxs_pb_t pb;
  zxs_strtab_t strings;
  bool no_memory;
  uint64_t* location_function;  // function id per location, 0 = none
  uint64_t* inline_function;    // function id per inline frame of the profile
  uint64_t function_count;
} pprof_state_t;

static uint64_t str(pprof_state_t* st, const char* s) {
  int64_t index = zxs_strtab_intern(&st->strings, s != NULL ? s : "");
  if (index < 0) {
    st->no_memory = true;
    return 0;
  }
  return (uint64_t)index;
}

static void value_type(pprof_state_t* st, uint32_t field, const char* type, const char* unit) {
  size_t mark = zxs_pb_begin(&st->pb, field);
  zxs_pb_varint_field(&st->pb, kValueTypeType, str(st, type));
  zxs_pb_varint_field(&st->pb, kValueTypeUnit, str(st, unit));
  zxs_pb_end(&st->pb, mark);
}

// --- Functions, deduplicated by (name, file) ---------------------------------------------------

typedef struct function_key {
  uint64_t name;
  uint64_t file;
  uint64_t id;  // 0 = empty slot
} function_key_t;

typedef struct function_table {
  function_key_t* slots;
  size_t slot_count;  // a power of two, at least twice the names to add
} function_table_t;

// The id of function (name, file), written to the profile when new; 0 for no name.
static uint64_t function_id(pprof_state_t* st, function_table_t* t, const char* function,
                            const char* system_name, const char* file_name) {
  if (function == NULL || function[0] == '\0') {
    return 0;
  }
  uint64_t name = str(st, function);
  uint64_t file = str(st, file_name);
  size_t at = (size_t)((name * 0x9E3779B97F4A7C15ull) ^ file) & (t->slot_count - 1);
  while (t->slots[at].id != 0 && (t->slots[at].name != name || t->slots[at].file != file)) {
    at = (at + 1) & (t->slot_count - 1);
  }
  if (t->slots[at].id == 0) {
    t->slots[at] = (function_key_t){.name = name, .file = file, .id = ++st->function_count};
    size_t mark = zxs_pb_begin(&st->pb, kProfileFunction);
    zxs_pb_varint_field(&st->pb, kFunctionId, t->slots[at].id);
    zxs_pb_varint_field(&st->pb, kFunctionName, name);
    zxs_pb_varint_field(&st->pb, kFunctionSystemName,
                        system_name != NULL ? str(st, system_name) : name);
    zxs_pb_varint_field_nz(&st->pb, kFunctionFilename, file);
    zxs_pb_end(&st->pb, mark);
  }
  return t->slots[at].id;
}

static bool write_functions(pprof_state_t* st) {
  const zxs_profile_t* p = st->profile;
  function_table_t t = {.slot_count = 64};
  while (t.slot_count < (p->location_count + p->inline_frame_count) * 2) {
    t.slot_count *= 2;
  }
  t.slots = calloc(t.slot_count, sizeof(t.slots[0]));
  st->location_function = calloc(p->location_count + 1, sizeof(uint64_t));
  st->inline_function = calloc(p->inline_frame_count + 1, sizeof(uint64_t));
  if (t.slots == NULL || st->location_function == NULL || st->inline_function == NULL) {
    free(t.slots);
    return false;
  }
  for (size_t i = 0; i < p->location_count; i++) {
    const zxs_profile_location_t* loc = &p->locations[i];
    st->location_function[i] = function_id(st, &t, loc->function, loc->system_name, loc->file);
  }
  for (size_t i = 0; i < p->inline_frame_count; i++) {
    const zxs_profile_inline_frame_t* f = &p->inline_frames[i];
    st->inline_function[i] = function_id(st, &t, f->function, f->system_name, f->file);
  }
  free(t.slots);
  return true;
}

// --- Mappings and locations --------------------------------------------------------------------

// The segment a module's mapping describes: the first executable one, else the first non-empty.
static const zxs_segment_t* mapping_segment(const zxs_module_t* m) {
  const zxs_segment_t* first = NULL;
  for (size_t i = 0; i < m->segment_count; i++) {
    const zxs_segment_t* s = &m->segments[i];
    if (s->memsz == 0) {
      continue;
    }
    if (s->flags & ZXS_SEGMENT_X) {
      return s;
    }
    if (first == NULL) {
      first = s;
    }
  }
  return first;
}

// What the locations of a module have, for Mapping.has_*: one pass over the locations. A module
// with any function named says has_functions, so that pprof shows our names rather than trying
// to symbolize the binary itself (and showing the mapping's name when it cannot); its unnamed
// locations then show as addresses.
enum {
  kModuleUsed = 1,
  kModuleHasFunction = 2,
  kModuleHasFile = 4,
  kModuleHasLine = 8,
  kModuleHasInline = 16,
};

static bool write_mappings(pprof_state_t* st) {
  const zxs_profile_t* p = st->profile;
  uint8_t* seen = calloc(p->modules.count + 1, 1);
  if (seen == NULL) {
    return false;
  }
  for (size_t j = 0; j < p->location_count; j++) {
    const zxs_profile_location_t* loc = &p->locations[j];
    if (loc->module < 0) {
      continue;
    }
    uint8_t* m = &seen[loc->module];
    *m |= kModuleUsed;
    *m |= loc->function != NULL && loc->function[0] != '\0' ? kModuleHasFunction : 0;
    *m |= loc->file != NULL && loc->file[0] != '\0' ? kModuleHasFile : 0;
    *m |= loc->line != 0 ? kModuleHasLine : 0;
    *m |= loc->inline_count > 0 ? kModuleHasInline : 0;
  }
  // The profile's own process's modules first: pprof names the profile (`File:`) after the
  // first mapping, and under a selection that is the process kept, not the tree's first.
  const zxs_profile_process_t* own = zxs_profile_find_process(p, p->pid);
  const size_t first = own != NULL && own->module_first < p->modules.count ? own->module_first : 0;
  for (size_t k = 0; k < p->modules.count; k++) {
    const size_t i = (first + k) % p->modules.count;
    const zxs_module_t* m = &p->modules.modules[i];
    const zxs_segment_t* seg = mapping_segment(m);
    if (seg == NULL) {
      continue;
    }
    bool used = (seen[i] & kModuleUsed) != 0;
    char build_id[2 * ZXS_BUILD_ID_MAX + 1] = "";
    if (m->build_id_size > 0) {
      zxs_build_id_to_hex(m->build_id, m->build_id_size, build_id, sizeof(build_id));
    }
    uint64_t start = m->load_bias + seg->vaddr;
    size_t mark = zxs_pb_begin(&st->pb, kProfileMapping);
    zxs_pb_varint_field(&st->pb, kMappingId, i + 1);
    zxs_pb_varint_field_nz(&st->pb, kMappingMemoryStart, start);
    zxs_pb_varint_field_nz(&st->pb, kMappingMemoryLimit, start + seg->memsz);
    zxs_pb_varint_field_nz(&st->pb, kMappingFileOffset, seg->offset);
    zxs_pb_varint_field_nz(&st->pb, kMappingFilename, str(st, m->path));
    zxs_pb_varint_field_nz(&st->pb, kMappingBuildId, str(st, build_id));
    zxs_pb_varint_field_nz(&st->pb, kMappingHasFunctions, used && (seen[i] & kModuleHasFunction));
    zxs_pb_varint_field_nz(&st->pb, kMappingHasFilenames, used && (seen[i] & kModuleHasFile));
    zxs_pb_varint_field_nz(&st->pb, kMappingHasLineNumbers, used && (seen[i] & kModuleHasLine));
    zxs_pb_varint_field_nz(&st->pb, kMappingHasInlineFrames, used && (seen[i] & kModuleHasInline));
    zxs_pb_end(&st->pb, mark);
  }
  free(seen);
  return true;
}

static void write_line(pprof_state_t* st, uint64_t function, uint32_t line_number) {
  if (function != 0) {
    size_t line = zxs_pb_begin(&st->pb, kLocationLine);
    zxs_pb_varint_field(&st->pb, kLineFunctionId, function);
    zxs_pb_varint_field_nz(&st->pb, kLineLine, line_number);
    zxs_pb_end(&st->pb, line);
  }
}

static void write_locations(pprof_state_t* st) {
  const zxs_profile_t* p = st->profile;
  for (size_t i = 0; i < p->location_count; i++) {
    const zxs_profile_location_t* loc = &p->locations[i];
    uint64_t mapping = 0;
    if (loc->module >= 0 && mapping_segment(&p->modules.modules[loc->module]) != NULL) {
      mapping = (uint64_t)loc->module + 1;
    }
    // The call instruction, not the instruction after it (see export.h).
    uint64_t address = loc->is_return_address && loc->address > 0 ? loc->address - 1 : loc->address;
    size_t mark = zxs_pb_begin(&st->pb, kProfileLocation);
    zxs_pb_varint_field(&st->pb, kLocationId, i + 1);
    zxs_pb_varint_field_nz(&st->pb, kLocationMappingId, mapping);
    zxs_pb_varint_field_nz(&st->pb, kLocationAddress, address);
    // Inlined calls first, innermost first, then the function they were inlined into.
    for (uint32_t k = 0; k < loc->inline_count; k++) {
      const zxs_profile_inline_frame_t* f = &p->inline_frames[loc->inline_first + k];
      write_line(st, st->inline_function[loc->inline_first + k], f->line);
    }
    write_line(st, st->location_function[i], loc->line);
    zxs_pb_end(&st->pb, mark);
  }
}

// --- Samples -----------------------------------------------------------------------------------

typedef struct sample_ref {
  const zxs_profile_sample_t* sample;
  const uint32_t* frames;  // the sample's frames, innermost first
} sample_ref_t;

// By pid, tid, then stack: identical stacks of one thread end up adjacent.
static int compare_sample_refs(const void* a, const void* b) {
  const zxs_profile_sample_t* sa = ((const sample_ref_t*)a)->sample;
  const zxs_profile_sample_t* sb = ((const sample_ref_t*)b)->sample;
  if (sa->pid != sb->pid) {
    return sa->pid < sb->pid ? -1 : 1;
  }
  if (sa->tid != sb->tid) {
    return sa->tid < sb->tid ? -1 : 1;
  }
  if (sa->depth != sb->depth) {
    return sa->depth < sb->depth ? -1 : 1;
  }
  const uint32_t* fa = ((const sample_ref_t*)a)->frames;
  const uint32_t* fb = ((const sample_ref_t*)b)->frames;
  for (uint32_t i = 0; i < sa->depth; i++) {
    if (fa[i] != fb[i]) {
      return fa[i] < fb[i] ? -1 : 1;
    }
  }
  return 0;
}

// The label keys a sample's labels use (string table indexes).
typedef struct {
  uint64_t thread, thread_name, pid, process;
} label_keys_t;

// One label: `key` with a string index (kLabelStr) or a number (kLabelNum).
static void write_label(pprof_state_t* st, uint64_t key, uint32_t field, uint64_t value) {
  size_t label = zxs_pb_begin(&st->pb, kSampleLabel);
  zxs_pb_varint_field(&st->pb, kLabelKey, key);
  zxs_pb_varint_field(&st->pb, field, value);
  zxs_pb_end(&st->pb, label);
}

// A sample's labels: its thread (tid, name) and process (pid, name), where known.
static void write_sample_labels(pprof_state_t* st, const zxs_profile_sample_t* s,
                                const label_keys_t* keys, const zxs_thread_index_t* threads) {
  size_t label = zxs_pb_begin(&st->pb, kSampleLabel);
  zxs_pb_varint_field(&st->pb, kLabelKey, keys->thread);
  zxs_pb_varint_field_nz(&st->pb, kLabelNum, s->tid);
  zxs_pb_end(&st->pb, label);
  const char* name = zxs_thread_index_name(threads, s->tid);
  if (name != NULL) {
    write_label(st, keys->thread_name, kLabelStr, str(st, name));
  }
  const zxs_profile_process_t* process = zxs_profile_find_process(st->profile, s->pid);
  if (s->pid != 0) {
    write_label(st, keys->pid, kLabelNum, process != NULL ? process->pid : s->pid);
  }
  if (process != NULL && process->name[0] != '\0') {
    write_label(st, keys->process, kLabelStr, str(st, process->name));
  }
}

static bool write_samples(pprof_state_t* st, uint64_t period) {
  const zxs_profile_t* p = st->profile;
  size_t n = p->sample_count;
  if (n == 0) {
    return true;
  }
  sample_ref_t* refs = malloc(n * sizeof(refs[0]));
  uint64_t* ids = NULL;
  size_t ids_cap = 0;
  zxs_thread_index_t threads = {0};
  if (refs == NULL || zxs_thread_index_init(&threads, p) != ZX_OK) {
    zxs_thread_index_free(&threads);  // fine when never initialized
    free(refs);
    return false;
  }
  label_keys_t keys;  // interned in this order (an initializer list would leave it open)
  keys.thread = str(st, "thread");
  keys.thread_name = str(st, "thread_name");
  keys.pid = str(st, "pid");
  keys.process = str(st, "process");
  for (size_t i = 0; i < n; i++) {
    refs[i].sample = &p->samples[i];
    refs[i].frames = p->frames + p->samples[i].first_frame;
  }
  // Identical stacks of one thread become one sample with a count.
  qsort(refs, n, sizeof(refs[0]), compare_sample_refs);
  bool ok = true;
  for (size_t i = 0; i < n && ok;) {
    size_t j = i + 1;
    while (j < n && compare_sample_refs(&refs[i], &refs[j]) == 0) {
      j++;
    }
    const zxs_profile_sample_t* s = refs[i].sample;
    if (!zxs_array_grow((void**)&ids, &ids_cap, s->depth, sizeof(ids[0]))) {
      ok = false;
      break;
    }
    for (uint32_t d = 0; d < s->depth; d++) {
      ids[d] = (uint64_t)refs[i].frames[d] + 1;  // leaf first, as pprof wants
    }
    uint64_t count = j - i;
    uint64_t values[2] = {count, count * period};
    size_t mark = zxs_pb_begin(&st->pb, kProfileSample);
    zxs_pb_packed_field(&st->pb, kSampleLocationId, ids, s->depth);
    zxs_pb_packed_field(&st->pb, kSampleValue, values, 2);
    write_sample_labels(st, s, &keys, &threads);
    zxs_pb_end(&st->pb, mark);
    i = j;
  }
  zxs_thread_index_free(&threads);
  free(ids);
  free(refs);
  return ok;
}

zx_status_t zxs_export_pprof_encode(const zxs_profile_t* profile, uint8_t** data, size_t* size) {
  if (data == NULL || size == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  *data = NULL;
  *size = 0;
  zx_status_t status = zxs_export_check(profile, data);
  if (status != ZX_OK) {
    return status;
  }
  pprof_state_t st = {.profile = profile};
  zxs_pb_init(&st.pb);
  uint64_t period = profile->period > 0 ? (uint64_t)profile->period : 0;

  str(&st, "");  // index 0, as pprof requires
  value_type(&st, kProfileSampleType, "samples", "count");
  value_type(&st, kProfileSampleType, "cpu", "nanoseconds");
  bool ok = write_functions(&st);
  ok = ok && write_mappings(&st);
  if (ok) {
    write_locations(&st);
    ok = write_samples(&st, period);
  }
  zxs_pb_varint_field_nz(&st.pb, kProfileDurationNanos, zxs_profile_duration_ns(profile));
  value_type(&st, kProfilePeriodType, "cpu", "nanoseconds");
  zxs_pb_varint_field_nz(&st.pb, kProfilePeriod, period);
  bool has_name = profile->process_name != NULL && profile->process_name[0] != '\0';
  if (has_name || profile->pid != 0) {
    const zxs_profile_process_t* own = zxs_profile_find_process(profile, profile->pid);
    zxs_sb_t comment = {0};
    zxs_sb_printf(&comment, "process %s (pid %llu)", has_name ? profile->process_name : "?",
                  (unsigned long long)(own != NULL ? own->pid : profile->pid));
    uint64_t index = str(&st, zxs_sb_str(&comment));
    ok = ok && !comment.failed;
    zxs_sb_free(&comment);
    zxs_pb_packed_field(&st.pb, kProfileComment, &index, 1);
  }
  zxs_pb_varint_field(&st.pb, kProfileDefaultSampleType, str(&st, period != 0 ? "cpu" : "samples"));
  for (size_t i = 0; i < st.strings.count; i++) {
    zxs_pb_bytes_field(&st.pb, kProfileStringTable, st.strings.strings[i],
                       strlen(st.strings.strings[i]));
  }

  if (!ok || st.no_memory || zxs_pb_failed(&st.pb)) {
    status = ZX_ERR_NO_MEMORY;
  } else {
    *data = zxs_pb_release(&st.pb, size);
  }
  zxs_pb_free(&st.pb);
  zxs_strtab_free(&st.strings);
  free(st.location_function);
  free(st.inline_function);
  return status;
}

// gzip (RFC 1952) through zlib: windowBits 15 + 16 selects the gzip wrapper.
static zx_status_t write_gzip(const uint8_t* data, size_t size, FILE* out) {
  z_stream z;
  memset(&z, 0, sizeof(z));
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return ZX_ERR_NO_MEMORY;
  }
  zx_status_t status = ZX_OK;
  uint8_t chunk[16384];
  size_t done = 0;
  int flush;
  do {
    // avail_in is a uInt: feed large inputs in pieces.
    if (z.avail_in == 0 && done < size) {
      size_t piece = size - done < (1u << 30) ? size - done : (1u << 30);
      z.next_in = (Bytef*)(uintptr_t)(data + done);
      z.avail_in = (uInt)piece;
      done += piece;
    }
    flush = done == size ? Z_FINISH : Z_NO_FLUSH;
    z.next_out = chunk;
    z.avail_out = sizeof(chunk);
    int rc = deflate(&z, flush);
    if (rc == Z_STREAM_ERROR) {
      status = ZX_ERR_INTERNAL;
      break;
    }
    size_t produced = sizeof(chunk) - z.avail_out;
    if (produced > 0 && fwrite(chunk, 1, produced, out) != produced) {
      status = ZX_ERR_IO;
      break;
    }
    if (rc == Z_STREAM_END) {
      break;
    }
  } while (1);
  deflateEnd(&z);
  return status;
}

zx_status_t zxs_export_pprof(const zxs_profile_t* profile, FILE* out) {
  if (out == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  uint8_t* data;
  size_t size;
  zx_status_t status = zxs_export_pprof_encode(profile, &data, &size);
  if (status != ZX_OK) {
    return status;
  }
  status = write_gzip(data, size, out);
  free(data);
  return status != ZX_OK ? status : zxs_export_stream_status(out);
}
