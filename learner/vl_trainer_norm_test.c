/*  vl_trainer_norm_test: a trainer over a box action space with
    observation normalisation and reward scaling on. Its updates stay
    finite while the policy's statistics count every observation and reward
    of every batch; and scaling the rewards scales the V-trace targets by
    1 / sqrt(var(G) + 1e-8), G the discounted return of each env stream, as
    Stable-Baselines3's VecNormalize scales them. */
#include "vl_trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/vl_test.h"

#define S_T       16 // horizon
#define S_SEGS    4  // segments per update
#define S_UPDATES 5
#define S_GAMMA   0.9f
#define S_COUNT0  1e-4 // the pseudo-count the statistics start from

static const vl_obs_spec_t s_spec = {.n_fields = 1,
                                     .fields = {{.encoding = VL_OBS_F32, .ndim = 1, .shape = {3}}}};

/* box(1) in [-2, 2]. */
static vl_action_spec_t s_box(void)
{
    return (vl_action_spec_t){.kind = VL_ENV_BOX, .dims = 1, .low = {-2.0f}, .high = {2.0f}};
}

/* A batch of S_SEGS segments and their storage. */
typedef struct {
    vl_segment_t segs[S_SEGS];
    const vl_segment_t *ptrs[S_SEGS];
    uint8_t *arrays;
} s_batch_t;

/* Binds the batch's segments (actor i + 1, env 0: one return stream
   each). Returns 0, or -1 on no memory. */
static int s_batch_new(s_batch_t *b)
{
    size_t size = vl_segment_arrays_size(S_T, &s_spec, 1, 0);
    b->arrays = calloc(S_SEGS, size);
    for (int i = 0; b->arrays && i < S_SEGS; i++) {
        b->segs[i] = (vl_segment_t){
            .horizon = S_T, .action = s_box(), .policy_id = "default", .actor_id = (uint32_t)i + 1};
        vl_segment_set_spec(&b->segs[i], &s_spec);
        vl_segment_bind(&b->segs[i], b->arrays + i * size);
        b->ptrs[i] = &b->segs[i];
    }
    return b->arrays ? 0 : -1;
}

/* Fills the batch: observations far from standard (mean 5, std 3), actions
   drawn from N(0, 1.5^2) (some past the bounds, as unclipped samples are)
   with behaviour log-prob behaviour_logp, rewards in [-1, 3), an episode
   end every 11 steps. */
static void s_fill(s_batch_t *b, vl_rng_t *rng, float behaviour_logp)
{
    for (int i = 0; i < S_SEGS; i++) {
        vl_segment_t *s = &b->segs[i];
        float *obs = (float *)s->obs;
        for (uint32_t k = 0; k < (S_T + 1) * 3; k++)
            obs[k] = (float)(5.0 + 3.0 * vl_rng_normal(rng));
        for (uint32_t t = 0; t < S_T; t++) {
            s->actions[t] = (float)(1.5 * vl_rng_normal(rng));
            s->logp[t] = behaviour_logp;
            s->rewards[t] = (float)(4.0 * vl_rng_uniform(rng) - 1.0);
            s->dones[t] = (i * S_T + t) % 11 == 10 ? 1.0f : 0.0f;
            s->truncated[t] = 0;
        }
        s->n_truncated = 0;
        s->n_episodes = 0;
    }
}

/* Returns a trainer of the box space with the given normalisations. */
static vl_trainer_t *s_trainer(int norm_obs, int norm_reward, float lambda)
{
    vl_learner_config_t c = vl_learner_config_default();
    c.batch_segments = S_SEGS;
    c.minibatch = 32;
    c.epochs = 2;
    c.gamma = S_GAMMA;
    c.lambda = lambda;
    c.norm_obs = norm_obs;
    c.norm_reward = norm_reward;
    vl_spec_t spec = {.policy_id = "default",
                      .obs_spec = s_spec,
                      .action = s_box(),
                      .horizon = S_T,
                      .hidden = 16};
    if (vl_learner_config_set_spec(&c, &spec) != 0)
        return NULL;
    return vl_trainer_new(&c, c.obs_dim);
}

