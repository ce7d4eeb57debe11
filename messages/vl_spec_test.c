/*  Tests of vl_spec: a spec survives the wire, a hostile one is refused by
    reason, and every comparison names the field that differs with both
    values. */
#include "vl_spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/vl_test.h"

/* Returns CartPole's spec for policy "default". */
static vl_spec_t s_cartpole(void)
{
    vl_spec_t s = {.policy_id = "default", .horizon = 64, .hidden = 64};
    s.action = vl_action_discrete(2);
    s.obs_spec = vl_obs_spec_flat(4);
    strcpy(s.env, "cartpole");
    return s;
}

/* Returns a multi-discrete space of three buttons: 3, 3 and 2 choices. */
static vl_action_spec_t s_buttons(void)
{
    vl_action_spec_t a = {.kind = VL_ENV_MULTI_DISCRETE, .dims = 3, .n = {3, 3, 2}};
    return a;
}

/* Returns a box of two values, [-1, 1] and [-2, 0.5]. */
static vl_action_spec_t s_box(void)
{
    vl_action_spec_t a = {.kind = VL_ENV_BOX, .dims = 2, .low = {-1, -2}, .high = {1, 0.5f}};
    return a;
}

/* Packs s as vl_spec_encode does, then lets edit change the message (its
   action space is spec-owned storage it may rewrite or drop). Returns the
   decoder's reason for the packed bytes, the spec in *out. */
static vl_reason_t s_decode_edited(const vl_spec_t *s, void (*edit)(Volley__Spec *), vl_spec_t *out)
{
    Volley__Spec msg;
    Volley__ObsField fields[VL_OBS_FIELDS_MAX];
    Volley__ObsField *ptrs[VL_OBS_FIELDS_MAX];
    Volley__ActionSpace action;
    vl_spec_to_msg(s, &msg, fields, ptrs, &action);
    edit(&msg);
    uint8_t buf[1024];
    if (protobuf_c_message_get_packed_size(&msg.base) > sizeof buf)
        return VL_EREASONS;
    size_t size = protobuf_c_message_pack(&msg.base, buf);
    vl_limits_t lim = vl_limits_default();
    return vl_spec_decode(buf, size, &lim, out);
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
    VL_CHECK(strcmp(line, "obs f32[4] u2[16x16] actions discrete(2) horizon 64 model linear(64) "
                          "tanh linear(64) tanh env cartpole") == 0);
}

/* Every kind of space comes back equal; a discrete one also travels as
   num_actions, which senders before action spaces read, the others as 0. */
static void test_spec_round_trip_each_kind(void)
{
    vl_action_spec_t kinds[3] = {vl_action_discrete(7), s_buttons(), s_box()};
    const char *lines[3] = {"discrete(7)", "multi_discrete(3,3,2)", "box(2)[-1..1,-2..0.5]"};
    for (int k = 0; k < 3; k++) {
        vl_spec_t s = s_cartpole(), out;
        s.action = kinds[k];
        memset(&out, 0xab, sizeof out);
        VL_CHECK(s_round_trip(&s, &out) == VL_OK);
        VL_CHECK(vl_action_equal(&out.action, &kinds[k]));
        VL_CHECK(out.action.kind == kinds[k].kind && out.action.dims == kinds[k].dims);
        VL_CHECK(vl_spec_diff(&s, &out, "this actor", (char[8]){0}, 8) == 0);
        char line[1400], want[64];
        vl_spec_str(&out, line, sizeof line);
        snprintf(want, sizeof want, " actions %s horizon", lines[k]);
        VL_CHECK(strstr(line, want) != NULL);
        Volley__Spec msg;
        Volley__ObsField fields[VL_OBS_FIELDS_MAX];
        Volley__ObsField *ptrs[VL_OBS_FIELDS_MAX];
        Volley__ActionSpace action;
        vl_spec_to_msg(&s, &msg, fields, ptrs, &action);
        VL_CHECK(msg.action == &action && (int)action.kind == (int)kinds[k].kind);
        VL_CHECK(msg.num_actions == (k == 0 ? 7u : 0u));
    }
}

