/*  vl_broker_books_test: the broker's books of what its learners dropped
    after routing: each learner's newest stats count (a repeated report adds
    nothing), refusals already booked as segment drops are not counted again,
    and a learner connection that ends keeps its drops in the books. */
#include <string.h>

#include "../tests/vl_test.h"
#include "vl_broker_engine.h"

static vl_broker_t s_broker; // large: static, zeroed

/* Sets a learner entry's newest stats: drops by cause, and one refusal row
   the broker has booked `booked` of. */
static void s_report(vlb_learner_t *l, uint64_t lag, uint64_t capacity, uint64_t invalid,
                     uint64_t booked)
{
    l->have_stats = 1;
    l->stats.dropped_lag = lag;
    l->stats.dropped_capacity = capacity;
    l->stats.dropped_budget = 0;
    l->stats.dropped_invalid = invalid;
    l->n_refusals = 1;
    l->refusals[0].counted = booked;
}

static void test_no_stats_no_drops(void)
{
    vlb_learner_t l;
    memset(&l, 0, sizeof l);
    l.stats.dropped_lag = 99; // stale stats of an earlier connection: not believed
    uint64_t out[VLB_LEARNER_CAUSES];
    vl_books_learner_drops(&l, out);
    VL_CHECK(out[VLB_LEARNER_LAG] == 0 && out[VLB_LEARNER_INVALID] == 0);
}

static void test_booked_refusals_not_counted_twice(void)
{
    vlb_learner_t l;
    memset(&l, 0, sizeof l);
    s_report(&l, 50560, 3, 10, 7); // 7 of its 10 refusals are segment drops already
    uint64_t out[VLB_LEARNER_CAUSES];
    vl_books_learner_drops(&l, out);
    VL_CHECK(out[VLB_LEARNER_LAG] == 50560 && out[VLB_LEARNER_CAPACITY] == 3);
    VL_CHECK(out[VLB_LEARNER_BUDGET] == 0 && out[VLB_LEARNER_INVALID] == 3);
    s_report(&l, 0, 0, 4, 7); // never below 0
    vl_books_learner_drops(&l, out);
    VL_CHECK(out[VLB_LEARNER_INVALID] == 0);
}

static void test_newest_count_and_gone(void)
{
    memset(&s_broker, 0, sizeof s_broker);
    s_broker.n_learners = 2;
    s_report(&s_broker.learners[0], 100, 0, 0, 0);
    s_report(&s_broker.learners[0], 120, 0, 0, 0); // a later report: cumulative, not added
    s_report(&s_broker.learners[1], 5, 1, 0, 0);
    uint64_t out[VLB_LEARNER_CAUSES];
    VL_CHECK(vl_books_learners_dropped(&s_broker, out) == 126);
    VL_CHECK(out[VLB_LEARNER_LAG] == 125 && out[VLB_LEARNER_CAPACITY] == 1);
    vl_books_learner_gone(&s_broker, &s_broker.learners[0]); // it reconnects: counts restart
    s_report(&s_broker.learners[0], 2, 0, 0, 0);
    VL_CHECK(vl_books_learners_dropped(&s_broker, out) == 128);
    VL_CHECK(out[VLB_LEARNER_LAG] == 127);
}

int main(void)
{
    VL_RUN(test_no_stats_no_drops);
    VL_RUN(test_booked_refusals_not_counted_twice);
    VL_RUN(test_newest_count_and_gone);
    return VL_DONE();
}
