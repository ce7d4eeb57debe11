/*  `volley learner`: flags, connect, train until SIGINT/SIGTERM, stop. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_rundir.h"
#include "../common/vl_sock.h"
#include "vl_engine.h"
#include "vl_keeper.h"
#include "vl_learner.h"
#include "vl_learner_spec.h"

#define S_OPT(name, kind, field, lo, hi, help)                                                     \
    VL_NUM_OPT(vl_learner_config_t, name, kind, field, lo, hi, help)

const vl_num_opt_t vl_learner_opts[] = {
    S_OPT("seed", VL_OPT_U64, seed, 0, 1L << 62, "initial weights, minibatch order"),
    S_OPT("threads", VL_OPT_U32, threads, 0, 1024,
          "threads of a conv model's forward and backward (0: every core)"),
    S_OPT("horizon", VL_OPT_U32, horizon, 1, 4096, "steps per segment (no --env: the spec's)"),
    S_OPT("hidden", VL_OPT_U32, hidden, 1, 4096, "hidden units per layer (no --env: the spec's)"),
    S_OPT("batch", VL_OPT_U32, batch_segments, 0, 65536,
          "segments an update takes, at most (0: 256, fewer for big observations)"),
    S_OPT("batch-wait-ms", VL_OPT_U32, batch_wait_ms, 0, 60000,
          "no arrival this long: train on what waits (0: full batches)"),
    S_OPT("capacity", VL_OPT_U32, capacity, 0, 1 << 20,
          "buffer slots, >= 2 x batch + retain (0: that, at least 64)"),
    S_OPT("epochs", VL_OPT_U32, epochs, 1, 1000, "passes over each batch"),
    S_OPT("minibatch", VL_OPT_U32, minibatch, 1, 1 << 20, "samples per Adam step"),
    S_OPT("max-lag", VL_OPT_U32, max_lag, 0, 1 << 30, "drop segments this many versions old"),
    S_OPT("retain", VL_OPT_U32, retain, 0, 1 << 20,
          "0: on-policy batches; N: prioritized ring of N segments"),
    S_OPT("alpha", VL_OPT_FLOAT, alpha, 0, 10, "ring priority exponent (0: uniform)"),
    S_OPT("beta0", VL_OPT_FLOAT, beta0, 0, 1, "ring importance exponent at start"),
    S_OPT("beta-steps", VL_OPT_U32, beta_steps, 0, 1 << 30, "updates until beta reaches 1"),
    S_OPT("checkpoint-every", VL_OPT_U32, checkpoint_every, 1, 1 << 30,
          "seconds between checkpoints"),
    S_OPT("report-ms", VL_OPT_U32, report_ms, 0, 60000,
          "progress reports this often (0: after every update)"),
    S_OPT("keep", VL_OPT_U32, keep, 1, 1024,
          "checkpoints kept: the newest N as <policy>-v<version>.ckpt (1: only <policy>.ckpt)"),
    S_OPT("lr", VL_OPT_FLOAT, lr, 0, 1, "Adam learning rate (models with conv layers: 0.0003)"),
    S_OPT("lr-anneal-steps", VL_OPT_U64, lr_anneal_steps, 0, 1L << 50,
          "lr falls linearly to 0 at this many env steps (0: constant)"),
    S_OPT("max-steps", VL_OPT_U64, max_steps, 0, 1L << 50,
          "env-step budget: no segment is taken once N are in (0: none)"),
    S_OPT("gamma", VL_OPT_FLOAT, gamma, 0, 1, "discount"),
    S_OPT("lambda", VL_OPT_FLOAT, lambda, 0, 1, "V-trace lambda"),
    S_OPT("clip", VL_OPT_FLOAT, clip, 0, 10, "PPO ratio clip"),
    S_OPT("ent-coef", VL_OPT_FLOAT, ent_coef, 0, 10, "entropy bonus weight"),
    S_OPT("vf-coef", VL_OPT_FLOAT, vf_coef, 0, 100, "value loss weight"),
    S_OPT("max-grad-norm", VL_OPT_FLOAT, max_grad_norm, 0, 1e6, "gradient norm clip, 0 off"),
    S_OPT("rho-bar", VL_OPT_FLOAT, rho_bar, 0, 1e30, "V-trace rho clip"),
    S_OPT("c-bar", VL_OPT_FLOAT, c_bar, 0, 1e30, "V-trace c clip"),
    S_OPT("burn-in", VL_OPT_U32, burn_in, 0, 4095,
          "an lstm: first steps of a segment that only rebuild its state (no loss)"),
    S_OPT("norm-obs", VL_OPT_INT, norm_obs, -1, 1,
          "normalise observations by running stats: 1 on, 0 off, -1 on but for a conv "
          "net or a torch:MOD:FN module with discrete actions and no lstm"),
    S_OPT("norm-reward", VL_OPT_INT, norm_reward, -1, 1,
          "scale rewards by the return's running std: 1, 0, -1 on for box or lstm"),
};
const int vl_learner_n_opts = (int)(sizeof vl_learner_opts / sizeof vl_learner_opts[0]);

static void s_usage(FILE *out)
{
    fprintf(out, "usage: volley learner --broker HOST[:PORT] [--policy NAME] [--env NAME|PATH.so]\n"
                 "                      [--checkpoint DIR [--resume|--force]] [--metrics DIR]\n"
                 "                      [--run-dir DIR]\n"
                 "                      [numeric options] [--quiet|--verbose]\n"
                 "\n"
                 "Trains one policy on the segments the broker routes to it (V-trace advantages,\n"
                 "clipped-surrogate PPO, Adam) and publishes each new weights version.\n"
                 "\n"
                 "An update takes what the actors sent since the last one, up to --batch\n"
                 "segments. Actors wait for new weights after each round (--max-ahead 1: one\n"
                 "segment per env), so when none has come for --batch-wait-ms the learner trains\n"
                 "on those waiting and from then on waits for that many (growing back toward\n"
                 "--batch as more arrive). Left to the learner, --batch holds a round of 256 envs\n"
                 "(fewer for big observations): the actors wait for the learner rather than send\n"
                 "what it would drop as older than --max-lag.\n"
                 "\n"
                 "With --env the learner declares its policy's spec (observation fields, actions,\n"
                 "--horizon, --hidden) to the broker (its word outranks actors') and exits 2 if\n"
                 "another learner's spec holds the policy.\n"
                 "Without --env it takes the spec from the broker, waiting until an actor has\n"
                 "declared it; the learner host needs no environment code.\n"
                 "\n"
                 "`.venv/bin/python -m volley learner --torch` takes the same flags and trains\n"
                 "with a PyTorch engine in this same loop (checkpoints, resume, reports,\n"
                 "budget).\n"
                 "\n");
    vl_opt_print_role(out, "policy to train");
    fprintf(out,
            "  --checkpoint DIR   write DIR/<policy>.ckpt every --checkpoint-every seconds and\n"
            "                     at exit (atomically, checksummed)\n"
            "  --resume           continue from DIR/<policy>.ckpt: weights, optimizer, version\n"
            "                     numbers, counters (a corrupt checkpoint, or one trained on\n"
            "                     another env or network size, is refused)\n"
            "  --force            start over where DIR holds a checkpoint (the old one is kept\n"
            "                     as .bak); without --resume or --force that is refused\n"
            "  --run-dir DIR      keep this learner's run in DIR (made; an existing one only\n"
            "                     with --resume): config.ini, checkpoints/ (unless\n"
            "                     --checkpoint), metrics (unless --metrics); `volley eval DIR`\n"
            "  --metrics DIR      write progress to DIR/metrics.jsonl (a JSON object a line,\n"
            "                     appended) and a TensorBoard event file in DIR, with every\n"
            "                     report (--report-ms)\n");
    vl_opt_print_curve(out);
    vl_env_print_help(out, "none: the spec comes from the broker");
    vl_opt_print_model(out);
    vl_learner_config_t defaults = vl_learner_config_default();
    defaults.batch_segments = defaults.capacity = 0; // sized to the observation
    vl_opt_print(out, vl_learner_opts, vl_learner_n_opts, &defaults);
    fprintf(out, "  --quiet            warnings and errors only\n"
                 "  --verbose          debug logging, with progress every second\n"
                 "  -h, --help         this text\n");
}

/* With --run-dir DIR: opens DIR as a run directory (refused when it exists,
   unless --resume) and points --checkpoint (default DIR/checkpoints) and
   --metrics (default DIR) into it. Returns 0, or -1 after printing why. */
