/*  PufferLib Ocean's tower_climb as a volley plugin (include/volley/ocean.h):
        volley up --env ./libtower_climb.so [--env-arg "num_maps=8 map_seed=1"]
    Defaults are tower_climb.py's but num_maps. Each env makes num_maps
    puzzles of its own (each searched until solvable in 10 to 15 moves, so
    a create takes a while) from map_seed and its index, as tower_climb's
    binding makes the 50 puzzles all its envs share (there from the clock;
    here from the seed, so a run can be repeated). tower_climb.h's c_close
    frees the env (VL_OCEAN_CLOSE_FREES; the plugin's close frees the
    puzzles first), and its c_step asks raylib's GetTime, which the
    header's stand-in answers. */
#include <tower_climb.h> // PufferLib's pufferlib/ocean/tower_climb/tower_climb.h

/* Frees env's puzzles, then closes (and frees) env. */
static void vl_tower_close(CTowerClimb *env)
{
    for (int i = 0; env->all_levels && i < env->num_maps; i++)
        free(env->all_levels[i].map);
    for (int i = 0; env->all_puzzles && i < env->num_maps; i++)
        free(env->all_puzzles[i].blocks);
    free(env->all_levels), free(env->all_puzzles);
    c_close(env);
}

#define VL_OCEAN_ENV         CTowerClimb
#define VL_OCEAN_NAME        "tower_climb"
#define VL_OCEAN_OBS         (OBS_VISION + PLAYER_OBS)
#define VL_OCEAN_ENCODING    VL_ENV_U8
#define VL_OCEAN_ACTIONS     6
#define VL_OCEAN_CLOSE       vl_tower_close
#define VL_OCEAN_CLOSE_FREES 1
#define VL_OCEAN_FIGURES(X)  X(score) X(perf) X(episode_length)
#include <volley/ocean.h>

static int vl_ocean_init(CTowerClimb *env, vl_ocean_args_t *a)
{
    env->num_maps = vl_ocean_arg(a, "num_maps", 8);
    env->reward_climb_row = vl_ocean_arg(a, "reward_climb_row", 0.25);
    env->reward_fall_row = vl_ocean_arg(a, "reward_fall_row", 0);
    env->reward_illegal_move = vl_ocean_arg(a, "reward_illegal_move", -0.01);
    env->reward_move_block = vl_ocean_arg(a, "reward_move_block", 0.2);
    unsigned seed = (unsigned)vl_ocean_arg(a, "map_seed", 1) + a->index * 100003u;
    init(env);
    if (env->num_maps < 1)
        return -1;
    env->all_levels = calloc((size_t)env->num_maps, sizeof *env->all_levels);
    env->all_puzzles = calloc((size_t)env->num_maps, sizeof *env->all_puzzles);
    if (!env->all_levels || !env->all_puzzles)
        return -1;
    for (int i = 0; i < env->num_maps; i++) {
        Level *lvl = &env->all_levels[i];
        init_level(lvl);
        init_puzzle_state(&env->all_puzzles[i]);
        srand(seed + (unsigned)i);
        int goal = rand() % 4 + 5;
        do { // cy_init_random_level's loop: until the puzzle is solvable in 10 to 15 moves
            reset_level(lvl);
            gen_level(lvl, goal);
        } while (lvl->spawn_location == 0 || lvl->goal_location == 999 ||
                 verify_level(lvl, 15, 10) == 0);
        levelToPuzzleState(lvl, &env->all_puzzles[i]);
    }
    return 0;
}
