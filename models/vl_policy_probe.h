/*  vl_policy_probe: what the policy tests read and poke of a policy's
    parameters, in one place: every parameter (or gradient) flattened in
    tensor order, and a pointer to the k-th one (for finite differences). */
#ifndef VL_POLICY_PROBE_H
#define VL_POLICY_PROBE_H

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

#endif
