/*  fuzz_segment: vl_segment_peek and vl_segment_decode under libFuzzer,
    and the broker's vl_inspect_declared beside them.

    Every input goes through peek, then decode. Checked on every input:
    - both return a named reason (< VL_EREASONS);
    - decode refuses for peek's reason when peek refuses (one fault, one
      reason), and never for a header reason when peek accepts;
    - decode writes only inside the arrays it asked for: it gets exactly
      vl_segment_arrays_size bytes at the end of an 8 MiB buffer, the bytes
      before them poisoned, the malloc redzone after them.
    On VL_OK, every value the contract promises (a schema 2 or 3, a valid
    action space, actions in it: whole choices below n[d], finite box
    values; dones 0 or 1, floats finite, logp <= 0 unless the space is a
    box, packed fields integral and in range, n_episodes <= horizon), the
    header equal to peek's, and the round trip: vl_segment_encode succeeds
    (writing schema 3 whatever was read), its bytes decode to identical
    arrays and space, and encoding those gives the same bytes again. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "broker/vl_inspect.h"
#include "messages/vl_codec.h"

#define S_ARRAYS_CAP  (8u << 20)  // one segment's arrays; allocated once
#define S_MAX_RAW     (64u << 10) // LZ4 expands <= 255:1, so a 257-byte block reaches it
#define S_MAX_OBS_DIM 4096u       // with S_MAX_RAW keeps the arrays under S_ARRAYS_CAP

static uint8_t *s_buf[2]; // decode, then re-decode of the re-encoding

/* Default limits, lowered so that small inputs reach the deep paths. */
static vl_limits_t s_limits(void)
{
    vl_limits_t lim = vl_limits_default();
    lim.max_raw_bytes = S_MAX_RAW;
    lim.max_obs_dim = S_MAX_OBS_DIM;
    return lim;
}

/* Returns the arrays to decode into from buffer b: the last `need` bytes,
   the head poisoned, if need is known and fits; else the whole buffer.
   Sets *cap to the bytes handed out. */
static void *s_fence(int b, size_t need, size_t *cap)
{
    if (!s_buf[b]) {
        s_buf[b] = malloc(S_ARRAYS_CAP);
        FUZZ_CHECK(s_buf[b]);
    }
    if (need == 0 || need > S_ARRAYS_CAP) {
        *cap = S_ARRAYS_CAP;
        return s_buf[b];
    }
    FUZZ_CHECK(need % 4 == 0); // bind needs 4-byte alignment
    FUZZ_POISON(s_buf[b], S_ARRAYS_CAP - need);
    *cap = need;
    return s_buf[b] + S_ARRAYS_CAP - need;
}

static void s_unfence(int b)
{
    FUZZ_UNPOISON(s_buf[b], S_ARRAYS_CAP);
}

/* Checks the scalar fields two views of one segment share. */
static void s_check_same_header(const vl_segment_t *a, const vl_segment_t *b)
{
    FUZZ_CHECK(a->actor_id == b->actor_id && a->env_id == b->env_id && a->seq == b->seq);
    FUZZ_CHECK(strcmp(a->policy_id, b->policy_id) == 0);
    FUZZ_CHECK(a->policy_version == b->policy_version && a->send_ns == b->send_ns);
    FUZZ_CHECK(a->horizon == b->horizon && vl_action_equal(&a->action, &b->action));
    FUZZ_CHECK(vl_obs_spec_equal(&a->obs_spec, &b->obs_spec));
    FUZZ_CHECK(a->obs_dim == b->obs_dim && a->obs_wire_bytes == b->obs_wire_bytes);
}

/* Checks a header peek or decode accepted against the limits. */
static void s_check_header(const vl_segment_t *s, const vl_limits_t *lim)
{
    FUZZ_CHECK(vl_wire_name_ok(s->policy_id, VL_POLICY_ID_MAX));
    FUZZ_CHECK(s->schema >= VL_SCHEMA_OLDEST && s->schema <= VL_SCHEMA_VERSION);
    FUZZ_CHECK(s->horizon >= 1 && s->horizon <= lim->max_horizon);
    FUZZ_CHECK(vl_action_check(&s->action, lim, NULL, 0) == 0);
    FUZZ_CHECK(s->schema >= 3 || (s->action.kind == VL_ENV_DISCRETE && s->action.dims == 1));
    uint32_t dim = 0, wire = 0;
    FUZZ_CHECK(vl_obs_spec_check(&s->obs_spec, lim, &dim, &wire) == VL_OK);
    FUZZ_CHECK(dim == s->obs_dim && wire == s->obs_wire_bytes);
    FUZZ_CHECK(dim >= 1 && dim <= lim->max_obs_dim);
}

