/*  vl_memory_test: the memory env's timing (the cue on the first
    observation alone, D blanks, the query, D + 2 steps), its answers and
    its indifference to every other action, its seeded uniform cues, its
    table; and that it separates memory from none: a policy that remembers
    the cue scores 1, every deterministic policy of the current observation
    alone scores chance. Written for any VL_MEMORY_CUES and VL_MEMORY_DELAY;
    vl_memory_cues_test builds it and the env with 4 cues. */
#include "vl_env.h"
#include "vl_memory.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_K        VL_MEMORY_CUES
#define S_DIM      VL_MEMORY_OBS_DIM
#define S_SEEN_MAX 16 // distinct observations a memoryless policy is enumerated over

/* Returns which observation obs is: the cue k (0 .. K - 1), VL_MEMORY_OBS_BLANK,
   VL_MEMORY_OBS_QUERY, S_DIM when all 0 (after the answer), or -1 when it is
   none of these (a value other than 0 or 1, or more than one 1). */
static int s_kind(const float *obs)
{
    int kind = S_DIM, ones = 0;
    for (int i = 0; i < S_DIM; i++) {
        if (obs[i] != 0.0f && obs[i] != 1.0f)
            return -1;
        if (obs[i] == 1.0f)
            kind = i, ones++;
    }
    return ones <= 1 ? kind : -1;
}

/* Returns a new env seeded with seed and reset into obs, or NULL. */
static void *s_start(uint64_t seed, float obs[S_DIM])
{
    void *env = vl_memory_env.create(NULL);
    if (env) {
        vl_memory_env.seed(env, seed);
        vl_memory_env.reset(env, obs);
    }
    return env;
}

/* Steps env with the choice a; returns the reward. */
static float s_step(void *env, float a, float obs[S_DIM], int *term, int *trunc)
{
    *term = *trunc = -1;
    return vl_memory_env.step(env, &a, obs, term, trunc);
}

/* Plays one episode from a reset; checks that the cue shows on the first
   observation alone, that D blanks and the query follow, paying 0 and
   ending nothing, and that the answer (the cue plus offset, mod K) pays
   +1 when offset is 0, -1 otherwise, terminates and shows all 0. Returns
   the steps it took (D + 2), or -1 on the first surprise. */
static int s_episode(uint64_t seed, int offset)
{
    float obs[S_DIM];
    int term, trunc, t, cue, ok = 1;
    void *env = s_start(seed, obs);
    if (!env)
        return -1;
    cue = s_kind(obs);
    ok = cue >= 0 && cue < S_K;
    for (t = 1; ok && t <= VL_MEMORY_DELAY + 1; t++) {
        float r = s_step(env, (float)(t % S_K), obs, &term, &trunc);
        int want = t <= VL_MEMORY_DELAY ? VL_MEMORY_OBS_BLANK : VL_MEMORY_OBS_QUERY;
        ok = r == 0.0f && term == 0 && trunc == 0 && s_kind(obs) == want;
    }
    float r = s_step(env, (float)((cue + offset) % S_K), obs, &term, &trunc);
    ok &= r == (offset == 0 ? VL_MEMORY_RIGHT : VL_MEMORY_WRONG);
    ok &= term == 1 && trunc == 0 && s_kind(obs) == S_DIM;
    vl_memory_env.destroy(env);
    return ok ? t : -1;
}

/* Every episode is D + 2 steps: the cue shown once, D blanks, the query;
   naming the cue pays +1, naming any other -1. */
static void test_timing_and_answers(void)
{
    for (uint64_t seed = 0; seed < 20; seed++)
        for (int offset = 0; offset < S_K; offset++)
            VL_CHECK(s_episode(seed, offset) == VL_MEMORY_STEPS);
    VL_CHECK(VL_MEMORY_STEPS == VL_MEMORY_DELAY + 2 && VL_MEMORY_DELAY >= 10);
}

/* Two envs from the same seed, one always choosing 0 before the query, the
   other every choice and some the caller should never pass: the same
   observations, rewards and flags at every step, and the same answer pays
   the same. */
static void test_other_actions_change_nothing(void)
{
    float oa[S_DIM], ob[S_DIM];
    float odd[] = {NAN, -1.0f, (float)S_K, 1e30f, -INFINITY, 0.5f};
    int ta, tra, tb, trb, ok = 1;
    void *a = s_start(9, oa), *b = s_start(9, ob);
    VL_CHECK(a && b);
    ok = memcmp(oa, ob, sizeof oa) == 0;
    for (int t = 0; t <= VL_MEMORY_DELAY && ok; t++) {
        float choice = t < S_K ? (float)t : odd[t % (sizeof odd / sizeof odd[0])];
        float ra = s_step(a, 0.0f, oa, &ta, &tra), rb = s_step(b, choice, ob, &tb, &trb);
        ok = ra == rb && ra == 0.0f && ta == tb && tra == trb && memcmp(oa, ob, sizeof oa) == 0;
    }
    float ra = s_step(a, 1.0f, oa, &ta, &tra), rb = s_step(b, 1.0f, ob, &tb, &trb);
    vl_memory_env.destroy(a);
    vl_memory_env.destroy(b);
    VL_CHECK(ok);
    VL_CHECK(ra == rb && ra != 0.0f && ta == 1 && tb == 1);
}

