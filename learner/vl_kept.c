/*  vl_kept: a kept policy: the weights section of a learner's checkpoint,
    checked into volley's MLP, and the env its run was trained on. */
#include "vl_kept.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/vl_ini.h"
#include "../common/vl_rng.h"
#include "../models/vl_dist.h"
#include "vl_resume.h"

#define S_LAYERS     3 // linear layers per net, as models/vl_policy.c builds them
#define S_TENSORS    12
#define S_POLICY_DEF "default"

/* Returns 1 if path is a directory, 0 otherwise. */
static int s_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Returns 1 if path is a regular file, 0 otherwise. */
static int s_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Copies src into dst[size]. Returns 0, or -1 if it does not fit. */
static int s_copy(char *dst, size_t size, const char *src)
{
    int n = snprintf(dst, size, "%s", src);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Finds the checkpoint of policy in run directory dir: in the checkpoint
   directory its config.ini records (ckdir, "" when none), else
   checkpoints/P.ckpt, else P.ckpt (dir itself a --checkpoint DIR).
   Returns 0, or -1 with why. */
static int s_find_in_run(const char *dir, const char *ckdir, const char *policy, char *out,
                         size_t size, char *why, size_t why_size)
{
    char a[VL_KEPT_PATH_MAX], b[VL_KEPT_PATH_MAX], c[VL_KEPT_PATH_MAX] = "";
    snprintf(a, sizeof a, "%s/checkpoints/%s.ckpt", dir, policy);
    snprintf(b, sizeof b, "%s/%s.ckpt", dir, policy);
    if (ckdir[0] && snprintf(c, sizeof c, "%s/%s.ckpt", ckdir, policy) >= (int)sizeof c)
        c[0] = '\0'; // too long to be there
    const char *found = c[0] && s_is_file(c) ? c : s_is_file(a) ? a : s_is_file(b) ? b : NULL;
    if (!found) {
        snprintf(why, why_size, "no checkpoint of policy '%s' in %s (looked for %s%s%s and %s)",
                 policy, dir, c, c[0] ? ", " : "", a, b);
        return -1;
    }
    if (s_copy(out, size, found) != 0) {
        snprintf(why, why_size, "path too long: %s", found);
        return -1;
    }
    return 0;
}

#define S_RANKS 4 // sections env is read from: [up] 3, [actor] 2, [learner] 1, others 0

typedef struct {
    char env[S_RANKS][VL_KEPT_PATH_MAX];
    char arg[S_RANKS][VL_KEPT_PATH_MAX];
    char checkpoint[VL_KEPT_PATH_MAX]; // [up]'s checkpoint = DIR: where the run kept them
    char plugin[VL_KEPT_PATH_MAX];     // [env]'s path: the plugin it trained on
    vl_file_id_t plugin_id;            // [env]'s bytes and crc32c
    int id_keys;                       // of those two, how many read well (bit each)
} s_config_t;

/* Reads [env]'s bytes (decimal) or crc32c (8 hex digits) into c; text that
   is not one is as if unsaid (the plugin then counts as unrecorded). */
static void s_on_plugin_id(s_config_t *c, const char *key, const char *value)
{
    char *end;
    errno = 0;
    int crc = strcmp(key, "crc32c") == 0;
    if (!crc && strcmp(key, "bytes") != 0)
        return;
    unsigned long long v = strtoull(value, &end, crc ? 16 : 10);
    if (errno || end == value || *end || !isxdigit((unsigned char)*value) ||
        (crc && (strlen(value) != 8)))
        return;
    if (crc)
        c->plugin_id.crc32c = (uint32_t)v;
    else
        c->plugin_id.bytes = v;
    c->id_keys |= crc ? 2 : 1;
}

/* vl_ini callback: keeps env and env-arg of every role's section and
   [up]'s checkpoint; other keys are the run's business. */
static int s_on_config(void *ctx, const char *section, const char *key, const char *value,
                       char *why, size_t why_size)
{
    (void)why, (void)why_size;
    s_config_t *c = ctx;
    int rank = strcmp(section, "up") == 0        ? 3
               : strcmp(section, "actor") == 0   ? 2
               : strcmp(section, "learner") == 0 ? 1
                                                 : 0;
    if (strcmp(section, "env") == 0) {
        if (strcmp(key, "path") == 0 && s_copy(c->plugin, sizeof c->plugin, value) != 0)
            c->plugin[0] = '\0';
        s_on_plugin_id(c, key, value);
    } else if (strcmp(key, "env") == 0)
        s_copy(c->env[rank], sizeof c->env[rank], value);
    else if (strcmp(key, "env-arg") == 0 || strcmp(key, "env_arg") == 0)
        s_copy(c->arg[rank], sizeof c->arg[rank], value);
    else if (strcmp(key, "checkpoint") == 0 && rank == 3 &&
             s_copy(c->checkpoint, sizeof c->checkpoint, value) != 0)
        c->checkpoint[0] = '\0'; // too long to be a path: as if unsaid
    return 0;
}

/* Finds the newest configuration of run into path[size]: config-K.ini of
   the highest K (a resumed run's), else config.ini. */
static void s_newest_config(const char *run, char *path, size_t size)
{
    snprintf(path, size, "%s/config.ini", run);
    for (int k = 2; k <= 1000; k++) {
        char next[VL_KEPT_PATH_MAX];
        if (snprintf(next, sizeof next, "%s/config-%d.ini", run, k) >= (int)sizeof next ||
            !s_is_file(next))
            return;
        s_copy(path, size, next);
    }
}

/* Reads the env of the run whose directory is run into self (from its
   newest config*.ini): [up]'s, else [actor]'s, else [learner]'s, with the
   plugin identity [env] records for it; and where it kept its checkpoints
   into ckdir[size] ("" when it does not say). A missing or unreadable
   configuration leaves env unknown (""): the caller asks for --env then. */
static void s_read_config(vl_kept_t *self, const char *run, char *ckdir, size_t size)
{
    char path[VL_KEPT_PATH_MAX], why[512];
    s_newest_config(run, path, sizeof path);
    s_config_t *c = calloc(1, sizeof *c);
    if (ckdir)
        ckdir[0] = '\0';
    if (!c || !s_is_file(path) || vl_ini_parse(path, s_on_config, c, why, sizeof why) != 0) {
        free(c);
        return;
    }
    if (ckdir)
        s_copy(ckdir, size, c->checkpoint);
    for (int rank = S_RANKS - 1; rank >= 1; rank--)
        if (c->env[rank][0]) {
            s_copy(self->env, sizeof self->env, c->env[rank]);
            s_copy(self->env_arg, sizeof self->env_arg, c->arg[rank]);
            break;
        }
    if (c->id_keys == 3 && self->env[0] && strcmp(c->plugin, self->env) == 0) {
        self->has_env_id = 1;
        self->env_id = c->plugin_id;
    }
    free(c);
}

/* Returns the run directory a checkpoint file sits in (RUN/checkpoints/
   P.ckpt -> RUN) into run[size], or "" when it is not in one. */
static void s_run_of_file(const char *file, char *run, size_t size)
{
    char copy[VL_KEPT_PATH_MAX];
    run[0] = '\0';
    if (s_copy(copy, sizeof copy, file) != 0)
        return;
    char *dir = dirname(copy);
    char dir_copy[VL_KEPT_PATH_MAX];
    if (s_copy(dir_copy, sizeof dir_copy, dir) != 0)
        return;
    if (strcmp(basename(dir_copy), "checkpoints") == 0)
        snprintf(run, size, "%s/..", dir);
}

/* Returns w's tensor named name, or NULL. */
static const vl_tensor_t *s_tensor(const vl_weights_t *w, const char *name)
{
    for (uint32_t i = 0; i < w->n_tensors; i++)
        if (strncmp(w->tensors[i].name, name, sizeof w->tensors[i].name) == 0)
            return &w->tensors[i];
    return NULL;
}

/* Checks that w's tensor name is [rows][cols] (cols 0: a vector of rows),
   every dimension compared. Returns 0, or -1 with why. */
static int s_expect(const vl_weights_t *w, const char *name, uint32_t rows, uint32_t cols,
                    char *why, size_t why_size)
{
    const vl_tensor_t *t = s_tensor(w, name);
    vl_tensor_t want = {.ndim = 0};
    uint32_t dims[2] = {rows, cols};
    char theirs[64], needs[64];
    if (!t) {
        snprintf(why, why_size, "no tensor %s: not volley's MLP", name);
        return -1;
    }
    if (vl_tensor_set_shape(&want, cols ? 2 : 1, dims) != 0 || !vl_tensor_same_shape(t, &want)) {
        snprintf(why, why_size, "tensor %s is %s, volley's MLP needs %s", name,
                 vl_tensor_shape_str(t, theirs, sizeof theirs),
                 vl_tensor_shape_str(&want, needs, sizeof needs));
        return -1;
    }
    return 0;
}

int vl_kept_arch(const vl_weights_t *w, uint32_t *obs_dim, uint32_t *num_actions, uint32_t *hidden,
                 char *why, size_t why_size)
{
    const vl_tensor_t *first = s_tensor(w, "pi.0.weight"), *last = s_tensor(w, "pi.2.weight");
    if (!first || !last || first->ndim != 2 || last->ndim != 2) {
        snprintf(why, why_size, "no 2-d tensors pi.0.weight and pi.2.weight: not volley's MLP");
        return -1;
    }
    if (w->n_tensors != S_TENSORS) {
        snprintf(why, why_size, "%u tensors, volley's MLP has %u", w->n_tensors, S_TENSORS);
        return -1;
    }
    uint32_t h = first->rows, in = first->cols, a = last->rows;
    static const char *const nets[] = {"pi", "v"};
    for (int k = 0; k < 2; k++)
        for (uint32_t layer = 0; layer < S_LAYERS; layer++) {
            uint32_t out = layer < S_LAYERS - 1 ? h : k == 0 ? a : 1;
            uint32_t cols = layer == 0 ? in : h;
            char name[64];
            snprintf(name, sizeof name, "%s.%u.weight", nets[k], layer);
            if (s_expect(w, name, out, cols, why, why_size) != 0)
                return -1;
            snprintf(name, sizeof name, "%s.%u.bias", nets[k], layer);
            if (s_expect(w, name, out, 0, why, why_size) != 0)
                return -1;
        }
    *obs_dim = in, *num_actions = a, *hidden = h;
    return 0;
}

/* Resolves path (file or run) to the checkpoint file and the run's env.
   Returns 0, or -1 with why. */
static int s_locate(vl_kept_t *self, const char *path, const char *policy, char *why,
                    size_t why_size)
{
    char run[VL_KEPT_PATH_MAX], ckdir[VL_KEPT_PATH_MAX];
    if (s_is_dir(path)) {
        s_read_config(self, path, ckdir, sizeof ckdir);
        return s_find_in_run(path, ckdir, policy ? policy : S_POLICY_DEF, self->checkpoint,
                             sizeof self->checkpoint, why, why_size);
    }
    if (!s_is_file(path)) {
        snprintf(why, why_size, "%s: no such checkpoint file or run directory", path);
        return -1;
    }
    if (s_copy(self->checkpoint, sizeof self->checkpoint, path) != 0) {
        snprintf(why, why_size, "path too long: %s", path);
        return -1;
    }
    s_run_of_file(path, run, sizeof run);
    if (run[0])
        s_read_config(self, run, NULL, 0);
    return 0;
}

/* Builds the network the checkpoint's spec names and checks that the kept
   weights are exactly its tensors (loading them). Returns the network
   (caller destroys), or NULL with why. */
static vl_policy_t *s_spec_policy(const vl_kept_t *self, char *why, size_t why_size)
{
    char model[VL_SPEC_MODEL_MAX];
    vl_spec_model(&self->spec, model, sizeof model);
    vl_model_spec_t *spec = vl_model_spec_parse_for(model, &self->spec.obs_spec, why, why_size);
    vl_policy_t *p = spec ? vl_policy_new_spec(spec, &self->spec.obs_spec, &self->spec.action, 0, 0,
                                               why, why_size)
                          : NULL;
    vl_model_spec_destroy(&spec);
    if (p && (vl_policy_load(p, self->weights) != 0 ||
              self->weights->n_tensors != vl_policy_tensor_count(p))) {
        char mismatch[256];
        vl_policy_mismatch(p, self->weights, mismatch, sizeof mismatch);
        snprintf(why, why_size, "its weights are not the network its spec names (%.200s): %.300s",
                 model, strcmp(mismatch, "they fit") == 0 ? "other tensors besides" : mismatch);
        vl_policy_destroy(&p);
    }
    return p;
}

/* Reads the sizes off the checkpoint's spec, its weights checked against
   the network it names, which self then holds (building a conv net twice
   would cost its initial weights twice). Returns 0, or -1 with why. */
static int s_spec_arch(vl_kept_t *self, char *why, size_t why_size)
{
    vl_policy_t *p = s_spec_policy(self, why, why_size);
    if (!p)
        return -1;
    self->obs_dim = vl_policy_obs_dim(p);
    self->num_actions = vl_policy_num_actions(p);
    self->action = self->spec.action;
    self->hidden = self->spec.hidden;
    self->policy = p; // checked with the weights in: what vl_kept_policy hands over
    return 0;
}

/* Returns 1 if the checkpoint's spec names a PyTorch module of the user's
   own (torch:MOD:FN: a model spec of no layers), else 0. */
static int s_spec_is_torch(const vl_kept_t *self)
{
    char model[VL_SPEC_MODEL_MAX];
    vl_spec_model(&self->spec, model, sizeof model);
    vl_model_spec_t *spec = vl_model_spec_parse(model, NULL, 0);
    int torch = spec && vl_model_spec_count(spec) == 0;
    vl_model_spec_destroy(&spec);
    return torch;
}

/* Reads the sizes of a torch:MOD:FN checkpoint off its spec, building no
   network (only Python builds the module; its tensors are its own).
   Returns 0, or -1 with why when the spec gives no observation or the
   checkpoint no tensors. */
static int s_torch_arch(vl_kept_t *self, char *why, size_t why_size)
{
    const vl_obs_spec_t *obs = &self->spec.obs_spec;
    uint64_t dim = 0;
    for (uint32_t i = 0; i < obs->n_fields; i++) {
        uint64_t n = 1;
        for (uint32_t d = 0; d < obs->fields[i].ndim; d++)
            n *= obs->fields[i].shape[d];
        dim += n;
    }
    if (dim == 0 || dim > UINT32_MAX || self->weights->n_tensors == 0) {
        snprintf(why, why_size, "its spec gives %llu observation values and it keeps %u tensors",
                 (unsigned long long)dim, self->weights->n_tensors);
        return -1;
    }
    self->torch = 1;
    self->obs_dim = (uint32_t)dim;
    self->num_actions = vl_action_outputs(&self->spec.action);
    self->action = self->spec.action;
    self->hidden = 0; // no MLP: the spec's hidden is a placeholder
    return 0;
}

/* Reads the kept network's sizes: off the spec (a C network built and
   checked, or a torch module's spec alone), else off volley's MLP's
   tensors. Returns 0, or -1 with why. */
static int s_arch(vl_kept_t *self, char *why, size_t why_size)
{
    if (!self->has_spec)
        return vl_kept_arch(self->weights, &self->obs_dim, &self->num_actions, &self->hidden, why,
                            why_size);
    return s_spec_is_torch(self) ? s_torch_arch(self, why, why_size)
                                 : s_spec_arch(self, why, why_size);
}

vl_kept_t *vl_kept_load(const char *path, const char *policy, char *why, size_t why_size)
{
    vl_kept_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(why, why_size, "no memory");
        return NULL;
    }
    char reason[1024];
    if (s_locate(self, path, policy, why, why_size) != 0)
        goto err;
    self->weights =
        vl_resume_read_weights(self->checkpoint, &self->spec, &self->has_spec, why, why_size);
    if (!self->weights)
        goto err;
    if (policy && strncmp(self->weights->policy_id, policy, VL_POLICY_ID_MAX) != 0) {
        snprintf(why, why_size, "%s holds policy '%.63s', not '%s'", self->checkpoint,
                 self->weights->policy_id, policy);
        goto err;
    }
    if (s_arch(self, reason, sizeof reason) != 0) {
        snprintf(why, why_size, "%s: %s", self->checkpoint, reason);
        goto err;
    }
    if (!self->has_spec)
        self->action = vl_action_discrete(self->num_actions);
    return self;
err:
    vl_kept_destroy(&self);
    return NULL;
}

