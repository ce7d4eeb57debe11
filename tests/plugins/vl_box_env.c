/*  vl_box_env: a test plugin of env ABI version 2 whose observation is the
    action it was last stepped with, so that a test sees exactly what
    reached the env. Built three times from this file: the per-env form with
    a BOX action of dims 2, bounds [-1, 1] and [0, 2]; with VL_BOX_VEC the
    vectorized form of the same; with VL_BOX_MULTI the per-env form with a
    MULTI_DISCRETE action of dims 3, choices (3, 2, 4).

    The observation is one f32 field of the action's dims and no declared
    range (what the env got, unchecked by the loader): zeros after a reset,
    the action after a step. The reward is the action's first value; an
    episode is truncated after S_LIMIT steps. */
#include <stdlib.h>
#include <string.h>
#include <volley/env.h>

#define S_LIMIT 5 // steps per episode

#ifdef VL_BOX_MULTI
#define S_DIMS 3
#else
#define S_DIMS 2
#endif

typedef struct {
    uint32_t t; // steps this episode
} box_t;

static void s_reset(box_t *self, float *obs)
{
    self->t = 0;
    memset(obs, 0, S_DIMS * sizeof *obs);
}

/* Echoes action into obs; returns its first value, sets the flags. */
static float s_step(box_t *self, const float *action, float *obs, int *term, int *trunc)
{
    memcpy(obs, action, S_DIMS * sizeof *obs);
    *term = 0;
    *trunc = ++self->t >= S_LIMIT;
    return action[0];
}

#ifndef VL_BOX_VEC

static void *s_create(const char *arg)
{
    (void)arg;
    return calloc(1, sizeof(box_t));
}

static void s_destroy(void *env)
{
    free(env);
}

static void s_seed(void *env, uint64_t seed)
{
    (void)env, (void)seed;
}

static void s_reset_one(void *env, float *obs)
{
    s_reset(env, obs);
}

static float s_step_one(void *env, const float *action, float *obs, int *term, int *trunc)
{
    return s_step(env, action, obs, term, trunc);
}

#define S_FORMS                                                                                    \
    .create = s_create, .destroy = s_destroy, .seed = s_seed, .reset = s_reset_one,                \
    .step = s_step_one

#else

typedef struct {
    uint32_t n;
    box_t envs[];
} boxes_t;

static void *s_vec_create(uint32_t n, const char *arg)
{
    (void)arg;
    boxes_t *self = calloc(1, sizeof *self + n * sizeof self->envs[0]);
    if (self)
        self->n = n;
    return self;
}

static void s_vec_destroy(void *envs)
{
    free(envs);
}

static void s_vec_seed(void *envs, const uint64_t *seeds)
{
    (void)envs, (void)seeds;
}

static int s_vec_reset(void *envs, float *obs)
{
    boxes_t *self = envs;
    for (uint32_t i = 0; i < self->n; i++)
        s_reset(&self->envs[i], obs + (size_t)i * S_DIMS);
    return 0;
}

static int s_vec_step(void *envs, const float *actions, float *obs, float *rewards,
                      uint8_t *terminated, uint8_t *truncated, float *final_obs)
{
    boxes_t *self = envs;
    for (uint32_t i = 0; i < self->n; i++) {
        float *o = obs + (size_t)i * S_DIMS;
        int term, trunc;
        rewards[i] = s_step(&self->envs[i], actions + (size_t)i * S_DIMS, o, &term, &trunc);
        terminated[i] = (uint8_t)term;
        truncated[i] = (uint8_t)trunc;
        if (term || trunc) {
            memcpy(final_obs + (size_t)i * S_DIMS, o, S_DIMS * sizeof *o);
            s_reset(&self->envs[i], o);
        }
    }
    return 0;
}

#define S_FORMS                                                                                    \
    .vec_create = s_vec_create, .vec_destroy = s_vec_destroy, .vec_seed = s_vec_seed,              \
    .vec_reset = s_vec_reset, .vec_step = s_vec_step

#endif

#if defined(VL_BOX_MULTI)
#define S_NAME "multi-echo"
#define S_ACTION                                                                                   \
    {                                                                                              \
        .kind = VL_ENV_MULTI_DISCRETE, .dims = 3, .n = { 3, 2, 4 }                                 \
    }
#elif defined(VL_BOX_VEC)
#define S_NAME "box-echo-vec"
#else
#define S_NAME "box-echo"
#endif
#ifndef S_ACTION
#define S_ACTION                                                                                   \
    {                                                                                              \
        .kind = VL_ENV_BOX, .dims = 2, .low = {-1.0f, 0.0f}, .high = { 1.0f, 2.0f }                \
    }
#endif

const vl_env_t volley_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = S_NAME,
    .summary = "echoes the action it was stepped with (vl_env_test)",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {S_DIMS}}},
    .action = S_ACTION,
    S_FORMS,
};
