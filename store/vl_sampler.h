/*  vl_sampler: prioritized sampling of the learner's buffer slots; its whole
    API is public (volley/sampler.h), this header is what the library's own
    code includes. Not thread-safe: the train thread owns it. */
#ifndef VL_SAMPLER_H
#define VL_SAMPLER_H

#include "volley/sampler.h"

#endif
