// A "top functions" text report: self and inclusive sample counts per function.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_check.h"
#include "export_labels.h"
#include "string_builder.h"
#include "string_table.h"
#include "thread_index.h"
#include "trace_file.h"

typedef struct top_state {
  const zxs_profile_t* profile;
  uint32_t* location_function;  // label index per location
  uint32_t* inline_function;    // label index per inline frame of the profile
  zxs_strtab_t labels;
  uint64_t* self;  // per label
  uint64_t* total;
  size_t* stamp;  // last sample (index + 1) that counted this label's total
  uint32_t flags;
} top_state_t;

// The qsort comparator cannot take a context: rows carry their numbers.
typedef struct row {
  uint64_t self;
  uint64_t total;
  const char* name;
} row_t;

static int compare_rows_self(const void* a, const void* b) {
  const row_t* ra = a;
  const row_t* rb = b;
  if (ra->self != rb->self) return ra->self > rb->self ? -1 : 1;
  if (ra->total != rb->total) return ra->total > rb->total ? -1 : 1;
  return strcmp(ra->name, rb->name);
}

static int compare_rows_total(const void* a, const void* b) {
  const row_t* ra = a;
  const row_t* rb = b;
  if (ra->total != rb->total) return ra->total > rb->total ? -1 : 1;
  if (ra->self != rb->self) return ra->self > rb->self ? -1 : 1;
  return strcmp(ra->name, rb->name);
}

// `width` 0: unpadded.
static void write_percent(FILE* out, uint64_t n, uint64_t total, int width) {
  zxs_sb_t sb = {0};
  zxs_sb_percent(&sb, n, total);
  fprintf(out, "%*s%%", width, zxs_sb_str(&sb));
  zxs_sb_free(&sb);
}

// Text with control characters blanked, so that every row stays one line.
static void write_plain(FILE* out, const char* s) {
  for (; *s != '\0'; s++) {
    unsigned char c = (unsigned char)*s;
    fputc(c < 0x20 || c == 0x7f ? ' ' : c, out);
  }
}

// Which samples a table counts: all, or those of one thread, within [since, until] ticks.
typedef struct sample_filter {
  bool all_threads;
  zx_koid_t tid;
  uint64_t since, until;
} sample_filter_t;

static bool sample_in(const sample_filter_t* f, const zxs_profile_sample_t* s) {
  return (f->all_threads || s->tid == f->tid) && s->ticks >= f->since && s->ticks <= f->until;
}

// One table over the samples `filter` lets through.
static bool write_table(top_state_t* st, const sample_filter_t* filter, size_t max_rows,
                        FILE* out) {
  const zxs_profile_t* p = st->profile;
  size_t labels = st->labels.count;
  memset(st->self, 0, labels * sizeof(st->self[0]));
  memset(st->total, 0, labels * sizeof(st->total[0]));
  memset(st->stamp, 0, labels * sizeof(st->stamp[0]));
  uint64_t samples = 0;
  for (size_t i = 0; i < p->sample_count; i++) {
    const zxs_profile_sample_t* s = &p->samples[i];
    if (!sample_in(filter, s) || s->depth == 0) {
      if (sample_in(filter, s)) samples++;  // counted, but names no function
      continue;
    }
    samples++;
    const uint32_t* frames = p->frames + s->first_frame;
    const zxs_profile_location_t* leaf = &p->locations[frames[0]];
    st->self[leaf->inline_count > 0 ? st->inline_function[leaf->inline_first]
                                    : st->location_function[frames[0]]]++;
    for (uint32_t d = 0; d < s->depth; d++) {
      const zxs_profile_location_t* loc = &p->locations[frames[d]];
      for (uint32_t k = 0; k <= loc->inline_count; k++) {
        uint32_t f = k < loc->inline_count ? st->inline_function[loc->inline_first + k]
                                           : st->location_function[frames[d]];
        if (st->stamp[f] != i + 1) {  // once per sample, even when recursive
          st->stamp[f] = i + 1;
          st->total[f]++;
        }
      }
    }
  }
  row_t* rows = malloc((labels + 1) * sizeof(rows[0]));
  if (rows == NULL) {
    return false;
  }
  size_t count = 0;
  for (size_t f = 0; f < labels; f++) {
    if (st->total[f] > 0) {
      rows[count++] =
          (row_t){.self = st->self[f], .total = st->total[f], .name = st->labels.strings[f]};
    }
  }
  qsort(rows, count, sizeof(rows[0]),
        (st->flags & ZXS_EXPORT_TOP_BY_TOTAL) ? compare_rows_total : compare_rows_self);
  if (count == 0) {
    fputs("No samples.\n", out);
    free(rows);
    return true;
  }
  fprintf(out, "%8s %8s %8s %8s  %s\n", "Self", "Self%", "Total", "Total%", "Function");
  size_t shown = max_rows != 0 && max_rows < count ? max_rows : count;
  for (size_t i = 0; i < shown; i++) {
    fprintf(out, "%8" PRIu64 " ", rows[i].self);
    write_percent(out, rows[i].self, samples, 7);
    fprintf(out, " %8" PRIu64 " ", rows[i].total);
    write_percent(out, rows[i].total, samples, 7);
    fputs("  ", out);
    write_plain(out, rows[i].name);
    fputc('\n', out);
  }
  if (shown < count) {
    fprintf(out, "(%zu more functions not shown)\n", count - shown);
  }
  free(rows);
  return true;
}

