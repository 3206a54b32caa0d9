#include "handle_table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <zxsampler/object.h>

// Handle value: bits 0..1 set (as Fuchsia's are), bits 2..21 entry index + 1, bits 22..31 the
// entry's generation, so a stale value does not name a reused entry (for 1024 reuses).
#define HANDLE_FIXED_BITS 0x3u
#define HANDLE_INDEX_SHIFT 2
#define HANDLE_INDEX_MASK 0xfffffu
#define HANDLE_GEN_SHIFT 22
#define HANDLE_GEN_MASK 0x3ffu
#define HANDLE_CAPACITY 16384u

typedef struct {
  zxs_object_t* obj;  // NULL = free
  zx_rights_t rights;
  uint32_t gen;
  bool pinned;
} handle_entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static handle_entry_t g_entries[HANDLE_CAPACITY];
static uint32_t g_free_hint;
static _Atomic uint64_t g_next_koid = (uint64_t)1 << 40;  // far from pids and tids

void zxs_object_init(zxs_object_t* obj, zx_obj_type_t type, zx_koid_t koid,
                     const zxs_object_ops_t* ops) {
  obj->type = type;
  obj->koid = koid;
  obj->related_koid = ZX_KOID_INVALID;
  obj->ops = ops;
  obj->handles = 0;
  obj->refs = 0;
}

zx_koid_t zxs_koid_next(void) { return atomic_fetch_add(&g_next_koid, 1); }

static zx_handle_t handle_value(uint32_t index, uint32_t gen) {
  return ((gen & HANDLE_GEN_MASK) << HANDLE_GEN_SHIFT) | ((index + 1) << HANDLE_INDEX_SHIFT) |
         HANDLE_FIXED_BITS;
}

// The live entry a handle names, or NULL; lock held.
static handle_entry_t* entry_of(zx_handle_t handle) {
  if ((handle & HANDLE_FIXED_BITS) != HANDLE_FIXED_BITS) return NULL;
  uint32_t index1 = (handle >> HANDLE_INDEX_SHIFT) & HANDLE_INDEX_MASK;
  if (index1 == 0 || index1 > HANDLE_CAPACITY) return NULL;
  handle_entry_t* e = &g_entries[index1 - 1];
  if (e->obj == NULL || (e->gen & HANDLE_GEN_MASK) != (handle >> HANDLE_GEN_SHIFT)) return NULL;
  return e;
}

// Drops one reference; returns true when the object must be destroyed. Lock held.
static bool unref_locked(zxs_object_t* obj) { return --obj->refs == 0; }

// Makes a handle; lock held. An object whose last handle is gone (while references keep it
// in memory) gets no new one: it is being destroyed.
static zx_status_t make_locked(zxs_object_t* obj, zx_rights_t rights, zx_handle_t* out) {
  if (obj->handles == 0 && obj->refs != 0) return ZX_ERR_BAD_HANDLE;
  for (uint32_t n = 0; n < HANDLE_CAPACITY; n++) {
    uint32_t i = (g_free_hint + n) % HANDLE_CAPACITY;
    handle_entry_t* e = &g_entries[i];
    if (e->obj != NULL) continue;
    e->obj = obj;
    e->rights = rights;
    e->pinned = false;
    obj->handles++;
    obj->refs++;
    g_free_hint = i + 1;
    *out = handle_value(i, e->gen);
    return ZX_OK;
  }
  return ZX_ERR_NO_RESOURCES;
}

zx_status_t zxs_handle_make(zxs_object_t* obj, zx_rights_t rights, zx_handle_t* out) {
  pthread_mutex_lock(&g_lock);
  zx_status_t status = make_locked(obj, rights, out);
  pthread_mutex_unlock(&g_lock);
  return status;
}

void zxs_handle_pin(zx_handle_t handle) {
  pthread_mutex_lock(&g_lock);
  handle_entry_t* e = entry_of(handle);
  if (e != NULL) e->pinned = true;
  pthread_mutex_unlock(&g_lock);
}

