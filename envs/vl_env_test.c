/*  vl_env_test: the env table check (action spaces included), the plugin
    loader (version 1 tables still taken, the next version refused) and
    vl_envs_t over both forms, box actions clipped on their way to step. Run as
        vl_env_test COUNTER.so COUNTER_VEC.so ABI_NEXT.so NOSYM.so BOX.so BOX_VEC.so
                    BOX_MULTI.so [VOLLEY]
    with the test plugins of tests/plugins/ (CMake passes their paths) and,
    optionally, the volley executable to try a bad plugin on. */
#include "vl_env.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_COUNTER_DIM 6 // tests/plugins/vl_counter_env.c's observation
#define S_N           5 // envs stepped together

static const char *s_counter, *s_counter_vec, *s_abi_next, *s_nosym, *s_volley;
static const char *s_box, *s_box_vec, *s_box_multi;

/* ---- capturing stderr --------------------------------------------------- */

static char s_err[4096]; // what the last s_capture_end read
static int s_saved_fd = -1;
static FILE *s_tmp;

/* Sends stderr to a temporary file until s_capture_end. */
static void s_capture_begin(void)
{
    fflush(stderr);
    s_tmp = tmpfile();
    s_saved_fd = dup(2);
    dup2(fileno(s_tmp), 2);
}

/* Restores stderr and returns what was written to it meanwhile. */
static const char *s_capture_end(void)
{
    fflush(stderr);
    dup2(s_saved_fd, 2);
    close(s_saved_fd);
    rewind(s_tmp);
    size_t n = fread(s_err, 1, sizeof s_err - 1, s_tmp);
    s_err[n] = 0;
    fclose(s_tmp);
    fputs(s_err, stderr); // still shown, for whoever reads the test's log
    return s_err;
}

/* ---- vl_env_check ------------------------------------------------------- */

static void *s_create(const char *arg)
{
    (void)arg;
    return calloc(1, 1);
}

static void s_destroy(void *env)
{
    free(env);
}

static void s_seed(void *env, uint64_t seed)
{
    (void)env, (void)seed;
}

static void s_reset(void *env, float *obs)
{
    (void)env;
    obs[0] = 0;
}

static float s_step(void *env, const float *action, float *obs, int *term, int *trunc)
{
    (void)env, (void)action;
    obs[0] = 0;
    *term = *trunc = 0;
    return 0;
}

static void *s_vec_create(uint32_t n, const char *arg)
{
    (void)arg;
    return calloc(n, 1);
}

static void s_vec_seed(void *envs, const uint64_t *seeds)
{
    (void)envs, (void)seeds;
}

static int s_vec_reset(void *envs, float *obs)
{
    (void)envs, (void)obs;
    return 0;
}

static int s_vec_step(void *envs, const float *actions, float *obs, float *rewards,
                      uint8_t *terminated, uint8_t *truncated, float *final_obs)
{
    (void)envs, (void)actions, (void)obs, (void)rewards, (void)terminated, (void)truncated,
        (void)final_obs;
    return 0;
}

static const vl_env_t s_good = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "good",
    .summary = "a table that passes",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {1}}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {2}},
    .create = s_create,
    .destroy = s_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};

/* Ways to break s_good, each with (part of) the reason it must give. */
typedef enum {
    S_ABI,
    S_ABI_ZERO,
    S_NO_NAME,
    S_EMPTY_NAME,
    S_SPACE_NAME,
    S_CONTROL_NAME,
    S_TWO_LINE_SUMMARY,
    S_NO_FIELDS,
    S_TOO_MANY_FIELDS,
    S_ZERO_SIZE,
    S_NDIM_0,
    S_NDIM_5,
    S_ENCODING,
    S_OVER_LIMIT,
    S_LOW_OVER_HIGH,
    S_NAN_LOW,
    S_INF_HIGH,
    S_ZERO_ACTIONS,
    S_ONE_ACTION,
    S_ABSURD_ACTIONS,
    S_DISCRETE_DIMS_2,
    S_MULTI_DIMS_0,
    S_BOX_DIMS_0,
    S_BOX_DIMS_17,
    S_MULTI_ONE_CHOICE,
    S_BOX_LOW_IS_HIGH,
    S_BOX_LOW_OVER_HIGH,
    S_BOX_NAN_LOW,
    S_BOX_INF_HIGH,
    S_KIND_7,
    S_SOLVED_NAN,
    S_NULL_STEP,
    S_NULL_DESTROY,
    S_BOTH_FORMS,
    S_NEITHER_FORM,
    S_VEC_NULL_SEED,
    S_BREAKS
} s_break_t;

