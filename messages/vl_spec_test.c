/*  Tests of vl_spec: a spec survives the wire, a hostile one is refused by
    reason, and every comparison names the field that differs with both
    values. */
#include "vl_spec.h"

#include <stdlib.h>
#include <string.h>

#include "../tests/vl_test.h"

/* Returns CartPole's spec for policy "default". */
static vl_spec_t s_cartpole(void)
{
    vl_spec_t s = {.policy_id = "default", .num_actions = 2, .horizon = 64, .hidden = 64};
    s.obs_spec = vl_obs_spec_flat(4);
    strcpy(s.env, "cartpole");
    return s;
}

/* Encodes s and decodes it back into *out. Returns the decoder's reason,
   VL_EREASONS if encoding refused it. */
static vl_reason_t s_round_trip(const vl_spec_t *s, vl_spec_t *out)
{
    uint8_t *buf;
    size_t size;
    if (vl_spec_encode(s, &buf, &size) != 0)
        return VL_EREASONS;
    vl_limits_t lim = vl_limits_default();
    vl_reason_t r = vl_spec_decode(buf, size, &lim, out);
    free(buf);
    return r;
}

static void test_spec_round_trip(void)
{
    vl_spec_t s = s_cartpole(), out;
    s.obs_spec.n_fields = 2;
    s.obs_spec.fields[1] = (vl_obs_field_t){.encoding = VL_OBS_U2, .ndim = 2, .shape = {16, 16}};
    VL_CHECK(s_round_trip(&s, &out) == VL_OK);
    VL_CHECK(vl_spec_diff(&s, &out, "this actor", (char[8]){0}, 8) == 0);
    VL_CHECK(strcmp(out.env, "cartpole") == 0 && strcmp(out.policy_id, "default") == 0);
    char line[1400];
    vl_spec_str(&out, line, sizeof line);
    VL_CHECK(strcmp(line, "obs f32[4] u2[16x16] actions 2 horizon 64 model linear(64) tanh "
                          "linear(64) tanh env cartpole") == 0);
}

/* The model travels as text; "" is the MLP of `hidden` units that peers from
   before model specs run, so an old actor and a new learner of that MLP agree. */
static void test_spec_model(void)
{
    vl_spec_t s = s_cartpole(), out, mlp = s_cartpole();
    snprintf(s.model, sizeof s.model, "conv(16,4,2) relu linear(256) relu");
    VL_CHECK(s_round_trip(&s, &out) == VL_OK);
    VL_CHECK(strcmp(out.model, s.model) == 0);
    char why[VL_SPEC_REASON_MAX];
    VL_CHECK(vl_spec_diff(&s, &mlp, "this actor", why, sizeof why) == 1);
    VL_CHECK(strstr(why, "model: policy 'default' has 'conv(16,4,2) relu linear(256) relu', this "
                         "actor 'linear(64) tanh linear(64) tanh'") == why);
    snprintf(s.model, sizeof s.model, "linear(64) tanh linear(64) tanh");
    VL_CHECK(vl_spec_diff(&s, &mlp, "this actor", why, sizeof why) == 0);
    s.model[3] = '\n'; // a control character is not a spec any peer wrote
    uint8_t *buf = NULL;
    size_t size = 0;
    VL_CHECK(vl_spec_encode(&s, &buf, &size) == -1);
}

static void test_spec_refused(void)
{
    vl_spec_t s = s_cartpole(), out;
    uint8_t junk[40];
    memset(junk, 0xff, sizeof junk);
    vl_limits_t lim = vl_limits_default();
    VL_CHECK(vl_spec_decode(junk, sizeof junk, &lim, &out) == VL_EPROTO);
    s.horizon = 0;
    VL_CHECK(s_round_trip(&s, &out) == VL_EREASONS); // the encoder refuses what no one accepts
    s = s_cartpole();
    s.obs_spec.fields[0].shape[0] = 0;
    VL_CHECK(s_round_trip(&s, &out) == VL_EREASONS);
    s = s_cartpole();
    lim.max_horizon = 32; // well formed, over this receiver's limit
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_spec_encode(&s, &buf, &size) == 0);
    VL_CHECK(vl_spec_decode(buf, size, &lim, &out) == VL_ETOOBIG);
    free(buf);
}

static void test_spec_diff_names_the_field(void)
{
    vl_spec_t a = s_cartpole(), b = s_cartpole();
    char why[VL_SPEC_REASON_MAX];
    b.horizon = 32;
    VL_CHECK(vl_spec_diff(&a, &b, "this actor", why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "horizon: policy 'default' has 64, this actor 32") == 0);
    b = s_cartpole();
    b.num_actions = 3;
    VL_CHECK(vl_spec_diff(&a, &b, "this learner", why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "actions: policy 'default' has 2, this learner 3") == 0);
    b = s_cartpole();
    b.obs_spec = vl_obs_spec_flat(8);
    VL_CHECK(vl_spec_diff(&a, &b, "this actor", why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "observation: policy 'default' has f32[4], this actor f32[8]") == 0);
    b = s_cartpole();
    b.hidden = 16;
    strcpy(b.env, "other name"); // the env name is for people: never compared
    VL_CHECK(vl_spec_diff(&a, &b, "this actor", why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "model: policy 'default' has 'linear(64) tanh linear(64) tanh', this "
                         "actor 'linear(16) tanh linear(16) tanh'") == 0);
}

static void test_spec_check_segment(void)
{
    vl_spec_t s = s_cartpole();
    vl_segment_t seg = {.horizon = 64, .num_actions = 2};
    vl_segment_set_spec(&seg, &s.obs_spec);
    char why[VL_SPEC_REASON_MAX];
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 0);
    seg.horizon = 32;
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "horizon 32, policy 'default' has 64") == 0);
    seg.horizon = 64;
    seg.num_actions = 5;
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "actions 5, policy 'default' has 2") == 0);
}

int main(void)
{
    VL_RUN(test_spec_round_trip);
    VL_RUN(test_spec_model);
    VL_RUN(test_spec_refused);
    VL_RUN(test_spec_diff_names_the_field);
    VL_RUN(test_spec_check_segment);
    return VL_DONE();
}
