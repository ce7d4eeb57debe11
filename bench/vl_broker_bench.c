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
      broker record   broker full with `--record FILE --record-flush
                      everysec` as well: a fresh broker per size case,
                      recording into FILE in a new mkdtemp directory under
                      --record-dir (default /tmp), both removed after the
                      case; compared with broker full of the same run (the
                      target: recording costs <= 10%). After the broker stops
                      the file must hold a valid header and whole records
                      of the segment's size, at least as many as arrived
      broker header   the same as broker full with `--inspect header`
      broker CURVE    broker full with CURVE on every port: `volley keygen`
                      run once into a new mkdtemp directory (removed at
                      exit), the broker started with --cert/--allow, the
                      sender PUSH and receiver DEALER CURVE clients with the
                      actor's and learner's certificates; compared with
                      broker full of the same run (no target: the ratio is
                      printed)

    Sender and receiver each have their own ZeroMQ context (one I/O thread
    each) on every path. After a warm-up, best of N wall-clock windows;
    segments/s and GB/s (1e9 wire bytes) as the receiver saw them. After a
    path's windows the sender stops and the receiver drains; `lost` is sent
    minus received (the broker drops what a full learner queue refuses).

    Every broker child is stopped on every exit: a normal end stops each in
    turn, s_die and SIGINT/SIGTERM/SIGHUP stop all that run (and remove the
    recording and the keys), and each child asks for SIGTERM should the
    bench die unannounced (PR_SET_PDEATHSIG). */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "bench/vl_bench.h"
#include "common/vl_curve.h"
#include "common/vl_opts.h"
#include "common/vl_rng.h"
#include "messages/vl_codec.h"
#include "messages/vl_stream.h"

#define S_HORIZON       16      // steps per segment
#define S_ACTIONS       4       // choices of the segments' one discrete action
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
#define S_RECORD_TARGET 0.9       // recorded / unrecorded full inspection: costs <= 10%
#define S_STOP_WAIT_S   3.0       // a broker not gone this long after SIGTERM is killed
#define S_FLUSH_WAIT_S  60.0      // ... one that is writing out its recording
#define S_MAX_KIDS      8         // broker children alive at once, at most

/* ---- cases ----------------------------------------------------------------- */

typedef struct {
    const char *name;
    size_t target; // wire bytes aimed at
} s_size_t;

static const s_size_t s_sizes[] = {{"16 KiB", 16 << 10}, {"256 KiB", 256 << 10}};
#define S_NSIZES (sizeof s_sizes / sizeof s_sizes[0])

typedef enum { S_DIRECT, S_RELAY, S_FULL, S_CURVE, S_RECORD, S_HEADER, S_NPATHS } s_path_t;

static const char *s_path_names[S_NPATHS] = {
    [S_DIRECT] = "direct PUSH -> PULL",
    [S_RELAY] = "bare relay thread",
    [S_FULL] = "broker, --inspect full",
    [S_CURVE] = "broker, --inspect full, CURVE",
    [S_RECORD] = "broker, --inspect full, --record",
    [S_HEADER] = "broker, --inspect header",
};
static const char *s_inspect_arg[S_NPATHS] = {
    [S_FULL] = "full", [S_CURVE] = "full", [S_RECORD] = "full", [S_HEADER] = "header"};

/* One path's best window and its tallies. */
typedef struct {
    double rate;         // segments/s, best window
    double bench_cores;  // CPU s / wall s of this process (sender, receiver, I/O threads)
    double broker_cores; // ... of the broker child; 0 on the direct path
    uint64_t sent;
    uint64_t lost;        // sent, never received
    uint64_t got;         // received
    double rec_mbps;      // recording: 1e6 bytes/s the file grew in the best window
    uint64_t rec_bytes;   // ... the file's size once its broker stopped
    uint64_t rec_records; // ... whole records in it
} s_result_t;

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

/* ---- the broker children and the recording: stopped and removed on every exit -- */

static volatile sig_atomic_t s_kids[S_MAX_KIDS]; // broker children alive; 0: a free slot
static char s_rec_dir[4096], s_rec_file[4200];   // the recording in progress, if ...
static volatile sig_atomic_t s_rec_live;         // ... this is set

