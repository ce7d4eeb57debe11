/*  corridor: an example volley environment plugin, in the per-env form.

    A corridor of 8 cells. The agent starts on a random cell left of the
    last one and moves left or right; reaching the right end pays +1 and ends
    the episode (terminated), every other step costs 0.01, and after 50 steps
    a time limit cuts the episode (truncated). It observes its cell, one-hot.

    Truncated is not terminated: the learner bootstraps from the value of the
    last observation instead of counting it as the end of the world, so the
    agent need not see the clock. A random walk often runs out of time; the
    learned policy walks right in at most 7 steps (mean return about 0.97).

    Build (outside volley's tree, after `cmake --install`):
        cc -shared -fPIC -o libcorridor.so corridor.c $(pkg-config --cflags volley)
    Train:
        volley up --env ./libcorridor.so [--env-arg STEPS]  (the time limit) */
#include <stdlib.h>
#include <volley/env.h>

#define CELLS     8  // the goal is the last one
#define MAX_STEPS 50 // the default time limit; --env-arg STEPS changes it
#define STEP_COST 0.01f

typedef struct {
    int cell;
    int steps;     // since the last reset
    int max_steps; // the time limit
    uint64_t rng;  // the plugin's own generator: volley seeds it
} corridor_t;

/* splitmix64: small, good enough to pick a start cell. */
static uint64_t s_next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void s_observe(const corridor_t *self, float *obs)
{
    for (int i = 0; i < CELLS; i++)
        obs[i] = i == self->cell ? 1.0f : 0.0f;
}

/* arg is --env-arg's text or NULL; bad text fails the create (NULL). */
static void *s_create(const char *arg)
{
    long max_steps = MAX_STEPS;
    if (arg) {
        char *end;
        max_steps = strtol(arg, &end, 10);
        if (*arg == '\0' || *end != '\0' || max_steps < 1 || max_steps > 100000)
            return NULL;
    }
    corridor_t *self = calloc(1, sizeof *self);
    if (self)
        self->max_steps = (int)max_steps;
    return self;
}

static void s_destroy(void *env)
{
    free(env);
}

static void s_seed(void *env, uint64_t seed)
{
    ((corridor_t *)env)->rng = seed;
}

static void s_reset(void *env, float *obs)
{
    corridor_t *self = env;
    self->cell = (int)(s_next_random(&self->rng) % (CELLS - 1));
    self->steps = 0;
    s_observe(self, obs);
}

/* Action 0 moves left (a wall at cell 0), 1 moves right. */
static float s_step(void *env, const float *actions, float *obs, int *terminated, int *truncated)
{
    int32_t action = (int32_t)actions[0];
    corridor_t *self = env;
    if (action == 1)
        self->cell++;
    else if (self->cell > 0)
        self->cell--;
    self->steps++;
    *terminated = self->cell == CELLS - 1;
    *truncated = !*terminated && self->steps >= self->max_steps;
    s_observe(self, obs);
    return *terminated ? 1.0f : -STEP_COST;
}

/* The one symbol volley looks for. */
const vl_env_t volley_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "corridor",
    .summary = "walk right to the end of an 8-cell corridor within 50 steps",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {CELLS}, .low = 0, .high = 1}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {2}},
    .has_solved_return = 1,
    .solved_return = 0.95f, // the best policy averages about 0.97
    .create = s_create,
    .destroy = s_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};
