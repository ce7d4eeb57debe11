/*  vl_metrics: JSON lines and TensorBoard events of a learner's progress. */
#include "vl_metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/vl_log.h"
#include "../messages/vl_tfevents.h"

#define S_ROW_MAX 2048

#define S_TAIL_MAX 4096 // bytes read back from the end of an existing metrics.jsonl

struct vl_metrics_s {
    int fd; // metrics.jsonl
    char path[1024];
    vl_tfevents_t *events;
    uint64_t lost;
    int warned;
    double uptime_base; // seconds of the run before this process (its file's last uptime_s)
    uint64_t rows;      // rows this process wrote
};

/* A float field: "name": value, or null when not finite. */
static int s_float(char *out, size_t size, const char *name, float v)
{
    return isfinite(v) ? snprintf(out, size, ",\"%s\":%.9g", name, (double)v)
                       : snprintf(out, size, ",\"%s\":null", name);
}

int vl_metrics_json(const vl_metrics_row_t *r, char *out, size_t size)
{
    int n = snprintf(
        out, size,
        "{\"wall_time\":%.6f,\"uptime_s\":%.6f,\"env_steps\":%llu,\"version\":%llu,"
        "\"episodes\":%llu,\"segments_trained\":%llu,\"segments_dropped\":%llu,"
        "\"dropped_lag\":%llu,\"dropped_capacity\":%llu,\"dropped_budget\":%llu,"
        "\"dropped_invalid\":%llu,\"segments_arrived\":%llu,"
        "\"window\":%u,\"lag_min\":%u,\"lag_median\":%u,\"lag_max\":%u",
        r->wall_time, r->uptime_s, (unsigned long long)r->env_steps, (unsigned long long)r->version,
        (unsigned long long)r->episodes, (unsigned long long)r->segments_trained,
        (unsigned long long)r->segments_dropped, (unsigned long long)r->dropped_lag,
        (unsigned long long)r->dropped_capacity, (unsigned long long)r->dropped_budget,
        (unsigned long long)r->dropped_invalid, (unsigned long long)r->segments_arrived, r->window,
        r->lag_min, r->lag_median, r->lag_max);
    const struct {
        const char *name;
        float v;
    } f[] = {{"steps_per_s", r->steps_per_s},
             {"return_mean", r->return_mean},
             {"return_min", r->return_min},
             {"return_max", r->return_max},
             {"length_mean", r->length_mean},
             {"loss_pi", r->loss_pi},
             {"loss_v", r->loss_v},
             {"entropy", r->entropy},
             {"approx_kl", r->approx_kl},
             {"clip_frac", r->clip_frac},
             {"explained_var", r->explained_var},
             {"lr", r->lr},
             {"ingest_ms", r->ingest_ms},
             {"train_ms", r->train_ms}};
    for (size_t i = 0; i < sizeof f / sizeof f[0] && n > 0 && (size_t)n < size; i++)
        n += s_float(out + n, size - (size_t)n, f[i].name, f[i].v);
    for (uint32_t k = 0; k < r->n_figures && k < VL_FIGURES_KEPT && n > 0 && (size_t)n < size;
         k++) {
        char key[VL_FIGURE_NAME_MAX + 4];
        snprintf(key, sizeof key, "env/%s", r->figure_names[k]); // names: no quote, no escape
        n += s_float(out + n, size - (size_t)n, key, r->figure_means[k]);
    }
    if (n > 0 && (size_t)n + 2 < size)
        n += snprintf(out + n, size - (size_t)n, "}\n");
    return n > 0 && (size_t)n < size ? n : -1;
}

/* Returns the number after "key": in the JSON line, or def when it is not
   there or not a finite number >= 0. */
static double s_json_number(const char *line, const char *key, double def)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = strstr(line, pat);
    if (!at)
        return def;
    char *end;
    double v = strtod(at + strlen(pat), &end);
    return end != at + strlen(pat) && isfinite(v) && v >= 0 ? v : def;
}

/* Reads the uptime_s of the last whole row of the file open at fd (a run
   resumed into the same directory goes on from it). Returns 0 when the
   file is empty or its last row says none. */
static double s_last_uptime(int fd)
{
    char tail[S_TAIL_MAX + 1];
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0)
        return 0;
    off_t from = size > S_TAIL_MAX ? size - S_TAIL_MAX : 0;
    ssize_t n = pread(fd, tail, (size_t)(size - from), from);
    if (n <= 0)
        return 0;
    tail[n] = '\0';
    while (n > 0 && tail[n - 1] != '\n') // a row cut short is not the last row
        tail[--n] = '\0';
    if (n > 0)
        tail[--n] = '\0';
    const char *line = strrchr(tail, '\n');
    return s_json_number(line ? line + 1 : tail, "uptime_s", 0);
}

