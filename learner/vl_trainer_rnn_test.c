/*  vl_trainer_rnn_test: the learner with a recurrent model. A trainer on
    "linear(16) lstm(6)" takes updates on segments that carry the actor's
    state and have episodes ending (and one truncated) inside them, with
    every weight finite and moving; with --burn-in K its loss sees only the
    last T - K steps of each segment: batches that differ only in the
    actions, log-probs and rewards of the first K steps train to the same
    weights bit for bit, which they do not without burn-in; each truncated
    episode bootstraps from the value of its final observation read after
    its own history alone, two of them in one segment included; ingest
    refuses a segment of another state size with the sizes named; and one
    epoch of one minibatch trains as two passes would, through one. */
#include "vl_trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../store/vl_buffer.h"
#include "../tests/vl_test.h"
#include "vl_ingest.h"

#define S_T       16 // horizon
#define S_D       3  // floats per observation
#define S_SEGS    8  // segments per update
#define S_H       6  // the lstm's hidden size
#define S_STATE   (2 * S_H)
#define S_UPDATES 8
#define S_BURN    5
#define S_MAX_W   2000 // floats of the policy's parameters (about 1000)

static const char *const s_model = "linear(16) lstm(6)";

/* Returns a config for segments of S_T steps of S_D floats over
   discrete(2) on s_model, minibatches of 2 whole segments, with burn_in. */
static vl_learner_config_t s_config(uint32_t burn_in)
{
    vl_learner_config_t c = vl_learner_config_default();
    vl_learner_config_set_spec(&c, &(vl_spec_t){.policy_id = "default",
                                                .obs_spec = vl_obs_spec_flat(S_D),
                                                .action = vl_action_discrete(2),
                                                .horizon = S_T,
                                                .hidden = 16});
    snprintf(c.model, sizeof c.model, "%s", s_model);
    c.batch_segments = S_SEGS;
    c.minibatch = 2 * S_T;
    c.epochs = 2;
    c.burn_in = burn_in;
    return c;
}

/* Segments bound to one calloc'd block (caller frees block). */
typedef struct {
    vl_segment_t segs[S_SEGS];
    const vl_segment_t *ptrs[S_SEGS];
    uint8_t *block;
} s_batch_t;

/* Binds b's segments (state of S_STATE floats). Returns 0, or -1. */
static int s_batch_new(s_batch_t *b)
{
    vl_obs_spec_t spec = vl_obs_spec_flat(S_D);
    size_t size = vl_segment_arrays_size(S_T, &spec, 1, S_STATE);
    if (!(b->block = calloc(S_SEGS, size)))
        return -1;
    for (int i = 0; i < S_SEGS; i++) {
        b->segs[i] = (vl_segment_t){.horizon = S_T,
                                    .action = vl_action_discrete(2),
                                    .policy_id = "default",
                                    .state_size = S_STATE};
        vl_segment_set_spec(&b->segs[i], &spec);
        vl_segment_bind(&b->segs[i], b->block + i * size);
        b->ptrs[i] = &b->segs[i];
    }
    return 0;
}

/* Fills b's segments from rng: observations, a stored state, actions and
   their log-probs and rewards; segment i ends an episode after step
   (3 i + 2) % S_T and every third is a time limit's (its final observation
   given). The steps before S_BURN draw from rng_early, the rest from rng,
   so two batches filled with one rng and two rng_early differ in those
   steps alone. */
