/*  `volley actor`: flags, connect, act until SIGINT/SIGTERM, stop. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "vl_actor.h"

#define S_OPT(name, kind, field, lo, hi, help)                                                     \
    VL_NUM_OPT(vl_actor_config_t, name, kind, field, lo, hi, help)

static const vl_num_opt_t s_nums[] = {
    S_OPT("envs", VL_OPT_U32, n_envs, 1, 4096, "environments stepped together"),
    S_OPT("horizon", VL_OPT_U32, horizon, 1, 4096, "steps per segment, as the learner's"),
    S_OPT("hidden", VL_OPT_U32, hidden, 1, 4096, "hidden units per layer, as the learner's"),
    S_OPT("id", VL_OPT_U32, actor_id, 0, 0x7fffffff, "actor id in its segments (0: the pid)"),
    S_OPT("seed", VL_OPT_U64, seed, 0, 1L << 62,
          "environments and sampling, mixed "
          "with the id"),
    S_OPT("max-ahead", VL_OPT_U32, max_ahead, 0, 1000000,
          "segments per env on one weights "
          "version before waiting (0: never)"),
    S_OPT("wait-ms", VL_OPT_INT, wait_ms, 0, 3600000, "longest such wait"),
};
#define S_NNUMS ((int)(sizeof s_nums / sizeof s_nums[0]))

static void s_usage(FILE *out)
{
    fprintf(out, "usage: volley actor --broker HOST[:PORT] [--policy NAME] [--env NAME]\n"
                 "                    [numeric options] [--quiet|--verbose]\n"
                 "\n"
                 "Steps N environments with the newest weights of a policy and pushes one segment\n"
                 "of T steps per environment to the broker.\n"
                 "\n"
                 "  --broker HOST[:PORT]  the broker (default port 7600)\n"
                 "  --policy NAME      policy to act for (default 'default')\n"
                 "  --env NAME         environment (default cartpole); built in:\n");
    for (int i = 0; vl_env_at(i); i++)
        fprintf(out, "                       %-10s %s\n", vl_env_at(i)->name,
                vl_env_at(i)->summary);
    vl_actor_config_t defaults = vl_actor_config_default();
    vl_opt_print(out, s_nums, S_NNUMS, &defaults);
    fprintf(out, "  --quiet            warnings and errors only\n"
                 "  --verbose          debug logging\n"
                 "  -h, --help         this text\n");
}

/* Parses argv into c. Returns 0, 1 after --help, or -1 on bad input. */
static int s_parse(int argc, char **argv, vl_actor_config_t *c, vl_log_level_t *level)
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
            bad = vl_opt_set("actor", &s_nums[opt], c, optarg);
        else if (opt == O_BROKER)
            c->broker = optarg;
        else if (opt == O_POLICY)
            bad = vl_opt_policy("actor", c->policy = optarg);
        else if (opt == O_ENV) {
            if (!(c->env = vl_env_find(optarg)))
                fprintf(stderr, "volley actor: unknown --env '%s' (see --help)\n", optarg);
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

int vl_actor_main(int argc, char **argv)
{
    vl_actor_config_t c = vl_actor_config_default();
    c.broker = NULL;
    vl_log_level_t level = VL_LOG_INFO;
    int rc = s_parse(argc, argv, &c, &level);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char endpoint[300];
    if (optind < argc || !c.broker) {
        if (optind < argc)
            fprintf(stderr, "volley actor: unexpected argument '%s'\n", argv[optind]);
        else
            fprintf(stderr, "volley actor: --broker HOST[:PORT] is required\n");
        return 2;
    }
    if (vl_opt_endpoint("actor", c.broker, 0, endpoint, sizeof endpoint))
        return 2;
    if (c.actor_id == 0)
        c.actor_id = (uint32_t)getpid();
    char role[32];
    snprintf(role, sizeof role, "actor %u", c.actor_id);
    vl_log_init(role, level);
    vl_proc_catch_signals();
    vl_actor_t *actor = vl_actor_new(&c);
    if (!actor)
        return 1;
    rc = vl_actor_run(actor);
    vl_actor_destroy(&actor);
    return rc == 0 ? 0 : 1;
}
