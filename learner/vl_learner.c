/*  vl_learner: ingest thread, train loop, publishing weights and progress. */
#include "vl_learner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_sock.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_status.h"
#include "../store/vl_buffer.h"
#include "vl_engine.h"
#include "vl_inlet.h"
#include "vl_keeper.h"
#include "vl_metrics.h"
#include "vl_progress.h"
#include "vl_replay.h"
#include "vl_resume.h"

#define S_HEARTBEAT_NS 1000000000LL // weights republished every second
#define S_MAX_MSG      (64 << 20)   // largest message the weights socket sends

struct vl_learner_s {
    vl_learner_config_t c;
    uint32_t D, A;
    void *ctx;
    void *pub;                   // train thread: weights and stats to the broker
    vl_curve_watch_t *pub_watch; // train thread, with CURVE: a refused key logged, retried
    vl_buffer_t *buf;
    vl_engine_t *engine; // the update engine: volley's own, or an outside one
    vl_inlet_t *inlet;   // the ingest thread
    // train thread only
    vl_replay_t *replay;
    uint64_t version, trained;
    uint64_t *lag_counts; // [max_lag + 1] segments trained on at each lag since the last report
    vl_engine_stats_t last;
    int64_t start_ns;
    double trained_recv_sum; // recv_ns of the segments in the update not yet published
    int trained_n;
    double train_ms_sum; // ingest -> published, since the last report
    uint64_t train_n;
    vl_keeper_t *keeper;     // checkpoints, NULL when off
    vl_metrics_t *metrics;   // NULL when off
    vl_progress_t *progress; // the progress line each 10 s
    uint64_t row_steps;      // env steps at the previous metrics row
    double row_uptime;       // uptime then
    float lr;                // the learning rate of the last update
};

/* Publishes [topic][body] on the weights stream. */
static void s_publish(vl_learner_t *self, const char *topic, uint8_t *body, size_t size)
{
    zmq_send(self->pub, topic, strlen(topic), ZMQ_SNDMORE);
    zmq_send(self->pub, body, size, 0);
    free(body);
}

/* Publishes the current weights as self->version. */
static void s_publish_weights(vl_learner_t *self)
{
    vl_tensor_t tensors[VL_ENGINE_TENSORS_MAX];
    uint32_t n = vl_engine_tensors(self->engine, tensors, VL_ENGINE_TENSORS_MAX);
    uint8_t *buf;
    size_t size;
    if (vl_weights_encode(self->c.policy, self->version, tensors, n, &buf, &size) == 0)
        s_publish(self, self->c.policy, buf, size);
}

/* Counts, for the segments just trained on, the time from their ingest to
   now, when the weights trained on them were published. */
static void s_count_train_time(vl_learner_t *self)
{
    double now = (double)vl_wall_ns();
    self->train_ms_sum += (now * self->trained_n - self->trained_recv_sum) / 1e6;
    self->train_n += (uint64_t)self->trained_n;
    self->trained_recv_sum = 0;
    self->trained_n = 0;
}

/* Counts the policy lags of segments trained on since the last report. */
static void s_count_lags(vl_learner_t *self, const uint32_t *lags, int n)
{
    for (int i = 0; i < n; i++)
        self->lag_counts[lags[i] <= self->c.max_lag ? lags[i] : self->c.max_lag]++;
}

/* Summarises the lag counts since the last report into st, and resets them. */
static void s_lag_summary(vl_learner_t *self, vl_stats_t *st)
{
    vl_lag_summary(self->lag_counts, self->c.max_lag + 1, st);
    memset(self->lag_counts, 0, (self->c.max_lag + 1) * sizeof self->lag_counts[0]);
}

/* Sets st's drops that the inlet does not count: too old, evicted from the
   buffer. Read before the inlet's counts: each of these segments was
   accepted before, so the segments_arrived read after them covers it. */
static void s_own_drops(vl_learner_t *self, vl_stats_t *st)
{
    st->dropped_lag = vl_replay_stale(self->replay);
    st->dropped_capacity = vl_buffer_evicted(self->buf);
}

/* Sums st's drops by cause into segments_dropped. */
static void s_sum_drops(vl_stats_t *st)
{
    st->segments_dropped =
        st->dropped_lag + st->dropped_capacity + st->dropped_budget + st->dropped_invalid;
}