static const char *const s_reasons[S_BREAKS] = {
    [S_ABI] = "built for env ABI version 4, this volley reads 1 to 3",
    [S_ABI_ZERO] = "built for env ABI version 0, this volley reads 1 to 3",
    [S_NO_NAME] = "no name",
    [S_EMPTY_NAME] = "name must be 1..63 printable characters, no spaces",
    [S_SPACE_NAME] = "name must be",
    [S_CONTROL_NAME] = "name must be",
    [S_TWO_LINE_SUMMARY] = "summary must be one line",
    [S_NO_FIELDS] = "n_fields 0, must be 1..8",
    [S_TOO_MANY_FIELDS] = "n_fields 9, must be 1..8",
    [S_ZERO_SIZE] = "field 0 has size 0 in dimension 1",
    [S_NDIM_0] = "field 0 has ndim 0, must be 1..4",
    [S_NDIM_5] = "field 0 has ndim 5",
    [S_ENCODING] = "field 0 has unknown encoding 4",
    [S_OVER_LIMIT] = "observation over the limit of 65536 values",
    [S_LOW_OVER_HIGH] = "field 0 has low 1 > high 0",
    [S_NAN_LOW] = "field 0 has a non-finite range [nan, 1]",
    [S_INF_HIGH] = "field 0 has a non-finite range [0, inf]",
    [S_ZERO_ACTIONS] = "action dimension 0 has 0 choices; expected 2..1024",
    [S_ONE_ACTION] = "action dimension 0 has 1 choices; expected 2..1024",
    [S_ABSURD_ACTIONS] = "action dimension 0 has 1025 choices; expected 2..1024",
    [S_DISCRETE_DIMS_2] = "a discrete action space has dims 2; expected 1",
    [S_MULTI_DIMS_0] = "action dims 0; expected 1..16",
    [S_BOX_DIMS_0] = "action dims 0; expected 1..16",
    [S_BOX_DIMS_17] = "action dims 17; expected 1..16",
    [S_MULTI_ONE_CHOICE] = "action dimension 1 has 1 choices; expected 2..1024",
    [S_BOX_LOW_IS_HIGH] = "box dimension 1: bounds [2, 2]; expected finite, low < high",
    [S_BOX_LOW_OVER_HIGH] = "box dimension 0: bounds [1, -1]; expected finite, low < high",
    [S_BOX_NAN_LOW] = "box dimension 1: bounds [nan, 1]; expected finite, low < high",
    [S_BOX_INF_HIGH] = "box dimension 0: bounds [-1, inf]; expected finite, low < high",
    [S_KIND_7] = "action kind 7; expected 0 (discrete), 1 (multi-discrete) or 2 (box)",
    [S_SOLVED_NAN] = "solved_return is not finite",
    [S_NULL_STEP] = "per-env form has no step function",
    [S_NULL_DESTROY] = "per-env form has no destroy function",
    [S_BOTH_FORMS] = "fills both forms",
    [S_NEITHER_FORM] = "fills neither form",
    [S_VEC_NULL_SEED] = "vectorized form has no vec_seed function",
};

/* Turns t's per-env form into the vectorized form, vec_seed left out. */
static void s_vec_form_without_seed(vl_env_t *t)
{
    t->create = NULL, t->destroy = NULL, t->seed = NULL, t->reset = NULL, t->step = NULL;
    t->vec_create = s_vec_create, t->vec_destroy = s_destroy;
    t->vec_reset = s_vec_reset, t->vec_step = s_vec_step;
}

/* Makes t's action a box of dims 2 within [-1, 1] and [0, 2]. */
static void s_box_action(vl_env_t *t)
{
    t->action = (vl_env_action_t){
        .kind = VL_ENV_BOX, .dims = 2, .low = {-1.0f, 0.0f}, .high = {1.0f, 2.0f}};
}

/* Breaks t's action space the way b says; returns 0 if b is not about it. */
static int s_break_action(vl_env_t *t, s_break_t b)
{
    vl_env_action_t *a = &t->action;
    if (b == S_ZERO_ACTIONS || b == S_ONE_ACTION || b == S_ABSURD_ACTIONS)
        a->n[0] = b == S_ZERO_ACTIONS ? 0 : b == S_ONE_ACTION ? 1 : 1025;
    else if (b == S_DISCRETE_DIMS_2)
        a->dims = 2, a->n[1] = 2;
    else if (b == S_MULTI_DIMS_0)
        a->kind = VL_ENV_MULTI_DISCRETE, a->dims = 0;
    else if (b == S_MULTI_ONE_CHOICE)
        *a = (vl_env_action_t){.kind = VL_ENV_MULTI_DISCRETE, .dims = 3, .n = {3, 1, 2}};
    else if (b == S_BOX_DIMS_0 || b == S_BOX_DIMS_17)
        s_box_action(t), a->dims = b == S_BOX_DIMS_0 ? 0 : 17;
    else if (b == S_BOX_LOW_IS_HIGH)
        s_box_action(t), a->low[1] = a->high[1] = 2.0f;
    else if (b == S_BOX_LOW_OVER_HIGH)
        s_box_action(t), a->low[0] = 1.0f, a->high[0] = -1.0f;
    else if (b == S_BOX_NAN_LOW)
        s_box_action(t), a->low[1] = NAN, a->high[1] = 1.0f;
    else if (b == S_BOX_INF_HIGH)
        s_box_action(t), a->high[0] = INFINITY;
    else if (b == S_KIND_7)
        a->kind = 7;
    else
        return 0;
    return 1;
}

