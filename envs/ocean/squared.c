/*  PufferLib Ocean's squared as a volley plugin (include/volley/ocean.h):
        volley up --env ./libsquared.so
    An 11 x 11 grid (squared.py's size, fixed when the plugin is built): the
    agent starts in the middle and is rewarded 1 for reaching the target, -1
    for leaving the grid or taking more than 33 steps. Its c_close asks
    raylib's IsWindowReady, which the header's stand-in answers. */
#include <squared.h> // PufferLib's pufferlib/ocean/squared/squared.h
#define VL_OCEAN_ENV        Squared
#define VL_OCEAN_NAME       "squared"
#define VL_OCEAN_OBS        (11 * 11)
#define VL_OCEAN_ENCODING   VL_ENV_U8
#define VL_OCEAN_ACTIONS    5
#define VL_OCEAN_FIGURES(X) X(score) X(perf) X(episode_length)
#include <volley/ocean.h>

static int vl_ocean_init(Squared *env, vl_ocean_args_t *a)
{
    (void)a;
    env->size = 11;
    return 0;
}
