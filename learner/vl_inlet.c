/*  vl_inlet: hello, spec, credit, ingest and the books, on one thread. */
#include "vl_inlet.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_proc.h"
#include "../common/vl_sock.h"
#include "../messages/vl_status.h"
#include "vl_ingest.h"
#include "vl_returns.h"

#define S_HELLO_NS 1000000000LL // hello to the broker every second
#define S_MAX_MSG  (64 << 20)   // largest segment accepted from the broker
#define S_POLL_MS  20           // the thread wakes at least this often to top up credit

/* What the thread counts; readers take the lock. */
typedef struct {
    pthread_mutex_t lock;
    uint64_t env_steps, episodes, accepted;
    uint64_t over_budget; // segments that came after env_steps reached the budget, not taken
    uint64_t refused[VL_EREASONS];      // by reason
    vl_refusal_t rows[VL_REFUSALS_MAX]; // by actor and reason text, for the broker's books
    uint32_t n_rows;
    vl_returns_t returns;      // of the last episodes
    vl_figure_means_t figures; // the env's own figures of the last episodes
    double ingest_ms_sum;      // actor send -> ingest, since the last report
    uint64_t ingest_n;
} s_books_t;

struct vl_inlet_s {
    vl_learner_config_t c; // policy, broker, spec, window
    void *ctx;             // borrowed
    vl_buffer_t *buf;      // borrowed
    vl_limits_t limits;
    pthread_t thread;
    atomic_int stop, failed;
    s_books_t in;
};

/* The thread's credit with the broker: absolute counters since its
   connection began, so a lost or repeated report does no harm. */
typedef struct {
    uint64_t granted;  // segments we said we can take, in all
    uint64_t received; // messages the broker sent us, in all
    int64_t window;    // most segments in flight plus waiting in the buffer
} s_flow_t;

/* Adds a refusal to its row (actor, reason text), making one if there is
   room; rows past VL_REFUSALS_MAX are only counted by reason. Returns 1 if
   the row is new. Under the lock. */
static int s_refusal_row(s_books_t *in, const vl_ingest_refusal_t *why)
{
    for (uint32_t i = 0; i < in->n_rows; i++)
        if (in->rows[i].actor_id == why->actor_id && strcmp(in->rows[i].reason, why->why) == 0) {
            in->rows[i].count++;
            return 0;
        }
    if (in->n_rows == VL_REFUSALS_MAX)
        return 0;
    vl_refusal_t *row = &in->rows[in->n_rows++];
    row->actor_id = why->actor_id;
    snprintf(row->reason, sizeof row->reason, "%s", why->why);
    row->count = 1;
    return 1;
}

/* Counts a refused segment by reason and, when the refusal says who and
   why, by actor and reason text; each new reason is logged once. */
static void s_refuse(vl_inlet_t *self, vl_reason_t r, const vl_ingest_refusal_t *why)
{
    pthread_mutex_lock(&self->in.lock);
    uint64_t before = self->in.refused[r]++;
    int new_row = why && why->actor_id != UINT32_MAX && s_refusal_row(&self->in, why);
    pthread_mutex_unlock(&self->in.lock);
    if (new_row)
        vl_warn("refusing segments of actor %u: %s; logged once, counted after", why->actor_id,
                why->why);
    else if (before == 0 && !(why && why->actor_id != UINT32_MAX))
        vl_warn("refusing segments: %s; logged once, counted after", vl_reason_str(r));
}

/* Adds an accepted segment's steps and finished episodes to the books. */
static void s_count(void *ctx, const vl_segment_t *s)
{
    vl_inlet_t *self = ctx;
    s_books_t *in = &self->in;
    double span = vl_span_ms(s->send_ns, s->recv_ns); // hostile stamp, or skewed clocks
    pthread_mutex_lock(&in->lock);
    if (span >= 0) {
        in->ingest_ms_sum += span;
        in->ingest_n++;
    }
    in->accepted++;
    in->env_steps += s->horizon;
    in->episodes += s->n_episodes;
    for (uint32_t e = 0; e < s->n_episodes; e++)
        vl_returns_add(&in->returns, s->episode_returns[e], s->episode_lengths[e]);
    vl_figure_means_add(&in->figures, &s->figures);
    pthread_mutex_unlock(&in->lock);
}

