// Samples collapsed into unique stacks, the folded format's lines (stack_collapse.h).
#include "stack_collapse.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_labels.h"
#include "string_builder.h"
#include "thread_index.h"

typedef struct raw_stack {
  const uint32_t* frames;  // innermost first
  uint32_t depth;
  zx_koid_t pid;  // 0 unless stacks are split per process
  zx_koid_t tid;  // 0 unless stacks are split per thread
} raw_stack_t;

static int compare_raw_stacks(const void* a, const void* b) {
  const raw_stack_t* ra = a;
  const raw_stack_t* rb = b;
  if (ra->pid != rb->pid) {
    return ra->pid < rb->pid ? -1 : 1;
  }
  if (ra->tid != rb->tid) {
    return ra->tid < rb->tid ? -1 : 1;
  }
  if (ra->depth != rb->depth) {
    return ra->depth < rb->depth ? -1 : 1;
  }
  for (uint32_t i = 0; i < ra->depth; i++) {
    if (ra->frames[i] != rb->frames[i]) {
      return ra->frames[i] < rb->frames[i] ? -1 : 1;
    }
  }
  return 0;
}

static int compare_lines(const void* a, const void* b) {
  return strcmp(((const zxs_export_stack_t*)a)->line, ((const zxs_export_stack_t*)b)->line);
}

// ';' (the frame separator, absent from labels) sorts below every other character.
static int compare_lines_framewise(const void* a, const void* b) {
  const unsigned char* sa = (const unsigned char*)((const zxs_export_stack_t*)a)->line;
  const unsigned char* sb = (const unsigned char*)((const zxs_export_stack_t*)b)->line;
  for (;; sa++, sb++) {
    int ca = *sa == ';' ? 1 : (*sa == 0 ? 0 : *sa + 1);
    int cb = *sb == ';' ? 1 : (*sb == 0 ? 0 : *sb + 1);
    if (ca != cb || ca == 0) {
      return ca - cb;
    }
  }
}

// Appends `s` with the characters that break the folded format replaced.
static void append_folded_safe(zxs_sb_t* sb, const char* s) {
  size_t start = sb->len;
  zxs_sb_puts(sb, s);
  if (sb->failed) {
    return;
  }
  if (sb->len == start) {
    zxs_sb_puts(sb, "[unknown]");
    return;
  }
  for (size_t i = start; i < sb->len; i++) {
    unsigned char c = (unsigned char)sb->data[i];
    if (c == ';') {
      sb->data[i] = ':';
    } else if (c < 0x20 || c == 0x7f) {
      sb->data[i] = ' ';
    }
  }
}

// The location's frames, outermost first: its function, then the calls inlined into it.
static char* folded_label(const zxs_profile_t* profile, uint32_t location) {
  const zxs_profile_location_t* loc = &profile->locations[location];
  zxs_sb_t raw = {0};
  zxs_sb_t safe = {0};
  for (uint32_t k = loc->inline_count + 1; k > 0; k--) {
    if (raw.data != NULL) {
      raw.len = 0;
      raw.data[0] = '\0';
    }
    if (k == loc->inline_count + 1) {
      zxs_export_append_label(&raw, profile, location);
      if (zxs_profile_is_kernel_address(loc->address)) {
        zxs_sb_puts(&raw, ZXS_EXPORT_FOLDED_KERNEL_SUFFIX);
      }
    } else {
      zxs_export_append_inline_label(&raw, &profile->inline_frames[loc->inline_first + k - 1]);
      zxs_sb_append(&safe, ";", 1);
    }
    append_folded_safe(&safe, zxs_sb_str(&raw));
  }
  bool failed = raw.failed || safe.failed;
  zxs_sb_free(&raw);
  if (failed) {
    zxs_sb_free(&safe);
    return NULL;
  }
  return safe.data;
}

// `process` NULL: not in the profile's list (named by the sample's koid).
static void append_process_root(zxs_sb_t* sb, const zxs_profile_process_t* process,
                                zx_koid_t koid) {
  if (process == NULL || process->name == NULL || process->name[0] == '\0') {
    zxs_sb_printf(sb, "process-%" PRIu64, process != NULL ? process->pid : koid);
    return;
  }
  append_folded_safe(sb, process->name);
}

static void append_thread_root(zxs_sb_t* sb, const zxs_thread_index_t* threads, zx_koid_t tid,
                               uint32_t flags) {
  const char* name = zxs_thread_index_name(threads, tid);
  if (name == NULL) {
    zxs_sb_printf(sb, "thread-%" PRIu64, tid);
    return;
  }
  append_folded_safe(sb, name);
  if (flags & ZXS_EXPORT_THREAD_ROOT_TID) {
    zxs_sb_printf(sb, "-%" PRIu64, tid);
  }
}

void zxs_export_stacks_free(zxs_export_stack_t* stacks, size_t count) {
  for (size_t i = 0; i < count; i++) {
    free(stacks[i].line);
  }
  free(stacks);
}

// Every location's folded label (labels[i] for location i), or false when out of memory.
static bool make_labels(const zxs_profile_t* profile, char** labels) {
  for (size_t i = 0; i < profile->location_count; i++) {
    labels[i] = folded_label(profile, (uint32_t)i);
    if (labels[i] == NULL) {
      return false;
    }
  }
  return true;
}