void vl_kept_destroy(vl_kept_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_weights_destroy(&(*self_p)->weights);
    vl_policy_destroy(&(*self_p)->policy);
    free(*self_p);
    *self_p = NULL;
}

const char *vl_kept_model(const vl_kept_t *self, char *out, size_t size)
{
    if (self->has_spec)
        vl_spec_model(&self->spec, out, size);
    else
        snprintf(out, size, "linear(%u) tanh linear(%u) tanh", self->hidden, self->hidden);
    return out;
}

vl_policy_t *vl_kept_policy(vl_kept_t *self)
{
    char why[256];
    vl_policy_t *held = self->policy;
    if (held) {
        self->policy = NULL;
        return held;
    }
    if (self->torch)
        return NULL;
    if (self->has_spec)
        return s_spec_policy(self, why, sizeof why);
    vl_policy_t *p = vl_policy_new(self->obs_dim, self->num_actions, self->hidden, 0);
    if (p && vl_policy_load(p, self->weights) != 0)
        vl_policy_destroy(&p); // vl_kept_arch checked every shape: no memory is left
    return p;
}

/* Forward pass of p over n observations into logp [n][a] and values: a
   discrete kind's log-probabilities, each dimension's over its own n[d]
   choices in turn; a box's means as they are. Returns 0 or -1 on no
   memory. */
