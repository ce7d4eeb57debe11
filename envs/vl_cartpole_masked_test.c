/*  vl_cartpole_masked_test: cartpole-masked is CartPole-v1 seen through (x,
    theta) alone. Stepped beside vl_cartpole_env from the same seed or the
    same state with the same actions, it reaches the same state bit for bit,
    pays the same rewards and raises the same flags, and its observation is
    elements 0 and 2 of CartPole's. */
#include "vl_cartpole.h"
#include "vl_env.h"

#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

static const vl_env_t *const s_full = &vl_cartpole_env;
static const vl_env_t *const s_masked = &vl_cartpole_masked_env;

/* Returns 1 when masked is (x, theta) of full and the two states are the
   same bit for bit. */
static int s_same(void *full, void *masked, const float fo[4], const float mo[2])
{
    double fs[4], ms[4];
    vl_cartpole_get_state(full, fs);
    vl_cartpole_get_state(masked, ms);
    return memcmp(fs, ms, sizeof fs) == 0 && mo[0] == fo[0] && mo[1] == fo[2];
}

/* A linear controller that balances the pole (it reads the velocities of
   the full observation), or a random choice when rng is not NULL. */
static float s_choose(const float fo[4], vl_rng_t *rng)
{
    if (rng)
        return (float)vl_rng_below(rng, 2);
    return fo[2] + 0.5f * fo[3] + 0.01f * fo[0] + 0.1f * fo[1] > 0 ? 1.0f : 0.0f;
}

/* Steps full and masked together with the same choices until the episode
   ends, then 2 steps more (which pay 0 after a termination); returns the
   episode's length, or -1 at the first step where they differ. Sets *term
   and *trunc to the ending's flags. */
static int s_lockstep(void *full, void *masked, float fo[4], float mo[2], vl_rng_t *rng, int *term,
                      int *trunc)
{
    int ft = 0, ftr = 0, mt, mtr, length = 0, after = 0;
    while (after < 3 && length < 600) {
        float a = s_choose(fo, rng);
        float fr = s_full->step(full, &a, fo, &ft, &ftr);
        float mr = s_masked->step(masked, &a, mo, &mt, &mtr);
        if (fr != mr || ft != mt || ftr != mtr || !s_same(full, masked, fo, mo))
            return -1;
        if (!after)
            length++, *term = ft, *trunc = ftr;
        after += after > 0 || ft || ftr;
    }
    return length;
}

/* From 40 seeds, half balanced (truncated at 500), half random (the pole
   falls): the same resets, states, rewards, flags and endings. */
static void test_same_episodes_as_cartpole(void)
{
    void *full = s_full->create(NULL), *masked = s_masked->create(NULL);
    float fo[4], mo[2];
    int term, trunc, ok = full && masked, truncated = 0, terminated = 0;
    vl_rng_t rng;
    vl_rng_seed(&rng, 3);
    for (uint64_t seed = 0; seed < 40 && ok; seed++) {
        s_full->seed(full, seed);
        s_masked->seed(masked, seed);
        s_full->reset(full, fo);
        s_masked->reset(masked, mo);
        ok = s_same(full, masked, fo, mo);
        int length = s_lockstep(full, masked, fo, mo, seed % 2 ? &rng : NULL, &term, &trunc);
        ok &= length > 0;
        truncated += length == 500 && trunc && !term;
        terminated += length < 500 && term && !trunc;
    }
    s_full->destroy(full);
    s_masked->destroy(masked);
    VL_CHECK(ok);
    VL_CHECK(truncated == 20 && terminated == 20);
}

/* From a state set on both, near the edge and at rest: the same steps. */
static void test_same_steps_from_a_state(void)
{
    double states[3][4] = {{2.39, 1.0, 0, 0}, {0.1, -0.2, 0.03, 0.4}, {0, 0, 0.2, 1.0}};
    float fo[4], mo[2];
    int term, trunc, ok = 1;
    for (int k = 0; k < 3 && ok; k++) {
        void *full = s_full->create(NULL), *masked = s_masked->create(NULL);
        ok = full && masked;
        if (ok) {
            s_full->reset(full, fo);
            s_masked->reset(masked, mo);
            vl_cartpole_set_state(full, states[k]);
            vl_cartpole_set_state(masked, states[k]);
            fo[0] = (float)states[k][0], fo[1] = (float)states[k][1];
            fo[2] = (float)states[k][2], fo[3] = (float)states[k][3];
            ok = s_lockstep(full, masked, fo, mo, NULL, &term, &trunc) > 0;
        }
        s_full->destroy(full);
        s_masked->destroy(masked);
    }
    VL_CHECK(ok);
}

