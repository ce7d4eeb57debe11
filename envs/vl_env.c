/*  vl_env: the built-in environments and the plugin loader, one path for
    both: every table goes through vl_env_check into a vl_env_ops_t. Then
    vl_envs_t, which steps N environments of either form and checks all they
    write. */
#include "vl_env.h"

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/vl_log.h"
#include "../messages/vl_figures.h"

_Static_assert(VL_ENV_FIELDS_MAX == VL_OBS_FIELDS_MAX, "env.h and vl_obs.h must agree");
_Static_assert(VL_ENV_NDIM_MAX == VL_OBS_NDIM_MAX, "env.h and vl_obs.h must agree");
_Static_assert(VL_ENV_FIGURES_MAX == VL_FIGURES_MAX && VL_ENV_FIGURE_NAME_MAX == VL_FIGURE_NAME_MAX,
               "env.h and vl_figures.h must agree");
_Static_assert((int)VL_ENV_F32 == (int)VL_OBS_F32 && (int)VL_ENV_U8 == (int)VL_OBS_U8 &&
                   (int)VL_ENV_U2 == (int)VL_OBS_U2 && (int)VL_ENV_U1 == (int)VL_OBS_U1,
               "env.h and vl_obs.h must agree");

#define S_NAME_MAX 64 // "short": it heads log lines and a column of volley top

/* ---- checking a table --------------------------------------------------- */

/* Returns 1 if s is 1 .. max - 1 characters, each printable, spaces only
   when spaces_ok. */
static int s_text_ok(const char *s, size_t max, int spaces_ok)
{
    size_t n = 0;
    for (; s && s[n] && n < max; n++)
        if (s[n] < (spaces_ok ? 0x20 : 0x21) || s[n] > 0x7e)
            return 0;
    return s && n > 0 && n < max;
}

/* Checks the name and summary; returns 0 or -1 with the reason. */
static int s_check_text(const vl_env_t *t, char *why, size_t size)
{
    if (!t->name)
        return vl_why(why, size, "no name");
    if (!s_text_ok(t->name, S_NAME_MAX, 0))
        return vl_why(why, size, "name must be 1..%d printable characters, no spaces",
                      S_NAME_MAX - 1);
    if (t->summary && t->summary[0] && !s_text_ok(t->summary, 256, 1))
        return vl_why(why, size, "summary must be one line of printable text");
    return 0;
}

/* Checks field i's encoding, rank, shape and f32 range. */
static int s_check_field(const vl_env_field_t *f, uint32_t i, char *why, size_t size)
{
    if (f->encoding > VL_ENV_U1)
        return vl_why(why, size, "field %u has unknown encoding %u", i, f->encoding);
    if (f->ndim < 1 || f->ndim > VL_ENV_NDIM_MAX)
        return vl_why(why, size, "field %u has ndim %u, must be 1..%d", i, f->ndim,
                      VL_ENV_NDIM_MAX);
    for (uint32_t d = 0; d < f->ndim; d++)
        if (f->shape[d] == 0)
            return vl_why(why, size, "field %u has size 0 in dimension %u", i, d);
    if (f->encoding == VL_ENV_F32 && (!isfinite(f->low) || !isfinite(f->high)))
        return vl_why(why, size, "field %u has a non-finite range [%g, %g]", i, f->low, f->high);
    if (f->encoding == VL_ENV_F32 && f->low > f->high)
        return vl_why(why, size, "field %u has low %g > high %g", i, f->low, f->high);
    return 0;
}

/* Checks the fields and fills ops' spec, ranges and obs_dim. */
static int s_check_fields(const vl_env_t *t, vl_env_ops_t *ops, char *why, size_t size)
{
    if (t->n_fields == 0 || t->n_fields > VL_ENV_FIELDS_MAX)
        return vl_why(why, size, "n_fields %u, must be 1..%d", t->n_fields, VL_ENV_FIELDS_MAX);
    ops->obs_spec.n_fields = t->n_fields;
    for (uint32_t i = 0; i < t->n_fields; i++) {
        const vl_env_field_t *f = &t->fields[i];
        if (s_check_field(f, i, why, size) != 0)
            return -1;
        vl_obs_field_t *o = &ops->obs_spec.fields[i];
        o->encoding = f->encoding;
        o->ndim = f->ndim;
        memcpy(o->shape, f->shape, sizeof o->shape);
        ops->low[i] = f->encoding == VL_ENV_F32 ? f->low : 0;
        ops->high[i] = f->encoding == VL_ENV_F32 ? f->high : 0;
    }
    vl_limits_t lim = vl_limits_default();
    uint32_t wire_bytes;
    if (vl_obs_spec_check(&ops->obs_spec, &lim, &ops->obs_dim, &wire_bytes) != VL_OK)
        return vl_why(why, size, "observation over the limit of %u values", lim.max_obs_dim);
    return 0;
}

