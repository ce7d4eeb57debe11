/*  vl_roster_test: per-actor accounting: sequence gaps, restarts, rates,
    silence, beats, a full table, row order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"
#include "../tests/vl_test.h"
#include "vl_roster.h"

#define S_SEC 1000000000LL

/* Fills rows for the roster as of now (caller frees). */
static Volley__ActorRow *s_rows(const vl_roster_t *r, int64_t now)
{
    uint32_t n = vl_roster_count(r);
    Volley__ActorRow *rows = calloc(n ? n : 1, sizeof *rows);
    for (uint32_t i = 0; i < n; i++)
        volley__actor_row__init(&rows[i]);
    vl_roster_rows(r, rows, now);
    return rows;
}

static void test_gaps_and_restarts(void)
{
    vl_roster_t *r = vl_roster_new(8, 5 * S_SEC);
    VL_CHECK(r);
    int64_t t = 100 * S_SEC;
    uint64_t seqs[] = {0, 1, 2, 5, 6, 10, 0, 1}; // 2 + 3 missing, then a restart
    for (int i = 0; i < 8; i++)
        vl_roster_segment(r, 3, "p", seqs[i], 0, 0, t);
    Volley__ActorRow *rows = s_rows(r, t);
    VL_CHECK(vl_roster_count(r) == 1);
    VL_CHECK(rows[0].actor_id == 3 && strcmp(rows[0].policy_id, "p") == 0);
    VL_CHECK(rows[0].segments == 8);
    VL_CHECK(rows[0].seq_gaps == 5);
    VL_CHECK(rows[0].restarts == 1);
    free(rows);
    vl_roster_destroy(&r);
    VL_CHECK(r == NULL);
}

static void test_rates_and_send_time(void)
{
    vl_roster_t *r = vl_roster_new(8, 5 * S_SEC);
    int64_t t = 100 * S_SEC;
    vl_roster_tick(r, t); // opens the first window
    // 20 segments in 2 s, each 3 ms from send to receive
    for (int i = 0; i < 20; i++)
        vl_roster_segment(r, 1, "p", (uint64_t)i, 1000, 1000 + 3000000, t + i * S_SEC / 10);
    vl_roster_tick(r, t + 2 * S_SEC);
    Volley__ActorRow *rows = s_rows(r, t + 2 * S_SEC);
    VL_CHECK_NEAR(rows[0].segments_per_s, 10.0, 1e-3);
    VL_CHECK_NEAR(rows[0].send_ms, 3.0, 1e-3);
    free(rows);
    // a window with nothing: the rate falls to 0
    vl_roster_tick(r, t + 3 * S_SEC);
    rows = s_rows(r, t + 3 * S_SEC);
    VL_CHECK(rows[0].segments_per_s == 0.0f);
    free(rows);
    vl_roster_destroy(&r);
}

static void test_hostile_send_time(void)
{
    vl_roster_t *r = vl_roster_new(8, 5 * S_SEC);
    int64_t t = 100 * S_SEC;
    vl_roster_tick(r, t);
    vl_roster_segment(r, 1, "p", 0, INT64_MIN, 1000, t);            // would overflow
    vl_roster_segment(r, 1, "p", 1, INT64_MAX, 1000, t);            // from the future
    vl_roster_segment(r, 1, "p", 2, -5000000000000000000, 1000, t); // years ago
    vl_roster_segment(r, 1, "p", 3, 1000, 1000 + 4000000, t);       // 4 ms: the one that counts
    vl_roster_tick(r, t + S_SEC);
    Volley__ActorRow *rows = s_rows(r, t + S_SEC);
    VL_CHECK(rows[0].segments == 4);
    VL_CHECK_NEAR(rows[0].send_ms, 4.0, 1e-3); // the one usable stamp; the rest left out
    free(rows);
    vl_roster_destroy(&r);
}

