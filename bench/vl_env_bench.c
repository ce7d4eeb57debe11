/*  vl_env_bench: what the env plugin ABI costs, each figure beside its
    reference in the same run (lz4's tests/fullbench.c is the model).

    Every case steps S_ENVS environments through vl_envs_step in an
    actor-like loop (random actions drawn each step, episodes ending and
    resetting), best of a few runs, the two sides interleaved run by run.
    Both sides must end with the same checksum of everything they wrote, or
    the bench fails before it prints a figure.

      plugin/builtin  CartPole built in vs the same source built as a plugin
                      (tests/plugins/vl_cartpole_plugin.c includes
                      envs/vl_cartpole.c, its table exported as volley_env),
                      loaded by vl_env_lookup: target >= 0.95x
      vec/per-env     a cheap env (a random walk, a few flops a step) in the
                      vectorized form vs the per-env form through vl_envs_t's
                      adapter
      checked/raw     the walk's vectorized form through vl_envs_step vs its
                      vec_step called alone: what checking every value costs

    usage: vl_env_bench [--quick] [CARTPOLE_PLUGIN.so]  (default: the one
    built beside this executable) */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/vl_bench.h"
#include "common/vl_rng.h"
#include "envs/vl_env.h"

#define S_ENVS         16 // envs an actor steps together
#define S_RUNS         7  // runs per side; the best counts
#define S_RUN_S        0.3
#define S_QUICK_RUNS   2
#define S_QUICK_RUN_S  0.02
#define S_CHUNK        256   // loop iterations between clock reads
#define S_VERIFY_LOOPS 4096  // steps of each side compared value for value
#define S_TARGET       0.95  // plugin/builtin steps/s, the target
#define S_WALK_END     10.0f // |x| that ends a walk
#define S_WALK_STEPS   200   // a walk's time limit

/* ---- the cheap env: a random walk, in both forms ----------------------- */

typedef struct {
    float x;        // position, |x| < S_WALK_END while the walk goes on
    uint32_t steps; // since the reset
} s_walk_t;

/* Moves by action - 1 (a choice 0, 1 or 2, passed as a float); pays
   -|x| / 100; ends at |x| = 10 or 200 steps. */
static inline float s_walk_step(s_walk_t *w, float action, float *obs, int *term, int *trunc)
{
    w->x += action - 1.0f;
    w->steps++;
    *term = fabsf(w->x) >= S_WALK_END;
    *trunc = w->steps >= S_WALK_STEPS;
    obs[0] = w->x / S_WALK_END;
    return -0.01f * fabsf(w->x);
}

static inline void s_walk_reset(s_walk_t *w, float *obs)
{
    w->x = 0;
    w->steps = 0;
    obs[0] = 0;
}

static void *s_create(const char *arg)
{
    (void)arg;
    return calloc(1, sizeof(s_walk_t));
}

static void s_destroy(void *env)
{
    free(env);
}

static void s_seed(void *env, uint64_t seed)
{
    (void)env, (void)seed; // the walk draws nothing
}

static void s_reset(void *env, float *obs)
{
    s_walk_reset(env, obs);
}

static float s_step(void *env, const float *action, float *obs, int *term, int *trunc)
{
    return s_walk_step(env, action[0], obs, term, trunc);
}

typedef struct {
    uint32_t n;
    s_walk_t w[];
} s_walks_t;

static void *s_vec_create(uint32_t n, const char *arg)
{
    (void)arg;
    s_walks_t *self = calloc(1, sizeof *self + n * sizeof self->w[0]);
    if (self)
        self->n = n;
    return self;
}

static void s_vec_seed(void *envs, const uint64_t *seeds)
{
    (void)envs, (void)seeds;
}

static int s_vec_reset(void *envs, float *obs)
{
    s_walks_t *self = envs;
    for (uint32_t i = 0; i < self->n; i++)
        s_walk_reset(&self->w[i], obs + i);
    return 0;
}

static int s_vec_step(void *envs, const float *actions, float *obs, float *rewards,
                      uint8_t *terminated, uint8_t *truncated, float *final_obs)
{
    s_walks_t *self = envs;
    for (uint32_t i = 0; i < self->n; i++) {
        int term, trunc;
        rewards[i] = s_walk_step(&self->w[i], actions[i], obs + i, &term, &trunc);
        terminated[i] = (uint8_t)term;
        truncated[i] = (uint8_t)trunc;
        if (term || trunc) {
            final_obs[i] = obs[i];
            s_walk_reset(&self->w[i], obs + i);
        }
    }
    return 0;
}

#define S_WALK_TABLE                                                                               \
    .abi_version = VL_ENV_ABI_VERSION, .name = "walk", .n_fields = 1,                              \
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {1}, .low = -1, .high = 1}},           \
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {3}}

static const vl_env_t s_walk_per = {S_WALK_TABLE,   .create = s_create, .destroy = s_destroy,
                                    .seed = s_seed, .reset = s_reset,   .step = s_step};