/* Breaks t the way b says. */
static void s_break(vl_env_t *t, s_break_t b)
{
    vl_env_field_t *f = &t->fields[0];
    if (s_break_action(t, b))
        return;
    switch (b) {
    case S_ABI:
        t->abi_version = VL_ENV_ABI_VERSION + 1;
        break;
    case S_ABI_ZERO:
        t->abi_version = 0;
        break;
    case S_NO_NAME:
        t->name = NULL;
        break;
    case S_EMPTY_NAME:
        t->name = "";
        break;
    case S_SPACE_NAME:
        t->name = "two words";
        break;
    case S_CONTROL_NAME:
        t->name = "bell\a";
        break;
    case S_TWO_LINE_SUMMARY:
        t->summary = "one\ntwo";
        break;
    case S_NO_FIELDS:
        t->n_fields = 0;
        break;
    case S_TOO_MANY_FIELDS:
        t->n_fields = 9;
        break;
    case S_ZERO_SIZE:
        f->ndim = 2, f->shape[0] = 3, f->shape[1] = 0;
        break;
    case S_NDIM_0:
        f->ndim = 0;
        break;
    case S_NDIM_5:
        f->ndim = 5;
        break;
    case S_ENCODING:
        f->encoding = 4;
        break;
    case S_OVER_LIMIT:
        f->ndim = 2, f->shape[0] = 1u << 16, f->shape[1] = 2;
        break;
    case S_LOW_OVER_HIGH:
        f->low = 1, f->high = 0;
        break;
    case S_NAN_LOW:
        f->low = NAN, f->high = 1;
        break;
    case S_INF_HIGH:
        f->low = 0, f->high = INFINITY;
        break;
    case S_SOLVED_NAN:
        t->has_solved_return = 1, t->solved_return = NAN;
        break;
    case S_NULL_STEP:
        t->step = NULL;
        break;
    case S_NULL_DESTROY:
        t->destroy = NULL;
        break;
    case S_BOTH_FORMS:
        t->vec_step = s_vec_step;
        break;
    case S_NEITHER_FORM:
        s_vec_form_without_seed(t), t->vec_create = NULL;
        break;
    case S_VEC_NULL_SEED:
        s_vec_form_without_seed(t);
        break;
    default: // an action space's, or S_BREAKS
        break;
    }
    if (b == S_NEITHER_FORM) // no function of either form left
        t->vec_destroy = NULL, t->vec_reset = NULL, t->vec_step = NULL;
}

static void test_check_accepts(void)
{
    vl_env_ops_t ops;
    vl_env_t vec = s_good;
    char why[256] = "";
    VL_CHECK(vl_env_check(&s_good, &ops, why, sizeof why) == 0);
    VL_CHECK(ops.table == &s_good && strcmp(ops.name, "good") == 0 && !ops.path);
    VL_CHECK(ops.obs_dim == 1 && !ops.vectorized && !ops.v1);
    VL_CHECK(ops.action.kind == VL_ENV_DISCRETE && ops.action.dims == 1 && ops.action.n[0] == 2);
    VL_CHECK(!ops.has_solved_return);
    s_vec_form_without_seed(&vec);
    vec.vec_seed = s_vec_seed;
    VL_CHECK(vl_env_check(&vec, &ops, why, sizeof why) == 0 && ops.vectorized);
}

/* A box and a multi-discrete space pass, and ops carries them as given. */
static void test_check_accepts_spaces(void)
{
    vl_env_ops_t ops;
    vl_env_t box = s_good, multi = s_good;
    char why[256] = "";
    s_box_action(&box);
    VL_CHECK(vl_env_check(&box, &ops, why, sizeof why) == 0);
    VL_CHECK(vl_action_equal(&ops.action, &box.action) && ops.action.dims == 2);
    VL_CHECK(ops.action.low[1] == 0.0f && ops.action.high[1] == 2.0f);
    multi.action = (vl_env_action_t){.kind = VL_ENV_MULTI_DISCRETE, .dims = 3, .n = {3, 2, 4}};
    VL_CHECK(vl_env_check(&multi, &ops, why, sizeof why) == 0);
    VL_CHECK(vl_action_equal(&ops.action, &multi.action) && vl_action_outputs(&ops.action) == 9);
    VL_CHECK(vl_env_check_spec(&multi, &ops, why, sizeof why) == 0 && ops.action.n[2] == 4);
}

/* Every broken table is refused with its own reason, and ops is untouched. */
static void test_check_refusals(void)
{
    for (int b = 0; b < S_BREAKS; b++) {
        vl_env_t t = s_good;
        vl_env_ops_t ops = {.obs_dim = 12345};
        char why[256] = "";
        s_break(&t, (s_break_t)b);
        int rc = vl_env_check(&t, &ops, why, sizeof why);
        if (rc == 0 || !strstr(why, s_reasons[b]))
            fprintf(stderr, "case %d: rc %d, why '%s', want '%s'\n", b, rc, why, s_reasons[b]);
        VL_CHECK(rc == -1 && strstr(why, s_reasons[b]) && !strchr(why, '\n'));
        VL_CHECK(ops.obs_dim == 12345);
        if (b < S_NULL_STEP || b > S_VEC_NULL_SEED) { // the spec's own checks
            VL_CHECK(vl_env_check_spec(&t, &ops, why, sizeof why) == -1);
            VL_CHECK(strstr(why, s_reasons[b]) && ops.obs_dim == 12345);
        }
    }
    char why[64];
    VL_CHECK(vl_env_check(NULL, NULL, why, sizeof why) == -1 && strstr(why, "no table"));
}

