/*  vl_net_set: what vl_net builds on oneDNN for one batch size n (a
    "primitive set"), and the net's state the set reads. Internal to
    vl_net.c and vl_net_set.c.

    A set holds every layer's primitives and memories in the layouts
    oneDNN chose for n (format_tag_any: blocked, e.g. nChw16c), with its
    own copies of the weights in those layouts, refreshed from the flat
    parameters (PyTorch's layout) when their version moves on:
      obs field (a strided view, no copy) --reorder x scale--> conv src
      conv, activation, ... --reorder--> its slice of feats [n][features]
      vector fields copied into feats; linear layers on feats (nc), each
      vl_matmul_linear into its own [n][out] array, then its activation.
    The conv backward reorders diff weights back to PyTorch's layout with a
    sum post-op, which adds them into the flat gradients; diff biases are
    added by a loop. The linear layers (and vl_net's heads) read the net's
    copy of the parameters, taken at the first forward after they changed,
    and add their gradients into the flat ones directly. */
#ifndef VL_NET_SET_H
#define VL_NET_SET_H

#include <stddef.h>
#include <stdint.h>

#include "vl_dnnl.h"
#include "vl_matmul.h"
#include "vl_net.h"

#define VL_NET_SETS        3 // batch sizes kept built: the learner's, the actors', one more
#define VL_NET_TENSORS_MAX (2 * (VL_OBS_FIELDS_MAX * VL_MODEL_LAYERS_MAX + VL_MODEL_LAYERS_MAX) + 4)

/* One conv or linear layer's geometry, activation and tensors. */
typedef struct {
    int conv;                                   // 1: conv, 0: linear
    dnnl_alg_kind_t act;                        // eltwise after it, or dnnl_alg_kind_undef
    dnnl_dim_t cin, hin, win, cout, hout, wout; // linear: hin = win = hout = wout = 1
    dnnl_dim_t k, stride, pad;                  // conv only
    size_t w_off, b_off;                        // in the flat parameters
} vl_net_geom_t;

/* One layer's primitives and memories for one batch size (a linear layer's:
   y, dy and its activation's alone). A NULL optional memory means "the
   same as the one it would be reordered from". */
typedef struct {
    dnnl_primitive_t fwd, act, act_bwd, bwd_w, bwd_d;
    dnnl_primitive_t w_in;     // params -> w (at a refresh)
    dnnl_primitive_t w_bwd_in; // w -> w_bwd (at a refresh), when backward data wants another layout
    dnnl_primitive_t src_bw_in, dy_bw_in; // to backward weights' layouts, when they differ
    dnnl_primitive_t dw_out;              // dw -> grads, adding
    dnnl_memory_t w_user, dw_user;        // PyTorch's layout, on params and grads
    dnnl_memory_t w, w_bwd, b, y, dy, dw, db, src_bw, dy_bw;
    dnnl_memory_t src; // what the layer reads: not owned
} vl_net_prims_t;

/* Everything built for one batch size n. */
typedef struct {
    uint32_t n;
    uint64_t version; // of the parameters its weight copies hold (0: none yet)
    uint64_t used;    // the net's clock at its last use
    vl_net_prims_t conv[VL_OBS_FIELDS_MAX][VL_MODEL_LAYERS_MAX]; // [image][layer]
    vl_net_prims_t lin[VL_MODEL_LAYERS_MAX];
    dnnl_memory_t in_view[VL_OBS_FIELDS_MAX]; // the image field in obs (handle set per call)
    dnnl_memory_t src0[VL_OBS_FIELDS_MAX];    // it scaled, in the first conv's layout
    dnnl_primitive_t in_scale[VL_OBS_FIELDS_MAX];
    dnnl_memory_t feat_view[VL_OBS_FIELDS_MAX], dfeat_view[VL_OBS_FIELDS_MAX];
    dnnl_primitive_t to_feats[VL_OBS_FIELDS_MAX], from_dfeats[VL_OBS_FIELDS_MAX];
    dnnl_memory_t feats, dfeats; // [n][features], on feats_p and dfeats_p
    float *feats_p, *dfeats_p;
    float *last, *dlast; // [n][width] the heads read and the gradient they write
} vl_net_set_t;

typedef struct {
    char name[VL_TENSOR_NAME_MAX];
    uint32_t ndim, shape[VL_TENSOR_NDIM_MAX];
    size_t off, size; // in floats
} vl_net_tensor_info_t;

struct vl_net_s {
    vl_obs_spec_t obs;
    vl_model_shapes_t shapes;
    uint32_t n_linears;
    vl_net_geom_t conv[VL_OBS_FIELDS_MAX][VL_MODEL_LAYERS_MAX];
    vl_net_geom_t lin[VL_MODEL_LAYERS_MAX];
    uint32_t obs_off[VL_OBS_FIELDS_MAX];  // where each field starts in an observation
    float scale[VL_OBS_FIELDS_MAX];       // what an image field is multiplied by
    uint32_t obs_dim, num_actions, width; // width: what the heads read
    int threads;
    uint32_t n_tensors;
    vl_net_tensor_info_t tensors[VL_NET_TENSORS_MAX];
    size_t n_params, pi_w, pi_b, v_w, v_b; // offsets of the heads' tensors
    float *params, *grads;
    float *weights; // the parameters as of weights_version: what linears and heads read
    uint64_t version, weights_version, clock;
    vl_dnnl_t *dnnl; // the engine and stream every set and product runs on
    vl_matmul_t *mm; // the linear layers' and heads' products, on dnnl
    vl_net_set_t *sets[VL_NET_SETS];
    vl_net_set_t *fwd_set; // the last forward's set, what backward runs on
};

/* Builds everything batch size n needs on net. Returns a new set (caller
   destroys), or NULL (logged). */
vl_net_set_t *vl_net_set_new(vl_net_t *net, uint32_t n);

/* Frees the set and nulls the pointer; safe on NULL and twice. */
void vl_net_set_destroy(vl_net_set_t **set_p);

/* Brings the set's weight copies to the parameters' version. Returns 0, or
   -1 (logged). */
int vl_net_set_refresh(vl_net_t *net, vl_net_set_t *set);

/* Runs the torso on n observations obs, up to set->last. Returns 0, or -1
   (logged). */
int vl_net_set_forward(vl_net_t *net, vl_net_set_t *set, const float *obs);

/* Runs the torso's backward from set->dlast, adding every layer's
   gradients into the net's. Returns 0, or -1 (logged). */
int vl_net_set_backward(vl_net_t *net, vl_net_set_t *set);

#endif
