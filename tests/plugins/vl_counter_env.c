/*  vl_counter_env: a test plugin for vl_env_test and the loader, built twice
    from this file: the per-env form, and with VL_COUNTER_VEC the vectorized
    form of the same environment, so that the two can be stepped side by
    side and compared value for value. It is an env ABI version 1 plugin
    (int32 actions), which volley keeps loading.

    A counter t runs from 0. An episode terminates at step 4 + (seed +
    episode) % 5 and is truncated at step 7 (at 7 both flags are set). The
    observation holds every encoding: f32 [2] in [0, 1] (t / 8, the seed's
    mark), u8 [1], u2 [2], u1 [1]. Action a pays a - 1.

    --env-arg breaks it on purpose, at step 3 of every env with an odd seed:
    "nan" (an f32 NaN), "range" (f32 1.5, over its high), "u2" (a u2 value
    of 7), "flag" (terminated = 2), "reward" (an infinite reward), "vecfail"
    (vec_step returns -1); "fail" and any other text make create fail. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <volley/env.h>

#define S_LIMIT    7 // the time limit, in steps
#define S_BAD_STEP 3 // the step a fault shows at

typedef enum { S_GOOD, S_NAN, S_RANGE, S_U2, S_FLAG, S_REWARD, S_VECFAIL } s_fault_t;

typedef struct {
    uint64_t seed;
    uint32_t t;        // steps this episode
    uint32_t len;      // the step that terminates it
    uint32_t episodes; // resets so far
    s_fault_t fault;
} counter_t;

/* Returns the fault arg asks for, or -1 for text this plugin refuses. */
static int s_fault(const char *arg)
{
    static const char *const names[] = {"", "nan", "range", "u2", "flag", "reward", "vecfail"};
    if (!arg)
        return S_GOOD;
    for (int i = 1; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(arg, names[i]) == 0)
            return i;
    return -1;
}

static void s_observe(const counter_t *self, float *obs)
{
    obs[0] = (float)self->t / 8.0f;
    obs[1] = (float)(self->seed % 100) / 100.0f;
    obs[2] = (float)((self->seed * 7 + self->t) % 256);
    obs[3] = (float)(self->t % 4);
    obs[4] = (float)((self->t + 1) % 4);
    obs[5] = (float)(self->t % 2);
}

static void s_reset(counter_t *self, float *obs)
{
    self->t = 0;
    self->len = 4 + (uint32_t)((self->seed + self->episodes) % 5);
    self->episodes++;
    s_observe(self, obs);
}

/* One step; writes the flags and returns the reward, faults included. */
static float s_step(counter_t *self, int32_t action, float *obs, int *term, int *trunc)
{
    float reward = (float)action - 1.0f;
    self->t++;
    *term = self->t >= self->len;
    *trunc = self->t >= S_LIMIT;
    s_observe(self, obs);
    if (self->t != S_BAD_STEP || self->seed % 2 == 0)
        return reward;
    if (self->fault == S_NAN)
        obs[0] = NAN;
    else if (self->fault == S_RANGE)
        obs[0] = 1.5f;
    else if (self->fault == S_U2)
        obs[3] = 7.0f;
    else if (self->fault == S_FLAG)
        *term = 2;
    else if (self->fault == S_REWARD)
        reward = INFINITY;
    return reward;
}

#ifndef VL_COUNTER_VEC

static void *s_create(const char *arg)
{
    int fault = s_fault(arg);
    counter_t *self = fault < 0 ? NULL : calloc(1, sizeof *self);
    if (self)
        self->fault = (s_fault_t)fault;
    return self;
}

static void s_destroy(void *env)
{
    free(env);
}

static void s_seed(void *env, uint64_t seed)
{
    ((counter_t *)env)->seed = seed;
}

static void s_reset_one(void *env, float *obs)
{
    s_reset(env, obs);
}

static float s_step_one(void *env, int32_t action, float *obs, int *term, int *trunc)
{
    return s_step(env, action, obs, term, trunc);
}

#define S_NAME "counter"
#define S_FORMS                                                                                    \
    .create = s_create, .destroy = s_destroy, .seed = s_seed, .reset = s_reset_one,                \
    .step = s_step_one

#else

#define S_DIM 6

typedef struct {
    uint32_t n;
    counter_t envs[];
} counters_t;

static void *s_vec_create(uint32_t n, const char *arg)
{
    int fault = s_fault(arg);
    counters_t *self = fault < 0 ? NULL : calloc(1, sizeof *self + n * sizeof self->envs[0]);
    if (!self)
        return NULL;
    self->n = n;
    for (uint32_t i = 0; i < n; i++)
        self->envs[i].fault = (s_fault_t)fault;
    return self;
}

static void s_vec_destroy(void *envs)
{
    free(envs);
}

static void s_vec_seed(void *envs, const uint64_t *seeds)
{
    counters_t *self = envs;
    for (uint32_t i = 0; i < self->n; i++)
        self->envs[i].seed = seeds[i];
}

static int s_vec_reset(void *envs, float *obs)
{
    counters_t *self = envs;
    for (uint32_t i = 0; i < self->n; i++)
        s_reset(&self->envs[i], obs + (size_t)i * S_DIM);
    return 0;
}

static int s_vec_step(void *envs, const int32_t *actions, float *obs, float *rewards,
                      uint8_t *terminated, uint8_t *truncated, float *final_obs)
{
    counters_t *self = envs;
    for (uint32_t i = 0; i < self->n; i++) {
        counter_t *c = &self->envs[i];
        float *o = obs + (size_t)i * S_DIM;
        int term, trunc;
        if (c->fault == S_VECFAIL && c->t + 1 == S_BAD_STEP && c->seed % 2)
            return -1;
        rewards[i] = s_step(c, actions[i], o, &term, &trunc);
        terminated[i] = (uint8_t)term;
        truncated[i] = (uint8_t)trunc;
        if (term || trunc) {
            memcpy(final_obs + (size_t)i * S_DIM, o, S_DIM * sizeof *o);
            s_reset(c, o);
        }
    }
    return 0;
}

#define S_NAME "counter-vec"
#define S_FORMS                                                                                    \
    .vec_create = s_vec_create, .vec_destroy = s_vec_destroy, .vec_seed = s_vec_seed,              \
    .vec_reset = s_vec_reset, .vec_step = s_vec_step

#endif

/* A version 1 table: the loader still takes the layout plugins were built
   with before action spaces, in both forms. */
const vl_env_v1_t volley_env = {
    .abi_version = 1,
    .name = S_NAME,
    .summary = "a counter that exercises every encoding (vl_env_test)",
    .n_fields = 4,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {2}, .low = 0.0f, .high = 1.0f},
               {.encoding = VL_ENV_U8, .ndim = 1, .shape = {1}},
               {.encoding = VL_ENV_U2, .ndim = 1, .shape = {2}},
               {.encoding = VL_ENV_U1, .ndim = 1, .shape = {1}}},
    .num_actions = 3,
    S_FORMS,
};
