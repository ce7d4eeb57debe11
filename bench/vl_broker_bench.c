/*  vl_broker_bench: the broker's forwarding throughput, actor -> broker ->
    learner, beside a direct PUSH -> PULL between the same two endpoints with
    the same bytes, measured in the same run (lz4's tests/fullbench.c is the
    model).

    Each size case pre-encodes one valid segment (horizon S_HORIZON, one f32
    field of uniform random floats, so LZ4 cannot shrink it) sized so its
    wire bytes are about the target. A sender thread PUSHes that one buffer
    zero-copy in a loop; a receiver thread counts what arrives, checks every
    message's size and checksums every S_CHECK_EVERY-th against the source.

    Paths:
      direct          sender PUSH bound on 127.0.0.1:*, receiver PULL
                      connected: the reference
      bare relay      a thread with its own context, PULL in, PUSH out, no
                      checks: what one more TCP hop costs on its own
      broker full     sender PUSH to a `volley broker --inspect full` child
                      (its base port), receiver DEALER on base + 1 saying
                      hello for the segment's policy every second
      broker header   the same with `--inspect header`

    Sender and receiver each have their own ZeroMQ context (one I/O thread
    each) on every path. After a warm-up, best of N wall-clock windows;
    segments/s and GB/s (1e9 wire bytes) as the receiver saw them. After a
    path's windows the sender stops and the receiver drains; `lost` is sent
    minus received (the broker drops what a full learner queue refuses). */
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

#include "bench/vl_bench.h"
#include "common/vl_opts.h"
#include "common/vl_rng.h"
#include "messages/vl_codec.h"

#define S_HORIZON       16      // steps per segment
#define S_ACTIONS       4       // num_actions declared by the segments
#define S_POLICY        "bench" // the policy id segments carry and the hello names
#define S_RUNS          3       // windows per path; the best counts
#define S_RUN_S         1.0     // wall-clock seconds per window
#define S_QUICK_RUNS    2
#define S_QUICK_RUN_S   0.1
#define S_HELLO_WAIT_S  0.3       // after the first hello, before segments flow
#define S_CREDIT_WINDOW 256       // segments the receiver lets the broker send ahead
#define S_HELLO_EVERY_S 1.0       // the broker forgets a learner silent for 5 s
#define S_WARMUP_S      0.25      // at most, before the first window: queues fill
#define S_FIRST_WAIT_S  5.0       // no message by then: the path is broken
#define S_DRAIN_IDLE_S  0.2       // receiver idle this long: the queues are empty
#define S_TIMEO_MS      50        // send/recv timeout, so the threads see stop
#define S_HWM           100       // the bench sockets' queues; the broker keeps its own
#define S_MAX_MSG       (8 << 20) // receivers refuse larger messages
#define S_CHECK_EVERY   256       // messages between checksums of what arrived
#define S_TARGET        0.8       // forwarding / direct, per size and inspection

/* ---- cases ----------------------------------------------------------------- */

typedef struct {
    const char *name;
    size_t target; // wire bytes aimed at
} s_size_t;

static const s_size_t s_sizes[] = {{"16 KiB", 16 << 10}, {"256 KiB", 256 << 10}};
#define S_NSIZES (sizeof s_sizes / sizeof s_sizes[0])

typedef enum { S_DIRECT, S_RELAY, S_FULL, S_HEADER, S_NPATHS } s_path_t;

static const char *s_path_names[S_NPATHS] = {
    [S_DIRECT] = "direct PUSH -> PULL",
    [S_RELAY] = "bare relay thread",
    [S_FULL] = "broker, --inspect full",
    [S_HEADER] = "broker, --inspect header",
};
static const char *s_inspect_arg[S_NPATHS] = {[S_FULL] = "full", [S_HEADER] = "header"};

/* One path's best window and its tallies. */
typedef struct {
    double rate;         // segments/s, best window
    double bench_cores;  // CPU s / wall s of this process (sender, receiver, I/O threads)
    double broker_cores; // ... of the broker child; 0 on the direct path
    uint64_t sent;
    uint64_t lost; // sent, never received
} s_result_t;

