/*
 * A Promela model of libzxsampler's per-CPU state protocol (seed 004; sampler-contract.md,
 * "The per-CPU state protocol"), checked with spin by tests/model/check_model.sh.
 *
 * What is modelled, and where it lives in the C code:
 *
 *   per-CPU word            src/core/percpu_state.h  zxs_percpu_t.state: writes-enabled bit,
 *                           pending-timer count, pending-writer count. Here: we[], timers[],
 *                           writers[]. Every C read-modify-write of `state` touches one CPU's
 *                           word, so it is one `atomic` block here (a successful CAS is an
 *                           atomic check-and-set; a failed CAS just retries and is not modelled).
 *   record space            zxs_percpu_t.reserved / full, zxs_percpu_reserve(): one fetch_add.
 *   regions                 region_valid[]: the session's region is mapped and attached
 *                           (zxs_percpu_setup ... zxs_percpu_release + zxs_prim_region_destroy).
 *                           rec[]: which record slots of each region hold a record.
 *   timer context           ctx_valid[]: what a timer callback uses (in the kernel: the
 *                           PerCpuState the callback gets a pointer to). Released by destroy.
 *   Controller              src/core/session.c: zxs_sampler_create (setup), zxs_sampler_start,
 *                           zxs_sampler_stop -> stop_locked -> zxs_percpu_shutdown (with the
 *                           disarm_all cancel callback), session_on_last_handle (destroy).
 *                           Start/stop/destroy are serialised by g_lock in C: one process here.
 *   Writer                  src/core/thread_table.c zxs_core_sample(): begin_write on the
 *                           current CPU's state, seqlock re-check of the slot (may bail out),
 *                           zxs_sample_write (reserve + encode), end_write on the state it began
 *                           on, whatever CPU it runs on by then (it may migrate at any point).
 *   Timer                   seed 004's per-CPU timer (see "the timer marks" below): armed
 *                           by start after zxs_percpu_timer_set() (start() here; C's start
 *                           arms sources with zxs_prim_source_arm), fires, runs its
 *                           callback, re-arms only while writes are enabled
 *                           (zxs_percpu_timer_rearm); cancel (phase 2) may miss a callback that
 *                           is already running, and the callback may re-arm the hardware timer
 *                           after that cancel (the decision and the re-arm are two steps).
 *   LateWriter              a sample (signal) that arrives after the session was destroyed.
 *
 * Every Promela statement outside an atomic block is a point where the scheduler may switch
 * processes: that is "preemption anywhere". A signal handler that interrupts a writer on the
 * same CPU is, for this protocol, just another writer on that CPU.
 *
 * What is abstracted away (the gap between this model and the C code):
 *   - Memory ordering. Every access here is sequentially consistent. The C code uses relaxed
 *     and acquire/release atomics; that the orderings are enough rests on the argument in
 *     percpu_state.c (all changes of `state` are RMWs in one modification order) and on the
 *     TSan run of test_percpu_stress, not on this model.
 *   - Sizes. 2 CPUs (3 with -DNCPU=3), 2 writers taking 1 sample each (-DSAMPLES=2 for more),
 *     1 record slot per region, one start/stop/start/(stop)/destroy sequence, one timer per
 *     CPU. The counts are bytes and `reserved` saturates; the 32-bit fields of the C word, and
 *     an end_write/timer_clear underflow borrowing from the neighbouring field, are not modelled.
 *   - Record contents, the frame walk, counters, the session generation check in
 *     zxs_sample_write, and the slot seqlock (a nondeterministic bail-out stands for a failed
 *     re-check). A second session after destroy is not modelled.
 *   - The timer marks. zxs_percpu_timer_set/rearm/clear exist and are modelled as seed 004
 *     describes, but no backend in src/ calls them today: the Linux sources are per-thread
 *     timers / perf events whose signal handler goes straight to zxs_core_sample(), so in C
 *     phase 2 only runs disarm_all() and then waits for counts that are always 0. A queued
 *     signal delivered after disarm is a Writer (or the LateWriter) here.
 *   - Start/stop/destroy run under g_lock in C; the model has one Controller process, so their
 *     mutual exclusion is assumed, not checked.
 *
 * Properties (all on by default):
 *   (1) no record is written while `quiesced` holds (stop returned and no start since; also
 *       before the first start): assert in write_record.
 *   (2) writers and timer callbacks touch a region / timer context only while it is valid:
 *       asserts in reserve, write_record and Timer.
 *   (3) no deadlock: no invalid end state (safety run); stop always returns and destroy always
 *       completes: LTL `live` under weak fairness (liveness run, pan -a -f).
 *   (4) every writer admitted before the disable has ended when stop returns, and no timer is
 *       pending or armed: asserts at the end of shutdown.
 *   plus: reservations are exclusive (no record slot is written twice); a late writer after
 *   destroy is refused and holds nothing; counts never go below zero (the C code's
 *   ZXS_SIGNAL_SAFE_CHECKs).
 *
 * Each assert is tagged with its property: P1, P2, P4, and P5 for the integrity checks
 * (exclusive reservations, counts never below zero, late writer refused). -DONLY=n keeps only
 * property n's asserts (ONLY=3: none; invalid end states are always checked in a safety run),
 * so that check_model.sh can show that each property, on its own, catches a mutant.
 *
 * Variants (spin -D...):
 *   ADMIT_SEED                 correct alternative: the seed's "check, set, check again"
 *                              admission instead of the C code's single CAS.
 *   NO_CANCEL                  phase 2 without the cancel: still safe and live (an armed timer
 *                              fires and its rearm drops the mark), only slower; the cancel is
 *                              a latency optimisation, not what makes stop correct.
 *   BUG_CHECK_THEN_SET         admission checks writes-enabled, then increments (no re-check).
 *   BUG_NO_PHASE2              shutdown does not wait for pending timers.
 *   BUG_NO_PHASE3              shutdown does not wait for pending writers.
 *   BUG_WAIT_BEFORE_DISABLE    shutdown waits for writers before disabling (phase 3 first).
 *   BUG_END_ON_CURRENT_CPU     end_write on the CPU the writer migrated to.
 *   BUG_BAIL_WITHOUT_END       the seqlock bail-out returns without end_write.
 *   BUG_RESERVE_LOAD_STORE     reservation as load + store instead of one fetch_add.
 *   BUG_RELEASE_BEFORE_STOP    destroy releases the regions before stopping.
 *   BUG_CANCEL_ASSUMES_SUCCESS cancel treats a timer whose callback is running as cancelled
 *                              and drops its mark for it.
 *   BUG_DESTROY_WITHOUT_STOP   destroy on last close does not stop a running session.
 *   BUG_REARM_IGNORES_DISABLE  the timer callback keeps its mark and re-arms even when writes
 *                              are disabled (stop never returns: liveness).
 */

