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
    registers (and their spills): no scratch memory.

    Where the CPU has AVX2 and FMA (asked once, at the first call), the same
    scheme runs on eight segments at once: each 256-bit row holds four steps
    of segment k in its low half and of segment k + 4 in its high half, so
    the transposes are two 4x4 ones side by side, one per 128-bit half, and
    lane j of a per-step vector is segment j. It is compiled for AVX2 by a
    target attribute; the build itself stays plain x86-64. Without SSE2 a
    plain per-segment loop runs instead. All three do the same arithmetic in
    the same order, save the exp (s_exp4's error is described above it; the
    AVX2 one is the same polynomial) and AVX2's fused multiply-adds, which
    round once where the others round twice.

    vl_vtrace_boot is the same code compiled a second time, with_boot a
    constant 1 where vl_vtrace has 0: each tile row loads its boot row too
    and takes gamma done_t boot_t from V(x_t) inside the TD error (s_less_boot
    says why there), and each tile prefetches a slice of the next block's
    boot rows (s_next_block says why). vl_vtrace's copy never reads boot and
    does the arithmetic it did before vl_vtrace_boot existed. */
#include "vtrace.h"

#include <math.h>
#include <stdatomic.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* AVX2 is compiled in where gcc or clang can target it per function. */
#if defined(__SSE2__) && (defined(__x86_64__) || defined(__i386__)) &&                             \
    (defined(__GNUC__) || defined(__clang__))
#define S_HAVE_AVX2 1
#include <immintrin.h>
#define S_AVX2 __attribute__((target("avx2,fma")))
#else
#define S_HAVE_AVX2 0
#endif

/* Inlined into every caller even where gcc would rather not: the SIMD
   bodies below are written once and compiled twice, without and with the
   truncation bootstrap, and the copy without must stay vl_vtrace's code. */
#if defined(__GNUC__) || defined(__clang__)
#define S_INLINE static inline __attribute__((always_inline))
#else
#define S_INLINE static inline
#endif

/* An implementation of vl_vtrace_boot; boot NULL is vl_vtrace. */
typedef void s_impl_fn(const vl_vtrace_params_t *p, int n, int T, const float *values,
                       const float *rewards, const float *dones, const float *boot,
                       const float *log_rhos, float *vs, float *pg_adv);

/* ---- scalar: one segment at a time ---------------------------------------- */

/* The clip, or x when it is smaller; an infinite clip leaves x alone and a
   NaN x stays NaN (fminf would hide it behind the clip). */
static inline float s_clip(float clip, float x)
{
    return clip < x ? clip : x;
}

/* V(x_t) less the truncation bootstrap gamma boot_t (boot_t is 0 unless
   step t was truncated, so done_t need not multiply it), which the TD
   error adds: subtracted from V(x_t) rather than added to r_t because
   x - (+0) is x for every x, -0 included (x + (+0) turns -0 into +0), so a
   zero bootstrap leaves the TD error vl_vtrace's bit for bit. */
static inline float s_less_boot(float gamma, float boot, float v)
{
    return v - gamma * boot;
}

/* One segment: v has T + 1 values, the rest T entries each; boot may be
   NULL (no truncation), and is a constant NULL in vl_vtrace's copy. */
S_INLINE void s_segment(const vl_vtrace_params_t *p, int T, const float *v, const float *r,
                        const float *done, const float *boot, const float *log_rho, float *vs,
                        float *pg_adv)
{
    float acc = 0.0f; // v_{t+1} - V(x_{t+1}); zero at the bootstrap
    for (int t = T - 1; t >= 0; t--) {
        float ratio = expf(log_rho[t]);
        float disc = p->gamma * (1.0f - done[t]);
        float v0 = boot ? s_less_boot(p->gamma, boot[t], v[t]) : v[t];
        float td = r[t] + disc * v[t + 1] - v0;
        float a = disc * (p->lambda * s_clip(p->c_bar, ratio));
        pg_adv[t] = s_clip(p->pg_rho_bar, ratio) * (td + disc * acc);
        acc = s_clip(p->rho_bar, ratio) * td + a * acc;
        vs[t] = v[t] + acc;
    }
}

