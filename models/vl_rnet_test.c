/*  vl_rnet_test: a recurrent policy (a spec ending in lstm(H)) end to end
    through vl_policy: its tensors' names and shapes, the PPO loss gradient
    of every tensor against central finite differences of the returned loss
    over B sequences of T steps run from a stored state with resets inside
    them, forward_seq over T steps equal to T one-step calls carrying the
    state, a reset equal to a fresh sequence from zero state, and outputs,
    final state and gradients against PyTorch (models/vl_rnet_reference.py);
    an actor's folded step equal to the training one to float rounding. */
#include "vl_policy.h"
#include "vl_policy_probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_dist.h"
#include "vl_rowdot.h"

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
    for (size_t k = 0; vl_probe_param(policy, k); k++)
        *vl_probe_param(policy, k) = (float)(scale * (2.0 * vl_rng_uniform(rng) - 1.0));
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
        float logp =
            vl_dist_logp(a, out + i * A, vl_policy_logstd(policy), b->actions + i * S_DIMS);
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

/* s_loss as the probe calls it. */
static double s_loss_of(vl_policy_t *policy, const void *b)
{
    return s_loss(policy, b);
}

/* Returns the worst relative gap between the loss's gradient and central
   differences of the loss over every parameter of spec text's policy
   (floor 0.05 on the scale, so gradients near 0 are compared absolutely),
   and 1 in moved[i] for each tensor i with some gradient above 1e-4 (at
   most 16 tensors). A float loss of order 1 rounds near 1e-7; over 2 eps =
   4e-3 that is 3e-5, well inside 1e-2. */
static double s_worst_gap(const char *text, const vl_action_spec_t *act, uint64_t seed, int *moved)
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
    double worst =
        isfinite(loss) ? vl_probe_fd_gap(policy, grads, count, s_loss_of, &b, 2e-3f) : INFINITY;
    for (size_t k = 0; k < count; k++)
        if (fabsf(grads[k]) > 1e-4f)
            moved[owner[k]] = 1;
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
        fprintf(stderr, "tensor %u: %s %ux%u, expected %s %ux%u\n", i, t.name, t.rows, t.cols, name,
                rows, cols);
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
    VL_CHECK(s_tensor_is(p, 0, "torso.0.weight", 8, S_OBS) &&
             s_tensor_is(p, 1, "torso.0.bias", 8, 1));
    VL_CHECK(s_tensor_is(p, 2, "lstm.weight_ih", 24, 8) &&
             s_tensor_is(p, 3, "lstm.weight_hh", 24, 6));
    VL_CHECK(s_tensor_is(p, 4, "lstm.bias_ih", 24, 1) && s_tensor_is(p, 5, "lstm.bias_hh", 24, 1));
    VL_CHECK(s_tensor_is(p, 6, "pi.weight", S_A, 6) && s_tensor_is(p, 7, "pi.bias", S_A, 1));
    VL_CHECK(s_tensor_is(p, 8, "v.weight", 1, 6) && s_tensor_is(p, 9, "v.bias", 1, 1));
    VL_CHECK(vl_policy_logstd(p) == NULL);
    vl_policy_destroy(&p);
    p = s_policy(s_bare_spec, &box, 1);
    VL_CHECK(p && vl_policy_tensor_count(p) == 9 && vl_policy_state_size(p) == 8);
    VL_CHECK(s_tensor_is(p, 0, "lstm.weight_ih", 16, S_OBS) &&
             s_tensor_is(p, 1, "lstm.weight_hh", 16, 4));
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
                state_effect =
                    fmax(state_effect, fabs(out[row * S_A + j] - zero_out[row * S_A + j]));
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
    VL_CHECK(vl_policy_forward_seq(p, S_B, S_T, b.obs, b.state0, b.reset, out, values, state1) ==
             0);
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

/* The PyTorch case of models/vl_rnet_reference.py: "linear(8) tanh lstm(6)"
   over 5 floats with 3 outputs, B = 3 sequences of T = 4 steps from a
   stored state, resets before (1, 2) and (2, 0); parameters, inputs,
   states and loss weights from the formulas below, which the script
   repeats. */
enum { S_RB = 3, S_RT = 4, S_RN = S_RB * S_RT, S_RSTATE = 12 };

static double s_ref_param(size_t p)
{
    return 0.4 * sin(0.7 * (double)p + 0.1);
}

