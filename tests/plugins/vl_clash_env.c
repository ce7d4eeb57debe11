/*  vl_clash_env: a plugin whose names clash with the world it is loaded
    into, built by tests/plugin_bind_test.sh with docs/envs.md's line (no
    -fvisibility, no -Bsymbolic). It is the corridor (8 cells, walk right,
    +1 at the end, -0.01 a step, 50 steps' time limit) written the way a
    user writes a first env: plain global functions `step()` and `reset()`,
    and a helper that happens to share its name with one of libvolley's
    exported functions, `vl_now_ns`. Each must bind to this plugin's own
    definition; if libvolley's `vl_now_ns` answers instead, create fails.

    --env-arg crash: create dereferences a null pointer (SIGSEGV), for the
    report of a plugin that crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <volley/env.h>

#define CELLS     8
#define MAX_STEPS 50
#define S_MARK    424242 // what this plugin's own vl_now_ns returns

typedef struct {
    int cell, steps;
    uint64_t rng;
} clash_t;

/* Named like libvolley's monotonic clock on purpose: the plugin's own. */
int64_t vl_now_ns(void);
int64_t vl_now_ns(void)
{
    return S_MARK;
}

void reset(clash_t *self, float *obs);
void reset(clash_t *self, float *obs)
{
    self->rng = self->rng * 6364136223846793005ull + 1442695040888963407ull;
    self->cell = (int)((self->rng >> 33) % (CELLS - 1));
    self->steps = 0;
    for (int i = 0; i < CELLS; i++)
        obs[i] = i == self->cell ? 1.0f : 0.0f;
}

float step(clash_t *self, int action, float *obs, int *terminated, int *truncated);
float step(clash_t *self, int action, float *obs, int *terminated, int *truncated)
{
    self->cell += action == 1 ? 1 : self->cell > 0 ? -1 : 0;
    *terminated = self->cell == CELLS - 1;
    *truncated = !*terminated && ++self->steps >= MAX_STEPS;
    for (int i = 0; i < CELLS; i++)
        obs[i] = i == self->cell ? 1.0f : 0.0f;
    return *terminated ? 1.0f : -0.01f;
}

static void *s_create(const char *arg)
{
    if (arg && strcmp(arg, "crash") == 0) {
        int *volatile nowhere = NULL;
        *nowhere = 1;
    }
    if (arg || vl_now_ns() != S_MARK) // bound to someone else's vl_now_ns: refuse to run
        return NULL;
    return calloc(1, sizeof(clash_t));
}

static void s_destroy(void *env)
{
    free(env);
}

static void s_seed(void *env, uint64_t seed)
{
    ((clash_t *)env)->rng = seed;
}

static void s_reset(void *env, float *obs)
{
    reset(env, obs);
}

static float s_step(void *env, const float *actions, float *obs, int *terminated, int *truncated)
{
    int32_t action = (int32_t)actions[0];
    return step(env, action, obs, terminated, truncated);
}

const vl_env_t volley_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "clash",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {CELLS}, .low = 0, .high = 1}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {2}},
    .has_solved_return = 1,
    .solved_return = 0.95f,
    .create = s_create, .destroy = s_destroy, .seed = s_seed, .reset = s_reset, .step = s_step,
};
