/*  vl_engine_test: the learner's update engine (volley/engine.h). The C
    engine takes the very updates vl_trainer takes; an outside engine (a
    table of operations recording what it is given) reads its batch
    normalised and scaled by statistics the learner keeps as vl_trainer
    keeps its own, draws the same minibatch order, publishes its weights
    with the statistics, and checkpoints and resumes all of it; a batch
    made from arrays gives every array back. */
#include "vl_engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/vl_test.h"
#include "vl_resume.h"
#include "vl_trainer.h"

#define S_T    8 // horizon
#define S_N    3 // segments per batch
#define S_D    5 // floats per observation: f32 [3], u8 [2]
#define S_ROW  16
#define S_SMAX 64 // most floats of recurrent state

/* The caller's arrays of one batch, and their storage. */
typedef struct {
    float obs[S_N][S_T + 1][S_D], actions[S_N][S_T], rewards[S_N][S_T], dones[S_N][S_T];
    float logp[S_N][S_T], final_obs[S_N][S_T][S_D], state[S_N * S_SMAX], weights[S_N];
    uint8_t truncated[S_N][S_T];
    uint32_t actor_id[S_N];
    vl_engine_arrays_t a;
} s_arrays_t;

/* Returns an engine config for discrete(3) over f32 [3] + u8 [2] on model,
   with both normalisations as norm says. */
static vl_engine_config_t s_config(const char *model, int norm)
{
    vl_transport_spec_t spec = {.n_fields = 2,
                                .fields = {{.encoding = VL_TRANSPORT_F32, .ndim = 1, .shape = {3}},
                                           {.encoding = VL_TRANSPORT_U8, .ndim = 1, .shape = {2}}},
                                .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {3}},
                                .horizon = S_T,
                                .hidden = 16};
    snprintf(spec.model, sizeof spec.model, "%s", model);
    vl_engine_config_t c;
    char why[256];
    if (vl_engine_config_default(&c, &spec, why, sizeof why) != 0)
        fprintf(stderr, "config: %s\n", why);
    c.batch_segments = S_N;
    c.minibatch = 8;
    c.epochs = 2;
    c.norm_obs = c.norm_reward = norm;
    c.seed = 7;
    return c;
}

/* Fills a with a batch drawn from seed: observations far from standard, u8
   values whole numbers, an episode end every 5 steps, some of them
   truncations. */
static void s_fill(s_arrays_t *a, uint64_t seed)
{
    vl_rng_t r;
    vl_rng_seed(&r, seed);
    memset(a, 0, sizeof *a);
    for (int i = 0; i < S_N; i++) {
        for (int t = 0; t <= S_T; t++)
            for (int k = 0; k < S_D; k++)
                a->obs[i][t][k] =
                    k < 3 ? (float)(5 + 3 * vl_rng_normal(&r)) : (float)vl_rng_below(&r, 256);
        for (int t = 0; t < S_T; t++) {
            a->actions[i][t] = (float)vl_rng_below(&r, 3);
            a->rewards[i][t] = (float)(4 * vl_rng_uniform(&r) - 1);
            a->dones[i][t] = (i * S_T + t) % 5 == 4;
            a->logp[i][t] = logf(1.0f / 3);
            a->truncated[i][t] = a->dones[i][t] != 0 && t % 2 == 0;
            for (int k = 0; a->truncated[i][t] && k < S_D; k++)
                a->final_obs[i][t][k] = k < 3 ? (float)vl_rng_normal(&r) : 9.0f;
        }
        for (int k = 0; k < S_SMAX; k++) // [n, S] whatever S is
            a->state[i * S_SMAX + k] = (float)(0.1 * vl_rng_normal(&r));
        a->weights[i] = 0.5f + (float)i;
        a->actor_id[i] = 10 + (uint32_t)i;
    }
    a->a = (vl_engine_arrays_t){.obs = &a->obs[0][0][0],
                                .actions = &a->actions[0][0],
                                .rewards = &a->rewards[0][0],
                                .dones = &a->dones[0][0],
                                .logp = &a->logp[0][0],
                                .truncated = &a->truncated[0][0],
                                .final_obs = &a->final_obs[0][0][0],
                                .state = a->state,
                                .weights = a->weights,
                                .actor_id = a->actor_id};
}

