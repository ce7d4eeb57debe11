/*  vl_broker: routing segments to learners and weights to actors. */
#include "vl_broker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "../common/vl_curve.h"
#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_sock.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_status.h"
#include "vl_inspect.h"
#include "vl_notify.h"
#include "vl_recorder.h"
#include "vl_roster.h"
#include "vl_specs.h"

#define S_MAX_LEARNERS       64
#define S_MAX_TOPICS         256          // last-value cache entries (policies + stats)
#define S_IDENTITY_MAX       256          // libzmq routing ids are at most 255 bytes
#define S_LEARNER_TIMEOUT_NS 5000000000LL // a learner says hello every second
#define S_ACTOR_TIMEOUT_NS   5000000000LL // an actor beats every second
// For this long after the broker starts, segments of a policy no learner has claimed yet are
// held for it (in a queue like a learner's, dropped if none claims it in S_LEARNER_TIMEOUT_NS):
// after a broker restart, actors flush what they held before the learner has said hello.
#define S_STARTUP_GRACE_NS 3000000000LL
#define S_MAX_UNCLAIMED    4 // policies held for at once that way: a bound on what anyone can park
#define S_WINDOW_NS        1000000000LL // rates are over windows of this length
#define S_VERB_MAX         16           // longest control verb
#define S_BATCH            256          // messages taken per socket per poll wake-up
#define S_MAX_ARRAYS       (256u << 20) // largest decoded segment inspected
// Bytes a queued segment is charged beyond its size: our node (zmq_msg_t and a link) and
// libzmq's content header, each with its malloc header, so the byte bound bounds memory.
#define S_QUEUED_OVERHEAD 128
// libzmq receives small messages into shared 8 KiB-ish batch buffers and hands them out by
// reference: one queued 1 KiB segment can keep a whole buffer alive. Queued messages below
// this size are copied out, so the queue's byte bound is what it holds.
#define S_COPY_BELOW (64 << 10)
#define S_MAX_SPECS  256 // policies with a declared spec
// Distinct refusal texts counted by name (a field with both values); more are counted under
// the codec's "not what this receiver serves", so no sender can grow the table.
#define S_TEXT_DROPS      64
#define S_LEARNER_REASONS VL_REFUSALS_MAX // a learner's refusal rows the broker follows

/* Why a message was dropped: the codec's reasons, then the broker's own. */
enum {
    S_DROP_NO_LEARNER = VL_EREASONS,
    S_DROP_QUEUE_FULL,  // libzmq's send queue (--hwm) full
    S_DROP_QUEUE_BYTES, // oldest pushed out of the learner's queue (--queue-bytes)
    S_DROP_GONE,        // queued for a learner that went silent or was replaced
    S_DROP_STALE,       // policy version older than the newest by more than --max-lag
    S_DROP_VERB,        // a control request with an unknown verb
    S_DROP_REASONS
};

/* What was dropped, for counting and logging. */
enum { S_SEGMENT, S_HELLO, S_CREDIT, S_PUBLICATION, S_COMMAND, S_SPEC, S_KINDS };
static const char *s_kind_names[S_KINDS] = {"segments",     "hellos",   "credits",
                                            "publications", "commands", "specs"};

/* A drop counted under a reason text that names the field and its values. */
typedef struct {
    int kind;
    char text[VL_SPEC_REASON_MAX];
    uint64_t count;
} s_text_drop_t;

/* What the broker has counted of one refusal row of a learner's stats. */
typedef struct {
    uint32_t actor_id;
    char reason[VL_REFUSAL_TEXT_MAX];
    uint64_t counted;
} s_seen_refusal_t;

/* A segment waiting for its learner's credit. */
typedef struct s_queued_s {
    zmq_msg_t msg;
    struct s_queued_s *next;
} s_queued_t;

typedef struct {
    char policy[VL_POLICY_ID_MAX];
    uint8_t id[S_IDENTITY_MAX];
    size_t id_len;
    int64_t seen_ns;         // monotonic, last hello
    int credited;            // 1 once a Credit on this connection set `sent`'s base
    uint64_t granted;        // the connection's latest total_granted
    uint64_t sent;           // counted like the learner's total_received
    s_queued_t *head, *tail; // waiting for credit, oldest first
    uint64_t queued;         // segments in the queue
    size_t queued_bytes;     // their sizes plus S_QUEUED_OVERHEAD each
    int paused;              // 1: hold its segments in the queue (control PAUSE)
    uint64_t delivered;      // segments sent to it
    uint64_t win_delivered;  // in the current rate window
    float delivered_per_s;   // over the last window
    uint64_t newest_version; // of the weights it published
    int have_stats;
    vl_stats_t stats;                             // the last it published
    s_seen_refusal_t refusals[S_LEARNER_REASONS]; // its refusals counted so far
    int n_refusals;
} s_learner_t;

typedef struct {
    zmq_msg_t topic;
    zmq_msg_t body;
} s_cached_t;

struct vl_broker_s {
    void *ctx;
    int own_ctx;       // 0: czmq's, shared with the authenticator
    vl_curve_t *curve; // NULL: no security
    void *pull;        // segments from actors
    void *router;      // learners: hellos in, segments out
    void *xsub;        // weights and stats from learners
    void *xpub;        // weights and stats to actors and monitors
    void *control;     // beats, status, pause/resume, shutdown
    vl_limits_t limits;
    s_learner_t learners[S_MAX_LEARNERS];
    int n_learners;
    s_cached_t cache[S_MAX_TOPICS];
    int n_cached;
    vl_inspect_t *inspect;
    size_t queue_bytes; // bound of each learner's queue
    uint64_t max_lag;   // 0: no bound
    int64_t log_every_ns;
    vl_roster_t *roster;
    vl_specs_t *specs;   // each policy's spec
    vl_notify_t *notify; // where to tell an actor it was refused
    s_text_drop_t text_drops[S_TEXT_DROPS];
    int n_text_drops;
    vl_recorder_t *recorder;                // NULL: not recording
    int64_t start_ns, window_ns, logged_ns; // monotonic
    uint64_t win_received;
    float received_per_s;
    int shutdown;    // a SHUTDOWN request came
    int warned_full; // the learner table was full (logged once)
    uint64_t received;
    uint64_t routed;
    uint64_t dropped[S_KINDS][S_DROP_REASONS];
};

vl_broker_config_t vl_broker_config_default(void)
{
    return (vl_broker_config_t){.bind_host = "*",
                                .port = 7600,
                                .max_msg = 64 << 20,
                                .sndhwm = 1000,
                                .inspect_full = 1,
                                .queue_bytes = 64 << 20,
                                .max_lag = 0,
                                .log_every_s = 10,
                                .max_actors = 4096,
                                .record = NULL,
                                .record_flush = VL_FLUSH_EVERYSEC};
}

