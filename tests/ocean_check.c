/*  ocean_check: an Ocean plugin stepped through its volley_env table
    (dlopen, as volley loads it) beside the same env header stepped directly
    (c_reset, c_step on arrays of its own), with the same config, seed and
    actions: every observation, reward, terminal, truncation, kept final
    observation and episode figure must be equal, bit for bit. Built by
    tests/ocean_test.sh and tests/ocean_more_test.sh once per env, the
    plugin's source included:

        cc -DVL_OCEAN_PLUGIN='"pong.c"' ... ocean_check.c -ldl -lm
        ocean_check ./libpong.so "max_score=2" STEPS

    The direct loop is what a caller of the header does: zero the terminal
    flags, c_step, and where an episode ended (its terminal; with
    VL_OCEAN_LOG_ENDS a Log entry; a time limit) empty the Log and, for a
    time limit or VL_OCEAN_DEFERRED_RESET, c_reset (the plugin's names for
    them: VL_OCEAN_STEP, VL_OCEAN_RESET; its figures, with
    VL_OCEAN_LOG_RESET, from the Log before the step where the env emptied
    it). Each env is its own calloc'd block, given its index, and closed
    (and freed, unless VL_OCEAN_CLOSE_FREES) at the end. Prints the
    episodes and truncations seen; exits 1 at the first difference, naming
    it. */
#include VL_OCEAN_PLUGIN

#include <dlfcn.h>

#define N 4 // envs stepped together

#define S_FAIL(...)                                                                                \
    do {                                                                                           \
        fprintf(stderr, "ocean_check %s: ", VL_OCEAN_NAME);                                        \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        exit(1);                                                                                   \
    } while (0)

/* One run's record: [steps + 1][N][OBS] observations, [steps][N] the rest. */
typedef struct {
    float *obs, *rew, *final, *fig;
    uint8_t *term, *trunc;
} s_run_t;

static uint64_t s_lcg = 12345;

/* Returns the next action: a choice 0 .. VL_OCEAN_ACTIONS - 1, from an RNG
   of its own (rand() is the env's). */
static float s_action(void)
{
    s_lcg = s_lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((s_lcg >> 33) % VL_OCEAN_ACTIONS);
}

static void s_alloc(s_run_t *r, uint32_t steps)
{
    size_t rows = (size_t)steps * N;
    r->obs = calloc((rows + N) * VL_OCEAN_OBS, sizeof(float));
    r->final = calloc(rows * VL_OCEAN_OBS, sizeof(float));
    r->fig = calloc(rows * VL_ENV_FIGURES_MAX, sizeof(float));
    r->rew = calloc(rows, sizeof(float));
    r->term = calloc(rows, 1);
    r->trunc = calloc(rows, 1);
    if (!r->obs || !r->final || !r->fig || !r->rew || !r->term || !r->trunc)
        S_FAIL("out of memory for %u steps", steps);
}

/* Steps the plugin at path through its table. */
static void s_run_plugin(const char *path, const char *arg, uint64_t seed, uint32_t steps,
                         const float *actions, s_run_t *r)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!lib)
        S_FAIL("cannot load %s: %s", path, dlerror());
    const vl_env_t *t = dlsym(lib, VL_ENV_SYMBOL);
    if (!t || t->abi_version != VL_ENV_ABI_VERSION || t->fields[0].shape[0] != VL_OCEAN_OBS ||
        t->action.n[0] != VL_OCEAN_ACTIONS || t->n_figures != VL_OCEAN_N_FIGURES)
        S_FAIL("%s's table is not this plugin's", path);
    uint64_t seeds[N];
    for (int i = 0; i < N; i++)
        seeds[i] = seed + (uint64_t)i;
    void *v = t->vec_create(N, arg);
    if (!v)
        S_FAIL("vec_create(%d, '%s') failed", N, arg);
    t->vec_seed(v, seeds);
    if (t->vec_reset(v, r->obs) != 0)
        S_FAIL("vec_reset failed");
    for (uint32_t s = 0; s < steps; s++) {
        size_t at = (size_t)s * N;
        if (t->vec_step(v, actions + at, r->obs + (at + N) * VL_OCEAN_OBS, r->rew + at,
                        r->term + at, r->trunc + at, r->final + at * VL_OCEAN_OBS) != 0)
            S_FAIL("vec_step %u failed", s);
        float fig[N * VL_ENV_FIGURES_MAX];
        if (t->vec_figures)
            t->vec_figures(v, fig);
        for (int i = 0; t->vec_figures && i < N; i++)
            memcpy(r->fig + (at + (size_t)i) * VL_ENV_FIGURES_MAX, fig + i * VL_OCEAN_N_FIGURES,
                   VL_OCEAN_N_FIGURES * sizeof(float));
    }
    t->vec_destroy(v);
}

