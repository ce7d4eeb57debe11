/*  volley/ocean.h: a PufferLib Ocean environment as a volley plugin.

    An Ocean env (pufferlib/ocean/NAME/NAME.h) is a struct with pointers to
    its observations, actions, rewards and terminals, a `Log` of floats, and
    c_reset / c_step / c_close. PufferLib's env_binding.h makes one a Python
    module; this header makes it a vectorized volley plugin (env.h). The
    plugin is one file: include the env's header, say what it is, include
    this header, and map --env-arg's key=value pairs onto the env's fields:

        #include <pong.h>                // pufferlib/ocean/pong/pong.h
        #define VL_OCEAN_ENV Pong         // the env's struct
        #define VL_OCEAN_NAME "pong"
        #define VL_OCEAN_OBS 8            // values per observation
        #define VL_OCEAN_ACTIONS 3        // discrete choices
        #define VL_OCEAN_FIGURES(X) X(score) X(perf) // Log fields shown as env/NAME
        #include <volley/ocean.h>

        static int vl_ocean_init(Pong *env, vl_ocean_args_t *args)
        {
            env->width = vl_ocean_arg(args, "width", 500);
            ...
            init(env);
            return 0;
        }

    Build (the env's unused drawing code and its raylib calls left out):
        cc -O2 -shared -fPIC -fvisibility=hidden -ffunction-sections -Wl,--gc-sections
           -o libpong.so pong.c -I OCEAN/pong -I RAYLIB/include $(pkg-config --cflags volley)

    Options, each a #define before the include:
    - VL_OCEAN_ENCODING: how observations travel (VL_ENV_F32, the default, or
      VL_ENV_U8 for 0..255 values); no range is declared, so an f32 value is
      only checked finite (Ocean's declared bounds are not kept by its envs).
    - VL_OCEAN_DEFERRED_RESET 1: the env resets on the step after its terminal
      (connect4); this header resets it at once instead, so the final
      observation is kept and the next one starts the new episode.
    - VL_OCEAN_LOG_ENDS 1: an episode ends where the env adds to its Log
      without a terminal (snake respawns a dead snake itself).
    - VL_OCEAN_SUMMARY: the line for --help.
    - VL_OCEAN_RESET, VL_OCEAN_STEP, VL_OCEAN_CLOSE: the env's functions
      where they are not c_reset, c_step and c_close (`#define VL_OCEAN_STEP
      step` for an env of the older names reset(env) / step(env)).
    - VL_OCEAN_CLOSE_FREES 1: the env's c_close frees the env itself
      (free(env): grid, tower_climb); every env is its own malloc'd block,
      which this header then leaves to c_close.
    - VL_OCEAN_LOG_RESET 1: the env empties its Log in the c_reset it calls
      from c_step (blastar, cpr); where a step ends an episode and leaves the
      Log empty, the figures are the Log as it stood before that step.
    - VL_OCEAN_NO_RAYLIB_STUBS 1: leave out the stand-ins below (a build
      that links raylib to draw).

    Observations may be of any numeric type (converted to floats); terminals
    unsigned char (pointed into volley's), char, signed char, int or float
    (staged, nonzero an end); rewards are floats.

    A few envs call raylib outside their drawing code (IsWindowReady and
    CloseWindow in c_close: squared, checkers, template; GetTime in
    tower_climb's c_step), which the one-line build leaves undefined; this
    header defines weak do-nothing stand-ins for those (no window: false,
    nothing, 0.0), so the same line builds them and a build linking raylib
    still gets raylib's.

    --env-arg is "key=value key=value ..." (spaces or commas between pairs);
    vl_ocean_arg reads one, and a key no init read fails the create, naming
    the keys it reads. `max_steps=N` is this header's own: a time limit that
    truncates an episode after N steps (0, the default: none). args->index
    is the env's place in its vector (0 .. n - 1), for what init makes
    differ between envs (a seed of its own).

    What volley sees: obs, rewards and terminals as the env writes them, the
    env's arrays pointed into volley's every step (observations that are not
    floats, and terminals that are not unsigned chars, staged and
    converted). Where the env resets itself inside c_step (pong, breakout),
    its final observation is gone: final_obs is then the new episode's
    first, which volley does not read after a terminal (only a truncation
    bootstraps from it). Every figure is the Log's field over its episode
    count, taken as the episode ends. Ocean's envs draw from the C library's
    one rand(): the seed of an actor's env 0 seeds it (srand) for all its
    envs. */
#ifndef VOLLEY_OCEAN_H
#define VOLLEY_OCEAN_H
#if defined(VL_OCEAN_ENV) || defined(VL_OCEAN_NAME) // alone, it declares nothing

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

