/*  vl_reach_test: the reach grid's moves, edges, rewards, endings, resets
    and bounds, and that its solved_return means near-optimal: the shortest
    path reaches it, a path that moves one axis at a time and a random
    policy do not. */
#include "vl_env.h"
#include "vl_reach.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_LAST (VL_REACH_SIZE - 1)

/* Sets s on a new env (its clock started by a reset) and steps it once
   with the choices (cx, cy); writes the new state into got and returns the
   reward, or NAN when the env could not be made or the state was refused. */
static float s_step_from(const int s[4], float cx, float cy, int got[4], int *term, int *trunc)
{
    void *env = vl_reach_env.create(NULL);
    float obs[4], action[2] = {cx, cy}, reward = NAN;
    if (env) {
        vl_reach_env.reset(env, obs);
        if (vl_reach_set_state(env, s) == 0) {
            reward = vl_reach_env.step(env, action, obs, term, trunc);
            vl_reach_get_state(env, got);
            for (int i = 0; i < 4; i++)
                if (obs[i] != (float)got[i] / S_LAST)
                    reward = NAN;
        }
    }
    vl_reach_env.destroy(env);
    return reward;
}

/* From the middle, choice c of a dimension moves it by c - 1, each
   dimension on its own: nine actions, nine cells. */
static void test_nine_moves(void)
{
    int s[4] = {4, 4, 0, 0}, got[4], term, trunc;
    for (int cx = 0; cx < 3; cx++)
        for (int cy = 0; cy < 3; cy++) {
            float r = s_step_from(s, (float)cx, (float)cy, got, &term, &trunc);
            VL_CHECK(r == -VL_REACH_STEP_COST && term == 0 && trunc == 0);
            VL_CHECK(got[0] == 4 + cx - 1 && got[1] == 4 + cy - 1);
            VL_CHECK(got[2] == 0 && got[3] == 0);
        }
}

/* A move off the grid stops at the edge on that axis alone: the other
   axis still moves. */
static void test_edges(void)
{
    int corner[4] = {0, 0, 8, 8}, far[4] = {8, 8, 0, 0}, side[4] = {0, 4, 8, 8};
    int got[4], term, trunc;
    s_step_from(corner, 0, 0, got, &term, &trunc);
    VL_CHECK(got[0] == 0 && got[1] == 0);
    s_step_from(far, 2, 2, got, &term, &trunc);
    VL_CHECK(got[0] == 8 && got[1] == 8);
    s_step_from(side, 0, 2, got, &term, &trunc);
    VL_CHECK(got[0] == 0 && got[1] == 5);
    s_step_from(far, 2, 0, got, &term, &trunc);
    VL_CHECK(got[0] == 8 && got[1] == 7);
}

/* A goal one diagonal step away is reached in one step by moving both
   dimensions, and not by either alone. */
static void test_diagonal_needs_both(void)
{
    int s[4] = {4, 4, 5, 3}, got[4], term, trunc;
    VL_CHECK(s_step_from(s, 2, 0, got, &term, &trunc) == VL_REACH_GOAL && term == 1);
    VL_CHECK(trunc == 0 && got[0] == 5 && got[1] == 3);
    VL_CHECK(s_step_from(s, 2, 1, got, &term, &trunc) == -VL_REACH_STEP_COST && term == 0);
    VL_CHECK(s_step_from(s, 1, 0, got, &term, &trunc) == -VL_REACH_STEP_COST && term == 0);
}

/* Reaching the goal pays +1 and terminates; steps after it, without a
   reset, pay 0, move nothing and terminate again; a reset starts over. */
static void test_terminate_on_goal(void)
{
    void *env = vl_reach_env.create(NULL);
    int s[4] = {2, 2, 3, 2}, got[4], term = -1, trunc = -1;
    float obs[4], right[2] = {2, 1}, r1, r2;
    VL_CHECK(env);
    vl_reach_env.reset(env, obs);
    VL_CHECK(vl_reach_set_state(env, s) == 0);
    r1 = vl_reach_env.step(env, right, obs, &term, &trunc);
    VL_CHECK(r1 == 1.0f && term == 1 && trunc == 0);
    r2 = vl_reach_env.step(env, right, obs, &term, &trunc);
    vl_reach_get_state(env, got);
    VL_CHECK(r2 == 0.0f && term == 1 && got[0] == 3 && got[1] == 2);
    vl_reach_env.reset(env, obs);
    vl_reach_get_state(env, got);
    r1 = vl_reach_env.step(env, (float[2]){1, 1}, obs, &term, &trunc);
    vl_reach_env.destroy(env);
    VL_CHECK(r1 == -VL_REACH_STEP_COST && term == 0);
}

