// zxsampler record: the process tree from perf records, and the trace file (see
// record_processes.h).
#define _GNU_SOURCE
#include "record_processes.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <zxsampler/fxt.h>
#include <zxsampler/object.h>

#include "array_grow.h"
#include "cfi_unwind.h"
#include "elf_symbolizer.h"
#include "frame_walk.h"
#include "jit_capture.h"
#include "modules.h"
#include "perf_regs.h"
#include "record_perf.h"
#include "runtime_events_linux.h"
#include "runtime_pairs_linux.h"
#include "sorted_search.h"
#include "trace_file.h"
#include "u64_map.h"

#define MAX_FRAMES ZXS_TRACE_MAX_FRAMES
#define COMM_MAX 16u
// Records held for sorting by time before they are handled.
#define BATCH_LIMIT (8u << 20)
// With a worker (record_processes_start_worker): what the drain side may hold while the worker
// is busy with the batch before, 5000 compacted samples of a deep stack; past it, the drain side
// waits (the rings fill meanwhile, and the kernel counts what it cannot store).
#define FILL_LIMIT (32u << 20)
// Live threads' schedstat is read at most this often (ms).
#define SCHEDSTAT_MS 100u

typedef struct mapping {
  uint64_t start, len, pgoff;
  uint32_t prot;
  char* path;
  uint8_t build_id[20];
  uint8_t build_id_size;
} mapping_t;

typedef struct process {
  zx_koid_t koid;
  uint32_t pid;
  char name[COMM_MAX + 1];
  mapping_t* maps;
  size_t map_count, map_cap;
  uint64_t samples;
  bool exited;
  zxs_cfi_space_t* cfi;  // for CFI unwinding, made from `maps` when they were cfi_maps many
  size_t cfi_maps;
} process_t;

typedef struct thread {
  uint32_t tid;
  uint32_t process;  // index into processes
  char name[COMM_MAX + 1];
  uint64_t samples;
  // Task runtime (RFC-0084).
  bool exited;
  bool sched_seen;                 // schedstat was read while it lived
  int64_t sched_run, sched_delay;  // the last read
  int64_t base_run, base_delay;    // at attach (-p): what was before the recording
  bool read_seen;                  // its task-clock count came at its exit (PERF_RECORD_READ)
  uint64_t read_cpu;               // summed over CPUs
  bool count_seen;                 // the count of our own event of this thread
  uint64_t count_cpu;
  zxs_rt_pairs_t pairs;  // page faults and lock contentions
} thread_t;

// The sum of the PERF_RECORD_READ values naming one of our sampling events.
typedef struct id_sum {
  uint64_t id, sum;
} id_sum_t;

typedef struct batch_entry {
  uint64_t time;
  size_t offset;  // into the batch's bytes
  size_t seq;     // arrival order, for equal times
  bool runtime;   // from the task runtime rings
} batch_entry_t;

// Records as they were drained, to be handled in time order.
typedef struct batch {
  uint8_t* bytes;
  size_t len, cap;
  batch_entry_t* entries;
  size_t count, entry_cap;
} batch_t;

// The thread that handles batches while the recorder's own thread drains the rings: draining
// only copies, so the rings are read again within microseconds of a wake-up while the walks of
// the last batch go on beside it. Without one, every batch is handled where it was drained.
typedef struct worker {
  pthread_t thread;
  bool running;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool handed;    // `ready` holds a batch for the worker, or one it is handling
  bool stopping;  // no more batches: the worker returns once `ready` is handled
  batch_t ready;
} worker_t;

struct record_processes {
  FILE* spool;
  uint64_t sample_type;
  uint32_t root;
  bool kernel;
  bool follow_children;
  zxs_cfi_unwinder_t* unwinder;  // NULL: frame pointers
  zxs_fxt_buf_t sample;          // one sample record
  process_t* processes;
  size_t process_count, process_cap;
  thread_t* threads;
  size_t thread_count, thread_cap;
  zxs_u64_map_t pid_map;     // pid -> current process
  zxs_u64_map_t tid_map;     // tid -> current thread entry
  zxs_u64_map_t kernel_pcs;  // the kernel PCs seen (keys only)
  record_totals_t totals;
  batch_t fill;  // where drained records go (the recorder's thread)
  worker_t worker;
  // Task runtime: what is measured, the runtime events' ids and kinds (sorted by id).
  bool runtime;
  uint32_t rt_fields;  // ZXS_TASK_RUNTIME_*
  char rt_missing[512];
  int64_t fault_edge_ns;  // added to each fault (zxs_rt_fault_edge_ns())
  uint64_t* rt_ids;
  int* rt_kinds;
  size_t rt_count;
  zxs_rt_tracepoint_t lock_begin, lock_end;
  uint64_t rt_lost;  // runtime records the kernel could not store
  id_sum_t* read_sums;
  size_t read_sum_count, read_sum_cap;
  uint64_t schedstat_ms;  // when live threads' schedstat was last read
  // PC samples (record_processes_on_pc): records are held for them until a flush is asked for.
  bool pcs;
  uint64_t root_exec_ns;  // the root's first exec (COMM_EXEC), 0 until seen
  uint64_t pc_exec_ns;    // where no COMM_EXEC is seen: the root's samples are kept from here
  // JIT code names, read as processes end (NULL: no memory).
  zxs_jit_capture_t* jit;
};

// A PC sample of record_processes_on_pc(), held in the batch like a perf record.
#define RECORD_PC 0x7000u
typedef struct pc_record {
  struct perf_event_header header;  // type RECORD_PC, misc 1 for a kernel PC
  uint32_t pid, tid;
  uint64_t time;
  uint64_t pc;
} pc_record_t;

// --- Maps of ids ------------------------------------------------------------------------------
// pid or tid (0 too: the idle task, in a CPU-wide PC sample) -> an index.

static bool id_map_put(zxs_u64_map_t* m, uint32_t id, uint32_t value) {
  return zxs_u64_map_put(m, id, value);
}

// The value for id, or -1.
static int64_t id_map_get(const zxs_u64_map_t* m, uint32_t id) {
  uint64_t value;
  return zxs_u64_map_get(m, id, &value) ? (int64_t)value : -1;
}

static void kernel_pc_add(record_processes_t* s, uint64_t pc) {
  (void)zxs_u64_map_put(&s->kernel_pcs, pc, 0);  // a set; out of memory, the PC goes unnamed
}

// --- Processes and threads --------------------------------------------------------------------

static void copy_comm(char* out, const char* comm, size_t max) {
  size_t n = strnlen(comm, max < COMM_MAX ? max : COMM_MAX);
  memcpy(out, comm, n);
  out[n] = '\0';
}

static bool add_mapping(process_t* p, const mapping_t* m) {
  if (!zxs_array_grow((void**)&p->maps, &p->map_cap, p->map_count + 1, sizeof(*p->maps)))
    return false;
  mapping_t copy = *m;
  if ((copy.path = strdup(m->path)) == NULL) return false;
  p->maps[p->map_count++] = copy;
  return true;
}

// A new process object for `pid` (a new pid, a reused one, or a new image after exec).
static int64_t new_process(record_processes_t* s, uint32_t pid, const process_t* parent) {
  uint32_t generation = 0;
  for (size_t i = 0; i < s->process_count; i++) generation += s->processes[i].pid == pid;
  if (!zxs_array_grow((void**)&s->processes, &s->process_cap, s->process_count + 1,
                      sizeof(*s->processes))) {
    return -1;
  }
  process_t* p = &s->processes[s->process_count];
  *p = (process_t){.koid = (zx_koid_t)pid | ((zx_koid_t)generation << 32), .pid = pid};
  if (parent != NULL) {
    memcpy(p->name, parent->name, sizeof(p->name));
    for (size_t i = 0; i < parent->map_count; i++) {
      if (!add_mapping(p, &parent->maps[i])) break;
    }
  }
  if (!id_map_put(&s->pid_map, pid, (uint32_t)s->process_count)) return -1;
  return (int64_t)s->process_count++;
}

