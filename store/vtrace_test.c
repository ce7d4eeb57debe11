/*  vtrace_test: vl_vtrace against IMPALA's forward-sum definition, and its
    reductions to GAE and n-step returns; vl_vtrace_boot likewise with
    time-limit bootstraps, and bit for bit vl_vtrace without them. */
#include "vtrace.h"

#include <math.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_N   11 // neither a multiple of 4 nor of 8: ragged blocks on every path
#define S_T   13
#define S_TOL 1e-4

typedef struct {
    float values[S_N][S_T + 1];
    float rewards[S_N][S_T];
    float dones[S_N][S_T];
    float log_rhos[S_N][S_T];
    float vs[S_N][S_T];
    float pg_adv[S_N][S_T];
} batch_t;

/* Random values and rewards, log ratios uniform in [-rho_range, rho_range],
   and a done with probability done_prob. */
static void s_fill(batch_t *b, uint64_t seed, float rho_range, double done_prob)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (int i = 0; i < S_N; i++) {
        for (int t = 0; t <= S_T; t++)
            b->values[i][t] = (float)vl_rng_normal(&rng);
        for (int t = 0; t < S_T; t++) {
            b->rewards[i][t] = (float)vl_rng_normal(&rng);
            b->dones[i][t] = vl_rng_uniform(&rng) < done_prob ? 1.0f : 0.0f;
            b->log_rhos[i][t] = rho_range * (float)(2 * vl_rng_uniform(&rng) - 1);
        }
    }
}

static void s_run(const vl_vtrace_params_t *p, batch_t *b)
{
    vl_vtrace(p, S_N, S_T, &b->values[0][0], &b->rewards[0][0], &b->dones[0][0], &b->log_rhos[0][0],
              &b->vs[0][0], &b->pg_adv[0][0]);
}

/* The paper's definition, in double, one segment:
   vs_t = V_t + sum_{s=t}^{T-1} (prod_{k=t}^{s-1} disc_k c_k) delta_s. */
static void s_reference(const vl_vtrace_params_t *p, const float *v, const float *r,
                        const float *done, const float *log_rho, double *vs, double *pg_adv)
{
    double disc[S_T], c[S_T], delta[S_T];
    for (int t = 0; t < S_T; t++) {
        double ratio = exp(log_rho[t]);
        disc[t] = p->gamma * (1.0 - done[t]);
        c[t] = p->lambda * fmin(p->c_bar, ratio);
        delta[t] = fmin(p->rho_bar, ratio) * (r[t] + disc[t] * v[t + 1] - v[t]);
    }
    for (int t = 0; t < S_T; t++) {
        double sum = 0, prod = 1;
        for (int s = t; s < S_T; s++) {
            sum += prod * delta[s];
            prod *= disc[s] * c[s];
        }
        vs[t] = v[t] + sum;
    }
    for (int t = 0; t < S_T; t++) {
        double next = t + 1 < S_T ? vs[t + 1] : v[S_T];
        pg_adv[t] = fmin(p->pg_rho_bar, exp(log_rho[t])) * (r[t] + disc[t] * next - v[t]);
    }
}

/* Returns the largest difference between b's outputs and the reference. */
static double s_error(const vl_vtrace_params_t *p, const batch_t *b)
{
    double vs[S_T], pg[S_T], worst = 0;
    for (int i = 0; i < S_N; i++) {
        s_reference(p, b->values[i], b->rewards[i], b->dones[i], b->log_rhos[i], vs, pg);
        for (int t = 0; t < S_T; t++) {
            worst = fmax(worst, fabs(b->vs[i][t] - vs[t]));
            worst = fmax(worst, fabs(b->pg_adv[i][t] - pg[t]));
        }
    }
    return worst;
}

static void test_matches_paper_definition(void)
{
    vl_vtrace_params_t p = {
        .gamma = 0.99f, .lambda = 0.95f, .rho_bar = 1, .c_bar = 1, .pg_rho_bar = 1};
    static batch_t b;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        s_fill(&b, seed, 1.0f, 0.1);
        s_run(&p, &b);
        VL_CHECK_NEAR(s_error(&p, &b), 0, S_TOL);
    }
}

/* Distinct clips, so a clip used in the wrong place shows. */
static void test_matches_with_distinct_clips(void)
{
    vl_vtrace_params_t p = {
        .gamma = 0.9f, .lambda = 0.8f, .rho_bar = 1.5f, .c_bar = 0.7f, .pg_rho_bar = 1.2f};
    static batch_t b;
    for (uint64_t seed = 100; seed < 110; seed++) {
        s_fill(&b, seed, 1.0f, 0.1);
        s_run(&p, &b);
        VL_CHECK_NEAR(s_error(&p, &b), 0, S_TOL);
    }
}