/* The CURVE certificates `volley keygen` wrote, removed at exit. */
static const char *s_key_names[] = {
    "broker.cert",        "broker.cert_secret",   "actor.cert",          "actor.cert_secret",
    "learner.cert",       "learner.cert_secret",  "monitor.cert",        "monitor.cert_secret",
    "allowed/actor.cert", "allowed/learner.cert", "allowed/monitor.cert"};
#define S_NKEYS (sizeof s_key_names / sizeof s_key_names[0])
static char s_key_dir[4096], s_key_allowed[4200]; // the key directory and its allowed/, if ...
static char s_key_paths[S_NKEYS][4200];           // ... holding these, and ...
static volatile sig_atomic_t s_keys_live;         // ... this is set

/* Notes a broker child, for s_cleanup. */
static void s_kid_add(pid_t pid)
{
    for (int i = 0; i < S_MAX_KIDS; i++)
        if (s_kids[i] == 0) {
            s_kids[i] = pid;
            return;
        }
    kill(pid, SIGTERM); // never happens: the bench runs at most S_MAX_KIDS brokers
}

/* Forgets a broker child once reaped. */
static void s_kid_forget(pid_t pid)
{
    for (int i = 0; i < S_MAX_KIDS; i++)
        if (s_kids[i] == pid)
            s_kids[i] = 0;
}

/* Removes the recording in progress and its directory, if any.
   Async-signal-safe. */
static void s_rec_remove(void)
{
    if (!s_rec_live)
        return;
    s_rec_live = 0;
    unlink(s_rec_file); // a broker still writing it keeps it open: the space goes when it exits
    rmdir(s_rec_dir);
}

/* Removes the CURVE key directory, if any. Async-signal-safe. */
static void s_keys_remove(void)
{
    if (!s_keys_live)
        return;
    s_keys_live = 0;
    for (size_t i = 0; i < S_NKEYS; i++)
        unlink(s_key_paths[i]);
    rmdir(s_key_allowed);
    rmdir(s_key_dir);
}

/* Stops every broker child still running and removes the recording and
   the keys. Async-signal-safe, for s_die and the signal handler. */
static void s_cleanup(void)
{
    for (int i = 0; i < S_MAX_KIDS; i++)
        if (s_kids[i] > 0)
            kill(s_kids[i], SIGTERM);
    s_rec_remove();
    s_keys_remove();
    for (int i = 0; i < S_MAX_KIDS; i++)
        if (s_kids[i] > 0) {
            vl_bench_reap(s_kids[i], S_STOP_WAIT_S);
            s_kids[i] = 0;
        }
}

/* Prints why, stops the brokers and exits: a figure over wrong output means
   nothing. */
static void s_die(const char *what, const char *why)
{
    fprintf(stderr, "vl_broker_bench: %s: %s\n", what, why);
    s_cleanup();
    exit(1);
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
                        .action = vl_action_discrete(S_ACTIONS),
                        .send_ns = 1700000000000000000ll};
    size_t cap = vl_segment_arrays_size(S_HORIZON, &spec, seg.action.dims, 0);
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
        seg.actions[t] = (float)vl_rng_below(&rng, S_ACTIONS);
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
    size_t cap = vl_segment_arrays_size(peek.horizon, &peek.obs_spec, peek.action.dims, 0);
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

/* Starts `volley broker` on 127.0.0.1:port.. with the inspection given,
   recording into record unless it is NULL, with CURVE (the keys in
   s_key_dir) if curve. Returns its pid; exits if it cannot start or dies at
   once. */