/* Returns 1 if v is an integer in [0, max]. */
static int s_integral(float v, float max)
{
    return v >= 0.0f && v <= max && v == floorf(v);
}

/* Checks every observation value, read back as floats from the rows,
   against its field's encoding. */
static void s_check_obs(const vl_segment_t *s)
{
    static const float max[VL_OBS_ENCODINGS] = {0, 255, 3, 1};
    size_t count = ((size_t)s->horizon + 1) * s->obs_dim;
    float *values = malloc(count * sizeof(float)), *v = values;
    FUZZ_CHECK(values != NULL);
    vl_obs_from_rows(&s->obs_spec, s->horizon + 1, s->obs, values);
    for (uint32_t k = 0; k <= s->horizon; k++) {
        for (uint32_t i = 0; i < s->obs_spec.n_fields; i++) {
            const vl_obs_field_t *f = &s->obs_spec.fields[i];
            size_t n = 1;
            for (uint32_t d = 0; d < f->ndim; d++)
                n *= f->shape[d];
            for (size_t j = 0; j < n; j++, v++)
                FUZZ_CHECK(f->encoding == VL_OBS_F32 ? vl_float_is_finite(*v)
                                                     : s_integral(*v, max[f->encoding]));
        }
    }
    FUZZ_CHECK(v == values + count);
    free(values);
}

/* Checks that two segments' observations read back as the same floats. */
static void s_check_same_obs(const vl_segment_t *a, const vl_segment_t *b)
{
    size_t count = ((size_t)a->horizon + 1) * a->obs_dim;
    float *x = malloc(count * sizeof(float)), *y = malloc(count * sizeof(float));
    FUZZ_CHECK(x != NULL && y != NULL);
    vl_obs_from_rows(&a->obs_spec, a->horizon + 1, a->obs, x);
    vl_obs_from_rows(&b->obs_spec, b->horizon + 1, b->obs, y);
    FUZZ_CHECK(memcmp(x, y, count * sizeof(float)) == 0);
    free(x);
    free(y);
}

/* Checks everything the contract promises of a decoded segment, its arrays
   inside [arrays, arrays + cap). */
static void s_check_decoded(const vl_segment_t *s, const vl_limits_t *lim, const uint8_t *arrays,
                            size_t cap)
{
    s_check_header(s, lim);
    FUZZ_CHECK((const uint8_t *)s->obs == arrays);
    FUZZ_CHECK(vl_segment_arrays_size(s->horizon, &s->obs_spec, s->action.dims, 0) <= cap);
    s_check_obs(s);
    uint32_t D = s->action.dims;
    int box = vl_action_is_box(&s->action);
    for (size_t i = 0; i < (size_t)s->horizon * D; i++) {
        float a = s->actions[i];
        FUZZ_CHECK(box ? vl_float_is_finite(a) : s_integral(a, (float)s->action.n[i % D] - 1));
    }
    FUZZ_CHECK(vl_action_find_bad(&s->action, s->actions, s->horizon) == -1);
    for (uint32_t t = 0; t < s->horizon; t++) {
        FUZZ_CHECK(s->dones[t] == 0.0f || s->dones[t] == 1.0f);
        FUZZ_CHECK(vl_float_is_finite(s->rewards[t]));
        FUZZ_CHECK(vl_float_is_finite(s->logp[t]) && (box || s->logp[t] <= 0.0f));
    }
    FUZZ_CHECK(s->n_episodes <= s->horizon);
    FUZZ_CHECK(vl_wire_all_finite(s->episode_returns, s->n_episodes));
}

