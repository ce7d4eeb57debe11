/*  vl_weights_bench: how long new weights take from publish to applied in 4
    actors, learner PUB -> volley broker (XSUB, check, last-value cache, XPUB)
    -> actor SUB -> decode -> vl_policy_load, beside a raw PUB -> SUB of the
    same frame sizes, measured in the same run. Three networks: the actors'
    default MLP, a large MLP, and the cnn preset's conv net over Atari frames
    (conv weights of rank 4, [out][in][kh][kw]), which an actor loads by
    checking every tensor's name and full shape and copying its floats, as
    an external-mode actor or a conv engine takes them.

    This is latency, not throughput: one publication every S_PERIOD_S, N of
    them per path after a warm-up (publishing until every subscriber has seen
    one, so slow joiners and subscriptions have settled). Each publication is
    a fresh vl_weights_encode of policy S_POLICY at a new version, sent as the
    learner sends it: [topic = policy id][body = Weights]. The source
    network's first parameter carries the version, so each actor checks that
    what it loaded is what was sent.

    Paths:
      raw PUB -> SUB   PUB bound on 127.0.0.1:*, the 4 SUBs connected to it,
                       receive only. The same two frames, the same lengths:
                       the body's first 16 bytes are overwritten with the
                       send stamp and the version (nothing decodes it).
      broker           PUB connected to a `volley broker` child's base + 2
                       (XSUB), the 4 SUBs to its base + 3 (XPUB) subscribed
                       to S_POLICY. Each "actor" decodes with
                       vl_weights_decode and applies with vl_policy_load into
                       a network built as actors/vl_actor.c builds its own,
                       as s_apply_weights does (a version it holds already is
                       skipped).

    Latency = vl_wall_ns() (CLOCK_REALTIME, one clock: one host) at the
    subscriber minus the stamp taken just before encoding, so both paths
    include the publisher's encode (printed on its own). "received" is when
    the body frame arrived; "applied" is after vl_policy_load returned. Every
    actor has its own ZeroMQ context (one I/O thread), like an actor process;
    the publisher has its own. p50 and p99 are nearest-rank over all 4 actors'
    samples pooled. lost = publications an actor never applied (received, on
    the raw path), per actor, summed. One broker per size case, so the
    last-value cache never serves an earlier case's network. */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "actors/vl_actor.h"
#include "bench/vl_bench.h"
#include "common/vl_log.h"
#include "common/vl_opts.h"
#include "common/vl_proc.h"
#include "common/vl_rng.h"
#include "messages/vl_codec.h"
#include "models/vl_policy.h"

#define S_POLICY        "bench"     // policy id: the topic the actors subscribe to
#define S_ACTORS        4           // subscriber threads per path
#define S_PUBS          300         // measured publications per path
#define S_QUICK_PUBS    40          // ... with --quick
#define S_PERIOD_S      0.02        // between publications: latency, not a flood
#define S_WARM_VERSION  100000      // warm-up versions start here, measured ones at ...
#define S_FIRST_VERSION 1000000     // ... this: both 3-byte varints, so every body is one size
#define S_FIRST_WAIT_S  5.0         // warm-up: every actor must have seen a message by then
#define S_DRAIN_S       1.0         // after the last publication, stragglers get this long
#define S_POLL_MS       50          // subscribers' poll timeout, so they see stop
#define S_MAX_MSG       (256 << 20) // incoming message cap, as the actor's SUB
#define S_MAX_TENSORS   64          // as the learner's s_publish_weights
#define S_LARGE_OBS     256         // the large case: obs dim ...
#define S_LARGE_HIDDEN  256         // ... and hidden units (about 1 MB of weights)
#define S_STAMP_BYTES   16          // raw path: send stamp and version at the body's start
#define S_TARGET        2.0         // broker applied p50 / raw p50, at most
#define S_CASES         3           // default MLP, large MLP, the cnn preset
#define S_CNN_PERIOD_S                                                                             \
    0.1 // the cnn's 6.8 MB: a learner's pace, not a flood the broker
        // queues (at 20 ms it measures the backlog, not a hop)

/* ---- cases and results ------------------------------------------------------- */

typedef enum { S_RAW, S_BROKER } s_path_t;

/* One network shape: what the weights messages carry. */
typedef struct {
    char name[48];
    uint32_t obs_dim, num_actions, hidden; // num_actions: the MLP's logits, one per head output
    int conv;      // the cnn preset's tensors (s_cnn) instead of volley's MLP of the sizes above
    double period; // seconds between publications; 0: the plan's
} s_case_t;

/* The cnn preset ("conv(32,8,4) relu conv(64,4,2) relu conv(64,3,1) relu
   linear(512) relu") over a 4 x 84 x 84 frame, 6 actions: its tensors as
   models/vl_net.h names and lays them out. */
