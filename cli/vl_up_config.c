/*  vl_up_config: `volley up`'s flags, its --config file and the resolved
    configuration it writes. */
#include "vl_up_config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../actors/vl_actor_check.h"
#include "../common/vl_file_id.h"
#include "../common/vl_ini.h"
#include "../common/vl_opts.h"
#include "../learner/vl_kept.h"
#include "../learner/vl_learner.h"
#include "../models/vl_model_spec.h"

#define S_OPT(name, field, lo, hi, help)                                                           \
    VL_NUM_OPT(vl_up_config_t, name, VL_OPT_LONG, field, lo, hi, help)

static const vl_num_opt_t s_nums[] = {
    S_OPT("actors", actors, 0, VL_UP_MAX_ACTORS,
          "actor processes on this box (0: only remote ones: --bind, and --batch for a C env)"),
    S_OPT("envs", envs, 1, 4096,
          "environments per actor (a Python vector env steps its own number)"),
    S_OPT("port", port, 0, 65535 - VL_PORT_COUNT,
          "broker base port; it and the 4 after it must be free (0: pick free ports)"),
    S_OPT("max-steps", max_steps, 1, 1L << 50,
          "environment-step budget (e.g. 1e6), exact as above; with --until seconds none unless "
          "given"),
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
#define S_NNUMS    ((int)(sizeof s_nums / sizeof s_nums[0]))
#define S_PATH_MAX 1100 // this executable's path

static const vl_up_config_t s_defaults = {.env = NULL, // cartpole, looked up at start
                                          .actors = 2,
                                          .envs = 8,
                                          .port = 0,
                                          .horizon = 64,
                                          .hidden = 64,
                                          .seed = 1,
                                          .max_steps = 3000000,
                                          .max_ahead = -1,
                                          .wait_ms = -1,
                                          .runs = "runs"};

/* The flags that take a text (checked where they are used) or nothing. */
static const char *const s_texts[] = {"env",     "env-arg", "until",     "checkpoint", "record",
                                      "name",    "runs",    "lr-anneal", "obs-check",  "model",
                                      "learner", "bind",    "keys",      "device",     "amp",
                                      "torch-model"};
static const char *const s_bools[] = {"resume", "verbose", "deterministic", "force", "compile"};
/* Where each of s_bools is kept, in its order. */
static const size_t s_bool_at[] = {
    offsetof(vl_up_config_t, resume), offsetof(vl_up_config_t, verbose),
    offsetof(vl_up_config_t, deterministic), offsetof(vl_up_config_t, force),
    offsetof(vl_up_config_t, compile)};
/* The torch learner's own flags, passed to it as given: refused with the C learner. */
static const char *const s_torch_only[] = {"device", "compile", "amp", "torch-model"};
/* What --amp takes: the autocast dtypes the torch learner offers. */
static const char *const s_amps[] = {"bf16"};
#define S_NAMPS  ((int)(sizeof s_amps / sizeof s_amps[0]))
#define S_NTEXTS ((int)(sizeof s_texts / sizeof s_texts[0]))
#define S_NBOOLS ((int)(sizeof s_bools / sizeof s_bools[0]))

/* Returns up's own numeric flag of this name, or NULL. */
static const vl_num_opt_t *s_own(const char *name)
{
    for (int i = 0; i < S_NNUMS; i++)
        if (strcmp(s_nums[i].name, name) == 0)
            return &s_nums[i];
    return NULL;
}

/* Returns the learner flag of this name that up passes through (one up
   does not set itself), or NULL. */
static const vl_num_opt_t *s_learner_opt(const char *name)
{
    for (int i = 0; i < vl_learner_n_opts; i++)
        if (strcmp(vl_learner_opts[i].name, name) == 0)
            return s_own(name) ? NULL : &vl_learner_opts[i];
    return NULL;
}

/* Returns i if name is in the n words, else -1. */
static int s_index(const char *const *words, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(words[i], name) == 0)
            return i;
    return -1;
}