/* Returns the name of the first function of a form that is not there. */
static const char *s_missing(const int there[5], const char *const names[5])
{
    for (int i = 0; i < 5; i++)
        if (!there[i])
            return names[i];
    return NULL;
}

/* Checks that exactly one form is given, completely; sets ops->vectorized.
   A version 1 table's functions are its own (ops->v1). */
static int s_check_form(const vl_env_t *t, vl_env_ops_t *ops, char *why, size_t size)
{
    static const char *const per_names[5] = {"create", "destroy", "seed", "reset", "step"};
    static const char *const vec_names[5] = {"vec_create", "vec_destroy", "vec_seed", "vec_reset",
                                             "vec_step"};
    const vl_env_v1_t *v1 = ops->v1;
    int per[5] = {!!t->create, !!t->destroy, !!t->seed, !!t->reset, v1 ? !!v1->step : !!t->step};
    int vec[5] = {!!t->vec_create, !!t->vec_destroy, !!t->vec_seed, !!t->vec_reset,
                  v1 ? !!v1->vec_step : !!t->vec_step};
    int has_per = 0, has_vec = 0;
    for (int i = 0; i < 5; i++) {
        has_per |= per[i];
        has_vec |= vec[i];
    }
    if (has_per && has_vec)
        return vl_why(why, size, "fills both forms (per env and vectorized); leave one NULL");
    if (!has_per && !has_vec)
        return vl_why(why, size, "fills neither form (create..step or vec_create..vec_step)");
    const char *missing = has_per ? s_missing(per, per_names) : s_missing(vec, vec_names);
    if (missing)
        return vl_why(why, size, "%s form has no %s function", has_per ? "per-env" : "vectorized",
                      missing);
    ops->vectorized = has_vec;
    return 0;
}

/* Fills t, a version 2 table, with a version 1 table's spec and its
   functions of unchanged type (step and vec_step stay NULL: they are called
   through the version 1 table). */
static void s_from_v1(const vl_env_v1_t *v1, vl_env_t *t)
{
    memset(t, 0, sizeof *t);
    t->abi_version = VL_ENV_ABI_VERSION;
    t->name = v1->name;
    t->summary = v1->summary;
    t->n_fields = v1->n_fields;
    memcpy(t->fields, v1->fields, sizeof t->fields);
    t->action = vl_action_discrete(v1->num_actions);
    t->has_solved_return = v1->has_solved_return;
    t->solved_return = v1->solved_return;
    t->create = v1->create;
    t->destroy = v1->destroy;
    t->seed = v1->seed;
    t->reset = v1->reset;
    t->vec_create = v1->vec_create;
    t->vec_destroy = v1->vec_destroy;
    t->vec_seed = v1->vec_seed;
    t->vec_reset = v1->vec_reset;
}

/* Checks the episode figures: count, names (printable, distinct) and the
   function of the table's form. Fills o's figures. */
static int s_check_figures(const vl_env_t *t, vl_env_ops_t *o, int form, char *why, size_t size)
{
    if (t->n_figures > VL_ENV_FIGURES_MAX)
        return vl_why(why, size, "n_figures %u, must be 0..%d", t->n_figures, VL_ENV_FIGURES_MAX);
    for (uint32_t k = 0; k < t->n_figures; k++) {
        if (!vl_figure_name_ok(t->figure_names[k]))
            return vl_why(why, size,
                          "figure %u's name must be 1..%d letters, digits or _ . / - characters", k,
                          VL_ENV_FIGURE_NAME_MAX - 1);
        for (uint32_t j = 0; j < k; j++)
            if (strcmp(t->figure_names[j], t->figure_names[k]) == 0)
                return vl_why(why, size, "figure name '%s' given twice", t->figure_names[k]);
        o->figure_names[k] = t->figure_names[k];
    }
    int has_fn = o->vectorized ? t->vec_figures != NULL : t->figures != NULL;
    if (form && t->n_figures > 0 && !has_fn)
        return vl_why(why, size, "names %u figures but has no %s function", t->n_figures,
                      o->vectorized ? "vec_figures" : "figures");
    o->n_figures = t->n_figures;
    return 0;
}