// The line of one stack: its process and thread roots (as `flags` ask), then its frames
// outermost first. NULL (with *failed) when out of memory; NULL alone when the line would be
// empty (samples without frames and no root have no stack).
static char* stack_line(const raw_stack_t* stack, const zxs_profile_process_t* process,
                        char* const* labels, const zxs_thread_index_t* threads, uint32_t flags,
                        bool* failed) {
  zxs_sb_t line = {0};
  if (flags & ZXS_EXPORT_PROCESS_ROOT) {
    append_process_root(&line, process, stack->pid);
  }
  if (flags & (ZXS_EXPORT_THREAD_ROOT | ZXS_EXPORT_THREAD_ROOT_TID)) {
    if (line.len > 0) {
      zxs_sb_append(&line, ";", 1);
    }
    append_thread_root(&line, threads, stack->tid, flags);
  }
  for (uint32_t d = stack->depth; d > 0; d--) {
    if (line.len > 0) {
      zxs_sb_append(&line, ";", 1);
    }
    zxs_sb_puts(&line, labels[stack->frames[d - 1]]);
  }
  *failed = line.failed;
  if (line.failed || line.len == 0) {
    zxs_sb_free(&line);
    return NULL;
  }
  return line.data;
}

// Identical location sequences first (cheap): the samples' stacks sorted, one line per run of
// equal ones into stacks[], their count in *count. False when out of memory.
static bool collapse_locations(const zxs_profile_t* profile, raw_stack_t* raw, char* const* labels,
                               const zxs_thread_index_t* threads, uint32_t flags,
                               zxs_export_stack_t* stacks, size_t* count) {
  const bool by_thread = (flags & (ZXS_EXPORT_THREAD_ROOT | ZXS_EXPORT_THREAD_ROOT_TID)) != 0;
  const bool by_process = (flags & ZXS_EXPORT_PROCESS_ROOT) != 0;
  const size_t n = profile->sample_count;
  for (size_t i = 0; i < n; i++) {
    const zxs_profile_sample_t* s = &profile->samples[i];
    raw[i] = (raw_stack_t){.frames = profile->frames + s->first_frame,
                           .depth = s->depth,
                           .pid = by_process ? s->pid : 0,
                           .tid = by_thread ? s->tid : 0};
  }
  qsort(raw, n, sizeof(raw[0]), compare_raw_stacks);
  const zxs_profile_process_t* process = NULL;  // raw[i]'s, looked up once per run of a pid
  for (size_t i = 0; i < n;) {
    if (by_process && (i == 0 || raw[i].pid != raw[i - 1].pid)) {
      process = zxs_profile_find_process(profile, raw[i].pid);
    }
    size_t j = i + 1;
    while (j < n && compare_raw_stacks(&raw[i], &raw[j]) == 0) {
      j++;
    }
    bool failed = false;
    char* line = stack_line(&raw[i], process, labels, threads, flags, &failed);
    if (failed) {
      return false;
    }
    if (line != NULL) {
      stacks[*count] = (zxs_export_stack_t){.line = line, .count = j - i};
      (*count)++;
    }
    i = j;
  }
  return true;
}

// Then identical text: sorts the lines and merges equal ones; returns how many are left.
static size_t merge_equal_lines(zxs_export_stack_t* stacks, size_t count, bool framewise) {
  qsort(stacks, count, sizeof(stacks[0]), framewise ? compare_lines_framewise : compare_lines);
  size_t unique = 0;
  for (size_t i = 0; i < count; i++) {
    if (unique > 0 && strcmp(stacks[unique - 1].line, stacks[i].line) == 0) {
      stacks[unique - 1].count += stacks[i].count;
      free(stacks[i].line);
    } else {
      stacks[unique++] = stacks[i];
    }
  }
  return unique;
}

zx_status_t zxs_export_collapse(const zxs_profile_t* profile, uint32_t flags, bool framewise,
                                zxs_export_stack_t** stacks_out, size_t* count_out) {
  *stacks_out = NULL;
  *count_out = 0;
  const size_t n = profile->sample_count;
  if (n == 0) {
    return ZX_OK;
  }
  raw_stack_t* raw = malloc(n * sizeof(raw[0]));
  char** labels = calloc(profile->location_count + 1, sizeof(labels[0]));
  zxs_export_stack_t* stacks = calloc(n, sizeof(stacks[0]));
  zxs_thread_index_t threads = {0};
  size_t count = 0;
  bool ok = raw != NULL && labels != NULL && stacks != NULL &&
            zxs_thread_index_init(&threads, profile) == ZX_OK && make_labels(profile, labels) &&
            collapse_locations(profile, raw, labels, &threads, flags, stacks, &count);
  if (ok) {
    count = merge_equal_lines(stacks, count, framewise);
  }
  if (labels != NULL) {
    for (size_t i = 0; i < profile->location_count; i++) {
      free(labels[i]);
    }
  }
  free(labels);
  free(raw);
  zxs_thread_index_free(&threads);
  if (!ok) {
    zxs_export_stacks_free(stacks, count);
    return ZX_ERR_NO_MEMORY;
  }
  *stacks_out = stacks;
  *count_out = count;
  return ZX_OK;
}