/* On policy with no clipping, vs - V is GAE(gamma, lambda)'s advantage. */
static void test_on_policy_is_gae(void)
{
    vl_vtrace_params_t p = {.gamma = 0.97f,
                            .lambda = 0.9f,
                            .rho_bar = INFINITY,
                            .c_bar = INFINITY,
                            .pg_rho_bar = INFINITY};
    static batch_t b;
    s_fill(&b, 42, 0.0f, 0.15);
    s_run(&p, &b);
    for (int i = 0; i < S_N; i++) {
        const float *v = b.values[i], *r = b.rewards[i], *d = b.dones[i];
        double gae = 0;
        for (int t = S_T - 1; t >= 0; t--) {
            double disc = p.gamma * (1.0 - d[t]);
            gae = r[t] + disc * v[t + 1] - v[t] + disc * p.lambda * gae;
            double next_vs = t + 1 < S_T ? b.vs[i][t + 1] : v[S_T];
            VL_CHECK_NEAR(b.vs[i][t] - v[t], gae, S_TOL);
            VL_CHECK_NEAR(b.pg_adv[i][t], r[t] + disc * next_vs - v[t], S_TOL);
        }
    }
}

/* With lambda = 1 and ratios 1, vs_t is the discounted return bootstrapped
   at T: sum_{k=t}^{T-1} gamma^(k-t) r_k + gamma^(T-t) V_T. */
static void test_lambda_one_is_nstep_return(void)
{
    vl_vtrace_params_t p = {.gamma = 0.95f, .lambda = 1, .rho_bar = 1, .c_bar = 1, .pg_rho_bar = 1};
    static batch_t b;
    s_fill(&b, 7, 0.0f, 0.0);
    s_run(&p, &b);
    for (int i = 0; i < S_N; i++)
        for (int t = 0; t < S_T; t++) {
            double ret = pow(p.gamma, S_T - t) * b.values[i][S_T];
            for (int k = t; k < S_T; k++)
                ret += pow(p.gamma, k - t) * b.rewards[i][k];
            VL_CHECK_NEAR(b.vs[i][t], ret, S_TOL);
        }
}

/* A done at t cuts the trace: vs_0..vs_t and pg_adv_0..pg_adv_t do not move
   when everything after t changes, and vs_t = V_t + rho_t (r_t - V_t). */
static void test_done_cuts_trace(void)
{
    vl_vtrace_params_t p = {.gamma = 0.99f, .lambda = 1, .rho_bar = 1, .c_bar = 1, .pg_rho_bar = 1};
    static batch_t a, b;
    const int cut = 5;
    s_fill(&a, 3, 0.5f, 0.0);
    for (int i = 0; i < S_N; i++)
        a.dones[i][cut] = 1;
    b = a;
    for (int i = 0; i < S_N; i++) {
        for (int t = cut + 1; t <= S_T; t++)
            b.values[i][t] += 10.0f + t;
        for (int t = cut + 1; t < S_T; t++)
            b.rewards[i][t] -= 5.0f;
    }
    s_run(&p, &a);
    s_run(&p, &b);
    for (int i = 0; i < S_N; i++) {
        VL_CHECK(memcmp(a.vs[i], b.vs[i], (cut + 1) * sizeof(float)) == 0);
        VL_CHECK(memcmp(a.pg_adv[i], b.pg_adv[i], (cut + 1) * sizeof(float)) == 0);
        VL_CHECK(a.vs[i][cut + 1] != b.vs[i][cut + 1]);
        double rho = fmin(1.0, exp(a.log_rhos[i][cut])), v = a.values[i][cut];
        VL_CHECK_NEAR(a.vs[i][cut], v + rho * (a.rewards[i][cut] - v), 1e-5);
    }
}

/* Without the done, the same change does reach vs_0: the control for the
   case above. */
static void test_no_done_carries_trace(void)
{
    vl_vtrace_params_t p = {.gamma = 0.99f, .lambda = 1, .rho_bar = 1, .c_bar = 1, .pg_rho_bar = 1};
    static batch_t a, b;
    s_fill(&a, 3, 0.5f, 0.0);
    b = a;
    for (int i = 0; i < S_N; i++)
        b.values[i][S_T] += 10.0f;
    s_run(&p, &a);
    s_run(&p, &b);
    for (int i = 0; i < S_N; i++)
        VL_CHECK(fabsf(a.vs[i][0] - b.vs[i][0]) > 1e-3f);
}

/* One step, T = 1: vs_0 = V_0 + min(rho_bar, e^lr) (r + gamma V_1 - V_0). */
static float s_one_step(const vl_vtrace_params_t *p, float log_rho, float *pg_adv)
{
    float v[2] = {0.5f, 2.0f}, r = 1.0f, done = 0, vs;
    vl_vtrace(p, 1, 1, v, &r, &done, &log_rho, &vs, pg_adv);
    return vs;
}

