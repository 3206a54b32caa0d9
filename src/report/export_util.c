#include "export_util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

zx_status_t zxs_export_check(const zxs_profile_t* profile, const void* out) {
  if (out == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (profile == NULL) {
    return ZX_ERR_INVALID_ARGS;
  }
  if ((profile->thread_count > 0 && profile->threads == NULL) ||
      (profile->location_count > 0 && profile->locations == NULL) ||
      (profile->sample_count > 0 && profile->samples == NULL) ||
      (profile->frame_count > 0 && profile->frames == NULL) ||
      (profile->inline_frame_count > 0 && profile->inline_frames == NULL) ||
      (profile->modules.count > 0 && profile->modules.modules == NULL)) {
    return ZX_ERR_INVALID_ARGS;
  }
  for (size_t i = 0; i < profile->modules.count; i++) {
    const zxs_module_t* m = &profile->modules.modules[i];
    if ((m->segment_count > 0 && m->segments == NULL) || m->build_id_size > ZXS_BUILD_ID_MAX) {
      return ZX_ERR_INVALID_ARGS;
    }
  }
  for (size_t i = 0; i < profile->location_count; i++) {
    const zxs_profile_location_t* loc = &profile->locations[i];
    if (loc->module < -1 || (loc->module >= 0 && (size_t)loc->module >= profile->modules.count) ||
        loc->inline_first > profile->inline_frame_count ||
        loc->inline_count > profile->inline_frame_count - loc->inline_first) {
      return ZX_ERR_INVALID_ARGS;
    }
  }
  for (size_t i = 0; i < profile->sample_count; i++) {
    const zxs_profile_sample_t* s = &profile->samples[i];
    if (s->first_frame > profile->frame_count || s->depth > profile->frame_count - s->first_frame) {
      return ZX_ERR_INVALID_ARGS;
    }
  }
  for (size_t i = 0; i < profile->frame_count; i++) {
    if (profile->frames[i] >= profile->location_count) {
      return ZX_ERR_INVALID_ARGS;
    }
  }
  return ZX_OK;
}

zx_status_t zxs_export_stream_status(FILE* out) { return ferror(out) ? ZX_ERR_IO : ZX_OK; }

// --- String builder --------------------------------------------------------------------------

static bool sb_reserve(zxs_sb_t* sb, size_t more) {
  if (sb->failed) {
    return false;
  }
  if (sb->data != NULL && more < sb->cap - sb->len) {
    return true;
  }
  if (more >= SIZE_MAX / 2 - sb->len) {
    sb->failed = true;
    return false;
  }
  size_t cap = sb->cap != 0 ? sb->cap : 64;
  while (more >= cap - sb->len) {
    cap *= 2;
  }
  char* data = realloc(sb->data, cap);
  if (data == NULL) {
    sb->failed = true;
    return false;
  }
  sb->data = data;
  sb->cap = cap;
  return true;
}

void zxs_sb_append(zxs_sb_t* sb, const char* s, size_t len) {
  if (sb_reserve(sb, len)) {
    memcpy(sb->data + sb->len, s, len);
    sb->len += len;
    sb->data[sb->len] = '\0';
  }
}

void zxs_sb_puts(zxs_sb_t* sb, const char* s) { zxs_sb_append(sb, s, strlen(s)); }

void zxs_sb_printf(zxs_sb_t* sb, const char* format, ...) {
  char small[128];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(small, sizeof(small), format, args);
  va_end(args);
  if (n < 0) {
    sb->failed = true;
    return;
  }
  if ((size_t)n < sizeof(small)) {
    zxs_sb_append(sb, small, (size_t)n);
    return;
  }
  if (sb_reserve(sb, (size_t)n)) {
    va_start(args, format);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, format, args);
    va_end(args);
    sb->len += (size_t)n;
  }
}

const char* zxs_sb_str(const zxs_sb_t* sb) { return sb->data != NULL ? sb->data : ""; }

void zxs_sb_free(zxs_sb_t* sb) {
  free(sb->data);
  memset(sb, 0, sizeof(*sb));
}

void zxs_sb_percent(zxs_sb_t* sb, uint64_t n, uint64_t total) {
  uint64_t hundredths = total == 0 ? 0 : (uint64_t)((double)n * 10000.0 / (double)total + 0.5);
  zxs_sb_printf(sb, "%" PRIu64 ".%02" PRIu64, hundredths / 100, hundredths % 100);
}

// --- Labels ----------------------------------------------------------------------------------

