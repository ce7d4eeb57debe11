/*  vl_segment_action_test: segments in every action space. Box and
    multi-discrete actions [T][dims] come back bit for bit; a value outside
    its space, or a space no policy can have, is refused with its reason;
    and a schema 2 segment, built field by field as an actor from before
    action spaces wrote it (num_actions, int32 actions), still decodes, so
    old recordings replay. The segments observe one f32 field [4]. */
#include <lz4.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_codec.h"
#include "vl_segment_probe.h"
#include "vl_spec.h"
#include "volley.pb-c.h"

#define S_T 12 // horizon
#define S_D 4  // floats per observation

/* Returns a multi-discrete space of three buttons: 3, 4 and 2 choices. */
static vl_action_spec_t s_buttons(void)
{
    vl_action_spec_t a = {.kind = VL_ENV_MULTI_DISCRETE, .dims = 3, .n = {3, 4, 2}};
    return a;
}

/* Returns a box of three values with unequal bounds. */
static vl_action_spec_t s_box(void)
{
    vl_action_spec_t a = {.kind = VL_ENV_BOX, .dims = 3, .low = {-1, -2, 0}, .high = {1, 2, 0.25f}};
    return a;
}

/* Returns a segment of horizon S_T acting in space, filled from seed:
   whole choices for the discrete kinds (logp <= 0), box values up to a
   fifth of the range past either bound (a sample before clipping) with
   densities above 1 at some steps (logp > 0), one episode ending at t = 5.
   Its arrays are one calloc'd block at seg.obs (caller frees). */
static vl_segment_t s_segment_in(const vl_action_spec_t *space, uint64_t seed)
{
    vl_segment_t seg = {.actor_id = 4, .env_id = 1, .seq = 9, .policy_id = "arm", .horizon = S_T};
    seg.action = *space;
    seg.policy_version = 2;
    vl_obs_spec_t spec = vl_obs_spec_flat(S_D);
    void *arrays = calloc(1, vl_segment_arrays_size(S_T, &spec, space->dims, 0));
    if (vl_segment_set_spec(&seg, &spec) != 0 || !arrays)
        abort();
    vl_segment_bind(&seg, arrays);
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (size_t i = 0; i < (S_T + 1) * S_D; i++)
        ((float *)seg.obs)[i] = (float)vl_rng_uniform(&rng);
    for (size_t i = 0; i < (size_t)S_T * space->dims; i++) {
        uint32_t d = (uint32_t)(i % space->dims);
        float span = space->high[d] - space->low[d], u = (float)vl_rng_uniform(&rng);
        seg.actions[i] = vl_action_is_box(space) ? space->low[d] + span * (1.4f * u - 0.2f)
                                                 : (float)vl_rng_below(&rng, space->n[d]);
    }
    for (size_t t = 0; t < S_T; t++) {
        seg.rewards[t] = (float)t;
        seg.logp[t] = (float)(vl_action_is_box(space) ? 2.0 - 3.0 * vl_rng_uniform(&rng)
                                                      : -3.0 * vl_rng_uniform(&rng));
        seg.dones[t] = t == 5 ? 1.0f : 0.0f;
    }
    seg.n_episodes = 1;
    seg.episode_returns[0] = 15.0f;
    seg.episode_lengths[0] = 6;
    return seg;
}

/* Returns 1 if a and b hold the same space and the same step arrays, bit
   for bit. */
static int s_same_steps(const vl_segment_t *a, const vl_segment_t *b)
{
    size_t T = a->horizon, A = T * a->action.dims;
    return vl_action_equal(&a->action, &b->action) && a->action.kind == b->action.kind &&
           a->horizon == b->horizon && memcmp(a->actions, b->actions, A * sizeof(float)) == 0 &&
           memcmp(a->rewards, b->rewards, T * sizeof(float)) == 0 &&
           memcmp(a->logp, b->logp, T * sizeof(float)) == 0 &&
           memcmp(a->dones, b->dones, T * sizeof(float)) == 0 &&
           memcmp(a->obs, b->obs, (T + 1) * (size_t)a->obs_row_bytes) == 0 &&
           a->n_episodes == b->n_episodes && a->episode_lengths[0] == b->episode_lengths[0];
}

