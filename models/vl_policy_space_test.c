/*  vl_policy_space_test: a policy over a box (Gaussian head, learned
    log-std) and over a multi-discrete space (a categorical per dimension):
    their tensors, the PPO loss gradient of every tensor (pi.logstd
    included) against central finite differences of the returned loss, the
    box loss and entropy against the Gaussian's closed forms, the box loss
    and every tensor's gradient against PyTorch autograd, Adam moving the log-std, and
    the optimizer state carried to a fresh policy. */
#include "vl_policy.h"
#include "vl_policy_probe.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_dist.h"

#define S_MAX_PARAMS 4000               // floats in any policy these tests build
#define S_LOG_2PIE   2.8378770664093453 // log(2 pi e): a unit Gaussian's entropy is half of it

enum { S_N = 8, S_OBS = 3, S_DIMS = 2, S_HIDDEN = 5 };

static const vl_loss_params_t s_params = {.clip = 0.2f, .vf_coef = 0.5f, .ent_coef = 0.1f};

/* box(2) in [-1, 1] x [-2, 2]. */
static vl_action_spec_t s_box(void)
{
    return (vl_action_spec_t){
        .kind = VL_ENV_BOX, .dims = 2, .low = {-1.0f, -2.0f}, .high = {1.0f, 2.0f}};
}

/* multi_discrete(3,2). */
static vl_action_spec_t s_multi(void)
{
    return (vl_action_spec_t){.kind = VL_ENV_MULTI_DISCRETE, .dims = 2, .n = {3, 2}};
}

/* Returns a new mlp(hidden) policy over S_OBS flat floats acting in act. */
static vl_policy_t *s_policy(const vl_action_spec_t *act, uint32_t hidden, uint64_t seed)
{
    vl_model_spec_t *spec = vl_model_spec_mlp(hidden);
    vl_obs_spec_t obs = vl_obs_spec_flat(S_OBS);
    char err[256];
    vl_policy_t *p = spec ? vl_policy_new_spec(spec, &obs, act, seed, 0, err, sizeof err) : NULL;
    if (spec && !p)
        fprintf(stderr, "policy refused: %s\n", err);
    vl_model_spec_destroy(&spec);
    return p;
}

/* Returns the joint log-prob of action [dims] at obs_i under the current
   weights. */
static float s_logp(vl_policy_t *policy, const float *obs_i, const float *action)
{
    float z[16];
    vl_policy_forward(policy, 1, obs_i, z, NULL);
    return vl_dist_logp(vl_policy_action(policy), z, vl_policy_logstd(policy), action);
}

/* A minibatch whose ratios (set through old_logp) put the clip on either
   side for some samples and leave it inactive for others, as in
   vl_policy_test. */
typedef struct {
    float obs[S_N * S_OBS];
    float actions[S_N * S_DIMS];
    float old_logp[S_N], adv[S_N], v_target[S_N], w[S_N];
} s_batch_t;

static const float s_ratios[S_N] = {1.5f, 1.5f, 0.6f, 0.6f, 1.0f, 1.1f, 0.9f, 1.05f};
static const float s_adv_sign[S_N] = {1, -1, -1, 1, 1, -1, 1, -1};

/* Fills b for the policy's space: box actions normal with std 1.5 (some
   past the bounds, as an unclipped sample may be), discrete ones uniform. */
static void s_make_batch(vl_policy_t *policy, vl_rng_t *rng, s_batch_t *b)
{
    const vl_action_spec_t *a = vl_policy_action(policy);
    for (int i = 0; i < S_N; i++) {
        for (int k = 0; k < S_OBS; k++)
            b->obs[i * S_OBS + k] = (float)vl_rng_normal(rng);
        for (uint32_t d = 0; d < a->dims; d++)
            b->actions[i * S_DIMS + d] = vl_action_is_box(a) ? (float)(1.5 * vl_rng_normal(rng))
                                                             : (float)vl_rng_below(rng, a->n[d]);
        b->adv[i] = s_adv_sign[i] * (float)(0.5 + vl_rng_uniform(rng));
        b->v_target[i] = (float)vl_rng_normal(rng);
        b->w[i] = (float)(0.2 + 0.8 * vl_rng_uniform(rng));
        float logp = s_logp(policy, b->obs + i * S_OBS, b->actions + i * S_DIMS);
        b->old_logp[i] = logp - logf(s_ratios[i]);
    }
}

