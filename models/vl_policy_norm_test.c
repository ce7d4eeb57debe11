/*  vl_policy_norm_test: a policy's observation normalisation: the three
    statistics tensors it adds, its forward pass on raw observations equal
    to the same network's on observations normalised by hand as
    Stable-Baselines3's VecNormalize does (running mean and variance from a
    pseudo-count of 1e-4, clip((x - mean) / sqrt(var + 1e-8), -10, 10)),
    and weights that carry the statistics turning it on in a fresh policy
    (an actor's) while weights without turn it off. */
#include "vl_policy.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

enum { S_D = 3, S_A = 2, S_HIDDEN = 8, S_SEEN = 64, S_MAX_TENSORS = 16 };

/* The statistics a batch of n observations [n][S_D] leaves, computed in
   double as VecNormalize's RunningMeanStd does from its start (mean 0,
   var 1, count 1e-4): the pooled moments of the batch and that
   pseudo-sample. */
static void s_expected_moments(const float *obs, int n, double *mean, double *var)
{
    const double c0 = 1e-4;
    for (int j = 0; j < S_D; j++) {
        double bm = 0.0, bv = 0.0;
        for (int k = 0; k < n; k++)
            bm += obs[k * S_D + j];
        bm /= n;
        for (int k = 0; k < n; k++)
            bv += (obs[k * S_D + j] - bm) * (obs[k * S_D + j] - bm);
        bv /= n;
        double tot = c0 + n, delta = bm;
        mean[j] = delta * n / tot;
        var[j] = (1.0 * c0 + bv * n + delta * delta * c0 * n / tot) / tot;
    }
}

/* Fills obs [n][S_D] with values far from standard: element j has mean
   5 (j + 1) and std j + 2. */
static void s_fill(vl_rng_t *rng, int n, float *obs)
{
    for (int k = 0; k < n; k++)
        for (int j = 0; j < S_D; j++)
            obs[k * S_D + j] = (float)(5.0 * (j + 1) + (j + 2) * vl_rng_normal(rng));
}

/* Points w's tensors (t [S_MAX_TENSORS]) at the policy's first n. */
static void s_weights(vl_policy_t *p, uint32_t n, vl_tensor_t *t, vl_weights_t *w)
{
    memset(w, 0, sizeof *w);
    snprintf(w->policy_id, sizeof w->policy_id, "test");
    w->n_tensors = n;
    w->tensors = t;
    for (uint32_t i = 0; i < n; i++)
        vl_policy_tensor(p, i, &t[i]);
}

/* Turning normalisation on adds norm.obs.mean [D], norm.obs.var [D] and
   norm.state [4] after the network's tensors (a box's log-std included),
   once however often it is turned on. */
static void test_norm_on_adds_three_tensors(void)
{
    static const char *const names[3] = {"norm.obs.mean", "norm.obs.var", "norm.state"};
    static const uint32_t rows[3] = {S_D, S_D, 4};
    vl_policy_t *p = vl_policy_new(S_D, S_A, S_HIDDEN, 1);
    VL_CHECK(p && vl_policy_tensor_count(p) == 12 && vl_policy_norm(p) == NULL);
    VL_CHECK(vl_policy_norm_on(p, 0.99f) == 0 && vl_policy_norm_on(p, 0.99f) == 0);
    VL_CHECK(vl_policy_norm(p) != NULL && vl_policy_tensor_count(p) == 15);
    for (uint32_t i = 0; i < 3; i++) {
        vl_tensor_t t;
        vl_policy_tensor(p, 12 + i, &t);
        VL_CHECK(strcmp(t.name, names[i]) == 0 && t.rows == rows[i] && t.cols == 1 && t.ndim == 1);
    }
    vl_policy_destroy(&p);
    vl_model_spec_t *spec = vl_model_spec_mlp(S_HIDDEN);
    vl_obs_spec_t obs = vl_obs_spec_flat(S_D);
    vl_action_spec_t box = {.kind = VL_ENV_BOX, .dims = 1, .low = {-2.0f}, .high = {2.0f}};
    p = spec ? vl_policy_new_spec(spec, &obs, &box, 1, 0, NULL, 0) : NULL;
    vl_model_spec_destroy(&spec);
    VL_CHECK(p && vl_policy_norm_on(p, 0.99f) == 0 && vl_policy_tensor_count(p) == 16);
    vl_tensor_t t;
    vl_policy_tensor(p, 12, &t);
    VL_CHECK(strcmp(t.name, "pi.logstd") == 0);
    vl_policy_tensor(p, 13, &t);
    VL_CHECK(strcmp(t.name, "norm.obs.mean") == 0);
    vl_policy_destroy(&p);
}

