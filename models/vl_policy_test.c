/*  vl_policy_test: log-softmax, Adam, the policy's initialization, its PPO
    loss gradient against central finite differences, its stats, gradient
    clipping, tensor export and load, and learning a contextual bandit. */
#include "vl_policy.h"
#include "vl_policy_probe.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_adam.h"

#define S_MAX_PARAMS 20000 // floats in any policy these tests build

static const vl_loss_params_t s_params = {.clip = 0.2f, .vf_coef = 0.5f, .ent_coef = 0.1f};

/* Sets every parameter uniform in [-scale, scale), so that no gradient is
   vanishingly small. */
static void s_randomize(vl_policy_t *policy, vl_rng_t *rng, double scale)
{
    for (size_t k = 0; vl_probe_param(policy, k); k++)
        *vl_probe_param(policy, k) = (float)(scale * (2.0 * vl_rng_uniform(rng) - 1.0));
}

/* Returns log pi(action | obs_i) under the current weights. */
static float s_logp(vl_policy_t *policy, const float *obs_i, float action)
{
    float logits[16], logp[16];
    vl_policy_forward(policy, 1, obs_i, logits, NULL);
    vl_log_softmax(logits, vl_policy_num_actions(policy), logp);
    return logp[(int)action];
}

static void test_log_softmax_normalizes_and_is_stable(void)
{
    const float logits[] = {0.3f, -1.2f, 2.5f, 0.0f};
    float logp[4];
    vl_log_softmax(logits, 4, logp);
    double sum = 0.0;
    for (int j = 0; j < 4; j++)
        sum += exp(logp[j]);
    VL_CHECK_NEAR(sum, 1.0, 1e-6);
    VL_CHECK_NEAR(logp[2] - logp[0], 2.2, 1e-6);
    const float huge[] = {1000.0f, 999.0f, -1000.0f};
    vl_log_softmax(huge, 3, logp);
    VL_CHECK(isfinite(logp[0]) && isfinite(logp[1]) && isfinite(logp[2]));
    VL_CHECK_NEAR(logp[0], -log1p(exp(-1.0)), 1e-6);
    VL_CHECK_NEAR(logp[1], -1.0 - log1p(exp(-1.0)), 1e-6);
    VL_CHECK_NEAR(exp(logp[0]) + exp(logp[1]) + exp(logp[2]), 1.0, 1e-6);
}

/* The first Adam step moves each parameter by lr against its gradient's
   sign: what bias correction is for (without it the step is 0.1/sqrt(0.001)
   times larger). */
static void test_adam_first_step_is_lr_sized(void)
{
    vl_adam_t *adam = vl_adam_new(3);
    VL_CHECK(adam);
    float params[3] = {1.0f, 2.0f, 3.0f}, grads[3] = {0.5f, -4.0f, 0.01f};
    vl_adam_step(adam, params, grads, 0.1f);
    VL_CHECK(vl_adam_steps(adam) == 1);
    VL_CHECK_NEAR(params[0], 0.9, 1e-4);
    VL_CHECK_NEAR(params[1], 2.1, 1e-4);
    VL_CHECK_NEAR(params[2], 2.9, 1e-3);
    vl_adam_destroy(&adam);
    vl_adam_destroy(&adam);
    VL_CHECK(adam == NULL);
    VL_CHECK(vl_adam_new(0) == NULL);
}

/* Linear regression y = X theta + b with noiseless targets: Adam on the mean
   squared error must reach the true coefficients. */
static void test_adam_fits_a_linear_regression(void)
{
    enum { N = 64, D = 3 };
    const float truth[D + 1] = {1.5f, -2.0f, 0.5f, 0.75f}; // last is the intercept
    float x[N][D], y[N], theta[D + 1] = {0}, grads[D + 1];
    vl_rng_t rng;
    vl_rng_seed(&rng, 1);
    for (int i = 0; i < N; i++) {
        y[i] = truth[D];
        for (int d = 0; d < D; d++) {
            x[i][d] = (float)vl_rng_normal(&rng);
            y[i] += truth[d] * x[i][d];
        }
    }
    vl_adam_t *adam = vl_adam_new(D + 1);
    VL_CHECK(adam);
    for (int step = 0; step < 3000; step++) {
        memset(grads, 0, sizeof grads);
        for (int i = 0; i < N; i++) {
            float err = theta[D] - y[i];
            for (int d = 0; d < D; d++)
                err += theta[d] * x[i][d];
            for (int d = 0; d < D; d++)
                grads[d] += 2.0f * err * x[i][d] / N;
            grads[D] += 2.0f * err / N;
        }
        vl_adam_step(adam, theta, grads, step < 2000 ? 0.02f : 0.002f);
    }
    vl_adam_destroy(&adam);
    for (int d = 0; d <= D; d++)
        VL_CHECK_NEAR(theta[d], truth[d], 1e-3);
}

