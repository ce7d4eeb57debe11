/*  vl_dist: the action distribution heads; see vl_dist.h.

    Everything runs once per env per actor step (sampling) or per sample in
    the loss (log-probs and gradients), so nothing allocates and the work is
    in float. A categorical dimension is normalised around its largest logit
    z[k]: S = 1 + rest with rest = sum over j != k of exp(z[j] - z[k]), and
    log S = log1p(rest), which keeps near-certain dimensions' log-probs and
    entropies accurate instead of rounding 1 + rest to 1. */
#include "vl_dist.h"

#include <math.h>

#define S_HALF_LOG_2PI 0.91893853320467274f // 0.5 * log(2 pi)

/* A categorical dimension's normaliser over its n logits. */
typedef struct {
    float max;     // the largest logit
    float log_sum; // log of sum over j of exp(z[j] - max)
    float entropy; // -sum over j of p[j] log p[j]
} s_cat_t;

/* Returns the dimensions a loop may visit: dims, bounded by the arrays' size
   so that an unchecked space cannot index past n, low or high. */
static uint32_t s_dims(const vl_action_spec_t *a)
{
    return a->dims < VL_ACTION_DIMS_MAX ? a->dims : VL_ACTION_DIMS_MAX;
}

/* Returns a discrete action value as an index in 0 .. n-1. A value outside
   (or NaN) is clamped so that it can never read outside the logits; refusing
   such actions is vl_action_find_bad's job, before they reach here. */
static uint32_t s_index(float v, uint32_t n)
{
    if (!(v > 0.0f))
        return 0;
    if (v >= (float)(n - 1))
        return n - 1;
    return (uint32_t)v;
}

/* Returns the index of the largest of n logits, the lowest on ties. */
static uint32_t s_argmax(const float *z, uint32_t n)
{
    uint32_t k = 0;
    for (uint32_t j = 1; j < n; j++)
        if (z[j] > z[k])
            k = j;
    return k;
}

/* Returns the normaliser and the entropy of the n logits z. The entropy is
   log S - sum_j e[j] (z[j] - max) / S, the same sum as -sum p log p, in one
   pass of exponentials. */
static s_cat_t s_cat(const float *z, uint32_t n)
{
    uint32_t k = s_argmax(z, n);
    float max = z[k], rest = 0.0f, weighted = 0.0f;
    for (uint32_t j = 0; j < n; j++) {
        if (j == k)
            continue;
        float x = z[j] - max, e = expf(x);
        rest += e;
        if (e > 0.0f) // a -inf logit adds nothing, not 0 * -inf
            weighted += e * x;
    }
    s_cat_t c = {.max = max, .log_sum = log1pf(rest)};
    c.entropy = c.log_sum - weighted / (1.0f + rest);
    return c;
}

/* Returns the index the uniform u in [0, 1) picks by inverse CDF over the n
   logits z whose largest is max: the first j whose cumulative weight exceeds u
   times the total (both summed in double, in the same order, so the last step
   is the total). A zero-probability index is never picked; should rounding
   leave u * total at the total, the argmax is. */
static uint32_t s_cat_pick(const float *z, uint32_t n, float max, double u)
{
    double total = 0.0;
    for (uint32_t j = 0; j < n; j++)
        total += expf(z[j] - max);
    double target = u * total, cum = 0.0;
    for (uint32_t j = 0; j < n; j++) {
        cum += expf(z[j] - max);
        if (target < cum)
            return j;
    }
    return s_argmax(z, n);
}

/* Returns log p[i] of a dimension normalised by c. */
static float s_cat_logp(const float *z, const s_cat_t *c, uint32_t i)
{
    return (z[i] - c->max) - c->log_sum;
}

/* Returns log N(x; mu, exp(logstd)). */
static float s_normal_logp(float x, float mu, float logstd)
{
    float diff = x - mu, var = expf(2.0f * logstd);
    return -(diff * diff) / (2.0f * var) - logstd - S_HALF_LOG_2PI;
}

void vl_dist_sample(const vl_action_spec_t *a, const float *z, const float *logstd, vl_rng_t *rng,
                    float *action, float *logp)
{
    // The same terms summed in the same order as vl_dist_logp, so that a
    // learner recomputing the log-prob of this action gets it bit for bit.
    uint32_t dims = s_dims(a);
    float sum = 0.0f;
    for (uint32_t d = 0, at = 0; d < dims; d++) {
        if (vl_action_is_box(a)) {
            action[d] = z[d] + expf(logstd[d]) * (float)vl_rng_normal(rng);
            sum += s_normal_logp(action[d], z[d], logstd[d]);
        } else {
            s_cat_t c = s_cat(z + at, a->n[d]);
            uint32_t i = s_cat_pick(z + at, a->n[d], c.max, vl_rng_uniform(rng));
            action[d] = (float)i;
            sum += s_cat_logp(z + at, &c, i);
            at += a->n[d];
        }
    }
    *logp = sum;
}

