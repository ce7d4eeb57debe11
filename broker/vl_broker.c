/*  vl_broker: the engine: sockets, the poll loop, the clock, start and stop. */
#include "vl_broker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <zmq.h>

#include "../common/vl_curve.h"
#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_sock.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_status.h"
#include "vl_broker_engine.h"

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
                                .max_conns = 4096,
                                .max_conns_per_addr = 256,
                                .record = NULL,
                                .record_flush = VL_FLUSH_EVERYSEC};
}

/* Creates a socket of the type bound at base port + offset. NULL on error. */
static void *s_bind(vl_broker_t *self, const vl_broker_config_t *c, int type, int offset)
{
    return vl_sock_bind(self->ctx, type, c->bind_host, c->port + offset, 0, c->max_msg);
}

/* Creates the weights-out XPUB at base port + offset with the bounds its
   subscribers' connections must carry. libzmq gives each accepted connection
   the options its listener had when bound, so the socket is made with
   volley's options on an ephemeral port nobody connects to, given the
   bounds, bound to its own port, and the ephemeral one closed. NULL on error. */
static void *s_bind_xpub(vl_broker_t *self, const vl_broker_config_t *c, int offset)
{
    int64_t max = vl_sock_curve_on() ? VLB_SUB_MSG_MAX_CURVE : VLB_SUB_MSG_MAX;
    void *s = vl_sock_bind(self->ctx, ZMQ_XPUB, c->bind_host, 0, 0, max);
    char first[300], endpoint[300];
    size_t len = sizeof first;
    int hwm = VLB_SUB_RCVHWM;
    if (!s)
        return NULL;
    snprintf(endpoint, sizeof endpoint, "tcp://%s:%d", c->bind_host, c->port + offset);
    if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, first, &len) != 0 ||
        zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 || zmq_bind(s, endpoint) != 0 ||
        zmq_unbind(s, first) != 0) {
        int err = zmq_errno();
        vl_error("cannot listen on %s: %s", endpoint, zmq_strerror(err));
        zmq_close(s);
        errno = err;
        return NULL;
    }
    return s;
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

/* Returns how many file descriptors this process may have (its
   connections' are below it), at most VLB_CONN_FDS_MAX. */
static int s_fd_limit(void)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY ||
        lim.rlim_cur > VLB_CONN_FDS_MAX)
        return VLB_CONN_FDS_MAX;
    return (int)lim.rlim_cur;
}

/* Trusts, on an open broker, the peers in each CIDR of a comma-separated
   list (NULL: none beyond loopback). Returns 0, or -1 after logging. */
static int s_trust(vl_broker_t *self, const char *list)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list ? list : "");
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (vl_roles_trust(self->roles, t) != 0) {
            vl_error("--trust: '%s' is no CIDR (e.g. 10.0.0.0/8) or too many ranges", t);
            return -1;
        }
    if (list && list[0])
        vl_info("open broker: learner and admin requests trusted from loopback and %s%s", list,
                self->curve ? " (ignored: CURVE keys say each peer's role)" : "");
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
    int why;
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
    self->inspect = vl_inspect_new(c->inspect_full, VLB_MAX_ARRAYS);
    self->roster = vl_roster_new(c->max_actors, VLB_ACTOR_TIMEOUT_NS);
    self->specs = vl_specs_new(VLB_MAX_SPECS);
    self->roles = vl_roles_new(c->cert ? c->allow : NULL);
    self->n_fds = s_fd_limit();
    self->max_conns = c->max_conns;
    self->max_conns_per_addr = c->max_conns_per_addr;
    self->subs_by_fd = calloc((size_t)self->n_fds, sizeof *self->subs_by_fd);
    self->conn_by_fd = calloc((size_t)self->n_fds, sizeof *self->conn_by_fd);
    self->resent_by_fd = calloc((size_t)self->n_fds, sizeof *self->resent_by_fd);
    if (!self->subs_by_fd || !self->conn_by_fd || !self->resent_by_fd)
        goto err;
    if (!self->roles || s_trust(self, c->trust) != 0)
        goto err;
    self->notify = vl_notify_new(c->max_actors);
    if (!self->ctx || !self->inspect || !self->roster || !self->specs || !self->notify)
        goto err;
    // The first port that cannot be bound ends it: one line says why, errno stays its reason.
    if (!(self->pull = s_bind(self, c, ZMQ_PULL, VL_PORT_SEGMENTS)) ||
        !(self->router = s_bind(self, c, ZMQ_ROUTER, VL_PORT_LEARNERS)) ||
        !(self->xsub = s_bind(self, c, ZMQ_XSUB, VL_PORT_WEIGHTS_IN)) ||
        !(self->xpub = s_bind_xpub(self, c, VL_PORT_WEIGHTS_OUT)) ||
        !(self->control = s_bind(self, c, ZMQ_ROUTER, VL_PORT_CONTROL)))
        goto err;
    void *ports[VLB_PORTS] = {self->pull, self->router, self->xsub, self->xpub, self->control};
    if (vl_conns_watch(self, ports, VLB_PORTS) != 0)
        goto err;
    // The recording file after the ports: a broker that cannot listen leaves no file behind
    // (`volley up` tries other free ports with the same --record).
    if (c->record && s_start_recording(self, c) != 0)
        goto err;
    int one = 1;
    zmq_setsockopt(self->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(self->router, ZMQ_SNDHWM, &c->sndhwm, sizeof c->sndhwm);
    // Every subscription reaches us, repeats included: each is a late joiner to serve from the
    // cache; and a subscriber is sent only the topics we take (vl_broker_lvc.c bounds which).
    // libzmq's own record of a connection's subscriptions is bounded by the per-connection cut
    // and the short receive queue s_bind_xpub gives every connection.
    zmq_setsockopt(self->xpub, ZMQ_XPUB_VERBOSE, &one, sizeof one);
    zmq_setsockopt(self->xpub, ZMQ_XPUB_MANUAL, &one, sizeof one);
    // Take everything learners publish, so the cache is filled whoever subscribes.
    uint8_t all = 1;
    zmq_send(self->xsub, &all, 1, 0);
    vl_info("listening on ports %d (segments) %d (learners) %d (weights in) %d (weights out) "
            "%d (control)",
            c->port, c->port + 1, c->port + 2, c->port + 3, c->port + 4);
    return self;
err:
    why = errno; // kept through the cleanup: the caller's reason (EADDRINUSE: a port in use)
    vl_broker_destroy(&self);
    errno = why;
    return NULL;
}

