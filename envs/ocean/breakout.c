/*  PufferLib Ocean's breakout as a volley plugin (include/volley/ocean.h):
        volley up --env ./libbreakout.so [--env-arg "frameskip=4"]
    Defaults are breakout.py's. The bricks are 6 rows of 18: the
    observation's size (10 values and one a brick) is fixed when it is built. */
#include <breakout.h> // PufferLib's pufferlib/ocean/breakout/breakout.h
#define VL_OCEAN_ENV        Breakout
#define VL_OCEAN_NAME       "breakout"
#define VL_OCEAN_OBS        (10 + 6 * 18)
#define VL_OCEAN_ACTIONS    3
#define VL_OCEAN_FIGURES(X) X(score) X(perf)
#include <volley/ocean.h>

static int vl_ocean_init(Breakout *env, vl_ocean_args_t *a)
{
    env->frameskip = vl_ocean_arg(a, "frameskip", 4);
    env->width = vl_ocean_arg(a, "width", 576);
    env->height = vl_ocean_arg(a, "height", 330);
    env->paddle_width = vl_ocean_arg(a, "paddle_width", 62);
    env->paddle_height = vl_ocean_arg(a, "paddle_height", 8);
    env->ball_width = vl_ocean_arg(a, "ball_width", 32);
    env->ball_height = vl_ocean_arg(a, "ball_height", 32);
    env->brick_width = vl_ocean_arg(a, "brick_width", 32);
    env->brick_height = vl_ocean_arg(a, "brick_height", 12);
    env->brick_rows = 6;
    env->brick_cols = 18;
    if (env->frameskip < 1)
        return -1;
    init(env);
    return 0;
}
