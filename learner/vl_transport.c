/*  vl_transport: include/volley/learner.h over the C learner's own parts:
    vl_learner_spec_settle_within settles the spec, vl_inlet receives into a
    vl_buffer, vl_weights encodes what is published. */
#include "volley/learner.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_sock.h"
#include "../messages/vl_codec.h"
#include "../models/vl_policy.h"
#include "../store/vl_buffer.h"
#include "../store/vl_checkpoint.h"
#include "vl_engine.h"
#include "vl_inlet.h"
#include "vl_learner_config.h"
#include "vl_learner_spec.h"
#include "vl_publication.h"
#include "vl_segarray.h"

#define S_CAPACITY_MAX (1u << 20)
#define S_MAX_MSG      (64 << 20) // largest message the weights socket sends
#define S_CONFIG_MAX   16384      // a checkpoint's config section, as the C learner's keeper
#define S_LINGER_MS    500        // a last publication still leaves when the caller closes
#define S_HEARTBEAT_NS                                                                             \
    1000000000LL // the last weights again each second, as the C learner:
                 // a broker that restarted, or a lost one

struct vl_transport_s {
    char broker[256];
    char policy[VL_POLICY_ID_MAX];
    vl_learner_config_t c; // spec, policy, broker, capacity: what the inlet serves
    void *ctx;
    void *pub; // caller's thread: weights and stats to the broker
    vl_buffer_t *buf;
    vl_inlet_t *inlet;
    vl_policy_t *shape; // volley's MLP for the spec, to check publications (lazy)
    int *slots;         // [capacity / 2]: the batch held
    int n_taken;        // its size, 0 when none is held
    const vl_segment_t **segs; // [capacity / 2]: the batch held, its segments
    uint8_t *last;      // the last weights published (encoded), for the heartbeat
    size_t last_size;
    uint64_t last_version;
    int published; // 1 once anything was published
    int64_t next_heartbeat, start_ns;
};

/* Writes a reason into why, if not NULL. */
static void s_why(char *why, size_t why_size, const char *text)
{
    if (why && why_size)
        snprintf(why, why_size, "%s", text);
}

/* Makes the config the inlet serves: the C learner's defaults, no env
   code, this policy and capacity. Returns 0, or -1 after writing why. */
static int s_config(vl_transport_t *self, const vl_transport_spec_t *spec, uint32_t capacity,
                    int timeout_ms, char *why, size_t why_size)
{
    vl_learner_config_t *c = &self->c;
    *c = vl_learner_config_default();
    c->env = NULL;
    c->broker = self->broker;
    c->policy = self->policy;
    c->capacity = capacity;
    c->batch_segments = 0; // the credit window is capacity / 2
    if (spec && vl_engine_config_spec_to(c, spec, why, why_size) != 0)
        return -1;
    return vl_learner_spec_settle_within(c, spec != NULL, timeout_ms, why, why_size) == 0 ? 0 : -1;
}

vl_transport_t *vl_transport_new(const char *broker, const char *policy,
                                 const vl_transport_spec_t *spec, uint32_t capacity, int timeout_ms,
                                 char *why, size_t why_size)
{
    char ignored[8];
    if (!why || !why_size)
        why = ignored, why_size = sizeof ignored;
    if (!broker || !*broker || strlen(broker) >= 256 || !vl_policy_id_ok(policy)) {
        s_why(why, why_size,
              "broker must be HOST[:PORT] and policy 1..63 printable characters, "
              "no spaces, not starting with '~'");
        return NULL;
    }
    if (capacity < 2 || capacity > S_CAPACITY_MAX) {
        snprintf(why, why_size, "capacity %u: expected 2 .. %u segments", capacity, S_CAPACITY_MAX);
        return NULL;
    }
    vl_transport_t *self = calloc(1, sizeof *self);
    if (!self) {
        s_why(why, why_size, "no memory");
        return NULL;
    }
    snprintf(self->broker, sizeof self->broker, "%s", broker);
    snprintf(self->policy, sizeof self->policy, "%s", policy);
    self->start_ns = vl_now_ns();
    if (s_config(self, spec, capacity, timeout_ms, why, why_size) != 0)
        goto err;
    self->ctx = zmq_ctx_new();
    self->buf = vl_buffer_new(capacity, self->c.horizon, &self->c.obs_spec, self->c.action.dims,
                              vl_learner_config_state_size(&self->c));
    self->pub = self->ctx ? vl_sock_connect(self->ctx, ZMQ_PUB, self->broker, VL_PORT_WEIGHTS_IN,
                                            S_LINGER_MS, S_MAX_MSG)
                          : NULL;
    self->slots = calloc(capacity / 2, sizeof *self->slots);
    self->segs = calloc(capacity / 2, sizeof *self->segs);
    self->inlet =
        self->buf && self->pub && self->slots && self->segs ? vl_inlet_new(self->ctx, &self->c, self->buf) : NULL;
    if (!self->inlet) {
        s_why(why, why_size, "cannot make the buffer or the sockets (no memory, or a bad address)");
        goto err;
    }
    return self;
err:
    vl_transport_destroy(&self);
    return NULL;
}

