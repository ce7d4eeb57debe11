/*  vl_mlp: a fully connected net, by default with tanh hidden layers and a
    linear output layer (any layer's activation can be set: none, tanh or
    relu), batch forward and hand-written backward. All parameters live in one
    flat float array and all gradients in another of the same layout, so an
    optimizer works on flat arrays. Layout, layer after layer: weight
    [out][in] row-major, then bias [out]. One object is used by one thread at
    a time. */
#ifndef VL_MLP_H
#define VL_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vl_rng.h"

#define VL_MLP_MAX_LAYERS 8 // linear layers; enough for any MLP volley builds

typedef struct vl_mlp_s vl_mlp_t;

/* Creates a net of n_layers linear layers: sizes[0] is the input width and
   sizes[l + 1] the output width of layer l. Parameters and gradients start at
   zero. Returns NULL when n_layers is 0 or above VL_MLP_MAX_LAYERS, a size is
   0, or on no memory. Caller destroys. */
vl_mlp_t *vl_mlp_new(uint32_t n_layers, const uint32_t *sizes);

/* Frees the net and nulls the pointer; safe on NULL and twice. */
void vl_mlp_destroy(vl_mlp_t **self_p);

/* Draws the weights from rng: orthogonal matrices (as torch's orthogonal_)
   scaled by hidden_gain for hidden layers and out_gain for the output layer;
   biases zero. Deterministic for a given rng state. Returns 0, or -1 on no
   memory (weights then unchanged). */
int vl_mlp_init(vl_mlp_t *self, vl_rng_t *rng, float hidden_gain, float out_gain);

/* Returns the number of linear layers. */
uint32_t vl_mlp_layers(const vl_mlp_t *self);

/* Returns sizes[i] as given to vl_mlp_new, i <= layers. */
uint32_t vl_mlp_size(const vl_mlp_t *self, uint32_t i);

/* Returns the number of floats in the parameter (and gradient) array. */
size_t vl_mlp_param_count(const vl_mlp_t *self);

/* Returns the flat parameter array, owned by the net. */
float *vl_mlp_params(vl_mlp_t *self);

/* Returns the flat gradient array, same layout, owned by the net. */
float *vl_mlp_grads(vl_mlp_t *self);

/* Returns the offset in the flat arrays of layer l's weight [out][in]; its
   bias [out] follows at offset + out * in. l < layers. */
size_t vl_mlp_weight_offset(const vl_mlp_t *self, uint32_t l);

/* Forward pass over n inputs x [n][sizes[0]]: writes y [n][sizes[layers]]
   and keeps the activations for vl_mlp_backward (x is copied, so the caller
   may reuse it). Returns 0, or -1 on no memory. */
int vl_mlp_forward(vl_mlp_t *self, uint32_t n, const float *x, float *y);

/* Backward pass for the last vl_mlp_forward, which must have been over the
   same n: given dy = d(loss)/d(y) [n][out], ADDS d(loss)/d(params) into the
   gradient array and, if dx is not NULL, writes d(loss)/d(x) [n][in].
   Returns 0, or -1 (logged; gradients then unspecified) when the DNNL or
   PORTABLE products cannot get memory (they allocate at a batch size's
   first backward; the AVX2 kernels never allocate). */
int vl_mlp_backward(vl_mlp_t *self, uint32_t n, const float *dy, float *dx);

/* Sets the gradient array to zero. */
void vl_mlp_zero_grad(vl_mlp_t *self);

/* What follows a layer. */
enum { VL_MLP_ACT_NONE, VL_MLP_ACT_TANH, VL_MLP_ACT_RELU };

/* Sets the activation after hidden layer l (vl_mlp_new: tanh; the last,
   output layer has none and keeps none). Returns 0, or -1 for a bad act or
   an l that is not a hidden layer. */
int vl_mlp_set_activation(vl_mlp_t *self, uint32_t l, int act);

/* Kernel sets, for tests, benchmarks and replay; vl_mlp_new picks the
   fastest the CPU runs. DNNL: vl_matmul's oneDNN products. PORTABLE:
   vl_matmul's portable loops, one fixed order, the same bits on every
   x86-64. AVX2: x86 AVX2+FMA, register-blocked, on the calling thread.
   Results agree to rounding. */
enum { VL_MLP_KERNELS_DNNL, VL_MLP_KERNELS_PORTABLE, VL_MLP_KERNELS_AVX2 };

/* Selects kernels, or the best available below them; returns the set in
   effect. */
int vl_mlp_set_kernels(vl_mlp_t *self, int kernels);

#endif