/* Checks a version 3 table's spec (and its form when form is set) into *o. */
static int s_check_table(const vl_env_t *table, vl_env_ops_t *o, int form, char *why,
                         size_t why_size)
{
    vl_limits_t lim = vl_limits_default();
    char reason[200];
    if (s_check_text(table, why, why_size) != 0 || s_check_fields(table, o, why, why_size) != 0)
        return -1;
    if (vl_action_check(&table->action, &lim, reason, sizeof reason) != 0)
        return vl_why(why, why_size, "%s", reason);
    if (table->has_solved_return && !isfinite(table->solved_return))
        return vl_why(why, why_size, "solved_return is not finite");
    if (form && s_check_form(table, o, why, why_size) != 0)
        return -1;
    if (s_check_figures(table, o, form, why, why_size) != 0)
        return -1;
    o->name = table->name;
    o->summary = table->summary && table->summary[0] ? table->summary : "(no summary)";
    o->action = table->action;
    o->has_solved_return = table->has_solved_return != 0;
    o->solved_return = o->has_solved_return ? table->solved_return : 0;
    return 0;
}

/* The bytes of a version 2 table: version 3's up to its episode figures. */
#define S_V2_SIZE offsetof(vl_env_t, n_figures)

/* Checks a table of any version; a version 1 or 2 table is read into a
   version 3 copy (no figures), kept (for the process, as the plugin it
   describes) only once every check passed. */
static int s_check(const vl_env_t *table, vl_env_ops_t *ops, int form, char *why, size_t why_size)
{
    vl_env_ops_t o = {.table = table};
    vl_env_t converted;
    if (!table)
        return vl_why(why, why_size, "no table");
    if (table->abi_version < 1 || table->abi_version > VL_ENV_ABI_VERSION)
        return vl_why(why, why_size, "built for env ABI version %u, this volley reads 1 to %d",
                      table->abi_version, VL_ENV_ABI_VERSION);
    if (table->abi_version == 1) {
        o.v1 = (const vl_env_v1_t *)table;
        s_from_v1(o.v1, &converted);
        table = &converted;
    } else if (table->abi_version == 2) {
        memset(&converted, 0, sizeof converted);
        memcpy(&converted, table, S_V2_SIZE);
        table = &converted;
    }
    if (s_check_table(table, &o, form, why, why_size) != 0)
        return -1;
    if (table == &converted) {
        vl_env_t *kept = malloc(sizeof *kept);
        if (!kept)
            return vl_why(why, why_size, "no memory for the table");
        *kept = converted;
        o.table = kept;
    }
    *ops = o;
    return 0;
}

int vl_env_check(const vl_env_t *table, vl_env_ops_t *ops, char *why, size_t why_size)
{
    return s_check(table, ops, 1, why, why_size);
}

int vl_env_check_spec(const vl_env_t *table, vl_env_ops_t *ops, char *why, size_t why_size)
{
    return s_check(table, ops, 0, why, why_size);
}

/* ---- built-ins and plugins ---------------------------------------------- */

static const vl_env_t *const s_tables[] = {
    &vl_cartpole_env, &vl_cartpole_masked_env, &vl_catch_env, &vl_catch_pixels_env,
    &vl_pendulum_env, &vl_reach_env,           &vl_memory_env};

#define S_NBUILTIN ((int)(sizeof s_tables / sizeof s_tables[0]))

static vl_env_ops_t s_builtin[S_NBUILTIN];
static pthread_once_t s_builtin_once = PTHREAD_ONCE_INIT;

/* Checks every built-in table once; a refusal is volley's own bug. */
static void s_builtin_init(void)
{
    char why[256];
    for (int i = 0; i < S_NBUILTIN; i++)
        if (vl_env_check(s_tables[i], &s_builtin[i], why, sizeof why) != 0) {
            fprintf(stderr, "volley: built-in env %d refused: %s\n", i, why);
            abort();
        }
}

const vl_env_ops_t *vl_env_find(const char *name)
{
    pthread_once(&s_builtin_once, s_builtin_init);
    for (int i = 0; name && i < S_NBUILTIN; i++)
        if (strcmp(s_builtin[i].name, name) == 0)
            return &s_builtin[i];
    return NULL;
}

/* Returns 1 if name is a plugin's path: it holds a '/' or ends in ".so". */
static int s_is_path(const char *name)
{
    size_t n = strlen(name);
    return strchr(name, '/') != NULL || (n > 3 && strcmp(name + n - 3, ".so") == 0);
}

/* ---- a plugin that crashes --------------------------------------------- */

/* The plugin this thread is inside right now (its path), NULL in volley's own
   code: a fatal signal then names the plugin that raised it. Initial-exec:
   the handler reads it in whatever thread faulted, and in a libvolley.so
   that was dlopen'ed (Python) the default model reaches a thread's copy
   through __tls_get_addr, which may malloc on a thread's first access: in a
   handler for a fault inside malloc that deadlocks instead of ending. */
