/*  vl_actor_check: what the caller of the actor step API hands in, checked
    before anything is recorded: observations against their fields' rules,
    rewards and flags, external actions and log-probs. Each check writes the
    first culprit (env, index, value, rule) into why. */
#ifndef VL_ACTOR_CHECK_H
#define VL_ACTOR_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "../envs/vl_env.h"

/* Checks observation rows [n][ops->obs_dim]: F32 values finite and inside a
   declared range, U8/U2/U1 values whole numbers 0..255/3/1. what names the
   argument. Returns 0, or -1 with the reason. */
int vl_actor_check_obs(const vl_env_ops_t *ops, const char *what, const float *obs, uint32_t n,
                       char *why, size_t why_size);

/* Checks rewards [n] finite and terminated/truncated [n] 0 or 1. Returns 0,
   or -1 with the reason. */
int vl_actor_check_outcomes(uint32_t n, const float *rewards, const uint8_t *terminated,
                            const uint8_t *truncated, char *why, size_t why_size);

/* Checks actions [n] in 0 .. num_actions - 1 and logps [n] finite and <= 0
   (a little above 0 from rounding is allowed). Returns 0, or -1 with the
   reason. */
int vl_actor_check_actions(uint32_t n, uint32_t num_actions, const int32_t *actions,
                           const float *logps, char *why, size_t why_size);

#endif