/* ---- version 1 tables ----------------------------------------------------- */

#define S_V1_N 3 // envs of a version 1 table stepped together

static int32_t s_v1_got[S_V1_N]; // the actions s_v1_step was called with, in call order
static uint32_t s_v1_calls;

static float s_v1_step(void *env, int32_t action, float *obs, int *term, int *trunc)
{
    (void)env;
    s_v1_got[s_v1_calls++ % S_V1_N] = action;
    obs[0] = 0;
    *term = *trunc = 0;
    return 0;
}

static const vl_env_v1_t s_good_v1 = {
    .abi_version = 1,
    .name = "good-v1",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {1}}},
    .num_actions = 3,
    .create = s_create,
    .destroy = s_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_v1_step,
};

/* A version 1 table is taken as discrete(num_actions), stepped through its
   own step, which gets each env's float action as the int32 it reads. */
static void test_v1_table_steps(void)
{
    vl_env_ops_t ops;
    char why[256] = "";
    VL_CHECK(vl_env_check((const vl_env_t *)&s_good_v1, &ops, why, sizeof why) == 0);
    VL_CHECK(ops.v1 == &s_good_v1 && strcmp(ops.name, "good-v1") == 0 && !ops.vectorized);
    vl_action_spec_t three = vl_action_discrete(3);
    VL_CHECK(vl_action_equal(&ops.action, &three) && ops.obs_dim == 1);
    uint64_t seeds[S_V1_N] = {1, 2, 3};
    float obs[S_V1_N], fin[S_V1_N], rewards[S_V1_N], actions[S_V1_N] = {2, 0, 1};
    uint8_t term[S_V1_N], trunc[S_V1_N];
    vl_envs_t *envs = vl_envs_new(&ops, S_V1_N, NULL, seeds, obs);
    VL_CHECK(envs);
    s_v1_calls = 0;
    VL_CHECK(vl_envs_step(envs, actions, obs, rewards, term, trunc, fin) == 0);
    vl_envs_destroy(&envs);
    VL_CHECK(s_v1_calls == S_V1_N);
    VL_CHECK(s_v1_got[0] == 2 && s_v1_got[1] == 0 && s_v1_got[2] == 1);
}

/* A version 1 table is checked as a version 2 one: its num_actions as a
   discrete space, its own step as the per-env form's. */
static void test_v1_table_refusals(void)
{
    vl_env_v1_t one = s_good_v1, no_step = s_good_v1;
    vl_env_ops_t ops = {.obs_dim = 12345};
    char why[256] = "";
    one.num_actions = 1;
    VL_CHECK(vl_env_check((const vl_env_t *)&one, &ops, why, sizeof why) == -1);
    VL_CHECK(strstr(why, "action dimension 0 has 1 choices; expected 2..1024"));
    no_step.step = NULL;
    VL_CHECK(vl_env_check((const vl_env_t *)&no_step, &ops, why, sizeof why) == -1);
    VL_CHECK(strstr(why, "per-env form has no step function") && ops.obs_dim == 12345);
}

/* ---- the loader ---------------------------------------------------------- */

/* A version 2 table (the bytes up to version 3's figures, no more) loads
   as a table without figures. */
static void test_v2_table_loads(void)
{
    size_t v2_size = offsetof(vl_env_t, n_figures);
    uint8_t *two = malloc(v2_size); // reading past its end would be a sanitizer's error
    VL_CHECK(two);
    memcpy(two, &s_good, v2_size);
    uint32_t version = 2; // abi_version: the first member in every version
    memcpy(two, &version, sizeof version);
    vl_env_ops_t ops;
    char why[256] = "";
    VL_CHECK(vl_env_check((const vl_env_t *)(void *)two, &ops, why, sizeof why) == 0);
    VL_CHECK(ops.n_figures == 0 && strcmp(ops.name, "good") == 0 &&
             (const void *)ops.table != (const void *)two);
    free(two);
}

/* Writes the step count as figure "steps" and, for env 0, no "score". */
static void s_figures(void *env, float *out)
{
    static float calls;
    (void)env;
    out[0] = ++calls;
    out[1] = NAN;
}

static float s_step_ends(void *env, const float *action, float *obs, int *term, int *trunc)
{
    (void)env, (void)action;
    obs[0] = 0;
    *term = 1, *trunc = 0;
    return 0;
}

/* A table naming figures gives them after each step that ends an episode;
   names must be printable, distinct and backed by the form's function. */
