/*  Tests of vl_replay: stale segments dropped and counted, lags reported,
    the ring keeps the newest and samples by priority with weights. */
#include "vl_replay.h"

#include <string.h>

#include "../tests/vl_test.h"

#define T 4

static vl_obs_spec_t s_spec = {.n_fields = 1,
                               .fields = {{.encoding = VL_OBS_F32, .ndim = 1, .shape = {2}}}};

/* Commits a segment acted by weights version `version`, tagged in seq. */
static void s_put(vl_buffer_t *b, uint64_t version, uint64_t tag)
{
    void *arrays;
    size_t cap;
    int slot = vl_buffer_claim(b, &arrays, &cap);
    vl_segment_t seg = {
        .horizon = T, .policy_version = version, .seq = tag, .action = vl_action_discrete(2)};
    vl_segment_set_spec(&seg, &s_spec);
    vl_segment_bind(&seg, arrays);
    vl_buffer_commit(b, slot, &seg);
}

static vl_learner_config_t s_config(uint32_t batch, uint32_t retain, uint32_t max_lag)
{
    vl_learner_config_t c = vl_learner_config_default();
    c.horizon = T;
    c.batch_segments = batch;
    c.capacity = 64;
    c.retain = retain;
    c.max_lag = max_lag;
    return c;
}

static void test_on_policy_drops_stale(void)
{
    vl_learner_config_t c = s_config(4, 0, 2);
    vl_buffer_t *b = vl_buffer_new(c.capacity, T, &s_spec, 1, 0);
    vl_replay_t *r = vl_replay_new(&c, b);
    uint64_t versions[4] = {5, 5, 2, 4};
    for (int i = 0; i < 4; i++)
        s_put(b, versions[i], (uint64_t)i);
    const vl_segment_t *segs[4];
    uint32_t lags[4];
    float w[4];
    int w_used = 1;
    int n = vl_replay_next(r, 5, 0, segs, lags, w, &w_used);
    VL_CHECK(n == 3 && w_used == 0);
    VL_CHECK(vl_replay_stale(r) == 1); // version 2 is 3 behind 5
    VL_CHECK(segs[0]->seq == 0 && segs[1]->seq == 1 && segs[2]->seq == 3);
    VL_CHECK(lags[0] == 0 && lags[1] == 0 && lags[2] == 1);
    vl_replay_done(r, NULL);
    VL_CHECK(vl_buffer_waiting(b) == 0);
    vl_replay_destroy(&r);
    vl_buffer_destroy(&b);
}

static void test_ring_keeps_newest_and_weights(void)
{
    vl_learner_config_t c = s_config(8, 4, 100);
    vl_buffer_t *b = vl_buffer_new(c.capacity, T, &s_spec, 1, 0);
    vl_replay_t *r = vl_replay_new(&c, b);
    for (uint64_t i = 0; i < 6; i++)
        s_put(b, 1, i);
    const vl_segment_t *segs[8];
    uint32_t lags[8];
    float w[8], sums[8];
    int w_used = 0;
    int n = vl_replay_next(r, 1, 0, segs, lags, w, &w_used);
    VL_CHECK(n == 8 && w_used == 1);
    float wmax = 0;
    for (int i = 0; i < n; i++) {
        VL_CHECK(segs[i]->seq >= 2); // the ring of 4 holds the newest: 2..5
        VL_CHECK(w[i] > 0 && w[i] <= 1.0f);
        wmax = w[i] > wmax ? w[i] : wmax;
        sums[i] = segs[i]->seq == 5 ? 100.0f : 1.0f; // segment 5 has large advantages
    }
    VL_CHECK(wmax == 1.0f);
    vl_replay_done(r, sums);
    int fives = 0, draws = 0;
    for (int k = 0; k < 200; k++) {
        n = vl_replay_next(r, 1, 0, segs, lags, w, &w_used);
        for (int i = 0; i < n; i++)
            fives += segs[i]->seq == 5;
        draws += n;
        vl_replay_done(r, NULL);
    }
    // alpha 0.6: priority 100^0.6 = 15.8 against 1 for the other three
    VL_CHECK(fives > draws * 3 / 4 && fives < draws);
    vl_replay_destroy(&r);
    vl_buffer_destroy(&b);
}

static void test_ring_drops_stale(void)
{
    vl_learner_config_t c = s_config(2, 8, 3);
    vl_buffer_t *b = vl_buffer_new(c.capacity, T, &s_spec, 1, 0);
    vl_replay_t *r = vl_replay_new(&c, b);
    s_put(b, 1, 0);
    s_put(b, 2, 1);
    const vl_segment_t *segs[2];
    uint32_t lags[2];
    float w[2];
    int w_used;
    VL_CHECK(vl_replay_next(r, 2, 0, segs, lags, w, &w_used) == 2);
    vl_replay_done(r, NULL);
    VL_CHECK(vl_replay_stale(r) == 0);
    VL_CHECK(vl_replay_next(r, 5, 0, segs, lags, w, &w_used) == 2); // version 1 is 4 behind
    VL_CHECK(vl_replay_stale(r) == 1);
    VL_CHECK(segs[0]->seq == 1 && segs[1]->seq == 1 && lags[0] == 3);
    vl_replay_done(r, NULL);
    vl_replay_destroy(&r);
    vl_buffer_destroy(&b);
}

int main(void)
{
    VL_RUN(test_on_policy_drops_stale);
    VL_RUN(test_ring_keeps_newest_and_weights);
    VL_RUN(test_ring_drops_stale);
    return VL_DONE();
}
