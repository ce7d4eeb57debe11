/*  vl_rundir: a run's directory, RUNS/NAME: config.ini, checkpoints/,
    logs/, metrics, the recording. A run directory is never replaced: a new
    run takes a new name (a generated one gets a suffix), and only a resumed
    run goes on in an existing one, adding files beside the old (logs and
    the configuration get a new number; nothing is overwritten). */
#ifndef VL_RUNDIR_H
#define VL_RUNDIR_H

#include <stddef.h>

typedef struct vl_rundir_s vl_rundir_t;

/* Opens RUNS/NAME, creating RUNS if needed. name NULL: "<YYYYmmdd-HHMMSS>-
   <env>", with "-2", "-3"... while taken. A given name that exists is
   refused unless resume (which needs it to exist). Returns the run
   directory (caller destroys), or NULL with why. */
vl_rundir_t *vl_rundir_open(const char *runs, const char *name, const char *env, int resume,
                            char *why, size_t why_size);

/* Returns the directory's path, e.g. "runs/20261124-181500-cartpole". */
const char *vl_rundir_path(const vl_rundir_t *self);

/* Returns the run's name. */
const char *vl_rundir_name(const vl_rundir_t *self);

/* Writes "DIR/rel" into out. Returns 0, or -1 if it does not fit. */
int vl_rundir_file(const vl_rundir_t *self, const char *rel, char *out, size_t size);

/* Creates a new file DIR/<stem><ext>, or DIR/<stem>-<k><ext> when taken
   (a resumed run), exclusively. Returns its descriptor (caller closes) and
   sets out to its path, or -1 after logging why. */
int vl_rundir_create(const vl_rundir_t *self, const char *stem, const char *ext, char *out,
                     size_t size);

/* Removes a run directory this open created (not a resumed one) when
   nothing ran in it: its config files and logs, then its empty
   checkpoints/ and logs/ and itself (anything else there keeps it). Returns
   0 when it is gone, -1 when it stays. */
int vl_rundir_discard(vl_rundir_t *self);

/* Frees it and nulls the pointer; safe on NULL and twice. */
void vl_rundir_destroy(vl_rundir_t **self_p);

#endif