const char* zxs_export_basename(const char* path) {
  if (path == NULL) {
    return "";
  }
  const char* slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

void zxs_export_append_label(zxs_sb_t* sb, const zxs_profile_t* profile, uint32_t location) {
  const zxs_profile_location_t* loc = &profile->locations[location];
  if (loc->function != NULL && loc->function[0] != '\0') {
    zxs_sb_puts(sb, loc->function);
    return;
  }
  const char* base =
      loc->module >= 0 ? zxs_export_basename(profile->modules.modules[loc->module].path) : "";
  if (base[0] != '\0') {
    zxs_sb_printf(sb, "%s+0x%" PRIx64, base, loc->file_address);
  } else {
    zxs_sb_printf(sb, "0x%" PRIx64, loc->address);
  }
}

void zxs_export_append_inline_label(zxs_sb_t* sb, const zxs_profile_inline_frame_t* frame) {
  zxs_sb_puts(sb, frame->function != NULL && frame->function[0] != '\0' ? frame->function : "??");
  zxs_sb_puts(sb, ZXS_EXPORT_INLINED_SUFFIX);
}

uint64_t zxs_export_duration_ns(const zxs_profile_t* p) {
  if (p->sample_count == 0) {
    return 0;
  }
  uint64_t lo = UINT64_MAX;
  uint64_t hi = 0;
  for (size_t i = 0; i < p->sample_count; i++) {
    lo = p->samples[i].ticks < lo ? p->samples[i].ticks : lo;
    hi = p->samples[i].ticks > hi ? p->samples[i].ticks : hi;
  }
  uint64_t tps = p->ticks_per_second != 0 ? p->ticks_per_second : 1000000000u;
  uint64_t ticks = hi - lo;
  uint64_t ns = ticks / tps * 1000000000u + (uint64_t)((double)(ticks % tps) * 1e9 / (double)tps);
  return ns + (p->period > 0 ? (uint64_t)p->period : 0);
}

uint32_t zxs_export_hash(const char* s, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) {
    h = (h ^ (uint8_t)s[i]) * 16777619u;
  }
  return h;
}

// --- Threads ---------------------------------------------------------------------------------

static int compare_thread_ptrs(const void* a, const void* b) {
  const zxs_profile_thread_t* ta = *(const zxs_profile_thread_t* const*)a;
  const zxs_profile_thread_t* tb = *(const zxs_profile_thread_t* const*)b;
  return ta->tid < tb->tid ? -1 : (ta->tid > tb->tid ? 1 : 0);
}

zx_status_t zxs_thread_index_init(zxs_thread_index_t* index, const zxs_profile_t* profile) {
  index->count = 0;
  index->sorted = NULL;
  if (profile->thread_count == 0) {
    return ZX_OK;
  }
  index->sorted = malloc(profile->thread_count * sizeof(index->sorted[0]));
  if (index->sorted == NULL) {
    return ZX_ERR_NO_MEMORY;
  }
  for (size_t i = 0; i < profile->thread_count; i++) {
    index->sorted[i] = &profile->threads[i];
  }
  index->count = profile->thread_count;
  qsort(index->sorted, index->count, sizeof(index->sorted[0]), compare_thread_ptrs);
  return ZX_OK;
}

const char* zxs_thread_index_name(const zxs_thread_index_t* index, zx_koid_t tid) {
  size_t lo = 0;
  size_t hi = index->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (index->sorted[mid]->tid < tid) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  // The first record of that tid with a name (hand-built profiles may repeat a tid).
  for (; lo < index->count && index->sorted[lo]->tid == tid; lo++) {
    const char* name = index->sorted[lo]->name;
    if (name != NULL && name[0] != '\0') {
      return name;
    }
  }
  return NULL;
}

void zxs_thread_index_free(zxs_thread_index_t* index) {
  free(index->sorted);
  index->sorted = NULL;
  index->count = 0;
}

// --- String table ----------------------------------------------------------------------------

static bool strtab_grow(zxs_strtab_t* tab) {
  size_t slot_count = tab->slot_count != 0 ? tab->slot_count * 2 : 256;
  uint32_t* slots = calloc(slot_count, sizeof(slots[0]));
  if (slots == NULL) {
    return false;
  }
  for (size_t i = 0; i < tab->count; i++) {
    const char* s = tab->strings[i];
    size_t at = zxs_export_hash(s, strlen(s)) & (slot_count - 1);
    while (slots[at] != 0) {
      at = (at + 1) & (slot_count - 1);
    }
    slots[at] = (uint32_t)(i + 1);
  }
  free(tab->slots);
  tab->slots = slots;
  tab->slot_count = slot_count;
  return true;
}