static void test_policy_new_refuses_zero_sizes(void)
{
    VL_CHECK(vl_policy_new(0, 2, 8, 1) == NULL);
    VL_CHECK(vl_policy_new(4, 0, 8, 1) == NULL);
    VL_CHECK(vl_policy_new(4, 2, 0, 1) == NULL);
    vl_policy_t *policy = vl_policy_new(4, 2, 8, 1);
    VL_CHECK(policy);
    VL_CHECK(vl_policy_obs_dim(policy) == 4 && vl_policy_num_actions(policy) == 2);
    vl_policy_destroy(&policy);
    vl_policy_destroy(&policy);
    VL_CHECK(policy == NULL);
}

/* A network must fit one Weights message (its tensors are published and
   checkpointed as one): 31 convs over one frame are 66 tensors. */
static void test_policy_new_refuses_more_tensors_than_a_weights_message(void)
{
    char text[512] = "", err[256] = "";
    for (int i = 0; i < 31; i++)
        strcat(text, "conv(2,1,1) ");
    vl_obs_spec_t obs = {.n_fields = 1};
    obs.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_U8, .ndim = 3, .shape = {1, 8, 8}};
    vl_model_spec_t *spec = vl_model_spec_parse(text, err, sizeof err);
    VL_CHECK(spec);
    vl_action_spec_t act = vl_action_discrete(2);
    vl_policy_t *policy = vl_policy_new_spec(spec, &obs, &act, 1, 1, err, sizeof err);
    VL_CHECK(policy == NULL);
    if (strcmp(err, "the network has 66 tensors; a weights message carries at most 64 (fewer "
                    "layers or image fields)") != 0)
        fprintf(stderr, "refused with '%s'\n", err);
    VL_CHECK(strcmp(err, "the network has 66 tensors; a weights message carries at most 64 (fewer "
                         "layers or image fields)") == 0);
    vl_policy_destroy(&policy);
    vl_model_spec_destroy(&spec);
}

static void test_policy_init_is_deterministic_from_seed(void)
{
    static float a[S_MAX_PARAMS], b[S_MAX_PARAMS], c[S_MAX_PARAMS];
    vl_policy_t *pa = vl_policy_new(4, 2, 64, 7), *pb = vl_policy_new(4, 2, 64, 7);
    vl_policy_t *pc = vl_policy_new(4, 2, 64, 8);
    VL_CHECK(pa && pb && pc);
    size_t count = vl_probe_flatten(pa, 0, a);
    VL_CHECK(vl_probe_flatten(pb, 0, b) == count && vl_probe_flatten(pc, 0, c) == count);
    vl_policy_destroy(&pa);
    vl_policy_destroy(&pb);
    vl_policy_destroy(&pc);
    VL_CHECK(memcmp(a, b, count * sizeof(float)) == 0);
    VL_CHECK(memcmp(a, c, count * sizeof(float)) != 0);
}

static void test_tensors_are_named_and_shaped(void)
{
    static const char *const names[12] = {"pi.0.weight", "pi.0.bias", "pi.1.weight", "pi.1.bias",
                                          "pi.2.weight", "pi.2.bias", "v.0.weight",  "v.0.bias",
                                          "v.1.weight",  "v.1.bias",  "v.2.weight",  "v.2.bias"};
    static const uint32_t rows[12] = {64, 64, 64, 64, 3, 3, 64, 64, 64, 64, 1, 1};
    static const uint32_t cols[12] = {5, 1, 64, 1, 64, 1, 5, 1, 64, 1, 64, 1};
    vl_policy_t *policy = vl_policy_new(5, 3, 64, 1);
    VL_CHECK(policy);
    VL_CHECK(vl_policy_tensor_count(policy) == 12);
    for (uint32_t i = 0; i < 12; i++) {
        vl_tensor_t t;
        vl_policy_tensor(policy, i, &t);
        VL_CHECK(strcmp(t.name, names[i]) == 0);
        VL_CHECK(t.rows == rows[i] && t.cols == cols[i] && t.ndim == (cols[i] == 1 ? 1u : 2u));
    }
    // The output bias is live: raising one logit's bias raises that logit.
    vl_tensor_t bias;
    vl_policy_tensor(policy, 5, &bias);
    const float obs[5] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
    float before[3], after[3];
    VL_CHECK(vl_policy_forward(policy, 1, obs, before, NULL) == 0);
    bias.data[1] += 1.0f;
    VL_CHECK(vl_policy_forward(policy, 1, obs, after, NULL) == 0);
    vl_policy_destroy(&policy);
    VL_CHECK_NEAR(after[1] - before[1], 1.0, 1e-6);
    VL_CHECK(after[0] == before[0] && after[2] == before[2]);
}