void vl_transport_destroy(vl_transport_t **self_p)
{
    vl_transport_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    if (self->slots)
        vl_transport_release(self);
    vl_inlet_destroy(&self->inlet);
    if (self->pub)
        zmq_close(self->pub);
    if (self->ctx)
        zmq_ctx_term(self->ctx);
    vl_buffer_destroy(&self->buf);
    vl_policy_destroy(&self->shape);
    free(self->last);
    free(self->slots);
    free(self->segs);
    free(self);
    *self_p = NULL;
}

void vl_transport_spec(const vl_transport_t *self, vl_transport_spec_t *spec)
{
    vl_engine_config_spec_from(&self->c, spec);
}

/* Sends [topic][body] on the weights stream. Returns 0 or -1. */
static int s_send(vl_transport_t *self, const char *topic, const uint8_t *body, size_t size)
{
    if (zmq_send(self->pub, topic, strlen(topic), ZMQ_SNDMORE) < 0)
        return -1;
    return zmq_send(self->pub, body, size, 0) < 0 ? -1 : 0;
}

/* Sends the last weights again when a second has passed since. */
static void s_heartbeat(vl_transport_t *self)
{
    if (!self->last || vl_now_ns() < self->next_heartbeat)
        return;
    s_send(self, self->policy, self->last, self->last_size);
    self->next_heartbeat = vl_now_ns() + S_HEARTBEAT_NS;
}

int vl_transport_take(vl_transport_t *self, uint32_t n, int timeout_ms)
{
    if (self->n_taken || n < 1 || n > self->c.capacity / 2)
        return -1;
    s_heartbeat(self);
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : vl_now_ns() + (int64_t)timeout_ms * 1000000LL;
    int got;
    do { // in slices of a second at most: the heartbeat goes on while the caller waits
        int64_t left = (deadline - vl_now_ns()) / 1000000LL;
        got = vl_buffer_take(self->buf, (int)n,
                             left <= 0     ? 0
                             : left > 1000 ? 1000
                                           : (int)left,
                             self->slots);
        s_heartbeat(self);
    } while (got == 0 && vl_now_ns() < deadline);
    self->n_taken = got;
    for (int i = 0; i < got; i++)
        self->segs[i] = vl_buffer_segment(self->buf, self->slots[i]);
    return got;
}

void vl_transport_release(vl_transport_t *self)
{
    if (self->n_taken)
        vl_buffer_release(self->buf, self->slots, self->n_taken);
    self->n_taken = 0;
}

size_t vl_transport_array_bytes(const vl_transport_t *self, vl_transport_array_t array)
{
    if (array < 0 || array >= VL_TRANSPORT_ARRAYS)
        return 0;
    return vl_segarray_bytes(self->segs, (uint32_t)self->n_taken, array);
}

int vl_transport_gather(const vl_transport_t *self, vl_transport_array_t array, void *out,
                        size_t out_size)
{
    if (!self->n_taken || array < 0 || array >= VL_TRANSPORT_ARRAYS)
        return -1;
    return vl_segarray_gather(self->segs, (uint32_t)self->n_taken, array, out, out_size);
}