static int s_forward(vl_policy_t *p, const vl_action_spec_t *action, uint32_t n, uint32_t a,
                     const float *obs, float *logp, float *values)
{
    float *logits = malloc((size_t)n * a * sizeof *logits);
    if (!logits || vl_policy_forward(p, n, obs, logits, values) != 0) {
        free(logits);
        return -1;
    }
    for (uint32_t i = 0; logp && i < n; i++) {
        const float *in = logits + (size_t)i * a;
        float *out = logp + (size_t)i * a;
        if (vl_action_is_box(action)) {
            memcpy(out, in, a * sizeof *out);
            continue;
        }
        for (uint32_t d = 0, at = 0; d < action->dims; at += action->n[d++])
            vl_log_softmax(in + at, action->n[d], out + at);
    }
    free(logits);
    return 0;
}

int vl_kept_forward(const char *path, uint32_t n, uint32_t obs_dim, uint32_t num_actions,
                    const float *obs, float *logp, float *values, char *why, size_t why_size)
{
    vl_kept_t *kept = vl_kept_load(path, NULL, why, why_size);
    if (!kept)
        return -1;
    int rc = -1;
    vl_policy_t *p = NULL;
    char model[VL_SPEC_MODEL_MAX];
    if (kept->torch)
        snprintf(why, why_size, "%s: its model %.200s is a PyTorch module; only Python runs it",
                 kept->checkpoint, vl_kept_model(kept, model, sizeof model));
    else if (kept->obs_dim != obs_dim || kept->num_actions != num_actions)
        snprintf(why, why_size, "the policy takes %u observations and %u actions, not %u and %u",
                 kept->obs_dim, kept->num_actions, obs_dim, num_actions);
    else if (!(p = vl_kept_policy(kept)) ||
             s_forward(p, &kept->action, n, num_actions, obs, logp, values) != 0)
        snprintf(why, why_size, "no memory");
    else
        rc = 0;
    vl_policy_destroy(&p);
    vl_kept_destroy(&kept);
    return rc;
}