/* A minibatch for the loss tests: ratios set by old_logp so that the clip is
   active on either side for some samples and inactive for others. */
enum { S_N = 8, S_OBS = 3, S_A = 3 };
typedef struct {
    float obs[S_N * S_OBS];
    float actions[S_N]; // discrete choices as whole numbers
    float old_logp[S_N], adv[S_N], v_target[S_N], w[S_N];
} s_batch_t;

/* Ratios and advantage signs: (1.5, +) and (0.6, -) are clipped (gradient
   0), (1.5, -) and (0.6, +) are not, the rest lie inside [0.8, 1.2]. */
static const float s_ratios[S_N] = {1.5f, 1.5f, 0.6f, 0.6f, 1.0f, 1.1f, 0.9f, 1.05f};
static const float s_adv_sign[S_N] = {1, -1, -1, 1, 1, -1, 1, -1};

static void s_make_batch(vl_policy_t *policy, vl_rng_t *rng, s_batch_t *b)
{
    for (int i = 0; i < S_N; i++) {
        for (int k = 0; k < S_OBS; k++)
            b->obs[i * S_OBS + k] = (float)vl_rng_normal(rng);
        b->actions[i] = (float)vl_rng_below(rng, S_A);
        b->adv[i] = s_adv_sign[i] * (float)(0.5 + vl_rng_uniform(rng));
        b->v_target[i] = (float)vl_rng_normal(rng);
        b->w[i] = (float)(0.2 + 0.8 * vl_rng_uniform(rng));
        float logp = s_logp(policy, b->obs + i * S_OBS, b->actions[i]);
        b->old_logp[i] = logp - logf(s_ratios[i]);
    }
}

/* Returns the loss on b without keeping its gradient meaningful. */
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

static void test_policy_loss_gradient_matches_finite_differences(void)
{
    static float grads[S_MAX_PARAMS];
    vl_policy_t *policy = vl_policy_new(S_OBS, S_A, 5, 3);
    VL_CHECK(policy);
    vl_rng_t rng;
    vl_rng_seed(&rng, 17);
    s_randomize(policy, &rng, 0.8);
    s_batch_t b;
    s_make_batch(policy, &rng, &b);
    vl_policy_zero_grad(policy);
    s_loss(policy, &b);
    size_t count = vl_probe_flatten(policy, 1, grads);
    double worst = vl_probe_fd_gap(policy, grads, count, s_loss_of, &b, 2e-3f);
    vl_policy_destroy(&policy);
    VL_CHECK_NEAR(worst, 0.0, 1e-2);
}