/* Runs n steps of the action (cx, cy); returns the step that first set
   truncated (0: none), -1 when one terminated or paid other than the step
   cost. */
static int s_first_truncation(void *env, float cx, float cy, int n)
{
    float obs[4], action[2] = {cx, cy};
    int term, trunc;
    for (int t = 1; t <= n; t++) {
        float r = vl_reach_env.step(env, action, obs, &term, &trunc);
        if (term || r != -VL_REACH_STEP_COST)
            return -1;
        if (trunc)
            return t;
    }
    return 0;
}

/* Standing still truncates on the 50th step, not before; a reset in the
   middle restarts the clock; reaching the goal on the 50th step sets both
   flags. */
static void test_truncate_at_50(void)
{
    void *env = vl_reach_env.create(NULL);
    int s[4] = {0, 0, 8, 8}, next[4] = {3, 3, 4, 3}, term, trunc;
    float obs[4];
    VL_CHECK(env);
    vl_reach_env.reset(env, obs);
    VL_CHECK(vl_reach_set_state(env, s) == 0);
    VL_CHECK(s_first_truncation(env, 1, 1, 30) == 0);
    vl_reach_env.reset(env, obs);
    VL_CHECK(vl_reach_set_state(env, s) == 0);
    VL_CHECK(s_first_truncation(env, 1, 1, 60) == VL_REACH_MAX_STEPS);
    vl_reach_env.reset(env, obs);
    VL_CHECK(vl_reach_set_state(env, s) == 0);
    VL_CHECK(s_first_truncation(env, 1, 1, VL_REACH_MAX_STEPS - 1) == 0);
    VL_CHECK(vl_reach_set_state(env, next) == 0);
    float r = vl_reach_env.step(env, (float[2]){2, 1}, obs, &term, &trunc);
    vl_reach_env.destroy(env);
    VL_CHECK(r == VL_REACH_GOAL && term == 1 && trunc == 1);
}

/* Resets draw every cell as a start and as a goal, never the same for
   both, about uniformly; the same seed draws the same starts. */
static void test_reset_uniform_and_seeded(void)
{
    void *a = vl_reach_env.create(NULL), *b = vl_reach_env.create(NULL);
    int starts[81] = {0}, goals[81] = {0}, sa[4], sb[4], ok = a && b;
    float oa[4], ob[4];
    if (ok) {
        vl_reach_env.seed(a, 3);
        vl_reach_env.seed(b, 3);
    }
    for (int k = 0; k < 8100 && ok; k++) {
        vl_reach_env.reset(a, oa);
        vl_reach_env.reset(b, ob);
        vl_reach_get_state(a, sa);
        vl_reach_get_state(b, sb);
        ok = memcmp(sa, sb, sizeof sa) == 0 && (sa[0] != sa[2] || sa[1] != sa[3]);
        starts[sa[1] * 9 + sa[0]]++;
        goals[sa[3] * 9 + sa[2]]++;
    }
    vl_reach_env.destroy(a);
    vl_reach_env.destroy(b);
    VL_CHECK(ok);
    for (int c = 0; c < 81; c++) // 100 expected in each; 5 sigma is 50
        VL_CHECK(starts[c] > 50 && starts[c] < 150 && goals[c] > 50 && goals[c] < 150);
}

/* Returns the choice that moves v toward want: 0, 1 or 2. */
static float s_toward(float v, float want)
{
    return v < want ? 2.0f : v > want ? 0.0f : 1.0f;
}

/* The shortest path, read off the observation: both dimensions at once. */
static void s_optimal(const float obs[4], vl_rng_t *rng, float action[2])
{
    (void)rng;
    action[0] = s_toward(obs[0], obs[2]);
    action[1] = s_toward(obs[1], obs[3]);
}

/* A path that moves one axis at a time: columns first, then rows. */
static void s_one_axis(const float obs[4], vl_rng_t *rng, float action[2])
{
    (void)rng;
    action[0] = s_toward(obs[0], obs[2]);
    action[1] = action[0] == 1.0f ? s_toward(obs[1], obs[3]) : 1.0f;
}

/* Uniform over the nine actions. */
static void s_random(const float obs[4], vl_rng_t *rng, float action[2])
{
    (void)obs;
    action[0] = (float)vl_rng_below(rng, 3);
    action[1] = (float)vl_rng_below(rng, 3);
}

typedef void (*s_policy_fn)(const float obs[4], vl_rng_t *rng, float action[2]);

/* Plays one episode from env's next reset under policy; returns its return,
   or NAN when an observation leaves the declared [0, 1] or is not a
   multiple of 1/8. */
