// Sampler configuration checks and sizes (internal).
#ifndef ZXSAMPLER_SRC_CORE_CONFIG_H_
#define ZXSAMPLER_SRC_CORE_CONFIG_H_

#include <stddef.h>
#include <zxsampler/sampler.h>

// ZX_OK or ZX_ERR_INVALID_ARGS, by the contract's rules for the config (NULL, size,
// discipline, buffer size, period).
zx_status_t zxs_config_validate(const zx_sampler_config_t* config, size_t config_size);

// `size` rounded up to a multiple of `page` (a power of two). Valid configs cannot overflow.
size_t zxs_round_up_to_page(size_t size, size_t page);

#endif  // ZXSAMPLER_SRC_CORE_CONFIG_H_