static void s_scalar(const vl_vtrace_params_t *p, int n, int T, const float *values,
                     const float *rewards, const float *dones, const float *boot,
                     const float *log_rhos, float *vs, float *pg_adv)
{
    for (int i = 0; i < n && T > 0; i++) {
        long row = (long)i * T;
        if (boot)
            s_segment(p, T, values + row + i, rewards + row, dones + row, boot + row,
                      log_rhos + row, vs + row, pg_adv + row);
        else
            s_segment(p, T, values + row + i, rewards + row, dones + row, NULL, log_rhos + row,
                      vs + row, pg_adv + row);
    }
}

/* ---- SSE2: four segments at a time ---------------------------------------- */

#ifdef __SSE2__

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

/* s_less_boot four wide. */
static inline __m128 s_less_boot4(const s_params4_t *p, __m128 v0, __m128 boot)
{
    return _mm_sub_ps(v0, _mm_mul_ps(p->gamma, boot));
}

/* Four segments side by side: row k of values starts at v + k * v_stride,
   row k of the other arrays at r + k * stride (and so on). Lanes may name
   the same segment twice; it is then written twice with the same bytes. */
typedef struct {
    const float *v, *r, *d, *boot, *lr; // boot: NULL in vl_vtrace
    float *vs, *pg;
    long v_stride, stride;
    const char *boot_next; // the next block's boot rows to prefetch, or NULL (s_next_block)
} s_block_t;

/* Returns the first segment of the block after the one at first, among
   n >= width segments in blocks of width laid out as s_sse2 and s_avx2
   do; the last block returns its own (a harmless prefetch). Each tile of
   four steps prefetches its share, 1 / (T / 4), of the next block's boot
   rows: one cache line with blocks of four segments, two with blocks of
   eight. The boot rows are one stream more than vl_vtrace reads, which
   the hardware prefetchers do not keep up with: without this,
   vl_vtrace_boot ran at about 0.85x vl_vtrace's speed on 4096 x 128
   segments (out of L2), with it about 0.9x. */
static inline long s_next_block(long first, int width, int n)
{
    return first + width <= n - width ? first + width : n - width;
}

/* The functions below that take with_boot are compiled twice, with a
   constant 0 (vl_vtrace: boot is never read) and 1 (vl_vtrace_boot). */

