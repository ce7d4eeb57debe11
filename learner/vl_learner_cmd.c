/*  `volley learner`: flags, connect, train until SIGINT/SIGTERM, stop. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "vl_learner.h"

#define S_OPT(name, kind, field, lo, hi, help)                                                     \
    VL_NUM_OPT(vl_learner_config_t, name, kind, field, lo, hi, help)

static const vl_num_opt_t s_nums[] = {
    S_OPT("seed", VL_OPT_U64, seed, 0, 1L << 62, "initial weights, minibatch order"),
    S_OPT("horizon", VL_OPT_U32, horizon, 1, 4096, "steps per segment, as the actors'"),
    S_OPT("hidden", VL_OPT_U32, hidden, 1, 4096, "hidden units per layer, as the actors'"),
    S_OPT("batch", VL_OPT_U32, batch_segments, 1, 65536, "segments per update"),
    S_OPT("capacity", VL_OPT_U32, capacity, 2, 1 << 20, "buffer slots, >= 2 x batch"),
    S_OPT("epochs", VL_OPT_U32, epochs, 1, 1000, "passes over each batch"),
    S_OPT("minibatch", VL_OPT_U32, minibatch, 1, 1 << 20, "samples per Adam step"),
    S_OPT("max-lag", VL_OPT_U32, max_lag, 0, 1 << 30, "drop segments this many versions old"),
    S_OPT("lr", VL_OPT_FLOAT, lr, 0, 1, "Adam learning rate"),
    S_OPT("gamma", VL_OPT_FLOAT, gamma, 0, 1, "discount"),
    S_OPT("lambda", VL_OPT_FLOAT, lambda, 0, 1, "V-trace lambda"),
    S_OPT("clip", VL_OPT_FLOAT, clip, 0, 10, "PPO ratio clip"),
    S_OPT("ent-coef", VL_OPT_FLOAT, ent_coef, 0, 10, "entropy bonus weight"),
    S_OPT("vf-coef", VL_OPT_FLOAT, vf_coef, 0, 100, "value loss weight"),
    S_OPT("max-grad-norm", VL_OPT_FLOAT, max_grad_norm, 0, 1e6, "gradient norm clip, 0 off"),
    S_OPT("rho-bar", VL_OPT_FLOAT, rho_bar, 0, 1e30, "V-trace rho clip"),
    S_OPT("c-bar", VL_OPT_FLOAT, c_bar, 0, 1e30, "V-trace c clip"),
};
#define S_NNUMS ((int)(sizeof s_nums / sizeof s_nums[0]))

static void s_usage(FILE *out)
{
    fprintf(out, "usage: volley learner --broker HOST[:PORT] [--policy NAME] [--env NAME]\n"
                 "                      [numeric options] [--quiet|--verbose]\n"
                 "\n"
                 "Trains one policy on the segments the broker routes to it (V-trace advantages,\n"
                 "clipped-surrogate PPO, Adam) and publishes each new weights version.\n"
                 "\n"
                 "  --broker HOST[:PORT]  the broker (default port 7600)\n"
                 "  --policy NAME      policy to train (default 'default')\n"
                 "  --env NAME         environment the actors run (default cartpole)\n");
    vl_learner_config_t defaults = vl_learner_config_default();
    vl_opt_print(out, s_nums, S_NNUMS, &defaults);
    fprintf(out, "  --quiet            warnings and errors only\n"
                 "  --verbose          debug logging, with progress every second\n"
                 "  -h, --help         this text\n");
}

/* Parses argv into c. Returns 0, 1 after --help, or -1 on bad input. */
static int s_parse(int argc, char **argv, vl_learner_config_t *c, vl_log_level_t *level)
{
    enum { O_BROKER = 1000, O_POLICY, O_ENV, O_QUIET, O_VERBOSE };
    struct option opts[S_NNUMS + 7] = {
        {"broker", required_argument, 0, O_BROKER}, {"policy", required_argument, 0, O_POLICY},
        {"env", required_argument, 0, O_ENV},       {"quiet", no_argument, 0, O_QUIET},
        {"verbose", no_argument, 0, O_VERBOSE},     {"help", no_argument, 0, 'h'}};
    vl_opt_getopt(s_nums, S_NNUMS, 0, opts + 6);
    int opt, bad = 0;
    while (!bad && (opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (opt >= 0 && opt < S_NNUMS)
            bad = vl_opt_set("learner", &s_nums[opt], c, optarg);
        else if (opt == O_BROKER)
            c->broker = optarg;
        else if (opt == O_POLICY)
            bad = vl_opt_policy("learner", c->policy = optarg);
        else if (opt == O_ENV) {
            if (!(c->env = vl_env_find(optarg)))
                fprintf(stderr, "volley learner: unknown --env '%s' (see --help)\n", optarg);
            bad = !c->env;
        } else if (opt == O_QUIET || opt == O_VERBOSE)
            *level = opt == O_QUIET ? VL_LOG_WARN : VL_LOG_DEBUG;
        else {
            s_usage(opt == 'h' ? stdout : stderr);
            return opt == 'h' ? 1 : -1;
        }
    }
    return bad ? -1 : 0;
}

/* Checks what no single flag can. Returns 0 or -1 after printing why. */
static int s_check(const vl_learner_config_t *c, int argc, char **argv)
{
    char endpoint[300];
    if (optind < argc) {
        fprintf(stderr, "volley learner: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (!c->broker) {
        fprintf(stderr, "volley learner: --broker HOST[:PORT] is required\n");
        return -1;
    }
    if (c->capacity < 2 * c->batch_segments) {
        fprintf(stderr, "volley learner: --capacity (%u) must be at least 2 x --batch (%u)\n",
                c->capacity, c->batch_segments);
        return -1;
    }
    return vl_opt_endpoint("learner", c->broker, 0, endpoint, sizeof endpoint);
}

int vl_learner_main(int argc, char **argv)
{
    vl_learner_config_t c = vl_learner_config_default();
    c.broker = NULL;
    vl_log_level_t level = VL_LOG_INFO;
    int rc = s_parse(argc, argv, &c, &level);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    if (s_check(&c, argc, argv) != 0)
        return 2;
    vl_log_init("learner", level);
    vl_proc_catch_signals();
    vl_learner_t *learner = vl_learner_new(&c);
    if (!learner)
        return 1;
    rc = vl_learner_run(learner);
    vl_learner_destroy(&learner);
    return rc == 0 ? 0 : 1;
}