static _Thread_local const char *volatile s_inside __attribute__((tls_model("initial-exec")));
static struct sigaction s_prior[NSIG]; // the actions our handler replaced
static const int s_fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static const char *const s_fatal_names[] = {"SEGV", "BUS", "FPE", "ILL", "ABRT"};

/* Writes text to stderr with write(2) only: it runs in a signal handler. */
static void s_say(const char *text)
{
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, text, n);
        if (w <= 0)
            return;
        text += w;
        n -= (size_t)w;
    }
}

/* On a fatal signal inside a plugin, says "killed by signal 11 (SIGSEGV) in
   env plugin PATH"; then puts the prior action back and raises the signal
   again, so that the process ends by it when the handler returns: a fault
   alone would recur, but a signal sent (kill, raise) comes only once. */
static void s_on_fatal(int sig)
{
    const char *path = s_inside;
    for (size_t i = 0; path && i < sizeof s_fatal / sizeof s_fatal[0]; i++) {
        if (s_fatal[i] != sig)
            continue;
        char num[4] = {(char)('0' + sig / 10), (char)('0' + sig % 10), 0};
        s_say("volley: killed by signal ");
        s_say(sig < 10 ? num + 1 : num);
        s_say(" (SIG");
        s_say(s_fatal_names[i]);
        s_say(") in env plugin ");
        s_say(path);
        s_say("\n");
    }
    sigaction(sig, &s_prior[sig], NULL);
    raise(sig); // blocked in here: delivered, by the prior action, as the handler returns
}

/* Installs s_on_fatal for the fatal signals, once per process. */
static void s_catch_fatal(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_fatal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof s_fatal / sizeof s_fatal[0]; i++)
        sigaction(s_fatal[i], &sa, &s_prior[s_fatal[i]]);
}

static pthread_once_t s_fatal_once = PTHREAD_ONCE_INIT;

/* Marks the calls into env's code that follow (up to s_left) as the plugin's. */
static inline void s_enter(const vl_env_ops_t *env)
{
    s_inside = env->path;
}

static inline void s_left(void)
{
    s_inside = NULL;
}

/* dlopen's flags: the plugin's own definitions win over same-named ones in
   volley or anything else already loaded (RTLD_DEEPBIND), so a plugin's
   `step`, `reset` or `vl_...` is its own. AddressSanitizer replaces malloc
   in the executable, which a deep-bound library would bypass: those builds
   bind as usual. */
#if defined(__SANITIZE_ADDRESS__)
#define S_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define S_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#endif
#endif
#ifndef S_DLOPEN_FLAGS
#define S_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)
#endif

/* Loads and checks the plugin at path; returns its ops (never freed, the
   library never closed) or NULL after printing why. */
static const vl_env_ops_t *s_load(const char *cmd, const char *path)
{
    char why[256], here[4096];
    // dlopen looks a bare name up in the library path, not here: "libfoo.so" in the current
    // directory means that file, as it would to anyone typing it.
    if (!strchr(path, '/') && access(path, F_OK) == 0 &&
        snprintf(here, sizeof here, "./%s", path) < (int)sizeof here)
        path = here;
    void *lib = dlopen(path, S_DLOPEN_FLAGS);
    if (!lib) {
        fprintf(stderr, "volley %s: cannot load env plugin %s: %s\n", cmd, path, dlerror());
        return NULL;
    }
    const vl_env_t *table = dlsym(lib, VL_ENV_SYMBOL);
    if (!table) {
        fprintf(stderr, "volley %s: %s exports no `%s` table (see include/volley/env.h)\n", cmd,
                path, VL_ENV_SYMBOL);
        return NULL;
    }
    vl_env_ops_t *ops = calloc(1, sizeof *ops);
    char *copy = strdup(path);
    if (!ops || !copy) {
        fprintf(stderr, "volley %s: out of memory loading %s\n", cmd, path);
    } else if (vl_env_check(table, ops, why, sizeof why) != 0) {
        fprintf(stderr, "volley %s: env plugin %s refused: %s\n", cmd, path, why);
    } else {
        ops->path = copy;
        pthread_once(&s_fatal_once, s_catch_fatal);
        return ops;
    }
    free(ops);
    free(copy);
    return NULL;
}

const vl_env_ops_t *vl_env_lookup(const char *cmd, const char *name)
{
    if (!name || !name[0]) {
        fprintf(stderr, "volley %s: --env wants a name or a plugin path (see --help)\n", cmd);
        return NULL;
    }
    const vl_env_ops_t *env = vl_env_find(name);
    if (env)
        return env;
    if (s_is_path(name))
        return s_load(cmd, name);
    fprintf(stderr, "volley %s: unknown --env '%s' (see --help)\n", cmd, name);
    return NULL;
}

