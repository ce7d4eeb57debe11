/*  vl_sampler_test: vl_sampler's draws against the probabilities the test
    sets (chi-square tests at fixed seeds), its weights against the formula
    recomputed here, and its sum-tree against a plain sum of the leaves. */
#include "vl_sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_DRAWS   200000 // draws per chi-square test
#define S_MAX_CAP 64     // largest capacity a frequency test uses

/* Upper-tail p = 0.001 critical values of the chi-square distribution for
   1..15 degrees of freedom, [0] unused (computed from the regularized
   incomplete gamma function; they match the printed tables). With the seeds
   fixed a correct sampler passes every time; a wrong distribution over 200k
   draws exceeds these by orders of magnitude. */
static const double s_chi2_p001[] = {
    0.0,    10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322,
    26.124, 27.877, 29.588, 31.264, 32.909, 34.528, 36.123, 37.697,
};

/* Returns the chi-square critical value for dof at p = 0.001, or 0. */
static double s_chi2_crit(uint32_t dof)
{
    return dof < sizeof s_chi2_p001 / sizeof s_chi2_p001[0] ? s_chi2_p001[dof] : 0.0;
}

/* Draws `draws` slots in calls of batch at beta 0 and counts them in
   counts[capacity]. Returns 0, or -1 if a call returned short, a slot was
   out of range or a weight was not 1. */
static int s_draw(vl_sampler_t *s, uint32_t capacity, uint32_t draws, uint32_t batch,
                  uint64_t *counts)
{
    uint32_t *slots = malloc(batch * sizeof *slots);
    float *weights = malloc(batch * sizeof *weights);
    int rc = slots && weights ? 0 : -1;
    memset(counts, 0, capacity * sizeof *counts);
    for (uint32_t done = 0; rc == 0 && done < draws; done += batch) {
        if (vl_sampler_sample(s, batch, 0.0f, slots, weights) != batch)
            rc = -1;
        for (uint32_t k = 0; rc == 0 && k < batch; k++) {
            if (slots[k] >= capacity || weights[k] != 1.0f)
                rc = -1;
            else
                counts[slots[k]]++;
        }
    }
    free(slots);
    free(weights);
    return rc;
}

/* Returns the chi-square statistic of counts[capacity] against the
   probabilities p[i] / sum p over the slots with p > 0, and their number
   less one in *dof. Returns INFINITY if a slot with p = 0 was drawn. */
static double s_chi2(const uint64_t *counts, const double *p, uint32_t capacity, uint32_t *dof)
{
    double sum = 0.0, n = 0.0, chi2 = 0.0;
    uint32_t cells = 0;
    for (uint32_t i = 0; i < capacity; i++) {
        sum += p[i];
        n += (double)counts[i];
    }
    for (uint32_t i = 0; i < capacity; i++) {
        if (p[i] == 0.0) {
            if (counts[i] != 0)
                return INFINITY;
            continue;
        }
        double expect = n * p[i] / sum, d = (double)counts[i] - expect;
        chi2 += d * d / expect;
        cells++;
    }
    *dof = cells - 1;
    return chi2;
}

/* Draws S_DRAWS slots in calls of batch and checks their frequencies
   against p[capacity] (which s holds) at p = 0.001. Returns 0 or -1. */
static int s_check_freq(vl_sampler_t *s, const double *p, uint32_t capacity, uint32_t batch)
{
    uint64_t counts[S_MAX_CAP];
    uint32_t dof = 0;
    if (capacity > S_MAX_CAP || s_draw(s, capacity, S_DRAWS, batch, counts) != 0)
        return -1;
    double chi2 = s_chi2(counts, p, capacity, &dof), crit = s_chi2_crit(dof);
    if (crit > 0.0 && chi2 < crit)
        return 0;
    fprintf(stderr, "chi-square %.3f, dof %u, critical %.3f (batch %u)\n", chi2, dof, crit, batch);
    return -1;
}

/* Sets p[capacity] into s. */
static void s_set_all(vl_sampler_t *s, const double *p, uint32_t capacity)
{
    for (uint32_t i = 0; i < capacity; i++)
        vl_sampler_set(s, i, p[i]);
}