/* Decodes space's segment (seed 1) and compares it with what was sent.
   Returns 1 when it came back whole. */
static int s_kind_round_trips(const vl_action_spec_t *space)
{
    vl_segment_t seg = s_segment_in(space, 1), out;
    void *arrays;
    vl_reason_t r = vl_probe_encode_decode(&seg, &out, &arrays);
    int same = r == VL_OK && s_same_steps(&seg, &out) && out.schema == VL_SCHEMA_VERSION;
    free(arrays);
    free(seg.obs);
    return same;
}

/* Each kind of space comes back exactly: the space and actions [T][dims],
   box values outside the bounds included (they are the unclipped sample). */
static void test_each_kind_round_trips(void)
{
    vl_action_spec_t two = vl_action_discrete(2), buttons = s_buttons(), box = s_box();
    vl_action_spec_t wide = {.kind = VL_ENV_BOX, .dims = VL_ACTION_DIMS_MAX};
    for (int d = 0; d < VL_ACTION_DIMS_MAX; d++)
        wide.low[d] = -1.0f - (float)d, wide.high[d] = 1.0f;
    VL_CHECK(s_kind_round_trips(&two));
    VL_CHECK(s_kind_round_trips(&buttons));
    VL_CHECK(s_kind_round_trips(&box));
    VL_CHECK(s_kind_round_trips(&wide));
    vl_segment_t seg = s_segment_in(&box, 1);
    int outside = 0;
    for (size_t i = 0; i < (size_t)S_T * 3; i++)
        outside += seg.actions[i] < box.low[i % 3] || seg.actions[i] > box.high[i % 3];
    free(seg.obs);
    VL_CHECK(outside > 0); // the case above did carry values past the bounds
}

/* The payload carries actions as float32 [T][dims], dimension after
   dimension in each step, then rewards, logp and dones; the header an
   ActionSpace with the box's bounds. */
static void test_box_payload_layout(void)
{
    vl_action_spec_t box = s_box();
    vl_segment_t seg = s_segment_in(&box, 2);
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_segment_encode(&seg, &buf, &size) == 0);
    Volley__Segment *msg = volley__segment__unpack(NULL, size, buf);
    free(buf);
    size_t obs = (S_T + 1) * S_D * 4, A = 4 * 3 * S_T, raw = obs + A + 9 * S_T;
    uint8_t *got = malloc(raw);
    int ok = msg && msg->raw_size == raw && msg->action &&
             msg->action->kind == VOLLEY__ACTION_KIND__BOX && msg->action->n_n == 0 &&
             msg->action->n_low == 3 && msg->action->n_high == 3 && msg->action->low[1] == -2.0f &&
             msg->action->high[2] == 0.25f &&
             vl_wire_decompress(msg->payload.data, msg->payload.len, msg->raw_size, got) == VL_OK &&
             memcmp(got + obs, seg.actions, A) == 0 &&
             memcmp(got + obs + A, seg.rewards, 4 * S_T) == 0 &&
             memcmp(got + obs + A + 4 * S_T, seg.logp, 4 * S_T) == 0 && got[obs + A + 8 * S_T + 5];
    float second_step_third;
    memcpy(&second_step_third, got + obs + 4 * (3 * 1 + 2), 4);
    ok = ok && second_step_third == seg.actions[1 * 3 + 2];
    if (msg)
        volley__segment__free_unpacked(msg, NULL);
    free(got);
    free(seg.obs);
    VL_CHECK(ok);
}

/* A box's log-prob is a density's and may exceed 0; a discrete kind's is a
   probability's, and above 0 it is refused with the done flags' reason. */
static void test_logp_above_zero(void)
{
    vl_action_spec_t box = s_box(), two = vl_action_discrete(2), buttons = s_buttons();
    vl_segment_t b = s_segment_in(&box, 3), d = s_segment_in(&two, 3),
                 m = s_segment_in(&buttons, 3);
    b.logp[4] = d.logp[4] = m.logp[4] = 3.5f;
    vl_reason_t rb = vl_probe_round_trip(&b), rd = vl_probe_round_trip(&d),
                rm = vl_probe_round_trip(&m);
    b.logp[4] = INFINITY; // finite, whatever the kind
    vl_reason_t rinf = vl_probe_round_trip(&b);
    free(b.obs);
    free(d.obs);
    free(m.obs);
    VL_CHECK(rb == VL_OK);
    VL_CHECK(rd == VL_EDONE);
    VL_CHECK(rm == VL_EDONE);
    VL_CHECK(rinf == VL_ENONFINITE);
}