/* Returns 1 if every parameter of the policy is finite. */
static int s_all_finite(vl_policy_t *p)
{
    for (uint32_t i = 0; i < vl_policy_tensor_count(p); i++) {
        vl_tensor_t t;
        vl_policy_tensor(p, i, &t);
        for (uint32_t k = 0; k < t.rows * t.cols; k++)
            if (!isfinite(t.data[k]))
                return 0;
    }
    return 1;
}

/* Returns the policy's norm.state [4] (obs count, return count, return
   mean, return var). */
static const float *s_state(vl_policy_t *p)
{
    vl_tensor_t t[VL_NORM_TENSORS];
    vl_norm_tensors(vl_policy_norm(p), t);
    return t[2].data;
}

/* Updates on S_UPDATES batches stay finite; after the k-th the statistics
   have counted k * S_SEGS * S_T observations (each segment's acted-on rows,
   not its bootstrap row) and as many rewards, and the observation mean
   has moved to the data's. */
static void test_box_trainer_with_norm_updates_and_counts(void)
{
    vl_trainer_t *tr = s_trainer(1, 1, 0.95f);
    s_batch_t b;
    VL_CHECK(tr && s_batch_new(&b) == 0);
    vl_policy_t *p = vl_trainer_policy(tr);
    VL_CHECK(vl_policy_norm(p) != NULL && vl_policy_logstd(p) != NULL);
    vl_rng_t rng;
    vl_rng_seed(&rng, 7);
    int ok = 1;
    double counts[S_UPDATES][2];
    vl_update_stats_t st = {0};
    for (int k = 0; k < S_UPDATES; k++) {
        s_fill(&b, &rng, -1.5f);
        ok &= vl_trainer_update(tr, b.ptrs, S_SEGS, NULL, NULL, &st) == 0;
        ok &= isfinite(st.policy_loss) && isfinite(st.value_loss) && isfinite(st.entropy) &&
              isfinite(st.approx_kl);
        counts[k][0] = s_state(p)[0];
        counts[k][1] = s_state(p)[1];
    }
    vl_tensor_t mean;
    vl_policy_tensor(p, vl_policy_tensor_count(p) - 3, &mean);
    int finite = s_all_finite(p);
    float mean0 = mean.data[0], logstd = vl_policy_logstd(p)[0];
    vl_trainer_destroy(&tr);
    free(b.arrays);
    VL_CHECK(ok && finite);
    VL_CHECK(logstd != 0.0f); // the log-std was trained
    VL_CHECK_NEAR(mean0, 5.0, 0.5);
    for (int k = 0; k < S_UPDATES; k++) {
        VL_CHECK_NEAR(counts[k][0], S_COUNT0 + (k + 1) * S_SEGS * S_T, 1e-3);
        VL_CHECK_NEAR(counts[k][1], S_COUNT0 + (k + 1) * S_SEGS * S_T, 1e-3);
    }
}

/* Sets the value net's weights to 0, so that V = 0 everywhere. */
static void s_zero_values(vl_policy_t *p)
{
    for (uint32_t i = 0; i < vl_policy_tensor_count(p); i++) {
        vl_tensor_t t;
        vl_policy_tensor(p, i, &t);
        if (strncmp(t.name, "v.", 2) == 0)
            memset(t.data, 0, (size_t)t.rows * t.cols * sizeof(float));
    }
    vl_policy_params_changed(p);
}

/* Merges a batch of n values of mean mb and variance vb into a running
   (count, mean, var), as RunningMeanStd does. */
static void s_merge(double *count, double n, double mb, double vb, double *mean, double *var)
{
    double tot = *count + n, delta = mb - *mean;
    *var = (*var * *count + vb * n + delta * delta * *count * n / tot) / tot;
    *mean += delta * n / tot;
    *count = tot;
}

