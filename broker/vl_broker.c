/*  vl_broker: routing segments to learners and weights to actors. */
#include "vl_broker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_sock.h"
#include "../messages/vl_codec.h"
#include "vl_inspect.h"

#define S_MAX_LEARNERS       64
#define S_MAX_TOPICS         256          // last-value cache entries (policies + stats)
#define S_IDENTITY_MAX       256          // libzmq routing ids are at most 255 bytes
#define S_LEARNER_TIMEOUT_NS 5000000000LL // a learner says hello every second
#define S_BATCH              256          // messages taken per socket per poll wake-up
#define S_MAX_ARRAYS         (256u << 20) // largest decoded segment inspected
// Bytes a queued segment is charged beyond its size: our node (zmq_msg_t and a link) and
// libzmq's content header, each with its malloc header, so the byte bound bounds memory.
#define S_QUEUED_OVERHEAD 128

/* Why a message was dropped: the codec's reasons, then the broker's own. */
enum {
    S_DROP_NO_LEARNER = VL_EREASONS,
    S_DROP_QUEUE_FULL,  // libzmq's send queue (--hwm) full
    S_DROP_QUEUE_BYTES, // oldest pushed out of the learner's queue (--queue-bytes)
    S_DROP_GONE,        // queued for a learner that went silent or was replaced
    S_DROP_REASONS
};

/* What was dropped, for counting and logging. */
enum { S_SEGMENT, S_HELLO, S_CREDIT, S_PUBLICATION, S_KINDS };
static const char *s_kind_names[S_KINDS] = {"segments", "hellos", "credits", "publications"};

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
} s_learner_t;

typedef struct {
    zmq_msg_t topic;
    zmq_msg_t body;
} s_cached_t;

struct vl_broker_s {
    void *ctx;
    void *pull;   // segments from actors
    void *router; // learners: hellos in, segments out
    void *xsub;   // weights and stats from learners
    void *xpub;   // weights and stats to actors and monitors
    vl_limits_t limits;
    s_learner_t learners[S_MAX_LEARNERS];
    int n_learners;
    s_cached_t cache[S_MAX_TOPICS];
    int n_cached;
    vl_inspect_t *inspect;
    size_t queue_bytes; // bound of each learner's queue
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
                                .queue_bytes = 64 << 20};
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

/* Creates a socket of the type bound at base port + offset. NULL on error. */
static void *s_bind(vl_broker_t *self, const vl_broker_config_t *c, int type, int offset)
{
    return vl_sock_bind(self->ctx, type, c->bind_host, c->port + offset, 0, c->max_msg);
}

vl_broker_t *vl_broker_new(const vl_broker_config_t *c)
{
    vl_broker_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->limits = vl_limits_default();
    self->queue_bytes = c->queue_bytes;
    self->ctx = zmq_ctx_new();
    self->inspect = vl_inspect_new(c->inspect_full, S_MAX_ARRAYS);
    if (!self->ctx || !self->inspect)
        goto err;
    self->pull = s_bind(self, c, ZMQ_PULL, VL_PORT_SEGMENTS);
    self->router = s_bind(self, c, ZMQ_ROUTER, VL_PORT_LEARNERS);
    self->xsub = s_bind(self, c, ZMQ_XSUB, VL_PORT_WEIGHTS_IN);
    self->xpub = s_bind(self, c, ZMQ_XPUB, VL_PORT_WEIGHTS_OUT);
    if (!self->pull || !self->router || !self->xsub || !self->xpub)
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
    vl_info("listening on ports %d (segments) %d (learners) %d (weights in) %d (weights out)",
            c->port, c->port + 1, c->port + 2, c->port + 3);
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
    s_learner_t *l = s_learner_find(self, policy);
    if (!l) {
        if (self->n_learners == S_MAX_LEARNERS) {
            vl_warn("ignoring learner for '%s': %d learners already", policy, S_MAX_LEARNERS);
            return;
        }
        l = &self->learners[self->n_learners++];
        memset(l, 0, sizeof *l);
        snprintf(l->policy, sizeof l->policy, "%s", policy);
        vl_info("learner for policy '%s' joined", policy);
    } else if (l->id_len != id_len || memcmp(l->id, id, id_len) != 0) {
        vl_info("learner for policy '%s' replaced by a new connection", policy);
        s_queue_clear(self, l, S_DROP_GONE); // its counters start again: so does ours
        l->credited = 0;
        l->granted = l->sent = 0;
    }
    memcpy(l->id, id, id_len);
    l->id_len = id_len;
    l->seen_ns = vl_now_ns();
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
    self->routed++;
    return 0;
}

