/*  vl_up: start, watch, stop; every run in its own directory. */
#include "vl_up.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_rundir.h"
#include "../common/vl_sock.h"
#include "../envs/vl_env.h"
#include "../learner/vl_keeper.h"
#include "../learner/vl_learner.h"
#include "../messages/vl_codec.h"
#include "vl_up_config.h"
#include "vl_up_watch.h"

#define S_MAX_ARGS   128
#define S_PORT_TRIES 5 // free base ports tried when another process takes the one picked
#define S_PATH_MAX   1100
#define S_LINE       1024 // a log line quoted, at most
#define S_CONTEXT    2    // log lines shown above the last one a report quotes

/* A run: what it was told, its directory and the paths it hands out. */
typedef struct {
    vl_up_config_t c;
    vl_rundir_t *dir;
    FILE *config;                 // the run's config.ini, while children start
    char checkpoint[S_PATH_MAX];  // the learner's --checkpoint DIR
    char record[S_PATH_MAX];      // the broker's --record FILE, or ""
    char broker_log[S_PATH_MAX];  // the broker's log, for its reason when it does not start
    char learner_log[S_PATH_MAX]; // the learner's log, for its reason when it stops
    char actor_log[VL_UP_MAX_ACTORS][S_PATH_MAX]; // actor i+1's, for why none fed the learner
} s_run_t;

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

/* Records a child's command line under its role in the run's config.ini. */
static void s_note_command(s_run_t *r, const char *role, char *const *argv)
{
    if (!r->config)
        return;
    fprintf(r->config, "\n[%s]\ncommand =", role);
    for (int i = 0; argv[i]; i++)
        fprintf(r->config, " %s", argv[i]);
    fputc('\n', r->config);
}

/* Returns where the path of the child's log called name (broker, learner,
   actor-N) is kept, or NULL. */
static char *s_log_slot(s_run_t *r, const char *name)
{
    int i;
    if (strcmp(name, "broker") == 0)
        return r->broker_log;
    if (strcmp(name, "learner") == 0)
        return r->learner_log;
    if (sscanf(name, "actor-%d", &i) == 1 && i >= 1 && i <= VL_UP_MAX_ACTORS)
        return r->actor_log[i - 1];
    return NULL;
}

/* Opens the run's log for a child (logs/<name>.log, numbered when taken).
   Returns its descriptor, or -1 with --verbose (the child keeps our
   terminal) or when it cannot be made (logged). */
static int s_open_log(s_run_t *r, const char *name)
{
    if (r->c.verbose)
        return -1;
    char stem[64], path[S_PATH_MAX], *slot = s_log_slot(r, name);
    snprintf(stem, sizeof stem, "logs/%s", name);
    int fd = vl_rundir_create(r->dir, stem, ".log", path, sizeof path);
    if (fd >= 0 && slot)
        snprintf(slot, S_PATH_MAX, "%s", path);
    return fd;
}

/* Writes the last line of the log at path that holds word (any non-empty
   line when word is NULL) into out[size], without its newline; "" when
   there is none. Returns out. */
static char *s_log_last(const char *path, const char *word, char *out, size_t size)
{
    FILE *f = path[0] ? fopen(path, "r") : NULL;
    char line[S_LINE];
    out[0] = '\0';
    while (f && fgets(line, sizeof line, f))
        if (line[0] != '\n' && (!word || strstr(line, word)))
            snprintf(out, size, "%.*s", (int)strcspn(line, "\n"), line);
    if (f)
        fclose(f);
    return out;
}

/* Prints, indented on stderr, the up to S_CONTEXT non-empty lines of the log
   at path before its last one: the cause a process's closing line may only
   summarise (a plugin's own message above "cannot start the actor", a
   traceback above its exception). */
static void s_log_context(const char *path)
{
    char ring[S_CONTEXT + 1][S_LINE];
    long n = 0;
    FILE *f = path[0] ? fopen(path, "r") : NULL;
    while (f && fgets(ring[n % (S_CONTEXT + 1)], S_LINE, f))
        if (ring[n % (S_CONTEXT + 1)][0] != '\n')
            n++;
    if (f)
        fclose(f);
    for (long i = n > S_CONTEXT ? n - S_CONTEXT - 1 : 0; i < n - 1; i++) {
        const char *line = ring[i % (S_CONTEXT + 1)];
        fprintf(stderr, "    %.*s\n", (int)strcspn(line, "\n"), line);
    }
}