/* Prints why and exits: a figure over wrong output means nothing. */
static void s_die(const char *what, const char *why)
{
    fprintf(stderr, "vl_broker_bench: %s: %s\n", what, why);
    exit(1);
}

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double s_cpu_self(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void s_sleep(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)(fmod(s, 1) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Returns the CPU seconds (user + system) process pid used so far, from
   /proc/pid/stat, or 0 if it cannot be read. */
static double s_cpu_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); // the command name may hold spaces
    unsigned long long utime, stime;
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return 0;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* Encodes a segment of horizon S_HORIZON whose observation is n random
   floats. Returns 0 and sets *wire (caller frees) and *size, or -1. */
static int s_encode(uint32_t n, uint8_t **wire, size_t *size)
{
    vl_obs_spec_t spec = vl_obs_spec_flat(n);
    vl_segment_t seg = {.actor_id = 1,
                        .seq = 1,
                        .policy_id = S_POLICY,
                        .policy_version = 1,
                        .horizon = S_HORIZON,
                        .num_actions = S_ACTIONS,
                        .send_ns = 1700000000000000000ll};
    size_t cap = vl_segment_arrays_size(S_HORIZON, &spec);
    void *arrays = cap == SIZE_MAX ? NULL : calloc(1, cap);
    if (!arrays || vl_segment_set_spec(&seg, &spec) != 0) {
        free(arrays);
        return -1;
    }
    vl_segment_bind(&seg, arrays);
    vl_rng_t rng;
    vl_rng_seed(&rng, n);
    float *obs = (float *)seg.obs;
    for (size_t i = 0; i < (size_t)(S_HORIZON + 1) * n; i++)
        obs[i] = (float)(2 * vl_rng_uniform(&rng) - 1);
    for (int t = 0; t < S_HORIZON; t++) {
        seg.actions[t] = (int32_t)vl_rng_below(&rng, S_ACTIONS);
        seg.rewards[t] = (float)vl_rng_uniform(&rng);
        seg.logp[t] = -1.3862944f; // log(1 / S_ACTIONS)
    }
    int rc = vl_segment_encode(&seg, wire, size);
    free(arrays);
    return rc;
}

/* Builds the segment for a size case: two passes, the second correcting the
   float count by the first's miss. Checks it decodes. Exits on failure. */
static uint8_t *s_build(const s_size_t *c, size_t *size)
{
    const size_t per = (S_HORIZON + 1) * sizeof(float); // wire bytes one more float costs
    long n = (long)(c->target / per);
    uint8_t *wire = NULL;
    for (int pass = 0; pass < 2; pass++) {
        free(wire);
        if (n < 1 || s_encode((uint32_t)n, &wire, size) != 0)
            s_die(c->name, "cannot encode the segment");
        n += ((long)c->target - (long)*size) / (long)per;
    }
    vl_limits_t lim = vl_limits_default();
    vl_segment_t seg;
    vl_segment_t peek;
    if (vl_segment_peek(wire, *size, &lim, &peek) != VL_OK)
        s_die(c->name, "the segment's header does not check");
    size_t cap = vl_segment_arrays_size(peek.horizon, &peek.obs_spec);
    void *arrays = malloc(cap);
    if (!arrays || vl_segment_decode(wire, *size, &lim, &seg, arrays, cap) != VL_OK)
        s_die(c->name, "the segment does not decode");
    free(arrays);
    return wire;
}

/* ---- the two threads ---------------------------------------------------- */

typedef struct {
    void *sock; // PUSH, used by the thread while it runs
    const uint8_t *wire;
    size_t size;
    atomic_int stop;
    atomic_uint_fast64_t sent;
} s_sender_t;

typedef struct {
    void *sock;           // PULL or DEALER, used by the thread while it runs
    const uint8_t *hello; // NULL on the direct path
    size_t hello_size;
    size_t size;  // every message must be this long ...
    uint64_t sum; // ... and checksum to this
    atomic_int stop;
    atomic_uint_fast64_t got;
    uint64_t bad; // wrong size or checksum; read after join
} s_receiver_t;

/* Sends the one buffer zero-copy until told to stop. */
static void *s_sender_main(void *arg)
{
    s_sender_t *s = arg;
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        zmq_msg_t m;
        zmq_msg_init_data(&m, (void *)s->wire, s->size, NULL, NULL);
        if (zmq_msg_send(&m, s->sock, 0) >= 0)
            atomic_fetch_add_explicit(&s->sent, 1, memory_order_relaxed);
        else
            zmq_msg_close(&m);
    }
    return NULL;
}

