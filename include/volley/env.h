/*  volley/env.h: the environment plugin ABI.

    An environment is a shared library that exports one symbol, `volley_env`,
    a `const vl_env_t` table. `volley actor --env ./libmyenv.so` (and `volley
    up --env ...`) loads it with dlopen, checks the table and steps it.
    volley's built-in environments are tables of the same type.

    A table gives one of two forms:
    - per env: create/destroy/seed/reset/step, one call per environment;
    - vectorized: vec_create/vec_destroy/vec_seed/vec_reset/vec_step, one
      call steps all N environments of an actor, writing observations,
      rewards and flags straight into arrays the actor owns (PufferLib's
      style: no per-env call, no copy).
    Fill exactly one form; leave the other's pointers NULL.

    Actions (version 2) follow the table's action space: DISCRETE, one
    choice 0 .. n[0]-1; MULTI_DISCRETE, `dims` independent choices, each 0 ..
    n[d]-1 (several buttons); BOX, `dims` real values, each within [low[d],
    high[d]] (a torque, a joint velocity). Every kind reaches step as floats,
    `dims` of them (a discrete choice as a whole number: (int)action[0]); a
    BOX action is already clipped to its bounds.

    Version 1 tables (one `num_actions`, step taking an int32) keep loading:
    vl_env_v1_t below is their layout, read when abi_version is 1. Version 2
    tables are version 3's without the episode figures at its end, and load
    as a table with none.

    Episode figures (version 3, optional): an env may name up to
    VL_ENV_FIGURES_MAX figures of its own per episode (PufferLib's `score`,
    `perf`) and give their values as episodes end; the learner averages each
    over its window of episodes, as it does the return, and shows it as
    env/NAME in metrics.jsonl and in `volley top`.

    Observations are floats: the fields' values concatenated in declared
    order, row-major within a field (`dim` floats, dim = the sum over fields
    of the product of their shapes). Integer encodings say how a field
    travels: U8 values 0..255, U2 values 0..3 (4 a byte), U1 flags 0 or 1 (8
    a byte); write them as floats holding whole numbers.

    Build:  cc -shared -fPIC -o libmyenv.so myenv.c $(pkg-config --cflags volley)
    Export: const vl_env_t volley_env = { .abi_version = VL_ENV_ABI_VERSION, ... };

    Everything a plugin writes is checked: a NaN or infinite observation or
    reward, a float outside its declared range, a flag other than 0 or 1, or
    a failed call stops the actor with an error naming the env and the
    value. */
#ifndef VOLLEY_ENV_H
#define VOLLEY_ENV_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. A plugin built against another version is
   refused, naming both. `abi_version` is the first member of vl_env_t in
   every version, so the loader can always read it. */
#define VL_ENV_ABI_VERSION 3

/* The name of the symbol a plugin exports. */
#define VL_ENV_SYMBOL "volley_env"

#define VL_ENV_FIELDS_MAX 8 // fields per observation
#define VL_ENV_NDIM_MAX   4 // dimensions per field
#define VL_ENV_ACTION_DIMS_MAX 16 // values per action
#define VL_ENV_FIGURES_MAX 4      // named episode figures per env
#define VL_ENV_FIGURE_NAME_MAX 32 // bytes of a figure's name, its NUL included

/* The kinds of action space (Gymnasium's Discrete, MultiDiscrete and Box). */
enum { VL_ENV_DISCRETE = 0, VL_ENV_MULTI_DISCRETE = 1, VL_ENV_BOX = 2 };

/* An action space. */
typedef struct {
    uint32_t kind;                      // VL_ENV_DISCRETE, VL_ENV_MULTI_DISCRETE or VL_ENV_BOX
    uint32_t dims;                      // values per action: 1 for DISCRETE, 1 .. 16 otherwise
    uint32_t n[VL_ENV_ACTION_DIMS_MAX]; // discrete kinds: choices of dimension d, >= 2
    float low[VL_ENV_ACTION_DIMS_MAX];  // BOX: bounds of dimension d, finite, low < high
    float high[VL_ENV_ACTION_DIMS_MAX];
} vl_env_action_t;

/* How an observation field travels (messages/volley.proto's Encoding). */
enum { VL_ENV_F32 = 0, VL_ENV_U8 = 1, VL_ENV_U2 = 2, VL_ENV_U1 = 3 };

/* One observation field. */
typedef struct {
    uint32_t encoding;               // VL_ENV_F32, VL_ENV_U8, VL_ENV_U2 or VL_ENV_U1
    uint32_t ndim;                   // 1 .. VL_ENV_NDIM_MAX
    uint32_t shape[VL_ENV_NDIM_MAX]; // the first ndim are used, each >= 1
    float low, high;                 // F32 only: values stay in [low, high] when low < high;
                                     // low == high (e.g. both 0): no declared range
} vl_env_field_t;