static const struct {
    const char *name;
    uint32_t ndim, dims[4];
} s_cnn[] = {
    {"conv.0.0.weight", 4, {32, 4, 8, 8}},
    {"conv.0.0.bias", 1, {32}},
    {"conv.0.1.weight", 4, {64, 32, 4, 4}},
    {"conv.0.1.bias", 1, {64}},
    {"conv.0.2.weight", 4, {64, 64, 3, 3}},
    {"conv.0.2.bias", 1, {64}},
    {"torso.0.weight", 2, {512, 3136}},
    {"torso.0.bias", 1, {512}},
    {"pi.weight", 2, {6, 512}},
    {"pi.bias", 1, {6}},
    {"v.weight", 2, {1, 512}},
    {"v.bias", 1, {1}},
};
#define S_CNN_TENSORS (sizeof s_cnn / sizeof s_cnn[0])

/* A network's tensors as a learner or an actor holds them: volley's MLP, or
   the cnn preset's tensors in one array of floats. */
typedef struct {
    vl_policy_t *policy; // MLP cases
    float *params;       // conv case: every tensor's floats, in order
    vl_tensor_t t[S_MAX_TENSORS];
    uint32_t n;
} s_net_t;

/* One path's samples, pooled over the actors. */
typedef struct {
    double *recv_us;   // [S_ACTORS * n]; NAN where a publication never came
    double *apply_us;  // ... until applied (broker path; NAN on the raw path)
    double *encode_us; // [n], the publisher's encode per publication
    uint64_t lost[S_ACTORS];
    uint64_t dups;    // publications that came twice to one actor
    uint64_t warmups; // publications before every actor had seen one
    uint32_t n;
} s_run_t;

/* Nearest-rank figures of one row of the table. */
typedef struct {
    double p50, p99, max;
    uint64_t samples;
} s_stats_t;

static pid_t s_broker_pid; // the running broker child, 0 when none

static void s_broker_stop(void);

/* Stops the broker if one runs, prints why and exits: a figure over wrong
   output means nothing. */
_Noreturn static void s_die(const char *what, const char *why)
{
    s_broker_stop();
    fprintf(stderr, "vl_weights_bench: %s: %s\n", what, why);
    exit(1);
}

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void s_sleep(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)(fmod(s, 1) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Sleeps until monotonic time t (returns at once if it has passed). */
static void s_sleep_until(double t)
{
    double d = t - s_now();
    if (d > 0)
        s_sleep(d);
}

/* Fills the cases: the network an actor builds by default, a large one, and
   the cnn preset's. */
static void s_cases(s_case_t cases[S_CASES])
{
    vl_actor_config_t d = vl_actor_config_default();
    uint32_t outputs = vl_action_outputs(&d.env->action); // the default env's policy head
    cases[0] = (s_case_t){.obs_dim = d.env->obs_dim, .num_actions = outputs, .hidden = d.hidden};
    snprintf(cases[0].name, sizeof cases[0].name, "default (%s)", d.env->name);
    cases[1] = (s_case_t){.obs_dim = S_LARGE_OBS, .num_actions = outputs, .hidden = S_LARGE_HIDDEN};
    snprintf(cases[1].name, sizeof cases[1].name, "large");
    cases[2] = (s_case_t){.obs_dim = 4 * 84 * 84,
                          .num_actions = 6,
                          .hidden = 512,
                          .conv = 1,
                          .period = S_CNN_PERIOD_S};
    snprintf(cases[2].name, sizeof cases[2].name, "cnn (Atari, rank 4)");
}

/* ---- networks -------------------------------------------------------------- */

/* Builds c's network into net, its parameters drawn from seed. Returns 0,
   or -1 on no memory. */
static int s_net_new(const s_case_t *c, uint64_t seed, s_net_t *net)
{
    memset(net, 0, sizeof *net);
    if (!c->conv) {
        net->policy = vl_policy_new(c->obs_dim, c->num_actions, c->hidden, seed);
        net->n = net->policy ? vl_policy_tensor_count(net->policy) : 0;
        for (uint32_t i = 0; i < net->n && i < S_MAX_TENSORS; i++)
            vl_policy_tensor(net->policy, i, &net->t[i]);
        return net->policy && net->n <= S_MAX_TENSORS ? 0 : -1;
    }
    size_t total = 0;
    for (uint32_t i = 0; i < S_CNN_TENSORS; i++) {
        snprintf(net->t[i].name, sizeof net->t[i].name, "%s", s_cnn[i].name);
        if (vl_tensor_set_shape(&net->t[i], s_cnn[i].ndim, s_cnn[i].dims) != 0)
            return -1;
        total += vl_tensor_size(&net->t[i]);
    }
    if (!(net->params = malloc(total * sizeof(float))))
        return -1;
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (size_t k = 0; k < total; k++)
        net->params[k] = (float)(vl_rng_uniform(&rng) - 0.5) * 0.1f;
    float *at = net->params;
    for (uint32_t i = 0; i < S_CNN_TENSORS; i++) {
        net->t[i].data = at;
        at += vl_tensor_size(&net->t[i]);
    }
    net->n = S_CNN_TENSORS;
    return 0;
}

/* Frees what s_net_new made. */
static void s_net_free(s_net_t *net)
{
    vl_policy_destroy(&net->policy);
    free(net->params);
    net->params = NULL;
}

/* Loads w into net: vl_policy_load for volley's MLP; for the conv net every
   tensor by name with its full shape (a [32, 256] is not a [32, 4, 8, 8]),
   its floats copied. Returns 0, or -1 when they do not fit (nothing
   copied). */
static int s_net_load(s_net_t *net, const vl_weights_t *w)
{
    if (net->policy)
        return vl_policy_load(net->policy, w);
    if (w->n_tensors != net->n)
        return -1;
    for (uint32_t i = 0; i < net->n; i++)
        if (strcmp(w->tensors[i].name, net->t[i].name) != 0 ||
            !vl_tensor_same_shape(&w->tensors[i], &net->t[i]))
            return -1;
    for (uint32_t i = 0; i < net->n; i++)
        memcpy(net->t[i].data, w->tensors[i].data, vl_tensor_size(&net->t[i]) * sizeof(float));
    return 0;
}

/* Returns the first parameter net holds now (where the publisher puts the
   version). */
static float s_net_first(s_net_t *net)
{
    if (!net->policy)
        return net->t[0].data[0];
    vl_tensor_t t;
    vl_policy_tensor(net->policy, 0, &t);
    return t.data[0];
}

/* ---- the broker child ---------------------------------------------------- */

/* Starts `volley broker` on 127.0.0.1:port..port+VL_PORT_COUNT-1, dying with
   this process where the system allows. Sets s_broker_pid; exits if it
   cannot start or dies at once. */
static void s_broker_start(const char *volley, int port)
{
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    char *argv[] = {(char *)volley, "broker",    "--port",  port_s,
                    "--bind",       "127.0.0.1", "--quiet", NULL};
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGTERM); // a killed benchmark leaves no broker behind
        if (getppid() != parent)
            _exit(1);
#endif
        execv(volley, argv);
        fprintf(stderr, "vl_weights_bench: cannot run %s: %s\n", volley, strerror(errno));
        _exit(127);
    }
    (void)parent;
    if (pid < 0)
        s_die("fork", strerror(errno));
    s_broker_pid = pid;
    s_sleep(0.2);
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
        s_broker_pid = 0;
        s_die(volley, "the broker exited at once (see its message above)");
    }
}

