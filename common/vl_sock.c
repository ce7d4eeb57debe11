/*  vl_sock: socket creation with volley's options. */
#include "vl_sock.h"

#include <errno.h>
#include <stdio.h>
#include <zmq.h>

#include "vl_log.h"
#include "vl_opts.h"

#define S_HEARTBEAT_MS     1000 // a PING each second on an idle connection
#define S_HEARTBEAT_TTL_MS 6000 // the peer may drop us after this silence
// No traffic for this long after a PING: the peer is gone. Any inbound data resets it, and
// both ends ping, so a large message in flight does not count as silence.
#define S_HEARTBEAT_TIMEOUT_MS 4000
#define S_RECONNECT_MS         100  // first retry after a lost connection
#define S_RECONNECT_MAX_MS     5000 // doubling up to this

static const vl_curve_t *s_curve;

void vl_sock_set_curve(const vl_curve_t *curve)
{
    s_curve = curve;
}

int vl_sock_curve_on(void)
{
    return s_curve != NULL;
}

int vl_sock_client_curve(const char *cert, const char *broker_key, vl_curve_t **out)
{
    *out = NULL;
    if (!cert)
        return 0;
    char why[512];
    *out = vl_curve_client_new(cert, broker_key, why, sizeof why);
    if (!*out) {
        vl_error("CURVE: %s", why);
        return -1;
    }
    vl_info("CURVE on: our public key %s", vl_curve_public_txt(*out));
    vl_sock_set_curve(*out);
    return 0;
}

void vl_sock_client_curve_end(vl_curve_t **curve)
{
    if (curve && *curve && s_curve == *curve)
        s_curve = NULL;
    vl_curve_destroy(curve);
}

/* Sets an int option. */
static void s_set(void *s, int option, int value)
{
    zmq_setsockopt(s, option, &value, sizeof value);
}

enum { S_BIND = 1, S_LOSSY = 2 }; // s_open's flags

/* Creates a socket with the options and curve's identity (NULL: plain), then
   connects or binds it to endpoint (S_BIND). S_LOSSY: nothing is queued
   while there is no connection, and little while there is. Returns it, or
   NULL after logging. */
static void *s_open(const vl_curve_t *curve, void *ctx, int type, const char *endpoint, int flags,
                    int linger_ms, int64_t max_msg)
{
    int bind = flags & S_BIND;
    void *s = zmq_socket(ctx, type);
    int curve_ok = 1;
    if (s) {
        s_set(s, ZMQ_LINGER, linger_ms);
        zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max_msg, sizeof max_msg);
        s_set(s, ZMQ_HEARTBEAT_IVL, S_HEARTBEAT_MS);
        s_set(s, ZMQ_HEARTBEAT_TTL, S_HEARTBEAT_TTL_MS);
        s_set(s, ZMQ_HEARTBEAT_TIMEOUT, S_HEARTBEAT_TIMEOUT_MS);
        s_set(s, ZMQ_RECONNECT_IVL, S_RECONNECT_MS);
        s_set(s, ZMQ_RECONNECT_IVL_MAX, S_RECONNECT_MAX_MS);
        if (flags & S_LOSSY) {
            s_set(s, ZMQ_IMMEDIATE, 1);
            s_set(s, ZMQ_SNDHWM, 4);
        }
        curve_ok = !curve || vl_curve_apply(curve, s) == 0;
    }
    if (!s || !curve_ok || (bind ? zmq_bind(s, endpoint) : zmq_connect(s, endpoint)) != 0) {
        int err = zmq_errno();
        vl_error("cannot %s %s: %s", bind ? "listen on" : "connect to", endpoint,
                 zmq_strerror(err));
        if (s)
            zmq_close(s);
        errno = err; // the caller's reason (EADDRINUSE: the port is taken)
        return NULL;
    }
    return s;
}

void *vl_sock_connect_as(const vl_curve_t *curve, int lossy, void *ctx, int type,
                         const char *broker, int offset, int linger_ms, int64_t max_msg)
{
    char endpoint[300];
    if (vl_opt_endpoint("connect", broker, offset, endpoint, sizeof endpoint))
        return NULL;
    return s_open(curve ? curve : s_curve, ctx, type, endpoint, lossy ? S_LOSSY : 0, linger_ms,
                  max_msg);
}

void *vl_sock_connect(void *ctx, int type, const char *broker, int offset, int linger_ms,
                      int64_t max_msg)
{
    return vl_sock_connect_as(NULL, 0, ctx, type, broker, offset, linger_ms, max_msg);
}

void *vl_sock_connect_lossy(void *ctx, int type, const char *broker, int offset, int64_t max_msg)
{
    return vl_sock_connect_as(NULL, 1, ctx, type, broker, offset, 0, max_msg);
}

void *vl_sock_bind(void *ctx, int type, const char *host, int port, int linger_ms, int64_t max_msg)
{
    char endpoint[300];
    snprintf(endpoint, sizeof endpoint, "tcp://%s:%d", host, port);
    return s_open(s_curve, ctx, type, endpoint, S_BIND, linger_ms, max_msg);
}
