/*  vl_cartpole_test: CartPole-v1's dynamics, resets, endings and lookup
    against Gymnasium's definition. */
#include "vl_cartpole.h"
#include "vl_env.h"

#include <math.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_TOL 1e-6

/* Steps a CartPole state with a choice, 0 (push left) or 1 (push right),
   passed as env ABI 2 passes a discrete action: one float. */
static float s_step(void *env, int action, float *obs, int *term, int *trunc)
{
    float a = (float)action;
    return vl_cartpole_env.step(env, &a, obs, term, trunc);
}

/* Gymnasium's Euler step, written the other way round from the code under
   test: the equations of motion of Florian's note, then the integrator. */
static void s_reference_step(const double s[4], int action, double out[4])
{
    double g = 9.8, m_cart = 1.0, m_pole = 0.1, half_len = 0.5, dt = 0.02;
    double f = action ? 10.0 : -10.0, m = m_cart + m_pole;
    double sn = sin(s[2]), cs = cos(s[2]), w = s[3];
    double theta_acc = (g * sn + cs * (-f - m_pole * half_len * w * w * sn) / m) /
                       (half_len * (4.0 / 3.0 - m_pole * cs * cs / m));
    double x_acc = (f + m_pole * half_len * (w * w * sn - theta_acc * cs)) / m;
    out[0] = s[0] + dt * s[1];
    out[1] = s[1] + dt * x_acc;
    out[2] = s[2] + dt * s[3];
    out[3] = s[3] + dt * theta_acc;
}

/* Steps env once from s with action; checks the new state and observation
   against want and the reference step, and that the episode goes on. */
static int s_check_step(const double s[4], int action, const double want[4])
{
    const vl_env_t *table = &vl_cartpole_env;
    void *env = table->create(NULL);
    double got[4], ref[4];
    float obs[4];
    int term = -1, trunc = -1, ok = env != NULL;
    if (!ok)
        return 0;
    vl_cartpole_set_state(env, s);
    float reward = s_step(env, action, obs, &term, &trunc);
    vl_cartpole_get_state(env, got);
    s_reference_step(s, action, ref);
    for (int i = 0; i < 4; i++) {
        ok &= fabs(got[i] - want[i]) <= S_TOL && fabs(got[i] - ref[i]) <= S_TOL;
        ok &= obs[i] == (float)got[i];
    }
    ok &= reward == 1.0f && term == 0 && trunc == 0;
    table->destroy(env);
    return ok;
}

/* Expected states printed by Gymnasium's formulas in Python (float64). */
static void test_step_upright_pole(void)
{
    double s[4] = {0, 0, 0.05, 0};
    double left[4] = {0, -0.19580204225688186, 0.05, 0.30802988680046994};
    double right[4] = {0, 0.19437054660530101, 0.05, -0.27649757528715507};
    VL_CHECK(s_check_step(s, 0, left));
    VL_CHECK(s_check_step(s, 1, right));
}

static void test_step_moving_cart(void)
{
    double s[4] = {0.1, -0.2, 0.03, 0.4};
    double left[4] = {0.096, -0.3955343820057583, 0.038, 0.7019882742589485};
    double right[4] = {0.096, -0.0053161691554136636, 0.038, 0.11692433252290102};
    VL_CHECK(s_check_step(s, 0, left));
    VL_CHECK(s_check_step(s, 1, right));
}

/* Positions move by the old velocities: one step from rest leaves x and
   theta unchanged even though the accelerations are not zero. */
static void test_step_euler_order(void)
{
    const vl_env_t *table = &vl_cartpole_env;
    void *env = table->create(NULL);
    double s[4] = {0.5, 0, -0.1, 0}, got[4];
    float obs[4];
    int term, trunc;
    VL_CHECK(env);
    vl_cartpole_set_state(env, s);
    s_step(env, 1, obs, &term, &trunc);
    vl_cartpole_get_state(env, got);
    table->destroy(env);
    VL_CHECK(got[0] == 0.5 && got[2] == -0.1);
    VL_CHECK(got[1] > 0.1 && got[3] != 0);
}

/* Resets n times into obs[n][4], checking each draw lies in [-0.05, 0.05). */
static int s_resets(void *env, int n, float obs[][4])
{
    double s[4];
    for (int k = 0; k < n; k++) {
        vl_cartpole_env.reset(env, obs[k]);
        vl_cartpole_get_state(env, s);
        for (int i = 0; i < 4; i++)
            if (!(s[i] >= -0.05 && s[i] < 0.05) || obs[k][i] != (float)s[i])
                return -1;
    }
    return 0;
}