static double s_ref_inp(size_t i)
{
    return 0.9 * cos(0.37 * (double)i + 0.2);
}

static double s_ref_state(size_t i)
{
    return 0.5 * sin(0.29 * (double)i + 0.3);
}

// generated by models/vl_rnet_reference.py (torch 1.13.0a0)
static const double s_ref_out[] = {
    0.349265761, 0.444784748, 0.216240914, 0.279956824, 0.538046496, 0.194104686,
    0.202782247, 0.595797429, 0.214653222, 0.145623274, 0.627763327, 0.240468939,
    0.179080829, 0.61603803,  0.218508287, 0.192723611, 0.621129462, 0.19987325,
    0.168332493, 0.542931039, 0.300939614, 0.151814577, 0.604267625, 0.257315679,
    0.269248688, 0.522467955, 0.220087917, 0.167377998, 0.599078724, 0.246840089,
    0.13011207,  0.631817929, 0.252004518, 0.191458954, 0.624236316, 0.19809157};
static const double s_ref_values[] = {0.256394837, 0.235851527, 0.257705597, 0.284378491,
                                      0.261987048, 0.243276619, 0.343776006, 0.300928919,
                                      0.261776297, 0.290255632, 0.29609976,  0.241538275};
static const double s_ref_state1[] = {
    -0.21131538,  -0.144709665,  0.0113280634,  0.165280937, 0.0867346016, 0.122607911,
    -0.354130418, -0.320062729,  0.0287428105,  0.404904236, 0.235037157,  0.290497101,
    -0.211544717, -0.10396691,   -0.0153204423, 0.103152922, 0.116501725,  0.102719058,
    -0.394462902, -0.245986199,  -0.0443699471, 0.254115568, 0.278984172,  0.217701819,
    -0.189927152, -0.0830083724, 0.012956662,   0.208763895, 0.131510959,  0.0669997905,
    -0.380458297, -0.230484626,  0.0401260516,  0.490249497, 0.288420077,  0.126205579};