#ifndef NCPU
#define NCPU 2
#endif
#if NCPU < 2 || NCPU > 3
#error "the writers pick their CPU among 2 or 3"
#endif
#ifndef NWRITERS
#define NWRITERS 2
#endif
#ifndef SAMPLES
#define SAMPLES 1          /* samples per writer process */
#endif
#ifndef SIZE
#define SIZE 1             /* record slots per region */
#endif
#ifndef LATE_WRITER
#define LATE_WRITER 1
#endif
#define NONE 255

#ifndef ONLY
#define ONLY 0
#endif
/* Witnesses (-DWITNESS=n): assert that scenario n never happens, so that pan must find it.
 * They show the model is not passing vacuously: the interesting interleavings do occur. */
#ifndef WITNESS
#define WITNESS 0
#endif
#if WITNESS == 1
#define W1(x) assert(!(x))
#else
#define W1(x) skip
#endif
#if WITNESS == 2
#define W2(x) assert(!(x))
#else
#define W2(x) skip
#endif
#if WITNESS == 3
#define W3(x) assert(!(x))
#else
#define W3(x) skip
#endif
#if WITNESS == 4
#define W4(x) assert(!(x))
#else
#define W4(x) skip
#endif
#if WITNESS == 5
#define W5(x) assert(!(x))
#else
#define W5(x) skip
#endif
#if WITNESS == 6
#define W6(x) assert(!(x))
#else
#define W6(x) skip
#endif

#if ONLY == 0 || ONLY == 1
#define P1(x) assert(x)
#else
#define P1(x) skip
#endif
#if ONLY == 0 || ONLY == 2
#define P2(x) assert(x)
#else
#define P2(x) skip
#endif
#if ONLY == 0 || ONLY == 4
#define P4(x) assert(x)
#else
#define P4(x) skip
#endif
#if ONLY == 0 || ONLY == 5
#define P5(x) assert(x)
#else
#define P5(x) skip
#endif

