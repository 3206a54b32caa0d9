// Fork coordination (internal): the library's one pthread_atfork registration.
//
// The child of a fork is a new process with one thread and a copy of the parent's memory. Each
// module that holds a lock other threads may hold at fork, or state that names the parent's
// threads, registers its steps here at its first use, at the stage of its lock:
//   prepare  in the parent before fork: takes the module's lock;
//   parent   in the parent after fork: releases it;
//   child    in the child after fork: forgets what belongs to the parent, releases the lock.
// Prepare steps run in stage order, parent and child steps in the reverse order, so the locks
// are taken in the order below, which is the order in which the library nests them everywhere
// (a module holding the lock of one stage may take the locks of later stages, never of earlier
// ones). Child steps run where fork's child runs: async-signal-safe where the module's is.
#ifndef ZXSAMPLER_SRC_CORE_FORK_H_
#define ZXSAMPLER_SRC_CORE_FORK_H_

typedef enum zxs_fork_stage {
  // The flight recorder (recorder.c): it holds its lock while it creates, attaches and stops a
  // session, and while it joins its writer thread, so it takes nothing at fork; its child step
  // makes the recorder not running and its lock new.
  ZXS_FORK_STAGE_RECORDER,
  // The perfmon controller's lock (perfmon_controller.c): held while it takes handles.
  ZXS_FORK_STAGE_PERFMON,
  // The session lock (session.c): held while it takes and closes handles. Its child step also
  // renews the process's and the forking thread's own objects (objects.c).
  ZXS_FORK_STAGE_SESSION,
  // The handle table's lock (handle_table.c).
  ZXS_FORK_STAGE_HANDLES,
  // The backend's task-runtime table (Linux, task_runtime_linux.c): a leaf lock.
  ZXS_FORK_STAGE_TASK_RUNTIME,
  ZXS_FORK_STAGE_COUNT
} zxs_fork_stage_t;

typedef struct zxs_fork_steps {
  void (*prepare)(void);  // each may be NULL
  void (*parent)(void);
  void (*child)(void);
} zxs_fork_steps_t;

// Registers `steps` (static storage) as the steps of `stage`, and the library's handlers with
// pthread_atfork the first time. Safe from any thread at any time, idempotent for the same
// steps; a fork that begins before registration returns runs without them (there was nothing
// of the module's to hold or forget yet).
void zxs_fork_register(zxs_fork_stage_t stage, const zxs_fork_steps_t* steps);

// The core's steps (session.c): the session's and the handle table's.
// Called at the first session, the first zxs_thread_self() (whose cached handle would otherwise
// name the parent's thread in the child) and the perfmon controller's first open.
void zxs_core_register_atfork(void);

#endif  // ZXSAMPLER_SRC_CORE_FORK_H_
