/*  vl_learner_spec: declare or fetch the policy's spec. */
#include "vl_learner_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_sock.h"
#include "../messages/vl_status.h"

#define S_RETRY_MS   1000 // a request unanswered this long is sent again
#define S_CONNECT_MS 50   // a request no connection took (not connected yet) is tried this soon
#define S_NOTE_NS    5000000000LL // between "still waiting" log lines
#define S_FIRST_NS   1000000000LL // the first one: a user learns within 2 s what we wait for
#define S_REPLY_MAX  (64 << 10)

/* Sends [verb][body]. Returns 1 if a connection took it, 0 if there is
   none yet (the socket queues nothing without one: the caller tries again
   in S_CONNECT_MS). */
static int s_send(void *sock, const char *verb, const void *body, size_t size)
{
    if (zmq_send(sock, verb, strlen(verb), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return 0;
    return zmq_send(sock, body, size, ZMQ_DONTWAIT) >= 0;
}

/* Returns 1, after logging `what`, when the next note is due. */
static int s_note_due(int64_t *next_note)
{
    int64_t now = vl_now_ns();
    if (now < *next_note)
        return 0;
    *next_note = now + S_NOTE_NS;
    return 1;
}
/* Logs, when due, that no connection to the broker has been made yet:
   "no broker at tcp://HOST:PORT yet" (its base port, as the user gave it). */
static void s_no_broker(const vl_learner_config_t *c, int64_t *next_note)
{
    char endpoint[300];
    if (s_note_due(next_note) &&
        vl_opt_endpoint("learner", c->broker, 0, endpoint, sizeof endpoint) == 0)
        vl_info("no broker at %s yet", endpoint);
}

/* Waits up to S_RETRY_MS for a [verb][body] reply; copies the verb (cut to
   15 bytes) and the body. Returns the body's size, or -1 on no reply. */
static int s_reply(void *sock, char verb[16], uint8_t *body, size_t cap)
{
    zmq_pollitem_t item = {sock, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, S_RETRY_MS) <= 0)
        return -1;
    int n = zmq_recv(sock, verb, 15, 0), size = 0, more = 0;
    size_t ms = sizeof more;
    verb[n < 0 ? 0 : n > 15 ? 15 : n] = 0;
    zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &ms);
    if (more)
        size = zmq_recv(sock, body, cap, 0);
    for (zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &ms); more;
         zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &ms)) {
        char drop[1];
        zmq_recv(sock, drop, 1, 0);
    }
    return size < 0 || (size_t)size > cap ? 0 : size;
}

/* Returns 1 while the caller may go on waiting: not interrupted, and
   before the deadline (monotonic ns; 0: none). */
static int s_may_wait(int64_t deadline)
{
    return !vl_interrupted && (deadline == 0 || vl_now_ns() < deadline);
}

/* Copies a refusal's text into why (if not NULL) and logs it. */
static void s_refused(char *why, size_t why_size, const char *what, const char *text)
{
    if (why)
        snprintf(why, why_size, "%s: %s", what, text);
    vl_error("%s: %s", what, text);
}

/* Declares our spec until the broker answers. Returns 0, 1 or 2. */
static int s_declare(void *sock, vl_learner_config_t *c, int64_t deadline, int *reached, char *why,
                     size_t why_size)
{
    vl_spec_t spec;
    vl_learner_config_spec(c, &spec);
    uint8_t *buf, reply[VL_SPEC_REASON_MAX];
    size_t size;
    if (vl_spec_encode(&spec, &buf, &size) != 0) {
        s_refused(why, why_size, "cannot encode this learner's spec", "invalid fields");
        return 2;
    }
    int rc = 1;
    int64_t next_note = vl_now_ns() + S_FIRST_NS;
    while (s_may_wait(deadline)) {
        if (!s_send(sock, VL_VERB_SPEC, buf, size)) {
            vl_proc_sleep_until(vl_now_ns() + S_CONNECT_MS * 1000000LL);
            s_no_broker(c, &next_note);
            continue;
        }
        *reached = 1;
        char verb[16];
        int n = s_reply(sock, verb, reply, sizeof reply - 1);
        if (n >= 0 && strcmp(verb, VL_VERB_OK) == 0) {
            rc = 0;
            break;
        }
        if (n >= 0 && strcmp(verb, VL_VERB_ERROR) == 0) {
            reply[n] = 0;
            s_refused(why, why_size, "the broker refused this learner's spec", (char *)reply);
            rc = 2;
            break;
        }
        if (s_note_due(&next_note))
            vl_info("waiting for the broker at %s to take our spec", c->broker);
    }
    free(buf);
    return rc;
}