static void test_silence_and_beats(void)
{
    vl_roster_t *r = vl_roster_new(8, 5 * S_SEC);
    int64_t t = 100 * S_SEC;
    vl_roster_tick(r, t);
    vl_roster_segment(r, 1, "p", 0, 0, 0, t);
    vl_roster_segment(r, 2, "p", 0, 0, 0, t);
    vl_beat_t beat = {.policy_id = "p",
                      .actor_id = 2,
                      .weights_version = 42,
                      .apply_ms = 1.5f,
                      .env_steps_per_s = 1000.0f};
    vl_roster_beat(r, &beat, t + 6 * S_SEC); // actor 2 beats, actor 1 says nothing
    vl_roster_tick(r, t + 6 * S_SEC);
    VL_CHECK(vl_roster_alive(r) == 1);
    Volley__ActorRow *rows = s_rows(r, t + 6 * S_SEC);
    VL_CHECK(rows[0].actor_id == 1 && !rows[0].alive);
    VL_CHECK_NEAR(rows[0].silent_s, 6.0, 1e-3);
    VL_CHECK(rows[1].actor_id == 2 && rows[1].alive);
    VL_CHECK(rows[1].weights_version == 42);
    VL_CHECK_NEAR(rows[1].apply_ms, 1.5, 1e-6);
    VL_CHECK_NEAR(rows[1].env_steps_per_s, 1000.0, 1e-3);
    free(rows);
    vl_roster_segment(r, 1, "p", 1, 0, 0, t + 7 * S_SEC); // back
    VL_CHECK(vl_roster_alive(r) == 2);
    vl_roster_destroy(&r);
}

static void test_full_table(void)
{
    vl_roster_t *r = vl_roster_new(4, 5 * S_SEC);
    int64_t t = 100 * S_SEC;
    for (uint32_t id = 0; id < 4; id++)
        vl_roster_segment(r, id, "p", 0, 0, 0, t + id);   // actor 0 heard first
    vl_roster_segment(r, 9, "p", 0, 0, 0, t + 1 * S_SEC); // all alive: not tracked
    VL_CHECK(vl_roster_count(r) == 4);
    for (uint32_t id = 1; id < 4; id++)
        vl_roster_segment(r, id, "p", 1, 0, 0, t + 4 * S_SEC);
    vl_roster_segment(r, 9, "p", 0, 0, 0, t + 6 * S_SEC); // 0 silent: replaced by 9
    VL_CHECK(vl_roster_count(r) == 4);
    Volley__ActorRow *rows = s_rows(r, t + 6 * S_SEC);
    uint32_t want[] = {1, 2, 3, 9};
    for (int i = 0; i < 4; i++)
        VL_CHECK(rows[i].actor_id == want[i]); // sorted by id within a policy
    free(rows);
    // the rest are still found after the eviction moved entries
    for (uint32_t id = 1; id < 4; id++)
        vl_roster_segment(r, id, "p", 2, 0, 0, t + 7 * S_SEC);
    VL_CHECK(vl_roster_count(r) == 4);
    rows = s_rows(r, t + 7 * S_SEC);
    for (int i = 0; i < 3; i++)
        VL_CHECK(rows[i].segments == 3 && rows[i].seq_gaps == 0);
    free(rows);
    vl_roster_destroy(&r);
}

static void test_same_id_two_policies(void)
{
    vl_roster_t *r = vl_roster_new(8, 5 * S_SEC);
    vl_roster_segment(r, 0, "beta", 0, 0, 0, S_SEC);
    vl_roster_segment(r, 0, "alpha", 0, 0, 0, S_SEC);
    vl_roster_segment(r, 0, "alpha", 1, 0, 0, S_SEC);
    VL_CHECK(vl_roster_count(r) == 2);
    Volley__ActorRow *rows = s_rows(r, S_SEC);
    VL_CHECK(strcmp(rows[0].policy_id, "alpha") == 0 && rows[0].segments == 2);
    VL_CHECK(strcmp(rows[1].policy_id, "beta") == 0 && rows[1].restarts == 0);
    free(rows);
    vl_roster_destroy(&r);
}

int main(void)
{
    vl_log_init("roster_test", VL_LOG_WARN);
    VL_RUN(test_gaps_and_restarts);
    VL_RUN(test_rates_and_send_time);
    VL_RUN(test_hostile_send_time);
    VL_RUN(test_silence_and_beats);
    VL_RUN(test_full_table);
    VL_RUN(test_same_id_two_policies);
    return VL_DONE();
}
