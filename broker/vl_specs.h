/*  vl_specs: the broker's spec of each policy (messages/vl_spec.h). The
    first spec declared for a policy, by an actor's beat or a learner's
    SPEC, is the policy's; a conflicting declaration is refused, and so is
    every segment that does not fit it, each with a reason naming the field.
    A learner's word outranks an actor's: a learner's SPEC replaces a spec
    only actors declared (so no actor, which on an open broker may be anyone,
    can hold a policy's spec against its learner), never another learner's.
    A spec that leaves the network open (an actor following its learner)
    agrees with any network, and is replaced by the first that names one. */
#ifndef VL_SPECS_H
#define VL_SPECS_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_spec.h"

typedef struct vl_specs_s vl_specs_t;

/* Creates a table for up to max policies. Returns NULL on no memory. */
vl_specs_t *vl_specs_new(uint32_t max);

/* Frees the table and nulls the pointer; safe on NULL and twice. */
void vl_specs_destroy(vl_specs_t **self_p);

/* Declares a sender's spec for its policy (`who`: "this actor", "this
   learner"; learner: 1 when the sender is the policy's learner by role).
   Returns 0 when it agrees with the policy's or became it, 1 after writing
   why it conflicts, -1 when the table is full (why written). */
int vl_specs_declare(vl_specs_t *self, const vl_spec_t *spec, const char *who, int learner,
                     char *why, size_t why_size);

/* Returns the spec of a policy, or NULL when none was declared. */
const vl_spec_t *vl_specs_find(const vl_specs_t *self, const char *policy);

/* Returns how many policies have a spec. */
uint32_t vl_specs_count(const vl_specs_t *self);

/* Returns the i-th spec (i < vl_specs_count). */
const vl_spec_t *vl_specs_at(const vl_specs_t *self, uint32_t i);

#endif
