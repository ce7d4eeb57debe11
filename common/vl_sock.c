/*  vl_sock: socket creation with volley's options. */
#include "vl_sock.h"

#include <stdio.h>
#include <zmq.h>

#include "vl_log.h"
#include "vl_opts.h"

/* Creates a socket with the options, then connects or binds it to
   endpoint. Returns it, or NULL after logging why. */
static void *s_open(void *ctx, int type, const char *endpoint, int bind, int linger_ms,
                    int64_t max_msg)
{
    void *s = zmq_socket(ctx, type);
    if (s) {
        zmq_setsockopt(s, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
        zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max_msg, sizeof max_msg);
    }
    if (!s || (bind ? zmq_bind(s, endpoint) : zmq_connect(s, endpoint)) != 0) {
        vl_error("cannot %s %s: %s", bind ? "listen on" : "connect to", endpoint,
                 zmq_strerror(zmq_errno()));
        if (s)
            zmq_close(s);
        return NULL;
    }
    return s;
}

void *vl_sock_connect(void *ctx, int type, const char *broker, int offset, int linger_ms,
                      int64_t max_msg)
{
    char endpoint[300];
    if (vl_opt_endpoint("connect", broker, offset, endpoint, sizeof endpoint))
        return NULL;
    return s_open(ctx, type, endpoint, 0, linger_ms, max_msg);
}

void *vl_sock_bind(void *ctx, int type, const char *host, int port, int linger_ms, int64_t max_msg)
{
    char endpoint[300];
    snprintf(endpoint, sizeof endpoint, "tcp://%s:%d", host, port);
    return s_open(ctx, type, endpoint, 1, linger_ms, max_msg);
}
