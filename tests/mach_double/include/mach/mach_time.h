// <mach/mach_time.h> as Apple's SDK declares it; implemented by tests/mach_double.
#ifndef ZXS_MACH_DOUBLE_MACH_MACH_TIME_H_
#define ZXS_MACH_DOUBLE_MACH_MACH_TIME_H_

#include <mach/mach.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mach_timebase_info {
  uint32_t numer;
  uint32_t denom;
};
typedef struct mach_timebase_info* mach_timebase_info_t;
typedef struct mach_timebase_info mach_timebase_info_data_t;

kern_return_t mach_timebase_info(mach_timebase_info_t info);
uint64_t mach_absolute_time(void);
kern_return_t mach_wait_until(uint64_t deadline);

#ifdef __cplusplus
}
#endif

#endif  // ZXS_MACH_DOUBLE_MACH_MACH_TIME_H_
