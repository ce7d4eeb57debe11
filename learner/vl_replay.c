/*  vl_replay: on-policy batches, or a prioritized ring of recent segments. */
#include "vl_replay.h"

#include <math.h>
#include <stdlib.h>

#include "../common/vl_log.h"
#include "../store/vl_sampler.h"

struct vl_replay_s {
    vl_learner_config_t c;
    vl_buffer_t *buf;
    int *taken; // [batch] slots of the current update (on-policy), or new arrivals
    int n_taken;
    // ring mode
    vl_sampler_t *sampler; // priorities by slot
    int *ring;             // [retain] retained slots, oldest at head
    uint32_t head, count;
    uint32_t *chosen; // [batch] slots sampled for the current update
    int n_chosen;
    double max_priority; // new segments get it, so each is seen soon
    int batch;           // on-policy: segments an update waits for, learned from the actors
    int last;            // no more segments will come (the step budget is spent)
    uint64_t updates, stale;
};

vl_replay_t *vl_replay_new(const vl_learner_config_t *c, vl_buffer_t *buf)
{
    vl_replay_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->c = *c;
    self->buf = buf;
    self->max_priority = 1.0;
    self->batch = (int)c->batch_segments;
    self->taken = calloc(c->batch_segments, sizeof(int));
    self->chosen = calloc(c->batch_segments, sizeof(uint32_t));
    int ok = self->taken && self->chosen;
    if (ok && c->retain > 0) {
        self->sampler = vl_sampler_new(c->capacity, c->seed ^ 0x9e11ULL);
        self->ring = calloc(c->retain, sizeof(int));
        ok = self->sampler && self->ring;
    }
    if (!ok)
        vl_replay_destroy(&self);
    return self;
}

void vl_replay_destroy(vl_replay_t **self_p)
{
    vl_replay_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    vl_sampler_destroy(&self->sampler);
    free(self->taken);
    free(self->chosen);
    free(self->ring);
    free(self);
    *self_p = NULL;
}

/* Returns how many versions behind `version` a slot's segment is. */
static uint64_t s_lag(const vl_replay_t *self, int slot, uint64_t version)
{
    uint64_t v = vl_buffer_segment(self->buf, slot)->policy_version;
    return version > v ? version - v : 0;
}

/* On-policy: takes up to --batch segments. Arrivals that stop short of a
   batch for batch_wait_ms (actors waiting for weights trained on what they
   sent) are trained on as they are, and the batch waited for becomes what
   the actors send between weights; it grows back to --batch as arrivals
   allow. Returns how many were taken (0 on timeout). */
static int s_take(vl_replay_t *self, int timeout_ms)
{
    int full = (int)self->c.batch_segments, idle = (int)self->c.batch_wait_ms;
    int waiting = vl_buffer_waiting(self->buf);
    if (self->last && waiting > 0) // a full batch would never come: train on what waits
        return vl_buffer_take(self->buf, waiting < full ? waiting : full, 0, self->taken);
    if (idle == 0 || timeout_ms == 0)
        return vl_buffer_take(self->buf, full, timeout_ms, self->taken);
    int64_t deadline = vl_now_ns() + (int64_t)timeout_ms * 1000000;
    for (int before = -1;;) {
        waiting = vl_buffer_waiting(self->buf);
        if (waiting > self->batch) // more came than we waited for: wait for more next time
            self->batch = waiting < full ? waiting : full;
        int n = vl_buffer_take(self->buf, self->batch, idle, self->taken);
        if (n > 0)
            return n;
        waiting = vl_buffer_waiting(self->buf);
        if (waiting > 0 && waiting == before) { // none came for a whole wait: train on these
            self->batch = waiting;
            return vl_buffer_take(self->buf, waiting, 0, self->taken);
        }
        before = waiting;
        if (vl_now_ns() >= deadline)
            return 0;
    }
}