static pid_t s_broker_start(const char *volley, int port, const char *inspect, const char *record,
                            int curve)
{
    char port_s[16], cert[4200];
    snprintf(port_s, sizeof port_s, "%d", port);
    snprintf(cert, sizeof cert, "%s/broker.cert", s_key_dir);
    char *argv[20] = {(char *)volley, "broker",  "--port",    port_s,         "--bind",
                      "127.0.0.1",    "--quiet", "--inspect", (char *)inspect};
    int n = 9;
    if (record) {
        argv[n++] = "--record";
        argv[n++] = (char *)record;
        argv[n++] = "--record-flush";
        argv[n++] = "everysec";
    }
    if (curve) {
        argv[n++] = "--cert";
        argv[n++] = cert;
        argv[n++] = "--allow";
        argv[n++] = s_key_allowed;
    }
    argv[n] = NULL;
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); // the bench dying unannounced stops it too
        if (getppid() != parent)          // ... even if that happened before the line above
            _exit(127);
        execv(volley, argv);
        fprintf(stderr, "vl_broker_bench: cannot run %s: %s\n", volley, strerror(errno));
        _exit(127);
    }
    if (pid < 0)
        s_die("fork", strerror(errno));
    s_kid_add(pid);
    vl_bench_sleep(0.2);
    if (waitpid(pid, NULL, WNOHANG) == pid) {
        s_kid_forget(pid);
        s_die(volley, "the broker exited at once (see its message above)");
    }
    return pid;
}

/* SIGTERMs the broker and reaps it, SIGKILL after wait_s. Returns its wait
   status. */
static int s_broker_stop(pid_t pid, double wait_s)
{
    kill(pid, SIGTERM);
    int status = vl_bench_reap(pid, wait_s);
    s_kid_forget(pid);
    return status;
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
    const vl_curve_t *sender_curve;   // S_CURVE: the actor's identity, else NULL
    const vl_curve_t *receiver_curve; // ... and the learner's
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
    if (rt->sender_curve && vl_curve_apply(rt->sender_curve, s->sock) != 0)
        s_die("CURVE", "libzmq refused the sender's options");
    s_connect(s->sock, ep);
    r->sock = s_socket(recv_ctx, ZMQ_DEALER);
    if (rt->receiver_curve && vl_curve_apply(rt->receiver_curve, r->sock) != 0)
        s_die("CURVE", "libzmq refused the receiver's options");
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", rt->port + VL_PORT_LEARNERS);
    s_connect(r->sock, ep);
    r->hello = rt->hello;
    r->hello_size = rt->hello_size;
}

/* Waits until the receiver saw a message; exits after S_FIRST_WAIT_S. */
static void s_wait_first(s_receiver_t *r, const char *what)
{
    for (double t0 = s_now(); atomic_load(&r->got) == 0; vl_bench_sleep(0.01))
        if (s_now() - t0 > S_FIRST_WAIT_S)
            s_die(what, "nothing arrived (is the broker running and the hello heard?)");
}

/* Returns path's size in bytes, 0 if it cannot be read. */
static uint64_t s_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Times runs windows of run_s each; keeps the best in res, with how fast
   the recording rec grew in it (rec NULL: no recording). */
static void s_windows(s_receiver_t *r, pid_t broker, const char *rec, int runs, double run_s,
                      s_result_t *res)
{
    for (int i = 0; i < runs; i++) {
        uint64_t n0 = atomic_load(&r->got), f0 = rec ? s_file_size(rec) : 0;
        double t0 = s_now(), c0 = s_cpu_self(), b0 = broker ? s_cpu_of(broker) : 0;
        vl_bench_sleep(run_s);
        uint64_t n1 = atomic_load(&r->got), f1 = rec ? s_file_size(rec) : 0;
        double wall = s_now() - t0, rate = (double)(n1 - n0) / wall;
        if (rate > res->rate) {
            res->rate = rate;
            res->bench_cores = (s_cpu_self() - c0) / wall;
            res->broker_cores = broker ? (s_cpu_of(broker) - b0) / wall : 0;
            res->rec_mbps = (double)(f1 - f0) / wall / 1e6;
        }
    }
}