/* Returns the weighted loss on b (its gradient added to the accumulated). */
static double s_loss(vl_policy_t *policy, const s_batch_t *b)
{
    return vl_policy_loss_grad(policy, &s_params, S_N, b->obs, b->actions, b->old_logp, b->adv,
                               b->v_target, b->w, NULL);
}

/* s_loss as the probe calls it. */
static double s_loss_of(vl_policy_t *policy, const void *b)
{
    return s_loss(policy, b);
}

/* Returns the worst relative gap between the loss's gradient and central
   differences of the loss over every parameter (floor 0.05 on the scale,
   so gradients near 0 are compared absolutely), writing the log-std's
   gradients into dlogstd [dims] for a box. A float loss of order 1 has
   rounding near 1e-7; over 2 eps = 4e-3 that is 3e-5, well inside 1e-2. */
static double s_worst_gap(const vl_action_spec_t *act, uint64_t seed, float *dlogstd)
{
    static float grads[S_MAX_PARAMS];
    vl_policy_t *policy = s_policy(act, S_HIDDEN, seed);
    if (!policy)
        return INFINITY;
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (size_t k = 0; vl_probe_param(policy, k); k++) // no gradient vanishingly small
        *vl_probe_param(policy, k) = (float)(0.8 * (2.0 * vl_rng_uniform(&rng) - 1.0));
    s_batch_t b;
    s_make_batch(policy, &rng, &b);
    vl_policy_zero_grad(policy);
    s_loss(policy, &b);
    size_t count = vl_probe_flatten(policy, 1, grads);
    double worst = vl_probe_fd_gap(policy, grads, count, s_loss_of, &b, 2e-3f);
    char text[VL_ACTION_TEXT_MAX];
    printf("%s: %zu parameters, worst gap %.2g\n", vl_action_str(act, text, sizeof text), count,
           worst);
    if (dlogstd && vl_policy_logstd(policy))
        memcpy(dlogstd, grads + count - act->dims, act->dims * sizeof(float));
    vl_policy_destroy(&policy);
    return worst;
}

static void test_box_gradient_matches_finite_differences(void)
{
    vl_action_spec_t box = s_box();
    float dlogstd[S_DIMS] = {0};
    double worst = s_worst_gap(&box, 41, dlogstd);
    VL_CHECK_NEAR(worst, 0.0, 1e-2);
    // The log-std is learned: its gradient is there (the last parameters).
    VL_CHECK(fabsf(dlogstd[0]) > 1e-3f && fabsf(dlogstd[1]) > 1e-3f);
}

static void test_multi_discrete_gradient_matches_finite_differences(void)
{
    vl_action_spec_t multi = s_multi();
    VL_CHECK_NEAR(s_worst_gap(&multi, 43, NULL), 0.0, 1e-2);
}

/* A box policy's network is the towers' tensors with means for outputs,
   then pi.logstd [dims], zero at first; a multi-discrete one has the
   logits of every dimension and no log-std. */