/* Checks that two decoded segments hold the same header and arrays. */
static void s_check_same_segment(const vl_segment_t *a, const vl_segment_t *b)
{
    s_check_same_header(a, b);
    size_t T = a->horizon;
    s_check_same_obs(a, b);
    FUZZ_CHECK(memcmp(a->actions, b->actions, T * a->action.dims * sizeof(float)) == 0);
    FUZZ_CHECK(memcmp(a->rewards, b->rewards, T * sizeof(float)) == 0);
    FUZZ_CHECK(memcmp(a->dones, b->dones, T * sizeof(float)) == 0);
    FUZZ_CHECK(memcmp(a->logp, b->logp, T * sizeof(float)) == 0);
    FUZZ_CHECK(a->n_episodes == b->n_episodes);
    FUZZ_CHECK(memcmp(a->episode_returns, b->episode_returns, a->n_episodes * sizeof(float)) == 0);
    FUZZ_CHECK(memcmp(a->episode_lengths, b->episode_lengths, a->n_episodes * sizeof(uint32_t)) ==
               0);
}

/* Encodes a decoded segment, decodes that into the second buffer, and
   checks the arrays and the re-encoded bytes come back unchanged. */
static void s_check_round_trip(const vl_segment_t *seg, const vl_limits_t *lim)
{
    uint8_t *wire = NULL, *again = NULL;
    size_t wire_size = 0, again_size = 0;
    FUZZ_CHECK(vl_segment_encode(seg, &wire, &wire_size) == 0);
    size_t cap;
    void *arrays =
        s_fence(1, vl_segment_arrays_size(seg->horizon, &seg->obs_spec, seg->action.dims, 0), &cap);
    vl_segment_t copy;
    FUZZ_CHECK(vl_segment_decode(wire, wire_size, lim, &copy, arrays, cap) == VL_OK);
    FUZZ_CHECK(copy.schema == VL_SCHEMA_VERSION);
    s_check_decoded(&copy, lim, arrays, cap);
    s_check_same_segment(seg, &copy);
    FUZZ_CHECK(vl_segment_encode(&copy, &again, &again_size) == 0);
    FUZZ_CHECK(again_size == wire_size && memcmp(again, wire, wire_size) == 0);
    s_unfence(1);
    free(wire);
    free(again);
}

/* The broker's look at what a segment declares, before any decoding
   (broker/vl_inspect.c): it reads inside the input only, its policy id is
   NUL-terminated, and on a segment peek accepts it names the same policy. */
static void s_check_declared(const uint8_t *data, size_t size, const vl_segment_t *head)
{
    char policy[VL_POLICY_ID_MAX];
    uint64_t raw = 0;
    memset(policy, FUZZ_SENTINEL, sizeof policy);
    int rc = vl_inspect_declared(data, size, policy, &raw);
    if (rc == 0)
        FUZZ_CHECK(memchr(policy, 0, sizeof policy) != NULL);
    if (head)
        FUZZ_CHECK(rc == 0 && strcmp(policy, head->policy_id) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vl_limits_t lim = s_limits();
    vl_segment_t head, seg;
    memset(&head, 0, sizeof head);
    vl_reason_t peeked = vl_segment_peek(data, size, &lim, &head);
    FUZZ_CHECK_REASON(peeked);
    if (peeked == VL_OK)
        s_check_header(&head, &lim);
    s_check_declared(data, size, peeked == VL_OK ? &head : NULL);

    size_t need = peeked == VL_OK
                      ? vl_segment_arrays_size(head.horizon, &head.obs_spec, head.action.dims, 0)
                      : 0;
    size_t cap;
    void *arrays = s_fence(0, need, &cap);
    vl_reason_t reason = vl_segment_decode(data, size, &lim, &seg, arrays, cap);
    FUZZ_CHECK_REASON(reason);
    if (peeked != VL_OK)
        FUZZ_CHECK(reason == peeked);
    else
        FUZZ_CHECK(reason != VL_EPROTO && reason != VL_EVERSION && reason != VL_EPOLICY &&
                   reason != VL_EMISMATCH);
    if (reason == VL_OK) {
        s_check_decoded(&seg, &lim, arrays, cap);
        s_check_same_header(&head, &seg);
        FUZZ_CHECK(head.schema == seg.schema);
        s_check_round_trip(&seg, &lim);
    }
    s_unfence(0);
    return 0;
}