/* Returns the reason for space's segment (seed 4) with action value i set
   to v. */
static vl_reason_t s_with_action(const vl_action_spec_t *space, size_t i, float v)
{
    vl_segment_t seg = s_segment_in(space, 4);
    seg.actions[i] = v;
    vl_reason_t r = vl_probe_round_trip(&seg);
    free(seg.obs);
    return r;
}

/* A discrete choice is a whole number below its dimension's n; a box value
   anything finite. Each dimension is held to its own n. */
static void test_action_outside_its_space(void)
{
    vl_action_spec_t two = vl_action_discrete(2), buttons = s_buttons(), box = s_box();
    VL_CHECK(s_with_action(&buttons, 3 * 7 + 1, 3.0f) == VL_OK);      // dimension 1 has 4 choices
    VL_CHECK(s_with_action(&buttons, 3 * 7 + 0, 3.0f) == VL_EACTION); // dimension 0 has 3
    VL_CHECK(s_with_action(&buttons, 3 * 7 + 1, 4.0f) == VL_EACTION);
    VL_CHECK(s_with_action(&buttons, 3 * S_T - 1, 2.0f) == VL_EACTION); // the last: 2 choices
    VL_CHECK(s_with_action(&buttons, 3 * 7 + 1, 2.5f) == VL_EACTION);
    VL_CHECK(s_with_action(&buttons, 0, -1.0f) == VL_EACTION);
    VL_CHECK(s_with_action(&buttons, 0, NAN) == VL_EACTION);
    VL_CHECK(s_with_action(&two, 3, 2.5f) == VL_EACTION);
    VL_CHECK(s_with_action(&two, 3, 0.5f) == VL_EACTION);
    VL_CHECK(s_with_action(&two, 3, 1.0f) == VL_OK);
    VL_CHECK(s_with_action(&box, 4, 1e30f) == VL_OK); // far outside the bounds, but finite
    VL_CHECK(s_with_action(&box, 4, NAN) == VL_EACTION);
    VL_CHECK(s_with_action(&box, 3 * S_T - 1, -INFINITY) == VL_EACTION);
}

/* The ActionSpace s_edit_space installs in a segment's header. */
static Volley__ActionSpace s_space_arg;
static int s_drop_space; // 1: no ActionSpace at all

static void s_edit_space(Volley__Segment *msg)
{
    msg->action = s_drop_space ? NULL : &s_space_arg;
}

/* Returns peek's reason for the box segment (seed 5) whose space is
   replaced (kind, n[n_n], low[n_low], high[n_high]); *decoded gets
   decode's. The payload stays a box of three's. */
static vl_reason_t s_peek_space(int kind, size_t n_n, const uint32_t *n, size_t n_low,
                                const float *low, size_t n_high, const float *high,
                                vl_reason_t *decoded)
{
    volley__action_space__init(&s_space_arg);
    s_space_arg.kind = (Volley__ActionKind)kind;
    s_space_arg.n_n = n_n, s_space_arg.n = (uint32_t *)n;
    s_space_arg.n_low = n_low, s_space_arg.low = (float *)low;
    s_space_arg.n_high = n_high, s_space_arg.high = (float *)high;
    vl_action_spec_t box = s_box();
    vl_segment_t seg = s_segment_in(&box, 5), out;
    uint8_t *buf;
    size_t size;
    if (vl_segment_encode(&seg, &buf, &size) != 0)
        abort();
    Volley__Segment *msg = volley__segment__unpack(NULL, size, buf);
    free(buf);
    Volley__ActionSpace *own = msg->action;
    s_edit_space(msg);
    uint8_t packed[4096];
    size = protobuf_c_message_pack(&msg->base, packed);
    msg->action = own;
    volley__segment__free_unpacked(msg, NULL);
    vl_limits_t lim = vl_limits_default();
    *decoded = vl_segment_decode(packed, size, &lim, &out, seg.obs,
                                 vl_segment_arrays_size(S_T, &seg.obs_spec, 3, 0));
    vl_reason_t peeked = vl_segment_peek(packed, size, &lim, &out);
    free(seg.obs);
    return peeked;
}