/* Tile row k: steps t0 .. t0 + 3 of segment k. */
S_INLINE s_terms_t s_row(const s_params4_t *p, const s_block_t *b, int k, int t0, __m128 ratio,
                         int with_boot)
{
    const float *v = b->v + k * b->v_stride + t0;
    long at = k * b->stride + t0;
    __m128 v0 = _mm_loadu_ps(v); // as the TD error sees it
    if (with_boot)
        v0 = s_less_boot4(p, v0, _mm_loadu_ps(b->boot + at));
    return s_terms(p, v0, _mm_loadu_ps(v + 1), _mm_loadu_ps(b->r + at), _mm_loadu_ps(b->d + at),
                   ratio);
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
S_INLINE __m128 s_tile(const s_params4_t *p, const s_block_t *b, int t0, __m128 acc, int with_boot)
{
    __m128 ratio[S_LANES]; // the four rows' exps side by side: four chains at once
#pragma GCC unroll 4
    for (int k = 0; k < S_LANES; k++)
        ratio[k] = _mm_loadu_ps(b->lr + k * b->stride + t0);
    if (with_boot && b->boot_next)
        _mm_prefetch(b->boot_next + 16 * t0, _MM_HINT_T0);
    s_exp4(p->k, ratio, S_LANES);
    s_terms_t e0 = s_row(p, b, 0, t0, ratio[0], with_boot);
    s_terms_t e1 = s_row(p, b, 1, t0, ratio[1], with_boot);
    s_terms_t e2 = s_row(p, b, 2, t0, ratio[2], with_boot);
    s_terms_t e3 = s_row(p, b, 3, t0, ratio[3], with_boot);
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
S_INLINE __m128 s_step(const s_params4_t *p, const s_block_t *b, int t, __m128 acc, int with_boot)
{
    __m128 v0 = s_gather(b->v, b->v_stride, t), ratio = s_gather(b->lr, b->stride, t);
    __m128 v0_td = with_boot ? s_less_boot4(p, v0, s_gather(b->boot, b->stride, t)) : v0;
    s_exp4(p->k, &ratio, 1);
    s_terms_t e = s_terms(p, v0_td, s_gather(b->v, b->v_stride, t + 1),
                          s_gather(b->r, b->stride, t), s_gather(b->d, b->stride, t), ratio);
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
S_INLINE void s_block(const s_params4_t *p, const s_block_t *b, int T, int with_boot)
{
    __m128 acc = _mm_setzero_ps(); // v_{t+1} - V(x_{t+1}); zero at the bootstrap
    int tiled = T - T % S_LANES;   // steps [0, tiled) go by tiles
    for (int t = T - 1; t >= tiled; t--)
        acc = s_step(p, b, t, acc, with_boot);
    for (int t0 = tiled - S_LANES; t0 >= 0; t0 -= S_LANES)
        acc = s_tile(p, b, t0, acc, with_boot);
}

S_INLINE void s_sse2_run(const vl_vtrace_params_t *p, int n, int T, const float *values,
                         const float *rewards, const float *dones, const float *boot,
                         const float *log_rhos, float *vs, float *pg_adv, int with_boot)
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
                       .boot = with_boot ? boot + first * T : NULL,
                       .lr = log_rhos + first * T,
                       .vs = vs + first * T,
                       .pg = pg_adv + first * T,
                       .v_stride = wide ? T + 1 : 0,
                       .stride = wide ? T : 0,
                       .boot_next = with_boot && wide
                                        ? (const char *)(boot + s_next_block(first, S_LANES, n) * T)
                                        : NULL};
        s_block(&p4, &b, T, with_boot);
    }
}

static void s_sse2(const vl_vtrace_params_t *p, int n, int T, const float *values,
                   const float *rewards, const float *dones, const float *boot,
                   const float *log_rhos, float *vs, float *pg_adv)
{
    if (boot)
        s_sse2_run(p, n, T, values, rewards, dones, boot, log_rhos, vs, pg_adv, 1);
    else
        s_sse2_run(p, n, T, values, rewards, dones, NULL, log_rhos, vs, pg_adv, 0);
}

/* ---- AVX2 + FMA: eight segments at a time --------------------------------- */

#if S_HAVE_AVX2

#define S_W 8 // segments per AVX2 block

#define S_X8(x)                                                                                    \
    {                                                                                              \
        x, x, x, x, x, x, x, x                                                                     \
    }

/* s_consts eight wide, for the same reason: memory operands. */
static const _Alignas(32) float s_consts8[S_NK][8] = {
    [S_LO] = S_X8(-87.0f),
    [S_HI] = S_X8(89.0f),
    [S_LOG2E] = S_X8(1.44269504f),
    [S_P5] = S_X8(2.652945412e-03f),
    [S_P4] = S_X8(1.934302530e-02f),
    [S_P3] = S_X8(1.110146749e-01f),
    [S_P2] = S_X8(4.804448418e-01f),
    [S_P1] = S_X8(1.386293955e+00f),
    [S_P0] = S_X8(2.0f),
    [S_ONE] = S_X8(1.0f),
    [S_BIAS] = S_X8(0x1p-149f * 126),
};

#define S_K8(k, name) _mm256_load_ps((k)[name])

/* s_exp4 eight wide, with the polynomial's steps fused: the same clamps,
   reduction and polynomial, so the same error bounds and edges. */
