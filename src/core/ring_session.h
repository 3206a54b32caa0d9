// Sessions whose regions keep the latest samples (internal: the flight recorder's, recorder.h).
//
// The discipline is this library's, not Fuchsia's (docs/sampler-contract.md): each CPU's region
// is a ring that overwrites its oldest sample (percpu_ring.h). Such a session is attached,
// started, stopped and closed like any other; only its regions differ: they cannot be mapped
// (ZX_ERR_NOT_SUPPORTED) and are read with zxs_sampler_ring_copy(), while sampling goes on.
#ifndef ZXSAMPLER_SRC_CORE_RING_SESSION_H_
#define ZXSAMPLER_SRC_CORE_RING_SESSION_H_

#include <stddef.h>
#include <zxsampler/fxt.h>
#include <zxsampler/sampler.h>

// As zxs_sampler_create() (its statuses), with `config`'s discipline ZX_IOB_DISCIPLINE_NONE and
// its buffer_size ignored: each CPU gets a ring of `slots_per_cpu` slots of
// ZXS_RING_SLOT_BYTES. ZX_ERR_INVALID_ARGS: no slots, or more than 1 GiB of them.
zx_status_t zxs_sampler_create_ring(zx_handle_t rsrc, const zx_sampler_config_t* config,
                                    size_t slots_per_cpu, zx_handle_t* iob_out);

// Appends to `out` the samples of every CPU's ring stamped in [since, until] (ticks, as the
// records), each CPU's oldest first, while the session runs or after it stopped. `iob` needs
// ZX_RIGHT_READ. ZX_ERR_BAD_STATE: not a ring session; the handle's statuses; ZX_ERR_NO_MEMORY.
zx_status_t zxs_sampler_ring_copy(zx_handle_t iob, zx_time_t since, zx_time_t until,
                                  zxs_fxt_buf_t* out);

#endif  // ZXSAMPLER_SRC_CORE_RING_SESSION_H_
