/*  `volley broker`: flags, start, serve until SIGINT/SIGTERM, stop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/vl_flags.h"
#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../messages/vl_status.h"
#include "../messages/vl_stream.h"
#include "vl_broker.h"

/* What the command line sets: the broker's config and the process's own. */
typedef struct {
    vl_broker_config_t c;
    int ready_fd; // -1: none
    int level;    // a vl_log_level_t
} s_args_t;

/* Reads --inspect: full or header. */
static int s_parse_inspect(const char *text, void *field, char *why, size_t why_size)
{
    if (strcmp(text, "full") != 0 && strcmp(text, "header") != 0)
        return snprintf(why, why_size, "--inspect wants full or header, not '%s'", text), -1;
    *(int *)field = strcmp(text, "full") == 0;
    return 0;
}

/* Reads --record-flush: always, everysec or never. */
static int s_parse_flush(const char *text, void *field, char *why, size_t why_size)
{
    vl_flush_t f;
    if (vl_flush_parse(text, &f) != 0)
        return snprintf(why, why_size, "--record-flush wants always, everysec or never, not '%s'",
                        text),
               -1;
    *(int *)field = (int)f;
    return 0;
}

#define S_NUM(name, kind, field, lo, hi, value, help)                                              \
    VL_FLAG_NUM(s_args_t, name, kind, field, lo, hi, value, help)
#define S_STR(name, field, value, help) VL_FLAG_STR(s_args_t, name, field, value, help)

static const vl_flag_t s_flags[] = {
    S_NUM("port", VL_OPT_INT, c.port, 1, 65535 - VL_PORT_COUNT, "N",
          "base port; listens on N (actor segments), N+1 (learners), N+2 (weights from learners), "
          "N+3 (weights to actors and monitors), N+4 (control: actors' heartbeats, status, "
          "pause/resume a learner, shutdown; see `volley ctl`)"),
    S_STR("bind", c.bind_host, "HOST", "interface to listen on (*: all)"),
    S_NUM("max-msg", VL_OPT_I64, c.max_msg, 1024, 1L << 31, "BYTES", "refuse larger messages"),
    S_NUM("hwm", VL_OPT_INT, c.sndhwm, 1, 1000000, "N",
          "segments in libzmq's send queue per learner before drops"),
    S_NUM("queue-bytes", VL_OPT_SIZE, c.queue_bytes, 4096, 1L << 40, "N",
          "bytes of segments kept per learner while it grants no credit; beyond them the oldest "
          "are dropped"),
    {"inspect", 0, VL_FLAG_WORD, offsetof(s_args_t, c.inspect_full), 0, 0, "full|header",
     "decode and check every segment in full, or check headers only (faster; learners still "
     "check in full)",
     "full", 0, s_parse_inspect},
    S_NUM("max-lag", VL_OPT_U64, c.max_lag, 0, 1L << 40, "N",
          "drop segments acted on weights more than N versions older than the newest their "
          "learner published, as too stale (0: keep all; learners apply their own bound)"),
    S_NUM("log-every", VL_OPT_INT, c.log_every_s, 0, 86400, "S",
          "log the counters as key=value lines every S seconds (0: only at exit)"),
    S_NUM("max-actors", VL_OPT_U32, c.max_actors, 1, VL_STATUS_MAX_ACTORS, "N",
          "actors accounted for at once; beyond it, new actors replace the longest silent"),
    S_NUM("max-conns", VL_OPT_INT, c.max_conns, 1, 1 << 20, "N",
          "connections open at once on each port; one beyond it is cut as it comes, counted and "
          "logged"),
    S_NUM("max-conns-per-addr", VL_OPT_INT, c.max_conns_per_addr, 1, 1 << 20, "N",
          "of them from one source address"),
    S_STR("record", c.record, "FILE",
          "record every segment message received, as received, into FILE (a new file; `volley "
          "replay FILE` trains on it again, bit for bit)"),
    {"record-flush", 0, VL_FLAG_WORD, offsetof(s_args_t, c.record_flush), 0, 0,
     "always|everysec|never",
     "when the recording reaches the disk: after every message (slowest, loses nothing on a "
     "power cut), once a second (a crash loses at most the last second), or when the OS decides "
     "(a process crash loses nothing, a power cut may lose more); a torn tail is detected on "
     "replay",
     "everysec", 0, s_parse_flush},
    S_STR("cert", c.cert, "FILE",
          "CURVE, with --allow: the broker's certificate (from `volley keygen`; its secret key in "
          "FILE_secret): every port encrypts and authenticates"),
    S_STR("allow", c.allow, "DIR",
          "CURVE: the public certificates of the actors, learners and monitors let in (re-read "
          "when it changes); others are refused. Each certificate's role (actor, learner, admin, "
          "observer; from `volley keygen`) says what its key may do; a learner's `policies` "
          "which policies it may serve"),
    {"trust", 0, VL_FLAG_TEXT, offsetof(s_args_t, c.trust), 0, 0, "CIDR[,CIDR...]",
     "open broker (no --cert): also trust these addresses as learners and admins. Anyone else "
     "reaching the ports may push segments, beat, subscribe and ask for status, nothing more",
     "only this machine: 127.0.0.1, ::1 and its own interface addresses", 0, NULL},
    {"ready-fd", 0, VL_OPT_INT, offsetof(s_args_t, ready_fd), 3, 1 << 20, "N",
     "for launchers: write 'ready' to file descriptor N once every port is bound, then close it "
     "(`volley up` uses it)",
     "", 0, NULL},
    VL_FLAG_SETS(s_args_t, "quiet", level, VL_LOG_WARN, "warnings and errors only"),
    VL_FLAG_SETS(s_args_t, "verbose", level, VL_LOG_DEBUG, "debug logging"),
    VL_FLAG_HELP_H,
    VL_FLAG_END};

