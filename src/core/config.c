#include "config.h"

zx_status_t zxs_config_validate(const zx_sampler_config_t* config, size_t config_size) {
  if (config == NULL || config_size != sizeof(zx_sampler_config_t)) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (config->iobuffer_discipline != ZX_IOB_DISCIPLINE_NONE) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (config->buffer_size == 0 || config->buffer_size > ZX_SAMPLER_MAX_BUFFER_SIZE) {
    return ZX_ERR_INVALID_ARGS;
  }
  if (config->period < ZX_SAMPLER_MIN_PERIOD) {
    return ZX_ERR_INVALID_ARGS;
  }
  return ZX_OK;
}

size_t zxs_round_up_to_page(size_t size, size_t page) { return (size + page - 1) & ~(page - 1); }