/* A space no policy can have is refused in the header, before any storage
   is asked for: no dims, over 16, one choice, bounds not increasing or not
   finite, low and high counts that disagree, values of the other kind, an
   unknown kind, or (schema 3) no ActionSpace at all. */
static void test_bad_action_space(void)
{
    const float low[17] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    const float high[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const uint32_t n[17] = {3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
    const float equal[3] = {1, 1, 1}, nan[3] = {-1, NAN, -1};
    vl_reason_t d;
    VL_CHECK(s_peek_space(VL_ENV_BOX, 0, NULL, 3, low, 3, high, &d) == VL_OK && d == VL_OK);
    // a valid space passes the header; the box's values are no choices among 3
    VL_CHECK(s_peek_space(VL_ENV_MULTI_DISCRETE, 3, n, 0, NULL, 0, NULL, &d) == VL_OK);
    VL_CHECK(d == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_BOX, 0, NULL, 0, NULL, 0, NULL, &d) == VL_EACTION);
    VL_CHECK(d == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_BOX, 0, NULL, 17, low, 17, high, &d) == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_MULTI_DISCRETE, 17, n, 0, NULL, 0, NULL, &d) == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_MULTI_DISCRETE, 3, (const uint32_t[]){3, 1, 2}, 0, NULL, 0, NULL,
                          &d) == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_DISCRETE, 1, (const uint32_t[]){1}, 0, NULL, 0, NULL, &d) ==
             VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_BOX, 0, NULL, 3, equal, 3, equal, &d) == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_BOX, 0, NULL, 3, high, 3, low, &d) == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_BOX, 0, NULL, 3, nan, 3, high, &d) == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_BOX, 0, NULL, 3, low, 2, high, &d) == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_BOX, 0, NULL, 2, low, 3, high, &d) == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_BOX, 3, n, 3, low, 3, high, &d) == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_MULTI_DISCRETE, 3, n, 3, low, 3, high, &d) == VL_EACTION);
    VL_CHECK(s_peek_space(VL_ENV_BOX + 1, 3, n, 0, NULL, 0, NULL, &d) == VL_EACTION);
    s_drop_space = 1;
    VL_CHECK(s_peek_space(VL_ENV_BOX, 0, NULL, 3, low, 3, high, &d) == VL_EACTION);
    s_drop_space = 0;
    VL_CHECK(d == VL_EACTION);
}

/* A schema 2 segment as an old actor wrote it. */
typedef struct {
    uint32_t schema, num_actions;
    int32_t actions[S_T];
    float obs[(S_T + 1) * S_D], rewards[S_T], logp[S_T];
    uint8_t dones[S_T];
} s_old_t;

/* Returns a schema 2 segment of num_actions choices with the values seed
   gives. */
static s_old_t s_old_new(uint32_t num_actions, uint64_t seed)
{
    s_old_t old = {.schema = 2, .num_actions = num_actions};
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (size_t i = 0; i < (S_T + 1) * S_D; i++)
        old.obs[i] = (float)vl_rng_uniform(&rng) - 0.5f;
    for (size_t t = 0; t < S_T; t++) {
        old.actions[t] = (int32_t)vl_rng_below(&rng, num_actions);
        old.rewards[t] = 1.0f;
        old.logp[t] = -(float)vl_rng_uniform(&rng);
        old.dones[t] = t == 7;
    }
    return old;
}

/* Packs old as schema 2's encoder did, with protobuf-c and LZ4: a Segment
   declaring num_actions (no ActionSpace) whose payload is the packed
   observations, then int32 actions [T], rewards, logp and one byte a done.
   Returns the bytes (caller frees), *size their count. */