/* On-policy: the next batch from the buffer, stale segments dropped. */
static int s_next_batch(vl_replay_t *self, uint64_t version, int timeout_ms,
                        const vl_segment_t **segs, uint32_t *lags)
{
    self->n_taken = s_take(self, timeout_ms);
    int kept = 0;
    for (int i = 0; i < self->n_taken; i++) {
        uint64_t lag = s_lag(self, self->taken[i], version);
        if (lag > self->c.max_lag) {
            self->stale++;
            continue;
        }
        lags[kept] = (uint32_t)lag;
        segs[kept++] = vl_buffer_segment(self->buf, self->taken[i]);
    }
    return kept;
}

/* Ring: gives the oldest retained slot back to the buffer. */
static void s_ring_drop_oldest(vl_replay_t *self)
{
    int slot = self->ring[self->head];
    vl_sampler_set(self->sampler, (uint32_t)slot, 0);
    vl_buffer_release(self->buf, &slot, 1);
    self->head = (self->head + 1) % self->c.retain;
    self->count--;
}

/* Ring: adds newly arrived segments (dropping stale ones and, when full,
   the oldest retained), then drops retained segments that went stale. */
static void s_ring_admit(vl_replay_t *self, uint64_t version, int timeout_ms)
{
    int waiting = vl_buffer_waiting(self->buf), want = waiting > 0 ? waiting : 1;
    if (want > (int)self->c.batch_segments)
        want = (int)self->c.batch_segments;
    int n = vl_buffer_take(self->buf, want, self->count ? 0 : timeout_ms, self->taken);
    for (int i = 0; i < n; i++) {
        int slot = self->taken[i];
        if (s_lag(self, slot, version) > self->c.max_lag) {
            self->stale++;
            vl_buffer_release(self->buf, &slot, 1);
            continue;
        }
        if (self->count == self->c.retain)
            s_ring_drop_oldest(self);
        self->ring[(self->head + self->count++) % self->c.retain] = slot;
        vl_sampler_set(self->sampler, (uint32_t)slot, self->max_priority);
    }
    while (self->count && s_lag(self, self->ring[self->head], version) > self->c.max_lag) {
        s_ring_drop_oldest(self);
        self->stale++;
    }
}

/* Ring: a prioritized batch with importance weights. */
static int s_next_sampled(vl_replay_t *self, uint64_t version, int timeout_ms,
                          const vl_segment_t **segs, uint32_t *lags, float *w)
{
    s_ring_admit(self, version, timeout_ms);
    if (self->count == 0)
        return 0;
    float beta = vl_sampler_beta(self->c.beta0, self->updates, self->c.beta_steps);
    self->n_chosen =
        (int)vl_sampler_sample(self->sampler, self->c.batch_segments, beta, self->chosen, w);
    for (int i = 0; i < self->n_chosen; i++) {
        segs[i] = vl_buffer_segment(self->buf, (int)self->chosen[i]);
        lags[i] = (uint32_t)s_lag(self, (int)self->chosen[i], version);
    }
    return self->n_chosen;
}

int vl_replay_next(vl_replay_t *self, uint64_t version, int timeout_ms, const vl_segment_t **segs,
                   uint32_t *lags, float *w, int *w_used)
{
    *w_used = self->sampler != NULL;
    if (self->sampler)
        return s_next_sampled(self, version, timeout_ms, segs, lags, w);
    return s_next_batch(self, version, timeout_ms, segs, lags);
}

void vl_replay_done(vl_replay_t *self, const float *adv_sums)
{
    self->updates++;
    if (!self->sampler) {
        vl_buffer_release(self->buf, self->taken, self->n_taken);
        self->n_taken = 0;
        return;
    }
    for (int i = 0; adv_sums && i < self->n_chosen; i++) {
        double p = self->c.alpha == 0 ? 1.0 : pow(adv_sums[i], self->c.alpha);
        p = isfinite(p) && p > VL_SAMPLER_FLOOR ? p : VL_SAMPLER_FLOOR;
        if (p > self->max_priority)
            self->max_priority = p;
        vl_sampler_set(self->sampler, self->chosen[i], p);
    }
    self->n_chosen = 0;
}

uint64_t vl_replay_stale(const vl_replay_t *self)
{
    return self->stale;
}

void vl_replay_set_last(vl_replay_t *self)
{
    self->last = 1;
}
