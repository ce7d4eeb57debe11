/*  Tests of vl_trainer: truncation done right. An env pays 1 on every step
    and a time limit cuts each episode after 50 steps; the observation says
    where in the episode it is (sin and cos of its phase, so the final
    observation, one step past the last, is as familiar as any). With
    gamma = 0.99 the true values are 1 / (1 - gamma) = 100 everywhere: the
    future after the limit still pays. Trained on the same segments marked
    truncated (with their final observations), the learner bootstraps and its
    values stay high up to the limit; marked terminated, the same learner
    learns values that count down toward 1 at the limit (Pardo et al. 2018). */
#include "vl_trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/vl_test.h"

#define S_LIMIT   50 // steps an episode runs before the time limit cuts it
#define S_T       64 // horizon
#define S_SEGS    16 // segments per update
#define S_UPDATES 600

static const vl_obs_spec_t s_spec = {.n_fields = 1,
                                     .fields = {{.encoding = VL_OBS_F32, .ndim = 1, .shape = {2}}}};

/* Writes the observation at step k of an episode. */
static void s_obs(uint32_t k, float *o)
{
    double phase = 2 * M_PI * (double)k / S_LIMIT;
    o[0] = (float)sin(phase);
    o[1] = (float)cos(phase);
}

/* Fills segment seg (bound) as the `index`-th of an endless run of such
   episodes; the limit's step is marked truncated (with its final
   observation) or, with `as_termination`, terminated. */
static void s_fill(vl_segment_t *seg, uint64_t index, int as_termination)
{
    seg->n_truncated = 0;
    seg->n_episodes = 0;
    for (uint32_t t = 0; t <= S_T; t++) {
        uint32_t k = (uint32_t)((index * S_T + t) % S_LIMIT);
        s_obs(k, (float *)(seg->obs + (size_t)t * seg->obs_row_bytes));
        if (t == S_T)
            break;
        int end = k == S_LIMIT - 1;
        seg->actions[t] = (float)((index + t) % 2);
        seg->logp[t] = logf(0.5f);
        seg->rewards[t] = 1.0f;
        seg->dones[t] = end ? 1.0f : 0.0f;
        seg->truncated[t] = end && !as_termination;
        if (seg->truncated[t])
            s_obs(S_LIMIT,
                  (float *)(seg->final_obs + (size_t)seg->n_truncated++ * seg->obs_row_bytes));
    }
}

/* Trains a fresh trainer on S_UPDATES batches and writes its values at
   every step of an episode into v[S_LIMIT]. Returns 0, or -1. */
static int s_train(int as_termination, float *v)
{
    vl_learner_config_t c = vl_learner_config_default();
    c.horizon = S_T;
    c.batch_segments = S_SEGS;
    c.gamma = 0.99f;
    c.lr = 3e-3f;
    c.ent_coef = 0;
    vl_learner_config_set_spec(&c, &(vl_spec_t){.policy_id = "default",
                                                .obs_spec = s_spec,
                                                .action = vl_action_discrete(2),
                                                .horizon = S_T,
                                                .hidden = 32});
    vl_trainer_t *tr = vl_trainer_new(&c, 2);
    size_t size = vl_segment_arrays_size(S_T, &s_spec, 1, 0);
    uint8_t *arrays = calloc(S_SEGS, size);
    vl_segment_t segs[S_SEGS];
    const vl_segment_t *ptrs[S_SEGS];
    int rc = tr && arrays ? 0 : -1;
    for (int i = 0; rc == 0 && i < S_SEGS; i++) {
        segs[i] =
            (vl_segment_t){.horizon = S_T, .action = vl_action_discrete(2), .policy_id = "default"};
        vl_segment_set_spec(&segs[i], &s_spec);
        vl_segment_bind(&segs[i], arrays + i * size);
        ptrs[i] = &segs[i];
    }
    for (uint64_t u = 0; rc == 0 && u < S_UPDATES; u++) {
        for (int i = 0; i < S_SEGS; i++)
            s_fill(&segs[i], u * S_SEGS + (uint64_t)i, as_termination);
        rc = vl_trainer_update(tr, ptrs, S_SEGS, NULL, NULL, NULL);
    }
    float obs[S_LIMIT * 2];
    for (uint32_t k = 0; k < S_LIMIT; k++)
        s_obs(k, obs + 2 * k);
    if (rc == 0)
        rc = vl_policy_forward(vl_trainer_policy(tr), S_LIMIT, obs, NULL, v);
    vl_trainer_destroy(&tr);
    free(arrays);
    return rc;
}

static void test_truncation_bootstraps_values(void)
{
    float trunc[S_LIMIT], term[S_LIMIT];
    VL_CHECK(s_train(0, trunc) == 0);
    VL_CHECK(s_train(1, term) == 0);
    float lo = trunc[0], hi = trunc[0];
    for (int k = 0; k < S_LIMIT; k++) {
        lo = trunc[k] < lo ? trunc[k] : lo;
        hi = trunc[k] > hi ? trunc[k] : hi;
    }
    printf("values at steps 0, 25, 48, 49 of an episode: truncated %.1f %.1f %.1f %.1f; "
           "as terminated %.1f %.1f %.1f %.1f (true: 100 everywhere)\n",
           trunc[0], trunc[25], trunc[48], trunc[49], term[0], term[25], term[48], term[49]);
    // Bootstrapped: high everywhere, no count-down at the limit.
    VL_CHECK(lo > 50.0f);
    VL_CHECK(trunc[49] > 0.8f * trunc[0]);
    // Treated as termination: the values count down to about 1 at the limit.
    VL_CHECK(term[49] < 5.0f);
    VL_CHECK(term[0] > 5 * term[49]);
    VL_CHECK(trunc[49] > 10 * term[49]);
}

int main(void)
{
    VL_RUN(test_truncation_bootstraps_values);
    return VL_DONE();
}
