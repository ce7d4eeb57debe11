/*  vl_catch: a pixel game that exercises the packed observation encodings.
    Balls fall one row a step down a 16x16 screen of four gray levels; a
    paddle on the bottom row moves to catch them, +1 a catch, -1 a miss, ten
    balls an episode. The screen travels as u2, a few flags as u1 (a
    thermometer of balls landed, which side of the paddle the ball is on, a
    one-hot of the ball's column), and two positions as f32. The side flags
    make the task easy for volley's MLP (without them PPO stalls at a mean
    return of 4 to 8 on some seeds): the point is to check the encodings end
    to end, not to set a hard problem.

    catch-pixels is the same game (one implementation: the state says which
    observation to write) seen through the screen alone, as one u2 image
    field [1][16][16], channels first: no flags, no positions, so a policy
    has to read the ball and the paddle off the pixels, and volley's default
    model for it is a CNN. */
#include "vl_catch.h"
#include "vl_env.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"

#define S_MAX_STEPS  1000 // safety limit; an episode takes 10 * 15 steps
#define S_BALL_MIN   1    // columns a ball appears in: inside the walls
#define S_BALL_MAX   (VL_CATCH_COLS - 2)
#define S_HALF       (VL_CATCH_PADDLE / 2)
#define S_PADDLE_MIN (S_BALL_MIN + S_HALF) // paddle centre, clamped inside the walls
#define S_PADDLE_MAX (S_BALL_MAX - S_HALF)
#define S_BOTTOM     (VL_CATCH_ROWS - 1) // the paddle's row

typedef struct {
    vl_rng_t rng;   // draws the ball columns
    int ball_row;   // 0 .. S_BOTTOM - 1, or -1 when no ball is falling
    int ball_col;   // S_BALL_MIN .. S_BALL_MAX
    int paddle;     // centre column, S_PADDLE_MIN .. S_PADDLE_MAX
    int balls;      // balls landed this episode
    uint32_t steps; // steps since the last reset, for the safety limit
    int pixels;     // 1: the observation is the screen alone (catch-pixels)
} catch_t;

/* Returns a new state seeded with 0 that writes the screen alone when
   pixels is 1, or NULL on no memory. */
static catch_t *s_new(int pixels)
{
    catch_t *self = calloc(1, sizeof(*self));
    if (self) {
        vl_rng_seed(&self->rng, 0);
        self->pixels = pixels;
    }
    return self;
}

/* Returns a new catch state, or NULL on no memory; arg is unused. */
static void *s_create(const char *arg)
{
    (void)arg;
    return s_new(0);
}

/* Returns a new catch-pixels state, or NULL on no memory; arg is unused. */
static void *s_create_pixels(const char *arg)
{
    (void)arg;
    return s_new(1);
}

/* Frees the state; safe on NULL. */
static void s_destroy(void *state)
{
    free(state);
}

/* Seeds the RNG the next ball columns are drawn from. */
static void s_seed(void *state, uint64_t seed)
{
    vl_rng_seed(&((catch_t *)state)->rng, seed);
}

/* Puts a new ball on the top row in a random column inside the walls. */
static void s_drop_ball(catch_t *self)
{
    self->ball_row = 0;
    self->ball_col = S_BALL_MIN + (int)vl_rng_below(&self->rng, S_BALL_MAX - S_BALL_MIN + 1);
}

/* Draws the screen: walls left and right, the paddle, the ball on top. */
static void s_draw_screen(const catch_t *self, float *screen)
{
    memset(screen, 0, VL_CATCH_ROWS * VL_CATCH_COLS * sizeof(*screen));
    for (int r = 0; r < VL_CATCH_ROWS; r++) {
        screen[r * VL_CATCH_COLS] = VL_CATCH_WALL;
        screen[r * VL_CATCH_COLS + VL_CATCH_COLS - 1] = VL_CATCH_WALL;
    }
    for (int c = self->paddle - S_HALF; c <= self->paddle + S_HALF; c++)
        screen[S_BOTTOM * VL_CATCH_COLS + c] = VL_CATCH_BAT;
    if (self->ball_row >= 0)
        screen[self->ball_row * VL_CATCH_COLS + self->ball_col] = VL_CATCH_BALL;
}

