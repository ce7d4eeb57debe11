/*  vl_curve: certificates, the authenticator, socket options, and a monitor
    of client handshakes. */
#include "vl_curve.h"

#include <czmq.h>
#include <stdio.h>
#include <string.h>

#include "vl_log.h"

#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93 // libzmq 4.3 knows it; its header hides it among the drafts
#endif
#define S_REFUSED_EVERY_NS 30000000000LL // a lasting refusal is logged again this often
// libzmq gives up a connection whose key the server refused (ZAP 400) and does not reconnect:
// the watch connects again this often, so a key allowed later gets in without a restart.
#define S_RETRY_NS 2000000000LL

struct vl_curve_s {
    zcert_t *cert;
    int server;
    uint8_t broker_key[32]; // clients: the server's public key
    zactor_t *auth;         // server: the authenticator, or NULL
};

struct vl_curve_watch_s {
    void *sock; // watched
    void *pair; // the monitor's events
    char what[64];
    char endpoint[256]; // what sock is connected to, to connect again after a refusal
    int refused;
    int quiet;      // log nothing: the caller reports refusals
    uint16_t event; // the last refused handshake's event
    uint32_t value; // and its value (the ZAP status)
    int failures;   // handshakes failed in a row
    int64_t logged_ns, retried_ns;
};

void *vl_curve_context(void)
{
    zsys_handler_set(NULL); // SIGINT/SIGTERM are ours (vl_proc)
    return zsys_init();
}

/* Loads a certificate, checking that it has the secret key when need_secret. */
static zcert_t *s_load(const char *path, int need_secret, char *why, size_t n)
{
    zcert_t *cert = path ? zcert_load(path) : NULL;
    if (!cert) {
        snprintf(why, n, "cannot read the certificate %s", path ? path : "(none given)");
        return NULL;
    }
    static const uint8_t zero[32];
    if (need_secret && memcmp(zcert_secret_key(cert), zero, 32) == 0) {
        snprintf(why, n, "%s has no secret key (%s_secret missing)", path, path);
        zcert_destroy(&cert);
    }
    return cert;
}

vl_curve_t *vl_curve_client_new(const char *cert_path, const char *broker_cert_path, char *why,
                                size_t why_size)
{
    zcert_t *broker = s_load(broker_cert_path, 0, why, why_size);
    zcert_t *cert = broker ? s_load(cert_path, 1, why, why_size) : NULL;
    vl_curve_t *self = cert ? calloc(1, sizeof *self) : NULL;
    if (self) {
        self->cert = cert;
        memcpy(self->broker_key, zcert_public_key(broker), 32);
    } else {
        zcert_destroy(&cert);
    }
    zcert_destroy(&broker);
    return self;
}

vl_curve_t *vl_curve_server_new(const char *cert_path, const char *allow_dir, char *why,
                                size_t why_size)
{
    if (allow_dir && !zsys_file_exists(allow_dir)) {
        snprintf(why, why_size, "the allowed-keys directory %s does not exist", allow_dir);
        return NULL;
    }
    zcert_t *cert = s_load(cert_path, 1, why, why_size);
    vl_curve_t *self = cert ? calloc(1, sizeof *self) : NULL;
    if (!self) {
        zcert_destroy(&cert);
        return NULL;
    }
    self->cert = cert;
    self->server = 1;
    if (allow_dir && vl_curve_context()) {
        self->auth = zactor_new(zauth, NULL);
        if (self->auth) {
            zstr_sendx(self->auth, "CURVE", allow_dir, NULL);
            zsock_wait(self->auth);
        }
    }
    if (allow_dir && !self->auth) {
        snprintf(why, why_size, "cannot start the authenticator");
        vl_curve_destroy(&self);
    }
    return self;
}

int vl_curve_apply(const vl_curve_t *self, void *sock)
{
    zcert_apply(self->cert, sock);
    if (!self->server)
        return zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, self->broker_key, 32);
    int one = 1;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, VL_CURVE_DOMAIN, strlen(VL_CURVE_DOMAIN)) != 0)
        return -1;
    // Without this a CURVE server with no ZAP handler lets every key in.
    return zmq_setsockopt(sock, ZMQ_ZAP_ENFORCE_DOMAIN, &one, sizeof one);
}

const char *vl_curve_public_txt(const vl_curve_t *self)
{
    return zcert_public_txt(self->cert);
}

void *vl_curve_cert_new(const char *name, const char *role, const char *policies)
{
    zcert_t *cert = zcert_new();
    if (!cert)
        return NULL;
    zcert_set_meta(cert, "name", "%s", name);
    zcert_set_meta(cert, "made-by", "volley keygen");
    if (role)
        zcert_set_meta(cert, "role", "%s", role);
    if (policies)
        zcert_set_meta(cert, "policies", "%s", policies);
    return cert;
}