static double s_episode(void *env, s_policy_fn policy, vl_rng_t *rng)
{
    float obs[4], action[2];
    int term = 0, trunc = 0;
    double ret = 0;
    vl_reach_env.reset(env, obs);
    while (!term && !trunc) {
        policy(obs, rng, action);
        ret += vl_reach_env.step(env, action, obs, &term, &trunc);
        for (int i = 0; i < 4; i++)
            if (!(obs[i] >= 0 && obs[i] <= 1) || obs[i] * S_LAST != floorf(obs[i] * S_LAST))
                return NAN;
    }
    return ret;
}

/* Returns the mean return of n episodes under policy. */
static double s_mean_return(s_policy_fn policy, int n, uint64_t seed)
{
    void *env = vl_reach_env.create(NULL);
    vl_rng_t rng;
    double sum = 0;
    if (!env)
        return NAN;
    vl_reach_env.seed(env, seed);
    vl_rng_seed(&rng, seed + 1);
    for (int k = 0; k < n; k++)
        sum += s_episode(env, policy, &rng);
    vl_reach_env.destroy(env);
    return sum / n;
}

/* Returns the moves from the agent to the goal of s: the larger of the two
   axes' distances, as a diagonal move covers both. */
static int s_chebyshev(const int s[4])
{
    int dx = abs(s[0] - s[2]), dy = abs(s[1] - s[3]);
    return dx > dy ? dx : dy;
}

/* The optimum, exactly: the shortest path's return from every (start,
   goal) pair, averaged, is VL_REACH_OPTIMAL_RETURN; each episode takes the
   Chebyshev distance in steps. */
static void test_optimal_return_exact(void)
{
    void *env = vl_reach_env.create(NULL);
    double sum = 0;
    int pairs = 0, ok = env != NULL;
    for (int start = 0; start < 81 && ok; start++)
        for (int goal = 0; goal < 81 && ok; goal++) {
            int s[4] = {start % 9, start / 9, goal % 9, goal / 9}, term = 0, trunc = 0, t = 0;
            float obs[4], action[2];
            if (start == goal)
                continue;
            vl_reach_env.reset(env, obs);
            vl_reach_set_state(env, s);
            obs[0] = s[0] / 8.0f, obs[1] = s[1] / 8.0f, obs[2] = s[2] / 8.0f, obs[3] = s[3] / 8.0f;
            while (!term && !trunc) {
                s_optimal(obs, NULL, action);
                sum += vl_reach_env.step(env, action, obs, &term, &trunc);
                t++;
            }
            ok = term && t == s_chebyshev(s);
            pairs++;
        }
    vl_reach_env.destroy(env);
    VL_CHECK(ok && pairs == 81 * 80);
    VL_CHECK_NEAR(sum / pairs, VL_REACH_OPTIMAL_RETURN, 1e-6);
}

/* "Solved" means near-optimal: the shortest path played from random resets
   reaches solved_return, which lies within one step's cost of the optimum;
   moving one axis at a time (never diagonally) and a random policy fall
   short. */
static void test_solved_means_near_optimal(void)
{
    float solved = vl_reach_env.solved_return;
    double optimal = s_mean_return(s_optimal, 4000, 11);
    double one_axis = s_mean_return(s_one_axis, 4000, 11);
    double random = s_mean_return(s_random, 4000, 11);
    printf("     mean return over 4000 episodes: shortest path %.4f, one axis at a time %.4f, "
           "random %.4f; solved %.2f\n",
           optimal, one_axis, random, solved);
    VL_CHECK(vl_reach_env.has_solved_return == 1);
    VL_CHECK(solved < VL_REACH_OPTIMAL_RETURN &&
             solved > VL_REACH_OPTIMAL_RETURN - VL_REACH_STEP_COST);
    VL_CHECK_NEAR(optimal, VL_REACH_OPTIMAL_RETURN, 0.02);
    VL_CHECK(optimal >= solved);
    VL_CHECK(one_axis < solved - 0.02);
    VL_CHECK(random < 0);
}

/* Choices outside 0 .. 2 (the caller should never pass them) are read
   safely: NaN moves nothing, a big value or a negative one moves as the
   nearest choice would, and the agent stays on the grid. */
static void test_hostile_choices(void)
{
    int s[4] = {4, 4, 0, 0}, got[4], term, trunc;
    VL_CHECK(s_step_from(s, NAN, NAN, got, &term, &trunc) == -VL_REACH_STEP_COST);
    VL_CHECK(got[0] == 4 && got[1] == 4);
    s_step_from(s, 1e30f, -1e30f, got, &term, &trunc);
    VL_CHECK(got[0] == 5 && got[1] == 3);
    s_step_from(s, INFINITY, -INFINITY, got, &term, &trunc);
    VL_CHECK(got[0] == 5 && got[1] == 3);
}

