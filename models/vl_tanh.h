/*  vl_tanh: a tanh that gcc vectorizes, shared by the MLP and the LSTM.
    Plain float operations only, so that it gives the same bits on every
    x86-64 (no libm call, whose results vary between versions). */
#ifndef VL_TANH_H
#define VL_TANH_H

#include <stdint.h>
#include <string.h>

/* Returns tanh(x) within 2.5e-7 relative; NaN stays NaN. libm's tanhf is
   scalar and was over half of a training step; this one vectorizes. It
   clamps with integer operations on the bits because under the default
   -ftrapping-math gcc does not turn a float compare into a vector select.
   tanh|x| = expm1(2|x|) / (expm1(2|x|) + 2) with 2|x| = (n + f) ln 2,
   |f| <= 1/2, and 2^f - 1 by its Taylor polynomial (error below 5e-9). */
static inline float vl_tanhf(float x)
{
    int32_t bits, abs_bits, out_bits;
    memcpy(&bits, &x, sizeof bits);
    int32_t sign = bits & INT32_MIN, nan = (bits & INT32_MAX) > 0x7f800000 ? 0x7fc00000 : 0;
    abs_bits = bits & INT32_MAX;
    abs_bits = abs_bits < 0x41100000 ? abs_bits : 0x41100000; // 9.0f: tanh(9) is 1 in float
    float a;
    memcpy(&a, &abs_bits, sizeof a);
    float t = a * 2.88539008f;       // 2|x| / ln 2, in [0, 26]
    int32_t n = (int32_t)(t + 0.5f); // nearest integer, t >= 0
    float f = t - (float)n;
    float q = 1.52527338e-5f; // sum (f ln2)^k / k!, k = 7 down to 1
    q = q * f + 1.54035304e-4f;
    q = q * f + 1.33335581e-3f;
    q = q * f + 9.61812911e-3f;
    q = q * f + 5.55041087e-2f;
    q = q * f + 2.40226507e-1f;
    q = q * f + 6.93147181e-1f;
    q = q * f;
    int32_t scale_bits = (n + 127) << 23; // 2^n
    float scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    float em1 = scale * q + (scale - 1.0f); // e^{2|x|} - 1, exact-ish near 0
    float r = em1 / (em1 + 2.0f);
    memcpy(&out_bits, &r, sizeof out_bits);
    out_bits |= sign | nan;
    memcpy(&r, &out_bits, sizeof r);
    return r;
}

#endif