// The JIT code names of a sampled process (jit_capture.h), read while its files are its own:
// at its exit, or at the end for one still running (the next process of its pid rewrites them).
static void capture_jit(record_processes_t* s, const process_t* p) {
  if (s->jit == NULL || p->samples == 0) return;
  const char** paths = calloc(p->map_count + 1, sizeof(*paths));
  for (size_t i = 0; paths != NULL && i < p->map_count; i++) paths[i] = p->maps[i].path;
  zxs_jit_capture_process(s->jit, p->koid, p->pid, paths, paths != NULL ? p->map_count : 0);
  free(paths);
}

// A process object that will see no more samples (it exited, or exec replaced it).
static void process_done(process_t* p) {
  zxs_cfi_space_free(p->cfi);
  p->cfi = NULL;
}

static process_t* current_process(record_processes_t* s, uint32_t pid) {
  int64_t index = id_map_get(&s->pid_map, pid);
  if (index < 0) index = new_process(s, pid, NULL);
  return index < 0 ? NULL : &s->processes[index];
}

// The thread entry of `tid` in process `proc` (a new entry when the thread moved to another
// process object, i.e. after exec).
static thread_t* thread_in(record_processes_t* s, uint32_t tid, uint32_t proc) {
  int64_t index = id_map_get(&s->tid_map, tid);
  if (index >= 0 && s->threads[index].process == proc) return &s->threads[index];
  if (!zxs_array_grow((void**)&s->threads, &s->thread_cap, s->thread_count + 1,
                      sizeof(*s->threads))) {
    return NULL;
  }
  thread_t* t = &s->threads[s->thread_count];
  *t = (thread_t){.tid = tid, .process = proc, .pairs.fault_edge_ns = s->fault_edge_ns};
  // A thread that moved keeps its name; a new one is named like its process for now.
  memcpy(t->name, index >= 0 ? s->threads[index].name : s->processes[proc].name, sizeof(t->name));
  if (!id_map_put(&s->tid_map, tid, (uint32_t)s->thread_count)) return NULL;
  return &s->threads[s->thread_count++];
}

static bool process_is_empty(const process_t* p) { return p->map_count == 0 && p->samples == 0; }

// --- Records ----------------------------------------------------------------------------------

// The {pid, tid} of sample_id_all at the end of a non-sample record.
typedef struct record_id {
  uint32_t pid, tid;
  uint64_t time;
} record_id_t;

static bool trailer_id(const struct perf_event_header* h, size_t body, record_id_t* id) {
  // TID, TIME, CPU: 3 words at the end.
  if (h->size < sizeof(*h) + body + 24) return false;
  const uint8_t* end = (const uint8_t*)h + h->size;
  uint64_t w[3];
  memcpy(w, end - 24, sizeof(w));
  id->pid = (uint32_t)w[0];
  id->tid = (uint32_t)(w[0] >> 32);
  id->time = w[1];
  return true;
}

// The CFI address space of a process, remade when its mappings changed.
static zxs_cfi_space_t* process_space(record_processes_t* s, process_t* p) {
  if (p->cfi != NULL && p->cfi_maps == p->map_count) return p->cfi;
  zxs_cfi_space_free(p->cfi);
  p->cfi = NULL;
  zxs_cfi_mapping_t* mappings = malloc((p->map_count + 1) * sizeof(*mappings));
  if (mappings == NULL) return NULL;
  for (size_t i = 0; i < p->map_count; i++) {
    mappings[i] = (zxs_cfi_mapping_t){.path = p->maps[i].path,
                                      .start = p->maps[i].start,
                                      .pgoff = p->maps[i].pgoff,
                                      .len = p->maps[i].len};
  }
  p->cfi = zxs_cfi_space_new(s->unwinder, mappings, p->map_count);
  p->cfi_maps = p->map_count;
  free(mappings);
  return p->cfi;
}

// Walks the user stack of a sample into pcs[n..max): with CFI where the recording asked for
// it, else by frame pointers. `w` points at the sampled registers; *i moves past them and the
// stack copy.
static size_t walk_user(record_processes_t* s, process_t* p, const uint64_t* w, size_t words,
                        size_t* i, uint64_t* pcs, size_t n, bool* truncated) {
  const size_t nregs = s->unwinder != NULL ? ZXS_PERF_REG_DWARF_COUNT : ZXS_PERF_REG_COUNT;
  if (*i + nregs > words) return n;
  zxs_cfi_regs_t cfi;
  zxs_regs_t regs;
  if (s->unwinder != NULL) {
    zxs_perf_regs_to_dwarf(&w[*i], cfi.r);
    regs = (zxs_regs_t){.fp = cfi.r[ZXS_DWARF_REG_FP],
                        .sp = cfi.r[ZXS_DWARF_REG_SP],
                        .pc = cfi.r[ZXS_DWARF_REG_PC]};
  } else {
    regs = (zxs_regs_t){.fp = w[*i + ZXS_PERF_REG_FP],
                        .sp = w[*i + ZXS_PERF_REG_SP],
                        .pc = w[*i + ZXS_PERF_REG_PC]};
  }
  *i += nregs;
  const void* copy = NULL;
  size_t copied = 0;
  if (*i < words) {
    const uint64_t size = w[(*i)++];
    if (size > 0 && size % 8 == 0 && size / 8 < words - *i) {
      copy = &w[*i];
      copied = w[*i + size / 8];  // dyn_size: what the kernel could read
      if (copied > size) copied = 0;
      *i += size / 8 + 1;
    }
  }
  if (n >= MAX_FRAMES) {
    *truncated = true;
    return n;
  }
  bool cut = false;
  zxs_cfi_space_t* space = s->unwinder != NULL ? process_space(s, p) : NULL;
  if (space != NULL) {
    n += zxs_cfi_unwind(space, &cfi, copy, copied, pcs + n, MAX_FRAMES - n, &cut);
  } else {
    n += zxs_frame_walk_copy(&regs, 0, UINTPTR_MAX, copy, copied, pcs + n, MAX_FRAMES - n, &cut,
                             NULL);
  }
  *truncated = *truncated || cut;
  return n;
}

// Writes a sample of `n` PCs of thread `tid` of `p` to the spool and counts it. False when it
// could not be written (no memory, the spool's disk full).
static bool spool_sample(record_processes_t* s, process_t* p, uint32_t tid, uint64_t time,
                         const uint64_t* pcs, size_t n) {
  thread_t* t = thread_in(s, tid, (uint32_t)(p - s->processes));
  if (t == NULL) return false;
  zxs_fxt_buf_reset(&s->sample);
  zxs_fxt_large_blob_t blob = {.ticks = time,
                               .thread = {.process_koid = p->koid, .thread_koid = tid},
                               .payload = {.data = pcs, .size = n * 8}};
  if (zxs_fxt_write_large_blob(&s->sample, &blob, NULL, 0) != ZX_OK ||
      fwrite(s->sample.data, 1, s->sample.len, s->spool) != s->sample.len) {
    return false;
  }
  if (p->samples++ == 0) s->totals.processes++;
  if (t->samples++ == 0) s->totals.threads++;
  s->totals.samples++;
  return true;
}

static void on_sample(record_processes_t* s, const struct perf_event_header* h) {
  const size_t words = (h->size - sizeof(*h)) / 8;
  if (words < 3) return;
  // Read where it lies (the batch, or the ring; 8-aligned in both): a copy of a 32 KiB record
  // cost more than the walk.
  const uint64_t* w = (const uint64_t*)(const void*)(h + 1);
  const uint32_t pid = (uint32_t)w[0], tid = (uint32_t)(w[0] >> 32);
  const uint64_t time = w[1];
  size_t i = 3;  // pid/tid, time, cpu
  process_t* p = current_process(s, pid);
  if (p == NULL) return;
  uint64_t pcs[MAX_FRAMES];
  size_t n = 0;
  bool truncated = false;
  if (s->sample_type & PERF_SAMPLE_CALLCHAIN) {
    if (i >= words) return;
    uint64_t nr = w[i++];
    if (nr > words - i) return;
    for (uint64_t k = 0; k < nr; k++) {
      uint64_t pc = w[i + k];
      if (pc >= (uint64_t)PERF_CONTEXT_MAX) continue;  // context markers
      if (n < MAX_FRAMES) {
        pcs[n++] = pc;
        kernel_pc_add(s, pc);
      } else {
        truncated = true;
      }
    }
    i += nr;
  }
  if (i < words && w[i++] != PERF_SAMPLE_REGS_ABI_NONE) {
    n = walk_user(s, p, w, words, &i, pcs, n, &truncated);
  }
  if (n == 0) return;
  if (truncated) {  // marked at the root
    if (n == MAX_FRAMES) n--;
    pcs[n++] = ZXS_TRACE_TRUNCATED_PC;
  }
  if (spool_sample(s, p, tid, time, pcs, n)) s->totals.truncated += truncated;
}