static int s_open_run_dir(vl_learner_config_t *c, const char *run_dir, vl_rundir_t **dir)
{
    static char checkpoints[4200];
    char parent[4096], why[1200];
    snprintf(parent, sizeof parent, "%s", run_dir);
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = 0;
    char *slash = strrchr(parent, '/');
    const char *name = slash ? slash + 1 : parent;
    if (slash == parent)
        *dir = vl_rundir_open("/", name, c->env_name, c->resume, why, sizeof why);
    else if (slash) {
        *slash = 0;
        *dir = vl_rundir_open(parent, name, c->env_name, c->resume, why, sizeof why);
    } else
        *dir = vl_rundir_open(".", name, c->env_name, c->resume, why, sizeof why);
    if (!*dir) {
        fprintf(stderr, "volley learner: --run-dir: %s\n", why);
        return -1;
    }
    if (!c->checkpoint_dir) {
        vl_rundir_file(*dir, "checkpoints", checkpoints, sizeof checkpoints);
        c->checkpoint_dir = checkpoints;
    }
    if (!c->metrics_dir)
        c->metrics_dir = vl_rundir_path(*dir);
    return 0;
}

/* Writes the resolved configuration as the run directory's config.ini
   ([learner]; config-2.ini... when resumed). Returns 0, or -1 after
   printing why. */
