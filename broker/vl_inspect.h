/*  vl_inspect: the broker's check of what it is about to forward. A segment
    is decoded in full into a scratch buffer (or, with header-only
    inspection, just its header); a publication's topic must be a valid policy
    id whose weights decode for that same policy, or the stats topic with
    stats that decode. Anything else gets a named reason. */
#ifndef VL_INSPECT_H
#define VL_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_codec.h"

typedef struct vl_inspect_s vl_inspect_t;

/* Creates an inspector; full = 0 checks segment headers only. The scratch
   grows to the largest segment seen, never past max_arrays bytes (a larger
   one is VL_ETOOBIG). Returns NULL on no memory. */
vl_inspect_t *vl_inspect_new(int full, size_t max_arrays);

/* Frees the inspector and nulls the pointer; safe on NULL and twice. */
void vl_inspect_destroy(vl_inspect_t **self_p);

/* Checks a segment; on VL_OK fills seg's header (its arrays point into the
   scratch until the next call, or are NULL with header-only inspection). */
vl_reason_t vl_inspect_segment(vl_inspect_t *self, const uint8_t *data, size_t size,
                               vl_segment_t *seg);

/* Checks a segment like vl_inspect_segment, its arrays at most ceiling
   bytes: a larger one is VL_ETOOBIG with *over set (else *over is 0), and
   the scratch never grows past the ceiling for it. */
vl_reason_t vl_inspect_segment_within(vl_inspect_t *self, const uint8_t *data, size_t size,
                                      size_t ceiling, vl_segment_t *seg, int *over);

/* Reads, without decoding the rest, what a segment message declares: its
   policy id (NUL-terminated) and the decompressed size of its payload.
   Returns 0, or -1 when they cannot be read or the id breaks
   vl_policy_id_valid (the full check then says why). */
int vl_inspect_declared(const uint8_t *data, size_t size, char policy[VL_POLICY_ID_MAX],
                        uint64_t *raw_size);

/* What a checked publication said. */
typedef struct {
    int is_stats;     // 1: a learner's stats (below); 0: weights
    vl_stats_t stats; // when is_stats
    uint64_t version; // weights version, when !is_stats
} vl_publication_t;

/* Checks a [topic][body] publication from a learner; on VL_OK fills *out. */
vl_reason_t vl_inspect_publication(vl_inspect_t *self, const uint8_t *topic, size_t topic_len,
                                   const uint8_t *body, size_t body_len, vl_publication_t *out);

#endif
