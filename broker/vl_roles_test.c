/*  vl_roles_test: role lists, a learner's policies, CIDRs, and peers over
    real loopback connections: 127.0.0.1 trusted, 127.0.0.2 not until
    trusted by a range; a message that names no peer is trusted with nothing
    more than an actor's and an observer's roles. */
#include <string.h>
#include <zmq.h>

#include "../tests/vl_test.h"
#include "vl_roles.h"

static void test_parse_roles(void)
{
    VL_CHECK(vl_roles_parse("actor") == VL_ROLE_ACTOR);
    VL_CHECK(vl_roles_parse("learner,admin") == (VL_ROLE_LEARNER | VL_ROLE_ADMIN));
    VL_CHECK(vl_roles_parse("monitor") == VL_ROLE_OBSERVER);
    VL_CHECK(vl_roles_parse("actor,root") == 0); // an unknown name gives nothing
    VL_CHECK(vl_roles_parse("") == 0);
}

static void test_learner_policies(void)
{
    vl_peer_t p = {.who = "k", .roles = VL_ROLE_LEARNER, .policies = "alpha,beta"};
    VL_CHECK(vl_peer_may(&p, VL_ROLE_LEARNER, "alpha"));
    VL_CHECK(vl_peer_may(&p, VL_ROLE_LEARNER, "beta"));
    VL_CHECK(!vl_peer_may(&p, VL_ROLE_LEARNER, "alph"));
    VL_CHECK(!vl_peer_may(&p, VL_ROLE_LEARNER, "alphabet"));
    VL_CHECK(!vl_peer_may(&p, VL_ROLE_ADMIN, NULL));
    snprintf(p.policies, sizeof p.policies, "*");
    VL_CHECK(vl_peer_may(&p, VL_ROLE_LEARNER, "anything"));
}

static void test_bad_cidrs(void)
{
    vl_roles_t *r = vl_roles_new(NULL);
    VL_CHECK(r);
    VL_CHECK(vl_roles_trust(r, "10.0.0.0/8") == 0);
    VL_CHECK(vl_roles_trust(r, "fd00::/8") == 0);
    VL_CHECK(vl_roles_trust(r, "10.0.0.0/33") != 0);
    VL_CHECK(vl_roles_trust(r, "10.0.0/8") != 0);
    VL_CHECK(vl_roles_trust(r, "10.0.0.0/") != 0);
    VL_CHECK(vl_roles_trust(r, "/8") != 0);
    VL_CHECK(vl_roles_trust(r, "host.example/8") != 0);
    vl_roles_destroy(&r);
    vl_roles_destroy(&r); // safe twice
}

/* Sends one message from src (NULL: the default) to a PULL bound on
   127.0.0.1 and names its peer with roles. */
static void s_peer_from(vl_roles_t *roles, const char *src, vl_peer_t *peer)
{
    void *ctx = zmq_ctx_new();
    void *pull = zmq_socket(ctx, ZMQ_PULL), *push = zmq_socket(ctx, ZMQ_PUSH);
    char ep[128], to[200];
    size_t len = sizeof ep;
    zmq_bind(pull, "tcp://127.0.0.1:*");
    zmq_getsockopt(pull, ZMQ_LAST_ENDPOINT, ep, &len);
    snprintf(to, sizeof to, "tcp://%s%s%s", src ? src : "", src ? ":0;" : "", ep + 6);
    zmq_connect(push, to);
    zmq_send(push, "x", 1, 0);
    zmq_msg_t m;
    zmq_msg_init(&m);
    zmq_msg_recv(&m, pull, 0);
    vl_roles_peer(roles, &m, peer);
    zmq_msg_close(&m);
    int zero = 0;
    zmq_setsockopt(push, ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(push);
    zmq_close(pull);
    zmq_ctx_term(ctx);
}

static void test_open_broker_peers(void)
{
    vl_roles_t *r = vl_roles_new(NULL);
    vl_peer_t p;
    s_peer_from(r, NULL, &p);
    VL_CHECK(strcmp(p.who, "127.0.0.1") == 0 && p.roles == VL_ROLE_ALL);
    s_peer_from(r, "127.0.0.2", &p);
    VL_CHECK(strcmp(p.who, "127.0.0.2") == 0);
    VL_CHECK(p.roles == (VL_ROLE_ACTOR | VL_ROLE_OBSERVER));
    VL_CHECK(!vl_peer_may(&p, VL_ROLE_LEARNER, "default") && !vl_peer_may(&p, VL_ROLE_ADMIN, NULL));
    VL_CHECK(vl_roles_trust(r, "127.0.0.0/30") == 0);
    s_peer_from(r, "127.0.0.2", &p);
    VL_CHECK(p.roles == VL_ROLE_ALL);
    zmq_msg_t bare; // no connection: names no peer
    zmq_msg_init(&bare);
    vl_roles_peer(r, &bare, &p);
    zmq_msg_close(&bare);
    VL_CHECK(strcmp(p.who, "?") == 0 && p.roles == (VL_ROLE_ACTOR | VL_ROLE_OBSERVER));
    vl_roles_destroy(&r);
}

static void test_log_once_per_peer(void)
{
    vl_roles_t *r = vl_roles_new(NULL);
    vl_peer_t a = {.who = "10.0.0.1"}, b = {.who = "10.0.0.2"};
    VL_CHECK(vl_roles_log_once(r, &a) == 1);
    VL_CHECK(vl_roles_log_once(r, &a) == 0);
    VL_CHECK(vl_roles_log_once(r, &b) == 1);
    vl_roles_destroy(&r);
}

int main(void)
{
    VL_RUN(test_parse_roles);
    VL_RUN(test_learner_policies);
    VL_RUN(test_bad_cidrs);
    VL_RUN(test_open_broker_peers);
    VL_RUN(test_log_once_per_peer);
    return VL_DONE();
}
