/*  vl_weights: a policy's weights to and from wire bytes, and the shapes of
    their tensors (rank 1 to 4). Every tensor header is checked before
    anything is allocated; a tensor's data is allocated only for the size
    its header declared and passed. */
#include <assert.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"
#include "vl_codec.h"
#include "volley.pb-c.h"

/* Checks one tensor's header: name, rank, dims, element count, raw_size and
   compressed length. A bad name is VL_EPOLICY, the reason for bad ids. The
   element count is bounded dimension by dimension, so four 32-bit
   dimensions never overflow it. Returns VL_OK or the reason. */
static vl_reason_t s_check_tensor(const Volley__Tensor *t, const vl_limits_t *lim)
{
    if (!vl_wire_name_ok(t->name, VL_TENSOR_NAME_MAX))
        return VL_EPOLICY;
    if (t->n_shape < 1 || t->n_shape > VL_TENSOR_NDIM_MAX)
        return VL_ESHAPE;
    for (size_t i = 0; i < t->n_shape; i++)
        if (t->shape[i] == 0)
            return VL_ESHAPE;
    uint64_t elems = 1;
    for (size_t i = 0; i < t->n_shape; i++) {
        elems *= t->shape[i]; // at most 2^32 x 2^32 before the check below
        if (elems > lim->max_tensor_elems)
            return VL_ETOOBIG;
    }
    return vl_wire_check_block(lim, 4 * elems, t->raw_size, t->payload.len);
}

/* Checks a Weights message's header and every tensor's header, before
   anything is allocated. Returns VL_OK or the reason. */
static vl_reason_t s_check_weights(const Volley__Weights *msg, const vl_limits_t *lim)
{
    vl_reason_t head = vl_wire_check_head(msg->schema, msg->policy_id);
    if (head != VL_OK)
        return head;
    if (msg->n_tensors > lim->max_tensors)
        return VL_ETOOBIG;
    for (size_t i = 0; i < msg->n_tensors; i++) {
        vl_reason_t reason = s_check_tensor(msg->tensors[i], lim);
        if (reason != VL_OK)
            return reason;
    }
    return VL_OK;
}

/* Decompresses a checked tensor into t (data malloc'd, owned by t).
   Returns VL_OK, VL_ELZ4, VL_ENONFINITE, or VL_ETOOBIG on no memory. */
static vl_reason_t s_tensor_from_msg(const Volley__Tensor *msg, vl_tensor_t *t)
{
    memcpy(t->name, msg->name, strlen(msg->name) + 1);
    if (vl_tensor_set_shape(t, (uint32_t)msg->n_shape, msg->shape) != 0)
        return VL_ESHAPE; // s_check_tensor passed it: cannot happen
    t->data = malloc(msg->raw_size);
    if (!t->data)
        return VL_ETOOBIG;
    vl_reason_t reason =
        vl_wire_decompress(msg->payload.data, msg->payload.len, msg->raw_size, t->data);
    if (reason != VL_OK)
        return reason;
    if (!vl_wire_all_finite(t->data, vl_tensor_size(t)))
        return VL_ENONFINITE;
    return VL_OK;
}

/* Builds weights from a checked message into *out (NULL on failure).
   Returns VL_OK or the reason. */
static vl_reason_t s_weights_from_msg(const Volley__Weights *msg, vl_weights_t **out)
{
    vl_weights_t *w = calloc(1, sizeof *w);
    if (!w)
        return VL_ETOOBIG;
    memcpy(w->policy_id, msg->policy_id, strlen(msg->policy_id) + 1);
    w->version = msg->version;
    w->publish_ns = msg->publish_ns;
    vl_reason_t reason = VL_OK;
    if (msg->n_tensors > 0) {
        w->tensors = calloc(msg->n_tensors, sizeof *w->tensors);
        if (!w->tensors)
            reason = VL_ETOOBIG;
    }
    for (size_t i = 0; reason == VL_OK && i < msg->n_tensors; i++) {
        w->n_tensors++; // counted before filling, so destroy frees its data
        reason = s_tensor_from_msg(msg->tensors[i], &w->tensors[i]);
    }
    if (reason != VL_OK)
        vl_weights_destroy(&w);
    *out = w;
    return reason;
}

/* Decodes and validates weights. Returns VL_OK and sets *out (caller
   destroys), or the reason with *out NULL. Running out of memory is
   reported as VL_ETOOBIG. */