typedef struct vl_env_s {
    uint32_t abi_version; // VL_ENV_ABI_VERSION
    const char *name;     // short, printable, no spaces: what `volley top` shows
    const char *summary;  // one line for --help (may be NULL)
    uint32_t n_fields;    // 1 .. VL_ENV_FIELDS_MAX
    vl_env_field_t fields[VL_ENV_FIELDS_MAX];
    vl_env_action_t action; // the action space
    int has_solved_return;  // 1: solved_return means something
    float solved_return;   // mean return over 100 episodes that counts as solved

    /* ---- per-env form ---------------------------------------------------- */
    /* Returns a new environment, or NULL on failure. `arg` is the text of
       --env-arg (NULL when not given): a ROM path, a level, a config file. */
    void *(*create)(const char *arg);
    /* Frees an environment; called once per successful create. */
    void (*destroy)(void *env);
    /* Seeds the environment's own RNG; the next reset draws from it. */
    void (*seed)(void *env, uint64_t seed);
    /* Starts an episode; writes the first observation (dim floats). */
    void (*reset)(void *env, float *obs);
    /* Applies action (dims floats, in its space: the caller checks) and
       writes the next observation; returns the reward. Sets *terminated when the episode
       ended by the task's own rule (no future reward), *truncated when a
       time limit cut it (the future still had value). After either, obs is
       the episode's final observation and the caller resets. */
    float (*step)(void *env, const float *action, float *obs, int *terminated, int *truncated);

    /* ---- vectorized form -------------------------------------------------- */
    /* Returns n new environments as one object, or NULL on failure. */
    void *(*vec_create)(uint32_t n, const char *arg);
    /* Frees them. */
    void (*vec_destroy)(void *envs);
    /* Seeds environment i with seeds[i] (n seeds). */
    void (*vec_seed)(void *envs, const uint64_t *seeds);
    /* Starts an episode in every environment; writes obs [n][dim].
       Returns 0, or -1 on failure. */
    int (*vec_reset)(void *envs, float *obs);
    /* Applies actions [n][dims] and writes obs [n][dim], rewards [n], terminated
       [n] and truncated [n] (0 or 1). An environment whose episode ended
       resets itself: obs[i] is then the new episode's first observation and
       final_obs[i] ([n][dim]) the ended episode's last one (read only where
       terminated[i] or truncated[i] is set). Returns 0, or -1 on failure. */
    int (*vec_step)(void *envs, const float *actions, float *obs, float *rewards,
                    uint8_t *terminated, uint8_t *truncated, float *final_obs);

    /* ---- episode figures (version 3; n_figures 0 and NULL: none) --------- */
    uint32_t n_figures;                           // 0 .. VL_ENV_FIGURES_MAX
    const char *figure_names[VL_ENV_FIGURES_MAX]; // 1 .. 31 letters, digits or _ . / -:
                                                  // "score"; distinct
    /* Per-env form: writes the figures (n_figures floats) of the episode the
       last step ended, before volley resets the env. NaN: none this episode. */
    void (*figures)(void *env, float *out);
    /* Vectorized form: writes figures [n][n_figures] of the episodes the last
       vec_step ended (read only where terminated[i] or truncated[i] is set).
       NaN: none for that episode. */
    void (*vec_figures)(void *envs, float *out);
} vl_env_t;

/* The version 1 table: discrete actions alone, passed as int32. A plugin
   exporting one (abi_version 1) loads as a DISCRETE space of num_actions. */
typedef struct {
    uint32_t abi_version; // 1
    const char *name;
    const char *summary;
    uint32_t n_fields;
    vl_env_field_t fields[VL_ENV_FIELDS_MAX];
    uint32_t num_actions; // discrete actions 0 .. num_actions - 1, >= 2
    int has_solved_return;
    float solved_return;
    void *(*create)(const char *arg);
    void (*destroy)(void *env);
    void (*seed)(void *env, uint64_t seed);
    void (*reset)(void *env, float *obs);
    float (*step)(void *env, int32_t action, float *obs, int *terminated, int *truncated);
    void *(*vec_create)(uint32_t n, const char *arg);
    void (*vec_destroy)(void *envs);
    void (*vec_seed)(void *envs, const uint64_t *seeds);
    int (*vec_reset)(void *envs, float *obs);
    int (*vec_step)(void *envs, const int32_t *actions, float *obs, float *rewards,
                    uint8_t *terminated, uint8_t *truncated, float *final_obs);
} vl_env_v1_t;

#ifdef __cplusplus
}
#endif

#endif
