/*  vl_eval: scores a kept policy on its env. Episodes are spread evenly
    over up to S_MAX_ENVS envs stepped together, each env playing its own
    fixed number of episodes: taking the first N episodes to end would
    favour short ones. */
#include "vl_eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/vl_flags.h"
#include "../common/vl_opts.h"
#include "../common/vl_rng.h"
#include "../envs/vl_env.h"
#include "../learner/vl_kept.h"
#include "../models/vl_dist.h"
#include "vl_plot.h"
#include "vl_render.h"
#include "vl_up_config.h"

#define S_MAX_ENVS        16                    // envs stepped together when not rendering
#define S_EPISODES        100                   // the solved criterion's episodes
#define S_RENDER_EPISODES 3                     // a person watches a few
#define S_FPS             30                    // frames a second when rendering
#define S_MAX_EPISODES    100000                // bounds the run, not a limit anyone meets
#define S_SEED_STRIDE     0x9E3779B97F4A7C15ull // env i's seed: seed + i * stride

typedef struct {
    const char *from, *env, *env_arg, *policy;
    long episodes; // 0: the default for the mode
    long seed;
    int greedy, render;
    float fps;
} s_args_t;

typedef struct {
    const vl_env_ops_t *env;
    vl_policy_t *policy;
    vl_envs_t *envs;
    uint32_t n, obs_dim, actions, width; // envs, floats per obs, head outputs, action values
    float *obs, *final_obs, *rewards, *logits;
    uint8_t *terminated, *truncated;
    float *act;      // [n][width]
    float *state;    // [n][state size] a recurrent policy's, zero at each episode's start
    uint32_t *quota; // episodes env i still has to finish
    double *ret;     // env i's return so far this episode
    uint32_t *len;   // and length
    vl_rng_t rng;    // samples actions
} s_run_t;

void vl_eval_stats_add(vl_eval_stats_t *st, double ret, uint32_t len)
{
    if (st->n == 0 || ret < st->ret_min)
        st->ret_min = ret;
    if (st->n == 0 || ret > st->ret_max)
        st->ret_max = ret;
    if (st->n == 0 || len < st->len_min)
        st->len_min = len;
    if (st->n == 0 || len > st->len_max)
        st->len_max = len;
    st->n++;
    st->ret_sum += ret, st->ret_sq += ret * ret;
    st->len_sum += len, st->len_sq += (double)len * len;
}

void vl_eval_mean_std(uint32_t n, double sum, double sq, double *mean, double *std)
{
    *mean = n ? sum / n : 0;
    double var = n ? sq / n - *mean * *mean : 0;
    *std = var > 0 ? sqrt(var) : 0;
}

static const vl_flag_arg_t s_operands[] = {
    {"RUN", "a run directory: RUN/checkpoints/NAME.ckpt (or RUN/NAME.ckpt) and the env in "
            "RUN/config.ini (a plugin while it is the file trained on: the size and CRC-32C of "
            "its [env])"},
    {"CHECKPOINT", "a learner's checkpoint file (DIR/NAME.ckpt)"},
    {NULL, NULL}};

static const vl_flag_t s_flags[] = {
    {"env", 0, VL_FLAG_TEXT, offsetof(s_args_t, env), 0, 0, "NAME|PATH.so|MOD:FN",
     "the env: a built-in, a plugin, or a Python env (package.module:function returning one env "
     "with Gymnasium's API, as `.venv/bin/python -m volley actor --env`), played by the Python package "
     "with the C policy (a --torch-model run's own module, which only a Python env plays), on "
     "the Python `volley up` runs Python actors on ($VOLLEY_PYTHON, the checkout's .venv, else "
     "a python3 on PATH with numpy); a run whose actors were Python records it",
     "the run's; for a bare checkpoint, the built-in of the network's shape: cartpole, catch", 0,
     NULL},
    {"env-arg", 0, VL_FLAG_TEXT, offsetof(s_args_t, env_arg), 0, 0, "TEXT",
     "passed to the env's create", "the run's", 0, NULL},
    {"episodes", 0, VL_OPT_LONG, offsetof(s_args_t, episodes), 1, S_MAX_EPISODES, "N",
     "episodes to play", VL_QUOTE(S_EPISODES) "; " VL_QUOTE(S_RENDER_EPISODES) " with --render", 0,
     NULL},
    VL_FLAG_SWITCH(s_args_t, "greedy", greedy,
                   "take the most probable action (default: sample, as actors do)"),
    VL_FLAG_NUM(s_args_t, "seed", VL_OPT_LONG, seed, 0, 0x7fffffffL, "S",
                "seeds the envs and the action sampling"),
    VL_FLAG_SWITCH(
        s_args_t, "render", render,
        "show each step in the terminal: CartPole and Catch as pictures, other envs as a line "
        "of numbers"),
    VL_FLAG_NUM(s_args_t, "fps", VL_OPT_FLOAT, fps, 0, 1000, "F",
                "frames a second with --render (0: no waiting)"),
    {"policy", 0, VL_FLAG_POLICY, offsetof(s_args_t, policy), 0, 0, "NAME", "which policy of a run",
     "'default'", 0, NULL},
    VL_FLAG_HELP_H,
    VL_FLAG_END};

