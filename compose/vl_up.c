/*  vl_up: start, watch, stop. */
#include "vl_up.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "../actors/vl_env.h"
#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_sock.h"
#include "../learner/vl_learner.h"
#include "../messages/vl_codec.h"

#define S_MAX_ACTORS 64
#define S_MAX_ARGS   128
#define S_MAX_PASS   64 // learner flags passed through, each a name and a value
#define S_PORT_TRIES 5  // free base ports tried when another process takes the one picked

typedef enum { S_UNTIL_DEFAULT, S_UNTIL_SOLVED, S_UNTIL_STEPS, S_UNTIL_SECONDS } s_until_t;

typedef struct {
    const vl_env_ops_t *env;
    const char *env_arg; // passed through: --env-arg TEXT
    long actors, envs, port, horizon, hidden, seed, max_steps, max_seconds, batch, retain;
    long max_ahead, wait_ms; // the actors' (-1: theirs)
    s_until_t until;
    const char *pass[2 * S_MAX_PASS]; // learner flags passed through: "--name", "value"
    int n_pass;
    const char *checkpoint; // passed through: the learner's --checkpoint DIR
    const char *record;     // passed through: the broker's --record FILE
    int resume;
    int verbose;
} s_up_config_t;

/* What a run has seen of the learner's reports. */
typedef struct {
    vl_stats_t last;
    int have;
    uint64_t first_steps; // env steps in the first report: a resumed run's start
    uint64_t prev_steps;  // env steps at the previous progress line
    double prev_uptime;   // the learner's uptime then, in seconds
} s_watch_t;

#define S_OPT(name, field, lo, hi, help)                                                           \
    VL_NUM_OPT(s_up_config_t, name, VL_OPT_LONG, field, lo, hi, help)

static const vl_num_opt_t s_nums[] = {
    S_OPT("actors", actors, 1, S_MAX_ACTORS, "actor processes"),
    S_OPT("envs", envs, 1, 4096, "environments per actor"),
    S_OPT("port", port, 0, 65535 - VL_PORT_COUNT,
          "broker base port; it and the 4 after it must be free (0: pick free ports)"),
    S_OPT("max-steps", max_steps, 1, 1L << 50, "environment-step budget (e.g. 1e6)"),
    S_OPT("max-seconds", max_seconds, 0, 1L << 30, "wall-clock budget (0: none)"),
    S_OPT("seed", seed, 0, 1L << 40, "seeds the learner and every actor"),
    S_OPT("horizon", horizon, 1, 4096, "steps per segment"),
    S_OPT("hidden", hidden, 1, 4096, "hidden units per layer"),
    S_OPT("batch", batch, 0, 65536, "segments per update (0: actors x envs)"),
    S_OPT("retain", retain, 0, 1 << 20, "learner replay: 0 on-policy, N a prioritized ring"),
    S_OPT("max-ahead", max_ahead, -1, 1000000,
          "actor: segments per env on one weights version before waiting (-1: the actor's)"),
    S_OPT("wait-ms", wait_ms, -1, 3600000, "actor: longest such wait (-1: the actor's)"),
};
#define S_NNUMS ((int)(sizeof s_nums / sizeof s_nums[0]))

static const s_up_config_t s_defaults = {.env = NULL, // cartpole, looked up at start
                                         .actors = 2,
                                         .envs = 8,
                                         .port = 0,
                                         .horizon = 64,
                                         .hidden = 64,
                                         .seed = 1,
                                         .max_steps = 3000000,
                                         .max_ahead = -1,
                                         .wait_ms = -1};

/* Returns 1 if up's own table has a flag of this name (its own, or one it
   sets for the learner from its own: --seed, --batch...). */
static int s_own(const char *name)
{
    for (int i = 0; i < S_NNUMS; i++)
        if (strcmp(s_nums[i].name, name) == 0)
            return 1;
    return 0;
}

