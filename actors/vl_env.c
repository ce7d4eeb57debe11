/*  vl_env: the table of built-in environments. */
#include "vl_env.h"

#include <string.h>

static const vl_env_ops_t *s_envs[] = {&vl_cartpole_ops, &vl_catch_ops};

#define S_NENVS ((int)(sizeof(s_envs) / sizeof(s_envs[0])))

const vl_env_ops_t *vl_env_find(const char *name)
{
    for (int i = 0; name && i < S_NENVS; i++)
        if (strcmp(s_envs[i]->name, name) == 0)
            return s_envs[i];
    return NULL;
}

const vl_env_ops_t *vl_env_lookup(const char *cmd, const char *name)
{
    const vl_env_ops_t *env = vl_env_find(name);
    if (!env)
        fprintf(stderr, "volley %s: unknown --env '%s' (see --help)\n", cmd, name ? name : "");
    return env;
}

void vl_env_print_help(FILE *out)
{
    fprintf(out, "  --env NAME         environment (default %s); built in:\n", s_envs[0]->name);
    for (int i = 0; i < S_NENVS; i++)
        fprintf(out, "                       %-10s %s\n", s_envs[i]->name, s_envs[i]->summary);
}
