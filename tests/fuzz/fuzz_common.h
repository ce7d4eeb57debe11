/*  fuzz_common: what volley's libFuzzer harnesses share. FUZZ_CHECK aborts
    on a broken invariant so that libFuzzer saves the input that broke it;
    the fence macros poison a buffer's head under ASan so that a decoder
    handed the tail of a buffer is caught writing outside it. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "messages/vl_wire.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Fills a decoder's output before the call, to see whether a refusal wrote it. */
#define FUZZ_SENTINEL 0xA5

/* Returns 1 if all n bytes of p are FUZZ_SENTINEL (a refusal left them). */
static inline int fuzz_untouched(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != FUZZ_SENTINEL)
            return 0;
    return 1;
}

/* Returns 1 if two floats have the same bits, or are both zero: proto3 does
   not send a field equal to its default, so -0.0 arrives as +0.0. */
static inline int fuzz_same_float(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (a == 0.0f && b == 0.0f);
}

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