/* Writes where a child's own words are, "PATH ends: LAST", into out[size]
   (with --verbose, which keeps no log, "its output above says why"), after
   printing the lines above LAST (s_log_context). Returns out. */
static const char *s_log_end(const char *path, char *out, size_t size)
{
    char last[S_LINE];
    if (!path[0])
        snprintf(out, size, "its output above says why");
    else if (s_log_last(path, NULL, last, sizeof last)[0]) {
        s_log_context(path);
        snprintf(out, size, "%s ends: %s", path, last);
    } else
        snprintf(out, size, "%s is empty", path);
    return out;
}

/* Returns the path of child which's log (0 the broker, 1 the learner, then
   the actors), "" when it keeps none. */
static const char *s_child_log(const s_run_t *r, int which)
{
    return which == 0 ? r->broker_log : which == 1 ? r->learner_log : r->actor_log[which - 2];
}

/* Returns child which's role in words. */
static const char *s_child_role(int which)
{
    return which == 0 ? "broker" : which == 1 ? "learner" : "actor";
}

/* Prints the broker log's last error line, or its refusal of a port in
   use, if any: why it did not start. */
static void s_broker_reason(const s_run_t *r)
{
    char last[S_LINE];
    if (s_log_last(r->broker_log, "error:", last, sizeof last)[0])
        fprintf(stderr, "volley up: the broker said: %s\n", strstr(last, "error:") + 7);
    else if (s_log_last(r->broker_log, "volley broker: ", last, sizeof last)[0])
        fprintf(stderr, "volley up: the broker said: %s\n",
                strstr(last, "volley broker: ") + strlen("volley broker: "));
}

/* Prints the learner log's last line, if any, after the lines above it: why
   it stopped (a refused --device, a traceback's last line, a C learner's
   error). */
static void s_learner_reason(const s_run_t *r)
{
    char last[S_LINE];
    if (s_log_last(r->learner_log, NULL, last, sizeof last)[0]) {
        s_log_context(r->learner_log);
        fprintf(stderr, "volley up: the learner said: %s\n", last);
    }
}

/* Says which child stopped and how, in words ("exit 2", "killed by signal
   9 (SIGKILL)"), with its log's path and last line (the learner's as what
   it said); for an actor, whether it stopped before any segment reached
   the learner (an env that does not import, a refused spec). An actor of a
   plugin env that a fatal signal ended may have died in the plugin: its log
   says so when it did ("... in env plugin PATH"). */
static void s_child_stopped(const s_run_t *r, const vl_up_end_t *end)
{
    const vl_up_config_t *c = &r->c;
    int which = end->stopped, sig = WIFSIGNALED(end->status) ? WTERMSIG(end->status) : 0;
    int fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT;
    const char *log = s_child_log(r, which);
    char how[64], said[S_LINE + S_PATH_MAX];
    vl_proc_describe(end->status, how, sizeof how);
    if (which == 1) {
        fprintf(stderr, "volley up: the learner process stopped (%s); stopping the run; %s%s\n",
                how, log[0] ? "its log is " : "its output above says why", log);
        s_learner_reason(r);
    } else {
        s_log_end(log, said, sizeof said);
        fprintf(stderr, "volley up: the %s process stopped (%s)%s; %s\n", s_child_role(which), how,
                which >= 2 && !end->fed ? " before any segment reached the learner"
                                        : "; stopping the run",
                said);
    }
    if (which >= 2 && fault && c->env && c->env->path)
        fprintf(stderr,
                "volley up: its env is the plugin %s: logs/actor-%d.log in the run's "
                "directory says whether the fault was in it\n",
                c->env->path, which - 1);
}

/* Returns 1 when a child's wait status at the run's end says it failed: a
   non-zero exit, or a signal other than the SIGTERM that stopped it or the
   SIGKILL that followed (any signal for the learner, whose last checkpoint
   a signal may have cut short). */
static int s_stop_failed(int which, int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status) != 0;
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return which == 1 ? 1 : sig != SIGTERM && sig != SIGKILL;
}

/* Says that child which failed as the run stopped it (status its wait
   status), with its log's path and last line; when the run was done
   (*rc 0), prints "not done: ..." as the last line and sets *rc to 1. */