/* The direct loop's envs and their own arrays. */
typedef struct {
    vl_ocean_env_t *env[N];
    vl_ocean_obs_t obs[N][VL_OCEAN_OBS];
    vl_ocean_act_t act[N];
    float rew[N];
    vl_ocean_term_t term[N];
    uint32_t steps[N];
} s_direct_t;

/* Writes env i's observation, as floats, to out. */
static void s_take(const s_direct_t *d, int i, float *out)
{
    for (int k = 0; k < VL_OCEAN_OBS; k++)
        out[k] = (float)d->obs[i][k];
}

/* Writes a Log as figures to out (NaN where it logged no episode). */
static void s_figures(const vl_ocean_log_t *log, float *out)
{
#ifdef VL_OCEAN_FIGURES
    static const size_t at[] = {VL_OCEAN_FIGURES(VL_OCEAN_OFFSET_OF)};
    const float *f = (const float *)(const void *)log;
    for (int k = 0; k < VL_OCEAN_N_FIGURES; k++)
        out[k] = log->n > 0 ? f[at[k] / sizeof(float)] / log->n : NAN;
#else
    (void)log, (void)out;
#endif
}

/* Steps env i once, as a caller of the header does. */
static void s_direct_step(s_direct_t *d, int i, uint32_t max_steps, size_t at, s_run_t *r)
{
    vl_ocean_env_t *e = d->env[i];
    d->term[i] = 0;
    vl_ocean_log_t before = e->log;
    VL_OCEAN_STEP(e);
    int ended = d->term[i] != 0 || (VL_OCEAN_LOG_ENDS && e->log.n > 0);
    int cut = !ended && max_steps && ++d->steps[i] >= max_steps;
    float *obs = r->obs + (at + N + (size_t)i) * VL_OCEAN_OBS;
    s_take(d, i, obs);
    r->rew[at + i] = d->rew[i];
    r->term[at + i] = (uint8_t)ended;
    r->trunc[at + i] = (uint8_t)cut;
    if (ended)
        d->steps[i] = 0;
    if (!ended && !cut)
        return;
    int emptied = VL_OCEAN_LOG_RESET && !(e->log.n > 0);
    s_figures(emptied ? &before : &e->log, r->fig + (at + (size_t)i) * VL_ENV_FIGURES_MAX);
    memset(&e->log, 0, sizeof e->log);
    d->steps[i] = 0;
    if (cut || VL_OCEAN_DEFERRED_RESET) {
        memcpy(r->final + (at + (size_t)i) * VL_OCEAN_OBS, obs, VL_OCEAN_OBS * sizeof(float));
        VL_OCEAN_RESET(e);
        s_take(d, i, obs);
    }
}

/* Steps the header directly: init every env, srand(seed), reset each. */
static void s_run_direct(const char *arg, uint64_t seed, uint32_t steps, const float *actions,
                         s_run_t *r)
{
    static s_direct_t d;
    vl_ocean_args_t args;
    if (vl_ocean_parse(arg, &args) != 0)
        S_FAIL("bad --env-arg '%s'", arg);
    uint32_t max_steps = (uint32_t)vl_ocean_arg(&args, "max_steps", 0);
    for (int i = 0; i < N; i++) {
        vl_ocean_args_t mine = args;
        mine.index = (uint32_t)i;
        d.env[i] = calloc(1, sizeof *d.env[i]);
        if (!d.env[i])
            S_FAIL("out of memory for env %d", i);
        d.env[i]->observations = (void *)d.obs[i];
        d.env[i]->actions = &d.act[i];
        d.env[i]->rewards = &d.rew[i];
        d.env[i]->terminals = &d.term[i];
        if (vl_ocean_init(d.env[i], &mine) != 0)
            S_FAIL("init failed");
    }
    srand((unsigned)seed);
    for (int i = 0; i < N; i++) {
        VL_OCEAN_RESET(d.env[i]);
        s_take(&d, i, r->obs + (size_t)i * VL_OCEAN_OBS);
    }
    for (uint32_t s = 0; s < steps; s++) {
        size_t at = (size_t)s * N;
        for (int i = 0; i < N; i++)
            d.act[i] = (vl_ocean_act_t)actions[at + i];
        for (int i = 0; i < N; i++)
            s_direct_step(&d, i, max_steps, at, r);
    }
    for (int i = 0; i < N; i++) {
        VL_OCEAN_CLOSE(d.env[i]);
        if (!VL_OCEAN_CLOSE_FREES)
            free(d.env[i]);
    }
}