static void s_usage(FILE *out)
{
    fprintf(
        out,
        "usage: volley up [--env NAME|PATH.so|MOD:FN [--env-arg TEXT]] [--name NAME] [--runs DIR]\n"
        "                 [--until solved|steps|seconds] [--config FILE] [numeric options]\n"
        "                 [learner options] [--checkpoint DIR] [--resume] [--record FILE]\n"
        "                 [--verbose]\n"
        "\n"
        "Trains on this box: starts a broker (on free ports unless --port is given), a\n"
        "learner and N actors over loopback sockets, prints progress every second, and\n"
        "stops them all when the run is done: with --until solved (the default for an\n"
        "environment with a solved return) when it is solved (exit 0, last line\n"
        "'solved: <steps> steps in <s> s (<steps/s> steps/s)'; a spent budget exits 1);\n"
        "with --until steps (the default otherwise) after --max-steps, or --until seconds\n"
        "after --max-seconds (exit 0, last line 'done: ...'). --until seconds has no step\n"
        "budget unless --max-steps is given. An env without a solved return cannot fail to\n"
        "solve: a spent budget of the other kind prints 'budget spent: ...' and ends 'done'\n"
        "(exit 0). A process that fails\n"
        "stops the run (exit 1), as does one that fails as the run stops it (last line\n"
        "'not done: ...'); either is named with its log's path and last lines. Ctrl-C\n"
        "exits 130; bad flags or a busy --port exit 2\n"
        "before anything starts. Counts take 1e6; steps/s of a resumed run count only\n"
        "its own steps.\n"
        "\n"
        "The step budget is exact: --max-steps N counts the env steps of the segments the\n"
        "learner has taken, and the learner takes no segment once N are in, so the run\n"
        "stops at the first report at or past N, at most one segment (--horizon steps)\n"
        "beyond it; every segment it took is trained before that report. Segments the\n"
        "actors cut after that are not trained on (counted as dropped: budget).\n"
        "\n"
        "Every run keeps a directory, RUNS/NAME: config.ini (the resolved configuration:\n"
        "`volley up --config RUNS/NAME/config.ini` runs it again), checkpoints/, the\n"
        "processes' logs in logs/, the learner's metrics, and the recording if asked.\n"
        "\n"
        "--env MOD:FN (package.module:function returning an env with Gymnasium's API, or a\n"
        "vector env) runs Python actors, `PYTHON -m volley actor --env MOD:FN` (PYTHON as\n"
        "for --learner torch), imported from this directory; the learner takes the spec\n"
        "they declare (no --env). A vector env steps its own num_envs, whatever --envs\n"
        "says, so unless --batch is given the learner sizes its batch to take each round\n"
        "whole (up to 256 envs). Such an env has no solved return: the run ends at\n"
        "--max-steps or --max-seconds. A run that no actor feeds (an actor stopped\n"
        "before any segment arrived, or none arrived within its budget) says so in one\n"
        "line naming an actor's log, and exits 1.\n"
        "\n");
    vl_env_print_help(out, NULL);
    vl_opt_print(out, s_nums, S_NNUMS, &s_defaults);
    fprintf(out, "learner options, passed through to `volley learner`:\n");
    vl_num_opt_t pass[64];
    vl_learner_config_t learner = vl_learner_config_default();
    int n = 0;
    for (int i = 0; i < vl_learner_n_opts && n < 64; i++)
        if (s_learner_opt(vl_learner_opts[i].name))
            pass[n++] = vl_learner_opts[i];
    vl_opt_print(out, pass, n, &learner);
    fprintf(out,
            "  --name NAME        the run's name (default: date, time and env); an existing\n"
            "                     run is never replaced: refused unless --resume\n"
            "  --runs DIR         where run directories go (default runs)\n"
            "  --config FILE      read flags from FILE first (`key = value` under [up]; a\n"
            "                     key is a flag without --); the command line overrides it\n"
            "  --checkpoint DIR   the learner checkpoints to DIR (default: the run's\n"
            "                     checkpoints/; see volley learner --help)\n"
            "  --resume           continue: the learner resumes from its checkpoint (with\n"
            "                     --name, the existing run NAME goes on in its directory, its\n"
            "                     newest config*.ini the base: flags override it, each one\n"
            "                     printed; another --env or --hidden is refused)\n"
            "  --force            with --checkpoint DIR holding a checkpoint: start over (the\n"
            "                     old one is kept as .bak); without it that is refused\n"
            "  --record FILE      the broker records every segment message into FILE (a new\n"
            "                     file; a bare name goes in the run directory, a path with\n"
            "                     a '/' where it says), for `volley replay FILE`\n"
            "  --model SPEC       the network: layers such as 'conv(32,8,4) relu linear(512)\n"
            "                     relu', or a preset: mlp (= mlp(64)), mlp(N), cnn (default:\n"
            "                     cnn for image observations, else mlp(--hidden)); see the\n"
            "                     README's 'Models' for the grammar\n"
            "  --learner c|torch  the learner's engine: c (default), or torch: the PyTorch\n"
            "                     learner (`PYTHON -m volley learner --torch`, PYTHON being\n"
            "                     $VOLLEY_PYTHON, else the checkout's .venv/bin/python, else\n"
            "                     python3); the same flags, run directory and reports\n"
            "  --device D         with --learner torch: its torch device, cpu, cuda or cuda:N\n"
            "                     (default: cuda when that Python's torch has CUDA, else cpu,\n"
            "                     said in logs/learner.log, with a warning when a GPU is there\n"
            "                     but unused); cuda where its torch has none is refused\n"
            "  --compile          with --learner torch: torch.compile its module (PyTorch 2)\n"
            "  --amp bf16         with --learner torch: forward and loss under bfloat16\n"
            "                     autocast\n"
            "  --torch-model MOD:FN  with --learner torch and a Python env: your own torch\n"
            "                     module, built by MOD.FN(spec), trained by the learner and\n"
            "                     acted with by the actors (.venv/bin/python -m volley learner --help)\n"
            "  --obs-check MODE   the actors' check of observations against their declared\n"
            "                     ranges: error (default), warn or off (see volley actor --help)\n"
            "  --lr-anneal linear|none  the learning rate falls linearly to 0 at --max-steps\n"
            "                     (default none: constant)\n"
            "  --deterministic    one actor, fixed seeds, the learner in lockstep with it\n"
            "                     (an update per round of segments, the actor waiting for\n"
            "                     its weights): the same solved step count and the same\n"
            "                     weights checksum (printed before the last line) every\n"
            "                     time on this machine. Other runs are asynchronous and\n"
            "                     differ; `volley replay` repeats a recorded run exactly\n"
            "  --bind ADDR        the broker listens on ADDR (an interface's address, or *\n"
            "                     for all) instead of 127.0.0.1, so that actors on other\n"
            "                     hosts can join: `volley actor --broker ADDR:PORT`; with\n"
            "                     --actors 0 only they act (not kept in config.ini)\n"
            "  --keys DIR         CURVE: DIR is what `volley keygen DIR` wrote; the broker\n"
            "                     uses broker.cert and allowed/, the learner learner.cert,\n"
            "                     the actors here actor.cert, up itself monitor.cert\n"
            "  --verbose          the processes log to this terminal instead of the run's\n"
            "                     logs/\n"
            "  -h, --help         this text\n");
}