static const vl_flag_cmd_t s_cmd = {
    .name = "eval",
    .operands = "RUN|CHECKPOINT",
    .about = "Plays a trained policy on its env and prints, as its last line, the mean ± std\n"
             "of the episodes' return and length (and min, max). The network's sizes come\n"
             "from its tensors and must match the env's.\n",
    .args = s_operands,
    .flags = s_flags,
    .footer = "Exit 0 after the episodes, 1 when the env fails, 2 on bad usage or input.\n"};

/* Parses argv into a (which holds the defaults). Returns 0, 1 after
   --help, -1 after saying why. */
static int s_parse(int argc, char **argv, s_args_t *a)
{
    const s_args_t defaults = *a;
    int first = argc, rc = vl_flags_parse(&s_cmd, argc, argv, a, &defaults, &first, NULL);
    if (rc != 0)
        return rc;
    if (first != argc - 1) {
        fprintf(stderr, "volley eval: %s (see --help)\n",
                first == argc ? "which RUN or CHECKPOINT?" : "one RUN or CHECKPOINT");
        return -1;
    }
    a->from = argv[first];
    if (!a->episodes)
        a->episodes = a->render ? S_RENDER_EPISODES : S_EPISODES;
    return 0;
}

/* Returns the built-in env whose shape is the network's, or NULL when none
   or several are. */
static const vl_env_ops_t *s_env_by_shape(const vl_kept_t *kept)
{
    static const char *const builtins[] = {"cartpole", "catch"};
    const vl_env_ops_t *found = NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        const vl_env_ops_t *e = vl_env_find(builtins[i]);
        if (e && e->obs_dim == kept->obs_dim && vl_action_equal(&e->action, &kept->action)) {
            if (found)
                return NULL;
            found = e;
        }
    }
    return found;
}

/* Finds the env to play: --env, the run's, or a built-in of the network's
   shape; checks the shapes agree. Returns it, or NULL after saying why. */
static const vl_env_ops_t *s_resolve_env(const s_args_t *a, const vl_kept_t *kept)
{
    int none;
    const vl_env_ops_t *env = vl_kept_env("eval", a->env, kept, &none);
    if (none)
        env = s_env_by_shape(kept);
    if (!env && none)
        fprintf(stderr,
                "volley eval: which env? %s does not say and no built-in takes %u observations "
                "and %u action outputs: --env NAME|PATH.so\n",
                kept->checkpoint, kept->obs_dim, kept->num_actions);
    char why[512];
    if (env && vl_kept_fits(kept, env, why, sizeof why) != 0) {
        fprintf(stderr, "volley eval: %s\n", why);
        return NULL;
    }
    return env;
}

/* Frees what s_run_new made. */
static void s_run_free(s_run_t *r)
{
    vl_envs_destroy(&r->envs);
    vl_policy_destroy(&r->policy);
    free(r->obs), free(r->final_obs), free(r->rewards), free(r->logits);
    free(r->terminated), free(r->truncated), free(r->act), free(r->quota), free(r->ret);
    free(r->len);
    free(r->state);
}

/* Sets up n envs for episodes in all, seeded from seed. Returns 0, or -1
   after saying why (r is freed then). */
