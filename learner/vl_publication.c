/*  vl_publication: check, encode, decode back. */
#include "vl_publication.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Checks one tensor as a receiver would. Returns 0, or -1 after writing why. */
static int s_check_tensor(const vl_transport_tensor_t *t, const vl_limits_t *lim, char *why,
                          size_t why_size)
{
    const char *name = t->name ? t->name : "(null)";
    if (!vl_wire_name_ok(t->name, VL_TENSOR_NAME_MAX)) {
        snprintf(why, why_size, "tensor name '%.40s': expected 1 .. %d printable bytes", name,
                 VL_TENSOR_NAME_MAX - 1);
        return -1;
    }
    uint64_t rows = t->shape[0], cols = t->ndim == 2 ? t->shape[1] : 1;
    if (t->ndim < 1 || t->ndim > 2 || rows == 0 || cols == 0 ||
        rows * cols > lim->max_tensor_elems) {
        snprintf(why, why_size,
                 "tensor %s: rank %u shape [%u, %u]: expected rank 1 or 2, no "
                 "dim of 0, at most %u values",
                 name, t->ndim, t->shape[0], t->ndim == 2 ? t->shape[1] : 1, lim->max_tensor_elems);
        return -1;
    }
    if (!t->data) {
        snprintf(why, why_size, "tensor %s: no data", name);
        return -1;
    }
    for (uint64_t k = 0; k < rows * cols; k++)
        if (!vl_float_is_finite(t->data[k])) {
            snprintf(why, why_size, "tensor %s: value %llu is %g: weights must be finite", name,
                     (unsigned long long)k, (double)t->data[k]);
            return -1;
        }
    return 0;
}

/* Checks the publication: count, each tensor, unique names. Fills out.
   Returns 0, or -1 after writing why. */
static int s_check_all(const vl_transport_tensor_t *in, uint32_t n, vl_tensor_t *out, char *why,
                       size_t why_size)
{
    vl_limits_t lim = vl_limits_default();
    if (n < 1 || n > lim.max_tensors || n > VL_TRANSPORT_TENSORS_MAX || !in) {
        snprintf(why, why_size, "%u tensors: expected 1 .. %u", n, lim.max_tensors);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (s_check_tensor(&in[i], &lim, why, why_size) != 0)
            return -1;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(in[i].name, in[j].name) == 0) {
                snprintf(why, why_size, "tensor %s: named twice", in[i].name);
                return -1;
            }
        memset(&out[i], 0, sizeof out[i]);
        snprintf(out[i].name, sizeof out[i].name, "%s", in[i].name);
        out[i].ndim = in[i].ndim;
        out[i].rows = in[i].shape[0];
        out[i].cols = in[i].ndim == 2 ? in[i].shape[1] : 1;
        out[i].data = (float *)(uintptr_t)in[i].data; // encoded, never written
    }
    return 0;
}

/* Checks that tensors are mlp's, all of them and nothing else. Returns 0,
   or -1 after writing why. */
static int s_check_mlp(vl_policy_t *mlp, vl_tensor_t *tensors, uint32_t n, char *why,
                       size_t why_size)
{
    vl_weights_t w = {.n_tensors = n, .tensors = tensors};
    vl_tensor_t first;
    vl_policy_tensor(mlp, 0, &first); // pi.0.weight: [hidden, obs_dim]
    char mismatch[160];
    vl_policy_mismatch(mlp, &w, mismatch, sizeof mismatch);
    if (strcmp(mismatch, "they fit") != 0) {
        snprintf(why, why_size, "not the network of this policy's spec (model %.300s): %s",
                 vl_policy_model(mlp), mismatch);
        return -1;
    }
    if (n != vl_policy_tensor_count(mlp)) {
        snprintf(why, why_size, "%u tensors, the policy's network has %u: the others would be ignored", n,
                 vl_policy_tensor_count(mlp));
        return -1;
    }
    return 0;
}

int vl_publication_check(const vl_transport_tensor_t *in, uint32_t n, vl_policy_t *mlp,
                         vl_tensor_t *out, char *why, size_t why_size)
{
    if (s_check_all(in, n, out, why, why_size) != 0)
        return -1;
    return mlp ? s_check_mlp(mlp, out, n, why, why_size) : 0;
}

int vl_publication_encode(const char *policy, uint64_t version, const vl_tensor_t *tensors,
                          uint32_t n, uint8_t **buf, size_t *size, char *why, size_t why_size)
{
    if (vl_weights_encode(policy, version, tensors, n, buf, size) != 0) {
        snprintf(why, why_size, "cannot encode the weights (no memory, or over 64 MiB)");
        return -1;
    }
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *w = NULL;
    vl_reason_t r = vl_weights_decode(*buf, *size, &lim, &w);
    vl_weights_destroy(&w);
    if (r == VL_OK)
        return 0;
    snprintf(why, why_size, "an actor would refuse these weights: %s", vl_reason_str(r));
    free(*buf);
    *buf = NULL;
    return -1;
}
