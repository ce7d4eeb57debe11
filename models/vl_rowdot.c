/*  vl_rowdot: small-batch row products on AVX-512; see vl_rowdot.h.

    A block is nr <= 4 rows by no <= 4 outputs, nr and no constants in each
    inlined copy so that its 16 accumulators live in registers. Per 16 k:
    one load of each row, one of each weight row, nr * no fused
    multiply-adds; the last k < 16 through masked loads (zeros add nothing).
    The block's accumulators are then reduced together: halves and quarters
    of the 512-bit registers added across (s_reduce), which leaves output
    (r, o) at lane 4 r + o of one register. Every accumulator passes through
    the same adds in the same order, wherever it sits in its block. Blocks
    go output-major: a block's weight rows stay in L1 while the rows pass. */
#include "vl_rowdot.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define S_HAVE_AVX512 1
#define S_AVX512      __attribute__((target("avx512f")))
#define S_INLINE      static inline __attribute__((always_inline))

/* Returns [a.q0 + a.q2, a.q1 + a.q3, b.q0 + b.q2, b.q1 + b.q3], q the
   128-bit quarters. */
S_INLINE S_AVX512 __m512 s_fold(__m512 a, __m512 b)
{
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
}

/* Returns the register whose quarter r holds the 4 partial sums of acc[r]. */
S_INLINE S_AVX512 __m512 s_quarters(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
    __m512 t0 = s_fold(a0, a1), t1 = s_fold(a2, a3);
    return _mm512_add_ps(_mm512_shuffle_f32x4(t0, t1, 0x88), _mm512_shuffle_f32x4(t0, t1, 0xDD));
}

/* Given u[o] with quarter r holding the partials of (r, o), returns the
   register with the sum of (r, o) at lane 4 r + o. */
S_INLINE S_AVX512 __m512 s_reduce(__m512 u0, __m512 u1, __m512 u2, __m512 u3)
{
    __m512 p01 = _mm512_add_ps(_mm512_unpacklo_ps(u0, u1), _mm512_unpackhi_ps(u0, u1));
    __m512 p23 = _mm512_add_ps(_mm512_unpacklo_ps(u2, u3), _mm512_unpackhi_ps(u2, u3));
    return _mm512_add_ps(_mm512_shuffle_ps(p01, p23, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(p01, p23, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* Adds part p's products of rows a [nr][k] and weight rows w [no][k] into acc. */
S_INLINE S_AVX512 void s_part(const int nr, const int no, const vl_rowdot_part_t *p, const float *a,
                              const float *w, __m512 acc[4][4])
{
    size_t k = 0, K = p->k, lda = p->lda;
    for (; k + 16 <= K; k += 16) {
        __m512 wv[4];
#pragma GCC unroll 4
        for (int o = 0; o < no; o++)
            wv[o] = _mm512_loadu_ps(w + o * K + k);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            __m512 x = _mm512_loadu_ps(a + r * lda + k);
#pragma GCC unroll 4
            for (int o = 0; o < no; o++)
                acc[r][o] = _mm512_fmadd_ps(x, wv[o], acc[r][o]);
        }
    }
    if (k < K) {
        __mmask16 mask = (__mmask16)((1u << (K - k)) - 1);
        __m512 wv[4];
#pragma GCC unroll 4
        for (int o = 0; o < no; o++)
            wv[o] = _mm512_maskz_loadu_ps(mask, w + o * K + k);
#pragma GCC unroll 4
        for (int r = 0; r < nr; r++) {
            __m512 x = _mm512_maskz_loadu_ps(mask, a + r * lda + k);
#pragma GCC unroll 4
            for (int o = 0; o < no; o++)
                acc[r][o] = _mm512_fmadd_ps(x, wv[o], acc[r][o]);
        }
    }
}

/* One block: rows i0 .. i0 + nr, outputs j0 .. j0 + no. */
S_INLINE S_AVX512 void s_block(const int nr, const int no, size_t i0, size_t j0,
                               const vl_rowdot_part_t *parts, int nparts, const float *init,
                               int accumulate, float *c, size_t ldc)
{
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
        for (int o = 0; o < 4; o++)
            acc[r][o] = _mm512_setzero_ps();
    for (int p = 0; p < nparts; p++)
        s_part(nr, no, &parts[p], parts[p].a + i0 * parts[p].lda, parts[p].w + j0 * parts[p].k,
               acc);
    __m512 sums = s_reduce(s_quarters(acc[0][0], acc[1][0], acc[2][0], acc[3][0]),
                           s_quarters(acc[0][1], acc[1][1], acc[2][1], acc[3][1]),
                           s_quarters(acc[0][2], acc[1][2], acc[2][2], acc[3][2]),
                           s_quarters(acc[0][3], acc[1][3], acc[2][3], acc[3][3]));
    float s[16];
    _mm512_storeu_ps(s, sums);
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
        float *cr = c + (i0 + r) * ldc + j0;
        if (no == 4) { // the row's 4 outputs at once, the same one add each
            __m128 base = accumulate ? _mm_loadu_ps(cr)
                          : init     ? _mm_loadu_ps(init + j0)
                                     : _mm_setzero_ps();
            _mm_storeu_ps(cr, _mm_add_ps(base, _mm_loadu_ps(s + 4 * r)));
            continue;
        }
#pragma GCC unroll 4
        for (int o = 0; o < no; o++)
            cr[o] = (accumulate ? cr[o] : init ? init[j0 + o] : 0.0f) + s[4 * r + o];
    }
}

/* The block of nr rows and no outputs, with both sizes constants. */
#define S_CASE(R, O)                                                                               \
    case (R)*8 + (O):                                                                              \
        s_block(R, O, i, j, parts, nparts, init, accumulate, c, ldc);                              \
        break

static S_AVX512 void s_run_avx512(size_t m, size_t n, const vl_rowdot_part_t *parts, int nparts,
                                  const float *init, int accumulate, float *c, size_t ldc)
{
    for (size_t j = 0; j < n; j += 4) {
        size_t no = n - j < 4 ? n - j : 4;
        for (size_t i = 0; i < m; i += 4) {
            size_t nr = m - i < 4 ? m - i : 4;
            switch (nr * 8 + no) {
                S_CASE(4, 4);
                S_CASE(4, 3);
                S_CASE(4, 2);
                S_CASE(4, 1);
                S_CASE(3, 4);
                S_CASE(3, 3);
                S_CASE(3, 2);
                S_CASE(3, 1);
                S_CASE(2, 4);
                S_CASE(2, 3);
                S_CASE(2, 2);
                S_CASE(2, 1);
                S_CASE(1, 4);
                S_CASE(1, 3);
                S_CASE(1, 2);
            default:
                s_block(1, 1, i, j, parts, nparts, init, accumulate, c, ldc);
                break;
            }
        }
    }
}
#else
#define S_HAVE_AVX512 0
#endif

int vl_rowdot_available(void)
{
#if S_HAVE_AVX512
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

void vl_rowdot_run(size_t m, size_t n, const vl_rowdot_part_t *parts, int nparts, const float *init,
                   int accumulate, float *c, size_t ldc)
{
#if S_HAVE_AVX512
    s_run_avx512(m, n, parts, nparts > VL_ROWDOT_PARTS ? VL_ROWDOT_PARTS : nparts, init, accumulate,
                 c, ldc);
#else
    (void)m, (void)n, (void)parts, (void)nparts, (void)init, (void)accumulate, (void)c, (void)ldc;
#endif
}