static int s_run_new(s_run_t *r, const vl_env_ops_t *env, vl_kept_t *kept, uint32_t n,
                     uint32_t episodes, const char *env_arg, uint64_t seed)
{
    size_t od = env->obs_dim, na = vl_action_outputs(&env->action), w = env->action.dims;
    *r = (s_run_t){
        .env = env, .n = n, .obs_dim = env->obs_dim, .actions = (uint32_t)na, .width = (uint32_t)w};
    r->obs = malloc(n * od * sizeof(float)), r->final_obs = malloc(n * od * sizeof(float));
    r->rewards = malloc(n * sizeof(float)), r->logits = malloc(n * na * sizeof(float));
    r->terminated = malloc(n), r->truncated = malloc(n), r->act = calloc(n * w, sizeof(float));
    r->quota = malloc(n * sizeof(uint32_t)), r->ret = calloc(n, sizeof(double));
    r->len = calloc(n, sizeof(uint32_t));
    uint64_t *seeds = malloc(n * sizeof(uint64_t));
    r->policy = vl_kept_policy(kept);
    r->state =
        r->policy ? calloc((size_t)n * vl_policy_state_size(r->policy) + 1, sizeof(float)) : NULL;
    int ok = r->obs && r->final_obs && r->rewards && r->logits && r->terminated && r->truncated &&
             r->act && r->quota && r->ret && r->len && seeds && r->policy && r->state;
    for (uint32_t i = 0; ok && i < n; i++) {
        r->quota[i] = episodes / n + (i < episodes % n);
        seeds[i] = seed + i * S_SEED_STRIDE;
    }
    vl_rng_seed(&r->rng, seed ^ 0x5DEECE66Dull);
    if (ok)
        r->envs = vl_envs_new(env, n, env_arg, seeds, r->obs); // logs why it failed
    free(seeds);
    if (!ok)
        fprintf(stderr, "volley eval: no memory\n");
    if (ok && r->envs)
        return 0;
    s_run_free(r);
    return -1;
}

/* Writes the action to take from the head's outputs z into act [width]:
   the most probable (greedy: each dimension's argmax, a box's mean), else
   one sampled as actors do. */
static void s_pick(s_run_t *r, const float *z, int greedy, float *act)
{
    float logp;
    if (greedy)
        vl_dist_greedy(&r->env->action, z, act);
    else
        vl_dist_sample(&r->env->action, z, vl_policy_logstd(r->policy), &r->rng, act, &logp);
}

/* Waits one frame's time. */
static void s_frame_wait(float fps)
{
    if (fps <= 0)
        return;
    double s = 1.0 / fps;
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Draws env 0's frame: obs, or final_obs when its episode just ended. */
static void s_draw(const s_run_t *r, const vl_eval_stats_t *st, const s_args_t *a, int ended)
{
    char status[256];
    const char *word = r->width == 1 ? vl_render_action(r->env, (int32_t)r->act[0]) : "";
    snprintf(status, sizeof status, "%s  episode %u/%ld  step %u  return %g  action %g%s%s%s%s",
             r->env->name, st->n + 1 - (ended != 0), a->episodes, r->len[0], r->ret[0], r->act[0],
             word[0] ? " (" : "", word, word[0] ? ")" : "", ended ? "  (episode over)" : "");
    vl_render_frame(stdout, r->env, ended ? r->final_obs : r->obs, status);
    s_frame_wait(ended && vl_render_is_picture(r->env) ? a->fps / S_FPS : a->fps);
}

/* Books the step's rewards; ends episodes. Returns episodes still to play. */
static uint32_t s_book(s_run_t *r, vl_eval_stats_t *st, const s_args_t *a)
{
    uint32_t left = 0;
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->quota[i] == 0)
            continue;
        r->ret[i] += r->rewards[i];
        r->len[i]++;
        if (r->terminated[i] || r->truncated[i]) {
            uint32_t S = vl_policy_state_size(r->policy);
            memset(r->state + (size_t)i * S, 0, S * sizeof(float)); // the next episode's start
            vl_eval_stats_add(st, r->ret[i], r->len[i]);
            if (a->render && i == 0)
                s_draw(r, st, a, 1);
            r->quota[i]--;
            r->ret[i] = 0, r->len[i] = 0;
        }
        left += r->quota[i];
    }
    return left;
}

/* Plays every env's quota of episodes into st. Returns 0, or -1 when the
   env or the policy failed (said why). */