// The PC sample of a record_processes_on_pc(): of the root only, from its exec on, when there
// is a root.
static void on_pc(record_processes_t* s, const struct perf_event_header* h) {
  pc_record_t r;
  memcpy(&r, h, sizeof(r));
  if (s->root != 0 && r.pid != s->root) {
    s->totals.pc_other_processes++;
    return;
  }
  const bool after_exec = (s->root_exec_ns != 0 && r.time >= s->root_exec_ns) ||
                          (s->pc_exec_ns != 0 && r.time >= s->pc_exec_ns);
  if (s->root != 0 && !after_exec) {
    s->totals.pc_before_exec++;
    return;
  }
  process_t* p = current_process(s, r.pid);
  if (p == NULL) return;
  if (r.header.misc != 0) kernel_pc_add(s, r.pc);
  spool_sample(s, p, r.tid, r.time, &r.pc, 1);
}

static void on_comm(record_processes_t* s, const struct perf_event_header* h) {
  const uint32_t* ids = (const uint32_t*)(h + 1);
  if (h->size < sizeof(*h) + 8 + 8 + 24) return;
  const uint32_t pid = ids[0], tid = ids[1];
  const char* comm = (const char*)(ids + 2);
  const size_t max = h->size - sizeof(*h) - 8 - 24;
  process_t* p = current_process(s, pid);
  if (p == NULL) return;
  if (h->misc & PERF_RECORD_MISC_COMM_EXEC) {
    record_id_t id;
    if (pid == s->root && s->root_exec_ns == 0 && trailer_id(h, 0, &id)) s->root_exec_ns = id.time;
    // A new image: a new process object, unless the one before never had a name or a mapping
    // (samples of the exec itself, between the events' enabling and this record: they stay,
    // with the image they started).
    if (!process_is_empty(p) && !(p->map_count == 0 && p->name[0] == '\0')) {
      process_done(p);
      int64_t index = new_process(s, pid, NULL);
      if (index < 0) return;
      p = &s->processes[index];
    } else {
      p->map_count = 0;
    }
    copy_comm(p->name, comm, max);
  }
  thread_t* t = thread_in(s, tid, (uint32_t)(p - s->processes));
  if (t != NULL) copy_comm(t->name, comm, max);
}

static void on_fork(record_processes_t* s, const struct perf_event_header* h) {
  if (h->size < sizeof(*h) + 24) return;
  const uint32_t* ids = (const uint32_t*)(h + 1);
  const uint32_t pid = ids[0], ppid = ids[1], tid = ids[2], ptid = ids[3];
  if (h->type == PERF_RECORD_EXIT) {
    int64_t thread = id_map_get(&s->tid_map, tid);
    if (thread >= 0) s->threads[thread].exited = true;
    if (pid == tid) {
      int64_t index = id_map_get(&s->pid_map, pid);
      if (index >= 0) {
        s->processes[index].exited = true;
        process_done(&s->processes[index]);
        capture_jit(s, &s->processes[index]);
      }
    }
    return;
  }
  process_t* parent = current_process(s, ppid);
  if (parent == NULL) return;
  size_t parent_index = (size_t)(parent - s->processes);
  if (pid == ppid) {  // a new thread, named like the one that made it
    int64_t maker = id_map_get(&s->tid_map, ptid);
    thread_t* t = thread_in(s, tid, (uint32_t)parent_index);
    if (t != NULL && maker >= 0) memcpy(t->name, s->threads[maker].name, sizeof(t->name));
    return;
  }
  int64_t existing = id_map_get(&s->pid_map, pid);
  if (!s->follow_children) {
    s->totals.children_not_followed++;
    return;
  }
  // An empty entry was made early by a record of the child that sorted first: fill it.
  if (existing < 0 || !process_is_empty(&s->processes[existing]) || s->processes[existing].exited) {
    existing = new_process(s, pid, NULL);
  }
  if (existing < 0) return;
  // new_process() may have moved the array.
  process_t* child = &s->processes[existing];
  parent = &s->processes[parent_index];
  memcpy(child->name, parent->name, sizeof(child->name));
  for (size_t i = 0; i < parent->map_count; i++) {
    if (!add_mapping(child, &parent->maps[i])) break;
  }
  thread_in(s, tid, (uint32_t)existing);
}

static void on_mmap2(record_processes_t* s, const struct perf_event_header* h) {
  // pid, tid, addr, len, pgoff, {maj, min, ino, ino_gen | build ID}, prot, flags, filename.
  enum { FIXED = 8 + 24 + 24 + 8 };
  if (h->size < sizeof(*h) + FIXED + 24) return;
  const uint8_t* b = (const uint8_t*)(h + 1);
  uint32_t pid, prot;
  uint64_t range[3];
  memcpy(&pid, b, 4);
  memcpy(range, b + 8, sizeof(range));
  memcpy(&prot, b + 56, 4);
  const char* name = (const char*)(b + FIXED);
  size_t max = h->size - sizeof(*h) - FIXED - 24;
  if (!(prot & PROT_EXEC) || strnlen(name, max) == max ||
      (name[0] != '/' && strcmp(name, ZXS_TRACE_VDSO_PATH) != 0)) {
    return;
  }
  mapping_t m = {
      .start = range[0], .len = range[1], .pgoff = range[2], .prot = prot, .path = (char*)name};
  if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
    m.build_id_size = b[32] <= 20 ? b[32] : 0;
    memcpy(m.build_id, b + 36, m.build_id_size);
  }
  process_t* p = current_process(s, pid);
  if (p != NULL) add_mapping(p, &m);
}

// --- Task runtime -------------------------------------------------------------------------------

static id_sum_t* read_sum(record_processes_t* s, uint64_t id, bool add) {
  for (size_t i = 0; i < s->read_sum_count; i++) {
    if (s->read_sums[i].id == id) return &s->read_sums[i];
  }
  if (!add || !zxs_array_grow((void**)&s->read_sums, &s->read_sum_cap, s->read_sum_count + 1,
                              sizeof(*s->read_sums))) {
    return NULL;
  }
  s->read_sums[s->read_sum_count] = (id_sum_t){.id = id};
  return &s->read_sums[s->read_sum_count++];
}

// An inherited thread's task-clock count on one CPU, as it exited: {pid, tid, value, id}.
static void on_read(record_processes_t* s, const struct perf_event_header* h) {
  if (!s->runtime || h->size < sizeof(*h) + 24) return;
  const uint8_t* b = (const uint8_t*)(h + 1);
  uint32_t ids[2];
  uint64_t value[2];
  memcpy(ids, b, sizeof(ids));
  memcpy(value, b + 8, sizeof(value));
  process_t* p = current_process(s, ids[0]);
  if (p == NULL) return;
  thread_t* t = thread_in(s, ids[1], (uint32_t)(p - s->processes));
  if (t == NULL) return;
  t->read_seen = true;
  t->read_cpu += value[0];
  id_sum_t* sum = read_sum(s, value[1], true);
  if (sum != NULL) sum->sum += value[0];
}