static void test_new_destroy(void)
{
    VL_CHECK(vl_sampler_new(0, 1) == NULL);
    vl_sampler_t *s = vl_sampler_new(10, 1);
    VL_CHECK(s);
    VL_CHECK(vl_sampler_total(s) == 0.0);
    VL_CHECK(vl_sampler_count(s) == 0);
    uint32_t slot = 99;
    float w = -1.0f;
    VL_CHECK(vl_sampler_sample(s, 1, 0.5f, &slot, &w) == 0);
    vl_sampler_set(s, 3, 2.0);
    VL_CHECK(vl_sampler_sample(s, 0, 0.5f, &slot, &w) == 0);
    VL_CHECK(vl_sampler_sample(s, 1, 0.5f, &slot, &w) == 1);
    VL_CHECK(slot == 3 && w == 1.0f);
    vl_sampler_destroy(&s);
    VL_CHECK(s == NULL);
    vl_sampler_destroy(&s);
    vl_sampler_destroy(NULL);
}

static void test_priority_formula(void)
{
    const float adv[] = {1.0f, -2.0f, 3.0f, -0.5f};
    VL_CHECK_NEAR(vl_sampler_priority(adv, 4, 0.6f), pow(6.5, (double)0.6f), 1e-12);
    VL_CHECK_NEAR(vl_sampler_priority(adv, 4, 1.0f), 6.5, 1e-12);
    VL_CHECK_NEAR(vl_sampler_priority(adv, 3, 2.0f), 36.0, 1e-12);
    VL_CHECK(vl_sampler_priority(adv, 4, 0.0f) == 1.0);
    const float zeros[] = {0.0f, -0.0f, 0.0f};
    VL_CHECK(vl_sampler_priority(zeros, 3, 0.6f) == VL_SAMPLER_FLOOR);
    VL_CHECK(vl_sampler_priority(zeros, 3, 0.0f) == 1.0);
    VL_CHECK(vl_sampler_priority(adv, 0, 0.6f) == VL_SAMPLER_FLOOR);
    const float bad[] = {1.0f, NAN, 2.0f};
    VL_CHECK(vl_sampler_priority(bad, 3, 0.6f) == VL_SAMPLER_FLOOR);
    const float inf[] = {1.0f, INFINITY};
    VL_CHECK(vl_sampler_priority(inf, 2, 0.6f) == VL_SAMPLER_FLOOR);
}

static void test_beta(void)
{
    VL_CHECK(vl_sampler_beta(0.4f, 0, 100) == 0.4f);
    VL_CHECK(vl_sampler_beta(0.4f, 100, 100) == 1.0f);
    VL_CHECK(vl_sampler_beta(0.4f, 1000, 100) == 1.0f);
    VL_CHECK(vl_sampler_beta(0.4f, 5, 0) == 1.0f);
    VL_CHECK_NEAR(vl_sampler_beta(0.4f, 50, 100), 0.7, 1e-6);
    VL_CHECK_NEAR(vl_sampler_beta(0.4f, 99, 100), 0.994, 1e-6);
    float prev = 0.0f;
    for (uint64_t step = 0; step <= 120; step++) {
        float b = vl_sampler_beta(0.4f, step, 100);
        VL_CHECK(b >= prev && b <= 1.0f);
        prev = b;
    }
}

static void test_frequencies(void)
{
    const double p[] = {0.5, 1.0, 2.0, 0.25, 3.0, 1.5, 0.05, 4.0, 0.75, 2.5, 0.1, 1.25};
    const uint32_t cap = sizeof p / sizeof p[0];
    vl_sampler_t *s = vl_sampler_new(cap, 42);
    VL_CHECK(s);
    s_set_all(s, p, cap);
    VL_CHECK(s_check_freq(s, p, cap, 1) == 0);
    VL_CHECK(s_check_freq(s, p, cap, 256) == 0);
    VL_CHECK(s_check_freq(s, p, cap, 7) == 0);
    vl_sampler_destroy(&s);
}

