/*  vl_pendulum: Pendulum-v1 exactly as Gymnasium defines it (classic_control/
    pendulum.py under the TimeLimit of 200 steps): a pole hanging from a
    motor, swung up and held by a torque in [-2, 2]. The state (theta,
    theta_dot) is kept in double, as Gymnasium keeps float64 state, and
    handed out as float32 (cos theta, sin theta, theta_dot). The torque
    arrives as a float32, as an action of Gymnasium's float32 Box does, and
    NumPy 2 keeps an expression of a float32 and a Python float in float32
    (NEP 50): the two torque terms, 3 u and 0.001 u^2, are rounded to float
    as Gymnasium's are before they meet the float64 terms. Every expression
    is evaluated in the order Gymnasium's source writes it, and this file is
    compiled without contracting a * b + c into an fma (-ffp-contract=off). */
#include "vl_pendulum.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "../common/vl_rng.h"
#include "vl_builtin.h"

#define S_PI         3.141592653589793 // np.pi
#define S_G          10.0
#define S_M          1.0
#define S_L          1.0
#define S_DT         0.05 // seconds between state updates
#define S_MAX_SPEED  8.0  // theta_dot is clipped to [-8, 8] rad/s
#define S_MAX_TORQUE 2.0f // the action's bounds, clipped again in step
#define S_MAX_STEPS  200  // gymnasium.register(max_episode_steps=200)
#define S_RESET_TH   S_PI // reset draws theta in [-pi, pi), theta_dot in [-1, 1)
#define S_RESET_THD  1.0

typedef struct {
    double th, thdot; // angle from upright (rad) and angular velocity (rad/s)
    vl_rng_t rng;     // draws the reset state
    uint32_t steps;   // steps since the last reset, for the time limit
} pendulum_t;

/* Returns a new state seeded with 0, or NULL on no memory; arg is unused. */
static void *s_create(const char *arg)
{
    (void)arg;
    return vl_builtin_new(sizeof(pendulum_t), offsetof(pendulum_t, rng));
}

/* Seeds the RNG the next reset draws from. */
static void s_seed(void *state, uint64_t seed)
{
    vl_builtin_seed(state, offsetof(pendulum_t, rng), seed);
}

/* Writes (cos th, sin th, thdot) as floats, as _get_obs does. */
static void s_observe(const pendulum_t *self, float *obs)
{
    obs[0] = (float)cos(self->th);
    obs[1] = (float)sin(self->th);
    obs[2] = (float)self->thdot;
}

/* theta uniform in [-pi, pi), theta_dot in [-1, 1), as np_random.uniform
   draws them (low + (high - low) * u). */
static void s_reset(void *state, float *obs)
{
    pendulum_t *self = state;
    self->th = -S_RESET_TH + (S_RESET_TH - -S_RESET_TH) * vl_rng_uniform(&self->rng);
    self->thdot = -S_RESET_THD + (S_RESET_THD - -S_RESET_THD) * vl_rng_uniform(&self->rng);
    self->steps = 0;
    s_observe(self, obs);
}

/* Returns ((x + pi) mod 2 pi) - pi, the mod taking the divisor's sign as
   NumPy's does: the angle wrapped into [-pi, pi). */
static double s_angle_normalize(double x)
{
    double m = fmod(x + S_PI, 2 * S_PI);
    if (m != 0 && m < 0)
        m += 2 * S_PI;
    return m - S_PI;
}

/* Returns the torque x clipped to [-2, 2]; NaN becomes -2 (a torque that is
   not a number is no torque the caller meant: the env must stay finite). */
static float s_clip_torque(float x)
{
    return x >= S_MAX_TORQUE ? S_MAX_TORQUE : x > -S_MAX_TORQUE ? x : -S_MAX_TORQUE;
}

/* Returns v clipped to [-max_speed, max_speed], as np.clip does. */
static double s_clip_speed(double v)
{
    return v < -S_MAX_SPEED ? -S_MAX_SPEED : v > S_MAX_SPEED ? S_MAX_SPEED : v;
}

/* Pays -(angle_normalize(th)^2 + 0.1 thdot^2 + 0.001 u^2) for the state
   before the step, then integrates term for term as Gymnasium's step()
   writes it:
     newthdot = thdot + (3 * g / (2 * l) * np.sin(th) + 3.0 / (m * l**2) * u) * dt
     newth = th + newthdot * dt
   Never terminates; truncates at the 200th step since the reset. */
static float s_step(void *state, const float *action, float *obs, int *terminated, int *truncated)
{
    pendulum_t *self = state;
    double th = self->th, thdot = self->thdot;
    float u = s_clip_torque(action[0]);
    double an = s_angle_normalize(th);
    float u_cost = 0.001f * (u * u); // float32, as NumPy 2 computes it
    double costs = an * an + 0.1 * (thdot * thdot) + (double)u_cost;
    float torque = (float)(3.0 / (S_M * (S_L * S_L))) * u; // float32 again
    double newthdot = thdot + (3 * S_G / (2 * S_L) * sin(th) + (double)torque) * S_DT;
    newthdot = s_clip_speed(newthdot);
    self->th = th + newthdot * S_DT;
    self->thdot = newthdot;
    self->steps++;
    *terminated = 0;
    *truncated = self->steps >= S_MAX_STEPS;
    s_observe(self, obs);
    return (float)-costs;
}

void vl_pendulum_set_state(void *state, const double s[2])
{
    pendulum_t *self = state;
    self->th = s[0];
    self->thdot = s[1];
}

void vl_pendulum_get_state(const void *state, double s[2])
{
    const pendulum_t *self = state;
    s[0] = self->th;
    s[1] = self->thdot;
}

const vl_env_t vl_pendulum_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "pendulum",
    .summary =
        "Pendulum-v1 as Gymnasium defines it, a torque in [-2, 2] (solved: mean return >= -250)",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {3}, .low = -8.0f, .high = 8.0f}},
    .action = {.kind = VL_ENV_BOX, .dims = 1, .low = {-2.0f}, .high = {2.0f}},
    .has_solved_return = 1,
    .solved_return = -250.0f,
    .create = s_create,
    .destroy = vl_builtin_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};
