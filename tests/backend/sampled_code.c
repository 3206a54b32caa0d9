// Code the sampler's end-to-end tests run under sampling; see sampled_code.h.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sampled_code.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// noipa keeps GCC from cloning a function (a clone would land outside its section) or from
// using what it knows of the callee at the call site.
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define SC_NOIPA __attribute__((noipa))
#endif
#endif
#ifndef SC_NOIPA
#define SC_NOIPA
#endif
#define SC_IN(name) __attribute__((noinline, used, section(name))) SC_NOIPA

// The section bounds the linker defines for sections named like C identifiers.
#define SC_BOUNDS(name)               \
  extern const char __start_##name[]; \
  extern const char __stop_##name[];
SC_BOUNDS(zxs_sc_work_a)
SC_BOUNDS(zxs_sc_work_b)
SC_BOUNDS(zxs_sc_spin)
SC_BOUNDS(zxs_sc_mix)
SC_BOUNDS(zxs_sc_entry)
SC_BOUNDS(zxs_sc_badfp)
extern const char sc_badfp_loop_begin[];
extern const char sc_badfp_loop_end[];

sc_range_t sc_range(sc_section_t which) {
  const char* lo = NULL;
  const char* hi = NULL;
  switch (which) {
    case SC_WORK_A:
      lo = __start_zxs_sc_work_a, hi = __stop_zxs_sc_work_a;
      break;
    case SC_WORK_B:
      lo = __start_zxs_sc_work_b, hi = __stop_zxs_sc_work_b;
      break;
    case SC_SPIN:
      lo = __start_zxs_sc_spin, hi = __stop_zxs_sc_spin;
      break;
    case SC_MIX:
      lo = __start_zxs_sc_mix, hi = __stop_zxs_sc_mix;
      break;
    case SC_ENTRY:
      lo = __start_zxs_sc_entry, hi = __stop_zxs_sc_entry;
      break;
    case SC_BADFP:
      lo = __start_zxs_sc_badfp, hi = __stop_zxs_sc_badfp;
      break;
    case SC_BADFP_LOOP:
      lo = sc_badfp_loop_begin, hi = sc_badfp_loop_end;
      break;
    default:
      break;
  }
  sc_range_t r = {(uintptr_t)lo, (uintptr_t)hi};
  return r;
}

bool sc_in(sc_section_t which, uint64_t pc) {
  const sc_range_t r = sc_range(which);
  return pc >= r.lo && pc < r.hi;
}

// --- The loops --------------------------------------------------------------------------------

// The same body everywhere. Using the frame address makes the function set up a frame: GCC 12
// leaves it out of frameless leaves even with -mno-omit-leaf-frame-pointer, and then the walk
// would report the caller's caller where the caller should be.
#define SC_LOOP_BODY(iterations)                            \
  uint64_t x = 1;                                           \
  __asm__ volatile("" : : "r"(__builtin_frame_address(0))); \
  for (uint64_t i = 0; i < (iterations); i++) {             \
    x = x * 6364136223846793005u + i;                       \
    __asm__ volatile("" : "+r"(x));                         \
  }                                                         \
  return x

SC_IN("zxs_sc_work_a") uint64_t sc_work_a(uint64_t iterations) { SC_LOOP_BODY(iterations); }
SC_IN("zxs_sc_work_b") uint64_t sc_work_b(uint64_t iterations) { SC_LOOP_BODY(iterations); }
SC_IN("zxs_sc_spin") uint64_t sc_spin(uint64_t iterations) { SC_LOOP_BODY(iterations); }

SC_IN("zxs_sc_mix") uint64_t sc_mix31(uint64_t unit) {
  uint64_t r = sc_work_a(3 * unit);
  r += sc_work_b(unit);
  return r;
}

