/*  vl_keeper: a learner's checkpoints in --checkpoint DIR, never lost.
    DIR/<policy>.ckpt is the newest (what --resume continues); with --keep N
    the last N are also kept as DIR/<policy>-v<version>.ckpt, and the one
    with the best mean return so far as DIR/<policy>-best.ckpt. Every
    checkpoint carries the configuration it was trained with (a `config`
    section, INI text: env, observation fields, actions, network size,
    hyperparameters, and its mean return).

    Refused before anything starts (vl_keeper_check): a DIR that already
    holds <policy>.ckpt without --resume (start over with --force, which
    keeps the old file as .bak), --resume with no checkpoint or with one
    that does not read back whole (every size and CRC checked), a DIR that
    cannot be written, and a resume whose checkpoint was trained on other
    observations, actions or network size (naming the field). */
#ifndef VL_KEEPER_H
#define VL_KEEPER_H

#include <stddef.h>

#include "vl_learner_config.h"
#include "vl_resume.h"
#include "vl_returns.h"
#include "vl_engine.h"

typedef struct vl_keeper_s vl_keeper_t;

/* Checks what c's --checkpoint DIR, --resume and --force would do, changing
   nothing; with_spec: c's observation fields and actions are known, and a
   resume is checked against the checkpoint's too. Returns 0, or -1 with a
   one-line why naming the file and the way out. */
int vl_keeper_check(const vl_learner_config_t *c, int with_spec, char *why, size_t why_size);

/* Opens DIR for c->policy's checkpoints after vl_keeper_check: --force
   moves an old checkpoint aside (.bak, .bak.2, ...). Returns NULL with why.
   Caller destroys. */
vl_keeper_t *vl_keeper_new(const vl_learner_config_t *c, char *why, size_t why_size);

/* Loads the newest checkpoint into engine and st (--resume); logs the
   hyperparameters that differ from the checkpoint's. Returns 0, or -1 with
   why (nothing changed then). */
int vl_keeper_load(vl_keeper_t *self, vl_engine_t *engine, vl_resume_state_t *st, char *why,
                   size_t why_size);

/* Saves the engine's state as the newest checkpoint, keeps the last
   --keep, and the best by ret's mean (over at least 10 episodes). Returns
   0, or -1 after logging why (counted: vl_keeper_failures). */
int vl_keeper_save(vl_keeper_t *self, vl_engine_t *engine, const vl_resume_state_t *st,
                   const vl_returns_summary_t *ret);

/* Returns how many saves failed. */
unsigned vl_keeper_failures(const vl_keeper_t *self);

/* Returns the newest checkpoint's path. */
const char *vl_keeper_path(const vl_keeper_t *self);

/* Writes c's configuration as the `config` section's INI text. Returns its
   length, or -1 if it does not fit. */
int vl_keeper_config_text(const vl_learner_config_t *c, char *out, size_t size);

/* Frees it and nulls the pointer; safe on NULL and twice. */
void vl_keeper_destroy(vl_keeper_t **self_p);

#endif