S_AVX2 static inline void s_exp8(const float (*k)[8], __m256 *x, int count)
{
    __m256i n[S_LANES];
    __m256 r[S_LANES], r2[S_LANES], lo[S_LANES], hi[S_LANES];
#pragma GCC unroll 4
    for (int i = 0; i < count; i++)
        x[i] = _mm256_mul_ps(_mm256_min_ps(S_K8(k, S_HI), _mm256_max_ps(S_K8(k, S_LO), x[i])),
                             S_K8(k, S_LOG2E));
#pragma GCC unroll 4
    for (int i = 0; i < count; i++)
        n[i] = _mm256_cvtps_epi32(x[i]);
#pragma GCC unroll 4
    for (int i = 0; i < count; i++)
        r[i] = _mm256_sub_ps(x[i], _mm256_cvtepi32_ps(n[i]));
#pragma GCC unroll 4
    for (int i = 0; i < count; i++) {
        r2[i] = _mm256_mul_ps(r[i], r[i]);
        hi[i] = _mm256_fmadd_ps(S_K8(k, S_P5), r[i], S_K8(k, S_P4));
        lo[i] = _mm256_fmadd_ps(S_K8(k, S_P3), r[i], S_K8(k, S_P2));
    }
#pragma GCC unroll 4
    for (int i = 0; i < count; i++) {
        hi[i] = _mm256_fmadd_ps(r2[i], hi[i], lo[i]);
        lo[i] = _mm256_fmadd_ps(S_K8(k, S_P1), r[i], S_K8(k, S_P0));
    }
#pragma GCC unroll 4
    for (int i = 0; i < count; i++)
        x[i] = _mm256_fmadd_ps(r2[i], hi[i], lo[i]);
#pragma GCC unroll 4
    for (int i = 0; i < count; i++) { // times 2^(n-1)
        __m256i bits =
            _mm256_slli_epi32(_mm256_add_epi32(n[i], _mm256_castps_si256(S_K8(k, S_BIAS))), 23);
        x[i] = _mm256_mul_ps(x[i], _mm256_castsi256_ps(bits));
    }
}

/* The parameters, broadcast. */
typedef struct {
    __m256 gamma, lambda, rho_bar, c_bar, pg_rho_bar;
    const float (*k)[8]; // s_consts8
} s_params8_t;

/* s_terms_t eight wide. */
typedef struct {
    __m256 td, disc, a, delta, pa;
} s_terms8_t;

S_AVX2 static inline s_terms8_t s_terms8(const s_params8_t *p, __m256 v0, __m256 v1, __m256 r,
                                         __m256 d, __m256 ratio)
{
    s_terms8_t e;
    e.disc = _mm256_mul_ps(p->gamma, _mm256_sub_ps(S_K8(p->k, S_ONE), d));
    e.td = _mm256_sub_ps(_mm256_fmadd_ps(e.disc, v1, r), v0);
    e.a = _mm256_mul_ps(e.disc, _mm256_mul_ps(p->lambda, _mm256_min_ps(p->c_bar, ratio)));
    e.delta = _mm256_mul_ps(_mm256_min_ps(p->rho_bar, ratio), e.td);
    e.pa = _mm256_min_ps(p->pg_rho_bar, ratio);
    return e;
}

/* s_less_boot eight wide, fused: one rounding. */
S_AVX2 static inline __m256 s_less_boot8(const s_params8_t *p, __m256 v0, __m256 boot)
{
    return _mm256_fnmadd_ps(p->gamma, boot, v0);
}

/* Four floats at x in the low half, four at x + apart in the high half. */
S_AVX2 static inline __m256 s_load2(const float *x, long apart)
{
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(x)), _mm_loadu_ps(x + apart),
                                1);
}