/* Returns 0, 1 or 2 when the ball is left of, at or right of the paddle's
   centre: the flag that says which way to move. */
static int s_side(const catch_t *self)
{
    return 1 + (self->ball_col > self->paddle) - (self->ball_col < self->paddle);
}

/* Writes the whole observation: screen, flags, then the two floats; the
   screen alone for catch-pixels. */
static void s_observe(const catch_t *self, float *obs)
{
    s_draw_screen(self, obs);
    if (self->pixels)
        return;
    float *flags = obs + VL_CATCH_OFF_FLAGS;
    memset(flags, 0, VL_CATCH_FLAGS * sizeof(*flags));
    for (int i = 0; i < self->balls; i++)
        flags[VL_CATCH_FLAG_LANDED + i] = 1;
    if (self->ball_row >= 0) {
        flags[VL_CATCH_FLAG_SIDE + s_side(self)] = 1;
        flags[VL_CATCH_FLAG_COLUMN + self->ball_col] = 1;
    }
    obs[VL_CATCH_OFF_F32] = self->ball_row >= 0 ? (float)self->ball_row / VL_CATCH_ROWS : 0;
    obs[VL_CATCH_OFF_F32 + 1] = (float)self->paddle / VL_CATCH_COLS;
}

/* Starts an episode: paddle in the middle, the first ball on top. */
static void s_reset(void *state, float *obs)
{
    catch_t *self = state;
    self->paddle = VL_CATCH_COLS / 2;
    self->balls = 0;
    self->steps = 0;
    s_drop_ball(self);
    s_observe(self, obs);
}

/* Moves the paddle one column (left, stay, right), clamped to the walls. */
static void s_move_paddle(catch_t *self, int32_t action)
{
    int p = self->paddle + (action == VL_CATCH_LEFT ? -1 : action == VL_CATCH_RIGHT ? 1 : 0);
    self->paddle = p < S_PADDLE_MIN ? S_PADDLE_MIN : p > S_PADDLE_MAX ? S_PADDLE_MAX : p;
}

/* Moves the paddle, then the ball down a row. A ball reaching the paddle's
   row pays +1 if it lands on the paddle, -1 if not, and the next ball
   appears on top, unless that was the last ball: then the episode ends and
   the screen shows no ball. Steps after the end pay 0 and end again. */
static float s_step(void *state, const float *actions, float *obs, int *terminated,
                    int *truncated)
{
    int32_t action = (int32_t)actions[0];
    catch_t *self = state;
    float reward = 0;
    if (self->ball_row >= 0) {
        s_move_paddle(self, action);
        if (++self->ball_row == S_BOTTOM) {
            int caught = abs(self->ball_col - self->paddle) <= S_HALF;
            reward = caught ? 1.0f : -1.0f;
            self->balls++;
            self->ball_row = -1;
            if (self->balls < VL_CATCH_BALLS)
                s_drop_ball(self);
        }
    }
    self->steps++;
    *terminated = self->balls >= VL_CATCH_BALLS;
    *truncated = self->steps >= S_MAX_STEPS;
    s_observe(self, obs);
    return reward;
}

const vl_env_t vl_catch_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "catch",
    .summary = "Catch: 16x16 2-bit screen + 32 flags; catch 10 falling balls "
               "(solved: mean return >= 9)",
    .n_fields = 3,
    .fields = {{.encoding = VL_ENV_U2, .ndim = 2, .shape = {VL_CATCH_ROWS, VL_CATCH_COLS}},
               {.encoding = VL_ENV_U1, .ndim = 1, .shape = {VL_CATCH_FLAGS}},
               {.encoding = VL_ENV_F32, .ndim = 1, .shape = {2}, .low = 0.0f, .high = 1.0f}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {3}},
    .has_solved_return = 1,
    .solved_return = 9.0f,
    .create = s_create,
    .destroy = s_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};

const vl_env_t vl_catch_pixels_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "catch-pixels",
    .summary = "Catch from pixels: the 1x16x16 2-bit screen alone, channels first "
               "(solved: mean return >= 9)",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_U2, .ndim = 3, .shape = {1, VL_CATCH_ROWS, VL_CATCH_COLS}}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {3}},
    .has_solved_return = 1,
    .solved_return = 9.0f,
    .create = s_create_pixels,
    .destroy = s_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};