static void test_frequencies_after_updates(void)
{
    double p[16];
    vl_rng_t rng;
    vl_rng_seed(&rng, 7);
    vl_sampler_t *s = vl_sampler_new(16, 43);
    VL_CHECK(s);
    for (uint32_t i = 0; i < 16; i++)
        p[i] = 0.1 + vl_rng_uniform(&rng);
    s_set_all(s, p, 16);
    VL_CHECK(s_check_freq(s, p, 16, 256) == 0);
    // Rewrite every slot many times, ending on new values: two dropped to 0,
    // one raised far above the rest.
    for (int round = 0; round < 1000; round++)
        for (uint32_t i = 0; i < 16; i++)
            vl_sampler_set(s, i, 10.0 * vl_rng_uniform(&rng));
    for (uint32_t i = 0; i < 16; i++)
        p[i] = 0.2 + 3.0 * vl_rng_uniform(&rng);
    p[2] = p[9] = 0.0;
    p[5] = 40.0;
    s_set_all(s, p, 16);
    VL_CHECK(vl_sampler_count(s) == 14);
    VL_CHECK(s_check_freq(s, p, 16, 256) == 0);
    VL_CHECK(s_check_freq(s, p, 16, 1) == 0);
    // A dropped slot comes back.
    p[9] = 1.0;
    vl_sampler_set(s, 9, p[9]);
    VL_CHECK(s_check_freq(s, p, 16, 100) == 0);
    vl_sampler_destroy(&s);
}

static void test_alpha_zero_uniform(void)
{
    double p[10];
    float adv[32];
    vl_rng_t rng;
    vl_rng_seed(&rng, 11);
    vl_sampler_t *s = vl_sampler_new(10, 44);
    VL_CHECK(s);
    for (uint32_t i = 0; i < 10; i++) {
        for (int t = 0; t < 32; t++)
            adv[t] = (float)(vl_rng_normal(&rng) * (i + 1));
        vl_sampler_set(s, i, vl_sampler_priority(adv, 32, 0.0f));
        p[i] = 1.0; // uniform, whatever the advantages
    }
    VL_CHECK(s_check_freq(s, p, 10, 256) == 0);
    VL_CHECK(s_check_freq(s, p, 10, 1) == 0);
    vl_sampler_destroy(&s);
}

static void test_zero_never_drawn(void)
{
    // Zeros at the ends and between positives, beside priorities 600 orders
    // of magnitude apart, drawn in batches whose slices reach the total.
    double p[S_MAX_CAP] = {0};
    for (uint32_t i = 1; i < 40; i += 3)
        p[i] = i % 2 ? 1e300 : 1e-300;
    p[37] = 1.0;
    vl_sampler_t *s = vl_sampler_new(S_MAX_CAP, 45);
    VL_CHECK(s);
    s_set_all(s, p, S_MAX_CAP);
    uint64_t counts[S_MAX_CAP];
    VL_CHECK(s_draw(s, S_MAX_CAP, 1 << 20, 1 << 16, counts) == 0);
    VL_CHECK(s_draw(s, S_MAX_CAP, 1 << 16, 1, counts) == 0);
    for (uint32_t i = 0; i < S_MAX_CAP; i++)
        VL_CHECK(p[i] > 0.0 || counts[i] == 0);
    // Only the last slot positive: every draw of a stratified batch lands on
    // it, the last slice's included.
    vl_sampler_t *t = vl_sampler_new(S_MAX_CAP, 46);
    VL_CHECK(t);
    vl_sampler_set(t, S_MAX_CAP - 1, 0.3);
    VL_CHECK(s_draw(t, S_MAX_CAP, 1 << 16, 1 << 12, counts) == 0);
    VL_CHECK(counts[S_MAX_CAP - 1] == 1 << 16);
    vl_sampler_set(t, S_MAX_CAP - 1, 0.0);
    vl_sampler_set(t, 0, 0.3);
    VL_CHECK(s_draw(t, S_MAX_CAP, 1 << 16, 1 << 12, counts) == 0);
    VL_CHECK(counts[0] == 1 << 16);
    vl_sampler_destroy(&s);
    vl_sampler_destroy(&t);
}

