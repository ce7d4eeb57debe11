/*  vl_curve: CURVE security for volley's sockets, with czmq's zcert
    (certificates in zcert_save format: FILE holds the public key, FILE_secret
    the secret one) and zauth (the broker's authenticator: a directory of
    allowed public certificates, reloaded when it changes).
    The broker is the CURVE server on every port; actors, learners and
    monitors are clients that know the broker's public key. A CURVE server
    with no ZAP handler running accepts any key: we set ZMQ_ZAP_ENFORCE_DOMAIN
    (through libzmq: Debian's czmq has no setter for it), so that then every
    client is refused instead. */
#ifndef VL_CURVE_H
#define VL_CURVE_H

#include <stddef.h>

typedef struct vl_curve_s vl_curve_t;

/* ZAP domain the broker's sockets authenticate in. */
#define VL_CURVE_DOMAIN "volley"

/* Returns czmq's process-wide ZeroMQ context (zsys), with czmq's signal
   handling off: a broker with an authenticator must create its sockets in
   it, since zauth serves the context it lives in. NULL on failure. */
void *vl_curve_context(void);

/* Loads a client identity: its certificate (public and secret) and the
   broker's public certificate. NULL after writing why. */
vl_curve_t *vl_curve_client_new(const char *cert_path, const char *broker_cert_path, char *why,
                                size_t why_size);

/* Loads the broker's certificate and starts zauth allowing the public
   certificates in allow_dir, in vl_curve_context(). allow_dir NULL starts
   no authenticator: every client is then refused (tests prove it). NULL
   after writing why. */
vl_curve_t *vl_curve_server_new(const char *cert_path, const char *allow_dir, char *why,
                                size_t why_size);

/* Makes sock (not yet connected or bound) a CURVE client or server with
   this identity. Returns 0, or -1 if libzmq refused an option. */
int vl_curve_apply(const vl_curve_t *self, void *sock);

/* Returns the identity's public key, Z85 text (40 characters). */
const char *vl_curve_public_txt(const vl_curve_t *self);

/* Returns a new certificate pair (a czmq zcert_t, caller destroys) named
   name in its metadata, with its role and policies when not NULL, or NULL
   on no memory. */
void *vl_curve_cert_new(const char *name, const char *role, const char *policies);

/* Writes a new certificate pair to path and path_secret, named name in its
   metadata, with its role and (for a learner) the policies it may serve
   when not NULL (the broker reads them from its allow directory). Returns
   0, or -1 after writing why. */
int vl_curve_keygen(const char *path, const char *name, const char *role, const char *policies,
                    char *why, size_t why_size);

/* Stops the authenticator, frees the identity and nulls the pointer; safe
   on NULL and twice. */
void vl_curve_destroy(vl_curve_t **self_p);

/* Watches a client socket's handshakes and logs what the broker said: a
   refused key (at once, then at most every 30 s while it stays refused) and
   being let in after a refusal. libzmq gives up a connection whose key was
   refused; the watch connects again every 2 s, so a key allowed later gets
   in without a restart. */
typedef struct vl_curve_watch_s vl_curve_watch_t;

/* Starts watching sock (in ctx), naming it `what` in the log. NULL if the
   monitor cannot start (then nothing is logged). */
vl_curve_watch_t *vl_curve_watch_new(void *ctx, void *sock, const char *what);

/* Reads the handshake events waiting, logging and connecting again as
   above; never blocks. Call it from the socket's thread, each second will
   do. Returns 1 while the last handshake was refused, else 0. */
int vl_curve_watch_poll(vl_curve_watch_t *self);

/* Makes the watch log nothing (quiet 1) or log as above (0): a caller that
   reports a refusal itself reads it with vl_curve_watch_refusal. */
void vl_curve_watch_set_quiet(vl_curve_watch_t *self, int quiet);

/* Returns 1 while the last handshake was refused (a connection dropped
   mid-handshake: twice in a row), with what that means (the text the watch
   logs) in why; else 0 and why untouched. */
int vl_curve_watch_refusal(const vl_curve_watch_t *self, char *why, size_t why_size);

/* Stops watching; safe on NULL and twice. Call before closing the socket. */
void vl_curve_watch_destroy(vl_curve_watch_t **self_p);

#endif