/* A spec from a sender before action spaces: num_actions alone. */
static uint32_t s_old_choices;

static void s_edit_old_sender(Volley__Spec *msg)
{
    msg->action = NULL;
    msg->num_actions = s_old_choices;
}

/* An old sender's spec decodes as one discrete choice among num_actions;
   without either it says nothing of its actions and is refused. */
static void test_spec_without_action_space(void)
{
    vl_spec_t s = s_cartpole(), out;
    s.action = s_buttons(); // what the message carried before the edit drops it
    s_old_choices = 5;
    VL_CHECK(s_decode_edited(&s, s_edit_old_sender, &out) == VL_OK);
    VL_CHECK(out.action.kind == VL_ENV_DISCRETE && out.action.dims == 1 && out.action.n[0] == 5);
    vl_action_spec_t five = vl_action_discrete(5);
    VL_CHECK(vl_action_equal(&out.action, &five));
    VL_CHECK(strcmp(out.policy_id, "default") == 0 && out.horizon == 64);
    s_old_choices = 0;
    VL_CHECK(s_decode_edited(&s, s_edit_old_sender, &out) == VL_EACTION);
    s_old_choices = 1025; // over max_actions
    VL_CHECK(s_decode_edited(&s, s_edit_old_sender, &out) == VL_EACTION);
}

/* The space a spec's ActionSpace is rewritten to. */
static Volley__ActionSpace s_space_arg;

static void s_edit_space(Volley__Spec *msg)
{
    msg->action = &s_space_arg;
}

/* Returns the reason for the CartPole spec carrying space (kind, n[n_n],
   low[n_low], high[n_high]). */
static vl_reason_t s_decode_space(int kind, size_t n_n, const uint32_t *n, size_t n_low,
                                  const float *low, size_t n_high, const float *high)
{
    volley__action_space__init(&s_space_arg);
    s_space_arg.kind = (Volley__ActionKind)kind;
    s_space_arg.n_n = n_n, s_space_arg.n = (uint32_t *)n;
    s_space_arg.n_low = n_low, s_space_arg.low = (float *)low;
    s_space_arg.n_high = n_high, s_space_arg.high = (float *)high;
    vl_spec_t s = s_cartpole(), out;
    return s_decode_edited(&s, s_edit_space, &out);
}

/* A Spec's ActionSpace is checked as a segment's is: no dims, more than 16,
   one choice, bounds not finite or not increasing, counts that disagree,
   or an unknown kind are VL_EACTION. */