static const double s_ref_dparams[] = {
    0.00463263829,   -0.00599980959,  -0.015820215,    -0.0234994278,   -0.0279981012,
    0.00599237562,   -0.00291900619,  -0.0114353157,   -0.0184039086,   -0.0228816179,
    0.00279585922,   0.00509414065,   0.00670295516,   0.00740455578,   0.00710398378,
    -0.0156467364,   -0.00803873301,  0.000657279788,  0.00926433028,   0.0166174954,
    -0.0253128775,   -0.0145438546,   -0.00180638487,  0.0111755699,    0.0226449612,
    -0.0151011867,   -0.00816492439,  -0.00012357477,  0.00793450026,   0.0149186757,
    -0.00186861944,  0.00171247281,   0.00506178983,   0.00772601763,   0.0093445652,
    0.00957626265,   0.0120184243,    0.0128339463,    0.0119124552,    0.0093786701,
    0.00498570331,   0.00784451404,   0.0198503784,    0.0366910333,    0.0124647846,
    -0.00201928615,  -0.0113161878,   -0.0173353433,   0.00245001859,   -6.03809428e-05,
    0.00287908215,   0.00460665287,   -0.00114424682,  0.00267501624,   -0.0053401499,
    0.000444915041,  -0.000220935154, 0.000317247126,  0.00508506866,   -0.000552977112,
    0.00468477354,   -0.00399596044,  0.00409133343,   -0.00058739464,  -0.00744230895,
    0.00899572788,   -0.000671555426, 0.00958590132,   -0.00206276329,  0.00140328311,
    -0.0022360365,   -0.00823526363,  -0.00379370975,  0.00482253458,   -0.0033991946,
    0.00508148129,   -0.00343153712,  0.000971413207,  -0.00196996907,  -0.00747484664,
    0.0077107036,    -0.00479313773,  0.00644610864,   0.0019389445,    -0.000685819568,
    0.00319458881,   -0.00621123855,  0.00413621115,   -0.0008893821,   0.000404738173,
    0.00130655342,   -0.00109803987,  0.00278433375,   -0.00286946101,  0.00258882559,
    -0.001351518,    0.00429477878,   -0.00480699034,  0.00199343379,   -0.00510440191,
    0.00184765333,   -0.00164562901,  0.00205807391,   0.00356591023,   -0.00644495388,
    0.00933407247,   -0.00503720538,  0.0119560405,    -0.00676739529,  0.00651052157,
    -0.00826335459,  -0.00498269855,  0.000456645823,  0.00251915179,   0.0068771432,
    0.00970381691,   0.000940841452,  0.00314899439,   -0.012133675,    -0.00607948988,
    0.00911843156,   -0.00893826949,  0.0142508181,    -0.00356991408,  0.00943382339,
    -0.00398717862,  -0.005772369,    -0.00127715865,  0.00547784417,   -0.00569743079,
    0.00507173435,   -0.00467521558,  0.0039216711,    -0.00257432717,  -0.000328686687,
    0.0014382784,    -0.00288142882,  0.00366174463,   -0.00293870043,  0.00350498258,
    -0.00270846071,  0.00191291978,   -0.00135291549,  -0.00148131264,  0.000191467604,
    -0.00601361933,  -0.00560204782,  -0.0148406654,   0.000215262283,  -0.00240665072,
    0.0137221594,    0.0105674191,    0.0218165525,    -0.017373557,    -0.000181064094,
    -0.0017020951,   -0.0175810978,   0.0189671926,    -0.0125114691,   0.0234452022,
    0.000709931556,  0.0115428927,    -0.0123264043,   0.0343150859,    -0.0314688348,
    0.0303294633,    -0.0348644331,   -0.00394411485,  0.0179667554,    -0.00834947281,
    -0.000947404601, 0.014229299,     -0.0216248312,   0.0233373766,    -0.0244696296,
    0.0137139212,    0.00604381241,   -0.00331567277,  0.00830208816,   0.00319072322,
    0.00231628324,   -0.000843135468, -0.00606866365,  -0.00469043228,  0.00455056602,
    -0.00253346052,  0.0119735524,    0.000675915607,  0.00944640128,   -0.00392865505,
    -0.00609184335,  -0.00101129082,  0.00295151251,   -0.00182315997,  0.0049132663,
    -3.88127126e-05, 0.00342526868,   -0.00225996185,  -0.00183036479,  -0.00157750087,
    -0.000182090959, 0.00429903613,   0.001021791,     0.0100916594,    -0.00574820281,
    0.00833255238,   -0.0107526365,   0.00138005307,   -0.00361793927,  0.00606218825,
    0.0065719614,    0.0107732506,    0.0022993916,    0.000520118426,  -0.00926037433,
    -0.0111555332,   -0.00622666707,  0.0015245023,    0.00708110914,   -0.00715320993,
    0.0177212118,    -0.0205321015,   0.0118458071,    -0.0221101472,   0.00940758346,
    -0.00669472594,  0.0114898293,    -9.9414882e-05,  0.00489812165,   -0.00140029542,
    -0.00605781208,  0.000798327892,  -0.00131655776,  0.00176510855,   -0.000423851501,
    0.00119681637,   -0.000191782101, 0.000118384316,  -0.000128900142, -0.000586827883,
    0.000198730218,  0.00172247361,   0.00139871196,   0.00125930644,   0.00193037639,
    0.000974600202,  0.00759094279,   0.00809949188,   0.0105589227,    0.0115567274,
    0.0105549917,    0.0112678085,    -0.00214882099,  -0.00101150673,  -0.00311588946,
    -0.00475515404,  -0.00298666204,  -0.00423288028,  -0.012272746,    -0.00775824538,
    -0.0102727621,   -0.0106579429,   -0.00857080691,  -0.0105820335,   0.00015726668,
    0.00427659756,   0.00500806976,   0.00586120686,   0.00680425393,   0.0053283864,
    0.00219443425,   0.00187774699,   0.00271826606,   0.00312905827,   0.00241254111,
    0.00298054479,   0.00105696571,   0.00198931516,   0.0034346783,    0.00453339956,
    0.00366186568,   0.00417855041,   -0.000471875862, -0.00322172089,  -0.00517858748,
    -0.00690660044,  -0.00745749869,  -0.00724359464,  -0.00331336453,  -0.00338332371,
    -0.00737497455,  -0.00993775289,  -0.00749989765,  -0.00941503414,  -0.0059558614,
    -0.00199577622,  -0.00417979029,  -0.00460525719,  -0.0013589272,   -0.00387182635,
    -7.91665631e-05, 0.000789978235,  0.00157893757,   0.00230109972,   0.00134890311,
    0.001949002,     0.000713893966,  -0.000419016875, -0.000626800316, -0.000947397785,
    -0.00158723857,  -0.00121905696,  0.0085667605,    0.00486398651,   0.00819658415,
    0.00936776873,   0.00822866154,   0.0102814211,    -0.0129262059,   0.000312507836,
    -0.00174610003,  -0.0013402434,   0.0066340615,    -0.000482373028, -0.0299360018,
    -0.0177024214,   -0.0290057943,   -0.0334752632,   -0.022927814,    -0.0331892933,
    -0.0207701001,   -0.00539133552,  -0.0106232051,   -0.0115234589,   -0.00272645652,
    -0.0114425002,   -0.0116802683,   -0.00243173311,  -0.00452367784,  -0.00416853365,
    -0.000552453903, -0.00420420611,  0.0138488292,    0.00720427825,   0.0092812905,
    0.00912031487,   0.00361829538,   0.00767921107,   0.00126794871,   0.00224920165,
    0.00318326626,   0.00398786703,   0.00263441632,   0.00321090118,   0.00466956677,
    0.00214194442,   0.00170185344,   0.00033931651,   -0.000807192722, -0.000234638248,
    -0.00308719994,  -0.00270456303,  -0.00694497731,  -0.0096797559,   -0.00708165841,
    -0.00908379637,  -0.0129024655,   -0.00645738187,  -0.00835336387,  -0.00688999895,
    -0.00477307715,  -0.00657863671,  0.00165071629,   0.00543260636,   0.00700117814,
    0.00847450849,   0.00763531281,   0.00741183465,   0.00213012278,   0.0011011541,
    0.00165775651,   0.00176121642,   0.0006915375,    0.00139920004,   -0.00978973417,
    -0.00217949299,  -0.0147869621,   -0.00780805687,  -0.00757255604,  -0.000462000071,
    0.00679520394,   -0.0144866894,   -0.029938913,    -0.0189735677,   -0.000930317545,
    -0.00182675778,  0.0384670195,    0.0215823605,    -0.0371828691,   -0.00907229627,
    -0.0191652617,   -0.0213068225,   -0.00855861,     -0.0138249685,   -0.0328021836,
    -0.0184435949,   -0.0155736753,   -0.00112628996,  -0.00978973417,  -0.00217949299,
    -0.0147869621,   -0.00780805687,  -0.00757255604,  -0.000462000071, 0.00679520394,
    -0.0144866894,   -0.029938913,    -0.0189735677,   -0.000930317545, -0.00182675778,
    0.0384670195,    0.0215823605,    -0.0371828691,   -0.00907229627,  -0.0191652617,
    -0.0213068225,   -0.00855861,     -0.0138249685,   -0.0328021836,   -0.0184435949,
    -0.0155736753,   -0.00112628996,  0.586336161,     0.195391205,     0.198426064,
    0.0158478466,    -0.120746332,    0.0288870959,    0.679079248,     0.221342352,
    0.198655901,     -0.0155956432,   -0.198604248,    -0.0170826503,   0.760362081,
    0.243558098,     0.195533176,     -0.0467759651,   -0.273110498,    -0.0627641307,
    -0.642665844,    -1.11063682,     -1.55986467,     0.097732526,     0.0604113458,
    0.145642946,     0.113834723,     0.211545931,     0.185596548,     1.16690449};