/* Grants the broker credit for S_CREDIT_WINDOW segments beyond those got,
   as a learner does (the broker sends nothing without credit). */
static void s_send_credit(void *sock, uint64_t got)
{
    vl_credit_t c = {
        .policy_id = S_POLICY, .total_granted = got + S_CREDIT_WINDOW, .total_received = got};
    uint8_t *buf;
    size_t size;
    if (vl_credit_encode(&c, &buf, &size) == 0) {
        zmq_send(sock, buf, size, ZMQ_DONTWAIT);
        free(buf);
    }
}

/* Counts and checks what arrives; says hello every S_HELLO_EVERY_S and
   keeps the broker's credit topped up. */
static void *s_receiver_main(void *arg)
{
    s_receiver_t *r = arg;
    double next_hello = 0;
    uint64_t got = 0, credited = 0;
    zmq_msg_t m;
    zmq_msg_init(&m);
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        if (r->hello && s_now() >= next_hello) {
            zmq_send(r->sock, r->hello, r->hello_size, 0);
            s_send_credit(r->sock, credited = got);
            next_hello = s_now() + S_HELLO_EVERY_S;
        }
        if (r->hello && got - credited >= S_CREDIT_WINDOW / 4)
            s_send_credit(r->sock, credited = got);
        if (zmq_msg_recv(&m, r->sock, 0) < 0)
            continue;
        if (zmq_msg_size(&m) != r->size || zmq_msg_more(&m) ||
            (got % S_CHECK_EVERY == 0 && vl_bench_checksum(zmq_msg_data(&m), r->size) != r->sum))
            r->bad++;
        atomic_store_explicit(&r->got, ++got, memory_order_relaxed);
    }
    zmq_msg_close(&m);
    return NULL;
}

/* ---- sockets and the broker --------------------------------------------- */

/* Creates a socket with the bench's options. Exits on failure. */
static void *s_socket(void *ctx, int type)
{
    void *s = ctx ? zmq_socket(ctx, type) : NULL;
    if (!s)
        s_die("zmq_socket", zmq_strerror(zmq_errno()));
    int zero = 0, timeo = S_TIMEO_MS, hwm = S_HWM;
    int64_t max_msg = S_MAX_MSG;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_SNDTIMEO, &timeo, sizeof timeo);
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeo, sizeof timeo);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max_msg, sizeof max_msg);
    return s;
}

static void s_connect(void *s, const char *endpoint)
{
    if (zmq_connect(s, endpoint) != 0)
        s_die(endpoint, zmq_strerror(zmq_errno()));
}

/* Starts `volley broker` on 127.0.0.1:port.. with the inspection given.
   Returns its pid; exits if it cannot start or dies at once. */
static pid_t s_broker_start(const char *volley, int port, const char *inspect)
{
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    char *argv[] = {(char *)volley, "broker",  "--port",    port_s,          "--bind",
                    "127.0.0.1",    "--quiet", "--inspect", (char *)inspect, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        execv(volley, argv);
        fprintf(stderr, "vl_broker_bench: cannot run %s: %s\n", volley, strerror(errno));
        _exit(127);
    }
    if (pid < 0)
        s_die("fork", strerror(errno));
    s_sleep(0.2);
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid)
        s_die(volley, "the broker exited at once (see its message above)");
    return pid;
}

/* SIGTERMs the broker and reaps it, SIGKILL after 3 s. */
static void s_broker_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        s_sleep(0.01);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* ---- the relay: what one more hop costs without the broker's work ------ */

typedef struct {
    void *ctx; // its own, like the broker's process
    void *in;  // PULL bound on 127.0.0.1:*
    void *out; // PUSH bound on 127.0.0.1:*
    pthread_t tid;
    atomic_int stop;
} s_relay_t;

