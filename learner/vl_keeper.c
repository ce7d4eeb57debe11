/*  vl_keeper: checkpoints refused, moved aside, kept and never lost. */
#include "vl_keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/vl_ini.h"
#include "../common/vl_log.h"
#include "../messages/vl_spec.h"
#include "../store/vl_checkpoint.h"

#define S_PATH_MAX   4096
#define S_CONFIG_MAX 8192
#define S_KEEP_MAX   1024 // --keep at most
#define S_BEST_MIN   10   // episodes a mean return needs to count as best

struct vl_keeper_s {
    vl_learner_config_t c;
    char dir[S_PATH_MAX], path[S_PATH_MAX + 128], best[S_PATH_MAX + 128];
    float best_return;
    uint64_t *kept; // versions of the numbered checkpoints, a ring of c.keep
    uint32_t n_kept;
    unsigned failures;
};

/* ---- the configuration a checkpoint carries ------------------------------------ */

int vl_keeper_config_text(const vl_learner_config_t *c, char *out, size_t size)
{
    char obs[256], value[64], model[VL_SPEC_MODEL_MAX], why[256], actions[VL_ACTION_TEXT_MAX];
    vl_spec_obs_str(&c->obs_spec, obs, sizeof obs);
    vl_action_key(&c->action, actions, sizeof actions);
    if (vl_learner_config_model(c, NULL, model, why, sizeof why) != 0)
        snprintf(model, sizeof model, "?");
    int n = snprintf(out, size,
                     "# the configuration this checkpoint was trained with\n"
                     "policy = %s\nenv = %s\nobs = %s\nactions = %s\nhidden = %u\nmodel = %s\n"
                     "horizon = %u\n",
                     c->policy, c->env_name[0] ? c->env_name : "?", obs, actions, c->hidden, model,
                     c->horizon);
    for (int i = 0; i < vl_learner_n_opts && n > 0 && (size_t)n < size; i++) {
        const char *name = vl_learner_opts[i].name;
        if (strcmp(name, "hidden") == 0 || strcmp(name, "horizon") == 0)
            continue;
        vl_opt_format(&vl_learner_opts[i], c, value, sizeof value);
        if (strcmp(name, "norm-obs") == 0) // as trained, not "-1": defaults change over time
            snprintf(value, sizeof value, "%d", vl_learner_config_norm_obs(c));
        else if (strcmp(name, "norm-reward") == 0)
            snprintf(value, sizeof value, "%d", vl_learner_config_norm_reward(c));
        n += snprintf(out + n, size - (size_t)n, "%s = %s\n", name, value);
    }
    return n > 0 && (size_t)n < size ? n : -1;
}

/* Key/value pairs of a config text. */
typedef struct {
    char key[64][48], value[64][VL_SPEC_MODEL_MAX];
    int n;
} s_kv_t;

static int s_collect(void *ctx, const char *section, const char *key, const char *value, char *why,
                     size_t why_size)
{
    (void)section, (void)why, (void)why_size;
    s_kv_t *kv = ctx;
    if (kv->n < 64) {
        snprintf(kv->key[kv->n], sizeof kv->key[0], "%s", key);
        snprintf(kv->value[kv->n++], sizeof kv->value[0], "%s", value);
    }
    return 0;
}

/* Returns the value of key in kv, or NULL. */
static const char *s_get(const s_kv_t *kv, const char *key)
{
    for (int i = 0; i < kv->n; i++)
        if (strcmp(kv->key[i], key) == 0)
            return kv->value[i];
    return NULL;
}

/* Reads the config of the checkpoint at path into kv. Returns 0, 1 if it
   has none, -1 with why. */
static int s_read_config(const char *path, s_kv_t *kv, char *why, size_t why_size)
{
    char *text = malloc(S_CONFIG_MAX);
    if (!text) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    int rc = vl_resume_config(path, text, S_CONFIG_MAX, why, why_size);
    kv->n = 0;
    if (rc == 0 && vl_ini_parse_text(path, text, strlen(text), s_collect, kv, why, why_size))
        rc = -1;
    free(text);
    return rc;
}

