/*  vl_rnet_test: a recurrent policy (a spec ending in lstm(H)) end to end
    through vl_policy: its tensors' names and shapes, the PPO loss gradient
    of every tensor against central finite differences of the returned loss
    over B sequences of T steps run from a stored state with resets inside
    them, forward_seq over T steps equal to T one-step calls carrying the
    state, and a reset equal to a fresh sequence from zero state. */
#include "vl_policy.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_dist.h"

#define S_MAX_PARAMS 2000 // floats in any policy these tests build

enum { S_B = 3, S_T = 6, S_N = S_B * S_T, S_OBS = 5, S_DIMS = 2, S_A = 3, S_STATE = 12 };

static const vl_loss_params_t s_params = {.clip = 0.2f, .vf_coef = 0.5f, .ent_coef = 0.1f};

/* The two specs under test: a torso before the lstm over discrete(3), and
   the lstm alone over box(2). */
static const char *const s_torso_spec = "linear(8) tanh lstm(6)";
static const char *const s_bare_spec = "lstm(4)";

/* box(2) in [-1, 1] x [-2, 2]. */
static vl_action_spec_t s_box(void)
{
    return (vl_action_spec_t){
        .kind = VL_ENV_BOX, .dims = 2, .low = {-1.0f, -2.0f}, .high = {1.0f, 2.0f}};
}

/* Returns a new policy of spec text over S_OBS flat floats acting in act,
   or NULL (the refusal printed). */
static vl_policy_t *s_policy(const char *text, const vl_action_spec_t *act, uint64_t seed)
{
    char err[256] = "";
    vl_model_spec_t *spec = vl_model_spec_parse(text, err, sizeof err);
    vl_obs_spec_t obs = vl_obs_spec_flat(S_OBS);
    vl_policy_t *p = spec ? vl_policy_new_spec(spec, &obs, act, seed, 0, err, sizeof err) : NULL;
    if (!p)
        fprintf(stderr, "%s refused: %s\n", text, err);
    vl_model_spec_destroy(&spec);
    return p;
}

/* Returns a pointer to the k-th parameter in tensor order, NULL past the
   last. */
static float *s_param(vl_policy_t *policy, size_t k)
{
    for (uint32_t i = 0; i < vl_policy_tensor_count(policy); i++) {
        vl_tensor_t t;
        vl_policy_tensor(policy, i, &t);
        size_t size = (size_t)t.rows * t.cols;
        if (k < size)
            return t.data + k;
        k -= size;
    }
    return NULL;
}

/* Copies every gradient of the policy into out in tensor order, writing
   each float's tensor index into owner. Returns the count. */
static size_t s_grads(vl_policy_t *policy, float *out, uint32_t *owner)
{
    size_t count = 0;
    for (uint32_t i = 0; i < vl_policy_tensor_count(policy); i++) {
        vl_tensor_t t;
        vl_policy_grad_tensor(policy, i, &t);
        for (size_t k = 0; k < (size_t)t.rows * t.cols; k++) {
            owner[count] = i;
            out[count++] = t.data[k];
        }
    }
    return count;
}

/* Sets every parameter uniform in [-scale, scale) from rng, so that no
   gradient is vanishingly small and the gates leave their midpoint. */
static void s_scramble(vl_policy_t *policy, vl_rng_t *rng, double scale)
{
    for (size_t k = 0; s_param(policy, k); k++)
        *s_param(policy, k) = (float)(scale * (2.0 * vl_rng_uniform(rng) - 1.0));
    vl_policy_params_changed(policy);
}

/* Sequences of S_T steps from a stored state, with resets: sequence 0 none,
   sequence 1 at step 3, sequence 2 at steps 0 and 4 (step 0's drops the
   stored state). */
typedef struct {
    float obs[S_N * S_OBS];
    float state0[S_B * S_STATE];
    uint8_t reset[S_N];
    float actions[S_N * S_DIMS];
    float old_logp[S_N], adv[S_N], v_target[S_N], w[S_N];
} s_batch_t;

/* Ratios (through old_logp) on both sides of the clip and inside it, far
   enough from 1 +- clip that a step of eps does not cross a kink. */
static const float s_ratios[6] = {1.5f, 0.6f, 1.0f, 1.1f, 0.9f, 1.05f};