#if !defined(VL_OCEAN_ENV) || !defined(VL_OCEAN_NAME) || !defined(VL_OCEAN_OBS) ||                 \
    !defined(VL_OCEAN_ACTIONS)
#error "define VL_OCEAN_ENV, VL_OCEAN_NAME, VL_OCEAN_OBS and VL_OCEAN_ACTIONS before volley/ocean.h"
#endif
#ifndef VL_OCEAN_ENCODING
#define VL_OCEAN_ENCODING VL_ENV_F32
#endif
#ifndef VL_OCEAN_DEFERRED_RESET
#define VL_OCEAN_DEFERRED_RESET 0
#endif
#ifndef VL_OCEAN_LOG_ENDS
#define VL_OCEAN_LOG_ENDS 0
#endif
#ifndef VL_OCEAN_SUMMARY
#define VL_OCEAN_SUMMARY "a PufferLib Ocean env"
#endif
#ifndef VL_OCEAN_RESET
#define VL_OCEAN_RESET c_reset
#endif
#ifndef VL_OCEAN_STEP
#define VL_OCEAN_STEP c_step
#endif
#ifndef VL_OCEAN_CLOSE
#define VL_OCEAN_CLOSE c_close
#endif
#ifndef VL_OCEAN_CLOSE_FREES
#define VL_OCEAN_CLOSE_FREES 0
#endif
#ifndef VL_OCEAN_LOG_RESET
#define VL_OCEAN_LOG_RESET 0
#endif

typedef VL_OCEAN_ENV vl_ocean_env_t;
typedef __typeof__(((vl_ocean_env_t *)0)->observations[0]) vl_ocean_obs_t;
typedef __typeof__(((vl_ocean_env_t *)0)->actions[0]) vl_ocean_act_t;
typedef __typeof__(((vl_ocean_env_t *)0)->terminals[0]) vl_ocean_term_t;
typedef __typeof__(((vl_ocean_env_t *)0)->log) vl_ocean_log_t;

/* 1 when the env's observations are floats: pointed straight into volley's. */
#define VL_OCEAN_OBS_FLOAT _Generic(((vl_ocean_env_t *)0)->observations, float * : 1, default : 0)
/* 1 when the env's terminals are unsigned chars: pointed straight into volley's. */
#define VL_OCEAN_TERM_U8                                                                           \
    _Generic(((vl_ocean_env_t *)0)->terminals, unsigned char * : 1, default : 0)

_Static_assert(_Generic(((vl_ocean_env_t *)0)->rewards, float * : 1, default : 0),
               "an Ocean env's rewards are floats");
_Static_assert(_Generic(((vl_ocean_env_t *)0)->terminals, unsigned char * : 1, char * : 1,
                        signed char * : 1, int * : 1, float * : 1, default : 0),
               "an Ocean env's terminals are unsigned char, char, signed char, int or float");
_Static_assert(sizeof(((vl_ocean_env_t *)0)->log) % sizeof(float) == 0,
               "an Ocean env's Log is floats");

/* ---- --env-arg ------------------------------------------------------------ */

#define VL_OCEAN_ARGS_MAX 32
#define VL_OCEAN_KEY_MAX  32

/* --env-arg's pairs, and the keys init asked for. */
typedef struct {
    uint32_t index; // the env's place in its vector: 0 .. n - 1
    int n, n_asked;
    char key[VL_OCEAN_ARGS_MAX][VL_OCEAN_KEY_MAX];
    double value[VL_OCEAN_ARGS_MAX];
    int used[VL_OCEAN_ARGS_MAX];
    char asked[VL_OCEAN_ARGS_MAX][VL_OCEAN_KEY_MAX];
} vl_ocean_args_t;

/* Returns the value --env-arg gave key, or dflt when it gave none. */
static double vl_ocean_arg(vl_ocean_args_t *a, const char *key, double dflt)
{
    if (a->n_asked < VL_OCEAN_ARGS_MAX)
        snprintf(a->asked[a->n_asked++], VL_OCEAN_KEY_MAX, "%s", key);
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->key[i], key) == 0) {
            a->used[i] = 1;
            return a->value[i];
        }
    return dflt;
}

/* Reads "k=v k=v" (or "k=v,k=v") into a; returns 0, or -1 after saying
   which pair is wrong. */