static void test_clipping(void)
{
    vl_vtrace_params_t p = {.gamma = 0.5f, .lambda = 1, .rho_bar = 2, .c_bar = 1, .pg_rho_bar = 3};
    float pg, td = 1.0f + 0.5f * 2.0f - 0.5f;                     // r + gamma V_1 - V_0 = 1.5
    VL_CHECK_NEAR(s_one_step(&p, 5.0f, &pg), 0.5 + 2 * td, 1e-5); // rho = 2, not e^5
    VL_CHECK_NEAR(pg, 3 * td, 1e-5);
    VL_CHECK_NEAR(s_one_step(&p, -1.0f, &pg), 0.5 + exp(-1.0) * td, 1e-5);
    VL_CHECK_NEAR(pg, exp(-1.0) * td, 1e-5);
    p.rho_bar = p.pg_rho_bar = INFINITY;
    VL_CHECK_NEAR(s_one_step(&p, 5.0f, &pg), 0.5 + exp(5.0) * td, 1e-3);
    VL_CHECK_NEAR(pg, exp(5.0) * td, 1e-3);
}

/* Large ratios over whole segments, clipped at 1, against the reference. */
static void test_clipping_matches_reference(void)
{
    vl_vtrace_params_t p = {
        .gamma = 0.99f, .lambda = 0.95f, .rho_bar = 1, .c_bar = 1, .pg_rho_bar = 1};
    static batch_t b;
    s_fill(&b, 9, 4.0f, 0.1);
    for (int i = 0; i < S_N; i++)
        b.log_rhos[i][S_T / 2] = 20.0f;
    s_run(&p, &b);
    VL_CHECK_NEAR(s_error(&p, &b), 0, S_TOL);
}

/* Infinite clips on ratios in [e^-1, e] against the reference. */
static void test_infinite_clips(void)
{
    vl_vtrace_params_t p = {.gamma = 0.99f,
                            .lambda = 0.95f,
                            .rho_bar = INFINITY,
                            .c_bar = INFINITY,
                            .pg_rho_bar = INFINITY};
    static batch_t b;
    s_fill(&b, 11, 1.0f, 0.1);
    s_run(&p, &b);
    VL_CHECK_NEAR(s_error(&p, &b), 0, 1e-3); // ratios up to e grow the sums
}

/* One step with V = {v0, v1}, r = 1 and no done; returns vs_0. */
static float s_one_step_at(const vl_vtrace_params_t *p, float v0, float v1, float log_rho,
                           float *pg_adv)
{
    float v[2] = {v0, v1}, r = 1.0f, done = 0, vs;
    vl_vtrace(p, 1, 1, v, &r, &done, &log_rho, &vs, pg_adv);
    return vs;
}
/* Segments of any count and length, so blocks of four segments and tiles of
   four steps come out ragged: n and T from 1 to 9, against the recursion in
   double. */
#define S_MAX 9

static void s_reference_any(const vl_vtrace_params_t *p, int T, const float *v, const float *r,
                            const float *done, const float *log_rho, double *vs, double *pg)
{
    double acc = 0;
    for (int t = T - 1; t >= 0; t--) {
        double ratio = exp(log_rho[t]), disc = p->gamma * (1.0 - done[t]);
        double td = r[t] + disc * v[t + 1] - v[t];
        pg[t] = fmin(p->pg_rho_bar, ratio) * (td + disc * acc);
        acc = fmin(p->rho_bar, ratio) * td + disc * p->lambda * fmin(p->c_bar, ratio) * acc;
        vs[t] = v[t] + acc;
    }
}

static void test_ragged_shapes(void)
{
    vl_vtrace_params_t p = {
        .gamma = 0.9f, .lambda = 0.8f, .rho_bar = 1.5f, .c_bar = 0.7f, .pg_rho_bar = 1.2f};
    static float v[S_MAX * (S_MAX + 1)], r[S_MAX * S_MAX], d[S_MAX * S_MAX], lr[S_MAX * S_MAX];
    static float vs[S_MAX * S_MAX + 1], pg[S_MAX * S_MAX + 1];
    vl_rng_t rng;
    vl_rng_seed(&rng, 77);
    for (int n = 1; n <= S_MAX; n++)
        for (int T = 1; T <= S_MAX; T++) {
            for (int k = 0; k < n * (T + 1); k++)
                v[k] = (float)vl_rng_normal(&rng);
            for (int k = 0; k < n * T; k++) {
                r[k] = (float)vl_rng_normal(&rng);
                d[k] = vl_rng_uniform(&rng) < 0.2 ? 1.0f : 0.0f;
                lr[k] = (float)(2 * vl_rng_uniform(&rng) - 1);
            }
            vs[n * T] = pg[n * T] = -7; // a sentinel past the end
            vl_vtrace(&p, n, T, v, r, d, lr, vs, pg);
            VL_CHECK(vs[n * T] == -7 && pg[n * T] == -7);
            for (int i = 0; i < n; i++) {
                double want_vs[S_MAX], want_pg[S_MAX];
                s_reference_any(&p, T, v + i * (T + 1), r + i * T, d + i * T, lr + i * T, want_vs,
                                want_pg);
                for (int t = 0; t < T; t++) {
                    VL_CHECK_NEAR(vs[i * T + t], want_vs[t], S_TOL);
                    VL_CHECK_NEAR(pg[i * T + t], want_pg[t], S_TOL);
                }
            }
        }
}