typedef struct thread_count {
  zx_koid_t tid;
  uint64_t samples;
} thread_count_t;

static int compare_tids(const void* a, const void* b) {
  zx_koid_t ta = ((const thread_count_t*)a)->tid;
  zx_koid_t tb = ((const thread_count_t*)b)->tid;
  return ta < tb ? -1 : (ta > tb ? 1 : 0);
}

static int compare_thread_counts(const void* a, const void* b) {
  const thread_count_t* ta = a;
  const thread_count_t* tb = b;
  if (ta->samples != tb->samples) return ta->samples > tb->samples ? -1 : 1;
  return compare_tids(a, b);
}

// The threads that have samples, with their counts, by tid; NULL (and 0) when none or on
// allocation failure (*failed).
static thread_count_t* count_threads(const zxs_profile_t* p, size_t* count, bool* failed) {
  *count = 0;
  *failed = false;
  if (p->sample_count == 0) {
    return NULL;
  }
  thread_count_t* threads = malloc(p->sample_count * sizeof(threads[0]));
  if (threads == NULL) {
    *failed = true;
    return NULL;
  }
  for (size_t i = 0; i < p->sample_count; i++) {
    threads[i] = (thread_count_t){.tid = p->samples[i].tid, .samples = 1};
  }
  qsort(threads, p->sample_count, sizeof(threads[0]), compare_tids);
  size_t n = 0;
  for (size_t i = 0; i < p->sample_count; i++) {
    if (n > 0 && threads[n - 1].tid == threads[i].tid) {
      threads[n - 1].samples++;
    } else {
      threads[n++] = threads[i];
    }
  }
  *count = n;
  return threads;
}

static int compare_process_samples(const void* a, const void* b) {
  const zxs_profile_process_t* x = *(const zxs_profile_process_t* const*)a;
  const zxs_profile_process_t* y = *(const zxs_profile_process_t* const*)b;
  if (x->samples != y->samples) return x->samples > y->samples ? -1 : 1;
  return x->koid < y->koid ? -1 : x->koid > y->koid;
}

// Processes with samples, most first, when there are several or the one there is is not the
// header's (`record -- sh -c 'xz ...'`: sh forked xz and sampled none).
static void write_processes(const zxs_profile_t* p, FILE* out) {
  size_t with_samples = 0;
  bool header_sampled = false;
  for (size_t i = 0; i < p->process_count; i++) {
    with_samples += p->processes[i].samples > 0;
    header_sampled |= p->processes[i].samples > 0 && p->processes[i].koid == p->pid;
  }
  if (with_samples == 0 || (with_samples == 1 && header_sampled)) return;
  const zxs_profile_process_t** sorted = malloc(with_samples * sizeof(*sorted));
  if (sorted == NULL) return;
  size_t n = 0;
  for (size_t i = 0; i < p->process_count; i++) {
    if (p->processes[i].samples > 0) sorted[n++] = &p->processes[i];
  }
  qsort(sorted, n, sizeof(*sorted), compare_process_samples);
  fprintf(out, "Processes: %zu\n", n);
  for (size_t i = 0; i < n; i++) {
    fprintf(out, "  %8" PRIu64 " ", sorted[i]->samples);
    write_percent(out, sorted[i]->samples, p->sample_count, 0);
    fputs("  ", out);
    write_plain(out, sorted[i]->name[0] != '\0' ? sorted[i]->name : "unknown");
    fprintf(out, " (pid %" PRIu64 ")\n", sorted[i]->pid);
  }
  free(sorted);
}

