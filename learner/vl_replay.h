/*  vl_replay: which segments each update trains on, and when a segment's
    slot goes back to the buffer.
    - on-policy (retain = 0): each batch taken from the buffer is trained on
      (epochs passes inside the trainer) and released, PufferLib-style;
    - ring (retain = N): new segments join a ring of the N most recent, each
      update samples a batch from the ring in proportion to priority
      (sum |advantage|)^alpha with importance weights, and V-trace corrects
      for the policy having moved on.
    Either way a segment more than max_lag versions old is dropped and
    counted. The ring and its sampler belong to the train thread alone. */
#ifndef VL_REPLAY_H
#define VL_REPLAY_H

#include <stdint.h>

#include "../messages/vl_codec.h"
#include "../store/vl_buffer.h"
#include "vl_learner_config.h"

typedef struct vl_replay_s vl_replay_t;

/* Creates the replay policy of config over buf (not owned). Returns NULL
   on no memory. */
vl_replay_t *vl_replay_new(const vl_learner_config_t *config, vl_buffer_t *buf);

/* Frees the replay state (its slots stay with the buffer) and nulls the
   pointer; safe on NULL and twice. */
void vl_replay_destroy(vl_replay_t **self_p);

/* Chooses the next update's segments at weights version `version`, waiting
   up to timeout_ms for new data: fills segs[] and lags[] (batch_segments
   room each) and, in ring mode, importance weights w[] (else sets *w_used
   to 0). Returns how many, 0 if nothing to train on yet. */
int vl_replay_next(vl_replay_t *self, uint64_t version, int timeout_ms, const vl_segment_t **segs,
                   uint32_t *lags, float *w, int *w_used);

/* Says no more segments will come (the step budget is spent): on-policy,
   vl_replay_next then takes what waits rather than wait for a full batch. */
void vl_replay_set_last(vl_replay_t *self);

/* Ends the update vl_replay_next prepared: adv_sums[i] is segment i's new
   sum of |advantage| (its priority in ring mode). */
void vl_replay_done(vl_replay_t *self, const float *adv_sums);

/* Returns how many segments were dropped as too old. */
uint64_t vl_replay_stale(const vl_replay_t *self);

#endif