static void test_find_edges(void)
{
    // Capacity 6 in 8 leaves: shares [0, 1) slot 0, [1, 3) slot 2, [3, 6)
    // slot 4; zeros between, at both ends and in the padding.
    const double p[] = {0.0, 1.0, 0.0, 2.0, 0.0, 3.0};
    vl_sampler_t *s = vl_sampler_new(6, 53);
    VL_CHECK(s);
    VL_CHECK(vl_sampler_find(s, 0.5) == UINT32_MAX);
    s_set_all(s, p, 6);
    VL_CHECK(vl_sampler_total(s) == 6.0);
    VL_CHECK(vl_sampler_find(s, 0.0) == 1);
    VL_CHECK(vl_sampler_find(s, nextafter(1.0, 0.0)) == 1);
    VL_CHECK(vl_sampler_find(s, 1.0) == 3);
    VL_CHECK(vl_sampler_find(s, 2.999) == 3);
    VL_CHECK(vl_sampler_find(s, 3.0) == 5);
    VL_CHECK(vl_sampler_find(s, nextafter(6.0, 0.0)) == 5);
    // At and past the total, and below 0: the last and the first positive
    // slots, never a zero one or the padding.
    VL_CHECK(vl_sampler_find(s, 6.0) == 5);
    VL_CHECK(vl_sampler_find(s, 1e300) == 5);
    VL_CHECK(vl_sampler_find(s, -1.0) == 1);
    vl_sampler_set(s, 5, 0.0);
    VL_CHECK(vl_sampler_find(s, 3.0) == 3);
    VL_CHECK(vl_sampler_find(s, 2.0) == 3);
    vl_sampler_set(s, 1, 0.0);
    VL_CHECK(vl_sampler_find(s, 0.0) == 3);
    VL_CHECK(vl_sampler_find(s, -1.0) == 3);
    VL_CHECK(vl_sampler_find(s, 2.0) == 3);
    vl_sampler_destroy(&s);
}

/* Checks the n weights of one draw against (N P(i))^-beta / max,
   recomputed here in double from the priorities. */
static void s_check_weights(vl_sampler_t *s, uint32_t n, float beta)
{
    uint32_t slots[512];
    float weights[512];
    double ref[512], max = 0.0, total = vl_sampler_total(s), N = vl_sampler_count(s);
    VL_CHECK(n <= 512);
    VL_CHECK(vl_sampler_sample(s, n, beta, slots, weights) == n);
    for (uint32_t k = 0; k < n; k++) {
        ref[k] = pow(N * vl_sampler_get(s, slots[k]) / total, -(double)beta);
        max = ref[k] > max ? ref[k] : max;
    }
    float wmax = 0.0f;
    for (uint32_t k = 0; k < n; k++) {
        VL_CHECK_NEAR(weights[k], ref[k] / max, 1e-6 * ref[k] / max);
        wmax = weights[k] > wmax ? weights[k] : wmax;
    }
    VL_CHECK(wmax == 1.0f);
}

static void test_weights(void)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, 12);
    vl_sampler_t *s = vl_sampler_new(16, 47);
    VL_CHECK(s);
    for (uint32_t i = 0; i < 16; i++)
        vl_sampler_set(s, i, i == 4 ? 0.0 : exp(3.0 * vl_rng_normal(&rng)));
    const float betas[] = {0.0f, 0.4f, 0.7f, 1.0f};
    for (int b = 0; b < 4; b++) {
        for (int rep = 0; rep < 20; rep++) {
            s_check_weights(s, 64, betas[b]);
            s_check_weights(s, 1 + vl_rng_below(&rng, 512), betas[b]);
            if (vl_test_case_failed)
                return;
        }
    }
    // beta = 0: every weight exactly 1, however uneven the priorities.
    uint32_t slots[100];
    float weights[100];
    VL_CHECK(vl_sampler_sample(s, 100, 0.0f, slots, weights) == 100);
    for (int k = 0; k < 100; k++)
        VL_CHECK(weights[k] == 1.0f);
    vl_sampler_destroy(&s);
}

static void test_total_exact(void)
{
    enum { CAP = 1000 };
    static double p[CAP];
    vl_rng_t rng;
    vl_rng_seed(&rng, 13);
    vl_sampler_t *s = vl_sampler_new(CAP, 48);
    VL_CHECK(s);
    for (int k = 0; k < 100000; k++) {
        uint32_t i = vl_rng_below(&rng, CAP);
        p[i] = vl_rng_uniform(&rng) < 0.1 ? 0.0 : exp(3.0 * vl_rng_normal(&rng));
        vl_sampler_set(s, i, p[i]);
    }
    long double sum = 0.0L;
    uint32_t count = 0;
    for (uint32_t i = 0; i < CAP; i++) {
        VL_CHECK(vl_sampler_get(s, i) == p[i]);
        sum += p[i];
        count += p[i] > 0.0;
    }
    VL_CHECK_NEAR(vl_sampler_total(s), (double)sum, 1e-9 * (double)sum);
    VL_CHECK(vl_sampler_count(s) == count);
    // Emptied slot by slot, the tree ends at exactly 0.
    for (uint32_t i = 0; i < CAP; i++)
        vl_sampler_set(s, i, 0.0);
    VL_CHECK(vl_sampler_total(s) == 0.0);
    VL_CHECK(vl_sampler_count(s) == 0);
    vl_sampler_destroy(&s);
}