/* Waits until everything sent arrived or the receiver is idle. */
static void s_drain(s_receiver_t *r, uint64_t sent)
{
    uint64_t last = atomic_load(&r->got);
    double idle_since = s_now();
    while (last < sent && s_now() - idle_since < S_DRAIN_IDLE_S) {
        vl_bench_sleep(0.01);
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
        vl_bench_sleep(S_HELLO_WAIT_S); // the broker drops segments of a policy no learner serves
    if (pthread_create(&st, NULL, s_sender_main, &s) != 0)
        s_die(c->name, "cannot start the sender thread");
    s_wait_first(&r, s_path_names[rt->path]);
    vl_bench_sleep(fmin(run_s / 2, S_WARMUP_S)); // queues fill, the broker's scratch grows
    s_result_t res = {0};
    s_windows(&r, rt->broker, rt->path == S_RECORD ? s_rec_file : NULL, runs, run_s, &res);
    atomic_store(&s.stop, 1);
    pthread_join(st, NULL);
    res.sent = atomic_load(&s.sent);
    s_drain(&r, res.sent);
    atomic_store(&r.stop, 1);
    pthread_join(rt_id, NULL);
    res.got = atomic_load(&r.got);
    res.lost = res.sent - res.got;
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

/* ---- the recording path ------------------------------------------------ */

/* Makes a fresh directory under parent and names the recording in it
   (s_rec_dir, s_rec_file, removed by s_rec_remove). Exits on failure. */
static void s_rec_create(const char *parent, const s_size_t *c)
{
    snprintf(s_rec_dir, sizeof s_rec_dir, "%s/vl_broker_bench.XXXXXX", parent);
    if (!mkdtemp(s_rec_dir))
        s_die(s_rec_dir, strerror(errno));
    snprintf(s_rec_file, sizeof s_rec_file, "%s/%.*s.vlrec", s_rec_dir, (int)strcspn(c->name, " "),
             c->name); // "16 KiB" -> 16.vlrec
    s_rec_live = 1;
}

/* Checks the stopped broker's recording: a valid header, a first record
   that is the segment sent, then only whole records of its size, at least
   as many as arrived. Sets res's rec_bytes and rec_records; exits if any
   of it fails (a recording of nothing would make a false "met"). */
static void s_rec_check(const s_size_t *c, const uint8_t *wire, size_t size, s_result_t *res)
{
    char why[256];
    vl_stream_reader_t *rd = vl_stream_reader_open(s_rec_file, why, sizeof why);
    if (!rd)
        s_die(s_rec_file, why);
    uint64_t header = vl_stream_reader_offset(rd), per = size + VL_STREAM_RECORD;
    vl_stream_record_t rec;
    int ok = vl_stream_next(rd, &rec) == VL_STREAM_OK && rec.size == size &&
             memcmp(rec.data, wire, size) == 0;
    vl_stream_reader_destroy(&rd);
    res->rec_bytes = s_file_size(s_rec_file);
    if (!ok || res->rec_bytes < header || (res->rec_bytes - header) % per != 0)
        s_die(c->name, "the recording is not whole records of the segment sent");
    res->rec_records = (res->rec_bytes - header) / per;
    if (res->rec_records < res->got)
        s_die(c->name, "the recording holds fewer segments than arrived");
}

/* Measures the recording route at one size: a fresh broker recording into
   a new directory under dir, stopped (writing out the rest), its file
   checked, then removed. */
static s_result_t s_measure_record(s_route_t *rt, const char *volley, const char *dir,
                                   const s_size_t *c, const uint8_t *wire, size_t size, int runs,
                                   double run_s)
{
    s_rec_create(dir, c);
    if ((rt->port = vl_free_base_port(rt->port)) < 0)
        s_die("ports", "no free base port");
    rt->broker = s_broker_start(volley, rt->port, s_inspect_arg[rt->path], s_rec_file, 0);
    s_result_t res = s_measure(rt, c, wire, size, runs, run_s);
    int status = s_broker_stop(rt->broker, S_FLUSH_WAIT_S);
    rt->broker = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        s_die(c->name, "the recording broker failed (see its message above)");
    s_rec_check(c, wire, size, &res);
    s_rec_remove();
    return res;
}

/* ---- the CURVE path's keys ---------------------------------------------- */

/* Runs `volley keygen` into a new directory under /tmp (s_key_dir, removed
   by s_keys_remove) and loads the actor's and learner's identities into
   *sender and *receiver. Exits on failure. */
static void s_keys_create(const char *volley, vl_curve_t **sender, vl_curve_t **receiver)
{
    snprintf(s_key_dir, sizeof s_key_dir, "/tmp/vl_broker_bench_keys.XXXXXX");
    if (!mkdtemp(s_key_dir))
        s_die(s_key_dir, strerror(errno));
    snprintf(s_key_allowed, sizeof s_key_allowed, "%s/allowed", s_key_dir);
    for (size_t i = 0; i < S_NKEYS; i++)
        snprintf(s_key_paths[i], sizeof s_key_paths[i], "%s/%s", s_key_dir, s_key_names[i]);
    s_keys_live = 1;
    fflush(NULL); // the child's freopen would write out a copy of what is buffered
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        if (!freopen("/dev/null", "w", stdout))
            _exit(127);
        execl(volley, volley, "keygen", s_key_dir, (char *)NULL);
        fprintf(stderr, "vl_broker_bench: cannot run %s: %s\n", volley, strerror(errno));
        _exit(127);
    }
    if (pid < 0)
        s_die("fork", strerror(errno));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        s_die("volley keygen", "failed (see its message above)");
    char why[512], broker[4200], actor[4200], learner[4200];
    snprintf(broker, sizeof broker, "%s/broker.cert", s_key_dir);
    snprintf(actor, sizeof actor, "%s/actor.cert", s_key_dir);
    snprintf(learner, sizeof learner, "%s/learner.cert", s_key_dir);
    *sender = vl_curve_client_new(actor, broker, why, sizeof why);
    *receiver = *sender ? vl_curve_client_new(learner, broker, why, sizeof why) : NULL;
    if (!*receiver)
        s_die("CURVE", why);
}

/* Writes dir's filesystem type and free space into out. */
static void s_fs_describe(const char *dir, char *out, size_t cap)
{
    static const struct {
        unsigned long magic;
        const char *name;
    } fs[] = {{0xEF53, "ext2/3/4"},  {0x01021994, "tmpfs"},     {0x58465342, "xfs"},
              {0x9123683E, "btrfs"}, {0x794C7630, "overlayfs"}, {0x6969, "nfs"},
              {0x2FC12FC1, "zfs"},   {0xF2F52010, "f2fs"},      {0x858458F6, "ramfs"}};
    struct statfs sf;
    if (statfs(dir, &sf) != 0)
        s_die(dir, strerror(errno));
    unsigned long magic = (unsigned long)sf.f_type & 0xFFFFFFFFul;
    const char *name = NULL;
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
        if (fs[i].magic == magic)
            name = fs[i].name;
    char type[32];
    if (name)
        snprintf(type, sizeof type, "%s", name);
    else
        snprintf(type, sizeof type, "f_type 0x%lx", magic);
    snprintf(out, cap, "%s, %.1f GB free", type, (double)sf.f_bavail * (double)sf.f_bsize / 1e9);
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
    printf("  %-8s %10zu  %-32s %11.0f %7.2f %9s %7.2f %7s %8llu / %llu\n", c->name, size,
           s_path_names[p], r->rate, r->rate * (double)size / 1e9, ratio, r->bench_cores, broker,
           (unsigned long long)r->lost, (unsigned long long)r->sent);
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: vl_broker_bench [--volley PATH] [--record-dir DIR] [--quick] [--help]\n"
            "  Benchmarks the broker forwarding segments actor -> broker -> learner\n"
            "  (--inspect full, the same with CURVE on every port, the same recording\n"
            "  everything with --record, and --inspect header) beside a direct PUSH -> PULL\n"
            "  and a bare relay thread (one more hop, no checks), 16 and 256 KiB segments.\n"
            "  --volley PATH     the volley executable to run the broker from\n"
            "                    (default: volley beside this benchmark)\n"
            "  --record-dir DIR  where the recordings go, each in a new directory removed\n"
            "                    after its case (default /tmp; a full run writes several GB\n"
            "                    per case at a time)\n"
            "  --quick           %d windows of %.2f s per figure instead of %d of %.1f s\n"
            "  --help            this text\n",
            S_QUICK_RUNS, S_QUICK_RUN_S, S_RUNS, S_RUN_S);
}

