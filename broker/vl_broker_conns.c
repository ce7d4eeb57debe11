/*  vl_broker_conns: every port's connections watched through libzmq's
    socket monitor: each one accepted is counted by its source address, and
    one over --max-conns-per-addr or --max-conns is cut at once (shutdown of
    its descriptor: libzmq sees it end and frees it), before its handshake
    or its first message. Under CURVE too: the cut comes before the key is
    known. Memory freed by connections that ended is handed back to the
    system (glibc keeps it otherwise). */
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_proc.h"
#include "vl_broker_engine.h"

// Freed memory is handed back once a second for this long after a connection ended: libzmq
// frees a connection's pipes and subscriptions when the broker next reads the socket.
#define S_TRIM_FOR_NS 3000000000LL
#define S_TRIM_GAP_NS 1000000000LL

int vl_conns_watch(vl_broker_t *self, void *const *socks, int n)
{
    self->conns = vl_conns_new(self->max_conns, self->max_conns_per_addr, self->n_fds);
    if (!self->conns || n > VLB_PORTS)
        return -1;
    for (int i = 0; i < n; i++) {
        char endpoint[64];
        snprintf(endpoint, sizeof endpoint, "inproc://vl-conns-%p-%d", (void *)self, i);
        int unbounded = 0; // events are a few bytes; one lost would leave a count behind
        if (zmq_socket_monitor(socks[i], endpoint, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) !=
            0)
            goto err;
        self->monitors[i] = zmq_socket(self->ctx, ZMQ_PAIR);
        if (!self->monitors[i] ||
            zmq_setsockopt(self->monitors[i], ZMQ_RCVHWM, &unbounded, sizeof unbounded) != 0 ||
            zmq_connect(self->monitors[i], endpoint) != 0)
            goto err;
        self->n_monitors = i + 1;
    }
    return 0;
err:
    vl_error("cannot watch connections: %s", zmq_strerror(zmq_errno()));
    return -1;
}

/* Counts a connection accepted on descriptor fd by port `port`, or cuts it
   and counts the refusal (logged once per address). */
static void s_accepted(vl_broker_t *self, int port, int fd)
{
    struct sockaddr_storage addr;
    socklen_t len = sizeof addr;
    memset(&addr, 0, sizeof addr);
    if (getpeername(fd, (struct sockaddr *)&addr, &len) != 0)
        return; // gone already: its close follows
    vl_conn_verdict_t v = vl_conns_accept(self->conns, fd, port, &addr);
    if (v == VL_CONN_OK)
        return;
    shutdown(fd, SHUT_RDWR);
    vl_peer_t peer = {.roles = 0};
    vl_conns_addr_text(&addr, peer.who, sizeof peer.who);
    vl_books_refuse_peer(self, VLB_CONNECTION,
                         v == VL_CONN_PER_ADDR ? VLB_DROP_CONNS_ADDR : VLB_DROP_CONNS, &peer, NULL);
}

/* Reads one event from port's monitor. Returns 0, or -1 when none is waiting. */
static int s_recv_event(vl_broker_t *self, int port)
{
    zmq_msg_t head, where;
    zmq_msg_init(&head);
    zmq_msg_init(&where);
    if (zmq_msg_recv(&head, self->monitors[port], ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&head);
        return -1;
    }
    if (zmq_msg_more(&head))
        zmq_msg_recv(&where, self->monitors[port], 0); // the endpoint: not needed
    uint16_t event = 0;
    uint32_t fd = 0;
    if (zmq_msg_size(&head) == 6) {
        memcpy(&event, zmq_msg_data(&head), 2);
        memcpy(&fd, (uint8_t *)zmq_msg_data(&head) + 2, 4);
    }
    if (event == ZMQ_EVENT_ACCEPTED)
        s_accepted(self, port, (int)fd);
    else if (event == ZMQ_EVENT_DISCONNECTED && vl_conns_close(self->conns, (int)fd, port))
        self->trim_until_ns = vl_now_ns() + S_TRIM_FOR_NS;
    zmq_msg_close(&head);
    zmq_msg_close(&where);
    return 0;
}

int vl_conns_recv(vl_broker_t *self)
{
    for (int i = 0; i < self->n_monitors; i++)
        if (s_recv_event(self, i) == 0)
            return 0;
    return -1;
}

void vl_conns_tick(vl_broker_t *self, int64_t now_ns)
{
    if (now_ns > self->trim_until_ns || now_ns - self->trimmed_ns < S_TRIM_GAP_NS)
        return;
    malloc_trim(0);
    self->trimmed_ns = now_ns;
}

void vl_conns_unwatch(vl_broker_t *self)
{
    for (int i = 0; i < self->n_monitors; i++)
        zmq_close(self->monitors[i]);
    self->n_monitors = 0;
    vl_conns_destroy(&self->conns);
}