/* ---- the configuration file -------------------------------------------------- */

typedef struct {
    char **argv; // "--key", "value"... (owned)
    int argc, cap;
    const char *path;
} s_file_args_t;

/* Appends a copy of text. Returns 0, or -1 with why. */
static int s_push(s_file_args_t *a, const char *text, char *why, size_t why_size)
{
    if (a->argc + 1 >= a->cap) {
        int cap = a->cap ? 2 * a->cap : 64;
        char **more = realloc(a->argv, (size_t)cap * sizeof *more);
        if (!more) {
            snprintf(why, why_size, "out of memory");
            return -1;
        }
        a->argv = more;
        a->cap = cap;
    }
    if (!(a->argv[a->argc] = strdup(text))) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    a->argv[++a->argc] = NULL;
    return 0;
}

/* Checks a text key's value as far as it can without acting on it. */
static int s_check_text(const char *key, const char *value, char *why, size_t why_size)
{
    if (!*value) {
        snprintf(why, why_size, "%s: empty value", key);
        return -1;
    }
    if (strcmp(key, "until") == 0 && strcmp(value, "solved") != 0 && strcmp(value, "steps") != 0 &&
        strcmp(value, "seconds") != 0) {
        snprintf(why, why_size, "until wants solved, steps or seconds, not '%s'", value);
        return -1;
    }
    if (strcmp(key, "lr-anneal") == 0 && strcmp(value, "linear") != 0 &&
        strcmp(value, "none") != 0) {
        snprintf(why, why_size, "lr-anneal wants linear or none, not '%s'", value);
        return -1;
    }
    if (strcmp(key, "learner") == 0 && strcmp(value, "c") != 0 && strcmp(value, "torch") != 0) {
        snprintf(why, why_size, "learner wants c or torch, not '%s'", value);
        return -1;
    }
    if (strcmp(key, "amp") == 0 && s_index(s_amps, S_NAMPS, value) < 0) {
        snprintf(why, why_size, "amp wants bf16, not '%s'", value);
        return -1;
    }
    if (strcmp(key, "env") == 0 && !vl_env_find(value) && access(value, R_OK) != 0 &&
        !vl_kept_is_python_env(value)) {
        snprintf(why, why_size,
                 "env: no built-in '%s', no plugin file there, and not package.module:function",
                 value);
        return -1;
    }
    return 0;
}

/* Takes one entry of the file into --flag [value] arguments. */
static int s_entry(void *ctx, const char *section, const char *key, const char *value, char *why,
                   size_t why_size)
{
    s_file_args_t *a = ctx;
    if (strcmp(section, "broker") == 0 || strcmp(section, "learner") == 0 ||
        strncmp(section, "actor", 5) == 0) {
        if (strcmp(key, "command") == 0)
            return 0; // written for people: what up derived from [up]
        snprintf(why, why_size, "[%s] only records the command up ran; set '%s' under [up]",
                 section, key);
        return -1;
    }
    if (strcmp(section, "env") == 0)
        return 0; // the plugin as it was, for eval and export: up loads what [up] names
    if (strcmp(section, "up") != 0 && section[0]) {
        snprintf(why, why_size, "unknown section [%s] (up reads [up])", section);
        return -1;
    }
    char flag[80];
    snprintf(flag, sizeof flag, "--%s", key);
    const vl_num_opt_t *o = s_own(key) ? s_own(key) : s_learner_opt(key);
    if (o)
        return vl_opt_check(o, value, why, why_size) || s_push(a, flag, why, why_size) ||
                       s_push(a, value, why, why_size)
                   ? -1
                   : 0;
    if (s_index(s_texts, S_NTEXTS, key) >= 0)
        return s_check_text(key, value, why, why_size) || s_push(a, flag, why, why_size) ||
                       s_push(a, value, why, why_size)
                   ? -1
                   : 0;
    if (s_index(s_bools, S_NBOOLS, key) >= 0) {
        int yes = strcmp(value, "true") == 0 || strcmp(value, "yes") == 0 || !strcmp(value, "1");
        int no = strcmp(value, "false") == 0 || strcmp(value, "no") == 0 || !strcmp(value, "0");
        if (!yes && !no) {
            snprintf(why, why_size, "%s wants true or false, not '%s'", key, value);
            return -1;
        }
        return yes ? s_push(a, flag, why, why_size) : 0;
    }
    snprintf(why, why_size,
             "unknown key '%s' (a key is a `volley up` flag without its --; see volley up --help)",
             key);
    return -1;
}

