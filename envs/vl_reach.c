/*  vl_reach: a small multi-discrete task. An agent on a 9x9 grid must reach
    a goal cell; each step it moves by (dx, dy), each of -1, 0, +1 chosen
    independently (a diagonal move needs both dimensions), and a move off the
    grid stops at its edge on that axis. Reaching the goal pays +1 and ends
    the episode (terminated); every other step pays -0.05; 50 steps truncate
    it. The shortest path is the Chebyshev distance, so a policy has to use
    both dimensions together to be optimal, and "solved" (a mean return of
    0.8) means within less than one wasted step per episode of the optimum,
    0.839 over random starts: a random policy, which mostly runs out of
    time, stays far below. */
#include "vl_reach.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "../common/vl_rng.h"
#include "vl_builtin.h"

#define S_LAST  (VL_REACH_SIZE - 1) // the last column and row
#define S_CELLS (VL_REACH_SIZE * VL_REACH_SIZE)

typedef struct {
    int ax, ay;     // the agent's column and row
    int gx, gy;     // the goal's
    vl_rng_t rng;   // draws the start and the goal
    uint32_t steps; // steps since the last reset, for the time limit
    int ended;      // the goal was reached; further steps pay 0
} reach_t;

/* Returns a new state seeded with 0, or NULL on no memory; arg is unused. */
static void *s_create(const char *arg)
{
    (void)arg;
    return vl_builtin_new(sizeof(reach_t), offsetof(reach_t, rng));
}

/* Seeds the RNG the next reset draws from. */
static void s_seed(void *state, uint64_t seed)
{
    vl_builtin_seed(state, offsetof(reach_t, rng), seed);
}

/* Writes the agent's and the goal's cells, each coordinate scaled to [0, 1]. */
static void s_observe(const reach_t *self, float *obs)
{
    obs[0] = (float)self->ax / S_LAST;
    obs[1] = (float)self->ay / S_LAST;
    obs[2] = (float)self->gx / S_LAST;
    obs[3] = (float)self->gy / S_LAST;
}

/* Draws the agent's cell and a different goal cell, uniformly: every one of
   the 81 * 80 pairs is equally likely. */
static void s_reset(void *state, float *obs)
{
    reach_t *self = state;
    int start = (int)vl_rng_below(&self->rng, S_CELLS);
    int goal = (int)vl_rng_below(&self->rng, S_CELLS - 1);
    goal += goal >= start; // skip the start's cell
    self->ax = start % VL_REACH_SIZE, self->ay = start / VL_REACH_SIZE;
    self->gx = goal % VL_REACH_SIZE, self->gy = goal / VL_REACH_SIZE;
    self->steps = 0;
    self->ended = 0;
    s_observe(self, obs);
}

/* Returns the move -1, 0 or +1 that choice 0, 1 or 2 of one dimension
   stands for. The caller checks the action; a value outside the choices
   is still read safely: truncated to a whole number and clamped, NaN as 0
   (no move). */
static int s_move(float choice)
{
    if (isnan(choice))
        return 0;
    return choice >= 2 ? 1 : choice >= 1 ? 0 : -1;
}

/* Returns v clamped to the grid's columns and rows. */
static int s_clamp(int v)
{
    return v < 0 ? 0 : v > S_LAST ? S_LAST : v;
}

/* Moves the agent by (dx, dy), each axis stopped at the grid's edge. Pays
   +1 and terminates when the agent lands on the goal, -0.05 otherwise;
   truncates at the 50th step since the reset. Steps after the goal was
   reached (without a reset) pay 0 and terminate again. */
static float s_step(void *state, const float *action, float *obs, int *terminated, int *truncated)
{
    reach_t *self = state;
    float reward = 0;
    if (!self->ended) {
        self->ax = s_clamp(self->ax + s_move(action[0]));
        self->ay = s_clamp(self->ay + s_move(action[1]));
        self->ended = self->ax == self->gx && self->ay == self->gy;
        reward = self->ended ? VL_REACH_GOAL : -VL_REACH_STEP_COST;
    }
    self->steps++;
    *terminated = self->ended;
    *truncated = self->steps >= VL_REACH_MAX_STEPS;
    s_observe(self, obs);
    return reward;
}

int vl_reach_set_state(void *state, const int s[4])
{
    reach_t *self = state;
    for (int i = 0; i < 4; i++)
        if (s[i] < 0 || s[i] > S_LAST)
            return -1;
    self->ax = s[0], self->ay = s[1], self->gx = s[2], self->gy = s[3];
    self->ended = 0;
    return 0;
}

void vl_reach_get_state(const void *state, int s[4])
{
    const reach_t *self = state;
    s[0] = self->ax, s[1] = self->ay, s[2] = self->gx, s[3] = self->gy;
}

const vl_env_t vl_reach_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "reach",
    .summary = "reach a goal on a 9x9 grid, moving (dx, dy) as two choices of 3 "
               "(solved: mean return >= 0.8, the optimum 0.839)",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {4}, .low = 0.0f, .high = 1.0f}},
    .action = {.kind = VL_ENV_MULTI_DISCRETE, .dims = 2, .n = {3, 3}},
    .has_solved_return = 1,
    .solved_return = 0.8f,
    .create = s_create,
    .destroy = vl_builtin_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};