void vl_env_print_help(FILE *out, const char *dflt)
{
    pthread_once(&s_builtin_once, s_builtin_init);
    fprintf(out,
            "  --env NAME|PATH    environment: a built-in, or a plugin .so exporting\n"
            "                     `volley_env` (include/volley/env.h)\n"
            "                     (default %s); built in:\n",
            dflt ? dflt : s_builtin[0].name);
    for (int i = 0; i < S_NBUILTIN; i++)
        fprintf(out, "                       %-15s %s\n", s_builtin[i].name, s_builtin[i].summary);
    fprintf(out, "  --env-arg TEXT     %s\n",
            dflt ? "taken as actors take it, unused: no env is created here"
                 : "text handed to the env's create (a ROM path, a level...)");
}

/* ---- N environments stepped together ------------------------------------ */

/* One field of the observation, laid out for the checks: every encoding is
   a range, integer ones whole numbers in it, f32 without a declared range
   [-FLT_MAX, FLT_MAX] (finite). NaN fails every range. */
typedef struct {
    uint32_t offset, count; // floats into the observation, floats in the field
    uint32_t encoding;
    float low, high;
    int whole; // values must be whole numbers
} s_field_t;

struct vl_envs_s {
    const vl_env_ops_t *env;
    const vl_env_t *t; // env->table
    uint32_t n, dim;
    void **states; // per-env form: [n]
    void *vec;     // vectorized form
    uint32_t n_fields;
    s_field_t fields[VL_ENV_FIELDS_MAX];
    vl_obs_check_t obs_check; // what an f32 value outside its declared range does
    float *clipped;           // [n][dims]: box actions within their bounds
    int32_t *choices;         // [n]: a version 1 table's actions
    float *figures;           // [n][n_figures]: the last step's episode figures, or NULL
};

/* Returns the largest value of an integer encoding. */
static float s_max_value(uint32_t encoding)
{
    return encoding == VL_ENV_U8 ? 255.0f : encoding == VL_ENV_U2 ? 3.0f : 1.0f;
}

/* Returns 1 if v is outside [lo, hi]; NaN is. */
static inline int s_out(float v, float lo, float hi)
{
    return !((v >= lo) & (v <= hi));
}

/* Returns 1 if v, in [0, 255], is not a whole number: v + 2^23 - 2^23
   rounds it to one, without a conversion that is undefined for values out
   of range. */
static inline int s_fraction(float v)
{
    return (v + 0x1p23f) - 0x1p23f != v;
}

/* Returns 1 if v breaks field f's rule. */
static inline int s_value_bad(const s_field_t *f, float v)
{
    return s_out(v, f->low, f->high) | (f->whole && s_fraction(v));
}

#define S_LANES 8 // values checked a pass: a fixed count gcc -O2 vectorizes

/* Returns 1 if count values at v all keep field f's rule: passes without
   branches over S_LANES values at a time. */
static int s_values_ok(const s_field_t *f, const float *v, size_t count)
{
    float lo = f->low, hi = f->high;
    int bad = 0;
    size_t k = 0;
    if (f->whole) {
        for (; k + S_LANES <= count; k += S_LANES)
            for (int j = 0; j < S_LANES; j++)
                bad |= s_out(v[k + j], lo, hi) | s_fraction(v[k + j]);
        for (; k < count; k++)
            bad |= s_out(v[k], lo, hi) | s_fraction(v[k]);
    } else {
        for (; k + S_LANES <= count; k += S_LANES)
            for (int j = 0; j < S_LANES; j++)
                bad |= s_out(v[k + j], lo, hi);
        for (; k < count; k++)
            bad |= s_out(v[k], lo, hi);
    }
    return !bad;
}

/* Returns 1 if rows [n][dim] of observations all keep their fields' rules. */
static int s_rows_ok(const vl_envs_t *self, const float *obs, uint32_t n)
{
    if (self->n_fields == 1) // one field: one pass over the block
        return s_values_ok(&self->fields[0], obs, (size_t)n * self->dim);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t fi = 0; fi < self->n_fields; fi++) {
            const s_field_t *f = &self->fields[fi];
            if (!s_values_ok(f, obs + (size_t)i * self->dim + f->offset, f->count))
                return 0;
        }
    return 1;
}