/* Returns 1 if the engine's tensors before the norm.* ones hold exactly the
   trainer policy's floats. */
static int s_same_weights(vl_engine_t *e, vl_trainer_t *tr)
{
    vl_policy_t *p = vl_trainer_policy(tr);
    int same = vl_engine_tensor_count(e) == vl_policy_tensor_count(p);
    for (uint32_t i = 0; same && i < vl_policy_tensor_count(p); i++) {
        vl_tensor_t mine;
        vl_transport_tensor_t theirs;
        vl_policy_tensor(p, i, &mine);
        same = vl_engine_tensor(e, i, &theirs) == 0 && strcmp(theirs.name, mine.name) == 0 &&
               memcmp(theirs.data, mine.data, vl_tensor_size(&mine) * sizeof(float)) == 0;
    }
    return same;
}

/* Three updates of a C engine and of a vl_trainer on the same batches give
   bit-identical weights, stats and priorities. */
static void s_c_engine_matches_trainer(const char *model)
{
    vl_engine_config_t c = s_config(model, 1);
    vl_learner_config_t lc;
    char why[256];
    VL_CHECK(vl_engine_config_to(&c, &lc, why, sizeof why) == 0);
    vl_engine_t *e = vl_engine_new(&c, NULL, why, sizeof why);
    vl_trainer_t *tr = vl_trainer_new(&lc, lc.obs_dim);
    static s_arrays_t a;
    int ok = e && tr;
    for (int u = 0; ok && u < 3; u++) {
        s_fill(&a, 100 + (uint64_t)u);
        vl_engine_batch_t *b = vl_engine_batch_new(&c, S_N, &a.a, why, sizeof why);
        vl_engine_stats_t st;
        vl_update_stats_t ut;
        float sums[S_N], sums2[S_N];
        ok = b && vl_engine_update(e, b, sums, &st, why, sizeof why) == 0 &&
             vl_trainer_update(tr, vl_engine_batch_segments(b), S_N, a.weights, sums2, &ut) == 0 &&
             memcmp(sums, sums2, sizeof sums) == 0 && st.policy_loss == ut.policy_loss &&
             st.value_loss == ut.value_loss && st.entropy == ut.entropy;
        vl_engine_batch_destroy(&b);
    }
    int same = ok && s_same_weights(e, tr);
    vl_engine_destroy(&e);
    vl_trainer_destroy(&tr);
    VL_CHECK(ok && same);
}

static void test_c_engine_matches_trainer_mlp(void)
{
    s_c_engine_matches_trainer("");
}

static void test_c_engine_matches_trainer_lstm(void)
{
    s_c_engine_matches_trainer("linear(16) lstm(16)");
}

/* ---- an outside engine that records what it is given ---- */

#define S_E 2 // epochs, each one shuffle of S_N * S_T samples

typedef struct {
    float obs[S_N][S_T + 1][S_D], final_obs[S_N][S_T][S_D], rewards[S_N][S_T], w[S_N];
    uint8_t rows[S_N][S_T + 1][S_ROW];
    uint32_t perm[S_E][S_N * S_T];
    size_t state_bytes;
    float pi[6], v[1], bogus[S_D]; // pi.weight [2][3], v.bias [1]; a norm.obs.mean of its own
    uint8_t opt[16];
    int updates, closed;
} s_rec_t;