// --- The frame pointer set to garbage ---------------------------------------------------------
//
// sc_badfp_spin(fp, n): saves the frame pointer, loads `fp` into it, loops n times on registers
// only, restores it and returns. Everything between sc_badfp_loop_begin and sc_badfp_loop_end
// runs with the garbage value (the restoring instruction included).
#if defined(__x86_64__)
#if defined(__CET__)
#define SC_BTI "  endbr64\n"
#else
#define SC_BTI ""
#endif
__asm__(
    ".pushsection zxs_sc_badfp,\"ax\",%progbits\n"
    ".globl sc_badfp_spin\n"
    ".hidden sc_badfp_spin\n"
    ".type sc_badfp_spin,%function\n"
    ".p2align 4\n"
    "sc_badfp_spin:\n" SC_BTI
    "  push %rbp\n"
    "  mov %rdi, %rbp\n"
    ".globl sc_badfp_loop_begin\n"
    ".hidden sc_badfp_loop_begin\n"
    "sc_badfp_loop_begin:\n"
    "  mov $1, %eax\n"
    "1:\n"
    "  imul $1103515245, %eax, %eax\n"
    "  add $12345, %eax\n"
    "  sub $1, %rsi\n"
    "  jnz 1b\n"
    "  pop %rbp\n"
    ".globl sc_badfp_loop_end\n"
    ".hidden sc_badfp_loop_end\n"
    "sc_badfp_loop_end:\n"
    "  ret\n"
    ".size sc_badfp_spin, .-sc_badfp_spin\n"
    ".popsection\n");
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_BTI_DEFAULT)
#define SC_BTI "  bti c\n"
#else
#define SC_BTI ""
#endif
__asm__(
    ".pushsection zxs_sc_badfp,\"ax\",%progbits\n"
    ".globl sc_badfp_spin\n"
    ".hidden sc_badfp_spin\n"
    ".type sc_badfp_spin,%function\n"
    ".p2align 4\n"
    "sc_badfp_spin:\n" SC_BTI
    "  stp x29, x30, [sp, #-16]!\n"
    "  mov x29, x0\n"
    ".globl sc_badfp_loop_begin\n"
    ".hidden sc_badfp_loop_begin\n"
    "sc_badfp_loop_begin:\n"
    "  mov x2, #1\n"
    "1:\n"
    "  add x2, x2, x2, lsl #3\n"
    "  subs x1, x1, #1\n"
    "  b.ne 1b\n"
    "  ldp x29, x30, [sp], #16\n"
    ".globl sc_badfp_loop_end\n"
    ".hidden sc_badfp_loop_end\n"
    "sc_badfp_loop_end:\n"
    "  ret\n"
    ".size sc_badfp_spin, .-sc_badfp_spin\n"
    ".popsection\n");
#else
#error "sampled_code.c: sc_badfp_spin is written for x86-64 and aarch64"
#endif

bool sc_badfp_sample_ok(const uint64_t* pcs, size_t n) {
  if (n == 1) return true;
  if (n == 2) {
    return pcs[1] == SC_MARK_LOOP || pcs[1] == SC_MARK_DOWN || pcs[1] == SC_MARK_UNALIGNED;
  }
  if (n == 3) return pcs[1] == SC_MARK_CHAIN1 && pcs[2] == SC_MARK_CHAIN2;
  return false;
}

// A page that was mapped and unmapped again: an address nothing lives at.
static uintptr_t unmapped_page(void) {
  static _Atomic uintptr_t page;
  uintptr_t p = atomic_load(&page);
  if (p == 0) {
    const size_t size = (size_t)sysconf(_SC_PAGESIZE);
    void* m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      munmap(m, size);
      p = (uintptr_t)m;
      atomic_store(&page, p);
    }
  }
  return p;
}

// A well-formed record chain outside every stack.
static uint64_t g_heap_chain[4];

#define SC_BADFP_MODES 16

size_t sc_badfp_modes(void) { return SC_BADFP_MODES; }

// One run of each mode. `stack_hi` is one past the top of the calling thread's stack.
SC_IN("zxs_sc_entry") static void badfp_round(uint64_t n, uintptr_t stack_hi) {
  _Alignas(16) volatile uint64_t rec[16];
  const uintptr_t base = (uintptr_t)&rec[0];

  sc_badfp_spin(0, n);                                        // null
  sc_badfp_spin(8, n);                                        // a small integer
  sc_badfp_spin(0x1003, n);                                   // small and unaligned
  sc_badfp_spin(base + 4, n);                                 // on the stack, unaligned
  sc_badfp_spin(unmapped_page(), n);                          // unmapped memory
  sc_badfp_spin(base - 16384, n);                             // below sp
  sc_badfp_spin((uintptr_t)UINT64_C(0xffff800000001000), n);  // a kernel address
  sc_badfp_spin(~(uintptr_t)7, n);                            // the top of the address space
  sc_badfp_spin(stack_hi - 8, n);                             // a record straddling the stack's end
  g_heap_chain[0] = (uint64_t)(uintptr_t)&g_heap_chain[2];
  g_heap_chain[1] = 0x10000000000000f6;  // accepted by no check: the walk must not go there
  sc_badfp_spin((uintptr_t)&g_heap_chain[0], n);            // a good chain, not on the stack
  sc_badfp_spin(((uintptr_t)&sc_spin) & ~(uintptr_t)7, n);  // code

  rec[0] = base;  // a loop: the record points to itself
  rec[1] = SC_MARK_LOOP;
  sc_badfp_spin(base, n);

  rec[8] = base;  // a record pointing down the stack
  rec[9] = SC_MARK_DOWN;
  sc_badfp_spin(base + 64, n);

  rec[0] = base + 32;  // two records, then garbage
  rec[1] = SC_MARK_CHAIN1;
  rec[4] = 0x13;
  rec[5] = SC_MARK_CHAIN2;
  sc_badfp_spin(base, n);

  rec[0] = base + 32;  // a return address of 0 ends the chain
  rec[1] = 0;
  sc_badfp_spin(base, n);

  rec[0] = base + 32;  // the next record's frame pointer is unaligned
  rec[1] = 0x99;
  rec[4] = base + 33;
  rec[5] = SC_MARK_UNALIGNED;
  sc_badfp_spin(base + 32, n);
}