static void test_reset_range_and_seeds(void)
{
    const vl_env_t *table = &vl_cartpole_env;
    void *a = table->create(NULL), *b = table->create(NULL), *c = table->create(NULL);
    float oa[200][4], ob[200][4], oc[200][4];
    int ok = a && b && c;
    if (ok) {
        table->seed(a, 7);
        table->seed(b, 7);
        table->seed(c, 8);
        ok = s_resets(a, 200, oa) == 0 && s_resets(b, 200, ob) == 0 && s_resets(c, 200, oc) == 0;
    }
    table->destroy(a);
    table->destroy(b);
    table->destroy(c);
    VL_CHECK(ok);
    VL_CHECK(memcmp(oa, ob, sizeof(oa)) == 0);
    VL_CHECK(memcmp(oa, oc, sizeof(oa)) != 0);
    VL_CHECK(memcmp(oa[0], oa[1], sizeof(oa[0])) != 0);
    float lo = 1, hi = -1; // 800 draws cover the whole interval
    for (int k = 0; k < 200; k++)
        for (int i = 0; i < 4; i++) {
            lo = oa[k][i] < lo ? oa[k][i] : lo;
            hi = oa[k][i] > hi ? oa[k][i] : hi;
        }
    VL_CHECK(lo < -0.045f && hi > 0.045f);
}

/* The unseeded state is seeded with 0, so runs reproduce without a seed. */
static void test_reset_unseeded_is_seed_zero(void)
{
    const vl_env_t *table = &vl_cartpole_env;
    void *a = table->create(NULL), *b = table->create(NULL);
    float oa[3][4], ob[3][4];
    int ok = a && b;
    if (ok) {
        table->seed(b, 0);
        ok = s_resets(a, 3, oa) == 0 && s_resets(b, 3, ob) == 0;
    }
    table->destroy(a);
    table->destroy(b);
    VL_CHECK(ok);
    VL_CHECK(memcmp(oa, ob, sizeof(oa)) == 0);
}

/* Sets s, steps with action and returns terminated, or -1 when the step
   paid a reward other than 1 or set truncated. */
static int s_terminates(const double s[4], int action)
{
    const vl_env_t *table = &vl_cartpole_env;
    void *env = table->create(NULL);
    float obs[4];
    int term = -1, trunc = -1;
    if (!env)
        return -1;
    table->reset(env, obs);
    vl_cartpole_set_state(env, s);
    float reward = s_step(env, action, obs, &term, &trunc);
    table->destroy(env);
    return reward == 1.0f && trunc == 0 ? term : -1;
}

static void test_terminate_cart_position(void)
{
    double right_out[4] = {2.39, 1.0, 0, 0}, right_in[4] = {2.39, 0, 0, 0};
    double left_out[4] = {-2.39, -1.0, 0, 0}, left_in[4] = {-2.39, 0, 0, 0};
    double on_edge[4] = {2.4, 0, 0, 0}; // x > 2.4 ends it, x == 2.4 does not
    VL_CHECK(s_terminates(right_out, 1) == 1);
    VL_CHECK(s_terminates(right_in, 1) == 0);
    VL_CHECK(s_terminates(left_out, 0) == 1);
    VL_CHECK(s_terminates(left_in, 0) == 0);
    VL_CHECK(s_terminates(on_edge, 1) == 0);
}

static void test_terminate_pole_angle(void)
{
    double limit = 12 * 2 * 3.14159265358979323846 / 360; // 0.2094 rad
    double fwd_out[4] = {0, 0, 0.2, 1.0}, fwd_in[4] = {0, 0, 0.2, 0};
    double back_out[4] = {0, 0, -0.2, -1.0}, back_in[4] = {0, 0, -0.2, 0};
    double past[4] = {0, 0, limit + 1e-9, 0}, at[4] = {0, 0, -limit, 0};
    VL_CHECK(s_terminates(fwd_out, 0) == 1);
    VL_CHECK(s_terminates(fwd_in, 0) == 0);
    VL_CHECK(s_terminates(back_out, 1) == 1);
    VL_CHECK(s_terminates(back_in, 1) == 0);
    VL_CHECK(s_terminates(past, 1) == 1);
    VL_CHECK(s_terminates(at, 0) == 0);
}

/* Gymnasium pays 1 on the terminating step and 0 on steps taken after it,
   until a reset (or, here, a new state) starts over. */