static const char *s_drop_str(int reason)
{
    if (reason == S_DROP_NO_LEARNER)
        return "no learner serves its policy";
    if (reason == S_DROP_QUEUE_FULL)
        return "learner queue full";
    if (reason == S_DROP_QUEUE_BYTES)
        return "learner queue over its byte bound";
    if (reason == S_DROP_GONE)
        return "learner gone";
    if (reason == S_DROP_STALE)
        return "too stale";
    if (reason == S_DROP_VERB)
        return "unknown verb";
    return vl_reason_str((vl_reason_t)reason);
}

/* Counts a dropped message; the first drop of each kind and reason is
   logged. */
static void s_drop(vl_broker_t *self, int kind, int reason, const char *policy)
{
    if (self->dropped[kind][reason]++ == 0)
        vl_warn("dropping %s: %s%s%s%s; logged once, counted after", s_kind_names[kind],
                s_drop_str(reason), policy ? " (policy '" : "", policy ? policy : "",
                policy ? "')" : "");
}

/* Counts n drops under a reason text; the first of each text is logged. A
   text beyond the table's room is counted as VL_EMISMATCH. */
static void s_drop_text(vl_broker_t *self, int kind, const char *text, uint64_t n)
{
    for (int i = 0; i < self->n_text_drops; i++) {
        s_text_drop_t *d = &self->text_drops[i];
        if (d->kind == kind && strcmp(d->text, text) == 0) {
            d->count += n;
            return;
        }
    }
    if (self->n_text_drops == S_TEXT_DROPS) {
        s_drop(self, kind, VL_EMISMATCH, NULL);
        self->dropped[kind][VL_EMISMATCH] += n - 1;
        return;
    }
    s_text_drop_t *d = &self->text_drops[self->n_text_drops++];
    d->kind = kind;
    snprintf(d->text, sizeof d->text, "%s", text);
    d->count = n;
    vl_warn("dropping %s: %s; logged once, counted after", s_kind_names[kind], text);
}

/* Creates a socket of the type bound at base port + offset. NULL on error. */
static void *s_bind(vl_broker_t *self, const vl_broker_config_t *c, int type, int offset)
{
    return vl_sock_bind(self->ctx, type, c->bind_host, c->port + offset, 0, c->max_msg);
}

/* Loads the broker's certificate, starts the authenticator over c->allow
   and makes every socket a CURVE server. Returns 0, or -1 after logging. */
static int s_start_curve(vl_broker_t *self, const vl_broker_config_t *c)
{
    char why[512];
    self->curve = vl_curve_server_new(c->cert, c->allow, why, sizeof why);
    if (!self->curve) {
        vl_error("CURVE: %s", why);
        return -1;
    }
    vl_sock_set_curve(self->curve);
    vl_info("CURVE on: public key %s; clients allowed from %s", vl_curve_public_txt(self->curve),
            c->allow);
    return 0;
}

/* Starts recording to c->record, the configuration in the file's header.
   Returns 0, or -1 after logging why. */
static int s_start_recording(vl_broker_t *self, const vl_broker_config_t *c)
{
    char config[512];
    snprintf(config, sizeof config,
             "volley broker schema=%d port=%d bind=%s inspect=%s max_msg=%lld queue_bytes=%zu "
             "max_lag=%llu flush=%s",
             VL_SCHEMA_VERSION, c->port, c->bind_host, c->inspect_full ? "full" : "header",
             (long long)c->max_msg, c->queue_bytes, (unsigned long long)c->max_lag,
             vl_flush_name((vl_flush_t)c->record_flush));
    self->recorder = vl_recorder_new(c->record, config, (vl_flush_t)c->record_flush);
    return self->recorder ? 0 : -1;
}

int vl_broker_stop_recording(vl_broker_t *self)
{
    return vl_recorder_destroy(&self->recorder);
}