static int vl_ocean_parse(const char *text, vl_ocean_args_t *a)
{
    memset(a, 0, sizeof *a);
    const char *p = text ? text : "";
    while (*p) {
        size_t len = strcspn(p, " ,");
        if (len == 0) {
            p++;
            continue;
        }
        const char *eq = memchr(p, '=', len);
        char *end = NULL;
        double v = eq ? strtod(eq + 1, &end) : 0;
        if (!eq || eq == p || (size_t)(eq - p) >= VL_OCEAN_KEY_MAX || end != p + len ||
            end == eq + 1 || !isfinite(v) || a->n == VL_OCEAN_ARGS_MAX) {
            fprintf(stderr, "%s: --env-arg '%.*s' is not key=number (at most %d pairs)\n",
                    VL_OCEAN_NAME, (int)len, p, VL_OCEAN_ARGS_MAX);
            return -1;
        }
        memcpy(a->key[a->n], p, (size_t)(eq - p));
        a->value[a->n++] = v;
        p += len;
    }
    return 0;
}

/* Returns 0 if init read every key given, else -1 after naming the first
   it did not and the keys it reads. */
static int vl_ocean_unread(const vl_ocean_args_t *a)
{
    for (int i = 0; i < a->n; i++) {
        if (a->used[i])
            continue;
        fprintf(stderr, "%s: --env-arg key '%s' is unknown; it reads:", VL_OCEAN_NAME, a->key[i]);
        for (int k = 0; k < a->n_asked; k++)
            fprintf(stderr, " %s", a->asked[k]);
        fprintf(stderr, "\n");
        return -1;
    }
    return 0;
}

/* The plugin's own: sets env's fields from args and calls the env's init.
   Returns 0, or -1 to fail the create. */
static int vl_ocean_init(vl_ocean_env_t *env, vl_ocean_args_t *args);

/* ---- the figures: Log fields ---------------------------------------------- */

#ifdef VL_OCEAN_FIGURES
#define VL_OCEAN_NAME_OF(field)   #field,
#define VL_OCEAN_OFFSET_OF(field) offsetof(__typeof__(((vl_ocean_env_t *)0)->log), field),
#define VL_OCEAN_COUNT_OF(field)  +1
static const size_t vl_ocean_figure_at[] = {VL_OCEAN_FIGURES(VL_OCEAN_OFFSET_OF)};
#define VL_OCEAN_N_FIGURES (0 VL_OCEAN_FIGURES(VL_OCEAN_COUNT_OF))
#else
#define VL_OCEAN_N_FIGURES 0
#endif
_Static_assert(VL_OCEAN_N_FIGURES <= VL_ENV_FIGURES_MAX, "at most VL_ENV_FIGURES_MAX figures");

/* ---- raylib calls outside the drawing code -------------------------------- */

#if !defined(VL_OCEAN_NO_RAYLIB_STUBS) || !VL_OCEAN_NO_RAYLIB_STUBS
/* Stand-ins for the raylib calls a few envs make outside c_render: there is
   never a window. Weak, so raylib's own win where it is linked. */
__attribute__((weak)) _Bool IsWindowReady(void)
{
    return 0;
}
__attribute__((weak)) void CloseWindow(void) {}
__attribute__((weak)) double GetTime(void)
{
    return 0.0;
}
#endif

/* ---- the vectorized table ------------------------------------------------- */

typedef struct {
    uint32_t n;
    uint32_t max_steps;      // the time limit (0: none)
    vl_ocean_env_t **envs;   // [n] each its own malloc'd block (c_close may free it)
    vl_ocean_act_t *actions; // [n] volley's actions in the env's type
    vl_ocean_obs_t *obs;     // [n][VL_OCEAN_OBS] staged, when not floats
    vl_ocean_term_t *terms;  // [n] staged, when not unsigned chars
    uint32_t *steps;         // [n] steps into the episode
    float *last_obs;         // the obs array of the last call (float observations)
    float rewards[1];        // where an env writes outside a step (its reset)
    vl_ocean_term_t terminals[1];
    float *ended;              // [n][VL_ENV_FIGURES_MAX] figures of the last step's ends
    vl_ocean_log_t log_before; // the Log before a step (VL_OCEAN_LOG_RESET)
} vl_ocean_vec_t;

static void vl_ocean_vec_destroy(void *p)
{
    vl_ocean_vec_t *v = p;
    for (uint32_t i = 0; v->envs && i < v->n; i++) {
        if (!v->envs[i])
            continue;
        VL_OCEAN_CLOSE(v->envs[i]);
        if (!VL_OCEAN_CLOSE_FREES)
            free(v->envs[i]);
    }
    free(v->envs);
    free(v->actions);
    free(v->obs);
    free(v->terms);
    free(v->steps);
    free(v->ended);
    free(v);
}