static void test_capacity_not_power_of_two(void)
{
    const double p[] = {1.0, 2.0, 0.5, 3.0, 1.5};
    vl_sampler_t *s = vl_sampler_new(5, 49);
    VL_CHECK(s);
    s_set_all(s, p, 5);
    VL_CHECK(s_check_freq(s, p, 5, 256) == 0); // also: no slot >= 5 drawn
    VL_CHECK(s_check_freq(s, p, 5, 1) == 0);
    VL_CHECK(vl_sampler_get(s, 5) == 0.0);
    vl_sampler_destroy(&s);
    // One slot: a tree that is only its root.
    vl_sampler_t *one = vl_sampler_new(1, 50);
    VL_CHECK(one);
    vl_sampler_set(one, 0, 0.25);
    uint64_t counts[1];
    VL_CHECK(s_draw(one, 1, 1000, 100, counts) == 0);
    VL_CHECK(counts[0] == 1000);
    vl_sampler_destroy(&one);
}

static void test_n_above_count(void)
{
    double p[16] = {0};
    p[3] = 1.0;
    p[8] = 2.0;
    p[15] = 5.0;
    vl_sampler_t *s = vl_sampler_new(16, 51);
    VL_CHECK(s);
    s_set_all(s, p, 16);
    VL_CHECK(vl_sampler_count(s) == 3);
    VL_CHECK(s_check_freq(s, p, 16, 1000) == 0);
    uint32_t slots[1000];
    float weights[1000];
    VL_CHECK(vl_sampler_sample(s, 1000, 1.0f, slots, weights) == 1000);
    // Stratified: each slot is drawn within one of its expected 1000 P(i).
    uint32_t n3 = 0, n8 = 0, n15 = 0;
    for (int k = 0; k < 1000; k++) {
        n3 += slots[k] == 3;
        n8 += slots[k] == 8;
        n15 += slots[k] == 15;
    }
    VL_CHECK(n3 + n8 + n15 == 1000);
    VL_CHECK(abs((int)n3 - 125) <= 1 && abs((int)n8 - 250) <= 1 && abs((int)n15 - 625) <= 1);
    vl_sampler_destroy(&s);
}

static void test_seed_reproduces(void)
{
    vl_sampler_t *a = vl_sampler_new(100, 52), *b = vl_sampler_new(100, 52);
    VL_CHECK(a && b);
    for (uint32_t i = 0; i < 100; i++) {
        vl_sampler_set(a, i, 1.0 + i % 7);
        vl_sampler_set(b, i, 1.0 + i % 7);
    }
    uint32_t sa[64], sb[64];
    float wa[64], wb[64];
    VL_CHECK(vl_sampler_sample(a, 64, 0.5f, sa, wa) == 64);
    VL_CHECK(vl_sampler_sample(b, 64, 0.5f, sb, wb) == 64);
    VL_CHECK(memcmp(sa, sb, sizeof sa) == 0 && memcmp(wa, wb, sizeof wa) == 0);
    vl_sampler_destroy(&a);
    vl_sampler_destroy(&b);
}

int main(void)
{
    VL_RUN(test_new_destroy);
    VL_RUN(test_priority_formula);
    VL_RUN(test_beta);
    VL_RUN(test_frequencies);
    VL_RUN(test_frequencies_after_updates);
    VL_RUN(test_alpha_zero_uniform);
    VL_RUN(test_zero_never_drawn);
    VL_RUN(test_find_edges);
    VL_RUN(test_weights);
    VL_RUN(test_total_exact);
    VL_RUN(test_capacity_not_power_of_two);
    VL_RUN(test_n_above_count);
    VL_RUN(test_seed_reproduces);
    return VL_DONE();
}
