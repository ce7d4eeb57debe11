/*  PufferLib Ocean's snake as a volley plugin (include/volley/ocean.h), one
    snake an env (PufferLib runs 256 in one arena: several agents an env,
    which volley does not step), in a smaller arena than PufferLib's:
        volley up --env ./libsnake.so [--env-arg "width=48 height=48 num_food=24"]
    An episode is one snake's life: it ends where the snake dies (snake.h
    respawns it without a terminal; its Log marks the death). The view is
    11 x 11 cells (vision 5), each a cell's code 0..7. */
#include <snake.h> // PufferLib's pufferlib/ocean/snake/snake.h
#define VL_OCEAN_ENV        CSnake
#define VL_OCEAN_NAME       "snake"
#define VL_OCEAN_OBS        (11 * 11)
#define VL_OCEAN_ENCODING   VL_ENV_U8
#define VL_OCEAN_ACTIONS    4
#define VL_OCEAN_LOG_ENDS   1
#define VL_OCEAN_FIGURES(X) X(score) X(perf)
#include <volley/ocean.h>

static int vl_ocean_init(CSnake *env, vl_ocean_args_t *a)
{
    env->num_snakes = 1;
    env->vision = 5;
    env->width = vl_ocean_arg(a, "width", 48);
    env->height = vl_ocean_arg(a, "height", 48);
    env->food = vl_ocean_arg(a, "num_food", 24);
    env->leave_corpse_on_death = vl_ocean_arg(a, "leave_corpse_on_death", 1);
    env->reward_food = vl_ocean_arg(a, "reward_food", 0.1);
    env->reward_corpse = vl_ocean_arg(a, "reward_corpse", 0.1);
    env->reward_death = vl_ocean_arg(a, "reward_death", -1.0);
    env->max_snake_length = vl_ocean_arg(a, "max_snake_length", 1024);
    env->cell_size = 1;
    if (env->width < 4 * env->vision || env->height < 4 * env->vision || env->food < 1 ||
        env->max_snake_length < 2 || env->food > env->width * env->height / 4)
        return -1;
    init_csnake(env);
    return 0;
}