/* Sends queued segments while the learner has credit. */
static void s_drain(vl_broker_t *self, s_learner_t *l)
{
    while (l->head && s_credit(l) > 0) {
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
    s_learner_t *l = s_learner_find(self, cr->policy_id);
    if (!l || l->id_len != id_len || memcmp(l->id, id, id_len) != 0) {
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
    zmq_msg_init(&q->msg);
    zmq_msg_move(&q->msg, msg);
    q->next = NULL;
    if (l->tail)
        l->tail->next = q;
    else
        l->head = q;
    l->tail = q;
    l->queued++;
    l->queued_bytes += charge;
}

/* Sends a segment to the learner of its policy if it has credit, queues it
   if not, or counts why it is dropped. */
static void s_route(vl_broker_t *self, zmq_msg_t *msg)
{
    vl_segment_t seg;
    vl_reason_t r = vl_inspect_segment(self->inspect, zmq_msg_data(msg), zmq_msg_size(msg), &seg);
    if (r != VL_OK) {
        s_drop(self, S_SEGMENT, r, NULL);
        return;
    }
    s_learner_t *l = s_learner_find(self, seg.policy_id);
    if (!l) {
        s_drop(self, S_SEGMENT, S_DROP_NO_LEARNER, seg.policy_id);
        return;
    }
    if (!l->head && s_credit(l) > 0)
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
        if (zmq_msg_more(&msg)) {
            s_drop(self, S_SEGMENT, VL_EPROTO, NULL);
            while (zmq_msg_more(&msg) && zmq_msg_recv(&msg, self->pull, 0) >= 0)
                ;
        } else {
            s_route(self, &msg);
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

/* Forwards a checked [topic][body] publication and keeps it as the topic's
   last value, or counts why not. */
static void s_forward_publication(vl_broker_t *self, zmq_msg_t *topic, zmq_msg_t *body)
{
    vl_reason_t r = vl_inspect_publication(self->inspect, zmq_msg_data(topic), zmq_msg_size(topic),
                                           zmq_msg_data(body), zmq_msg_size(body));
    if (r != VL_OK) {
        s_drop(self, S_PUBLICATION, r, NULL);
        return;
    }
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

/* Forgets learners that stopped saying hello. */
static void s_expire_learners(vl_broker_t *self)
{
    int64_t now = vl_now_ns();
    for (int i = self->n_learners - 1; i >= 0; i--)
        if (now - self->learners[i].seen_ns > S_LEARNER_TIMEOUT_NS)
            s_learner_remove(self, &self->learners[i], "went silent");
}

int vl_broker_run(vl_broker_t *self)
{
    zmq_pollitem_t items[] = {{self->pull, 0, ZMQ_POLLIN, 0},
                              {self->router, 0, ZMQ_POLLIN, 0},
                              {self->xsub, 0, ZMQ_POLLIN, 0},
                              {self->xpub, 0, ZMQ_POLLIN, 0}};
    int (*handlers[])(vl_broker_t *) = {s_recv_segment, s_recv_router, s_recv_publication,
                                        s_recv_subscription};
    while (!vl_interrupted) {
        if (zmq_poll(items, 4, 1000) < 0) {
            if (zmq_errno() == EINTR)
                continue;
            vl_error("poll failed: %s", zmq_strerror(zmq_errno()));
            return -1;
        }
        // Hellos and weights first: control is never queued behind bulk data.
        for (int k = 1; k <= 4; k++) {
            int i = k % 4;
            for (int b = 0; (items[i].revents & ZMQ_POLLIN) && b < S_BATCH; b++)
                if (handlers[i](self) < 0)
                    break;
        }
        s_expire_learners(self);
    }
    return 0;
}

void vl_broker_log_counters(const vl_broker_t *self)
{
    uint64_t dropped = 0, queued = 0;
    for (int r = 0; r < S_DROP_REASONS; r++)
        dropped += self->dropped[S_SEGMENT][r];
    for (int i = 0; i < self->n_learners; i++)
        queued += self->learners[i].queued;
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
    vl_inspect_destroy(&self->inspect);
    void *socks[] = {self->pull, self->router, self->xsub, self->xpub};
    for (int i = 0; i < 4; i++)
        if (socks[i])
            zmq_close(socks[i]);
    if (self->ctx)
        zmq_ctx_term(self->ctx);
    free(self);
    *self_p = NULL;
}