/* How s_ratio runs: 0, one step of one segment; 1, nine segments of four
   steps, so that the exp runs in whole tiles and blocks (of four segments
   with SSE2, of eight with AVX2). */
static int s_ratio_wide;

/* The ratio as pg_adv sees it: the last step with V = 0, r = 1 and no done
   has a TD error of exactly 1, so no clip gives pg_adv = e^log_rho. */
static float s_ratio(float log_rho, float clip)
{
    enum { N = 9, T = 4 };
    vl_vtrace_params_t p = {
        .gamma = 0.5f, .lambda = 1, .rho_bar = clip, .c_bar = clip, .pg_rho_bar = clip};
    float pg[N * T];
    if (!s_ratio_wide) {
        (void)s_one_step_at(&p, 0.0f, 0.0f, log_rho, pg);
        return pg[0];
    }
    float v[N * (T + 1)] = {0}, r[N * T], d[N * T] = {0}, lr[N * T], vs[N * T];
    for (int k = 0; k < N * T; k++) {
        r[k] = 1.0f;
        lr[k] = log_rho;
    }
    vl_vtrace(&p, N, T, v, r, d, lr, vs, pg);
    return pg[N * T - 1];
}

/* e^x to 2e-6 relative over [-20, 20], and its edges: far below, 0 or
   next to it; far above, inf (so a finite clip still clips); NaN stays
   NaN. Both ways s_ratio runs. */
static void test_ratio_accuracy_and_edges(void)
{
    for (s_ratio_wide = 0; s_ratio_wide <= 1; s_ratio_wide++) {
        for (int k = -2000; k <= 2000; k++) {
            float x = 0.01f * (float)k;
            VL_CHECK_NEAR(s_ratio(x, INFINITY) / exp(x), 1, 2e-6);
        }
        VL_CHECK_NEAR(s_ratio(80.0f, INFINITY) / exp(80.0), 1, 1e-5);
        VL_CHECK_NEAR(s_ratio(-80.0f, INFINITY) / exp(-80.0), 1, 1e-5);
        VL_CHECK(s_ratio(-100.0f, INFINITY) < 1e-37f && s_ratio(-INFINITY, INFINITY) == 0);
        VL_CHECK(isinf(s_ratio(100.0f, INFINITY)) && isinf(s_ratio(INFINITY, INFINITY)));
        VL_CHECK(s_ratio(100.0f, 1.0f) == 1.0f && s_ratio(INFINITY, 1.0f) == 1.0f);
        VL_CHECK(isnan(s_ratio(NAN, INFINITY)) && isnan(s_ratio(NAN, 1.0f)));
    }
}

/* n = 0 or T = 0 writes nothing, with or without bootstraps. */
static void test_empty(void)
{
    vl_vtrace_params_t p = {.gamma = 0.99f, .lambda = 1, .rho_bar = 1, .c_bar = 1, .pg_rho_bar = 1};
    float v[2] = {1, 2}, r = 1, d = 0, lr = 0, vs = -7, pg = -7;
    vl_vtrace(&p, 0, 1, v, &r, &d, &lr, &vs, &pg);
    vl_vtrace(&p, 1, 0, v, &r, &d, &lr, &vs, &pg);
    vl_vtrace_boot(&p, 0, 1, v, &r, &d, &r, &lr, &vs, &pg);
    vl_vtrace_boot(&p, 1, 0, v, &r, &d, &r, &lr, &vs, &pg);
    VL_CHECK(vs == -7 && pg == -7);
}

/* ---- vl_vtrace_boot: episodes that end at a time limit ------------------ */

#define S_BN 21 // up to three blocks of eight, the last ragged
#define S_BT 45 // eleven tiles and one step left over

/* n segments of horizon T, flat as vl_vtrace_boot takes them. */
typedef struct {
    int n, T;
    float v[S_BN * (S_BT + 1)], r[S_BN * S_BT], d[S_BN * S_BT], boot[S_BN * S_BT];
    float lr[S_BN * S_BT], vs[S_BN * S_BT], pg[S_BN * S_BT];
} s_boot_batch_t;

/* As s_fill, and about half of the dones truncated, with a bootstrap value
   ~ N(0, 4) in boot (0 at every other step). */