/* Sets every weight uniform in [-1, 1) from seed, the first layers' in
   [-0.02, 0.02) so that their tanh stays off saturation up to inputs of
   about 50: outputs of order 1 that a clip at 10 visibly changes. */
static void s_scramble(vl_policy_t *p, uint64_t seed)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (uint32_t i = 0; i < 12; i++) {
        vl_tensor_t t;
        vl_policy_tensor(p, i, &t);
        double scale = i == 0 || i == 6 ? 0.02 : 1.0; // pi.0.weight, v.0.weight
        for (uint32_t k = 0; k < t.rows * t.cols; k++)
            t.data[k] = (float)(scale * (2.0 * vl_rng_uniform(&rng) - 1.0));
    }
    vl_policy_params_changed(p);
}

/* With statistics of a batch seen, the policy's outputs on raw
   observations are the same network's (norm off) on observations
   normalised by hand, one of them far enough out to be clipped at 10. */
static void test_forward_normalises_then_clips(void)
{
    vl_policy_t *on = vl_policy_new(S_D, S_A, S_HIDDEN, 7),
                *off = vl_policy_new(S_D, S_A, S_HIDDEN, 7);
    VL_CHECK(on && off && vl_policy_norm_on(on, 0.99f) == 0);
    s_scramble(on, 5);
    s_scramble(off, 5);
    vl_rng_t rng;
    vl_rng_seed(&rng, 11);
    float seen[S_SEEN * S_D], obs[4 * S_D], normed[4 * S_D], unclipped[4 * S_D];
    s_fill(&rng, S_SEEN, seen);
    vl_norm_update_obs(vl_policy_norm(on), S_SEEN, seen);
    s_fill(&rng, 4, obs);
    obs[3 * S_D + 1] = 1000.0f; // (1000 - 10) / 3: clipped
    double mean[S_D], var[S_D];
    s_expected_moments(seen, S_SEEN, mean, var);
    for (int k = 0; k < 4 * S_D; k++) {
        double z = (obs[k] - mean[k % S_D]) / sqrt(var[k % S_D] + 1e-8);
        unclipped[k] = (float)z;
        normed[k] = (float)fmin(fmax(z, -10.0), 10.0);
    }
    float l_on[4 * S_A], v_on[4], l_off[4 * S_A], v_off[4], l_raw[4 * S_A];
    VL_CHECK(vl_policy_forward(on, 4, obs, l_on, v_on) == 0);
    VL_CHECK(vl_policy_forward(off, 4, normed, l_off, v_off) == 0);
    VL_CHECK(vl_policy_forward(off, 4, unclipped, l_raw, NULL) == 0);
    vl_policy_destroy(&on);
    vl_policy_destroy(&off);
    VL_CHECK(normed[3 * S_D + 1] == 10.0f && unclipped[3 * S_D + 1] > 100.0f);
    for (int k = 0; k < 4; k++)
        VL_CHECK_NEAR(v_on[k], v_off[k], 1e-5 * (1 + fabs(v_off[k])));
    for (int k = 0; k < 4 * S_A; k++)
        VL_CHECK_NEAR(l_on[k], l_off[k], 1e-5 * (1 + fabs(l_off[k])));
    VL_CHECK(fabsf(l_raw[3 * S_A] - l_off[3 * S_A]) > 1e-3f * fabsf(l_off[3 * S_A])); // clipped
}

/* The published tensors are the statistics: mean and var as computed by
   hand, norm.state's observation count 1e-4 + the observations seen. */
