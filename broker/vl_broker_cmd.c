/*  `volley broker`: flags, start, serve until SIGINT/SIGTERM, stop. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../messages/vl_status.h"
#include "../messages/vl_stream.h"
#include "vl_broker.h"

static void s_usage(FILE *out)
{
    fprintf(
        out,
        "usage: volley broker [--port N] [--bind HOST] [--max-msg BYTES] [--hwm N]\n"
        "                     [--queue-bytes N] [--inspect full|header] [--max-lag N]\n"
        "                     [--log-every S] [--max-actors N] [--max-conns N]\n"
        "                     [--max-conns-per-addr N] [--record FILE]\n"
        "                     [--record-flush always|everysec|never]\n"
        "                     [--cert FILE --allow DIR] [--trust CIDR] [--quiet|--verbose]\n"
        "\n"
        "Routes segments from actors to the learner serving each policy, and weights from\n"
        "learners to actors, keeping the newest weights for actors that join late. Checks\n"
        "everything it forwards and counts every segment: received = routed + dropped\n"
        "(by reason) + queued. `volley top --broker HOST:PORT` shows it live.\n"
        "\n"
        "  --port N         base port (default 7600); listens on N (actor segments),\n"
        "                   N+1 (learners), N+2 (weights from learners), N+3 (weights to\n"
        "                   actors and monitors), N+4 (control: actors' heartbeats,\n"
        "                   status, pause/resume a learner, shutdown; see `volley ctl`)\n"
        "  --bind HOST      interface to listen on (default *, all)\n"
        "  --max-msg BYTES  refuse larger messages (default 67108864)\n"
        "  --hwm N          segments in libzmq's send queue per learner before drops\n"
        "                   (default 1000)\n"
        "  --queue-bytes N  bytes of segments kept per learner while it grants no credit;\n"
        "                   beyond them the oldest are dropped (default 67108864)\n"
        "  --inspect full|header  decode and check every segment in full (default), or\n"
        "                   check headers only (faster; learners still check in full)\n"
        "  --max-lag N      drop segments acted on weights more than N versions older than\n"
        "                   the newest their learner published, as too stale (default 0:\n"
        "                   keep all; learners apply their own bound)\n"
        "  --log-every S    log the counters as key=value lines every S seconds (default\n"
        "                   10; 0: only at exit)\n"
        "  --max-actors N   actors accounted for at once (default 4096); beyond it, new\n"
        "                   actors replace the longest silent\n"
        "  --max-conns N    connections open at once on each port (default 4096); one\n"
        "                   beyond it is cut as it comes, counted and logged\n"
        "  --max-conns-per-addr N  of them from one source address (default 256)\n"
        "  --record FILE    record every segment message received, as received, into FILE\n"
        "                   (a new file; `volley replay FILE` trains on it again, bit for bit)\n"
        "  --record-flush always|everysec|never  when the recording reaches the disk:\n"
        "                   after every message (slowest, loses nothing on a power cut),\n"
        "                   once a second (default: a crash loses at most the last second),\n"
        "                   or when the OS decides (a process crash loses nothing, a power\n"
        "                   cut may lose more); a torn tail is detected on replay\n"
        "  --cert FILE      CURVE: the broker's certificate (from `volley keygen`; its secret\n"
        "                   key in FILE_secret): every port encrypts and authenticates\n"
        "  --allow DIR      CURVE: the public certificates of the actors, learners and\n"
        "                   monitors let in (re-read when it changes); others are refused.\n"
        "                   Each certificate's role (actor, learner, admin, observer; from\n"
        "                   `volley keygen`) says what its key may do; a learner's\n"
        "                   `policies` which policies it may serve\n"
        "  --trust CIDR[,CIDR...]  open broker (no --cert): also trust these addresses as\n"
        "                   learners and admins (default: only this machine: 127.0.0.1,\n"
        "                   ::1 and its own interface addresses). Anyone else reaching\n"
        "                   the ports may push segments, beat, subscribe and ask for\n"
        "                   status, nothing more\n"
        "  --ready-fd N     for launchers: write 'ready' to file descriptor N once every\n"
        "                   port is bound, then close it (`volley up` uses it)\n"
        "  --quiet          warnings and errors only\n"
        "  --verbose        debug logging\n"
        "  -h, --help       this text\n");
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
    static const struct option opts[] = {{"port", required_argument, 0, 'p'},
                                         {"bind", required_argument, 0, 'b'},
                                         {"max-msg", required_argument, 0, 'm'},
                                         {"hwm", required_argument, 0, 'w'},
                                         {"queue-bytes", required_argument, 0, 'Q'},
                                         {"inspect", required_argument, 0, 'i'},
                                         {"max-lag", required_argument, 0, 'L'},
                                         {"log-every", required_argument, 0, 'E'},
                                         {"max-actors", required_argument, 0, 'A'},
                                         {"max-conns", required_argument, 0, 'N'},
                                         {"max-conns-per-addr", required_argument, 0, 'P'},
                                         {"record", required_argument, 0, 'R'},
                                         {"record-flush", required_argument, 0, 'F'},
                                         {"cert", required_argument, 0, 'C'},
                                         {"allow", required_argument, 0, 'W'},
                                         {"ready-fd", required_argument, 0, 'r'},
                                         {"trust", required_argument, 0, 'T'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    vl_broker_config_t c = vl_broker_config_default();
    vl_log_level_t level = VL_LOG_INFO;
    long v;
    int opt, ready_fd = -1;
    opterr = 0; // a refused flag gets one line (vl_opt_refused), not the whole usage
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 'p':
            if (vl_opt_long("broker", "port", optarg, 1, 65535 - VL_PORT_COUNT, &v))
                return 2;
            c.port = (int)v;
            break;
        case 'b':
            c.bind_host = optarg;
            break;
        case 'm':
            if (vl_opt_long("broker", "max-msg", optarg, 1024, 1L << 31, &v))
                return 2;
            c.max_msg = v;
            break;
        case 'w':
            if (vl_opt_long("broker", "hwm", optarg, 1, 1000000, &v))
                return 2;
            c.sndhwm = (int)v;
            break;
        case 'Q':
            if (vl_opt_long("broker", "queue-bytes", optarg, 4096, 1L << 40, &v))
                return 2;
            c.queue_bytes = (size_t)v;
            break;
        case 'i':
            if (strcmp(optarg, "full") != 0 && strcmp(optarg, "header") != 0) {
                fprintf(stderr, "volley broker: --inspect wants full or header, not '%s'\n",
                        optarg);
                return 2;
            }
            c.inspect_full = strcmp(optarg, "full") == 0;
            break;
        case 'L':
            if (vl_opt_long("broker", "max-lag", optarg, 0, 1L << 40, &v))
                return 2;
            c.max_lag = (uint64_t)v;
            break;
        case 'E':
            if (vl_opt_long("broker", "log-every", optarg, 0, 86400, &v))
                return 2;
            c.log_every_s = (int)v;
            break;
        case 'A':
            if (vl_opt_long("broker", "max-actors", optarg, 1, VL_STATUS_MAX_ACTORS, &v))
                return 2;
            c.max_actors = (uint32_t)v;
            break;
        case 'N':
            if (vl_opt_long("broker", "max-conns", optarg, 1, 1 << 20, &v))
                return 2;
            c.max_conns = (int)v;
            break;
        case 'P':
            if (vl_opt_long("broker", "max-conns-per-addr", optarg, 1, 1 << 20, &v))
                return 2;
            c.max_conns_per_addr = (int)v;
            break;
        case 'R':
            c.record = optarg;
            break;
        case 'C':
            c.cert = optarg;
            break;
        case 'W':
            c.allow = optarg;
            break;
        case 'T':
            c.trust = optarg;
            break;
        case 'F': {
            vl_flush_t f;
            if (vl_flush_parse(optarg, &f) != 0) {
                fprintf(stderr,
                        "volley broker: --record-flush wants always, everysec or never, not '%s'\n",
                        optarg);
                return 2;
            }
            c.record_flush = (int)f;
            break;
        }
        case 'r':
            if (vl_opt_long("broker", "ready-fd", optarg, 3, 1 << 20, &v))
                return 2;
            ready_fd = (int)v;
            break;
        case 'q':
            level = VL_LOG_WARN;
            break;
        case 'v':
            level = VL_LOG_DEBUG;
            break;
        case 'h':
            s_usage(stdout);
            return 0;
        default:
            vl_opt_refused("broker", argv, opts, "h");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "volley broker: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (c.record && c.max_msg > (int64_t)VL_STREAM_MAX_RECORD) {
        fprintf(stderr,
                "volley broker: --record keeps messages up to %u bytes: --max-msg %lld is "
                "over it\n",
                VL_STREAM_MAX_RECORD, (long long)c.max_msg);
        return 2;
    }
    if (!c.cert != !c.allow) {
        fprintf(stderr, "volley broker: --cert and --allow go together\n");
        return 2;
    }
    vl_log_init("broker", level);
    vl_proc_catch_signals();
    vl_broker_t *broker = vl_broker_new(&c);
    if (!broker)
        return 1;
    if (ready_fd >= 0) { // every port is bound: tell the launcher
        if (write(ready_fd, "ready\n", 6) != 6)
            vl_warn("--ready-fd %d: %s", ready_fd, strerror(errno));
        close(ready_fd);
    }
    s_stop_on_signals(broker);
    int rc = vl_broker_run(broker);
    if (vl_broker_stop_recording(broker) != 0)
        rc = -1;
    vl_broker_log_counters(broker);
    s_broker = NULL;
    vl_broker_destroy(&broker);
    return rc == 0 ? 0 : 1;
}