static uint8_t *s_old_pack(const s_old_t *old, size_t *size)
{
    enum { OBS = (S_T + 1) * S_D * 4, RAW = OBS + 13 * S_T };
    uint8_t raw[RAW], block[LZ4_COMPRESSBOUND(RAW)];
    memcpy(raw, old->obs, OBS);
    memcpy(raw + OBS, old->actions, 4 * S_T);
    memcpy(raw + OBS + 4 * S_T, old->rewards, 4 * S_T);
    memcpy(raw + OBS + 8 * S_T, old->logp, 4 * S_T);
    memcpy(raw + OBS + 12 * S_T, old->dones, S_T);
    int len = LZ4_compress_default((const char *)raw, (char *)block, RAW, (int)sizeof block);
    Volley__ObsField field = VOLLEY__OBS_FIELD__INIT, *fields[1] = {&field};
    uint32_t shape[1] = {S_D};
    field.encoding = VOLLEY__ENCODING__F32, field.n_shape = 1, field.shape = shape;
    float returns[1] = {8.0f};
    uint32_t lengths[1] = {8};
    Volley__Segment msg = VOLLEY__SEGMENT__INIT;
    msg.schema = old->schema, msg.actor_id = 3, msg.env_id = 2, msg.seq = 77;
    msg.policy_id = "cartpole", msg.policy_version = 5, msg.horizon = S_T;
    msg.n_obs_fields = 1, msg.obs_fields = fields, msg.num_actions = old->num_actions;
    msg.raw_size = RAW, msg.payload.data = block, msg.payload.len = (size_t)(len > 0 ? len : 0);
    msg.n_episode_returns = msg.n_episode_lengths = 1;
    msg.episode_returns = returns, msg.episode_lengths = lengths;
    msg.send_ns = 1600000000000000000;
    *size = protobuf_c_message_get_packed_size(&msg.base);
    uint8_t *buf = malloc(*size);
    protobuf_c_message_pack(&msg.base, buf);
    return buf;
}

/* Returns the decoder's reason for old packed, the segment in *out and its
   arrays in *arrays (caller frees). */
static vl_reason_t s_old_decode(const s_old_t *old, vl_segment_t *out, void **arrays)
{
    size_t size;
    uint8_t *buf = s_old_pack(old, &size);
    vl_limits_t lim = vl_limits_default();
    vl_obs_spec_t spec = vl_obs_spec_flat(S_D);
    size_t cap = vl_segment_arrays_size(S_T, &spec, 1, 0);
    *arrays = malloc(cap);
    vl_reason_t r = vl_segment_decode(buf, size, &lim, out, *arrays, cap);
    free(buf);
    return r;
}

/* Returns 1 if out holds old's values: the space discrete(num_actions),
   each int32 action as the same whole float. */
static int s_same_as_old(const vl_segment_t *out, const s_old_t *old)
{
    vl_action_spec_t want = vl_action_discrete(old->num_actions);
    int same = vl_action_equal(&out->action, &want) && out->action.kind == VL_ENV_DISCRETE &&
               out->action.dims == 1 && out->schema == 2 && out->horizon == S_T &&
               out->obs_dim == S_D && strcmp(out->policy_id, "cartpole") == 0 && out->seq == 77 &&
               out->policy_version == 5 && out->n_episodes == 1 && out->episode_lengths[0] == 8 &&
               out->n_truncated == 0 && memcmp(out->obs, old->obs, sizeof old->obs) == 0 &&
               memcmp(out->rewards, old->rewards, sizeof old->rewards) == 0 &&
               memcmp(out->logp, old->logp, sizeof old->logp) == 0;
    for (size_t t = 0; t < S_T; t++)
        same &= out->actions[t] == (float)old->actions[t] && out->dones[t] == old->dones[t];
    return same;
}

/* An old recording replays: its segment decodes as discrete(num_actions)
   with float actions, peek agrees, and encoding it again writes schema 3
   that decodes to the same steps. */
static void test_schema2_segment_decodes(void)
{
    s_old_t old = s_old_new(3, 11);
    old.actions[0] = 0, old.actions[S_T - 1] = 2; // both ends of the range
    vl_segment_t out, again, head;
    void *arrays, *arrays2 = NULL;
    vl_reason_t r = s_old_decode(&old, &out, &arrays);
    int same = r == VL_OK && s_same_as_old(&out, &old);
    size_t size;
    uint8_t *buf = s_old_pack(&old, &size);
    vl_limits_t lim = vl_limits_default();
    vl_reason_t peeked = vl_segment_peek(buf, size, &lim, &head);
    free(buf);
    vl_reason_t r2 = r == VL_OK ? vl_probe_encode_decode(&out, &again, &arrays2) : VL_EREASONS;
    int same2 = r2 == VL_OK && again.schema == VL_SCHEMA_VERSION && s_same_steps(&out, &again);
    free(arrays);
    free(arrays2);
    VL_CHECK(r == VL_OK);
    VL_CHECK(same);
    VL_CHECK(peeked == VL_OK && head.schema == 2 && head.action.n[0] == 3);
    VL_CHECK(head.action.kind == VL_ENV_DISCRETE && head.action.dims == 1);
    VL_CHECK(r2 == VL_OK && same2);
}