static void test_reward_after_termination(void)
{
    const vl_env_t *table = &vl_cartpole_env;
    void *env = table->create(NULL);
    double edge[4] = {2.39, 1.0, 0, 0}, rest[4] = {0, 0, 0, 0};
    float obs[4], r1, r2, r3, r4;
    int t1, t2, t3, t4, trunc;
    VL_CHECK(env);
    table->reset(env, obs);
    vl_cartpole_set_state(env, edge);
    r1 = s_step(env, 1, obs, &t1, &trunc);
    r2 = s_step(env, 1, obs, &t2, &trunc);
    table->reset(env, obs);
    r3 = s_step(env, 1, obs, &t3, &trunc);
    vl_cartpole_set_state(env, edge);
    s_step(env, 1, obs, &t4, &trunc);
    vl_cartpole_set_state(env, rest);
    r4 = s_step(env, 1, obs, &t4, &trunc);
    table->destroy(env);
    VL_CHECK(r1 == 1.0f && t1 == 1);
    VL_CHECK(r2 == 0.0f && t2 == 1);
    VL_CHECK(r3 == 1.0f && t3 == 0);
    VL_CHECK(r4 == 1.0f && t4 == 0);
}

/* A linear controller that holds the pole up for 500 steps from any reset. */
static int s_balance(const float obs[4])
{
    return obs[2] + 0.5f * obs[3] + 0.01f * obs[0] + 0.1f * obs[1] > 0;
}

/* Runs up to n steps under s_balance; returns the number of the step that
   ended the episode (n when none did), or -1 on a reward other than 1.
   Leaves the flags of the last step in *term and *trunc. */
static int s_run(void *env, float obs[4], int n, int *term, int *trunc)
{
    for (int t = 1; t <= n; t++) {
        if (s_step(env, s_balance(obs), obs, term, trunc) != 1.0f)
            return -1;
        if (*term || *trunc)
            return t;
    }
    return n;
}

static void test_truncate_at_500(void)
{
    const vl_env_t *table = &vl_cartpole_env;
    void *env = table->create(NULL);
    float obs[4];
    int term = -1, trunc = -1, ok = 1;
    VL_CHECK(env);
    for (uint64_t seed = 0; seed < 20 && ok; seed++) {
        table->seed(env, seed);
        table->reset(env, obs);
        ok = s_run(env, obs, 600, &term, &trunc) == 500 && trunc == 1 && term == 0;
    }
    table->destroy(env);
    VL_CHECK(ok);
}

static void test_reset_restarts_the_clock(void)
{
    const vl_env_t *table = &vl_cartpole_env;
    void *env = table->create(NULL);
    float obs[4];
    int term, trunc, first, second;
    VL_CHECK(env);
    table->reset(env, obs);
    first = s_run(env, obs, 300, &term, &trunc);
    table->reset(env, obs);
    second = s_run(env, obs, 600, &term, &trunc);
    table->destroy(env);
    VL_CHECK(first == 300 && second == 500);
    VL_CHECK(trunc == 1 && term == 0);
}

/* Falling on the 500th step reports both endings. */
static void test_terminate_and_truncate_together(void)
{
    const vl_env_t *table = &vl_cartpole_env;
    void *env = table->create(NULL);
    double edge[4] = {2.39, 1.0, 0, 0};
    float obs[4];
    int term = -1, trunc = -1, ran;
    VL_CHECK(env);
    table->reset(env, obs);
    ran = s_run(env, obs, 499, &term, &trunc);
    vl_cartpole_set_state(env, edge);
    float reward = s_step(env, 1, obs, &term, &trunc);
    table->destroy(env);
    VL_CHECK(ran == 499);
    VL_CHECK(reward == 1.0f && term == 1 && trunc == 1);
}

/* Gymnasium 1.x's CartPoleEnv.step (classic_control/cartpole.py, "euler"),
   transcribed literally: the constants as __init__ computes them, in
   double, then every expression in the order Python evaluates it, left to
   right; np.square(v) is v * v, rounded on its own. Compiled, like
   vl_cartpole.c, with -ffp-contract=off. */