/* SIGTERMs the broker if one runs and reaps it, SIGKILL after 3 s. */
static void s_broker_stop(void)
{
    if (s_broker_pid)
        vl_proc_stop(&s_broker_pid, 1, 3000);
    s_broker_pid = 0;
}

/* ---- sockets --------------------------------------------------------------- */

/* Creates a socket as vl_sock does for actors and learners (linger 0,
   incoming messages capped) and connects or binds it. Exits on failure. */
static void *s_socket(void *ctx, int type, const char *endpoint, int bind)
{
    void *s = ctx ? zmq_socket(ctx, type) : NULL;
    if (!s)
        s_die("zmq_socket", zmq_strerror(zmq_errno()));
    int zero = 0;
    int64_t max_msg = S_MAX_MSG;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max_msg, sizeof max_msg);
    if ((bind ? zmq_bind(s, endpoint) : zmq_connect(s, endpoint)) != 0)
        s_die(endpoint, zmq_strerror(zmq_errno()));
    return s;
}

/* Opens the publisher's PUB for a path and writes where subscribers
   connect into sub_ep: raw, bound on 127.0.0.1:*; broker, connected to its
   weights-in port. */
static void *s_pub_open(void *ctx, s_path_t path, int port, char *sub_ep, size_t cap)
{
    if (path == S_RAW) {
        void *s = s_socket(ctx, ZMQ_PUB, "tcp://127.0.0.1:*", 1);
        if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, sub_ep, &cap) != 0)
            s_die("bind", "no endpoint");
        return s;
    }
    char ep[64];
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", port + VL_PORT_WEIGHTS_IN);
    snprintf(sub_ep, cap, "tcp://127.0.0.1:%d", port + VL_PORT_WEIGHTS_OUT);
    return s_socket(ctx, ZMQ_PUB, ep, 0);
}

/* ---- the actors ---------------------------------------------------------- */

typedef struct {
    s_path_t path;
    void *ctx, *sock; // its own context, SUB subscribed to S_POLICY
    s_net_t net;      // broker path: the network loaded from each message
    vl_limits_t limits;
    size_t size;      // raw path: every body is this long
    uint32_t n;       // measured publications
    double *recv_us;  // [n], by version - S_FIRST_VERSION; NAN until it came
    double *apply_us; // [n], likewise; NAN on the raw path
    uint64_t current; // version applied now (0: none yet)
    atomic_int seen;  // some message arrived (the warm-up waits for it)
    atomic_uint got;  // measured publications recorded
    atomic_int stop;
    uint64_t dups; // a measured publication that came again; read after join
    uint64_t bad;  // malformed, undecodable, unloadable or wrong; read after join
    char why[160]; // the first bad one's reason
    pthread_t tid;
} s_actor_t;