/* Returns the reason for old packed, decoded. */
static vl_reason_t s_old_reason(const s_old_t *old)
{
    vl_segment_t out;
    void *arrays;
    vl_reason_t r = s_old_decode(old, &out, &arrays);
    free(arrays);
    return r;
}

/* Schema 2 keeps its own checks: int32 actions in [0, num_actions),
   num_actions 1 .. max_actions, log-probs <= 0; and a schema newer than
   this receiver's (4) or older than the oldest it reads (1) is refused,
   the same message otherwise valid. */
static void test_schema2_checks(void)
{
    s_old_t old = s_old_new(3, 12);
    VL_CHECK(s_old_reason(&old) == VL_OK);
    old.actions[4] = 3;
    VL_CHECK(s_old_reason(&old) == VL_EACTION);
    old.actions[4] = -1;
    VL_CHECK(s_old_reason(&old) == VL_EACTION);
    old.actions[4] = INT32_MIN;
    VL_CHECK(s_old_reason(&old) == VL_EACTION);
    old = s_old_new(3, 12), old.logp[2] = 0.5f;
    VL_CHECK(s_old_reason(&old) == VL_EDONE);
    old = s_old_new(3, 12), old.num_actions = 0;
    VL_CHECK(s_old_reason(&old) == VL_ESHAPE);
    old.num_actions = 1025;
    VL_CHECK(s_old_reason(&old) == VL_ETOOBIG);
    old.num_actions = 1024;
    VL_CHECK(s_old_reason(&old) == VL_OK);
    old = s_old_new(3, 12), old.schema = VL_SCHEMA_VERSION + 1;
    VL_CHECK(s_old_reason(&old) == VL_EVERSION);
    old.schema = VL_SCHEMA_OLDEST - 1;
    VL_CHECK(s_old_reason(&old) == VL_EVERSION);
    old.schema = 3; // schema 3 needs an ActionSpace, which this message lacks
    VL_CHECK(s_old_reason(&old) == VL_EACTION);
}

/* The policy's spec judges an old segment as any other: discrete(3) fits
   a discrete(3) policy, and a policy of another space is told why. */
static void test_schema2_against_spec(void)
{
    s_old_t old = s_old_new(3, 13);
    vl_segment_t out;
    void *arrays;
    vl_reason_t r = s_old_decode(&old, &out, &arrays);
    vl_spec_t spec = {.policy_id = "cartpole", .horizon = S_T, .hidden = 64};
    spec.obs_spec = vl_obs_spec_flat(S_D);
    spec.action = vl_action_discrete(3);
    char why[VL_SPEC_REASON_MAX] = "", why2[VL_SPEC_REASON_MAX] = "";
    int fits = r == VL_OK && vl_spec_check_segment(&spec, &out, why, sizeof why) == 0;
    spec.action = vl_action_discrete(4);
    int differs = r == VL_OK && vl_spec_check_segment(&spec, &out, why2, sizeof why2) == 1;
    free(arrays);
    VL_CHECK(fits);
    VL_CHECK(differs &&
             strcmp(why2, "actions discrete(3), policy 'cartpole' has discrete(4)") == 0);
}

int main(void)
{
    VL_RUN(test_each_kind_round_trips);
    VL_RUN(test_box_payload_layout);
    VL_RUN(test_logp_above_zero);
    VL_RUN(test_action_outside_its_space);
    VL_RUN(test_bad_action_space);
    VL_RUN(test_schema2_segment_decodes);
    VL_RUN(test_schema2_checks);
    VL_RUN(test_schema2_against_spec);
    return VL_DONE();
}