static void test_figures(void)
{
    vl_env_t t = s_good;
    t.step = s_step_ends;
    t.n_figures = 2, t.figure_names[0] = "steps", t.figure_names[1] = "score";
    t.figures = s_figures;
    vl_env_ops_t ops;
    char why[256] = "";
    VL_CHECK(vl_env_check(&t, &ops, why, sizeof why) == 0);
    VL_CHECK(ops.n_figures == 2 && strcmp(ops.figure_names[1], "score") == 0);
    uint64_t seeds[2] = {1, 2};
    float obs[2], fin[2], rewards[2], actions[2] = {0, 1};
    uint8_t term[2], trunc[2];
    vl_envs_t *envs = vl_envs_new(&ops, 2, NULL, seeds, obs);
    VL_CHECK(envs && vl_envs_step(envs, actions, obs, rewards, term, trunc, fin) == 0);
    const float *f = vl_envs_figures(envs);
    VL_CHECK(f && f[0] == 1 && isnan(f[1]) && f[2] == 2 && isnan(f[3]));
    vl_envs_destroy(&envs);
    vl_env_t bad = t;
    bad.figures = NULL;
    VL_CHECK(vl_env_check(&bad, &ops, why, sizeof why) != 0 && strstr(why, "no figures function"));
    bad = t, bad.figure_names[1] = "steps";
    VL_CHECK(vl_env_check(&bad, &ops, why, sizeof why) != 0 && strstr(why, "given twice"));
    bad = t, bad.figure_names[0] = "a score";
    VL_CHECK(vl_env_check(&bad, &ops, why, sizeof why) != 0 && strstr(why, "letters, digits"));
    bad = t, bad.n_figures = VL_ENV_FIGURES_MAX + 1;
    VL_CHECK(vl_env_check(&bad, &ops, why, sizeof why) != 0 && strstr(why, "n_figures"));
}

static void test_lookup_plugins(void)
{
    const vl_env_ops_t *per = vl_env_lookup("test", s_counter);
    const vl_env_ops_t *vec = vl_env_lookup("test", s_counter_vec);
    VL_CHECK(per && vec);
    VL_CHECK(strcmp(per->name, "counter") == 0 && !per->vectorized);
    VL_CHECK(strcmp(vec->name, "counter-vec") == 0 && vec->vectorized);
    VL_CHECK(per->path && strcmp(per->path, s_counter) == 0);
    vl_action_spec_t three = vl_action_discrete(3);
    VL_CHECK(per->obs_dim == S_COUNTER_DIM && vl_action_equal(&per->action, &three));
    VL_CHECK(vl_action_equal(&vec->action, &three));
    VL_CHECK(per->v1 && vec->v1); // both built as version 1 tables
    VL_CHECK(per->obs_spec.n_fields == 4 && per->obs_spec.fields[2].encoding == VL_OBS_U2);
    VL_CHECK(per->low[0] == 0.0f && per->high[0] == 1.0f);
}

/* Returns 1 if looking name up fails and prints text to stderr. */
static int s_refused(const char *name, const char *text)
{
    s_capture_begin();
    const vl_env_ops_t *env = vl_env_lookup("test", name);
    const char *err = s_capture_end();
    if (!strstr(err, text))
        fprintf(stderr, "wanted: %s\n", text);
    return env == NULL && strstr(err, text) != NULL;
}

static void test_lookup_refusals(void)
{
    char want[512];
    snprintf(want, sizeof want,
             "volley test: env plugin %s refused: built for env ABI version 4, this volley reads "
             "1 to 3",
             s_abi_next);
    VL_CHECK(s_refused(s_abi_next, want));
    snprintf(want, sizeof want,
             "volley test: %s exports no `volley_env` table (see include/volley/env.h)", s_nosym);
    VL_CHECK(s_refused(s_nosym, want));
    VL_CHECK(s_refused("not/a/file.so", "volley test: cannot load env plugin not/a/file.so: "
                                        "not/a/file.so: cannot open shared object file"));
    VL_CHECK(s_refused("mars", "volley test: unknown --env 'mars'"));
    VL_CHECK(s_refused("", "--env wants a name or a plugin path"));
}

/* The executable refuses a bad plugin before it connects: exit 2, the
   reason on stderr. */
static void test_volley_refuses_plugin(void)
{
    char cmd[2048], out[] = "/tmp/vl_env_test.XXXXXX";
    if (!s_volley) {
        printf("     (no volley executable given: skipped)\n");
        return;
    }
    int fd = mkstemp(out);
    VL_CHECK(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "'%s' actor --env '%s' --broker 127.0.0.1:1 2>'%s'", s_volley,
             s_abi_next, out);
    int status = system(cmd);
    FILE *f = fopen(out, "r");
    size_t n = f ? fread(s_err, 1, sizeof s_err - 1, f) : 0;
    s_err[n] = 0;
    if (f)
        fclose(f);
    unlink(out);
    VL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    VL_CHECK(strstr(s_err, "volley actor: env plugin") &&
             strstr(s_err, "refused: built for env ABI version 4, this volley reads 1 to 3"));
}

/* ---- stepping ------------------------------------------------------------ */

/* What one vl_envs_t wrote over a run. */
typedef struct {
    float obs[S_N][S_COUNTER_DIM], final_obs[S_N][S_COUNTER_DIM], rewards[S_N];
    uint8_t term[S_N], trunc[S_N];
} s_out_t;

