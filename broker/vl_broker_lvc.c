/*  vl_broker_lvc: publications from learners checked, forwarded to
    subscribers and kept as each topic's last value for late joiners. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_status.h"
#include "vl_broker_engine.h"

/* Returns the cache entry for a topic, creating it if there is room. */
static vlb_cached_t *s_cache_slot(vl_broker_t *self, const void *topic, size_t len)
{
    for (int i = 0; i < self->n_cached; i++) {
        zmq_msg_t *t = &self->cache[i].topic;
        if (zmq_msg_size(t) == len && memcmp(zmq_msg_data(t), topic, len) == 0)
            return &self->cache[i];
    }
    if (self->n_cached == VLB_MAX_TOPICS)
        return NULL;
    vlb_cached_t *c = &self->cache[self->n_cached++];
    zmq_msg_init_size(&c->topic, len);
    memcpy(zmq_msg_data(&c->topic), topic, len);
    zmq_msg_init(&c->body);
    return c;
}

/* Counts what a learner's stats say it refused since they last did: those
   segments were routed, and are now dropped under the learner's reason;
   the actor that sent them is told. */
static void s_note_refusals(vl_broker_t *self, vlb_learner_t *l, const vl_stats_t *st)
{
    for (uint32_t i = 0; i < st->n_refusals; i++) {
        const vl_refusal_t *r = &st->refusals[i];
        vlb_seen_refusal_t *seen = NULL;
        for (int k = 0; k < l->n_refusals && !seen; k++)
            if (l->refusals[k].actor_id == r->actor_id &&
                strcmp(l->refusals[k].reason, r->reason) == 0)
                seen = &l->refusals[k];
        if (!seen && l->n_refusals < VLB_LEARNER_REASONS) {
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
            vl_books_drop_text(self, VLB_SEGMENT, text, delta);
        self->routed -= delta;
        vl_notify_refused(self->notify, self->control, r->actor_id, VL_REFUSED_SEGMENTS, r->reason,
                          vl_now_ns());
    }
}

/* Returns the learner entry whose weights or stats a publication is, if
   peer may publish it: it holds the policy's hello and its role allows it.
   NULL after counting why not. */
static vlb_learner_t *s_publisher(vl_broker_t *self, const char *policy, const vl_peer_t *peer)
{
    vlb_learner_t *l = vl_learners_find(self, policy);
    if (!vl_peer_may(peer, VL_ROLE_LEARNER, policy)) {
        vl_books_refuse_peer(self, VLB_PUBLICATION, VLB_DROP_ROLE, peer, policy);
        return NULL;
    }
    if (!l || !l->id_len || strcmp(l->holder, peer->who) != 0) {
        vl_books_refuse_peer(self, VLB_PUBLICATION, VLB_DROP_NOT_HOLDER, peer, policy);
        return NULL;
    }
    return l;
}

/* Takes what a checked publication says of its learner: its stats, or the
   newest version of its weights (which only go forward within the
   learner's epoch: a republished version is fine). Returns 0 to forward it,
   or -1 after counting why not. */
static int s_accept_publication(vl_broker_t *self, const char *topic, size_t len,
                                const vl_publication_t *pub, const vl_peer_t *peer)
{
    char policy[VL_POLICY_ID_MAX];
    memcpy(policy, topic, len); // checked by vl_inspect_publication: shorter than the array
    policy[len] = 0;
    vlb_learner_t *l = s_publisher(self, pub->is_stats ? pub->stats.policy_id : policy, peer);
    if (!l)
        return -1;
    if (pub->is_stats) {
        s_note_refusals(self, l, &pub->stats);
        l->stats = pub->stats;
        l->have_stats = 1;
        return 0;
    }
    if (pub->version < l->newest_version) {
        vl_books_refuse_peer(self, VLB_PUBLICATION, VLB_DROP_OLD_VERSION, peer, policy);
        return -1;
    }
    l->newest_version = pub->version;
    return 0;
}

/* Forwards a checked [topic][body] publication and keeps it as the topic's
   last value, or counts why not. */
static void s_forward_publication(vl_broker_t *self, zmq_msg_t *topic, zmq_msg_t *body)
{
    vl_publication_t pub;
    vl_reason_t r = vl_inspect_publication(self->inspect, zmq_msg_data(topic), zmq_msg_size(topic),
                                           zmq_msg_data(body), zmq_msg_size(body), &pub);
    if (r != VL_OK) {
        vl_books_drop(self, VLB_PUBLICATION, r, NULL);
        return;
    }
    vl_peer_t peer;
    vl_roles_peer(self->roles, body, &peer);
    if (s_accept_publication(self, zmq_msg_data(topic), zmq_msg_size(topic), &pub, &peer) != 0)
        return;
    vlb_cached_t *c = s_cache_slot(self, zmq_msg_data(topic), zmq_msg_size(topic));
    if (c)
        zmq_msg_copy(&c->body, body);
    zmq_msg_send(topic, self->xpub, ZMQ_SNDMORE);
    zmq_msg_send(body, self->xpub, 0);
}

/* Takes one publication from the learners. Returns 0, or -1 when none is
   waiting. */
int vl_lvc_recv_publication(vl_broker_t *self)
{
    zmq_msg_t topic, body;
    zmq_msg_init(&topic);
    zmq_msg_init(&body);
    int rc = zmq_msg_recv(&topic, self->xsub, ZMQ_DONTWAIT) >= 0 ? 0 : -1;
    if (rc == 0 && zmq_msg_more(&topic) && zmq_msg_recv(&body, self->xsub, 0) >= 0 &&
        !zmq_msg_more(&body))
        s_forward_publication(self, &topic, &body);
    else if (rc == 0)
        vl_books_drop(self, VLB_PUBLICATION, VL_EPROTO, NULL); // not [topic][body]
    while (rc == 0 && zmq_msg_more(&body) && zmq_msg_recv(&body, self->xsub, 0) >= 0)
        ; // the rest of a malformed one
    zmq_msg_close(&topic);
    zmq_msg_close(&body);
    return rc;
}

/* Returns 1 if a resend of cached values may go out now (VLB_RESENDS_PER_S
   in all; per connection a burst of VLB_RESEND_BURST, one a
   VLB_RESEND_GAP_NS after that), else 0 after counting it refused. */
static int s_resend_allowed(vl_broker_t *self, int fd, const vl_peer_t *peer)
{
    int64_t now = vl_now_ns();
    if (now - self->resend_window_ns >= 1000000000LL) {
        self->resend_window_ns = now;
        self->resends = 0;
    }
    // The connection's schedule: when its resends would be paid off at one a gap.
    int64_t *due = fd >= 0 && fd < self->n_fds ? &self->resent_by_fd[fd] : NULL;
    int64_t from = due && *due > now ? *due : now;
    if (self->resends >= VLB_RESENDS_PER_S ||
        from - now > (VLB_RESEND_BURST - 1) * VLB_RESEND_GAP_NS) {
        vl_books_refuse_peer(self, VLB_SUBSCRIPTION, VLB_DROP_RESEND, peer, NULL);
        return 0;
    }
    self->resends++;
    if (due)
        *due = from + VLB_RESEND_GAP_NS;
    return 1;
}

/* Sends the cached last value of every topic the subscription prefix covers. */
static void s_serve_late_joiner(vl_broker_t *self, const uint8_t *prefix, size_t len, int fd,
                                const vl_peer_t *peer)
{
    int allowed = -1; // asked once, when there is something to resend
    for (int i = 0; i < self->n_cached; i++) {
        vlb_cached_t *c = &self->cache[i];
        if (zmq_msg_size(&c->topic) < len || memcmp(zmq_msg_data(&c->topic), prefix, len) != 0 ||
            zmq_msg_size(&c->body) == 0)
            continue;
        if (allowed < 0)
            allowed = s_resend_allowed(self, fd, peer);
        if (!allowed)
            return;
        zmq_msg_t t, b;
        zmq_msg_init(&t);
        zmq_msg_init(&b);
        zmq_msg_copy(&t, &c->topic);
        zmq_msg_copy(&b, &c->body);
        zmq_msg_send(&t, self->xpub, ZMQ_SNDMORE);
        zmq_msg_send(&b, self->xpub, 0);
    }
}

/* Returns 1 if topic (len bytes) is one subscribers may hold: everything
   (empty), the stats topic or a policy id, within the bound on distinct
   topics (a policy the broker serves is always let in); else 0 after
   counting why not. */
static int s_topic_allowed(vl_broker_t *self, const uint8_t *topic, size_t len,
                           const vl_peer_t *peer)
{
    char name[VL_POLICY_ID_MAX];
    if (len == 0)
        return 1;
    if (len >= sizeof name) {
        vl_books_refuse_peer(self, VLB_SUBSCRIPTION, VLB_DROP_TOPIC, peer, NULL);
        return 0;
    }
    memcpy(name, topic, len);
    name[len] = 0;
    if (strcmp(name, VL_STATS_TOPIC) != 0 && !vl_wire_name_ok(name, sizeof name)) {
        vl_books_refuse_peer(self, VLB_SUBSCRIPTION, VLB_DROP_TOPIC, peer, NULL);
        return 0;
    }
    for (int i = 0; i < self->n_sub_topics; i++)
        if (strcmp(self->sub_topics[i], name) == 0)
            return 1;
    if (self->n_sub_topics == VLB_MAX_SUB_TOPICS) {
        // A policy the broker serves (its spec or its learner is known: both tables bounded)
        // is never crowded out by topics that junk subscriptions took first.
        if (vl_specs_find(self->specs, name) || vl_learners_find(self, name))
            return 1;
        vl_books_refuse_peer(self, VLB_SUBSCRIPTION, VLB_DROP_TOPICS, peer, name);
        return 0;
    }
    snprintf(self->sub_topics[self->n_sub_topics++], VL_POLICY_ID_MAX, "%s", name);
    return 1;
}

/* Returns a hash of the peer on descriptor fd (its address and port). */
static uint32_t s_peer_hash(int fd)
{
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    if (getpeername(fd, (struct sockaddr *)&a, &len) != 0)
        return 0;
    uint32_t h = 2166136261u; // FNV-1a
    for (socklen_t i = 0; i < len; i++)
        h = (h ^ ((uint8_t *)&a)[i]) * 16777619u;
    return h | 1; // never 0: "none yet"
}

/* Counts a subscription on the connection msg came from. Returns 1 when it
   is within VLB_SUBS_PER_CONN; else 0 after cutting the connection (libzmq
   then forgets everything it subscribed). */
static int s_conn_allows(vl_broker_t *self, zmq_msg_t *msg, const vl_peer_t *peer)
{
    int fd = zmq_msg_get(msg, ZMQ_SRCFD);
    if (fd < 0)
        return 1; // not over TCP (inproc): our own
    uint32_t h = fd < self->n_fds ? s_peer_hash(fd) : 0;
    if (fd < self->n_fds && h != self->conn_by_fd[fd]) {
        self->conn_by_fd[fd] = h; // a new connection on a reused descriptor
        self->subs_by_fd[fd] = 0;
        self->resent_by_fd[fd] = 0;
    }
    if (fd < self->n_fds && ++self->subs_by_fd[fd] <= VLB_SUBS_PER_CONN)
        return 1;
    vl_books_refuse_peer(self, VLB_SUBSCRIPTION, VLB_DROP_PER_CONN, peer, NULL);
    shutdown(fd, SHUT_RDWR); // libzmq sees the connection end and drops its subscriptions
    if (fd < self->n_fds)
        self->subs_by_fd[fd] = 0;
    return 0;
}

/* Reads one message from the XPUB (subscriptions are taken by hand: only
   those within the bounds reach libzmq's table). Returns 0, or -1 when none. */
int vl_lvc_recv_subscription(vl_broker_t *self)
{
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, self->xpub, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&m);
        return -1;
    }
    const uint8_t *d = zmq_msg_data(&m);
    size_t n = zmq_msg_size(&m);
    vl_peer_t peer;
    vl_roles_peer(self->roles, &m, &peer);
    if (zmq_msg_more(&m) || n == 0 || d[0] > 1) {
        vl_books_refuse_peer(self, VLB_SUBSCRIPTION, VLB_DROP_JUNK, &peer, NULL);
        while (zmq_msg_more(&m) && zmq_msg_recv(&m, self->xpub, 0) >= 0)
            ;
    } else if (d[0] == 0) { // an unsubscription: always taken
        zmq_setsockopt(self->xpub, ZMQ_UNSUBSCRIBE, d + 1, n - 1);
    } else if (n > VL_POLICY_ID_MAX && zmq_msg_get(&m, ZMQ_SRCFD) >= 0) {
        // Past the port's message bound only under CURVE (its handshake needs room): cut as
        // libzmq cuts an open broker's peer, so a key's long topics stop at the first.
        vl_books_refuse_peer(self, VLB_SUBSCRIPTION, VLB_DROP_TOPIC, &peer, NULL);
        shutdown(zmq_msg_get(&m, ZMQ_SRCFD), SHUT_RDWR);
    } else if (!s_conn_allows(self, &m, &peer)) {
        // counted first: libzmq holds every subscription it read, refused ones too
    } else if (!vl_peer_may(&peer, VL_ROLE_ACTOR | VL_ROLE_OBSERVER | VL_ROLE_LEARNER, NULL)) {
        vl_books_refuse_peer(self, VLB_SUBSCRIPTION, VLB_DROP_ROLE, &peer, NULL);
    } else if (s_topic_allowed(self, d + 1, n - 1, &peer)) {
        zmq_setsockopt(self->xpub, ZMQ_SUBSCRIBE, d + 1, n - 1);
        s_serve_late_joiner(self, d + 1, n - 1, zmq_msg_get(&m, ZMQ_SRCFD), &peer);
    }
    zmq_msg_close(&m);
    return 0;
}

void vl_lvc_free(vl_broker_t *self)
{
    for (int i = 0; i < self->n_cached; i++) {
        zmq_msg_close(&self->cache[i].topic);
        zmq_msg_close(&self->cache[i].body);
    }
    self->n_cached = 0;
}