static void s_stop_report(const s_run_t *r, int which, int status, int *rc)
{
    char how[64], said[S_LINE + S_PATH_MAX];
    const char *log = s_child_log(r, which);
    vl_proc_describe(status, how, sizeof how);
    s_log_end(log, said, sizeof said);
    fprintf(stderr, "volley up: the %s process failed as it stopped (%s); %s\n",
            s_child_role(which), how, said);
    if (*rc != 0)
        return;
    printf("not done: the %s failed at exit (%s)%s; see %s\n", s_child_role(which), how,
           which == 1 ? ": its last checkpoint may not be written" : "",
           log[0] ? log : "its output above");
    *rc = 1;
}

/* Says, in one line, that no segment reached the learner by the end of its
   budget, and where to look: actor 1's log and its last line; with
   --actors 0, that no actor came to the broker at broker. */
static void s_unfed(const s_run_t *r, const vl_up_end_t *end, const char *broker)
{
    char said[S_LINE + S_PATH_MAX];
    if (!r->c.actors)
        fprintf(stderr,
                "volley up: no actor sent a segment in %.1f s: none came to the broker on "
                "%s (--actors 0: start them elsewhere with --broker %s)\n",
                end->secs, broker, broker);
    else if (r->actor_log[0][0]) {
        s_log_end(r->actor_log[0], said, sizeof said);
        fprintf(stderr, "volley up: no segment reached the learner in %.1f s; %s\n", end->secs,
                said);
    } else
        fprintf(stderr,
                "volley up: no segment reached the learner in %.1f s; the actors' output above "
                "may say why\n",
                end->secs);
}

/* Writes where this box reaches the broker, "HOST:PORT", into out[size]:
   its --bind address, or loopback when it binds every interface or none. */
static void s_broker_addr(const vl_up_config_t *c, char *out, size_t size)
{
    const char *host = c->bind && strcmp(c->bind, "*") != 0 && strcmp(c->bind, "0.0.0.0") != 0
                           ? c->bind
                           : "127.0.0.1";
    snprintf(out, size, "%s:%ld", host, c->port);
}

/* Appends a CURVE client's flags for a role's certificate in the --keys
   directory (nothing without --keys); paths are kept in store[2][size]. */
static void s_add_keys(s_args_t *a, const vl_up_config_t *c, const char *cert,
                       char store[2][S_PATH_MAX])
{
    if (!c->keys)
        return;
    snprintf(store[0], S_PATH_MAX, "%s/%s", c->keys, cert);
    snprintf(store[1], S_PATH_MAX, "%s/broker.cert", c->keys);
    s_add(a, "--cert");
    s_add(a, store[0]);
    s_add(a, "--broker-key");
    s_add(a, store[1]);
}

/* Appends a role's env flags: a C env's (--env and --env-arg) for every
   role; a Python env's --env MOD:FN for its actors only, the learner taking
   the spec they declare from the broker (its host needs no env code). */
static void s_add_env(s_args_t *a, const vl_up_config_t *c, const char *role)
{
    if (c->python_env && strcmp(role, "actor") == 0) {
        s_add(a, "--env");
        s_add(a, c->python_env);
        if (c->torch_model) { // acting with the module the learner trains
            s_add(a, "--torch-model");
            s_add(a, c->torch_model);
        }
    }
    if (!c->env)
        return;
    s_add(a, "--env");
    s_add(a, c->env->path ? c->env->path : c->env->name);
    if (c->env_arg) {
        s_add(a, "--env-arg");
        s_add(a, c->env_arg);
    }
}

/* Returns 1 when the role runs in Python (`PYTHON -m volley ROLE`): the
   learner with --learner torch, the actors of a Python env. */
static int s_in_python(const vl_up_config_t *c, const char *role)
{
    return strcmp(role, "learner") == 0 ? c->torch : strcmp(role, "actor") == 0 && c->python_env;
}

/* Starts `volley <role> --broker <host>:<port>` (s_broker_addr) plus what is common to
   every child (for the learner with --learner torch, `PYTHON -m volley
   learner --torch` with the same flags; for a Python env's actors, `PYTHON
   -m volley actor`); `a` holds the role's own flags; its output goes to the
   run's logs/<log>.log. */