/* The velocities are gone: from rest, pushing left or right moves neither
   position within one step (Euler moves them by the old velocities) but
   sets opposite velocities; CartPole's observations tell the two apart,
   cartpole-masked's are the same. */
static void test_velocities_hidden(void)
{
    double rest[4] = {0.1, 0, -0.05, 0};
    float left = 0, right = 1, ml[2], mr[2], fl[4], fr[4];
    int term, trunc;
    void *m = s_masked->create(NULL), *f = s_full->create(NULL);
    VL_CHECK(m && f);
    vl_cartpole_set_state(m, rest);
    s_masked->step(m, &left, ml, &term, &trunc);
    vl_cartpole_set_state(m, rest);
    s_masked->step(m, &right, mr, &term, &trunc);
    vl_cartpole_set_state(f, rest);
    s_full->step(f, &left, fl, &term, &trunc);
    vl_cartpole_set_state(f, rest);
    s_full->step(f, &right, fr, &term, &trunc);
    s_masked->destroy(m);
    s_full->destroy(f);
    VL_CHECK(ml[0] == mr[0] && ml[1] == mr[1]);
    VL_CHECK(ml[0] == 0.1f && ml[1] == -0.05f);
    VL_CHECK(fl[1] < 0 && fr[1] > 0 && fl[3] != fr[3]);
}

/* The table: CartPole's, with one f32 field of 2. */
static void test_table(void)
{
    const vl_env_t *t = s_masked;
    VL_CHECK(t->abi_version == VL_ENV_ABI_VERSION && strcmp(t->name, "cartpole-masked") == 0);
    VL_CHECK(t->summary && strstr(t->summary, "CartPole-v1"));
    VL_CHECK(t->n_fields == 1 && t->fields[0].encoding == VL_ENV_F32);
    VL_CHECK(t->fields[0].ndim == 1 && t->fields[0].shape[0] == 2);
    VL_CHECK(t->fields[0].low == s_full->fields[0].low);
    VL_CHECK(t->fields[0].high == s_full->fields[0].high);
    VL_CHECK(t->action.kind == VL_ENV_DISCRETE && t->action.dims == 1 && t->action.n[0] == 2);
    VL_CHECK(t->has_solved_return == 1 && t->solved_return == 475.0f);
    VL_CHECK(t->create && t->step && !t->vec_create && !t->vec_step);
}

/* Found by name: two floats, CartPole's actions and solved return. */
static void test_find(void)
{
    const vl_env_ops_t *ops = vl_env_find("cartpole-masked");
    VL_CHECK(ops && ops->table == s_masked && !ops->vectorized && !ops->path);
    VL_CHECK(ops->obs_dim == 2);
    VL_CHECK(ops->action.kind == VL_ENV_DISCRETE && ops->action.n[0] == 2);
    VL_CHECK(ops->has_solved_return && ops->solved_return == 475.0f);
}

/* Four envs stepped as an actor steps them under random choices: every
   observation passes volley's checks and episodes end. */
static void test_steps_through_envs(void)
{
    const vl_env_ops_t *ops = vl_env_find("cartpole-masked");
    uint64_t seeds[4] = {1, 2, 3, 4};
    float obs[4][2], fin[4][2], rewards[4], actions[4];
    uint8_t term[4], trunc[4];
    int ok = 1, ended = 0;
    vl_rng_t rng;
    VL_CHECK(ops);
    vl_rng_seed(&rng, 5);
    vl_envs_t *envs = vl_envs_new(ops, 4, NULL, seeds, obs[0]);
    VL_CHECK(envs);
    for (int t = 0; t < 1000 && ok; t++) {
        for (int i = 0; i < 4; i++)
            actions[i] = (float)vl_rng_below(&rng, 2);
        ok = vl_envs_step(envs, actions, obs[0], rewards, term, trunc, fin[0]) == 0;
        for (int i = 0; i < 4; i++)
            ok &= rewards[i] == 1.0f, ended += term[i];
    }
    vl_envs_destroy(&envs);
    VL_CHECK(ok && ended > 20);
}

static void test_destroy_null(void)
{
    s_masked->destroy(NULL);
    VL_CHECK(1);
}

int main(void)
{
    VL_RUN(test_same_episodes_as_cartpole);
    VL_RUN(test_same_steps_from_a_state);
    VL_RUN(test_velocities_hidden);
    VL_RUN(test_table);
    VL_RUN(test_find);
    VL_RUN(test_steps_through_envs);
    VL_RUN(test_destroy_null);
    return VL_DONE();
}