/* Fills a progress report from the ingest counters and the last update. */
static void s_fill_stats(vl_learner_t *self, vl_stats_t *st)
{
    memset(st, 0, sizeof *st);
    snprintf(st->policy_id, sizeof st->policy_id, "%s", self->c.policy);
    s_own_drops(self, st);
    vl_inlet_fill_stats(self->inlet, st);
    s_sum_drops(st);
    st->version = self->version;
    s_lag_summary(self, st);
    st->policy_loss = self->last.policy_loss;
    st->value_loss = self->last.value_loss;
    st->entropy = self->last.entropy;
    st->segments_trained = self->trained;
    st->uptime_s = (double)(vl_now_ns() - self->start_ns) / 1e9;
    st->train_ms = self->train_n ? (float)(self->train_ms_sum / (double)self->train_n) : 0;
    self->train_ms_sum = 0;
    self->train_n = 0;
}

/* Writes a metrics row from a report and what only the learner knows. */
static void s_write_metrics(vl_learner_t *self, const vl_stats_t *st)
{
    if (!self->metrics)
        return;
    vl_returns_summary_t ret = vl_inlet_returns(self->inlet);
    double dt = st->uptime_s - self->row_uptime;
    vl_metrics_row_t row = {
        .wall_time = (double)vl_wall_ns() / 1e9,
        .uptime_s = st->uptime_s,
        .env_steps = st->env_steps,
        .version = st->version,
        .episodes = st->episodes,
        .segments_trained = st->segments_trained,
        .segments_dropped = st->segments_dropped,
        .dropped_lag = st->dropped_lag,
        .dropped_capacity = st->dropped_capacity,
        .dropped_budget = st->dropped_budget,
        .dropped_invalid = st->dropped_invalid,
        .segments_arrived = st->segments_arrived,
        .steps_per_s = dt > 0 ? (float)((double)(st->env_steps - self->row_steps) / dt) : 0,
        .window = ret.n,
        .return_mean = ret.mean,
        .return_min = ret.min,
        .return_max = ret.max,
        .length_mean = ret.len_mean,
        .loss_pi = self->last.policy_loss,
        .loss_v = self->last.value_loss,
        .entropy = self->last.entropy,
        .approx_kl = self->last.approx_kl,
        .clip_frac = self->last.clip_frac,
        .explained_var = self->last.explained_var,
        .lr = self->lr,
        .lag_min = st->lag_min,
        .lag_median = st->lag_median,
        .lag_max = st->lag_max,
        .ingest_ms = st->ingest_ms,
        .train_ms = st->train_ms};
    vl_figure_means_t figures; // about 3.5 KiB
    vl_inlet_figures(self->inlet, &figures);
    for (uint32_t k = 0; k < figures.n; k++) {
        memcpy(row.figure_names[k], figures.fig[k].name, VL_FIGURE_NAME_MAX);
        row.figure_means[k] = figures.fig[k].n ? vl_figure_means_get(&figures, k) : NAN;
    }
    row.n_figures = figures.n;
    vl_metrics_write(self->metrics, &row);
    self->row_steps = st->env_steps;
    self->row_uptime = st->uptime_s;
}

/* Publishes progress on VL_STATS_TOPIC and logs it at debug level. */
static void s_publish_stats(vl_learner_t *self)
{
    vl_stats_t st;
    s_fill_stats(self, &st);
    vl_debug("version=%llu steps=%llu episodes=%llu return=%.2f lag=%u/%u/%u dropped=%llu",
             (unsigned long long)st.version, (unsigned long long)st.env_steps,
             (unsigned long long)st.episodes, st.mean_return, st.lag_min, st.lag_median, st.lag_max,
             (unsigned long long)st.segments_dropped);
    uint8_t *buf;
    size_t size;
    if (vl_stats_encode(&st, &buf, &size) == 0)
        s_publish(self, VL_STATS_TOPIC, buf, size);
    s_write_metrics(self, &st);
}

/* Fills st with the cumulative counts now, leaving what a report counts
   since the last one (lags, ingest and train times) to the next report.
   Returns the reason most refusals had, or NULL when none was refused. */
static const char *s_snapshot(vl_learner_t *self, vl_stats_t *st)
{
    memset(st, 0, sizeof *st);
    s_own_drops(self, st);
    vl_inlet_counts_t in;
    vl_inlet_counts(self->inlet, &in);
    st->version = self->version;
    st->env_steps = in.env_steps;
    st->episodes = in.episodes;
    st->mean_return = in.mean_return;
    st->window = in.window;
    st->segments_trained = self->trained;
    st->dropped_budget = in.over_budget;
    st->dropped_invalid = in.refused_total;
    st->segments_arrived = in.arrived;
    s_sum_drops(st);
    int top = 0;
    for (int r = 1; r < VL_EREASONS; r++)
        top = in.refused[r] > in.refused[top] ? r : top;
    return in.refused[top] ? vl_reason_str((vl_reason_t)top) : NULL;
}

