/*  vl_progress: the learner's progress line, logged at info level every
    VL_PROGRESS_EVERY_NS: version, env steps and their rate, the mean return,
    what it trained on and what it dropped of what arrived in that window,
    by cause, the policy lag and how busy the updates kept it. When more than
    VL_PROGRESS_WARN_SHARE of what arrived in a window was dropped, one more
    line names the main cause and its fix (a warning; the step budget's, an
    info line: a budget is meant to end the run). Train thread only. */
#ifndef VL_PROGRESS_H
#define VL_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_codec.h"
#include "vl_learner_config.h"

#define VL_PROGRESS_EVERY_NS   10000000000LL // a line each 10 s: a run's pulse, not its log
#define VL_PROGRESS_WARN_SHARE 0.05          // dropped share of arrivals that is worth a warning

/* Why a learner drops a segment it received, as Stats counts them. */
typedef enum {
    VL_DROPPED_LAG,      // more than --max-lag versions old
    VL_DROPPED_CAPACITY, // evicted unread from a full buffer
    VL_DROPPED_BUDGET,   // came after the --max-steps budget was spent
    VL_DROPPED_INVALID,  // refused
    VL_DROPPED_CAUSES
} vl_dropped_cause_t;

/* One window's figures, what a progress line and its warning say. */
typedef struct {
    double secs;                           // the window's length
    uint64_t version, env_steps;           // at its end
    double steps_per_s;                    // over the window
    float mean_return;                     // of the last `episodes` episodes
    uint32_t episodes;                     // in that mean (0: none finished yet)
    uint64_t trained, arrived;             // segments, in the window
    uint64_t dropped[VL_DROPPED_CAUSES];   // segments, in the window, by cause
    int lagged;                            // 1 when lag_* below hold (something was trained)
    uint32_t lag_min, lag_median, lag_max; // policy lag of what was trained on in the window
    double busy;                           // share of the window inside engine updates, 0..1
    uint32_t max_lag, capacity, batch;     // the learner's flags, for the advice
    uint64_t max_steps;
    const char *top_refusal; // the reason most refusals had (NULL: none)
} vl_progress_window_t;

typedef struct vl_progress_s vl_progress_t;

/* Summarises counts[0 .. n) (segments trained on at each policy lag) into
   st's lag_min, lag_median, lag_mean and lag_max; all 0 when it is empty. */
void vl_lag_summary(const uint64_t *counts, uint32_t n, vl_stats_t *st);

/* Starts the progress of a learner configured by c, its first window at
   now_ns (monotonic) from the cumulative counts start (NULL: all 0; a
   resumed learner's steps do not count as this window's). Returns NULL on
   no memory. Caller destroys. */
vl_progress_t *vl_progress_new(const vl_learner_config_t *c, const vl_stats_t *start,
                               int64_t now_ns);

/* Frees the progress and nulls the pointer; safe on NULL and twice. */
void vl_progress_destroy(vl_progress_t **self_p);

/* Counts the policy lags of n segments trained on in this window. */
void vl_progress_lags(vl_progress_t *self, const uint32_t *lags, int n);

/* Counts ns spent inside an engine update in this window. */
void vl_progress_busy(vl_progress_t *self, int64_t ns);

/* Returns 1 when a window has passed since the last line, else 0. */
int vl_progress_due(const vl_progress_t *self, int64_t now_ns);

/* Fills w with the window that ends at now_ns, st being the cumulative
   counts then (as vl_progress_log reads them); top_refusal is left NULL. */
void vl_progress_window(const vl_progress_t *self, const vl_stats_t *st, int64_t now_ns,
                        vl_progress_window_t *w);

/* Logs the line of the window ending at now_ns from st, the learner's
   cumulative counts now (its version, env_steps, mean_return, window,
   segments_trained, dropped_* and segments_arrived are read), and the
   warning when one is due; top_refusal names the most frequent refusal
   reason (NULL: none). Starts the next window. */
void vl_progress_log(vl_progress_t *self, const vl_stats_t *st, const char *top_refusal,
                     int64_t now_ns);

/* Writes a window's progress line into out[size] (truncated to fit).
   Returns out. */
const char *vl_progress_line(const vl_progress_window_t *w, char *out, size_t size);

/* Returns the share of a window's arrivals it dropped, for causes whose
   bit (1 << cause) is set in causes: 0..1, 1 when it dropped some and
   nothing arrived. */
double vl_progress_share(const vl_progress_window_t *w, unsigned causes);

/* Writes the warning a window deserves into out[size]: the main cause
   other than the budget, its share and its fix, when more than
   VL_PROGRESS_WARN_SHARE of the arrivals were dropped. Returns
   VL_DROPPED_CAUSES when none is due; VL_DROPPED_BUDGET when only the
   budget's drops are over the share (out then says so, for an info line);
   else the cause named. */
vl_dropped_cause_t vl_progress_warning(const vl_progress_window_t *w, char *out, size_t size);

#endif
