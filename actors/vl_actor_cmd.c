/*  `volley actor`: flags, connect, act until SIGINT/SIGTERM, stop. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_sock.h"
#include "../models/vl_model_spec.h"
#include "vl_actor.h"
#include "vl_actor_check.h"

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

/* Takes --obs-check MODE (or --obs-check=MODE) out of argv, which the role
   parser then reads without it. A word that is the value of the flag
   before it (--env-arg --obs-check) stays, as does everything after "--".
   Returns 0, or -1 after saying what was wrong. */
static int s_take_obs_check(int *argc, char **argv, const vl_role_opts_t *role,
                            vl_obs_check_t *mode)
{
    struct option opts[S_NNUMS + VL_OPT_ROLE_EXTRA];
    vl_opt_role_options(s_nums, S_NNUMS, role, opts);
    int out = 0, i = 0;
    for (; i < *argc && strcmp(argv[i], "--") != 0; i++) {
        const char *value = NULL, *a = argv[i];
        if (strcmp(a, "--obs-check") == 0) {
            value = i + 1 < *argc ? argv[++i] : "";
        } else if (strncmp(a, "--obs-check=", 12) == 0) {
            value = a + 12;
        } else {
            const struct option *o = strncmp(a, "--", 2) == 0 && !strchr(a, '=')
                                         ? vl_opt_lookup(opts, a + 2, strlen(a + 2))
                                         : NULL;
            argv[out++] = argv[i];
            if (o && o->has_arg == required_argument && i + 1 < *argc)
                argv[out++] = argv[++i]; // its value, whatever it looks like
            continue;
        }
        if (vl_obs_check_parse(value, mode) != 0) {
            fprintf(stderr, "volley actor: --obs-check wants error, warn or off, not '%s'\n",
                    value);
            return -1;
        }
    }
    while (i < *argc)
        argv[out++] = argv[i++];
    *argc = out;
    argv[out] = NULL;
    return 0;
}

static void s_usage(FILE *out)
{
    fprintf(out, "usage: volley actor --broker HOST[:PORT] [--policy NAME] [--env NAME|PATH.so]\n"
                 "                    [numeric options] [--quiet|--verbose]\n"
                 "\n"
                 "Steps N environments with the newest weights of a policy and pushes one segment\n"
                 "of T steps per environment to the broker. It declares its spec (observation\n"
                 "fields, actions, horizon, hidden) in every heartbeat; a broker whose policy has\n"
                 "another spec refuses it, and it exits 2 with the field that differs. Refused\n"
                 "segments are logged once per reason, then counted.\n"
                 "\n");
    vl_opt_print_role(out, "policy to act for");
    vl_env_print_help(out, NULL);
    vl_opt_print_model(out);
    vl_actor_config_t defaults = vl_actor_config_default();
    vl_opt_print(out, s_nums, S_NNUMS, &defaults);
    vl_opt_print_curve(out);
    fprintf(out,
            "  --obs-check MODE   an observation value outside its declared range: error\n"
            "                     stops the actor naming the element, its value and the\n"
            "                     range (default); warn sends it and says so once; off does\n"
            "                     not check (for envs whose declared bounds are approximate).\n"
            "                     NaN and infinities stop the actor in every mode\n");
    fprintf(out, "  --quiet            warnings and errors only\n"
                 "  --verbose          debug logging\n"
                 "  -h, --help         this text\n");
}

/* Returns 0 when a --model text parses, else -1 after saying why in one
   line: a usage error, refused before the actor starts (its fit to the
   env's observations is checked once the env is made). */
static int s_check_model(const char *text)
{
    char why[512];
    vl_model_spec_t *spec = vl_model_spec_parse(text, why, sizeof why);
    if (!spec) {
        fprintf(stderr, "volley actor: --model '%s': %s\n", text, why);
        return -1;
    }
    vl_model_spec_destroy(&spec);
    return 0;
}

int vl_actor_main(int argc, char **argv)
{
    vl_actor_config_t c = vl_actor_config_default();
    vl_role_opts_t role = {.policy = c.policy, .env = c.env->name, .log_level = VL_LOG_INFO};
    if (s_take_obs_check(&argc, argv, &role, &c.obs_check) != 0)
        return 2;
    int rc = vl_opt_parse_role("actor", argc, argv, s_nums, S_NNUMS, &c, &role, s_usage);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    if (!(c.env = vl_env_lookup("actor", role.env)))
        return 2;
    c.broker = role.broker;
    c.policy = role.policy;
    c.env_arg = role.env_arg;
    c.model = role.model;
    if (c.model && s_check_model(c.model) != 0)
        return 2;
    if (c.actor_id == 0)
        c.actor_id = (uint32_t)getpid();
    char name[32];
    snprintf(name, sizeof name, "actor %u", c.actor_id);
    vl_log_init(name, (vl_log_level_t)role.log_level);
    vl_proc_catch_signals();
    vl_curve_t *curve;
    if (vl_sock_client_curve(role.cert, role.broker_key, &curve) != 0)
        return 1;
    vl_actor_t *actor = vl_actor_new(&c);
    rc = actor ? vl_actor_run(actor) : -1;
    vl_actor_destroy(&actor);
    vl_sock_client_curve_end(&curve);
    return rc == 0 ? 0 : rc == -2 ? 2 : 1; // 2: the broker refused our spec
}