/* Returns n envs, each set from arg by vl_ocean_init, or NULL. */
static void *vl_ocean_vec_create(uint32_t n, const char *arg)
{
    vl_ocean_args_t args;
    if (vl_ocean_parse(arg, &args) != 0)
        return NULL;
    vl_ocean_vec_t *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->envs = calloc(n, sizeof *v->envs);
    v->actions = calloc(n, sizeof *v->actions);
    v->obs = VL_OCEAN_OBS_FLOAT ? NULL : calloc((size_t)n * VL_OCEAN_OBS, sizeof *v->obs);
    v->terms = VL_OCEAN_TERM_U8 ? NULL : calloc(n, sizeof *v->terms);
    v->steps = calloc(n, sizeof *v->steps);
    v->ended = calloc((size_t)n * VL_ENV_FIGURES_MAX, sizeof *v->ended);
    if (!v->envs || !v->actions || (!VL_OCEAN_OBS_FLOAT && !v->obs) ||
        (!VL_OCEAN_TERM_U8 && !v->terms) || !v->steps || !v->ended) {
        vl_ocean_vec_destroy(v);
        return NULL;
    }
    double max_steps = 0;
    for (uint32_t i = 0; i < n; i++) {
        vl_ocean_args_t mine = args; // every env reads the same pairs
        mine.index = i;
        vl_ocean_env_t *e = calloc(1, sizeof *e);
        if (!e) {
            vl_ocean_vec_destroy(v);
            return NULL;
        }
        v->envs[i] = e, v->n = i + 1; // c_close the ones init touched
        e->actions = &v->actions[i];
        e->rewards = v->rewards;
        e->terminals = v->terminals;
        if (!VL_OCEAN_OBS_FLOAT)
            e->observations = (void *)(v->obs + (size_t)i * VL_OCEAN_OBS);
        max_steps = vl_ocean_arg(&mine, "max_steps", 0);
        if (vl_ocean_init(e, &mine) != 0 || vl_ocean_unread(&mine) != 0 || max_steps < 0 ||
            max_steps > 4e9) {
            vl_ocean_vec_destroy(v);
            return NULL;
        }
    }
    v->max_steps = (uint32_t)max_steps;
    return v;
}

static void vl_ocean_vec_seed(void *p, const uint64_t *seeds)
{
    (void)p;
    srand((unsigned)seeds[0]);
}

/* Points env i's observations at its row of obs (float observations). */
static inline void vl_ocean_point(vl_ocean_vec_t *v, uint32_t i, float *obs)
{
    if (VL_OCEAN_OBS_FLOAT)
        v->envs[i]->observations = (void *)(obs + (size_t)i * VL_OCEAN_OBS);
}

/* Converts env i's staged observation into its row of obs. */
static inline void vl_ocean_take(const vl_ocean_vec_t *v, uint32_t i, float *obs)
{
    if (VL_OCEAN_OBS_FLOAT)
        return;
    const vl_ocean_obs_t *src = v->obs + (size_t)i * VL_OCEAN_OBS;
    float *dst = obs + (size_t)i * VL_OCEAN_OBS;
    for (uint32_t k = 0; k < VL_OCEAN_OBS; k++)
        dst[k] = (float)src[k];
}

static int vl_ocean_vec_reset(void *p, float *obs)
{
    vl_ocean_vec_t *v = p;
    for (uint32_t i = 0; i < v->n; i++) {
        vl_ocean_point(v, i, obs);
        v->envs[i]->rewards = v->rewards;
        v->envs[i]->terminals = v->terminals;
        VL_OCEAN_RESET(v->envs[i]);
        vl_ocean_take(v, i, obs);
        v->steps[i] = 0;
    }
    v->last_obs = obs;
    return 0;
}

/* Takes log as env i's ended episode's figures (NaN where it logged none). */
static void vl_ocean_take_log(vl_ocean_vec_t *v, uint32_t i, const vl_ocean_log_t *log)
{
#ifdef VL_OCEAN_FIGURES
    const float *f = (const float *)(const void *)log;
    float *out = v->ended + (size_t)i * VL_ENV_FIGURES_MAX;
    for (uint32_t k = 0; k < VL_OCEAN_N_FIGURES; k++)
        out[k] = log->n > 0 ? f[vl_ocean_figure_at[k] / sizeof(float)] / log->n : NAN;
#else
    (void)v, (void)i, (void)log;
#endif
}

/* Ends env i's episode by resetting it here (a time limit, a deferred
   reset): keeps its last observation, resets it, and leaves its reward and
   terminal as the step wrote them. */
