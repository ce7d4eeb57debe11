/*  vtrace: IMPALA's V-trace targets and policy-gradient advantages (Espeholt
    et al. 2018, eq. 1 and its recursive form), with GAE's lambda on c_t.

    The recursion acc_t = delta_t + disc_t c_t acc_{t+1} is serial in t, so
    one segment at a time is bound by its latency and by expf. With SSE2 the
    work runs on four segments at once, in tiles of 4 segments x 4 steps:
    each tile is loaded row by row (contiguous in t), its ratios, deltas and
    trace factors are computed in that layout with a vector exp, a 4x4
    transpose turns them into one vector per step across the segments, the
    four steps of the recursion run there, and a transpose brings the
    carried values back to rows to finish vs and pg_adv. Everything stays in
    registers (and their spills): no scratch memory. Without SSE2 a plain
    per-segment loop runs instead; both do the same arithmetic in the same
    order, save the exp (s_exp4's error is described above it). */
#include "vtrace.h"

#include <math.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#ifndef __SSE2__

/* The clip, or x when it is smaller; an infinite clip leaves x alone and a
   NaN x stays NaN (fminf would hide it behind the clip). */
static inline float s_clip(float clip, float x)
{
    return clip < x ? clip : x;
}

/* One segment: v has T + 1 values, the rest T entries each. */
static void s_segment(const vl_vtrace_params_t *p, int T, const float *v, const float *r,
                      const float *done, const float *log_rho, float *vs, float *pg_adv)
{
    float acc = 0.0f; // v_{t+1} - V(x_{t+1}); zero at the bootstrap
    for (int t = T - 1; t >= 0; t--) {
        float ratio = expf(log_rho[t]);
        float disc = p->gamma * (1.0f - done[t]);
        float td = r[t] + disc * v[t + 1] - v[t];
        float a = disc * (p->lambda * s_clip(p->c_bar, ratio));
        pg_adv[t] = s_clip(p->pg_rho_bar, ratio) * (td + disc * acc);
        acc = s_clip(p->rho_bar, ratio) * td + a * acc;
        vs[t] = v[t] + acc;
    }
}

void vl_vtrace(const vl_vtrace_params_t *p, int n, int T, const float *values, const float *rewards,
               const float *dones, const float *log_rhos, float *vs, float *pg_adv)
{
    for (int i = 0; i < n && T > 0; i++) {
        long row = (long)i * T;
        s_segment(p, T, values + row + i, rewards + row, dones + row, log_rhos + row, vs + row,
                  pg_adv + row);
    }
}

#else

#define S_LANES 4 // segments per block, steps per tile: one SSE2 vector

/* The vector constants of s_exp4, kept in memory and read through a
   pointer the compiler cannot see through, so that they stay memory
   operands: gcc 12 otherwise rebuilds each one from a scalar (movss +
   shufps) inside the loop, for want of registers to keep them in. */
enum { S_LO, S_HI, S_LOG2E, S_P5, S_P4, S_P3, S_P2, S_P1, S_P0, S_ONE, S_BIAS, S_NK };

static const _Alignas(16) float s_consts[S_NK][4] = {
    [S_LO] = {-87.0f, -87.0f, -87.0f, -87.0f},
    [S_HI] = {89.0f, 89.0f, 89.0f, 89.0f},
    [S_LOG2E] = {1.44269504f, 1.44269504f, 1.44269504f, 1.44269504f},
    /* 2 * 2^r on |r| <= 1/2: a degree-5 minimax (relative) polynomial,
       9.2e-8 in exact arithmetic, doubled (exactly) for s_exp4's 2^(n-1) */
    [S_P5] = {2.652945412e-03f, 2.652945412e-03f, 2.652945412e-03f, 2.652945412e-03f},
    [S_P4] = {1.934302530e-02f, 1.934302530e-02f, 1.934302530e-02f, 1.934302530e-02f},
    [S_P3] = {1.110146749e-01f, 1.110146749e-01f, 1.110146749e-01f, 1.110146749e-01f},
    [S_P2] = {4.804448418e-01f, 4.804448418e-01f, 4.804448418e-01f, 4.804448418e-01f},
    [S_P1] = {1.386293955e+00f, 1.386293955e+00f, 1.386293955e+00f, 1.386293955e+00f},
    [S_P0] = {2.0f, 2.0f, 2.0f, 2.0f},
    [S_ONE] = {1.0f, 1.0f, 1.0f, 1.0f},
    [S_BIAS] = {0x1p-149f * 126, 0x1p-149f * 126, 0x1p-149f * 126, 0x1p-149f * 126}, // int 126
};

