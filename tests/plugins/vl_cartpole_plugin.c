/*  vl_cartpole_plugin: volley's built-in CartPole compiled as a plugin, for
    vl_env_bench's built-in vs plugin comparison: the very same source, its
    table exported as `volley_env` instead of `vl_cartpole_env`. */
#define vl_cartpole_env volley_env
#include "../../envs/vl_cartpole.c"