static void s_gymnasium_step(double state[4], int action)
{
    double gravity = 9.8, masscart = 1.0, masspole = 0.1;
    double total_mass = masspole + masscart;
    double length = 0.5;
    double polemass_length = masspole * length;
    double force_mag = 10.0, tau = 0.02;
    double x = state[0], x_dot = state[1], theta = state[2], theta_dot = state[3];
    double force = action == 1 ? force_mag : -force_mag;
    double costheta = cos(theta);
    double sintheta = sin(theta);
    double square_theta_dot = theta_dot * theta_dot;
    double temp = (force + polemass_length * square_theta_dot * sintheta) / total_mass;
    double square_costheta = costheta * costheta;
    double thetaacc = (gravity * sintheta - costheta * temp) /
                      (length * (4.0 / 3.0 - masspole * square_costheta / total_mass));
    double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
    x = x + tau * x_dot;
    x_dot = x_dot + tau * xacc;
    theta = theta + tau * theta_dot;
    theta_dot = theta_dot + tau * thetaacc;
    state[0] = x, state[1] = x_dot, state[2] = theta, state[3] = theta_dot;
}

/* Which of the two squares a step evaluates in the order volley used to. */
enum { S_OLD_TEMP = 1, S_OLD_COS = 2, S_OLD_BOTH = 3 };

/* The step with the squares multiplied in from the left, as volley had
   them: pml * w * w * sin (old & S_OLD_TEMP) and mp * cos * cos / m (old &
   S_OLD_COS), each rounded differently from Gymnasium's. */
static void s_old_order_step(double state[4], int action, int old)
{
    double m = 0.1 + 1.0, pml = 0.1 * 0.5, f = action == 1 ? 10.0 : -10.0;
    double theta = state[2], w = state[3], cs = cos(theta), sn = sin(theta);
    double temp = old & S_OLD_TEMP ? (f + pml * w * w * sn) / m : (f + pml * (w * w) * sn) / m;
    double mass_term = old & S_OLD_COS ? 0.1 * cs * cs / m : 0.1 * (cs * cs) / m;
    double thetaacc = (9.8 * sn - cs * temp) / (0.5 * (4.0 / 3.0 - mass_term));
    double xacc = temp - pml * thetaacc * cs / m;
    state[0] = state[0] + 0.02 * state[1];
    state[1] = state[1] + 0.02 * xacc;
    state[2] = theta + 0.02 * w;
    state[3] = w + 0.02 * thetaacc;
}

#define S_STARTS 200    // seeded resets, each balanced for a full episode
#define S_STATES 200000 // random states stepped once

/* Plays one 500-step balanced episode from env's next reset, stepping the
   transcription (ref) and the old order (old) beside it with the same
   actions. Returns the steps played with env's state equal to ref's bit for
   bit (500: all of them); sets drift[k] to the first step where the old
   order k + 1 (S_OLD_TEMP, S_OLD_COS, S_OLD_BOTH) left ref (0: never). */
static int s_lockstep(void *env, int drift[3], int *truncated)
{
    float obs[4];
    double got[4], ref[4], old[3][4];
    int term = 0, trunc = 0, t;
    vl_cartpole_env.reset(env, obs);
    vl_cartpole_get_state(env, ref);
    for (int k = 0; k < 3; k++) {
        memcpy(old[k], ref, sizeof ref);
        drift[k] = 0;
    }
    for (t = 0; t < 500 && !term && !trunc; t++) {
        int action = s_balance(obs);
        s_step(env, action, obs, &term, &trunc);
        s_gymnasium_step(ref, action);
        vl_cartpole_get_state(env, got);
        if (memcmp(got, ref, sizeof got) != 0)
            break;
        for (int k = 0; k < 3; k++) {
            s_old_order_step(old[k], action, k + 1);
            if (!drift[k] && memcmp(old[k], ref, sizeof ref) != 0)
                drift[k] = t + 1;
        }
    }
    *truncated = trunc && !term;
    return t;
}

/* From S_STARTS seeded resets the controller balances the pole for 500
   steps, and every state volley reaches equals the transcription's bit for
   bit. The old order, fed the same actions, leaves the transcription within
   almost every episode, through its cos^2 term: the comparison would have
   caught it. (Its theta_dot^2 term alone does not show here: see
   test_bit_exact_single_steps.) */
