/*  vl_roles: who a peer of the broker is and what it may do. Under CURVE a
    peer is its key (ZAP's User-Id on every message) and its roles are what
    its certificate in the allow directory says (metadata `role`: actor,
    learner, admin or observer, comma-separated; `policies`: the policies a
    learner may serve, comma-separated, `*` for any). On an open broker a
    peer is its address (libzmq's Peer-Address on every message): addresses
    trusted (127.0.0.1, ::1 and this host's own interface addresses: processes
    on this machine; plus --trust CIDRs) may do everything, others may act
    and observe only. */
#ifndef VL_ROLES_H
#define VL_ROLES_H

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#define VL_ROLE_ACTOR    1u // push segments, beat, subscribe to weights
#define VL_ROLE_LEARNER  2u // hello/credit/spec, publish weights and stats, of its policies
#define VL_ROLE_ADMIN    4u // pause, resume, shutdown
#define VL_ROLE_OBSERVER 8u // status, subscribe to weights and stats
#define VL_ROLE_ALL      15u
#define VL_PEER_MAX      64  // a peer's name: a Z85 key (40) or an IP address text
#define VL_POLICIES_MAX  256 // a learner key's policy list text

typedef struct vl_roles_s vl_roles_t;

/* A peer as one of its messages names it. */
typedef struct {
    char who[VL_PEER_MAX];          // key or address ("?" when the message names none)
    unsigned roles;                 // VL_ROLE_* bits
    char policies[VL_POLICIES_MAX]; // learner: "*" or a comma-separated list
} vl_peer_t;

/* Creates the table: allow_dir NULL for an open broker. Returns NULL on no
   memory. */
vl_roles_t *vl_roles_new(const char *allow_dir);

/* Trusts the peers of an open broker in cidr ("10.0.0.0/8", "::1/128").
   Returns 0, or -1 when it does not parse. */
int vl_roles_trust(vl_roles_t *self, const char *cidr);

/* Names the peer that sent msg (a message just received) into *peer. */
void vl_roles_peer(vl_roles_t *self, zmq_msg_t *msg, vl_peer_t *peer);

/* Returns 1 under CURVE (peers are keys with roles), 0 on an open broker. */
int vl_roles_secured(const vl_roles_t *self);

/* Returns 1 if peer has role (any of the bits) and, for VL_ROLE_LEARNER
   with a non-NULL policy, may serve policy; else 0. */
int vl_peer_may(const vl_peer_t *peer, unsigned role, const char *policy);

/* Returns 1 the first time (per peer, for up to 256 peers) a refusal of
   this peer should be logged, else 0. */
int vl_roles_log_once(vl_roles_t *self, const vl_peer_t *peer);

/* Re-reads the allow directory when it changed (at most once a second). */
void vl_roles_tick(vl_roles_t *self, int64_t now_ns);

/* Parses a role list ("actor,admin") into VL_ROLE_* bits; 0 if a name is unknown. */
unsigned vl_roles_parse(const char *list);

/* Frees the table and nulls the pointer; safe on NULL and twice. */
void vl_roles_destroy(vl_roles_t **self_p);

#endif
