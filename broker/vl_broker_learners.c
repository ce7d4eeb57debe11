/*  vl_broker_learners: the learner table, each learner's queue waiting for
    credit, hellos and credits, and routing each segment to its learner. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_proc.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_status.h"
#include "vl_broker_engine.h"

/* Returns the learner serving policy, or NULL. */
vlb_learner_t *vl_learners_find(vl_broker_t *self, const char *policy)
{
    for (int i = 0; i < self->n_learners; i++)
        if (strcmp(self->learners[i].policy, policy) == 0)
            return &self->learners[i];
    return NULL;
}

/* Takes the oldest queued segment off a learner's queue; caller closes and
   frees it. NULL when the queue is empty. */
static vlb_queued_t *s_queue_pop(vlb_learner_t *l)
{
    vlb_queued_t *q = l->head;
    if (!q)
        return NULL;
    l->head = q->next;
    if (!l->head)
        l->tail = NULL;
    l->queued--;
    l->queued_bytes -= zmq_msg_size(&q->msg) + VLB_QUEUED_OVERHEAD;
    return q;
}

static void s_queued_free(vlb_queued_t *q)
{
    zmq_msg_close(&q->msg);
    free(q);
}

/* Drops every segment queued for a learner, counted under reason. */
static void s_queue_clear(vl_broker_t *self, vlb_learner_t *l, int reason)
{
    vlb_queued_t *q;
    while ((q = s_queue_pop(l)) != NULL) {
        vl_books_drop(self, VLB_SEGMENT, reason, l->policy);
        s_queued_free(q);
    }
}

/* Forgets a learner, dropping what was queued for it. */
void vl_learners_remove(vl_broker_t *self, vlb_learner_t *l, const char *why)
{
    s_queue_clear(self, l, VLB_DROP_GONE);
    vl_books_learner_gone(self, l);
    vl_warn("learner for policy '%s' %s; its segments are dropped until it says hello", l->policy,
            why);
    *l = self->learners[--self->n_learners];
}

/* Adds a learner entry for policy with no connection yet (id_len 0): it
   holds segments until a learner claims the policy. NULL when full. */
static vlb_learner_t *s_learner_add(vl_broker_t *self, const char *policy)
{
    if (self->n_learners == VLB_MAX_LEARNERS) {
        if (!self->warned_full++)
            vl_warn("ignoring learner for '%s': %d learners already; logged once", policy,
                    VLB_MAX_LEARNERS);
        return NULL;
    }
    vlb_learner_t *l = &self->learners[self->n_learners++];
    memset(l, 0, sizeof *l);
    snprintf(l->policy, sizeof l->policy, "%s", policy);
    l->seen_ns = vl_now_ns();
    return l;
}

/* Starts a learner entry afresh for a new connection: what it counted
   starts again, and so do its versions, in a new epoch. */
static void s_new_connection(vl_broker_t *self, vlb_learner_t *l, const vl_peer_t *peer)
{
    s_queue_clear(self, l, VLB_DROP_GONE); // its counters start again: so does ours
    l->credited = 0;
    l->granted = l->sent = 0;
    l->newest_version = 0;          // a learner started afresh publishes low versions again
    vl_books_learner_gone(self, l); // its stats' counts start again too
    l->have_stats = 0;
    l->n_refusals = 0; // its refusal counts start again too
    l->epoch = ++self->epochs;
    snprintf(l->holder, sizeof l->holder, "%s", peer->who);
}

/* Registers (or refreshes) the learner serving policy on connection id,
   sent by peer. A new connection of the peer holding the policy (a
   restarted learner) replaces the old one; another peer's only once the
   holder went silent. Returns it, or NULL after counting why not. */