/* The inverse of s_load2. */
S_AVX2 static inline void s_store2(float *x, long apart, __m256 y)
{
    _mm_storeu_ps(x, _mm256_castps256_ps128(y));
    _mm_storeu_ps(x + apart, _mm256_extractf128_ps(y, 1));
}

/* A 4x4 transpose in each 128-bit half, as _MM_TRANSPOSE4_PS. */
S_AVX2 static inline void s_transpose8(__m256 *r0, __m256 *r1, __m256 *r2, __m256 *r3)
{
    __m256 t0 = _mm256_unpacklo_ps(*r0, *r1), t1 = _mm256_unpacklo_ps(*r2, *r3);
    __m256 t2 = _mm256_unpackhi_ps(*r0, *r1), t3 = _mm256_unpackhi_ps(*r2, *r3);
    *r0 = _mm256_shuffle_ps(t0, t1, 0x44);
    *r1 = _mm256_shuffle_ps(t0, t1, 0xee);
    *r2 = _mm256_shuffle_ps(t2, t3, 0x44);
    *r3 = _mm256_shuffle_ps(t2, t3, 0xee);
}

/* Tile row k (0 .. 3): steps t0 .. t0 + 3 of segment k in the low half,
   of segment k + 4 in the high half. */
S_AVX2 S_INLINE s_terms8_t s_row8(const s_params8_t *p, const s_block_t *b, int k, int t0,
                                  __m256 ratio, int with_boot)
{
    const float *v = b->v + k * b->v_stride + t0;
    long at = k * b->stride + t0, v4 = 4 * b->v_stride, s4 = 4 * b->stride;
    __m256 v0 = s_load2(v, v4); // as the TD error sees it
    if (with_boot)
        v0 = s_less_boot8(p, v0, s_load2(b->boot + at, s4));
    return s_terms8(p, v0, s_load2(v + 1, v4), s_load2(b->r + at, s4), s_load2(b->d + at, s4),
                    ratio);
}

/* Finishes tile row k given next = acc_{t0+1} .. acc_{t0+4} in its layout. */
S_AVX2 static inline void s_row_store8(const s_block_t *b, int k, int t0, const s_terms8_t *e,
                                       __m256 next)
{
    __m256 acc = _mm256_fmadd_ps(e->a, next, e->delta);
    __m256 v0 = s_load2(b->v + k * b->v_stride + t0, 4 * b->v_stride);
    long at = k * b->stride + t0, s4 = 4 * b->stride;
    s_store2(b->pg + at, s4, _mm256_mul_ps(e->pa, _mm256_fmadd_ps(e->disc, next, e->td)));
    s_store2(b->vs + at, s4, _mm256_add_ps(v0, acc));
}

/* Steps t0 .. t0 + 3 of the block's eight segments; lane j of acc is
   segment j's acc_{t0+4}, returned as acc_{t0}. */
S_AVX2 S_INLINE __m256 s_tile8(const s_params8_t *p, const s_block_t *b, int t0, __m256 acc,
                               int with_boot)
{
    __m256 ratio[S_LANES];
#pragma GCC unroll 4
    for (int k = 0; k < S_LANES; k++)
        ratio[k] = s_load2(b->lr + k * b->stride + t0, 4 * b->stride);
    if (with_boot) {
        _mm_prefetch(b->boot_next + 32 * t0, _MM_HINT_T0);
        _mm_prefetch(b->boot_next + 32 * t0 + 64, _MM_HINT_T0);
    }
    s_exp8(p->k, ratio, S_LANES);
    s_terms8_t e0 = s_row8(p, b, 0, t0, ratio[0], with_boot);
    s_terms8_t e1 = s_row8(p, b, 1, t0, ratio[1], with_boot);
    s_terms8_t e2 = s_row8(p, b, 2, t0, ratio[2], with_boot);
    s_terms8_t e3 = s_row8(p, b, 3, t0, ratio[3], with_boot);
    __m256 d0 = e0.delta, d1 = e1.delta, d2 = e2.delta, d3 = e3.delta;
    __m256 a0 = e0.a, a1 = e1.a, a2 = e2.a, a3 = e3.a;
    s_transpose8(&d0, &d1, &d2, &d3); // now dj, aj: step t0 + j, lane k: segment k
    s_transpose8(&a0, &a1, &a2, &a3);
    __m256 n3 = acc; // nj: acc_{t0+j+1}
    __m256 n2 = _mm256_fmadd_ps(a3, n3, d3);
    __m256 n1 = _mm256_fmadd_ps(a2, n2, d2);
    __m256 n0 = _mm256_fmadd_ps(a1, n1, d1);
    acc = _mm256_fmadd_ps(a0, n0, d0);
    s_transpose8(&n0, &n1, &n2, &n3); // back to rows
    s_row_store8(b, 0, t0, &e0, n0);
    s_row_store8(b, 1, t0, &e1, n1);
    s_row_store8(b, 2, t0, &e2, n2);
    s_row_store8(b, 3, t0, &e3, n3);
    return acc;
}