/* Returns 1 once the books hold the step budget (config max_steps, 0: none).
   Only this thread adds steps after the start, so the answer stays true. */
static int s_budget_spent(vl_inlet_t *self)
{
    if (!self->c.max_steps)
        return 0;
    pthread_mutex_lock(&self->in.lock);
    int spent = self->in.env_steps >= self->c.max_steps;
    pthread_mutex_unlock(&self->in.lock);
    return spent;
}

/* Leaves a segment that came after the budget was reached out of the buffer
   and the books: the run's steps stop within one segment of the budget. The
   first is logged; the rest are counted. */
static void s_over_budget(vl_inlet_t *self)
{
    pthread_mutex_lock(&self->in.lock);
    uint64_t before = self->in.over_budget++;
    uint64_t steps = self->in.env_steps;
    pthread_mutex_unlock(&self->in.lock);
    if (before == 0)
        vl_info("step budget reached: %llu env steps (--max-steps %llu); taking no more segments",
                (unsigned long long)steps, (unsigned long long)self->c.max_steps);
}

/* Decodes one received segment into a buffer slot, or refuses it; past the
   step budget it is left out. */
static void s_ingest_one(vl_inlet_t *self, const uint8_t *data, size_t size)
{
    if (s_budget_spent(self)) {
        s_over_budget(self);
        return;
    }
    vl_ingest_refusal_t why;
    vl_reason_t r = vl_ingest(self->buf, &self->c, &self->limits, data, size, vl_wall_ns(), s_count,
                              self, &why);
    if (r != VL_OK)
        s_refuse(self, r, &why);
}

/* Sends the absolute credit counters. */
static void s_send_credit(vl_inlet_t *self, void *dealer, const s_flow_t *f)
{
    vl_credit_t cr = {.total_granted = f->granted, .total_received = f->received};
    snprintf(cr.policy_id, sizeof cr.policy_id, "%s", self->c.policy);
    uint8_t *buf;
    size_t size;
    if (vl_credit_encode(&cr, &buf, &size) == 0) {
        zmq_send(dealer, buf, size, ZMQ_DONTWAIT);
        free(buf);
    }
}

/* Tops the outstanding credit up to the window minus the segments waiting
   in the buffer, and sends it when it grew by a quarter window or more (or
   always, when `force`): the broker then sends no more than the buffer has
   room for, and the rest waits at the broker. */
static void s_top_up(vl_inlet_t *self, void *dealer, s_flow_t *f, int force)
{
    int64_t outstanding = (int64_t)(f->granted - f->received);
    int64_t want = s_budget_spent(self) ? 0 : f->window - vl_buffer_waiting(self->buf);
    if (want > outstanding && (force || want - outstanding >= (f->window + 3) / 4)) {
        f->granted += (uint64_t)(want - outstanding);
        force = 1;
    }
    if (force && f->granted > 0)
        s_send_credit(self, dealer, f);
}

/* Says hello to the broker so it routes this policy's segments here. */
static void s_hello(vl_inlet_t *self, void *dealer)
{
    uint8_t *buf;
    size_t size;
    if (vl_hello_encode(self->c.policy, &buf, &size) == 0) {
        zmq_send(dealer, buf, size, ZMQ_DONTWAIT);
        free(buf);
    }
}

/* Reads the broker's answers to our spec declarations: a refusal is logged
   once per reason (told holds the last one's hash). */