static int s_write_run_config(vl_rundir_t *dir, const vl_learner_config_t *c)
{
    char text[8192], path[4200];
    int n = vl_keeper_config_text(c, text, sizeof text);
    int fd = n > 0 ? vl_rundir_create(dir, "config", ".ini", path, sizeof path) : -1;
    int ok = fd >= 0 && write(fd, "[learner]\n", 10) == 10 && write(fd, text, (size_t)n) == n;
    if (fd >= 0)
        close(fd);
    if (!ok)
        fprintf(stderr, "volley learner: cannot write the run's config.ini in %s\n",
                vl_rundir_path(dir));
    return ok ? 0 : -1;
}

/* Takes --model TEXT into c, checked against c's observations when they are
   known (with --env). Returns 0, or -1 after printing why. */
static int s_set_model(vl_learner_config_t *c, const char *text, int obs_known)
{
    char why[512];
    if (vl_learner_config_set_model(c, text, text && obs_known, NULL, why, sizeof why) != 0) {
        fprintf(stderr, "volley learner: --model: %s\n", why);
        return -1;
    }
    return 0;
}

/* Without --env the broker's spec names the model: a --model that differs
   is refused rather than silently replaced. Returns 0, or -1 after printing
   why. */
static int s_check_model(const vl_learner_config_t *c, const char *text)
{
    char mine[VL_SPEC_MODEL_MAX], why[512];
    vl_learner_config_t wanted = *c;
    if (!text)
        return 0;
    snprintf(wanted.model, sizeof wanted.model, "%s", text);
    if (vl_learner_config_model(&wanted, NULL, mine, why, sizeof why) != 0) {
        fprintf(stderr, "volley learner: --model: %s\n", why);
        return -1;
    }
    if (strcmp(mine, c->model) != 0) {
        fprintf(stderr,
                "volley learner: --model '%s' differs from the policy's '%s' (its spec at the "
                "broker)\n",
                mine, c->model);
        return -1;
    }
    return 0;
}

/* Makes the learner for c with the engine open makes (NULL: the C engine).
   Returns it, or NULL after logging why. */
static vl_learner_t *s_learner(const vl_learner_config_t *c, vl_engine_open_fn open, void *ctx)
{
    char why[1024] = "";
    vl_engine_t *engine = vl_engine_open(c, open, ctx, why, sizeof why);
    if (!engine) {
        vl_error("cannot make the update engine: %s", why);
        return NULL;
    }
    return vl_learner_new(c, engine);
}