int vl_kept_tensor(const char *path, const char *name, float *out, size_t n, char *why,
                   size_t why_size)
{
    vl_kept_t *kept = vl_kept_load(path, NULL, why, why_size);
    if (!kept)
        return -1;
    const vl_tensor_t *t = s_tensor(kept->weights, name);
    size_t elems = t ? vl_tensor_size(t) : 0;
    int rc = -1;
    if (!t)
        snprintf(why, why_size, "no tensor %s", name);
    else if (elems != n)
        snprintf(why, why_size, "tensor %s has %zu values, not %zu", name, elems, n);
    else {
        memcpy(out, t->data, n * sizeof *out);
        rc = 0;
    }
    vl_kept_destroy(&kept);
    return rc;
}

int vl_kept_fits(const vl_kept_t *kept, const vl_env_ops_t *env, char *why, size_t why_size)
{
    char mine[VL_ACTION_TEXT_MAX], theirs[VL_ACTION_TEXT_MAX];
    if (env->obs_dim != kept->obs_dim || !vl_action_equal(&env->action, &kept->action)) {
        snprintf(why, why_size,
                 "the policy in %s takes %u observations and acts in %.200s; env %s gives %u and "
                 "%.200s",
                 kept->checkpoint, kept->obs_dim, vl_action_str(&kept->action, mine, sizeof mine),
                 env->name, env->obs_dim, vl_action_str(&env->action, theirs, sizeof theirs));
        return -1;
    }
    if (kept->has_spec && !vl_obs_spec_equal(&kept->spec.obs_spec, &env->obs_spec)) {
        vl_spec_obs_str(&kept->spec.obs_spec, mine, sizeof mine);
        vl_spec_obs_str(&env->obs_spec, theirs, sizeof theirs);
        snprintf(why, why_size, "the policy in %s reads observations %s; env %s gives %s",
                 kept->checkpoint, mine, env->name, theirs);
        return -1;
    }
    return 0;
}

