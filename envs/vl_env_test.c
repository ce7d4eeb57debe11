/*  vl_env_test: the env table check, the plugin loader and vl_envs_t over
    both forms. Run as
        vl_env_test COUNTER.so COUNTER_VEC.so ABI2.so NOSYM.so [VOLLEY]
    with the test plugins of tests/plugins/ (CMake passes their paths) and,
    optionally, the volley executable to try a bad plugin on. */
#include "vl_env.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_COUNTER_DIM 6 // tests/plugins/vl_counter_env.c's observation
#define S_N           5 // envs stepped together

static const char *s_counter, *s_counter_vec, *s_abi2, *s_nosym, *s_volley;

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

static float s_step(void *env, int32_t action, float *obs, int *term, int *trunc)
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

static int s_vec_step(void *envs, const int32_t *actions, float *obs, float *rewards,
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
    .num_actions = 2,
    .create = s_create,
    .destroy = s_destroy,
    .seed = s_seed,
    .reset = s_reset,
    .step = s_step,
};

/* Ways to break s_good, each with (part of) the reason it must give. */
typedef enum {
    S_ABI,
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
    S_SOLVED_NAN,
    S_NULL_STEP,
    S_NULL_DESTROY,
    S_BOTH_FORMS,
    S_NEITHER_FORM,
    S_VEC_NULL_SEED,
    S_BREAKS
} s_break_t;

static const char *const s_reasons[S_BREAKS] = {
    [S_ABI] = "built for env ABI version 2, this volley has 1",
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
    [S_ZERO_ACTIONS] = "num_actions 0, must be 2..1024",
    [S_ONE_ACTION] = "num_actions 1, must be 2..1024",
    [S_ABSURD_ACTIONS] = "num_actions 1025, must be 2..1024",
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

/* Breaks t the way b says. */
static void s_break(vl_env_t *t, s_break_t b)
{
    vl_env_field_t *f = &t->fields[0];
    switch (b) {
    case S_ABI:
        t->abi_version = 2;
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
    case S_ZERO_ACTIONS:
        t->num_actions = 0;
        break;
    case S_ONE_ACTION:
        t->num_actions = 1;
        break;
    case S_ABSURD_ACTIONS:
        t->num_actions = 1025;
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
    case S_BREAKS:
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
    VL_CHECK(ops.obs_dim == 1 && ops.num_actions == 2 && !ops.vectorized);
    VL_CHECK(!ops.has_solved_return);
    s_vec_form_without_seed(&vec);
    vec.vec_seed = s_vec_seed;
    VL_CHECK(vl_env_check(&vec, &ops, why, sizeof why) == 0 && ops.vectorized);
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
        VL_CHECK(rc == -1 && strstr(why, s_reasons[b]));
        VL_CHECK(ops.obs_dim == 12345);
    }
    char why[64];
    VL_CHECK(vl_env_check(NULL, NULL, why, sizeof why) == -1 && strstr(why, "no table"));
}

/* ---- the loader ---------------------------------------------------------- */

static void test_lookup_plugins(void)
{
    const vl_env_ops_t *per = vl_env_lookup("test", s_counter);
    const vl_env_ops_t *vec = vl_env_lookup("test", s_counter_vec);
    VL_CHECK(per && vec);
    VL_CHECK(strcmp(per->name, "counter") == 0 && !per->vectorized);
    VL_CHECK(strcmp(vec->name, "counter-vec") == 0 && vec->vectorized);
    VL_CHECK(per->path && strcmp(per->path, s_counter) == 0);
    VL_CHECK(per->obs_dim == S_COUNTER_DIM && per->num_actions == 3);
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
             "volley test: env plugin %s refused: built for env ABI version 2, this volley has 1",
             s_abi2);
    VL_CHECK(s_refused(s_abi2, want));
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
    snprintf(cmd, sizeof cmd, "'%s' actor --env '%s' --broker 127.0.0.1:1 2>'%s'", s_volley, s_abi2,
             out);
    int status = system(cmd);
    FILE *f = fopen(out, "r");
    size_t n = f ? fread(s_err, 1, sizeof s_err - 1, f) : 0;
    s_err[n] = 0;
    if (f)
        fclose(f);
    unlink(out);
    VL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    VL_CHECK(strstr(s_err, "volley actor: env plugin") &&
             strstr(s_err, "refused: built for env ABI version 2, this volley has 1"));
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
    int32_t actions[S_N];
    for (int i = 0; i < S_N; i++)
        actions[i] = (t + i) % 3;
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
   same values, and both what the counter says, resets and all. */
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

/* The built-ins pass every check over many episodes of random play. */
static void test_builtins_pass_checks(void)
{
    const char *names[2] = {"cartpole", "catch"};
    for (int k = 0; k < 2; k++) {
        const vl_env_ops_t *env = vl_env_find(names[k]);
        uint32_t n = 8, D = env->obs_dim;
        uint64_t seeds[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        float *obs = calloc((size_t)n * D, sizeof *obs), *fin = calloc((size_t)n * D, sizeof *fin);
        float rewards[8];
        uint8_t term[8], trunc[8];
        int32_t actions[8];
        vl_rng_t rng;
        int rc = 0, ended = 0;
        vl_rng_seed(&rng, 5);
        vl_envs_t *envs = obs && fin ? vl_envs_new(env, n, NULL, seeds, obs) : NULL;
        for (int t = 0; envs && t < 2000 && rc == 0; t++) {
            for (uint32_t i = 0; i < n; i++)
                actions[i] = (int32_t)vl_rng_below(&rng, env->num_actions);
            rc = vl_envs_step(envs, actions, obs, rewards, term, trunc, fin);
            for (uint32_t i = 0; i < n; i++)
                ended += term[i] + trunc[i];
        }
        vl_envs_destroy(&envs);
        free(obs);
        free(fin);
        VL_CHECK(rc == 0 && ended > 50);
    }
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: vl_env_test COUNTER.so COUNTER_VEC.so ABI2.so NOSYM.so [VOLLEY]\n");
        return 2;
    }
    s_counter = argv[1], s_counter_vec = argv[2], s_abi2 = argv[3], s_nosym = argv[4];
    s_volley = argc > 5 ? argv[5] : NULL;
    VL_RUN(test_check_accepts);
    VL_RUN(test_check_refusals);
    VL_RUN(test_lookup_plugins);
    VL_RUN(test_lookup_refusals);
    VL_RUN(test_volley_refuses_plugin);
    VL_RUN(test_step_both_forms);
    VL_RUN(test_bad_values_refused);
    VL_RUN(test_create_fails);
    VL_RUN(test_builtins_pass_checks);
    return VL_DONE();
}