/* ---- resuming a run: its own configuration is the base ------------------------- */

/* Keys a resumed run cannot change: its checkpoint holds a network for
   this env and this size, and the optimiser state of its learner's engine. */
static const char *const s_fixed[] = {"env", "hidden", "model", "learner"};

enum { O_TEXT = 1000, O_BOOL = 1100, O_CONFIG = 1200, O_LEARNER = 2000 };
#define S_NOPTS (S_NNUMS + 64 + S_NTEXTS + S_NBOOLS + 3)

/* Writes up's getopt_long table into opts[S_NOPTS], ending it with a
   zeroed entry. */
static void s_options(struct option *opts)
{
    int n = vl_opt_getopt(s_nums, S_NNUMS, 0, opts);
    for (int i = 0; i < S_NTEXTS; i++)
        opts[n++] = (struct option){s_texts[i], required_argument, 0, O_TEXT + i};
    for (int i = 0; i < S_NBOOLS; i++)
        opts[n++] = (struct option){s_bools[i], no_argument, 0, O_BOOL + i};
    opts[n++] = (struct option){"config", required_argument, 0, O_CONFIG};
    opts[n++] = (struct option){"help", no_argument, 0, 'h'};
    for (int i = 0; i < vl_learner_n_opts && n < S_NOPTS - 1; i++)
        if (s_learner_opt(vl_learner_opts[i].name))
            opts[n++] =
                (struct option){vl_learner_opts[i].name, required_argument, 0, O_LEARNER + i};
    opts[n] = (struct option){0, 0, 0, 0};
}

/* Returns the value argv gives the flag at argv[*i] ("--key=value", or
   "--key value" for a flag that takes one; "true" for a switch) and its
   key in key[size], an abbreviation spelled out as getopt_long reads it;
   advances *i past a separate value. NULL when argv[*i]
   is not a flag. */
static const char *s_flag_value(int argc, char **argv, int *i, char *key, size_t size)
{
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) != 0 || !a[2])
        return NULL;
    const char *eq = strchr(a, '=');
    size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    struct option opts[S_NOPTS];
    s_options(opts);
    const struct option *o = vl_opt_lookup(opts, a + 2, n); // an abbreviation, as getopt takes it
    if (o)
        snprintf(key, size, "%s", o->name);
    else
        snprintf(key, size, "%.*s", (int)n, a + 2);
    if (eq)
        return eq + 1;
    if (!o || o->has_arg != required_argument)
        return "true";
    return *i + 1 < argc ? argv[++*i] : NULL;
}

/* Returns the value of --KEY in argv (either form), or NULL. */
static const char *s_find_flag(int argc, char **argv, const char *want)
{
    char key[64];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        const char *v = s_flag_value(argc, argv, &i, key, sizeof key);
        if (v && strcmp(key, want) == 0)
            return v;
    }
    return NULL;
}

/* Finds the newest resolved configuration of run RUNS/NAME into out[size]:
   config-K.ini of the highest K, else config.ini. Returns 0, or -1 when the
   run has none. */
static int s_run_config(const char *runs, const char *name, char *out, size_t size)
{
    int found = -1;
    for (int k = 1; k <= 1000; k++) {
        char path[4200];
        int n = k == 1 ? snprintf(path, sizeof path, "%s/%s/config.ini", runs, name)
                       : snprintf(path, sizeof path, "%s/%s/config-%d.ini", runs, name, k);
        if (n >= (int)sizeof path || access(path, R_OK) != 0)
            break;
        found = snprintf(out, size, "%s", path) < (int)size ? 0 : -1;
    }
    return found;
}

/* Returns 1 if texts a and b say the same: equal, or the same number. */
static int s_same(const char *a, const char *b)
{
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (strcmp(a, b) == 0 || (ea != a && !*ea && eb != b && !*eb && x == y))
        return 1;
    char *ra = realpath(a, NULL), *rb = realpath(b, NULL); // one file named two ways
    int same = ra && rb && strcmp(ra, rb) == 0;
    free(ra), free(rb);
    return same;
}

/* Appends a line to what is said once the flags are all good (a resume's
   overrides). Without memory the line is left out. */
__attribute__((format(printf, 2, 3))) static void s_note(vl_up_config_t *c, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t old = c->notes ? strlen(c->notes) : 0, n = strlen(line);
    char *more = realloc(c->notes, old + n + 2);
    if (!more)
        return;
    memcpy(more + old, line, n);
    memcpy(more + old + n, "\n", 2);
    c->notes = more;
}

/* Compares the command line with the base configuration (bv[bc], from the
   run's file `base`): notes each key the command line changes (s_note),
   refuses a change of a fixed key. Returns 0, or -1 after printing why. */