static const vl_env_t s_walk_vec = {
    S_WALK_TABLE,           .vec_create = s_vec_create, .vec_destroy = s_destroy,
    .vec_seed = s_vec_seed, .vec_reset = s_vec_reset,   .vec_step = s_vec_step};

/* ---- timing ------------------------------------------------------------- */

/* One side of a comparison: its envs, their arrays and what they summed. */
typedef struct {
    const vl_env_ops_t *env;
    vl_envs_t *envs;        // or, for the raw side,
    void *raw;              // the vectorized table's own object, stepped unchecked
    float *obs, *final_obs; // [S_ENVS][dim]
    float rewards[S_ENVS];
    uint8_t term[S_ENVS], trunc[S_ENVS];
    vl_rng_t rng;   // the actions
    uint64_t steps; // env steps taken, all runs
    uint64_t sum;   // checksum of every step's output
    double best;    // steps/s of the best run
} s_side_t;

/* Returns this thread's CPU seconds: the machine may be shared, and time
   spent preempted is not the env's. */
static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sets up a side (with raw, a vectorized env stepped by its table alone,
   without vl_envs_t); returns 0 or -1. Seeds and action stream are the
   same for both sides of a comparison. */
static int s_side_init(s_side_t *s, const vl_env_ops_t *env, int raw)
{
    uint64_t seeds[S_ENVS];
    size_t n = (size_t)S_ENVS * env->obs_dim;
    for (int i = 0; i < S_ENVS; i++)
        seeds[i] = 1000 + (uint64_t)i;
    *s = (s_side_t){.env = env, .best = 0};
    vl_rng_seed(&s->rng, 7);
    s->obs = calloc(n, sizeof *s->obs);
    s->final_obs = calloc(n, sizeof *s->final_obs);
    if (!s->obs || !s->final_obs)
        return -1;
    if (!raw)
        return (s->envs = vl_envs_new(env, S_ENVS, NULL, seeds, s->obs)) ? 0 : -1;
    if (!(s->raw = env->table->vec_create(S_ENVS, NULL)))
        return -1;
    env->table->vec_seed(s->raw, seeds);
    return env->table->vec_reset(s->raw, s->obs);
}

static void s_side_fini(s_side_t *s)
{
    vl_envs_destroy(&s->envs);
    if (s->raw)
        s->env->table->vec_destroy(s->raw);
    free(s->obs);
    free(s->final_obs);
}

/* Steps the side once; returns 0 or -1. */
static int s_step_side(s_side_t *s, const float *actions)
{
    if (s->raw)
        return s->env->table->vec_step(s->raw, actions, s->obs, s->rewards, s->term, s->trunc,
                                       s->final_obs);
    return vl_envs_step(s->envs, actions, s->obs, s->rewards, s->term, s->trunc, s->final_obs);
}

/* Folds what the last step wrote into the side's checksum: observations,
   rewards, flags and, where an episode ended, its final observation. */
static void s_fold(s_side_t *s)
{
    uint32_t D = s->env->obs_dim;
    uint64_t h[4] = {vl_bench_checksum(s->obs, sizeof(float) * S_ENVS * D),
                     vl_bench_checksum(s->rewards, sizeof s->rewards),
                     vl_bench_checksum(s->term, sizeof s->term),
                     vl_bench_checksum(s->trunc, sizeof s->trunc)};
    s->sum = vl_bench_checksum(h, sizeof h) ^ (s->sum * 0x100000001b3ull);
    for (int i = 0; i < S_ENVS; i++)
        if (s->term[i] || s->trunc[i])
            s->sum ^= vl_bench_checksum(s->final_obs + (size_t)i * D, sizeof(float) * D) + i;
}

/* Steps the side's envs `loops` times, as an actor does: draw actions,
   step (and with fold, checksum the outcome). Returns 0 or -1. */
static int s_loops(s_side_t *s, int loops, int fold)
{
    float actions[S_ENVS];
    uint32_t choices = s->env->action.n[0]; // both envs compared are discrete
    for (int l = 0; l < loops; l++) {
        uint64_t bits = vl_rng_next(&s->rng);
        for (int i = 0; i < S_ENVS; i++)
            actions[i] = (float)((uint32_t)((bits >> (2 * i)) & 3) % choices);
        if (s_step_side(s, actions) != 0)
            return -1;
        if (fold)
            s_fold(s);
    }
    s->steps += (uint64_t)loops * S_ENVS;
    return 0;
}

/* Times one run of run_s seconds; keeps the best steps/s. Returns 0 or -1. */
static int s_run(s_side_t *s, double run_s)
{
    uint64_t before = s->steps;
    double t0 = s_now(), dt;
    do {
        if (s_loops(s, S_CHUNK, 0) != 0)
            return -1;
        dt = s_now() - t0;
    } while (dt < run_s);
    double rate = (double)(s->steps - before) / dt;
    s->best = rate > s->best ? rate : s->best;
    return 0;
}