vl_reason_t vl_weights_decode(const uint8_t *data, size_t size, const vl_limits_t *lim,
                              vl_weights_t **out)
{
    assert(lim && out);
    *out = NULL;
    vl_reason_t unpacked;
    Volley__Weights *msg = vl_wire_unpack(&volley__weights__descriptor, data, size, &unpacked);
    if (!msg)
        return unpacked;
    vl_reason_t reason = s_check_weights(msg, lim);
    if (reason == VL_OK)
        reason = s_weights_from_msg(msg, out);
    volley__weights__free_unpacked(msg, NULL);
    return reason;
}

/* Frees weights and their tensors' data; nulls the pointer. */
void vl_weights_destroy(vl_weights_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_weights_t *self = *self_p;
    for (uint32_t i = 0; i < self->n_tensors; i++)
        free(self->tensors[i].data);
    free(self->tensors);
    free(self);
    *self_p = NULL;
}

/* A Tensor message with room for its shape, so one allocation holds both. */
typedef struct {
    Volley__Tensor msg;
    uint32_t shape[VL_TENSOR_NDIM_MAX];
} s_tensor_msg_t;

/* Returns 1 if t's rank, rows, cols and shape agree with each other and
   its name and data are there, else 0. */
static int s_tensor_ok(const vl_tensor_t *t)
{
    uint32_t dims[VL_TENSOR_NDIM_MAX];
    vl_tensor_t want;
    if (!vl_wire_name_ok(t->name, VL_TENSOR_NAME_MAX) || !t->data || t->ndim < 1 ||
        t->ndim > VL_TENSOR_NDIM_MAX)
        return 0;
    uint32_t ndim = vl_tensor_dims(t, dims);
    return vl_tensor_set_shape(&want, ndim, dims) == 0 && want.rows == t->rows &&
           want.cols == t->cols;
}

/* Fills m from t, compressing t's data into m->msg.payload (caller frees).
   Returns 0, or -1 on invalid tensor or no memory. */
static int s_tensor_to_msg(const vl_tensor_t *t, s_tensor_msg_t *m)
{
    if (!s_tensor_ok(t))
        return -1;
    uint64_t raw = 4 * (uint64_t)vl_tensor_size(t);
    if (raw > LZ4_MAX_INPUT_SIZE)
        return -1;
    volley__tensor__init(&m->msg);
    m->msg.name = (char *)t->name;
    m->msg.n_shape = vl_tensor_dims(t, m->shape);
    m->msg.shape = m->shape;
    m->msg.raw_size = (uint32_t)raw;
    m->msg.payload.data = vl_wire_compress(t->data, (size_t)raw, &m->msg.payload.len);
    return m->msg.payload.data ? 0 : -1;
}

/* Encodes tensors into a new buffer. Returns 0 and sets *out (caller frees)
   and *out_size, or -1 on invalid input or no memory. */
int vl_weights_encode(const char *policy_id, uint64_t version, const vl_tensor_t *tensors,
                      uint32_t n_tensors, uint8_t **out, size_t *out_size)
{
    if (!vl_policy_id_ok(policy_id) || (n_tensors && !tensors) || !out || !out_size)
        return -1;
    int rc = -1;
    s_tensor_msg_t *msgs = calloc(n_tensors ? n_tensors : 1, sizeof *msgs);
    Volley__Tensor **ptrs = calloc(n_tensors ? n_tensors : 1, sizeof *ptrs);
    if (!msgs || !ptrs)
        goto err;
    for (uint32_t i = 0; i < n_tensors; i++) {
        if (s_tensor_to_msg(&tensors[i], &msgs[i]) != 0)
            goto err;
        ptrs[i] = &msgs[i].msg;
    }
    Volley__Weights msg = VOLLEY__WEIGHTS__INIT;
    msg.schema = VL_SCHEMA_VERSION;
    msg.policy_id = (char *)policy_id;
    msg.version = version;
    msg.publish_ns = vl_wall_ns();
    msg.n_tensors = n_tensors;
    msg.tensors = ptrs;
    rc = vl_wire_pack(&msg.base, out, out_size);
err:
    for (uint32_t i = 0; msgs && i < n_tensors; i++)
        free(msgs[i].msg.payload.data);
    free(msgs);
    free(ptrs);
    return rc;
}

/* Folds n bytes into an FNV-1a 64-bit hash. */
static uint64_t s_fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