/* Moves each message from in to out as it is, blocking on a full out. */
static void *s_relay_main(void *arg)
{
    s_relay_t *y = arg;
    zmq_msg_t m;
    zmq_msg_init(&m);
    while (!atomic_load_explicit(&y->stop, memory_order_relaxed)) {
        if (zmq_msg_recv(&m, y->in, 0) < 0)
            continue;
        while (zmq_msg_send(&m, y->out, 0) < 0 && !atomic_load(&y->stop))
            ;
    }
    zmq_msg_close(&m);
    return NULL;
}

/* Binds sock on 127.0.0.1:* and writes the endpoint into ep. Exits on failure. */
static void s_bind_any(void *sock, char *ep, size_t cap)
{
    if (zmq_bind(sock, "tcp://127.0.0.1:*") != 0 ||
        zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, ep, &cap) != 0)
        s_die("bind", "cannot bind on 127.0.0.1");
}

/* Starts the relay; sets its input and output endpoints. */
static void s_relay_start(s_relay_t *y, char *in_ep, char *out_ep, size_t cap)
{
    y->ctx = zmq_ctx_new();
    y->in = s_socket(y->ctx, ZMQ_PULL);
    y->out = s_socket(y->ctx, ZMQ_PUSH);
    s_bind_any(y->in, in_ep, cap);
    s_bind_any(y->out, out_ep, cap);
    if (pthread_create(&y->tid, NULL, s_relay_main, y) != 0)
        s_die("relay", "cannot start its thread");
}

static void s_relay_stop(s_relay_t *y)
{
    atomic_store(&y->stop, 1);
    pthread_join(y->tid, NULL);
    zmq_close(y->in);
    zmq_close(y->out);
    zmq_ctx_term(y->ctx);
}

/* ---- one path at one size ------------------------------------------------- */

typedef struct {
    s_path_t path;
    pid_t broker; // 0 on the direct path
    int port;     // the broker's base port
    const uint8_t *hello;
    size_t hello_size;
} s_route_t;

/* Opens the sender's and receiver's sockets for a route (starting the relay
   on S_RELAY). */
static void s_open(const s_route_t *rt, void *send_ctx, void *recv_ctx, s_sender_t *s,
                   s_receiver_t *r, s_relay_t *relay)
{
    char ep[128], ep2[128];
    s->sock = s_socket(send_ctx, ZMQ_PUSH);
    if (rt->path == S_DIRECT || rt->path == S_RELAY) {
        if (rt->path == S_DIRECT)
            s_bind_any(s->sock, ep, sizeof ep);
        else
            s_relay_start(relay, ep2, ep, sizeof ep);
        if (rt->path == S_RELAY)
            s_connect(s->sock, ep2);
        r->sock = s_socket(recv_ctx, ZMQ_PULL);
        s_connect(r->sock, ep);
        return;
    }
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", rt->port + VL_PORT_SEGMENTS);
    s_connect(s->sock, ep);
    r->sock = s_socket(recv_ctx, ZMQ_DEALER);
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", rt->port + VL_PORT_LEARNERS);
    s_connect(r->sock, ep);
    r->hello = rt->hello;
    r->hello_size = rt->hello_size;
}

/* Waits until the receiver saw a message; exits after S_FIRST_WAIT_S. */
static void s_wait_first(s_receiver_t *r, const char *what)
{
    for (double t0 = s_now(); atomic_load(&r->got) == 0; s_sleep(0.01))
        if (s_now() - t0 > S_FIRST_WAIT_S)
            s_die(what, "nothing arrived (is the broker running and the hello heard?)");
}

/* Times runs windows of run_s each; keeps the best in res. */
static void s_windows(s_receiver_t *r, pid_t broker, int runs, double run_s, s_result_t *res)
{
    for (int i = 0; i < runs; i++) {
        uint64_t n0 = atomic_load(&r->got);
        double t0 = s_now(), c0 = s_cpu_self(), b0 = broker ? s_cpu_of(broker) : 0;
        s_sleep(run_s);
        uint64_t n1 = atomic_load(&r->got);
        double wall = s_now() - t0, rate = (double)(n1 - n0) / wall;
        if (rate > res->rate) {
            res->rate = rate;
            res->bench_cores = (s_cpu_self() - c0) / wall;
            res->broker_cores = broker ? (s_cpu_of(broker) - b0) / wall : 0;
        }
    }
}