/* Logs the bad value v, at k in field fi of env i's observation. */
static void s_log_bad_value(const vl_envs_t *self, const char *what, uint32_t i, uint32_t fi,
                            uint32_t k, float v)
{
    const s_field_t *f = &self->fields[fi];
    char rule[64];
    if (f->whole)
        snprintf(rule, sizeof rule, "a whole number 0..%g", f->high);
    else if (f->high < FLT_MAX)
        snprintf(rule, sizeof rule, "in [%g, %g]", f->low, f->high);
    else
        snprintf(rule, sizeof rule, "finite");
    vl_error("env '%s': env %u %s wrote obs[%u] = %g, field %u (%s) element %u must be %s%s",
             self->env->name, i, what, f->offset + k, v, fi, vl_obs_encoding_str(f->encoding), k,
             rule,
             !f->whole && f->high < FLT_MAX && v >= -FLT_MAX && v <= FLT_MAX
                 ? " (its declared range; --obs-check warn or off if the env's bounds are "
                   "approximate)"
                 : "");
}

/* Drops the declared ranges of the f32 fields: their values are then only
   checked finite (--obs-check off, or warn once it has warned). */
static void s_drop_ranges(vl_envs_t *self)
{
    for (uint32_t fi = 0; fi < self->n_fields; fi++)
        if (!self->fields[fi].whole)
            self->fields[fi].low = -FLT_MAX, self->fields[fi].high = FLT_MAX;
}

void vl_envs_set_obs_check(vl_envs_t *self, vl_obs_check_t mode)
{
    self->obs_check = mode;
    if (mode == VL_OBS_CHECK_OFF)
        s_drop_ranges(self);
}

/* Takes v, a finite value outside field fi's declared range, under
   --obs-check warn: says so once, then checks only that values are finite. */
static void s_warn_range(vl_envs_t *self, const char *what, uint32_t i, uint32_t fi, uint32_t k,
                         float v)
{
    const s_field_t *f = &self->fields[fi];
    vl_warn("env '%s': env %u %s wrote obs[%u] = %g, outside field %u's declared range [%g, %g]; "
            "--obs-check warn: sent as it is, and said once",
            self->env->name, i, what, f->offset + k, v, fi, f->low, f->high);
    s_drop_ranges(self);
}

/* Checks env i's observation; returns 0, or -1 after logging the first bad
   value. what names the call that wrote it. */
static int s_check_obs(vl_envs_t *self, const char *what, uint32_t i, const float *obs)
{
    for (uint32_t fi = 0; fi < self->n_fields; fi++) {
        const s_field_t *f = &self->fields[fi];
        if (s_values_ok(f, obs + f->offset, f->count))
            continue;
        for (uint32_t k = 0; k < f->count; k++) {
            float v = obs[f->offset + k];
            if (!s_value_bad(f, v))
                continue;
            if (!f->whole && v >= -FLT_MAX && v <= FLT_MAX &&
                self->obs_check != VL_OBS_CHECK_ERROR) {
                s_warn_range(self, what, i, fi, k, v); // only a range was broken
                continue;
            }
            s_log_bad_value(self, what, i, fi, k, v);
            return -1;
        }
    }
    return 0;
}

/* Returns 1 if the reward is finite. */
static inline int s_reward_ok(float r)
{
    return (r >= -FLT_MAX) & (r <= FLT_MAX);
}

/* Checks the reward and the flags env i's call returned. */
static int s_check_outcome(const vl_envs_t *self, const char *what, uint32_t i, float reward,
                           int term, int trunc)
{
    if (!s_reward_ok(reward)) {
        vl_error("env '%s': env %u %s returned reward %g, must be finite", self->env->name, i, what,
                 reward);
        return -1;
    }
    if ((term != 0 && term != 1) || (trunc != 0 && trunc != 1)) {
        int bad_term = term != 0 && term != 1;
        vl_error("env '%s': env %u %s set %s = %d, must be 0 or 1", self->env->name, i, what,
                 bad_term ? "terminated" : "truncated", bad_term ? term : trunc);
        return -1;
    }
    return 0;
}

/* Logs that create (or vec_create) returned NULL. */
static void s_log_create_failed(const vl_envs_t *self, const char *arg)
{
    if (arg)
        vl_error("env '%s' failed to create (--env-arg '%s')", self->env->name, arg);
    else
        vl_error("env '%s' failed to create (no --env-arg)", self->env->name);
}

/* Creates, seeds and resets n environments of the per-env form. */
static int s_start_each(vl_envs_t *self, const char *arg, const uint64_t *seeds, float *obs)
{
    self->states = calloc(self->n, sizeof *self->states);
    if (!self->states) {
        vl_error("env '%s': out of memory for %u envs", self->env->name, self->n);
        return -1;
    }
    for (uint32_t i = 0; i < self->n; i++) {
        float *o = obs + (size_t)i * self->dim;
        s_enter(self->env);
        self->states[i] = self->t->create(arg);
        if (self->states[i]) {
            self->t->seed(self->states[i], seeds[i]);
            self->t->reset(self->states[i], o);
        }
        s_left();
        if (!self->states[i]) {
            s_log_create_failed(self, arg);
            return -1;
        }
        if (s_check_obs(self, "reset", i, o) != 0)
            return -1;
    }
    return 0;
}