// --- Task runtime ---------------------------------------------------------------------------

#define RUNTIME_TOP_THREADS 10

typedef struct runtime_row {
  const char* name;
  const char* id_kind;  // "pid" or "tid"
  uint64_t id;
  zxs_profile_runtime_t rt;
} runtime_row_t;

static uint64_t runtime_total(const zxs_profile_runtime_t* rt) {
  return rt->cpu_time + rt->queue_time + rt->page_fault_time + rt->lock_contention_time;
}

static int compare_runtime_rows(const void* a, const void* b) {
  const runtime_row_t* x = a;
  const runtime_row_t* y = b;
  const uint64_t tx = runtime_total(&x->rt), ty = runtime_total(&y->rt);
  if (tx != ty) return tx > ty ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

// One field in ms, or "-" when it was not measured.
static void write_ms(FILE* out, const zxs_profile_runtime_t* rt, uint32_t field, uint64_t ns) {
  if ((rt->fields & field) == 0) {
    fprintf(out, " %11s", "-");
  } else {
    fprintf(out, " %11.3f", (double)ns / 1e6);
  }
}

static void write_runtime_row(FILE* out, const runtime_row_t* r, const char* indent) {
  zxs_sb_t label = {0};
  zxs_sb_printf(&label, "%s%s (%s %" PRIu64 ")", indent, r->name[0] != '\0' ? r->name : "unknown",
                r->id_kind, r->id);
  char text[48];
  const char* all = label.failed ? "?" : zxs_sb_str(&label);
  snprintf(text, sizeof(text), "%s", all);
  fputs(" ", out);
  write_plain(out, text);
  fprintf(out, "%*s", (int)(sizeof(text) - 1 > strlen(text) ? sizeof(text) - 1 - strlen(text) : 0),
          "");
  write_ms(out, &r->rt, ZXS_PROFILE_RUNTIME_CPU, r->rt.cpu_time);
  write_ms(out, &r->rt, ZXS_PROFILE_RUNTIME_QUEUE, r->rt.queue_time);
  write_ms(out, &r->rt, ZXS_PROFILE_RUNTIME_FAULT, r->rt.page_fault_time);
  write_ms(out, &r->rt, ZXS_PROFILE_RUNTIME_LOCK, r->rt.lock_contention_time);
  fputc('\n', out);
  zxs_sb_free(&label);
}

static void add_runtime(zxs_profile_runtime_t* sum, const zxs_profile_runtime_t* rt) {
  sum->fields |= rt->fields;
  sum->cpu_time += rt->cpu_time;
  sum->queue_time += rt->queue_time;
  sum->page_fault_time += rt->page_fault_time;
  sum->lock_contention_time += rt->lock_contention_time;
  sum->page_faults += rt->page_faults;
  sum->lock_contentions += rt->lock_contentions;
}

// Where the time of the processes with samples went (RFC-0084), summed over their threads, then
// the threads that took the most: cpu, queue, page-fault and kernel-lock time in ms.
static void write_runtime(const zxs_profile_t* p, FILE* out) {
  if (p->runtime_fields == 0) return;
  runtime_row_t* procs = calloc(p->process_count + 1, sizeof(*procs));
  runtime_row_t* threads = calloc(p->thread_count + 1, sizeof(*threads));
  if (procs == NULL || threads == NULL) {
    free(procs);
    free(threads);
    return;
  }
  size_t nprocs = 0, nthreads = 0;
  for (size_t i = 0; i < p->process_count; i++) {
    const zxs_profile_process_t* proc = &p->processes[i];
    if (proc->samples == 0) continue;
    runtime_row_t row = {.name = proc->name, .id_kind = "pid", .id = proc->pid};
    for (size_t t = 0; t < p->thread_count; t++) {
      const zxs_profile_thread_t* th = &p->threads[t];
      if (th->pid != proc->koid || th->runtime.fields == 0) continue;
      add_runtime(&row.rt, &th->runtime);
      threads[nthreads++] =
          (runtime_row_t){.name = th->name, .id_kind = "tid", .id = th->tid, .rt = th->runtime};
    }
    if (row.rt.fields != 0) procs[nprocs++] = row;
  }
  if (nprocs > 0) {
    qsort(procs, nprocs, sizeof(*procs), compare_runtime_rows);
    qsort(threads, nthreads, sizeof(*threads), compare_runtime_rows);
    fprintf(out, "%-48s %11s %11s %11s %11s\n", "Task runtime (ms):", "cpu", "queue", "page faults",
            "locks");
    for (size_t i = 0; i < nprocs; i++) write_runtime_row(out, &procs[i], "");
    const size_t shown = nthreads < RUNTIME_TOP_THREADS ? nthreads : RUNTIME_TOP_THREADS;
    fprintf(out, " Threads, most time first:\n");
    for (size_t i = 0; i < shown; i++) write_runtime_row(out, &threads[i], "  ");
    if (shown < nthreads) fprintf(out, "  (%zu more threads not shown)\n", nthreads - shown);
  }
  if (p->runtime_missing != NULL && p->runtime_missing[0] != '\0') {
    fputs("Not measured: ", out);
    write_plain(out, p->runtime_missing);
    fputc('\n', out);
  }
  if (p->runtime_records_lost > 0) {
    fprintf(out,
            "Runtime records lost: %" PRIu64
            " (the faults and contentions they end are not "
            "counted)\n",
            p->runtime_records_lost);
  }
  free(procs);
  free(threads);
}

static void write_header(const zxs_profile_t* p, size_t thread_count, FILE* out) {
  bool named = p->process_name != NULL && p->process_name[0] != '\0';
  const zxs_profile_process_t* process = zxs_profile_find_process(p, p->pid);
  fputs("Process: ", out);
  write_plain(out, named ? p->process_name : "unknown");
  fprintf(out, " (pid %" PRIu64 ")\n", process != NULL ? process->pid : p->pid);
  fprintf(out, "Samples: %zu  Threads: %zu  Period: ", p->sample_count, thread_count);
  if (p->period > 0) {
    uint64_t period = (uint64_t)p->period;
    fprintf(out, "%" PRIu64 " ns (%" PRIu64 " Hz)", period, (1000000000u + period / 2) / period);
  } else {
    fputs("unknown", out);
  }
  if (p->sample_count > 0) {
    uint64_t ms = (zxs_profile_duration_ns(p) + 500000) / 1000000;
    fprintf(out, "  Duration: %" PRIu64 ".%03" PRIu64 " s", ms / 1000, ms % 1000);
  }
  fputs("\nSampled: ", out);
  if (p->sampled == ZXS_PROFILE_SAMPLED_USER_KERNEL) {
    uint64_t in_kernel = 0;
    for (size_t i = 0; i < p->sample_count; i++) {
      const zxs_profile_sample_t* s = &p->samples[i];
      in_kernel += s->depth > 0 &&
                   zxs_profile_is_kernel_address(p->locations[p->frames[s->first_frame]].address);
    }
    fputs("user and kernel code (in the kernel: ", out);
    write_percent(out, in_kernel, p->sample_count, 0);
    fputs(")", out);
  } else {
    fputs("user code only (kernel time not seen)", out);
  }
  if (p->samples_lost > 0) {
    fprintf(out, "  Lost: %" PRIu64 " samples (", p->samples_lost);
    write_percent(out, p->samples_lost, p->samples_lost + p->sample_count, 0);
    fputs(")", out);
  }
  if (p->threads_not_attached > 0) {
    fprintf(out, "  Threads not attached: %" PRIu64, p->threads_not_attached);
  }
  if (p->children_not_followed > 0) {
    fprintf(out, "  Children not followed: %" PRIu64, p->children_not_followed);
  }
  fputs("\n", out);
  write_processes(p, out);
  write_runtime(p, out);
  fputs("\n", out);
}

// Interns the label built in `label` and frees it; -1 when out of memory.
static int64_t intern_built(top_state_t* st, zxs_sb_t* label) {
  int64_t index = label->failed ? -1 : zxs_strtab_intern(&st->labels, zxs_sb_str(label));
  zxs_sb_free(label);
  return index;
}

// Labels as in the other exports (control characters are blanked when written), but code
// without a name grouped by module unless asked for addresses.
static int64_t intern_label(top_state_t* st, uint32_t location) {
  zxs_sb_t label = {0};
  const zxs_profile_location_t* loc = &st->profile->locations[location];
  if ((loc->function == NULL || loc->function[0] == '\0') && loc->module >= 0 &&
      !(st->flags & ZXS_EXPORT_TOP_ADDRESSES)) {
    zxs_sb_printf(&label, "[%s]",
                  zxs_export_basename(st->profile->modules.modules[loc->module].path));
  } else {
    zxs_export_append_label(&label, st->profile, location);
  }
  if (zxs_profile_is_kernel_address(loc->address)) {
    zxs_sb_puts(&label, ZXS_EXPORT_TOP_KERNEL_SUFFIX);
  }
  return intern_built(st, &label);
}

// --- Recorder alerts ------------------------------------------------------------------------

typedef struct share {
  const char* name;
  const char* note;
  uint64_t ns;
} share_t;

static int compare_shares(const void* a, const void* b) {
  const share_t* x = a;
  const share_t* y = b;
  return x->ns != y->ns ? (x->ns > y->ns ? -1 : 1) : strcmp(x->name, y->name);
}

// Where a late period's wall time went, largest share first. Page faults run on the CPU, so the
// CPU row is the rest of the running time; what no field explains is the thread's own sleeping
// or blocking elsewhere.
static void write_breakdown(const zxs_profile_alert_t* a, FILE* out) {
  share_t rows[5];
  size_t n = 0;
  const uint64_t fault = a->fields & ZXS_PROFILE_ALERT_FAULT ? a->page_fault_time : 0;
  uint64_t accounted = 0;
  if (a->fields & ZXS_PROFILE_ALERT_FAULT) {
    rows[n++] = (share_t){"page_fault_time", "handling page faults", fault};
  }
  if (a->fields & ZXS_PROFILE_ALERT_LOCK) {
    rows[n++] =
        (share_t){"lock_contention_time", "blocked on kernel locks", a->lock_contention_time};
    accounted += a->lock_contention_time;
  }
  if (a->fields & ZXS_PROFILE_ALERT_QUEUE) {
    rows[n++] = (share_t){"queue_time", "ready, waiting for a CPU", a->queue_time};
    accounted += a->queue_time;
  }
  if (a->fields & ZXS_PROFILE_ALERT_CPU) {
    const uint64_t other = a->cpu_time > fault ? a->cpu_time - fault : 0;
    rows[n++] =
        (share_t){"cpu_time", fault != 0 ? "running, page faults excluded" : "running", other};
    accounted += a->cpu_time > fault ? a->cpu_time : fault;
  } else {
    accounted += fault;
  }
  if (a->wall > accounted) {
    rows[n++] =
        (share_t){"other", "none of the above: asleep or blocked otherwise", a->wall - accounted};
  }
  qsort(rows, n, sizeof(rows[0]), compare_shares);
  for (size_t i = 0; i < n; i++) {
    fprintf(out, "  %-22s %9.3f ms ", rows[i].name, (double)rows[i].ns / 1e6);
    write_percent(out, rows[i].ns, a->wall, 7);
    fprintf(out, "  %s\n", rows[i].note);
  }
  // A field the host did not measure has no row (a 0 there would pass for "no time"): say which,
  // below the rows, and that its time, if any, is in "other".
  size_t missing = 0;
  for (uint32_t bit = 0; bit < ZXS_TRACE_RUNTIME_FIELD_COUNT; bit++) {
    if (a->fields & (ZXS_PROFILE_ALERT_CPU << bit)) continue;
    fprintf(out, "%s%s", missing++ == 0 ? "  (not measured: " : ", ",
            zxs_trace_runtime_field_name(bit));
  }
  if (missing > 0) fprintf(out, "; %s time, if any, is in other)\n", missing > 1 ? "their" : "its");
}

// An alert: why the period was late, then the profile of its thread over the late period (the
// whole window for an alert without a period).
static bool write_alert(top_state_t* st, const zxs_profile_alert_t* a,
                        const zxs_thread_index_t* names, size_t max_rows, FILE* out) {
  const char* thread = zxs_thread_index_name(names, a->tid);
  const bool period = (a->fields & ZXS_PROFILE_ALERT_WALL) != 0;
  fputs(period ? "Why this period was late: " : "Alert: ", out);
  write_plain(out, a->name);
  fputs(" on thread ", out);
  write_plain(out, thread != NULL && thread[0] != '\0' ? thread : "unknown");
  fprintf(out, " (tid %" PRIu64 ")", a->tid);
  if (period) {
    fprintf(out, ": %.3f ms", (double)a->wall / 1e6);
    if (a->fields & ZXS_PROFILE_ALERT_BUDGET) {
      fprintf(out, " for a budget of %.3f ms", (double)a->budget / 1e6);
    }
  }
  fputs("\n", out);
  if (period) write_breakdown(a, out);
  // The period in the trace's ticks: it ended at the alert.
  const uint64_t tps = st->profile->ticks_per_second;
  const uint64_t wall_ticks = (uint64_t)((double)a->wall * (double)tps / 1e9);
  sample_filter_t late = {.tid = a->tid,
                          .since = period && a->ticks > wall_ticks ? a->ticks - wall_ticks : 0,
                          .until = period ? a->ticks : UINT64_MAX};
  fprintf(out, "\nThread %" PRIu64 ", %s:\n", a->tid,
          period ? "the late period" : "the whole window");
  if (!write_table(st, &late, max_rows, out)) return false;
  fputs("\n", out);
  return true;
}

// Interns every location's and inline frame's function label, and makes the per-label counters.
// False when out of memory.
static bool label_functions(top_state_t* st) {
  const zxs_profile_t* profile = st->profile;
  st->location_function = malloc((profile->location_count + 1) * sizeof(uint32_t));
  st->inline_function = malloc((profile->inline_frame_count + 1) * sizeof(uint32_t));
  if (st->location_function == NULL || st->inline_function == NULL) {
    return false;
  }
  for (size_t i = 0; i < profile->inline_frame_count; i++) {
    zxs_sb_t label = {0};
    zxs_export_append_inline_label(&label, &profile->inline_frames[i]);
    int64_t index = intern_built(st, &label);
    if (index < 0) {
      return false;
    }
    st->inline_function[i] = (uint32_t)index;
  }
  for (size_t i = 0; i < profile->location_count; i++) {
    int64_t index = intern_label(st, (uint32_t)i);
    if (index < 0) {
      return false;
    }
    st->location_function[i] = (uint32_t)index;
  }
  size_t labels = st->labels.count + 1;
  st->self = malloc(labels * sizeof(st->self[0]));
  st->total = malloc(labels * sizeof(st->total[0]));
  st->stamp = malloc(labels * sizeof(st->stamp[0]));
  return st->self != NULL && st->total != NULL && st->stamp != NULL;
}

// ZXS_EXPORT_TOP_PER_THREAD: a table for each thread, the busiest first.
static bool write_per_thread(top_state_t* st, thread_count_t* threads, size_t thread_count,
                             const zxs_thread_index_t* names, size_t max_rows, FILE* out) {
  if (thread_count > 0) {
    qsort(threads, thread_count, sizeof(threads[0]), compare_thread_counts);
  }
  for (size_t i = 0; i < thread_count; i++) {
    const char* name = zxs_thread_index_name(names, threads[i].tid);
    fputs("\nThread ", out);
    write_plain(out, name != NULL ? name : "unknown");
    fprintf(out, " (tid %" PRIu64 "): %" PRIu64 " sample%s (", threads[i].tid, threads[i].samples,
            threads[i].samples == 1 ? "" : "s");
    write_percent(out, threads[i].samples, st->profile->sample_count, 0);
    fputs(" of all)\n", out);
    const sample_filter_t one = {.tid = threads[i].tid, .until = UINT64_MAX};
    if (!write_table(st, &one, max_rows, out)) {
      return false;
    }
  }
  return true;
}

zx_status_t zxs_export_top(const zxs_profile_t* profile, size_t max_rows, uint32_t flags,
                           FILE* out) {
  zx_status_t status = zxs_export_check(profile, out);
  if (status != ZX_OK) {
    return status;
  }
  top_state_t st = {.profile = profile, .flags = flags};
  size_t thread_count = 0;
  bool failed = false;
  thread_count_t* threads = count_threads(profile, &thread_count, &failed);
  zxs_thread_index_t names = {0};
  status = ZX_ERR_NO_MEMORY;
  if (failed || zxs_thread_index_init(&names, profile) != ZX_OK || !label_functions(&st)) {
    goto done;
  }

  write_header(profile, thread_count, out);
  for (size_t i = 0; i < profile->alert_count; i++) {
    if (!write_alert(&st, &profile->alerts[i], &names, max_rows, out)) goto done;
  }
  const sample_filter_t all = {.all_threads = true, .until = UINT64_MAX};
  if (profile->alert_count > 0) fputs("All threads, the whole window:\n", out);
  if (!write_table(&st, &all, max_rows, out)) {
    goto done;
  }
  if ((flags & ZXS_EXPORT_TOP_PER_THREAD) &&
      !write_per_thread(&st, threads, thread_count, &names, max_rows, out)) {
    goto done;
  }
  status = zxs_export_stream_status(out);

done:
  free(threads);
  free(st.location_function);
  free(st.inline_function);
  free(st.self);
  free(st.total);
  free(st.stamp);
  zxs_strtab_free(&st.labels);
  zxs_thread_index_free(&names);
  return status;
}