static pid_t s_spawn(s_run_t *r, const char *role, const char *log, s_args_t *a)
{
    const vl_up_config_t *c = &r->c;
    char broker[300];
    static char python[S_PATH_MAX + 32];
    static char keys[2][S_PATH_MAX];
    int in_python = s_in_python(c, role);
    s_broker_addr(c, broker, sizeof broker);
    s_args_t full = {.argc = 0};
    if (in_python) {
        vl_up_config_python(python, sizeof python);
        s_add(&full, python);
        s_add(&full, "-m");
    }
    s_add(&full, "volley");
    s_add(&full, role);
    if (in_python && strcmp(role, "learner") == 0)
        s_add(&full, "--torch");
    if (strcmp(role, "broker") != 0) {
        s_add(&full, "--broker");
        s_add(&full, broker);
        s_add_env(&full, c, role);
        s_add_long(&full, "--horizon", c->horizon);
        s_add_long(&full, "--hidden", c->hidden);
        if (c->model_text[0]) { // a Python env's without --model: each role's default
            s_add(&full, "--model");
            s_add(&full, c->model_text);
        }
        s_add_keys(&full, c, strcmp(role, "learner") == 0 ? "learner.cert" : "actor.cert", keys);
    }
    for (int i = 0; i < a->argc; i++)
        s_add(&full, a->argv[i]);
    int fd = s_open_log(r, log);
    if (fd < 0 && !c->verbose && !(c->python_env && strcmp(role, "actor") == 0))
        s_add(&full, "--quiet"); // no log file: warnings still reach the terminal
    pid_t pid =
        in_python ? vl_proc_spawn_exec(python, full.argv, fd) : vl_proc_spawn_to(full.argv, fd);
    if (fd >= 0)
        close(fd);
    if (pid > 0 && strcmp(role, "broker") != 0)
        s_note_command(r, log, full.argv); // [learner], [actor-1]...
    return pid;
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
static pid_t s_start_broker(s_run_t *r)
{
    const vl_up_config_t *c = &r->c;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    fcntl(fds[1], F_SETFD, 0); // the broker inherits the write end, nobody else
    s_args_t a = {.argc = 0};
    char cert[S_PATH_MAX], allow[S_PATH_MAX];
    s_add_long(&a, "--port", c->port);
    s_add(&a, "--bind");
    s_add(&a, c->bind ? c->bind : "127.0.0.1");
    if (c->keys) { // every port a CURVE server; the clients keygen let in
        snprintf(cert, sizeof cert, "%s/broker.cert", c->keys);
        snprintf(allow, sizeof allow, "%s/allowed", c->keys);
        s_add(&a, "--cert");
        s_add(&a, cert);
        s_add(&a, "--allow");
        s_add(&a, allow);
    }
    s_add_long(&a, "--ready-fd", fds[1]);
    if (r->record[0]) {
        s_add(&a, "--record");
        s_add(&a, r->record);
    }
    pid_t pid = s_spawn(r, "broker", "broker", &a);
    close(fds[1]);
    int ready = pid > 0 && s_wait_ready(fds[0]) == 0;
    close(fds[0]);
    if (pid > 0 && !ready)
        vl_proc_stop(&pid, 1, 3000);
    if (ready) { // the command that worked: a retry's are not the run's
        s_args_t full = {.argc = 0};
        s_add(&full, "volley");
        s_add(&full, "broker");
        for (int i = 0; i < a.argc; i++)
            s_add(&full, a.argv[i]);
        s_note_command(r, "broker", full.argv);
    }
    return ready ? pid : -1;
}

/* Appends the torch learner's own flags (--device, --compile, --amp, --torch-model) as
   given; nothing for the C learner, which up refused them for. */
static void s_add_torch(s_args_t *a, const vl_up_config_t *c)
{
    if (!c->torch)
        return;
    if (c->device) {
        s_add(a, "--device");
        s_add(a, c->device);
    }
    if (c->compile)
        s_add(a, "--compile");
    if (c->amp) {
        s_add(a, "--amp");
        s_add(a, c->amp);
    }
    if (c->torch_model) {
        s_add(a, "--torch-model");
        s_add(a, c->torch_model);
    }
}

/* Appends "--name value" for every learner flag passed through. */
static void s_add_passed(s_args_t *a, const vl_up_config_t *c)
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
static int s_start_rest(s_run_t *r, pid_t *pids)
{
    const vl_up_config_t *c = &r->c;
    int n = 0;
    long batch = c->batch ? c->batch : c->actors * c->envs;
    long acting = c->actors ? c->actors * c->envs : batch; // remote actors: --batch counts them
    s_args_t a = {.argc = 0};
    s_add_long(&a, "--seed", c->seed);
    if (c->max_steps) // takes nothing past it: the budget is exact
        s_add_long(&a, "--max-steps", c->max_steps);
    // A Python vector env steps its own count of envs, which up cannot know: the learner then
    // sizes its batch and buffer for a round of up to 256 (unless --batch says).
    if (!c->python_env || c->batch) {
        s_add_long(&a, "--batch", batch);
        s_add_long(&a, "--capacity", 4 * batch + 4 * acting + c->retain);
    }
    s_add_long(&a, "--retain", c->retain);
    s_add(&a, "--checkpoint");
    s_add(&a, r->checkpoint);
    if (c->resume)
        s_add(&a, "--resume");
    if (c->force)
        s_add(&a, "--force");
    s_add(&a, "--metrics");
    s_add(&a, vl_rundir_path(r->dir));
    if (c->lr_anneal)
        s_add_long(&a, "--lr-anneal-steps", c->max_steps);
    if (c->deterministic) { // an update per round, reported before its weights go out
        s_add_long(&a, "--batch-wait-ms", 0);
        s_add_long(&a, "--report-ms", 0);
    }
    // The cores the actors (one forward thread each) leave to a conv model's learner: OpenMP
    // threads that share a core with an actor spin at their barriers and run many times slower.
    // A deterministic run takes one: oneDNN's sums depend on the thread count.
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    s_add_long(&a, "--threads", cores > c->actors + 1 && !c->deterministic ? cores - c->actors : 1);
    s_add_torch(&a, c);
    s_add_passed(&a, c); // last: the user's --capacity (or --threads) wins over ours
    if ((pids[n] = s_spawn(r, "learner", "learner", &a)) <= 0)
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
        if (c->obs_check) {
            s_add(&a, "--obs-check");
            s_add(&a, c->obs_check);
        }
        if (c->deterministic) { // each round on the weights trained on the one before
            s_add_long(&a, "--max-ahead", 1);
            s_add_long(&a, "--wait-ms", 3600000);
        }
        char log[32];
        snprintf(log, sizeof log, "actor-%ld", i + 1);
        if ((pids[n] = s_spawn(r, "actor", log, &a)) <= 0)
            return n;
        n++;
    }
    return n;
}

