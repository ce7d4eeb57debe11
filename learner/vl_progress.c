/*  vl_progress: the learner's progress line and the warning a window of
    drops deserves. */
#include "vl_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"
#include "vl_engine.h"

#define S_LAG_BINS_MAX 4096 // larger lags share the last bin: the line's lags are a pulse
#define S_LINE_MAX     768  // a warning: share, cause, fix

struct vl_progress_s {
    uint32_t max_lag, capacity, batch;
    uint64_t max_steps;
    int64_t start_ns; // monotonic, when the window began
    int64_t busy_ns;  // spent inside engine updates in the window
    uint64_t *lags;   // [n_bins] segments trained on at each lag in the window
    uint32_t n_bins;
    vl_stats_t prev; // the cumulative counts when the window began
};

static const char *s_cause_names[VL_DROPPED_CAUSES] = {"lag", "capacity", "budget", "invalid"};

void vl_lag_summary(const uint64_t *counts, uint32_t n, vl_stats_t *st)
{
    uint64_t total = 0, sum = 0, seen = 0;
    for (uint32_t l = 0; l < n; l++) {
        total += counts[l];
        sum += l * counts[l];
    }
    st->lag_min = st->lag_median = st->lag_max = 0;
    for (uint32_t l = 0, first = 1; total && l < n; l++) {
        if (!counts[l])
            continue;
        if (first)
            st->lag_min = l;
        first = 0;
        if (seen < (total + 1) / 2 && seen + counts[l] >= (total + 1) / 2)
            st->lag_median = l;
        seen += counts[l];
        st->lag_max = l;
    }
    st->lag_mean = total ? (float)sum / (float)total : 0;
}

vl_progress_t *vl_progress_new(const vl_learner_config_t *c, const vl_stats_t *start,
                               int64_t now_ns)
{
    vl_progress_t *self = calloc(1, sizeof *self);
    uint32_t bins = c->max_lag < S_LAG_BINS_MAX ? c->max_lag + 1 : S_LAG_BINS_MAX;
    if (!self || !(self->lags = calloc(bins, sizeof *self->lags))) {
        free(self);
        return NULL;
    }
    self->n_bins = bins;
    self->max_lag = c->max_lag;
    self->capacity = c->capacity;
    self->batch = c->batch_segments;
    self->max_steps = c->max_steps;
    self->start_ns = now_ns;
    if (start)
        self->prev = *start;
    return self;
}

void vl_progress_destroy(vl_progress_t **self_p)
{
    vl_progress_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    free(self->lags);
    free(self);
    *self_p = NULL;
}

void vl_progress_lags(vl_progress_t *self, const uint32_t *lags, int n)
{
    for (int i = 0; i < n; i++)
        self->lags[lags[i] < self->n_bins ? lags[i] : self->n_bins - 1]++;
}

void vl_progress_busy(vl_progress_t *self, int64_t ns)
{
    if (ns > 0)
        self->busy_ns += ns;
}

int vl_progress_due(const vl_progress_t *self, int64_t now_ns)
{
    return now_ns - self->start_ns >= VL_PROGRESS_EVERY_NS;
}

