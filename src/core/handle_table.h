// Handles and reference-counted objects (internal).
//
// A handle is a 32-bit value naming a table entry (object + rights) with a generation, so a
// closed handle's value is recognised as stale. Objects count their handles and their
// references: when the last handle goes, on_last_handle() runs (the sampler's IOBuffer stops and
// destroys its session there); when the last reference goes, destroy() frees the object.
// Thread-safe (one mutex); nothing here is async-signal-safe.
#ifndef ZXSAMPLER_SRC_CORE_HANDLE_TABLE_H_
#define ZXSAMPLER_SRC_CORE_HANDLE_TABLE_H_

#include <stdbool.h>
#include <zxsampler/types.h>

typedef struct zxs_object zxs_object_t;

typedef struct zxs_object_ops {
  void (*on_last_handle)(zxs_object_t* obj);  // may be NULL; called without the table lock
  void (*destroy)(zxs_object_t* obj);         // frees the object
} zxs_object_ops_t;

struct zxs_object {
  zx_obj_type_t type;
  zx_koid_t koid;
  zx_koid_t related_koid;
  const zxs_object_ops_t* ops;
  uint32_t handles;  // under the table lock
  uint32_t refs;     // handles + temporary references; under the table lock
};

// Sets the header of a new object (no handles, no references yet).
void zxs_object_init(zxs_object_t* obj, zx_obj_type_t type, zx_koid_t koid,
                     const zxs_object_ops_t* ops);
// A new koid for objects that have no native one (IOBuffers, regions, resources).
zx_koid_t zxs_koid_next(void);

// Makes a handle to obj with `rights`. ZX_ERR_NO_RESOURCES when the table is full;
// ZX_ERR_BAD_HANDLE when the object's last handle is already gone. On failure the object is
// untouched: a caller that just made it still owns it and frees it.
zx_status_t zxs_handle_make(zxs_object_t* obj, zx_rights_t rights, zx_handle_t* out);
// Marks a handle as one that close leaves alone (zx_process_self, zx_thread_self, ...).
void zxs_handle_pin(zx_handle_t handle);
// Removes a handle even if pinned (a thread's own handle when the thread exits).
void zxs_handle_unpin_and_close(zx_handle_t handle);

// Looks a handle up in Fuchsia's order: ZX_ERR_BAD_HANDLE, then ZX_ERR_WRONG_TYPE (unless type
// is ZX_OBJ_TYPE_NONE), then ZX_ERR_ACCESS_DENIED when `rights` are not all held. On success
// takes a reference the caller drops with zxs_object_release(); *held_rights may be NULL.
zx_status_t zxs_handle_get(zx_handle_t handle, zx_obj_type_t type, zx_rights_t rights,
                           zxs_object_t** out, zx_rights_t* held_rights);
void zxs_object_release(zxs_object_t* obj);

// Held across fork (pthread_atfork), so the child never inherits it locked mid-update.
void zxs_handle_table_lock(void);
void zxs_handle_table_unlock(void);

// Whether `handle` is live (for caches of constant handles).
bool zxs_handle_is_live(zx_handle_t handle);

#endif  // ZXSAMPLER_SRC_CORE_HANDLE_TABLE_H_
