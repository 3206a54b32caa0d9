// Code for the sampler's end-to-end tests to run under sampling (test_sampler_linux.c).
//
// Every function here lives in a named ELF section of its own kind, so a test can tell exactly
// where a sampled PC lies: the linker defines __start_<section> and __stop_<section> for each,
// and sc_range() returns them. Nothing depends on symbol tables, dladdr or function order.
//
//   SC_WORK_A, SC_WORK_B, SC_SPIN  leaf loops; identical bodies, so their CPU time follows their
//                                  iteration counts. Each sets up a frame (GCC 12 omits it in
//                                  frameless leaves even with -mno-omit-leaf-frame-pointer).
//   SC_MIX                         sc_mix31(): the only caller of sc_work_a/sc_work_b.
//   SC_ENTRY                       thread entry, job runner, driver and gate: the only callers of
//                                  the above, and all that the tests' threads run of this
//                                  executable between start and stop.
//   SC_BADFP                       sc_badfp_spin(), in assembly: a loop with the frame pointer
//                                  register set to a garbage value; SC_BADFP_LOOP is the part
//                                  of it that runs with the garbage value.
#ifndef ZXSAMPLER_TESTS_BACKEND_SAMPLED_CODE_H_
#define ZXSAMPLER_TESTS_BACKEND_SAMPLED_CODE_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zxsampler/sampler.h>

typedef enum sc_section {
  SC_WORK_A,
  SC_WORK_B,
  SC_SPIN,
  SC_MIX,
  SC_ENTRY,
  SC_BADFP,
  SC_BADFP_LOOP,
  SC_SECTION_COUNT,
} sc_section_t;

typedef struct sc_range {
  uintptr_t lo, hi;  // [lo, hi)
} sc_range_t;

sc_range_t sc_range(sc_section_t which);
bool sc_in(sc_section_t which, uint64_t pc);

// The loops. Each iteration costs the same in all three.
uint64_t sc_work_a(uint64_t iterations);
uint64_t sc_work_b(uint64_t iterations);
uint64_t sc_spin(uint64_t iterations);
// One round: sc_work_a(3 * unit) then sc_work_b(unit): a 3:1 split of CPU time.
uint64_t sc_mix31(uint64_t unit);
// Sets the frame pointer register to `fp` and loops `iterations` (>= 1) times, then restores it.
void sc_badfp_spin(uintptr_t fp, uint64_t iterations);

// The values sc_badfp_spin() is run with, one round = each once (see sampled_code.c). A sample
// taken inside SC_BADFP_LOOP must satisfy sc_badfp_sample_ok(): the walk stopped at once
// (1 PC) or followed exactly the fake records this code laid out on the thread's stack.
#define SC_MARK_LOOP UINT64_C(0x10000000000000a1)
#define SC_MARK_DOWN UINT64_C(0x10000000000000b2)
#define SC_MARK_CHAIN1 UINT64_C(0x10000000000000c3)
#define SC_MARK_CHAIN2 UINT64_C(0x10000000000000d4)
#define SC_MARK_UNALIGNED UINT64_C(0x10000000000000e5)
bool sc_badfp_sample_ok(const uint64_t* pcs, size_t n);
size_t sc_badfp_modes(void);

// A gate threads wait at (blocked in pthread_cond_wait) until it is opened.
typedef struct sc_gate {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  bool open;
  int waiting;
} sc_gate_t;
void sc_gate_init(sc_gate_t* gate);
void sc_gate_destroy(sc_gate_t* gate);
void sc_gate_open(sc_gate_t* gate);
// Waits until `n` threads are waiting at the gate.
void sc_gate_wait_for(sc_gate_t* gate, int n);

typedef enum sc_job_kind {
  SC_JOB_MIX31,  // rounds of sc_mix31(unit)
  SC_JOB_SPIN,   // rounds of sc_spin(unit)
  SC_JOB_BADFP,  // rounds of every sc_badfp_spin() mode, `unit` iterations each
} sc_job_kind_t;

// Work for one thread: `rounds` rounds (0: until *stop is true, checked between rounds).
typedef struct sc_job {
  sc_job_kind_t kind;
  uint64_t unit;
  uint64_t rounds;
  atomic_bool* stop;  // may be NULL when rounds > 0
  sc_gate_t* gate;    // sc_thread_main waits here first; may be NULL
  // Out.
  _Atomic int tid;  // set before waiting at the gate
  _Atomic uint64_t rounds_done;
  _Atomic int64_t cpu_ns;  // thread CPU time the rounds took
  atomic_bool finished;
} sc_job_t;

// Runs job->rounds on the calling thread.
void sc_run_job(sc_job_t* job);
// A thread entry: records its tid, waits at job->gate, runs the job.
void* sc_thread_main(void* job);

// What the calling thread does between start and stop, with every step's status:
//   start(iob); open gate; run self_job (if any); if until_samples > 0, poll the stats every
//   few ms until that many samples were written or deadline_ns (monotonic) passed, then set
//   *stop; join `joins`; stop(iob).
typedef struct sc_drive {
  zx_handle_t iob;
  sc_gate_t* gate;
  sc_job_t* self_job;
  uint64_t until_samples;
  int64_t deadline_ns;
  atomic_bool* stop;
  pthread_t* joins;
  size_t join_count;
  // Out.
  zx_status_t start_status, stop_status;
} sc_drive_t;
void sc_drive(sc_drive_t* drive);

// Monotonic and thread CPU clocks, in ns.
int64_t sc_now_ns(void);
int64_t sc_thread_cpu_ns(void);
int sc_gettid(void);

#endif  // ZXSAMPLER_TESTS_BACKEND_SAMPLED_CODE_H_
