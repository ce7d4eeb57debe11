/*  vl_cartpole: CartPole-v1 exactly as Gymnasium defines it (classic_control/
    cartpole.py under the TimeLimit of 500 steps): Euler integration in double,
    observations handed out as float, as Gymnasium keeps float64 state and
    returns float32. "Exactly" means bit for bit: every expression is
    evaluated in the order Gymnasium's source writes it (Python evaluates
    left to right; np.square(x) is x * x on its own), and this file must be
    compiled without contracting a * b + c into an fma (-ffp-contract=off,
    which CMake sets on it), else the float64 state drifts in its last bits
    from the first step.

    cartpole-masked is the same env (one implementation: the state says
    which observation to write) observed through (x, theta) alone, the two
    velocities removed, as in the partially observable CartPole of the
    recurrent-policy literature: one observation no longer tells which way
    the pole is moving, so a policy has to infer the velocities from the
    observations before it (a memory, or a stack of frames). */
#include "vl_cartpole.h"
#include "vl_env.h"

#include <math.h>
#include <stdlib.h>

#include "../common/vl_rng.h"

#define S_GRAVITY         9.8
#define S_MASSCART        1.0
#define S_MASSPOLE        0.1
#define S_TOTAL_MASS      (S_MASSPOLE + S_MASSCART)
#define S_LENGTH          0.5 // half the pole's length
#define S_POLEMASS_LENGTH (S_MASSPOLE * S_LENGTH)
#define S_FORCE_MAG       10.0
#define S_TAU             0.02 // seconds between state updates
// 12 degrees, written as Gymnasium writes it so the double is the same
#define S_THETA_LIMIT (12 * 2 * 3.14159265358979323846 / 360)
#define S_X_LIMIT     2.4
#define S_MAX_STEPS   500 // gymnasium.register(max_episode_steps=500)
#define S_RESET_BOUND 0.05

typedef struct {
    double s[4];    // x, x_dot, theta, theta_dot
    vl_rng_t rng;   // draws the reset state
    uint32_t steps; // steps since the last reset, for the time limit
    int terminated; // the pole fell or the cart left; further steps pay 0
    int masked;     // 1: the observation is (x, theta) alone (cartpole-masked)
} cartpole_t;

/* Returns a new state seeded with 0 that observes (x, theta) alone when
   masked is 1, or NULL on no memory. */
static cartpole_t *s_new(int masked)
{
    cartpole_t *self = calloc(1, sizeof(*self));
    if (self) {
        vl_rng_seed(&self->rng, 0);
        self->masked = masked;
    }
    return self;
}

/* Returns a new cartpole state, or NULL on no memory; arg is unused. */
static void *s_create(const char *arg)
{
    (void)arg;
    return s_new(0);
}

/* Returns a new cartpole-masked state, or NULL on no memory; arg is unused. */
static void *s_create_masked(const char *arg)
{
    (void)arg;
    return s_new(1);
}

/* Frees the state; safe on NULL. */
static void s_destroy(void *state)
{
    free(state);
}

/* Seeds the RNG the next reset draws from. */
static void s_seed(void *state, uint64_t seed)
{
    vl_rng_seed(&((cartpole_t *)state)->rng, seed);
}

/* Writes the state as the float observation; (x, theta) alone when masked. */
static void s_observe(const cartpole_t *self, float *obs)
{
    if (self->masked) {
        obs[0] = (float)self->s[0];
        obs[1] = (float)self->s[2];
        return;
    }
    for (int i = 0; i < 4; i++)
        obs[i] = (float)self->s[i];
}

/* Each variable uniform in [-0.05, 0.05), as np_random.uniform draws it. */
static void s_reset(void *state, float *obs)
{
    cartpole_t *self = state;
    for (int i = 0; i < 4; i++)
        self->s[i] = -S_RESET_BOUND + 2 * S_RESET_BOUND * vl_rng_uniform(&self->rng);
    self->steps = 0;
    self->terminated = 0;
    s_observe(self, obs);
}

/* Returns x * x: np.square, rounded once on its own before it meets any
   other factor. */
static double s_square(double x)
{
    return x * x;
}

/* One Euler step of the cart-pole dynamics, term for term as Gymnasium's
   step() writes it:
     temp = (force + polemass_length * np.square(theta_dot) * sintheta) / total_mass
     thetaacc = (gravity * sintheta - costheta * temp) / (length * (4.0 / 3.0
                - masspole * np.square(costheta) / total_mass))
     xacc = temp - polemass_length * thetaacc * costheta / total_mass
   Position updates use the old velocities ("euler" integrator). */
static void s_integrate(double s[4], int32_t action)
{
    double x = s[0], x_dot = s[1], theta = s[2], theta_dot = s[3];
    double force = action == 1 ? S_FORCE_MAG : -S_FORCE_MAG;
    double costheta = cos(theta), sintheta = sin(theta);
    double temp = (force + S_POLEMASS_LENGTH * s_square(theta_dot) * sintheta) / S_TOTAL_MASS;
    double thetaacc = (S_GRAVITY * sintheta - costheta * temp) /
                      (S_LENGTH * (4.0 / 3.0 - S_MASSPOLE * s_square(costheta) / S_TOTAL_MASS));
    double xacc = temp - S_POLEMASS_LENGTH * thetaacc * costheta / S_TOTAL_MASS;
    s[0] = x + S_TAU * x_dot;
    s[1] = x_dot + S_TAU * xacc;
    s[2] = theta + S_TAU * theta_dot;
    s[3] = theta_dot + S_TAU * thetaacc;
}

/* Reward 1 on every step, the terminating one included; 0 on steps taken
   after termination without a reset (Gymnasium warns and pays 0 there). */
static float s_step(void *state, const float *actions, float *obs, int *terminated,
                    int *truncated)
{
    int32_t action = (int32_t)actions[0];
    cartpole_t *self = state;
    float reward = self->terminated ? 0.0f : 1.0f;
    s_integrate(self->s, action);
    double x = self->s[0], theta = self->s[2];
    int ended = x < -S_X_LIMIT || x > S_X_LIMIT || theta < -S_THETA_LIMIT || theta > S_THETA_LIMIT;
    self->terminated |= ended;
    self->steps++;
    *terminated = ended;
    *truncated = self->steps >= S_MAX_STEPS;
    s_observe(self, obs);
    return reward;
}

void vl_cartpole_set_state(void *state, const double s[4])
{
    cartpole_t *self = state;
    for (int i = 0; i < 4; i++)
        self->s[i] = s[i];
    self->terminated = 0;
}

void vl_cartpole_get_state(const void *state, double s[4])
{
    const cartpole_t *self = state;
    for (int i = 0; i < 4; i++)
        s[i] = self->s[i];
}

const vl_env_t vl_cartpole_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "cartpole",
    .summary = "CartPole-v1 as Gymnasium defines it (solved: mean return >= 475)",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {4}}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {2}},
    .has_solved_return = 1,
    .solved_return = 475.0f,
    .create = s_create,
    .destroy = s_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};

const vl_env_t vl_cartpole_masked_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "cartpole-masked",
    .summary = "CartPole-v1 observing (x, theta) alone, no velocities: needs memory "
               "(solved: mean return >= 475)",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {2}}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {2}},
    .has_solved_return = 1,
    .solved_return = 475.0f,
    .create = s_create_masked,
    .destroy = s_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};
