/*  target: an example volley environment plugin with continuous actions (a
    box), in the per-env form.

    A point on a line [-1, 1] must reach a target and stay on it. It
    observes (position, target) and acts with a velocity in [-1, 1] (a box of
    one dimension; volley clips its samples to the bounds before step), which
    moves it by a tenth of that a step. Each step pays -|position - target|;
    an episode is 50 steps (truncated: the future had value). Standing still
    scores about -33; the learned policy runs to the target in a few steps
    and stays (mean return about -3).

    Build (outside volley's tree, after `cmake --install`):
        cc -shared -fPIC -o libtarget.so target.c $(pkg-config --cflags volley)
    Train:
        volley up --env ./libtarget.so */
#include <math.h>
#include <stdlib.h>
#include <volley/env.h>

#define STEPS 50     // the time limit
#define SPEED 0.1f   // distance a step at full velocity

typedef struct {
    float pos, target;
    int steps;
    uint64_t rng;
} target_t;

static void *s_create(const char *arg)
{
    (void)arg;
    return calloc(1, sizeof(target_t));
}

static void s_destroy(void *env)
{
    free(env);
}

static void s_seed(void *env, uint64_t seed)
{
    ((target_t *)env)->rng = seed;
}

/* Returns a uniform draw in [-1, 1) from the env's own generator. */
static float s_uniform(target_t *self)
{
    self->rng = self->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(self->rng >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

static void s_reset(void *env, float *obs)
{
    target_t *self = env;
    self->pos = s_uniform(self);
    self->target = s_uniform(self);
    self->steps = 0;
    obs[0] = self->pos, obs[1] = self->target;
}

static float s_step(void *env, const float *action, float *obs, int *terminated, int *truncated)
{
    target_t *self = env;
    self->pos = fminf(1.0f, fmaxf(-1.0f, self->pos + SPEED * action[0])); // action[0] in [-1, 1]
    *terminated = 0;
    *truncated = ++self->steps >= STEPS;
    obs[0] = self->pos, obs[1] = self->target;
    return -fabsf(self->pos - self->target);
}

const vl_env_t volley_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "target",
    .summary = "reach a target on a line with a velocity in [-1, 1] (a box action)",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {2}, .low = -1, .high = 1}},
    .action = {.kind = VL_ENV_BOX, .dims = 1, .low = {-1}, .high = {1}},
    .has_solved_return = 1,
    .solved_return = -4.0f,
    .create = s_create, .destroy = s_destroy, .seed = s_seed, .reset = s_reset, .step = s_step,
};