// The kind (RECORD_RT_*) of runtime event `id`, or -1 when it is none of ours.
static int runtime_kind(const record_processes_t* s, uint64_t id) {
  const size_t at = zxs_sorted_count_at_or_below(s->rt_ids, s->rt_count, sizeof(*s->rt_ids), 0, id);
  return at > 0 && s->rt_ids[at - 1] == id ? s->rt_kinds[at - 1] : -1;
}

// A record of the runtime rings: {id, pid|tid, time[, u32 size, raw]}, or a loss.
static void on_runtime_record(record_processes_t* s, const struct perf_event_header* h) {
  const size_t words = (h->size - sizeof(*h)) / 8;
  const uint64_t* w = (const uint64_t*)(const void*)(h + 1);
  if (h->type == PERF_RECORD_LOST) {
    if (words >= 2) s->rt_lost += w[1];
    return;
  }
  if (h->type != PERF_RECORD_SAMPLE || words < 3) return;
  const int kind = runtime_kind(s, w[0]);
  const uint32_t pid = (uint32_t)w[1], tid = (uint32_t)(w[1] >> 32);
  const uint64_t time = w[2];
  process_t* p = current_process(s, pid);
  if (kind < 0 || p == NULL) return;
  thread_t* t = thread_in(s, tid, (uint32_t)(p - s->processes));
  if (t == NULL) return;
  const uint8_t* raw = NULL;
  size_t raw_size = 0;
  if (words >= 4) {
    uint32_t size;
    memcpy(&size, &w[3], sizeof(size));
    if ((size_t)size + 4 <= (words - 3) * 8) {
      raw = (const uint8_t*)&w[3] + 4;
      raw_size = size;
    }
  }
  switch (kind) {
    case RECORD_RT_FAULT_BEGIN:
      zxs_rt_pairs_fault_begin(&t->pairs, time);
      break;
    case RECORD_RT_FAULT_END:
      zxs_rt_pairs_fault_end(&t->pairs, time);
      break;
    case RECORD_RT_LOCK_BEGIN:
      zxs_rt_pairs_lock_begin(&t->pairs, &s->lock_begin, time, raw, raw_size);
      break;
    case RECORD_RT_LOCK_END:
      zxs_rt_pairs_lock_end(&t->pairs, &s->lock_end, time, raw, raw_size);
      break;
    default:
      break;
  }
}

void record_processes_set_runtime(record_processes_t* s, uint32_t fields, const char* missing,
                                  const uint64_t* ids, const int* kinds, size_t count) {
  s->runtime = true;
  s->rt_fields = ZXS_TASK_RUNTIME_CPU_TIME | ZXS_TASK_RUNTIME_QUEUE_TIME | fields;
  snprintf(s->rt_missing, sizeof(s->rt_missing), "%s", missing != NULL ? missing : "");
  zxs_rt_lock_tracepoints(&s->lock_begin, &s->lock_end);
  if (fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) s->fault_edge_ns = zxs_rt_fault_edge_ns();
  free(s->rt_ids);
  free(s->rt_kinds);
  s->rt_ids = malloc((count + 1) * sizeof(*s->rt_ids));
  s->rt_kinds = malloc((count + 1) * sizeof(*s->rt_kinds));
  s->rt_count = 0;
  if (s->rt_ids == NULL || s->rt_kinds == NULL) return;
  // Insertion by id (a few per CPU and thread attached).
  for (size_t i = 0; i < count; i++) {
    size_t at = s->rt_count;
    while (at > 0 && s->rt_ids[at - 1] > ids[i]) {
      s->rt_ids[at] = s->rt_ids[at - 1];
      s->rt_kinds[at] = s->rt_kinds[at - 1];
      at--;
    }
    s->rt_ids[at] = ids[i];
    s->rt_kinds[at] = kinds[i];
    s->rt_count++;
  }
}

static uint64_t monotonic_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

// Reads the schedstat of one live thread (its current entry).
static void read_thread_schedstat(record_processes_t* s, thread_t* t) {
  int64_t run, delay;
  if (!zxs_rt_read_schedstat((pid_t)s->processes[t->process].pid, (pid_t)t->tid, &run, &delay)) {
    return;
  }
  // A tid reused by a new thread of the same process starts again from 0: not this one.
  if (t->sched_seen && (run < t->sched_run || delay < t->sched_delay)) return;
  t->sched_seen = true;
  t->sched_run = run;
  t->sched_delay = delay;
}

static void read_schedstat(record_processes_t* s, bool now) {
  if (!s->runtime) return;
  const uint64_t ms = monotonic_ms();
  if (!now && ms - s->schedstat_ms < SCHEDSTAT_MS) return;
  s->schedstat_ms = ms;
  for (size_t i = 0; i < s->thread_count; i++) {
    thread_t* t = &s->threads[i];
    if (t->exited || id_map_get(&s->tid_map, t->tid) != (int64_t)i) continue;
    read_thread_schedstat(s, t);
  }
}

void record_processes_read_schedstat(record_processes_t* s, bool now) {
  if (!s->worker.running) read_schedstat(s, now);
}

void record_processes_on_count(void* self, pid_t tid, uint64_t id, uint64_t value) {
  record_processes_t* s = self;
  int64_t index = id_map_get(&s->tid_map, (uint32_t)tid);
  if (!s->runtime || index < 0) return;
  const id_sum_t* children = read_sum(s, id, false);
  const uint64_t inherited = children != NULL ? children->sum : 0;
  thread_t* t = &s->threads[index];
  t->count_seen = true;
  t->count_cpu += value > inherited ? value - inherited : 0;
}

static void handle(record_processes_t* s, const struct perf_event_header* h) {
  switch (h->type) {
    case PERF_RECORD_SAMPLE:
      on_sample(s, h);
      break;
    case PERF_RECORD_COMM:
      on_comm(s, h);
      break;
    case PERF_RECORD_FORK:
    case PERF_RECORD_EXIT:
      on_fork(s, h);
      break;
    case PERF_RECORD_MMAP2:
      on_mmap2(s, h);
      break;
    case PERF_RECORD_READ:
      on_read(s, h);
      break;
    case RECORD_PC:
      on_pc(s, h);
      break;
    case PERF_RECORD_LOST:
      if (h->size >= sizeof(*h) + 16) {
        uint64_t lost;
        memcpy(&lost, (const uint8_t*)(h + 1) + 8, 8);
        s->totals.lost += lost;
      }
      break;
    case PERF_RECORD_LOST_SAMPLES:
      if (h->size >= sizeof(*h) + 8) {
        uint64_t lost;
        memcpy(&lost, h + 1, 8);
        s->totals.lost += lost;
      }
      break;
    default:
      break;
  }
}