/* Runs the learner c describes (its checkpoint checked, its spec settled,
   the run's config.ini written) with the engine open makes. Returns the
   exit code. */
static int s_serve(vl_learner_config_t *c_in, const vl_role_opts_t *r, const vl_env_ops_t *env,
                   vl_rundir_t *dir, vl_engine_open_fn open, void *ctx)
{
    vl_learner_config_t c = *c_in;
    const vl_role_opts_t role = *r;
    int rc;
    vl_log_init("learner", (vl_log_level_t)role.log_level);
    vl_interrupted = 0; // a process may serve again after an earlier run was stopped
    vl_proc_catch_signals();
    vl_curve_t *curve;
    if (vl_sock_client_curve(role.cert, role.broker_key, &curve) != 0)
        return 1;
    // Without --env the spec comes from the broker before anything is built; with it, the
    // learner (and its checkpoint) is checked first, then the spec declared.
    if (!env)
        c.env = NULL;
    char why[1024];
    if (c.checkpoint_dir && vl_keeper_check(&c, env != NULL, why, sizeof why) != 0) {
        fprintf(stderr, "volley learner: %s\n", why);
        vl_sock_client_curve_end(&curve);
        return 2;
    }
    int settled = env ? 0 : vl_learner_spec_settle(&c);
    if (settled == 0 && !env && s_check_model(&c, role.model) != 0)
        settled = 2;
    vl_learner_config_settle(&c, role.given); // the model is known now
    vl_learner_config_size(&c);               // and the observation's size
    if (settled == 0 && vl_learner_config_check("learner", &c) != 0)
        settled = 2;
    if (settled == 0 && !env && c.checkpoint_dir && vl_keeper_check(&c, 1, why, sizeof why)) {
        fprintf(stderr, "volley learner: %s\n", why); // the broker's spec against the checkpoint's
        vl_sock_client_curve_end(&curve);
        return 2;
    }
    if (settled == 0 && dir && s_write_run_config(dir, &c) != 0)
        settled = 2;
    vl_learner_t *learner = settled == 0 ? s_learner(&c, open, ctx) : NULL;
    if (learner && env)
        settled = vl_learner_spec_settle(&c);
    if (settled != 0) {
        vl_learner_destroy(&learner);
        vl_sock_client_curve_end(&curve);
        return settled == 2 ? 2 : vl_interrupted ? 0 : 1;
    }
    rc = learner ? vl_learner_run(learner) : -1;
    vl_learner_destroy(&learner);
    vl_sock_client_curve_end(&curve);
    return rc == 0 ? 0 : 1;
}

int vl_learner_main(int argc, char **argv)
{
    return vl_learner_main_engine(argc, argv, NULL, NULL);
}

int vl_learner_main_engine(int argc, char **argv, vl_engine_open_fn open, void *ctx)
{
    vl_learner_config_t c = vl_learner_config_default();
    c.batch_segments = c.capacity = 0; // sized once the observation is known
    vl_role_opts_t role = {.policy = c.policy, .env = NULL, .log_level = VL_LOG_INFO, .learner = 1};
    int rc = vl_opt_parse_role("learner", argc, argv, vl_learner_opts, vl_learner_n_opts, &c, &role,
                               s_usage);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    const vl_env_ops_t *env = role.env ? vl_env_lookup("learner", role.env) : NULL;
    if (role.env && !env)
        return 2;
    if (env)
        vl_learner_config_set_env(&c, env);
    if (vl_learner_config_check("learner", &c) != 0 || s_set_model(&c, role.model, env != NULL))
        return 2;
    c.broker = role.broker;
    c.policy = role.policy;
    c.checkpoint_dir = role.checkpoint;
    c.resume = role.resume;
    c.force = role.force;
    c.metrics_dir = role.metrics;
    vl_rundir_t *dir = NULL;
    if (role.run_dir && s_open_run_dir(&c, role.run_dir, &dir) != 0)
        return 2;
    rc = s_serve(&c, &role, env, dir, open, ctx);
    vl_rundir_destroy(&dir);
    return rc;
}