static const vl_flag_cmd_t s_cmd = {
    .name = "broker",
    .about = "Routes segments from actors to the learner serving each policy, and weights from\n"
             "learners to actors, keeping the newest weights for actors that join late. Checks\n"
             "everything it forwards and counts every segment: received = routed + dropped\n"
             "(by reason) + queued. `volley top --broker HOST:PORT` shows it live.\n",
    .flags = s_flags};

/* Parses argv into a (which holds the defaults) and checks what no single
   flag can. Returns 0, 1 after --help, -1 after saying why. */
static int s_parse(int argc, char **argv, s_args_t *a)
{
    const s_args_t defaults = *a;
    int first = argc, rc = vl_flags_parse(&s_cmd, argc, argv, a, &defaults, &first, NULL);
    if (rc != 0)
        return rc;
    if (first < argc) {
        fprintf(stderr, "volley broker: unexpected argument '%s'\n", argv[first]);
        return -1;
    }
    if (a->c.record && a->c.max_msg > (int64_t)VL_STREAM_MAX_RECORD) {
        fprintf(stderr,
                "volley broker: --record keeps messages up to %u bytes: --max-msg %lld is "
                "over it\n",
                VL_STREAM_MAX_RECORD, (long long)a->c.max_msg);
        return -1;
    }
    if (!a->c.cert != !a->c.allow) {
        fprintf(stderr, "volley broker: --cert and --allow go together\n");
        return -1;
    }
    return 0;
}

/* Returns 1 when another process listens on TCP port of host ("*" or an
   IPv4 address) so that the broker's bind would fail: a listener as libzmq
   makes one (SO_REUSEADDR) cannot bind it. 0 when it can, or when host is
   a name or an IPv6 address, which the broker's own bind then answers. */
static int s_port_taken(const char *host, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (strcmp(host, "*") == 0)
        a.sin_addr.s_addr = htonl(INADDR_ANY);
    else if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    if (fd < 0)
        return 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    int taken = bind(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno == EADDRINUSE;
    close(fd);
    return taken;
}

/* Says, in one line, which of the broker's ports another process holds and
   what to do. Returns 1 when one is held (the broker is not started), 0. */
static int s_ports_taken(const vl_broker_config_t *c)
{
    static const char *const uses[VL_PORT_COUNT] = {"segments", "learners", "weights in",
                                                    "weights out", "control"};
    for (int i = 0; i < VL_PORT_COUNT; i++)
        if (s_port_taken(c->bind_host, c->port + i)) {
            fprintf(stderr,
                    "volley broker: --port %d: port %d (%s) is in use on this box; choose "
                    "another --port (ports %d-%d must all be free), or stop the process "
                    "listening there\n",
                    c->port, c->port + i, uses[i], c->port, c->port + VL_PORT_COUNT - 1);
            return 1;
        }
    return 0;
}

/* The broker the process serves with, stopped by SIGINT and SIGTERM (NULL once destroyed). */
static vl_broker_t *volatile s_broker;

static void s_on_signal(int sig)
{
    vl_interrupted = sig;
    if (s_broker)
        vl_broker_stop(s_broker);
}

/* Stops broker on SIGINT or SIGTERM, including one that came before this call. */
static void s_stop_on_signals(vl_broker_t *broker)
{
    s_broker = broker;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (vl_interrupted)
        vl_broker_stop(broker);
}

int vl_broker_main(int argc, char **argv)
{
    s_args_t a = {vl_broker_config_default(), -1, VL_LOG_INFO};
    int rc = s_parse(argc, argv, &a);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    vl_broker_config_t c = a.c;
    int ready_fd = a.ready_fd;
    if (s_ports_taken(&c))
        return 2;
    vl_log_init("broker", (vl_log_level_t)a.level);
    vl_proc_catch_signals();
    vl_broker_t *broker = vl_broker_new(&c);
    if (!broker) // a port taken since, or on an interface s_ports_taken cannot try: as above
        return errno == EADDRINUSE ? 2 : 1;
    if (ready_fd >= 0) { // every port is bound: tell the launcher
        if (write(ready_fd, "ready\n", 6) != 6)
            vl_warn("--ready-fd %d: %s", ready_fd, strerror(errno));
        close(ready_fd);
    }
    s_stop_on_signals(broker);
    rc = vl_broker_run(broker);
    if (vl_broker_stop_recording(broker) != 0)
        rc = -1;
    vl_broker_log_counters(broker);
    s_broker = NULL;
    vl_broker_destroy(&broker);
    return rc == 0 ? 0 : 1;
}
