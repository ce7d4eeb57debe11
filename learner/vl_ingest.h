/*  vl_ingest: one received segment into the learner's buffer: decoded
    straight into a free slot, checked against what this learner trains
    (policy, horizon, actions, observation fields) and committed, or refused
    with the reason. Shared by the live learner's ingest thread and the
    offline (replay) learner, so both accept exactly the same segments. */
#ifndef VL_INGEST_H
#define VL_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_codec.h"
#include "../store/vl_buffer.h"
#include "vl_learner_config.h"

/* Called with an accepted segment just before it is committed (after that
   its slot belongs to the trainer). */
typedef void (*vl_ingest_fn)(void *ctx, const vl_segment_t *seg);

/* Why a segment was refused, for the learner's books. */
typedef struct {
    uint32_t actor_id;             // UINT32_MAX when the segment did not decode
    char why[VL_REFUSAL_TEXT_MAX]; // the decoder's reason, or the field that differs
} vl_ingest_refusal_t;

/* Decodes data into a slot of buf and, when it fits config (policy,
   horizon, action space, observation fields) and buf (its state size),
   stamps its recv_ns, calls accept (if not NULL) and commits it; on a
   refusal the slot is given back and, if refusal is not NULL, it says why
   ("horizon 32, learner serves 64"). Returns VL_OK or the reason
   (VL_ETOOBIG when every slot is busy). */
vl_reason_t vl_ingest(vl_buffer_t *buf, const vl_learner_config_t *config, const vl_limits_t *lim,
                      const uint8_t *data, size_t size, int64_t recv_ns, vl_ingest_fn accept,
                      void *ctx, vl_ingest_refusal_t *refusal);

#endif