/* Writes into target[i] each segment's sum over t of |its discounted
   return-to-go| (r_t + gamma G_{t+1}, cut at episode ends, 0 past the
   horizon) and returns VecNormalize's reward scale after the batch: the
   running G = gamma G + r of each stream, reset after an episode's end,
   its variance pooled over every step from (count 1e-4, mean 0, var 1). */
static double s_by_hand(const s_batch_t *b, double *target)
{
    double count = S_COUNT0, mean = 0.0, var = 1.0;
    for (int i = 0; i < S_SEGS; i++) {
        const vl_segment_t *s = &b->segs[i];
        double go = 0.0, g = 0.0, gs[S_T], m = 0.0, v = 0.0;
        target[i] = 0.0;
        for (int t = S_T - 1; t >= 0; t--) {
            go = s->rewards[t] + S_GAMMA * (1.0 - s->dones[t]) * go;
            target[i] += fabs(go);
        }
        for (int t = 0; t < S_T; t++) {
            g = S_GAMMA * g + s->rewards[t];
            gs[t] = g;
            m += g / S_T;
            g = s->dones[t] != 0.0f ? 0.0 : g;
        }
        for (int t = 0; t < S_T; t++)
            v += (gs[t] - m) * (gs[t] - m) / S_T;
        s_merge(&count, S_T, m, v, &mean, &var);
    }
    return 1.0 / sqrt(var + 1e-8);
}

/* Two trainers alike but for reward scaling, their values zeroed and the
   traces uncut (lambda 1, behaviour log-probs so low that every rho and c
   clips to 1): each step's V-trace target is then its discounted
   return-to-go, and so is its advantage. The trainer without scaling gets
   the returns of the rewards; the one with, the returns of the scaled
   rewards: the same times the scale, which is not 1. */
static void test_reward_scaling_scales_the_targets(void)
{
    vl_trainer_t *plain = s_trainer(0, 0, 1.0f), *scaled = s_trainer(0, 1, 1.0f);
    s_batch_t b;
    VL_CHECK(plain && scaled && s_batch_new(&b) == 0);
    VL_CHECK(vl_policy_norm(vl_trainer_policy(plain)) == NULL);
    s_zero_values(vl_trainer_policy(plain));
    s_zero_values(vl_trainer_policy(scaled));
    vl_rng_t rng;
    vl_rng_seed(&rng, 9);
    s_fill(&b, &rng, -50.0f);
    float sums_plain[S_SEGS], sums_scaled[S_SEGS];
    int ok = vl_trainer_update(plain, b.ptrs, S_SEGS, NULL, sums_plain, NULL) == 0 &&
             vl_trainer_update(scaled, b.ptrs, S_SEGS, NULL, sums_scaled, NULL) == 0;
    double scale = vl_norm_reward_scale(vl_policy_norm(vl_trainer_policy(scaled)));
    double target[S_SEGS], want_scale = s_by_hand(&b, target);
    vl_trainer_destroy(&plain);
    vl_trainer_destroy(&scaled);
    free(b.arrays);
    VL_CHECK(ok);
    printf("reward scale %.4f (by hand %.4f)\n", scale, want_scale);
    VL_CHECK_NEAR(scale, want_scale, 1e-5 * want_scale);
    VL_CHECK(fabs(scale - 1.0) > 0.1);
    for (int i = 0; i < S_SEGS; i++) { // adv_sums: each segment's sum of |advantage|
        VL_CHECK_NEAR(sums_plain[i], target[i], 1e-5 * target[i]);
        VL_CHECK_NEAR(sums_scaled[i], scale * target[i], 1e-5 * scale * target[i]);
    }
}

int main(void)
{
    VL_RUN(test_box_trainer_with_norm_updates_and_counts);
    VL_RUN(test_reward_scaling_scales_the_targets);
    return VL_DONE();
}