static void vl_ocean_reset_here(vl_ocean_vec_t *v, uint32_t i, float *obs, float *final_obs)
{
    vl_ocean_env_t *e = v->envs[i];
    memcpy(final_obs + (size_t)i * VL_OCEAN_OBS, obs + (size_t)i * VL_OCEAN_OBS,
           VL_OCEAN_OBS * sizeof(float));
    float reward = e->rewards[0];
    vl_ocean_term_t terminal = e->terminals[0];
    VL_OCEAN_RESET(e);
    e->rewards[0] = reward, e->terminals[0] = terminal;
    vl_ocean_take(v, i, obs);
}

/* Steps env i and ends its episode where the env, its Log or the time
   limit says so. */
static void vl_ocean_step_one(vl_ocean_vec_t *v, uint32_t i, float *obs, float *rewards,
                              uint8_t *terminated, uint8_t *truncated, float *final_obs)
{
    vl_ocean_env_t *e = v->envs[i];
    vl_ocean_point(v, i, obs);
    e->rewards = rewards + i;
    if (VL_OCEAN_TERM_U8)
        e->terminals = (void *)(terminated + i);
    else
        e->terminals = v->terms + i, v->terms[i] = 0;
    terminated[i] = 0, truncated[i] = 0;
    if (VL_OCEAN_LOG_RESET)
        v->log_before = e->log;
    VL_OCEAN_STEP(e);
    if (!VL_OCEAN_TERM_U8)
        terminated[i] = v->terms[i] != 0;
    vl_ocean_take(v, i, obs);
    v->steps[i]++;
    if (VL_OCEAN_LOG_ENDS && e->log.n > 0)
        terminated[i] = 1;
    int cut = !terminated[i] && v->max_steps && v->steps[i] >= v->max_steps;
    if (!terminated[i] && !cut)
        return;
    v->steps[i] = 0;
    truncated[i] = (uint8_t)cut;
    vl_ocean_take_log(v, i, VL_OCEAN_LOG_RESET && !(e->log.n > 0) ? &v->log_before : &e->log);
    memset(&e->log, 0, sizeof e->log);
    if (cut || VL_OCEAN_DEFERRED_RESET)
        vl_ocean_reset_here(v, i, obs, final_obs);
    else // the env reset itself: its final observation is gone
        memcpy(final_obs + (size_t)i * VL_OCEAN_OBS, obs + (size_t)i * VL_OCEAN_OBS,
               VL_OCEAN_OBS * sizeof(float));
}

static int vl_ocean_vec_step(void *p, const float *actions, float *obs, float *rewards,
                             uint8_t *terminated, uint8_t *truncated, float *final_obs)
{
    vl_ocean_vec_t *v = p;
    // An env may leave its row as it was (pong after a point): volley passes the same arrays
    // every step; a caller passing others gets the previous observations carried over.
    if (VL_OCEAN_OBS_FLOAT && v->last_obs && v->last_obs != obs)
        memcpy(obs, v->last_obs, (size_t)v->n * VL_OCEAN_OBS * sizeof(float));
    v->last_obs = obs;
    for (uint32_t i = 0; i < v->n; i++)
        v->actions[i] = (vl_ocean_act_t)actions[i];
    for (uint32_t i = 0; i < v->n; i++)
        vl_ocean_step_one(v, i, obs, rewards, terminated, truncated, final_obs);
    return 0;
}

#ifdef VL_OCEAN_FIGURES
static void vl_ocean_vec_figures(void *p, float *out)
{
    vl_ocean_vec_t *v = p;
    for (uint32_t i = 0; i < v->n; i++)
        memcpy(out + (size_t)i * VL_OCEAN_N_FIGURES, v->ended + (size_t)i * VL_ENV_FIGURES_MAX,
               VL_OCEAN_N_FIGURES * sizeof(float));
}
#endif

__attribute__((visibility("default"))) const vl_env_t volley_env = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = VL_OCEAN_NAME,
    .summary = VL_OCEAN_SUMMARY,
    .n_fields = 1,
    .fields = {{.encoding = VL_OCEAN_ENCODING, .ndim = 1, .shape = {VL_OCEAN_OBS}}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {VL_OCEAN_ACTIONS}},
    .vec_create = vl_ocean_vec_create,
    .vec_destroy = vl_ocean_vec_destroy,
    .vec_seed = vl_ocean_vec_seed,
    .vec_reset = vl_ocean_vec_reset,
    .vec_step = vl_ocean_vec_step,
#ifdef VL_OCEAN_FIGURES
    .n_figures = VL_OCEAN_N_FIGURES,
    .figure_names = {VL_OCEAN_FIGURES(VL_OCEAN_NAME_OF)},
    .vec_figures = vl_ocean_vec_figures,
#endif
};

#endif

#endif