/* Lane k of v[k * stride + t] for k < 8. */
S_AVX2 static inline __m256 s_gather8(const float *v, long stride, int t)
{
    return _mm256_setr_ps(v[t], v[stride + t], v[2 * stride + t], v[3 * stride + t],
                          v[4 * stride + t], v[5 * stride + t], v[6 * stride + t],
                          v[7 * stride + t]);
}

/* s_step eight wide: one of the T % 4 last steps. */
S_AVX2 S_INLINE __m256 s_step8(const s_params8_t *p, const s_block_t *b, int t, __m256 acc,
                               int with_boot)
{
    __m256 v0 = s_gather8(b->v, b->v_stride, t), ratio = s_gather8(b->lr, b->stride, t);
    __m256 v0_td = with_boot ? s_less_boot8(p, v0, s_gather8(b->boot, b->stride, t)) : v0;
    s_exp8(p->k, &ratio, 1);
    s_terms8_t e = s_terms8(p, v0_td, s_gather8(b->v, b->v_stride, t + 1),
                            s_gather8(b->r, b->stride, t), s_gather8(b->d, b->stride, t), ratio);
    float vs[S_W], pg[S_W];
    _mm256_storeu_ps(pg, _mm256_mul_ps(e.pa, _mm256_fmadd_ps(e.disc, acc, e.td)));
    acc = _mm256_fmadd_ps(e.a, acc, e.delta);
    _mm256_storeu_ps(vs, _mm256_add_ps(v0, acc));
    for (int k = 0; k < S_W; k++) {
        b->vs[k * b->stride + t] = vs[k];
        b->pg[k * b->stride + t] = pg[k];
    }
    return acc;
}

/* All T steps of the block's eight segments, backward from the bootstrap. */
S_AVX2 S_INLINE void s_block8(const s_params8_t *p, const s_block_t *b, int T, int with_boot)
{
    __m256 acc = _mm256_setzero_ps();
    int tiled = T - T % S_LANES;
    for (int t = T - 1; t >= tiled; t--)
        acc = s_step8(p, b, t, acc, with_boot);
    for (int t0 = tiled - S_LANES; t0 >= 0; t0 -= S_LANES)
        acc = s_tile8(p, b, t0, acc, with_boot);
}

