/*  vl_rng: a small, fast, seedable PRNG (xoshiro256**, seeded by splitmix64).
    Deterministic across platforms, so a seed reproduces a run. Not for crypto. */
#ifndef VL_RNG_H
#define VL_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct {
    uint64_t s[4];
} vl_rng_t;

static inline uint64_t vl_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Seeds the generator; any seed, 0 included, gives a valid state. */
static inline void vl_rng_seed(vl_rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = vl_splitmix64(&seed);
}

static inline uint64_t vl_rng_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* Returns 64 uniformly random bits. */
static inline uint64_t vl_rng_next(vl_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = vl_rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = vl_rng_rotl(s[3], 45);
    return result;
}

/* Returns a double uniform in [0, 1) with 53 random bits. */
static inline double vl_rng_uniform(vl_rng_t *r)
{
    return (double)(vl_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Returns an integer uniform in [0, n), n > 0 (Lemire's multiply-shift; the
   bias is below 2^-32 for the n volley uses). */
static inline uint32_t vl_rng_below(vl_rng_t *r, uint32_t n)
{
    return (uint32_t)(((vl_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Writes a random permutation of 0 .. n-1 into perm[n] (Fisher-Yates from
   the top, one vl_rng_below per swap): the learner's minibatch order,
   drawn the same way whichever engine trains. */
static inline void vl_rng_shuffle(vl_rng_t *r, uint32_t n, uint32_t *perm)
{
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint32_t i = n ? n - 1 : 0; i > 0; i--) {
        uint32_t j = vl_rng_below(r, i + 1), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
}

/* Returns a standard normal deviate (Box-Muller). */
static inline double vl_rng_normal(vl_rng_t *r)
{
    double u1 = vl_rng_uniform(r), u2 = vl_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