/* --- zxs_percpu_t, one per CPU (the states live forever: a late writer may read them) --- */
bool we[NCPU];             /* ZXS_PERCPU_WRITES_ENABLED */
byte timers[NCPU];         /* pending-timer count (bits 1..31) */
byte writers[NCPU];        /* pending-writer count (bits 32..63) */
byte reserved[NCPU];       /* zxs_percpu_t.reserved, saturated at SIZE+1 (never goes down) */
bool isfull[NCPU];           /* zxs_percpu_t.full */

/* --- the session's regions and what timer callbacks use --- */
bool region_valid[NCPU];
bool ctx_valid[NCPU];
bit rec[NCPU * SIZE];      /* record slot written */

/* --- the hardware timers (one per CPU, as in the kernel) --- */
mtype = { IDLE, ARMED, RUNNING };
mtype tstate[NCPU];

/* --- ghost state for the properties --- */
bool quiesced = true;      /* no write may happen: before start, and from stop's return on */
bool stopping;             /* inside zxs_percpu_shutdown */
bool destroyed;            /* session_on_last_handle finished */
byte inside;               /* writers between admission and their (real) end_write */
bool cancel_done;          /* shutdown's cancel has run (for witness 2 only) */

/* ====================== src/core/percpu_state.c ====================== */

/* zxs_percpu_begin_write(): ok = admitted. The C code is one CAS that raises the writer count
 * only in a state with writes-enabled set. */
inline begin_write(c, ok) {
#if defined(BUG_CHECK_THEN_SET)
  /* Mutant: check, then (possibly much later) set; no re-check. */
  if
  :: we[c] -> atomic { writers[c]++; inside++; ok = true }
  :: else -> ok = false
  fi
#elif defined(ADMIT_SEED)
  /* The kernel's SetPendingWrite: check, set, check again (undo when disabled meanwhile). */
  if
  :: we[c] ->
     writers[c]++;
     atomic {
       if
       :: we[c] -> inside++; ok = true
       :: else -> P5(writers[c] > 0); writers[c]--; ok = false
       fi
     }
  :: else -> ok = false
  fi
#else
  atomic {
    if
    :: we[c] -> writers[c]++; inside++; ok = true
    :: else -> ok = false
    fi
  }
#endif
}

/* zxs_percpu_end_write(): fetch_sub, whatever writes-enabled says. */
inline end_write(c) {
  atomic { P5(writers[c] > 0); writers[c]--; inside-- }
}

/* zxs_percpu_timer_set(): mark a timer pending iff writes are enabled. */
inline timer_set(c, ok) {
  atomic {
    if
    :: we[c] -> timers[c]++; ok = true
    :: else -> ok = false
    fi
  }
}

/* zxs_percpu_timer_clear(): a pending timer was cancelled before it fired. */
inline timer_clear(c) {
  atomic { P5(timers[c] > 0); timers[c]-- }
}

/* zxs_percpu_reserve(): slot = record slot, or NONE (full). Only between begin and end. */
inline reserve(c, slot, old) {
  P2(region_valid[c]);              /* (2): reads base/size of the region */
  if
  :: isfull[c] -> slot = NONE
  :: else ->
#ifdef BUG_RESERVE_LOAD_STORE
     old = reserved[c];
     if
     :: old <= SIZE -> reserved[c] = old + 1
     :: else -> skip
     fi;
#else
     atomic {                       /* atomic_fetch_add(&reserved, bytes) */
       old = reserved[c];
       if
       :: reserved[c] <= SIZE -> reserved[c]++
       :: else -> skip              /* saturate: every later reservation fails anyway */
       fi
     }
#endif
     if
     :: old < SIZE -> slot = old
     :: else -> isfull[c] = true; slot = NONE; W4(true)   /* witness: a region fills up */
     fi
  fi
}

/* zxs_fxt_encode_sample() into the reserved slot: two steps (first and last word), so the
 * writer can be preempted in the middle of a record. */