static vlb_learner_t *s_register(vl_broker_t *self, const uint8_t *id, size_t id_len,
                                 const char *policy, const vl_peer_t *peer, int kind)
{
    vlb_learner_t *l = vl_learners_find(self, policy);
    if (!l && !(l = s_learner_add(self, policy)))
        return NULL;
    if (l->id_len == 0) {
        vl_info("learner for policy '%s' joined from %s (epoch %llu)%s", policy, peer->who,
                (unsigned long long)(self->epochs + 1),
                l->queued ? "; segments held since the broker started go to it" : "");
        l->epoch = ++self->epochs; // what it holds since the broker started stays for it
        snprintf(l->holder, sizeof l->holder, "%s", peer->who);
    } else if (l->id_len != id_len || memcmp(l->id, id, id_len) != 0) {
        if (strcmp(l->holder, peer->who) != 0 &&
            vl_now_ns() - l->seen_ns <= VLB_LEARNER_TIMEOUT_NS) {
            vl_books_refuse_peer(self, kind, VLB_DROP_HELD, peer, policy);
            return NULL;
        }
        vl_info("learner for policy '%s' replaced by a new connection from %s (epoch %llu)", policy,
                peer->who, (unsigned long long)(self->epochs + 1));
        s_new_connection(self, l, peer);
    }
    memcpy(l->id, id, id_len);
    l->id_len = id_len;
    l->seen_ns = vl_now_ns();
    return l;
}

/* Registers (or refreshes) the learner that sent a hello. */
static void s_on_hello(vl_broker_t *self, const uint8_t *id, size_t id_len, const uint8_t *data,
                       size_t size, const vl_peer_t *peer)
{
    char policy[VL_POLICY_ID_MAX];
    vl_reason_t r = vl_hello_decode(data, size, policy);
    if (r != VL_OK || id_len > VLB_IDENTITY_MAX) {
        vl_books_drop(self, VLB_HELLO, r != VL_OK ? r : VL_ETOOBIG, NULL);
        return;
    }
    if (!vl_peer_may(peer, VL_ROLE_LEARNER, policy)) {
        vl_books_refuse_peer(self, VLB_HELLO, VLB_DROP_ROLE, peer, policy);
        return;
    }
    s_register(self, id, id_len, policy, peer, VLB_HELLO);
}

/* Returns how many more segments a learner can take now. */
uint64_t vl_learners_credit(const vlb_learner_t *l)
{
    return l->granted > l->sent ? l->granted - l->sent : 0;
}

/* Sends a segment to its learner. Returns 0; or counts it dropped and
   returns -1, or -2 when the learner is gone (removed: l now names another
   learner or none). */
