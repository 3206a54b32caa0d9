#include "profile.h"

#include <stdlib.h>
#include <string.h>

#include "ticks.h"

typedef struct string_block {
  struct string_block* next;
  char text[];
} string_block_t;

const char* zxs_profile_strdup(zxs_profile_t* profile, const char* s) {
  size_t len = strlen(s);
  string_block_t* block = malloc(sizeof(*block) + len + 1);
  if (block == NULL) return NULL;
  memcpy(block->text, s, len + 1);
  block->next = profile->strings;
  profile->strings = block;
  return block->text;
}

void zxs_profile_free(zxs_profile_t* profile) {
  for (string_block_t* b = profile->strings; b != NULL;) {
    string_block_t* next = b->next;
    free(b);
    b = next;
  }
  zxs_modules_free(&profile->modules);
  free(profile->processes);
  free(profile->kernel_symbols);
  free(profile->threads);
  free(profile->locations);
  free(profile->samples);
  free(profile->frames);
  free(profile->inline_frames);
  free(profile->alerts);
  memset(profile, 0, sizeof(*profile));
}

const zxs_profile_process_t* zxs_profile_find_process(const zxs_profile_t* profile,
                                                      zx_koid_t koid) {
  for (size_t i = 0; i < profile->process_count; i++) {
    if (profile->processes[i].koid == koid) return &profile->processes[i];
  }
  return NULL;
}

bool zxs_profile_process_matches(const zxs_profile_process_t* process, uint64_t pid,
                                 const char* name) {
  return (pid == 0 || process->pid == pid) && (name == NULL || strcmp(process->name, name) == 0);
}

// The profile is named after the process a selection keeps, not the tree's first.
static void name_after_selected(zxs_profile_t* profile, uint64_t pid, const char* name) {
  const zxs_profile_process_t* named = NULL;
  for (size_t i = 0; i < profile->process_count; i++) {
    const zxs_profile_process_t* p = &profile->processes[i];
    if (!zxs_profile_process_matches(p, pid, name)) continue;
    if (named == NULL || (named->samples == 0 && p->samples > 0)) named = p;
  }
  if (named != NULL) {
    profile->pid = named->koid;
    profile->process_name = named->name;
  }
}

size_t zxs_profile_select(zxs_profile_t* profile, uint64_t pid, const char* name) {
  size_t kept = 0;
  for (size_t i = 0; i < profile->process_count; i++) profile->processes[i].samples = 0;
  zxs_profile_process_t* p = NULL;
  for (size_t i = 0; i < profile->sample_count; i++) {
    const zxs_profile_sample_t* s = &profile->samples[i];
    if (p == NULL || p->koid != s->pid) {  // samples come in runs of one process
      p = (zxs_profile_process_t*)zxs_profile_find_process(profile, s->pid);
    }
    uint64_t real_pid = p != NULL ? p->pid : s->pid;
    const char* pname = p != NULL ? p->name : "";
    if ((pid != 0 && real_pid != pid) || (name != NULL && strcmp(pname, name) != 0)) continue;
    if (p != NULL) p->samples++;
    profile->samples[kept++] = *s;
  }
  profile->sample_count = kept;
  if (pid != 0 || name != NULL) name_after_selected(profile, pid, name);
  return kept;
}

uint64_t zxs_profile_duration_ns(const zxs_profile_t* p) {
  if (p->sample_count == 0) {
    return 0;
  }
  uint64_t lo = UINT64_MAX;
  uint64_t hi = 0;
  for (size_t i = 0; i < p->sample_count; i++) {
    lo = p->samples[i].ticks < lo ? p->samples[i].ticks : lo;
    hi = p->samples[i].ticks > hi ? p->samples[i].ticks : hi;
  }
  const uint64_t ns = zxs_ticks_to_ns(hi - lo, p->ticks_per_second);
  return ns + (p->period > 0 ? (uint64_t)p->period : 0);
}