static int s_overrides(vl_up_config_t *c, const char *name, const char *base, int bc, char **bv,
                       int argc, char **argv)
{
    static const char *const unsaved[] = {"resume", "name", "runs", "verbose",
                                          "force",  "bind", "keys"};
    char key[64];
    for (int i = 1; i < argc; i++) {
        const char *v = s_flag_value(argc, argv, &i, key, sizeof key);
        if (!v || s_index(unsaved, 7, key) >= 0) // not kept in a run's configuration
            continue;
        const char *was = s_find_flag(bc, bv, key);
        if (was && s_same(was, v))
            continue;
        if (s_index(s_fixed, (int)(sizeof s_fixed / sizeof s_fixed[0]), key) >= 0 && was) {
            fprintf(stderr,
                    "volley up: --resume: %s: run %s was trained with %s = %s, not %s; resume "
                    "it with the same %s, or start a new run\n",
                    key, name, key, was, v, key);
            return -1;
        }
        s_note(c, "volley up: resuming %s: %s = %s (%s was %s)", name, key, v, base,
               was ? was : "unset");
    }
    return 0;
}

/* Takes --record FILE out of a resumed run's base arguments: the
   recording of its first start stays as it is (a recording is never
   written twice). Says so unless the command line names another. */
static void s_drop_record(vl_up_config_t *c, s_file_args_t *a, const char *name, int given)
{
    for (int i = 1; i + 1 < a->argc; i++)
        if (strcmp(a->argv[i], "--record") == 0) {
            if (!given)
                s_note(c,
                       "volley up: resuming %s: not recording (its %s stays as it is; --record "
                       "FILE for a new one)",
                       name, a->argv[i + 1]);
            free(a->argv[i]), free(a->argv[i + 1]);
            memmove(&a->argv[i], &a->argv[i + 2], (size_t)(a->argc - i - 1) * sizeof *a->argv);
            a->argc -= 2;
            return;
        }
}

/* Builds c->argv: argv[0], the file's arguments, then argv's. The file is
   --config FILE, or for `--resume --name NAME` the run's own newest
   config (its recording left out: a recording is never written twice).
   Returns 0, or -1 after printing why. */
static int s_merge(int argc, char **argv, vl_up_config_t *c)
{
    s_file_args_t a = {.argv = NULL};
    char why[600] = "", base[4200];
    int rc = s_push(&a, argv[0], why, sizeof why);
    c->config = s_find_flag(argc, argv, "config");
    const char *name = s_find_flag(argc, argv, "name"), *runs = s_find_flag(argc, argv, "runs");
    int resuming = !c->config && name && s_find_flag(argc, argv, "resume") &&
                   s_run_config(runs ? runs : s_defaults.runs, name, base, sizeof base) == 0;
    if (rc == 0 && (c->config || resuming))
        rc = vl_ini_parse(c->config ? c->config : base, s_entry, &a, why, sizeof why);
    if (rc == 0 && resuming) {
        s_drop_record(c, &a, name, s_find_flag(argc, argv, "record") != NULL);
        rc = s_overrides(c, name, base, a.argc, a.argv, argc, argv) != 0 ? -2 : 0;
    }
    for (int i = 1; rc == 0 && i < argc; i++)
        rc = s_push(&a, argv[i], why, sizeof why);
    c->argv = a.argv;
    c->argc = a.argc;
    if (rc == -1)
        fprintf(stderr, "volley up: %s\n", why);
    return rc ? -1 : 0;
}

/* ---- flags -------------------------------------------------------------------- */

/* Checks a learner flag's value (as the learner will parse it) and keeps it
   to pass through. Returns 0, or -1 after printing why. */
static int s_pass(vl_up_config_t *c, const vl_num_opt_t *o, const char *text)
{
    vl_learner_config_t scratch = vl_learner_config_default();
    if (vl_opt_set("up", o, &scratch, text) != 0)
        return -1;
    for (int i = 0; i + 1 < c->n_pass; i += 2)
        if (strcmp(c->pass[i], o->name) == 0) { // given again (the file, then the command line)
            c->pass[i + 1] = text;
            return 0;
        }
    if (c->n_pass == 2 * VL_UP_MAX_PASS) {
        fprintf(stderr, "volley up: more than %d learner flags\n", VL_UP_MAX_PASS);
        return -1;
    }
    c->pass[c->n_pass++] = o->name;
    c->pass[c->n_pass++] = text;
    return 0;
}

/* Parses --until's word. Returns 0, or -1 after printing why. */
static int s_parse_until(const char *text, vl_until_t *out)
{
    static const char *const words[] = {"solved", "steps", "seconds"};
    int i = s_index(words, 3, text);
    if (i < 0) {
        fprintf(stderr, "volley up: --until wants solved, steps or seconds, not '%s'\n", text);
        return -1;
    }
    *out = (vl_until_t)(VL_UNTIL_SOLVED + i);
    return 0;
}

/* Refuses the torch learner's own flags (s_torch_only) without --learner
   torch, and --torch-model without Python actors or beside --model. Returns
   0, or -1 after printing why. */