const void *vl_transport_segment_array(const vl_transport_t *self, uint32_t i,
                                       vl_transport_array_t array, size_t *bytes)
{
    if (i >= (uint32_t)self->n_taken || array < 0 || array >= VL_TRANSPORT_ARRAYS)
        return NULL;
    const vl_segment_t *s = self->segs[i];
    const void *p = vl_segarray_in_place(s, array);
    if (p && bytes)
        *bytes = vl_segarray_bytes_of(s, array);
    return p;
}

void vl_transport_counts(vl_transport_t *self, vl_transport_counts_t *counts)
{
    vl_inlet_counts_t in;
    vl_inlet_counts(self->inlet, &in);
    memset(counts, 0, sizeof *counts);
    counts->accepted = in.accepted;
    counts->refused = in.refused_total;
    counts->evicted = vl_buffer_evicted(self->buf);
    counts->env_steps = in.env_steps;
    counts->episodes = in.episodes;
    counts->mean_return = in.mean_return;
    counts->window = in.window;
    counts->waiting = (uint32_t)vl_buffer_waiting(self->buf);
}

int vl_transport_reasons(void)
{
    return VL_EREASONS;
}

uint64_t vl_transport_refused(vl_transport_t *self, int reason, const char **name)
{
    if (reason < 0 || reason >= VL_EREASONS) {
        if (name)
            *name = NULL;
        return 0;
    }
    vl_inlet_counts_t in;
    vl_inlet_counts(self->inlet, &in);
    if (name)
        *name = vl_reason_str((vl_reason_t)reason);
    return in.refused[reason];
}

int vl_transport_publish(vl_transport_t *self, uint64_t version,
                         const vl_transport_tensor_t *tensors, uint32_t n, int check_policy,
                         char *why, size_t why_size)
{
    char ignored[8];
    if (!why || !why_size)
        why = ignored, why_size = sizeof ignored;
    vl_tensor_t checked[VL_TRANSPORT_TENSORS_MAX];
    uint8_t *buf;
    size_t size;
    if (self->published && version < self->last_version) {
        snprintf(why, why_size,
                 "version %llu: below %llu, published before (actors keep the "
                 "newest)",
                 (unsigned long long)version, (unsigned long long)self->last_version);
        return -1;
    }
    if (check_policy && !self->shape) {
        vl_model_spec_t *model = NULL;
        if (vl_learner_config_model(&self->c, &model, NULL, why, why_size) == 0)
            self->shape =
                vl_policy_new_spec(model, &self->c.obs_spec, &self->c.action, 1, 1, why, why_size);
        vl_model_spec_destroy(&model);
        if (!self->shape)
            return -1; // why says what the spec's network could not be built for
    }
    if (vl_publication_check(tensors, n, check_policy ? self->shape : NULL, checked, why,
                             why_size) != 0 ||
        vl_publication_encode(self->policy, version, checked, n, &buf, &size, why, why_size) != 0)
        return -1;
    if (s_send(self, self->policy, buf, size) != 0) {
        snprintf(why, why_size, "cannot send: %s", zmq_strerror(zmq_errno()));
        free(buf);
        return -1;
    }
    free(self->last);
    self->last = buf;
    self->last_size = size;
    self->last_version = version;
    self->published = 1;
    self->next_heartbeat = vl_now_ns() + S_HEARTBEAT_NS;
    return 0;
}