static void s_boot_fill(s_boot_batch_t *b, int n, int T, uint64_t seed, float rho_range,
                        double done_prob)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    b->n = n;
    b->T = T;
    for (int k = 0; k < n * (T + 1); k++)
        b->v[k] = (float)vl_rng_normal(&rng);
    for (int k = 0; k < n * T; k++) {
        b->r[k] = (float)vl_rng_normal(&rng);
        b->d[k] = vl_rng_uniform(&rng) < done_prob ? 1.0f : 0.0f;
        b->lr[k] = rho_range * (float)(2 * vl_rng_uniform(&rng) - 1);
        b->boot[k] =
            b->d[k] != 0 && vl_rng_uniform(&rng) < 0.5 ? 2 * (float)vl_rng_normal(&rng) : 0;
    }
}

static void s_boot_run(const vl_vtrace_params_t *p, s_boot_batch_t *b, const float *boot)
{
    vl_vtrace_boot(p, b->n, b->T, b->v, b->r, b->d, boot, b->lr, b->vs, b->pg);
}

/* The definition with the bootstrap, in double, one segment of T <= S_BT:
   delta_t = rho_t (r_t + gamma (1 - done_t) V_{t+1} + gamma done_t boot_t - V_t),
   vs_t = V_t + sum_{s=t}^{T-1} (prod_{k=t}^{s-1} gamma (1 - done_k) c_k) delta_s,
   pg_t = min(pg_rho_bar, pi/mu) (r_t + gamma (1 - done_t) vs_{t+1}
          + gamma done_t boot_t - V_t). */
static void s_reference_boot(const vl_vtrace_params_t *p, int T, const float *v, const float *r,
                             const float *done, const float *boot, const float *log_rho, double *vs,
                             double *pg)
{
    double disc[S_BT], cut[S_BT], delta[S_BT];
    for (int t = 0; t < T; t++) {
        double ratio = exp(log_rho[t]);
        disc[t] = p->gamma * (1.0 - done[t]);
        cut[t] = disc[t] * p->lambda * fmin(p->c_bar, ratio);
        delta[t] = fmin(p->rho_bar, ratio) *
                   (r[t] + disc[t] * v[t + 1] + (double)p->gamma * done[t] * boot[t] - v[t]);
    }
    for (int t = 0; t < T; t++) {
        double sum = 0, prod = 1;
        for (int s = t; s < T; s++) {
            sum += prod * delta[s];
            prod *= cut[s];
        }
        vs[t] = v[t] + sum;
    }
    for (int t = 0; t < T; t++) {
        double next = t + 1 < T ? vs[t + 1] : v[T];
        pg[t] = fmin(p->pg_rho_bar, exp(log_rho[t])) *
                (r[t] + disc[t] * next + (double)p->gamma * done[t] * boot[t] - v[t]);
    }
}

/* Returns the largest difference of b's outputs from the reference,
   relative to max(1, |reference|). */
static double s_boot_error(const vl_vtrace_params_t *p, const s_boot_batch_t *b)
{
    double vs[S_BT], pg[S_BT], worst = 0;
    for (int i = 0; i < b->n; i++) {
        int row = i * b->T;
        s_reference_boot(p, b->T, b->v + row + i, b->r + row, b->d + row, b->boot + row,
                         b->lr + row, vs, pg);
        for (int t = 0; t < b->T; t++) {
            worst = fmax(worst, fabs(b->vs[row + t] - vs[t]) / fmax(1, fabs(vs[t])));
            worst = fmax(worst, fabs(b->pg[row + t] - pg[t]) / fmax(1, fabs(pg[t])));
        }
    }
    return worst;
}

/* Against the reference: a third of the steps done, half of those
   truncated, ratios on both sides of 1, finite distinct clips and infinite
   ones, over 11 x 13 and 21 x 45 segments (ragged blocks and tiles). */
static void test_boot_matches_reference(void)
{
    vl_vtrace_params_t finite = {
        .gamma = 0.9f, .lambda = 0.8f, .rho_bar = 1.5f, .c_bar = 0.7f, .pg_rho_bar = 1.2f};
    vl_vtrace_params_t infinite = {.gamma = 0.99f,
                                   .lambda = 0.95f,
                                   .rho_bar = INFINITY,
                                   .c_bar = INFINITY,
                                   .pg_rho_bar = INFINITY};
    static s_boot_batch_t b;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        int n = seed % 2 ? S_N : S_BN, T = seed % 2 ? S_T : S_BT;
        s_boot_fill(&b, n, T, seed, 1.0f, 0.3);
        s_boot_run(&finite, &b, b.boot);
        VL_CHECK_NEAR(s_boot_error(&finite, &b), 0, S_TOL);
        s_boot_run(&infinite, &b, b.boot);
        VL_CHECK_NEAR(s_boot_error(&infinite, &b), 0, S_TOL);
    }
}