static int s_send_to(vl_broker_t *self, vlb_learner_t *l, zmq_msg_t *msg)
{
    if (zmq_send(self->router, l->id, l->id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        int gone = zmq_errno() == EHOSTUNREACH;
        vl_books_drop(self, VLB_SEGMENT, gone ? VLB_DROP_NO_LEARNER : VLB_DROP_QUEUE_FULL,
                      l->policy);
        if (gone)
            vl_learners_remove(self, l, "disconnected");
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
void vl_learners_drain(vl_broker_t *self, vlb_learner_t *l)
{
    while (l->head && vl_learners_credit(l) > 0 && !l->paused) {
        vlb_queued_t *q = s_queue_pop(l);
        int rc = s_send_to(self, l, &q->msg);
        s_queued_free(q);
        if (rc == -2)
            return;
    }
}

/* Takes a learner's credit report: the first on a connection sets the base
   of what we sent on it; every one sets what it may receive in all. */
static void s_on_credit(vl_broker_t *self, const uint8_t *id, size_t id_len, const vl_credit_t *cr,
                        const vl_peer_t *peer)
{
    if (!vl_peer_may(peer, VL_ROLE_LEARNER, cr->policy_id)) {
        vl_books_refuse_peer(self, VLB_CREDIT, VLB_DROP_ROLE, peer, cr->policy_id);
        return;
    }
    // A Credit names its policy: on a policy with no connection yet it counts as a hello, so a
    // learner reconnecting to a restarted broker is served at its first credit, not at its next
    // hello (up to a second later). Replacing another live connection is left to a Hello.
    vlb_learner_t *l = vl_learners_find(self, cr->policy_id);
    if (!l || l->id_len == 0) {
        if (!(l = s_register(self, id, id_len, cr->policy_id, peer, VLB_CREDIT)))
            return;
    } else if (l->id_len != id_len || memcmp(l->id, id, id_len) != 0)
        l = NULL;
    if (!l) {
        vl_books_drop(self, VLB_CREDIT, VLB_DROP_NO_LEARNER,
                      cr->policy_id); // no hello on this connection
        return;
    }
    if (!l->credited) {
        l->sent = cr->total_received; // segments in flight to a previous broker are lost
        l->base_received = cr->total_received;
        l->granted = cr->total_granted;
        l->credited = 1;
    } else if (cr->total_granted > l->granted) {
        l->granted = cr->total_granted; // a repeated or late report changes nothing
    }
    vl_learners_drain(self, l);
}

/* Handles a learner's Hello or Credit: a Credit is told by its counters. */
static void s_on_control(vl_broker_t *self, const uint8_t *id, size_t id_len, const uint8_t *data,
                         size_t size, const vl_peer_t *peer)
{
    vl_credit_t cr;
    vl_reason_t r = vl_credit_decode(data, size, &cr);
    if (r == VL_OK && id_len <= VLB_IDENTITY_MAX)
        s_on_credit(self, id, id_len, &cr, peer);
    else if (r == VL_OK || r == VL_ESHAPE || r == VL_ETOOBIG)
        vl_books_drop(self, VLB_CREDIT, r == VL_OK ? VL_ETOOBIG : r, NULL);
    else
        s_on_hello(self, id, id_len, data, size, peer);
}

/* Reads one [identity][hello] from the router. Returns 0, or -1 when empty. */
int vl_learners_recv(vl_broker_t *self)
{
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    int rc = -1;
    if (zmq_msg_recv(&id, self->router, ZMQ_DONTWAIT) >= 0) {
        rc = 0;
        if (zmq_msg_more(&id) && zmq_msg_recv(&body, self->router, 0) >= 0) {
            vl_peer_t peer;
            vl_roles_peer(self->roles, &body, &peer);
            s_on_control(self, zmq_msg_data(&id), zmq_msg_size(&id), zmq_msg_data(&body),
                         zmq_msg_size(&body), &peer);
        }
        while (zmq_msg_more(&body) && zmq_msg_recv(&body, self->router, 0) >= 0)
            ; // discard extra frames
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    return rc;
}

/* Queues a segment for a learner without credit, dropping the oldest
   queued ones while the queue would exceed its byte bound. */
static void s_enqueue(vl_broker_t *self, vlb_learner_t *l, zmq_msg_t *msg)
{
    size_t charge = zmq_msg_size(msg) + VLB_QUEUED_OVERHEAD;
    vlb_queued_t *q = charge <= self->queue_bytes ? malloc(sizeof *q) : NULL;
    if (!q) {
        vl_books_drop(self, VLB_SEGMENT, VLB_DROP_QUEUE_BYTES, l->policy); // alone over the bound
        return;
    }
    while (l->head && l->queued_bytes + charge > self->queue_bytes) {
        vl_books_drop(self, VLB_SEGMENT, VLB_DROP_QUEUE_BYTES, l->policy);
        s_queued_free(s_queue_pop(l));
    }
    size_t size = zmq_msg_size(msg);
    if (size < VLB_COPY_BELOW && zmq_msg_init_size(&q->msg, size) == 0) {
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

/* Returns the ceiling of a segment's arrays, by its policy: what the
   policy's declared spec takes, or VLB_NO_SPEC_MAX while it has none (or the
   message names no policy: the full check then says why it is bad). */
static size_t s_ceiling(vl_broker_t *self, zmq_msg_t *msg, uint64_t *raw)
{
    char policy[VL_POLICY_ID_MAX];
    *raw = 0;
    if (vl_inspect_declared(zmq_msg_data(msg), zmq_msg_size(msg), policy, raw) != 0)
        return VLB_NO_SPEC_MAX;
    const vl_spec_t *spec = vl_specs_find(self->specs, policy);
    return spec ? vl_segment_arrays_size(spec->horizon, &spec->obs_spec, spec->action.dims,
                                         spec->state_size)
                : VLB_NO_SPEC_MAX;
}

/* Checks a segment within its policy's ceiling: one declaring a larger
   payload is refused before anything is decompressed, one whose arrays
   would be larger before they are reserved (*over set for both). */
static vl_reason_t s_inspect(vl_broker_t *self, zmq_msg_t *msg, vl_segment_t *seg, int *over)
{
    uint64_t raw;
    size_t ceiling = s_ceiling(self, msg, &raw);
    *over = raw > ceiling;
    if (*over)
        return VL_ETOOBIG;
    vl_reason_t r = vl_inspect_segment_within(self->inspect, zmq_msg_data(msg), zmq_msg_size(msg),
                                              ceiling, seg, over);
    return r;
}

/* Sends a segment to the learner of its policy if it has credit, queues it
   if not, or counts why it is dropped. */
static void s_route(vl_broker_t *self, zmq_msg_t *msg, int64_t wall_ns, int64_t now_ns)
{
    vl_peer_t peer;
    int refused = 0; // by role: under CURVE only actor keys push (on an open broker anyone)
    if (vl_roles_secured(self->roles)) {
        vl_roles_peer(self->roles, msg, &peer);
        refused = !vl_peer_may(&peer, VL_ROLE_ACTOR, NULL);
    }
    vl_segment_t seg;
    int over = 0;
    vl_reason_t r = refused ? VL_EPROTO : s_inspect(self, msg, &seg, &over);
    if (self->recorder) // every message, refused ones too: a replay meets them again
        vl_recorder_add(self->recorder, msg, wall_ns, r == VL_OK ? seg.actor_id : UINT32_MAX);
    if (refused || over) {
        if (refused)
            vl_books_refuse_peer(self, VLB_SEGMENT, VLB_DROP_ROLE, &peer, NULL);
        else
            vl_books_drop(self, VLB_SEGMENT, VLB_DROP_CEILING, NULL);
        return;
    }
    if (r != VL_OK) {
        vl_books_drop(self, VLB_SEGMENT, r, NULL);
        return;
    }
    vl_roster_segment(self->roster, seg.actor_id, seg.policy_id, seg.seq, seg.send_ns, wall_ns,
                      now_ns);
    const vl_spec_t *spec = vl_specs_find(self->specs, seg.policy_id);
    char why[VL_SPEC_REASON_MAX];
    if (spec && vl_spec_check_segment(spec, &seg, why, sizeof why)) {
        vl_books_drop_text(self, VLB_SEGMENT, why, 1);
        vl_notify_refused(self->notify, self->control, seg.actor_id, VL_REFUSED_SEGMENTS, why,
                          now_ns);
        return;
    }
    vlb_learner_t *l = vl_learners_find(self, seg.policy_id);
    if (!l && now_ns - self->start_ns < VLB_STARTUP_GRACE_NS &&
        s_unclaimed(self) < VLB_MAX_UNCLAIMED)
        l = s_learner_add(self, seg.policy_id); // hold it: its learner may not have said hello yet
    if (!l) {
        vl_books_drop(self, VLB_SEGMENT, VLB_DROP_NO_LEARNER, seg.policy_id);
        return;
    }
    if (self->max_lag && l->newest_version > self->max_lag &&
        seg.policy_version < l->newest_version - self->max_lag) {
        vl_books_drop(self, VLB_SEGMENT, VLB_DROP_STALE, seg.policy_id);
        return;
    }
    if (!l->head && vl_learners_credit(l) > 0 && !l->paused)
        s_send_to(self, l, msg);
    else
        s_enqueue(self, l, msg);
}

/* Takes one segment from the actors. Returns 0, or -1 when none is waiting. */
int vl_learners_recv_segment(vl_broker_t *self)
{
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    int rc = zmq_msg_recv(&msg, self->pull, ZMQ_DONTWAIT) >= 0 ? 0 : -1;
    if (rc == 0) {
        self->received++;
        self->win_received++;
        if (zmq_msg_more(&msg)) {
            vl_books_drop(self, VLB_SEGMENT, VL_EPROTO, NULL);
            while (zmq_msg_more(&msg) && zmq_msg_recv(&msg, self->pull, 0) >= 0)
                ;
        } else {
            s_route(self, &msg, vl_wall_ns(), vl_now_ns()); // the clocks once, at receipt
        }
    }
    zmq_msg_close(&msg);
    return rc;
}

void vl_learners_free_queues(vl_broker_t *self)
{
    for (int i = 0; i < self->n_learners; i++) {
        vlb_queued_t *q;
        while ((q = s_queue_pop(&self->learners[i])) != NULL)
            s_queued_free(q);
    }
}
