/*  vl_publication: weights from outside code (include/volley/learner.h's
    publish), checked before anything is sent: every tensor as any receiver
    of a Weights message checks it (printable unique names, ranks 1 to 4,
    sizes within the wire's limits, finite floats), optionally that they are
    exactly volley's MLP that C actors load, and the encoded message decoded
    back under the receivers' limits, so an actor never refuses what was
    sent. */
#ifndef VL_PUBLICATION_H
#define VL_PUBLICATION_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_codec.h"
#include "../models/vl_policy.h"
#include "volley/learner.h"

/* Checks n caller tensors (1 .. VL_TRANSPORT_TENSORS_MAX) and, when mlp is
   not NULL, that they are all of mlp's tensors by name and shape and no
   others. Fills out[n] (data pointing into the caller's). Returns 0, or -1
   after writing why (the tensor and what is wrong with it). */
int vl_publication_check(const vl_transport_tensor_t *in, uint32_t n, vl_policy_t *mlp,
                         vl_tensor_t *out, char *why, size_t why_size);

/* Encodes checked tensors as policy's Weights `version` and decodes the
   message back under the default limits. Returns 0 and sets *buf (caller
   frees) and *size, or -1 after writing why. */
int vl_publication_encode(const char *policy, uint64_t version, const vl_tensor_t *tensors,
                          uint32_t n, uint8_t **buf, size_t *size, char *why, size_t why_size);

#endif