/* Asks for the policy's spec until an actor has declared it. Returns 0, 1
   or 2. */
static int s_fetch(void *sock, vl_learner_config_t *c, int64_t deadline, int *reached, char *why,
                   size_t why_size)
{
    static uint8_t reply[S_REPLY_MAX];
    vl_limits_t lim = vl_limits_default();
    int64_t next_note = 0, next_absent = vl_now_ns() + S_FIRST_NS;
    while (s_may_wait(deadline)) {
        if (!s_send(sock, VL_VERB_GETSPEC, c->policy, strlen(c->policy))) {
            vl_proc_sleep_until(vl_now_ns() + S_CONNECT_MS * 1000000LL);
            s_no_broker(c, &next_absent);
            continue;
        }
        *reached = 1;
        char verb[16];
        int n = s_reply(sock, verb, reply, sizeof reply);
        vl_spec_t spec;
        if (n > 0 && strcmp(verb, VL_VERB_SPEC) == 0 &&
            vl_spec_decode(reply, (size_t)n, &lim, &spec) == VL_OK &&
            strcmp(spec.policy_id, c->policy) == 0) {
            char line[1400];
            char model[512], canon[VL_SPEC_MODEL_MAX];
            if (vl_learner_config_set_spec(c, &spec) != 0) {
                s_refused(why, why_size, "the broker's spec cannot be served", "invalid fields");
                return 2;
            }
            if (vl_learner_config_model(c, NULL, canon, model, sizeof model) != 0) {
                char what[600];
                snprintf(what, sizeof what, "model: %s", model);
                s_refused(why, why_size, "the broker's spec cannot be served", what);
                return 2;
            }
            snprintf(c->model, sizeof c->model, "%s", canon); // canonical, as --model is compared
            spec.model_open = 0;
            snprintf(spec.model, sizeof spec.model, "%s", canon);
            spec.hidden = c->hidden;
            vl_spec_str(&spec, line, sizeof line);
            vl_info("policy '%s' from the broker: %s", c->policy, line);
            return 0;
        }
        if (s_note_due(&next_note))
            vl_info("waiting for an actor of policy '%s' to declare its spec at %s", c->policy,
                    c->broker);
        if (n >= 0) // answered at once ("not yet"): ask again in a second
            vl_proc_sleep_until(vl_now_ns() + S_RETRY_MS * 1000000LL);
    }
    return 1;
}

int vl_learner_spec_settle(vl_learner_config_t *c)
{
    return vl_learner_spec_settle_within(c, c->env != NULL, -1, NULL, 0);
}

int vl_learner_spec_settle_within(vl_learner_config_t *c, int declare, int timeout_ms, char *why,
                                  size_t why_size)
{
    int64_t deadline = timeout_ms < 0 ? 0 : vl_now_ns() + (int64_t)timeout_ms * 1000000LL + 1;
    void *ctx = zmq_ctx_new();
    void *sock =
        ctx ? vl_sock_connect_lossy(ctx, ZMQ_DEALER, c->broker, VL_PORT_CONTROL, S_REPLY_MAX)
            : NULL;
    int reached = 0; // a connection to the broker was made
    int rc = !sock     ? 1
             : declare ? s_declare(sock, c, deadline, &reached, why, why_size)
                       : s_fetch(sock, c, deadline, &reached, why, why_size);
    char endpoint[300];
    if (rc == 1 && why && sock && !reached &&
        vl_opt_endpoint("learner", c->broker, 0, endpoint, sizeof endpoint) == 0)
        snprintf(why, why_size, "no broker at %.280s (never reached)", endpoint);
    else if (rc == 1 && why)
        snprintf(why, why_size, "%s",
                 !sock     ? "cannot connect to the broker"
                 : declare ? "no answer from the broker to our spec"
                           : "no actor has declared the policy's spec");
    if (sock)
        zmq_close(sock);
    if (ctx)
        zmq_ctx_term(ctx);
    return rc;
}