/* Steps envs once with actions that depend on the step t. */
static int s_step_all(vl_envs_t *envs, int t, s_out_t *o)
{
    float actions[S_N];
    for (int i = 0; i < S_N; i++)
        actions[i] = (float)((t + i) % 3);
    memset(o->final_obs, 0xff, sizeof o->final_obs); // NaN where nothing ended
    return vl_envs_step(envs, actions, &o->obs[0][0], o->rewards, o->term, o->trunc,
                        &o->final_obs[0][0]);
}

/* Returns 1 if env i's step t is what the counter does: the flags at its
   episode's end (terminated wins over truncated at step 7), the final
   observation counting the steps, the next one starting at 0. */
static int s_as_counted(const s_out_t *o, int i, int t, uint32_t *steps, uint32_t *episodes)
{
    uint32_t len = 4 + (uint32_t)((i + *episodes) % 5);
    int end = ++*steps >= len || *steps >= 7;
    int ok = o->rewards[i] == (float)((t + i) % 3) - 1.0f;
    ok &= o->term[i] == (*steps >= len) && o->trunc[i] == (*steps < len && *steps >= 7);
    if (end) {
        ok &= o->final_obs[i][0] == (float)*steps / 8.0f && o->obs[i][0] == 0.0f;
        *steps = 0, ++*episodes;
    }
    return ok && o->obs[i][0] == (float)*steps / 8.0f && o->obs[i][1] == (float)i / 100.0f;
}

/* The per-env form through the adapter and the vectorized form write the
   same values, and both what the counter says, resets and all. The counter
   is a version 1 plugin: its reward, the action - 1, shows each env got its
   own float action as the int32 it reads, in either form. */
static void test_step_both_forms(void)
{
    const vl_env_ops_t *per = vl_env_lookup("test", s_counter);
    const vl_env_ops_t *vec = vl_env_lookup("test", s_counter_vec);
    uint64_t seeds[S_N] = {0, 1, 2, 3, 4};
    uint32_t steps[S_N] = {0}, episodes[S_N] = {0};
    static s_out_t a, b;
    int same = 1, counted = 1, ended = 0;
    VL_CHECK(per && vec);
    vl_envs_t *ea = vl_envs_new(per, S_N, NULL, seeds, &a.obs[0][0]);
    vl_envs_t *eb = vl_envs_new(vec, S_N, NULL, seeds, &b.obs[0][0]);
    VL_CHECK(ea && eb);
    VL_CHECK(memcmp(a.obs, b.obs, sizeof a.obs) == 0);
    for (int t = 0; t < 60 && same && counted; t++) {
        VL_CHECK(s_step_all(ea, t, &a) == 0 && s_step_all(eb, t, &b) == 0);
        same = memcmp(a.obs, b.obs, sizeof a.obs) == 0 &&
               memcmp(a.rewards, b.rewards, sizeof a.rewards) == 0 &&
               memcmp(a.term, b.term, sizeof a.term) == 0 &&
               memcmp(a.trunc, b.trunc, sizeof a.trunc) == 0;
        for (int i = 0; i < S_N; i++) {
            ended += a.term[i] || a.trunc[i];
            if (a.term[i] || a.trunc[i])
                same &= memcmp(a.final_obs[i], b.final_obs[i], sizeof a.final_obs[i]) == 0;
            counted &= s_as_counted(&a, i, t, &steps[i], &episodes[i]);
        }
    }
    vl_envs_destroy(&ea);
    vl_envs_destroy(&eb);
    vl_envs_destroy(&eb);
    VL_CHECK(same && counted);
    VL_CHECK(ended > 40 && ea == NULL && eb == NULL);
}

/* Returns 1 if env, made with arg, fails on step 3 (no sooner) and logs
   one error naming the env, env 1 and text. */
static int s_fails_with(const vl_env_ops_t *env, const char *arg, const char *text)
{
    uint64_t seeds[S_N] = {0, 1, 2, 3, 4};
    static s_out_t o;
    vl_envs_t *envs = vl_envs_new(env, S_N, arg, seeds, &o.obs[0][0]);
    int rc = 0, t;
    if (!envs)
        return 0;
    s_capture_begin();
    for (t = 1; t <= 5 && rc == 0; t++)
        rc = s_step_all(envs, t, &o);
    const char *err = s_capture_end();
    vl_envs_destroy(&envs);
    char name[64];
    snprintf(name, sizeof name, "env '%s': env 1 ", env->name);
    int lines = 0;
    for (const char *p = err; (p = strchr(p, '\n')); p++)
        lines++;
    if (!strstr(err, text))
        fprintf(stderr, "%s '%s': wanted '%s'\n", env->name, arg, text);
    return rc == -1 && t - 1 == 3 && lines == 1 && strstr(err, text) &&
           (strstr(err, name) || strstr(text, "vec_step returned"));
}

/* A NaN, an f32 over its range, a u2 of 7, a flag of 2 or an infinite
   reward stops vl_envs_step with one error, in either form. */
