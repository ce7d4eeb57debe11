/*  vl_curve_test: CURVE over real loopback sockets. An allowed client's
    message arrives; a client whose key is not allowed delivers nothing and
    its watch reports the refusal; once its key is added to the allowed
    directory the same client gets in (the broker re-reads the directory, the
    watch connects again: no restart of either); a CURVE
    server with no authenticator running refuses even a valid key. */
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/vl_test.h"
#include "vl_curve.h"
#include "vl_log.h"

static char s_dir[64];

/* Makes a key pair DIR/name.cert, and a public copy in DIR/allowed when allow. */
static int s_key(const char *name, int allow)
{
    char path[256], pub[256], why[256];
    snprintf(path, sizeof path, "%s/%s.cert", s_dir, name);
    if (vl_curve_keygen(path, name, NULL, NULL, why, sizeof why) != 0)
        return -1;
    if (!allow)
        return 0;
    snprintf(pub, sizeof pub, "%s/allowed/%s.cert", s_dir, name);
    zcert_t *c = zcert_load(path);
    int rc = c ? zcert_save_public(c, pub) : -1;
    zcert_destroy(&c);
    return rc;
}

/* Returns the path of a certificate in the test directory. */
static const char *s_path(const char *name, char *buf)
{
    snprintf(buf, 256, "%s/%s.cert", s_dir, name);
    return buf;
}

/* Binds a CURVE PULL server in ctx on 127.0.0.1; writes its endpoint. */
static void *s_server(void *ctx, const vl_curve_t *id, char *endpoint, size_t size)
{
    void *s = zmq_socket(ctx, ZMQ_PULL);
    int timeout = 1500;
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    if (vl_curve_apply(id, s) != 0 || zmq_bind(s, "tcp://127.0.0.1:*") != 0)
        return NULL;
    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, endpoint, &size);
    return s;
}

/* A client: its own context, a PUSH with identity `name`, connected. */
typedef struct {
    void *ctx, *push;
    vl_curve_t *id;
    vl_curve_watch_t *watch;
} s_client_t;

