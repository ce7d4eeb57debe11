/*  fuzz_common: what volley's libFuzzer harnesses share. FUZZ_CHECK aborts
    on a broken invariant so that libFuzzer saves the input that broke it;
    the fence macros poison a buffer's head under ASan so that a decoder
    handed the tail of a buffer is caught writing outside it. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#include "messages/vl_wire.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A decoder's reason must be one of the named ones. */
#define FUZZ_CHECK_REASON(r) FUZZ_CHECK((unsigned)(r) < VL_EREASONS)

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_HAVE_ASAN 1
#endif
#endif
#if !defined(FUZZ_HAVE_ASAN) && defined(__SANITIZE_ADDRESS__)
#define FUZZ_HAVE_ASAN 1
#endif

#ifdef FUZZ_HAVE_ASAN
#include <sanitizer/asan_interface.h>
#define FUZZ_POISON(p, n)   __asan_poison_memory_region((p), (n))
#define FUZZ_UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define FUZZ_POISON(p, n)   ((void)(p), (void)(n))
#define FUZZ_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#endif
