// Everything public in one include: types and statuses, the sampler, handles and objects, FXT,
// the handle-free profiler, the perfmon controller, the version.
#ifndef ZXSAMPLER_ZXSAMPLER_H_
#define ZXSAMPLER_ZXSAMPLER_H_

#include <zxsampler/fxt.h>
#include <zxsampler/object.h>
#include <zxsampler/perfmon.h>
#include <zxsampler/profiler.h>
#include <zxsampler/recorder.h>
#include <zxsampler/sampler.h>
#include <zxsampler/types.h>
#include <zxsampler/version.h>

#endif  // ZXSAMPLER_ZXSAMPLER_H_