#define S_K(k, name) _mm_load_ps((k)[name])

/* e^x in place for count vectors (1 or S_LANES: side by side, so their
   dependency chains overlap). x log2(e) = n + r with |r| <= 1/2, 2^r by
   the polynomial, 2^(n-1) put in the exponent bits. Within 2e-7 relative
   of exp for |x| <= 1, and |x| 6e-8 beyond (the rounding of x log2(e)):
   under 1e-6 for |x| <= 16, 5e-6 at the ends. x is clamped first so that
   2^(n-1) is a float or 0: below about -87 the result is 0 (the true value
   is under 2e-38), past ln(FLT_MAX) it overflows to inf, and NaN passes
   the clamps (by operand order) and the arithmetic as NaN. */
static inline void s_exp4(const float (*k)[4], __m128 *x, int count)
{
    __m128i n[S_LANES];
    __m128 r[S_LANES], r2[S_LANES], lo[S_LANES], hi[S_LANES];
#pragma GCC unroll 4
    for (int i = 0; i < count; i++)
        x[i] =
            _mm_mul_ps(_mm_min_ps(S_K(k, S_HI), _mm_max_ps(S_K(k, S_LO), x[i])), S_K(k, S_LOG2E));
#pragma GCC unroll 4
    for (int i = 0; i < count; i++)
        n[i] = _mm_cvtps_epi32(x[i]);
#pragma GCC unroll 4
    for (int i = 0; i < count; i++)
        r[i] = _mm_sub_ps(x[i], _mm_cvtepi32_ps(n[i]));
#pragma GCC unroll 4
    for (int i = 0; i < count; i++) { // 2 * 2^r by Estrin's scheme: a shorter chain than Horner's
        r2[i] = _mm_mul_ps(r[i], r[i]);
        hi[i] = _mm_add_ps(_mm_mul_ps(S_K(k, S_P5), r[i]), S_K(k, S_P4));
    }
#pragma GCC unroll 4
    for (int i = 0; i < count; i++) {
        lo[i] = _mm_add_ps(_mm_mul_ps(S_K(k, S_P3), r[i]), S_K(k, S_P2));
        hi[i] = _mm_add_ps(lo[i], _mm_mul_ps(r2[i], hi[i]));
    }
#pragma GCC unroll 4
    for (int i = 0; i < count; i++) {
        lo[i] = _mm_add_ps(_mm_mul_ps(S_K(k, S_P1), r[i]), S_K(k, S_P0));
        x[i] = _mm_add_ps(lo[i], _mm_mul_ps(r2[i], hi[i]));
    }
#pragma GCC unroll 4
    for (int i = 0; i < count; i++) { // times 2^(n-1)
        __m128i bits = _mm_slli_epi32(_mm_add_epi32(n[i], _mm_castps_si128(S_K(k, S_BIAS))), 23);
        x[i] = _mm_mul_ps(x[i], _mm_castsi128_ps(bits));
    }
}

/* The parameters, broadcast. */
typedef struct {
    __m128 gamma, lambda, rho_bar, c_bar, pg_rho_bar;
    const float (*k)[4]; // s_consts
} s_params4_t;

/* The elementwise terms of four steps of one segment, or of one step of
   four segments: the TD error td, the discount disc, the trace factor
   a = disc c, delta = rho td and the policy-gradient clip pa. */
