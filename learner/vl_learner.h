/*  vl_learner: a learner process's engine. An ingest thread receives segments
    from the broker, validates them and decodes them straight into the
    segmented buffer; the train thread waits for a batch, recomputes values
    and log-probs with the current weights, computes V-trace targets and
    advantages, takes clipped-surrogate PPO steps with Adam on minibatches,
    and publishes the new weights version and its progress. */
#ifndef VL_LEARNER_H
#define VL_LEARNER_H

#include "vl_learner_config.h"

typedef struct vl_learner_s vl_learner_t;

typedef struct vl_engine_s vl_engine_t;

/* Creates a learner training with engine (taken, destroyed with the
   learner or at once on failure; NULL: the C engine for config), connects
   it and starts its ingest thread. Returns NULL after logging why. Caller
   destroys. */
vl_learner_t *vl_learner_new(const vl_learner_config_t *config, vl_engine_t *engine);

/* Trains until vl_interrupted is set. Returns 0, or -1 on error. */
int vl_learner_run(vl_learner_t *self);

/* Stops the ingest thread, frees the learner and nulls the pointer; safe on
   NULL and twice. */
void vl_learner_destroy(vl_learner_t **self_p);

/* The `volley learner` command with the C engine (vl_learner_main_engine
   with no open). Returns the process exit code. */
int vl_learner_main(int argc, char **argv);

#endif