static void test_tensors_publish_the_statistics(void)
{
    vl_policy_t *p = vl_policy_new(S_D, S_A, S_HIDDEN, 7);
    VL_CHECK(p && vl_policy_norm_on(p, 0.99f) == 0);
    vl_rng_t rng;
    vl_rng_seed(&rng, 13);
    float seen[S_SEEN * S_D];
    s_fill(&rng, S_SEEN, seen);
    vl_norm_update_obs(vl_policy_norm(p), S_SEEN, seen);
    double mean[S_D], var[S_D];
    s_expected_moments(seen, S_SEEN, mean, var);
    vl_tensor_t m, v, st;
    vl_policy_tensor(p, 12, &m);
    vl_policy_tensor(p, 13, &v);
    vl_policy_tensor(p, 14, &st);
    for (int j = 0; j < S_D; j++) {
        VL_CHECK_NEAR(m.data[j], mean[j], 1e-5 * fabs(mean[j]));
        VL_CHECK_NEAR(v.data[j], var[j], 1e-5 * var[j]);
    }
    VL_CHECK_NEAR(st.data[0], S_SEEN + 1e-4, 1e-3);
    vl_policy_destroy(&p);
}

/* A learner's weights with statistics loaded into a fresh policy turn its
   normalisation on with them (the same outputs as the learner's); weights
   without them turn it off again (the outputs of a policy that never
   normalised). Statistics that are there but bad refuse the load. */
static void test_load_turns_norm_on_and_off(void)
{
    vl_policy_t *learner = vl_policy_new(S_D, S_A, S_HIDDEN, 3);
    vl_policy_t *actor = vl_policy_new(S_D, S_A, S_HIDDEN, 4);
    vl_policy_t *plain = vl_policy_new(S_D, S_A, S_HIDDEN, 3);
    VL_CHECK(learner && actor && plain && vl_policy_norm_on(learner, 0.99f) == 0);
    s_scramble(learner, 9);
    s_scramble(plain, 9);
    vl_rng_t rng;
    vl_rng_seed(&rng, 17);
    float seen[S_SEEN * S_D], obs[4 * S_D];
    s_fill(&rng, S_SEEN, seen);
    s_fill(&rng, 4, obs);
    vl_norm_update_obs(vl_policy_norm(learner), S_SEEN, seen);
    vl_tensor_t t[S_MAX_TENSORS];
    vl_weights_t w;
    s_weights(learner, vl_policy_tensor_count(learner), t, &w);
    VL_CHECK(vl_policy_load(actor, &w) == 0);
    VL_CHECK(vl_policy_norm(actor) != NULL && vl_policy_tensor_count(actor) == 15);
    float want[4 * S_A], got[4 * S_A], bare[4 * S_A];
    VL_CHECK(vl_policy_forward(learner, 4, obs, want, NULL) == 0);
    VL_CHECK(vl_policy_forward(actor, 4, obs, got, NULL) == 0);
    for (int k = 0; k < 4 * S_A; k++)
        VL_CHECK_NEAR(got[k], want[k], 1e-5 * (1 + fabs(want[k])));
    // Bad statistics (a negative variance) refuse the whole load.
    float bad_var[S_D] = {1.0f, -1.0f, 1.0f};
    vl_tensor_t var = t[13];
    t[13].data = bad_var;
    VL_CHECK(vl_policy_load(plain, &w) == -1 && vl_policy_norm(plain) == NULL);
    t[13] = var;
    // The network's tensors alone: normalisation off, the raw network.
    w.n_tensors = 12;
    VL_CHECK(vl_policy_load(actor, &w) == 0);
    VL_CHECK(vl_policy_norm(actor) == NULL && vl_policy_tensor_count(actor) == 12);
    VL_CHECK(vl_policy_forward(actor, 4, obs, got, NULL) == 0);
    VL_CHECK(vl_policy_forward(plain, 4, obs, bare, NULL) == 0);
    vl_policy_destroy(&learner);
    vl_policy_destroy(&actor);
    vl_policy_destroy(&plain);
    VL_CHECK(memcmp(got, bare, sizeof got) == 0);
    VL_CHECK(fabsf(got[0] - want[0]) > 1e-3f); // normalising made a difference
}

int main(void)
{
    VL_RUN(test_norm_on_adds_three_tensors);
    VL_RUN(test_forward_normalises_then_clips);
    VL_RUN(test_tensors_publish_the_statistics);
    VL_RUN(test_load_turns_norm_on_and_off);
    return VL_DONE();
}