/* Refuses a resume whose checkpoint was trained on other observations,
   actions or network size. Returns 0, or -1 with why naming the field. */
static int s_check_structure(const char *path, const vl_learner_config_t *c, char *why,
                             size_t why_size)
{
    char mine_text[S_CONFIG_MAX];
    s_kv_t *theirs = calloc(2, sizeof *theirs), *mine = theirs ? theirs + 1 : NULL;
    int rc = -1;
    if (!theirs)
        snprintf(why, why_size, "out of memory");
    else if ((rc = s_read_config(path, theirs, why, why_size)) == 1)
        rc = 0; // a checkpoint from before configs were kept: its shapes are checked on load
    else if (rc < 0) {
        char reason[512];
        snprintf(reason, sizeof reason, "%s", why);
        snprintf(why, why_size, "refusing checkpoint %s: %s", path, reason);
    } else if (rc == 0 && vl_keeper_config_text(c, mine_text, sizeof mine_text) > 0 &&
               vl_ini_parse_text("learner", mine_text, strlen(mine_text), s_collect, mine, why,
                                 why_size) == 0) {
        static const char *const fields[] = {"obs", "actions", "hidden", "model"};
        for (int i = 0; i < 4 && rc == 0; i++) {
            const char *a = s_get(theirs, fields[i]), *b = s_get(mine, fields[i]);
            if (a && b && strcmp(a, b) != 0) {
                snprintf(why, why_size,
                         "%s was trained with %s = %s; this learner has %s = %s (its --env or "
                         "--%s differs): resume with the same, or start over with --force",
                         path, fields[i], a, fields[i], b,
                         strcmp(fields[i], "obs") == 0 || strcmp(fields[i], "actions") == 0
                             ? "env"
                             : fields[i]);
                rc = -1;
            }
        }
    }
    free(theirs);
    return rc;
}

/* ---- refusals before anything starts --------------------------------------------- */

/* Reads and verifies the whole checkpoint at path (every size and CRC), so
   that a corrupt one is refused at start, before the learner waits for a
   broker. Returns 0, or -1 with a one-line why naming the file and the way out. */
static int s_check_intact(const char *path, char *why, size_t why_size)
{
    char reason[512];
    vl_checkpoint_t *ck = vl_checkpoint_read(path, reason, sizeof reason);
    if (ck) {
        vl_checkpoint_destroy(&ck);
        return 0;
    }
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        snprintf(why, why_size,
                 "--resume: refusing checkpoint %s: %s (move it away, or start over with --force, "
                 "which keeps it as %s.bak)",
                 path, reason, path);
    else
        snprintf(why, why_size, "--resume: refusing checkpoint %s: %s (move it away)", path,
                 reason);
    return -1;
}

/* Checks that dir exists as a directory (made if missing) and takes a new
   file. Returns 0, or -1 with why. */
static int s_check_writable(const char *dir, const char *policy, char *why, size_t why_size)
{
    struct stat st;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(why, why_size, "--checkpoint %s: cannot make it: %s", dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, why_size, "--checkpoint %s: not a directory", dir);
        return -1;
    }
    char probe[S_PATH_MAX];
    snprintf(probe, sizeof probe, "%s/.%s.probe.%ld", dir, policy, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int ok = fd >= 0 && write(fd, "x", 1) == 1;
    int err = errno;
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    if (!ok)
        snprintf(why, why_size, "--checkpoint %s: cannot write there: %s", dir, strerror(err));
    return ok ? 0 : -1;
}