static void test_bad_values_refused(void)
{
    const char *forms[2] = {s_counter, s_counter_vec};
    for (int k = 0; k < 2; k++) {
        const vl_env_ops_t *env = vl_env_lookup("test", forms[k]);
        const char *step = k ? "vec_step" : "step";
        char want[128];
        VL_CHECK(env);
        snprintf(want, sizeof want,
                 "%s wrote obs[0] = nan, field 0 (f32) element 0 must be in [0, 1]", step);
        VL_CHECK(s_fails_with(env, "nan", want));
        VL_CHECK(s_fails_with(
            env, "range",
            "obs[0] = 1.5, field 0 (f32) element 0 must be in [0, 1] (its declared range; "
            "--obs-check warn or off"));
        VL_CHECK(s_fails_with(env, "u2",
                              "obs[3] = 7, field 2 (u2) element 0 must be a whole number 0..3"));
        VL_CHECK(s_fails_with(env, "flag", "set terminated = 2, must be 0 or 1"));
        VL_CHECK(s_fails_with(env, "reward", "returned reward inf, must be finite"));
    }
    const vl_env_ops_t *vec = vl_env_lookup("test", s_counter_vec);
    VL_CHECK(s_fails_with(vec, "vecfail", "env 'counter-vec': vec_step returned -1"));
}

/* create (or vec_create) returning NULL: vl_envs_new says which env and
   which --env-arg, and returns NULL. */
static void test_create_fails(void)
{
    const char *forms[2] = {s_counter, s_counter_vec};
    uint64_t seeds[S_N] = {0};
    float obs[S_N][S_COUNTER_DIM];
    for (int k = 0; k < 2; k++) {
        const vl_env_ops_t *env = vl_env_lookup("test", forms[k]);
        char want[128];
        VL_CHECK(env);
        s_capture_begin();
        vl_envs_t *envs = vl_envs_new(env, S_N, "fail", seeds, &obs[0][0]);
        const char *err = s_capture_end();
        snprintf(want, sizeof want, "env '%s' failed to create (--env-arg 'fail')", env->name);
        VL_CHECK(envs == NULL && strstr(err, want));
    }
}

/* ---- action spaces through vl_envs ------------------------------------------- */

#define S_BOX_N     4 // box-echo envs stepped together
#define S_BOX_LIMIT 5 // box-echo's episode length

/* Box actions leave the bounds [-1, 1] and [0, 2] in every way (far out,
   just out, on a bound); each env's own row reaches it clipped, in either
   form, and the caller's array is left as it was. box-echo echoes what it
   got into its observation and pays its first value. */
static void test_box_actions_clipped(void)
{
    const char *forms[2] = {s_box, s_box_vec};
    const float actions[S_BOX_N][2] = {{-3, 5}, {0.5f, 1.5f}, {1, -0.25f}, {-1.0001f, 2.0001f}};
    const float clipped[S_BOX_N][2] = {{-1, 2}, {0.5f, 1.5f}, {1, 0}, {-1, 2}};
    for (int k = 0; k < 2; k++) {
        const vl_env_ops_t *env = vl_env_lookup("test", forms[k]);
        VL_CHECK(env && env->vectorized == k && !env->v1 && vl_action_is_box(&env->action));
        VL_CHECK(env->action.dims == 2 && env->action.low[1] == 0 && env->action.high[1] == 2);
        uint64_t seeds[S_BOX_N] = {0};
        float obs[S_BOX_N][2], fin[S_BOX_N][2], rewards[S_BOX_N], given[S_BOX_N][2];
        uint8_t term[S_BOX_N], trunc[S_BOX_N];
        vl_envs_t *envs = vl_envs_new(env, S_BOX_N, NULL, seeds, &obs[0][0]);
        VL_CHECK(envs);
        int echoed = 1, ended = 1;
        for (int t = 1; t <= S_BOX_LIMIT && envs; t++) {
            memcpy(given, actions, sizeof given);
            VL_CHECK(vl_envs_step(envs, &given[0][0], &obs[0][0], rewards, term, trunc,
                                  &fin[0][0]) == 0);
            VL_CHECK(memcmp(given, actions, sizeof given) == 0);
            const float(*seen)[2] = t < S_BOX_LIMIT ? obs : fin; // the last step's reset: zeros
            for (int i = 0; i < S_BOX_N; i++) {
                echoed &= seen[i][0] == clipped[i][0] && seen[i][1] == clipped[i][1];
                echoed &= rewards[i] == clipped[i][0];
                ended &= trunc[i] == (t == S_BOX_LIMIT) && !term[i];
                ended &= t < S_BOX_LIMIT || (obs[i][0] == 0 && obs[i][1] == 0);
            }
        }
        vl_envs_destroy(&envs);
        if (!echoed)
            fprintf(stderr, "%s: the env saw an action outside its bounds\n", forms[k]);
        VL_CHECK(echoed && ended);
    }
}

/* A multi-discrete space: each env gets its row of whole-number floats, one
   per dimension, as the caller gave them (nothing clipped or rounded). */