typedef struct {
    __m128 td, disc, a, delta, pa;
} s_terms_t;

static inline s_terms_t s_terms(const s_params4_t *p, __m128 v0, __m128 v1, __m128 r, __m128 d,
                                __m128 ratio)
{
    s_terms_t e;
    e.disc = _mm_mul_ps(p->gamma, _mm_sub_ps(S_K(p->k, S_ONE), d));
    e.td = _mm_sub_ps(_mm_add_ps(r, _mm_mul_ps(e.disc, v1)), v0);
    e.a = _mm_mul_ps(e.disc, _mm_mul_ps(p->lambda, _mm_min_ps(p->c_bar, ratio)));
    e.delta = _mm_mul_ps(_mm_min_ps(p->rho_bar, ratio), e.td);
    e.pa = _mm_min_ps(p->pg_rho_bar, ratio);
    return e;
}

/* Four segments side by side: row k of values starts at v + k * v_stride,
   row k of the other arrays at r + k * stride (and so on). Lanes may name
   the same segment twice; it is then written twice with the same bytes. */
typedef struct {
    const float *v, *r, *d, *lr;
    float *vs, *pg;
    long v_stride, stride;
} s_block_t;

/* Tile row k: steps t0 .. t0 + 3 of segment k. */
static inline s_terms_t s_row(const s_params4_t *p, const s_block_t *b, int k, int t0, __m128 ratio)
{
    const float *v = b->v + k * b->v_stride + t0;
    long at = k * b->stride + t0;
    return s_terms(p, _mm_loadu_ps(v), _mm_loadu_ps(v + 1), _mm_loadu_ps(b->r + at),
                   _mm_loadu_ps(b->d + at), ratio);
}

/* Finishes tile row k given next = acc_{t0+1} .. acc_{t0+4} of segment k. */
static inline void s_row_store(const s_block_t *b, int k, int t0, const s_terms_t *e, __m128 next)
{
    __m128 acc = _mm_add_ps(e->delta, _mm_mul_ps(e->a, next));
    __m128 v0 = _mm_loadu_ps(b->v + k * b->v_stride + t0);
    long at = k * b->stride + t0;
    _mm_storeu_ps(b->pg + at, _mm_mul_ps(e->pa, _mm_add_ps(e->td, _mm_mul_ps(e->disc, next))));
    _mm_storeu_ps(b->vs + at, _mm_add_ps(v0, acc));
}

/* Steps t0 .. t0 + 3 of the block's segments; acc holds acc_{t0+4} of
   segment k in lane k and is returned as acc_{t0}. */
static inline __m128 s_tile(const s_params4_t *p, const s_block_t *b, int t0, __m128 acc)
{
    __m128 ratio[S_LANES]; // the four rows' exps side by side: four chains at once
#pragma GCC unroll 4
    for (int k = 0; k < S_LANES; k++)
        ratio[k] = _mm_loadu_ps(b->lr + k * b->stride + t0);
    s_exp4(p->k, ratio, S_LANES);
    s_terms_t e0 = s_row(p, b, 0, t0, ratio[0]), e1 = s_row(p, b, 1, t0, ratio[1]);
    s_terms_t e2 = s_row(p, b, 2, t0, ratio[2]), e3 = s_row(p, b, 3, t0, ratio[3]);
    __m128 d0 = e0.delta, d1 = e1.delta, d2 = e2.delta, d3 = e3.delta;
    __m128 a0 = e0.a, a1 = e1.a, a2 = e2.a, a3 = e3.a;
    _MM_TRANSPOSE4_PS(d0, d1, d2, d3); // now dj, aj: step t0 + j, lane k: segment k
    _MM_TRANSPOSE4_PS(a0, a1, a2, a3);
    __m128 n3 = acc; // nj: acc_{t0+j+1}
    __m128 n2 = _mm_add_ps(d3, _mm_mul_ps(a3, n3));
    __m128 n1 = _mm_add_ps(d2, _mm_mul_ps(a2, n2));
    __m128 n0 = _mm_add_ps(d1, _mm_mul_ps(a1, n1));
    acc = _mm_add_ps(d0, _mm_mul_ps(a0, n0));
    _MM_TRANSPOSE4_PS(n0, n1, n2, n3); // now nk: segment k
    s_row_store(b, 0, t0, &e0, n0);
    s_row_store(b, 1, t0, &e1, n1);
    s_row_store(b, 2, t0, &e2, n2);
    s_row_store(b, 3, t0, &e3, n3);
    return acc;
}

