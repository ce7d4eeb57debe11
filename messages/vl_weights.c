/*  vl_weights: a policy's weights to and from wire bytes. Every tensor
    header is checked before anything is allocated; a tensor's data is
    allocated only for the size its header declared and passed. */
#include <assert.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"
#include "vl_codec.h"
#include "volley.pb-c.h"

/* Checks one tensor's header: name, rank, dims, element count, raw_size and
   compressed length. A bad name is VL_EPOLICY, the reason for bad ids.
   Returns VL_OK or the reason. */
static vl_reason_t s_check_tensor(const Volley__Tensor *t, const vl_limits_t *lim)
{
    if (!vl_wire_name_ok(t->name, VL_TENSOR_NAME_MAX))
        return VL_EPOLICY;
    if (t->n_shape < 1 || t->n_shape > 2)
        return VL_ESHAPE;
    for (size_t i = 0; i < t->n_shape; i++)
        if (t->shape[i] == 0)
            return VL_ESHAPE;
    uint64_t elems = t->shape[0];
    if (t->n_shape == 2)
        elems *= t->shape[1]; // two 32-bit factors fit in 64 bits
    if (elems > lim->max_tensor_elems)
        return VL_ETOOBIG;
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
    t->ndim = (uint32_t)msg->n_shape;
    t->rows = msg->shape[0];
    t->cols = msg->n_shape == 2 ? msg->shape[1] : 1;
    t->data = malloc(msg->raw_size);
    if (!t->data)
        return VL_ETOOBIG;
    vl_reason_t reason =
        vl_wire_decompress(msg->payload.data, msg->payload.len, msg->raw_size, t->data);
    if (reason != VL_OK)
        return reason;
    if (!vl_wire_all_finite(t->data, (size_t)t->rows * t->cols))
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
    uint32_t shape[2];
} s_tensor_msg_t;

/* Fills m from t, compressing t's data into m->msg.payload (caller frees).
   Returns 0, or -1 on invalid tensor or no memory. */
static int s_tensor_to_msg(const vl_tensor_t *t, s_tensor_msg_t *m)
{
    if (!vl_wire_name_ok(t->name, VL_TENSOR_NAME_MAX) || (t->ndim != 1 && t->ndim != 2) ||
        t->rows == 0 || t->cols == 0 || (t->ndim == 1 && t->cols != 1) || !t->data)
        return -1;
    uint64_t raw = 4 * (uint64_t)t->rows * t->cols;
    if (raw > LZ4_MAX_INPUT_SIZE)
        return -1;
    volley__tensor__init(&m->msg);
    m->shape[0] = t->rows;
    m->shape[1] = t->cols;
    m->msg.name = (char *)t->name;
    m->msg.n_shape = t->ndim;
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
        uint32_t shape[3] = {t->ndim, t->rows, t->cols};
        h = s_fnv(h, t->name, strlen(t->name) + 1);
        h = s_fnv(h, shape, sizeof shape);
        h = s_fnv(h, t->data, (size_t)t->rows * t->cols * sizeof(float));
    }
    return h;
}