static void s_usage(FILE *out)
{
    fprintf(
        out,
        "usage: volley up [--env NAME|PATH.so [--env-arg TEXT]] [--until solved|steps|seconds]\n"
        "                 [numeric options] [learner options] [--checkpoint DIR [--resume]]\n"
        "                 [--record FILE] [--verbose]\n"
        "\n"
        "Trains on this box: starts a broker (on free ports unless --port is given), a\n"
        "learner and N actors over loopback sockets, prints progress every second, and\n"
        "stops them all when the run is done: with --until solved (the default for an\n"
        "environment with a solved return) when it is solved (exit 0, last line\n"
        "'solved: <steps> steps in <s> s (<steps/s> steps/s)'; a spent budget exits 1);\n"
        "with --until steps (the default otherwise) after --max-steps, or --until seconds\n"
        "after --max-seconds (exit 0, last line 'done: ...'). A process that fails\n"
        "stops the run (exit 1); Ctrl-C exits 130; bad flags or a busy --port exit 2\n"
        "before anything starts. Counts take 1e6; steps/s of a resumed run count only\n"
        "its own steps.\n"
        "\n");
    vl_env_print_help(out, NULL);
    vl_opt_print(out, s_nums, S_NNUMS, &s_defaults);
    fprintf(out, "learner options, passed through to `volley learner`:\n");
    vl_num_opt_t pass[64];
    vl_learner_config_t learner = vl_learner_config_default();
    int n = 0;
    for (int i = 0; i < vl_learner_n_opts && n < 64; i++)
        if (!s_own(vl_learner_opts[i].name))
            pass[n++] = vl_learner_opts[i];
    vl_opt_print(out, pass, n, &learner);
    fprintf(out, "  --checkpoint DIR   the learner checkpoints to DIR (see volley learner --help)\n"
                 "  --resume           the learner continues from its checkpoint in DIR\n"
                 "  --record FILE      the broker records every segment message into FILE (a new\n"
                 "                     file), for `volley replay FILE`\n"
                 "  --verbose          let the processes log what they do\n"
                 "  -h, --help         this text\n");
}

/* Checks a learner flag's value (as the learner will parse it) and keeps it
   to pass through. Returns 0, or -1 after printing why. */
static int s_pass(s_up_config_t *c, const vl_num_opt_t *o, const char *text)
{
    vl_learner_config_t scratch = vl_learner_config_default();
    if (vl_opt_set("up", o, &scratch, text) != 0)
        return -1;
    if (c->n_pass == 2 * S_MAX_PASS) {
        fprintf(stderr, "volley up: more than %d learner flags\n", S_MAX_PASS);
        return -1;
    }
    c->pass[c->n_pass++] = o->name;
    c->pass[c->n_pass++] = text;
    return 0;
}

/* Parses --until's word. Returns 0, or -1 after printing why. */
static int s_parse_until(const char *text, s_until_t *out)
{
    static const char *const words[] = {"solved", "steps", "seconds"};
    for (int i = 0; i < 3; i++)
        if (strcmp(text, words[i]) == 0) {
            *out = (s_until_t)(S_UNTIL_SOLVED + i);
            return 0;
        }
    fprintf(stderr, "volley up: --until wants solved, steps or seconds, not '%s'\n", text);
    return -1;
}

/* Checks what the flags cannot check one by one; settles --until's default.
   Returns 0, or -1 after printing why. */
static int s_check(s_up_config_t *c)
{
    if (c->resume && !c->checkpoint) {
        fprintf(stderr, "volley up: --resume needs --checkpoint DIR\n");
        return -1;
    }
    if (c->until == S_UNTIL_DEFAULT)
        c->until = c->env->has_solved_return ? S_UNTIL_SOLVED : S_UNTIL_STEPS;
    if (c->until == S_UNTIL_SOLVED && !c->env->has_solved_return) {
        fprintf(stderr, "volley up: --until solved: %s has no solved return; use --until steps\n",
                c->env->name);
        return -1;
    }
    if (c->until == S_UNTIL_SECONDS && c->max_seconds == 0) {
        fprintf(stderr, "volley up: --until seconds needs --max-seconds S\n");
        return -1;
    }
    return 0;
}