static void test_policy_loss_stats(void)
{
    vl_policy_t *policy = vl_policy_new(S_OBS, S_A, 8, 4);
    VL_CHECK(policy);
    vl_rng_t rng;
    vl_rng_seed(&rng, 23);
    s_randomize(policy, &rng, 0.5);
    s_batch_t b;
    s_make_batch(policy, &rng, &b);
    double surr = 0.0, sq_err = 0.0, entropy = 0.0, kl = 0.0, weighted = 0.0;
    for (int i = 0; i < S_N; i++) {
        float logits[S_A], logp[S_A], value;
        VL_CHECK(vl_policy_forward(policy, 1, b.obs + i * S_OBS, logits, &value) == 0);
        vl_log_softmax(logits, S_A, logp);
        double r = exp(logp[(int)b.actions[i]] - b.old_logp[i]), h = 0.0;
        double si = fmin(r * b.adv[i], fmin(fmax(r, 0.8), 1.2) * b.adv[i]);
        double err = value - b.v_target[i];
        for (int j = 0; j < S_A; j++)
            h -= exp(logp[j]) * logp[j];
        surr += si;
        sq_err += err * err;
        entropy += h;
        kl += (r - 1) - log(r);
        weighted += b.w[i] * (-si + 0.5 * 0.5 * err * err - 0.1 * h);
    }
    float weighted_loss = vl_policy_loss_grad(policy, &s_params, S_N, b.obs, b.actions, b.old_logp,
                                              b.adv, b.v_target, b.w, NULL);
    vl_loss_stats_t st;
    float loss = vl_policy_loss_grad(policy, &s_params, S_N, b.obs, b.actions, b.old_logp, b.adv,
                                     b.v_target, NULL, &st);
    vl_policy_destroy(&policy);
    VL_CHECK_NEAR(st.policy_loss, -surr / S_N, 1e-5);
    VL_CHECK_NEAR(st.value_loss, 0.5 * sq_err / S_N, 1e-5);
    VL_CHECK_NEAR(st.entropy, entropy / S_N, 1e-5);
    VL_CHECK_NEAR(st.approx_kl, kl / S_N, 1e-5);
    VL_CHECK_NEAR(st.clip_frac, 4.0 / S_N, 1e-6); // the 1.5s and 0.6s
    VL_CHECK_NEAR(loss, st.policy_loss + 0.5 * st.value_loss - 0.1 * st.entropy, 1e-5);
    VL_CHECK_NEAR(weighted_loss, weighted / S_N, 1e-5);
}

/* Gradients add up across calls until zeroed; a step clips their global
   norm to max_norm and returns the norm from before. */
static void test_policy_gradients_accumulate_and_clip(void)
{
    static float once[S_MAX_PARAMS], twice[S_MAX_PARAMS], clipped[S_MAX_PARAMS];
    vl_policy_t *policy = vl_policy_new(S_OBS, S_A, 8, 5);
    VL_CHECK(policy);
    vl_rng_t rng;
    vl_rng_seed(&rng, 29);
    s_batch_t b;
    s_make_batch(policy, &rng, &b);
    vl_policy_zero_grad(policy);
    s_loss(policy, &b);
    size_t count = vl_probe_flatten(policy, 1, once);
    s_loss(policy, &b);
    vl_probe_flatten(policy, 1, twice);
    double sq = 0.0;
    for (size_t k = 0; k < count; k++) {
        VL_CHECK_NEAR(twice[k], 2.0 * once[k], 1e-6 * (1 + fabs(once[k])));
        sq += (double)twice[k] * twice[k];
    }
    float norm = vl_policy_adam_step(policy, 1e-3f, 0.5f * (float)sqrt(sq));
    vl_probe_flatten(policy, 1, clipped);
    double clipped_sq = 0.0;
    for (size_t k = 0; k < count; k++)
        clipped_sq += (double)clipped[k] * clipped[k];
    vl_policy_zero_grad(policy);
    int zeroed = vl_probe_flatten(policy, 1, clipped) == count;
    for (size_t k = 0; k < count; k++)
        zeroed &= clipped[k] == 0.0f;
    vl_policy_destroy(&policy);
    VL_CHECK(sq > 0.0);
    VL_CHECK_NEAR(norm, sqrt(sq), 1e-5 * sqrt(sq));
    VL_CHECK_NEAR(sqrt(clipped_sq), 0.5 * sqrt(sq), 1e-4 * sqrt(sq));
    VL_CHECK(zeroed);
}

/* Builds a weights message whose tensors point into the policy's own. */
static void s_export(vl_policy_t *policy, vl_tensor_t *tensors, vl_weights_t *w)
{
    memset(w, 0, sizeof *w);
    strcpy(w->policy_id, "test");
    w->version = 1;
    w->n_tensors = vl_policy_tensor_count(policy);
    w->tensors = tensors;
    for (uint32_t i = 0; i < w->n_tensors; i++)
        vl_policy_tensor(policy, i, &tensors[i]);
}