inline write_record(c, slot) {
  atomic {
    P2(region_valid[c]);            /* (2) */
    P1(!quiesced);                  /* (1) */
    P5(rec[c * SIZE + slot] == 0);  /* reservations are exclusive */
    rec[c * SIZE + slot] = 1
  }
  atomic {
    P2(region_valid[c]);            /* (2) */
    P1(!quiesced)                   /* (1) */
  }
}

/* ====================== src/core/thread_table.c ====================== */

/* zxs_core_sample(): `c` is zxs_prim_current_cpu() when the sample starts; `cur` is the CPU the
 * thread runs on now (it may migrate at any point after the state pointer was taken). */
inline core_sample(c, cur, ok, slot, old) {
  if
  :: c = 0
  :: c = 1
#if NCPU > 2
  :: c = 2
#endif
  fi;
  cur = c;
  begin_write(c, ok);
  if
  :: ok ->
     if
     :: true ->                     /* the seqlock re-check failed: slot detached/reused */
#ifndef BUG_BAIL_WITHOUT_END
        end_write(c)
#else
        atomic { inside-- }         /* the writer is gone, but its count is not */
#endif
     :: true ->                     /* re-check passed: walk, zxs_sample_write */
        reserve(c, slot, old);
        if
        :: slot != NONE -> write_record(c, slot)
        :: else -> skip             /* ZXS_WRITE_FULL */
        fi;
        /* Migration. The thread may move at any point after it took the state pointer, but
         * nothing before end_write depends on where it runs (the pointer is captured), so one
         * migration step just before the end covers every case: `cur` is where it ends up. */
        if
        :: cur = (cur + 1) % NCPU
        :: skip
        fi;
        W5(cur != c);               /* witness: ends on its state while on another CPU */
#ifdef BUG_END_ON_CURRENT_CPU
        end_write(cur)
#else
        end_write(c)
#endif
     fi
  :: else -> skip                   /* refused: holds nothing, touches no region */
  fi
}

proctype Writer() {
  byte n, c, cur, slot, old;
  bool ok;
  do
  :: n < SAMPLES ->
     n++;
     core_sample(c, cur, ok, slot, old);
     atomic { c = 0; cur = 0; ok = false; slot = 0; old = 0 }   /* dead: merge states */
  :: else -> break
  od
}

/* A sample that arrives after the session is gone (a late signal, a stale source). */
proctype LateWriter() {
  byte c, cur, slot, old;
  bool ok;
  destroyed;
  core_sample(c, cur, ok, slot, old);
  P5(!ok);                          /* finds writes disabled, holds nothing */
  W3(true)                          /* witness: a sample arrived after destroy */
}

/* ====================== seed 004's per-CPU timer ====================== */

proctype Timer(byte c) {
  bool keep;
end_idle:
  do
  :: atomic { tstate[c] == ARMED -> tstate[c] = RUNNING }  /* fires: the callback starts */
     P2(ctx_valid[c]);              /* (2): the callback uses the per-CPU state */
     /* ... marks the current thread to sample: the Writer processes stand for that ... */
     /* zxs_percpu_timer_rearm() */
     atomic {
       P5(timers[c] > 0);
#ifdef BUG_REARM_IGNORES_DISABLE
       keep = true
#else
       if
       :: we[c] -> keep = true      /* keep the mark; the caller re-arms */
       :: else ->                   /* last run: drop the mark */
          W6(stopping);             /* witness: a callback ends while stop waits (phase 2) */
          timers[c]--; tstate[c] = IDLE; keep = false
       fi
#endif
     }
     if
     :: keep ->                     /* re-arm: a separate step, so a cancel can pass us by */
        atomic {
          P2(ctx_valid[c]);
          W2(cancel_done);          /* witness: re-armed after the cancel passed it by */
          tstate[c] = ARMED
        }
     :: else -> skip
     fi
  od
}

/* ====================== src/core/session.c ====================== */

/* The cancel callback (disarm_all): cancel each timer; a timer whose callback already runs is
 * missed (its rearm drops the mark). */
inline cancel_timers(i, cancelled) {
  for (i : 0 .. NCPU - 1) {
    atomic {
      if
      :: tstate[i] == ARMED -> tstate[i] = IDLE; cancelled = true
#ifdef BUG_CANCEL_ASSUMES_SUCCESS
      /* Mutant: a timer whose callback is running counts as cancelled too. */
      :: tstate[i] == RUNNING -> cancelled = true
#endif
      :: else -> cancelled = false
      fi
    }
    if
    :: cancelled -> timer_clear(i)
    :: else -> skip
    fi
  }
}