/* Loads the plugin a run recorded, after checking that it is still the
   file trained on. Returns its ops, or NULL after one line saying why. */
static const vl_env_ops_t *s_recorded_plugin(const char *cmd, const vl_kept_t *kept)
{
    const vl_file_id_t *want = &kept->env_id;
    vl_file_id_t now;
    if (!kept->has_env_id) {
        fprintf(stderr,
                "volley %s: %s was trained on the plugin %s, but its run records no size and "
                "CRC-32C to check it against (an older run, or an edited [env]): name it with "
                "--env %s\n",
                cmd, kept->checkpoint, kept->env, kept->env);
        return NULL;
    }
    if (vl_file_id(kept->env, &now) != 0) {
        fprintf(stderr,
                "volley %s: %s was trained on the plugin %s (%llu bytes, crc32c %08x), which "
                "cannot be read now (%s): build it there again, or name one with --env PATH\n",
                cmd, kept->checkpoint, kept->env, (unsigned long long)want->bytes, want->crc32c,
                strerror(errno));
        return NULL;
    }
    if (!vl_file_id_same(&now, want)) {
        fprintf(stderr,
                "volley %s: the plugin %s changed since %s was trained on it: %llu bytes, "
                "crc32c %08x, where the run recorded %llu bytes, crc32c %08x; build it as it "
                "was, or name one with --env PATH\n",
                cmd, kept->env, kept->checkpoint, (unsigned long long)now.bytes, now.crc32c,
                (unsigned long long)want->bytes, want->crc32c);
        return NULL;
    }
    return vl_env_lookup(cmd, kept->env);
}

