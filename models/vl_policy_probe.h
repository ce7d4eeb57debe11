/*  vl_policy_probe: what the policy tests read and poke of a policy's
    parameters, in one place: every parameter (or gradient) flattened in
    tensor order, a pointer to the k-th one, and the gap between a gradient
    and central finite differences of a loss. */
#ifndef VL_POLICY_PROBE_H
#define VL_POLICY_PROBE_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "vl_policy.h"

/* Copies every parameter (grads: every gradient) of the policy into out, in
   tensor order. Returns the count. */
static inline size_t vl_probe_flatten(vl_policy_t *policy, int grads, float *out)
{
    size_t count = 0;
    for (uint32_t i = 0; i < vl_policy_tensor_count(policy); i++) {
        vl_tensor_t t;
        if (grads)
            vl_policy_grad_tensor(policy, i, &t);
        else
            vl_policy_tensor(policy, i, &t);
        memcpy(out + count, t.data, (size_t)t.rows * t.cols * sizeof(float));
        count += (size_t)t.rows * t.cols;
    }
    return count;
}

/* Returns a pointer to the k-th parameter in tensor order, NULL past the
   last. */
static inline float *vl_probe_param(vl_policy_t *policy, size_t k)
{
    for (uint32_t i = 0; i < vl_policy_tensor_count(policy); i++) {
        vl_tensor_t t;
        vl_policy_tensor(policy, i, &t);
        size_t size = (size_t)t.rows * t.cols;
        if (k < size)
            return t.data + k;
        k -= size;
    }
    return NULL;
}

/* A loss of the policy's current parameters on the caller's batch ctx. */
typedef double (*vl_probe_loss_fn)(vl_policy_t *policy, const void *ctx);

/* Returns the worst relative gap, over the first count parameters in tensor
   order, between grads[k] and the central difference (loss(p + eps) -
   loss(p - eps)) / 2 eps, each relative to the larger of the two and 0.05
   (so that tiny gradients compare absolutely). Every parameter is put back. */
static inline double vl_probe_fd_gap(vl_policy_t *policy, const float *grads, size_t count,
                                     vl_probe_loss_fn loss, const void *ctx, float eps)
{
    double worst = 0.0;
    for (size_t k = 0; k < count; k++) {
        float *p = vl_probe_param(policy, k), saved = *p;
        *p = saved + eps;
        double up = loss(policy, ctx);
        *p = saved - eps;
        double down = loss(policy, ctx);
        *p = saved;
        double fd = (up - down) / (2 * eps), big = fmax(fmax(fabs(fd), fabs(grads[k])), 0.05);
        worst = fmax(worst, fabs(fd - grads[k]) / big);
    }
    return worst;
}

#endif