/* Parses flags into c. Returns 0, 1 after --help, or -1 on bad input. */
static int s_parse(int argc, char **argv, s_up_config_t *c)
{
    enum { O_ENV = 1000, O_VERBOSE, O_CHECKPOINT, O_RESUME, O_RECORD, O_ENV_ARG, O_UNTIL };
    enum { O_LEARNER = 2000 };
    struct option opts[S_NNUMS + 64 + 9] = {{"env-arg", required_argument, 0, O_ENV_ARG},
                                            {"record", required_argument, 0, O_RECORD},
                                            {"env", required_argument, 0, O_ENV},
                                            {"until", required_argument, 0, O_UNTIL},
                                            {"verbose", no_argument, 0, O_VERBOSE},
                                            {"help", no_argument, 0, 'h'},
                                            {"checkpoint", required_argument, 0, O_CHECKPOINT},
                                            {"resume", no_argument, 0, O_RESUME}};
    int n = 8 + vl_opt_getopt(s_nums, S_NNUMS, 0, opts + 8);
    for (int i = 0; i < vl_learner_n_opts && n < (int)(sizeof opts / sizeof opts[0]) - 1; i++)
        if (!s_own(vl_learner_opts[i].name))
            opts[n++] =
                (struct option){vl_learner_opts[i].name, required_argument, 0, O_LEARNER + i};
    opts[n] = (struct option){0, 0, 0, 0};
    int opt, bad = 0;
    while (!bad && (opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (opt >= 0 && opt < S_NNUMS)
            bad = vl_opt_set("up", &s_nums[opt], c, optarg);
        else if (opt >= O_LEARNER && opt < O_LEARNER + vl_learner_n_opts)
            bad = s_pass(c, &vl_learner_opts[opt - O_LEARNER], optarg);
        else if (opt == O_ENV) {
            c->env = vl_env_lookup("up", optarg);
            bad = !c->env;
        } else if (opt == O_UNTIL)
            bad = s_parse_until(optarg, &c->until);
        else if (opt == O_VERBOSE)
            c->verbose = 1;
        else if (opt == O_CHECKPOINT)
            c->checkpoint = optarg;
        else if (opt == O_RESUME)
            c->resume = 1;
        else if (opt == O_RECORD)
            c->record = optarg;
        else if (opt == O_ENV_ARG)
            c->env_arg = optarg;
        else {
            s_usage(opt == 'h' ? stdout : stderr);
            return opt == 'h' ? 1 : -1;
        }
    }
    if (!bad && !c->env)
        bad = !(c->env = vl_env_lookup("up", "cartpole"));
    if (!bad && optind < argc) {
        fprintf(stderr, "volley up: unexpected argument '%s'\n", argv[optind]);
        bad = 1;
    }
    return bad || s_check(c) != 0 ? -1 : 0;
}

/* A child's command line under construction: numbers are formatted into
   store, other arguments (ours, or the user's paths) are pointed to. */
typedef struct {
    char store[S_MAX_ARGS][32];
    char *argv[S_MAX_ARGS + 1];
    int argc;
} s_args_t;

/* Appends one argument, which must outlive the child's start (silently
   capped at S_MAX_ARGS: ours are fewer). */
static void s_add(s_args_t *a, const char *text)
{
    if (a->argc == S_MAX_ARGS)
        return;
    a->argv[a->argc] = (char *)text;
    a->argv[++a->argc] = NULL;
}

/* Appends a flag and its whole-number value. */
static void s_add_long(s_args_t *a, const char *flag, long v)
{
    s_add(a, flag);
    if (a->argc == S_MAX_ARGS)
        return;
    snprintf(a->store[a->argc], sizeof a->store[0], "%ld", v);
    s_add(a, a->store[a->argc]);
}

/* Starts `volley <role> --broker 127.0.0.1:<port>` plus what is common to
   every child; `a` holds the role's own flags. */
static pid_t s_spawn(const s_up_config_t *c, const char *role, s_args_t *a)
{
    char broker[32];
    snprintf(broker, sizeof broker, "127.0.0.1:%ld", c->port);
    s_args_t full = {.argc = 0};
    s_add(&full, "volley");
    s_add(&full, role);
    if (strcmp(role, "broker") != 0) {
        s_add(&full, "--broker");
        s_add(&full, broker);
        s_add(&full, "--env");
        s_add(&full, c->env->path ? c->env->path : c->env->name);
        if (c->env_arg) {
            s_add(&full, "--env-arg");
            s_add(&full, c->env_arg);
        }
        s_add_long(&full, "--horizon", c->horizon);
        s_add_long(&full, "--hidden", c->hidden);
    }
    for (int i = 0; i < a->argc; i++)
        s_add(&full, a->argv[i]);
    if (!c->verbose)
        s_add(&full, "--quiet");
    return vl_proc_spawn(full.argv);
}

/* Waits up to 10 s for the broker's word on fd: 0 once every port is bound,
   -1 if it stopped (it could not bind) or said nothing. */
static int s_wait_ready(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    char word[8] = "";
    int64_t deadline = vl_now_ns() + 10000000000LL;
    while (!vl_interrupted && vl_now_ns() < deadline) {
        int rc = poll(&p, 1, 100);
        if (rc > 0)
            return read(fd, word, sizeof word - 1) > 0 && strncmp(word, "ready", 5) == 0 ? 0 : -1;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
    return -1;
}

/* Starts the broker on c->port and waits until it has bound every port.
   Returns its pid, or -1 (it is stopped then). */
static pid_t s_start_broker(const s_up_config_t *c)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    fcntl(fds[1], F_SETFD, 0); // the broker inherits the write end, nobody else
    s_args_t a = {.argc = 0};
    s_add_long(&a, "--port", c->port);
    s_add(&a, "--bind");
    s_add(&a, "127.0.0.1");
    s_add_long(&a, "--ready-fd", fds[1]);
    if (c->record) {
        s_add(&a, "--record");
        s_add(&a, c->record);
    }
    pid_t pid = s_spawn(c, "broker", &a);
    close(fds[1]);
    int ready = pid > 0 && s_wait_ready(fds[0]) == 0;
    close(fds[0]);
    if (pid > 0 && !ready)
        vl_proc_stop(&pid, 1, 3000);
    return ready ? pid : -1;
}

/* Appends "--name value" for every learner flag passed through. */
static void s_add_passed(s_args_t *a, const s_up_config_t *c)
{
    for (int i = 0; i + 1 < c->n_pass; i += 2) {
        if (a->argc + 2 > S_MAX_ARGS)
            return;
        snprintf(a->store[a->argc], sizeof a->store[0], "--%s", c->pass[i]);
        s_add(a, a->store[a->argc]);
        s_add(a, c->pass[i + 1]);
    }
}

/* Starts the learner and the actors into pids (after the broker). Returns
   how many started; all of them unless fork failed. */
static int s_start_rest(const s_up_config_t *c, pid_t *pids)
{
    int n = 0;
    long batch = c->batch ? c->batch : c->actors * c->envs;
    s_args_t a = {.argc = 0};
    s_add_long(&a, "--seed", c->seed);
    s_add_long(&a, "--batch", batch);
    s_add_long(&a, "--capacity", 4 * batch + 4 * c->actors * c->envs + c->retain);
    s_add_long(&a, "--retain", c->retain);
    if (c->checkpoint) {
        s_add(&a, "--checkpoint");
        s_add(&a, c->checkpoint);
    }
    if (c->resume)
        s_add(&a, "--resume");
    s_add_passed(&a, c); // last: the user's --capacity wins over ours
    if ((pids[n] = s_spawn(c, "learner", &a)) <= 0)
        return n;
    n++;
    for (long i = 0; i < c->actors; i++) {
        a.argc = 0;
        s_add_long(&a, "--envs", c->envs);
        s_add_long(&a, "--id", i + 1);
        s_add_long(&a, "--seed", c->seed);
        if (c->max_ahead >= 0)
            s_add_long(&a, "--max-ahead", c->max_ahead);
        if (c->wait_ms >= 0)
            s_add_long(&a, "--wait-ms", c->wait_ms);
        if ((pids[n] = s_spawn(c, "actor", &a)) <= 0)
            return n;
        n++;
    }
    return n;
}

/* Starts the broker: on c->port when it was given (refused, exit 2, when
   busy), else on free ports, trying others when another process takes
   them first. Returns its pid, or -1 with *rc the exit code. */
static pid_t s_broker_up(s_up_config_t *c, int *rc)
{
    int explicit_port = c->port != 0;
    if (explicit_port && vl_free_base_port((int)c->port) != c->port) {
        fprintf(stderr,
                "volley up: --port %ld: ports %ld-%ld are not all free on 127.0.0.1; choose "
                "another, or leave --port out to pick free ones\n",
                c->port, c->port, c->port + VL_PORT_COUNT - 1);
        *rc = 2;
        return -1;
    }
    for (int attempt = 0; attempt < (explicit_port ? 1 : S_PORT_TRIES); attempt++) {
        if (!explicit_port &&
            (c->port = vl_free_base_port(20000 + ((getpid() + attempt * 7) % 2000) * 6)) < 0)
            break;
        pid_t pid = s_start_broker(c);
        if (pid > 0)
            return pid;
        if (vl_interrupted) {
            *rc = 130;
            return -1;
        }
    }
    fprintf(stderr, "volley up: the broker could not listen on %s; nothing else was started\n",
            explicit_port ? "its --port" : "free ports");
    *rc = explicit_port ? 2 : 1;
    return -1;
}

/* Receives every waiting report into w. Returns 0, or -1 on a socket error. */
static int s_read_stats(void *sub, s_watch_t *w, int timeout_ms)
{
    zmq_pollitem_t item = {sub, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, timeout_ms) < 0)
        return zmq_errno() == EINTR ? 0 : -1;
    char topic[16];
    uint8_t body[4096];
    for (;;) {
        int t = zmq_recv(sub, topic, sizeof topic, ZMQ_DONTWAIT);
        if (t < 0)
            return 0;
        int more = 0;
        size_t ms = sizeof more;
        zmq_getsockopt(sub, ZMQ_RCVMORE, &more, &ms);
        if (!more)
            continue;
        int b = zmq_recv(sub, body, sizeof body, 0);
        if (b > 0 && b <= (int)sizeof body && vl_stats_decode(body, (size_t)b, &w->last) == VL_OK) {
            if (!w->have)
                w->first_steps = w->last.env_steps;
            w->have = 1;
        }
    }
}