/* Fills b's inputs for the policy's space and state size S (<= S_STATE). */
static void s_fill_inputs(vl_policy_t *policy, vl_rng_t *rng, s_batch_t *b)
{
    const vl_action_spec_t *a = vl_policy_action(policy);
    uint32_t S = vl_policy_state_size(policy);
    memset(b, 0, sizeof *b);
    for (int k = 0; k < S_N * S_OBS; k++)
        b->obs[k] = (float)vl_rng_normal(rng);
    for (uint32_t k = 0; k < S_B * S; k++)
        b->state0[k] = (float)(vl_rng_uniform(rng) - 0.5);
    b->reset[1 * S_T + 3] = b->reset[2 * S_T + 0] = b->reset[2 * S_T + 4] = 1;
    for (int i = 0; i < S_N; i++) {
        for (uint32_t d = 0; d < a->dims; d++)
            b->actions[i * S_DIMS + d] = vl_action_is_box(a) ? (float)(1.5 * vl_rng_normal(rng))
                                                             : (float)vl_rng_below(rng, a->n[d]);
        b->adv[i] = (i % 2 ? -1.0f : 1.0f) * (float)(0.5 + vl_rng_uniform(rng));
        b->v_target[i] = (float)vl_rng_normal(rng);
        b->w[i] = (float)(0.2 + 0.8 * vl_rng_uniform(rng));
    }
}

/* Fills b for the policy (state0 packed at its state size), old_logp from
   the policy's own outputs over the sequences. Returns 0, or -1. */
static int s_make_batch(vl_policy_t *policy, vl_rng_t *rng, s_batch_t *b)
{
    s_fill_inputs(policy, rng, b);
    float out[S_N * 8];
    if (vl_policy_forward_seq(policy, S_B, S_T, b->obs, b->state0, b->reset, out, NULL, NULL) != 0)
        return -1;
    const vl_action_spec_t *a = vl_policy_action(policy);
    uint32_t A = vl_policy_num_actions(policy);
    for (int i = 0; i < S_N; i++) {
        float logp = vl_dist_logp(a, out + i * A, vl_policy_logstd(policy), b->actions + i * S_DIMS);
        b->old_logp[i] = logp - logf(s_ratios[i % 6]);
    }
    return 0;
}

/* Returns the weighted loss on b's sequences (its gradient accumulated). */
static double s_loss(vl_policy_t *policy, const s_batch_t *b)
{
    return vl_policy_loss_grad_seq(policy, &s_params, S_B, S_T, b->obs, b->state0, b->reset,
                                   b->actions, b->old_logp, b->adv, b->v_target, b->w, NULL);
}

/* Returns the worst relative gap between the loss's gradient and central
   differences of the loss over every parameter of spec text's policy
   (floor 0.05 on the scale, so gradients near 0 are compared absolutely),
   and 1 in moved[i] for each tensor i with some gradient above 1e-4 (at
   most 16 tensors). A float loss of order 1 rounds near 1e-7; over 2 eps =
   4e-3 that is 3e-5, well inside 1e-2. */
static double s_worst_gap(const char *text, const vl_action_spec_t *act, uint64_t seed,
                          int *moved)
{
    static float grads[S_MAX_PARAMS];
    static uint32_t owner[S_MAX_PARAMS];
    vl_policy_t *policy = s_policy(text, act, seed);
    if (!policy)
        return INFINITY;
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    s_scramble(policy, &rng, 0.6);
    s_batch_t b;
    if (s_make_batch(policy, &rng, &b) != 0) {
        vl_policy_destroy(&policy);
        return INFINITY;
    }
    vl_policy_zero_grad(policy);
    double loss = s_loss(policy, &b);
    size_t count = s_grads(policy, grads, owner);
    const float eps = 2e-3f;
    double worst = isfinite(loss) ? 0.0 : INFINITY;
    for (size_t k = 0; k < count; k++) {
        float *p = s_param(policy, k), saved = *p;
        *p = saved + eps;
        double up = s_loss(policy, &b);
        *p = saved - eps;
        double down = s_loss(policy, &b);
        *p = saved;
        double fd = (up - down) / (2 * eps), big = fmax(fmax(fabs(fd), fabs(grads[k])), 0.05);
        worst = fmax(worst, fabs(fd - grads[k]) / big);
        if (fabsf(grads[k]) > 1e-4f)
            moved[owner[k]] = 1;
    }
    printf("%s: %zu parameters, loss %.4f, worst gap %.2g\n", text, count, loss, worst);
    vl_policy_destroy(&policy);
    return worst;
}

static void test_torso_lstm_gradient_matches_finite_differences(void)
{
    vl_action_spec_t act = vl_action_discrete(S_A);
    int moved[16] = {0};
    VL_CHECK_NEAR(s_worst_gap(s_torso_spec, &act, 51, moved), 0.0, 1e-2);
    for (int i = 0; i < 10; i++) // every tensor learns, weight_hh through the recurrence
        VL_CHECK(moved[i]);
}

