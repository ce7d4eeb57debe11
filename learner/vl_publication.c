/*  vl_publication: check, encode, decode back. */
#include "vl_publication.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Checks one tensor's rank and dims as a receiver would and sets out's
   shape from them. Returns 0, or -1 after writing why. */
static int s_check_shape(const vl_transport_tensor_t *t, const vl_limits_t *lim, vl_tensor_t *out,
                         char *why, size_t why_size)
{
    char dims[96] = "[";
    uint32_t ndim = t->ndim <= VL_TRANSPORT_NDIM_MAX ? t->ndim : VL_TRANSPORT_NDIM_MAX;
    for (uint32_t d = 0; d < ndim; d++)
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%u", d ? ", " : "",
                 t->shape[d]);
    snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s]", t->ndim > ndim ? ", ..." : "");
    if (t->ndim < 1 || t->ndim > VL_TRANSPORT_NDIM_MAX ||
        vl_tensor_set_shape(out, t->ndim, t->shape) != 0 ||
        vl_tensor_size(out) > lim->max_tensor_elems) {
        snprintf(why, why_size,
                 "tensor %s: rank %u shape %s: expected rank 1 .. %d, no dim of 0, at most %u "
                 "values",
                 t->name, t->ndim, dims, VL_TRANSPORT_NDIM_MAX, lim->max_tensor_elems);
        return -1;
    }
    return 0;
}

/* Checks one tensor as a receiver would and fills out from it (data
   pointing into the caller's). Returns 0, or -1 after writing why. */
static int s_check_tensor(const vl_transport_tensor_t *t, const vl_limits_t *lim, vl_tensor_t *out,
                          char *why, size_t why_size)
{
    const char *name = t->name ? t->name : "(null)";
    memset(out, 0, sizeof *out);
    if (!vl_wire_name_ok(t->name, VL_TENSOR_NAME_MAX)) {
        snprintf(why, why_size, "tensor name '%.40s': expected 1 .. %d printable bytes", name,
                 VL_TENSOR_NAME_MAX - 1);
        return -1;
    }
    if (s_check_shape(t, lim, out, why, why_size) != 0)
        return -1;
    if (!t->data) {
        snprintf(why, why_size, "tensor %s: no data", name);
        return -1;
    }
    for (size_t k = 0, n = vl_tensor_size(out); k < n; k++)
        if (!vl_float_is_finite(t->data[k])) {
            snprintf(why, why_size, "tensor %s: value %zu is %g: weights must be finite", name, k,
                     (double)t->data[k]);
            return -1;
        }
    snprintf(out->name, sizeof out->name, "%s", t->name);
    out->data = (float *)(uintptr_t)t->data; // encoded, never written
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
        if (s_check_tensor(&in[i], &lim, &out[i], why, why_size) != 0)
            return -1;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(in[i].name, in[j].name) == 0) {
                snprintf(why, why_size, "tensor %s: named twice", in[i].name);
                return -1;
            }
    }
    return 0;
}

/* Writes into why[size] how tensors differ from mlp's, by name and full
   shape (a [64, 4, 1] is not a [64, 4]). Returns 0 when every tensor of mlp
   is there with its shape, else -1. */
static int s_mismatch(vl_policy_t *mlp, const vl_tensor_t *tensors, uint32_t n, char *why,
                      size_t size)
{
    vl_tensor_t mine[VL_TRANSPORT_TENSORS_MAX];
    uint32_t k = vl_policy_tensor_count(mlp);
    for (uint32_t i = 0; i < k && i < VL_TRANSPORT_TENSORS_MAX; i++)
        vl_policy_tensor(mlp, i, &mine[i]);
    return vl_tensors_mismatch(mine, k < VL_TRANSPORT_TENSORS_MAX ? k : VL_TRANSPORT_TENSORS_MAX,
                               tensors, n, why, size);
}

/* Checks that tensors are mlp's, all of them and nothing else. Returns 0,
   or -1 after writing why. */
static int s_check_mlp(vl_policy_t *mlp, vl_tensor_t *tensors, uint32_t n, char *why,
                       size_t why_size)
{
    vl_tensor_t first;
    vl_policy_tensor(mlp, 0, &first); // pi.0.weight: [hidden, obs_dim]
    char mismatch[160];
    if (s_mismatch(mlp, tensors, n, mismatch, sizeof mismatch) != 0) {
        snprintf(why, why_size,
                 "not volley's MLP for this policy's spec (obs %u, actions %u, hidden %u): %s",
                 vl_policy_obs_dim(mlp), vl_policy_num_actions(mlp), first.rows, mismatch);
        return -1;
    }
    if (n != vl_policy_tensor_count(mlp)) {
        snprintf(why, why_size, "%u tensors, volley's MLP has %u: the others would be ignored", n,
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
