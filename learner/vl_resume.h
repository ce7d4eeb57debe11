/*  vl_resume: a learner's checkpoint: weights (as a Weights message, so the
    same validation applies), both nets' Adam state, and the counters and RNG
    state that make a resumed run continue its curve and its version
    numbers. Written atomically by vl_checkpoint; a corrupt or truncated
    file is refused with its reason and never loaded. */
#ifndef VL_RESUME_H
#define VL_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vl_rng.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_spec.h"
#include "vl_engine.h"

/* The scalars a checkpoint carries besides weights and optimizer. */
typedef struct {
    uint64_t version;   // weights version published last
    uint64_t trained;   // segments trained on
    uint64_t env_steps; // steps in every valid segment ingested
    uint64_t episodes;
    vl_rng_t rng; // the engine's minibatch RNG
} vl_resume_state_t;

/* Writes the engine's published tensors and optimizer bytes, st, (if not NULL) the
   configuration text it was trained with and (if not NULL) the policy's
   spec (its observation fields, actions and model, which rebuild the
   network: `volley eval` and `volley export` read it) to path for
   policy_id. Returns 0, or -1 after logging why. */
int vl_resume_save(const char *path, const char *policy_id, vl_engine_t *engine,
                   const vl_resume_state_t *st, const char *config, const vl_spec_t *spec);

/* Writes a learner's checkpoint to path: n tensors (ranks 1 to 4, every
   dimension kept) as policy_id's weights at st->version, the optimizer's
   opt_size bytes, st, (if not NULL) the configuration text and (if not
   NULL) the policy's spec. What vl_resume_save writes for an engine, from
   tensors held anywhere. Returns 0, or -1 after logging why. */
int vl_resume_write(const char *path, const char *policy_id, const vl_tensor_t *tensors, uint32_t n,
                    const void *opt, size_t opt_size, const vl_resume_state_t *st,
                    const char *config, const vl_spec_t *spec);

/* Reads the weights of the checkpoint at path, every section verified and
   every tensor checked as a Weights message is (shapes of rank 1 to 4
   kept), and, when spec is not NULL, its policy's spec (checked as the
   wire's) into *spec, *has_spec saying whether it has one (checkpoints
   from before specs were kept have none). Returns the weights (caller
   destroys), or NULL with a one-line why naming the file. */
vl_weights_t *vl_resume_read_weights(const char *path, vl_spec_t *spec, int *has_spec, char *why,
                                     size_t why_size);

/* Copies the `config` section of the checkpoint at path into out (NUL
   ended). Returns 0; 1 when it has none (written before volley kept one);
   -1 with why (unreadable, corrupt, too long). */
int vl_resume_config(const char *path, char *out, size_t size, char *why, size_t why_size);

/* Loads path into the engine and st after checking everything: the file,
   the policy id, the weights' shapes and values, the optimizer's size (as
   the engine checks them).
   Returns 0; 1 if there is no file at path; -1 with the reason in
   why[why_size] (nothing is changed then). */
int vl_resume_load(const char *path, const char *policy_id, vl_engine_t *engine,
                   vl_resume_state_t *st, char *why, size_t why_size);

#endif
