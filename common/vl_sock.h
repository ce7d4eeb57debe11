/*  vl_sock: creating volley's ZeroMQ sockets the one way they are all made:
    linger set, incoming messages capped in size, heartbeats on (a frozen or
    vanished peer is dropped within seconds), reconnecting with backoff, CURVE
    when the process has an identity, connected to a broker port or bound to
    one, with a logged reason on failure. */
#ifndef VL_SOCK_H
#define VL_SOCK_H

#include <stdint.h>

#include "vl_curve.h"

/* Makes every socket this process creates from now on use curve (NULL:
   none). A process has one identity: set it once, before its sockets. */
void vl_sock_set_curve(const vl_curve_t *curve);

/* Returns 1 if this process's sockets use CURVE. */
int vl_sock_curve_on(void);

/* For a client process (actor, learner, monitor): loads --cert and
   --broker-key when given and makes every socket from now on use them.
   Returns 0 (*out NULL when not given), or -1 after logging why. The caller
   destroys *out after its sockets. */
int vl_sock_client_curve(const char *cert, const char *broker_key, vl_curve_t **out);

/* Undoes vl_sock_client_curve after the process's sockets are closed: no
   socket made later uses the identity, which is then destroyed (*curve
   nulled; NULL is fine). */
void vl_sock_client_curve_end(vl_curve_t **curve);

/* Creates a socket of type with linger_ms and max_msg (bytes; larger
   incoming messages are refused by libzmq) and connects it to base port +
   offset of broker ("HOST[:PORT]"). Returns it, or NULL after logging why. */
void *vl_sock_connect(void *ctx, int type, const char *broker, int offset, int linger_ms,
                      int64_t max_msg);

/* Connects like vl_sock_connect (linger 0), for one-way news that is stale
   by the time a broker comes back (an actor's beats): nothing is queued
   while there is no connection, and at most 4 messages while there is;
   sends beyond that fail with EAGAIN. */
void *vl_sock_connect_lossy(void *ctx, int type, const char *broker, int offset, int64_t max_msg);

/* Connects like vl_sock_connect (lossy: like vl_sock_connect_lossy) with
   curve's identity, or the process's when curve is NULL: an actor the
   library opens carries its own. */
void *vl_sock_connect_as(const vl_curve_t *curve, int lossy, void *ctx, int type,
                         const char *broker, int offset, int linger_ms, int64_t max_msg);

/* Creates a socket like vl_sock_connect and binds it to tcp://host:port.
   Returns it, or NULL after logging why, errno saying it (EADDRINUSE: the
   port is in use). */
void *vl_sock_bind(void *ctx, int type, const char *host, int port, int linger_ms, int64_t max_msg);

#endif