/* Prints one progress line from the newest report; steps/s over the
   learner's own clock, between the reports the last two lines came from. */
static void s_progress(s_watch_t *w)
{
    const vl_stats_t *s = &w->last;
    double dt = s->uptime_s - w->prev_uptime;
    double sps = dt > 0 ? (double)(s->env_steps - w->prev_steps) / dt : 0;
    printf("steps=%llu sps=%.0f episodes=%llu return=%.1f lag=%u/%u/%u version=%llu "
           "loss_pi=%.4f loss_v=%.3f entropy=%.3f dropped=%llu\n",
           (unsigned long long)s->env_steps, sps, (unsigned long long)s->episodes, s->mean_return,
           s->lag_min, s->lag_median, s->lag_max, (unsigned long long)s->version, s->policy_loss,
           s->value_loss, s->entropy, (unsigned long long)s->segments_dropped);
    fflush(stdout);
    w->prev_steps = s->env_steps;
    w->prev_uptime = s->uptime_s;
}

/* Prints the last line: "<word>: <steps> steps in <s> s (<steps/s> steps/s)",
   steps/s over this run's own steps (a resumed run's start not counted). */
static void s_last_line(const s_up_config_t *c, const char *word, const s_watch_t *w, double secs)
{
    uint64_t steps = w->last.env_steps;
    uint64_t own = steps;
    if (c->resume) // the first report comes just after the checkpoint's steps were loaded
        own = steps - (w->first_steps < steps ? w->first_steps : steps);
    printf("%s: %llu steps in %.1f s (%.0f steps/s)\n", word, (unsigned long long)steps, secs,
           secs > 0 ? (double)own / secs : 0.0);
}