/* Runs env to its query observation; returns the cue its reset showed. */
static int s_to_query(void *env, float obs[S_DIM])
{
    int term, trunc, cue;
    vl_memory_env.reset(env, obs);
    cue = s_kind(obs);
    for (int t = 0; t <= VL_MEMORY_DELAY; t++)
        s_step(env, 0.0f, obs, &term, &trunc);
    return s_kind(obs) == VL_MEMORY_OBS_QUERY ? cue : -1;
}

/* An answer is the choice's whole part; anything that is not a choice
   (NaN, infinite, negative, K or more) is a wrong answer, never a crash. */
static void test_hostile_answers(void)
{
    float obs[S_DIM], bad[] = {NAN, -NAN, INFINITY, -INFINITY, -1.0f, -0.5f, (float)S_K, 1e30f};
    int term, trunc, cue;
    void *env = vl_memory_env.create(NULL);
    VL_CHECK(env);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cue = s_to_query(env, obs);
        VL_CHECK(cue >= 0 && s_step(env, bad[i], obs, &term, &trunc) == VL_MEMORY_WRONG);
        VL_CHECK(term == 1);
    }
    cue = s_to_query(env, obs);
    VL_CHECK(s_step(env, (float)cue + 0.5f, obs, &term, &trunc) == VL_MEMORY_RIGHT);
    vl_memory_env.destroy(env);
}

/* After the answer, steps without a reset pay 0, show all 0 and terminate
   again; a reset shows a cue and starts the clock over. */
static void test_after_the_answer(void)
{
    float obs[S_DIM];
    int term, trunc, cue;
    void *env = vl_memory_env.create(NULL);
    VL_CHECK(env);
    cue = s_to_query(env, obs);
    VL_CHECK(s_step(env, (float)cue, obs, &term, &trunc) == VL_MEMORY_RIGHT);
    for (int t = 0; t < 3; t++) {
        VL_CHECK(s_step(env, (float)cue, obs, &term, &trunc) == 0.0f);
        VL_CHECK(term == 1 && trunc == 0 && s_kind(obs) == S_DIM);
    }
    cue = s_to_query(env, obs);
    VL_CHECK(cue >= 0 && cue < S_K);
    VL_CHECK(s_step(env, (float)cue, obs, &term, &trunc) == VL_MEMORY_RIGHT && term == 1);
    vl_memory_env.destroy(env);
}

/* Resets env n times, writing the cues shown; returns 0, or -1 when a first
   observation is not a cue. */
static int s_cues(void *env, int n, int *cues)
{
    float obs[S_DIM];
    for (int i = 0; i < n; i++) {
        vl_memory_env.reset(env, obs);
        cues[i] = s_kind(obs);
        if (cues[i] < 0 || cues[i] >= S_K)
            return -1;
    }
    return 0;
}

#define S_RESETS 8000

/* Cues are uniform over K (each count within 5 standard deviations of
   n / K), follow one another without a pattern a policy could learn (as
   often the same as the last as chance says), and reproduce by seed;
   unseeded is seed 0. */
static void test_cues_uniform_and_seeded(void)
{
    static int a[S_RESETS], b[S_RESETS], c[S_RESETS], z[50], zero[50];
    int count[S_K] = {0}, repeats = 0, ok;
    void *ea = vl_memory_env.create(NULL), *eb = vl_memory_env.create(NULL);
    void *ec = vl_memory_env.create(NULL), *ez = vl_memory_env.create(NULL);
    ok = ea && eb && ec && ez;
    if (ok) {
        vl_memory_env.seed(ea, 3), vl_memory_env.seed(eb, 3), vl_memory_env.seed(ec, 4);
        ok = s_cues(ea, S_RESETS, a) == 0 && s_cues(eb, S_RESETS, b) == 0;
        ok &= s_cues(ec, S_RESETS, c) == 0 && s_cues(ez, 50, z) == 0;
        vl_memory_env.seed(ea, 0);
        ok &= s_cues(ea, 50, zero) == 0;
    }
    vl_memory_env.destroy(ea), vl_memory_env.destroy(eb);
    vl_memory_env.destroy(ec), vl_memory_env.destroy(ez);
    VL_CHECK(ok);
    for (int i = 0; i < S_RESETS; i++) {
        count[a[i]]++;
        repeats += i > 0 && a[i] == a[i - 1];
    }
    double p = 1.0 / S_K, sd = sqrt(S_RESETS * p * (1 - p));
    for (int k = 0; k < S_K; k++)
        VL_CHECK_NEAR(count[k], S_RESETS * p, 5 * sd);
    VL_CHECK_NEAR(repeats, (S_RESETS - 1) * p, 5 * sd);
    VL_CHECK(memcmp(a, b, sizeof a) == 0);
    VL_CHECK(memcmp(a, c, 50 * sizeof a[0]) != 0);
    VL_CHECK(memcmp(z, zero, sizeof z) == 0);
}

