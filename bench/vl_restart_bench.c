/*  vl_restart_bench: what a broker restart costs a running system, in
    seconds until segments flow again, beside a cold start of the same
    system measured in the same run.

    The system: `volley broker --port P --bind 127.0.0.1`, one `volley
    learner` and S_ACTORS `volley actor --id N` (cartpole, defaults), each a
    child of the bench writing its log into a new mkdtemp directory under
    /tmp (removed at exit; its tail is printed if the bench fails).

    The bench watches the broker through its control port (base + 4): a
    DEALER of its own (reconnecting every S_PROBE_RECONNECT_MS, no backoff)
    sends one frame "STATUS" every S_POLL_S and reads ["STATUS"][Status]. A
    request unanswered for S_ANSWER_S is dropped with its socket, so that it
    is not delivered to a later broker. Five moments are timed, on the
    monotonic clock from the broker's spawn:
      answers   the broker's first status reply
      flowing   its `received` > 0: segments flow again
      routed    its `routed` > 0: the learner said hello and granted credit
      actors    every actor in its actor rows, alive
      version   the learner's version in its stats (as the broker has it)
                above the last one the old broker had (cold start: above
                0, the first update). Stats come 4 times a second, so that
                one is up to 250 ms old, and the learner may train on what
                it holds after the kill: `first`, the first version the new
                broker had, shows how far it got; this moment is mostly the
                learner's stats reaching the new broker
      trained   the learner's version above the one it had when the new
                broker first routed it segments (`routed`): an update on
                segments that came through the new broker
    Cold start: broker, learner and actors spawned from nothing, in that
    order at once. Restart (N times, after S_SETTLE_S of steady training
    past the previous recovery): the broker's version read, SIGKILL, reaped,
    --down seconds (default 0), a new broker spawned on the same ports.
    `down` is kill to the new broker's spawn. Each restart's figures, and
    their median, beside the cold start's.

    Every child is stopped on every exit: a normal end and s_die SIGTERM
    them all (SIGKILL after S_STOP_WAIT_S), SIGINT/SIGTERM/SIGHUP do the
    same before the bench dies of them, and each child asks for SIGKILL
    should the bench die unannounced (PR_SET_PDEATHSIG). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "bench/vl_bench.h"
#include "common/vl_opts.h"
#include "messages/vl_status.h"

#define S_ACTORS             2
#define S_RESTARTS           5
#define S_QUICK_RESTARTS     2
#define S_SETTLE_S           3.0 // steady training between a recovery and the next kill
#define S_QUICK_SETTLE_S     0.5
#define S_POLL_S             0.02 // status requests this often
#define S_ANSWER_S           1.0  // a request unanswered this long is dropped with its socket
#define S_PROBE_RECONNECT_MS 10   // the bench's own DEALER: retries this often, no backoff
#define S_RECOVER_S          60.0 // every moment must come by then, else the bench fails
#define S_STOP_WAIT_S        3.0  // a child not gone this long after SIGTERM is killed
#define S_MAX_REPLY          (64LL << 20)
#define S_LOG_TAIL           12 // lines of each child's log printed on failure

/* ---- clock ---------------------------------------------------------------- */

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- children and their logs: stopped and removed on every exit ----------- */

enum { S_BROKER, S_LEARNER, S_ACTOR0, S_NKIDS = S_ACTOR0 + S_ACTORS };

static const char *s_kid_names[S_NKIDS] = {"broker", "learner", "actor-1", "actor-2"};

static volatile sig_atomic_t s_kids[S_NKIDS]; // children alive; 0: none in that role
static char s_log_dir[4096];                  // the logs' directory, if ...
static char s_logs[S_NKIDS][4200];            // ... holding these, and ...
static volatile sig_atomic_t s_logs_live;     // ... this is set

/* Stops every child still running and removes the logs. Async-signal-safe,
   for s_die and the signal handler. */