/* Waits until everything sent arrived or the receiver is idle. */
static void s_drain(s_receiver_t *r, uint64_t sent)
{
    uint64_t last = atomic_load(&r->got);
    double idle_since = s_now();
    while (last < sent && s_now() - idle_since < S_DRAIN_IDLE_S) {
        s_sleep(0.01);
        uint64_t now = atomic_load(&r->got);
        if (now != last)
            idle_since = s_now();
        last = now;
    }
}

/* Measures one route at one size. Exits if any message was wrong. */
static s_result_t s_measure(const s_route_t *rt, const s_size_t *c, const uint8_t *wire,
                            size_t size, int runs, double run_s)
{
    void *send_ctx = zmq_ctx_new(), *recv_ctx = zmq_ctx_new();
    s_sender_t s = {.wire = wire, .size = size};
    s_receiver_t r = {.size = size, .sum = vl_bench_checksum(wire, size)};
    s_relay_t relay = {0};
    s_open(rt, send_ctx, recv_ctx, &s, &r, &relay);
    pthread_t st, rt_id;
    if (pthread_create(&rt_id, NULL, s_receiver_main, &r) != 0)
        s_die(c->name, "cannot start the receiver thread");
    if (rt->broker)
        s_sleep(S_HELLO_WAIT_S); // the broker drops segments of a policy no learner serves
    if (pthread_create(&st, NULL, s_sender_main, &s) != 0)
        s_die(c->name, "cannot start the sender thread");
    s_wait_first(&r, s_path_names[rt->path]);
    s_sleep(fmin(run_s / 2, S_WARMUP_S)); // queues fill, the broker's scratch grows
    s_result_t res = {0};
    s_windows(&r, rt->broker, runs, run_s, &res);
    atomic_store(&s.stop, 1);
    pthread_join(st, NULL);
    res.sent = atomic_load(&s.sent);
    s_drain(&r, res.sent);
    atomic_store(&r.stop, 1);
    pthread_join(rt_id, NULL);
    res.lost = res.sent - atomic_load(&r.got);
    if (rt->path == S_RELAY)
        s_relay_stop(&relay);
    zmq_close(s.sock);
    zmq_close(r.sock);
    zmq_ctx_term(send_ctx);
    zmq_ctx_term(recv_ctx);
    if (r.bad)
        s_die(c->name, "a message arrived with the wrong size or checksum");
    return res;
}

/* ---- output and main --------------------------------------------------- */

static void s_print_row(const s_size_t *c, size_t size, s_path_t p, const s_result_t *r,
                        double direct)
{
    char ratio[16] = "-";
    if (p != S_DIRECT)
        snprintf(ratio, sizeof ratio, "%.2fx", r->rate / direct);
    char broker[16] = "-";
    if (s_inspect_arg[p])
        snprintf(broker, sizeof broker, "%.2f", r->broker_cores);
    printf("  %-8s %10zu  %-26s %11.0f %7.2f %9s %7.2f %7s %8llu / %llu\n", c->name, size,
           s_path_names[p], r->rate, r->rate * (double)size / 1e9, ratio, r->bench_cores, broker,
           (unsigned long long)r->lost, (unsigned long long)r->sent);
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: vl_broker_bench [--volley PATH] [--quick] [--help]\n"
            "  Benchmarks the broker forwarding segments actor -> broker -> learner\n"
            "  (--inspect full and header) beside a direct PUSH -> PULL and a bare relay\n"
            "  thread (one more hop, no checks), 16 and 256 KiB segments.\n"
            "  --volley PATH  the volley executable to run the broker from\n"
            "                 (default: volley beside this benchmark)\n"
            "  --quick        %d windows of %.2f s per figure instead of %d of %.1f s\n"
            "  --help         this text\n",
            S_QUICK_RUNS, S_QUICK_RUN_S, S_RUNS, S_RUN_S);
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