/* A policy: given the observation and its memory (the cue it saw, -1 when
   none), returns a choice. Memoryless policies ignore the memory. */
typedef int (*s_policy_fn)(const float *obs, int remembered, long table);

/* Remembers: names the cue its first observation showed. */
static int s_oracle(const float *obs, int remembered, long table)
{
    (void)obs, (void)table;
    return remembered >= 0 ? remembered : 0;
}

/* The distinct observations an agent acts on, in the order first seen. */
static float s_seen[S_SEEN_MAX][S_DIM];
static int s_n_seen;

/* Returns the index of obs among s_seen, adding it when new; -1 when
   s_seen is full. */
static int s_seen_index(const float *obs)
{
    for (int i = 0; i < s_n_seen; i++)
        if (memcmp(s_seen[i], obs, sizeof s_seen[i]) == 0)
            return i;
    if (s_n_seen == S_SEEN_MAX)
        return -1;
    memcpy(s_seen[s_n_seen], obs, sizeof s_seen[0]);
    return s_n_seen++;
}

/* Fills s_seen with every observation an agent acts on in 1000 episodes of
   random choices; returns how many there are, or -1 when too many. */
static int s_discover(void)
{
    float obs[S_DIM];
    int term = 0, trunc, ok;
    vl_rng_t rng;
    void *env = vl_memory_env.create(NULL);
    vl_rng_seed(&rng, 17);
    ok = env != NULL;
    for (int e = 0; e < 1000 && ok; e++)
        for (vl_memory_env.reset(env, obs), term = 0; !term && ok;) {
            float a = (float)vl_rng_below(&rng, S_K);
            ok = s_seen_index(obs) >= 0;
            vl_memory_env.step(env, &a, obs, &term, &trunc);
        }
    vl_memory_env.destroy(env);
    return ok ? s_n_seen : -1;
}

/* A deterministic memoryless policy: table, read as s_n_seen digits in base
   K, gives the choice for each distinct observation; one never seen gets 0. */
static int s_memoryless(const float *obs, int remembered, long table)
{
    (void)remembered;
    int index = s_seen_index(obs);
    if (index < 0)
        return 0;
    for (int i = 0; i < index; i++)
        table /= S_K;
    return (int)(table % S_K);
}

/* Plays n episodes of policy from a reset of env seeded with seed; returns
   the mean return, or NAN when an episode broke the env's rules. */
static double s_mean_return(s_policy_fn policy, long table, int n, uint64_t seed)
{
    void *env = vl_memory_env.create(NULL);
    float obs[S_DIM];
    double sum = 0;
    int term = 0, trunc = 0, ok = env != NULL;
    if (ok)
        vl_memory_env.seed(env, seed);
    for (int e = 0; e < n && ok; e++) {
        vl_memory_env.reset(env, obs);
        int remembered = s_kind(obs), steps = 0;
        for (term = 0; !term && ok; steps++) {
            float a = (float)policy(obs, remembered, table);
            sum += vl_memory_env.step(env, &a, obs, &term, &trunc);
            ok = steps < VL_MEMORY_STEPS && !trunc;
        }
    }
    vl_memory_env.destroy(env);
    return ok ? sum / n : NAN;
}

/* The oracle, which keeps the cue, answers every episode right. */
static void test_oracle_scores_one(void)
{
    double mean = s_mean_return(s_oracle, 0, 1000, 5);
    VL_CHECK(mean == 1.0);
    VL_CHECK(mean >= vl_memory_env.solved_return);
}

/* Every deterministic policy of the current observation alone (K^(K + 2)
   of them: a choice for each observation the env shows, K cues, a blank
   and the query) scores chance, 2 / K - 1, within 5 standard deviations:
   the query looks the same whatever the cue, and what it did on the cue
   changed nothing. The best of them stays far below solved. */