/* Counts a bad message, keeping the first reason. */
static void s_bad(s_actor_t *a, const char *why, const char *detail)
{
    if (a->bad++ == 0)
        snprintf(a->why, sizeof a->why, "%s%s%s", why, detail ? ": " : "", detail ? detail : "");
}

/* Records the latencies of one arrival (apply_us NAN on the raw path). */
static void s_record(s_actor_t *a, uint64_t version, double recv_us, double apply_us)
{
    atomic_store(&a->seen, 1);
    if (version < S_FIRST_VERSION)
        return; // warm-up
    uint64_t i = version - S_FIRST_VERSION;
    if (i >= a->n) {
        s_bad(a, "a version never published arrived", NULL);
        return;
    }
    if (!isnan(a->recv_us[i])) {
        a->dups++;
        return;
    }
    a->recv_us[i] = recv_us;
    a->apply_us[i] = apply_us;
    atomic_fetch_add(&a->got, 1);
}

/* Checks the network now holds version's weights: the publisher put the
   version in the first parameter. */
static void s_check_loaded(s_actor_t *a, uint64_t version)
{
    if (s_net_first(&a->net) != (float)version)
        s_bad(a, "the loaded network does not hold the version received", NULL);
}

/* Decodes and applies one body as the actor's s_apply_weights does, timed
   against its publish_ns; t_recv is when the body arrived. */
static void s_apply(s_actor_t *a, const uint8_t *data, size_t size, int64_t t_recv)
{
    vl_weights_t *w = NULL;
    vl_reason_t r = vl_weights_decode(data, size, &a->limits, &w);
    if (r != VL_OK) {
        s_bad(a, "undecodable weights", vl_reason_str(r));
        return;
    }
    if (strcmp(w->policy_id, S_POLICY) != 0) {
        s_bad(a, "weights of another policy", w->policy_id);
    } else if (a->current && w->version == a->current) {
        a->dups += w->version >= S_FIRST_VERSION; // the actor skips it too
    } else if (s_net_load(&a->net, w) == 0) {
        int64_t t_applied = vl_wall_ns();
        a->current = w->version;
        s_record(a, w->version, (double)(t_recv - w->publish_ns) / 1e3,
                 (double)(t_applied - w->publish_ns) / 1e3);
        s_check_loaded(a, w->version);
    } else {
        s_bad(a, "weights do not fit the actor's network", NULL);
    }
    vl_weights_destroy(&w);
}

/* Reads the raw path's stamp and version from a body, timed at t_recv. */
static void s_raw_arrival(s_actor_t *a, const uint8_t *data, size_t size, int64_t t_recv)
{
    if (size != a->size) {
        s_bad(a, "a raw body of the wrong size", NULL);
        return;
    }
    int64_t stamp;
    uint64_t version;
    memcpy(&stamp, data, sizeof stamp);
    memcpy(&version, data + sizeof stamp, sizeof version);
    s_record(a, version, (double)(t_recv - stamp) / 1e3, NAN);
}

/* Receives one [topic][body] waiting on the SUB and hands it on. Returns 0,
   or -1 when nothing is waiting. */
static int s_recv_one(s_actor_t *a)
{
    zmq_msg_t topic, body;
    zmq_msg_init(&topic);
    zmq_msg_init(&body);
    int rc = zmq_msg_recv(&topic, a->sock, ZMQ_DONTWAIT) >= 0 ? 0 : -1;
    if (rc == 0 && zmq_msg_more(&topic) && zmq_msg_recv(&body, a->sock, 0) >= 0 &&
        !zmq_msg_more(&body)) {
        int64_t t_recv = vl_wall_ns();
        if (a->path == S_RAW)
            s_raw_arrival(a, zmq_msg_data(&body), zmq_msg_size(&body), t_recv);
        else
            s_apply(a, zmq_msg_data(&body), zmq_msg_size(&body), t_recv);
    } else if (rc == 0) {
        s_bad(a, "not a [topic][body] message", NULL);
    }
    while (rc == 0 && zmq_msg_more(&body) && zmq_msg_recv(&body, a->sock, 0) >= 0)
        ; // the rest of a malformed one
    zmq_msg_close(&topic);
    zmq_msg_close(&body);
    return rc;
}

/* Polls like the actor's s_poll_weights and takes every message waiting,
   until told to stop. */
static void *s_actor_main(void *arg)
{
    s_actor_t *a = arg;
    zmq_pollitem_t item = {a->sock, 0, ZMQ_POLLIN, 0};
    while (!atomic_load(&a->stop)) {
        if (zmq_poll(&item, 1, S_POLL_MS) <= 0)
            continue;
        while (s_recv_one(a) == 0)
            ;
    }
    return NULL;
}

/* Sets up one actor for a path: its context, its SUB on sub_ep, its
   network (broker path) and its sample arrays. Exits on failure. */
