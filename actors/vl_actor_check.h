/*  vl_actor_check: what the caller of the actor step API hands in, checked
    before anything is recorded: observations against their fields' rules,
    rewards and flags, external actions and log-probs. Each check writes the
    first culprit (env, index, value, rule) into why. */
#ifndef VL_ACTOR_CHECK_H
#define VL_ACTOR_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "../envs/vl_env.h"

/* Parses "error", "warn" or "off". Returns 0 and sets *mode, or -1. */
int vl_obs_check_parse(const char *text, vl_obs_check_t *mode);

/* Each observation value's declared F32 range, and what breaking it does. */
typedef struct {
    vl_obs_check_t mode;
    uint32_t dim;      // values per observation row
    float *low, *high; // [dim], owned; -inf/+inf: no bound on that side
    int warned;        // warn: 1 once the first value outside was logged
} vl_obs_rules_t;

/* Fills rules for ops' observation: low/high [ops->obs_dim] per value when
   not NULL (each low <= high, NaN refused, infinities allowed), else each
   F32 field's declared range for all its values (low == high: none). Returns
   0, or -1 with the reason (rules empty then). */
int vl_obs_rules_init(vl_obs_rules_t *rules, const vl_env_ops_t *ops, vl_obs_check_t mode,
                      const float *low, const float *high, char *why, size_t why_size);

/* Frees what rules holds; safe on an empty or freed one. */
void vl_obs_rules_free(vl_obs_rules_t *rules);

/* Checks observation rows [n][ops->obs_dim]: F32 values finite and inside
   their declared ranges as rules->mode says, U8/U2/U1 values whole numbers
   0..255/3/1. what names the argument. Returns 0, or -1 with the reason
   (naming the env, the field, the element, its value and the range). */
int vl_actor_check_obs(const vl_env_ops_t *ops, vl_obs_rules_t *rules, const char *what,
                       const float *obs, uint32_t n, char *why, size_t why_size);

/* Checks rewards [n] finite and terminated/truncated [n] 0 or 1. Returns 0,
   or -1 with the reason. */
int vl_actor_check_outcomes(uint32_t n, const float *rewards, const uint8_t *terminated,
                            const uint8_t *truncated, char *why, size_t why_size);

/* Checks actions [n][dims] in their space (vl_action_find_bad) and logps [n]
   finite, and <= 0 for discrete kinds (a little above 0 from rounding is
   allowed; a box's density may exceed 1). Returns 0, or -1 with the
   reason. */
int vl_actor_check_actions(uint32_t n, const vl_action_spec_t *space, const float *actions,
                           const float *logps, char *why, size_t why_size);

#endif