/* Removes "flag VALUE" from argv, setting *value. Returns 1 if taken, 0 if
   flag is absent (*value untouched), -1 if VALUE is missing. */
static int s_take(int *argc, char **argv, const char *flag, const char **value)
{
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], flag) != 0)
            continue;
        if (i + 1 == *argc)
            return -1;
        *value = argv[i + 1];
        memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 1) * sizeof *argv); // NULL too
        *argc -= 2;
        return 1;
    }
    return 0;
}

/* Starts a broker for each inspection but the recording's (started per
   case), for which it finds a base port to start from; fills routes. */
static void s_routes_start(const char *volley, s_route_t *routes, const uint8_t *hello,
                           size_t hello_size, const vl_curve_t *sender_curve,
                           const vl_curve_t *receiver_curve)
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
        if (p == S_RECORD)
            continue;
        routes[p].broker =
            s_broker_start(volley, routes[p].port, s_inspect_arg[p], NULL, p == S_CURVE);
        if (p == S_CURVE) {
            routes[p].sender_curve = sender_curve;
            routes[p].receiver_curve = receiver_curve;
        }
        printf("  broker --inspect %-6s%s pid %d, ports %d..%d\n", s_inspect_arg[p],
               p == S_CURVE ? " CURVE" : "", (int)routes[p].broker, routes[p].port,
               routes[p].port + VL_PORT_COUNT - 1);
    }
    fflush(stdout); // the pids, for perf record -p, before the runs
}