static int s_check_torch_only(const vl_up_config_t *c)
{
    const int given[] = {c->device != NULL, c->compile, c->amp != NULL, c->torch_model != NULL};
    for (int i = 0; i < (int)(sizeof given / sizeof given[0]) && !c->torch; i++)
        if (given[i]) {
            fprintf(stderr,
                    "volley up: --%s is the PyTorch learner's: add --learner torch (the C "
                    "learner runs on the CPU)\n",
                    s_torch_only[i]);
            return -1;
        }
    if (c->torch_model && !c->python_env) {
        fprintf(stderr, "volley up: --torch-model needs Python actors (--env MOD:FN): C actors "
                        "run only the networks a model spec says\n");
        return -1;
    }
    if (c->torch_model && c->model_text[0]) {
        fprintf(stderr, "volley up: --torch-model and --model name two networks: give one\n");
        return -1;
    }
    return 0;
}

/* Refuses what a Python env's actors cannot do. Returns 0, or -1 after
   printing why. */
static int s_check_python(const vl_up_config_t *c)
{
    const struct {
        int given;
        const char *flag, *why;
    } refused[] = {
        {c->env_arg != NULL, "--env-arg", "the env's function takes no argument"},
        {c->deterministic, "--deterministic", "a Python env's steps are its own to repeat"},
    };
    for (size_t i = 0; c->python_env && i < sizeof refused / sizeof refused[0]; i++)
        if (refused[i].given) {
            fprintf(stderr, "volley up: %s is not available with a Python env (--env %s): %s\n",
                    refused[i].flag, c->python_env, refused[i].why);
            return -1;
        }
    return 0;
}

/* Settles a Python env's model into c->model_text: --model as given, its
   grammar checked ("" without one: each role's default). Its observations
   are known only once its actors declare them, and the learner and the
   actors resolve it then. Returns 0, or -1 after printing why. */
static int s_python_model(vl_up_config_t *c)
{
    char why[512] = "";
    size_t n = c->model ? strlen(c->model) : 0;
    vl_model_spec_t *spec =
        n && n < sizeof c->model_text ? vl_model_spec_parse(c->model, why, sizeof why) : NULL;
    if (n && !spec) {
        fprintf(stderr, "volley up: --model: %s\n",
                why[0] ? why : "longer than a model spec may be");
        return -1;
    }
    vl_model_spec_destroy(&spec);
    snprintf(c->model_text, sizeof c->model_text, "%s", n ? c->model : "");
    return 0;
}

/* Settles the model every role gets into c->model_text: the C env's
   resolved, a Python env's as given (s_python_model). Returns 0, or -1
   after printing why. */
static int s_settle_model(vl_up_config_t *c)
{
    if (c->python_env)
        return s_python_model(c);
    vl_learner_config_t lc = vl_learner_config_default();
    vl_learner_config_set_env(&lc, c->env);
    lc.hidden = (uint32_t)c->hidden;
    char why[512];
    if (vl_learner_config_set_model(&lc, c->model, 1, c->model_text, why, sizeof why) != 0) {
        fprintf(stderr, "volley up: --model: %s (env %s)\n", why, c->env->name);
        return -1;
    }
    return 0;
}

/* Checks what the flags cannot check one by one; settles --until's default.
   Returns 0, or -1 after printing why. */
static int s_check(vl_up_config_t *c)
{
    if (s_check_python(c) != 0 || s_settle_model(c) != 0 || s_check_torch_only(c) != 0)
        return -1;
    int solvable = c->env && c->env->has_solved_return; // a Python env has no solved return here
    if (c->until == VL_UNTIL_DEFAULT)
        c->until = solvable ? VL_UNTIL_SOLVED : VL_UNTIL_STEPS;
    if (c->until == VL_UNTIL_SOLVED && !solvable) {
        fprintf(stderr, "volley up: --until solved: %s has no solved return; use --until steps\n",
                vl_up_config_env_name(c));
        return -1;
    }
    if (c->until == VL_UNTIL_SECONDS && c->max_seconds == 0) {
        fprintf(stderr, "volley up: --until seconds needs --max-seconds S\n");
        return -1;
    }
    // The clock ends this run: the default step budget must not end it first.
    if (c->until == VL_UNTIL_SECONDS && !s_find_flag(c->argc, c->argv, "max-steps"))
        c->max_steps = 0;
    if (c->lr_anneal && c->max_steps == 0) {
        fprintf(stderr, "volley up: --lr-anneal linear falls to 0 at --max-steps: give --max-steps "
                        "N (--until seconds has no step budget by default)\n");
        return -1;
    }
    if (c->deterministic && (c->retain || c->actors > 2)) {
        fprintf(stderr, "volley up: --deterministic runs one actor on-policy: drop %s\n",
                c->retain ? "--retain" : "--actors");
        return -1;
    }
    if (c->deterministic)
        c->actors = 1;
    if (c->actors == 0 && (!c->bind || (!c->batch && !c->python_env))) {
        fprintf(stderr, "volley up: --actors 0 trains on remote actors: give --bind ADDR (where "
                        "they reach the broker) and, for a C env, --batch N (their actors x "
                        "envs)\n");
        return -1;
    }
    if (c->name && (!*c->name || strchr(c->name, '/') || c->name[0] == '.')) {
        fprintf(stderr, "volley up: --name wants a plain name (no '/', not starting with '.')\n");
        return -1;
    }
    return 0;
}