/* Creates, seeds and resets n environments of the vectorized form. */
static int s_start_vec(vl_envs_t *self, const char *arg, const uint64_t *seeds, float *obs)
{
    s_enter(self->env);
    self->vec = self->t->vec_create(self->n, arg);
    int rc = 0;
    if (self->vec) {
        self->t->vec_seed(self->vec, seeds);
        rc = self->t->vec_reset(self->vec, obs);
    }
    s_left();
    if (!self->vec) {
        s_log_create_failed(self, arg);
        return -1;
    }
    if (rc != 0) {
        vl_error("env '%s': vec_reset returned %d", self->env->name, rc);
        return -1;
    }
    for (uint32_t i = 0; i < self->n; i++)
        if (s_check_obs(self, "vec_reset", i, obs + (size_t)i * self->dim) != 0)
            return -1;
    return 0;
}

/* Lays the fields out along the observation for the checks. */
static void s_layout(vl_envs_t *self)
{
    const vl_obs_spec_t *spec = &self->env->obs_spec;
    uint32_t offset = 0;
    self->n_fields = spec->n_fields;
    for (uint32_t fi = 0; fi < spec->n_fields; fi++) {
        const vl_obs_field_t *f = &spec->fields[fi];
        uint32_t count = 1;
        for (uint32_t d = 0; d < f->ndim; d++)
            count *= f->shape[d];
        s_field_t *l = &self->fields[fi];
        *l = (s_field_t){.offset = offset, .count = count, .encoding = f->encoding};
        if (f->encoding != VL_ENV_F32)
            l->low = 0, l->high = s_max_value(f->encoding), l->whole = 1;
        else if (self->env->low[fi] < self->env->high[fi])
            l->low = self->env->low[fi], l->high = self->env->high[fi];
        else
            l->low = -FLT_MAX, l->high = FLT_MAX;
        offset += count;
    }
}

vl_envs_t *vl_envs_new(const vl_env_ops_t *env, uint32_t n, const char *arg, const uint64_t *seeds,
                       float *obs)
{
    if (n == 0) {
        vl_error("env '%s': no environments to create", env->name);
        return NULL;
    }
    vl_envs_t *self = calloc(1, sizeof *self);
    if (!self) {
        vl_error("env '%s': out of memory", env->name);
        return NULL;
    }
    *self = (vl_envs_t){.env = env, .t = env->table, .n = n, .dim = env->obs_dim};
    s_layout(self);
    self->clipped = calloc((size_t)n * env->action.dims, sizeof(float));
    self->choices = calloc(n, sizeof(int32_t));
    if (env->n_figures)
        self->figures = calloc((size_t)n * env->n_figures, sizeof(float));
    if (!self->clipped || !self->choices || (env->n_figures && !self->figures)) {
        vl_error("env '%s': out of memory for %u envs", env->name, n);
        vl_envs_destroy(&self);
        return NULL;
    }
    int rc =
        env->vectorized ? s_start_vec(self, arg, seeds, obs) : s_start_each(self, arg, seeds, obs);
    if (rc != 0)
        vl_envs_destroy(&self);
    return self;
}

void vl_envs_destroy(vl_envs_t **self_p)
{
    vl_envs_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    s_enter(self->env);
    if (self->vec)
        self->t->vec_destroy(self->vec);
    for (uint32_t i = 0; self->states && i < self->n; i++)
        if (self->states[i])
            self->t->destroy(self->states[i]);
    s_left();
    free(self->states);
    free(self->clipped);
    free(self->choices);
    free(self->figures);
    free(self);
    *self_p = NULL;
}

/* Steps the per-env form: one call an env, and the reset the vectorized
   form does itself, after keeping the last observation in final_obs. */
static int s_step_each(vl_envs_t *self, const float *actions, float *obs, float *rewards,
                       uint8_t *terminated, uint8_t *truncated, float *final_obs)
{
    const vl_env_t *t = self->t;
    const vl_env_v1_t *v1 = self->env->v1;
    uint32_t dims = self->env->action.dims;
    for (uint32_t i = 0; i < self->n; i++) {
        float *o = obs + (size_t)i * self->dim;
        int term = 0, trunc = 0;
        s_enter(self->env);
        float reward = v1 ? v1->step(self->states[i], (int32_t)actions[i], o, &term, &trunc)
                          : t->step(self->states[i], actions + (size_t)i * dims, o, &term, &trunc);
        s_left();
        if (s_check_outcome(self, "step", i, reward, term, trunc) != 0 ||
            s_check_obs(self, "step", i, o) != 0)
            return -1;
        rewards[i] = reward;
        terminated[i] = (uint8_t)term;
        truncated[i] = (uint8_t)(trunc && !term);
        if (term || trunc) {
            memcpy(final_obs + (size_t)i * self->dim, o, self->dim * sizeof *o);
            s_enter(self->env);
            if (self->figures)
                t->figures(self->states[i], self->figures + (size_t)i * self->env->n_figures);
            t->reset(self->states[i], o);
            s_left();
            if (s_check_obs(self, "reset", i, o) != 0)
                return -1;
        }
    }
    return 0;
}