static void s_actor_open(s_actor_t *a, s_path_t path, const s_case_t *c, const char *sub_ep,
                         uint32_t n, size_t size)
{
    *a = (s_actor_t){.path = path, .limits = vl_limits_default(), .size = size, .n = n};
    a->ctx = zmq_ctx_new();
    a->sock = s_socket(a->ctx, ZMQ_SUB, sub_ep, 0);
    zmq_setsockopt(a->sock, ZMQ_SUBSCRIBE, S_POLICY, strlen(S_POLICY));
    int net_ok = path != S_BROKER || s_net_new(c, vl_actor_config_default().seed, &a->net) == 0;
    a->recv_us = malloc(n * sizeof *a->recv_us);
    a->apply_us = malloc(n * sizeof *a->apply_us);
    if (!net_ok || !a->recv_us || !a->apply_us)
        s_die(c->name, "no memory for an actor");
    for (uint32_t i = 0; i < n; i++)
        a->recv_us[i] = a->apply_us[i] = NAN;
}

/* Frees what s_actor_open made, after its thread was joined. */
static void s_actor_close(s_actor_t *a)
{
    zmq_close(a->sock);
    zmq_ctx_term(a->ctx);
    s_net_free(&a->net);
    free(a->recv_us);
    free(a->apply_us);
}

/* Returns 1 if every actor saw a message. */
static int s_all_seen(s_actor_t *actors)
{
    for (int i = 0; i < S_ACTORS; i++)
        if (!atomic_load(&actors[i].seen))
            return 0;
    return 1;
}

/* Returns 1 if every actor recorded all n measured publications. */
static int s_all_got(s_actor_t *actors, uint32_t n)
{
    for (int i = 0; i < S_ACTORS; i++)
        if (atomic_load(&actors[i].got) < n)
            return 0;
    return 1;
}

/* ---- the publisher ------------------------------------------------------- */

typedef struct {
    s_path_t path;
    void *sock;      // PUB
    void *hello;     // broker path: a DEALER on the learners' port saying hello, as a learner
    double hello_at; // when it last did (the broker believes weights only from the policy's
                     // learner, and forgets one silent for 5 s)
    s_net_t src;     // the network published; its first parameter carries the version
    s_actor_t *actors;
    uint32_t n;
    double period;
    double *encode_us; // [n]
    uint64_t warmups;
    const char *failed; // why it gave up, or NULL
} s_publisher_t;

/* Encodes the source network at version (vl_weights_encode stamps it) and
   publishes [S_POLICY][body] as the learner does; on the raw path the body's
   first S_STAMP_BYTES become the stamp and version. Sets *encode_us.
   Returns 0, or -1. */
static int s_publish(s_publisher_t *p, uint64_t version, double *encode_us)
{
    uint8_t *hello;
    size_t hello_size;
    if (p->hello && s_now() - p->hello_at >= 1.0 &&
        vl_hello_encode(S_POLICY, &hello, &hello_size) == 0) {
        zmq_send(p->hello, hello, hello_size, ZMQ_DONTWAIT);
        free(hello);
        p->hello_at = s_now();
    }
    p->src.t[0].data[0] = (float)version;
    int64_t t0 = vl_wall_ns();
    uint8_t *buf;
    size_t size;
    if (vl_weights_encode(S_POLICY, version, p->src.t, p->src.n, &buf, &size) != 0)
        return -1;
    *encode_us = (double)(vl_wall_ns() - t0) / 1e3;
    if (p->path == S_RAW) {
        memcpy(buf, &t0, sizeof t0);
        memcpy(buf + sizeof t0, &version, sizeof version);
    }
    int rc = zmq_send(p->sock, S_POLICY, strlen(S_POLICY), ZMQ_SNDMORE) >= 0 &&
                     zmq_send(p->sock, buf, size, 0) >= 0
                 ? 0
                 : -1;
    free(buf);
    return rc;
}

/* Publishes warm-up versions every period until every actor saw one, then
   the n measured ones, on a fixed schedule. */
static void *s_publisher_main(void *arg)
{
    s_publisher_t *p = arg;
    double next = s_now(), give_up = next + S_FIRST_WAIT_S, scratch;
    for (uint64_t v = S_WARM_VERSION; !s_all_seen(p->actors); v++, p->warmups++) {
        if (vl_interrupted || s_now() > give_up) {
            p->failed = vl_interrupted ? "interrupted" : "an actor saw nothing (is the path up?)";
            return NULL;
        }
        if (s_publish(p, v, &scratch) != 0) {
            p->failed = "cannot encode or send";
            return NULL;
        }
        s_sleep_until(next += p->period);
    }
    for (uint32_t i = 0; i < p->n; i++) {
        s_sleep_until(next += p->period);
        if (vl_interrupted || s_publish(p, S_FIRST_VERSION + i, &p->encode_us[i]) != 0) {
            p->failed = vl_interrupted ? "interrupted" : "cannot encode or send";
            return NULL;
        }
    }
    return NULL;
}

