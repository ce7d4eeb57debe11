/*  vl_top: `volley top` and `volley ctl`, clients of the broker's control
    port. The views are in vl_top_view.c; the commands around them ask, wait
    a bounded time, and start over with a fresh socket when the broker does
    not answer (it may have restarted). */
#include "vl_top.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/vl_flags.h"
#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_sock.h"
#include "../messages/vl_status.h"

/* How long a request waits for the broker before calling it not answering:
   a busy broker answers in milliseconds, a stopped one never. */
#define S_ANSWER_MS 3000
/* A live view whose broker never answered asks again this soon, saying so. */
#define S_FIRST_ANSWER_MS 1500
/* Largest reply taken: a Status with VL_STATUS_MAX_ACTORS rows fits. */
#define S_MAX_REPLY (64LL << 20)

/* ---- talking to the control port --------------------------------------- */

typedef struct {
    void *ctx;
    void *dealer;       // NULL until the first request, and again after one timed out
    const char *broker; // HOST[:PORT]
    int answered;       // the broker has answered once: silence now means it went away
} s_client_t;

typedef enum {
    S_NO_ANSWER,   // nothing within the timeout (or the socket could not be made)
    S_INTERRUPTED, // SIGINT/SIGTERM while waiting
    S_OK,          // ["OK"]
    S_ERROR,       // ["ERROR"][text]
    S_STATUS,      // ["STATUS"][Status], decoded and valid
    S_BAD,         // anything else; text says what
} s_answer_t;

typedef struct {
    s_answer_t answer;
    Volley__Status *status; // S_STATUS: owned, freed by s_reply_clear
    char text[200];         // S_ERROR: the broker's reason; S_BAD: what was wrong
} s_reply_t;

static void s_reply_clear(s_reply_t *r)
{
    vl_status_free(&r->status);
}

/* Copies a reply frame's text into buf as printable ASCII (a peer's text is
   not to be trusted with the terminal). */
static void s_frame_text(zmq_msg_t *m, char *buf, size_t size)
{
    const char *p = zmq_msg_data(m);
    size_t n = zmq_msg_size(m) < size - 1 ? zmq_msg_size(m) : size - 1;
    for (size_t i = 0; i < n; i++)
        buf[i] = p[i] >= 0x20 && p[i] <= 0x7e ? p[i] : '?';
    buf[n] = 0;
}

/* Returns 1 if frame m holds exactly the verb. */
static int s_is_verb(zmq_msg_t *m, const char *verb)
{
    return zmq_msg_size(m) == strlen(verb) && memcmp(zmq_msg_data(m), verb, strlen(verb)) == 0;
}

/* Reads one whole reply (its first two frames; more are ignored) into r. */
static void s_read_reply(void *dealer, s_reply_t *r)
{
    zmq_msg_t f[2];
    zmq_msg_init(&f[0]);
    zmq_msg_init(&f[1]);
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t *m = &f[n < 2 ? n : 1];
        if (zmq_msg_recv(m, dealer, 0) < 0)
            break;
        n++;
        more = zmq_msg_more(m);
    }
    r->answer = S_BAD;
    snprintf(r->text, sizeof r->text, "an unexpected reply");
    if (n == 1 && s_is_verb(&f[0], VL_VERB_OK))
        r->answer = S_OK;
    else if (n >= 1 && s_is_verb(&f[0], VL_VERB_ERROR)) {
        r->answer = S_ERROR;
        s_frame_text(&f[1], r->text, sizeof r->text);
    } else if (n == 2 && s_is_verb(&f[0], VL_VERB_STATUS)) {
        vl_reason_t why;
        r->status = vl_status_decode(zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), &why);
        r->answer = r->status ? S_STATUS : S_BAD;
        if (!r->status)
            snprintf(r->text, sizeof r->text, "a bad status (%s)", vl_reason_str(why));
    }
    zmq_msg_close(&f[0]);
    zmq_msg_close(&f[1]);
}