/* Returns the worst gap between n floats and the reference, relative to
   1 + |reference|. */
static double s_ref_gap(const float *got, const double *want, size_t n)
{
    double worst = 0.0;
    for (size_t k = 0; k < n; k++)
        worst = fmax(worst, fabs(got[k] - want[k]) / (1.0 + fabs(want[k])));
    return worst;
}

/* The policy's head outputs, values, final state and every parameter's
   gradient of sum(out * wo) + sum(values * wv) equal PyTorch's nn.Linear,
   tanh, nn.LSTM and heads run step by step over the same sequences. */
static void test_matches_torch(void)
{
    static float grads[S_MAX_PARAMS];
    static uint32_t owner[S_MAX_PARAMS];
    vl_action_spec_t act = vl_action_discrete(S_A);
    vl_policy_t *p = s_policy(s_torso_spec, &act, 1);
    VL_CHECK(p);
    size_t count = 0;
    for (; vl_probe_param(p, count); count++)
        *vl_probe_param(p, count) = (float)s_ref_param(count);
    vl_policy_params_changed(p);
    float obs[S_RN * S_OBS], state0[S_RB * S_RSTATE], wo[S_RN * S_A], wv[S_RN];
    uint8_t reset[S_RN] = {0};
    reset[1 * S_RT + 2] = reset[2 * S_RT + 0] = 1;
    for (size_t i = 0; i < S_RN * S_OBS; i++)
        obs[i] = (float)s_ref_inp(i);
    for (size_t i = 0; i < S_RB * S_RSTATE; i++)
        state0[i] = (float)s_ref_state(i);
    for (size_t i = 0; i < S_RN * S_A; i++)
        wo[i] = (float)cos(0.13 * (double)i - 0.4);
    for (size_t i = 0; i < S_RN; i++)
        wv[i] = (float)sin(0.41 * (double)i + 0.5);
    float out[S_RN * S_A], values[S_RN], state1[S_RB * S_RSTATE];
    vl_policy_zero_grad(p);
    int ok = vl_policy_forward_seq(p, S_RB, S_RT, obs, state0, reset, out, values, state1) == 0 &&
             vl_policy_backward(p, S_RN, wo, wv) == 0;
    size_t n = s_grads(p, grads, owner);
    vl_policy_destroy(&p);
    VL_CHECK(ok && count == n && n == sizeof s_ref_dparams / sizeof s_ref_dparams[0]);
    double gaps[4] = {s_ref_gap(out, s_ref_out, S_RN * S_A), s_ref_gap(values, s_ref_values, S_RN),
                      s_ref_gap(state1, s_ref_state1, S_RB * S_RSTATE),
                      s_ref_gap(grads, s_ref_dparams, n)};
    printf("against torch: out %.2g, values %.2g, state %.2g, %zu gradients %.2g\n", gaps[0],
           gaps[1], gaps[2], n, gaps[3]);
    for (int k = 0; k < 4; k++)
        VL_CHECK_NEAR(gaps[k], 0.0, 1e-5);
}