static void test_tensors_end_with_logstd_for_a_box(void)
{
    vl_action_spec_t box = s_box(), multi = s_multi();
    vl_policy_t *pb = s_policy(&box, 8, 1), *pm = s_policy(&multi, 8, 1);
    VL_CHECK(pb && pm);
    VL_CHECK(vl_policy_tensor_count(pb) == 13 && vl_policy_tensor_count(pm) == 12);
    VL_CHECK(vl_policy_num_actions(pb) == 2 && vl_policy_num_actions(pm) == 5);
    vl_tensor_t t;
    vl_policy_tensor(pb, 4, &t);
    VL_CHECK(strcmp(t.name, "pi.2.weight") == 0 && t.rows == 2 && t.cols == 8);
    vl_policy_tensor(pb, 12, &t);
    VL_CHECK(strcmp(t.name, "pi.logstd") == 0 && t.rows == 2 && t.cols == 1 && t.ndim == 1);
    VL_CHECK(t.data == vl_policy_logstd(pb) && t.data[0] == 0.0f && t.data[1] == 0.0f);
    vl_policy_grad_tensor(pb, 12, &t);
    VL_CHECK(strcmp(t.name, "pi.logstd") == 0 && t.data != vl_policy_logstd(pb));
    vl_policy_tensor(pm, 4, &t);
    VL_CHECK(strcmp(t.name, "pi.2.weight") == 0 && t.rows == 5);
    vl_policy_tensor(pm, 11, &t);
    VL_CHECK(strcmp(t.name, "v.2.bias") == 0);
    VL_CHECK(vl_policy_logstd(pm) == NULL);
    vl_policy_destroy(&pb);
    vl_policy_destroy(&pm);
}

/* The entropy stat of a box policy is the diagonal Gaussian's, whatever
   the observation: sum over dimensions of logstd + log(2 pi e) / 2. */
static void test_box_entropy_is_the_gaussians(void)
{
    vl_action_spec_t box = s_box();
    vl_policy_t *policy = s_policy(&box, 8, 2);
    VL_CHECK(policy);
    vl_tensor_t t;
    vl_policy_tensor(policy, 12, &t);
    t.data[0] = -0.5f, t.data[1] = 0.3f;
    vl_rng_t rng;
    vl_rng_seed(&rng, 3);
    s_batch_t b;
    s_make_batch(policy, &rng, &b);
    vl_loss_stats_t st;
    float loss = vl_policy_loss_grad(policy, &s_params, S_N, b.obs, b.actions, b.old_logp, b.adv,
                                     b.v_target, NULL, &st);
    vl_policy_destroy(&policy);
    VL_CHECK_NEAR(st.entropy, -0.5 + 0.3 + S_LOG_2PIE, 1e-5);
    VL_CHECK_NEAR(loss, st.policy_loss + 0.5 * st.value_loss - 0.1 * st.entropy, 1e-5);
    VL_CHECK_NEAR(st.clip_frac, 4.0 / S_N, 1e-6); // the 1.5s and 0.6s
}

/* Returns log N(x; mu, exp(logstd)^2) written out, independently of vl_dist. */
static double s_gauss_logp(double x, double mu, double logstd)
{
    double u = (x - mu) / exp(logstd);
    return -0.5 * u * u - logstd - 0.5 * log(2 * M_PI);
}

/* The box loss and its stats from the forward pass and the Gaussian's
   density by hand: ratio exp(sum_d log N(a_d; mu_d, std_d) - old), the
   clipped surrogate, the value error and the weighted total. */