static int s_rec_update(void *self, vl_engine_batch_t *b, float lr, float *adv_sums,
                        vl_engine_stats_t *stats, char *why, size_t why_size)
{
    s_rec_t *r = self;
    (void)why, (void)why_size;
    int rc = vl_engine_batch_gather(b, VL_TRANSPORT_OBS, r->obs, sizeof r->obs) |
             vl_engine_batch_gather(b, VL_TRANSPORT_OBS_ROWS, r->rows, sizeof r->rows) |
             vl_engine_batch_gather(b, VL_TRANSPORT_FINAL_OBS, r->final_obs, sizeof r->final_obs) |
             vl_engine_batch_gather(b, VL_TRANSPORT_REWARDS, r->rewards, sizeof r->rewards) |
             vl_engine_batch_gather(b, VL_ENGINE_WEIGHTS, r->w, sizeof r->w);
    r->state_bytes = vl_engine_batch_bytes(b, VL_ENGINE_STATE);
    for (int e = 0; e < S_E; e++)
        vl_engine_batch_shuffle(b, S_N * S_T, r->perm[e]);
    for (int k = 0; k < 6; k++)
        r->pi[k] += lr * (float)(k + 1);
    r->v[0] -= lr;
    r->opt[r->updates++ % sizeof r->opt]++;
    for (uint32_t i = 0; adv_sums && i < vl_engine_batch_size(b); i++)
        adv_sums[i] = (float)i;
    memset(stats, 0, sizeof *stats);
    return rc == 0 ? 0 : -1;
}

static int s_rec_weights(void *self, vl_transport_tensor_t *out, uint32_t max, uint32_t *n,
                         char *why, size_t why_size)
{
    s_rec_t *r = self;
    (void)why, (void)why_size;
    if (max < 3)
        return -1;
    out[0] = (vl_transport_tensor_t){"pi.weight", 2, {2, 3}, r->pi};
    out[1] = (vl_transport_tensor_t){"norm.obs.mean", 1, {S_D}, r->bogus};
    out[2] = (vl_transport_tensor_t){"v.bias", 1, {1}, r->v};
    *n = 3;
    return 0;
}

static int s_rec_optimizer(void *self, const void **data, size_t *size, char *why, size_t why_size)
{
    s_rec_t *r = self;
    (void)why, (void)why_size;
    *data = r->opt;
    *size = sizeof r->opt;
    return 0;
}

static int s_rec_load(void *self, const vl_transport_tensor_t *t, uint32_t n, const void *opt,
                      size_t opt_size, char *why, size_t why_size)
{
    s_rec_t *r = self;
    int found = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(t[i].name, "pi.weight") == 0 && (found |= 1))
            memcpy(r->pi, t[i].data, sizeof r->pi);
        if (strcmp(t[i].name, "v.bias") == 0 && (found |= 2))
            memcpy(r->v, t[i].data, sizeof r->v);
    }
    if (found != 3 || (opt_size && opt_size != sizeof r->opt)) {
        snprintf(why, why_size, "not my weights");
        return -1;
    }
    if (opt_size)
        memcpy(r->opt, opt, opt_size);
    return 0;
}

static void s_rec_close(void *self)
{
    ((s_rec_t *)self)->closed++;
}

/* Returns the recording engine's ops over r. */
static vl_engine_ops_t s_rec_ops(s_rec_t *r)
{
    return (vl_engine_ops_t){.self = r,
                             .update = s_rec_update,
                             .weights = s_rec_weights,
                             .optimizer = s_rec_optimizer,
                             .load = s_rec_load,
                             .close = s_rec_close};
}

/* An outside engine's batch: OBS and FINAL_OBS normalised and REWARDS
   scaled by statistics updated from it as written here by hand, OBS_ROWS as
   encoded, WEIGHTS as given; its minibatch order is a C trainer's with the
   same seed (the RNGs end in one state); it publishes its weights (its own
   norm.* left out) and the three statistics. */