static void s_cleanup(void)
{
    for (int i = 0; i < S_NKIDS; i++)
        if (s_kids[i] > 0)
            kill(s_kids[i], SIGTERM);
    for (int i = 0; i < S_NKIDS; i++)
        if (s_kids[i] > 0) {
            vl_bench_reap(s_kids[i], S_STOP_WAIT_S);
            s_kids[i] = 0;
        }
    if (s_logs_live) {
        s_logs_live = 0;
        for (int i = 0; i < S_NKIDS; i++)
            unlink(s_logs[i]);
        rmdir(s_log_dir);
    }
}

/* Prints the last S_LOG_TAIL lines of each child's log to stderr. */
static void s_print_tails(void)
{
    if (!s_logs_live)
        return;
    for (int i = 0; i < S_NKIDS; i++) {
        FILE *f = fopen(s_logs[i], "r");
        if (!f)
            continue;
        char lines[S_LOG_TAIL][512];
        long n = 0;
        while (fgets(lines[n % S_LOG_TAIL], sizeof lines[0], f))
            n++;
        fclose(f);
        fprintf(stderr, "--- %s (last %ld lines) ---\n", s_kid_names[i],
                n < S_LOG_TAIL ? n : S_LOG_TAIL);
        for (long k = n < S_LOG_TAIL ? 0 : n - S_LOG_TAIL; k < n; k++)
            fputs(lines[k % S_LOG_TAIL], stderr);
    }
}

/* Prints why and the children's logs, stops them and exits. */
static void s_die(const char *what, const char *why)
{
    fprintf(stderr, "vl_restart_bench: %s: %s\n", what, why);
    s_print_tails();
    s_cleanup();
    exit(1);
}

/* Makes the log directory and names a log per child. */
static void s_logs_create(void)
{
    snprintf(s_log_dir, sizeof s_log_dir, "/tmp/vl_restart_bench.XXXXXX");
    if (!mkdtemp(s_log_dir))
        s_die(s_log_dir, strerror(errno));
    for (int i = 0; i < S_NKIDS; i++)
        snprintf(s_logs[i], sizeof s_logs[i], "%s/%s.log", s_log_dir, s_kid_names[i]);
    s_logs_live = 1;
}

/* Spawns `volley ARGS...` as child role, its output appended to the role's
   log. Returns its pid (also in s_kids). Exits if fork fails. */