static void s_fill(s_batch_t *b, vl_rng_t *rng, vl_rng_t *rng_early)
{
    for (int i = 0; i < S_SEGS; i++) {
        vl_segment_t *s = &b->segs[i];
        float *obs = (float *)s->obs;
        for (int k = 0; k < (S_T + 1) * S_D; k++)
            obs[k] = (float)vl_rng_normal(rng);
        for (int k = 0; k < S_STATE; k++)
            s->state[k] = (float)(vl_rng_uniform(rng) - 0.5);
        s->n_truncated = s->n_episodes = 0;
        for (uint32_t t = 0; t < S_T; t++) {
            vl_rng_t *r = t < S_BURN ? rng_early : rng;
            s->actions[t] = (float)vl_rng_below(r, 2);
            s->logp[t] = logf((float)(0.3 + 0.4 * vl_rng_uniform(r)));
            s->rewards[t] = (float)vl_rng_normal(r);
            int end = t == (uint32_t)(3 * i + 2) % S_T;
            s->dones[t] = end ? 1.0f : 0.0f;
            s->truncated[t] = end && i % 3 == 0;
            if (s->truncated[t])
                for (int k = 0; k < S_D; k++)
                    ((float *)s->final_obs)[s->n_truncated * S_D + k] = (float)vl_rng_normal(rng);
            s->n_truncated += s->truncated[t];
        }
    }
}

/* Copies every parameter of the trainer's policy into w. Returns the
   count. */
static size_t s_weights(vl_trainer_t *tr, float *w)
{
    vl_policy_t *p = vl_trainer_policy(tr);
    size_t n = 0;
    for (uint32_t i = 0; i < vl_policy_tensor_count(p); i++) {
        vl_tensor_t t;
        vl_policy_tensor(p, i, &t);
        size_t size = (size_t)t.rows * t.cols;
        if (n + size > S_MAX_W)
            return 0;
        memcpy(w + n, t.data, size * sizeof(float));
        n += size;
    }
    return n;
}

/* Returns 1 if the stats of an update are all finite (explained variance
   may be NAN only when the targets did not vary). */
static int s_stats_finite(const vl_update_stats_t *u)
{
    return isfinite(u->policy_loss) && isfinite(u->value_loss) && isfinite(u->entropy) &&
           isfinite(u->approx_kl) && isfinite(u->clip_frac) && isfinite(u->mean_abs_adv);
}

/* S_UPDATES updates (normalisation on, a recurrent core's default) on
   fresh batches: every stat and weight stays finite and the weights move,
   the lstm's recurrent weights among them. */
static void test_updates_stay_finite(void)
{
    vl_learner_config_t c = s_config(0);
    VL_CHECK(vl_learner_config_state_size(&c) == S_STATE);
    vl_trainer_t *tr = vl_trainer_new(&c, S_D);
    s_batch_t b;
    VL_CHECK(tr && s_batch_new(&b) == 0);
    VL_CHECK(vl_policy_state_size(vl_trainer_policy(tr)) == S_STATE);
    VL_CHECK(vl_policy_norm(vl_trainer_policy(tr)) != NULL);
    static float before[S_MAX_W], after[S_MAX_W];
    size_t n = s_weights(tr, before);
    vl_rng_t rng;
    vl_rng_seed(&rng, 9);
    int ok = n > 0;
    for (int u = 0; ok && u < S_UPDATES; u++) {
        vl_update_stats_t stats;
        s_fill(&b, &rng, &rng);
        ok = vl_trainer_update(tr, b.ptrs, S_SEGS, NULL, NULL, &stats) == 0 &&
             s_stats_finite(&stats);
    }
    ok = ok && s_weights(tr, after) == n;
    size_t moved = 0, finite = 0;
    for (size_t k = 0; ok && k < n; k++) {
        finite += isfinite(after[k]) != 0;
        moved += after[k] != before[k];
    }
    vl_tensor_t hh; // torso.0.weight, torso.0.bias, lstm.weight_ih, then lstm.weight_hh
    vl_policy_tensor(vl_trainer_policy(tr), 3, &hh);
    int hh_named = strcmp(hh.name, "lstm.weight_hh") == 0;
    vl_trainer_destroy(&tr);
    free(b.block);
    VL_CHECK(ok && finite == n);
    printf("%zu of %zu weights moved over %d updates\n", moved, n, S_UPDATES);
    VL_CHECK(hh_named && moved > n / 2);
}