static void test_outside_engine_batch_normalised(void)
{
    vl_engine_config_t c = s_config("", 1);
    static s_rec_t r;
    static s_arrays_t a;
    memset(&r, 0, sizeof r);
    char why[256];
    vl_engine_ops_t ops = s_rec_ops(&r);
    vl_engine_t *e = vl_engine_new(&c, &ops, why, sizeof why);
    s_fill(&a, 3);
    vl_engine_batch_t *b = vl_engine_batch_new(&c, S_N, &a.a, why, sizeof why);
    VL_CHECK(e && b && vl_engine_update(e, b, NULL, NULL, why, sizeof why) == 0);
    // the statistics by hand: each segment's T acted-on rows, its rewards per stream
    vl_learner_config_t lc;
    VL_CHECK(vl_engine_config_to(&c, &lc, why, sizeof why) == 0);
    vl_norm_t *norm = vl_norm_new(&lc.obs_spec, c.gamma);
    for (int i = 0; i < S_N; i++)
        vl_norm_update_obs(norm, S_T, &a.obs[i][0][0]);
    for (int i = 0; i < S_N; i++)
        vl_norm_update_returns(norm, (uint64_t)a.actor_id[i] << 32 | (uint32_t)i, S_T, a.rewards[i],
                               a.dones[i]);
    float scale = vl_norm_reward_scale(norm), want[S_N][S_T + 1][S_D], fin[S_N][S_T][S_D];
    vl_norm_obs(norm, S_N * (S_T + 1), &a.obs[0][0][0], &want[0][0][0]);
    memset(fin, 0, sizeof fin);
    int rewards_ok = 1, finals_ok = 1;
    for (int i = 0; i < S_N; i++)
        for (int t = 0; t < S_T; t++) {
            rewards_ok &= r.rewards[i][t] == a.rewards[i][t] * scale;
            if (a.truncated[i][t])
                vl_norm_obs(norm, 1, a.final_obs[i][t], fin[i][t]);
        }
    finals_ok = memcmp(fin, r.final_obs, sizeof fin) == 0;
    uint8_t rows[S_N][S_T + 1][S_ROW];
    memset(rows, 0, sizeof rows); // the u8 field's padding
    vl_obs_to_rows(&lc.obs_spec, S_N * (S_T + 1), &a.obs[0][0][0], &rows[0][0][0]);
    VL_CHECK(scale != 1.0f && rewards_ok && finals_ok);
    VL_CHECK(memcmp(want, r.obs, sizeof want) == 0 && r.obs[0][0][0] != a.obs[0][0][0]);
    VL_CHECK(memcmp(rows, r.rows, sizeof rows) == 0);
    VL_CHECK(memcmp(r.w, a.weights, sizeof r.w) == 0 && r.state_bytes == 0);
    // the minibatch order: a trainer's two epochs of S_N * S_T samples from the same seed
    vl_rng_t ref;
    vl_rng_seed(&ref, c.seed ^ VL_TRAINER_RNG_SALT);
    uint32_t perm[S_N * S_T];
    for (int k = 0; k < S_E; k++) {
        vl_rng_shuffle(&ref, S_N * S_T, perm);
        VL_CHECK(memcmp(perm, r.perm[k], sizeof perm) == 0);
    }
    vl_trainer_t *tr = vl_trainer_new(&lc, lc.obs_dim);
    VL_CHECK(tr && vl_trainer_update(tr, vl_engine_batch_segments(b), S_N, NULL, NULL, NULL) == 0);
    VL_CHECK(memcmp(vl_trainer_rng(tr), vl_engine_rng(e), sizeof ref) == 0);
    vl_trainer_destroy(&tr);
    // published: pi.weight, v.bias, then the statistics
    vl_transport_tensor_t t[5];
    vl_tensor_t mine[VL_NORM_TENSORS];
    vl_norm_tensors(norm, mine);
    VL_CHECK(vl_engine_tensor_count(e) == 5 && vl_engine_tensor(e, 5, &t[0]) == -1);
    for (uint32_t i = 0; i < 5; i++)
        VL_CHECK(vl_engine_tensor(e, i, &t[i]) == 0);
    VL_CHECK(strcmp(t[0].name, "pi.weight") == 0 && t[0].ndim == 2 && t[0].data == r.pi);
    VL_CHECK(strcmp(t[1].name, "v.bias") == 0 && strcmp(t[2].name, "norm.obs.mean") == 0);
    VL_CHECK(strcmp(t[3].name, "norm.obs.var") == 0 && strcmp(t[4].name, "norm.state") == 0);
    VL_CHECK(memcmp(t[2].data, mine[0].data, S_D * sizeof(float)) == 0 &&
             memcmp(t[4].data, mine[2].data, 4 * sizeof(float)) == 0);
    vl_norm_destroy(&norm);
    vl_engine_batch_destroy(&b);
    vl_engine_destroy(&e);
    VL_CHECK(r.closed == 1);
}

/* A checkpoint of an outside engine, loaded into a fresh one, restores its
   weights, its optimizer bytes, the statistics and the minibatch RNG. */