static void test_box_loss_matches_the_gaussian_by_hand(void)
{
    vl_action_spec_t box = s_box();
    vl_policy_t *policy = s_policy(&box, 8, 6);
    VL_CHECK(policy);
    vl_rng_t rng;
    vl_rng_seed(&rng, 8);
    for (size_t k = 0; vl_probe_param(policy, k); k++)
        *vl_probe_param(policy, k) = (float)(0.5 * (2.0 * vl_rng_uniform(&rng) - 1.0));
    s_batch_t b;
    s_make_batch(policy, &rng, &b);
    const float *logstd = vl_policy_logstd(policy);
    double surr = 0.0, sq_err = 0.0, kl = 0.0, weighted = 0.0;
    double entropy = logstd[0] + logstd[1] + S_LOG_2PIE;
    for (int i = 0; i < S_N; i++) {
        float mu[S_DIMS], value;
        VL_CHECK(vl_policy_forward(policy, 1, b.obs + i * S_OBS, mu, &value) == 0);
        double logp = 0.0;
        for (int d = 0; d < S_DIMS; d++)
            logp += s_gauss_logp(b.actions[i * S_DIMS + d], mu[d], logstd[d]);
        double r = exp(logp - b.old_logp[i]);
        double si = fmin(r * b.adv[i], fmin(fmax(r, 0.8), 1.2) * b.adv[i]);
        double err = value - b.v_target[i];
        surr += si;
        sq_err += err * err;
        kl += (r - 1) - log(r);
        weighted += b.w[i] * (-si + 0.5 * 0.5 * err * err - 0.1 * entropy);
    }
    vl_loss_stats_t st;
    float loss = vl_policy_loss_grad(policy, &s_params, S_N, b.obs, b.actions, b.old_logp, b.adv,
                                     b.v_target, b.w, &st);
    vl_policy_destroy(&policy);
    VL_CHECK_NEAR(st.policy_loss, -surr / S_N, 1e-5);
    VL_CHECK_NEAR(st.value_loss, 0.5 * sq_err / S_N, 1e-5);
    VL_CHECK_NEAR(st.approx_kl, kl / S_N, 1e-5);
    VL_CHECK_NEAR(loss, weighted / S_N, 1e-5);
}

/* From models/vl_policy_reference.py (PyTorch 1.13.0a0): ratios 0.010, 0.060, 0.094, 1.639. */
static const double s_ref_loss = 0.35871314698242779;
static const double s_ref_grad[89] = {
    -0.0034400870489993719,  0.00098076385596316575, 0.0039647934025482971,
    -0.0060151175660258013,  0.00046546896703794551, 0.0062641423125856495,
    -0.00094657095774274241, 0.001467158999294318,   0.0017314975740108534,
    -0.0005197045139975295,  -0.0013260514315909056, -0.00018972990340380516,
    -0.0043178453727713371,  -0.0083863977940043521, -0.0018846948718807613,
    -0.00031809243663905056, 0.040179617621991841,   0.030053523708008741,
    -0.04737789369178004,    0.012449787822883803,   0.071930063254930648,
    0.042443320258438846,    -0.080347335307199855,  0.03119758400710846,
    0.022240464681295018,    0.0053736954772253733,  -0.02189270440935737,
    0.015723635902145622,    -0.015237625236801918,  -0.022550474348145218,
    0.022444034836763414,    0.0040280435588716818,  0.05915165085842726,
    0.080465480483664947,    0.0073577987691084111,  -0.047245360780740937,
    -0.38730612104637629,    -0.030545238616315744,  -0.40656802363635514,
    0.079678698725574371,    -0.34895757194563892,   -0.038878462830658295,
    -0.36797300016088585,    0.065354714873822412,   0.60477310859527189,
    0.55772015522066698,     -0.0037691497687736284, 0.004011829873093448,
    0.0059154695529512269,   0.0017446956877246436,  -5.239036600591029e-06,
    -0.001747498559123794,   0.0049477127296934749,  -0.0052245981750848351,
    -0.0077428607069229896,  0.0075943718443423607,  -0.0078416049016575493,
    -0.011789612454347726,   0.0047197781027914663,  0.0018580872763977003,
    -0.0027758004991283729,  -0.0071018318247580911, -0.016537553180727055,
    0.01858250958573316,     0.030023898778581116,   -0.000796398790704686,
    -0.02169433633478788,    0.018819899326167337,   0.062143310362882551,
    0.00338180353160282,     -0.014109680182636967,  0.015150122083381434,
    0.031324431162666935,    0.00023422862903550723, 0.0027109199578797165,
    -0.0029619741474594089,  -0.0061670752768933027, -8.9450087591486181e-05,
    -0.071860849147073011,   -0.12614062320447958,   -0.069468239307603319,
    0.013674130957667105,    0.17783899080857174,    0.045567719459785383,
    0.074530897926554471,    -0.074886786385565313,  -0.27403125761468866,
    0.046602486104927995,    -0.049346294384231743,
};