/* A conv torso before the lstm takes the weights written into its tensors
   once the policy is told they changed (after an Adam step or a load), as a
   fresh policy given the same weights does: the torso's oneDNN copies of
   them do not go stale. */
static void test_conv_torso_takes_changed_weights(void)
{
    char err[256] = "";
    vl_model_spec_t *spec =
        vl_model_spec_parse("conv(4,3,1) relu linear(8) lstm(4)", err, sizeof err);
    vl_obs_spec_t obs = {.n_fields = 1};
    obs.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_U8, .ndim = 3, .shape = {1, 6, 6}};
    vl_action_spec_t act = vl_action_discrete(S_A);
    vl_policy_t *p = spec ? vl_policy_new_spec(spec, &obs, &act, 5, 0, err, sizeof err) : NULL;
    vl_policy_t *fresh = spec ? vl_policy_new_spec(spec, &obs, &act, 6, 0, err, sizeof err) : NULL;
    vl_model_spec_destroy(&spec);
    VL_CHECK(p && fresh);
    float frames[2 * 36], before[2 * S_A], after[2 * S_A], want[2 * S_A];
    for (int k = 0; k < 2 * 36; k++)
        frames[k] = (float)((k * 37) % 256);
    VL_CHECK(vl_policy_forward_seq(p, 2, 1, frames, NULL, NULL, before, NULL, NULL) == 0);
    vl_tensor_t conv;
    vl_policy_tensor(p, 0, &conv); // the first conv's weights
    for (size_t k = 0; k < (size_t)conv.rows * conv.cols; k++)
        conv.data[k] = -2.0f * conv.data[k] + 0.05f;
    vl_policy_params_changed(p);
    VL_CHECK(vl_policy_forward_seq(p, 2, 1, frames, NULL, NULL, after, NULL, NULL) == 0);
    for (uint32_t i = 0; i < vl_policy_tensor_count(p); i++) { // fresh := p's weights
        vl_tensor_t a, b;
        vl_policy_tensor(p, i, &a);
        vl_policy_tensor(fresh, i, &b);
        memcpy(b.data, a.data, (size_t)a.rows * a.cols * sizeof(float));
    }
    vl_policy_params_changed(fresh);
    VL_CHECK(vl_policy_forward_seq(fresh, 2, 1, frames, NULL, NULL, want, NULL, NULL) == 0);
    double moved = 0.0, gap = 0.0;
    for (int k = 0; k < 2 * S_A; k++) {
        moved = fmax(moved, fabs(after[k] - before[k]));
        gap = fmax(gap, fabs(after[k] - want[k]));
    }
    vl_policy_destroy(&p);
    vl_policy_destroy(&fresh);
    VL_CHECK(moved > 1e-4);
    VL_CHECK_NEAR(gap, 0.0, 1e-6);
}