/* Returns 1 if the vectorized form's rewards and flags are all fine, and
   leaves truncated 0 where terminated is set. */
static int s_outcomes_ok(uint32_t n, const float *rewards, const uint8_t *terminated,
                         uint8_t *truncated)
{
    int bad = 0;
    unsigned flags = 0;
    for (uint32_t i = 0; i < n; i++) {
        bad |= !s_reward_ok(rewards[i]);
        flags |= terminated[i] | truncated[i];
    }
    for (uint32_t i = 0; i < n && flags <= 1; i++)
        truncated[i] &= (uint8_t)!terminated[i];
    return !bad && flags <= 1;
}

/* Finds and logs the first bad value the vectorized form wrote. Returns
   -1, or 0 when there was none after all (--obs-check warn took a value
   outside its range). */
static int s_log_vec_fault(vl_envs_t *self, const float *obs, const float *rewards,
                           const uint8_t *terminated, const uint8_t *truncated,
                           const float *final_obs)
{
    for (uint32_t i = 0; i < self->n; i++) {
        size_t at = (size_t)i * self->dim;
        if (s_check_outcome(self, "vec_step", i, rewards[i], terminated[i], truncated[i]) != 0 ||
            s_check_obs(self, "vec_step", i, obs + at) != 0)
            return -1;
        if ((terminated[i] || truncated[i]) &&
            s_check_obs(self, "vec_step final_obs", i, final_obs + at) != 0)
            return -1;
    }
    return 0;
}

/* Returns 1 if the final observations of the envs whose episode ended are
   fine. */
static int s_final_ok(const vl_envs_t *self, const uint8_t *terminated, const uint8_t *truncated,
                      const float *final_obs)
{
    for (uint32_t i = 0; i < self->n; i++)
        if ((terminated[i] | truncated[i]) &&
            !s_rows_ok(self, final_obs + (size_t)i * self->dim, 1))
            return 0;
    return 1;
}

/* Steps the vectorized form in one call, then checks what it wrote: one
   branch-free pass over each array, a second one to name the culprit. */
static int s_step_vec(vl_envs_t *self, const float *actions, float *obs, float *rewards,
                      uint8_t *terminated, uint8_t *truncated, float *final_obs)
{
    const vl_env_v1_t *v1 = self->env->v1;
    for (uint32_t i = 0; v1 && i < self->n; i++)
        self->choices[i] = (int32_t)actions[i];
    s_enter(self->env);
    int rc =
        v1 ? v1->vec_step(self->vec, self->choices, obs, rewards, terminated, truncated, final_obs)
           : self->t->vec_step(self->vec, actions, obs, rewards, terminated, truncated, final_obs);
    s_left();
    if (rc != 0) {
        vl_error("env '%s': vec_step returned %d", self->env->name, rc);
        return -1;
    }
    if (self->figures) {
        s_enter(self->env);
        self->t->vec_figures(self->vec, self->figures);
        s_left();
    }
    if (s_outcomes_ok(self->n, rewards, terminated, truncated) && s_rows_ok(self, obs, self->n) &&
        s_final_ok(self, terminated, truncated, final_obs))
        return 0;
    return s_log_vec_fault(self, obs, rewards, terminated, truncated, final_obs);
}

int vl_envs_step(vl_envs_t *self, const float *actions, float *obs, float *rewards,
                 uint8_t *terminated, uint8_t *truncated, float *final_obs)
{
    if (vl_action_is_box(&self->env->action)) {
        vl_action_clip(&self->env->action, actions, self->n, self->clipped);
        actions = self->clipped;
    }
    int rc = self->env->vectorized
                 ? s_step_vec(self, actions, obs, rewards, terminated, truncated, final_obs)
                 : s_step_each(self, actions, obs, rewards, terminated, truncated, final_obs);
    size_t nf = (size_t)self->n * self->env->n_figures;
    for (size_t k = 0; rc == 0 && self->figures && k < nf; k++)
        if (!isfinite(self->figures[k])) // none, or a value that cannot travel
            self->figures[k] = NAN;
    return rc;
}

const float *vl_envs_figures(const vl_envs_t *self)
{
    return self->figures;
}
