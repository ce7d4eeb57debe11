/*  vl_actor: the actor engine: weights in, beats out, acting on a batch,
    recording steps, cutting and pushing segments, pacing. The caller's side
    (checked act/observe, `volley actor`'s loop) is vl_actor_step.c. */
#include "vl_actor_engine.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_rng.h"
#include "../common/vl_sock.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_status.h"
#include "../models/vl_dist.h"
#include "../models/vl_policy.h"

#define S_MAX_WEIGHTS_BYTES (256 << 20)
#define S_BEAT_EVERY_NS     1000000000LL // the broker calls an actor silent after 5 s
#define S_WAIT_FIRST_NS     1000000000LL // what the actor waits for is said within 2 s,
#define S_WAIT_EVERY_NS     5000000000LL // then again this often
#define S_BEAT_RETRY_NS     50000000LL   // a beat no connection took is tried again this soon

vl_actor_config_t vl_actor_config_default(void)
{
    return (vl_actor_config_t){.broker = "127.0.0.1",
                               .policy = "default",
                               .env = vl_env_find("cartpole"),
                               .n_envs = 8,
                               .horizon = 64,
                               .hidden = 64,
                               .seed = 1,
                               .max_ahead = 1,
                               .wait_ms = 500};
}

vl_actor_params_t vl_actor_params_default(void)
{
    return (vl_actor_params_t){.policy = "default",
                               .n_envs = 8,
                               .horizon = 64,
                               .hidden = 64,
                               .seed = 1,
                               .max_ahead = 1,
                               .wait_ms = 500,
                               .wake_fd = -1};
}

/* Writes the reason into why (may be NULL); returns code. */
int vl_actor_fail(int code, char *why, size_t size, const char *fmt, ...)
{
    if (!why || !size)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return code;
}

/* Returns the seed of one random stream of this actor (0: action sampling,
   1 + i: environment i), distinct across actor ids under one --seed. */
static uint64_t s_stream_seed(const vl_actor_params_t *c, uint64_t stream)
{
    uint64_t x = c->seed;
    x = vl_splitmix64(&x) ^ c->actor_id;
    x = vl_splitmix64(&x) ^ stream;
    return vl_splitmix64(&x);
}

