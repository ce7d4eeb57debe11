/*  Tests of vl_figures: a segment's figures survive the message, hostile
    ones are refused by reason, and a learner's mean is over the last
    VL_FIGURES_WINDOW values of each name. */
#include "vl_figures.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../tests/vl_test.h"
#include "volley.pb-c.h"

static const char *const s_names[] = {"score", "perf"};

/* Figures a segment's two episodes gave: score 21 and 15, perf once. */
static vl_figures_t s_two_episodes(void)
{
    vl_figures_t f;
    vl_figures_name(&f, 2, s_names);
    vl_figures_add(&f, (const float[]){21, NAN});
    vl_figures_add(&f, (const float[]){15, 0.5f});
    return f;
}

static void test_round_trip(void)
{
    vl_figures_t f = s_two_episodes(), back;
    Volley__Figure store[VL_FIGURES_MAX], *msgs[VL_FIGURES_MAX];
    size_t n = vl_figures_to_msg(&f, store, msgs);
    VL_CHECK(n == 2 && vl_figures_from_msg(n, msgs, &back) == VL_OK);
    VL_CHECK(back.n == 2 && strcmp(back.name[1], "perf") == 0);
    VL_CHECK(back.count[0] == 2 && back.values[0][0] == 21 && back.values[0][1] == 15);
    VL_CHECK(back.count[1] == 1 && back.values[1][0] == 0.5f);
    vl_figures_clear(&f);
    VL_CHECK(f.n == 2 && f.count[0] == 0 && f.count[1] == 0);
}

/* Each hostile message is refused with its reason. */
static void test_hostile_refused(void)
{
    vl_figures_t f = s_two_episodes(), out;
    Volley__Figure store[VL_FIGURES_MAX + 1], *msgs[VL_FIGURES_MAX + 1];
    vl_figures_to_msg(&f, store, msgs);
    float many[VL_FIGURE_VALUES_MAX + 1] = {0};
    char long_name[VL_FIGURE_NAME_MAX + 1];
    memset(long_name, 'a', VL_FIGURE_NAME_MAX);
    long_name[VL_FIGURE_NAME_MAX] = 0;
    struct {
        const char *name;
        size_t n_values;
        float *values;
        vl_reason_t want;
    } cases[] = {
        {"a score", 1, many, VL_EPOLICY},
        {"", 1, many, VL_EPOLICY},
        {"\x01", 1, many, VL_EPOLICY},
        {long_name, 1, many, VL_EPOLICY},
        {"score", 1, many, VL_EPOLICY}, // the first figure's name again
        {"x", VL_FIGURE_VALUES_MAX + 1, many, VL_ETOOBIG},
        {"x", 1, (float[]){NAN}, VL_ENONFINITE},
        {"x", 1, (float[]){-INFINITY}, VL_ENONFINITE},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        Volley__Figure bad = store[1];
        bad.name = (char *)cases[c].name;
        bad.n_values = cases[c].n_values;
        bad.values = cases[c].values;
        msgs[1] = &bad;
        VL_CHECK(vl_figures_from_msg(2, msgs, &out) == cases[c].want);
    }
    msgs[1] = &store[1];
    for (int k = 2; k <= VL_FIGURES_MAX; k++)
        msgs[k] = &store[1];
    VL_CHECK(vl_figures_from_msg(VL_FIGURES_MAX + 1, msgs, &out) == VL_ETOOBIG);
}

/* More values in one segment than it carries: the first VL_FIGURE_VALUES_MAX. */
static void test_segment_bounded(void)
{
    vl_figures_t f;
    vl_figures_name(&f, 1, s_names);
    for (int i = 0; i < VL_FIGURE_VALUES_MAX + 5; i++)
        vl_figures_add(&f, (const float[]){(float)i});
    VL_CHECK(f.count[0] == VL_FIGURE_VALUES_MAX && f.values[0][VL_FIGURE_VALUES_MAX - 1] == 63);
}

/* The mean is over each name's last VL_FIGURES_WINDOW values, whatever
   segments brought them; names past VL_FIGURES_KEPT are not kept. */
static void test_window_mean(void)
{
    static vl_figure_means_t m;
    vl_figures_t f = s_two_episodes();
    vl_figure_means_add(&m, &f);
    VL_CHECK(m.n == 2 && strcmp(m.fig[0].name, "score") == 0);
    VL_CHECK(vl_figure_means_get(&m, 0) == 18 && vl_figure_means_get(&m, 1) == 0.5f);
    vl_figures_name(&f, 1, s_names); // score alone, 10 a segment
    for (int seg = 0; seg < 20; seg++) {
        vl_figures_clear(&f);
        for (int e = 0; e < 10; e++)
            vl_figures_add(&f, (const float[]){seg < 10 ? 0.0f : 5.0f});
        vl_figure_means_add(&m, &f);
    }
    VL_CHECK(m.fig[0].n == VL_FIGURES_WINDOW && vl_figure_means_get(&m, 0) == 5);
    VL_CHECK(vl_figure_means_get(&m, 1) == 0.5f); // perf: its one value
    for (int k = 0; k < VL_FIGURES_KEPT + 2; k++) {
        char name[8];
        snprintf(name, sizeof name, "f%d", k);
        const char *names[] = {name};
        vl_figures_name(&f, 1, names);
        vl_figures_add(&f, (const float[]){1});
        vl_figure_means_add(&m, &f);
    }
    VL_CHECK(m.n == VL_FIGURES_KEPT && strcmp(m.fig[VL_FIGURES_KEPT - 1].name, "f5") == 0);
}

int main(void)
{
    VL_RUN(test_round_trip);
    VL_RUN(test_hostile_refused);
    VL_RUN(test_segment_bounded);
    VL_RUN(test_window_mean);
    return VL_DONE();
}
