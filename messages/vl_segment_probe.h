/*  vl_segment_probe: what the segment tests do to a segment again and again,
    in one place: encode it and decode it back into fresh storage of exactly
    the size its shape needs (so AddressSanitizer sees any write past it). */
#ifndef VL_SEGMENT_PROBE_H
#define VL_SEGMENT_PROBE_H

#include <stdlib.h>

#include "vl_codec.h"

/* Returns the array storage seg's shape needs: its horizon, observation
   fields, action width and state. */
static inline size_t vl_probe_cap(const vl_segment_t *seg)
{
    return vl_segment_arrays_size(seg->horizon, &seg->obs_spec, seg->action.dims, seg->state_size);
}

/* Encodes seg and decodes it with default limits into *out and new storage
   of vl_probe_cap bytes (*arrays, caller frees). Returns the reason,
   VL_EREASONS (and *arrays NULL) if the encoder refused it. */
static inline vl_reason_t vl_probe_encode_decode(const vl_segment_t *seg, vl_segment_t *out,
                                                 void **arrays)
{
    uint8_t *buf;
    size_t size, cap = vl_probe_cap(seg);
    *arrays = NULL;
    if (vl_segment_encode(seg, &buf, &size) != 0)
        return VL_EREASONS;
    vl_limits_t lim = vl_limits_default();
    *arrays = malloc(cap ? cap : 1);
    vl_reason_t r = *arrays ? vl_segment_decode(buf, size, &lim, out, *arrays, cap) : VL_ETOOBIG;
    free(buf);
    return r;
}

/* Returns the decoder's reason for seg encoded (VL_EREASONS if the encoder
   refused it). */
static inline vl_reason_t vl_probe_round_trip(const vl_segment_t *seg)
{
    vl_segment_t out;
    void *arrays;
    vl_reason_t r = vl_probe_encode_decode(seg, &out, &arrays);
    free(arrays);
    return r;
}

#endif
