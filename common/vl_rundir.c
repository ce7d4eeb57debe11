/*  vl_rundir: a run's directory, created or reopened, never replaced. */
#include "vl_rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vl_log.h"

#define S_PATH_MAX 1024
#define S_TRIES    1000 // suffixes tried for a generated name, or a file's number

struct vl_rundir_s {
    char path[S_PATH_MAX];
    char name[256];
    int created; // 1: this open made it (not a resumed run's)
};

/* Makes dir and every missing parent (mode 0755). Returns 0, or -1. */
static int s_mkdirs(const char *dir)
{
    char buf[S_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return -1;
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* Makes the run's subdirectories. Returns 0, or -1 with why. */
static int s_subdirs(vl_rundir_t *self, char *why, size_t why_size)
{
    static const char *const subs[] = {"checkpoints", "logs"};
    char dir[S_PATH_MAX + 32];
    for (int i = 0; i < 2; i++) {
        snprintf(dir, sizeof dir, "%s/%s", self->path, subs[i]);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            snprintf(why, why_size, "cannot make %s: %s", dir, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Claims RUNS/NAME (a new directory). Returns 0, 1 if taken, -1 with why. */
static int s_claim(vl_rundir_t *self, const char *runs, const char *name, char *why,
                   size_t why_size)
{
    if (snprintf(self->path, sizeof self->path, "%s/%s", runs, name) >= (int)sizeof self->path ||
        snprintf(self->name, sizeof self->name, "%s", name) >= (int)sizeof self->name) {
        snprintf(why, why_size, "run directory path too long");
        return -1;
    }
    if (mkdir(self->path, 0755) == 0)
        return 0;
    if (errno == EEXIST)
        return 1;
    snprintf(why, why_size, "cannot make %s: %s", self->path, strerror(errno));
    return -1;
}

/* Claims a generated name: time and env, then -2, -3... Returns 0 or -1. */
static int s_claim_generated(vl_rundir_t *self, const char *runs, const char *env, char *why,
                             size_t why_size)
{
    char stamp[32], name[256];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    const char *base = strrchr(env, '/') ? strrchr(env, '/') + 1 : env; // a plugin's path
    for (int k = 1; k <= S_TRIES; k++) {
        if (k == 1)
            snprintf(name, sizeof name, "%s-%.64s", stamp, base);
        else
            snprintf(name, sizeof name, "%s-%.64s-%d", stamp, base, k);
        int rc = s_claim(self, runs, name, why, why_size);
        if (rc <= 0)
            return rc;
    }
    snprintf(why, why_size, "no free run name in %s", runs);
    return -1;
}

vl_rundir_t *vl_rundir_open(const char *runs, const char *name, const char *env, int resume,
                            char *why, size_t why_size)
{
    vl_rundir_t *self = calloc(1, sizeof *self);
    int rc = -1;
    if (!self)
        snprintf(why, why_size, "out of memory");
    else if (s_mkdirs(runs) != 0)
        snprintf(why, why_size, "cannot make %s: %s", runs, strerror(errno));
    else if (!name && resume)
        snprintf(why, why_size, "--resume with a run directory needs --name NAME of the run");
    else if (!name)
        rc = s_claim_generated(self, runs, env, why, why_size);
    else if ((rc = s_claim(self, runs, name, why, why_size)) == 1 && !resume)
        snprintf(why, why_size,
                 "%s exists; choose another --name, or --resume to continue that run", self->path);
    else if (rc == 0 && resume) {
        snprintf(why, why_size, "--resume: there is no run %s to continue", self->path);
        rmdir(self->path);
        rc = -1;
    } else if (rc == 1)
        rc = 0; // resuming an existing run
    if (self)
        self->created = rc == 0 && !resume;
    if (rc == 0 && s_subdirs(self, why, why_size) != 0)
        rc = -1;
    if (rc != 0)
        vl_rundir_destroy(&self);
    return self;
}

const char *vl_rundir_path(const vl_rundir_t *self)
{
    return self->path;
}

const char *vl_rundir_name(const vl_rundir_t *self)
{
    return self->name;
}

int vl_rundir_file(const vl_rundir_t *self, const char *rel, char *out, size_t size)
{
    return snprintf(out, size, "%s/%s", self->path, rel) < (int)size ? 0 : -1;
}

int vl_rundir_create(const vl_rundir_t *self, const char *stem, const char *ext, char *out,
                     size_t size)
{
    for (int k = 1; k <= S_TRIES; k++) {
        int n = k == 1 ? snprintf(out, size, "%s/%s%s", self->path, stem, ext)
                       : snprintf(out, size, "%s/%s-%d%s", self->path, stem, k, ext);
        if (n >= (int)size)
            break;
        int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST) {
            if (fd < 0)
                vl_error("cannot create %s: %s", out, strerror(errno));
            return fd;
        }
    }
    vl_error("cannot create %s/%s%s: every number taken", self->path, stem, ext);
    return -1;
}

/* Unlinks the files in dir whose names start with prefix and end with suffix. */
static void s_unlink_matching(const char *dir, const char *prefix, const char *suffix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[S_PATH_MAX + 300];
    size_t np = strlen(prefix), ns = strlen(suffix);
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n >= np + ns && strncmp(e->d_name, prefix, np) == 0 &&
            strcmp(e->d_name + n - ns, suffix) == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    if (d)
        closedir(d);
}

int vl_rundir_discard(vl_rundir_t *self)
{
    if (!self->created)
        return -1;
    char sub[S_PATH_MAX + 32];
    s_unlink_matching(self->path, "config", ".ini");
    snprintf(sub, sizeof sub, "%s/logs", self->path);
    s_unlink_matching(sub, "", ".log");
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/checkpoints", self->path);
    rmdir(sub);
    return rmdir(self->path);
}

void vl_rundir_destroy(vl_rundir_t **self_p)
{
    if (self_p && *self_p) {
        free(*self_p);
        *self_p = NULL;
    }
}
