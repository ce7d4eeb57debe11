/*  vl_sock: creating volley's ZeroMQ sockets the one way they are all made:
    linger set, incoming messages capped in size, connected to a broker port
    or bound to one, with a logged reason on failure. */
#ifndef VL_SOCK_H
#define VL_SOCK_H

#include <stdint.h>

/* Creates a socket of type with linger_ms and max_msg (bytes; larger
   incoming messages are refused by libzmq) and connects it to base port +
   offset of broker ("HOST[:PORT]"). Returns it, or NULL after logging why. */
void *vl_sock_connect(void *ctx, int type, const char *broker, int offset, int linger_ms,
                      int64_t max_msg);

/* Creates a socket like vl_sock_connect and binds it to tcp://host:port.
   Returns it, or NULL after logging why (e.g. the port is in use). */
void *vl_sock_bind(void *ctx, int type, const char *host, int port, int linger_ms, int64_t max_msg);

#endif
