/*  vl_action: a policy's action space; see vl_action.h. */
#include "vl_action.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

vl_action_spec_t vl_action_discrete(uint32_t n)
{
    vl_action_spec_t a = {.kind = VL_ENV_DISCRETE, .dims = 1};
    a.n[0] = n;
    return a;
}

/* Writes a formatted reason into why and returns -1. */
__attribute__((format(printf, 3, 4))) static int s_why(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (why && size)
        vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return -1;
}

int vl_action_check(const vl_action_spec_t *a, const vl_limits_t *lim, char *why, size_t size)
{
    if (a->kind > VL_ENV_BOX)
        return s_why(why, size,
                     "action kind %u; expected 0 (discrete), 1 (multi-discrete) or 2 "
                     "(box)",
                     a->kind);
    if (a->kind == VL_ENV_DISCRETE && a->dims != 1)
        return s_why(why, size, "a discrete action space has dims %u; expected 1", a->dims);
    if (a->dims < 1 || a->dims > VL_ACTION_DIMS_MAX)
        return s_why(why, size, "action dims %u; expected 1..%d", a->dims, VL_ACTION_DIMS_MAX);
    for (uint32_t d = 0; d < a->dims; d++) {
        if (a->kind != VL_ENV_BOX && (a->n[d] < 2 || a->n[d] > lim->max_actions))
            return s_why(why, size, "action dimension %u has %u choices; expected 2..%u", d,
                         a->n[d], lim->max_actions);
        if (a->kind == VL_ENV_BOX &&
            !(isfinite(a->low[d]) && isfinite(a->high[d]) && a->low[d] < a->high[d]))
            return s_why(why, size,
                         "box dimension %u: bounds [%g, %g]; expected finite, low < high", d,
                         a->low[d], a->high[d]);
    }
    return 0;
}

uint32_t vl_action_outputs(const vl_action_spec_t *a)
{
    if (a->kind == VL_ENV_BOX)
        return a->dims;
    uint32_t sum = 0;
    for (uint32_t d = 0; d < a->dims && d < VL_ACTION_DIMS_MAX; d++)
        sum += a->n[d];
    return sum;
}

int vl_action_equal(const vl_action_spec_t *a, const vl_action_spec_t *b)
{
    if (a->kind != b->kind || a->dims != b->dims || a->dims > VL_ACTION_DIMS_MAX)
        return 0;
    for (uint32_t d = 0; d < a->dims; d++) {
        if (a->kind != VL_ENV_BOX && a->n[d] != b->n[d])
            return 0;
        if (a->kind == VL_ENV_BOX && (a->low[d] != b->low[d] || a->high[d] != b->high[d]))
            return 0;
    }
    return 1;
}

const char *vl_action_str(const vl_action_spec_t *a, char *out, size_t size)
{
    static const char *const kinds[] = {"discrete", "multi_discrete", "box"};
    size_t len = 0;
    uint32_t dims = a->dims > VL_ACTION_DIMS_MAX ? VL_ACTION_DIMS_MAX : a->dims;
    if (!size)
        return out;
    out[0] = 0;
#define S_PUT(...)                                                                                 \
    do {                                                                                           \
        if (len < size)                                                                            \
            len += (size_t)snprintf(out + len, size - len, __VA_ARGS__);                           \
    } while (0)
    S_PUT("%s(", a->kind <= VL_ENV_BOX ? kinds[a->kind] : "unknown");
    if (a->kind == VL_ENV_BOX) {
        S_PUT("%u)[", a->dims);
        for (uint32_t d = 0; d < dims; d++)
            S_PUT("%s%g..%g", d ? "," : "", a->low[d], a->high[d]);
        S_PUT("]");
    } else {
        for (uint32_t d = 0; d < dims; d++)
            S_PUT("%s%u", d ? "," : "", a->n[d]);
        S_PUT(")");
    }
#undef S_PUT
    return out;
}

const char *vl_action_key(const vl_action_spec_t *a, char *out, size_t size)
{
    if (a->kind == VL_ENV_DISCRETE && size) {
        snprintf(out, size, "%u", a->n[0]);
        return out;
    }
    return vl_action_str(a, out, size);
}

long vl_action_find_bad(const vl_action_spec_t *a, const float *actions, size_t n)
{
    uint32_t D = a->dims;
    for (size_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < D; d++) {
            float v = actions[i * D + d];
            int ok = a->kind == VL_ENV_BOX ? vl_float_is_finite(v)
                                           : (v >= 0.0f && v < (float)a->n[d] && v == floorf(v));
            if (!ok)
                return (long)(i * D + d);
        }
    return -1;
}

void vl_action_clip(const vl_action_spec_t *a, const float *actions, size_t n, float *out)
{
    uint32_t D = a->dims;
    for (size_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < D; d++) {
            float v = actions[i * D + d];
            if (a->kind == VL_ENV_BOX) // NaN, which fails both tests, becomes low
                v = !(v >= a->low[d]) ? a->low[d] : v > a->high[d] ? a->high[d] : v;
            out[i * D + d] = v;
        }
}