const vl_env_ops_t *vl_kept_env(const char *cmd, const char *given, const vl_kept_t *kept,
                                int *none)
{
    *none = 0;
    if (given)
        return vl_env_lookup(cmd, given);
    if (!kept->env[0]) {
        *none = 1;
        return NULL;
    }
    const vl_env_ops_t *env = vl_env_find(kept->env);
    if (!env && (strchr(kept->env, '/') || strstr(kept->env, ".so")))
        return s_recorded_plugin(cmd, kept);
    if (!env)
        fprintf(stderr,
                "volley %s: %s was trained on env '%s', which is not a built-in: name it with "
                "--env NAME|PATH.so|package.module:function\n",
                cmd, kept->checkpoint, kept->env);
    return env;
}

/* Returns the end of the identifier (letters, digits, '_', and '.' between
   parts when dots) at p, or p when there is none. */
static const char *s_ident(const char *p, int dots)
{
    const char *q = p;
    if (!isalpha((unsigned char)*q) && *q != '_')
        return p;
    while (isalnum((unsigned char)*q) || *q == '_' || (dots && *q == '.' && q[1] && q[1] != '.'))
        q++;
    return q;
}

int vl_kept_is_python_env(const char *name)
{
    if (!name || vl_env_find(name))
        return 0;
    const char *colon = s_ident(name, 1);
    if (colon == name || *colon != ':')
        return 0;
    const char *end = s_ident(colon + 1, 0);
    return end != colon + 1 && *end == '\0';
}