/* Returns the largest |a - b| / (1 + |b|) over n floats; *differ counts
   the floats whose bits differ. */
static double s_gap_bits(const float *a, const float *b, size_t n, size_t *differ)
{
    double worst = 0;
    for (size_t k = 0; k < n; k++) {
        double d = fabs((double)a[k] - b[k]) / (1.0 + fabs((double)b[k]));
        worst = d > worst ? d : worst;
        *differ += memcmp(&a[k], &b[k], sizeof(float)) != 0;
    }
    return worst;
}

/* An actor's policy (vl_policy_set_inference) folds "linear(16)" over 5
   floats into the lstm's input weights for a one-step act: its outputs,
   values and state match a training policy's with the same weights to
   float rounding, before and after the weights change (the fold is
   refreshed), and where vl_rowdot runs some bits differ (the fold ran);
   it keeps nothing for a backward pass. */
static void test_actor_step_folds_the_linear_layer(void)
{
    static const char *const spec = "linear(16) lstm(6)";
    vl_action_spec_t act = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {S_A}};
    vl_policy_t *train = s_policy(spec, &act, 5), *actor = s_policy(spec, &act, 5);
    VL_CHECK(train && actor);
    vl_policy_set_inference(actor, 1);
    vl_rng_t rng;
    vl_rng_seed(&rng, 44);
    float obs[S_B * S_OBS], state0[S_B * S_STATE];
    for (size_t k = 0; k < S_B * S_OBS; k++)
        obs[k] = (float)vl_rng_normal(&rng);
    for (size_t k = 0; k < S_B * S_STATE; k++)
        state0[k] = (float)(0.5 * vl_rng_normal(&rng));
    uint8_t reset[S_B] = {0, 1, 0};
    for (int round = 0; round < 2; round++) { // the second after the weights change
        vl_rng_t w1, w2;
        vl_rng_seed(&w1, 100 + round), vl_rng_seed(&w2, 100 + round);
        s_scramble(train, &w1, 0.5), s_scramble(actor, &w2, 0.5);
        float out[2][S_B * S_A], values[2][S_B], state1[2][S_B * S_STATE];
        vl_policy_t *p[2] = {train, actor};
        for (int j = 0; j < 2; j++)
            VL_CHECK(vl_policy_forward_seq(p[j], S_B, 1, obs, state0, reset, out[j], values[j],
                                           state1[j]) == 0);
        size_t differ = 0;
        double gap = s_gap_bits(out[1], out[0], S_B * S_A, &differ);
        double gv = s_gap_bits(values[1], values[0], S_B, &differ);
        double gs = s_gap_bits(state1[1], state1[0], S_B * S_STATE, &differ);
        printf("round %d: folded against unfolded: outputs %.1e, values %.1e, state %.1e; %zu "
               "floats differ in bits\n",
               round, gap, gv, gs, differ);
        VL_CHECK(gap < 1e-5 && gv < 1e-5 && gs < 1e-5);
        VL_CHECK(!vl_rowdot_available() || differ > 0);
    }
    float dlogits[S_B * S_A] = {0}, dvalues[S_B] = {1, 1, 1};
    VL_CHECK(vl_policy_forward_seq(actor, S_B, 1, obs, state0, reset, NULL, NULL, NULL) == 0);
    VL_CHECK(!vl_rowdot_available() || vl_policy_backward(actor, S_B, dlogits, dvalues) != 0);
    vl_policy_destroy(&train);
    vl_policy_destroy(&actor);
}

int main(void)
{
    VL_RUN(test_tensors_are_named_and_shaped);
    VL_RUN(test_matches_torch);
    VL_RUN(test_sequence_equals_steps_carrying_the_state);
    VL_RUN(test_reset_equals_a_fresh_sequence);
    VL_RUN(test_torso_lstm_gradient_matches_finite_differences);
    VL_RUN(test_bare_lstm_box_gradient_matches_finite_differences);
    VL_RUN(test_conv_torso_takes_changed_weights);
    VL_RUN(test_actor_step_folds_the_linear_layer);
    return VL_DONE();
}