static pid_t s_spawn(int role, char *const argv[])
{
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); // the bench dying unannounced kills it too
        if (getppid() != parent)          // ... even if that happened before the line above
            _exit(127);
        int fd = open(s_logs[role], O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(127);
        close(fd);
        execv(argv[0], argv);
        fprintf(stderr, "vl_restart_bench: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (pid < 0)
        s_die("fork", strerror(errno));
    s_kids[role] = pid;
    return pid;
}

/* Exits if any child died. */
static void s_check_kids(void)
{
    for (int i = 0; i < S_NKIDS; i++) {
        int status;
        if (s_kids[i] > 0 && waitpid(s_kids[i], &status, WNOHANG) == s_kids[i]) {
            s_kids[i] = 0;
            char why[96];
            if (WIFEXITED(status))
                snprintf(why, sizeof why, "exited with status %d", WEXITSTATUS(status));
            else
                snprintf(why, sizeof why, "died of signal %d", WTERMSIG(status));
            s_die(s_kid_names[i], why);
        }
    }
}

typedef struct {
    const char *volley;
    char port[16];   // the broker's base port
    char broker[64]; // 127.0.0.1:port
} s_system_t;

static pid_t s_broker_spawn(const s_system_t *sys)
{
    char *argv[] = {(char *)sys->volley, "broker", "--port", (char *)sys->port, "--bind",
                    "127.0.0.1",         NULL};
    return s_spawn(S_BROKER, argv);
}

static void s_clients_spawn(const s_system_t *sys)
{
    char *learner[] = {(char *)sys->volley, "learner",           "--env", "cartpole",
                       "--broker",          (char *)sys->broker, NULL};
    s_spawn(S_LEARNER, learner);
    for (int i = 0; i < S_ACTORS; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", i + 1);
        char *actor[] = {
            (char *)sys->volley, "actor", "--broker", (char *)sys->broker, "--id", id, NULL};
        s_spawn(S_ACTOR0 + i, actor);
    }
}

/* SIGTERMs every child and reaps it (SIGKILL after S_STOP_WAIT_S). */
static void s_stop_all(void)
{
    for (int i = 0; i < S_NKIDS; i++)
        if (s_kids[i] > 0)
            kill(s_kids[i], SIGTERM);
    for (int i = 0; i < S_NKIDS; i++)
        if (s_kids[i] > 0) {
            vl_bench_reap(s_kids[i], S_STOP_WAIT_S);
            s_kids[i] = 0;
        }
}

/* ---- the status probe ---------------------------------------------------- */

typedef struct {
    void *ctx;
    void *sock;     // DEALER to the control port, or NULL between brokers
    char ep[64];    // tcp://127.0.0.1:base+4
    int waiting;    // a request is out
    double sent_at; // ... since then
} s_probe_t;

static void s_probe_open(s_probe_t *p)
{
    p->sock = zmq_socket(p->ctx, ZMQ_DEALER);
    if (!p->sock)
        s_die("zmq_socket", zmq_strerror(zmq_errno()));
    int zero = 0, ivl = S_PROBE_RECONNECT_MS;
    int64_t max_msg = S_MAX_REPLY;
    zmq_setsockopt(p->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(p->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(p->sock, ZMQ_RECONNECT_IVL_MAX, &zero, sizeof zero); // no backoff
    zmq_setsockopt(p->sock, ZMQ_MAXMSGSIZE, &max_msg, sizeof max_msg);
    if (zmq_connect(p->sock, p->ep) != 0)
        s_die(p->ep, zmq_strerror(zmq_errno()));
    p->waiting = 0;
}

static void s_probe_close(s_probe_t *p)
{
    if (p->sock)
        zmq_close(p->sock);
    p->sock = NULL;
}

/* Reads one reply; returns the Status it carries, or NULL (anything else
   is ignored: nothing but STATUS is asked). */
static Volley__Status *s_probe_read(s_probe_t *p)
{
    zmq_msg_t f[2];
    zmq_msg_init(&f[0]);
    zmq_msg_init(&f[1]);
    int n = 0;
    for (int more = 1; more;) {
        zmq_msg_t *m = &f[n < 2 ? n : 1];
        if (zmq_msg_recv(m, p->sock, ZMQ_DONTWAIT) < 0)
            break;
        n++;
        more = zmq_msg_more(m);
    }
    Volley__Status *st = NULL;
    if (n == 2 && zmq_msg_size(&f[0]) == strlen(VL_VERB_STATUS) &&
        memcmp(zmq_msg_data(&f[0]), VL_VERB_STATUS, strlen(VL_VERB_STATUS)) == 0) {
        vl_reason_t why;
        st = vl_status_decode(zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), &why);
        if (!st)
            s_die("status", vl_reason_str(why));
    }
    zmq_msg_close(&f[0]);
    zmq_msg_close(&f[1]);
    return st;
}

/* Asks for the status unless a request is out, and waits up to wait_s for
   the reply. Returns the Status (caller frees), or NULL. */
static Volley__Status *s_probe(s_probe_t *p, double wait_s)
{
    if (p->waiting && s_now() - p->sent_at > S_ANSWER_S) {
        s_probe_close(p); // the request may sit in a dead connection's queue
        s_probe_open(p);
    }
    if (!p->waiting) {
        if (zmq_send(p->sock, VL_VERB_STATUS, strlen(VL_VERB_STATUS), ZMQ_DONTWAIT) < 0)
            return NULL;
        p->waiting = 1;
        p->sent_at = s_now();
    }
    zmq_pollitem_t it = {.socket = p->sock, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, (long)(wait_s * 1000)) <= 0 || !(it.revents & ZMQ_POLLIN))
        return NULL;
    p->waiting = 0;
    return s_probe_read(p);
}

/* ---- the four moments ----------------------------------------------------- */

enum { S_ANSWERS, S_FLOWING, S_ROUTED, S_ACTORS_IN, S_VERSION, S_TRAINED, S_NMOMENTS };

static const char *s_moment_names[S_NMOMENTS] = {"answers", "flowing", "routed",
                                                 "actors",  "version", "trained"};

typedef struct {
    double t[S_NMOMENTS]; // seconds from the broker's spawn; < 0: not yet
    double down_ms;       // restart: kill to the new broker's spawn
    uint64_t v_before;    // the version to exceed
    uint64_t v_after;     // the version that did
    uint64_t v_first;     // the first version the new broker had in its stats
    int have_first;
    uint64_t v_routed; // the version it had once it routed segments again
    int have_routed;
} s_moments_t;

/* Returns the version in the first learner row with stats, or -1. */
static long long s_version(const Volley__Status *st)
{
    for (size_t i = 0; i < st->n_learners; i++)
        if (st->learners[i]->stats)
            return (long long)st->learners[i]->stats->version;
    return -1;
}

/* Returns 1 if every actor is in st's rows, alive. */
static int s_actors_in(const Volley__Status *st)
{
    int seen = 0;
    for (size_t i = 0; i < st->n_actors; i++)
        if (st->actors[i]->alive && st->actors[i]->actor_id >= 1 &&
            st->actors[i]->actor_id <= S_ACTORS)
            seen |= 1 << (st->actors[i]->actor_id - 1);
    return seen == (1 << S_ACTORS) - 1;
}

/* Polls the broker every S_POLL_S from t0 until every moment came;
   exits after S_RECOVER_S. */
static void s_watch(s_probe_t *p, double t0, s_moments_t *m, const char *what)
{
    for (int i = 0; i < S_NMOMENTS; i++)
        m->t[i] = -1;
    for (int left = S_NMOMENTS; left > 0;) {
        double tick = s_now();
        if (tick - t0 > S_RECOVER_S) {
            char why[256];
            int n =
                snprintf(why, sizeof why, "not recovered after %.0f s (-1: never):", S_RECOVER_S);
            for (int i = 0; i < S_NMOMENTS; i++)
                n += snprintf(why + n, sizeof why - (size_t)n, " %s %.2f", s_moment_names[i],
                              m->t[i]);
            s_die(what, why);
        }
        Volley__Status *st = s_probe(p, S_POLL_S);
        if (st) {
            double t = s_now() - t0;
            long long v = s_version(st);
            if (v >= 0 && !m->have_first) {
                m->v_first = (uint64_t)v;
                m->have_first = 1;
            }
            int hit[S_NMOMENTS] = {1,
                                   st->received > 0,
                                   st->routed > 0,
                                   s_actors_in(st),
                                   v >= 0 && (uint64_t)v > m->v_before,
                                   v >= 0 && m->have_routed && (uint64_t)v > m->v_routed};
            if (v >= 0 && st->routed > 0 && !m->have_routed) {
                m->v_routed = (uint64_t)v;
                m->have_routed = 1;
            }
            for (int i = 0; i < S_NMOMENTS; i++)
                if (hit[i] && m->t[i] < 0) {
                    m->t[i] = t;
                    left--;
                    if (i == S_VERSION)
                        m->v_after = (uint64_t)v;
                }
            vl_status_free(&st);
        }
        s_check_kids();
        vl_bench_sleep(tick + S_POLL_S - s_now());
    }
}

/* Returns the broker's current version (stats), polling up to S_ANSWER_S. */
static uint64_t s_version_now(s_probe_t *p)
{
    for (double t0 = s_now(); s_now() - t0 < S_ANSWER_S;) {
        Volley__Status *st = s_probe(p, S_POLL_S);
        if (st) {
            long long v = s_version(st);
            vl_status_free(&st);
            if (v >= 0)
                return (uint64_t)v;
        }
    }
    s_die("status", "the running broker did not answer with the learner's stats");
    return 0;
}

/* ---- output and main ------------------------------------------------------ */

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double s_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, s_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Prints a row: name, down ms (restart) and the moments, then rest. */
static void s_print_row(const char *name, const char *down, const double *t, const char *rest)
{
    printf("  %-22s %7s", name, down);
    for (int i = 0; i < S_NMOMENTS; i++)
        printf(" %9.3f", t[i]);
    printf("%s%s\n", *rest ? "   " : "", rest);
    fflush(stdout);
}

/* Prints a run's row. */
static void s_print_run(const char *name, const s_moments_t *m, int restart)
{
    char down[16] = "-", versions[64];
    if (restart)
        snprintf(down, sizeof down, "%.1f", m->down_ms);
    snprintf(versions, sizeof versions, "%llu -> %llu (first %llu, routed %llu)",
             (unsigned long long)m->v_before, (unsigned long long)m->v_after,
             (unsigned long long)m->v_first, (unsigned long long)m->v_routed);
    s_print_row(name, down, m->t, versions);
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: vl_restart_bench [--volley PATH] [--down S] [--quick] [--help]\n"
            "  Benchmarks a broker restart under a running learner and %d actors: SIGKILL,\n"
            "  a new broker on the same ports, seconds until it answers, until segments\n"
            "  flow, until it routes them to the learner, until every actor is back and\n"
            "  until the learner's version moves on; beside a cold start of the whole\n"
            "  system in the same run.\n"
            "  --volley PATH  the volley executable (default: volley beside this benchmark)\n"
            "  --down S       seconds between the kill and the new broker's spawn (default 0:\n"
            "                 at once; longer shows the clients' reconnect backoff)\n"
            "  --quick        %d restarts, %.1f s apart, instead of %d, %.1f s apart\n"
            "  --help         this text\n",
            S_ACTORS, S_QUICK_RESTARTS, S_QUICK_SETTLE_S, S_RESTARTS, S_SETTLE_S);
}

