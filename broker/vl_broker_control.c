/*  vl_broker_control: the control port's verbs (beat, spec, getspec,
    status, pause/resume, shutdown). */
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
    vl_books_drop(self, VLB_COMMAND, reason, NULL);
    const char *text = vl_books_reason_str(reason);
    s_reply(self, id, VL_VERB_ERROR, text, strlen(text));
}

/* Answers a STATUS request. */
static void s_on_status(vl_broker_t *self, zmq_msg_t *id)
{
    uint8_t *buf = NULL;
    size_t size = 0;
    if (vl_books_status_encode(self, &buf, &size) == 0)
        s_reply(self, id, VL_VERB_STATUS, buf, size);
    free(buf);
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
    vlb_learner_t *l = vl_learners_find(self, policy);
    if (!l) {
        s_refuse(self, id,
                 vl_wire_name_ok(policy, sizeof policy) ? VLB_DROP_NO_LEARNER : VL_EPOLICY);
        return;
    }
    l->paused = pause;
    vl_info("learner for policy '%s' %s by a control request", policy,
            pause ? "paused" : "resumed");
    if (!pause)
        vl_learners_drain(self, l);
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
        vl_books_drop(self, VLB_COMMAND, r, NULL);
        return;
    }
    vl_roster_beat(self->roster, &beat, vl_now_ns());
    vl_notify_route(self->notify, beat.actor_id, zmq_msg_data(id), zmq_msg_size(id));
    char why[VL_SPEC_REASON_MAX];
    if (beat.has_spec &&
        vl_specs_declare(self->specs, &beat.spec, "this actor", 0, why, sizeof why)) {
        vl_books_drop_text(self, VLB_SPEC, why, 1);
        vl_notify_send(self->control, zmq_msg_data(id), zmq_msg_size(id), VL_REFUSED_SPEC, why);
    }
}

/* Takes a learner's SPEC: OK when it agrees with its policy's (or becomes
   it), ERROR with the field that differs. */
static void s_on_spec(vl_broker_t *self, zmq_msg_t *id, const zmq_msg_t *arg, const vl_peer_t *peer)
{
    vl_spec_t spec;
    vl_reason_t r = arg ? vl_spec_decode(zmq_msg_data((zmq_msg_t *)arg), zmq_msg_size(arg),
                                         &self->limits, &spec)
                        : VL_EPROTO;
    if (r != VL_OK) {
        s_refuse(self, id, r);
        return;
    }
    if (!vl_peer_may(peer, VL_ROLE_LEARNER, spec.policy_id)) {
        s_refuse(self, id, VLB_DROP_ROLE);
        return;
    }
    char why[VL_SPEC_REASON_MAX];
    if (vl_specs_declare(self->specs, &spec, "this learner", 1, why, sizeof why)) {
        vl_books_drop_text(self, VLB_SPEC, why, 1);
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
static void s_on_request(vl_broker_t *self, zmq_msg_t *id, const char *verb, const zmq_msg_t *arg,
                         const vl_peer_t *peer)
{
    // Who may ask what: status and specs for anyone let in, the rest by role.
    static const struct {
        const char *verb;
        unsigned roles;
    } may[] = {{VL_VERB_BEAT, VL_ROLE_ACTOR},    {VL_VERB_SPEC, VL_ROLE_LEARNER},
               {VL_VERB_GETSPEC, VL_ROLE_ALL},   {VL_VERB_STATUS, VL_ROLE_ALL},
               {VL_VERB_PAUSE, VL_ROLE_ADMIN},   {VL_VERB_RESUME, VL_ROLE_ADMIN},
               {VL_VERB_SHUTDOWN, VL_ROLE_ADMIN}};
    for (size_t i = 0; i < sizeof may / sizeof may[0]; i++)
        if (strcmp(verb, may[i].verb) == 0 && !vl_peer_may(peer, may[i].roles, NULL)) {
            vl_books_refuse_peer(self, VLB_COMMAND, VLB_DROP_ROLE, peer, NULL);
            const char *text = vl_books_reason_str(VLB_DROP_ROLE);
            if (strcmp(verb, VL_VERB_BEAT) != 0) // beats get no reply
                s_reply(self, id, VL_VERB_ERROR, text, strlen(text));
            return;
        }
    if (strcmp(verb, VL_VERB_BEAT) == 0) {
        s_on_beat(self, id, arg);
    } else if (strcmp(verb, VL_VERB_SPEC) == 0) {
        s_on_spec(self, id, arg, peer);
    } else if (strcmp(verb, VL_VERB_GETSPEC) == 0) {
        s_on_getspec(self, id, arg);
    } else if (strcmp(verb, VL_VERB_STATUS) == 0) {
        s_on_status(self, id);
    } else if (strcmp(verb, VL_VERB_PAUSE) == 0 || strcmp(verb, VL_VERB_RESUME) == 0) {
        s_on_pause(self, id, verb[0] == 'P', arg);
    } else if (strcmp(verb, VL_VERB_SHUTDOWN) == 0) {
        vl_info("shutting down: asked on the control port by %s", peer->who);
        self->shutdown = 1;
        s_reply(self, id, VL_VERB_OK, NULL, 0);
    } else {
        s_refuse(self, id, VLB_DROP_VERB);
    }
}

/* Reads one [identity][verb][argument?] from the control port. Returns 0,
   or -1 when none is waiting. */
int vl_control_recv(vl_broker_t *self)
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
    char name[VLB_VERB_MAX + 1];
    size_t len = zmq_msg_size(&verb);
    if (rc == 0 && frames > 1 && !extra && len <= VLB_VERB_MAX) {
        memcpy(name, zmq_msg_data(&verb), len);
        name[len] = 0;
        vl_peer_t peer;
        vl_roles_peer(self->roles, &verb, &peer);
        s_on_request(self, &id, name, frames == 3 ? &arg : NULL, &peer);
    } else if (rc == 0) {
        s_refuse(self, &id, VL_EPROTO);
    }
    zmq_msg_close(&id);
    zmq_msg_close(&verb);
    zmq_msg_close(&arg);
    return rc;
}
