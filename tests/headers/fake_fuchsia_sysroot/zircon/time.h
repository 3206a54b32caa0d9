// Stand-in for Fuchsia's <zircon/time.h> (see types.h).
#ifndef ZIRCON_TIME_H_
#define ZIRCON_TIME_H_
#define ZXS_FAKE_SYSROOT_TIME 1
typedef long long zx_time_t;
typedef long long zx_duration_t;
typedef long long zx_ticks_t;
typedef long long zx_instant_mono_t;
#define ZX_TIME_INFINITE 0x7fffffffffffffffLL
#define ZX_MSEC(n) (1000000LL * (n))
static inline zx_duration_t zx_duration_from_msec(long long n) { return n * 1000000LL; }
#endif  // ZIRCON_TIME_H_
