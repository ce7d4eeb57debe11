/*  `volley learner`: flags, connect, train until SIGINT/SIGTERM, stop. */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "vl_learner.h"

/* A numeric flag: where it goes in the config and what it accepts. */
typedef struct {
    const char *name;
    size_t offset; // into vl_learner_config_t
    int is_float;  // else uint32_t (or uint64_t for seed)
    double lo, hi;
    const char *help;
} s_num_opt_t;

#define S_OPT(name, field, is_float, lo, hi, help)                                                 \
    {                                                                                              \
        name, offsetof(vl_learner_config_t, field), is_float, lo, hi, help                         \
    }

static const s_num_opt_t s_nums[] = {
    S_OPT("horizon", horizon, 0, 1, 4096, "steps per segment (64)"),
    S_OPT("hidden", hidden, 0, 1, 4096, "hidden units per layer (64)"),
    S_OPT("batch", batch_segments, 0, 1, 65536, "segments per update (16)"),
    S_OPT("capacity", capacity, 0, 2, 1 << 20, "buffer slots, >= 2 batches (64)"),
    S_OPT("epochs", epochs, 0, 1, 1000, "passes over each batch (4)"),
    S_OPT("minibatch", minibatch, 0, 1, 1 << 20, "samples per Adam step (256)"),
    S_OPT("max-lag", max_lag, 0, 0, 1 << 30, "drop segments this many versions old (4)"),
    S_OPT("lr", lr, 1, 0, 1, "Adam learning rate (0.001)"),
    S_OPT("gamma", gamma, 1, 0, 1, "discount (0.99)"),
    S_OPT("lambda", lambda, 1, 0, 1, "V-trace lambda (0.95)"),
    S_OPT("clip", clip, 1, 0, 10, "PPO ratio clip (0.2)"),
    S_OPT("ent-coef", ent_coef, 1, 0, 10, "entropy bonus weight (0.01)"),
    S_OPT("vf-coef", vf_coef, 1, 0, 100, "value loss weight (0.5)"),
    S_OPT("max-grad-norm", max_grad_norm, 1, 0, 1e6, "gradient clip, 0 off (0.5)"),
    S_OPT("rho-bar", rho_bar, 1, 0, 1e30, "V-trace rho clip (1)"),
    S_OPT("c-bar", c_bar, 1, 0, 1e30, "V-trace c clip (1)"),
};
#define S_NNUMS ((int)(sizeof s_nums / sizeof s_nums[0]))

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: volley learner --broker HOST[:PORT] [--policy NAME] [--env NAME] [--seed N]\n"
            "                      [hyperparameters] [--quiet|--verbose]\n"
            "\n"
            "Trains one policy on the segments the broker routes to it (V-trace advantages,\n"
            "clipped-surrogate PPO, Adam) and publishes each new weights version.\n"
            "\n"
            "  --broker HOST[:PORT]  the broker (default port 7600)\n"
            "  --policy NAME    policy to train (default 'default')\n"
            "  --env NAME       environment the actors run (default cartpole)\n"
            "  --seed N         seeds the initial weights and minibatch order (default 1)\n");
    for (int i = 0; i < S_NNUMS; i++)
        fprintf(out, "  --%-15s%s\n", s_nums[i].name, s_nums[i].help);
    fprintf(out, "  --quiet          warnings and errors only\n"
                 "  --verbose        debug logging, with progress every second\n"
                 "  -h, --help       this text\n");
}

/* Stores a numeric flag's value. Returns 0 or -1 after printing why. */
static int s_set_num(vl_learner_config_t *c, const s_num_opt_t *o, const char *arg)
{
    char *field = (char *)c + o->offset;
    if (o->is_float)
        return vl_opt_float("learner", o->name, arg, o->lo, o->hi, (float *)field);
    long v;
    if (vl_opt_long("learner", o->name, arg, (long)o->lo, (long)o->hi, &v))
        return -1;
    *(uint32_t *)field = (uint32_t)v;
    return 0;
}

int vl_learner_main(int argc, char **argv)
{
    enum { O_BROKER = 1000, O_POLICY, O_ENV, O_SEED, O_QUIET, O_VERBOSE };
    struct option opts[S_NNUMS + 8];
    for (int i = 0; i < S_NNUMS; i++)
        opts[i] = (struct option){s_nums[i].name, required_argument, 0, i};
    struct option fixed[] = {{"broker", required_argument, 0, O_BROKER},
                             {"policy", required_argument, 0, O_POLICY},
                             {"env", required_argument, 0, O_ENV},
                             {"seed", required_argument, 0, O_SEED},
                             {"quiet", no_argument, 0, O_QUIET},
                             {"verbose", no_argument, 0, O_VERBOSE},
                             {"help", no_argument, 0, 'h'},
                             {0, 0, 0, 0}};
    memcpy(opts + S_NNUMS, fixed, sizeof fixed);
    vl_learner_config_t c = vl_learner_config_default();
    c.broker = NULL;
    vl_log_level_t level = VL_LOG_INFO;
    int opt;
    long v;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int bad = 0;
        if (opt >= 0 && opt < S_NNUMS)
            bad = s_set_num(&c, &s_nums[opt], optarg);
        else if (opt == O_BROKER)
            c.broker = optarg;
        else if (opt == O_POLICY)
            bad = vl_opt_policy("learner", c.policy = optarg);
        else if (opt == O_ENV) {
            c.env = vl_env_find(optarg);
            if (!c.env)
                fprintf(stderr, "volley learner: unknown --env '%s'\n", optarg);
            bad = !c.env;
        } else if (opt == O_SEED) {
            bad = vl_opt_long("learner", "seed", optarg, 0, 0x7fffffffffffffffL, &v);
            c.seed = (uint64_t)v;
        } else if (opt == O_QUIET)
            level = VL_LOG_WARN;
        else if (opt == O_VERBOSE)
            level = VL_LOG_DEBUG;
        else {
            s_usage(opt == 'h' ? stdout : stderr);
            return opt == 'h' ? 0 : 2;
        }
        if (bad)
            return 2;
    }
    if (optind < argc || !c.broker) {
        fprintf(stderr, "volley learner: %s%s\n",
                optind < argc ? "unexpected argument " : "--broker HOST[:PORT] is required",
                optind < argc ? argv[optind] : "");
        return 2;
    }
    if (c.capacity < 2 * c.batch_segments) {
        fprintf(stderr, "volley learner: --capacity (%u) must be at least 2 x --batch (%u)\n",
                c.capacity, c.batch_segments);
        return 2;
    }
    char endpoint[300];
    if (vl_opt_endpoint("learner", c.broker, 0, endpoint, sizeof endpoint))
        return 2;
    vl_log_init("learner", level);
    vl_proc_catch_signals();
    vl_learner_t *learner = vl_learner_new(&c);
    if (!learner)
        return 1;
    int rc = vl_learner_run(learner);
    vl_learner_destroy(&learner);
    return rc == 0 ? 0 : 1;
}