static int compare_entries(const void* a, const void* b) {
  const batch_entry_t* x = a;
  const batch_entry_t* y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

// Handles the records of `b` in time order, and empties it.
static void handle_batch(record_processes_t* s, batch_t* b) {
  if (b->count > 1) qsort(b->entries, b->count, sizeof(*b->entries), compare_entries);
  for (size_t i = 0; i < b->count; i++) {
    const struct perf_event_header* h =
        (const struct perf_event_header*)(b->bytes + b->entries[i].offset);
    if (b->entries[i].runtime) {
      on_runtime_record(s, h);
    } else {
      handle(s, h);
    }
  }
  b->count = 0;
  b->len = 0;
}

static void batch_free(batch_t* b) {
  free(b->bytes);
  free(b->entries);
}

// --- The worker -------------------------------------------------------------------------------

static void* worker_main(void* arg) {
  record_processes_t* s = arg;
  worker_t* w = &s->worker;
  pthread_mutex_lock(&w->lock);
  for (;;) {
    while (!w->handed && !w->stopping) pthread_cond_wait(&w->cond, &w->lock);
    if (!w->handed) break;  // stopping, and nothing left
    pthread_mutex_unlock(&w->lock);
    handle_batch(s, &w->ready);
    read_schedstat(s, false);
    pthread_mutex_lock(&w->lock);
    w->handed = false;
    pthread_cond_broadcast(&w->cond);
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

// Waits until the worker has handled what it was handed: it touches nothing until handed more.
static void worker_wait_idle(worker_t* w) {
  pthread_mutex_lock(&w->lock);
  while (w->handed) pthread_cond_wait(&w->cond, &w->lock);
  pthread_mutex_unlock(&w->lock);
}

bool record_processes_start_worker(record_processes_t* s) {
  worker_t* w = &s->worker;
  if (w->running || s->pcs) return w->running;
  // Signals for the recorder go to the thread that drains, which acts on them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  w->running = pthread_create(&w->thread, NULL, worker_main, s) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return w->running;
}

void record_processes_stop_worker(record_processes_t* s) {
  worker_t* w = &s->worker;
  if (!w->running) return;
  pthread_mutex_lock(&w->lock);
  w->stopping = true;
  pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  w->running = false;
  w->stopping = false;
}

void record_processes_flush(record_processes_t* s) {
  worker_t* w = &s->worker;
  if (!w->running) {
    handle_batch(s, &s->fill);
    return;
  }
  pthread_mutex_lock(&w->lock);
  while (w->handed && s->fill.len >= FILL_LIMIT) pthread_cond_wait(&w->cond, &w->lock);
  if (!w->handed) {
    // The worker's emptied batch comes back to be filled: its memory is kept.
    const batch_t handled = w->ready;
    w->ready = s->fill;
    s->fill = handled;
    w->handed = true;
    pthread_cond_broadcast(&w->cond);
  }
  pthread_mutex_unlock(&w->lock);
}

// The word index, in a sample's body, of its stack copy's size (PERF_SAMPLE_STACK_USER), or 0
// when it has none. The kernel reserves the whole requested copy in each record and fills
// dyn_size bytes of it: a thread a few frames deep fills a few KiB of the default 32.
static size_t stack_size_word(const record_processes_t* s, const uint64_t* w, size_t words) {
  if ((s->sample_type & PERF_SAMPLE_STACK_USER) == 0) return 0;
  size_t i = 3;  // pid/tid, time, cpu
  if (s->sample_type & PERF_SAMPLE_CALLCHAIN) {
    if (i >= words || w[i] > words - i - 1) return 0;
    i += 1 + w[i];
  }
  if (i >= words) return 0;
  if (w[i++] != PERF_SAMPLE_REGS_ABI_NONE) {
    i += s->unwinder != NULL ? ZXS_PERF_REG_DWARF_COUNT : ZXS_PERF_REG_COUNT;
  }
  return i < words ? i : 0;
}

// Copies sample `h` into `out` (room for h->size bytes) with its stack copy cut to the bytes
// the kernel filled; returns the new size. Records of any other shape are copied as they are.
static size_t compact_sample(const record_processes_t* s, const struct perf_event_header* h,
                             uint8_t* out) {
  const uint64_t* w = (const uint64_t*)(const void*)(h + 1);
  const size_t words = (h->size - sizeof(*h)) / 8;
  const size_t at = stack_size_word(s, w, words);
  const uint64_t size = at != 0 ? w[at] : 0;
  if (size == 0 || size % 8 != 0 || size / 8 >= words - at) {
    memcpy(out, h, h->size);
    return h->size;
  }
  const uint64_t dyn = w[at + 1 + size / 8];
  const uint64_t kept = dyn <= size ? (dyn + 7) & ~(uint64_t)7 : size;
  const size_t tail = words - (at + 1 + size / 8);  // dyn_size and anything after it
  uint8_t* o = out;
  memcpy(o, h, sizeof(*h) + at * 8);
  o += sizeof(*h) + at * 8;
  memcpy(o, &kept, 8);
  memcpy(o + 8, &w[at + 1], kept);
  memcpy(o + 8 + kept, &w[at + 1 + size / 8], tail * 8);
  const size_t total = sizeof(*h) + (at + 1 + tail) * 8 + kept;
  struct perf_event_header nh = *h;
  nh.size = (uint16_t)total;
  memcpy(out, &nh, sizeof(nh));
  return total;
}

static void add_to_batch(record_processes_t* s, const struct perf_event_header* h, uint64_t time,
                         bool runtime) {
  batch_t* b = &s->fill;
  if (b->len + h->size > BATCH_LIMIT && !s->pcs) record_processes_flush(s);
  size_t size = (h->size + 7u) & ~7u;
  if (!zxs_array_grow((void**)&b->bytes, &b->cap, b->len + size, 1) ||
      !zxs_array_grow((void**)&b->entries, &b->entry_cap, b->count + 1, sizeof(*b->entries))) {
    // No memory to sort: handle in ring order, here once the worker is idle.
    if (s->worker.running) worker_wait_idle(&s->worker);
    if (runtime) {
      on_runtime_record(s, h);
    } else {
      handle(s, h);
    }
    return;
  }
  if (h->type == PERF_RECORD_SAMPLE && !runtime && h->size % 8 == 0) {
    size = compact_sample(s, h, b->bytes + b->len);
  } else {
    memcpy(b->bytes + b->len, h, h->size);
  }
  b->entries[b->count] =
      (batch_entry_t){.time = time, .offset = b->len, .seq = b->count, .runtime = runtime};
  b->count++;
  b->len += size;
}

void record_processes_on_record(void* self, const struct perf_event_header* h) {
  record_processes_t* s = self;
  uint64_t time = 0;
  if (h->type == PERF_RECORD_SAMPLE) {
    if (h->size >= sizeof(*h) + 16) memcpy(&time, (const uint8_t*)(h + 1) + 8, 8);
  } else {
    record_id_t id;
    if (trailer_id(h, 0, &id)) time = id.time;
  }
  add_to_batch(s, h, time, false);
}

void record_processes_expect_pcs(record_processes_t* s, uint64_t exec_ns) {
  s->pcs = true;
  s->pc_exec_ns = exec_ns;
}

void record_processes_on_pc(record_processes_t* s, uint64_t time_ns, uint32_t pid, uint32_t tid,
                            uint64_t pc, bool kernel_pc) {
  const pc_record_t r = {.header = {.type = RECORD_PC, .misc = kernel_pc, .size = sizeof(r)},
                         .pid = pid,
                         .tid = tid,
                         .time = time_ns,
                         .pc = pc};
  add_to_batch(s, &r.header, time_ns, false);
}

void record_processes_on_runtime_record(void* self, const struct perf_event_header* h) {
  record_processes_t* s = self;
  uint64_t time = 0;  // {id, pid|tid, time}; losses first
  if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 24) {
    memcpy(&time, (const uint8_t*)(h + 1) + 16, 8);
  }
  add_to_batch(s, h, time, true);
}

// --- A running process ------------------------------------------------------------------------

static void read_comm(const char* path, char* out) {
  FILE* f = fopen(path, "re");
  out[0] = '\0';
  if (f == NULL) return;
  if (fgets(out, COMM_MAX + 1, f) != NULL) out[strcspn(out, "\n")] = '\0';
  fclose(f);
}

// The executable file mappings /proc/PID/maps lists now, in place of `p`'s (kept when it lists
// none: a zombie's, or one gone).
static void read_maps(process_t* p, pid_t pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
  FILE* f = fopen(path, "re");
  char line[4096 + 128];
  process_t fresh = {0};
  while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
    unsigned long long start, end, offset;
    char perms[8];
    int name_at = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &name_at) < 4 ||
        name_at == 0 || perms[2] != 'x' || line[name_at] != '/') {
      continue;
    }
    line[strcspn(line, "\n")] = '\0';
    mapping_t m = {.start = start,
                   .len = end - start,
                   .pgoff = offset,
                   .prot = PROT_READ | PROT_EXEC,
                   .path = line + name_at};
    add_mapping(&fresh, &m);
  }
  if (f != NULL) fclose(f);
  if (fresh.map_count == 0) return;
  for (size_t i = 0; i < p->map_count; i++) free(p->maps[i].path);
  free(p->maps);
  p->maps = fresh.maps;
  p->map_count = fresh.map_count;
  p->map_cap = fresh.map_cap;
  p->cfi_maps = SIZE_MAX;  // its CFI space is remade
}