S_AVX2 S_INLINE void s_avx2_run(const vl_vtrace_params_t *p, int n, int T, const float *values,
                                const float *rewards, const float *dones, const float *boot,
                                const float *log_rhos, float *vs, float *pg_adv, int with_boot)
{
    s_params8_t p8 = {.gamma = _mm256_set1_ps(p->gamma),
                      .lambda = _mm256_set1_ps(p->lambda),
                      .rho_bar = _mm256_set1_ps(p->rho_bar),
                      .c_bar = _mm256_set1_ps(p->c_bar),
                      .pg_rho_bar = _mm256_set1_ps(p->pg_rho_bar)};
    const float(*volatile consts)[8] = s_consts8;
    p8.k = consts;
    /* Blocks of eight consecutive segments; the last ends at n - 1 and may
       redo a few segments of the one before, with the same bytes. */
    for (long i = 0; i < n && T > 0; i += S_W) {
        long first = i + S_W <= n ? i : n - S_W;
        s_block_t b = {
            .v = values + first * (T + 1),
            .r = rewards + first * T,
            .d = dones + first * T,
            .boot = with_boot ? boot + first * T : NULL,
            .lr = log_rhos + first * T,
            .vs = vs + first * T,
            .pg = pg_adv + first * T,
            .v_stride = T + 1,
            .stride = T,
            .boot_next = with_boot ? (const char *)(boot + s_next_block(first, S_W, n) * T) : NULL};
        s_block8(&p8, &b, T, with_boot);
    }
}

S_AVX2 static void s_avx2(const vl_vtrace_params_t *p, int n, int T, const float *values,
                          const float *rewards, const float *dones, const float *boot,
                          const float *log_rhos, float *vs, float *pg_adv)
{
    if (n < S_W) // too few segments for a block: four at a time
        s_sse2(p, n, T, values, rewards, dones, boot, log_rhos, vs, pg_adv);
    else if (boot)
        s_avx2_run(p, n, T, values, rewards, dones, boot, log_rhos, vs, pg_adv, 1);
    else
        s_avx2_run(p, n, T, values, rewards, dones, NULL, log_rhos, vs, pg_adv, 0);
}

#endif // S_HAVE_AVX2

#endif // __SSE2__

/* ---- dispatch -------------------------------------------------------------- */

/* The paths, best last; vl_vtrace_path's argument. */
enum { S_PATH_AUTO = -1, S_PATH_SCALAR, S_PATH_SSE2, S_PATH_AVX2 };

/* Returns path's implementation, or NULL when this build or CPU lacks it. */
static s_impl_fn *s_path_impl(int path)
{
    switch (path) {
    case S_PATH_SCALAR:
        return s_scalar;
#ifdef __SSE2__
    case S_PATH_SSE2:
        return s_sse2;
#endif
#if S_HAVE_AVX2
    case S_PATH_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? s_avx2 : NULL;
#endif
    default:
        return NULL;
    }
}

/* The implementation in use; NULL until the first call picks the best.
   Racing first calls pick the same one, so relaxed order suffices. */
static _Atomic(s_impl_fn *) s_impl;

/* Returns the best path this build and CPU have. */
static int s_best_path(void)
{
    int path = S_PATH_AVX2;
    while (!s_path_impl(path))
        path--;
    return path;
}

int vl_vtrace_path(int path)
{
    if (path == S_PATH_AUTO)
        path = s_best_path();
    s_impl_fn *fn = s_path_impl(path);
    if (!fn)
        return -1;
    atomic_store_explicit(&s_impl, fn, memory_order_relaxed);
    return path;
}

/* Returns the implementation in use, picking the best at the first call. */
static s_impl_fn *s_current(void)
{
    s_impl_fn *fn = atomic_load_explicit(&s_impl, memory_order_relaxed);
    if (!fn) {
        fn = s_path_impl(s_best_path());
        atomic_store_explicit(&s_impl, fn, memory_order_relaxed);
    }
    return fn;
}

void vl_vtrace(const vl_vtrace_params_t *p, int n, int T, const float *values, const float *rewards,
               const float *dones, const float *log_rhos, float *vs, float *pg_adv)
{
    s_current()(p, n, T, values, rewards, dones, NULL, log_rhos, vs, pg_adv);
}

void vl_vtrace_boot(const vl_vtrace_params_t *p, int n, int T, const float *values,
                    const float *rewards, const float *dones, const float *boot,
                    const float *log_rhos, float *vs, float *pg_adv)
{
    s_current()(p, n, T, values, rewards, dones, boot, log_rhos, vs, pg_adv);
}
