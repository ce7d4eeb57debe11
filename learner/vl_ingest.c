/*  vl_ingest: decode, check, commit. */
#include "vl_ingest.h"

#include <stdio.h>
#include <string.h>

#include "../messages/vl_spec.h"

/* Returns VL_OK if a valid segment is one this learner trains on (its
   config, and the state_size its buffer holds), else VL_EMISMATCH after
   writing which field differs, with both values, into why (if not NULL). */
static vl_reason_t s_check_fit(const vl_learner_config_t *c, uint32_t state_size,
                               const vl_segment_t *s, char *why, size_t why_size)
{
    char a[VL_ACTION_TEXT_MAX], b[VL_ACTION_TEXT_MAX];
    if (strcmp(s->policy_id, c->policy) != 0) {
        if (why)
            snprintf(why, why_size, "policy '%s', learner serves '%s'", s->policy_id, c->policy);
    } else if (s->horizon != c->horizon) {
        if (why)
            snprintf(why, why_size, "horizon %u, learner serves %u", s->horizon, c->horizon);
    } else if (s->action.dims != c->action.dims) {
        if (why)
            snprintf(why, why_size, "action width %u, learner serves %u", s->action.dims,
                     c->action.dims);
    } else if (!vl_action_equal(&s->action, &c->action)) {
        if (why)
            snprintf(why, why_size, "actions %.48s, learner serves %.48s",
                     vl_action_str(&s->action, a, sizeof a),
                     vl_action_str(&c->action, b, sizeof b));
    } else if (s->state_size != state_size) {
        if (why)
            snprintf(why, why_size, "state size %u, learner serves %u", s->state_size, state_size);
    } else if (!vl_obs_spec_equal(&s->obs_spec, &c->obs_spec)) {
        vl_spec_obs_str(&s->obs_spec, a, sizeof a);
        vl_spec_obs_str(&c->obs_spec, b, sizeof b);
        if (why)
            snprintf(why, why_size, "observation %.48s, learner serves %.48s", a, b);
    } else {
        return VL_OK;
    }
    return VL_EMISMATCH;
}

/* Returns VL_EMISMATCH, after writing which field differs into why (if not
   NULL), when a segment too big for a slot (r VL_ETOOBIG) has a header this
   learner does not serve (a longer horizon, a wider state): the refusal
   then names its cause as a smaller one's does. Otherwise returns r. */
static vl_reason_t s_name_oversize(const vl_learner_config_t *c, uint32_t state_size,
                                   const vl_limits_t *lim, const uint8_t *data, size_t size,
                                   vl_reason_t r, char *why, size_t why_size)
{
    vl_segment_t head;
    if (r != VL_ETOOBIG || vl_segment_peek(data, size, lim, &head) != VL_OK)
        return r;
    return s_check_fit(c, state_size, &head, why, why_size) == VL_OK ? r : VL_EMISMATCH;
}

vl_reason_t vl_ingest(vl_buffer_t *buf, const vl_learner_config_t *config, const vl_limits_t *lim,
                      const uint8_t *data, size_t size, int64_t recv_ns, vl_ingest_fn accept,
                      void *ctx, vl_ingest_refusal_t *refusal)
{
    vl_segment_t seg;
    void *arrays;
    size_t cap;
    int slot = vl_buffer_claim(buf, &arrays, &cap);
    if (slot < 0)
        return VL_ETOOBIG; // every slot busy: cannot happen with capacity >= 2 batches
    vl_reason_t r = vl_segment_decode(data, size, lim, &seg, arrays, cap);
    if (refusal) { // who sent a segment whose values failed: its header may still say
        vl_segment_t head;
        refusal->actor_id = r == VL_OK                                         ? seg.actor_id
                            : vl_segment_peek(data, size, lim, &head) == VL_OK ? head.actor_id
                                                                               : UINT32_MAX;
        snprintf(refusal->why, sizeof refusal->why, "%s", vl_reason_str(r));
    }
    uint32_t state_size = vl_buffer_state_size(buf);
    r = s_name_oversize(config, state_size, lim, data, size, r, refusal ? refusal->why : NULL,
                        refusal ? sizeof refusal->why : 0);
    if (r == VL_OK)
        r = s_check_fit(config, state_size, &seg, refusal ? refusal->why : NULL,
                        refusal ? sizeof refusal->why : 0);
    if (r != VL_OK) {
        vl_buffer_abandon(buf, slot);
        return r;
    }
    seg.recv_ns = recv_ns;
    if (accept)
        accept(ctx, &seg);
    vl_buffer_commit(buf, slot, &seg);
    return VL_OK;
}