/* The box loss of mlp(4) over 3 observations, every parameter and the
   minibatch from the closed forms models/vl_policy_reference.py uses: its
   value and the gradient of every tensor as PyTorch autograd computes
   them in float64 (pasted above). Three samples are on the surrogate's
   unclipped branch (ratios 0.01 and 0.09 with positive advantages, 1.64
   with a negative one), one on its clipped, constant branch (0.06,
   negative). */
static void test_box_loss_matches_torch(void)
{
    enum { N = 4, H = 4, P = 89 };
    static float grads[S_MAX_PARAMS];
    vl_action_spec_t box = s_box();
    vl_policy_t *policy = s_policy(&box, H, 1);
    VL_CHECK(policy);
    size_t k = 0;
    for (; vl_probe_param(policy, k); k++)
        *vl_probe_param(policy, k) = (float)(0.5 * sin(0.7 * (double)k + 0.3));
    VL_CHECK(k == P);
    float obs[N * S_OBS], act[N * S_DIMS], old[N], adv[N], vt[N], w[N];
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < S_OBS; j++)
            obs[i * S_OBS + j] = (float)(2.0 * cos(1.3 * (i * S_OBS + j)));
        for (int d = 0; d < S_DIMS; d++)
            act[i * S_DIMS + d] = (float)(1.5 * sin(0.9 * (i * S_DIMS + d) + 1.0));
        old[i] = (float)(-2.0 - 0.3 * i);
        adv[i] = (float)((i % 2 ? -1.0 : 1.0) * (0.5 + 0.25 * i));
        vt[i] = (float)(0.3 * i - 0.5);
        w[i] = (float)(1.0 - 0.15 * i);
    }
    vl_policy_zero_grad(policy);
    float loss = vl_policy_loss_grad(policy, &s_params, N, obs, act, old, adv, vt, w, NULL);
    size_t count = vl_probe_flatten(policy, 1, grads);
    vl_policy_destroy(&policy);
    VL_CHECK(count == P);
    VL_CHECK_NEAR(loss, s_ref_loss, 1e-6);
    double worst = 0.0;
    for (size_t i = 0; i < P; i++)
        worst = fmax(worst, fabs(grads[i] - s_ref_grad[i]) / (1e-3 + fabs(s_ref_grad[i])));
    printf("worst relative gap to torch over %d gradients: %.2g\n", P, worst);
    VL_CHECK_NEAR(worst, 0.0, 1e-4);
}

/* Adam's first step moves each parameter by lr against its gradient's
   sign: the log-std too. */
static void test_adam_step_moves_logstd(void)
{
    vl_action_spec_t box = s_box();
    vl_policy_t *policy = s_policy(&box, 8, 4);
    VL_CHECK(policy);
    vl_rng_t rng;
    vl_rng_seed(&rng, 5);
    s_batch_t b;
    s_make_batch(policy, &rng, &b);
    vl_policy_zero_grad(policy);
    s_loss(policy, &b);
    vl_tensor_t g;
    vl_policy_grad_tensor(policy, 12, &g);
    float grad[S_DIMS] = {g.data[0], g.data[1]}, before[S_DIMS];
    memcpy(before, vl_policy_logstd(policy), sizeof before);
    vl_policy_adam_step(policy, 0.01f, 0.0f);
    const float *after = vl_policy_logstd(policy);
    double moved0 = after[0] - before[0], moved1 = after[1] - before[1];
    vl_policy_destroy(&policy);
    VL_CHECK(fabsf(grad[0]) > 1e-3f && fabsf(grad[1]) > 1e-3f);
    VL_CHECK_NEAR(moved0, grad[0] > 0 ? -0.01 : 0.01, 1e-4);
    VL_CHECK_NEAR(moved1, grad[1] > 0 ? -0.01 : 0.01, 1e-4);
}

