/*  PufferLib Ocean's pacman as a volley plugin (include/volley/ocean.h):
        volley up --env ./libpacman.so [--env-arg "frightened_time=35"]
    Defaults are pacman.py's. Its terminals are chars (staged by the header);
    an episode is one game, up to 10000 steps. */
#include <pacman.h> // PufferLib's pufferlib/ocean/pacman/pacman.h
#define VL_OCEAN_ENV        PacmanEnv
#define VL_OCEAN_NAME       "pacman"
#define VL_OCEAN_OBS        OBSERVATIONS_COUNT
#define VL_OCEAN_ACTIONS    4
#define VL_OCEAN_FIGURES(X) X(score) X(episode_length)
#include <volley/ocean.h>

static int vl_ocean_init(PacmanEnv *env, vl_ocean_args_t *a)
{
    env->randomize_starting_position = vl_ocean_arg(a, "randomize_starting_position", 0);
    env->min_start_timeout = vl_ocean_arg(a, "min_start_timeout", 0);
    env->max_start_timeout = vl_ocean_arg(a, "max_start_timeout", 49);
    env->frightened_time = vl_ocean_arg(a, "frightened_time", 35);
    env->max_mode_changes = vl_ocean_arg(a, "max_mode_changes", 6);
    env->scatter_mode_length = vl_ocean_arg(a, "scatter_mode_length", 70);
    env->chase_mode_length = vl_ocean_arg(a, "chase_mode_length", 140);
    if (env->min_start_timeout < 0 || env->max_start_timeout < env->min_start_timeout)
        return -1;
    init(env);
    return 0;
}