// --- Gate, jobs, driver -----------------------------------------------------------------------

SC_IN("zxs_sc_entry") int sc_gettid(void) { return (int)syscall(SYS_gettid); }

SC_IN("zxs_sc_entry") int64_t sc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

SC_IN("zxs_sc_entry") int64_t sc_thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sc_gate_init(sc_gate_t* gate) {
  pthread_mutex_init(&gate->mutex, NULL);
  pthread_cond_init(&gate->cond, NULL);
  gate->open = false;
  gate->waiting = 0;
}

void sc_gate_destroy(sc_gate_t* gate) {
  pthread_cond_destroy(&gate->cond);
  pthread_mutex_destroy(&gate->mutex);
}

SC_IN("zxs_sc_entry") void sc_gate_open(sc_gate_t* gate) {
  pthread_mutex_lock(&gate->mutex);
  gate->open = true;
  pthread_cond_broadcast(&gate->cond);
  pthread_mutex_unlock(&gate->mutex);
}

void sc_gate_wait_for(sc_gate_t* gate, int n) {
  pthread_mutex_lock(&gate->mutex);
  while (gate->waiting < n) pthread_cond_wait(&gate->cond, &gate->mutex);
  pthread_mutex_unlock(&gate->mutex);
}

SC_IN("zxs_sc_entry") static void gate_pass(sc_gate_t* gate) {
  pthread_mutex_lock(&gate->mutex);
  gate->waiting++;
  pthread_cond_broadcast(&gate->cond);
  while (!gate->open) pthread_cond_wait(&gate->cond, &gate->mutex);
  pthread_mutex_unlock(&gate->mutex);
}

static _Atomic uint64_t g_sink;  // keeps the loops' results alive

SC_IN("zxs_sc_entry") static uintptr_t stack_top(void) {
  pthread_attr_t attr;
  void* addr = NULL;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  return (uintptr_t)addr + size;
}

SC_IN("zxs_sc_entry") void sc_run_job(sc_job_t* job) {
  const uintptr_t hi = job->kind == SC_JOB_BADFP ? stack_top() : 0;
  const uint64_t unit = job->unit > 0 ? job->unit : 1;
  uint64_t sink = 0;
  uint64_t rng = UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)sc_gettid();
  const int64_t t0 = sc_thread_cpu_ns();
  for (uint64_t r = 0;; r++) {
    if (job->rounds > 0
            ? r >= job->rounds
            : job->stop == NULL || atomic_load_explicit(job->stop, memory_order_relaxed)) {
      break;
    }
    // Round lengths vary by +-50% (mean `unit`): a fixed period sampling a loop of a fixed
    // length would alias with it (the perf source's period is exact, so a 1 ms round sampled
    // every 1 ms lands on the same instructions again and again).
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    const uint64_t jittered = unit / 2 + rng % unit + 1;
    switch (job->kind) {
      case SC_JOB_MIX31:
        sink += sc_mix31(jittered);
        break;
      case SC_JOB_SPIN:
        sink += sc_spin(jittered);
        break;
      case SC_JOB_BADFP:
        badfp_round(unit, hi);
        break;
    }
    atomic_store_explicit(&job->rounds_done, r + 1, memory_order_relaxed);
  }
  atomic_store(&job->cpu_ns, sc_thread_cpu_ns() - t0);
  atomic_fetch_add_explicit(&g_sink, sink, memory_order_relaxed);
  atomic_store(&job->finished, true);
}

SC_IN("zxs_sc_entry") void* sc_thread_main(void* arg) {
  sc_job_t* job = arg;
  atomic_store(&job->tid, sc_gettid());
  if (job->gate != NULL) gate_pass(job->gate);
  sc_run_job(job);
  return NULL;
}

SC_IN("zxs_sc_entry") void sc_drive(sc_drive_t* d) {
  d->start_status = zxs_sampler_start(d->iob);
  if (d->gate != NULL) sc_gate_open(d->gate);
  if (d->self_job != NULL) sc_run_job(d->self_job);
  if (d->until_samples > 0 && d->stop != NULL) {
    for (;;) {
      zxs_sampler_stats_t stats;
      if (zxs_sampler_get_stats(d->iob, &stats) != ZX_OK ||
          stats.samples_written >= d->until_samples || sc_now_ns() > d->deadline_ns) {
        break;
      }
      struct timespec nap = {0, 5000000};
      nanosleep(&nap, NULL);
    }
    atomic_store(d->stop, true);
  }
  for (size_t i = 0; i < d->join_count; i++) pthread_join(d->joins[i], NULL);
  d->stop_status = zxs_sampler_stop(d->iob);
}