/* Lane k of v[k * stride + t] for k < 4. */
static inline __m128 s_gather(const float *v, long stride, int t)
{
    return _mm_setr_ps(v[t], v[stride + t], v[2 * stride + t], v[3 * stride + t]);
}

/* Step t of the block's segments, gathered lane by lane: for the T % 4
   last steps, which do not fill a tile. Returns acc_t given acc_{t+1}. */
static __m128 s_step(const s_params4_t *p, const s_block_t *b, int t, __m128 acc)
{
    __m128 v0 = s_gather(b->v, b->v_stride, t), ratio = s_gather(b->lr, b->stride, t);
    s_exp4(p->k, &ratio, 1);
    s_terms_t e = s_terms(p, v0, s_gather(b->v, b->v_stride, t + 1), s_gather(b->r, b->stride, t),
                          s_gather(b->d, b->stride, t), ratio);
    float vs[S_LANES], pg[S_LANES];
    _mm_storeu_ps(pg, _mm_mul_ps(e.pa, _mm_add_ps(e.td, _mm_mul_ps(e.disc, acc))));
    acc = _mm_add_ps(e.delta, _mm_mul_ps(e.a, acc));
    _mm_storeu_ps(vs, _mm_add_ps(v0, acc));
    for (int k = 0; k < S_LANES; k++) {
        b->vs[k * b->stride + t] = vs[k];
        b->pg[k * b->stride + t] = pg[k];
    }
    return acc;
}

/* All T steps of the block's segments, backward from the bootstrap. */
static void s_block(const s_params4_t *p, const s_block_t *b, int T)
{
    __m128 acc = _mm_setzero_ps(); // v_{t+1} - V(x_{t+1}); zero at the bootstrap
    int tiled = T - T % S_LANES;   // steps [0, tiled) go by tiles
    for (int t = T - 1; t >= tiled; t--)
        acc = s_step(p, b, t, acc);
    for (int t0 = tiled - S_LANES; t0 >= 0; t0 -= S_LANES)
        acc = s_tile(p, b, t0, acc);
}

void vl_vtrace(const vl_vtrace_params_t *p, int n, int T, const float *values, const float *rewards,
               const float *dones, const float *log_rhos, float *vs, float *pg_adv)
{
    s_params4_t p4 = {.gamma = _mm_set1_ps(p->gamma),
                      .lambda = _mm_set1_ps(p->lambda),
                      .rho_bar = _mm_set1_ps(p->rho_bar),
                      .c_bar = _mm_set1_ps(p->c_bar),
                      .pg_rho_bar = _mm_set1_ps(p->pg_rho_bar)};
    const float(*volatile consts)[4] = s_consts;
    p4.k = consts;
    /* Blocks of four consecutive segments; the last block ends at n - 1 and
       may redo a few segments of the one before. With fewer than four
       segments each has a block to itself, in all four lanes (stride 0). */
    int wide = n >= S_LANES;
    for (long i = 0; i < n && T > 0; i += wide ? S_LANES : 1) {
        long first = !wide || i + S_LANES <= n ? i : n - S_LANES;
        s_block_t b = {.v = values + first * (T + 1),
                       .r = rewards + first * T,
                       .d = dones + first * T,
                       .lr = log_rhos + first * T,
                       .vs = vs + first * T,
                       .pg = pg_adv + first * T,
                       .v_stride = wide ? T + 1 : 0,
                       .stride = wide ? T : 0};
        s_block(&p4, &b, T);
    }
}

#endif
