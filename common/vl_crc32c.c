/*  vl_crc32c: CRC-32C with a run-time choice of the SSE4.2 instruction or a
    slicing-by-8 table.

    The hardware path follows Mark Adler's crc32c.c: one crc32 instruction
    has a latency of three cycles but a throughput of one per cycle, so it
    runs three independent streams over three adjacent blocks and then
    joins them by "shifting" the first CRCs over the later blocks' lengths
    (multiplying by x^(8 len) mod P, done with four table look-ups). The
    combine arithmetic (multmodp, x2nmodp) is zlib's. */
#include "vl_crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define S_HAVE_X86 1
#else
#define S_HAVE_X86 0
#endif

#define S_POLY  0x82F63B78u // Castagnoli, bit-reversed
#define S_LONG  8192        // bytes per stream in the big three-stream loop
#define S_SHORT 256         // per stream in the small loop, for the rest

static uint32_t s_table[8][256];      // [k][b]: CRC register of byte b then k zero bytes
static uint32_t s_x2n[32];            // x^(2^k) mod P
static uint32_t s_shift_long[4][256]; // multiply by x^(8 S_LONG), a byte of the register at a time
static uint32_t s_shift_short[4][256];
static int s_hw_ok;
static pthread_once_t s_once = PTHREAD_ONCE_INIT;

/* Returns a * b mod P in the reflected representation (bit 31 is x^0);
   a must not be zero. */
static uint32_t s_multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ S_POLY : b >> 1;
    }
    return p;
}

/* Returns x^(n 2^k) mod P. */
static uint32_t s_x2nmodp(uint64_t n, unsigned k)
{
    uint32_t p = 1u << 31; // x^0
    while (n) {
        if (n & 1)
            p = s_multmodp(s_x2n[k & 31], p);
        n >>= 1;
        k++;
    }
    return p;
}

static void s_shift_table(uint32_t table[4][256], uint64_t len)
{
    uint32_t op = s_x2nmodp(len, 3);
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 0; k < 4; k++)
            table[k][b] = s_multmodp(op, b << (8 * k));
}

static void s_init(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++)
            c = c & 1 ? (c >> 1) ^ S_POLY : c >> 1;
        s_table[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int b = 0; b < 256; b++)
            s_table[k][b] = (s_table[k - 1][b] >> 8) ^ s_table[0][s_table[k - 1][b] & 0xff];
    uint32_t p = 1u << 30; // x^1
    s_x2n[0] = p;
    for (int k = 1; k < 32; k++)
        s_x2n[k] = p = s_multmodp(p, p);
    s_shift_table(s_shift_long, S_LONG);
    s_shift_table(s_shift_short, S_SHORT);
#if S_HAVE_X86
    __builtin_cpu_init();
    s_hw_ok = __builtin_cpu_supports("sse4.2") != 0;
#endif
}

static uint64_t s_load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

uint32_t vl_crc32c_sw(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&s_once, s_init);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = s_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        n--;
    }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w = s_load64(p) ^ c;
        c = s_table[7][w & 0xff] ^ s_table[6][(w >> 8) & 0xff] ^ s_table[5][(w >> 16) & 0xff] ^
            s_table[4][(w >> 24) & 0xff] ^ s_table[3][(w >> 32) & 0xff] ^
            s_table[2][(w >> 40) & 0xff] ^ s_table[1][(w >> 48) & 0xff] ^ s_table[0][w >> 56];
    }
#endif
    while (n--)
        c = s_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

#if S_HAVE_X86
/* Returns the register crc moved past len zero bytes (table for that len). */
static uint32_t s_shift(uint32_t table[4][256], uint32_t crc)
{
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^
           table[3][crc >> 24];
}

/* Runs three streams over blocks [0, len), [len, 2 len), [2 len, 3 len)
   of p and returns the register after all three. */
__attribute__((target("sse4.2"))) static uint32_t s_hw3(uint32_t crc, const unsigned char *p,
                                                        size_t len, uint32_t table[4][256])
{
    uint64_t c0 = crc, c1 = 0, c2 = 0;
    for (const unsigned char *end = p + len; p < end; p += 8) {
        c0 = _mm_crc32_u64(c0, s_load64(p));
        c1 = _mm_crc32_u64(c1, s_load64(p + len));
        c2 = _mm_crc32_u64(c2, s_load64(p + 2 * len));
    }
    uint32_t c = s_shift(table, (uint32_t)c0) ^ (uint32_t)c1;
    return s_shift(table, c) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t s_hw(uint32_t crc, const unsigned char *p,
                                                       size_t n)
{
    uint32_t c = ~crc;
    for (; n && ((uintptr_t)p & 7); n--)
        c = _mm_crc32_u8(c, *p++);
    for (; n >= 3 * S_LONG; p += 3 * S_LONG, n -= 3 * S_LONG)
        c = s_hw3(c, p, S_LONG, s_shift_long);
    for (; n >= 3 * S_SHORT; p += 3 * S_SHORT, n -= 3 * S_SHORT)
        c = s_hw3(c, p, S_SHORT, s_shift_short);
    uint64_t c64 = c;
    for (; n >= 8; p += 8, n -= 8)
        c64 = _mm_crc32_u64(c64, s_load64(p));
    c = (uint32_t)c64;
    for (; n; n--)
        c = _mm_crc32_u8(c, *p++);
    return ~c;
}
#endif

uint32_t vl_crc32c_hw(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&s_once, s_init);
#if S_HAVE_X86
    if (s_hw_ok)
        return s_hw(crc, data, n);
#endif
    return vl_crc32c_sw(crc, data, n);
}

int vl_crc32c_hw_available(void)
{
    pthread_once(&s_once, s_init);
    return s_hw_ok;
}

uint32_t vl_crc32c(uint32_t crc, const void *data, size_t n)
{
    return vl_crc32c_hw(crc, data, n);
}

uint32_t vl_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    pthread_once(&s_once, s_init);
    return s_multmodp(s_x2nmodp(len_b, 3), crc_a) ^ crc_b;
}