/* Removes "flag VALUE" from argv, setting *value. Returns 1 if taken, 0 if
   absent, -1 if VALUE is missing. */
static int s_take(int *argc, char **argv, const char *flag, const char **value)
{
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], flag) != 0)
            continue;
        if (i + 1 == *argc)
            return -1;
        *value = argv[i + 1];
        memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 1) * sizeof *argv);
        *argc -= 2;
        return 1;
    }
    return 0;
}

/* Parses the arguments. Returns -1 to run, else the exit code. */
static int s_args(int argc, char **argv, char *dflt, size_t cap, const char **volley,
                  double *down_s, vl_bench_plan_t *plan)
{
    char self[4096];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(dflt, cap, "%s/volley", dirname(self));
    *volley = dflt;
    const char *down = "0";
    if (s_take(&argc, argv, "--volley", volley) < 0 || s_take(&argc, argv, "--down", &down) < 0) {
        fprintf(stderr, "vl_restart_bench: --volley wants a path, --down seconds\n");
        return 2;
    }
    char *end;
    *down_s = strtod(down, &end);
    if (*end || !(*down_s >= 0 && *down_s <= 600)) {
        fprintf(stderr, "vl_restart_bench: --down wants seconds in [0, 600], not '%s'\n", down);
        return 2;
    }
    int rc = vl_bench_parse(argc, argv, "vl_restart_bench", s_usage,
                            (vl_bench_plan_t){S_RESTARTS, S_SETTLE_S},
                            (vl_bench_plan_t){S_QUICK_RESTARTS, S_QUICK_SETTLE_S}, plan);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (access(*volley, X_OK) != 0) {
        fprintf(stderr, "vl_restart_bench: %s: not executable (give --volley PATH)\n", *volley);
        return 1;
    }
    return -1;
}