/* Trains a fresh trainer (burn_in, normalisation off so that rewards are
   not scaled by the batch's) on one batch whose early steps come from
   early_seed; writes its weights into w. Returns the count, 0 on failure. */
static size_t s_train_once(uint32_t burn_in, uint64_t early_seed, float *w)
{
    vl_learner_config_t c = s_config(burn_in);
    c.norm_obs = c.norm_reward = 0;
    vl_trainer_t *tr = vl_trainer_new(&c, S_D);
    s_batch_t b;
    size_t n = 0;
    if (tr && s_batch_new(&b) == 0) {
        vl_rng_t rng, early;
        vl_rng_seed(&rng, 21);
        vl_rng_seed(&early, early_seed);
        s_fill(&b, &rng, &early);
        if (vl_trainer_update(tr, b.ptrs, S_SEGS, NULL, NULL, NULL) == 0)
            n = s_weights(tr, w);
        free(b.block);
    }
    vl_trainer_destroy(&tr);
    return n;
}

/* Returns how many of n floats differ between a and b. */
static size_t s_differ(const float *a, const float *b, size_t n)
{
    size_t d = 0;
    for (size_t k = 0; k < n; k++)
        d += memcmp(&a[k], &b[k], sizeof(float)) != 0;
    return d;
}

/* With burn-in K the first K steps only rebuild the state: batches
   differing in their actions, log-probs and rewards there give the same
   weights; without burn-in the loss sees them and the weights differ; and
   burn-in itself changes the update. */
static void test_burn_in_hides_the_first_steps_from_the_loss(void)
{
    static float burn_a[S_MAX_W], burn_b[S_MAX_W], full_a[S_MAX_W], full_b[S_MAX_W];
    size_t n = s_train_once(S_BURN, 1, burn_a);
    VL_CHECK(n > 0 && s_train_once(S_BURN, 2, burn_b) == n);
    VL_CHECK(s_train_once(0, 1, full_a) == n && s_train_once(0, 2, full_b) == n);
    size_t burn_gap = s_differ(burn_a, burn_b, n), full_gap = s_differ(full_a, full_b, n);
    size_t burn_effect = s_differ(burn_a, full_a, n);
    printf("weights differing between the batches: %zu with burn-in %d, %zu without; "
           "%zu between burn-in and none\n",
           burn_gap, S_BURN, full_gap, burn_effect);
    VL_CHECK(burn_gap == 0);
    VL_CHECK(full_gap > n / 2 && burn_effect > n / 2);
}

/* Trains a fresh trainer of model (one epoch, one minibatch of the whole
   batch, importance weights) on S_UPDATES batches with the single pass on
   or off; writes its weights into w and the last update's stats into u.
   Returns the weights' count, 0 on failure. */
static size_t s_train_single(const char *model, int single, float *w, vl_update_stats_t *u)
{
    vl_learner_config_t c = s_config(0);
    snprintf(c.model, sizeof c.model, "%s", model);
    c.epochs = 1;
    c.minibatch = S_SEGS * S_T;
    vl_trainer_t *tr = vl_trainer_new(&c, S_D);
    s_batch_t b;
    size_t n = 0;
    if (tr && s_batch_new(&b) == 0) {
        vl_trainer_set_single_pass(tr, single);
        vl_rng_t rng;
        vl_rng_seed(&rng, 33);
        float seg_w[S_SEGS];
        for (int i = 0; i < S_SEGS; i++)
            seg_w[i] = 0.5f + 0.1f * (float)i;
        int ok = 1;
        for (int k = 0; ok && k < S_UPDATES; k++) {
            s_fill(&b, &rng, &rng);
            ok = vl_trainer_update(tr, b.ptrs, S_SEGS, seg_w, NULL, u) == 0;
        }
        n = ok ? s_weights(tr, w) : 0;
        free(b.block);
    }
    vl_trainer_destroy(&tr);
    return n;
}