/* n and T from 1 to 9 against the reference, as test_ragged_shapes. */
static void test_boot_ragged_shapes(void)
{
    vl_vtrace_params_t p = {
        .gamma = 0.9f, .lambda = 0.8f, .rho_bar = 1.5f, .c_bar = 0.7f, .pg_rho_bar = 1.2f};
    static s_boot_batch_t b;
    for (int n = 1; n <= S_MAX; n++)
        for (int T = 1; T <= S_MAX; T++) {
            s_boot_fill(&b, n, T, (uint64_t)(100 * n + T), 1.0f, 0.3);
            b.vs[n * T] = b.pg[n * T] = -7; // a sentinel past the end
            s_boot_run(&p, &b, b.boot);
            VL_CHECK(b.vs[n * T] == -7 && b.pg[n * T] == -7);
            VL_CHECK_NEAR(s_boot_error(&p, &b), 0, S_TOL);
        }
}

/* With no bootstrap the output is vl_vtrace's bit for bit, boot NULL or
   all +0, on shapes that leave ragged blocks and tiles on every path.
   Every seventh step has a TD error of -0
   (r = -0, done, V_{t+1} < 0, V_t = +0), whose sign shows in pg_adv where
   acc_{t+1} < 0: a zero bootstrap added to r_t, instead of taken from V_t,
   would turn it into +0. */
static void test_boot_zero_is_vtrace(void)
{
    vl_vtrace_params_t p = {
        .gamma = 0.95f, .lambda = 0.9f, .rho_bar = 1.3f, .c_bar = 0.9f, .pg_rho_bar = 1.1f};
    static s_boot_batch_t b;
    static float want_vs[S_BN * S_BT], want_pg[S_BN * S_BT], zeros[S_BN * S_BT];
    int negative_zeros = 0;
    for (int n = 1; n <= S_BN; n += 4) {
        s_boot_fill(&b, n, S_BT, (uint64_t)n, 1.0f, 0.2);
        for (int k = 0; k < n * S_BT; k += 7) {
            int i = k / S_BT;
            b.r[k] = -0.0f;
            b.d[k] = 1;
            b.v[k + i] = 0;
            b.v[k + i + 1] = -1;
        }
        vl_vtrace(&p, n, S_BT, b.v, b.r, b.d, b.lr, want_vs, want_pg);
        const float *boots[] = {NULL, zeros};
        for (int k = 0; k < 2; k++) {
            s_boot_run(&p, &b, boots[k]);
            VL_CHECK(memcmp(b.vs, want_vs, (size_t)n * S_BT * sizeof(float)) == 0);
            VL_CHECK(memcmp(b.pg, want_pg, (size_t)n * S_BT * sizeof(float)) == 0);
        }
        for (int k = 0; k < n * S_BT; k++)
            negative_zeros += want_pg[k] == 0 && signbit(want_pg[k]);
    }
    VL_CHECK(negative_zeros > 0);
}

/* On policy with no clipping, a truncated step's vs is r_t + gamma boot_t
   whatever V_t is; the trace stops there (vs and pg_adv up to the cut do
   not move when the next episode's values and rewards change) but the
   bootstrap flows back through the episode: one more in boot_cut moves
   vs_0 by (gamma lambda)^cut gamma. */
static void test_boot_truncation_bootstraps(void)
{
    vl_vtrace_params_t p = {.gamma = 0.97f,
                            .lambda = 0.9f,
                            .rho_bar = INFINITY,
                            .c_bar = INFINITY,
                            .pg_rho_bar = INFINITY};
    static s_boot_batch_t a, b;
    const int cut = 5;
    s_boot_fill(&a, S_N, S_T, 3, 0.0f, 0.0);
    for (int i = 0; i < S_N; i++) {
        a.d[i * S_T + cut] = 1;
        a.boot[i * S_T + cut] = 3.0f + (float)i;
    }
    b = a;
    for (int i = 0; i < S_N; i++) {
        for (int t = cut + 1; t <= S_T; t++)
            b.v[i * (S_T + 1) + t] += 10.0f + (float)t;
        for (int t = cut + 1; t < S_T; t++)
            b.r[i * S_T + t] -= 5.0f;
    }
    s_boot_run(&p, &a, a.boot);
    s_boot_run(&p, &b, b.boot);
    for (int i = 0; i < S_N; i++) {
        int row = i * S_T;
        VL_CHECK_NEAR(a.vs[row + cut], a.r[row + cut] + p.gamma * a.boot[row + cut], 1e-5);
        VL_CHECK(memcmp(a.vs + row, b.vs + row, (cut + 1) * sizeof(float)) == 0);
        VL_CHECK(memcmp(a.pg + row, b.pg + row, (cut + 1) * sizeof(float)) == 0);
        VL_CHECK(a.vs[row + cut + 1] != b.vs[row + cut + 1]);
    }
    b = a;
    for (int i = 0; i < S_N; i++)
        b.boot[i * S_T + cut] += 1;
    s_boot_run(&p, &b, b.boot);
    for (int i = 0; i < S_N; i++)
        VL_CHECK_NEAR(b.vs[i * S_T] - a.vs[i * S_T], pow(p.gamma * p.lambda, cut) * p.gamma, 1e-5);
}