/* Sends [verb][arg] (arg may be NULL) and waits up to timeout_ms for the
   reply. On no answer the socket is closed, so that a request queued for a
   dead broker is not delivered to the next one, and the next request
   connects afresh. */
static void s_request(s_client_t *c, const char *verb, const char *arg, int timeout_ms,
                      s_reply_t *r)
{
    memset(r, 0, sizeof *r);
    r->answer = S_NO_ANSWER;
    if (!c->dealer)
        c->dealer = vl_sock_connect(c->ctx, ZMQ_DEALER, c->broker, VL_PORT_CONTROL, 0, S_MAX_REPLY);
    if (!c->dealer)
        return;
    int sent = zmq_send(c->dealer, verb, strlen(verb), arg ? ZMQ_SNDMORE : 0) >= 0;
    if (sent && arg)
        sent = zmq_send(c->dealer, arg, strlen(arg), 0) >= 0;
    int64_t deadline = vl_now_ns() + (int64_t)timeout_ms * 1000000;
    while (sent && !vl_interrupted) {
        int left = (int)((deadline - vl_now_ns()) / 1000000);
        zmq_pollitem_t item = {c->dealer, 0, ZMQ_POLLIN, 0};
        int rc = left > 0 ? zmq_poll(&item, 1, left) : 0;
        if (rc > 0) {
            s_read_reply(c->dealer, r);
            c->answered = 1;
            return;
        }
        if (rc == 0 || zmq_errno() != EINTR)
            break;
    }
    r->answer = vl_interrupted ? S_INTERRUPTED : S_NO_ANSWER;
    zmq_close(c->dealer);
    c->dealer = NULL;
}

static void s_client_close(s_client_t *c)
{
    if (c->dealer)
        zmq_close(c->dealer);
    c->dealer = NULL;
    zmq_ctx_term(c->ctx);
}

/* ---- volley top -------------------------------------------------------- */

typedef struct {
    const char *broker;
    float interval_s;
    int once, kv;
    const char *cert, *broker_key; // CURVE, both or neither
} s_top_opts_t;

#define S_TOP(kind, name, field, value, help) VL_FLAG_##kind(s_top_opts_t, name, field, value, help)

static const vl_flag_t s_top_flags[] = {
    S_TOP(STR_REQUIRED, "broker", broker, "HOST[:PORT]",
          "the broker; PORT defaults to " VL_QUOTE(VL_DEFAULT_PORT)),
    VL_FLAG_NUM(s_top_opts_t, "interval", VL_OPT_FLOAT, interval_s, 0.1, 3600, "S",
                "seconds between refreshes"),
    VL_FLAG_SWITCH(s_top_opts_t, "once", once,
                   "print one view without escape codes and exit: 0 if the broker "
                   "answered, 1 if not within 3 s"),
    VL_FLAG_SWITCH(s_top_opts_t, "kv", kv,
                   "key=value lines instead of tables, one per broker, learner, actor and drop "
                   "reason, each starting with ts=<UTC time> kind=<broker|learner|actor|drop> "
                   "(kind=error when the broker does not answer)"),
    S_TOP(STR, "cert", cert, "FILE", "CURVE: our certificate (a secured broker's monitor key)"),
    S_TOP(STR, "broker-key", broker_key, "FILE", "CURVE: the broker's public certificate"),
    VL_FLAG_HELP_H,
    VL_FLAG_END};

static const vl_flag_cmd_t s_top_cmd = {
    .name = "top",
    .flags = s_top_flags,
    .about = "A live view of a run, from the broker's control port (base port + 4): the\n"
             "broker's counters (received = routed + dropped + queued), each learner's flow\n"
             "control and training, each actor's rates, drops by reason, and the latency of\n"
             "each hop from an actor's send to the weights trained on it reaching the actors.\n"
             "Refreshed every interval until Ctrl-C; a broker that does not answer is asked\n"
             "again until it does.\n"};

