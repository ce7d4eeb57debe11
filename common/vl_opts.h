/*  vl_opts: checked parsing of command-line values and broker addresses.
    Each parser prints a clear message naming the option on bad input. */
#ifndef VL_OPTS_H
#define VL_OPTS_H

#include <stddef.h>

#define VL_DEFAULT_PORT 7600

/* Offsets from the broker's base port: what listens where. */
enum {
    VL_PORT_SEGMENTS = 0,    // broker PULL, actors PUSH segments
    VL_PORT_LEARNERS = 1,    // broker ROUTER, learners DEALER (hello, segments)
    VL_PORT_WEIGHTS_IN = 2,  // broker XSUB, learners PUB weights and stats
    VL_PORT_WEIGHTS_OUT = 3, // broker XPUB, actors and monitors SUB
    VL_PORT_COUNT = 4
};

/* Topic of learner progress reports on the weights stream; policy ids may not
   start with '~', so it never collides with a policy's weights. */
#define VL_STATS_TOPIC "~stats"

/* Parses a whole decimal integer in [lo, hi] into *out. Returns 0, or -1
   after printing "volley <cmd>: --<name> ..." to stderr. */
int vl_opt_long(const char *cmd, const char *name, const char *text, long lo, long hi, long *out);

/* Parses a finite float in [lo, hi] into *out. Returns 0, or -1 after
   printing why. */
int vl_opt_float(const char *cmd, const char *name, const char *text, double lo, double hi,
                 float *out);

/* Builds "tcp://HOST:PORT+offset" from "HOST[:PORT]" (default port
   VL_DEFAULT_PORT). Returns 0, or -1 after printing why. */
int vl_opt_endpoint(const char *cmd, const char *host_port, int offset, char *out, size_t size);

/* Checks a policy id: 1..63 printable bytes, no spaces, not starting with
   '~'. Returns 0, or -1 after printing why. */
int vl_opt_policy(const char *cmd, const char *policy);

/* Finds a base port on 127.0.0.1 with VL_PORT_COUNT consecutive free TCP
   ports, trying from `from` upward. Returns it, or -1. */
int vl_free_base_port(int from);

#endif