vl_metrics_t *vl_metrics_new(const char *dir)
{
    vl_metrics_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    snprintf(self->path, sizeof self->path, "%s/metrics.jsonl", dir);
    // read and written: a resumed run reads its last row back (s_last_uptime)
    self->fd = open(self->path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (self->fd < 0) {
        vl_error("cannot open %s: %s", self->path, strerror(errno));
        free(self);
        return NULL;
    }
    self->uptime_base = s_last_uptime(self->fd);
    if (!(self->events = vl_tfevents_new(dir))) {
        vl_metrics_destroy(&self);
        return NULL;
    }
    return self;
}

/* Appends a row's line with one write. Returns 0 or -1. */
static int s_write_json(vl_metrics_t *self, const vl_metrics_row_t *row)
{
    char line[S_ROW_MAX];
    int n = vl_metrics_json(row, line, sizeof line);
    if (n < 0)
        return -1;
    ssize_t w;
    do
        w = write(self->fd, line, (size_t)n);
    while (w < 0 && errno == EINTR);
    return w == n ? 0 : -1;
}

/* Writes a row's scalars as one TensorBoard event at its env steps. */
static int s_write_event(vl_metrics_t *self, const vl_metrics_row_t *r)
{
    const char *tags[] = {"charts/episode_return",
                          "charts/episode_return_min",
                          "charts/episode_return_max",
                          "charts/episode_length",
                          "charts/steps_per_s",
                          "charts/learning_rate",
                          "losses/policy_loss",
                          "losses/value_loss",
                          "losses/entropy",
                          "losses/approx_kl",
                          "losses/clip_frac",
                          "losses/explained_variance",
                          "lag/min",
                          "lag/median",
                          "lag/max",
                          "time/ingest_ms",
                          "time/train_ms",
                          "segments/dropped",
                          "segments/dropped_lag",
                          "segments/dropped_capacity",
                          "segments/dropped_budget",
                          "segments/dropped_invalid",
                          "segments/arrived"};
    float v[] = {r->return_mean,
                 r->return_min,
                 r->return_max,
                 r->length_mean,
                 r->steps_per_s,
                 r->lr,
                 r->loss_pi,
                 r->loss_v,
                 r->entropy,
                 r->approx_kl,
                 r->clip_frac,
                 r->explained_var,
                 (float)r->lag_min,
                 (float)r->lag_median,
                 (float)r->lag_max,
                 r->ingest_ms,
                 r->train_ms,
                 (float)r->segments_dropped,
                 (float)r->dropped_lag,
                 (float)r->dropped_capacity,
                 (float)r->dropped_budget,
                 (float)r->dropped_invalid,
                 (float)r->segments_arrived};
    int n = (int)(sizeof v / sizeof v[0]), keep = 0;
    const char *t2[sizeof v / sizeof v[0] + VL_FIGURES_KEPT];
    float v2[sizeof v / sizeof v[0] + VL_FIGURES_KEPT];
    char figure_tags[VL_FIGURES_KEPT][VL_FIGURE_NAME_MAX + 4];
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]) && (r->window || i > 3)) { // no returns before an episode ends
            t2[keep] = tags[i];
            v2[keep++] = v[i];
        }
    for (uint32_t k = 0; k < r->n_figures && k < VL_FIGURES_KEPT; k++)
        if (isfinite(r->figure_means[k])) {
            snprintf(figure_tags[k], sizeof figure_tags[k], "env/%s", r->figure_names[k]);
            t2[keep] = figure_tags[k];
            v2[keep++] = r->figure_means[k];
        }
    return vl_tfevents_scalars(self->events, (int64_t)r->env_steps, r->wall_time, t2, v2, keep);
}

/* Makes the row this process reports a row of the whole run: its uptime
   goes on from the run's before this process; figures this process has not
   measured yet are unknown (NaN, written null), not zero: losses before its
   first update (all exactly 0), the rate of its first row with no step. */
static void s_continue(vl_metrics_t *self, vl_metrics_row_t *r)
{
    r->uptime_s += self->uptime_base;
    if (r->loss_pi == 0 && r->loss_v == 0 && r->entropy == 0 && r->approx_kl == 0) {
        r->loss_pi = r->loss_v = r->entropy = r->approx_kl = NAN;
        r->clip_frac = r->explained_var = NAN;
    }
    if (self->rows == 0 && r->steps_per_s == 0)
        r->steps_per_s = NAN;
}

int vl_metrics_write(vl_metrics_t *self, const vl_metrics_row_t *row_in)
{
    vl_metrics_row_t copy = *row_in, *row = &copy;
    s_continue(self, row);
    self->rows++;
    int bad = s_write_json(self, row) != 0;
    bad |= s_write_event(self, row) != 0;
    if (bad) {
        self->lost++;
        if (!self->warned++)
            vl_error("%s: cannot write a metrics row (%s); counting the lost ones", self->path,
                     strerror(errno));
    }
    return bad ? -1 : 0;
}

uint64_t vl_metrics_lost(const vl_metrics_t *self)
{
    return self->lost;
}

void vl_metrics_destroy(vl_metrics_t **self_p)
{
    vl_metrics_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    if (self->fd >= 0)
        close(self->fd);
    vl_tfevents_destroy(&self->events);
    free(self);
    *self_p = NULL;
}