static int s_play(s_run_t *r, vl_eval_stats_t *st, const s_args_t *a)
{
    for (uint32_t left = 1; left > 0;) {
        float *state = vl_policy_state_size(r->policy) ? r->state : NULL; // advanced in place
        if (vl_policy_forward_seq(r->policy, r->n, 1, r->obs, state, NULL, r->logits, NULL,
                                  state) != 0) {
            fprintf(stderr, "volley eval: no memory\n");
            return -1;
        }
        for (uint32_t i = 0; i < r->n; i++)
            s_pick(r, r->logits + (size_t)i * r->actions, a->greedy, r->act + (size_t)i * r->width);
        if (a->render) // the observation and the action taken on it
            s_draw(r, st, a, 0);
        if (vl_envs_step(r->envs, r->act, r->obs, r->rewards, r->terminated, r->truncated,
                         r->final_obs) != 0)
            return -1; // vl_envs_step logged why
        left = s_book(r, st, a);
    }
    return 0;
}

/* Prints the result: a line of what was played, then mean ± std. */
static void s_report(const vl_kept_t *kept, const vl_env_ops_t *env, const vl_eval_stats_t *st,
                     const s_args_t *a)
{
    double rm, rs, lm, ls;
    vl_eval_mean_std(st->n, st->ret_sum, st->ret_sq, &rm, &rs);
    vl_eval_mean_std(st->n, st->len_sum, st->len_sq, &lm, &ls);
    char model[VL_SPEC_MODEL_MAX], actions[VL_ACTION_TEXT_MAX];
    printf("eval: %s, policy %s version %llu (obs %u, model %s, actions %s), %u episodes, "
           "%s actions, seed %ld\n",
           env->name, kept->weights->policy_id, (unsigned long long)kept->weights->version,
           kept->obs_dim, vl_kept_model(kept, model, sizeof model),
           vl_action_str(&kept->action, actions, sizeof actions), st->n,
           a->greedy ? "greedy" : "sampled", a->seed);
    printf("return %.2f ± %.2f (min %.2f, max %.2f)  length %.1f ± %.1f (min %u, max %u)\n", rm, rs,
           st->ret_min, st->ret_max, lm, ls, st->len_min, st->len_max);
}

/* Has a Python env played by the Python that `volley up` runs its actors
   on (the checkout's .venv, where the env's own packages are): sets
   $VOLLEY_PYTHON to it unless set, or none is found (then the first
   python3 on PATH that has numpy). */
static void s_python_as_up(void)
{
    char python[1200];
    vl_up_config_python(python, sizeof python);
    if (strcmp(python, "python3") != 0)
        setenv("VOLLEY_PYTHON", python, 0);
}

int vl_eval_main(int argc, char **argv)
{
    s_args_t a = {.seed = 1, .fps = S_FPS};
    int rc = s_parse(argc, argv, &a);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char why[2048];
    vl_kept_t *kept = vl_kept_load(a.from, a.policy, why, sizeof why);
    if (!kept) {
        fprintf(stderr, "volley eval: %s\n", why);
        return 2;
    }
    if (kept->torch && !vl_kept_python_env(a.env, kept)) {
        char model[VL_SPEC_MODEL_MAX];
        fprintf(stderr,
                "volley eval: %s holds %s, a PyTorch module Python plays: name its Python env "
                "with --env package.module:function (the run records %s)\n",
                kept->checkpoint, vl_kept_model(kept, model, sizeof model),
                kept->env[0] ? kept->env : "none");
        vl_kept_destroy(&kept);
        return 2;
    }
    if (vl_kept_python_env(a.env, kept)) { // played by the Python package (C policy or torch)
        vl_kept_destroy(&kept);
        s_python_as_up();
        return vl_python_exec("eval", "volley.evaluate", "import numpy", argc, argv);
    }
    const vl_env_ops_t *env = s_resolve_env(&a, kept);
    const char *env_arg = a.env_arg ? a.env_arg : kept->env_arg[0] ? kept->env_arg : NULL;
    uint32_t n = a.render ? 1 : (uint32_t)(a.episodes < S_MAX_ENVS ? a.episodes : S_MAX_ENVS);
    s_run_t run = {0};
    vl_eval_stats_t st = {0};
    rc = 2;
    if (env &&
        s_run_new(&run, env, kept, n, (uint32_t)a.episodes, env_arg, (uint64_t)a.seed) == 0) {
        rc = s_play(&run, &st, &a) == 0 ? 0 : 1;
        if (rc == 0)
            s_report(kept, env, &st, &a);
        s_run_free(&run);
    }
    vl_kept_destroy(&kept);
    return rc;
}
