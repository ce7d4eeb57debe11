/*  vl_ingest: decode, check, commit. */
#include "vl_ingest.h"

#include <string.h>

/* Returns VL_OK if a valid segment is one this learner trains on. */
static vl_reason_t s_check_fit(const vl_learner_config_t *c, uint32_t A, const vl_segment_t *s)
{
    if (s->horizon != c->horizon || s->num_actions != A ||
        !vl_obs_spec_equal(&s->obs_spec, &c->obs_spec) || strcmp(s->policy_id, c->policy) != 0)
        return VL_EMISMATCH;
    return VL_OK;
}

vl_reason_t vl_ingest(vl_buffer_t *buf, const vl_learner_config_t *config, uint32_t A,
                      const vl_limits_t *lim, const uint8_t *data, size_t size, int64_t recv_ns,
                      vl_ingest_fn accept, void *ctx)
{
    vl_segment_t seg;
    void *arrays;
    size_t cap;
    int slot = vl_buffer_claim(buf, &arrays, &cap);
    if (slot < 0)
        return VL_ETOOBIG; // every slot busy: cannot happen with capacity >= 2 batches
    vl_reason_t r = vl_segment_decode(data, size, lim, &seg, arrays, cap);
    if (r == VL_OK)
        r = s_check_fit(config, A, &seg);
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
