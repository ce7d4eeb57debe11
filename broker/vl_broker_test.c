/*  vl_broker_test: a broker served on a thread of the test and stopped by
    vl_broker_stop, with no signal and no process of its own. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../messages/vl_status.h"
#include "../tests/vl_test.h"
#include "vl_broker.h"

typedef struct {
    vl_broker_t *broker;
    int rc;
} s_served_t;

static void *s_serve(void *arg)
{
    s_served_t *served = arg;
    served->rc = vl_broker_run(served->broker);
    return NULL;
}

/* A broker on loopback at the first base port from a pid-dependent start whose five ports are
   free; its port in *port. */
static vl_broker_t *s_broker_new(int *port)
{
    vl_broker_config_t c = vl_broker_config_default();
    c.bind_host = "127.0.0.1";
    c.log_every_s = 0;
    for (int i = 0; i < 50; i++) {
        c.port = 20000 + (int)((getpid() * 7 + i * 5) % 40000);
        vl_broker_t *broker = vl_broker_new(&c);
        if (broker) {
            *port = c.port;
            return broker;
        }
    }
    return NULL;
}

/* Asks the broker at port for its status; returns 1 if a STATUS reply came. Blocks until it
   does: a broker that stopped serving hangs the test, which ctest's timeout fails. */
static int s_status_answered(int port)
{
    void *ctx = zmq_ctx_new();
    void *dealer = zmq_socket(ctx, ZMQ_DEALER);
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port + VL_PORT_CONTROL);
    int linger = 0;
    zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof linger);
    int ok = zmq_connect(dealer, endpoint) == 0 &&
             zmq_send(dealer, VL_VERB_STATUS, strlen(VL_VERB_STATUS), 0) >= 0;
    char verb[16] = {0};
    ok = ok && zmq_recv(dealer, verb, sizeof verb - 1, 0) >= 0 && strcmp(verb, VL_VERB_STATUS) == 0;
    int more = 0;
    size_t more_size = sizeof more;
    zmq_getsockopt(dealer, ZMQ_RCVMORE, &more, &more_size);
    while (more) { // the status itself: not this test's concern
        zmq_msg_t part;
        zmq_msg_init(&part);
        zmq_msg_recv(&part, dealer, 0);
        zmq_msg_close(&part);
        zmq_getsockopt(dealer, ZMQ_RCVMORE, &more, &more_size);
    }
    zmq_close(dealer);
    zmq_ctx_term(ctx);
    return ok;
}

/* Serves requests on its thread until told to stop, then returns 0. */
static void test_stop_from_another_thread(void)
{
    int port = 0;
    s_served_t served = {s_broker_new(&port), -1};
    VL_CHECK(served.broker);
    pthread_t thread;
    VL_CHECK(pthread_create(&thread, NULL, s_serve, &served) == 0);
    int answered = s_status_answered(port);
    vl_broker_stop(served.broker);
    pthread_join(thread, NULL);
    vl_broker_destroy(&served.broker);
    VL_CHECK(answered);
    VL_CHECK(served.rc == 0);
    VL_CHECK(!vl_interrupted); // stopped by its own flag, not the process's signal flag
}

/* Stopped before it runs: vl_broker_run returns at once. */
static void test_stop_before_run(void)
{
    int port = 0;
    vl_broker_t *broker = s_broker_new(&port);
    VL_CHECK(broker);
    vl_broker_stop(broker);
    int rc = vl_broker_run(broker);
    vl_broker_destroy(&broker);
    VL_CHECK(rc == 0);
    VL_CHECK(!broker);
}

int main(void)
{
    vl_log_init("broker_test", VL_LOG_WARN);
    VL_RUN(test_stop_from_another_thread);
    VL_RUN(test_stop_before_run);
    return VL_DONE();
}
