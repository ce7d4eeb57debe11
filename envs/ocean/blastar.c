/*  PufferLib Ocean's blastar as a volley plugin (include/volley/ocean.h):
        volley up --env ./libblastar.so
    blastar.h empties its Log in the c_reset it calls from c_step at a
    game's end (VL_OCEAN_LOG_RESET): the figures are then the Log as the
    step before left it. It adds to its Log every step, so each figure is a
    field over the game's steps so far, as PufferLib reports it. */
#include <blastar.h> // PufferLib's pufferlib/ocean/blastar/blastar.h
#define VL_OCEAN_ENV        Blastar
#define VL_OCEAN_NAME       "blastar"
#define VL_OCEAN_OBS        10
#define VL_OCEAN_ACTIONS    6
#define VL_OCEAN_LOG_RESET  1
#define VL_OCEAN_FIGURES(X) X(score) X(perf) X(lives)
#include <volley/ocean.h>

static int vl_ocean_init(Blastar *env, vl_ocean_args_t *a)
{
    (void)a;
    init(env, VL_OCEAN_OBS);
    return 0;
}