/* Parses top's flags into o. Returns 0, 1 after --help, -1 after saying why. */
static int s_top_parse(int argc, char **argv, s_top_opts_t *o)
{
    const s_top_opts_t defaults = *o;
    int first = argc, rc = vl_flags_parse(&s_top_cmd, argc, argv, o, &defaults, &first, NULL);
    if (rc != 0)
        return rc;
    char endpoint[300];
    if (first < argc) {
        fprintf(stderr, "volley top: unexpected argument '%s'\n", argv[first]);
        return -1;
    }
    if (vl_opt_check_curve("top", o->cert, o->broker_key))
        return -1;
    return vl_opt_endpoint("top", o->broker, VL_PORT_CONTROL, endpoint, sizeof endpoint);
}

/* Returns the terminal's rows, or 0 when stdout is not a terminal. */
static int s_term_rows(void)
{
    struct winsize w;
    return ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 ? w.ws_row : 0;
}

/* Writes why a request got no status into buf: a broker never reached
   yet is "not answering (no broker at tcp://HOST:PORT yet)". */
static const char *s_trouble(const s_client_t *c, const s_reply_t *r, char *buf, size_t size)
{
    char endpoint[300];
    if (r->answer == S_NO_ANSWER && !c->answered &&
        vl_opt_endpoint("top", c->broker, 0, endpoint, sizeof endpoint) == 0)
        snprintf(buf, size, "not answering (no broker at %.200s yet)", endpoint);
    else if (r->answer == S_NO_ANSWER)
        snprintf(buf, size, "not answering");
    else if (r->answer == S_ERROR)
        snprintf(buf, size, "refused the request: %s", r->text);
    else
        snprintf(buf, size, "sent %s", r->text);
    return buf;
}

/* Writes one table view (or why there is none) for a terminal: home, each
   line cleared to its end, the rest of the screen cleared; elsewhere plain,
   views separated by a blank line. */
static void s_show_table(const s_top_opts_t *o, const s_client_t *c, const s_reply_t *r, int tty)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (!m)
        return;
    int rows = tty ? s_term_rows() : 0;
    if (r->answer == S_STATUS) {
        const Volley__Status *s = r->status;
        int fixed = 17 + 2 * (int)s->n_learners + (int)s->n_drops; // lines besides actor rows
        vl_top_render(r->status, o->broker, rows ? (rows - fixed > 3 ? rows - fixed : 3) : 0, m);
    } else {
        char why[256];
        fprintf(m, "broker %s %s%s\n", o->broker, s_trouble(c, r, why, sizeof why),
                o->once ? "" : " (asking again)");
    }
    if (tty) {
        char ts[40];
        vl_top_iso_time(vl_wall_ns(), ts, sizeof ts);
        fprintf(m, "\n%.19s UTC, every %g s; Ctrl-C quits\n", ts, o->interval_s);
    }
    fclose(m);
    if (!tty) {
        fputs(buf, stdout);
        if (!o->once)
            fputc('\n', stdout);
    } else {
        fputs("\033[H", stdout);
        for (char *line = buf, *end; (end = strchr(line, '\n')); line = end + 1)
            printf("%.*s\033[K\n", (int)(end - line), line);
        fputs("\033[J", stdout);
    }
    free(buf);
    fflush(stdout);
}

/* Writes one set of key=value lines, or one saying the broker is silent. */
static void s_show_kv(const s_top_opts_t *o, const s_client_t *c, const s_reply_t *r)
{
    if (r->answer == S_STATUS)
        vl_top_render_kv(r->status, vl_wall_ns(), stdout);
    else {
        char why[256];
        vl_top_render_kv_error(o->broker, s_trouble(c, r, why, sizeof why), vl_wall_ns(), stdout);
    }
    fflush(stdout);
}

/* Asks for a status every interval and shows it. Returns 0, or 1 when --once
   got no status. */
