/*  vl_builtin: the per-env state every built-in environment keeps, made,
    freed and seeded in one place: a zeroed struct holding its own RNG (at
    some offset), seeded with 0 until the caller seeds it. Header-only, so a
    built-in compiled as a plugin (tests/plugins/vl_cartpole_plugin.c) takes
    it with its source. */
#ifndef VL_BUILTIN_H
#define VL_BUILTIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../common/vl_rng.h"

/* Returns a zeroed state of size bytes whose RNG, rng_at bytes in, is
   seeded with 0; NULL on no memory. */
static inline void *vl_builtin_new(size_t size, size_t rng_at)
{
    char *self = calloc(1, size);
    if (self)
        vl_rng_seed((vl_rng_t *)(self + rng_at), 0);
    return self;
}

/* Frees a state; safe on NULL (a table's destroy). */
static inline void vl_builtin_destroy(void *state)
{
    free(state);
}

/* Seeds the RNG rng_at bytes into state, which the next reset draws from. */
static inline void vl_builtin_seed(void *state, size_t rng_at, uint64_t seed)
{
    vl_rng_seed((vl_rng_t *)((char *)state + rng_at), seed);
}

#endif