static void test_bare_lstm_box_gradient_matches_finite_differences(void)
{
    vl_action_spec_t act = s_box();
    int moved[16] = {0};
    VL_CHECK_NEAR(s_worst_gap(s_bare_spec, &act, 53, moved), 0.0, 1e-2);
    for (int i = 0; i < 9; i++) // pi.logstd the last
        VL_CHECK(moved[i]);
}

/* Checks the policy's tensor i is named name with rows x cols (cols 1 and
   ndim 1 for a vector). Returns 1 when it is. */
static int s_tensor_is(vl_policy_t *p, uint32_t i, const char *name, uint32_t rows, uint32_t cols)
{
    vl_tensor_t t;
    vl_policy_tensor(p, i, &t);
    int ok = strcmp(t.name, name) == 0 && t.rows == rows && t.cols == cols &&
             t.ndim == (cols == 1 ? 1u : 2u);
    if (!ok)
        fprintf(stderr, "tensor %u: %s %ux%u, expected %s %ux%u\n", i, t.name, t.rows, t.cols,
                name, rows, cols);
    return ok;
}

/* The torso's layers, the lstm's four tensors in nn.LSTM's layout (gates
   stacked: 4H rows), then the heads, then a box's log-std; the state is
   2H floats. */
static void test_tensors_are_named_and_shaped(void)
{
    vl_action_spec_t disc = vl_action_discrete(S_A), box = s_box();
    vl_policy_t *p = s_policy(s_torso_spec, &disc, 1);
    VL_CHECK(p && vl_policy_tensor_count(p) == 10 && vl_policy_state_size(p) == 12);
    VL_CHECK(s_tensor_is(p, 0, "torso.0.weight", 8, S_OBS) && s_tensor_is(p, 1, "torso.0.bias", 8, 1));
    VL_CHECK(s_tensor_is(p, 2, "lstm.weight_ih", 24, 8) && s_tensor_is(p, 3, "lstm.weight_hh", 24, 6));
    VL_CHECK(s_tensor_is(p, 4, "lstm.bias_ih", 24, 1) && s_tensor_is(p, 5, "lstm.bias_hh", 24, 1));
    VL_CHECK(s_tensor_is(p, 6, "pi.weight", S_A, 6) && s_tensor_is(p, 7, "pi.bias", S_A, 1));
    VL_CHECK(s_tensor_is(p, 8, "v.weight", 1, 6) && s_tensor_is(p, 9, "v.bias", 1, 1));
    VL_CHECK(vl_policy_logstd(p) == NULL);
    vl_policy_destroy(&p);
    p = s_policy(s_bare_spec, &box, 1);
    VL_CHECK(p && vl_policy_tensor_count(p) == 9 && vl_policy_state_size(p) == 8);
    VL_CHECK(s_tensor_is(p, 0, "lstm.weight_ih", 16, S_OBS) && s_tensor_is(p, 1, "lstm.weight_hh", 16, 4));
    VL_CHECK(s_tensor_is(p, 2, "lstm.bias_ih", 16, 1) && s_tensor_is(p, 3, "lstm.bias_hh", 16, 1));
    VL_CHECK(s_tensor_is(p, 4, "pi.weight", 2, 4) && s_tensor_is(p, 5, "pi.bias", 2, 1));
    VL_CHECK(s_tensor_is(p, 6, "v.weight", 1, 4) && s_tensor_is(p, 7, "v.bias", 1, 1));
    VL_CHECK(s_tensor_is(p, 8, "pi.logstd", 2, 1));
    vl_policy_destroy(&p);
}

/* Gathers step t of every sequence of b's observations into rows [S_B]. */
static void s_step_rows(const s_batch_t *b, uint32_t t, float *rows)
{
    for (uint32_t s = 0; s < S_B; s++)
        memcpy(rows + s * S_OBS, b->obs + (s * S_T + t) * S_OBS, S_OBS * sizeof(float));
}

/* forward_seq over S_T steps from a stored state gives the outputs, values
   and final state of S_T calls of one step, each from the state the last
   left; and the stored state matters (zeros give other outputs). */