static int s_top_run(const s_top_opts_t *o)
{
    s_client_t c = {.ctx = zmq_ctx_new(), .broker = o->broker};
    int tty = !o->once && !o->kv && isatty(STDOUT_FILENO);
    if (tty)
        fputs("\033[?1049h\033[?25l", stdout); // the alternate screen, cursor hidden
    int64_t interval = (int64_t)(o->interval_s * 1e9), next = vl_now_ns();
    int got = 0;
    while (!vl_interrupted) {
        s_reply_t r;
        // A live view not yet answered says so within 2 s; --once gives the broker its full time.
        s_request(&c, VL_VERB_STATUS, NULL,
                  !o->once && !c.answered ? S_FIRST_ANSWER_MS : S_ANSWER_MS, &r);
        if (r.answer == S_INTERRUPTED)
            break;
        got = r.answer == S_STATUS;
        if (o->kv)
            s_show_kv(o, &c, &r);
        else
            s_show_table(o, &c, &r, tty);
        s_reply_clear(&r);
        if (o->once)
            break;
        next += interval;
        if (next < vl_now_ns())
            next = vl_now_ns(); // the broker was slow: no burst of catching up
        vl_proc_sleep_until(next);
    }
    if (tty) {
        fputs("\033[?25h\033[?1049l", stdout); // the terminal as it was
        fflush(stdout);
    }
    s_client_close(&c);
    return o->once && !got ? 1 : 0;
}