int vl_transport_publish_stats(vl_transport_t *self, uint64_t version, uint64_t segments_trained,
                               float policy_loss, float value_loss, float entropy)
{
    vl_stats_t st;
    memset(&st, 0, sizeof st);
    snprintf(st.policy_id, sizeof st.policy_id, "%s", self->policy);
    // Evictions first: each was accepted before, so the arrivals read after cover it. Drops
    // for lag are the caller's own (outside this transport), so none is counted here.
    st.dropped_capacity = vl_buffer_evicted(self->buf);
    vl_inlet_fill_stats(self->inlet, &st);
    st.version = version;
    st.segments_trained = segments_trained;
    st.segments_dropped = st.dropped_capacity + st.dropped_budget + st.dropped_invalid;
    st.policy_loss = vl_float_is_finite(policy_loss) ? policy_loss : 0;
    st.value_loss = vl_float_is_finite(value_loss) ? value_loss : 0;
    st.entropy = vl_float_is_finite(entropy) ? entropy : 0;
    st.uptime_s = (double)(vl_now_ns() - self->start_ns) / 1e9;
    uint8_t *buf;
    size_t size;
    if (vl_stats_encode(&st, &buf, &size) != 0)
        return -1;
    int rc = s_send(self, VL_STATS_TOPIC, buf, size);
    free(buf);
    return rc;
}

/* Writes the config section's text into out[S_CONFIG_MAX]: the spec's
   lines (as the C learner's checkpoints have them), then extra. Returns its
   length, or -1 when it does not fit. */
static int s_checkpoint_config(const vl_transport_t *self, const vl_spec_t *spec, const char *extra,
                               char *out)
{
    char obs[256], actions[VL_ACTION_TEXT_MAX];
    vl_spec_obs_str(&spec->obs_spec, obs, sizeof obs);
    vl_action_key(&spec->action, actions, sizeof actions);
    int n = snprintf(out, S_CONFIG_MAX,
                     "# the configuration this checkpoint was trained with\n"
                     "policy = %s\nenv = %s\nobs = %s\nactions = %s\nhidden = %u\nmodel = %s\n"
                     "horizon = %u\nversion = %llu\n%s",
                     self->policy, spec->env[0] ? spec->env : "?", obs, actions, spec->hidden,
                     spec->model[0] ? spec->model : "?", spec->horizon,
                     (unsigned long long)self->last_version, extra ? extra : "");
    return n > 0 && n < S_CONFIG_MAX ? n : -1;
}

/* Fills spec with the policy's spec, env named when it is a wire name.
   Returns 0, or -1 after writing why. */
static int s_checkpoint_spec(const vl_transport_t *self, const char *env, vl_spec_t *spec,
                             char *why, size_t why_size)
{
    vl_learner_config_spec(&self->c, spec);
    if (env && *env && !vl_wire_name_ok(env, sizeof spec->env)) {
        snprintf(why, why_size, "env '%.64s': expected a name of 1 .. %zu printable characters",
                 env, sizeof spec->env - 1);
        return -1;
    }
    if (env && *env)
        snprintf(spec->env, sizeof spec->env, "%s", env);
    return 0;
}

int vl_transport_checkpoint(const vl_transport_t *self, const char *path, const char *env,
                            const char *extra, char *why, size_t why_size)
{
    char ignored[8];
    if (!why || !why_size)
        why = ignored, why_size = sizeof ignored;
    if (!path || !*path) {
        s_why(why, why_size, "no path given");
        return -1;
    }
    if (!self->published) {
        s_why(why, why_size,
              "nothing published yet: a checkpoint holds the weights published last");
        return -1;
    }
    vl_spec_t spec;
    if (s_checkpoint_spec(self, env, &spec, why, why_size) != 0)
        return -1;
    uint8_t *spec_bytes = NULL;
    size_t spec_size = 0;
    char *config = malloc(S_CONFIG_MAX);
    int n = config ? s_checkpoint_config(self, &spec, extra, config) : -1;
    int rc = -1;
    if (n < 0)
        snprintf(why, why_size, "the config (env and extra lines) is over %d bytes", S_CONFIG_MAX);
    else if (vl_spec_encode(&spec, &spec_bytes, &spec_size) != 0)
        s_why(why, why_size, "the policy's spec does not encode (no memory)");
    else {
        vl_section_t sections[] = {{"weights", self->last, self->last_size},
                                   {"config", config, (size_t)n},
                                   {"spec", spec_bytes, spec_size}};
        rc = vl_checkpoint_write(path, sections, 3);
        if (rc != 0)
            snprintf(why, why_size,
                     "%s: cannot write it (the log says why: directory, permissions, disk space)",
                     path);
    }
    free(spec_bytes);
    free(config);
    return rc;
}
