/*  vl_broker_lvc: publications from learners checked, forwarded to
    subscribers and kept as each topic's last value for late joiners. */
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

/* Keeps what a learner's publication says of it: its stats, or the
   newest version of its weights. */
static void s_note_publication(vl_broker_t *self, const char *topic, size_t len,
                               const vl_publication_t *pub)
{
    char policy[VL_POLICY_ID_MAX];
    if (pub->is_stats) {
        vlb_learner_t *l = vl_learners_find(self, pub->stats.policy_id);
        if (l) {
            s_note_refusals(self, l, &pub->stats);
            l->stats = pub->stats;
            l->have_stats = 1;
        }
        return;
    }
    memcpy(policy, topic, len); // checked by vl_inspect_publication: shorter than the array
    policy[len] = 0;
    vlb_learner_t *l = vl_learners_find(self, policy);
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
        vl_books_drop(self, VLB_PUBLICATION, r, NULL);
        return;
    }
    s_note_publication(self, zmq_msg_data(topic), zmq_msg_size(topic), &pub);
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

/* Sends the cached last value of every topic the subscription prefix covers. */
static void s_serve_late_joiner(vl_broker_t *self, const uint8_t *prefix, size_t len)
{
    for (int i = 0; i < self->n_cached; i++) {
        vlb_cached_t *c = &self->cache[i];
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
int vl_lvc_recv_subscription(vl_broker_t *self)
{
    uint8_t buf[VL_POLICY_ID_MAX + 1];
    int n = zmq_recv(self->xpub, buf, sizeof buf, ZMQ_DONTWAIT);
    if (n < 0)
        return -1;
    if (n >= 1 && n <= (int)sizeof buf && buf[0] == 1)
        s_serve_late_joiner(self, buf + 1, (size_t)n - 1);
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