void record_processes_add_running(record_processes_t* s, pid_t pid) {
  process_t* p = current_process(s, (uint32_t)pid);
  if (p == NULL) return;
  const uint32_t proc = (uint32_t)(p - s->processes);
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
  read_comm(path, p->name);
  read_maps(p, pid);
  // Threads, with their names.
  snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
  DIR* dir = opendir(path);
  for (struct dirent* e; dir != NULL && (e = readdir(dir)) != NULL;) {
    if (!isdigit((unsigned char)e->d_name[0])) continue;
    uint32_t tid = (uint32_t)atoi(e->d_name);
    thread_t* t = thread_in(s, tid, proc);
    char comm_path[96];
    snprintf(comm_path, sizeof(comm_path), "/proc/%d/task/%u/comm", (int)pid, tid);
    if (t != NULL) read_comm(comm_path, t->name);
    // What it ran and waited before the recording is not the recording's.
    if (t != NULL && !t->sched_seen &&
        zxs_rt_read_schedstat(pid, (pid_t)tid, &t->base_run, &t->base_delay)) {
      t->sched_seen = true;
      t->sched_run = t->base_run;
      t->sched_delay = t->base_delay;
    }
  }
  if (dir != NULL) closedir(dir);
}

// --- The trace file ---------------------------------------------------------------------------

static zxs_fxt_str_ref_t str(const char* s) { return zxs_fxt_str_inline(s, strlen(s)); }

// What the trace needs of one module file, read once for every process that mapped it.
typedef struct module_file {
  char* path;
  bool ok;  // an ELF file; its module ID (build ID, else derived: modules.h)
  uint8_t build_id[ZXS_BUILD_ID_MAX];
  size_t build_id_size;
  zxs_segment_t* segments;
  size_t segment_count;
} module_file_t;

typedef struct module_files {
  module_file_t* files;
  size_t count, cap;
} module_files_t;

static const module_file_t* module_file(module_files_t* cache, const char* path) {
  for (size_t i = 0; i < cache->count; i++) {
    if (strcmp(cache->files[i].path, path) == 0) return &cache->files[i];
  }
  if (!zxs_array_grow((void**)&cache->files, &cache->cap, cache->count + 1,
                      sizeof(*cache->files))) {
    return NULL;
  }
  module_file_t* f = &cache->files[cache->count];
  *f = (module_file_t){.path = strdup(path)};
  if (f->path == NULL) return NULL;
  cache->count++;
  zxs_elf_t* elf = NULL;
  const uint8_t* id = NULL;
  const zxs_segment_t* segs = NULL;
  // The vDSO has no file: ours is the one the kernel maps into every process.
  const bool vdso = strcmp(path, ZXS_TRACE_VDSO_PATH) == 0;
  zx_status_t opened = ZX_ERR_NOT_FOUND;
  if (vdso) {
    void* image;
    size_t size;
    if (zxs_modules_vdso_self(&image, &size) == ZX_OK) {
      opened = zxs_elf_open_memory(image, size, &elf);
      free(image);
    }
  } else {
    opened = zxs_elf_open(path, &elf);
  }
  if (opened == ZX_OK && zxs_elf_module_id(elf, &id, &f->build_id_size) == ZX_OK &&
      zxs_elf_load_segments(elf, &segs, &f->segment_count) == ZX_OK && f->segment_count > 0 &&
      (f->segments = malloc(f->segment_count * sizeof(*segs))) != NULL) {
    memcpy(f->build_id, id, f->build_id_size);
    memcpy(f->segments, segs, f->segment_count * sizeof(*segs));
    f->ok = true;
  }
  zxs_elf_close(elf);
  return f;
}

static void module_files_free(module_files_t* cache) {
  for (size_t i = 0; i < cache->count; i++) {
    free(cache->files[i].path);
    free(cache->files[i].segments);
  }
  free(cache->files);
}

// Appends a module of file `f` (a copy of its ID and `count` segments) at `load_bias`.
static zx_status_t append_module(zxs_module_list_t* out, const module_file_t* f, const char* path,
                                 zxs_module_kind_t kind, uint64_t load_bias,
                                 const zxs_segment_t* segments, size_t count) {
  zxs_module_t* grown = realloc(out->modules, (out->count + 1) * sizeof(*grown));
  if (grown != NULL) out->modules = grown;
  zxs_segment_t* copy = malloc(count * sizeof(*copy));
  char* name = strdup(path);
  if (grown == NULL || copy == NULL || name == NULL) {
    free(copy);
    free(name);
    return ZX_ERR_NO_MEMORY;
  }
  memcpy(copy, segments, count * sizeof(*copy));
  zxs_module_t* mod = &out->modules[out->count++];
  *mod = (zxs_module_t){.path = name,
                        .kind = kind,
                        .build_id_size = f->build_id_size,
                        .load_bias = load_bias,
                        .segments = copy,
                        .segment_count = count};
  memcpy(mod->build_id, f->build_id, f->build_id_size);
  return ZX_OK;
}

// A mapping of file `f` away from where the module `mod` of the file has that offset becomes a
// module of its own (zxs_segment_remapped).
static zx_status_t add_remapped(zxs_module_list_t* out, size_t mod, const module_file_t* f,
                                const mapping_t* m) {
  zxs_segment_t piece;
  if (!zxs_segment_remapped(f->segments, f->segment_count, m->pgoff, m->len,
                            ((m->prot & PROT_READ) ? ZXS_SEGMENT_R : 0) |
                                ((m->prot & PROT_WRITE) ? ZXS_SEGMENT_W : 0) |
                                ((m->prot & PROT_EXEC) ? ZXS_SEGMENT_X : 0),
                            &piece)) {
    return ZX_OK;
  }
  if (out->modules[mod].load_bias + piece.vaddr == m->start) return ZX_OK;
  for (size_t k = mod + 1; k < out->count; k++) {
    if (out->modules[k].load_bias + out->modules[k].segments[0].vaddr == m->start) return ZX_OK;
  }
  return append_module(out, f, m->path, ZXS_MODULE_SHARED, m->start - piece.vaddr, &piece, 1);
}

// Module list of one process from its executable mappings: each file's PT_LOAD segments, placed
// by the mapping of the lowest file offset (load bias = start + p_offset - pgoff - p_vaddr),
// then one module per mapping of the file elsewhere (add_remapped). A file replaced since it
// was mapped (another build ID) is left out rather than misnamed.
static zx_status_t process_modules(const process_t* p, module_files_t* cache,
                                   zxs_module_list_t* out) {
  memset(out, 0, sizeof(*out));
  zx_status_t status = ZX_OK;
  for (size_t i = 0; i < p->map_count && status == ZX_OK; i++) {
    const mapping_t* m = &p->maps[i];
    bool seen = false;
    for (size_t k = 0; k < i && !seen; k++) {
      seen = strcmp(p->maps[k].path, m->path) == 0;
    }
    if (seen) continue;
    const mapping_t* first = m;  // the file's lowest mapping (the order of mmap calls varies)
    for (size_t j = i + 1; j < p->map_count; j++) {
      if (strcmp(p->maps[j].path, m->path) == 0 && p->maps[j].pgoff < first->pgoff) {
        first = &p->maps[j];
      }
    }
    const module_file_t* f = module_file(cache, m->path);
    if (f == NULL) return ZX_ERR_NO_MEMORY;
    const zxs_segment_t* anchor =
        f->ok ? zxs_segment_at_page(f->segments, f->segment_count, first->pgoff) : NULL;
    if (anchor == NULL || (first->build_id_size > 0 &&
                           (f->build_id_size != first->build_id_size ||
                            memcmp(f->build_id, first->build_id, f->build_id_size) != 0))) {
      continue;
    }
    const size_t mod = out->count;
    status = append_module(out, f, m->path,
                           strcmp(m->path, ZXS_TRACE_VDSO_PATH) == 0 ? ZXS_MODULE_VDSO
                           : mod == 0                                ? ZXS_MODULE_MAIN
                                                                     : ZXS_MODULE_SHARED,
                           first->start + anchor->offset - first->pgoff - anchor->vaddr,
                           f->segments, f->segment_count);
    for (size_t j = i; j < p->map_count && status == ZX_OK; j++) {
      if (strcmp(p->maps[j].path, m->path) == 0) status = add_remapped(out, mod, f, &p->maps[j]);
    }
  }
  return status;
}