const char *vl_kept_python_env(const char *given, const vl_kept_t *kept)
{
    if (given)
        return vl_kept_is_python_env(given) ? given : NULL;
    return vl_kept_is_python_env(kept->env) ? kept->env : NULL;
}

const char *vl_kept_info(const vl_kept_t *self, uint32_t dims[3], uint64_t *version)
{
    dims[0] = self->obs_dim, dims[1] = self->num_actions, dims[2] = self->hidden;
    *version = self->weights->version;
    return self->env;
}

const char *vl_kept_policy_id(const vl_kept_t *self)
{
    return self->weights->policy_id;
}

void vl_kept_action(const vl_kept_t *self, vl_env_action_t *action)
{
    *action = self->action;
}

int vl_kept_is_torch(const vl_kept_t *self)
{
    return self->torch;
}

int vl_kept_field(const vl_kept_t *self, uint32_t i, vl_env_field_t *field)
{
    vl_obs_spec_t flat = vl_obs_spec_flat(self->obs_dim);
    const vl_obs_spec_t *obs = self->has_spec ? &self->spec.obs_spec : &flat;
    if (i >= obs->n_fields)
        return -1;
    const vl_obs_field_t *f = &obs->fields[i];
    memset(field, 0, sizeof *field);
    field->encoding = f->encoding;
    field->ndim = f->ndim;
    memcpy(field->shape, f->shape, f->ndim * sizeof f->shape[0]);
    return 0;
}

uint32_t vl_kept_tensor_count(const vl_kept_t *self)
{
    return self->weights->n_tensors;
}

const char *vl_kept_tensor_at(const vl_kept_t *self, uint32_t i, uint32_t dims[4], uint32_t *ndim,
                              const float **data)
{
    if (i >= self->weights->n_tensors)
        return NULL;
    const vl_tensor_t *t = &self->weights->tensors[i];
    *ndim = vl_tensor_dims(t, dims);
    *data = t->data;
    return t->name;
}

/* Returns the network self holds, built on first use; NULL on no memory. */
static vl_policy_t *s_held(vl_kept_t *self)
{
    if (!self->policy)
        self->policy = vl_kept_policy(self);
    return self->policy;
}

int vl_kept_logits(vl_kept_t *self, uint32_t n, const float *obs, float *logits)
{
    return vl_kept_step(self, n, obs, NULL, NULL, logits);
}

uint32_t vl_kept_state_size(vl_kept_t *self)
{
    vl_policy_t *p = s_held(self);
    return p ? vl_policy_state_size(p) : 0;
}

int vl_kept_step(vl_kept_t *self, uint32_t n, const float *obs, float *state, const uint8_t *first,
                 float *logits)
{
    vl_policy_t *p = s_held(self);
    if (!p)
        return -1;
    if (vl_policy_state_size(p) == 0)
        state = NULL, first = NULL;
    return vl_policy_forward_seq(p, n, 1, obs, state, first, logits, NULL, state) != 0 ? -1 : 0;
}

void vl_kept_seed(uint64_t seed, uint64_t state[4])
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    memcpy(state, rng.s, sizeof rng.s);
}

int vl_kept_pick(vl_kept_t *self, uint32_t n, const float *outputs, int greedy, uint64_t state[4],
                 float *actions)
{
    vl_policy_t *p = s_held(self);
    if (!p)
        return -1;
    const vl_action_spec_t *a = &self->action;
    uint32_t width = vl_action_outputs(a);
    vl_rng_t rng;
    memcpy(rng.s, state, sizeof rng.s);
    for (uint32_t i = 0; i < n; i++) {
        const float *z = outputs + (size_t)i * width;
        float *act = actions + (size_t)i * a->dims, logp;
        if (greedy)
            vl_dist_greedy(a, z, act);
        else
            vl_dist_sample(a, z, vl_policy_logstd(p), &rng, act, &logp);
    }
    memcpy(state, rng.s, sizeof rng.s);
    return 0;
}