/* Returns 1 if floats a and b are the same bits, or both NaN. */
static int s_same(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* Compares the two runs step by step; exits at the first difference. */
static void s_compare(const s_run_t *p, const s_run_t *d, uint32_t steps)
{
    for (size_t k = 0; k < (size_t)N * VL_OCEAN_OBS; k++)
        if (!s_same(p->obs[k], d->obs[k]))
            S_FAIL("reset: obs[%zu] %g through volley, %g direct", k, p->obs[k], d->obs[k]);
    for (uint32_t s = 0; s < steps; s++)
        for (int i = 0; i < N; i++) {
            size_t at = (size_t)s * N + (size_t)i;
            if (p->term[at] != d->term[at] || p->trunc[at] != d->trunc[at] ||
                !s_same(p->rew[at], d->rew[at]))
                S_FAIL("step %u env %d: reward %g terminal %u truncated %u through volley, "
                       "%g %u %u direct",
                       s, i, p->rew[at], p->term[at], p->trunc[at], d->rew[at], d->term[at],
                       d->trunc[at]);
            for (int k = 0; k < VL_OCEAN_OBS; k++)
                if (!s_same(p->obs[(at + N) * VL_OCEAN_OBS + k],
                            d->obs[(at + N) * VL_OCEAN_OBS + k]))
                    S_FAIL("step %u env %d: obs[%d] %.9g through volley, %.9g direct (term %u %u)",
                           s, i, k, p->obs[(at + N) * VL_OCEAN_OBS + k],
                           d->obs[(at + N) * VL_OCEAN_OBS + k], p->term[at], d->term[at]);
            int kept = d->trunc[at] || (d->term[at] && VL_OCEAN_DEFERRED_RESET);
            for (int k = 0; kept && k < VL_OCEAN_OBS; k++)
                if (!s_same(p->final[at * VL_OCEAN_OBS + k], d->final[at * VL_OCEAN_OBS + k]))
                    S_FAIL("step %u env %d: final obs[%d] %g through volley, %g direct", s, i, k,
                           p->final[at * VL_OCEAN_OBS + k], d->final[at * VL_OCEAN_OBS + k]);
            for (int k = 0; (p->term[at] || p->trunc[at]) && k < VL_OCEAN_N_FIGURES; k++)
                if (!s_same(p->fig[at * VL_ENV_FIGURES_MAX + k],
                            d->fig[at * VL_ENV_FIGURES_MAX + k]))
                    S_FAIL("step %u env %d: figure %d %g through volley, %g direct", s, i, k,
                           p->fig[at * VL_ENV_FIGURES_MAX + k],
                           d->fig[at * VL_ENV_FIGURES_MAX + k]);
        }
}

int main(int argc, char **argv)
{
    if (argc != 4)
        S_FAIL("usage: ocean_check PLUGIN.so ENV_ARG STEPS");
    uint32_t steps = (uint32_t)strtoul(argv[3], NULL, 10);
    uint64_t seed = 7;
    float *actions = calloc((size_t)steps * N, sizeof(float));
    if (!actions || steps == 0)
        S_FAIL("bad STEPS '%s'", argv[3]);
    for (size_t k = 0; k < (size_t)steps * N; k++)
        actions[k] = s_action();
    s_run_t plugin, direct;
    s_alloc(&plugin, steps);
    s_alloc(&direct, steps);
    s_run_plugin(argv[1], argv[2], seed, steps, actions, &plugin);
    s_run_direct(argv[2], seed, steps, actions, &direct);
    s_compare(&plugin, &direct, steps);
    unsigned ends = 0, cuts = 0, scored = 0;
    for (size_t k = 0; k < (size_t)steps * N; k++) {
        ends += plugin.term[k];
        cuts += plugin.trunc[k];
        scored += (plugin.term[k] || plugin.trunc[k]) && VL_OCEAN_N_FIGURES &&
                  !isnan(plugin.fig[k * VL_ENV_FIGURES_MAX]);
    }
    printf("%s '%s': %u steps x %d envs equal; %u terminals, %u truncations, %u figure rows\n",
           VL_OCEAN_NAME, argv[2], steps, N, ends, cuts, scored);
    return 0;
}