/* Sets the text flag number `which` (s_texts order) from text. Returns 0 or -1. */
static int s_set_text(vl_up_config_t *c, int which, const char *text)
{
    switch (which) {
    case 0: // MOD:FN as eval and export tell a Python env, else a built-in or a plugin
        c->python_env = vl_kept_is_python_env(text) ? text : NULL;
        c->env = c->python_env ? NULL : vl_env_lookup("up", text);
        return c->env || c->python_env ? 0 : -1;
    case 1:
        c->env_arg = text;
        return 0;
    case 2:
        return s_parse_until(text, &c->until);
    case 3:
        c->checkpoint = text;
        return 0;
    case 4:
        c->record = text;
        return 0;
    case 5:
        c->name = text;
        return 0;
    case 6:
        c->runs = text;
        return 0;
    case 7:
        if (strcmp(text, "linear") != 0 && strcmp(text, "none") != 0) {
            fprintf(stderr, "volley up: --lr-anneal wants linear or none, not '%s'\n", text);
            return -1;
        }
        c->lr_anneal = text[0] == 'l';
        return 0;
    case 9:
        c->model = text;
        return 0;
    case 11:
        c->bind = text;
        return 0;
    case 12:
        c->keys = text;
        return 0;
    case 10:
        if (strcmp(text, "c") != 0 && strcmp(text, "torch") != 0) {
            fprintf(stderr, "volley up: --learner wants c or torch, not '%s'\n", text);
            return -1;
        }
        c->torch = text[0] == 't';
        return 0;
    case 13:
        c->device = text; // torch's device names: the torch learner checks it
        return 0;
    case 14:
        if (s_index(s_amps, S_NAMPS, text) < 0) {
            fprintf(stderr, "volley up: --amp wants bf16, not '%s'\n", text);
            return -1;
        }
        c->amp = text;
        return 0;
    case 15:
        c->torch_model = text; // MOD:FN: the torch learner imports it and checks it
        return 0;
    default: {
        vl_obs_check_t mode;
        if (vl_obs_check_parse(text, &mode) != 0) {
            fprintf(stderr, "volley up: --obs-check wants error, warn or off, not '%s'\n", text);
            return -1;
        }
        c->obs_check = text;
        return 0;
    }
    }
}

int vl_up_config_parse(int argc, char **argv, vl_up_config_t *c)
{
    *c = s_defaults;
    if (s_merge(argc, argv, c) != 0)
        return -1;
    struct option opts[S_NOPTS];
    s_options(opts);
    int opt, bad = 0;
    optind = 1;
    opterr = 0; // a refused flag gets one line (vl_opt_refused), not the whole usage
    while (!bad && (opt = getopt_long(c->argc, c->argv, "h", opts, NULL)) != -1) {
        if (opt >= 0 && opt < S_NNUMS)
            bad = vl_opt_set("up", &s_nums[opt], c, optarg);
        else if (opt >= O_LEARNER && opt < O_LEARNER + vl_learner_n_opts)
            bad = s_pass(c, &vl_learner_opts[opt - O_LEARNER], optarg);
        else if (opt >= O_TEXT && opt < O_TEXT + S_NTEXTS)
            bad = s_set_text(c, opt - O_TEXT, optarg);
        else if (opt >= O_BOOL && opt < O_BOOL + S_NBOOLS)
            *(int *)((char *)c + s_bool_at[opt - O_BOOL]) = 1;
        else if (opt == O_CONFIG)
            continue; // read first, by s_merge
        else if (opt == 'h') {
            s_usage(stdout);
            return 1;
        } else {
            vl_opt_refused("up", c->argv, opts, "h");
            return -1;
        }
    }
    if (!bad && !c->env && !c->python_env)
        bad = !(c->env = vl_env_lookup("up", "cartpole"));
    if (!bad && optind < c->argc) {
        fprintf(stderr, "volley up: unexpected argument '%s'\n", c->argv[optind]);
        bad = 1;
    }
    if (bad || s_check(c) != 0)
        return -1;
    if (c->notes) // a resume's overrides, once every flag is good
        fputs(c->notes, stdout);
    return 0;
}

void vl_up_config_free(vl_up_config_t *c)
{
    for (int i = 0; c->argv && i < c->argc; i++)
        free(c->argv[i]);
    free(c->argv);
    free(c->notes);
    c->notes = NULL;
    c->argv = NULL;
    c->argc = 0;
}

/* Writes "key = value" unless value is NULL. */
static void s_kv(FILE *out, const char *key, const char *value)
{
    if (value)
        fprintf(out, "%s = %s\n", key, value);
}

/* Writes "key = path" with a relative path made absolute, so that eval,
   export and a resume find it from any directory. */
static void s_path(FILE *out, const char *key, const char *path)
{
    char cwd[4096];
    if (path && path[0] != '/' && getcwd(cwd, sizeof cwd))
        fprintf(out, "%s = %s/%s\n", key, cwd, path);
    else
        s_kv(out, key, path);
}