static void test_sequence_equals_steps_carrying_the_state(void)
{
    vl_action_spec_t act = vl_action_discrete(S_A);
    vl_policy_t *p = s_policy(s_torso_spec, &act, 3);
    VL_CHECK(p);
    vl_rng_t rng;
    vl_rng_seed(&rng, 3);
    s_scramble(p, &rng, 0.6);
    s_batch_t b;
    s_fill_inputs(p, &rng, &b);
    float out[S_N * S_A], values[S_N], state1[S_B * S_STATE], zero_out[S_N * S_A];
    VL_CHECK(vl_policy_forward_seq(p, S_B, S_T, b.obs, b.state0, NULL, out, values, state1) == 0);
    VL_CHECK(vl_policy_forward_seq(p, S_B, S_T, b.obs, NULL, NULL, zero_out, NULL, NULL) == 0);
    float state[S_B * S_STATE], rows[S_B * S_OBS], o[S_B * S_A], v[S_B];
    memcpy(state, b.state0, sizeof state);
    double gap = 0.0, state_effect = 0.0;
    for (uint32_t t = 0; t < S_T; t++) {
        s_step_rows(&b, t, rows);
        VL_CHECK(vl_policy_forward_seq(p, S_B, 1, rows, state, NULL, o, v, state) == 0);
        for (uint32_t s = 0; s < S_B; s++) {
            uint32_t row = s * S_T + t;
            gap = fmax(gap, fabs(v[s] - values[row]));
            for (uint32_t j = 0; j < S_A; j++) {
                gap = fmax(gap, fabs(o[s * S_A + j] - out[row * S_A + j]));
                state_effect = fmax(state_effect, fabs(out[row * S_A + j] - zero_out[row * S_A + j]));
            }
        }
    }
    for (uint32_t k = 0; k < S_B * S_STATE; k++)
        gap = fmax(gap, fabs(state[k] - state1[k]));
    vl_policy_destroy(&p);
    VL_CHECK_NEAR(gap, 0.0, 1e-5);
    VL_CHECK(state_effect > 1e-3);
}

/* A reset before step r makes steps r.. of a sequence what a fresh
   sequence from zero state over the same observations gives, whatever
   came before; steps before r still see the stored state. */
static void test_reset_equals_a_fresh_sequence(void)
{
    vl_action_spec_t box = s_box();
    vl_policy_t *p = s_policy(s_bare_spec, &box, 5);
    VL_CHECK(p);
    vl_rng_t rng;
    vl_rng_seed(&rng, 5);
    s_scramble(p, &rng, 0.6);
    s_batch_t b;
    s_fill_inputs(p, &rng, &b);
    uint32_t A = vl_policy_num_actions(p), S = vl_policy_state_size(p);
    float out[S_N * 2], values[S_N], state1[S_B * S_STATE], fresh[S_T * 2], fresh_v[S_T];
    float fresh_state[S_STATE];
    VL_CHECK(vl_policy_forward_seq(p, S_B, S_T, b.obs, b.state0, b.reset, out, values, state1) == 0);
    // Sequence 1 resets before step 3: steps 3..5 are a fresh sequence of 3.
    const float *obs1 = b.obs + (1 * S_T + 3) * S_OBS;
    VL_CHECK(vl_policy_forward_seq(p, 1, 3, obs1, NULL, NULL, fresh, fresh_v, fresh_state) == 0);
    double gap = 0.0;
    for (uint32_t t = 0; t < 3; t++) {
        gap = fmax(gap, fabs(fresh_v[t] - values[1 * S_T + 3 + t]));
        for (uint32_t j = 0; j < A; j++)
            gap = fmax(gap, fabs(fresh[t * A + j] - out[(1 * S_T + 3 + t) * A + j]));
    }
    for (uint32_t k = 0; k < S; k++)
        gap = fmax(gap, fabs(fresh_state[k] - state1[1 * S + k]));
    // Sequence 2 resets at step 0: its first steps ignore the stored state.
    VL_CHECK(vl_policy_forward_seq(p, 1, 4, b.obs + 2 * S_T * S_OBS, NULL, NULL, fresh, fresh_v,
                                   NULL) == 0);
    for (uint32_t t = 0; t < 4; t++)
        gap = fmax(gap, fabs(fresh_v[t] - values[2 * S_T + t]));
    // Sequence 1's steps before the reset do see the stored state.
    VL_CHECK(vl_policy_forward_seq(p, 1, 3, b.obs + 1 * S_T * S_OBS, NULL, NULL, fresh, fresh_v,
                                   NULL) == 0);
    double before = 0.0;
    for (uint32_t t = 0; t < 3; t++)
        before = fmax(before, fabs(fresh_v[t] - values[1 * S_T + t]));
    vl_policy_destroy(&p);
    VL_CHECK_NEAR(gap, 0.0, 1e-5);
    VL_CHECK(before > 1e-3);
}

int main(void)
{
    VL_RUN(test_tensors_are_named_and_shaped);
    VL_RUN(test_sequence_equals_steps_carrying_the_state);
    VL_RUN(test_reset_equals_a_fresh_sequence);
    VL_RUN(test_torso_lstm_gradient_matches_finite_differences);
    VL_RUN(test_bare_lstm_box_gradient_matches_finite_differences);
    return VL_DONE();
}