/* Judges the run at secs: returns 0 when done (solved, or the --until
   budget reached), 1 when the budget is spent unsolved, -1 to go on. */
static int s_judge(const s_up_config_t *c, s_watch_t *w, double secs)
{
    const vl_stats_t *s = &w->last;
    int over_steps = w->have && s->env_steps >= (uint64_t)c->max_steps;
    int over_time = c->max_seconds && secs >= (double)c->max_seconds;
    if ((c->until == S_UNTIL_STEPS && over_steps) || (c->until == S_UNTIL_SECONDS && over_time)) {
        if (w->have)
            s_progress(w);
        s_last_line(c, "done", w, secs);
        return 0;
    }
    // The budget first: a report that shows it solved but past the budget cannot tell
    // whether it solved in time (reports come once a second).
    if (over_steps || over_time) {
        printf("not solved: budget spent after %llu steps in %.1f s "
               "(mean return %.1f over %u episodes, %s needs %.0f over 100)\n",
               (unsigned long long)s->env_steps, secs, s->mean_return, s->window, c->env->name,
               c->env->solved_return);
        return 1;
    }
    if (c->until == S_UNTIL_SOLVED && w->have && s->window >= 100 &&
        s->mean_return >= c->env->solved_return) {
        s_progress(w);
        s_last_line(c, "solved", w, secs);
        return 0;
    }
    return -1;
}