static void test_memoryless_scores_chance(void)
{
    int seen = s_discover();
    long policies = 1;
    VL_CHECK(seen > 0);
    for (int i = 0; i < seen && policies <= 65536; i++)
        policies *= S_K;
    VL_CHECK(policies <= 65536);
    int n = (int)(4000000 / policies);
    n = n < 500 ? 500 : n > 4000 ? 4000 : n;
    double p = 1.0 / S_K, chance = 2 * p - 1, sd = 2 * sqrt(p * (1 - p) / n), best = -1;
    for (long table = 0; table < policies; table++) {
        double mean = s_mean_return(s_memoryless, table, n, 11 + (uint64_t)table);
        VL_CHECK_NEAR(mean, chance, 5 * sd);
        best = mean > best ? mean : best;
    }
    printf("     %ld memoryless policies over %d episodes each: best mean %.3f, chance %.3f\n",
           policies, n, best, chance);
    VL_CHECK(best < vl_memory_env.solved_return - 0.5);
    VL_CHECK(seen == S_K + 2);
}

/* The table: one f32 field of K + 2 in [0, 1], discrete(K), solved 0.95. */
static void test_table(void)
{
    const vl_env_t *t = &vl_memory_env;
    VL_CHECK(t->abi_version == VL_ENV_ABI_VERSION && strcmp(t->name, "memory") == 0);
    VL_CHECK(t->summary && strstr(t->summary, "memory"));
    VL_CHECK(t->n_fields == 1 && t->fields[0].encoding == VL_ENV_F32);
    VL_CHECK(t->fields[0].ndim == 1 && t->fields[0].shape[0] == S_DIM);
    VL_CHECK(t->fields[0].low == 0.0f && t->fields[0].high == 1.0f);
    VL_CHECK(t->action.kind == VL_ENV_DISCRETE && t->action.dims == 1 && t->action.n[0] == S_K);
    VL_CHECK(t->has_solved_return == 1 && t->solved_return == 0.95f);
    VL_CHECK(t->create && t->step && !t->vec_create && !t->vec_step);
}

/* Found by name, its spec as volley reads it. */
static void test_find(void)
{
    const vl_env_ops_t *ops = vl_env_find("memory");
    VL_CHECK(ops && ops->table == &vl_memory_env && !ops->vectorized && !ops->path);
    VL_CHECK(ops->obs_dim == S_DIM && ops->low[0] == 0.0f && ops->high[0] == 1.0f);
    VL_CHECK(ops->action.kind == VL_ENV_DISCRETE && ops->action.n[0] == S_K);
    VL_CHECK(ops->has_solved_return && ops->solved_return == 0.95f);
}

/* Three envs stepped as an actor steps them, the oracle choosing: every
   observation passes volley's checks, every episode ends after D + 2
   steps paying +1, and the next episode starts with a cue. */
static void test_steps_through_envs(void)
{
    const vl_env_ops_t *ops = vl_env_find("memory");
    uint64_t seeds[3] = {1, 2, 3};
    float obs[3][S_DIM], fin[3][S_DIM], rewards[3], actions[3];
    uint8_t term[3], trunc[3];
    int cue[3], ok = 1, episodes = 0;
    VL_CHECK(ops);
    vl_envs_t *envs = vl_envs_new(ops, 3, NULL, seeds, obs[0]);
    VL_CHECK(envs);
    for (int i = 0; i < 3; i++)
        cue[i] = s_kind(obs[i]);
    for (int t = 1; t <= 50 * VL_MEMORY_STEPS && ok; t++) {
        for (int i = 0; i < 3; i++)
            actions[i] = (float)cue[i];
        ok = vl_envs_step(envs, actions, obs[0], rewards, term, trunc, fin[0]) == 0;
        for (int i = 0; i < 3 && ok; i++) {
            int ends = t % VL_MEMORY_STEPS == 0;
            ok = term[i] == ends && !trunc[i];
            ok &= rewards[i] == (ends ? VL_MEMORY_RIGHT : 0.0f);
            ok &= !ends || (s_kind(fin[i]) == S_DIM && s_kind(obs[i]) < S_K);
            cue[i] = ends ? s_kind(obs[i]) : cue[i];
            episodes += ends;
        }
    }
    vl_envs_destroy(&envs);
    VL_CHECK(ok && episodes == 3 * 50);
}

static void test_destroy_null(void)
{
    vl_memory_env.destroy(NULL);
    VL_CHECK(1);
}

int main(void)
{
    printf("     memory with %d cues and %d blank steps\n", S_K, VL_MEMORY_DELAY);
    VL_RUN(test_timing_and_answers);
    VL_RUN(test_other_actions_change_nothing);
    VL_RUN(test_hostile_answers);
    VL_RUN(test_after_the_answer);
    VL_RUN(test_cues_uniform_and_seeded);
    VL_RUN(test_oracle_scores_one);
    VL_RUN(test_memoryless_scores_chance);
    VL_RUN(test_table);
    VL_RUN(test_find);
    VL_RUN(test_steps_through_envs);
    VL_RUN(test_destroy_null);
    return VL_DONE();
}