static void test_outside_engine_checkpoint_round_trip(void)
{
    vl_engine_config_t c = s_config("", 1);
    static s_rec_t r, r2;
    static s_arrays_t a;
    memset(&r, 0, sizeof r);
    memset(&r2, 0, sizeof r2);
    char why[256], path[256];
    vl_engine_ops_t ops = s_rec_ops(&r), ops2 = s_rec_ops(&r2);
    vl_engine_t *e = vl_engine_new(&c, &ops, why, sizeof why);
    vl_engine_t *e2 = vl_engine_new(&c, &ops2, why, sizeof why);
    VL_CHECK(e && e2);
    for (int u = 0; u < 2; u++) {
        s_fill(&a, 20 + (uint64_t)u);
        vl_engine_batch_t *b = vl_engine_batch_new(&c, S_N, &a.a, why, sizeof why);
        VL_CHECK(b && vl_engine_update(e, b, NULL, NULL, why, sizeof why) == 0);
        vl_engine_batch_destroy(&b);
    }
    snprintf(path, sizeof path, "/tmp/vl_engine_test.%ld.ckpt", (long)getpid());
    vl_resume_state_t st = {.version = 2, .trained = 6, .rng = *vl_engine_rng(e)}, back;
    VL_CHECK(vl_resume_save(path, "default", e, &st, NULL, NULL) == 0);
    VL_CHECK(vl_resume_load(path, "default", e2, &back, why, sizeof why) == 0);
    unlink(path);
    VL_CHECK(memcmp(r.pi, r2.pi, sizeof r.pi) == 0 && r.v[0] == r2.v[0] && r.pi[0] != 0);
    VL_CHECK(memcmp(r.opt, r2.opt, sizeof r.opt) == 0 && r.opt[0] == 1);
    VL_CHECK(memcmp(&back.rng, vl_engine_rng(e), sizeof back.rng) == 0 && back.version == 2);
    VL_CHECK(vl_engine_tensor_count(e2) == 5);
    for (uint32_t i = 2; i < 5; i++) {
        vl_transport_tensor_t t, t2;
        VL_CHECK(vl_engine_tensor(e, i, &t) == 0 && vl_engine_tensor(e2, i, &t2) == 0);
        size_t size = t.ndim == 1 ? t.shape[0] : 0;
        VL_CHECK(strcmp(t.name, t2.name) == 0 && memcmp(t.data, t2.data, size * 4) == 0);
    }
    vl_engine_destroy(&e);
    vl_engine_destroy(&e2);
}

/* A batch made from arrays gives every array back: floats as given (u8
   values whole numbers), rows as actors encode them, final observations at
   their steps, states, weights and ids; unknown arrays and small outs are
   refused. */