/* Logs the progress line of the window that ends now (and its warning). */
static void s_log_progress(vl_learner_t *self)
{
    vl_stats_t st;
    const char *top_refusal = s_snapshot(self, &st);
    vl_progress_log(self->progress, &st, top_refusal, vl_now_ns());
}

/* Opens the checkpoint directory (vl_keeper) and, with --resume, loads the
   newest checkpoint into the engine, setting *st. Returns 0, or -1 after
   logging why (a corrupt or mismatched checkpoint is refused, never half
   loaded). */
static int s_checkpoint_setup(vl_learner_t *self, vl_resume_state_t *st)
{
    const vl_learner_config_t *c = &self->c;
    char why[1024];
    if (!c->checkpoint_dir)
        return 0;
    if (!(self->keeper = vl_keeper_new(c, why, sizeof why))) {
        vl_error("%s", why);
        return -1;
    }
    if (!c->resume)
        return 0;
    if (vl_keeper_load(self->keeper, self->engine, st, why, sizeof why) != 0) {
        vl_error("refusing checkpoint %s: %s", vl_keeper_path(self->keeper), why);
        return -1;
    }
    self->version = st->version;
    self->trained = st->trained;
    *vl_engine_rng(self->engine) = st->rng;
    vl_info("resumed from %s at version %llu, %llu env steps", vl_keeper_path(self->keeper),
            (unsigned long long)st->version, (unsigned long long)st->env_steps);
    return 0;
}

/* Writes a checkpoint now, if they are on. Returns 0, or -1 when it could
   not be written (logged). */
static int s_checkpoint_save(vl_learner_t *self)
{
    if (!self->keeper)
        return 0;
    vl_inlet_counts_t in;
    vl_inlet_counts(self->inlet, &in);
    vl_resume_state_t st = {self->version, self->trained, in.env_steps, in.episodes,
                            *vl_engine_rng(self->engine)};
    vl_returns_summary_t ret = vl_inlet_returns(self->inlet);
    return vl_keeper_save(self->keeper, self->engine, &st, &ret);
}

vl_learner_t *vl_learner_new(const vl_learner_config_t *c, vl_engine_t *engine)
{
    vl_learner_t *self = calloc(1, sizeof *self);
    if (!self) {
        vl_engine_destroy(&engine);
        return NULL;
    }
    self->engine = engine;
    self->c = *c;
    self->D = c->obs_dim;
    self->A = vl_action_outputs(&c->action);
    self->start_ns = vl_now_ns();
    self->ctx = zmq_ctx_new();
    self->buf = vl_buffer_new(c->capacity, c->horizon, &c->obs_spec, c->action.dims,
                              vl_learner_config_state_size(c));
    char why[1024] = "";
    if (!self->engine && !(self->engine = vl_engine_new_learner(c, NULL, why, sizeof why)))
        vl_error("engine: %s", why);
    self->replay = self->buf ? vl_replay_new(c, self->buf) : NULL;
    self->lag_counts = calloc(c->max_lag + 1, sizeof *self->lag_counts);
    if (!self->ctx || !self->buf || !self->engine || !self->replay || !self->lag_counts)
        goto err;
    vl_resume_state_t resumed = {0};
    if (s_checkpoint_setup(self, &resumed) != 0)
        goto err;
    self->pub = vl_sock_connect(self->ctx, ZMQ_PUB, c->broker, VL_PORT_WEIGHTS_IN, 0, S_MAX_MSG);
    if (self->pub && vl_sock_curve_on())
        self->pub_watch = vl_curve_watch_new(self->ctx, self->pub, "weights");
    self->inlet = self->pub ? vl_inlet_new(self->ctx, c, self->buf) : NULL;
    if (!self->inlet)
        goto err;
    vl_inlet_add_counts(self->inlet, resumed.env_steps, resumed.episodes);
    self->row_steps = resumed.env_steps;
    self->lr = c->lr;
    if (c->metrics_dir && !(self->metrics = vl_metrics_new(c->metrics_dir)))
        goto err;
    vl_stats_t start;
    s_snapshot(self, &start);
    if (!(self->progress = vl_progress_new(c, &start, vl_now_ns())))
        goto err;
    return self;
err:
    vl_error("cannot start the learner");
    vl_learner_destroy(&self);
    return NULL;
}

/* Chooses segments (waiting up to 200 ms) and trains on them. Returns 1 if
   the weights changed, 0 if not, -1 on error. */
/* Sets the next update's learning rate: constant, or falling linearly to 0
   at --lr-anneal-steps env steps. */
static void s_schedule_lr(vl_learner_t *self)
{
    float lr = self->c.lr;
    if (self->c.lr_anneal_steps) {
        vl_inlet_counts_t counts;
        vl_inlet_counts(self->inlet, &counts);
        double left = 1.0 - (double)counts.env_steps / (double)self->c.lr_anneal_steps;
        lr = (float)(self->c.lr * (left > 0 ? left : 0));
    }
    if (lr != self->lr)
        vl_engine_set_lr(self->engine, lr);
    self->lr = lr;
}