/* ---- one path at one size ------------------------------------------------- */

/* Gathers the actors' samples and tallies into out, then checks them:
   exits if any actor saw a bad message. */
static void s_collect(s_actor_t *actors, uint32_t n, const s_case_t *c, s_run_t *out)
{
    for (int i = 0; i < S_ACTORS; i++) {
        s_actor_t *a = &actors[i];
        if (a->bad) {
            char what[128];
            snprintf(what, sizeof what, "%s, actor %d (%llu bad)", c->name, i,
                     (unsigned long long)a->bad);
            s_die(what, a->why);
        }
        memcpy(out->recv_us + (size_t)i * n, a->recv_us, n * sizeof *a->recv_us);
        memcpy(out->apply_us + (size_t)i * n, a->apply_us, n * sizeof *a->apply_us);
        out->lost[i] = n - atomic_load(&a->got);
        out->dups += a->dups;
    }
}

/* Measures one path at one case: n publications, period apart, to
   S_ACTORS actors. port is the broker's base port (broker path). */
static void s_measure(const s_case_t *c, s_path_t path, int port, size_t size,
                      const vl_bench_plan_t *plan, s_run_t *out)
{
    uint32_t n = (uint32_t)plan->runs;
    *out = (s_run_t){.n = n,
                     .recv_us = malloc(S_ACTORS * n * sizeof(double)),
                     .apply_us = malloc(S_ACTORS * n * sizeof(double)),
                     .encode_us = calloc(n, sizeof(double))};
    if (!out->recv_us || !out->apply_us || !out->encode_us)
        s_die(c->name, "no memory");
    void *pub_ctx = zmq_ctx_new();
    char sub_ep[128];
    s_publisher_t p = {.path = path,
                       .n = n,
                       .period = c->period > 0 ? c->period : plan->run_s,
                       .encode_us = out->encode_us};
    p.sock = s_pub_open(pub_ctx, path, port, sub_ep, sizeof sub_ep);
    char learners_ep[64];
    snprintf(learners_ep, sizeof learners_ep, "tcp://127.0.0.1:%d", port + VL_PORT_LEARNERS);
    p.hello = path == S_RAW ? NULL : s_socket(pub_ctx, ZMQ_DEALER, learners_ep, 0);
    p.hello_at = -1e9;
    int src_ok = s_net_new(c, 7, &p.src) == 0;
    s_actor_t actors[S_ACTORS];
    p.actors = actors;
    for (int i = 0; i < S_ACTORS; i++)
        s_actor_open(&actors[i], path, c, sub_ep, n, size);
    pthread_t pt;
    for (int i = 0; i < S_ACTORS; i++)
        if (pthread_create(&actors[i].tid, NULL, s_actor_main, &actors[i]) != 0)
            s_die(c->name, "cannot start an actor thread");
    if (!src_ok || pthread_create(&pt, NULL, s_publisher_main, &p) != 0)
        s_die(c->name, "cannot start the publisher");
    pthread_join(pt, NULL);
    for (double until = s_now() + S_DRAIN_S; s_now() < until && !s_all_got(actors, n);)
        s_sleep(0.005);
    for (int i = 0; i < S_ACTORS; i++) {
        atomic_store(&actors[i].stop, 1);
        pthread_join(actors[i].tid, NULL);
    }
    s_collect(actors, n, c, out); // an actor's bad message first: it may be why
    if (p.failed)
        s_die(path == S_RAW ? "raw PUB -> SUB" : "broker", p.failed);
    out->warmups = p.warmups;
    for (int i = 0; i < S_ACTORS; i++)
        s_actor_close(&actors[i]);
    s_net_free(&p.src);
    zmq_close(p.sock);
    if (p.hello)
        zmq_close(p.hello);
    zmq_ctx_term(pub_ctx);
}

/* Returns the body size of the case's weights message. Exits on failure. */
static size_t s_wire_size(const s_case_t *c)
{
    s_net_t src;
    uint8_t *buf;
    size_t size;
    if (s_net_new(c, 7, &src) != 0 ||
        vl_weights_encode(S_POLICY, S_FIRST_VERSION, src.t, src.n, &buf, &size) != 0)
        s_die(c->name, "cannot encode the weights");
    free(buf);
    s_net_free(&src);
    if (size < S_STAMP_BYTES)
        s_die(c->name, "weights too small to carry the raw stamp");
    return size;
}

/* Measures both paths at one case, raw first, with a broker of its own. */
static void s_run_case(const char *volley, const s_case_t *c, size_t size,
                       const vl_bench_plan_t *plan, int *from, s_run_t runs[2])
{
    s_measure(c, S_RAW, 0, size, plan, &runs[S_RAW]);
    int port = vl_free_base_port(*from);
    if (port < 0)
        s_die("ports", "no free base port");
    *from = port + VL_PORT_COUNT;
    s_broker_start(volley, port);
    printf("  %s: broker pid %d, ports %d..%d\n", c->name, (int)s_broker_pid, port,
           port + VL_PORT_COUNT - 1);
    fflush(stdout);
    s_measure(c, S_BROKER, port, size, plan, &runs[S_BROKER]);
    s_broker_stop();
}