vl_broker_t *vl_broker_new(const vl_broker_config_t *c)
{
    vl_broker_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->limits = vl_limits_default();
    self->queue_bytes = c->queue_bytes;
    self->max_lag = c->max_lag;
    self->log_every_ns = (int64_t)c->log_every_s * 1000000000LL;
    self->start_ns = self->window_ns = self->logged_ns = vl_now_ns();
    if (c->cert && s_start_curve(self, c) != 0)
        goto err;
    self->own_ctx = !self->curve;
    self->ctx = self->curve ? vl_curve_context() : zmq_ctx_new();
    self->inspect = vl_inspect_new(c->inspect_full, S_MAX_ARRAYS);
    self->roster = vl_roster_new(c->max_actors, S_ACTOR_TIMEOUT_NS);
    self->specs = vl_specs_new(S_MAX_SPECS);
    self->notify = vl_notify_new(c->max_actors);
    if (!self->ctx || !self->inspect || !self->roster || !self->specs || !self->notify)
        goto err;
    if (c->record && s_start_recording(self, c) != 0)
        goto err;
    self->pull = s_bind(self, c, ZMQ_PULL, VL_PORT_SEGMENTS);
    self->router = s_bind(self, c, ZMQ_ROUTER, VL_PORT_LEARNERS);
    self->xsub = s_bind(self, c, ZMQ_XSUB, VL_PORT_WEIGHTS_IN);
    self->xpub = s_bind(self, c, ZMQ_XPUB, VL_PORT_WEIGHTS_OUT);
    self->control = s_bind(self, c, ZMQ_ROUTER, VL_PORT_CONTROL);
    if (!self->pull || !self->router || !self->xsub || !self->xpub || !self->control)
        goto err;
    int one = 1;
    zmq_setsockopt(self->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(self->router, ZMQ_SNDHWM, &c->sndhwm, sizeof c->sndhwm);
    // Every subscription reaches us, repeats included: each is a late joiner to serve from the
    // cache.
    zmq_setsockopt(self->xpub, ZMQ_XPUB_VERBOSE, &one, sizeof one);
    // Take everything learners publish, so the cache is filled whoever subscribes.
    uint8_t all = 1;
    zmq_send(self->xsub, &all, 1, 0);
    vl_info("listening on ports %d (segments) %d (learners) %d (weights in) %d (weights out) "
            "%d (control)",
            c->port, c->port + 1, c->port + 2, c->port + 3, c->port + 4);
    return self;
err:
    vl_broker_destroy(&self);
    return NULL;
}

/* Returns the learner serving policy, or NULL. */
static s_learner_t *s_learner_find(vl_broker_t *self, const char *policy)
{
    for (int i = 0; i < self->n_learners; i++)
        if (strcmp(self->learners[i].policy, policy) == 0)
            return &self->learners[i];
    return NULL;
}

/* Takes the oldest queued segment off a learner's queue; caller closes and
   frees it. NULL when the queue is empty. */
static s_queued_t *s_queue_pop(s_learner_t *l)
{
    s_queued_t *q = l->head;
    if (!q)
        return NULL;
    l->head = q->next;
    if (!l->head)
        l->tail = NULL;
    l->queued--;
    l->queued_bytes -= zmq_msg_size(&q->msg) + S_QUEUED_OVERHEAD;
    return q;
}

static void s_queued_free(s_queued_t *q)
{
    zmq_msg_close(&q->msg);
    free(q);
}

/* Drops every segment queued for a learner, counted under reason. */
static void s_queue_clear(vl_broker_t *self, s_learner_t *l, int reason)
{
    s_queued_t *q;
    while ((q = s_queue_pop(l)) != NULL) {
        s_drop(self, S_SEGMENT, reason, l->policy);
        s_queued_free(q);
    }
}

/* Forgets a learner, dropping what was queued for it. */
static void s_learner_remove(vl_broker_t *self, s_learner_t *l, const char *why)
{
    s_queue_clear(self, l, S_DROP_GONE);
    vl_warn("learner for policy '%s' %s; its segments are dropped until it says hello", l->policy,
            why);
    *l = self->learners[--self->n_learners];
}

/* Adds a learner entry for policy with no connection yet (id_len 0): it
   holds segments until a learner claims the policy. NULL when full. */
static s_learner_t *s_learner_add(vl_broker_t *self, const char *policy)
{
    if (self->n_learners == S_MAX_LEARNERS) {
        if (!self->warned_full++)
            vl_warn("ignoring learner for '%s': %d learners already; logged once", policy,
                    S_MAX_LEARNERS);
        return NULL;
    }
    s_learner_t *l = &self->learners[self->n_learners++];
    memset(l, 0, sizeof *l);
    snprintf(l->policy, sizeof l->policy, "%s", policy);
    l->seen_ns = vl_now_ns();
    return l;
}

/* Registers (or refreshes) the learner serving policy on connection id.
   Returns it, or NULL when the table is full. */
static s_learner_t *s_register(vl_broker_t *self, const uint8_t *id, size_t id_len,
                               const char *policy)
{
    s_learner_t *l = s_learner_find(self, policy);
    if (!l && !(l = s_learner_add(self, policy)))
        return NULL;
    if (l->id_len == 0) {
        vl_info("learner for policy '%s' joined%s", policy,
                l->queued ? "; segments held since the broker started go to it" : "");
    } else if (l->id_len != id_len || memcmp(l->id, id, id_len) != 0) {
        vl_info("learner for policy '%s' replaced by a new connection", policy);
        s_queue_clear(self, l, S_DROP_GONE); // its counters start again: so does ours
        l->credited = 0;
        l->granted = l->sent = 0;
        l->newest_version = 0; // a learner started afresh publishes low versions again
        l->have_stats = 0;
        l->n_refusals = 0; // its refusal counts start again too
    }
    memcpy(l->id, id, id_len);
    l->id_len = id_len;
    l->seen_ns = vl_now_ns();
    return l;
}

/* Registers (or refreshes) the learner that sent a hello. */
static void s_on_hello(vl_broker_t *self, const uint8_t *id, size_t id_len, const uint8_t *data,
                       size_t size)
{
    char policy[VL_POLICY_ID_MAX];
    vl_reason_t r = vl_hello_decode(data, size, policy);
    if (r != VL_OK || id_len > S_IDENTITY_MAX) {
        s_drop(self, S_HELLO, r != VL_OK ? r : VL_ETOOBIG, NULL);
        return;
    }
    s_register(self, id, id_len, policy);
}

/* Returns how many more segments a learner can take now. */
static uint64_t s_credit(const s_learner_t *l)
{
    return l->granted > l->sent ? l->granted - l->sent : 0;
}

/* Sends a segment to its learner. Returns 0; or counts it dropped and
   returns -1, or -2 when the learner is gone (removed: l now names another
   learner or none). */
static int s_send_to(vl_broker_t *self, s_learner_t *l, zmq_msg_t *msg)
{
    if (zmq_send(self->router, l->id, l->id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        int gone = zmq_errno() == EHOSTUNREACH;
        s_drop(self, S_SEGMENT, gone ? S_DROP_NO_LEARNER : S_DROP_QUEUE_FULL, l->policy);
        if (gone)
            s_learner_remove(self, l, "disconnected");
        return gone ? -2 : -1;
    }
    zmq_msg_send(msg, self->router, 0);
    l->sent++;
    l->delivered++;
    l->win_delivered++;
    self->routed++;
    return 0;
}

/* Sends queued segments while the learner has credit. */
static void s_drain(vl_broker_t *self, s_learner_t *l)
{
    while (l->head && s_credit(l) > 0 && !l->paused) {
        s_queued_t *q = s_queue_pop(l);
        int rc = s_send_to(self, l, &q->msg);
        s_queued_free(q);
        if (rc == -2)
            return;
    }
}

/* Takes a learner's credit report: the first on a connection sets the base
   of what we sent on it; every one sets what it may receive in all. */
static void s_on_credit(vl_broker_t *self, const uint8_t *id, size_t id_len, const vl_credit_t *cr)
{
    // A Credit names its policy: on a policy with no connection yet it counts as a hello, so a
    // learner reconnecting to a restarted broker is served at its first credit, not at its next
    // hello (up to a second later). Replacing another live connection is left to a Hello.
    s_learner_t *l = s_learner_find(self, cr->policy_id);
    if (!l || l->id_len == 0)
        l = s_register(self, id, id_len, cr->policy_id);
    else if (l->id_len != id_len || memcmp(l->id, id, id_len) != 0)
        l = NULL;
    if (!l) {
        s_drop(self, S_CREDIT, S_DROP_NO_LEARNER, cr->policy_id); // no hello on this connection
        return;
    }
    if (!l->credited) {
        l->sent = cr->total_received; // segments in flight to a previous broker are lost
        l->granted = cr->total_granted;
        l->credited = 1;
    } else if (cr->total_granted > l->granted) {
        l->granted = cr->total_granted; // a repeated or late report changes nothing
    }
    s_drain(self, l);
}

/* Handles a learner's Hello or Credit: a Credit is told by its counters. */
static void s_on_control(vl_broker_t *self, const uint8_t *id, size_t id_len, const uint8_t *data,
                         size_t size)
{
    vl_credit_t cr;
    vl_reason_t r = vl_credit_decode(data, size, &cr);
    if (r == VL_OK && id_len <= S_IDENTITY_MAX)
        s_on_credit(self, id, id_len, &cr);
    else if (r == VL_OK || r == VL_ESHAPE || r == VL_ETOOBIG)
        s_drop(self, S_CREDIT, r == VL_OK ? VL_ETOOBIG : r, NULL);
    else
        s_on_hello(self, id, id_len, data, size);
}

/* Reads one [identity][hello] from the router. Returns 0, or -1 when empty. */
static int s_recv_router(vl_broker_t *self)
{
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    int rc = -1;
    if (zmq_msg_recv(&id, self->router, ZMQ_DONTWAIT) >= 0) {
        rc = 0;
        if (zmq_msg_more(&id) && zmq_msg_recv(&body, self->router, 0) >= 0)
            s_on_control(self, zmq_msg_data(&id), zmq_msg_size(&id), zmq_msg_data(&body),
                         zmq_msg_size(&body));
        while (zmq_msg_more(&body) && zmq_msg_recv(&body, self->router, 0) >= 0)
            ; // discard extra frames
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    return rc;
}

/* Queues a segment for a learner without credit, dropping the oldest
   queued ones while the queue would exceed its byte bound. */
static void s_enqueue(vl_broker_t *self, s_learner_t *l, zmq_msg_t *msg)
{
    size_t charge = zmq_msg_size(msg) + S_QUEUED_OVERHEAD;
    s_queued_t *q = charge <= self->queue_bytes ? malloc(sizeof *q) : NULL;
    if (!q) {
        s_drop(self, S_SEGMENT, S_DROP_QUEUE_BYTES, l->policy); // alone over the bound
        return;
    }
    while (l->head && l->queued_bytes + charge > self->queue_bytes) {
        s_drop(self, S_SEGMENT, S_DROP_QUEUE_BYTES, l->policy);
        s_queued_free(s_queue_pop(l));
    }
    size_t size = zmq_msg_size(msg);
    if (size < S_COPY_BELOW && zmq_msg_init_size(&q->msg, size) == 0) {
        memcpy(zmq_msg_data(&q->msg), zmq_msg_data(msg), size);
    } else {
        zmq_msg_init(&q->msg);
        zmq_msg_move(&q->msg, msg);
    }
    q->next = NULL;
    if (l->tail)
        l->tail->next = q;
    else
        l->head = q;
    l->tail = q;
    l->queued++;
    l->queued_bytes += charge;
}

/* Returns how many learner entries wait for a learner to claim them. */
static int s_unclaimed(const vl_broker_t *self)
{
    int n = 0;
    for (int i = 0; i < self->n_learners; i++)
        n += self->learners[i].id_len == 0;
    return n;
}

/* Sends a segment to the learner of its policy if it has credit, queues it
   if not, or counts why it is dropped. */
static void s_route(vl_broker_t *self, zmq_msg_t *msg, int64_t wall_ns, int64_t now_ns)
{
    vl_segment_t seg;
    vl_reason_t r = vl_inspect_segment(self->inspect, zmq_msg_data(msg), zmq_msg_size(msg), &seg);
    if (self->recorder) // every message, refused ones too: a replay meets them again
        vl_recorder_add(self->recorder, msg, wall_ns, r == VL_OK ? seg.actor_id : UINT32_MAX);
    if (r != VL_OK) {
        s_drop(self, S_SEGMENT, r, NULL);
        return;
    }
    vl_roster_segment(self->roster, seg.actor_id, seg.policy_id, seg.seq, seg.send_ns, wall_ns,
                      now_ns);
    const vl_spec_t *spec = vl_specs_find(self->specs, seg.policy_id);
    char why[VL_SPEC_REASON_MAX];
    if (spec && vl_spec_check_segment(spec, &seg, why, sizeof why)) {
        s_drop_text(self, S_SEGMENT, why, 1);
        vl_notify_refused(self->notify, self->control, seg.actor_id, VL_REFUSED_SEGMENTS, why,
                          now_ns);
        return;
    }
    s_learner_t *l = s_learner_find(self, seg.policy_id);
    if (!l && now_ns - self->start_ns < S_STARTUP_GRACE_NS && s_unclaimed(self) < S_MAX_UNCLAIMED)
        l = s_learner_add(self, seg.policy_id); // hold it: its learner may not have said hello yet
    if (!l) {
        s_drop(self, S_SEGMENT, S_DROP_NO_LEARNER, seg.policy_id);
        return;
    }
    if (self->max_lag && l->newest_version > self->max_lag &&
        seg.policy_version < l->newest_version - self->max_lag) {
        s_drop(self, S_SEGMENT, S_DROP_STALE, seg.policy_id);
        return;
    }
    if (!l->head && s_credit(l) > 0 && !l->paused)
        s_send_to(self, l, msg);
    else
        s_enqueue(self, l, msg);
}

/* Takes one segment from the actors. Returns 0, or -1 when none is waiting. */
static int s_recv_segment(vl_broker_t *self)
{
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    int rc = zmq_msg_recv(&msg, self->pull, ZMQ_DONTWAIT) >= 0 ? 0 : -1;
    if (rc == 0) {
        self->received++;
        self->win_received++;
        if (zmq_msg_more(&msg)) {
            s_drop(self, S_SEGMENT, VL_EPROTO, NULL);
            while (zmq_msg_more(&msg) && zmq_msg_recv(&msg, self->pull, 0) >= 0)
                ;
        } else {
            s_route(self, &msg, vl_wall_ns(), vl_now_ns()); // the clocks once, at receipt
        }
    }
    zmq_msg_close(&msg);
    return rc;
}

/* Returns the cache entry for a topic, creating it if there is room. */
static s_cached_t *s_cache_slot(vl_broker_t *self, const void *topic, size_t len)
{
    for (int i = 0; i < self->n_cached; i++) {
        zmq_msg_t *t = &self->cache[i].topic;
        if (zmq_msg_size(t) == len && memcmp(zmq_msg_data(t), topic, len) == 0)
            return &self->cache[i];
    }
    if (self->n_cached == S_MAX_TOPICS)
        return NULL;
    s_cached_t *c = &self->cache[self->n_cached++];
    zmq_msg_init_size(&c->topic, len);
    memcpy(zmq_msg_data(&c->topic), topic, len);
    zmq_msg_init(&c->body);
    return c;
}

/* Counts what a learner's stats say it refused since they last did: those
   segments were routed, and are now dropped under the learner's reason;
   the actor that sent them is told. */
static void s_note_refusals(vl_broker_t *self, s_learner_t *l, const vl_stats_t *st)
{
    for (uint32_t i = 0; i < st->n_refusals; i++) {
        const vl_refusal_t *r = &st->refusals[i];
        s_seen_refusal_t *seen = NULL;
        for (int k = 0; k < l->n_refusals && !seen; k++)
            if (l->refusals[k].actor_id == r->actor_id &&
                strcmp(l->refusals[k].reason, r->reason) == 0)
                seen = &l->refusals[k];
        if (!seen && l->n_refusals < S_LEARNER_REASONS) {
            seen = &l->refusals[l->n_refusals++];
            memset(seen, 0, sizeof *seen);
            seen->actor_id = r->actor_id;
            snprintf(seen->reason, sizeof seen->reason, "%s", r->reason);
        }
        if (!seen || r->count <= seen->counted)
            continue;
        uint64_t delta = r->count - seen->counted;
        delta = delta < self->routed ? delta : self->routed; // never more than it was sent
        seen->counted = r->count;
        char text[VL_SPEC_REASON_MAX];
        snprintf(text, sizeof text, "refused by its learner: %s", r->reason);
        if (delta)
            s_drop_text(self, S_SEGMENT, text, delta);
        self->routed -= delta;
        vl_notify_refused(self->notify, self->control, r->actor_id, VL_REFUSED_SEGMENTS, r->reason,
                          vl_now_ns());
    }
}

/* Keeps what a learner's publication says of it: its stats, or the
   newest version of its weights. */
static void s_note_publication(vl_broker_t *self, const char *topic, size_t len,
                               const vl_publication_t *pub)
{
    char policy[VL_POLICY_ID_MAX];
    if (pub->is_stats) {
        s_learner_t *l = s_learner_find(self, pub->stats.policy_id);
        if (l) {
            s_note_refusals(self, l, &pub->stats);
            l->stats = pub->stats;
            l->have_stats = 1;
        }
        return;
    }
    memcpy(policy, topic, len); // checked by vl_inspect_publication: shorter than the array
    policy[len] = 0;
    s_learner_t *l = s_learner_find(self, policy);
    if (l && pub->version > l->newest_version)
        l->newest_version = pub->version;
}

/* Forwards a checked [topic][body] publication and keeps it as the topic's
   last value, or counts why not. */
static void s_forward_publication(vl_broker_t *self, zmq_msg_t *topic, zmq_msg_t *body)
{
    vl_publication_t pub;
    vl_reason_t r = vl_inspect_publication(self->inspect, zmq_msg_data(topic), zmq_msg_size(topic),
                                           zmq_msg_data(body), zmq_msg_size(body), &pub);
    if (r != VL_OK) {
        s_drop(self, S_PUBLICATION, r, NULL);
        return;
    }
    s_note_publication(self, zmq_msg_data(topic), zmq_msg_size(topic), &pub);
    s_cached_t *c = s_cache_slot(self, zmq_msg_data(topic), zmq_msg_size(topic));
    if (c)
        zmq_msg_copy(&c->body, body);
    zmq_msg_send(topic, self->xpub, ZMQ_SNDMORE);
    zmq_msg_send(body, self->xpub, 0);
}

/* Takes one publication from the learners. Returns 0, or -1 when none is
   waiting. */
static int s_recv_publication(vl_broker_t *self)
{
    zmq_msg_t topic, body;
    zmq_msg_init(&topic);
    zmq_msg_init(&body);
    int rc = zmq_msg_recv(&topic, self->xsub, ZMQ_DONTWAIT) >= 0 ? 0 : -1;
    if (rc == 0 && zmq_msg_more(&topic) && zmq_msg_recv(&body, self->xsub, 0) >= 0 &&
        !zmq_msg_more(&body))
        s_forward_publication(self, &topic, &body);
    else if (rc == 0)
        s_drop(self, S_PUBLICATION, VL_EPROTO, NULL); // not [topic][body]
    while (rc == 0 && zmq_msg_more(&body) && zmq_msg_recv(&body, self->xsub, 0) >= 0)
        ; // the rest of a malformed one
    zmq_msg_close(&topic);
    zmq_msg_close(&body);
    return rc;
}

/* Sends the cached last value of every topic the subscription prefix covers. */
static void s_serve_late_joiner(vl_broker_t *self, const uint8_t *prefix, size_t len)
{
    for (int i = 0; i < self->n_cached; i++) {
        s_cached_t *c = &self->cache[i];
        if (zmq_msg_size(&c->topic) < len || memcmp(zmq_msg_data(&c->topic), prefix, len) != 0 ||
            zmq_msg_size(&c->body) == 0)
            continue;
        zmq_msg_t t, b;
        zmq_msg_init(&t);
        zmq_msg_init(&b);
        zmq_msg_copy(&t, &c->topic);
        zmq_msg_copy(&b, &c->body);
        zmq_msg_send(&t, self->xpub, ZMQ_SNDMORE);
        zmq_msg_send(&b, self->xpub, 0);
    }
}

/* Reads one subscription event from the XPUB. Returns 0, or -1 when none. */
static int s_recv_subscription(vl_broker_t *self)
{
    uint8_t buf[VL_POLICY_ID_MAX + 1];
    int n = zmq_recv(self->xpub, buf, sizeof buf, ZMQ_DONTWAIT);
    if (n < 0)
        return -1;
    if (n >= 1 && n <= (int)sizeof buf && buf[0] == 1)
        s_serve_late_joiner(self, buf + 1, (size_t)n - 1);
    return 0;
}

/* Replies [verb][text] (text may be NULL) to a control requester. */
static void s_reply(vl_broker_t *self, zmq_msg_t *id, const char *verb, const void *data,
                    size_t size)
{
    zmq_msg_t to;
    zmq_msg_init(&to);
    zmq_msg_copy(&to, id);
    if (zmq_msg_send(&to, self->control, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&to);
        return;
    }
    zmq_send(self->control, verb, strlen(verb), data ? ZMQ_SNDMORE : 0);
    if (data)
        zmq_send(self->control, data, size, 0);
}

/* Replies ERROR with a reason, counting the request dropped. */
static void s_refuse(vl_broker_t *self, zmq_msg_t *id, int reason)
{
    s_drop(self, S_COMMAND, reason, NULL);
    const char *text = s_drop_str(reason);
    s_reply(self, id, VL_VERB_ERROR, text, strlen(text));
}

/* Returns the number of segments queued for all learners. */
static uint64_t s_queued_total(const vl_broker_t *self)
{
    uint64_t queued = 0;
    for (int i = 0; i < self->n_learners; i++)
        queued += self->learners[i].queued;
    return queued;
}

/* Returns the number of segments dropped, all reasons. */
static uint64_t s_dropped_total(const vl_broker_t *self)
{
    uint64_t dropped = 0;
    for (int r = 0; r < S_DROP_REASONS; r++)
        dropped += self->dropped[S_SEGMENT][r];
    for (int i = 0; i < self->n_text_drops; i++)
        dropped += self->text_drops[i].kind == S_SEGMENT ? self->text_drops[i].count : 0;
    return dropped;
}

/* Fills one learner's row (stats into *stats, which the row then points to). */
static void s_learner_row(const s_learner_t *l, int64_t now, Volley__LearnerRow *r,
                          Volley__Stats *stats)
{
    volley__learner_row__init(r);
    r->policy_id = (char *)l->policy;
    r->credit = s_credit(l);
    r->queued = l->queued;
    r->queued_bytes = l->queued_bytes;
    r->delivered = l->delivered;
    r->delivered_per_s = l->delivered_per_s;
    r->paused = l->paused;
    r->silent_s = (float)((now - l->seen_ns) / 1e9);
    if (l->have_stats) {
        vl_stats_to_msg(&l->stats, stats);
        r->stats = stats;
    }
}

/* Status rows, allocated together and freed together. */
typedef struct {
    Volley__ActorRow *actors;
    Volley__ActorRow **actor_ptrs;
    Volley__LearnerRow learners[S_MAX_LEARNERS];
    Volley__LearnerRow *learner_ptrs[S_MAX_LEARNERS];
    Volley__Stats stats[S_MAX_LEARNERS];
    Volley__DropRow drops[S_KINDS * S_DROP_REASONS + S_TEXT_DROPS];
    Volley__DropRow *drop_ptrs[S_KINDS * S_DROP_REASONS + S_TEXT_DROPS];
    Volley__Spec specs[S_MAX_SPECS];
    Volley__Spec *spec_ptrs[S_MAX_SPECS];
    Volley__ObsField fields[S_MAX_SPECS][VL_OBS_FIELDS_MAX];
    Volley__ObsField *field_ptrs[S_MAX_SPECS][VL_OBS_FIELDS_MAX];
} s_status_rows_t;

/* Fills the drop rows of st from the counters (non-zero ones only). */
static void s_drop_rows(const vl_broker_t *self, Volley__Status *st, s_status_rows_t *rows)
{
    size_t n = 0;
    for (int k = 0; k < S_KINDS; k++)
        for (int r = 1; r < S_DROP_REASONS; r++)
            if (self->dropped[k][r]) {
                Volley__DropRow *d = &rows->drops[n];
                volley__drop_row__init(d);
                d->kind = (char *)s_kind_names[k];
                d->reason = (char *)s_drop_str(r);
                d->count = self->dropped[k][r];
                rows->drop_ptrs[n++] = d;
            }
    for (int i = 0; i < self->n_text_drops; i++) {
        const s_text_drop_t *t = &self->text_drops[i];
        Volley__DropRow *d = &rows->drops[n];
        volley__drop_row__init(d);
        d->kind = (char *)s_kind_names[t->kind];
        d->reason = (char *)t->text;
        d->count = t->count;
        rows->drop_ptrs[n++] = d;
    }
    st->n_drops = n;
    st->drops = rows->drop_ptrs;
}

/* Fills the spec rows of st: each policy's declared spec. */
static void s_spec_rows(const vl_broker_t *self, Volley__Status *st, s_status_rows_t *rows)
{
    uint32_t n = vl_specs_count(self->specs);
    for (uint32_t i = 0; i < n && i < S_MAX_SPECS; i++) {
        vl_spec_to_msg(vl_specs_at(self->specs, i), &rows->specs[i], rows->fields[i],
                       rows->field_ptrs[i]);
        rows->spec_ptrs[i] = &rows->specs[i];
    }
    st->n_specs = n < S_MAX_SPECS ? n : S_MAX_SPECS;
    st->specs = rows->spec_ptrs;
}

/* Builds the Status of the broker now into st, with its rows in *rows.
   Returns 0, or -1 on no memory (nothing to free then). */
static int s_status_build(vl_broker_t *self, Volley__Status *st, s_status_rows_t *rows)
{
    int64_t now = vl_now_ns();
    uint32_t n = vl_roster_count(self->roster);
    rows->actors = calloc(n ? n : 1, sizeof *rows->actors);
    rows->actor_ptrs = calloc(n ? n : 1, sizeof *rows->actor_ptrs);
    if (!rows->actors || !rows->actor_ptrs) {
        free(rows->actors);
        free(rows->actor_ptrs);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        volley__actor_row__init(&rows->actors[i]);
        rows->actor_ptrs[i] = &rows->actors[i];
    }
    vl_roster_rows(self->roster, rows->actors, now);
    volley__status__init(st);
    st->uptime_s = (double)(now - self->start_ns) / 1e9;
    st->received = self->received;
    st->routed = self->routed;
    st->dropped = s_dropped_total(self);
    st->queued = s_queued_total(self);
    st->received_per_s = self->received_per_s;
    st->queue_bytes_bound = self->queue_bytes;
    st->rss_bytes = vl_proc_rss_bytes();
    st->n_actors = n;
    st->actors = rows->actor_ptrs;
    for (int i = 0; i < self->n_learners; i++) {
        s_learner_row(&self->learners[i], now, &rows->learners[i], &rows->stats[i]);
        rows->learner_ptrs[i] = &rows->learners[i];
    }
    st->n_learners = (size_t)self->n_learners;
    st->learners = rows->learner_ptrs;
    s_drop_rows(self, st, rows);
    s_spec_rows(self, st, rows);
    return 0;
}

/* Answers a STATUS request. */
static void s_on_status(vl_broker_t *self, zmq_msg_t *id)
{
    static s_status_rows_t rows; // large; one broker per process serves one request at a time
    Volley__Status st;
    uint8_t *buf = NULL;
    size_t size = 0;
    if (s_status_build(self, &st, &rows) != 0)
        return;
    if (vl_status_encode(&st, &buf, &size) == 0)
        s_reply(self, id, VL_VERB_STATUS, buf, size);
    free(buf);
    free(rows.actors);
    free(rows.actor_ptrs);
}

/* Copies a request's policy argument into policy (NUL-terminated). Returns
   0, or -1 after refusing the request (no argument, or too long). */
static int s_arg_policy(vl_broker_t *self, zmq_msg_t *id, const zmq_msg_t *arg,
                        char policy[VL_POLICY_ID_MAX])
{
    size_t len = arg ? zmq_msg_size(arg) : 0;
    if (len == 0 || len >= VL_POLICY_ID_MAX) {
        s_refuse(self, id, VL_EPOLICY);
        return -1;
    }
    memcpy(policy, zmq_msg_data((zmq_msg_t *)arg), len);
    policy[len] = 0;
    return 0;
}

/* Pauses or resumes the stream of the learner named in arg. */
static void s_on_pause(vl_broker_t *self, zmq_msg_t *id, int pause, const zmq_msg_t *arg)
{
    char policy[VL_POLICY_ID_MAX];
    if (s_arg_policy(self, id, arg, policy) != 0)
        return;
    s_learner_t *l = s_learner_find(self, policy);
    if (!l) {
        s_refuse(self, id, vl_wire_name_ok(policy, sizeof policy) ? S_DROP_NO_LEARNER : VL_EPOLICY);
        return;
    }
    l->paused = pause;
    vl_info("learner for policy '%s' %s by a control request", policy,
            pause ? "paused" : "resumed");
    if (!pause)
        s_drain(self, l);
    s_reply(self, id, VL_VERB_OK, NULL, 0);
}

/* Takes an actor's beat (no reply: beats are one way), and the spec it
   declares: a conflicting one is refused back to the actor, which stops. */
static void s_on_beat(vl_broker_t *self, zmq_msg_t *id, const zmq_msg_t *arg)
{
    static vl_beat_t beat; // large (a spec); one broker per process, one request at a time
    vl_reason_t r =
        arg ? vl_beat_decode(zmq_msg_data((zmq_msg_t *)arg), zmq_msg_size(arg), &beat) : VL_EPROTO;
    if (r != VL_OK) {
        s_drop(self, S_COMMAND, r, NULL);
        return;
    }
    vl_roster_beat(self->roster, &beat, vl_now_ns());
    vl_notify_route(self->notify, beat.actor_id, zmq_msg_data(id), zmq_msg_size(id));
    char why[VL_SPEC_REASON_MAX];
    if (beat.has_spec && vl_specs_declare(self->specs, &beat.spec, "this actor", why, sizeof why)) {
        s_drop_text(self, S_SPEC, why, 1);
        vl_notify_send(self->control, zmq_msg_data(id), zmq_msg_size(id), VL_REFUSED_SPEC, why);
    }
}

/* Takes a learner's SPEC: OK when it agrees with its policy's (or becomes
   it), ERROR with the field that differs. */
static void s_on_spec(vl_broker_t *self, zmq_msg_t *id, const zmq_msg_t *arg)
{
    vl_spec_t spec;
    vl_reason_t r = arg ? vl_spec_decode(zmq_msg_data((zmq_msg_t *)arg), zmq_msg_size(arg),
                                         &self->limits, &spec)
                        : VL_EPROTO;
    if (r != VL_OK) {
        s_refuse(self, id, r);
        return;
    }
    char why[VL_SPEC_REASON_MAX];
    if (vl_specs_declare(self->specs, &spec, "this learner", why, sizeof why)) {
        s_drop_text(self, S_SPEC, why, 1);
        s_reply(self, id, VL_VERB_ERROR, why, strlen(why));
        return;
    }
    s_reply(self, id, VL_VERB_OK, NULL, 0);
}

/* Answers GETSPEC [policy] with its spec, or ERROR while none is declared. */
static void s_on_getspec(vl_broker_t *self, zmq_msg_t *id, const zmq_msg_t *arg)
{
    char policy[VL_POLICY_ID_MAX];
    if (s_arg_policy(self, id, arg, policy) != 0)
        return;
    const vl_spec_t *spec = vl_specs_find(self->specs, policy);
    uint8_t *buf;
    size_t size;
    if (!spec) {
        char why[VL_SPEC_REASON_MAX];
        snprintf(why, sizeof why, "no actor has declared policy '%.63s' yet",
                 vl_wire_name_ok(policy, sizeof policy) ? policy : "?");
        s_reply(self, id, VL_VERB_ERROR, why, strlen(why));
    } else if (vl_spec_encode(spec, &buf, &size) == 0) {
        s_reply(self, id, VL_VERB_SPEC, buf, size);
        free(buf);
    }
}

/* Serves one control request [verb][argument?]. */
static void s_on_request(vl_broker_t *self, zmq_msg_t *id, const char *verb, const zmq_msg_t *arg)
{
    if (strcmp(verb, VL_VERB_BEAT) == 0) {
        s_on_beat(self, id, arg);
    } else if (strcmp(verb, VL_VERB_SPEC) == 0) {
        s_on_spec(self, id, arg);
    } else if (strcmp(verb, VL_VERB_GETSPEC) == 0) {
        s_on_getspec(self, id, arg);
    } else if (strcmp(verb, VL_VERB_STATUS) == 0) {
        s_on_status(self, id);
    } else if (strcmp(verb, VL_VERB_PAUSE) == 0 || strcmp(verb, VL_VERB_RESUME) == 0) {
        s_on_pause(self, id, verb[0] == 'P', arg);
    } else if (strcmp(verb, VL_VERB_SHUTDOWN) == 0) {
        vl_info("shutting down: asked on the control port");
        self->shutdown = 1;
        s_reply(self, id, VL_VERB_OK, NULL, 0);
    } else {
        s_refuse(self, id, S_DROP_VERB);
    }
}

/* Reads one [identity][verb][argument?] from the control port. Returns 0,
   or -1 when none is waiting. */
static int s_recv_control(vl_broker_t *self)
{
    zmq_msg_t id, verb, arg;
    zmq_msg_init(&id);
    zmq_msg_init(&verb);
    zmq_msg_init(&arg);
    int rc = zmq_msg_recv(&id, self->control, ZMQ_DONTWAIT) >= 0 ? 0 : -1;
    int frames = 1;
    if (rc == 0 && zmq_msg_more(&id) && zmq_msg_recv(&verb, self->control, 0) >= 0) {
        frames++;
        if (zmq_msg_more(&verb) && zmq_msg_recv(&arg, self->control, 0) >= 0)
            frames++;
    }
    zmq_msg_t *last = frames == 3 ? &arg : &verb;
    int extra = rc == 0 && frames > 1 && zmq_msg_more(last);
    while (rc == 0 && frames > 1 && zmq_msg_more(last) && zmq_msg_recv(last, self->control, 0) >= 0)
        ; // a request has at most two frames
    char name[S_VERB_MAX + 1];
    size_t len = zmq_msg_size(&verb);
    if (rc == 0 && frames > 1 && !extra && len <= S_VERB_MAX) {
        memcpy(name, zmq_msg_data(&verb), len);
        name[len] = 0;
        s_on_request(self, &id, name, frames == 3 ? &arg : NULL);
    } else if (rc == 0) {
        s_refuse(self, &id, VL_EPROTO);
    }
    zmq_msg_close(&id);
    zmq_msg_close(&verb);
    zmq_msg_close(&arg);
    return rc;
}

/* Logs the broker's counters as key=value lines: one for the broker, one
   per learner. */
static void s_log_status(vl_broker_t *self)
{
    vl_info("status received=%llu routed=%llu dropped=%llu queued=%llu received_per_s=%.1f "
            "actors=%u alive=%u learners=%d rss_bytes=%llu",
            (unsigned long long)self->received, (unsigned long long)self->routed,
            (unsigned long long)s_dropped_total(self), (unsigned long long)s_queued_total(self),
            (double)self->received_per_s, vl_roster_count(self->roster),
            vl_roster_alive(self->roster), self->n_learners, vl_proc_rss_bytes());
    for (int i = 0; i < self->n_learners; i++) {
        const s_learner_t *l = &self->learners[i];
        vl_info("learner policy=%s credit=%llu queued=%llu queued_bytes=%zu delivered=%llu "
                "delivered_per_s=%.1f paused=%d version=%llu",
                l->policy, (unsigned long long)s_credit(l), (unsigned long long)l->queued,
                l->queued_bytes, (unsigned long long)l->delivered, (double)l->delivered_per_s,
                l->paused, (unsigned long long)l->newest_version);
    }
}

/* Once a second: closes the rate windows; every log_every: logs status. */
static void s_tick(vl_broker_t *self)
{
    int64_t now = vl_now_ns();
    vl_roster_tick(self->roster, now);
    int64_t elapsed = now - self->window_ns;
    if (elapsed >= S_WINDOW_NS) {
        self->received_per_s = (float)(self->win_received * 1e9 / (double)elapsed);
        self->win_received = 0;
        for (int i = 0; i < self->n_learners; i++) {
            s_learner_t *l = &self->learners[i];
            l->delivered_per_s = (float)(l->win_delivered * 1e9 / (double)elapsed);
            l->win_delivered = 0;
        }
        self->window_ns = now;
    }
    if (self->log_every_ns > 0 && now - self->logged_ns >= self->log_every_ns) {
        s_log_status(self);
        self->logged_ns = now;
    }
}

/* Forgets learners that stopped saying hello. */
static void s_expire_learners(vl_broker_t *self)
{
    int64_t now = vl_now_ns();
    for (int i = self->n_learners - 1; i >= 0; i--)
        if (now - self->learners[i].seen_ns > S_LEARNER_TIMEOUT_NS)
            s_learner_remove(self, &self->learners[i],
                             self->learners[i].id_len ? "went silent" : "never said hello");
}

int vl_broker_run(vl_broker_t *self)
{
    // Control first, then hellos and weights: control is never queued behind bulk data.
    zmq_pollitem_t items[] = {{self->control, 0, ZMQ_POLLIN, 0},
                              {self->router, 0, ZMQ_POLLIN, 0},
                              {self->xsub, 0, ZMQ_POLLIN, 0},
                              {self->xpub, 0, ZMQ_POLLIN, 0},
                              {self->pull, 0, ZMQ_POLLIN, 0}};
    int (*handlers[])(vl_broker_t *) = {s_recv_control, s_recv_router, s_recv_publication,
                                        s_recv_subscription, s_recv_segment};
    while (!vl_interrupted && !self->shutdown) {
        if (zmq_poll(items, 5, 250) < 0) {
            if (zmq_errno() == EINTR)
                continue;
            vl_error("poll failed: %s", zmq_strerror(zmq_errno()));
            return -1;
        }
        for (int i = 0; i < 5; i++)
            for (int b = 0; (items[i].revents & ZMQ_POLLIN) && b < S_BATCH; b++)
                if (handlers[i](self) < 0)
                    break;
        s_expire_learners(self);
        s_tick(self);
    }
    return 0;
}

void vl_broker_log_counters(const vl_broker_t *self)
{
    uint64_t dropped = s_dropped_total(self), queued = s_queued_total(self);
    vl_info("segments received=%llu routed=%llu dropped=%llu queued=%llu (%s)",
            (unsigned long long)self->received, (unsigned long long)self->routed,
            (unsigned long long)dropped, (unsigned long long)queued,
            self->received == self->routed + dropped + queued ? "they add up"
                                                              : "they DO NOT add up");
    for (int k = 0; k < S_KINDS; k++)
        for (int r = 1; r < S_DROP_REASONS; r++)
            if (self->dropped[k][r])
                vl_info("  dropped %llu %s: %s", (unsigned long long)self->dropped[k][r],
                        s_kind_names[k], s_drop_str(r));
    for (int i = 0; i < self->n_text_drops; i++)
        vl_info("  dropped %llu %s: %s", (unsigned long long)self->text_drops[i].count,
                s_kind_names[self->text_drops[i].kind], self->text_drops[i].text);
}

void vl_broker_destroy(vl_broker_t **self_p)
{
    vl_broker_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    for (int i = 0; i < self->n_learners; i++) {
        s_queued_t *q;
        while ((q = s_queue_pop(&self->learners[i])) != NULL)
            s_queued_free(q);
    }
    for (int i = 0; i < self->n_cached; i++) {
        zmq_msg_close(&self->cache[i].topic);
        zmq_msg_close(&self->cache[i].body);
    }
    vl_recorder_destroy(&self->recorder);
    vl_inspect_destroy(&self->inspect);
    vl_roster_destroy(&self->roster);
    vl_specs_destroy(&self->specs);
    vl_notify_destroy(&self->notify);
    void *socks[] = {self->pull, self->router, self->xsub, self->xpub, self->control};
    for (int i = 0; i < 5; i++)
        if (socks[i])
            zmq_close(socks[i]);
    if (self->curve)
        vl_sock_set_curve(NULL);
    vl_curve_destroy(&self->curve); // the authenticator's sockets are in the shared context
    if (self->ctx && self->own_ctx)
        zmq_ctx_term(self->ctx); // czmq's own is ended by czmq at exit
    free(self);
    *self_p = NULL;
}