static zx_status_t write_process_modules(zxs_fxt_buf_t* buf, const process_t* p,
                                         module_files_t* cache) {
  zxs_module_list_t modules;
  zx_status_t status = process_modules(p, cache, &modules);
  char* text = NULL;
  size_t size = 0;
  if (status == ZX_OK) status = zxs_trace_modules_payload(&modules, &text, &size);
  if (status == ZX_OK) {
    zxs_fxt_large_blob_t blob = {.category = str(ZXS_TRACE_CATEGORY),
                                 .name = str(ZXS_TRACE_MODULES_NAME),
                                 .thread = {.process_koid = p->koid},
                                 .payload = {.data = text, .size = size}};
    status = zxs_fxt_write_large_blob(buf, &blob, NULL, 0);
  }
  free(text);
  zxs_modules_free(&modules);
  return status;
}

static int compare_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

// The kernel functions that hold the sampled kernel PCs, from /proc/kallsyms, as lines
// "START END NAME" (hex). Nothing when the kernel hides its addresses.
static zx_status_t write_kernel_symbols(zxs_fxt_buf_t* buf, record_processes_t* s) {
  if (s->kernel_pcs.used == 0) return ZX_OK;
  uint64_t* pcs = malloc(s->kernel_pcs.used * sizeof(*pcs));
  if (pcs == NULL) return ZX_ERR_NO_MEMORY;
  size_t n = 0;
  for (size_t i = 0; i < s->kernel_pcs.size; i++) {
    if (zxs_u64_map_key_at(&s->kernel_pcs, i, &pcs[n])) n++;
  }
  if (n > 1) qsort(pcs, n, sizeof(*pcs), compare_u64);
  // Text symbols, sorted by address.
  typedef struct {
    uint64_t addr;
    char* name;
  } ksym_t;
  ksym_t* syms = NULL;
  size_t count = 0, cap = 0;
  FILE* f = fopen("/proc/kallsyms", "re");
  char line[512];
  while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
    unsigned long long addr;
    char type, name[256];
    if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || addr == 0) continue;
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    if (!zxs_array_grow((void**)&syms, &cap, count + 1, sizeof(*syms))) break;
    if ((syms[count].name = strdup(name)) == NULL) break;
    syms[count++].addr = addr;
  }
  if (f != NULL) fclose(f);
  // kallsyms is sorted by address within the core kernel but not across modules.
  for (size_t i = 1; i < count; i++) {
    if (syms[i].addr < syms[i - 1].addr) {
      qsort(syms, count, sizeof(*syms), compare_u64);
      break;
    }
  }
  char* text = NULL;
  size_t size = 0;
  FILE* mem = open_memstream(&text, &size);
  zx_status_t status = mem != NULL ? ZX_OK : ZX_ERR_NO_MEMORY;
  size_t last = SIZE_MAX;
  for (size_t i = 0, k = 0; mem != NULL && i < n; i++) {
    while (k + 1 < count && syms[k + 1].addr <= pcs[i]) k++;
    if (count == 0 || syms[k].addr > pcs[i] || k == last) continue;
    uint64_t end = k + 1 < count ? syms[k + 1].addr : syms[k].addr + 4096;
    fprintf(mem, "%llx %llx %s\n", (unsigned long long)syms[k].addr, (unsigned long long)end,
            syms[k].name);
    last = k;
  }
  if (mem != NULL) fclose(mem);
  if (status == ZX_OK && size > 0) {
    zxs_fxt_large_blob_t blob = {.category = str(ZXS_TRACE_CATEGORY),
                                 .name = str(ZXS_TRACE_KERNEL_SYMBOLS_NAME),
                                 .payload = {.data = text, .size = size}};
    status = zxs_fxt_write_attachment(buf, &blob);
  }
  free(text);
  for (size_t i = 0; i < count; i++) free(syms[i].name);
  free(syms);
  free(pcs);
  return status;
}

// The names of ZXS_TASK_RUNTIME_* fields in `fields`, separated by spaces.
static void runtime_field_names(uint32_t fields, char* out, size_t size) {
  out[0] = '\0';
  for (uint32_t bit = 0; bit < ZXS_TRACE_RUNTIME_FIELD_COUNT; bit++) {
    if ((fields & (1u << bit)) == 0) continue;
    const size_t used = strlen(out);
    snprintf(out + used, size - used, "%s%s", used > 0 ? " " : "",
             zxs_trace_runtime_field_name(bit));
  }
}

static void write_process(zxs_fxt_buf_t* buf, const record_processes_t* s, const process_t* p,
                          uint64_t period_ns, uint64_t threads_not_attached) {
  zxs_fxt_arg_t args[9];
  char fields[96];
  size_t n = 0;
  args[n++] = (zxs_fxt_arg_t){
      .type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_PERIOD_ARG), .u64 = period_ns};
  args[n++] =
      (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_PID_ARG), .u64 = p->pid};
  args[n++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_STRING,
                              .name = str(ZXS_TRACE_SAMPLED_ARG),
                              .str = str(s->kernel ? "user+kernel" : "user")};
  if (p->koid == s->root) {  // what the whole recording lost, on its first process
    args[n++] = (zxs_fxt_arg_t){
        .type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_LOST_ARG), .u64 = s->totals.lost};
    args[n++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_UINT64,
                                .name = str(ZXS_TRACE_CHILDREN_NOT_FOLLOWED_ARG),
                                .u64 = s->totals.children_not_followed};
    args[n++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_UINT64,
                                .name = str(ZXS_TRACE_THREADS_NOT_ATTACHED_ARG),
                                .u64 = threads_not_attached};
    if (s->runtime) {
      runtime_field_names(s->rt_fields, fields, sizeof(fields));
      args[n++] = (zxs_fxt_arg_t){
          .type = ZXS_FXT_ARG_STRING, .name = str(ZXS_TRACE_RUNTIME_ARG), .str = str(fields)};
      if (s->rt_missing[0] != '\0') {
        args[n++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_STRING,
                                    .name = str(ZXS_TRACE_RUNTIME_MISSING_ARG),
                                    .str = str(s->rt_missing)};
      }
      args[n++] = (zxs_fxt_arg_t){
          .type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_RUNTIME_LOST_ARG), .u64 = s->rt_lost};
    }
  }
  zxs_fxt_kernel_object_t object = {
      .obj_type = ZX_OBJ_TYPE_PROCESS, .koid = p->koid, .name = str(p->name)};
  zxs_fxt_write_kernel_object(buf, &object, args, n);
}

