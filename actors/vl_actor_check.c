/*  vl_actor_check: the step API's caller is hostile input. */
#include "vl_actor_check.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

#include "../common/vl_log.h"

#define S_LOGP_SLACK 1e-4f // log-softmax in float can round a sure action's log-prob above 0

/* Returns the values of one field. */
static uint32_t s_count(const vl_obs_field_t *f)
{
    uint32_t count = 1;
    for (uint32_t d = 0; d < f->ndim; d++)
        count *= f->shape[d];
    return count;
}

/* Returns 1 if v breaks field fi's rule, and the rule in text. */
static int s_bad(const vl_env_ops_t *ops, uint32_t fi, float v, char *rule, size_t rule_size)
{
    uint32_t enc = ops->obs_spec.fields[fi].encoding;
    if (enc == VL_ENV_F32) {
        float lo = ops->low[fi], hi = ops->high[fi];
        if (lo < hi) {
            snprintf(rule, rule_size, "in [%g, %g]", lo, hi);
            return !(v >= lo && v <= hi);
        }
        snprintf(rule, rule_size, "finite");
        return !(v >= -FLT_MAX && v <= FLT_MAX);
    }
    float max = enc == VL_ENV_U8 ? 255.0f : enc == VL_ENV_U2 ? 3.0f : 1.0f;
    snprintf(rule, rule_size, "a whole number 0..%g (%s)", max, vl_obs_encoding_str(enc));
    return !(v >= 0 && v <= max) || floorf(v) != v;
}

int vl_actor_check_obs(const vl_env_ops_t *ops, const char *what, const float *obs, uint32_t n,
                       char *why, size_t why_size)
{
    char rule[64];
    for (uint32_t i = 0; i < n; i++) {
        const float *row = obs + (size_t)i * ops->obs_dim;
        uint32_t k = 0;
        for (uint32_t fi = 0; fi < ops->obs_spec.n_fields; fi++) {
            uint32_t count = s_count(&ops->obs_spec.fields[fi]);
            for (uint32_t j = 0; j < count; j++, k++)
                if (s_bad(ops, fi, row[k], rule, sizeof rule))
                    return vl_why(why, why_size, "%s[%u][%u] = %g: field %u must be %s", what, i, k,
                                  row[k], fi, rule);
        }
    }
    return 0;
}

int vl_actor_check_outcomes(uint32_t n, const float *rewards, const uint8_t *terminated,
                            const uint8_t *truncated, char *why, size_t why_size)
{
    for (uint32_t i = 0; i < n; i++) {
        if (!(rewards[i] >= -FLT_MAX && rewards[i] <= FLT_MAX))
            return vl_why(why, why_size, "rewards[%u] = %g, must be finite", i, rewards[i]);
        if (terminated[i] > 1)
            return vl_why(why, why_size, "terminated[%u] = %u, must be 0 or 1", i, terminated[i]);
        if (truncated[i] > 1)
            return vl_why(why, why_size, "truncated[%u] = %u, must be 0 or 1", i, truncated[i]);
    }
    return 0;
}

int vl_actor_check_actions(uint32_t n, uint32_t num_actions, const int32_t *actions,
                           const float *logps, char *why, size_t why_size)
{
    for (uint32_t i = 0; i < n; i++) {
        if (actions[i] < 0 || (uint32_t)actions[i] >= num_actions)
            return vl_why(why, why_size, "actions[%u] = %d, must be 0..%u", i, actions[i],
                          num_actions - 1);
        if (!(logps[i] >= -FLT_MAX && logps[i] <= S_LOGP_SLACK))
            return vl_why(why, why_size, "logps[%u] = %g, must be a finite log-probability <= 0", i,
                          logps[i]);
    }
    return 0;
}