static void s_print_intro(int port, double down_s, const vl_bench_plan_t *plan)
{
    printf("vl_restart_bench: broker restart under a learner and %d actors (cartpole,\n"
           "  defaults) over tcp 127.0.0.1, ports %d..%d; %ld cores online\n"
           "  status from the control port every %.0f ms; seconds from the broker's spawn\n"
           "  until answers: its first status; flowing: received > 0; routed: routed > 0\n"
           "  (the learner said hello and granted credit); actors: all %d alive in its\n"
           "  rows; version: the learner's stats version above the last one the old broker\n"
           "  had (cold start: above 0; `first`: the first the new broker had); trained:\n"
           "  above the one it had at `routed` (an update on segments the new broker sent)\n"
           "  restart: SIGKILL, reaped, %.1f s, a new broker; down = kill to its spawn\n"
           "  clients reconnect with libzmq's backoff (RECONNECT_IVL 100 ms doubling to 5 s);\n"
           "  learners say hello every second; %d restarts, %.1f s of training between\n",
           S_ACTORS, port, port + VL_PORT_COUNT - 1, sysconf(_SC_NPROCESSORS_ONLN), S_POLL_S * 1000,
           S_ACTORS, down_s, plan->runs, plan->run_s);
    printf("\n  %-22s %7s", "run", "down ms");
    for (int i = 0; i < S_NMOMENTS; i++)
        printf(" %9s", s_moment_names[i]);
    printf("   %s\n", "version before -> after");
    fflush(stdout);
}