/* Takes one PPO step on a fixed box minibatch. */
static void s_step(vl_policy_t *p)
{
    float obs[2 * S_OBS] = {0.1f, -0.2f, 0.3f, -0.4f, 0.2f, 0.0f};
    float act[2 * S_DIMS] = {0.5f, -1.0f, -0.3f, 2.5f};
    float old[2] = {-2.5f, -2.0f}, adv[2] = {1.0f, -0.5f}, vt[2] = {1.0f, 0.5f};
    vl_policy_zero_grad(p);
    vl_policy_loss_grad(p, &s_params, 2, obs, act, old, adv, vt, NULL, NULL);
    vl_policy_adam_step(p, 1e-2f, 0.5f);
}

/* Returns 1 if the parameters of a and b are equal bit for bit. */
static int s_same(vl_policy_t *a, vl_policy_t *b)
{
    static float pa[S_MAX_PARAMS], pb[S_MAX_PARAMS];
    size_t count = vl_probe_flatten(a, 0, pa);
    return vl_probe_flatten(b, 0, pb) == count && memcmp(pa, pb, count * sizeof(float)) == 0;
}

/* Weights plus optimizer state copied into a fresh box policy continue
   exactly, the log-std's moments included: the next step gives the same
   parameters bit for bit, where weights alone (a fresh Adam) do not. */
static void test_box_optimizer_state_round_trip(void)
{
    vl_action_spec_t box = s_box();
    vl_policy_t *a = s_policy(&box, 8, 3), *b = s_policy(&box, 8, 99), *c = s_policy(&box, 8, 98);
    VL_CHECK(a && b && c);
    for (int i = 0; i < 5; i++)
        s_step(a);
    size_t size = vl_policy_optimizer_size(a);
    uint8_t *state = malloc(size);
    VL_CHECK(state);
    vl_policy_save_optimizer(a, state);
    VL_CHECK(vl_policy_load_optimizer(b, state, size - 1) == -1);
    VL_CHECK(vl_policy_load_optimizer(b, state, size) == 0);
    vl_weights_t w = {.n_tensors = vl_policy_tensor_count(a)};
    vl_tensor_t t[16];
    for (uint32_t i = 0; i < w.n_tensors; i++)
        vl_policy_tensor(a, i, &t[i]);
    w.tensors = t;
    VL_CHECK(vl_policy_load(b, &w) == 0 && vl_policy_load(c, &w) == 0);
    VL_CHECK(s_same(a, b) && s_same(a, c));
    s_step(a);
    s_step(b);
    s_step(c);
    int resumed = s_same(a, b);
    int logstd_same = memcmp(vl_policy_logstd(a), vl_policy_logstd(b), S_DIMS * sizeof(float)) == 0;
    int logstd_fresh =
        memcmp(vl_policy_logstd(a), vl_policy_logstd(c), S_DIMS * sizeof(float)) == 0;
    free(state);
    vl_policy_destroy(&a);
    vl_policy_destroy(&b);
    vl_policy_destroy(&c);
    VL_CHECK(resumed);
    VL_CHECK(logstd_same);
    VL_CHECK(!logstd_fresh);
}

int main(void)
{
    VL_RUN(test_box_gradient_matches_finite_differences);
    VL_RUN(test_multi_discrete_gradient_matches_finite_differences);
    VL_RUN(test_tensors_end_with_logstd_for_a_box);
    VL_RUN(test_box_entropy_is_the_gaussians);
    VL_RUN(test_box_loss_matches_the_gaussian_by_hand);
    VL_RUN(test_box_loss_matches_torch);
    VL_RUN(test_adam_step_moves_logstd);
    VL_RUN(test_box_optimizer_state_round_trip);
    return VL_DONE();
}