/* Watches the run until solved (0), over budget or a child died (1), or
   interrupted (130). */
static int s_watch(const s_up_config_t *c, void *sub, pid_t *pids, int n, int64_t start)
{
    s_watch_t w = {.have = 0};
    int64_t next_line = start + 1000000000LL;
    while (!vl_interrupted) {
        if (s_read_stats(sub, &w, 100) < 0)
            return 1;
        int status, dead = vl_proc_reap(pids, n, &status);
        if (dead >= 0 && vl_interrupted)
            break; // Ctrl-C reached the children too: they are stopping, not failing
        if (dead >= 0) {
            fprintf(stderr, "volley up: the %s process stopped (status %d); stopping the run\n",
                    dead == 0   ? "broker"
                    : dead == 1 ? "learner"
                                : "actor",
                    status);
            return 1;
        }
        int64_t now = vl_now_ns();
        double secs = (double)(now - start) / 1e9;
        int r = s_judge(c, &w, secs);
        if (r >= 0)
            return r;
        if (now >= next_line) {
            if (w.have)
                s_progress(&w);
            next_line += 1000000000LL;
        }
    }
    return 130;
}

int vl_up_main(int argc, char **argv)
{
    s_up_config_t c = s_defaults;
    int rc = s_parse(argc, argv, &c);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    vl_log_init("up", c.verbose ? VL_LOG_INFO : VL_LOG_WARN);
    vl_proc_catch_signals();
    int64_t start = vl_now_ns();
    pid_t pids[2 + S_MAX_ACTORS] = {0};
    if ((pids[0] = s_broker_up(&c, &rc)) <= 0)
        return rc;
    int n = 1 + s_start_rest(&c, pids + 1);
    void *ctx = zmq_ctx_new();
    char broker[32];
    snprintf(broker, sizeof broker, "127.0.0.1:%ld", c.port);
    void *sub = vl_sock_connect(ctx, ZMQ_SUB, broker, VL_PORT_WEIGHTS_OUT, 0, 1 << 20);
    if (sub)
        zmq_setsockopt(sub, ZMQ_SUBSCRIBE, VL_STATS_TOPIC, strlen(VL_STATS_TOPIC));
    if (n < 2 + c.actors || !sub) {
        fprintf(stderr, "volley up: could not start the run\n");
        rc = 1;
    } else {
        printf("volley up: %s, broker on 127.0.0.1:%ld, 1 learner, %ld actors x %ld envs\n",
               c.env->name, c.port, c.actors, c.envs);
        fflush(stdout);
        rc = s_watch(&c, sub, pids, n, start);
    }
    // Stop in reverse order of start: actors, then the learner, then the broker.
    for (int i = n - 1; i >= 0; i--)
        vl_proc_stop(&pids[i], 1, 3000);
    if (sub)
        zmq_close(sub);
    zmq_ctx_term(ctx);
    return rc;
}