int vl_top_main(int argc, char **argv)
{
    s_top_opts_t o = {.interval_s = 1};
    int rc = s_top_parse(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    vl_log_init("top", VL_LOG_WARN);
    vl_proc_catch_signals();
    vl_curve_t *curve;
    if (vl_sock_client_curve(o.cert, o.broker_key, &curve) != 0)
        return 1;
    rc = s_top_run(&o);
    vl_sock_client_curve_end(&curve);
    return rc;
}

/* ---- volley ctl -------------------------------------------------------- */

typedef struct {
    const char *broker;
    const char *cert, *broker_key; // CURVE, both or neither
} s_ctl_opts_t;

#define S_CTL(kind, name, field, value, help) VL_FLAG_##kind(s_ctl_opts_t, name, field, value, help)

static const vl_flag_t s_ctl_flags[] = {
    S_CTL(STR_REQUIRED, "broker", broker, "HOST[:PORT]",
          "the broker; PORT defaults to " VL_QUOTE(VL_DEFAULT_PORT)),
    S_CTL(STR, "cert", cert, "FILE", "CURVE: our certificate"),
    S_CTL(STR, "broker-key", broker_key, "FILE", "CURVE: the broker's public certificate"),
    VL_FLAG_HELP_H, VL_FLAG_END};

static const vl_flag_arg_t s_ctl_args[] = {
    {"status", "the broker's counters and rows, as `volley top --kv` prints them"},
    {"pause POLICY", "hold that policy's segments in the broker's queue"},
    {"resume POLICY", "send them to its learner again"},
    {"shutdown", "the broker exits"},
    {NULL, NULL}};

static const vl_flag_cmd_t s_ctl_cmd = {
    .name = "ctl",
    .operands = "status|pause POLICY|resume POLICY|shutdown",
    .about = "Sends one request to the broker's control port (base port + 4) and prints the\n"
             "reply. pause, resume and shutdown are an admin's: under CURVE a key with the\n"
             "admin role (`volley keygen --admins N`), on an open broker a trusted address\n"
             "(the broker's own machine, or the broker's --trust ranges). Status is anyone's.\n",
    .args = s_ctl_args,
    .flags = s_ctl_flags,
    .footer = "Exit 0 on success, 1 when the broker refuses or does not answer within 3 s, 2 on\n"
              "bad usage.\n"};

/* A ctl verb: its wire name and whether it takes a policy. */
typedef struct {
    const char *word, *verb;
    int wants_policy;
} s_ctl_verb_t;

static const s_ctl_verb_t s_ctl_verbs[] = {
    {.word = "status", .verb = VL_VERB_STATUS},
    {.word = "pause", .verb = VL_VERB_PAUSE, .wants_policy = 1},
    {.word = "resume", .verb = VL_VERB_RESUME, .wants_policy = 1},
    {.word = "shutdown", .verb = VL_VERB_SHUTDOWN},
};

/* Reads the request from the positional arguments argv[first..]: its verb
   and, for pause and resume, the policy. Returns 0, or -1 after saying why. */
static int s_ctl_request(int argc, char **argv, int first, const s_ctl_verb_t **verb,
                         const char **policy)
{
    if (first >= argc) {
        fprintf(stderr, "volley ctl: which request? status, pause POLICY, resume POLICY or "
                        "shutdown\n");
        return -1;
    }
    for (size_t i = 0; i < sizeof s_ctl_verbs / sizeof s_ctl_verbs[0]; i++)
        if (strcmp(argv[first], s_ctl_verbs[i].word) == 0)
            *verb = &s_ctl_verbs[i];
    if (!*verb) {
        fprintf(stderr, "volley ctl: unknown request '%s' (status, pause, resume, shutdown)\n",
                argv[first]);
        return -1;
    }
    int want = 1 + (*verb)->wants_policy;
    if ((*verb)->wants_policy && argc - first >= 2)
        *policy = argv[first + 1];
    if ((*verb)->wants_policy && !*policy) {
        fprintf(stderr, "volley ctl: %s wants a POLICY\n", (*verb)->word);
        return -1;
    }
    if (*policy && vl_opt_policy("ctl", *policy))
        return -1;
    if (argc - first > want) {
        fprintf(stderr, "volley ctl: unexpected argument '%s'\n", argv[first + want]);
        return -1;
    }
    return 0;
}

/* Parses ctl's command line into o, *verb and *policy. Returns 0, 1 after
   --help, -1 after saying why. */
static int s_ctl_parse(int argc, char **argv, s_ctl_opts_t *o, const s_ctl_verb_t **verb,
                       const char **policy)
{
    const s_ctl_opts_t defaults = *o;
    int first = argc, rc = vl_flags_parse(&s_ctl_cmd, argc, argv, o, &defaults, &first, NULL);
    if (rc != 0)
        return rc;
    char endpoint[300];
    if (vl_opt_check_curve("ctl", o->cert, o->broker_key) ||
        vl_opt_endpoint("ctl", o->broker, VL_PORT_CONTROL, endpoint, sizeof endpoint))
        return -1;
    return s_ctl_request(argc, argv, first, verb, policy);
}

int vl_ctl_main(int argc, char **argv)
{
    s_ctl_opts_t o = {0};
    const char *policy = NULL;
    const s_ctl_verb_t *verb = NULL;
    int rc = s_ctl_parse(argc, argv, &o, &verb, &policy);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    const char *broker = o.broker;
    vl_log_init("ctl", VL_LOG_WARN);
    vl_proc_catch_signals();
    vl_curve_t *curve;
    if (vl_sock_client_curve(o.cert, o.broker_key, &curve) != 0)
        return 1;
    s_client_t c = {.ctx = zmq_ctx_new(), .broker = broker};
    s_reply_t r;
    s_request(&c, verb->verb, policy, S_ANSWER_MS, &r);
    s_client_close(&c);
    vl_sock_client_curve_end(&curve);
    rc = 1;
    if (r.answer == S_OK || (r.answer == S_STATUS && strcmp(verb->verb, VL_VERB_STATUS) == 0)) {
        if (r.status)
            vl_top_render_kv(r.status, vl_wall_ns(), stdout);
        else
            printf("ok: %s%s%s\n", verb->word, policy ? " " : "", policy ? policy : "");
        rc = 0;
    } else if (r.answer == S_ERROR)
        fprintf(stderr, "volley ctl: broker %s refused %s: %s\n", broker, verb->word, r.text);
    else if (r.answer == S_NO_ANSWER)
        fprintf(stderr,
                "volley ctl: broker %s not answering on its control port (base port + %d) "
                "within %d s\n",
                broker, VL_PORT_CONTROL, S_ANSWER_MS / 1000);
    else if (r.answer == S_INTERRUPTED)
        fprintf(stderr, "volley ctl: interrupted before the broker answered\n");
    else
        fprintf(stderr, "volley ctl: broker %s sent %s to %s\n", broker,
                r.answer == S_STATUS ? "a status" : r.text, verb->word);
    s_reply_clear(&r);
    return rc;
}