/* ---- figures and output ----------------------------------------------------- */

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Returns p50, p99 and max (nearest rank) of the non-NAN values of xs[n]. */
static s_stats_t s_stats(const double *xs, size_t n)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        s_die("stats", "no memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(xs[i]))
            v[m++] = xs[i];
    s_stats_t s = {.p50 = NAN, .p99 = NAN, .max = NAN, .samples = m};
    if (m > 0) {
        qsort(v, m, sizeof *v, s_cmp_double);
        s.p50 = v[(size_t)ceil(0.50 * (double)m) - 1];
        s.p99 = v[(size_t)ceil(0.99 * (double)m) - 1];
        s.max = v[m - 1];
    }
    free(v);
    return s;
}

/* Writes the per-actor losses, "a+b+...", into buf. */
static void s_lost_str(const uint64_t *lost, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < S_ACTORS && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%llu", i ? "+" : "",
                                (unsigned long long)lost[i]);
}

static void s_print_row(const s_case_t *c, size_t size, const char *path, s_stats_t s,
                        const s_run_t *r)
{
    char lost[64];
    s_lost_str(r->lost, lost, sizeof lost);
    printf("  %-18s %9zu  %-26s %9.1f %9.1f %9.1f %8llu  %-12s %4llu\n", c->name, size, path, s.p50,
           s.p99, s.max, (unsigned long long)s.samples, lost, (unsigned long long)r->dups);
}

/* Prints one case's rows; returns the broker-applied / raw p50 ratio. */
static double s_print_case(const s_case_t *c, size_t size, const s_run_t runs[2])
{
    size_t all = (size_t)S_ACTORS * runs[S_RAW].n;
    s_stats_t raw = s_stats(runs[S_RAW].recv_us, all);
    s_stats_t got = s_stats(runs[S_BROKER].recv_us, all);
    s_stats_t applied = s_stats(runs[S_BROKER].apply_us, all);
    s_print_row(c, size, "raw PUB -> SUB, received", raw, &runs[S_RAW]);
    s_print_row(c, size, "broker, received", got, &runs[S_BROKER]);
    s_print_row(c, size, "broker, applied", applied, &runs[S_BROKER]);
    return applied.p50 / raw.p50;
}

/* Returns the p50 of xs[S_ACTORS * n] (by actor, then publication) less
   each publication's own encode time. */
static double s_p50_less_encode(const double *xs, const s_run_t *r)
{
    size_t all = (size_t)S_ACTORS * r->n;
    double *d = malloc(all * sizeof *d);
    if (!d)
        s_die("stats", "no memory");
    for (size_t i = 0; i < all; i++)
        d[i] = xs[i] - r->encode_us[i % r->n];
    double p50 = s_stats(d, all).p50;
    free(d);
    return p50;
}

/* Prints one case's side figures: encode, decode + load, the figures
   without the encode, the warm-ups. */
static void s_print_notes(const s_case_t *c, const s_run_t runs[2])
{
    const s_run_t *b = &runs[S_BROKER];
    size_t all = (size_t)S_ACTORS * b->n;
    double *dl = malloc(all * sizeof *dl);
    if (!dl)
        s_die("stats", "no memory");
    for (size_t i = 0; i < all; i++)
        dl[i] = b->apply_us[i] - b->recv_us[i];
    s_stats_t enc = s_stats(b->encode_us, b->n), load = s_stats(dl, all);
    double raw = s_p50_less_encode(runs[S_RAW].recv_us, &runs[S_RAW]);
    double applied = s_p50_less_encode(b->apply_us, b);
    char arch[96];
    if (c->conv)
        snprintf(arch, sizeof arch, "%zu tensors, %s [%u, %u, %u, %u] first", S_CNN_TENSORS,
                 s_cnn[0].name, s_cnn[0].dims[0], s_cnn[0].dims[1], s_cnn[0].dims[2],
                 s_cnn[0].dims[3]);
    else
        snprintf(arch, sizeof arch, "obs %u, %u actions, hidden %u", c->obs_dim, c->num_actions,
                 c->hidden);
    printf("  %s (%s):\n"
           "    encode p50 %.1f us (inside both paths' figures); decode + load p50 %.1f us, "
           "p99 %.1f us\n"
           "    less each publication's encode: raw p50 %.1f us, broker applied p50 %.1f us, "
           "%.2fx\n"
           "    warm-up publications: raw %llu, broker %llu\n",
           c->name, arch, enc.p50, load.p50, load.p99, raw, applied, applied / raw,
           (unsigned long long)runs[S_RAW].warmups, (unsigned long long)b->warmups);
    free(dl);
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: vl_weights_bench [--volley PATH] [--quick] [--help]\n"
            "  Benchmarks weights latency, publish -> applied in %d actors, through a\n"
            "  volley broker, beside a raw PUB -> SUB of the same sizes: the actors'\n"
            "  default network, a large one (obs %d, hidden %d, about 1 MB) and the cnn\n"
            "  preset's over Atari frames (rank-4 conv weights, about 6.8 MB).\n"
            "  --volley PATH  the volley executable to run the broker from\n"
            "                 (default: volley beside this benchmark)\n"
            "  --quick        %d publications per path instead of %d (%.0f ms apart, the\n"
            "                 cnn's %.0f ms)\n"
            "  --help         this text\n",
            S_ACTORS, S_LARGE_OBS, S_LARGE_HIDDEN, S_QUICK_PUBS, S_PUBS, S_PERIOD_S * 1e3,
            S_CNN_PERIOD_S * 1e3);
}