int vl_keeper_check(const vl_learner_config_t *c, int with_spec, char *why, size_t why_size)
{
    char path[S_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s.ckpt", c->checkpoint_dir, c->policy);
    int exists = access(path, F_OK) == 0;
    if (c->resume && c->force) {
        snprintf(why, why_size, "--resume and --force contradict each other: choose one");
        return -1;
    }
    if (c->resume && !exists) {
        snprintf(why, why_size,
                 "--resume: there is no checkpoint at %s (drop --resume to start "
                 "a new one)",
                 path);
        return -1;
    }
    if (!c->resume && exists && !c->force) {
        snprintf(why, why_size,
                 "%s holds a checkpoint: --resume to continue it, or --force to start over (the "
                 "old one is kept as %s.bak)",
                 path, path);
        return -1;
    }
    if (s_check_writable(c->checkpoint_dir, c->policy, why, why_size) != 0)
        return -1;
    if (c->resume && s_check_intact(path, why, why_size) != 0)
        return -1;
    return c->resume && with_spec ? s_check_structure(path, c, why, why_size) : 0;
}

/* ---- opening, loading, saving ----------------------------------------------------- */

/* Moves path aside to path.bak (or .bak.2, ...: never over another). */
static int s_move_aside(const char *path, char *why, size_t why_size)
{
    char bak[S_PATH_MAX + 16];
    for (int k = 1; k < 1000; k++) {
        if (k == 1)
            snprintf(bak, sizeof bak, "%s.bak", path);
        else
            snprintf(bak, sizeof bak, "%s.bak.%d", path, k);
        if (link(path, bak) == 0) { // link: never replaces bak
            unlink(path);
            vl_warn("--force: the old checkpoint %s is kept as %s", path, bak);
            return 0;
        }
        if (errno != EEXIST)
            break;
    }
    snprintf(why, why_size, "--force: cannot keep %s aside: %s", path, strerror(errno));
    return -1;
}

vl_keeper_t *vl_keeper_new(const vl_learner_config_t *c, char *why, size_t why_size)
{
    vl_keeper_t *self = calloc(1, sizeof *self);
    uint32_t keep = c->keep ? c->keep : 1;
    if (!self || !(self->kept = calloc(keep > S_KEEP_MAX ? S_KEEP_MAX : keep, sizeof(uint64_t)))) {
        snprintf(why, why_size, "out of memory");
        free(self);
        return NULL;
    }
    self->c = *c;
    self->c.keep = keep > S_KEEP_MAX ? S_KEEP_MAX : keep;
    snprintf(self->dir, sizeof self->dir, "%s", c->checkpoint_dir);
    snprintf(self->path, sizeof self->path, "%s/%s.ckpt", self->dir, c->policy);
    snprintf(self->best, sizeof self->best, "%s/%s-best.ckpt", self->dir, c->policy);
    self->best_return = -INFINITY;
    s_kv_t *kv = calloc(1, sizeof *kv);
    char ignore[256];
    if (kv && access(self->best, F_OK) == 0 &&
        s_read_config(self->best, kv, ignore, sizeof ignore) == 0 && s_get(kv, "mean_return"))
        self->best_return = strtof(s_get(kv, "mean_return"), NULL);
    free(kv);
    if (!c->resume) { // a new run: the old newest and best are moved aside, never replaced
        self->best_return = -INFINITY;
        if ((access(self->path, F_OK) == 0 && s_move_aside(self->path, why, why_size) != 0) ||
            (access(self->best, F_OK) == 0 && s_move_aside(self->best, why, why_size) != 0))
            vl_keeper_destroy(&self);
    }
    return self;
}

int vl_keeper_load(vl_keeper_t *self, vl_engine_t *engine, vl_resume_state_t *st, char *why,
                   size_t why_size)
{
    int rc = vl_resume_load(self->path, self->c.policy, engine, st, why, why_size);
    if (rc > 0)
        snprintf(why, why_size, "no checkpoint at %s", self->path);
    if (rc != 0)
        return -1;
    s_kv_t *theirs = calloc(2, sizeof *theirs), *mine = theirs ? theirs + 1 : NULL;
    char text[S_CONFIG_MAX], ignore[256];
    if (theirs && s_read_config(self->path, theirs, ignore, sizeof ignore) == 0 &&
        vl_keeper_config_text(&self->c, text, sizeof text) > 0 &&
        vl_ini_parse_text("learner", text, strlen(text), s_collect, mine, ignore, sizeof ignore) ==
            0)
        for (int i = 0; i < mine->n; i++) {
            const char *was = s_get(theirs, mine->key[i]);
            if (was && strcmp(was, mine->value[i]) != 0)
                vl_info("resuming with %s = %s (the checkpoint was trained with %s)", mine->key[i],
                        mine->value[i], was);
        }
    const char *was_obs = theirs ? s_get(theirs, "norm-obs") : NULL;
    if (was_obs && strcmp(was_obs, "-1") == 0 && self->c.norm_obs < 0 &&
        vl_learner_config_norm_obs_newly_on(&self->c))
        vl_warn("%s was trained before observations were normalised by default for this model "
                "(an MLP on discrete actions): they are normalised from now on; resume with "
                "--norm-obs 0 to train on as before",
                self->path);
    free(theirs);
    return 0;
}

/* Writes the checkpoint to path with the config and the mean return. */
static int s_write(vl_keeper_t *self, const char *path, vl_engine_t *engine,
                   const vl_resume_state_t *st, const vl_returns_summary_t *ret)
{
    char text[S_CONFIG_MAX];
    int n = vl_keeper_config_text(&self->c, text, sizeof text);
    if (n < 0)
        return -1;
    snprintf(text + n, sizeof text - (size_t)n,
             "version = %llu\nenv_steps = %llu\nmean_return = %.9g\nreturn_window = %u\n",
             (unsigned long long)st->version, (unsigned long long)st->env_steps,
             ret ? (double)ret->mean : 0.0, ret ? ret->n : 0);
    vl_spec_t spec;
    vl_learner_config_spec(&self->c, &spec);
    return vl_resume_save(path, self->c.policy, engine, st, text, &spec);
}

/* Keeps this save as <policy>-v<version>.ckpt and forgets the oldest
   beyond --keep. */
static int s_keep_numbered(vl_keeper_t *self, uint64_t version)
{
    char numbered[S_PATH_MAX + 32];
    snprintf(numbered, sizeof numbered, "%s/%s-v%llu.ckpt", self->dir, self->c.policy,
             (unsigned long long)version);
    if (self->n_kept && self->kept[(self->n_kept - 1) % self->c.keep] == version)
        return 0; // saved again at the same version: kept already
    char why[256];
    if (access(numbered, F_OK) == 0 && s_move_aside(numbered, why, sizeof why) != 0)
        return -1; // another run's (or one resumed from older) at this version: kept aside
    if (link(self->path, numbered) != 0)
        return -1;
    if (self->n_kept >= self->c.keep) {
        char old[S_PATH_MAX + 32];
        snprintf(old, sizeof old, "%s/%s-v%llu.ckpt", self->dir, self->c.policy,
                 (unsigned long long)self->kept[self->n_kept % self->c.keep]);
        unlink(old);
    }
    self->kept[self->n_kept++ % self->c.keep] = version;
    return 0;
}

int vl_keeper_save(vl_keeper_t *self, vl_engine_t *engine, const vl_resume_state_t *st,
                   const vl_returns_summary_t *ret)
{
    int64_t t0 = vl_now_ns();
    int rc = s_write(self, self->path, engine, st, ret);
    if (rc == 0 && self->c.keep > 1)
        rc = s_keep_numbered(self, st->version);
    if (rc == 0 && ret && ret->n >= S_BEST_MIN && ret->mean > self->best_return) {
        rc = s_write(self, self->best, engine, st, ret);
        if (rc == 0)
            self->best_return = ret->mean;
    }
    if (rc != 0) {
        self->failures++;
        vl_error("checkpoint %s not saved (%s)", self->path, strerror(errno));
        return -1;
    }
    vl_info("checkpoint saved: version=%llu env_steps=%llu to %s in %.1f ms",
            (unsigned long long)st->version, (unsigned long long)st->env_steps, self->path,
            (double)(vl_now_ns() - t0) / 1e6);
    return 0;
}

unsigned vl_keeper_failures(const vl_keeper_t *self)
{
    return self->failures;
}

const char *vl_keeper_path(const vl_keeper_t *self)
{
    return self->path;
}

void vl_keeper_destroy(vl_keeper_t **self_p)
{
    vl_keeper_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    free(self->kept);
    free(self);
    *self_p = NULL;
}