void vl_dist_greedy(const vl_action_spec_t *a, const float *z, float *action)
{
    uint32_t dims = s_dims(a);
    for (uint32_t d = 0, at = 0; d < dims; d++) {
        if (vl_action_is_box(a)) {
            float m = z[d];
            action[d] = m < a->low[d] ? a->low[d] : m > a->high[d] ? a->high[d] : m;
        } else {
            action[d] = (float)s_argmax(z + at, a->n[d]);
            at += a->n[d];
        }
    }
}

float vl_dist_logp(const vl_action_spec_t *a, const float *z, const float *logstd,
                   const float *action)
{
    uint32_t dims = s_dims(a);
    float sum = 0.0f;
    for (uint32_t d = 0, at = 0; d < dims; d++) {
        if (vl_action_is_box(a)) {
            sum += s_normal_logp(action[d], z[d], logstd[d]);
        } else {
            s_cat_t c = s_cat(z + at, a->n[d]);
            sum += s_cat_logp(z + at, &c, s_index(action[d], a->n[d]));
            at += a->n[d];
        }
    }
    return sum;
}

float vl_dist_entropy(const vl_action_spec_t *a, const float *z, const float *logstd)
{
    uint32_t dims = s_dims(a);
    float sum = 0.0f;
    for (uint32_t d = 0, at = 0; d < dims; d++) {
        if (vl_action_is_box(a)) {
            sum += logstd[d] + 0.5f + S_HALF_LOG_2PI;
        } else {
            sum += s_cat(z + at, a->n[d]).entropy;
            at += a->n[d];
        }
    }
    return sum;
}

/* One categorical dimension of vl_dist_grad: writes d/dz of
   c_logp log p[i] + c_ent H into dz [n]; adds log p[i] and H into the sums. */
static void s_cat_grad(const float *z, uint32_t n, uint32_t i, float c_logp, float c_ent, float *dz,
                       float *logp, float *entropy)
{
    s_cat_t c = s_cat(z, n);
    for (uint32_t j = 0; j < n; j++) {
        float lp = s_cat_logp(z, &c, j), p = expf(lp);
        float onehot = j == i ? 1.0f : 0.0f;
        // dH/dz[j] = -p[j] (log p[j] + H); the product is 0 where p[j] is.
        float dent = p > 0.0f ? -p * (lp + c.entropy) : 0.0f;
        dz[j] = c_logp * (onehot - p) + c_ent * dent;
    }
    *logp += s_cat_logp(z, &c, i);
    *entropy += c.entropy;
}

/* One box dimension of vl_dist_grad: writes d/dmu into *dz, adds d/dlogstd
   into *dlogstd and log p(x) and H into the sums. */
static void s_normal_grad(float x, float mu, float logstd, float c_logp, float c_ent, float *dz,
                          float *dlogstd, float *logp, float *entropy)
{
    float diff = x - mu, var = expf(2.0f * logstd), z2 = diff * diff / var;
    *dz = c_logp * (diff / var);
    *dlogstd += c_logp * (z2 - 1.0f) + c_ent; // dH/dlogstd = 1
    *logp += s_normal_logp(x, mu, logstd);
    *entropy += logstd + 0.5f + S_HALF_LOG_2PI;
}

void vl_dist_grad(const vl_action_spec_t *a, const float *z, const float *logstd,
                  const float *action, float c_logp, float c_ent, float *dz, float *dlogstd,
                  float *logp, float *entropy)
{
    uint32_t dims = s_dims(a);
    float logp_sum = 0.0f, entropy_sum = 0.0f;
    for (uint32_t d = 0, at = 0; d < dims; d++) {
        if (vl_action_is_box(a)) {
            s_normal_grad(action[d], z[d], logstd[d], c_logp, c_ent, dz + d, dlogstd + d, &logp_sum,
                          &entropy_sum);
        } else {
            s_cat_grad(z + at, a->n[d], s_index(action[d], a->n[d]), c_logp, c_ent, dz + at,
                       &logp_sum, &entropy_sum);
            at += a->n[d];
        }
    }
    if (logp)
        *logp = logp_sum;
    if (entropy)
        *entropy = entropy_sum;
}
