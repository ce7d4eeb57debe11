/*  vl_offline: ingest, then an update per batch of arrivals. */
#include "vl_offline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"
#include "../store/vl_buffer.h"
#include "../store/vtrace.h"
#include "vl_ingest.h"
#include "vl_replay.h"
#include "vl_returns.h"
#include "vl_trainer.h"

struct vl_offline_s {
    vl_learner_config_t c;
    uint32_t A;
    vl_limits_t limits;
    vl_buffer_t *buf;
    vl_replay_t *replay;
    vl_trainer_t *trainer;
    uint32_t arrived; // segments ingested since the last update
    vl_offline_stats_t st;
    vl_returns_t returns; // of the last episodes
};

vl_offline_t *vl_offline_new(const vl_learner_config_t *c)
{
    vl_offline_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->c = *c;
    self->A = vl_action_outputs(&c->action);
    self->limits = vl_limits_default();
    self->buf = vl_buffer_new(c->capacity, c->horizon, &c->obs_spec, c->action.dims,
                              vl_learner_config_state_size(c));
    self->trainer = vl_trainer_new(c, c->obs_dim);
    self->replay = self->buf ? vl_replay_new(c, self->buf) : NULL;
    if (!self->buf || !self->trainer || !self->replay) {
        vl_offline_destroy(&self);
        return NULL;
    }
    vl_policy_set_portable(vl_trainer_policy(self->trainer));
    // SSE2: every x86-64 has it, and it rounds the same everywhere. Process-wide: an offline
    // learner owns its process (volley replay).
    if (vl_vtrace_path(1) != 1)
        vl_warn("V-trace has no SSE2 path in this build: checksums may differ across machines");
    return self;
}

void vl_offline_destroy(vl_offline_t **self_p)
{
    vl_offline_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    vl_replay_destroy(&self->replay);
    vl_trainer_destroy(&self->trainer);
    vl_buffer_destroy(&self->buf);
    free(self);
    *self_p = NULL;
}

/* Counts an accepted segment's steps and episodes (before it is committed). */
static void s_count(void *ctx, const vl_segment_t *s)
{
    vl_offline_t *self = ctx;
    self->st.accepted++;
    self->st.env_steps += s->horizon;
    self->st.episodes += s->n_episodes;
    for (uint32_t e = 0; e < s->n_episodes; e++) {
        vl_returns_add(&self->returns, s->episode_returns[e], s->episode_lengths[e]);
    }
}

/* Runs one update on what the replay policy picks. Returns 0 or -1. */
static int s_update(vl_offline_t *self)
{
    uint32_t B = self->c.batch_segments, lags[B];
    const vl_segment_t *segs[B];
    float w[B], sums[B];
    int w_used = 0, rc = 0;
    uint64_t stale_before = vl_replay_stale(self->replay);
    int n = vl_replay_next(self->replay, self->st.updates, 0, segs, lags, w, &w_used);
    if (n > 0) {
        vl_update_stats_t us;
        rc = vl_trainer_update(self->trainer, segs, n, w_used ? w : NULL, sums, &us);
        if (rc == 0) {
            self->st.updates++;
            self->st.trained += (uint64_t)n;
        }
    }
    vl_replay_done(self->replay, n > 0 && rc == 0 ? sums : NULL);
    self->st.stale += vl_replay_stale(self->replay) - stale_before;
    return rc;
}

int vl_offline_feed(vl_offline_t *self, const uint8_t *data, size_t size, int64_t recv_ns)
{
    self->st.messages++;
    if (self->c.max_steps && self->st.env_steps >= self->c.max_steps)
        return 0; // past the step budget: left out, as a live learner leaves it out
    vl_ingest_refusal_t refusal;
    vl_reason_t r =
        vl_ingest(self->buf, &self->c, &self->limits, data, size, recv_ns, s_count, self, &refusal);
    if (r != VL_OK) {
        if (!self->st.first_refusal[0]) // the field that differs: a --model or --env not the run's
            snprintf(self->st.first_refusal, sizeof self->st.first_refusal, "%s", refusal.why);
        self->st.refused[r]++;
        return 0;
    }
    if (++self->arrived < self->c.batch_segments)
        return 0;
    self->arrived = 0;
    return s_update(self);
}

void vl_offline_stats(const vl_offline_t *self, vl_offline_stats_t *out)
{
    *out = self->st;
    out->mean_return = vl_returns_mean(&self->returns);
}

uint64_t vl_offline_checksum(vl_offline_t *self)
{
    vl_policy_t *p = vl_trainer_policy(self->trainer);
    vl_tensor_t t[64];
    uint32_t n = vl_policy_tensor_count(p);
    for (uint32_t i = 0; i < n && i < 64; i++)
        vl_policy_tensor(p, i, &t[i]);
    return vl_tensors_checksum(t, n < 64 ? n : 64);
}