uint64_t vl_tensors_checksum(const vl_tensor_t *tensors, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint32_t i = 0; i < n; i++) {
        const vl_tensor_t *t = &tensors[i];
        uint32_t shape[1 + VL_TENSOR_NDIM_MAX] = {t->ndim, t->rows, t->cols};
        size_t words = 3; // ranks 1 and 2: {ndim, rows, cols}, as recordings were checked
        if (t->ndim > 2 && t->ndim <= VL_TENSOR_NDIM_MAX) {
            memcpy(shape + 1, t->shape, t->ndim * sizeof *shape);
            words = 1 + t->ndim;
        }
        h = s_fnv(h, t->name, strlen(t->name) + 1);
        h = s_fnv(h, shape, words * sizeof *shape);
        h = s_fnv(h, t->data, vl_tensor_size(t) * sizeof(float));
    }
    return h;
}

/* ---- shapes ------------------------------------------------------------------ */

int vl_tensor_set_shape(vl_tensor_t *t, uint32_t ndim, const uint32_t *dims)
{
    if (ndim < 1 || ndim > VL_TENSOR_NDIM_MAX || !dims)
        return -1;
    uint64_t cols = 1;
    for (uint32_t d = 0; d < ndim; d++) {
        if (dims[d] == 0)
            return -1;
        if (d > 0 && (cols *= dims[d]) > UINT32_MAX)
            return -1;
    }
    t->ndim = ndim;
    t->rows = dims[0];
    t->cols = (uint32_t)cols;
    memset(t->shape, 0, sizeof t->shape);
    if (ndim > 2)
        memcpy(t->shape, dims, ndim * sizeof *dims);
    return 0;
}

uint32_t vl_tensor_dims(const vl_tensor_t *t, uint32_t dims[VL_TENSOR_NDIM_MAX])
{
    memset(dims, 0, VL_TENSOR_NDIM_MAX * sizeof *dims);
    if (t->ndim > 2 && t->ndim <= VL_TENSOR_NDIM_MAX) {
        memcpy(dims, t->shape, t->ndim * sizeof *dims);
        return t->ndim;
    }
    dims[0] = t->rows;
    if (t->ndim == 2)
        dims[1] = t->cols;
    return t->ndim == 2 ? 2 : 1;
}

size_t vl_tensor_size(const vl_tensor_t *t)
{
    return (size_t)t->rows * t->cols;
}

int vl_tensor_same_shape(const vl_tensor_t *a, const vl_tensor_t *b)
{
    uint32_t x[VL_TENSOR_NDIM_MAX], y[VL_TENSOR_NDIM_MAX];
    return a->ndim == b->ndim && a->rows == b->rows && a->cols == b->cols &&
           vl_tensor_dims(a, x) == vl_tensor_dims(b, y) && memcmp(x, y, sizeof x) == 0;
}

const char *vl_tensor_shape_str(const vl_tensor_t *t, char *buf, size_t size)
{
    uint32_t dims[VL_TENSOR_NDIM_MAX];
    uint32_t ndim = vl_tensor_dims(t, dims);
    size_t at = 0;
    if (size == 0)
        return buf;
    buf[0] = '\0';
    for (uint32_t d = 0; d < ndim && at < size; d++) {
        int w = snprintf(buf + at, size - at, "%s%u", d ? ", " : "[", dims[d]);
        at += w > 0 ? (size_t)w : 0;
    }
    if (at < size)
        snprintf(buf + at, size - at, "]");
    return buf;
}

int vl_tensors_mismatch(const vl_tensor_t *want, uint32_t n, const vl_tensor_t *got, uint32_t n_got,
                        char *why, size_t size)
{
    char theirs[64], mine[64];
    for (uint32_t i = 0; i < n; i++) {
        const vl_tensor_t *t = NULL;
        for (uint32_t j = 0; j < n_got && !t; j++)
            if (strncmp(got[j].name, want[i].name, sizeof got[j].name) == 0)
                t = &got[j];
        if (!t) {
            snprintf(why, size, "they have no tensor %s", want[i].name);
            return -1;
        }
        if (!vl_tensor_same_shape(t, &want[i])) {
            snprintf(why, size, "their %s is %s, this network's %s", want[i].name,
                     vl_tensor_shape_str(t, theirs, sizeof theirs),
                     vl_tensor_shape_str(&want[i], mine, sizeof mine));
            return -1;
        }
    }
    return 0;
}
