/*  vl_memory: remember a cue through a delay and name it when asked (the
    layout, timing and rewards are in vl_memory.h). The state is the cue and
    a clock; nothing the agent does before the query changes either. */
#include "vl_memory.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "vl_builtin.h"

#define S_QUERY_AT (VL_MEMORY_DELAY + 1) // the clock's value on the query observation
#define S_STR(x)   #x
#define S_XSTR(x)  S_STR(x)
#define S_SUMMARY                                                                                  \
    "which of " S_XSTR(VL_MEMORY_CUES) " cues opened the episode, asked after " S_XSTR(            \
        VL_MEMORY_DELAY) " blank steps: needs memory, an MLP scores chance "                       \
                         "(solved: mean return >= 0.95)"

typedef struct {
    vl_rng_t rng;   // draws the cue
    int cue;        // 0 .. VL_MEMORY_CUES - 1
    uint32_t clock; // the observation shown: 0 the cue, 1 .. DELAY blank, DELAY + 1 the query
    int ended;      // answered; further steps pay 0
} memory_t;

/* Returns a new state seeded with 0, or NULL on no memory; arg is unused. */
static void *s_create(const char *arg)
{
    (void)arg;
    return vl_builtin_new(sizeof(memory_t), offsetof(memory_t, rng));
}

/* Seeds the RNG the next reset draws its cue from. */
static void s_seed(void *state, uint64_t seed)
{
    vl_builtin_seed(state, offsetof(memory_t, rng), seed);
}

/* Writes the observation the clock stands at: the cue, a blank, the query,
   or all 0 once answered. */
static void s_observe(const memory_t *self, float *obs)
{
    memset(obs, 0, VL_MEMORY_OBS_DIM * sizeof(*obs));
    if (self->ended)
        return;
    if (self->clock == 0)
        obs[self->cue] = 1;
    else if (self->clock < S_QUERY_AT)
        obs[VL_MEMORY_OBS_BLANK] = 1;
    else
        obs[VL_MEMORY_OBS_QUERY] = 1;
}

/* Draws a cue uniformly and shows it. */
static void s_reset(void *state, float *obs)
{
    memory_t *self = state;
    self->cue = (int)vl_rng_below(&self->rng, VL_MEMORY_CUES);
    self->clock = 0;
    self->ended = 0;
    s_observe(self, obs);
}

/* Returns 1 when choice names cue: its whole part is the cue. The caller
   checks the action; anything else (NaN, out of range) is a wrong answer,
   compared without converting it to an integer. */
static int s_names(float choice, int cue)
{
    return choice >= (float)cue && choice < (float)(cue + 1);
}

/* On the query observation the action is the answer: pays +1 or -1 and
   terminates. Before it, moves the clock on and pays 0, whatever the
   action. After it (no reset), pays 0 and terminates again. Never
   truncates: every episode ends by its answer. */
static float s_step(void *state, const float *action, float *obs, int *terminated, int *truncated)
{
    memory_t *self = state;
    float reward = 0;
    if (!self->ended && self->clock == S_QUERY_AT) {
        self->ended = 1;
        reward = s_names(action[0], self->cue) ? VL_MEMORY_RIGHT : VL_MEMORY_WRONG;
    } else if (!self->ended) {
        self->clock++;
    }
    *terminated = self->ended;
    *truncated = 0;
    s_observe(self, obs);
    return reward;
}

const vl_env_t vl_memory_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "memory",
    .summary = S_SUMMARY,
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32,
                .ndim = 1,
                .shape = {VL_MEMORY_OBS_DIM},
                .low = 0.0f,
                .high = 1.0f}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {VL_MEMORY_CUES}},
    .has_solved_return = 1,
    .solved_return = 0.95f,
    .create = s_create,
    .destroy = vl_builtin_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};