/* Starts a broker for each inspection; fills routes. */
static void s_routes_start(const char *volley, s_route_t *routes, const uint8_t *hello,
                           size_t hello_size)
{
    int from = 20000 + (int)(getpid() % 20000);
    for (int p = 0; p < S_NPATHS; p++) {
        routes[p] = (s_route_t){.path = (s_path_t)p, .hello = hello, .hello_size = hello_size};
        if (!s_inspect_arg[p])
            continue;
        routes[p].port = vl_free_base_port(from);
        if (routes[p].port < 0)
            s_die("ports", "no free base port");
        from = routes[p].port + VL_PORT_COUNT;
        routes[p].broker = s_broker_start(volley, routes[p].port, s_inspect_arg[p]);
        printf("  broker --inspect %-6s pid %d, ports %d..%d\n", s_inspect_arg[p],
               (int)routes[p].broker, routes[p].port, routes[p].port + VL_PORT_COUNT - 1);
    }
    fflush(stdout); // the pids, for perf record -p, before the runs
}

int main(int argc, char **argv)
{
    char dflt[4200];
    const char *volley = s_take_volley(&argc, argv, dflt, sizeof dflt);
    if (!volley) {
        fprintf(stderr, "vl_broker_bench: --volley wants a path\n");
        return 2;
    }
    vl_bench_plan_t plan;
    int rc =
        vl_bench_parse(argc, argv, "vl_broker_bench", s_usage, (vl_bench_plan_t){S_RUNS, S_RUN_S},
                       (vl_bench_plan_t){S_QUICK_RUNS, S_QUICK_RUN_S}, &plan);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (access(volley, X_OK) != 0) {
        fprintf(stderr, "vl_broker_bench: %s: not executable (give --volley PATH)\n", volley);
        return 1;
    }
    uint8_t *hello;
    size_t hello_size;
    if (vl_hello_encode(S_POLICY, &hello, &hello_size) != 0)
        s_die("hello", "cannot encode");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("vl_broker_bench: actor PUSH -> volley broker (PULL, inspect, ROUTER) -> learner "
           "DEALER,\n"
           "  beside a direct PUSH -> PULL, over tcp 127.0.0.1, same segment bytes, same run\n"
           "  %ld cores online: the broker process (main + I/O thread), the sender and receiver\n"
           "  threads and their I/O threads (one ZeroMQ context each) %s\n"
           "  best of %d windows of %.2f s after %.2f s warm-up; GB/s = 1e9 wire bytes/s;\n"
           "  cores = CPU s / wall s in the best window (bench: this process, the relay thread\n"
           "  included; broker: the child); lost = sent but not received\n",
           cores, cores <= 2 ? "compete for 2 cores" : "share the machine", plan.runs, plan.run_s,
           fmin(plan.run_s / 2, S_WARMUP_S));
    s_route_t routes[S_NPATHS];
    s_routes_start(volley, routes, hello, hello_size);
    s_result_t res[S_NSIZES][S_NPATHS];
    size_t sizes[S_NSIZES];
    for (size_t k = 0; k < S_NSIZES; k++) {
        uint8_t *wire = s_build(&s_sizes[k], &sizes[k]);
        for (int p = 0; p < S_NPATHS; p++)
            res[k][p] = s_measure(&routes[p], &s_sizes[k], wire, sizes[k], plan.runs, plan.run_s);
        free(wire);
    }
    for (int p = 0; p < S_NPATHS; p++)
        if (routes[p].broker)
            s_broker_stop(routes[p].broker);
    printf("\n  %-8s %10s  %-26s %11s %7s %9s %7s %7s %17s\n", "size", "wire B", "path",
           "segments/s", "GB/s", "x direct", "bench", "broker", "lost / sent");
    for (size_t k = 0; k < S_NSIZES; k++)
        for (int p = 0; p < S_NPATHS; p++)
            s_print_row(&s_sizes[k], sizes[k], (s_path_t)p, &res[k][p], res[k][S_DIRECT].rate);
    printf("\n");
    for (size_t k = 0; k < S_NSIZES; k++)
        for (int p = S_FULL; p < S_NPATHS; p++) {
            double x = res[k][p].rate / res[k][S_DIRECT].rate;
            printf("  %s, --inspect %s: target >= %.1fx direct: %s (%.2fx)\n", s_sizes[k].name,
                   s_inspect_arg[p], S_TARGET, x >= S_TARGET ? "met" : "missed", x);
        }
    free(hello);
    return 0;
}