/* Kills the broker, waits down_s and starts a new one; measures how the
   system recovers into m. */
static void s_restart(const s_system_t *sys, s_probe_t *probe, double down_s, s_moments_t *m,
                      const char *what)
{
    *m = (s_moments_t){.v_before = s_version_now(probe)};
    s_probe_close(probe);
    double tk = s_now();
    pid_t old = s_kids[S_BROKER];
    kill(old, SIGKILL);
    waitpid(old, NULL, 0);
    s_kids[S_BROKER] = 0;
    vl_bench_sleep(down_s);
    double t0 = s_now();
    s_broker_spawn(sys);
    m->down_ms = (t0 - tk) * 1000;
    s_probe_open(probe);
    s_watch(probe, t0, m, what);
}

int main(int argc, char **argv)
{
    char dflt[4200];
    const char *volley;
    double down_s;
    vl_bench_plan_t plan;
    int rc = s_args(argc, argv, dflt, sizeof dflt, &volley, &down_s, &plan);
    if (rc >= 0)
        return rc;
    vl_bench_catch_signals(s_cleanup);
    s_logs_create();
    int port = vl_free_base_port(20000 + (int)(getpid() % 20000));
    if (port < 0)
        s_die("ports", "no free base port");
    s_system_t sys = {.volley = volley};
    snprintf(sys.port, sizeof sys.port, "%d", port);
    snprintf(sys.broker, sizeof sys.broker, "127.0.0.1:%d", port);
    s_probe_t probe = {.ctx = zmq_ctx_new()};
    snprintf(probe.ep, sizeof probe.ep, "tcp://127.0.0.1:%d", port + VL_PORT_CONTROL);
    s_print_intro(port, down_s, &plan);

    // The reference: everything from nothing.
    s_moments_t cold = {0};
    double t0 = s_now();
    s_broker_spawn(&sys);
    s_clients_spawn(&sys);
    s_probe_open(&probe);
    s_watch(&probe, t0, &cold, "cold start");
    s_print_run("cold start", &cold, 0);

    s_moments_t runs[S_RESTARTS > S_QUICK_RESTARTS ? S_RESTARTS : S_QUICK_RESTARTS];
    for (int r = 0; r < plan.runs; r++) {
        vl_bench_sleep(plan.run_s);
        s_check_kids();
        char what[32];
        snprintf(what, sizeof what, "restart %d", r + 1);
        s_restart(&sys, &probe, down_s, &runs[r], what);
        s_print_run(what, &runs[r], 1);
    }
    s_probe_close(&probe);
    zmq_ctx_term(probe.ctx);
    s_stop_all();

    double med[S_NMOMENTS], col[S_RESTARTS > S_QUICK_RESTARTS ? S_RESTARTS : S_QUICK_RESTARTS];
    for (int i = 0; i < S_NMOMENTS; i++) {
        for (int r = 0; r < plan.runs; r++)
            col[r] = runs[r].t[i];
        med[i] = s_median(col, plan.runs);
    }
    for (int r = 0; r < plan.runs; r++)
        col[r] = runs[r].down_ms;
    char down[16];
    snprintf(down, sizeof down, "%.1f", s_median(col, plan.runs));
    printf("\n");
    s_print_row("median restart", down, med, "");
    s_print_row("cold start (reference)", "-", cold.t, "");
    printf("  segments flow again %.3f s after a restart's spawn (median), %.2fx the cold "
           "start's %.3f s\n  the learner trains on them again after %.3f s (median), cold "
           "start %.3f s\n",
           med[S_FLOWING], med[S_FLOWING] / cold.t[S_FLOWING], cold.t[S_FLOWING], med[S_TRAINED],
           cold.t[S_TRAINED]);
    s_cleanup(); // the logs
    return 0;
}
