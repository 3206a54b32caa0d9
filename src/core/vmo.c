// VMOs over regions, and the mapping rules shared with the sampler's IOBuffer.
#include "vmo.h"

#include <stdlib.h>
#include <zxsampler/object.h>

#include "config.h"

static void vmo_destroy(zxs_object_t* obj) {
  zxs_vmo_obj_t* vmo = (zxs_vmo_obj_t*)obj;
  zxs_prim_region_destroy(&vmo->region);
  free(vmo);
}

static const zxs_object_ops_t g_vmo_ops = {.on_last_handle = NULL, .destroy = vmo_destroy};

zx_status_t zxs_vmo_create(size_t size, zx_rights_t rights, zx_handle_t* out, zxs_vmo_obj_t** obj) {
  *out = ZX_HANDLE_INVALID;
  zxs_prim_caps_t caps;
  zxs_prim_get_caps(&caps);
  zxs_vmo_obj_t* vmo = calloc(1, sizeof(*vmo));
  if (vmo == NULL) return ZX_ERR_NO_MEMORY;
  if (size == 0 || size > SIZE_MAX - caps.page_size ||
      zxs_prim_region_create(zxs_round_up_to_page(size, caps.page_size), &vmo->region) != ZX_OK) {
    free(vmo);
    return ZX_ERR_NO_MEMORY;
  }
  zxs_object_init(&vmo->base, ZX_OBJ_TYPE_VMO, zxs_koid_next(), &g_vmo_ops);
  zx_status_t status = zxs_handle_make(&vmo->base, rights, out);
  if (status != ZX_OK) {
    vmo_destroy(&vmo->base);
    return status;
  }
  *obj = vmo;
  return ZX_OK;
}

// Options Fuchsia's kernel honours for a mapping and a host mapping honours the same way:
// MAP_RANGE (commit now: a host commits on first touch, same contents), REQUIRE_NON_RESIZABLE
// (regions never resize), ALLOW_FAULTS, READ_IF_XOM_UNSUPPORTED (with PERM_READ), and an
// alignment up to the page size (every mapping has it).
#define HOST_MAP_OPTIONS                                                    \
  (ZX_VM_PERM_READ | ZX_VM_PERM_READ_IF_XOM_UNSUPPORTED | ZX_VM_MAP_RANGE | \
   ZX_VM_REQUIRE_NON_RESIZABLE | ZX_VM_ALLOW_FAULTS)
// Options the kernel accepts that place the mapping in the VMAR: the backend's mapping goes
// where the host puts it, so these are NOT_SUPPORTED here (as is a larger alignment).
#define PLACEMENT_OPTIONS (ZX_VM_SPECIFIC | ZX_VM_SPECIFIC_OVERWRITE | ZX_VM_OFFSET_IS_UPPER_LIMIT)
#define ALIGN_MASK ((zx_vm_option_t)0xffu << ZX_VM_ALIGN_BASE)

zx_status_t zxs_map_region(const zxs_prim_region_t* region, zx_vm_option_t options,
                           size_t vmar_offset, uint64_t region_offset, size_t region_len,
                           zx_vaddr_t* mapped_addr) {
  zxs_prim_caps_t caps;
  zxs_prim_get_caps(&caps);
  const uint64_t page_mask = caps.page_size - 1;
  if ((options & (ZX_VM_PERM_WRITE | ZX_VM_PERM_EXECUTE)) != 0) return ZX_ERR_ACCESS_DENIED;
  // The kernel's alignment field: 0, or log2 of 1 KiB .. 4 GiB.
  const uint32_t align_pow2 = (options & ALIGN_MASK) >> ZX_VM_ALIGN_BASE;
  const bool placed = (options & PLACEMENT_OPTIONS) != 0;
  if ((options & ~(HOST_MAP_OPTIONS | PLACEMENT_OPTIONS | ALIGN_MASK)) != 0 ||
      (align_pow2 != 0 && (align_pow2 < 10 || align_pow2 > 32)) ||
      (options & ZX_VM_PERM_READ) == 0 || (vmar_offset != 0 && !placed) ||
      (vmar_offset & page_mask) != 0 || mapped_addr == NULL || region_len == 0 ||
      (region_len & page_mask) != 0 || (region_offset & page_mask) != 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (placed || (align_pow2 != 0 && ((uint64_t)1 << align_pow2) > caps.page_size)) {
    return ZX_ERR_NOT_SUPPORTED;
  }
  if (region_offset > region->size || region_len > region->size - region_offset) {
    return ZX_ERR_OUT_OF_RANGE;
  }
  void* addr;
  zx_status_t status =
      zxs_prim_region_map_readonly(region, (size_t)region_offset, region_len, &addr);
  if (status == ZX_OK) *mapped_addr = (zx_vaddr_t)addr;
  return status;
}

zx_status_t zxs_vmar_map(zx_handle_t vmar, zx_vm_option_t options, size_t vmar_offset,
                         zx_handle_t vmo, uint64_t vmo_offset, size_t len,
                         zx_vaddr_t* mapped_addr) {
  zxs_object_t* obj;
  zx_status_t status = zxs_handle_get(vmar, ZX_OBJ_TYPE_VMAR, ZX_RIGHT_NONE, &obj, NULL);
  if (status != ZX_OK) return status;
  zxs_object_release(obj);
  status = zxs_handle_get(vmo, ZX_OBJ_TYPE_VMO, ZX_RIGHT_MAP | ZX_RIGHT_READ, &obj, NULL);
  if (status != ZX_OK) return status;
  status = zxs_map_region(&((zxs_vmo_obj_t*)obj)->region, options, vmar_offset, vmo_offset, len,
                          mapped_addr);
  zxs_object_release(obj);
  return status;
}

zx_status_t zxs_vmo_get_size(zx_handle_t vmo, uint64_t* size) {
  zxs_object_t* obj;
  zx_status_t status = zxs_handle_get(vmo, ZX_OBJ_TYPE_VMO, ZX_RIGHT_NONE, &obj, NULL);
  if (status != ZX_OK) return status;
  if (size == NULL) {
    status = ZX_ERR_INVALID_ARGS;
  } else {
    *size = ((zxs_vmo_obj_t*)obj)->region.size;
  }
  zxs_object_release(obj);
  return status;
}

zx_status_t zxs_vmar_unmap(zx_handle_t vmar, zx_vaddr_t addr, size_t len) {
  zxs_object_t* vobj;
  zx_status_t status = zxs_handle_get(vmar, ZX_OBJ_TYPE_VMAR, ZX_RIGHT_NONE, &vobj, NULL);
  if (status != ZX_OK) return status;
  zxs_object_release(vobj);
  const uint64_t page_mask = zxs_system_get_page_size() - 1;
  if (len == 0 || (addr & page_mask) != 0 || (len & page_mask) != 0) {
    return ZX_ERR_INVALID_ARGS;
  }
  return zxs_prim_unmap((void*)addr, len);
}