static int s_train_once(vl_learner_t *self)
{
    uint32_t B = self->c.batch_segments, lags[B];
    const vl_segment_t *segs[B];
    float w[B], sums[B];
    int w_used = 0, rc = 0;
    if (self->c.max_steps) {
        vl_inlet_counts_t counts;
        vl_inlet_counts(self->inlet, &counts);
        if (counts.env_steps >= self->c.max_steps)
            vl_replay_set_last(self->replay);
    }
    int n = vl_replay_next(self->replay, self->version, 200, segs, lags, w, &w_used);
    if (n > 0) {
        s_count_lags(self, lags, n);
        s_schedule_lr(self);
        vl_progress_lags(self->progress, lags, n);
        char why[1024] = "";
        int64_t t0 = vl_now_ns();
        rc = vl_engine_update_segments(self->engine, segs, (uint32_t)n, w_used ? w : NULL, sums,
                                       &self->last, why, sizeof why);
        vl_progress_busy(self->progress, vl_now_ns() - t0);
        if (rc != 0)
            vl_error("update failed: %s", why);
        rc = rc == 0 ? 1 : -1;
        self->trained += (uint64_t)n;
        for (int i = 0; i < n; i++)
            self->trained_recv_sum += (double)segs[i]->recv_ns;
        self->trained_n += n;
    }
    vl_replay_done(self->replay, n > 0 && rc > 0 ? sums : NULL);
    return rc;
}

/* Returns 1 while the step budget is spent and segments taken within it still
   wait to be trained: the next report (which `volley up` may end the run on)
   waits for them, so that no segment the budget took goes untrained. */
static int s_budget_untrained(vl_learner_t *self)
{
    if (!self->c.max_steps || !vl_buffer_waiting(self->buf))
        return 0;
    vl_inlet_counts_t counts;
    vl_inlet_counts(self->inlet, &counts);
    return counts.env_steps >= self->c.max_steps;
}

int vl_learner_run(vl_learner_t *self)
{
    vl_info("training policy '%s' on %s: %u segments x %u steps per update", self->c.policy,
            self->c.env_name, self->c.batch_segments, self->c.horizon);
    int64_t next_report = 0, next_heartbeat = 0;
    int64_t every = (int64_t)self->c.checkpoint_every * 1000000000LL;
    int64_t next_checkpoint = vl_now_ns() + every;
    while (!vl_interrupted && !vl_inlet_failed(self->inlet)) {
        int rc = s_train_once(self);
        if (rc < 0) {
            vl_error("the update failed; stopping");
            return -1;
        }
        if (rc > 0) {
            self->version++;
            if (self->c.report_ms == 0) // before the weights: an actor waiting for them is idle
                s_publish_stats(self);
            s_publish_weights(self);
            s_count_train_time(self);
        }
        if (vl_now_ns() >= next_heartbeat) {
            s_publish_weights(self); // reaches a broker that restarted, or a lost publication
            vl_curve_watch_poll(self->pub_watch);
            next_heartbeat = vl_now_ns() + S_HEARTBEAT_NS;
        }
        if (self->c.report_ms && vl_now_ns() >= next_report && !s_budget_untrained(self)) {
            s_publish_stats(self);
            next_report = vl_now_ns() + (int64_t)self->c.report_ms * 1000000;
        }
        if (vl_now_ns() >= next_checkpoint) {
            s_checkpoint_save(self);
            next_checkpoint = vl_now_ns() + every;
        }
        if (vl_progress_due(self->progress, vl_now_ns()))
            s_log_progress(self);
    }
    // The last checkpoint is the run's result: a run whose checkpoint was lost has failed.
    int saved = s_checkpoint_save(self) == 0;
    return (vl_inlet_failed(self->inlet) && !vl_interrupted) || !saved ? -1 : 0;
}

void vl_learner_destroy(vl_learner_t **self_p)
{
    vl_learner_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    vl_inlet_destroy(&self->inlet);
    vl_metrics_destroy(&self->metrics);
    vl_progress_destroy(&self->progress);
    vl_keeper_destroy(&self->keeper);
    vl_curve_watch_destroy(&self->pub_watch);
    if (self->pub)
        zmq_close(self->pub);
    if (self->ctx)
        zmq_ctx_term(self->ctx);
    vl_engine_destroy(&self->engine);
    vl_replay_destroy(&self->replay);
    free(self->lag_counts);
    vl_buffer_destroy(&self->buf);
    free(self);
    *self_p = NULL;
}
