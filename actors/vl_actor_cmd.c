/*  `volley actor`: flags, connect, act until SIGINT/SIGTERM, stop. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "vl_actor.h"

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: volley actor --broker HOST[:PORT] [--policy NAME] [--env NAME] [--envs N]\n"
            "                    [--horizon T] [--hidden H] [--id N] [--seed N]\n"
            "                    [--max-ahead K] [--wait-ms MS] [--quiet|--verbose]\n"
            "\n"
            "Steps N environments with the newest weights of a policy and pushes one segment\n"
            "of T steps per environment to the broker.\n"
            "\n"
            "  --broker HOST[:PORT]  the broker (default port 7600)\n"
            "  --policy NAME    policy to act for (default 'default')\n"
            "  --env NAME       environment (default cartpole); built in:\n");
    for (int i = 0; vl_env_at(i); i++)
        fprintf(out, "                     %-10s %s\n", vl_env_at(i)->name, vl_env_at(i)->summary);
    fprintf(out,
            "  --envs N         environments stepped together (default 8)\n"
            "  --horizon T      steps per segment (default 64; must match the learner's)\n"
            "  --hidden H       hidden units of the policy (default 64; must match the learner's)\n"
            "  --id N           actor id carried in its segments (default: the pid)\n"
            "  --seed N         seeds environments and action sampling (default: the id)\n"
            "  --max-ahead K    segments per env on one weights version before waiting for\n"
            "                   newer weights (default 1; 0 never waits)\n"
            "  --wait-ms MS     longest such wait before acting on (default 500)\n"
            "  --quiet          warnings and errors only\n"
            "  --verbose        debug logging\n"
            "  -h, --help       this text\n");
}

/* Parses one option into c. Returns 0, 1 for --help, or -1 on bad input. */
static int s_parse_opt(int opt, const char *arg, vl_actor_config_t *c, int *seeded,
                       vl_log_level_t *level)
{
    long v;
    switch (opt) {
    case 'b':
        c->broker = arg;
        return 0;
    case 'P':
        c->policy = arg;
        return vl_opt_policy("actor", arg);
    case 'e':
        c->env = vl_env_find(arg);
        if (!c->env)
            fprintf(stderr, "volley actor: unknown --env '%s' (see --help)\n", arg);
        return c->env ? 0 : -1;
    case 'n':
        if (vl_opt_long("actor", "envs", arg, 1, 4096, &v))
            return -1;
        c->n_envs = (uint32_t)v;
        return 0;
    case 'T':
        if (vl_opt_long("actor", "horizon", arg, 1, 4096, &v))
            return -1;
        c->horizon = (uint32_t)v;
        return 0;
    case 'H':
        if (vl_opt_long("actor", "hidden", arg, 1, 4096, &v))
            return -1;
        c->hidden = (uint32_t)v;
        return 0;
    case 'i':
        if (vl_opt_long("actor", "id", arg, 0, 0x7fffffff, &v))
            return -1;
        c->actor_id = (uint32_t)v;
        return 0;
    case 's':
        if (vl_opt_long("actor", "seed", arg, 0, 0x7fffffffffffffffL, &v))
            return -1;
        c->seed = (uint64_t)v;
        *seeded = 1;
        return 0;
    case 'k':
        if (vl_opt_long("actor", "max-ahead", arg, 0, 1000000, &v))
            return -1;
        c->max_ahead = (uint32_t)v;
        return 0;
    case 'w':
        if (vl_opt_long("actor", "wait-ms", arg, 0, 3600000, &v))
            return -1;
        c->wait_ms = (int)v;
        return 0;
    case 'q':
        *level = VL_LOG_WARN;
        return 0;
    case 'v':
        *level = VL_LOG_DEBUG;
        return 0;
    case 'h':
        return 1;
    default:
        return -1;
    }
}

int vl_actor_main(int argc, char **argv)
{
    static const struct option opts[] = {{"broker", required_argument, 0, 'b'},
                                         {"policy", required_argument, 0, 'P'},
                                         {"env", required_argument, 0, 'e'},
                                         {"envs", required_argument, 0, 'n'},
                                         {"horizon", required_argument, 0, 'T'},
                                         {"hidden", required_argument, 0, 'H'},
                                         {"id", required_argument, 0, 'i'},
                                         {"seed", required_argument, 0, 's'},
                                         {"max-ahead", required_argument, 0, 'k'},
                                         {"wait-ms", required_argument, 0, 'w'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    vl_actor_config_t c = vl_actor_config_default();
    c.broker = NULL;
    c.actor_id = (uint32_t)getpid();
    vl_log_level_t level = VL_LOG_INFO;
    int seeded = 0, opt, rc;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if ((rc = s_parse_opt(opt, optarg, &c, &seeded, &level)) != 0) {
            s_usage(rc > 0 ? stdout : stderr);
            return rc > 0 ? 0 : 2;
        }
    }
    if (optind < argc || !c.broker) {
        fprintf(stderr,
                optind < argc ? "volley actor: unexpected argument '%s'\n"
                              : "volley actor: --broker HOST[:PORT] is required%s\n",
                optind < argc ? argv[optind] : "");
        return 2;
    }
    if (!seeded)
        c.seed = c.actor_id;
    char role[32];
    snprintf(role, sizeof role, "actor %u", c.actor_id);
    char endpoint[300];
    if (vl_opt_endpoint("actor", c.broker, 0, endpoint, sizeof endpoint))
        return 2;
    vl_log_init(role, level);
    vl_proc_catch_signals();
    vl_actor_t *actor = vl_actor_new(&c);
    if (!actor)
        return 1;
    rc = vl_actor_run(actor);
    vl_actor_destroy(&actor);
    return rc == 0 ? 0 : 1;
}