int vl_curve_keygen(const char *path, const char *name, const char *role, const char *policies,
                    char *why, size_t why_size)
{
    zcert_t *cert = vl_curve_cert_new(name, role, policies);
    if (!cert) {
        snprintf(why, why_size, "cannot make a key pair");
        return -1;
    }
    int rc = zcert_save(cert, path);
    if (rc != 0)
        snprintf(why, why_size, "cannot write %s or %s_secret", path, path);
    zcert_destroy(&cert);
    return rc == 0 ? 0 : -1;
}

void vl_curve_destroy(vl_curve_t **self_p)
{
    vl_curve_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    zactor_destroy(&self->auth);
    zcert_destroy(&self->cert);
    free(self);
    *self_p = NULL;
}

vl_curve_watch_t *vl_curve_watch_new(void *ctx, void *sock, const char *what)
{
    static int n;
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "inproc://vl-curve-watch-%d",
             __atomic_add_fetch(&n, 1, __ATOMIC_RELAXED));
    // A broker key that is not the broker's shows as NO_DETAIL: the broker cannot read our
    // hello and drops the connection, saying nothing.
    int events = ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                 ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_SUCCEEDED;
    vl_curve_watch_t *self = calloc(1, sizeof *self);
    if (!self || zmq_socket_monitor(sock, endpoint, events) != 0)
        goto err;
    self->pair = zmq_socket(ctx, ZMQ_PAIR);
    if (!self->pair || zmq_connect(self->pair, endpoint) != 0)
        goto err;
    snprintf(self->what, sizeof self->what, "%s", what);
    self->sock = sock;
    return self;
err:
    if (self && self->pair)
        zmq_close(self->pair);
    if (self)
        zmq_socket_monitor(sock, NULL, 0);
    free(self);
    return NULL;
}

/* Writes what the last refused handshake means into why. */
static void s_refusal_text(const vl_curve_watch_t *self, char *why, size_t size)
{
    if (self->event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        snprintf(why, size,
                 "%s: the broker refused our key (ZAP status %u): nothing is delivered until our "
                 "public certificate is in the broker's --allow directory",
                 self->what, self->value);
    else
        snprintf(why, size,
                 "%s: the CURVE handshake with the broker failed (is --broker-key the broker's "
                 "public certificate?)",
                 self->what);
}

/* Logs one handshake event. */
static void s_note(vl_curve_watch_t *self, uint16_t event, uint32_t value)
{
    int64_t now = vl_now_ns();
    if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        if (self->refused && !self->quiet)
            vl_info("%s: the broker accepts our key now", self->what);
        self->refused = 0;
        self->failures = 0;
        return;
    }
    self->failures++;
    int first = !self->refused;
    self->refused = 1;
    self->event = event;
    self->value = value;
    if (first)
        self->retried_ns = now;
    if (self->quiet || (!first && now - self->logged_ns < S_REFUSED_EVERY_NS))
        return;
    self->logged_ns = now;
    char text[512];
    s_refusal_text(self, text, sizeof text);
    vl_error("%s%s", text, event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? "" : "; retrying");
}

/* While refused, connects again every S_RETRY_NS. */
static void s_retry(vl_curve_watch_t *self)
{
    int64_t now = vl_now_ns();
    if (!self->refused || now - self->retried_ns < S_RETRY_NS)
        return;
    size_t len = sizeof self->endpoint;
    if (!self->endpoint[0] && zmq_getsockopt(self->sock, ZMQ_LAST_ENDPOINT, self->endpoint, &len))
        self->endpoint[0] = 0;
    if (!self->endpoint[0])
        return;
    self->retried_ns = now;
    zmq_disconnect(self->sock, self->endpoint);
    zmq_connect(self->sock, self->endpoint);
}

int vl_curve_watch_poll(vl_curve_watch_t *self)
{
    if (!self)
        return 0;
    s_retry(self);

    zmq_msg_t m;
    zmq_msg_init(&m);
    while (zmq_msg_recv(&m, self->pair, ZMQ_DONTWAIT) >= 0) {
        // Frame 1: uint16 event, uint32 value; frame 2: the endpoint.
        uint16_t event = 0;
        uint32_t value = 0;
        if (zmq_msg_size(&m) >= 6) {
            memcpy(&event, zmq_msg_data(&m), 2);
            memcpy(&value, (uint8_t *)zmq_msg_data(&m) + 2, 4);
        }
        while (zmq_msg_more(&m) && zmq_msg_recv(&m, self->pair, 0) >= 0)
            ;
        s_note(self, event, value);
    }
    zmq_msg_close(&m);
    return self->refused;
}

void vl_curve_watch_set_quiet(vl_curve_watch_t *self, int quiet)
{
    if (self)
        self->quiet = quiet;
}

int vl_curve_watch_refusal(const vl_curve_watch_t *self, char *why, size_t why_size)
{
    // A connection dropped mid-handshake once may be a broker going down: twice is the key.
    if (!self || !self->refused ||
        (self->event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL && self->failures < 2))
        return 0;
    s_refusal_text(self, why, why_size);
    return 1;
}

void vl_curve_watch_destroy(vl_curve_watch_t **self_p)
{
    vl_curve_watch_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    zmq_socket_monitor(self->sock, NULL, 0);
    zmq_close(self->pair);
    free(self);
    *self_p = NULL;
}
