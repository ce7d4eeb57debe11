/*  PufferLib Ocean's pong as a volley plugin (include/volley/ocean.h):
        volley up --env ./libpong.so [--env-arg "frameskip=8 max_score=21"]
    Defaults are pong.py's, with frameskip 8 as PufferLib trains it. */
#include <pong.h> // PufferLib's pufferlib/ocean/pong/pong.h
#define VL_OCEAN_ENV        Pong
#define VL_OCEAN_NAME       "pong"
#define VL_OCEAN_OBS        8
#define VL_OCEAN_ACTIONS    3
#define VL_OCEAN_FIGURES(X) X(score) X(perf)
#include <volley/ocean.h>

static int vl_ocean_init(Pong *env, vl_ocean_args_t *a)
{
    env->width = vl_ocean_arg(a, "width", 500);
    env->height = vl_ocean_arg(a, "height", 640);
    env->paddle_width = vl_ocean_arg(a, "paddle_width", 20);
    env->paddle_height = vl_ocean_arg(a, "paddle_height", 70);
    env->ball_width = vl_ocean_arg(a, "ball_width", 32);
    env->ball_height = vl_ocean_arg(a, "ball_height", 32);
    env->paddle_speed = vl_ocean_arg(a, "paddle_speed", 8);
    env->ball_initial_speed_x = vl_ocean_arg(a, "ball_initial_speed_x", 10);
    env->ball_initial_speed_y = vl_ocean_arg(a, "ball_initial_speed_y", 1);
    env->ball_max_speed_y = vl_ocean_arg(a, "ball_max_speed_y", 13);
    env->ball_speed_y_increment = vl_ocean_arg(a, "ball_speed_y_increment", 3);
    env->max_score = vl_ocean_arg(a, "max_score", 21);
    env->frameskip = vl_ocean_arg(a, "frameskip", 8);
    init(env);
    return env->max_score >= 1 && env->frameskip >= 1 ? 0 : -1;
}