int64_t zxs_strtab_intern(zxs_strtab_t* tab, const char* s) {
  if (tab->count >= UINT32_MAX - 1) {
    return -1;
  }
  // Keep the load factor under 1/2.
  if ((tab->count + 1) * 2 > tab->slot_count && !strtab_grow(tab)) {
    return -1;
  }
  size_t len = strlen(s);
  size_t at = zxs_export_hash(s, len) & (tab->slot_count - 1);
  while (tab->slots[at] != 0) {
    uint32_t index = tab->slots[at] - 1;
    if (strcmp(tab->strings[index], s) == 0) {
      return index;
    }
    at = (at + 1) & (tab->slot_count - 1);
  }
  if (tab->count == tab->strings_cap) {
    size_t cap = tab->strings_cap != 0 ? tab->strings_cap * 2 : 64;
    char** strings = realloc(tab->strings, cap * sizeof(strings[0]));
    if (strings == NULL) {
      return -1;
    }
    tab->strings = strings;
    tab->strings_cap = cap;
  }
  char* copy = malloc(len + 1);
  if (copy == NULL) {
    return -1;
  }
  memcpy(copy, s, len + 1);
  tab->strings[tab->count] = copy;
  tab->slots[at] = (uint32_t)(tab->count + 1);
  return (int64_t)tab->count++;
}

void zxs_strtab_free(zxs_strtab_t* tab) {
  for (size_t i = 0; i < tab->count; i++) {
    free(tab->strings[i]);
  }
  free(tab->strings);
  free(tab->slots);
  memset(tab, 0, sizeof(*tab));
}

// --- Collapsed stacks ------------------------------------------------------------------------

typedef struct raw_stack {
  const uint32_t* frames;  // innermost first
  uint32_t depth;
  zx_koid_t tid;  // 0 unless stacks are split per thread
} raw_stack_t;

static int compare_raw_stacks(const void* a, const void* b) {
  const raw_stack_t* ra = a;
  const raw_stack_t* rb = b;
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

zx_status_t zxs_export_collapse(const zxs_profile_t* profile, uint32_t flags, bool framewise,
                                zxs_export_stack_t** stacks_out, size_t* count_out) {
  *stacks_out = NULL;
  *count_out = 0;
  bool by_thread = (flags & (ZXS_EXPORT_THREAD_ROOT | ZXS_EXPORT_THREAD_ROOT_TID)) != 0;
  size_t n = profile->sample_count;
  if (n == 0) {
    return ZX_OK;
  }
  zx_status_t status = ZX_ERR_NO_MEMORY;
  raw_stack_t* raw = malloc(n * sizeof(raw[0]));
  char** labels = calloc(profile->location_count + 1, sizeof(labels[0]));
  zxs_export_stack_t* stacks = calloc(n, sizeof(stacks[0]));
  zxs_thread_index_t threads = {0};
  size_t count = 0;
  if (raw == NULL || labels == NULL || stacks == NULL ||
      zxs_thread_index_init(&threads, profile) != ZX_OK) {
    goto done;
  }
  for (size_t i = 0; i < profile->location_count; i++) {
    labels[i] = folded_label(profile, (uint32_t)i);
    if (labels[i] == NULL) {
      goto done;
    }
  }

  // Identical location sequences first (cheap), then identical text.
  for (size_t i = 0; i < n; i++) {
    const zxs_profile_sample_t* s = &profile->samples[i];
    raw[i].frames = profile->frames + s->first_frame;
    raw[i].depth = s->depth;
    raw[i].tid = by_thread ? s->tid : 0;
  }
  qsort(raw, n, sizeof(raw[0]), compare_raw_stacks);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && compare_raw_stacks(&raw[i], &raw[j]) == 0) {
      j++;
    }
    zxs_sb_t line = {0};
    if (by_thread) {
      append_thread_root(&line, &threads, raw[i].tid, flags);
    }
    for (uint32_t d = raw[i].depth; d > 0; d--) {
      if (line.len > 0) {
        zxs_sb_append(&line, ";", 1);
      }
      zxs_sb_puts(&line, labels[raw[i].frames[d - 1]]);
    }
    if (line.failed) {
      zxs_sb_free(&line);
      goto done;
    }
    if (line.len > 0) {  // samples without frames (and no thread root) have no stack
      stacks[count].line = line.data;
      stacks[count].count = j - i;
      count++;
    }
    i = j;
  }

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
  count = unique;
  status = ZX_OK;

done:
  if (labels != NULL) {
    for (size_t i = 0; i < profile->location_count; i++) {
      free(labels[i]);
    }
  }
  free(labels);
  free(raw);
  zxs_thread_index_free(&threads);
  if (status != ZX_OK) {
    zxs_export_stacks_free(stacks, count);
    return status;
  }
  *stacks_out = stacks;
  *count_out = count;
  return ZX_OK;
}