static void test_policy_load_round_trips(void)
{
    vl_policy_t *src = vl_policy_new(4, 2, 16, 1), *dst = vl_policy_new(4, 2, 16, 2);
    VL_CHECK(src && dst);
    vl_tensor_t tensors[12], reversed[12];
    vl_weights_t w;
    s_export(src, tensors, &w);
    for (int i = 0; i < 12; i++) // load goes by name, not by position
        reversed[i] = tensors[11 - i];
    w.tensors = reversed;
    const float obs[4] = {0.5f, -0.1f, 0.02f, 0.3f};
    float src_logits[2], src_value, dst_logits[2], dst_value;
    VL_CHECK(vl_policy_forward(src, 1, obs, src_logits, &src_value) == 0);
    VL_CHECK(vl_policy_forward(dst, 1, obs, dst_logits, &dst_value) == 0);
    VL_CHECK(dst_value != src_value);
    int loaded = vl_policy_load(dst, &w);
    VL_CHECK(vl_policy_forward(dst, 1, obs, dst_logits, &dst_value) == 0);
    static float a[S_MAX_PARAMS], b[S_MAX_PARAMS];
    size_t count = vl_probe_flatten(src, 0, a);
    vl_probe_flatten(dst, 0, b);
    vl_policy_destroy(&src);
    vl_policy_destroy(&dst);
    VL_CHECK(loaded == 0);
    VL_CHECK(memcmp(a, b, count * sizeof(float)) == 0);
    VL_CHECK(dst_value == src_value);
    VL_CHECK(dst_logits[0] == src_logits[0] && dst_logits[1] == src_logits[1]);
}

/* Returns whether loading w into dst fails and leaves every weight as it
   was. The bad tensor is placed last in the tests below, so a load that
   copied while it checked would be caught. */
static int s_refused(vl_policy_t *dst, const vl_weights_t *w)
{
    static float before[S_MAX_PARAMS], after[S_MAX_PARAMS];
    size_t count = vl_probe_flatten(dst, 0, before);
    int rc = vl_policy_load(dst, w);
    vl_probe_flatten(dst, 0, after);
    return rc == -1 && memcmp(before, after, count * sizeof(float)) == 0;
}

static void test_policy_load_refuses_missing_or_misshaped(void)
{
    vl_policy_t *src = vl_policy_new(4, 2, 16, 1), *dst = vl_policy_new(4, 2, 16, 2);
    VL_CHECK(src && dst);
    vl_tensor_t tensors[12];
    vl_weights_t w;
    static float big[64 * 64];
    s_export(src, tensors, &w);
    w.n_tensors = 11; // no v.2.bias
    int missing = s_refused(dst, &w);
    w.n_tensors = 12;
    tensors[11].rows = 2; // v.2.bias [2] instead of [1]
    tensors[11].data = big;
    int wrong_rows = s_refused(dst, &w);
    s_export(src, tensors, &w);
    tensors[10].ndim = 1; // v.2.weight of rank 1
    int wrong_rank = s_refused(dst, &w);
    s_export(src, tensors, &w);
    strcpy(tensors[11].name, "v.2.biases");
    int wrong_name = s_refused(dst, &w);
    s_export(src, tensors, &w);
    tensors[11].data = NULL;
    int no_data = s_refused(dst, &w);
    s_export(src, tensors, &w);
    int accepted = vl_policy_load(dst, &w) == 0;
    vl_policy_destroy(&src);
    vl_policy_destroy(&dst);
    VL_CHECK(missing);
    VL_CHECK(wrong_rows);
    VL_CHECK(wrong_rank);
    VL_CHECK(wrong_name);
    VL_CHECK(no_data);
    VL_CHECK(accepted);
}

/* Returns pi(action | obs) under the current weights. */
static double s_prob(vl_policy_t *policy, const float *obs, float action)
{
    return exp(s_logp(policy, obs, action));
}

/* Two states, one-hot; state 0 is rewarded for action 2 and state 1 for
   action 0. PPO steps with the value net as baseline must learn both. */