/* Prints what is measured, how, and where the recordings go. */
static void s_print_intro(const vl_bench_plan_t *plan, const char *rec_dir)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char fs[96];
    s_fs_describe(rec_dir, fs, sizeof fs);
    printf("vl_broker_bench: actor PUSH -> volley broker (PULL, inspect, ROUTER) -> learner "
           "DEALER,\n"
           "  beside a direct PUSH -> PULL, over tcp 127.0.0.1, same segment bytes, same run\n"
           "  %ld cores online: the broker process (main + I/O thread), the sender and receiver\n"
           "  threads and their I/O threads (one ZeroMQ context each) %s\n"
           "  best of %d windows of %.2f s after %.2f s warm-up; GB/s = 1e9 wire bytes/s;\n"
           "  cores = CPU s / wall s in the best window (bench: this process, the relay thread\n"
           "  included; broker: the child); lost = sent but not received\n"
           "  --record: into %s/vl_broker_bench.XXXXXX/ (%s), --record-flush\n"
           "  everysec, a fresh broker per size case, the file checked and removed after it;\n"
           "  MB/s = 1e6 bytes/s the file grew in the best window\n"
           "  CURVE: keys from `volley keygen` in /tmp/vl_broker_bench_keys.XXXXXX/ (removed\n"
           "  at exit), broker --cert/--allow, sender and receiver CURVE clients (the actor's\n"
           "  and learner's certificates)\n",
           cores, cores <= 2 ? "compete for 2 cores" : "share the machine", plan->runs, plan->run_s,
           fmin(plan->run_s / 2, S_WARMUP_S), rec_dir, fs);
}

/* Prints the table and the targets. */
static void s_print_results(s_result_t res[S_NSIZES][S_NPATHS], const size_t *sizes)
{
    printf("\n  %-8s %10s  %-32s %11s %7s %9s %7s %7s %17s\n", "size", "wire B", "path",
           "segments/s", "GB/s", "x direct", "bench", "broker", "lost / sent");
    for (size_t k = 0; k < S_NSIZES; k++)
        for (int p = 0; p < S_NPATHS; p++)
            s_print_row(&s_sizes[k], sizes[k], (s_path_t)p, &res[k][p], res[k][S_DIRECT].rate);
    printf("\n");
    for (size_t k = 0; k < S_NSIZES; k++) {
        const s_result_t *r = &res[k][S_RECORD];
        printf("  %s, --record: %.2f GB file, %llu records >= %llu received; %.0f MB/s "
               "written in the best window\n",
               s_sizes[k].name, (double)r->rec_bytes / 1e9, (unsigned long long)r->rec_records,
               (unsigned long long)r->got, r->rec_mbps);
    }
    for (size_t k = 0; k < S_NSIZES; k++)
        for (int p = S_FULL; p < S_NPATHS; p++) {
            if (p == S_RECORD || p == S_CURVE)
                continue;
            double x = res[k][p].rate / res[k][S_DIRECT].rate;
            printf("  %s, --inspect %s: target >= %.1fx direct: %s (%.2fx)\n", s_sizes[k].name,
                   s_inspect_arg[p], S_TARGET, x >= S_TARGET ? "met" : "missed", x);
        }
    for (size_t k = 0; k < S_NSIZES; k++) {
        double x = res[k][S_RECORD].rate / res[k][S_FULL].rate;
        printf("  %s, --inspect full, --record: target recording costs <= %.0f%%: %s (%.2fx "
               "unrecorded)\n",
               s_sizes[k].name, 100 * (1 - S_RECORD_TARGET),
               x >= S_RECORD_TARGET ? "met" : "missed", x);
    }
    for (size_t k = 0; k < S_NSIZES; k++) {
        double x = res[k][S_FULL].rate / res[k][S_CURVE].rate;
        printf("  %s, --inspect full, CURVE: CURVE costs %.2fx (%.0f segments/s, %.2fx the "
               "unsecured %.0f; no target)\n",
               s_sizes[k].name, x, res[k][S_CURVE].rate, 1 / x, res[k][S_FULL].rate);
    }
}