static int s_client_open(s_client_t *c, const char *name, const char *endpoint)
{
    char cert[256], broker[256], why[256];
    c->ctx = zmq_ctx_new();
    c->id = vl_curve_client_new(s_path(name, cert), s_path("broker", broker), why, sizeof why);
    c->push = zmq_socket(c->ctx, ZMQ_PUSH);
    int ivl = 100, linger = 0;
    zmq_setsockopt(c->push, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(c->push, ZMQ_RECONNECT_IVL_MAX, &ivl, sizeof ivl);
    zmq_setsockopt(c->push, ZMQ_LINGER, &linger, sizeof linger);
    if (!c->id || vl_curve_apply(c->id, c->push) != 0)
        return -1;
    c->watch = vl_curve_watch_new(c->ctx, c->push, name);
    if (!c->watch || zmq_connect(c->push, endpoint) != 0)
        return -1;
    return zmq_send(c->push, name, strlen(name), ZMQ_DONTWAIT) == (int)strlen(name) ? 0 : -1;
}

static void s_client_close(s_client_t *c)
{
    vl_curve_watch_destroy(&c->watch);
    zmq_close(c->push);
    vl_curve_destroy(&c->id);
    zmq_ctx_term(c->ctx);
}

/* Receives one message (1.5 s timeout) into buf. Returns its size or -1. */
static int s_recv(void *s, char *buf, size_t size)
{
    int n = zmq_recv(s, buf, size - 1, 0);
    if (n >= 0)
        buf[n < (int)size - 1 ? n : (int)size - 1] = 0;
    return n;
}

/* Polls a client's watch for up to 3 s until it reports a refusal. */
static int s_refused(s_client_t *c)
{
    for (int i = 0; i < 30; i++) {
        if (vl_curve_watch_poll(c->watch))
            return 1;
        usleep(100 * 1000);
    }
    return 0;
}

static void test_allowed_refused_then_allowed(void)
{
    char cert[256], allowed[256], endpoint[256], buf[64], why[256];
    snprintf(allowed, sizeof allowed, "%s/allowed", s_dir);
    vl_curve_t *server = vl_curve_server_new(s_path("broker", cert), allowed, why, sizeof why);
    VL_CHECK(server);
    void *pull = s_server(vl_curve_context(), server, endpoint, sizeof endpoint);
    VL_CHECK(pull);
    s_client_t good = {0}, bad = {0};
    VL_CHECK(s_client_open(&good, "good", endpoint) == 0);
    VL_CHECK(s_recv(pull, buf, sizeof buf) > 0 && strcmp(buf, "good") == 0);
    VL_CHECK(s_client_open(&bad, "stranger", endpoint) == 0);
    VL_CHECK(s_recv(pull, buf, sizeof buf) < 0); // refused: nothing arrives
    VL_CHECK(s_refused(&bad));
    VL_CHECK(!vl_curve_watch_poll(good.watch));
    // Let the stranger in: copy its public certificate into the directory. zauth notices a
    // change by the directory's modification time, in whole seconds: wait for the next one.
    sleep(1);
    char path[256], pub[256];
    zcert_t *c = zcert_load(s_path("stranger", path));
    snprintf(pub, sizeof pub, "%s/allowed/stranger.cert", s_dir);
    VL_CHECK(c && zcert_save_public(c, pub) == 0);
    zcert_destroy(&c);
    // libzmq dropped the refused connection; the watch connects again (every 2 s) and the
    // same socket gets in, no restart.
    int got = -1;
    for (int i = 0; i < 60 && got < 0; i++) {
        vl_curve_watch_poll(bad.watch);
        zmq_send(bad.push, "again", 5, ZMQ_DONTWAIT);
        got = zmq_recv(pull, buf, sizeof buf - 1, ZMQ_DONTWAIT);
        usleep(100 * 1000);
    }
    VL_CHECK(got == 5);
    buf[got] = 0;
    VL_CHECK(strcmp(buf, "again") == 0);
    VL_CHECK(!vl_curve_watch_poll(bad.watch));
    s_client_close(&good);
    s_client_close(&bad);
    zmq_close(pull);
    vl_curve_destroy(&server);
}

static void test_no_authenticator_refuses_all(void)
{
    char cert[256], endpoint[256], buf[64], why[256];
    vl_curve_t *server = vl_curve_server_new(s_path("broker", cert), NULL, why, sizeof why);
    VL_CHECK(server);
    void *ctx = zmq_ctx_new(); // no zauth in this context
    void *pull = s_server(ctx, server, endpoint, sizeof endpoint);
    VL_CHECK(pull);
    s_client_t good = {0};
    VL_CHECK(s_client_open(&good, "good", endpoint) == 0);
    VL_CHECK(s_recv(pull, buf, sizeof buf) < 0);
    VL_CHECK(s_recv(pull, buf, sizeof buf) < 0);
    s_client_close(&good);
    zmq_close(pull);
    zmq_ctx_term(ctx);
    vl_curve_destroy(&server);
}

static void test_bad_certificates(void)
{
    char why[256], cert[256];
    VL_CHECK(!vl_curve_client_new("/nonexistent.cert", s_path("broker", cert), why, sizeof why));
    VL_CHECK(strstr(why, "cannot read"));
    char pub_only[256];
    snprintf(pub_only, sizeof pub_only, "%s/allowed/good.cert", s_dir); // no _secret beside it
    VL_CHECK(!vl_curve_client_new(pub_only, s_path("broker", cert), why, sizeof why));
    VL_CHECK(strstr(why, "no secret key"));
    VL_CHECK(!vl_curve_server_new(s_path("broker", cert), "/nonexistent-dir", why, sizeof why));
}

int main(void)
{
    vl_log_init("curve_test", VL_LOG_WARN);
    snprintf(s_dir, sizeof s_dir, "/tmp/vl_curve_test.XXXXXX");
    if (!mkdtemp(s_dir))
        return 1;
    char allowed[128];
    snprintf(allowed, sizeof allowed, "%s/allowed", s_dir);
    zsys_dir_create(allowed);
    if (s_key("broker", 0) || s_key("good", 1) || s_key("stranger", 0))
        return 1;
    VL_RUN(test_bad_certificates);
    VL_RUN(test_allowed_refused_then_allowed);
    VL_RUN(test_no_authenticator_refuses_all);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", s_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", s_dir);
    return VL_DONE();
}