/* One epoch of one minibatch holding the whole batch takes its loss
   through the forward pass that recomputed the targets: the weights and
   stats after S_UPDATES such updates (segments with truncations, whose
   bootstrap values take a forward pass of their own, and importance
   weights) match those of the two-pass update up to float rounding, for a
   recurrent core and a memoryless one. */
static void test_single_pass_matches_two_passes(void)
{
    static const char *const models[] = {"linear(16) lstm(6)", "mlp(16)"};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        static float one[S_MAX_W], two[S_MAX_W];
        vl_update_stats_t u1, u2;
        size_t n = s_train_single(models[m], 1, one, &u1);
        VL_CHECK(n > 0 && s_train_single(models[m], 0, two, &u2) == n);
        double worst = 0;
        for (size_t k = 0; k < n; k++) {
            double d = fabs((double)one[k] - two[k]) / (1.0 + fabs((double)two[k]));
            worst = d > worst ? d : worst;
        }
        printf("%s: single pass against two, %zu weights after %d updates: largest gap %.2e; "
               "loss %.6f / %.6f, kl %.3e / %.3e\n",
               models[m], n, S_UPDATES, worst, u1.value_loss, u2.value_loss, u1.approx_kl,
               u2.approx_kl);
        VL_CHECK(worst < 1e-4);
        // the single pass ran: its sums, taken in another order, leave some bits apart
        VL_CHECK(s_differ(one, two, n) > 0);
        VL_CHECK(fabsf(u1.value_loss - u2.value_loss) <= 1e-4f * (1.0f + fabsf(u2.value_loss)));
        VL_CHECK(fabsf(u1.policy_loss - u2.policy_loss) <= 1e-4f);
        VL_CHECK(fabsf(u1.entropy - u2.entropy) <= 1e-4f);
    }
}

/* Returns V(final) of the episode of obs rows [from, to] of a segment
   followed by final, run alone from a zero state; NAN on failure. */
static float s_alone(vl_policy_t *p, const float *obs, uint32_t from, uint32_t to,
                     const float *final)
{
    float rows[(S_T + 2) * S_D], values[S_T + 2], zero[S_STATE] = {0};
    uint32_t len = to - from + 1;
    memcpy(rows, obs + from * S_D, len * S_D * sizeof(float));
    memcpy(rows + len * S_D, final, S_D * sizeof(float));
    if (vl_policy_forward_seq(p, 1, len + 1, rows, zero, NULL, NULL, values, NULL) != 0)
        return NAN;
    return values[len];
}

/* Segment 0 holds two truncated episodes (steps 0..4 and 5..10), segment 1
   one cut at its first step and one at its last: each bootstrap is the
   value its episode gives alone from a zero state, the second's history
   holding nothing of the first's final observation. */