/* zxs_percpu_shutdown() as stop_locked() calls it. */
inline shutdown(i, cancelled) {
  stopping = true;
#ifdef BUG_WAIT_BEFORE_DISABLE
  /* Mutant: phase 3 moved before phase 1 (wait for writers, then disable). */
  for (i : 0 .. NCPU - 1) {
    (writers[i] == 0)
  }
#endif
  /* Phase 1: disable new writes and new timers on every CPU. */
  for (i : 0 .. NCPU - 1) {
    we[i] = false                   /* zxs_percpu_disable_writes: fetch_and */
  }
  /* Phase 2: cancel timers, then wait for lingering ones. */
#ifndef NO_CANCEL
  cancel_timers(i, cancelled);
#endif
  cancel_done = true;
#ifndef BUG_NO_PHASE2
  for (i : 0 .. NCPU - 1) {
    (timers[i] == 0)                /* while (pending_timers) relax */
  }
#endif
  /* Phase 3: wait for writes in progress. */
#if !defined(BUG_NO_PHASE3) && !defined(BUG_WAIT_BEFORE_DISABLE)
  for (i : 0 .. NCPU - 1) {
    W1(writers[i] > 0);             /* witness: stop has a writer to wait for */
    (writers[i] == 0)               /* while (pending_writes) relax */
  }
#endif
  atomic {
    stopping = false;
    quiesced = true;                /* stop returned: from now on nothing may write */
    P4(inside == 0);                /* (4) every admitted writer was waited for */
    for (i : 0 .. NCPU - 1) {
      /* (4) for timers: none pending, none armed, no callback running */
      P4(timers[i] == 0 && tstate[i] == IDLE)
    }
  }
}

/* zxs_sampler_start(): enable writes on each CPU, then arm the sources. */
inline start(i, ok) {
  quiesced = false;
  cancel_done = false;
  for (i : 0 .. NCPU - 1) {
    we[i] = true                    /* zxs_percpu_enable_writes: fetch_or */
  }
  for (i : 0 .. NCPU - 1) {
    P4(tstate[i] == IDLE);
    timer_set(i, ok);
    if
    :: ok -> tstate[i] = ARMED      /* zxs_prim_source_arm */
    :: else -> skip
    fi
  }
}

/* session_on_last_handle(): stop if running, detach, release the regions. */
inline destroy(i, cancelled, running) {
#ifdef BUG_RELEASE_BEFORE_STOP
  for (i : 0 .. NCPU - 1) {
    atomic { region_valid[i] = false; ctx_valid[i] = false }
  }
  if
  :: running -> shutdown(i, cancelled); running = false
  :: else -> skip
  fi;
#else
#ifndef BUG_DESTROY_WITHOUT_STOP
  if
  :: running -> shutdown(i, cancelled); running = false
  :: else -> skip
  fi;
#endif
  for (i : 0 .. NCPU - 1) {
    /* zxs_percpu_release + zxs_prim_region_destroy */
    atomic { region_valid[i] = false; ctx_valid[i] = false }
  }
#endif
  destroyed = true
}

proctype Controller() {
  byte i;
  bool ok, cancelled, running;
  /* zxs_sampler_create -> new_session -> zxs_percpu_setup (writes stay disabled). */
  for (i : 0 .. NCPU - 1) {
    region_valid[i] = true;
    ctx_valid[i] = true
  }
  start(i, ok); running = true;
  shutdown(i, cancelled); running = false;       /* zxs_sampler_stop */
  start(i, ok); running = true;                  /* restart: regions keep their records */
  if
  :: shutdown(i, cancelled); running = false     /* stopped, then the last handle closes */
  :: skip                                        /* the last handle closes while running */
  fi;
  destroy(i, cancelled, running)
}

init {
  byte k;
  atomic {
    for (k : 0 .. NCPU - 1) {
      tstate[k] = IDLE;
      run Timer(k)
    }
    for (k : 1 .. NWRITERS) {
      run Writer()
    }
#if LATE_WRITER
    run LateWriter();
#endif
    run Controller()
  }
}

/* (3) Liveness, checked with pan -a -f (weak fairness): every stop returns, and destroy
 * completes. */
ltl live { [] (stopping -> <> !stopping) && <> destroyed }