// Removes a handle; returns ZX_ERR_BAD_HANDLE if not live. Runs the object's callbacks outside
// the lock.
static zx_status_t close_handle(zx_handle_t handle, bool force) {
  pthread_mutex_lock(&g_lock);
  handle_entry_t* e = entry_of(handle);
  if (e == NULL) {
    pthread_mutex_unlock(&g_lock);
    return ZX_ERR_BAD_HANDLE;
  }
  if (e->pinned && !force) {
    pthread_mutex_unlock(&g_lock);
    return ZX_OK;
  }
  zxs_object_t* obj = e->obj;
  e->obj = NULL;
  e->gen++;
  bool last_handle = --obj->handles == 0;
  // Keep a reference across on_last_handle so the object outlives its callback.
  pthread_mutex_unlock(&g_lock);
  if (last_handle && obj->ops->on_last_handle != NULL) obj->ops->on_last_handle(obj);
  pthread_mutex_lock(&g_lock);
  bool destroy = unref_locked(obj);
  pthread_mutex_unlock(&g_lock);
  if (destroy) obj->ops->destroy(obj);
  return ZX_OK;
}

zx_status_t zxs_handle_close(zx_handle_t handle) {
  if (handle == ZX_HANDLE_INVALID) return ZX_OK;
  return close_handle(handle, false);
}

void zxs_handle_unpin_and_close(zx_handle_t handle) { (void)close_handle(handle, true); }

zx_status_t zxs_handle_get(zx_handle_t handle, zx_obj_type_t type, zx_rights_t rights,
                           zxs_object_t** out, zx_rights_t* held_rights) {
  pthread_mutex_lock(&g_lock);
  handle_entry_t* e = entry_of(handle);
  zx_status_t status = ZX_OK;
  if (e == NULL) {
    status = ZX_ERR_BAD_HANDLE;
  } else if (type != ZX_OBJ_TYPE_NONE && e->obj->type != type) {
    status = ZX_ERR_WRONG_TYPE;
  } else if ((e->rights & rights) != rights) {
    status = ZX_ERR_ACCESS_DENIED;
  } else {
    e->obj->refs++;
    *out = e->obj;
    if (held_rights != NULL) *held_rights = e->rights;
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

void zxs_object_release(zxs_object_t* obj) {
  pthread_mutex_lock(&g_lock);
  bool destroy = unref_locked(obj);
  pthread_mutex_unlock(&g_lock);
  if (destroy) obj->ops->destroy(obj);
}

void zxs_handle_table_lock(void) { pthread_mutex_lock(&g_lock); }
void zxs_handle_table_unlock(void) { pthread_mutex_unlock(&g_lock); }

bool zxs_handle_is_live(zx_handle_t handle) {
  pthread_mutex_lock(&g_lock);
  bool live = entry_of(handle) != NULL;
  pthread_mutex_unlock(&g_lock);
  return live;
}

zx_status_t zxs_handle_duplicate(zx_handle_t handle, zx_rights_t rights, zx_handle_t* out) {
  if (out == NULL) return ZX_ERR_INVALID_ARGS;
  *out = ZX_HANDLE_INVALID;
  // Lookup and make under one lock hold: a last close in between must not be undone by the
  // copy (the session would be torn down twice).
  pthread_mutex_lock(&g_lock);
  handle_entry_t* e = entry_of(handle);
  zx_status_t status;
  if (e == NULL) {
    status = ZX_ERR_BAD_HANDLE;
  } else if ((e->rights & ZX_RIGHT_DUPLICATE) == 0) {
    status = ZX_ERR_ACCESS_DENIED;
  } else if (rights == ZX_RIGHT_SAME_RIGHTS) {
    status = make_locked(e->obj, e->rights, out);
  } else if ((rights & ~e->rights) != 0) {
    status = ZX_ERR_INVALID_ARGS;
  } else {
    status = make_locked(e->obj, rights, out);
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}