/* Once a second: closes the rate windows; every log_every: logs status. */
static void s_tick(vl_broker_t *self)
{
    int64_t now = vl_now_ns();
    vl_roster_tick(self->roster, now);
    vl_roles_tick(self->roles, now);
    vl_conns_tick(self, now);
    int64_t elapsed = now - self->window_ns;
    if (elapsed >= VLB_WINDOW_NS) {
        self->received_per_s = (float)(self->win_received * 1e9 / (double)elapsed);
        self->win_received = 0;
        for (int i = 0; i < self->n_learners; i++) {
            vlb_learner_t *l = &self->learners[i];
            l->delivered_per_s = (float)(l->win_delivered * 1e9 / (double)elapsed);
            l->win_delivered = 0;
        }
        self->window_ns = now;
    }
    if (self->log_every_ns > 0 && now - self->logged_ns >= self->log_every_ns) {
        vl_books_log_status(self);
        self->logged_ns = now;
    }
}

/* Forgets learners that stopped saying hello. */
static void s_expire_learners(vl_broker_t *self)
{
    int64_t now = vl_now_ns();
    for (int i = self->n_learners - 1; i >= 0; i--)
        if (now - self->learners[i].seen_ns > VLB_LEARNER_TIMEOUT_NS)
            vl_learners_remove(self, &self->learners[i],
                               self->learners[i].id_len ? "went silent" : "never said hello");
}

int vl_broker_run(vl_broker_t *self)
{
    // Connection events first (one over a bound is cut before it sends much), then control,
    // hellos and weights: control is never queued behind bulk data.
    zmq_pollitem_t items[2 * VLB_PORTS] = {{self->control, 0, ZMQ_POLLIN, 0},
                                           {self->router, 0, ZMQ_POLLIN, 0},
                                           {self->xsub, 0, ZMQ_POLLIN, 0},
                                           {self->xpub, 0, ZMQ_POLLIN, 0},
                                           {self->pull, 0, ZMQ_POLLIN, 0}};
    int (*handlers[2 * VLB_PORTS])(vl_broker_t *) = {
        vl_control_recv, vl_learners_recv, vl_lvc_recv_publication, vl_lvc_recv_subscription,
        vl_learners_recv_segment};
    int n = VLB_PORTS;
    for (int i = 0; i < self->n_monitors; i++, n++) {
        memmove(&items[1], &items[0], (size_t)n * sizeof *items);
        memmove(&handlers[1], &handlers[0], (size_t)n * sizeof *handlers);
        items[0] = (zmq_pollitem_t){self->monitors[i], 0, ZMQ_POLLIN, 0};
        handlers[0] = vl_conns_recv;
    }
    while (!atomic_load(&self->stop) && !self->shutdown) {
        if (zmq_poll(items, n, 250) < 0) {
            if (zmq_errno() == EINTR)
                continue;
            vl_error("poll failed: %s", zmq_strerror(zmq_errno()));
            return -1;
        }
        for (int i = 0; i < n; i++)
            for (int b = 0; (items[i].revents & ZMQ_POLLIN) && b < VLB_BATCH; b++)
                if (handlers[i](self) < 0)
                    break;
        s_expire_learners(self);
        s_tick(self);
    }
    return 0;
}

void vl_broker_stop(vl_broker_t *self)
{
    atomic_store(&self->stop, 1);
}

void vl_broker_destroy(vl_broker_t **self_p)
{
    vl_broker_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    vl_learners_free_queues(self);
    vl_lvc_free(self);
    vl_conns_unwatch(self);
    vl_recorder_destroy(&self->recorder);
    vl_inspect_destroy(&self->inspect);
    vl_roster_destroy(&self->roster);
    vl_roles_destroy(&self->roles);
    free(self->subs_by_fd);
    free(self->conn_by_fd);
    free(self->resent_by_fd);
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
