/*  vtrace: IMPALA's V-trace; its whole API is public (volley/vtrace.h), this
    header is what the library's own code includes. Depends only on libc and libm. */
#ifndef VL_VTRACE_H
#define VL_VTRACE_H

#include "volley/vtrace.h"

#endif
