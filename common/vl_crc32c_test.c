/*  Tests of vl_crc32c: published check values, RFC 3720 B.4's iSCSI vectors,
    the hardware and table paths against a bit-at-a-time reference at every
    length and alignment, chaining and combining. */
#include "vl_crc32c.h"

#include <stdlib.h>
#include <string.h>

#include "../tests/vl_test.h"
#include "vl_rng.h"

#define S_MAX_LEN 1024

/* The definition, one bit at a time: independent of both real paths. */
static uint32_t s_ref(uint32_t crc, const unsigned char *p, size_t n)
{
    uint32_t c = ~crc;
    while (n--) {
        c ^= *p++;
        for (int i = 0; i < 8; i++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

static void s_fill(unsigned char *p, size_t n, uint64_t seed)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)vl_rng_next(&rng);
}

static void test_check_value(void)
{
    VL_CHECK(vl_crc32c(0, "123456789", 9) == 0xE3069283u);
    VL_CHECK(vl_crc32c_sw(0, "123456789", 9) == 0xE3069283u);
    VL_CHECK(vl_crc32c_hw(0, "123456789", 9) == 0xE3069283u);
    VL_CHECK(vl_crc32c(0, "", 0) == 0);
    VL_CHECK(vl_crc32c(0x12345678u, NULL, 0) == 0x12345678u);
}

/* RFC 3720 (iSCSI) appendix B.4. */
static void test_rfc3720_vectors(void)
{
    unsigned char buf[48];
    memset(buf, 0, 32);
    VL_CHECK(vl_crc32c(0, buf, 32) == 0x8A9136AAu);
    VL_CHECK(vl_crc32c_sw(0, buf, 32) == 0x8A9136AAu);
    memset(buf, 0xff, 32);
    VL_CHECK(vl_crc32c(0, buf, 32) == 0x62A8AB43u);
    VL_CHECK(vl_crc32c_sw(0, buf, 32) == 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)i;
    VL_CHECK(vl_crc32c(0, buf, 32) == 0x46DD794Eu);
    VL_CHECK(vl_crc32c_sw(0, buf, 32) == 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)(31 - i);
    VL_CHECK(vl_crc32c(0, buf, 32) == 0x113FDB5Cu);
    VL_CHECK(vl_crc32c_sw(0, buf, 32) == 0x113FDB5Cu);
    static const unsigned char read10[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
        0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    VL_CHECK(vl_crc32c(0, read10, 48) == 0xD9963A56u);
    VL_CHECK(vl_crc32c_sw(0, read10, 48) == 0xD9963A56u);
}

/* Every length 0..1024 at every misalignment 0..7: table, hardware and the
   bit-at-a-time reference agree. */
static void test_paths_agree_small(void)
{
    unsigned char *buf = malloc(S_MAX_LEN + 8);
    VL_CHECK(buf);
    s_fill(buf, S_MAX_LEN + 8, 1);
    int bad = 0;
    for (size_t len = 0; len <= S_MAX_LEN; len++)
        for (size_t off = 0; off < 8; off++) {
            uint32_t want = s_ref(0, buf + off, len);
            bad += vl_crc32c_sw(0, buf + off, len) != want;
            bad += vl_crc32c(0, buf + off, len) != want;
            if (vl_crc32c_hw_available())
                bad += vl_crc32c_hw(0, buf + off, len) != want;
        }
    free(buf);
    VL_CHECK(bad == 0);
}

/* Lengths that reach the hardware path's three-stream loops (3 x 8 KiB and
   3 x 256 bytes) with every remainder shape. */
static void test_paths_agree_large(void)
{
    size_t max = 3 * 3 * 8192 + 3 * 256 * 3 + 64;
    unsigned char *buf = malloc(max + 8);
    VL_CHECK(buf);
    s_fill(buf, max + 8, 2);
    vl_rng_t rng;
    vl_rng_seed(&rng, 3);
    int bad = 0;
    for (int i = 0; i < 300; i++) {
        size_t len = (size_t)(vl_rng_next(&rng) % max), off = (size_t)(vl_rng_next(&rng) % 8);
        if (i < 8)
            len = (size_t[]){24576, 24577, 24575, 49152, 768, 767, 769, 24576 + 768}[i];
        uint32_t want = s_ref(0, buf + off, len);
        bad += vl_crc32c_sw(0, buf + off, len) != want;
        bad += vl_crc32c(0, buf + off, len) != want;
    }
    free(buf);
    VL_CHECK(bad == 0);
    if (!vl_crc32c_hw_available())
        printf("     (no SSE4.2 on this CPU: hardware path not exercised)\n");
}

/* crc(crc(0, a), b) == crc(0, a || b) at every split of a buffer. */
static void test_chaining(void)
{
    unsigned char buf[2000];
    s_fill(buf, sizeof buf, 4);
    uint32_t whole = vl_crc32c(0, buf, sizeof buf);
    int bad = 0;
    for (size_t cut = 0; cut <= sizeof buf; cut++) {
        bad += vl_crc32c(vl_crc32c(0, buf, cut), buf + cut, sizeof buf - cut) != whole;
        bad += vl_crc32c_sw(vl_crc32c_sw(0, buf, cut), buf + cut, sizeof buf - cut) != whole;
    }
    VL_CHECK(bad == 0);
}

static void test_combine(void)
{
    unsigned char buf[5000];
    s_fill(buf, sizeof buf, 5);
    uint32_t whole = vl_crc32c(0, buf, sizeof buf);
    int bad = 0;
    for (size_t cut = 0; cut <= sizeof buf; cut += 7) {
        uint32_t a = vl_crc32c(0, buf, cut), b = vl_crc32c(0, buf + cut, sizeof buf - cut);
        bad += vl_crc32c_combine(a, b, sizeof buf - cut) != whole;
    }
    VL_CHECK(bad == 0);
}

int main(void)
{
    VL_RUN(test_check_value);
    VL_RUN(test_rfc3720_vectors);
    VL_RUN(test_paths_agree_small);
    VL_RUN(test_paths_agree_large);
    VL_RUN(test_chaining);
    VL_RUN(test_combine);
    return VL_DONE();
}
