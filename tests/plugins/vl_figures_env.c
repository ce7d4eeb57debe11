/*  vl_figures_env: a test plugin that names two episode figures (env ABI
    version 3). An episode lasts 5 steps and its action is ignored; each
    episode reports "five" = 5 (its length) and "odd" = 1 on every second
    episode of an env, none (NaN) on the others, so that the learner's
    metrics show env/five 5 and env/odd 1. */
#include <math.h>
#include <stdlib.h>
#include <volley/env.h>

typedef struct {
    uint32_t t, episodes;
} s_env_t;

static void *s_create(const char *arg)
{
    (void)arg;
    return calloc(1, sizeof(s_env_t));
}

static void s_destroy(void *env)
{
    free(env);
}

static void s_seed(void *env, uint64_t seed)
{
    (void)env, (void)seed;
}

static void s_reset(void *env, float *obs)
{
    ((s_env_t *)env)->t = 0;
    obs[0] = 0;
}

static float s_step(void *env, const float *action, float *obs, int *term, int *trunc)
{
    s_env_t *e = env;
    (void)action;
    obs[0] = (float)++e->t / 5.0f;
    *term = e->t == 5, *trunc = 0;
    return 1;
}

static void s_figures(void *env, float *out)
{
    s_env_t *e = env;
    out[0] = (float)e->t;
    out[1] = e->episodes++ % 2 ? 1.0f : NAN;
}

const vl_env_t volley_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "figures",
    .summary = "five-step episodes reporting two figures of their own",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {1}, .low = 0, .high = 1}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {2}},
    .create = s_create,
    .destroy = s_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
    .n_figures = 2,
    .figure_names = {"five", "odd"},
    .figures = s_figures,
};