static void test_batch_new_round_trips(void)
{
    vl_engine_config_t c = s_config("linear(16) lstm(16)", 0);
    static s_arrays_t a;
    static uint8_t out[1 << 16];
    char why[256];
    s_fill(&a, 5);
    VL_CHECK(c.state_size == 32);
    vl_engine_batch_t *b = vl_engine_batch_new(&c, S_N, &a.a, why, sizeof why);
    VL_CHECK(b && vl_engine_batch_size(b) == S_N);
    const struct {
        int array;
        const void *want;
        size_t size;
    } cases[] = {
        {VL_TRANSPORT_OBS, a.obs, sizeof a.obs},
        {VL_TRANSPORT_ACTIONS, a.actions, sizeof a.actions},
        {VL_TRANSPORT_REWARDS, a.rewards, sizeof a.rewards},
        {VL_TRANSPORT_DONES, a.dones, sizeof a.dones},
        {VL_TRANSPORT_TRUNCATED, a.truncated, sizeof a.truncated},
        {VL_TRANSPORT_LOGP, a.logp, sizeof a.logp},
        {VL_TRANSPORT_FINAL_OBS, a.final_obs, sizeof a.final_obs},
        {VL_TRANSPORT_ACTOR_ID, a.actor_id, sizeof a.actor_id},
        {VL_TRANSPORT_ENV_ID, (uint32_t[]){0, 1, 2}, 3 * 4},
        {VL_TRANSPORT_POLICY_VERSION, (uint64_t[]){0, 0, 0}, 3 * 8},
        {VL_TRANSPORT_SEQ, (uint64_t[]){0, 0, 0}, 3 * 8},
        {VL_TRANSPORT_N_EPISODES, (uint32_t[]){0, 0, 0}, 3 * 4},
        {VL_TRANSPORT_EPISODE_RETURNS, NULL, 0},
        {VL_TRANSPORT_EPISODE_LENGTHS, NULL, 0},
        {VL_ENGINE_WEIGHTS, a.weights, sizeof a.weights},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        VL_CHECK(vl_engine_batch_bytes(b, cases[k].array) == cases[k].size);
        VL_CHECK(vl_engine_batch_gather(b, cases[k].array, out, sizeof out) == 0);
        VL_CHECK(!cases[k].size || memcmp(out, cases[k].want, cases[k].size) == 0);
    }
    VL_CHECK(vl_engine_batch_bytes(b, VL_ENGINE_STATE) == S_N * 32 * sizeof(float));
    VL_CHECK(vl_engine_batch_gather(b, VL_ENGINE_STATE, out, sizeof out) == 0 &&
             memcmp(out, a.state, S_N * 32 * sizeof(float)) == 0);
    vl_learner_config_t lc;
    uint8_t rows[S_N][S_T + 1][S_ROW];
    memset(rows, 0, sizeof rows);
    VL_CHECK(vl_engine_config_to(&c, &lc, why, sizeof why) == 0);
    vl_obs_to_rows(&lc.obs_spec, S_N * (S_T + 1), &a.obs[0][0][0], &rows[0][0][0]);
    VL_CHECK(c.spec.row_bytes == S_ROW && c.spec.obs_dim == S_D);
    VL_CHECK(vl_engine_batch_bytes(b, VL_TRANSPORT_OBS_ROWS) == sizeof rows);
    VL_CHECK(vl_engine_batch_gather(b, VL_TRANSPORT_OBS_ROWS, out, sizeof out) == 0 &&
             memcmp(out, rows, sizeof rows) == 0);
    VL_CHECK(vl_engine_batch_bytes(b, VL_ENGINE_ARRAYS) == 0);
    VL_CHECK(vl_engine_batch_gather(b, VL_ENGINE_ARRAYS, out, sizeof out) == -1);
    VL_CHECK(vl_engine_batch_gather(b, VL_TRANSPORT_OBS, out, sizeof a.obs - 1) == -1);
    vl_engine_batch_destroy(&b);
    vl_engine_batch_destroy(&b);
}

/* The default config is `volley learner`'s with no flags: its lr settled
   (3e-4 for a box), normalisation on for a box, the canonical model. */
static void test_config_default_settles(void)
{
    vl_transport_spec_t spec = {.n_fields = 1,
                                .fields = {{.encoding = VL_TRANSPORT_F32, .ndim = 1, .shape = {3}}},
                                .action = {.kind = VL_ENV_BOX, .dims = 1, .low = {-2}, .high = {2}},
                                .horizon = 16,
                                .hidden = 32};
    vl_engine_config_t c;
    char why[256];
    VL_CHECK(vl_engine_config_default(&c, &spec, why, sizeof why) == 0);
    VL_CHECK(c.lr == VL_LEARNER_BOX_LR && c.norm_obs == 1 && c.norm_reward == 1);
    VL_CHECK(c.batch_segments == 16 && c.epochs == 4 && c.seed == 1 && c.state_size == 0);
    VL_CHECK(strcmp(spec.model, "linear(32) tanh linear(32) tanh") == 0 &&
             strcmp(c.spec.model, spec.model) == 0);
    VL_CHECK(spec.obs_dim == 3 && spec.row_bytes == 12 && strcmp(c.policy, "default") == 0);
}

int main(void)
{
    VL_RUN(test_c_engine_matches_trainer_mlp);
    VL_RUN(test_c_engine_matches_trainer_lstm);
    VL_RUN(test_outside_engine_batch_normalised);
    VL_RUN(test_outside_engine_checkpoint_round_trip);
    VL_RUN(test_batch_new_round_trips);
    VL_RUN(test_config_default_settles);
    return VL_DONE();
}
