/*  vl_actor_check: the step API's caller is hostile input. */
#include "vl_actor_check.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int vl_obs_check_parse(const char *text, vl_obs_check_t *mode)
{
    static const char *const names[] = {"error", "warn", "off"};
    for (int i = 0; text && i < 3; i++)
        if (strcmp(text, names[i]) == 0) {
            *mode = (vl_obs_check_t)i;
            return 0;
        }
    return -1;
}

int vl_obs_rules_init(vl_obs_rules_t *rules, const vl_env_ops_t *ops, vl_obs_check_t mode,
                      const float *low, const float *high, char *why, size_t why_size)
{
    memset(rules, 0, sizeof *rules);
    if ((unsigned)mode > VL_OBS_CHECK_OFF)
        return vl_why(why, why_size, "obs_check %d, must be error (0), warn (1) or off (2)",
                      (int)mode);
    if (!low != !high)
        return vl_why(why, why_size, "obs_low and obs_high: give both or neither");
    uint32_t dim = ops->obs_dim;
    rules->low = malloc((dim ? dim : 1) * sizeof(float));
    rules->high = malloc((dim ? dim : 1) * sizeof(float));
    if (!rules->low || !rules->high) {
        vl_obs_rules_free(rules);
        return vl_why(why, why_size, "out of memory");
    }
    rules->mode = mode;
    rules->dim = dim;
    uint32_t k = 0;
    for (uint32_t fi = 0; fi < ops->obs_spec.n_fields; fi++) {
        int ranged =
            ops->obs_spec.fields[fi].encoding == VL_ENV_F32 && ops->low[fi] < ops->high[fi];
        for (uint32_t j = 0, count = s_count(&ops->obs_spec.fields[fi]); j < count; j++, k++) {
            rules->low[k] = low ? low[k] : ranged ? ops->low[fi] : -INFINITY;
            rules->high[k] = high ? high[k] : ranged ? ops->high[fi] : INFINITY;
            if (!(rules->low[k] <= rules->high[k])) { // NaN too
                vl_obs_rules_free(rules);
                return vl_why(why, why_size, "obs bounds: value %u has low %g, high %g", k,
                              low ? low[k] : 0, high ? high[k] : 0);
            }
        }
    }
    return 0;
}

void vl_obs_rules_free(vl_obs_rules_t *rules)
{
    free(rules->low);
    free(rules->high);
    rules->low = rules->high = NULL;
}

/* Writes field fi's element j as an index into its shape ("[2, 3]"). */
static void s_element(const vl_obs_field_t *f, uint32_t j, char *out, size_t size)
{
    uint32_t idx[VL_OBS_NDIM_MAX];
    for (uint32_t d = f->ndim; d-- > 0;) {
        idx[d] = j % f->shape[d];
        j /= f->shape[d];
    }
    size_t n = (size_t)snprintf(out, size, "[");
    for (uint32_t d = 0; d < f->ndim && n < size; d++)
        n += (size_t)snprintf(out + n, size - n, "%s%u", d ? ", " : "", idx[d]);
    if (n < size)
        snprintf(out + n, size - n, "]");
}

/* Checks value v at k (element j of field fi) of row i. Returns 0, or -1 with why. */
static int s_check_value(const vl_env_ops_t *ops, vl_obs_rules_t *rules, const char *what,
                         uint32_t i, uint32_t fi, uint32_t j, uint32_t k, float v, char *why,
                         size_t why_size)
{
    const vl_obs_field_t *f = &ops->obs_spec.fields[fi];
    uint32_t enc = f->encoding;
    if (enc != VL_ENV_F32) {
        float max = enc == VL_ENV_U8 ? 255.0f : enc == VL_ENV_U2 ? 3.0f : 1.0f;
        if ((v >= 0 && v <= max) && floorf(v) == v)
            return 0;
        return vl_why(why, why_size, "%s[%u][%u] = %g: field %u must be a whole number 0..%g (%s)",
                      what, i, k, v, fi, max, vl_obs_encoding_str(enc));
    }
    if (!(v >= -FLT_MAX && v <= FLT_MAX))
        return vl_why(why, why_size, "%s[%u][%u] = %g: field %u must be finite", what, i, k, v, fi);
    float lo = rules->low[k], hi = rules->high[k];
    if (rules->mode == VL_OBS_CHECK_OFF || (v >= lo && v <= hi))
        return 0;
    char el[64];
    s_element(f, j, el, sizeof el);
    char text[320];
    snprintf(text, sizeof text,
             "%s[%u][%u] = %g: field %u element %s is outside its declared range [%g, %g] "
             "(--obs-check warn or off if the env's bounds are approximate)",
             what, i, k, v, fi, el, lo, hi);
    if (rules->mode == VL_OBS_CHECK_ERROR)
        return vl_why(why, why_size, "%s", text);
    if (!rules->warned)
        vl_warn("%s; --obs-check warn: sent as it is, and this is said once", text);
    rules->warned = 1;
    return 0;
}

int vl_actor_check_obs(const vl_env_ops_t *ops, vl_obs_rules_t *rules, const char *what,
                       const float *obs, uint32_t n, char *why, size_t why_size)
{
    for (uint32_t i = 0; i < n; i++) {
        const float *row = obs + (size_t)i * ops->obs_dim;
        uint32_t k = 0;
        for (uint32_t fi = 0; fi < ops->obs_spec.n_fields; fi++) {
            uint32_t count = s_count(&ops->obs_spec.fields[fi]);
            for (uint32_t j = 0; j < count; j++, k++)
                if (s_check_value(ops, rules, what, i, fi, j, k, row[k], why, why_size) != 0)
                    return -1;
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

int vl_actor_check_actions(uint32_t n, const vl_action_spec_t *space, const float *actions,
                           const float *logps, char *why, size_t why_size)
{
    long bad = vl_action_find_bad(space, actions, n);
    if (bad >= 0) {
        uint32_t d = (uint32_t)(bad % space->dims), i = (uint32_t)(bad / space->dims);
        if (space->kind == VL_ENV_BOX)
            return vl_why(why, why_size, "actions[%u][%u] = %g, must be finite", i, d,
                          actions[bad]);
        return vl_why(why, why_size, "actions[%u][%u] = %g, must be a whole number 0..%u", i, d,
                      actions[bad], space->n[d] - 1);
    }
    int box = vl_action_is_box(space);
    for (uint32_t i = 0; i < n; i++)
        if (!(logps[i] >= -FLT_MAX && (box ? logps[i] <= FLT_MAX : logps[i] <= S_LOGP_SLACK)))
            return vl_why(why, why_size, "logps[%u] = %g, must be a finite log-probability%s", i,
                          logps[i], box ? "" : " <= 0");
    return 0;
}
