/*  vl_segarray: one array of a batch of segments, the layout volley/learner.h's
    vl_transport_array_t and volley/engine.h's VL_ENGINE_STATE describe,
    segment after segment: what both the transport's held batch and an
    engine's batch serve. Each segment's share is sized from its own fields
    (horizon, obs_dim, obs_row_bytes, action.dims, state_size). */
#ifndef VL_SEGARRAY_H
#define VL_SEGARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_codec.h"

/* Returns the bytes of segment s's share of array (episode arrays: its own
   count), 0 for an unknown array. */
size_t vl_segarray_bytes_of(const vl_segment_t *s, int array);

/* Returns the bytes of array over segs[0 .. n). */
size_t vl_segarray_bytes(const vl_segment_t *const *segs, uint32_t n, int array);

/* Returns segment s's array held in place (OBS_ROWS, the step arrays, the
   episode arrays, the state), or NULL for the others. */
const void *vl_segarray_in_place(const vl_segment_t *s, int array);

/* Copies array of segs[0 .. n), in order, into out (out_size >=
   vl_segarray_bytes). Returns 0, or -1 for an unknown array or a small
   out. */
int vl_segarray_gather(const vl_segment_t *const *segs, uint32_t n, int array, void *out,
                       size_t out_size);

#endif
