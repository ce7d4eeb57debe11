/*  vl_action: a policy's action space (volley/env.h's vl_env_action_t) as
    every part of volley sees it: one discrete choice, several independent
    ones, or a box of real values. Actions travel and are stored as floats,
    `dims` per step, whatever the kind (a discrete choice as a whole number),
    so one array type carries every kind from the env to the loss. */
#ifndef VL_ACTION_H
#define VL_ACTION_H

#include <stddef.h>
#include <stdint.h>

#include "../include/volley/env.h"
#include "vl_wire.h"

typedef vl_env_action_t vl_action_spec_t;

#define VL_ACTION_DIMS_MAX VL_ENV_ACTION_DIMS_MAX
#define VL_ACTION_TEXT_MAX 600 // bytes of vl_action_str's longest text, NUL included

/* Returns the space of one discrete choice among n. */
vl_action_spec_t vl_action_discrete(uint32_t n);

/* Checks a space: a known kind, dims 1 (DISCRETE) or 1 .. VL_ACTION_DIMS_MAX,
   each n[d] 2 .. lim->max_actions (discrete kinds), each box bound finite
   with low < high. Returns 0, or -1 with why ("box dimension 1: low 2 is not
   below high -2"). */
int vl_action_check(const vl_action_spec_t *a, const vl_limits_t *lim, char *why, size_t size);

/* Returns the head outputs a network needs for the space: the sum of n[d]
   (logits, dimension after dimension) for discrete kinds, dims (means) for
   a box (whose log-stds are parameters of their own). */
uint32_t vl_action_outputs(const vl_action_spec_t *a);

/* Returns 1 when a and b are the same space (unused entries ignored). */
int vl_action_equal(const vl_action_spec_t *a, const vl_action_spec_t *b);

/* Writes a space in one line: "discrete(2)", "multi_discrete(3,3,2)",
   "box(2)[-1..1,-2..2]". Returns out. */
const char *vl_action_str(const vl_action_spec_t *a, char *out, size_t size);

/* Writes a space as a config file's `actions` value: "2" for one discrete
   choice among 2 (as configs written before action spaces hold it), else
   vl_action_str's text. Returns out. */
const char *vl_action_key(const vl_action_spec_t *a, char *out, size_t size);

/* Checks n actions [n][dims] against the space: discrete kinds a whole
   number in 0 .. n[d]-1, a box any finite value (a sample before it is
   clipped may leave the bounds). Returns -1 when all fit, else the index
   of the first bad value (i * dims + d). */
long vl_action_find_bad(const vl_action_spec_t *a, const float *actions, size_t n);

/* Clips n box actions [n][dims] into the bounds (out may be actions); for
   discrete kinds copies. */
void vl_action_clip(const vl_action_spec_t *a, const float *actions, size_t n, float *out);

/* Returns 1 for a box space, 0 for the discrete kinds. */
static inline int vl_action_is_box(const vl_action_spec_t *a)
{
    return a->kind == VL_ENV_BOX;
}

#endif