static void test_spec_bad_action_space(void)
{
    const uint32_t n[17] = {3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
    const float low[17] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    const float high[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const float flat[2] = {1, 1}, nan[2] = {NAN, 1}, inf[2] = {1, INFINITY};
    VL_CHECK(s_decode_space(VL_ENV_MULTI_DISCRETE, 3, n, 0, NULL, 0, NULL) == VL_OK); // controls
    VL_CHECK(s_decode_space(VL_ENV_MULTI_DISCRETE, 16, n, 0, NULL, 0, NULL) == VL_OK);
    VL_CHECK(s_decode_space(VL_ENV_BOX, 0, NULL, 16, low, 16, high) == VL_OK);
    VL_CHECK(s_decode_space(VL_ENV_MULTI_DISCRETE, 0, NULL, 0, NULL, 0, NULL) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_BOX, 0, NULL, 0, NULL, 0, NULL) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_MULTI_DISCRETE, 17, n, 0, NULL, 0, NULL) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_BOX, 0, NULL, 17, low, 17, high) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_DISCRETE, 2, n, 0, NULL, 0, NULL) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_MULTI_DISCRETE, 3, (const uint32_t[]){3, 1, 2}, 0, NULL, 0,
                            NULL) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_BOX, 0, NULL, 2, flat, 2, flat) == VL_EACTION); // low == high
    VL_CHECK(s_decode_space(VL_ENV_BOX, 0, NULL, 2, high, 2, low) == VL_EACTION);  // low > high
    VL_CHECK(s_decode_space(VL_ENV_BOX, 0, NULL, 2, nan, 2, high) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_BOX, 0, NULL, 2, low, 2, inf) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_BOX, 0, NULL, 2, low, 3, high) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_BOX, 0, NULL, 2, low, 1, high) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_BOX, 2, n, 2, low, 2, high) == VL_EACTION);
    VL_CHECK(s_decode_space(VL_ENV_DISCRETE, 1, n, 1, low, 1, high) == VL_EACTION);
    VL_CHECK(s_decode_space(3, 1, n, 0, NULL, 0, NULL) == VL_EACTION);
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
    b.action = vl_action_discrete(3);
    VL_CHECK(vl_spec_diff(&a, &b, "this learner", why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "actions: policy 'default' has discrete(2), this learner discrete(3)") ==
             0);
    a.action = s_box(), b.action = s_box();
    VL_CHECK(vl_spec_diff(&a, &b, "this learner", why, sizeof why) == 0);
    b.action.high[1] = 1.0f; // one bound differs
    VL_CHECK(vl_spec_diff(&a, &b, "this learner", why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "actions: policy 'default' has box(2)[-1..1,-2..0.5], this learner "
                         "box(2)[-1..1,-2..1]") == 0);
    a = s_cartpole();
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
    vl_segment_t seg = {.horizon = 64};
    seg.action = vl_action_discrete(2);
    vl_segment_set_spec(&seg, &s.obs_spec);
    char why[VL_SPEC_REASON_MAX];
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 0);
    seg.horizon = 32;
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "horizon 32, policy 'default' has 64") == 0);
    seg.horizon = 64;
    seg.action = vl_action_discrete(5);
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "actions discrete(5), policy 'default' has discrete(2)") == 0);
}

/* A segment whose actions are another width than the policy's is named by
   width (its arrays cannot even be read as the policy's); one of the same
   width but another space by both spaces. */
static void test_spec_check_segment_spaces(void)
{
    vl_spec_t s = s_cartpole();
    s.action = s_buttons();
    vl_segment_t seg = {.horizon = 64};
    vl_segment_set_spec(&seg, &s.obs_spec);
    char why[VL_SPEC_REASON_MAX];
    seg.action = s_buttons();
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 0);
    seg.action = s_box();
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "action width 2, policy 'default' has 3") == 0);
    seg.action = vl_action_discrete(3);
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "action width 1, policy 'default' has 3") == 0);
    seg.action = s_buttons(), seg.action.n[2] = 4;
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "actions multi_discrete(3,3,4), policy 'default' has "
                         "multi_discrete(3,3,2)") == 0);
    seg.action =
        (vl_action_spec_t){.kind = VL_ENV_BOX, .dims = 3, .low = {-1, -1, -1}, .high = {1, 1, 1}};
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 1);
    VL_CHECK(strstr(why, "actions box(3)[-1..1,-1..1,-1..1], policy 'default' has "
                         "multi_discrete(3,3,2)") == why);
    s.action = vl_action_discrete(2), seg.action = s_box(), seg.action.dims = 1;
    VL_CHECK(vl_spec_check_segment(&s, &seg, why, sizeof why) == 1);
    VL_CHECK(strcmp(why, "actions box(1)[-1..1], policy 'default' has discrete(2)") == 0);
}

int main(void)
{
    VL_RUN(test_spec_round_trip);
    VL_RUN(test_spec_round_trip_each_kind);
    VL_RUN(test_spec_without_action_space);
    VL_RUN(test_spec_bad_action_space);
    VL_RUN(test_spec_model);
    VL_RUN(test_spec_refused);
    VL_RUN(test_spec_diff_names_the_field);
    VL_RUN(test_spec_check_segment);
    VL_RUN(test_spec_check_segment_spaces);
    return VL_DONE();
}