/* Removes "--volley PATH" from argv. Returns PATH, the default (volley beside
   argv[0]) if absent, or NULL if PATH is missing. */
static const char *s_take_volley(int *argc, char **argv, char *dflt, size_t cap)
{
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--volley") != 0)
            continue;
        if (i + 1 == *argc)
            return NULL;
        const char *path = argv[i + 1];
        memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 1) * sizeof *argv); // NULL too
        *argc -= 2;
        return path;
    }
    char self[4096];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(dflt, cap, "%s/volley", dirname(self));
    return dflt;
}

/* Returns the 1-minute load average, or -1 where it cannot be read. */
static double s_load(void)
{
    double l;
    return getloadavg(&l, 1) == 1 ? l : -1;
}

/* Frees one path's samples. */
static void s_run_free(s_run_t *r)
{
    free(r->recv_us);
    free(r->apply_us);
    free(r->encode_us);
}

int main(int argc, char **argv)
{
    char dflt[4200];
    const char *volley = s_take_volley(&argc, argv, dflt, sizeof dflt);
    if (!volley) {
        fprintf(stderr, "vl_weights_bench: --volley wants a path\n");
        return 2;
    }
    vl_bench_plan_t plan; // runs = publications per path, run_s = the period
    int rc = vl_bench_parse(argc, argv, "vl_weights_bench", s_usage,
                            (vl_bench_plan_t){S_PUBS, S_PERIOD_S},
                            (vl_bench_plan_t){S_QUICK_PUBS, S_PERIOD_S}, &plan);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (access(volley, X_OK) != 0) {
        fprintf(stderr, "vl_weights_bench: %s: not executable (give --volley PATH)\n", volley);
        return 1;
    }
    vl_proc_catch_signals(); // Ctrl-C winds down through s_die, which stops the broker
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("vl_weights_bench: weights latency, publish (stamped before encode) -> %d actors,\n"
           "  learner PUB -> volley broker -> actor SUB -> decode -> load (vl_policy_load; the\n"
           "  cnn: names and full shapes checked, floats copied), beside a raw PUB -> SUB of the\n"
           "  same frame sizes (receive only), tcp 127.0.0.1, same run; %d publications per\n"
           "  path, %.0f ms apart (the cnn's %.0f ms), after a warm-up; one ZeroMQ context per\n"
           "  actor and for the publisher; %ld cores online%s\n",
           S_ACTORS, plan.runs, plan.run_s * 1e3, S_CNN_PERIOD_S * 1e3, cores,
           cores <= 2 ? ":\n  the broker, 4 actors, the publisher and their I/O threads compete"
                      : "");
    double load0 = s_load();
    s_case_t cases[S_CASES];
    s_cases(cases);
    s_run_t runs[S_CASES][2];
    size_t sizes[S_CASES];
    int from = 20000 + (int)(getpid() % 20000);
    for (int k = 0; k < S_CASES; k++) {
        sizes[k] = s_wire_size(&cases[k]);
        s_run_case(volley, &cases[k], sizes[k], &plan, &from, runs[k]);
    }
    printf("\n  load average (1 min) %.2f at the start, %.2f at the end: other work on the "
           "machine\n  shows up as latency\n",
           load0, s_load());
    printf("\n  %-18s %9s  %-26s %9s %9s %9s %8s  %-12s %4s\n", "network", "bytes", "path",
           "p50 us", "p99 us", "max us", "samples", "lost/actor", "dups");
    double ratio[S_CASES];
    for (int k = 0; k < S_CASES; k++)
        ratio[k] = s_print_case(&cases[k], sizes[k], runs[k]);
    printf("\n");
    for (int k = 0; k < S_CASES; k++)
        s_print_notes(&cases[k], runs[k]);
    printf("\n");
    for (int k = 0; k < S_CASES; k++)
        printf("  %s, %zu B: broker applied p50 / raw p50 = %.2fx, target <= %.1fx: %s\n",
               cases[k].name, sizes[k], ratio[k], S_TARGET,
               ratio[k] <= S_TARGET ? "met" : "missed");
    for (int k = 0; k < S_CASES; k++)
        for (int p = 0; p < 2; p++)
            s_run_free(&runs[k][p]);
    return 0;
}