/* Writes [env]: the plugin's absolute path, size and CRC-32C, which eval
   and export check before loading it from this record. Nothing for a
   built-in, or a plugin that can no longer be read (eval then asks for
   --env). */
static void s_plugin_record(FILE *out, const char *path)
{
    vl_file_id_t id;
    if (!path || vl_file_id(path, &id) != 0)
        return;
    fprintf(out,
            "\n[env]\n"
            "# the plugin trained on: eval and export load it from path while it has these bytes\n"
            "path = %s\nbytes = %llu\ncrc32c = %08x\n",
            path, (unsigned long long)id.bytes, id.crc32c);
}

void vl_up_config_write(FILE *out, const vl_up_config_t *c)
{
    static const char *const until[] = {"solved", "solved", "steps", "seconds"};
    char value[64];
    // A plugin by its absolute path: eval, export and a resume find it from any directory.
    char *plugin = c->env && c->env->path ? realpath(c->env->path, NULL) : NULL;
    fprintf(out, "# volley up: the resolved configuration of this run. Run it again with\n"
                 "#   volley up --config THIS_FILE [flags that override it]\n"
                 "# Keys are `volley up` flags without their --; [up] is all that is read.\n"
                 "[up]\n");
    if (plugin)
        s_kv(out, "env", plugin);
    else if (c->env && c->env->path)
        s_path(out, "env", c->env->path);
    else
        s_kv(out, "env", vl_up_config_env_name(c)); // MOD:FN: eval plays it in Python
    s_kv(out, "env-arg", c->env_arg);
    s_kv(out, "obs-check", c->obs_check);
    s_kv(out, "model", c->model_text[0] ? c->model_text : NULL); // a rerun builds the same network
    s_kv(out, "learner", c->torch ? "torch" : "c");
    s_kv(out, "device", c->device);
    s_kv(out, "amp", c->amp);
    s_kv(out, "torch-model", c->torch_model);
    if (c->compile)
        s_kv(out, "compile", "true");
    s_kv(out, "until", until[c->until]);
    for (int i = 0; i < S_NNUMS; i++) {
        if (strcmp(s_nums[i].name, "port") == 0 && c->port == 0)
            continue; // picked free: another run would pick again
        if (strcmp(s_nums[i].name, "max-steps") == 0 && c->max_steps == 0)
            continue; // --until seconds without a step budget: none again when read back
        vl_opt_format(&s_nums[i], c, value, sizeof value);
        s_kv(out, s_nums[i].name, value);
    }
    vl_learner_config_t learner = vl_learner_config_default();
    uint64_t given = 0;
    for (int i = 0; i + 1 < c->n_pass; i += 2) {
        const vl_num_opt_t *o = s_learner_opt(c->pass[i]);
        vl_opt_set("up", o, &learner, c->pass[i + 1]);
        given |= o && o - vl_learner_opts < 64 ? 1ull << (o - vl_learner_opts) : 0;
    }
    if (c->env) // the learner's defaults follow the model
        vl_learner_config_set_env(&learner, c->env);
    snprintf(learner.model, sizeof learner.model, "%s", c->model_text);
    vl_learner_config_settle(&learner, given);
    for (int i = 0; i < vl_learner_n_opts; i++) {
        const vl_num_opt_t *o = &vl_learner_opts[i];
        int passed = 0;
        for (int k = 0; k + 1 < c->n_pass; k += 2)
            passed |= strcmp(c->pass[k], o->name) == 0;
        // capacity, threads: up sizes them from actors, envs, batch and cores unless told;
        // minibatch: the torch learner sizes it for its device unless told; a Python env's
        // defaults follow a model and observations only its actors' spec settles
        if (!s_learner_opt(o->name) || (c->python_env && !passed) ||
            ((strcmp(o->name, "capacity") == 0 || strcmp(o->name, "threads") == 0) && !passed) ||
            (c->torch && strcmp(o->name, "minibatch") == 0 && !passed))
            continue;
        vl_opt_format(o, &learner, value, sizeof value);
        s_kv(out, o->name, value);
    }
    if (c->lr_anneal)
        s_kv(out, "lr-anneal", "linear");
    if (c->deterministic)
        s_kv(out, "deterministic", "true");
    s_path(out, "checkpoint", c->checkpoint);
    s_kv(out, "record", c->record);
    s_plugin_record(out, plugin);
    free(plugin);
}

const char *vl_up_config_env_name(const vl_up_config_t *c)
{
    return c->python_env ? c->python_env : c->env->name;
}

void vl_up_config_python(char *out, size_t size)
{
    char exe[S_PATH_MAX], path[S_PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
    if (slash)
        *slash = '\0'; // the executable's folder
    snprintf(path, sizeof path, "%s/libvolley.so", exe);
    if (slash && access(path, R_OK) == 0)
        setenv("VOLLEY_LIB", path, 0);
    snprintf(path, sizeof path, "%s/../.venv/bin/python", exe);
    if (getenv("VOLLEY_PYTHON") && *getenv("VOLLEY_PYTHON"))
        snprintf(out, size, "%s", getenv("VOLLEY_PYTHON"));
    else
        snprintf(out, size, "%s", slash && access(path, X_OK) == 0 ? path : "python3");
}