/* On policy with no clipping, vs - V is GAE(gamma, lambda) as written for
   episodes that end two ways (Pardo et al. 2018): the next value is
   V(x_final) after a truncation, 0 after a termination, and the
   advantage's recursion stops at either. */
static void test_boot_on_policy_is_gae(void)
{
    vl_vtrace_params_t p = {.gamma = 0.97f,
                            .lambda = 0.9f,
                            .rho_bar = INFINITY,
                            .c_bar = INFINITY,
                            .pg_rho_bar = INFINITY};
    static s_boot_batch_t b;
    s_boot_fill(&b, S_N, S_T, 42, 0.0f, 0.2);
    s_boot_run(&p, &b, b.boot);
    for (int i = 0; i < S_N; i++) {
        const float *v = b.v + i * (S_T + 1), *r = b.r + i * S_T, *d = b.d + i * S_T;
        const float *boot = b.boot + i * S_T;
        double gae = 0;
        for (int t = S_T - 1; t >= 0; t--) {
            int truncated = d[t] != 0 && boot[t] != 0, terminated = d[t] != 0 && !truncated;
            double next = truncated ? boot[t] : v[t + 1];
            double td = r[t] + p.gamma * (1 - terminated) * next - v[t];
            gae = td + p.gamma * p.lambda * (1 - d[t]) * gae;
            double next_vs = d[t] != 0 ? next : t + 1 < S_T ? b.vs[i * S_T + t + 1] : v[S_T];
            VL_CHECK_NEAR(b.vs[i * S_T + t] - v[t], gae, S_TOL);
            VL_CHECK_NEAR(b.pg[i * S_T + t], r[t] + p.gamma * (1 - terminated) * next_vs - v[t],
                          S_TOL);
        }
    }
}

/* With lambda = 1 and ratios 1, vs_t is the discounted return to the end
   of t's episode, plus gamma^(k-t+1) V(x_final) if it was truncated at k,
   nothing if it terminated, gamma^(T-t) V_T if the segment ended first. */
static void test_boot_lambda_one_is_truncated_return(void)
{
    vl_vtrace_params_t p = {.gamma = 0.95f, .lambda = 1, .rho_bar = 1, .c_bar = 1, .pg_rho_bar = 1};
    static s_boot_batch_t b;
    s_boot_fill(&b, S_N, S_T, 7, 0.0f, 0.2);
    s_boot_run(&p, &b, b.boot);
    for (int i = 0; i < S_N; i++)
        for (int t = 0; t < S_T; t++) {
            double ret = 0, discount = 1;
            int k = t;
            for (; k < S_T; k++) {
                ret += discount * b.r[i * S_T + k];
                discount *= p.gamma;
                if (b.d[i * S_T + k] != 0) {
                    ret += discount * b.boot[i * S_T + k];
                    break;
                }
            }
            if (k == S_T)
                ret += discount * b.v[i * (S_T + 1) + S_T];
            VL_CHECK_NEAR(b.vs[i * S_T + t], ret, S_TOL);
        }
}

/* The same segments as vl_vtrace sees them (every done a termination) and
   with their bootstraps, off policy with clips: at the truncated step vs
   moves by min(rho_bar, ratio) gamma boot and pg_adv by min(pg_rho_bar,
   ratio) gamma boot, the step before by its trace factor times that, and
   the steps after (a terminated one among them) not at all. Fails were
   the bootstrap ignored, that is, truncation taken for termination. */
static void test_truncation_is_not_termination(void)
{
    vl_vtrace_params_t p = {
        .gamma = 0.9f, .lambda = 0.8f, .rho_bar = 1.5f, .c_bar = 0.7f, .pg_rho_bar = 1.2f};
    static s_boot_batch_t a, b;
    const int cut = 30, ended = 40; // truncated at cut, terminated at ended
    s_boot_fill(&a, S_BN, S_BT, 8, 1.0f, 0.0);
    for (int i = 0; i < S_BN; i++) {
        a.d[i * S_BT + cut] = a.d[i * S_BT + ended] = 1;
        a.boot[i * S_BT + cut] = 2.0f + (float)i;
    }
    b = a;
    s_boot_run(&p, &a, a.boot);
    vl_vtrace(&p, S_BN, S_BT, b.v, b.r, b.d, b.lr, b.vs, b.pg);
    for (int i = 0; i < S_BN; i++) {
        int at = i * S_BT + cut;
        double ratio = exp(a.lr[at]), lift = p.gamma * a.boot[at];
        double v = a.v[at + i], td = a.r[at] + lift - v;
        VL_CHECK_NEAR(a.vs[at], v + fmin(p.rho_bar, ratio) * td, S_TOL);
        VL_CHECK_NEAR(a.vs[at] - b.vs[at], fmin(p.rho_bar, ratio) * lift, S_TOL);
        VL_CHECK_NEAR(a.pg[at] - b.pg[at], fmin(p.pg_rho_bar, ratio) * lift, S_TOL);
        double trace = p.gamma * p.lambda * fmin(p.c_bar, exp(a.lr[at - 1]));
        VL_CHECK_NEAR(a.vs[at - 1] - b.vs[at - 1], trace * (a.vs[at] - b.vs[at]), S_TOL);
        VL_CHECK(fabsf(a.vs[at - 1] - b.vs[at - 1]) > 1e-2f);
        size_t after = (size_t)(S_BT - cut - 1) * sizeof(float);
        VL_CHECK(memcmp(a.vs + at + 1, b.vs + at + 1, after) == 0);
        VL_CHECK(memcmp(a.pg + at + 1, b.pg + at + 1, after) == 0);
    }
}