static void test_multi_discrete_actions_reach_the_env(void)
{
    const vl_env_ops_t *env = vl_env_lookup("test", s_box_multi);
    VL_CHECK(env && env->action.kind == VL_ENV_MULTI_DISCRETE && env->action.dims == 3);
    VL_CHECK(env->action.n[0] == 3 && env->action.n[1] == 2 && env->action.n[2] == 4);
    uint64_t seeds[S_BOX_N] = {0};
    float obs[S_BOX_N][3], fin[S_BOX_N][3], rewards[S_BOX_N], actions[S_BOX_N][3];
    uint8_t term[S_BOX_N], trunc[S_BOX_N];
    vl_envs_t *envs = vl_envs_new(env, S_BOX_N, NULL, seeds, &obs[0][0]);
    VL_CHECK(envs);
    int echoed = 1;
    for (int t = 1; t < S_BOX_LIMIT && envs; t++) {
        for (int i = 0; i < S_BOX_N; i++)
            for (int d = 0; d < 3; d++)
                actions[i][d] = (float)((t * 3 + i + d) % (int)env->action.n[d]);
        VL_CHECK(vl_action_find_bad(&env->action, &actions[0][0], S_BOX_N) == -1);
        VL_CHECK(vl_envs_step(envs, &actions[0][0], &obs[0][0], rewards, term, trunc, &fin[0][0]) ==
                 0);
        for (int i = 0; i < S_BOX_N; i++)
            for (int d = 0; d < 3; d++)
                echoed &= obs[i][d] == actions[i][d] && obs[i][d] == floorf(obs[i][d]);
    }
    vl_envs_destroy(&envs);
    VL_CHECK(echoed);
}

/* Writes a random action of space a into out [dims]: a choice of each
   dimension, or a box value up to one past either bound (vl_envs clips). */
static void s_random_action(const vl_action_spec_t *a, vl_rng_t *rng, float *out)
{
    for (uint32_t d = 0; d < a->dims; d++) {
        if (vl_action_is_box(a))
            out[d] =
                a->low[d] - 1.0f + (float)vl_rng_uniform(rng) * (a->high[d] - a->low[d] + 2.0f);
        else
            out[d] = (float)vl_rng_below(rng, a->n[d]);
    }
}

/* The built-ins, every kind of space among them, pass every check over
   many episodes of random play. */
static void test_builtins_pass_checks(void)
{
    const char *names[4] = {"cartpole", "catch", "pendulum", "reach"};
    for (int k = 0; k < 4; k++) {
        const vl_env_ops_t *env = vl_env_find(names[k]);
        VL_CHECK(env);
        uint32_t n = 8, D = env->obs_dim, W = env->action.dims;
        uint64_t seeds[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        float *obs = calloc((size_t)n * D, sizeof *obs), *fin = calloc((size_t)n * D, sizeof *fin);
        float rewards[8], actions[8 * VL_ENV_ACTION_DIMS_MAX];
        uint8_t term[8], trunc[8];
        vl_rng_t rng;
        int rc = 0, ended = 0;
        vl_rng_seed(&rng, 5);
        vl_envs_t *envs = obs && fin ? vl_envs_new(env, n, NULL, seeds, obs) : NULL;
        for (int t = 0; envs && t < 2000 && rc == 0; t++) {
            for (uint32_t i = 0; i < n; i++)
                s_random_action(&env->action, &rng, actions + (size_t)i * W);
            rc = vl_envs_step(envs, actions, obs, rewards, term, trunc, fin);
            for (uint32_t i = 0; i < n; i++)
                ended += term[i] + trunc[i];
        }
        VL_CHECK(envs != NULL);
        vl_envs_destroy(&envs);
        free(obs);
        free(fin);
        if (rc != 0 || ended <= 50)
            fprintf(stderr, "%s: rc %d, %d episodes ended\n", names[k], rc, ended);
        VL_CHECK(rc == 0 && ended > 50);
    }
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: vl_env_test COUNTER.so COUNTER_VEC.so ABI_NEXT.so NOSYM.so BOX.so "
                        "BOX_VEC.so BOX_MULTI.so [VOLLEY]\n");
        return 2;
    }
    s_counter = argv[1], s_counter_vec = argv[2], s_abi_next = argv[3], s_nosym = argv[4];
    s_box = argv[5], s_box_vec = argv[6], s_box_multi = argv[7];
    s_volley = argc > 8 ? argv[8] : NULL;
    VL_RUN(test_check_accepts);
    VL_RUN(test_check_accepts_spaces);
    VL_RUN(test_check_refusals);
    VL_RUN(test_v1_table_steps);
    VL_RUN(test_v1_table_refusals);
    VL_RUN(test_v2_table_loads);
    VL_RUN(test_figures);
    VL_RUN(test_lookup_plugins);
    VL_RUN(test_lookup_refusals);
    VL_RUN(test_volley_refuses_plugin);
    VL_RUN(test_step_both_forms);
    VL_RUN(test_bad_values_refused);
    VL_RUN(test_create_fails);
    VL_RUN(test_box_actions_clipped);
    VL_RUN(test_multi_discrete_actions_reach_the_env);
    VL_RUN(test_builtins_pass_checks);
    return VL_DONE();
}
