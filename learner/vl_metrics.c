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

struct vl_metrics_s {
    int fd; // metrics.jsonl
    char path[1024];
    vl_tfevents_t *events;
    uint64_t lost;
    int warned;
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
        "\"window\":%u,\"lag_min\":%u,\"lag_median\":%u,\"lag_max\":%u",
        r->wall_time, r->uptime_s, (unsigned long long)r->env_steps, (unsigned long long)r->version,
        (unsigned long long)r->episodes, (unsigned long long)r->segments_trained,
        (unsigned long long)r->segments_dropped, r->window, r->lag_min, r->lag_median, r->lag_max);
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
    if (n > 0 && (size_t)n + 2 < size)
        n += snprintf(out + n, size - (size_t)n, "}\n");
    return n > 0 && (size_t)n < size ? n : -1;
}

vl_metrics_t *vl_metrics_new(const char *dir)
{
    vl_metrics_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    snprintf(self->path, sizeof self->path, "%s/metrics.jsonl", dir);
    self->fd = open(self->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (self->fd < 0) {
        vl_error("cannot open %s: %s", self->path, strerror(errno));
        free(self);
        return NULL;
    }
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
                          "segments/dropped"};
    float v[] = {r->return_mean,    r->return_min,
                 r->return_max,     r->length_mean,
                 r->steps_per_s,    r->lr,
                 r->loss_pi,        r->loss_v,
                 r->entropy,        r->approx_kl,
                 r->clip_frac,      r->explained_var,
                 (float)r->lag_min, (float)r->lag_median,
                 (float)r->lag_max, r->ingest_ms,
                 r->train_ms,       (float)r->segments_dropped};
    int n = (int)(sizeof v / sizeof v[0]), keep = 0;
    const char *t2[sizeof v / sizeof v[0]];
    float v2[sizeof v / sizeof v[0]];
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]) && (r->window || i > 3)) { // no returns before an episode ends
            t2[keep] = tags[i];
            v2[keep++] = v[i];
        }
    return vl_tfevents_scalars(self->events, (int64_t)r->env_steps, r->wall_time, t2, v2, keep);
}

int vl_metrics_write(vl_metrics_t *self, const vl_metrics_row_t *row)
{
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