static void s_spec_answers(void *control, uint32_t *told)
{
    char verb[16], why[VL_SPEC_REASON_MAX];
    for (int k = 0; k < 16; k++) {
        int n = zmq_recv(control, verb, sizeof verb - 1, ZMQ_DONTWAIT), more = 0;
        if (n < 0)
            break;
        size_t ms = sizeof more;
        zmq_getsockopt(control, ZMQ_RCVMORE, &more, &ms);
        int w = more ? zmq_recv(control, why, sizeof why - 1, 0) : 0;
        for (zmq_getsockopt(control, ZMQ_RCVMORE, &more, &ms); more;
             zmq_getsockopt(control, ZMQ_RCVMORE, &more, &ms))
            zmq_recv(control, verb, 1, 0);
        verb[n < (int)sizeof verb ? n : (int)sizeof verb - 1] = 0;
        why[w < 0 ? 0 : w < (int)sizeof why ? w : (int)sizeof why - 1] = 0;
        uint32_t h = 2166136261u;
        for (const char *p = why; *p; p++)
            h = (h ^ (uint8_t)*p) * 16777619u;
        if (strcmp(verb, VL_VERB_ERROR) == 0 && h != *told) {
            *told = h;
            vl_error("the broker refuses this learner's spec: %s", why);
        }
    }
}

/* Declares our spec on the control socket (each second, with the hello: a
   restarted broker learns it from us too) and reads the broker's answers;
   receiving goes on with what we have. */
static void s_declare_spec(vl_inlet_t *self, void *control, uint32_t *told)
{
    s_spec_answers(control, told);
    vl_spec_t spec;
    vl_learner_config_spec(&self->c, &spec);
    uint8_t *buf;
    size_t size;
    if (vl_spec_encode(&spec, &buf, &size) == 0) {
        if (zmq_send(control, VL_VERB_SPEC, strlen(VL_VERB_SPEC), ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0)
            zmq_send(control, buf, size, ZMQ_DONTWAIT);
        free(buf);
    }
}

/* Receives what waits on the dealer: each single-frame message is a
   segment; the frames of a multi-frame one are each refused. */
static void s_drain(vl_inlet_t *self, void *dealer, zmq_msg_t *msg, s_flow_t *flow)
{
    while (zmq_msg_recv(msg, dealer, ZMQ_DONTWAIT) >= 0) {
        if (zmq_msg_more(msg)) {
            s_refuse(self, VL_EPROTO, NULL);
            continue;
        }
        flow->received++; // the broker counts messages sent, refused ones included
        s_ingest_one(self, zmq_msg_data(msg), zmq_msg_size(msg));
    }
}

/* The thread: receives segments, says hello every second and grants the
   broker credit as the buffer frees room. */
static void *s_main(void *arg)
{
    vl_inlet_t *self = arg;
    void *dealer =
        vl_sock_connect(self->ctx, ZMQ_DEALER, self->c.broker, VL_PORT_LEARNERS, 0, S_MAX_MSG);
    if (!dealer) {
        atomic_store(&self->failed, 1);
        return NULL;
    }
    vl_curve_watch_t *watch =
        vl_sock_curve_on() ? vl_curve_watch_new(self->ctx, dealer, "segments and credit") : NULL;
    void *control =
        vl_sock_connect_lossy(self->ctx, ZMQ_DEALER, self->c.broker, VL_PORT_CONTROL, 4096);
    uint32_t told = 0; // hash of the last spec refusal logged
    uint32_t window = self->c.capacity / 2;
    s_flow_t flow = {0, 0, window > self->c.batch_segments ? window : self->c.batch_segments};
    int64_t next_hello = 0;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    while (!atomic_load(&self->stop) && !vl_interrupted) {
        int hello = vl_now_ns() >= next_hello;
        if (hello) {
            s_hello(self, dealer);
            if (control)
                s_declare_spec(self, control, &told);
            vl_curve_watch_poll(watch);
            next_hello = vl_now_ns() + S_HELLO_NS;
        }
        s_top_up(self, dealer, &flow, hello); // with every hello: a restarted broker learns it
        zmq_pollitem_t item = {dealer, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, S_POLL_MS) > 0)
            s_drain(self, dealer, &msg, &flow);
    }
    zmq_msg_close(&msg);
    vl_curve_watch_destroy(&watch);
    if (control)
        zmq_close(control);
    zmq_close(dealer);
    return NULL;
}