/* Parses the arguments into *volley (dflt: volley beside argv[0]), *rec_dir
   and *plan. Returns -1 to run, else the exit code. */
static int s_args(int argc, char **argv, char *dflt, size_t cap, const char **volley,
                  const char **rec_dir, vl_bench_plan_t *plan)
{
    char self[4096];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(dflt, cap, "%s/volley", dirname(self));
    *volley = dflt;
    *rec_dir = "/tmp";
    if (s_take(&argc, argv, "--volley", volley) < 0 ||
        s_take(&argc, argv, "--record-dir", rec_dir) < 0) {
        fprintf(stderr, "vl_broker_bench: --volley and --record-dir want a path\n");
        return 2;
    }
    int rc =
        vl_bench_parse(argc, argv, "vl_broker_bench", s_usage, (vl_bench_plan_t){S_RUNS, S_RUN_S},
                       (vl_bench_plan_t){S_QUICK_RUNS, S_QUICK_RUN_S}, plan);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (access(*volley, X_OK) != 0) {
        fprintf(stderr, "vl_broker_bench: %s: not executable (give --volley PATH)\n", *volley);
        return 1;
    }
    return -1;
}

int main(int argc, char **argv)
{
    char dflt[4200];
    const char *volley, *rec_dir;
    vl_bench_plan_t plan;
    int rc = s_args(argc, argv, dflt, sizeof dflt, &volley, &rec_dir, &plan);
    if (rc >= 0)
        return rc;
    vl_bench_catch_signals(s_cleanup);
    uint8_t *hello;
    size_t hello_size;
    if (vl_hello_encode(S_POLICY, &hello, &hello_size) != 0)
        s_die("hello", "cannot encode");
    s_print_intro(&plan, rec_dir);
    vl_curve_t *sender_curve, *receiver_curve;
    s_keys_create(volley, &sender_curve, &receiver_curve);
    s_route_t routes[S_NPATHS];
    s_routes_start(volley, routes, hello, hello_size, sender_curve, receiver_curve);
    s_result_t res[S_NSIZES][S_NPATHS];
    size_t sizes[S_NSIZES];
    for (size_t k = 0; k < S_NSIZES; k++) {
        const s_size_t *c = &s_sizes[k];
        uint8_t *wire = s_build(c, &sizes[k]);
        for (int p = 0; p < S_NPATHS; p++)
            res[k][p] = p == S_RECORD
                            ? s_measure_record(&routes[p], volley, rec_dir, c, wire, sizes[k],
                                               plan.runs, plan.run_s)
                            : s_measure(&routes[p], c, wire, sizes[k], plan.runs, plan.run_s);
        free(wire);
    }
    for (int p = 0; p < S_NPATHS; p++)
        if (routes[p].broker)
            s_broker_stop(routes[p].broker, S_STOP_WAIT_S);
    s_keys_remove();
    vl_curve_destroy(&sender_curve);
    vl_curve_destroy(&receiver_curve);
    s_print_results(res, sizes);
    free(hello);
    return 0;
}
