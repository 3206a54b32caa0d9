// VMOs and read-only mappings of regions (internal).
//
// A region (zxs_prim_region_t: a memfd on Linux) is what the sampler's IOBuffer regions and the
// perfmon controller's buffers are made of. zxs_map_region() holds the one set of mapping rules
// zxs_vmar_map_iob() and zxs_vmar_map() share. A VMO object owns one region and destroys it when
// its last reference goes; mappings made from it stay valid until unmapped.
#ifndef ZXSAMPLER_SRC_CORE_VMO_H_
#define ZXSAMPLER_SRC_CORE_VMO_H_

#include <zxsampler/types.h>

#include "handle_table.h"
#include "platform.h"

typedef struct zxs_vmo_obj {
  zxs_object_t base;
  zxs_prim_region_t region;  // base: the writable mapping of the library (never handed out)
} zxs_vmo_obj_t;

// A read-only VMO handle's rights: what a perfmon buffer handle has.
#define ZXS_VMO_READONLY_RIGHTS                                                                    \
  (ZX_RIGHT_DUPLICATE | ZX_RIGHT_TRANSFER | ZX_RIGHT_READ | ZX_RIGHT_MAP | ZX_RIGHT_GET_PROPERTY | \
   ZX_RIGHT_INSPECT)

// A VMO over a new zero-filled region of `size` bytes rounded up to the page size, and a
// handle to it with `rights` (*obj stays valid while a handle or reference lives).
// ZX_ERR_NO_MEMORY, ZX_ERR_NO_RESOURCES (handle table full).
zx_status_t zxs_vmo_create(size_t size, zx_rights_t rights, zx_handle_t* out, zxs_vmo_obj_t** obj);

// The mapping rules of zxs_vmar_map_iob() and zxs_vmar_map() (see object.h), after the handles
// were checked: options, offsets and length against `region`, then the backend's read-only map.
zx_status_t zxs_map_region(const zxs_prim_region_t* region, zx_vm_option_t options,
                           size_t vmar_offset, uint64_t region_offset, size_t region_len,
                           zx_vaddr_t* mapped_addr);

#endif  // ZXSAMPLER_SRC_CORE_VMO_H_
