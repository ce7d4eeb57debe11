/*  vl_metrics: a learner's scalar time series, written where a run keeps
    it: DIR/metrics.jsonl, one JSON object per row (for scripts; a resumed
    run appends), and a TensorBoard event file in DIR (messages/
    vl_tfevents: `tensorboard --logdir runs/` shows it). A row a second or
    per update; NaN and infinities are written as null (JSON has none). A
    write that fails is counted and logged once; training goes on. */
#ifndef VL_METRICS_H
#define VL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_figures.h"

/* One row. */
typedef struct {
    double wall_time, uptime_s; // epoch seconds; the learner's seconds
    uint64_t env_steps, version, episodes, segments_trained, segments_dropped;
    uint64_t dropped_lag, dropped_capacity, dropped_budget, dropped_invalid; // their causes
    uint64_t segments_arrived; // accepted + refused + over budget, since the learner started
    float steps_per_s;
    uint32_t window; // episodes in the return figures
    float return_mean, return_min, return_max, length_mean;
    float loss_pi, loss_v, entropy, approx_kl, clip_frac, explained_var, lr;
    uint32_t lag_min, lag_median, lag_max;
    float ingest_ms, train_ms;
    uint32_t n_figures; // the env's own figures: env/NAME, their means over the window
    char figure_names[VL_FIGURES_KEPT][VL_FIGURE_NAME_MAX];
    float figure_means[VL_FIGURES_KEPT];
} vl_metrics_row_t;

typedef struct vl_metrics_s vl_metrics_t;

/* Opens DIR/metrics.jsonl (appending) and a new event file in DIR. A run
   resumed into DIR goes on: its rows' uptime_s continue from the file's
   last row (env_steps, the TensorBoard step, continue with the learner's
   counters). Returns NULL after logging why. Caller destroys. */
vl_metrics_t *vl_metrics_new(const char *dir);

/* Writes one row to both; what this process has not measured yet (losses
   before its first update, the rate of its first row when no step came)
   is written null, not 0. Returns 0, or -1 when either could not be
   written (counted). */
int vl_metrics_write(vl_metrics_t *self, const vl_metrics_row_t *row);

/* Returns how many rows could not be written whole. */
uint64_t vl_metrics_lost(const vl_metrics_t *self);

/* Formats one row as a JSON object and a newline into out. Returns its
   length, or -1 if it does not fit. */
int vl_metrics_json(const vl_metrics_row_t *row, char *out, size_t size);

/* Closes both files and frees; nulls the pointer; safe on NULL and twice. */
void vl_metrics_destroy(vl_metrics_t **self_p);

#endif
