/*  vl_abort_env: a plugin that ends its process on request, built by
    tests/up_errors_test.sh with docs/envs.md's line, for the reports of
    `volley up` on a child that died. It is the corridor (8 cells, walk
    right, +1 at the end, -0.01 a step, 50 steps' time limit).

    --env-arg close: destroy calls abort() (SIGABRT), as a plugin whose
    cleanup is broken does when its actor stops at the end of a run.
    --env-arg after=SECONDS: step calls abort() once SECONDS have passed
    since create, after the actor has sent some segments.
    Any other text makes create fail, naming what it reads, as PufferLib's
    Ocean envs do for a key no init reads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <volley/env.h>

#define CELLS     8
#define MAX_STEPS 50

typedef struct {
    int cell, steps;
    uint64_t rng;
    int abort_in_destroy;
    double abort_at; // monotonic seconds at which step aborts; 0: never
} s_corridor_t;

/* Returns the monotonic clock in seconds. */
static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void s_observe(const s_corridor_t *self, float *obs)
{
    for (int i = 0; i < CELLS; i++)
        obs[i] = i == self->cell ? 1.0f : 0.0f;
}

static void *s_create(const char *arg)
{
    double after = 0;
    int in_destroy = arg && strcmp(arg, "close") == 0;
    if (arg && !in_destroy && (sscanf(arg, "after=%lf", &after) != 1 || after <= 0)) {
        fprintf(stderr, "abort: --env-arg '%s' is unknown; it reads: close, after=SECONDS\n", arg);
        return NULL;
    }
    s_corridor_t *self = calloc(1, sizeof *self);
    if (self) {
        self->abort_in_destroy = in_destroy;
        self->abort_at = after > 0 ? s_now() + after : 0;
    }
    return self;
}

static void s_destroy(void *env)
{
    s_corridor_t *self = env;
    if (self && self->abort_in_destroy) {
        fprintf(stderr, "abort: destroy aborts, as asked (--env-arg close)\n");
        abort();
    }
    free(self);
}

static void s_seed(void *env, uint64_t seed)
{
    ((s_corridor_t *)env)->rng = seed;
}

static void s_reset(void *env, float *obs)
{
    s_corridor_t *self = env;
    self->rng = self->rng * 6364136223846793005ull + 1442695040888963407ull;
    self->cell = (int)((self->rng >> 33) % (CELLS - 1));
    self->steps = 0;
    s_observe(self, obs);
}

static float s_step(void *env, const float *actions, float *obs, int *terminated, int *truncated)
{
    s_corridor_t *self = env;
    if (self->abort_at > 0 && s_now() >= self->abort_at) {
        fprintf(stderr, "abort: step aborts, as asked (--env-arg after=SECONDS)\n");
        abort();
    }
    self->cell += actions[0] == 1.0f ? 1 : self->cell > 0 ? -1 : 0;
    *terminated = self->cell == CELLS - 1;
    *truncated = !*terminated && ++self->steps >= MAX_STEPS;
    s_observe(self, obs);
    return *terminated ? 1.0f : -0.01f;
}

const vl_env_t volley_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "abort",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {CELLS}, .low = 0, .high = 1}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {2}},
    .create = s_create,
    .destroy = s_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};