/* Returns 1 once SIGINT/SIGTERM came or the wake fd became readable. */
static int s_stopped(vl_actor_t *self)
{
    if (vl_interrupted)
        return 1;
    if (self->c.wake_fd < 0)
        return 0;
    struct pollfd p = {.fd = self->c.wake_fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

/* Allocates the per-env state and binds every env's segment. Returns 0 or -1. */
static int s_alloc(vl_actor_t *self)
{
    uint32_t N = self->N, D = self->D;
    self->obs = calloc((size_t)N * D, sizeof(float));
    self->final_obs = calloc((size_t)N * D, sizeof(float));
    self->rewards = calloc(N, sizeof(float));
    self->term = calloc(N, 1);
    self->trunc = calloc(N, 1);
    self->actions = calloc((size_t)N * self->W, sizeof(float));
    self->logps = calloc(N, sizeof(float));
    self->state = calloc((size_t)N * self->S + 1, sizeof(float));
    self->logits = calloc((size_t)N * self->A, sizeof(float));
    self->ep_return = calloc(N, sizeof(float));
    self->ep_len = calloc(N, sizeof(uint32_t));
    self->segs = calloc(N, sizeof *self->segs);
    self->arrays_size =
        vl_segment_arrays_size(self->c.horizon, &self->ops.obs_spec, self->W, self->S);
    self->arrays = self->arrays_size == SIZE_MAX ? NULL : calloc(N, self->arrays_size);
    int ok = self->obs && self->final_obs && self->rewards && self->term && self->trunc &&
             self->actions && self->logps && self->state && self->logits && self->ep_return &&
             self->ep_len && self->segs && self->arrays;
    for (uint32_t i = 0; ok && i < N; i++) {
        vl_segment_t *s = &self->segs[i];
        s->actor_id = self->c.actor_id;
        s->env_id = i;
        snprintf(s->policy_id, sizeof s->policy_id, "%s", self->c.policy);
        s->horizon = self->c.horizon;
        ok = vl_segment_set_spec(s, &self->ops.obs_spec) == 0 && s->obs_dim == D;
        s->action = self->ops.action;
        s->state_size = self->S;
        vl_segment_bind(s, self->arrays + (size_t)i * self->arrays_size);
        vl_figures_name(&s->figures, self->ops.n_figures, self->ops.figure_names);
    }
    return ok ? 0 : -1;
}

/* Fills the spec this actor declares: its env's fields and actions, its
   horizon and network size. */
static void s_fill_spec(vl_actor_t *self)
{
    vl_spec_t *sp = &self->spec;
    memset(sp, 0, sizeof *sp);
    snprintf(sp->policy_id, sizeof sp->policy_id, "%s", self->c.policy);
    sp->obs_spec = self->ops.obs_spec;
    sp->action = self->ops.action;
    sp->state_size = self->S;
    sp->horizon = self->c.horizon;
    sp->hidden = self->c.hidden;
    snprintf(sp->model, sizeof sp->model, "%s", self->model);
    sp->model_open = self->follows;
    if (vl_wire_name_ok(self->ops.name, sizeof sp->env))
        snprintf(sp->env, sizeof sp->env, "%s", self->ops.name);
}

/* Checks the parameters an engine is made from. Returns 0, or -1 with why. */
static int s_check_params(const vl_actor_params_t *p, char *why, size_t size)
{
    vl_limits_t lim = vl_limits_default();
    if (!p->broker || !p->broker[0] || strlen(p->broker) >= 256)
        return vl_actor_fail(-1, why, size, "broker: give HOST[:PORT]");
    if (!vl_policy_id_ok(p->policy))
        return vl_actor_fail(-1, why, size,
                             "policy: 1..%d printable characters, no spaces, not starting with '~'",
                             VL_POLICY_ID_MAX - 1);
    if (p->n_envs < 1 || p->n_envs > 65536)
        return vl_actor_fail(-1, why, size, "n_envs %u, must be 1..65536", p->n_envs);
    if (p->horizon < 1 || p->horizon > lim.max_horizon)
        return vl_actor_fail(-1, why, size, "horizon %u, must be 1..%u", p->horizon,
                             lim.max_horizon);
    if (p->hidden < 1 || p->hidden > VL_SPEC_HIDDEN_MAX)
        return vl_actor_fail(-1, why, size, "hidden %u, must be 1..%d", p->hidden,
                             VL_SPEC_HIDDEN_MAX);
    if (p->wait_ms < 0)
        return vl_actor_fail(-1, why, size, "wait_ms %d, must be >= 0", p->wait_ms);
    if (!p->cert != !p->broker_key)
        return vl_actor_fail(-1, why, size, "cert and broker_key go together");
    return 0;
}

/* Loads the caller's CURVE identity when params name one. Returns 0, or -1
   with why (a certificate it cannot read). */
static int s_load_curve(vl_actor_t *self, const vl_actor_params_t *p, char *why, size_t size)
{
    self->c.cert = self->c.broker_key = NULL; // the caller's strings: not kept
    if (!p->cert)
        return 0;
    char reason[400];
    self->curve = vl_curve_client_new(p->cert, p->broker_key, reason, sizeof reason);
    if (!self->curve)
        return vl_actor_fail(-1, why, size, "CURVE: %s", reason);
    vl_info("CURVE on: our public key %s", vl_curve_public_txt(self->curve));
    return 0;
}

/* Connects the three sockets to the broker. Returns 0 or -1. */
static int s_connect(vl_actor_t *self)
{
    const char *broker = self->c.broker;
    const vl_curve_t *curve = self->curve; // NULL: the process's
    self->ctx = zmq_ctx_new();
    if (!self->ctx)
        return -1;
    // On exit, queued segments get a second to leave.
    self->push = vl_sock_connect_as(curve, 0, self->ctx, ZMQ_PUSH, broker, VL_PORT_SEGMENTS, 1000,
                                    S_MAX_WEIGHTS_BYTES);
    self->sub = vl_sock_connect_as(curve, 0, self->ctx, ZMQ_SUB, broker, VL_PORT_WEIGHTS_OUT, 0,
                                   S_MAX_WEIGHTS_BYTES);
    self->control =
        vl_sock_connect_as(curve, 1, self->ctx, ZMQ_DEALER, broker, VL_PORT_CONTROL, 0, 4096);
    if (!self->push || !self->sub || !self->control)
        return -1;
    if (curve || vl_sock_curve_on()) {
        self->watch[0] = vl_curve_watch_new(self->ctx, self->push, "segments");
        self->watch[1] = vl_curve_watch_new(self->ctx, self->sub, "weights");
        self->watch[2] = vl_curve_watch_new(self->ctx, self->control, "beats");
    }
    for (int i = 0; curve && i < 3; i++) // a refusal before the first weights ends the wait
        vl_curve_watch_set_quiet(self->watch[i], 1);
    int send_timeout_ms = 1000; // a blocked send comes back to beat (s_send_segments)
    zmq_setsockopt(self->push, ZMQ_SNDTIMEO, &send_timeout_ms, sizeof send_timeout_ms);
    zmq_setsockopt(self->sub, ZMQ_SUBSCRIBE, self->c.policy, strlen(self->c.policy));
    return 0;
}

/* Creates the engine for params over the checked env spec ops. Returns it,
   or NULL with the reason in why. */
static vl_actor_t *s_new(const vl_actor_params_t *p, const vl_env_ops_t *ops, char *why,
                         size_t size)
{
    if (s_check_params(p, why, size) != 0)
        return NULL;
    vl_actor_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->c = *p;
    snprintf(self->broker, sizeof self->broker, "%s", p->broker);
    snprintf(self->policy_id, sizeof self->policy_id, "%s", p->policy);
    snprintf(self->env_name, sizeof self->env_name, "%s", ops->name ? ops->name : "");
    self->c.broker = self->broker;
    self->c.policy = self->policy_id;
    self->ops = *ops;
    self->ops.name = self->env_name; // the caller's table may go away
    self->N = p->n_envs;
    self->D = ops->obs_dim;
    self->A = vl_action_outputs(&ops->action);
    self->W = ops->action.dims;
    self->limits = vl_limits_default();
    if (vl_obs_rules_init(&self->obs_rules, ops, VL_OBS_CHECK_ERROR, NULL, NULL, why, size) != 0) {
        vl_actor_destroy(&self);
        return NULL;
    }
    vl_model_spec_t *model = vl_model_spec_for(p->model, &ops->obs_spec, p->hidden, why, size);
    if (!model || vl_model_spec_format(model, self->model, sizeof self->model) < 0) {
        if (model)
            vl_actor_fail(0, why, size, "model: canonical text over %zu bytes",
                          sizeof self->model - 1);
        vl_model_spec_destroy(&model);
        vl_actor_destroy(&self);
        return NULL;
    }
    self->c.model = self->model;
    self->follows = !p->model && !p->external;
    self->S = vl_model_spec_state_size(model);
    if (p->external && self->S) {
        vl_actor_fail(0, why, size,
                      "model %s carries a recurrent state, which an external policy cannot hand "
                      "over: act with volley's policy",
                      self->model);
        vl_model_spec_destroy(&model);
        vl_actor_destroy(&self);
        return NULL;
    }
    s_fill_spec(self);
    vl_rng_seed(&self->rng, s_stream_seed(p, 0));
    // One thread for the forward pass: a box runs several actors beside the learner.
    if (!p->external && !(self->policy = vl_policy_new_spec(model, &ops->obs_spec, &ops->action,
                                                            p->seed, 1, why, size))) {
        vl_model_spec_destroy(&model);
        vl_actor_destroy(&self);
        return NULL;
    }
    vl_model_spec_destroy(&model);
    if (self->policy) // it only acts: no backward pass follows its forward ones
        vl_policy_set_inference(self->policy, 1);
    if (s_load_curve(self, p, why, size) != 0) {
        vl_actor_destroy(&self);
        return NULL;
    }
    if (s_alloc(self) != 0 || s_connect(self) != 0)
        goto err;
    return self;
err:
    vl_actor_fail(0, why, size, "cannot start the actor (memory, or the broker address '%s')",
                  p->broker);
    vl_actor_destroy(&self);
    return NULL;
}

vl_actor_t *vl_actor_open(const vl_actor_params_t *params, char *why, size_t why_size)
{
    vl_env_ops_t ops;
    char reason[200];
    if (!params || !params->env)
        return vl_actor_fail(0, why, why_size, "no params or no env spec"), NULL;
    if (vl_env_check_spec(params->env, &ops, reason, sizeof reason) != 0)
        return vl_actor_fail(0, why, why_size, "env spec: %s", reason), NULL;
    ops.table = NULL;
    return s_new(params, &ops, why, why_size);
}

int vl_actor_set_obs_check(vl_actor_t *self, int mode, const float *low, const float *high,
                           char *why, size_t why_size)
{
    vl_obs_rules_t rules;
    if (!self)
        return vl_actor_fail(VL_ACTOR_EINVAL, why, why_size, "no actor");
    if (vl_obs_rules_init(&rules, &self->ops, (vl_obs_check_t)mode, low, high, why, why_size) != 0)
        return VL_ACTOR_EINVAL;
    vl_obs_rules_free(&self->obs_rules);
    self->obs_rules = rules;
    return VL_ACTOR_OK;
}

vl_actor_t *vl_actor_new(const vl_actor_config_t *c)
{
    vl_actor_params_t p = vl_actor_params_default();
    p.broker = c->broker;
    p.policy = c->policy;
    p.env = c->env->table;
    p.n_envs = c->n_envs;
    p.horizon = c->horizon;
    p.hidden = c->hidden;
    p.model = c->model;
    p.actor_id = c->actor_id;
    p.seed = c->seed;
    p.max_ahead = c->max_ahead;
    p.wait_ms = c->wait_ms;
    char why[256];
    vl_actor_t *self = s_new(&p, c->env, why, sizeof why);
    if (!self) {
        vl_error("%s", why);
        return NULL;
    }
    uint64_t *seeds = calloc(self->N, sizeof(uint64_t));
    for (uint32_t i = 0; seeds && i < self->N; i++)
        seeds[i] = s_stream_seed(&self->c, 1 + i);
    if (seeds)
        self->envs = vl_envs_new(c->env, self->N, c->env_arg, seeds, self->obs);
    free(seeds);
    if (self->envs)
        vl_envs_set_obs_check(self->envs, c->obs_check);
    if (!self->envs) {
        vl_error("cannot start the actor");
        vl_actor_destroy(&self);
    }
    return self;
}

/* Counts the time from the publication of weights to now, when they were
   applied (publish_ns 0: not stamped). */
static void s_note_applied(vl_actor_t *self, int64_t publish_ns)
{
    double span = publish_ns ? vl_span_ms(publish_ns, vl_wall_ns()) : -1.0;
    if (span < 0)
        return; // not stamped, a learner's clock ahead of ours, or nonsense
    float ms = (float)span;
    self->apply_ms_sum += ms;
    self->apply_ms_max = ms > self->apply_ms_max ? ms : self->apply_ms_max;
    self->applied++;
}

/* Returns the FNV-1a hash of a reason text. */
static uint32_t s_hash(const char *text)
{
    uint32_t h = 2166136261u;
    for (; *text; text++)
        h = (h ^ (uint8_t)*text) * 16777619u;
    return h;
}

/* Makes the state and segment arrays fit a state of S floats per env.
   Returns 0, or -1 on no memory. */
static int s_resize_state(vl_actor_t *self, uint32_t S)
{
    size_t size = vl_segment_arrays_size(self->c.horizon, &self->ops.obs_spec, self->W, S);
    float *state = calloc((size_t)self->N * S + 1, sizeof(float));
    uint8_t *arrays = size == SIZE_MAX ? NULL : calloc(self->N, size);
    if (!state || !arrays) {
        free(state);
        free(arrays);
        return -1;
    }
    free(self->state);
    free(self->arrays);
    self->state = state;
    self->arrays = arrays;
    self->arrays_size = size;
    self->S = S;
    for (uint32_t i = 0; i < self->N; i++) {
        self->segs[i].state_size = S;
        vl_segment_bind(&self->segs[i], self->arrays + (size_t)i * size);
    }
    return 0;
}

static void s_use_weights(vl_actor_t *self, vl_weights_t *w);

/* A follower takes the network of its policy's spec (the broker's answer to
   GETSPEC), once one names it: rebuilds its policy when it differs, then
   loads the weights that waited for it. A network it cannot build stops it. */
static void s_adopt(vl_actor_t *self, const vl_spec_t *spec)
{
    char text[VL_SPEC_MODEL_MAX], why[VL_SPEC_REASON_MAX];
    if (self->adopted || spec->model_open || strcmp(spec->policy_id, self->c.policy) != 0)
        return;
    vl_spec_model(spec, text, sizeof text);
    vl_model_spec_t *model =
        vl_model_spec_for(text, &self->ops.obs_spec, spec->hidden, why, sizeof why);
    vl_policy_t *policy = model ? vl_policy_new_spec(model, &self->ops.obs_spec, &self->ops.action,
                                                     self->c.seed, 1, why, sizeof why)
                                : NULL;
    uint32_t S = model ? vl_model_spec_state_size(model) : 0;
    if (policy && vl_model_spec_format(model, self->model, sizeof self->model) >= 0 &&
        s_resize_state(self, S) == 0) {
        vl_policy_set_inference(policy, 1);
        vl_policy_destroy(&self->policy);
        self->policy = policy;
        self->c.hidden = spec->hidden;
        self->adopted = 1;
        s_fill_spec(self);
        vl_info("policy '%s' acts with its learner's network: %s", self->c.policy, self->model);
        if (self->waiting)
            s_use_weights(self, self->waiting);
        self->waiting = NULL;
    } else {
        vl_policy_destroy(&policy);
        snprintf(self->refusal, sizeof self->refusal, "the policy's model '%.200s': %.200s", text,
                 why);
        vl_error("cannot act with %s", self->refusal);
        self->refused_spec = 1;
    }
    vl_model_spec_destroy(&model);
}

/* Takes one ["REFUSED"][what][reason] from the broker: a refused spec stops
   the actor; refused segments are logged once per reason, then counted. */
static void s_on_refused(vl_actor_t *self, const char *what, const char *reason)
{
    if (strcmp(what, VL_REFUSED_SPEC) == 0) {
        vl_error("the broker refused this actor: %s", reason);
        snprintf(self->refusal, sizeof self->refusal, "%s", reason);
        self->refused_spec = 1;
        return;
    }
    self->refused++;
    uint32_t h = s_hash(reason);
    for (int i = 0; i < self->n_reasons; i++)
        if (self->reason_hash[i] == h)
            return;
    if (self->n_reasons < VL_ACTOR_REASONS_LOGGED) {
        self->reason_hash[self->n_reasons++] = h;
        vl_warn("the broker refuses our segments: %s; logged once, counted after", reason);
    }
}

/* Copies a frame's bytes into a NUL-terminated string of at most cap - 1
   printable bytes (others become '?'). */
static void s_frame_text(zmq_msg_t *m, char *out, size_t cap)
{
    size_t n = zmq_msg_size(m) < cap - 1 ? zmq_msg_size(m) : cap - 1;
    const char *d = zmq_msg_data(m);
    for (size_t i = 0; i < n; i++)
        out[i] = d[i] >= 32 && d[i] < 127 ? d[i] : '?';
    out[n] = 0;
}

/* Receives one message of at most 3 frames from the control socket into
   texts (a longer one is drained and given as 0 frames). Returns the frame
   count, or -1 when nothing waits. */
static int s_recv_texts(vl_actor_t *self, char text[3][VL_SPEC_REASON_MAX])
{
    zmq_msg_t m;
    zmq_msg_init(&m);
    int n = 0, more = 1;
    for (; more; n++) {
        if (zmq_msg_recv(&m, self->control, n ? 0 : ZMQ_DONTWAIT) < 0)
            break;
        vl_spec_t spec;
        if (n == 1 && self->follows && strcmp(text[0], VL_VERB_SPEC) == 0 &&
            vl_spec_decode(zmq_msg_data(&m), zmq_msg_size(&m), &self->limits, &spec) == VL_OK)
            s_adopt(self, &spec); // the answer to our GETSPEC
        if (n < 3)
            s_frame_text(&m, text[n], VL_SPEC_REASON_MAX);
        more = zmq_msg_more(&m);
    }
    zmq_msg_close(&m);
    return n == 0 ? -1 : n > 3 ? 0 : n;
}

/* Reads what the broker sent on the control socket: refusals, and a
   follower's policy spec. Anything else is ignored. */
static void s_read_control(vl_actor_t *self)
{
    char text[3][VL_SPEC_REASON_MAX];
    for (int k = 0, n; k < 64 && (n = s_recv_texts(self, text)) >= 0; k++)
        if (n == 3 && strcmp(text[0], VL_VERB_REFUSED) == 0)
            s_on_refused(self, text[1], text[2]);
}

/* Sends a beat to the broker's control port if a second has passed since
   the last: alive, segments sent, weights version, apply latency, speed,
   and the spec of our segments. Reads the broker's refusals meanwhile. */
static void s_beat(vl_actor_t *self)
{
    int64_t now = vl_now_ns(), elapsed = now - self->beat_ns;
    if (elapsed < S_BEAT_EVERY_NS)
        return; // called every step: nothing here may touch a socket before this
    s_read_control(self);
    for (int i = 0; i < 3; i++)
        vl_curve_watch_poll(self->watch[i]);
    vl_beat_t b = {.actor_id = self->c.actor_id,
                   .segments_sent = self->sent,
                   .weights_version = self->version,
                   .apply_ms = self->applied ? (float)(self->apply_ms_sum / self->applied) : 0.0f,
                   .apply_ms_max = self->apply_ms_max,
                   .env_steps_per_s =
                       self->beat_ns ? (float)((self->steps - self->beat_steps) * 1e9 / elapsed)
                                     : 0.0f};
    snprintf(b.policy_id, sizeof b.policy_id, "%s", self->c.policy);
    b.has_spec = 1;
    b.spec = self->spec;
    uint8_t *buf;
    size_t size;
    int sent = 0;
    if (vl_beat_encode(&b, &buf, &size) == 0) {
        // Never blocks: with no connection (the broker away, or not reached yet) the send
        // fails at once and the beat is tried again soon, so the first one is not a second late.
        if (zmq_send(self->control, VL_VERB_BEAT, strlen(VL_VERB_BEAT),
                     ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0)
            sent = zmq_send(self->control, buf, size, ZMQ_DONTWAIT) >= 0;
        free(buf);
    }
    if (!sent) {
        self->beat_ns = now - S_BEAT_EVERY_NS + S_BEAT_RETRY_NS;
        return;
    }
    if (self->follows && !self->adopted &&
        zmq_send(self->control, VL_VERB_GETSPEC, strlen(VL_VERB_GETSPEC),
                 ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0)
        zmq_send(self->control, self->c.policy, strlen(self->c.policy), ZMQ_DONTWAIT);
    self->beats_out++;
    self->beat_ns = now;
    self->beat_steps = self->steps;
    self->apply_ms_sum = 0.0;
    self->apply_ms_max = 0.0f;
    self->applied = 0;
}

/* Takes weights w for our policy: loads them into volley's policy, or, for
   an external forward pass, keeps them as they came. Returns 0 if taken
   (w is then consumed in external mode), -1 if they do not fit. */
static int s_take_weights(vl_actor_t *self, vl_weights_t **w)
{
    if (self->policy)
        return vl_policy_load(self->policy, *w);
    vl_weights_destroy(&self->raw);
    vl_weights_destroy(&self->waiting);
    self->raw = *w;
    *w = NULL;
    return 0;
}

/* Applies one weights message if it is for our policy and new. */
static void s_apply_weights(vl_actor_t *self, const uint8_t *data, size_t size)
{
    vl_weights_t *w = NULL;
    vl_reason_t r = vl_weights_decode(data, size, &self->limits, &w);
    if (r != VL_OK) {
        vl_warn("ignoring weights: %s", vl_reason_str(r));
        return;
    }
    if (self->follows && !self->adopted && strcmp(w->policy_id, self->c.policy) == 0) {
        vl_weights_destroy(&self->waiting); // for the network the policy's spec will name
        self->waiting = w;
        return;
    }
    s_use_weights(self, w);
}

/* Acts with weights w (taken) when they are its policy's and new: loads
   them, or says once that they do not fit this actor's network. */
static void s_use_weights(vl_actor_t *self, vl_weights_t *w)
{
    if (strcmp(w->policy_id, self->c.policy) == 0 &&
        (!self->have_weights || w->version != self->version)) {
        uint64_t version = w->version;
        int64_t publish_ns = w->publish_ns;
        if (s_take_weights(self, &w) == 0) {
            s_note_applied(self, publish_ns);
            self->version = version;
            self->have_weights = 1;
            self->rounds_on_version = 0;
        } else if (!self->warned_load++) {
            char why[160];
            vl_policy_mismatch(self->policy, w, why, sizeof why);
            vl_error("weights for '%s' do not fit this actor's network (%s); ignoring them",
                     w->policy_id, why);
        }
    }
    vl_weights_destroy(&w);
}

/* Receives one [topic][body] weights message and applies it. Returns 0, or
   -1 when nothing waits. */
static int s_recv_weights(vl_actor_t *self)
{
    zmq_msg_t topic, body;
    zmq_msg_init(&topic);
    zmq_msg_init(&body);
    int rc = zmq_msg_recv(&topic, self->sub, ZMQ_DONTWAIT) < 0 ? -1 : 0;
    if (rc == 0 && zmq_msg_more(&topic) && zmq_msg_recv(&body, self->sub, 0) >= 0 &&
        !zmq_msg_more(&body))
        s_apply_weights(self, zmq_msg_data(&body), zmq_msg_size(&body));
    while (rc == 0 && zmq_msg_more(&body) && zmq_msg_recv(&body, self->sub, 0) >= 0)
        ;
    zmq_msg_close(&topic);
    zmq_msg_close(&body);
    return rc;
}

/* Receives every waiting weights message, waiting up to timeout_ms for the
   first (or for the wake fd). Returns 1 if new weights were applied, 0 if
   not, -1 on error. */
static int s_poll_weights(vl_actor_t *self, int timeout_ms)
{
    uint64_t before = self->version;
    int had = self->have_weights;
    s_beat(self);
    zmq_pollitem_t items[2] = {{self->sub, 0, ZMQ_POLLIN, 0},
                               {NULL, self->c.wake_fd, ZMQ_POLLIN, 0}};
    int rc = zmq_poll(items, self->c.wake_fd >= 0 ? 2 : 1, timeout_ms);
    if (rc < 0)
        return zmq_errno() == EINTR ? 0 : -1;
    self->woken = (items[1].revents & ZMQ_POLLIN) != 0;
    if (items[0].revents & ZMQ_POLLIN)
        while (s_recv_weights(self) == 0)
            ;
    return self->have_weights && (!had || self->version != before);
}

/* Records env i's step t of its segment from the outcome arrays. */
static void s_record(vl_actor_t *self, uint32_t i, uint32_t t)
{
    vl_segment_t *s = &self->segs[i];
    int ended = self->term[i] || self->trunc[i];
    memcpy(s->actions + (size_t)t * self->W, self->actions + (size_t)i * self->W,
           self->W * sizeof(float));
    s->logp[t] = self->logps[i];
    s->rewards[t] = self->rewards[i];
    s->dones[t] = ended ? 1.0f : 0.0f;
    s->truncated[t] = self->trunc[i] && !self->term[i];
    if (s->truncated[t]) // bootstrap from where the time limit cut it
        vl_obs_to_rows(&self->ops.obs_spec, 1, self->final_obs + (size_t)i * self->D,
                       s->final_obs + (size_t)s->n_truncated++ * s->obs_row_bytes);
    self->ep_return[i] += s->rewards[t];
    self->ep_len[i]++;
    if (ended) { // the next observation starts an episode: from a zero state
        memset(self->state + (size_t)i * self->S, 0, self->S * sizeof(float));
        s->episode_returns[s->n_episodes] = self->ep_return[i];
        s->episode_lengths[s->n_episodes++] = self->ep_len[i];
        const float *figures = self->envs ? vl_envs_figures(self->envs) : NULL;
        if (figures)
            vl_figures_add(&s->figures, figures + (size_t)i * self->ops.n_figures);
        self->ep_return[i] = 0;
        self->ep_len[i] = 0;
    }
}

static void s_free_buf(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* Finishes every env's segment with its bootstrap observation and pushes it.
   Returns 0, or -1 when interrupted or on a socket error. */
static int s_send_segments(vl_actor_t *self, uint64_t version)
{
    for (uint32_t i = 0; i < self->N; i++) {
        vl_segment_t *s = &self->segs[i];
        vl_obs_to_rows(&self->ops.obs_spec, 1, self->obs + (size_t)i * self->D,
                       s->obs + (size_t)self->c.horizon * s->obs_row_bytes);
        s->seq = self->seq++;
        s->policy_version = version;
        s->send_ns = vl_wall_ns();
        uint8_t *buf;
        size_t size;
        if (vl_segment_encode(s, &buf, &size) != 0)
            return -1;
        zmq_msg_t msg;
        zmq_msg_init_data(&msg, buf, size, s_free_buf, NULL);
        // Waits while the broker takes nothing (its queue full, it is down, or it refused our
        // key), beating and watching the key each second meanwhile.
        while (zmq_msg_send(&msg, self->push, 0) < 0) {
            if (zmq_errno() != EAGAIN || s_stopped(self)) {
                zmq_msg_close(&msg);
                return -1; // EINTR on shutdown, else a real error
            }
            s_beat(self);
        }
        s->n_episodes = 0;
        s->n_truncated = 0;
        vl_figures_clear(&s->figures);
        self->sent++;
    }
    return 0;
}

/* Says what the actor waits for: a broker to connect to (no beat has gone
   out: a beat only leaves over a connection), or, with the broker up, a
   learner of its policy (no weights of it, not even the broker's last ones). */
static void s_say_waiting(const vl_actor_t *self)
{
    char endpoint[300];
    if (!self->beats_out &&
        vl_opt_endpoint("actor", self->c.broker, 0, endpoint, sizeof endpoint) == 0)
        vl_info("no broker at %s yet (broker unreachable)", endpoint);
    else if (!self->have_weights)
        vl_info("broker up, no learner serves policy '%s' yet (no weights of it)", self->c.policy);
}

/* With the caller's own CURVE identity: takes a refused key as a refusal
   of the actor (the caller reports it). Returns 1 if it was refused. */
static int s_key_refused(vl_actor_t *self)
{
    char text[VL_SPEC_REASON_MAX - 8];
    for (int i = 0; self->curve && i < 3; i++)
        if (vl_curve_watch_refusal(self->watch[i], text, sizeof text)) {
            snprintf(self->refusal, sizeof self->refusal, "CURVE: %s", text);
            self->refused_spec = 1;
            return 1;
        }
    return 0;
}

/* Lets the watches log a later refusal of the caller's own key, as `volley
   actor`'s do, once the key got in. */
static void s_key_accepted(vl_actor_t *self)
{
    for (int i = 0; self->curve && i < 3; i++)
        vl_curve_watch_set_quiet(self->watch[i], 0);
}

/* Blocks until the first weights arrive and a beat has carried our spec to
   the broker (so no segment of ours reaches it before the spec does; a
   conflicting spec is answered at once, as is a refused key of the caller's
   own identity). Returns VL_ACTOR_OK or the code that ended the wait. */
static int s_wait_first_weights(vl_actor_t *self)
{
    int64_t start = vl_now_ns(), next_note = start + S_WAIT_FIRST_NS;
    int said_up = 0; // the last note said the broker is up
    while (!s_stopped(self) && !(self->have_weights && self->beats_out) && !self->refused_spec) {
        if (s_poll_weights(self, self->beats_out ? 200 : 20) < 0)
            return VL_ACTOR_EFAIL;
        s_read_control(self); // a refusal of our spec comes soon after our first beat
        if (s_key_refused(self))
            break;
        int64_t now = vl_now_ns();
        if (now > next_note || (now > start + S_WAIT_FIRST_NS && said_up != !!self->beats_out)) {
            s_say_waiting(self); // when due, and at once when the broker came up
            said_up = !!self->beats_out;
            next_note = now + S_WAIT_EVERY_NS;
        }
    }
    return self->refused_spec ? VL_ACTOR_EREFUSED : s_stopped(self) ? VL_ACTOR_EINTR : VL_ACTOR_OK;
}

/* When the actor is max_ahead segments ahead of its weights, waits a while
   for newer ones, so that the learner trains on fresh data. */
static void s_throttle(vl_actor_t *self)
{
    if (!self->c.max_ahead || self->rounds_on_version < self->c.max_ahead)
        return;
    int64_t deadline = vl_now_ns() + (int64_t)self->c.wait_ms * 1000000;
    while (!s_stopped(self) && self->rounds_on_version >= self->c.max_ahead) {
        int64_t left_ms = (deadline - vl_now_ns()) / 1000000;
        int64_t beat_ms = S_BEAT_EVERY_NS / 1000000; // a long --wait-ms must not stop the beats
        if (left_ms <= 0 || s_poll_weights(self, (int)(left_ms < beat_ms ? left_ms : beat_ms)) < 0)
            break;
    }
}

/* Returns the code that ended the actor, with its reason in why. */
int vl_actor_dead(vl_actor_t *self, char *why, size_t size)
{
    if (self->dead == VL_ACTOR_EREFUSED && strncmp(self->refusal, "CURVE: ", 7) == 0)
        return vl_actor_fail(self->dead, why, size, "%s", self->refusal);
    if (self->dead == VL_ACTOR_EREFUSED)
        return vl_actor_fail(self->dead, why, size, "the broker refused this actor: %s",
                             self->refusal);
    if (self->dead == VL_ACTOR_EINTR)
        return vl_actor_fail(self->dead, why, size, "interrupted while sending; close the actor");
    return vl_actor_fail(self->dead, why, size, "a socket to the broker at %s failed (%s)",
                         self->c.broker, zmq_strerror(zmq_errno()));
}

/* Ends the actor with code (a refusal, a failed socket); returns it. */
static int s_die(vl_actor_t *self, int code, char *why, size_t size)
{
    self->dead = code;
    return vl_actor_dead(self, why, size);
}

int vl_actor_sync(vl_actor_t *self, char *why, size_t why_size)
{
    if (self->dead)
        return vl_actor_dead(self, why, why_size);
    if (!self->started) {
        int rc = s_wait_first_weights(self);
        if (rc == VL_ACTOR_EINTR)
            return vl_actor_fail(rc, why, why_size,
                                 "interrupted while waiting for the first weights");
        if (rc != VL_ACTOR_OK)
            return s_die(self, rc, why, why_size);
        self->started = 1;
        s_key_accepted(self);
        vl_info("acting for policy '%s' with %u %s envs from weights version %llu", self->c.policy,
                self->N, self->ops.name, (unsigned long long)self->version);
    }
    if (s_poll_weights(self, 0) < 0)
        return s_die(self, VL_ACTOR_EFAIL, why, why_size);
    if (self->refused_spec)
        return s_die(self, VL_ACTOR_EREFUSED, why, why_size);
    if (vl_interrupted || self->woken)
        return vl_actor_fail(VL_ACTOR_EINTR, why, why_size, "interrupted");
    return VL_ACTOR_OK;
}

/* Begins a step on self->obs: syncs, notes the version of a new segment and
   writes the observations into row t of every segment. */
int vl_actor_begin_step(vl_actor_t *self, char *why, size_t size)
{
    int rc = vl_actor_sync(self, why, size);
    if (rc != VL_ACTOR_OK)
        return rc;
    if (self->t == 0)
        self->seg_version = self->version;
    for (uint32_t i = 0; i < self->N; i++) {
        vl_segment_t *s = &self->segs[i];
        if (self->t == 0) // the state the segment's first step acts from
            memcpy(s->state, self->state + (size_t)i * self->S, self->S * sizeof(float));
        vl_obs_to_rows(&self->ops.obs_spec, 1, self->obs + (size_t)i * self->D,
                       s->obs + (size_t)self->t * s->obs_row_bytes);
    }
    return VL_ACTOR_OK;
}

/* Acts on self->obs with volley's policy into self->actions and logps. */
int vl_actor_act_policy(vl_actor_t *self, char *why, size_t size)
{
    int rc = vl_actor_begin_step(self, why, size);
    if (rc != VL_ACTOR_OK)
        return rc;
    float *state = self->S ? self->state : NULL; // advanced in place
    if (vl_policy_forward_seq(self->policy, self->N, 1, self->obs, state, NULL, self->logits, NULL,
                              state) != 0)
        return vl_actor_fail(VL_ACTOR_EFAIL, why, size, "the policy's forward pass failed");
    const float *logstd = vl_policy_logstd(self->policy);
    for (uint32_t i = 0; i < self->N; i++)
        vl_dist_sample(&self->ops.action, self->logits + (size_t)i * self->A, logstd, &self->rng,
                       self->actions + (size_t)i * self->W, &self->logps[i]);
    return VL_ACTOR_OK;
}

/* Records the outcome arrays of the step; every horizon steps pushes the
   segments (bootstrapping from self->obs, the next observations) and paces. */
int vl_actor_end_step(vl_actor_t *self, char *why, size_t size)
{
    for (uint32_t i = 0; i < self->N; i++)
        s_record(self, i, self->t);
    self->steps += self->N;
    if (++self->t < self->c.horizon)
        return VL_ACTOR_OK;
    self->t = 0;
    if (self->beats_out < 3) // the first seconds: a spec refusal stops us before we send
        s_read_control(self);
    if (self->refused_spec)
        return s_die(self, VL_ACTOR_EREFUSED, why, size);
    if (s_send_segments(self, self->seg_version) != 0)
        return s_die(self, s_stopped(self) ? VL_ACTOR_EINTR : VL_ACTOR_EFAIL, why, size);
    self->rounds_on_version++;
    s_throttle(self); // an interruption here is seen by the next act: the step is recorded
    return VL_ACTOR_OK;
}

void vl_actor_destroy(vl_actor_t **self_p)
{
    vl_actor_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    if (self->refused)
        vl_info("the broker refused %llu of our segments", (unsigned long long)self->refused);
    vl_envs_destroy(&self->envs);
    for (int i = 0; i < 3; i++)
        vl_curve_watch_destroy(&self->watch[i]);
    if (self->push)
        zmq_close(self->push);
    if (self->sub)
        zmq_close(self->sub);
    if (self->control)
        zmq_close(self->control);
    if (self->ctx)
        zmq_ctx_term(self->ctx);
    vl_curve_destroy(&self->curve);
    vl_policy_destroy(&self->policy);
    vl_weights_destroy(&self->raw);
    vl_obs_rules_free(&self->obs_rules);
    free(self->obs);
    free(self->final_obs);
    free(self->rewards);
    free(self->term);
    free(self->trunc);
    free(self->actions);
    free(self->logps);
    free(self->state);
    free(self->logits);
    free(self->ep_return);
    free(self->ep_len);
    free(self->segs);
    free(self->arrays);
    free(self);
    *self_p = NULL;
}

void vl_actor_close(vl_actor_t **self_p)
{
    vl_actor_destroy(self_p);
}
