/*  PufferLib Ocean's grid as a volley plugin (include/volley/ocean.h), one
    agent an env:
        volley up --env ./libgrid.so [--env-arg "num_maps=100 map_seed=1"]
    Each env makes num_maps mazes of its own, up to max_size cells a side
    (map_size -1: sizes drawn 5 .. max_size - 1), from map_seed plus its index,
    as grid's binding makes the mazes its envs share. An episode ends at the
    goal (reward 1) or at the maze's horizon, which grid.h marks only in its
    Log (VL_OCEAN_LOG_ENDS). grid.h's c_close frees the env
    (VL_OCEAN_CLOSE_FREES); the plugin's close frees the mazes first. The
    view is 11 x 11 cells (vision 5), each a cell's code. */
#include <grid.h> // PufferLib's pufferlib/ocean/grid/grid.h

/* Frees env's mazes, then closes (and frees) env. */
static void vl_grid_close(Grid *env)
{
    for (int i = 0; env->levels && i < env->num_maps; i++)
        free(env->levels[i].agents), free(env->levels[i].grid);
    free(env->levels);
    c_close(env);
}

#define VL_OCEAN_ENV         Grid
#define VL_OCEAN_NAME        "grid"
#define VL_OCEAN_OBS         (11 * 11)
#define VL_OCEAN_ENCODING    VL_ENV_U8
#define VL_OCEAN_ACTIONS     5
#define VL_OCEAN_LOG_ENDS    1
#define VL_OCEAN_CLOSE       vl_grid_close
#define VL_OCEAN_CLOSE_FREES 1
#define VL_OCEAN_FIGURES(X)  X(score) X(perf) X(episode_length)
#include <volley/ocean.h>

static int vl_ocean_init(Grid *env, vl_ocean_args_t *a)
{
    env->max_size = vl_ocean_arg(a, "max_size", 9);
    env->num_maps = vl_ocean_arg(a, "num_maps", 100);
    int size = vl_ocean_arg(a, "map_size", -1);
    unsigned seed = (unsigned)vl_ocean_arg(a, "map_seed", 1) + a->index;
    init_grid(env);
    if (env->max_size <= 5 || env->num_maps < 1 || size > env->max_size || (size < 5 && size != -1))
        return -1;
    env->levels = calloc((size_t)env->num_maps, sizeof *env->levels);
    Grid maker = {.max_size = env->max_size}; // the mazes' maker, as grid's binding has
    init_grid(&maker);
    if (!env->levels || !maker.grid || !maker.counts || !maker.agents) {
        free(maker.grid), free(maker.counts), free(maker.agents);
        return -1;
    }
    srand(seed);
    int start_seed = rand();
    for (int i = 0; i < env->num_maps; i++) {
        int sz = size == -1 ? 5 + rand() % (env->max_size - 5) : size;
        sz -= sz % 2 == 0;
        float difficulty = (float)rand() / (float)RAND_MAX;
        create_maze_level(&maker, sz, sz, difficulty, start_seed + i);
        init_state(&env->levels[i], env->max_size, 1);
        get_state(&maker, &env->levels[i]);
    }
    free(maker.grid), free(maker.counts), free(maker.agents);
    return 0;
}
