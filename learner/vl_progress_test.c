/*  vl_progress_test: the progress line of a window, the warning a window of
    drops deserves (its cause and fix, none under the share, the budget's an
    info line), and the window kept by vl_progress_log. */
#include <string.h>

#include "../common/vl_log.h"
#include "../tests/vl_test.h"
#include "vl_progress.h"

/* A window of a learner that drops 87% of what arrives for lag. */
static vl_progress_window_t s_lagging(void)
{
    vl_progress_window_t w = {.secs = 10,
                              .version = 812,
                              .env_steps = 3700000,
                              .steps_per_s = 91200,
                              .mean_return = 500,
                              .episodes = 100,
                              .trained = 7296,
                              .arrived = 57856,
                              .dropped = {[VL_DROPPED_LAG] = 50560},
                              .lagged = 1,
                              .lag_min = 4,
                              .lag_median = 4,
                              .lag_max = 4,
                              .busy = 0.96,
                              .max_lag = 4,
                              .capacity = 64,
                              .batch = 16};
    return w;
}

static void test_line(void)
{
    vl_progress_window_t w = s_lagging();
    char line[512];
    VL_CHECK(strcmp(vl_progress_line(&w, line, sizeof line),
                    "progress: v812 3.70M steps (91.2K/s) return 500.0 trained 7296 dropped 50560 "
                    "of 57856 arrived (87%; lag 50560) lag 4/4/4 busy 96% on cpu") == 0);
    w.dropped[VL_DROPPED_CAPACITY] = 12;
    w.episodes = 0, w.lagged = 0;
    vl_progress_line(&w, line, sizeof line);
    VL_CHECK(strstr(line, " return - ") && strstr(line, " lag - busy "));
    VL_CHECK(strstr(line, "dropped 50572 of 57856 arrived (87%; lag 50560, capacity 12)"));
}

static void test_lag_warning(void)
{
    vl_progress_window_t w = s_lagging();
    char out[768];
    VL_CHECK(vl_progress_warning(&w, out, sizeof out) == VL_DROPPED_LAG);
    VL_CHECK(strcmp(out, "87% of the segments that arrived in the last 10 s were dropped as more "
                         "than --max-lag 4 versions old: this learner trains slower than its "
                         "actors send; raise --batch (more segments per update, now 16), lower "
                         "--epochs, or raise --max-lag") == 0);
}

/* The main cause is named; the share of all causes follows when it differs. */
static void test_capacity_and_invalid_warnings(void)
{
    vl_progress_window_t w = s_lagging();
    char out[768];
    w.dropped[VL_DROPPED_LAG] = 3000;
    w.dropped[VL_DROPPED_CAPACITY] = 6000;
    VL_CHECK(vl_progress_warning(&w, out, sizeof out) == VL_DROPPED_CAPACITY);
    VL_CHECK(strstr(out, "10% of the segments") == out);
    VL_CHECK(strstr(out, "evicted from a full buffer (--capacity 64) (16% with the other causes)"));
    VL_CHECK(strstr(out, "raise --capacity"));
    w.dropped[VL_DROPPED_INVALID] = 9000;
    w.top_refusal = "not what this receiver serves";
    VL_CHECK(vl_progress_warning(&w, out, sizeof out) == VL_DROPPED_INVALID);
    VL_CHECK(strstr(out, "as invalid (mostly: not what this receiver serves)"));
}

/* Under the share: no warning; the budget's own drops: an info line's text. */
static void test_quiet_and_budget(void)
{
    vl_progress_window_t w = s_lagging();
    char out[768] = "x";
    w.dropped[VL_DROPPED_LAG] = 2800; // 4.8%
    VL_CHECK(vl_progress_warning(&w, out, sizeof out) == VL_DROPPED_CAUSES && out[0] == 0);
    w.dropped[VL_DROPPED_BUDGET] = 40000;
    w.max_steps = 4000000;
    VL_CHECK(vl_progress_warning(&w, out, sizeof out) == VL_DROPPED_BUDGET);
    VL_CHECK(strstr(out, "after the --max-steps budget (4000000 env steps) was spent"));
    w.arrived = 0; // drops of segments that arrived before the window: all of it
    VL_CHECK(vl_progress_share(&w, 1u << VL_DROPPED_BUDGET) == 1.0);
    w.dropped[VL_DROPPED_LAG] = w.dropped[VL_DROPPED_BUDGET] = 0;
    VL_CHECK(vl_progress_share(&w, ~0u) == 0.0);
}

static void test_lag_summary(void)
{
    uint64_t counts[6] = {0, 2, 0, 5, 0, 1};
    vl_stats_t st;
    vl_lag_summary(counts, 6, &st);
    VL_CHECK(st.lag_min == 1 && st.lag_median == 3 && st.lag_max == 5);
    VL_CHECK_NEAR(st.lag_mean, (2 + 15 + 5) / 8.0, 1e-6);
    uint64_t none[3] = {0};
    vl_lag_summary(none, 3, &st);
    VL_CHECK(st.lag_min == 0 && st.lag_max == 0 && st.lag_mean == 0);
}

/* A window is what changed since the last line: a learner resumed at 1M
   steps logs its own steps, and each window starts afresh. */
static void test_windows(void)
{
    vl_learner_config_t c = {.max_lag = 4, .capacity = 64, .batch_segments = 16};
    vl_stats_t start = {.env_steps = 1000000};
    vl_progress_t *p = vl_progress_new(&c, &start, 0);
    VL_CHECK(p);
    VL_CHECK(!vl_progress_due(p, VL_PROGRESS_EVERY_NS - 1) &&
             vl_progress_due(p, VL_PROGRESS_EVERY_NS));
    uint32_t lags[3] = {4, 4, 9};
    vl_progress_lags(p, lags, 3);
    vl_progress_busy(p, VL_PROGRESS_EVERY_NS / 2);
    vl_stats_t now = {.env_steps = 1000000 + 640,
                      .segments_arrived = 10,
                      .segments_trained = 7,
                      .dropped_lag = 3,
                      .segments_dropped = 3};
    vl_progress_window_t w;
    vl_progress_window(p, &now, VL_PROGRESS_EVERY_NS, &w);
    VL_CHECK(w.secs == 10 && w.steps_per_s == 64 && w.env_steps == 1000640);
    VL_CHECK(w.arrived == 10 && w.trained == 7 && w.dropped[VL_DROPPED_LAG] == 3);
    VL_CHECK(w.lagged && w.lag_min == 4 && w.lag_max == 4 && w.busy == 0.5); // 9: the last bin
    vl_progress_log(p, &now, NULL, VL_PROGRESS_EVERY_NS);
    VL_CHECK(!vl_progress_due(p, VL_PROGRESS_EVERY_NS + 1));
    now.segments_arrived += 5;
    vl_progress_window(p, &now, 2 * VL_PROGRESS_EVERY_NS, &w);
    VL_CHECK(w.arrived == 5 && w.trained == 0 && w.dropped[VL_DROPPED_LAG] == 0);
    VL_CHECK(!w.lagged && w.busy == 0 && w.steps_per_s == 0);
    vl_progress_destroy(&p);
    vl_progress_destroy(&p);
    VL_CHECK(p == NULL);
}

int main(void)
{
    vl_log_init("vl_progress_test", VL_LOG_ERROR);
    VL_RUN(test_line);
    VL_RUN(test_lag_warning);
    VL_RUN(test_capacity_and_invalid_warnings);
    VL_RUN(test_quiet_and_budget);
    VL_RUN(test_lag_summary);
    VL_RUN(test_windows);
    return VL_DONE();
}