/* A state off the grid is refused and changes nothing. */
static void test_set_state_refuses_off_grid(void)
{
    void *env = vl_reach_env.create(NULL);
    int good[4] = {1, 2, 3, 4}, bad[4] = {1, 2, 9, 4}, neg[4] = {-1, 0, 0, 0}, got[4];
    VL_CHECK(env);
    VL_CHECK(vl_reach_set_state(env, good) == 0);
    VL_CHECK(vl_reach_set_state(env, bad) == -1 && vl_reach_set_state(env, neg) == -1);
    vl_reach_get_state(env, got);
    vl_reach_env.destroy(env);
    VL_CHECK(memcmp(got, good, sizeof got) == 0);
}

/* The table: one f32 field of 4 in [0, 1], multi_discrete(3, 3). */
static void test_table(void)
{
    const vl_env_t *t = &vl_reach_env;
    VL_CHECK(t->abi_version == VL_ENV_ABI_VERSION && strcmp(t->name, "reach") == 0);
    VL_CHECK(t->summary && strstr(t->summary, "reach"));
    VL_CHECK(t->n_fields == 1 && t->fields[0].encoding == VL_ENV_F32);
    VL_CHECK(t->fields[0].ndim == 1 && t->fields[0].shape[0] == 4);
    VL_CHECK(t->fields[0].low == 0.0f && t->fields[0].high == 1.0f);
    VL_CHECK(t->action.kind == VL_ENV_MULTI_DISCRETE && t->action.dims == 2);
    VL_CHECK(t->action.n[0] == 3 && t->action.n[1] == 3);
    VL_CHECK(t->create && t->step && !t->vec_create && !t->vec_step);
}

/* Found by name, its spec as volley reads it: multi_discrete(3, 3), one
   f32 field of 4 in [0, 1]. */
static void test_find(void)
{
    const vl_env_ops_t *ops = vl_env_find("reach");
    VL_CHECK(ops && ops->table == &vl_reach_env && !ops->vectorized && !ops->path);
    VL_CHECK(ops->obs_dim == 4 && ops->low[0] == 0.0f && ops->high[0] == 1.0f);
    VL_CHECK(ops->action.kind == VL_ENV_MULTI_DISCRETE && ops->action.dims == 2);
    VL_CHECK(ops->action.n[0] == 3 && ops->action.n[1] == 3);
    VL_CHECK(ops->has_solved_return && ops->solved_return == 0.8f);
}

/* Three grids stepped as an actor steps them under random choices: every
   observation passes volley's checks, and episodes end both ways. */
static void test_steps_through_envs(void)
{
    const vl_env_ops_t *ops = vl_env_find("reach");
    uint64_t seeds[3] = {1, 2, 3};
    float obs[3][4], fin[3][4], rewards[3], actions[3][2];
    uint8_t term[3], trunc[3];
    int ok = 1, goals = 0, timeouts = 0;
    vl_rng_t rng;
    VL_CHECK(ops);
    vl_rng_seed(&rng, 5);
    vl_envs_t *envs = vl_envs_new(ops, 3, NULL, seeds, obs[0]);
    VL_CHECK(envs);
    for (int t = 0; t < 2000 && ok; t++) {
        for (int i = 0; i < 3; i++)
            s_random(obs[i], &rng, actions[i]);
        ok = vl_envs_step(envs, actions[0], obs[0], rewards, term, trunc, fin[0]) == 0;
        for (int i = 0; i < 3; i++) {
            ok &= rewards[i] == (term[i] ? VL_REACH_GOAL : -VL_REACH_STEP_COST);
            goals += term[i], timeouts += trunc[i];
        }
    }
    vl_envs_destroy(&envs);
    VL_CHECK(ok && goals > 10 && timeouts > 10);
}

static void test_destroy_null(void)
{
    vl_reach_env.destroy(NULL);
    VL_CHECK(1);
}

int main(void)
{
    VL_RUN(test_nine_moves);
    VL_RUN(test_edges);
    VL_RUN(test_diagonal_needs_both);
    VL_RUN(test_terminate_on_goal);
    VL_RUN(test_truncate_at_50);
    VL_RUN(test_reset_uniform_and_seeded);
    VL_RUN(test_optimal_return_exact);
    VL_RUN(test_solved_means_near_optimal);
    VL_RUN(test_hostile_choices);
    VL_RUN(test_set_state_refuses_off_grid);
    VL_RUN(test_table);
    VL_RUN(test_find);
    VL_RUN(test_steps_through_envs);
    VL_RUN(test_destroy_null);
    return VL_DONE();
}