static void test_bit_exact_with_gymnasium(void)
{
    void *env = vl_cartpole_env.create(NULL);
    int exact = 1, drifted[3] = {0}, earliest = 501, drift[3], truncated;
    VL_CHECK(env);
    for (uint64_t seed = 0; seed < S_STARTS && exact; seed++) {
        vl_cartpole_env.seed(env, seed);
        exact = s_lockstep(env, drift, &truncated) == 500 && truncated;
        for (int k = 0; k < 3; k++)
            drifted[k] += drift[k] > 0;
        earliest = drift[2] > 0 && drift[2] < earliest ? drift[2] : earliest;
    }
    vl_cartpole_env.destroy(env);
    printf("     old order left Gymnasium's in %d of %d episodes (first at step %d); its "
           "cos^2 term alone in %d, its theta_dot^2 term alone in %d\n",
           drifted[2], S_STARTS, earliest, drifted[1], drifted[0]);
    VL_CHECK(exact);
    VL_CHECK(drifted[2] >= S_STARTS * 9 / 10 && drifted[1] >= S_STARTS * 9 / 10);
}

/* Returns a uniform double in [-bound, bound). */
static double s_uniform(vl_rng_t *rng, double bound)
{
    return bound * (2 * vl_rng_uniform(rng) - 1);
}

/* One step from each of S_STATES random states, theta_dot up to 20 rad/s,
   where the theta_dot^2 term is no longer lost beside the force (in a
   balanced episode it stays under 1e-4, and its last bits vanish when the
   force of 10 is added): volley's state equals the transcription's bit for
   bit, and each old term alone gives a different state from many of them. */
static void test_bit_exact_single_steps(void)
{
    void *env = vl_cartpole_env.create(NULL);
    vl_rng_t rng;
    int exact = 1, differs[3] = {0};
    VL_CHECK(env);
    vl_rng_seed(&rng, 42);
    for (int k = 0; k < S_STATES && exact; k++) {
        double s[4] = {s_uniform(&rng, 2.4), s_uniform(&rng, 5), s_uniform(&rng, 0.2),
                       s_uniform(&rng, 20)};
        double got[4], ref[4], old[4];
        int action = k & 1, term, trunc;
        float obs[4];
        vl_cartpole_set_state(env, s);
        s_step(env, action, obs, &term, &trunc);
        vl_cartpole_get_state(env, got);
        memcpy(ref, s, sizeof ref);
        s_gymnasium_step(ref, action);
        exact = memcmp(got, ref, sizeof got) == 0;
        for (int v = 0; v < 3; v++) {
            memcpy(old, s, sizeof old);
            s_old_order_step(old, action, v + 1);
            differs[v] += memcmp(old, ref, sizeof ref) != 0;
        }
    }
    vl_cartpole_env.destroy(env);
    printf("     of %d single steps the theta_dot^2 term's old order changed %d, the cos^2 "
           "term's %d\n",
           S_STATES, differs[0], differs[1]);
    VL_CHECK(exact);
    VL_CHECK(differs[0] >= 100 && differs[1] >= 100 && differs[2] >= differs[1]);
}

static void test_find(void)
{
    const vl_env_ops_t *ops = vl_env_find("cartpole");
    VL_CHECK(ops && ops->table == &vl_cartpole_env && !ops->vectorized && !ops->path);
    VL_CHECK(ops->obs_dim == 4 && ops->action.kind == VL_ENV_DISCRETE && ops->action.dims == 1 &&
             ops->action.n[0] == 2);
    VL_CHECK(ops->has_solved_return && ops->solved_return == 475.0f);
    VL_CHECK(strcmp(ops->name, "cartpole") == 0 && ops->summary && ops->summary[0]);
    VL_CHECK(vl_env_find("nope") == NULL);
    VL_CHECK(vl_env_find(NULL) == NULL);
    VL_CHECK(vl_env_lookup("test", "cartpole") == ops && vl_env_lookup("test", "nope") == NULL);
}

static void test_destroy_null(void)
{
    vl_cartpole_env.destroy(NULL);
    VL_CHECK(1);
}

int main(void)
{
    VL_RUN(test_step_upright_pole);
    VL_RUN(test_step_moving_cart);
    VL_RUN(test_step_euler_order);
    VL_RUN(test_reset_range_and_seeds);
    VL_RUN(test_reset_unseeded_is_seed_zero);
    VL_RUN(test_terminate_cart_position);
    VL_RUN(test_terminate_pole_angle);
    VL_RUN(test_reward_after_termination);
    VL_RUN(test_truncate_at_500);
    VL_RUN(test_reset_restarts_the_clock);
    VL_RUN(test_terminate_and_truncate_together);
    VL_RUN(test_bit_exact_with_gymnasium);
    VL_RUN(test_bit_exact_single_steps);
    VL_RUN(test_find);
    VL_RUN(test_destroy_null);
    return VL_DONE();
}