static void test_policy_learns_a_contextual_bandit(void)
{
    enum { N = 64, A = 3 };
    static const float states[2][2] = {{1, 0}, {0, 1}};
    static const float best[2] = {2, 0};
    vl_policy_t *policy = vl_policy_new(2, A, 16, 6);
    VL_CHECK(policy);
    vl_rng_t rng;
    vl_rng_seed(&rng, 31);
    float obs[N * 2], old_logp[N], adv[N], reward[N], values[N], actions[N];
    const vl_loss_params_t p = {.clip = 0.2f, .vf_coef = 0.5f, .ent_coef = 0.01f};
    double start = s_prob(policy, states[0], best[0]);
    for (int step = 0; step < 300; step++) {
        for (int i = 0; i < N; i++) {
            int s = (int)vl_rng_below(&rng, 2);
            memcpy(obs + 2 * i, states[s], sizeof states[s]);
            double u = vl_rng_uniform(&rng), cdf = 0.0;
            actions[i] = A - 1;
            for (int a = 0; a < A; a++)
                if (u < (cdf += s_prob(policy, states[s], (float)a))) {
                    actions[i] = (float)a;
                    break;
                }
            old_logp[i] = s_logp(policy, states[s], actions[i]);
            reward[i] = actions[i] == best[s] ? 1.0f : 0.0f;
        }
        VL_CHECK(vl_policy_forward(policy, N, obs, NULL, values) == 0);
        for (int i = 0; i < N; i++)
            adv[i] = reward[i] - values[i];
        vl_policy_zero_grad(policy);
        vl_policy_loss_grad(policy, &p, N, obs, actions, old_logp, adv, reward, NULL, NULL);
        vl_policy_adam_step(policy, 0.01f, 0.5f);
    }
    double end0 = s_prob(policy, states[0], best[0]), end1 = s_prob(policy, states[1], best[1]);
    vl_policy_destroy(&policy);
    VL_CHECK(start < 0.4);
    VL_CHECK(end0 > 0.9);
    VL_CHECK(end1 > 0.9);
}

/* Takes one PPO step on a fixed minibatch. */
static void s_step(vl_policy_t *p)
{
    float obs[8] = {0.1f, -0.2f, 0.3f, 0.05f, -0.4f, 0.2f, 0.0f, 0.1f};
    float act[2] = {0, 1};
    float old[2] = {-0.7f, -0.7f}, adv[2] = {1.0f, -0.5f}, vt[2] = {1.0f, 0.5f};
    vl_loss_params_t lp = {.clip = 0.2f, .vf_coef = 0.5f, .ent_coef = 0.01f};
    vl_policy_zero_grad(p);
    vl_policy_loss_grad(p, &lp, 2, obs, act, old, adv, vt, NULL, NULL);
    vl_policy_adam_step(p, 1e-2f, 0.5f);
}

/* Weights plus optimizer state copied into a fresh policy continue exactly:
   the next step gives the same parameters bit for bit (resume). */
static void test_optimizer_state_round_trip(void)
{
    vl_policy_t *a = vl_policy_new(4, 2, 8, 3), *b = vl_policy_new(4, 2, 8, 99);
    for (int i = 0; i < 5; i++)
        s_step(a);
    size_t size = vl_policy_optimizer_size(a);
    uint8_t *state = malloc(size);
    vl_policy_save_optimizer(a, state);
    VL_CHECK(vl_policy_load_optimizer(b, state, size - 1) == -1);
    VL_CHECK(vl_policy_load_optimizer(b, state, size) == 0);
    vl_weights_t w = {.n_tensors = vl_policy_tensor_count(a)};
    vl_tensor_t t[32];
    for (uint32_t i = 0; i < w.n_tensors; i++)
        vl_policy_tensor(a, i, &t[i]);
    w.tensors = t;
    VL_CHECK(vl_policy_load(b, &w) == 0);
    s_step(a);
    s_step(b);
    int same = 1;
    for (uint32_t i = 0; i < w.n_tensors; i++) {
        vl_tensor_t ta, tb;
        vl_policy_tensor(a, i, &ta);
        vl_policy_tensor(b, i, &tb);
        same &= memcmp(ta.data, tb.data, (size_t)ta.rows * ta.cols * sizeof(float)) == 0;
    }
    free(state);
    vl_policy_destroy(&a);
    vl_policy_destroy(&b);
    VL_CHECK(same);
}

int main(void)
{
    VL_RUN(test_optimizer_state_round_trip);
    VL_RUN(test_log_softmax_normalizes_and_is_stable);
    VL_RUN(test_adam_first_step_is_lr_sized);
    VL_RUN(test_adam_fits_a_linear_regression);
    VL_RUN(test_policy_new_refuses_zero_sizes);
    VL_RUN(test_policy_new_refuses_more_tensors_than_a_weights_message);
    VL_RUN(test_policy_init_is_deterministic_from_seed);
    VL_RUN(test_tensors_are_named_and_shaped);
    VL_RUN(test_policy_loss_gradient_matches_finite_differences);
    VL_RUN(test_policy_loss_stats);
    VL_RUN(test_policy_gradients_accumulate_and_clip);
    VL_RUN(test_policy_load_round_trips);
    VL_RUN(test_policy_load_refuses_missing_or_misshaped);
    VL_RUN(test_policy_learns_a_contextual_bandit);
    return VL_DONE();
}