static void test_two_truncations_in_one_segment_bootstrap_alone(void)
{
    static const uint32_t cuts[2][2] = {{4, 10}, {0, S_T - 1}};
    vl_learner_config_t c = s_config(0);
    c.norm_obs = c.norm_reward = 0;
    vl_trainer_t *tr = vl_trainer_new(&c, S_D);
    s_batch_t b;
    VL_CHECK(tr && s_batch_new(&b) == 0);
    vl_rng_t rng;
    vl_rng_seed(&rng, 5);
    s_fill(&b, &rng, &rng);
    for (int i = 0; i < 2; i++) {
        vl_segment_t *s = &b.segs[i];
        memset(s->state, 0, S_STATE * sizeof(float));
        s->n_truncated = 0;
        for (uint32_t t = 0; t < S_T; t++) {
            int cut = t == cuts[i][0] || t == cuts[i][1];
            s->dones[t] = (float)cut;
            s->truncated[t] = (uint8_t)cut;
            for (int k = 0; cut && k < S_D; k++)
                ((float *)s->final_obs)[s->n_truncated * S_D + k] = (float)vl_rng_normal(&rng);
            s->n_truncated += cut;
        }
    }
    float boot[2][S_T];
    VL_CHECK(vl_trainer_boot(tr, b.ptrs, 2, &boot[0][0]) == 0);
    double worst = 0;
    for (int i = 0; i < 2; i++) {
        const float *obs = (const float *)b.segs[i].obs, *fin = (const float *)b.segs[i].final_obs;
        for (int e = 0; e < 2; e++) {
            uint32_t from = e ? cuts[i][0] + 1 : 0, to = cuts[i][e];
            float want = s_alone(vl_trainer_policy(tr), obs, from, to, fin + e * S_D);
            double err = fabs((double)boot[i][to] - want) / fmax(fabs(want), 1e-3);
            printf("segment %d, episode %u..%u: bootstrap %.6f, alone %.6f\n", i, from, to,
                   boot[i][to], want);
            worst = err > worst || isnan(err) ? err : worst;
        }
    }
    vl_trainer_destroy(&tr);
    free(b.block);
    VL_CHECK(worst < 1e-5);
}

/* Encodes a segment of state_size floats (zeros) for the config's policy
   into *out (caller frees). Returns 0, or -1. */
static int s_encoded(uint32_t state_size, uint8_t **out, size_t *size)
{
    vl_obs_spec_t spec = vl_obs_spec_flat(S_D);
    vl_segment_t seg = {.horizon = S_T,
                        .action = vl_action_discrete(2),
                        .policy_id = "default",
                        .state_size = state_size};
    void *arrays = calloc(1, vl_segment_arrays_size(S_T, &spec, 1, state_size));
    int rc = arrays && vl_segment_set_spec(&seg, &spec) == 0 ? 0 : -1;
    if (rc == 0) {
        vl_segment_bind(&seg, arrays);
        rc = vl_segment_encode(&seg, out, size);
    }
    free(arrays);
    return rc;
}

/* Ingest takes a segment carrying the model's state size and refuses one
   with another (a memoryless actor's 0, a wider lstm's) by name. */
static void test_ingest_refuses_another_state_size(void)
{
    vl_learner_config_t c = s_config(0);
    vl_buffer_t *buf = vl_buffer_new(4, S_T, &c.obs_spec, 1, S_STATE);
    vl_limits_t lim = vl_limits_default();
    VL_CHECK(buf);
    const uint32_t sizes[3] = {S_STATE, 0, 2 * S_STATE};
    vl_reason_t r[3];
    char why[3][VL_REFUSAL_TEXT_MAX];
    for (int i = 0; i < 3; i++) {
        uint8_t *data = NULL;
        size_t size = 0;
        vl_ingest_refusal_t refusal = {.why = ""};
        r[i] = s_encoded(sizes[i], &data, &size) == 0
                   ? vl_ingest(buf, &c, &lim, data, size, 0, NULL, NULL, &refusal)
                   : VL_EREASONS;
        snprintf(why[i], sizeof why[i], "%s", refusal.why);
        free(data);
    }
    vl_buffer_destroy(&buf);
    printf("refused: '%s'; '%s'\n", why[1], why[2]);
    VL_CHECK(r[0] == VL_OK);
    VL_CHECK(r[1] == VL_EMISMATCH && strcmp(why[1], "state size 0, learner serves 12") == 0);
    VL_CHECK(r[2] != VL_OK && strstr(why[2], "state size 24") != NULL);
}

int main(void)
{
    VL_RUN(test_updates_stay_finite);
    VL_RUN(test_burn_in_hides_the_first_steps_from_the_loss);
    VL_RUN(test_two_truncations_in_one_segment_bootstrap_alone);
    VL_RUN(test_ingest_refuses_another_state_size);
    VL_RUN(test_single_pass_matches_two_passes);
    return VL_DONE();
}