/* Returns 0 if a and b, from the same seeds under the same actions, write
   the same values for S_VERIFY_LOOPS steps, else -1. */
static int s_verify(const vl_env_ops_t *a, const vl_env_ops_t *b, int b_raw)
{
    s_side_t sa, sb;
    int rc = -1;
    if (s_side_init(&sa, a, 0) == 0 && s_side_init(&sb, b, b_raw) == 0 &&
        s_loops(&sa, S_VERIFY_LOOPS, 1) == 0 && s_loops(&sb, S_VERIFY_LOOPS, 1) == 0)
        rc = sa.sum == sb.sum ? 0 : -1;
    s_side_fini(&sa);
    s_side_fini(&sb);
    return rc;
}

/* Checks a and b agree, then times them run for run, interleaved, and
   prints the line. Returns the ratio of a's steps/s over b's, or -1. */
static double s_compare(const char *what, const vl_env_ops_t *a, const vl_env_ops_t *b, int b_raw,
                        vl_bench_plan_t plan, const char *target)
{
    s_side_t sa, sb;
    double ratio = -1;
    if (s_verify(a, b, b_raw) != 0) {
        fprintf(stderr, "vl_env_bench: %s: the two sides wrote different values\n", what);
        return -1;
    }
    if (s_side_init(&sa, a, 0) == 0 && s_side_init(&sb, b, b_raw) == 0) {
        int r = 0;
        while (r < plan.runs && s_run(&sa, plan.run_s) == 0 && s_run(&sb, plan.run_s) == 0)
            r++;
        if (r == plan.runs)
            ratio = sa.best / sb.best;
    }
    if (ratio > 0)
        printf("%-15s steps/s %6.2fM vs %6.2fM  %5.2fx%s\n", what, 1e-6 * sa.best, 1e-6 * sb.best,
               ratio, target);
    else
        fprintf(stderr, "vl_env_bench: %s: stepping failed\n", what);
    s_side_fini(&sa);
    s_side_fini(&sb);
    return ratio;
}

static void s_usage(FILE *out)
{
    fprintf(out, "usage: vl_env_bench [--quick] [CARTPOLE_PLUGIN.so]\n"
                 "  CARTPOLE_PLUGIN.so  CartPole built as a plugin (default: "
                 "libvl_cartpole_plugin.so beside this executable)\n");
}

/* Sets path to the default plugin: libvl_cartpole_plugin.so beside argv0. */
static void s_default_plugin(const char *argv0, char *path, size_t size)
{
    const char *slash = strrchr(argv0, '/');
    int dir = slash ? (int)(slash - argv0) : 1;
    snprintf(path, size, "%.*s/libvl_cartpole_plugin.so", dir, slash ? argv0 : ".");
}

int main(int argc, char **argv)
{
    char plugin[PATH_MAX], *flags[4] = {argv[0]};
    int nflags = 1;
    s_default_plugin(argv[0], plugin, sizeof plugin);
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-')
            snprintf(plugin, sizeof plugin, "%s", argv[i]);
        else if (nflags < 4)
            flags[nflags++] = argv[i];
    vl_bench_plan_t plan, full = {S_RUNS, S_RUN_S}, quick = {S_QUICK_RUNS, S_QUICK_RUN_S};
    int rc = vl_bench_parse(nflags, flags, "vl_env_bench", s_usage, full, quick, &plan);
    if (rc != 0)
        return rc == 1 ? 0 : 2;

    char why[256];
    vl_env_ops_t per, vec;
    const vl_env_ops_t *builtin = vl_env_find("cartpole");
    const vl_env_ops_t *loaded = vl_env_lookup("vl_env_bench", plugin);
    if (!loaded || vl_env_check(&s_walk_per, &per, why, sizeof why) != 0 ||
        vl_env_check(&s_walk_vec, &vec, why, sizeof why) != 0)
        return 2;
    printf("vl_env_bench: %d envs through vl_envs_step, random actions, best of %d runs of "
           "%.2f s (CPU)\n",
           S_ENVS, plan.runs, plan.run_s);
    double ratio = s_compare("plugin/builtin", loaded, builtin, 0, plan, "  (target >= 0.95x)");
    double vec_ratio =
        s_compare("vec/per-env", &vec, &per, 0, plan, "  (walk: a few flops a step)");
    double checked = s_compare("checked/raw", &vec, &vec, 1, plan,
                               "  (walk vec: vl_envs_step's checks vs vec_step alone)");
    if (ratio < 0 || vec_ratio < 0 || checked < 0)
        return 1;
    if (ratio < S_TARGET)
        printf("plugin/builtin below its target%s\n", plan.runs == S_QUICK_RUNS ? " (quick run: "
                                                                                  "noisy)"
                                                                                : "");
    return 0;
}