/* Starts the broker: on c->port when it was given (refused, exit 2, when
   busy), else on free ports, trying others when another process takes
   them first. Returns its pid, or -1 with *rc the exit code. */
static pid_t s_broker_up(s_run_t *r, int *rc)
{
    vl_up_config_t *c = &r->c;
    int explicit_port = c->port != 0;
    if (explicit_port && vl_free_base_port((int)c->port) != c->port) {
        fprintf(stderr,
                "volley up: --port %ld: ports %ld-%ld are not all free on this box; choose "
                "another, or leave --port out to pick free ones\n",
                c->port, c->port, c->port + VL_PORT_COUNT - 1);
        *rc = 2;
        return -1;
    }
    for (int attempt = 0; attempt < (explicit_port ? 1 : S_PORT_TRIES); attempt++) {
        if (!explicit_port &&
            (c->port = vl_free_base_port(20000 + ((getpid() + attempt * 7) % 2000) * 6)) < 0)
            break;
        pid_t pid = s_start_broker(r);
        if (pid > 0)
            return pid;
        s_broker_reason(r);
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

/* Checks the checkpoint directory dir as the learner will (vl_keeper_check),
   before anything starts. Returns 0, or -1 after printing why. */
static int s_check_checkpoint(const vl_up_config_t *c, const char *dir)
{
    vl_learner_config_t lc = vl_learner_config_default();
    if (c->env) // a Python env's spec comes from its actors: the learner checks it then
        vl_learner_config_set_env(&lc, c->env);
    lc.hidden = (uint32_t)c->hidden;
    lc.horizon = (uint32_t)c->horizon;
    lc.checkpoint_dir = dir;
    lc.resume = c->resume;
    lc.force = c->force;
    char why[1024];
    if (vl_keeper_check(&lc, c->env != NULL, why, sizeof why) == 0)
        return 0;
    fprintf(stderr, "volley up: %s\n", why);
    return -1;
}

/* Writes the env's word in a generated run name into out[size]: a Python
   env's module's last part (screens for volley.envs.screens:make_env), else
   the C env's name. Returns out. */
static const char *s_run_label(const vl_up_config_t *c, char *out, size_t size)
{
    const char *text = vl_up_config_env_name(c);
    size_t end = c->python_env ? strcspn(text, ":") : strlen(text), start = end;
    if (!c->python_env)
        start = 0;
    while (c->python_env && start > 0 && text[start - 1] != '.')
        start--;
    snprintf(out, size, "%.*s", (int)(end - start), text + start);
    return out;
}

/* Opens the run directory and settles the paths it hands out; writes the
   resolved [up] configuration. Returns 0, or -1 after printing why. */
static int s_prepare(s_run_t *r)
{
    const vl_up_config_t *c = &r->c;
    char why[1200], path[S_PATH_MAX];
    if (c->record && strchr(c->record, '/') && access(c->record, F_OK) == 0) {
        fprintf(stderr, "volley up: --record %s exists; a recording is never overwritten\n",
                c->record);
        return -1;
    }
    if (c->checkpoint && s_check_checkpoint(c, c->checkpoint) != 0)
        return -1;
    char label[80];
    r->dir = vl_rundir_open(c->runs, c->name, s_run_label(c, label, sizeof label), c->resume, why,
                            sizeof why);
    if (!r->dir) {
        fprintf(stderr, "volley up: %s\n", why);
        return -1;
    }
    if (c->checkpoint)
        snprintf(r->checkpoint, sizeof r->checkpoint, "%s", c->checkpoint);
    else
        vl_rundir_file(r->dir, "checkpoints", r->checkpoint, sizeof r->checkpoint);
    // A resumed run's own checkpoint, checked against this configuration before anything starts
    if (c->resume && !c->checkpoint && s_check_checkpoint(c, r->checkpoint) != 0)
        return -1;
    if (c->record && !strchr(c->record, '/')) // a bare name: kept with the run
        vl_rundir_file(r->dir, c->record, r->record, sizeof r->record);
    else if (c->record)
        snprintf(r->record, sizeof r->record, "%s", c->record);
    if (r->record[0] && access(r->record, F_OK) == 0) {
        fprintf(stderr, "volley up: --record %s exists; a recording is never overwritten\n",
                r->record);
        return -1;
    }
    int fd = vl_rundir_create(r->dir, "config", ".ini", path, sizeof path);
    if (fd < 0 || !(r->config = fdopen(fd, "w"))) {
        if (fd >= 0)
            close(fd);
        fprintf(stderr, "volley up: cannot write the run's configuration in %s\n",
                vl_rundir_path(r->dir));
        return -1;
    }
    vl_up_config_write(r->config, c);
    return 0;
}

/* Closes the run's config.ini. Returns 0, or -1 after printing why. */
static int s_close_config(s_run_t *r)
{
    if (!r->config)
        return 0;
    int bad = ferror(r->config) | (fclose(r->config) != 0);
    r->config = NULL;
    if (bad)
        fprintf(stderr, "volley up: could not write %s/config.ini completely\n",
                vl_rundir_path(r->dir));
    return bad ? -1 : 0;
}

/* Says, for a PyTorch learner left to pick its device, that an NVIDIA GPU
   is visible here (/dev/nvidia0, or CUDA_VISIBLE_DEVICES set): whether it
   is used depends on the learner's torch, which its log says. */
static void s_gpu_note(const vl_up_config_t *c)
{
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (!c->torch || c->device || !(access("/dev/nvidia0", F_OK) == 0 || (visible && *visible)))
        return;
    printf("volley up: a GPU is visible: the PyTorch learner trains on it when its Python's "
           "torch has CUDA, else on the CPU (logs/learner.log says which); --device cuda "
           "insists on it\n");
}

/* Stops the run's n children in reverse order of start: the actors, then
   the learner (its last checkpoint is the run's result: a learner that
   could not write it has failed the run), then the broker. In a run that
   was done (*rc 0), each that failed as it stopped is reported
   (s_stop_report) and *rc becomes 1; a run that failed has said why, and
   its other children may have failed of the same cause. */
static void s_stop_all(const s_run_t *r, pid_t *pids, int n, int *rc)
{
    int status[2 + VL_UP_MAX_ACTORS] = {0}, ran[2 + VL_UP_MAX_ACTORS], done = *rc == 0;
    for (int i = 0; i < n; i++)
        ran[i] = pids[i] > 0; // not the one that stopped on its own: it was reported
    if (n > 2)
        vl_proc_stop_all(pids + 2, n - 2, 3000, status + 2);
    if (pids[1] > 0)
        vl_proc_stop_one(&pids[1], 10000, &status[1]);
    if (pids[0] > 0)
        vl_proc_stop_one(&pids[0], 3000, &status[0]);
    for (int i = 1; i <= n && done && !vl_interrupted; i++) {
        int which = i < n ? i : 0; // the learner, the actors, then the broker
        if (ran[which] && s_stop_failed(which, status[which]))
            s_stop_report(r, which, status[which], rc);
    }
}

/* Starts every process, watches the run, stops them. Returns the exit code. */
static int s_run(s_run_t *r)
{
    char last[256] = "";
    const vl_up_config_t *c = &r->c;
    int64_t start = vl_now_ns();
    pid_t pids[2 + VL_UP_MAX_ACTORS] = {0};
    int rc = 1;
    if ((pids[0] = s_broker_up(r, &rc)) <= 0) {
        s_close_config(r);
        if (vl_rundir_discard(r->dir) == 0) // nothing ran: the name stays free
            fprintf(stderr, "volley up: removed %s (nothing ran in it)\n", vl_rundir_path(r->dir));
        return rc;
    }
    int n = 1 + s_start_rest(r, pids + 1);
    void *ctx = zmq_ctx_new();
    char broker[300], cert[S_PATH_MAX], broker_key[S_PATH_MAX];
    s_broker_addr(c, broker, sizeof broker);
    vl_curve_t *curve = NULL; // up watches as the keys' monitor (an observer)
    snprintf(cert, sizeof cert, "%s/monitor.cert", c->keys ? c->keys : ".");
    snprintf(broker_key, sizeof broker_key, "%s/broker.cert", c->keys ? c->keys : ".");
    int curve_rc = c->keys ? vl_sock_client_curve(cert, broker_key, &curve) : 0;
    void *sub = curve_rc == 0
                    ? vl_sock_connect(ctx, ZMQ_SUB, broker, VL_PORT_WEIGHTS_OUT, 0, 1 << 20)
                    : NULL;
    if (sub)
        zmq_setsockopt(sub, ZMQ_SUBSCRIBE, VL_STATS_TOPIC, strlen(VL_STATS_TOPIC));
    if (sub && c->deterministic) // the weights too: their checksum ends the run
        zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "default", strlen("default"));
    if (s_close_config(r) != 0 || n < 2 + c->actors || !sub) {
        fprintf(stderr, "volley up: could not start the run\n");
        rc = 1;
    } else {
        printf("volley up: %s, broker on %s:%ld, 1 %slearner, %ld %sactors x %ld envs; run "
               "directory %s\n",
               vl_up_config_env_name(c), c->bind ? c->bind : "127.0.0.1", c->port,
               c->torch ? "PyTorch " : "", c->actors, c->python_env ? "Python " : "", c->envs,
               vl_rundir_path(r->dir));
        s_gpu_note(c);
        fflush(stdout);
        vl_up_end_t end;
        rc = vl_up_watch(c, sub, pids, n, start, last, sizeof last, &end);
        if (rc == 1 && end.stopped >= 0) // with its log's last words (the learner's too)
            s_child_stopped(r, &end);
        else if (rc == 1 && end.stopped < 0 && !end.fed) // nothing came: where to look
            s_unfed(r, &end, broker);
    }
    s_stop_all(r, pids, n, &rc);
    if (rc == 0)
        printf("%s\n", last);
    if (sub)
        zmq_close(sub);
    zmq_ctx_term(ctx);
    vl_sock_client_curve_end(&curve);
    return rc;
}

int vl_up_main(int argc, char **argv)
{
    s_run_t r = {.dir = NULL};
    int rc = vl_up_config_parse(argc, argv, &r.c);
    if (rc == 0) {
        vl_log_init("up", r.c.verbose ? VL_LOG_INFO : VL_LOG_WARN);
        vl_proc_catch_signals();
        rc = s_prepare(&r) == 0 ? s_run(&r) : 2;
    } else
        rc = rc > 0 ? 0 : 2;
    s_close_config(&r);
    vl_rundir_destroy(&r.dir);
    vl_up_config_free(&r.c);
    return rc;
}