/* vtrace.c's test hook: 0 scalar, 1 SSE2, 2 AVX2, -1 the best; returns the
   path now in use, or -1 when this build or CPU lacks it. */

#define S_PATHS 3

/* Every path this machine has gives the same outputs as the scalar one to
   float rounding (and the exp's error), over shapes that leave ragged blocks
   of eight segments and ragged tiles. */
static void test_paths_agree(void)
{
    enum { N = 21, T = 45 };
    vl_vtrace_params_t p = {
        .gamma = 0.95f, .lambda = 0.9f, .rho_bar = 1.3f, .c_bar = 0.9f, .pg_rho_bar = 1.1f};
    static float v[N * (T + 1)], r[N * T], d[N * T], lr[N * T];
    static float vs[S_PATHS][N * T], pg[S_PATHS][N * T];
    vl_rng_t rng;
    vl_rng_seed(&rng, 5);
    for (int k = 0; k < N * (T + 1); k++)
        v[k] = (float)vl_rng_normal(&rng);
    for (int k = 0; k < N * T; k++) {
        r[k] = (float)vl_rng_normal(&rng);
        d[k] = vl_rng_uniform(&rng) < 0.05 ? 1.0f : 0.0f;
        lr[k] = (float)(2 * vl_rng_uniform(&rng) - 1);
    }
    int best = vl_vtrace_path(-1);
    VL_CHECK(best >= 0 && vl_vtrace_path(0) == 0);
    for (int path = 0; path <= best; path++) {
        if (vl_vtrace_path(path) != path)
            continue;
        for (int n = 1; n <= N; n += 4) // n = 1, 5, 9, 13, 17, 21
            vl_vtrace(&p, n, T, v, r, d, lr, vs[path], pg[path]);
        for (int k = 0; k < N * T; k++) {
            VL_CHECK_NEAR(vs[path][k], vs[0][k], 1e-4 * fmax(1, fabs(vs[0][k])));
            VL_CHECK_NEAR(pg[path][k], pg[0][k], 1e-4 * fmax(1, fabs(pg[0][k])));
        }
    }
    vl_vtrace_path(-1);
}

static void s_run_all(void)
{
    VL_RUN(test_matches_paper_definition);
    VL_RUN(test_matches_with_distinct_clips);
    VL_RUN(test_on_policy_is_gae);
    VL_RUN(test_lambda_one_is_nstep_return);
    VL_RUN(test_done_cuts_trace);
    VL_RUN(test_no_done_carries_trace);
    VL_RUN(test_clipping);
    VL_RUN(test_clipping_matches_reference);
    VL_RUN(test_infinite_clips);
    VL_RUN(test_empty);
    VL_RUN(test_ragged_shapes);
    VL_RUN(test_ratio_accuracy_and_edges);
    VL_RUN(test_boot_matches_reference);
    VL_RUN(test_boot_ragged_shapes);
    VL_RUN(test_boot_zero_is_vtrace);
    VL_RUN(test_boot_truncation_bootstraps);
    VL_RUN(test_boot_on_policy_is_gae);
    VL_RUN(test_boot_lambda_one_is_truncated_return);
    VL_RUN(test_truncation_is_not_termination);
}

int main(void)
{
    static const char *const names[S_PATHS] = {"scalar", "SSE2", "AVX2"};
    /* Every case on every path this machine has, the best (the default)
       last, then the paths against each other. */
    int best = vl_vtrace_path(-1);
    for (int path = 0; path <= best; path++) {
        if (vl_vtrace_path(path) != path) {
            printf("--   %s path: not in this build or CPU\n", names[path]);
            continue;
        }
        printf("--   %s path\n", names[path]);
        s_run_all();
    }
    VL_RUN(test_paths_agree);
    return VL_DONE();
}