/* Returns a - b, or 0 when a counter went back (a learner's never do). */
static uint64_t s_delta(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

void vl_progress_window(const vl_progress_t *self, const vl_stats_t *st, int64_t now_ns,
                        vl_progress_window_t *w)
{
    const vl_stats_t *p = &self->prev;
    memset(w, 0, sizeof *w);
    w->secs = (double)(now_ns - self->start_ns) / 1e9;
    w->version = st->version;
    w->env_steps = st->env_steps;
    w->steps_per_s = w->secs > 0 ? (double)s_delta(st->env_steps, p->env_steps) / w->secs : 0;
    w->mean_return = st->mean_return;
    w->episodes = st->window;
    w->trained = s_delta(st->segments_trained, p->segments_trained);
    w->arrived = s_delta(st->segments_arrived, p->segments_arrived);
    w->dropped[VL_DROPPED_LAG] = s_delta(st->dropped_lag, p->dropped_lag);
    w->dropped[VL_DROPPED_CAPACITY] = s_delta(st->dropped_capacity, p->dropped_capacity);
    w->dropped[VL_DROPPED_BUDGET] = s_delta(st->dropped_budget, p->dropped_budget);
    w->dropped[VL_DROPPED_INVALID] = s_delta(st->dropped_invalid, p->dropped_invalid);
    vl_stats_t lag;
    vl_lag_summary(self->lags, self->n_bins, &lag);
    for (uint32_t l = 0; l < self->n_bins && !w->lagged; l++)
        w->lagged = self->lags[l] > 0;
    w->lag_min = lag.lag_min;
    w->lag_median = lag.lag_median;
    w->lag_max = lag.lag_max;
    double busy = w->secs > 0 ? (double)self->busy_ns / 1e9 / w->secs : 0;
    w->busy = busy < 1 ? busy : 1;
    w->max_lag = self->max_lag;
    w->capacity = self->capacity;
    w->batch = self->batch;
    w->max_steps = self->max_steps;
}

/* Writes v as "812", "91.2K", "3.70M" or "1.25G" into buf. */
static const char *s_si(double v, char *buf, size_t size)
{
    if (v < 1e3)
        snprintf(buf, size, "%.0f", v);
    else if (v < 1e6)
        snprintf(buf, size, "%.1fK", v / 1e3);
    else if (v < 1e9)
        snprintf(buf, size, "%.2fM", v / 1e6);
    else
        snprintf(buf, size, "%.2fG", v / 1e9);
    return buf;
}

/* Writes a share as "87%", or "<1%" when it is above 0 but rounds to 0. */
static const char *s_percent(double share, char *buf, size_t size)
{
    if (share > 0 && share < 0.005)
        snprintf(buf, size, "<1%%");
    else
        snprintf(buf, size, "%.0f%%", share * 100);
    return buf;
}

double vl_progress_share(const vl_progress_window_t *w, unsigned causes)
{
    uint64_t dropped = 0;
    for (int c = 0; c < VL_DROPPED_CAUSES; c++)
        dropped += causes & (1u << c) ? w->dropped[c] : 0;
    if (!dropped)
        return 0;
    if (!w->arrived)
        return 1; // drops of segments that arrived in an earlier window
    double share = (double)dropped / (double)w->arrived;
    return share < 1 ? share : 1;
}

/* Writes the drops' share and the causes that dropped any: "87%; lag 50560". */
static void s_causes(const vl_progress_window_t *w, char *out, size_t size)
{
    char pct[16];
    int n = snprintf(out, size, "%s", s_percent(vl_progress_share(w, ~0u), pct, sizeof pct));
    const char *sep = "; ";
    for (int c = 0; c < VL_DROPPED_CAUSES && n > 0 && (size_t)n < size; c++)
        if (w->dropped[c]) {
            n += snprintf(out + n, size - (size_t)n, "%s%s %llu", sep, s_cause_names[c],
                          (unsigned long long)w->dropped[c]);
            sep = ", ";
        }
}

const char *vl_progress_line(const vl_progress_window_t *w, char *out, size_t size)
{
    char steps[32], rate[32], ret[32], lag[48], causes[160];
    uint64_t dropped = 0;
    for (int c = 0; c < VL_DROPPED_CAUSES; c++)
        dropped += w->dropped[c];
    if (w->episodes)
        snprintf(ret, sizeof ret, "%.1f", (double)w->mean_return);
    else
        snprintf(ret, sizeof ret, "-");
    if (w->lagged)
        snprintf(lag, sizeof lag, "%u/%u/%u", w->lag_min, w->lag_median, w->lag_max);
    else
        snprintf(lag, sizeof lag, "-");
    s_causes(w, causes, sizeof causes);
    snprintf(out, size,
             "progress: v%llu %s steps (%s/s) return %s trained %llu dropped %llu of %llu "
             "arrived (%s) lag %s busy %.0f%% on %s",
             (unsigned long long)w->version, s_si((double)w->env_steps, steps, sizeof steps),
             s_si(w->steps_per_s, rate, sizeof rate), ret, (unsigned long long)w->trained,
             (unsigned long long)dropped, (unsigned long long)w->arrived, causes, lag,
             w->busy * 100, vl_engine_device());
    return out;
}

/* Writes how a cause dropped segments into what[size], and what that says of
   the learner and what to change into fix[size]. */
static void s_advice(const vl_progress_window_t *w, vl_dropped_cause_t cause, char *what, char *fix,
                     size_t size)
{
    switch (cause) {
    case VL_DROPPED_LAG:
        snprintf(what, size, "as more than --max-lag %u versions old", w->max_lag);
        snprintf(fix, size,
                 "this learner trains slower than its actors send; raise --batch (more segments "
                 "per update, now %u), lower --epochs, or raise --max-lag",
                 w->batch);
        break;
    case VL_DROPPED_CAPACITY:
        snprintf(what, size, "unread, evicted from a full buffer (--capacity %u)", w->capacity);
        snprintf(fix, size,
                 "segments arrive faster than this learner takes them; raise --capacity");
        break;
    case VL_DROPPED_INVALID:
        snprintf(what, size, "as invalid (mostly: %s)",
                 w->top_refusal ? w->top_refusal : "see the refusals logged above");
        snprintf(fix, size,
                 "its actors send segments this learner does not serve; match their env and "
                 "flags to the learner's (each refusal is logged once above)");
        break;
    default:
        snprintf(what, size, "as they came after the --max-steps budget (%llu env steps) was spent",
                 (unsigned long long)w->max_steps);
        snprintf(fix, size, "the run has the steps it asked for");
    }
}

vl_dropped_cause_t vl_progress_warning(const vl_progress_window_t *w, char *out, size_t size)
{
    unsigned budget = 1u << VL_DROPPED_BUDGET, others = ((1u << VL_DROPPED_CAUSES) - 1) & ~budget;
    double share = vl_progress_share(w, others);
    vl_dropped_cause_t cause = VL_DROPPED_BUDGET;
    if (share > VL_PROGRESS_WARN_SHARE) {
        cause = VL_DROPPED_LAG;
        for (int c = 0; c < VL_DROPPED_CAUSES; c++)
            if (c != VL_DROPPED_BUDGET && w->dropped[c] > w->dropped[cause])
                cause = (vl_dropped_cause_t)c;
    } else if (vl_progress_share(w, budget) <= VL_PROGRESS_WARN_SHARE) {
        out[0] = 0;
        return VL_DROPPED_CAUSES;
    }
    char pct[16], all[48], what[256], fix[256];
    s_percent(vl_progress_share(w, 1u << cause), pct, sizeof pct);
    s_percent(share, all, sizeof all);
    if (cause != VL_DROPPED_BUDGET && strcmp(pct, all) != 0) { // other causes dropped some too
        char in_all[16];
        snprintf(in_all, sizeof in_all, "%s", all);
        snprintf(all, sizeof all, " (%s with the other causes)", in_all);
    } else {
        all[0] = 0;
    }
    s_advice(w, cause, what, fix, sizeof what); // fix is as large
    snprintf(out, size, "%s of the segments that arrived in the last %.0f s were dropped %s%s: %s",
             pct, w->secs, what, all, fix);
    return cause;
}

void vl_progress_log(vl_progress_t *self, const vl_stats_t *st, const char *top_refusal,
                     int64_t now_ns)
{
    vl_progress_window_t w;
    vl_progress_window(self, st, now_ns, &w);
    w.top_refusal = top_refusal;
    char line[S_LINE_MAX];
    vl_info("%s", vl_progress_line(&w, line, sizeof line));
    vl_dropped_cause_t cause = vl_progress_warning(&w, line, sizeof line);
    if (cause == VL_DROPPED_BUDGET)
        vl_info("%s", line); // a budget is meant to end the run: no warning
    else if (cause != VL_DROPPED_CAUSES)
        vl_warn("%s", line);
    self->prev = *st;
    self->start_ns = now_ns;
    self->busy_ns = 0;
    memset(self->lags, 0, self->n_bins * sizeof self->lags[0]);
}