// The arguments of a thread's record: its process, then its task runtime (the fields measured
// for it). Returns how many.
static size_t thread_args(const record_processes_t* s, const thread_t* t, zxs_fxt_arg_t* args) {
  size_t n = 0;
  args[n++] = (zxs_fxt_arg_t){
      .type = ZXS_FXT_ARG_KOID, .name = str("process"), .koid = s->processes[t->process].koid};
  if (!s->runtime) return n;
  // CPU time: the task-clock count at its exit (or our event's count), which includes the time
  // after the last schedstat read; but where schedstat's sum is larger, that one. (On Linux 6.18
  // a thread's inherited count was seen to come short by up to a third when perf swapped the
  // contexts of two threads of a process that ran on the same CPUs by turns.)
  bool cpu_known = t->read_seen || t->count_seen || t->sched_seen;
  uint64_t cpu = t->read_seen ? t->read_cpu : t->count_seen ? t->count_cpu : 0;
  if (t->sched_seen && (uint64_t)(t->sched_run - t->base_run) > cpu) {
    cpu = (uint64_t)(t->sched_run - t->base_run);
  }
  if (cpu_known) {
    args[n++] = (zxs_fxt_arg_t){
        .type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_CPU_TIME_ARG), .u64 = cpu};
  }
  if (t->sched_seen) {
    args[n++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_UINT64,
                                .name = str(ZXS_TRACE_QUEUE_TIME_ARG),
                                .u64 = (uint64_t)(t->sched_delay - t->base_delay)};
  }
  if (s->rt_fields & ZXS_TASK_RUNTIME_PAGE_FAULT_TIME) {
    args[n++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_UINT64,
                                .name = str(ZXS_TRACE_PAGE_FAULT_TIME_ARG),
                                .u64 = (uint64_t)t->pairs.page_fault_ns};
    args[n++] = (zxs_fxt_arg_t){
        .type = ZXS_FXT_ARG_UINT64, .name = str(ZXS_TRACE_PAGE_FAULTS_ARG), .u64 = t->pairs.faults};
  }
  if (s->rt_fields & ZXS_TASK_RUNTIME_LOCK_CONTENTION_TIME) {
    args[n++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_UINT64,
                                .name = str(ZXS_TRACE_LOCK_CONTENTION_TIME_ARG),
                                .u64 = (uint64_t)t->pairs.lock_contention_ns};
    args[n++] = (zxs_fxt_arg_t){.type = ZXS_FXT_ARG_UINT64,
                                .name = str(ZXS_TRACE_LOCK_CONTENTIONS_ARG),
                                .u64 = t->pairs.contentions};
  }
  // Only a thread seen running has a runtime worth a record.
  return cpu_known || t->sched_seen ? n : 1;
}

zx_status_t record_processes_write(record_processes_t* s, uint64_t period_ns,
                                   uint64_t threads_not_attached, FILE* out) {
  record_processes_flush(s);
  zxs_fxt_buf_t head;
  zxs_fxt_buf_init(&head);
  zxs_trace_write_header(&head, 1000000000u);  // CLOCK_MONOTONIC nanoseconds
  zx_status_t status = ZX_OK;
  module_files_t cache = {0};
  for (size_t i = 0; i < s->process_count && status == ZX_OK; i++) {
    const process_t* p = &s->processes[i];
    if (p->samples == 0 && p->koid != s->root) continue;
    write_process(&head, s, p, period_ns, threads_not_attached);
    status = write_process_modules(&head, p, &cache);
    // Still running (or its exit unseen): its JIT files as they are now.
    if (id_map_get(&s->pid_map, p->pid) == (int64_t)i) capture_jit(s, p);
    const zxs_jit_symbols_t* jit = s->jit != NULL ? zxs_jit_capture_find(s->jit, p->koid) : NULL;
    if (status == ZX_OK && jit != NULL) status = zxs_trace_write_jit_symbols(&head, p->koid, jit);
  }
  module_files_free(&cache);
  for (size_t i = 0; i < s->thread_count && status == ZX_OK; i++) {
    const thread_t* t = &s->threads[i];
    const process_t* p = &s->processes[t->process];
    zxs_fxt_arg_t args[7];
    const size_t n = thread_args(s, t, args);
    // Threads without samples but with a runtime, in a process that is written, are written too.
    if (t->samples == 0 && (n <= 1 || (p->samples == 0 && p->koid != s->root))) continue;
    zxs_fxt_kernel_object_t object = {
        .obj_type = ZX_OBJ_TYPE_THREAD, .koid = t->tid, .name = str(t->name)};
    zxs_fxt_write_kernel_object(&head, &object, args, n);
  }
  if (status == ZX_OK) status = write_kernel_symbols(&head, s);
  if (status == ZX_OK) status = zxs_trace_write_vdso(&head);
  if (status == ZX_OK) status = head.status;
  if (status == ZX_OK && fwrite(head.data, 1, head.len, out) != head.len) status = ZX_ERR_IO;
  zxs_fxt_buf_destroy(&head);
  // The samples, from the spool.
  if (status == ZX_OK && (fflush(s->spool) != 0 || fseek(s->spool, 0, SEEK_SET) != 0)) {
    status = ZX_ERR_IO;
  }
  char chunk[1 << 16];
  for (size_t n; status == ZX_OK && (n = fread(chunk, 1, sizeof(chunk), s->spool)) > 0;) {
    if (fwrite(chunk, 1, n, out) != n) status = ZX_ERR_IO;
  }
  if (status == ZX_OK && (ferror(s->spool) || fflush(out) != 0 || ferror(out))) status = ZX_ERR_IO;
  return status;
}

bool record_processes_write_output(record_processes_t* s, uint64_t period_ns,
                                   uint64_t threads_not_attached, zxs_trace_output_t* out,
                                   const char* output, zxs_profile_format_t format,
                                   const char* prog) {
  char error[512];
  zx_status_t status = record_processes_write(s, period_ns, threads_not_attached, out->file);
  if (status == ZX_OK && fflush(out->file) != 0) status = ZX_ERR_IO;
  if (status != ZX_OK) {
    fprintf(stderr, "%s: cannot write the profile to %s: %s\n", prog, output,
            status == ZX_ERR_IO ? strerror(errno) : zxs_status_string(status));
    zxs_trace_output_abandon(out);
    return false;
  }
  if (format == ZXS_FORMAT_FXT) {
    status = zxs_trace_output_commit(out, error, sizeof(error));
  } else {
    status = zxs_profile_convert(out->temp, output, format, error, sizeof(error));
    zxs_trace_output_abandon(out);
  }
  if (status != ZX_OK) fprintf(stderr, "%s: %s\n", prog, error);
  return status == ZX_OK;
}

// --- Life cycle -------------------------------------------------------------------------------

record_processes_t* record_processes_new(FILE* spool, uint64_t sample_type, pid_t root, bool kernel,
                                         bool follow_children, bool cfi) {
  record_processes_t* s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->spool = spool;
  s->sample_type = sample_type;
  s->root = (uint32_t)root;
  s->kernel = kernel;
  s->follow_children = follow_children;
  pthread_mutex_init(&s->worker.lock, NULL);
  pthread_cond_init(&s->worker.cond, NULL);
  zxs_fxt_buf_init(&s->sample);
  s->jit = zxs_jit_capture_new();
  if (cfi && (s->unwinder = zxs_cfi_unwinder_new()) == NULL) {
    record_processes_free(s);
    return NULL;
  }
  void* vdso;
  size_t vdso_size;
  if (s->unwinder != NULL && zxs_modules_vdso_self(&vdso, &vdso_size) == ZX_OK) {
    zxs_cfi_unwinder_add_image(s->unwinder, ZXS_TRACE_VDSO_PATH, vdso, vdso_size);
    free(vdso);
  }
  if (root > 0 && current_process(s, (uint32_t)root) == NULL) {
    record_processes_free(s);
    return NULL;
  }
  return s;
}

void record_processes_totals(const record_processes_t* s, record_totals_t* out) {
  *out = s->totals;
  out->root_pid = s->root;
  const int64_t root = id_map_get(&s->pid_map, s->root);
  if (root >= 0) {
    memcpy(out->root_name, s->processes[root].name, sizeof(out->root_name));
    out->root_mappings = s->processes[root].map_count;
  }
}

void record_processes_free(record_processes_t* s) {
  if (s == NULL) return;
  for (size_t i = 0; i < s->process_count; i++) {
    for (size_t j = 0; j < s->processes[i].map_count; j++) free(s->processes[i].maps[j].path);
    free(s->processes[i].maps);
    process_done(&s->processes[i]);
  }
  free(s->processes);
  free(s->threads);
  zxs_u64_map_free(&s->pid_map);
  zxs_u64_map_free(&s->tid_map);
  zxs_u64_map_free(&s->kernel_pcs);
  batch_free(&s->fill);
  batch_free(&s->worker.ready);
  pthread_mutex_destroy(&s->worker.lock);
  pthread_cond_destroy(&s->worker.cond);
  free(s->rt_ids);
  free(s->rt_kinds);
  free(s->read_sums);
  zxs_fxt_buf_destroy(&s->sample);
  zxs_cfi_unwinder_free(s->unwinder);
  zxs_jit_capture_free(s->jit);
  free(s);
}