vl_inlet_t *vl_inlet_new(void *ctx, const vl_learner_config_t *config, vl_buffer_t *buf)
{
    vl_inlet_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->c = *config;
    self->ctx = ctx;
    self->buf = buf;
    self->limits = vl_limits_default();
    pthread_mutex_init(&self->in.lock, NULL);
    if (pthread_create(&self->thread, NULL, s_main, self) != 0) {
        pthread_mutex_destroy(&self->in.lock);
        free(self);
        return NULL;
    }
    return self;
}

void vl_inlet_destroy(vl_inlet_t **self_p)
{
    vl_inlet_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    atomic_store(&self->stop, 1);
    pthread_join(self->thread, NULL);
    pthread_mutex_destroy(&self->in.lock);
    free(self);
    *self_p = NULL;
}

int vl_inlet_failed(vl_inlet_t *self)
{
    return atomic_load(&self->failed);
}

void vl_inlet_add_counts(vl_inlet_t *self, uint64_t env_steps, uint64_t episodes)
{
    pthread_mutex_lock(&self->in.lock);
    self->in.env_steps += env_steps;
    self->in.episodes += episodes;
    pthread_mutex_unlock(&self->in.lock);
}

void vl_inlet_counts(vl_inlet_t *self, vl_inlet_counts_t *out)
{
    s_books_t *in = &self->in;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&in->lock);
    out->accepted = in->accepted;
    out->env_steps = in->env_steps;
    out->episodes = in->episodes;
    for (int r = 0; r < VL_EREASONS; r++) {
        out->refused[r] = in->refused[r];
        out->refused_total += in->refused[r];
    }
    out->over_budget = in->over_budget;
    out->arrived = in->accepted + out->refused_total + in->over_budget;
    out->mean_return = vl_returns_mean(&in->returns);
    out->window = in->returns.n;
    pthread_mutex_unlock(&in->lock);
}

vl_returns_summary_t vl_inlet_returns(vl_inlet_t *self)
{
    pthread_mutex_lock(&self->in.lock);
    vl_returns_summary_t s = vl_returns_summary(&self->in.returns);
    pthread_mutex_unlock(&self->in.lock);
    return s;
}

void vl_inlet_figures(vl_inlet_t *self, vl_figure_means_t *out)
{
    pthread_mutex_lock(&self->in.lock);
    *out = self->in.figures;
    pthread_mutex_unlock(&self->in.lock);
}

uint64_t vl_inlet_fill_stats(vl_inlet_t *self, vl_stats_t *st)
{
    s_books_t *in = &self->in;
    uint64_t refused = 0;
    pthread_mutex_lock(&in->lock);
    st->env_steps = in->env_steps;
    st->episodes = in->episodes;
    st->window = in->returns.n;
    st->mean_return = vl_returns_mean(&in->returns);
    st->ingest_ms = in->ingest_n ? (float)(in->ingest_ms_sum / (double)in->ingest_n) : 0;
    in->ingest_ms_sum = 0;
    in->ingest_n = 0;
    for (int r = 0; r < VL_EREASONS; r++)
        refused += in->refused[r];
    st->dropped_invalid = refused;
    st->dropped_budget = in->over_budget;
    st->segments_arrived = in->accepted + refused + in->over_budget;
    st->n_refusals = in->n_rows;
    memcpy(st->refusals, in->rows, in->n_rows * sizeof in->rows[0]);
    st->n_figures = 0;
    for (uint32_t k = 0; k < in->figures.n; k++)
        if (in->figures.fig[k].n) { // a name seen with values only
            memcpy(st->figure_names[st->n_figures], in->figures.fig[k].name, VL_FIGURE_NAME_MAX);
            st->figure_means[st->n_figures++] = vl_figure_means_get(&in->figures, k);
        }
    pthread_mutex_unlock(&in->lock);
    return refused;
}
