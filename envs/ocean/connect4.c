/*  PufferLib Ocean's connect4 as a volley plugin (include/volley/ocean.h),
    against its built-in opponent:
        volley up --env ./libconnect4.so
    connect4.h resets on the step after a game's end; the plugin resets at
    once (VL_OCEAN_DEFERRED_RESET), so the next observation starts the next
    game. The board's cells are 0, 1 (the agent's) or -1 (the opponent's). */
#include <connect4.h> // PufferLib's pufferlib/ocean/connect4/connect4.h
#define VL_OCEAN_ENV            CConnect4
#define VL_OCEAN_NAME           "connect4"
#define VL_OCEAN_OBS            42
#define VL_OCEAN_ACTIONS        7
#define VL_OCEAN_DEFERRED_RESET 1
#define VL_OCEAN_FIGURES(X)     X(score) X(perf)
#include <volley/ocean.h>

static int vl_ocean_init(CConnect4 *env, vl_ocean_args_t *a)
{
    (void)a;
    init(env);
    return 0;
}
