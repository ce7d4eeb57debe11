/*  fuzz_weights: vl_weights_decode and vl_weights_destroy under libFuzzer.

    Checked on every input: a named reason; *out NULL on any refusal (and
    nothing leaked: libFuzzer's leak check). On VL_OK: policy id and tensor
    names printable, tensor count within the limit, every shape of rank 1
    (cols 1) to 4 with nonzero dims whose product is rows x cols and at most
    max_tensor_elems values, every value finite; publish_ns is the one on
    the wire (as protobuf-c unpacks it); the round trip: vl_weights_encode
    succeeds and its bytes decode to identical weights (every dimension) but
    for publish_ns, which the encoder stamps afresh with the wall clock (so
    it is the re-encoded wire's, and not 0); destroy nulls the pointer and
    is safe twice. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "messages/vl_codec.h"
#include "volley.pb-c.h"

/* Default limits, raw bytes lowered to keep the fuzzer's allocations small
   (LZ4's 255:1 bound already ties them to the input size). */
static vl_limits_t s_limits(void)
{
    vl_limits_t lim = vl_limits_default();
    lim.max_raw_bytes = 1u << 20;
    lim.max_tensor_elems = 1u << 18;
    return lim;
}

/* Checks everything the contract promises of decoded weights. */
static void s_check_decoded(const vl_weights_t *w, const vl_limits_t *lim)
{
    FUZZ_CHECK(vl_wire_name_ok(w->policy_id, VL_POLICY_ID_MAX));
    FUZZ_CHECK(w->n_tensors <= lim->max_tensors);
    FUZZ_CHECK(w->n_tensors == 0 || w->tensors);
    for (uint32_t i = 0; i < w->n_tensors; i++) {
        const vl_tensor_t *t = &w->tensors[i];
        FUZZ_CHECK(vl_wire_name_ok(t->name, VL_TENSOR_NAME_MAX));
        FUZZ_CHECK(t->ndim >= 1 && t->ndim <= VL_TENSOR_NDIM_MAX);
        FUZZ_CHECK(t->rows >= 1 && t->cols >= 1 && (t->ndim != 1 || t->cols == 1));
        uint32_t dims[VL_TENSOR_NDIM_MAX];
        uint64_t product = 1;
        FUZZ_CHECK(vl_tensor_dims(t, dims) == t->ndim);
        for (uint32_t d = 0; d < t->ndim; d++) {
            FUZZ_CHECK(dims[d] >= 1);
            product *= dims[d]; // each partial product is within the limit, checked below
            FUZZ_CHECK(product <= lim->max_tensor_elems);
        }
        FUZZ_CHECK(dims[0] == t->rows && product == (uint64_t)t->rows * t->cols);
        FUZZ_CHECK(vl_tensor_size(t) <= lim->max_tensor_elems);
        FUZZ_CHECK(t->data && vl_wire_all_finite(t->data, vl_tensor_size(t)));
    }
}

/* Returns the publish_ns field of wire bytes as protobuf-c unpacks them;
   aborts if they do not unpack (a decoder that accepted them did). */
static int64_t s_wire_publish_ns(const uint8_t *data, size_t size)
{
    Volley__Weights *msg = volley__weights__unpack(NULL, size, data);
    FUZZ_CHECK(msg);
    int64_t ns = msg->publish_ns;
    volley__weights__free_unpacked(msg, NULL);
    return ns;
}

/* Checks that two decoded weights are the same, value for value, but for
   publish_ns (a re-encode stamps its own). */
static void s_check_same(const vl_weights_t *a, const vl_weights_t *b)
{
    FUZZ_CHECK(strcmp(a->policy_id, b->policy_id) == 0 && a->version == b->version);
    FUZZ_CHECK(a->n_tensors == b->n_tensors);
    for (uint32_t i = 0; i < a->n_tensors; i++) {
        const vl_tensor_t *x = &a->tensors[i], *y = &b->tensors[i];
        FUZZ_CHECK(strcmp(x->name, y->name) == 0);
        FUZZ_CHECK(vl_tensor_same_shape(x, y));
        FUZZ_CHECK(memcmp(x->data, y->data, vl_tensor_size(x) * sizeof(float)) == 0);
    }
}

/* Encodes decoded weights and checks they decode back unchanged. */
static void s_check_round_trip(const vl_weights_t *w, const vl_limits_t *lim)
{
    uint8_t *wire = NULL;
    size_t wire_size = 0;
    FUZZ_CHECK(vl_weights_encode(w->policy_id, w->version, w->tensors, w->n_tensors, &wire,
                                 &wire_size) == 0);
    vl_weights_t *copy = NULL;
    FUZZ_CHECK(vl_weights_decode(wire, wire_size, lim, &copy) == VL_OK && copy);
    s_check_decoded(copy, lim);
    s_check_same(w, copy);
    FUZZ_CHECK(copy->publish_ns > 0); // the wall clock, stamped by the encoder
    FUZZ_CHECK(copy->publish_ns == s_wire_publish_ns(wire, wire_size));
    vl_weights_destroy(&copy);
    free(wire);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vl_weights_t stale; // decode must reset *out even when it was set
    vl_limits_t lim = s_limits();
    vl_weights_t *w = &stale;
    vl_reason_t reason = vl_weights_decode(data, size, &lim, &w);
    FUZZ_CHECK_REASON(reason);
    if (reason != VL_OK) {
        FUZZ_CHECK(w == NULL);
        return 0;
    }
    FUZZ_CHECK(w);
    s_check_decoded(w, &lim);
    FUZZ_CHECK(w->publish_ns == s_wire_publish_ns(data, size)); // any value, as sent
    s_check_round_trip(w, &lim);
    vl_weights_destroy(&w);
    FUZZ_CHECK(w == NULL);
    vl_weights_destroy(&w);
    return 0;
}
