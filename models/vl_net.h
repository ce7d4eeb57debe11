/*  vl_net: the network a model spec with conv layers names, over an
    observation spec, with a categorical head and a value head sharing one
    torso (the Atari actor-critic shape). Forward and backward on the CPU
    through oneDNN's primitives, in the layouts oneDNN picks for them.

    What it computes, per observation (the floats of every field in declared
    order, as vl_obs_from_rows gives them):
      - each image field (ndim 3, [channels][rows][cols]) is scaled to [0, 1]
        by its encoding's largest value (u8: 1/255, u2: 1/3, u1 and f32: 1)
        and goes through its own copy of the spec's conv layers, each
        followed by the activation the spec puts after it; the result is
        flattened in (channel, row, column) order;
      - every other field is taken as its values, unscaled;
      - the results, in the fields' declared order, are the features; the
        spec's linear layers (each with its activation) run on them;
      - logits = pi(last) [num_actions], value = v(last) [1], both linear.

    Parameters are one flat float array, tensor after tensor in this order,
    each in PyTorch's layout (conv weight [out][in][kh][kw], linear weight
    [out][in], bias [out]):
      conv.K.J.weight, conv.K.J.bias   image field K (0 = the first image
                                       field), conv layer J
      torso.J.weight, torso.J.bias     linear layer J
      pi.weight, pi.bias               [num_actions][last], [num_actions]
      v.weight, v.bias                 [1][last], [1]
    Gradients are a second flat array of the same layout. Initial weights as
    CleanRL's Atari PPO: orthogonal (a conv weight as [out][in*kh*kw]) with
    gain sqrt(2) on conv and torso layers, 0.01 on pi, 1 on v; biases 0.

    One object is used by one thread at a time; oneDNN may run each call on
    `threads` threads of its own: when threads > 0, each call that builds or
    runs primitives sets the calling thread's OpenMP thread count (a
    per-thread setting) to it and restores it after; 0 leaves it as it is. */
#ifndef VL_NET_H
#define VL_NET_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vl_rng.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_obs.h"
#include "vl_model_spec.h"

typedef struct vl_net_s vl_net_t;

/* Builds the network spec names over obs with num_actions logits, its
   parameters and gradients zero, for threads threads (0: oneDNN's
   default). num_actions 0 builds the torso alone (no heads; the spec may
   end in an lstm, which it stops before): vl_net_features runs it. Returns a new net (caller
   destroys), or NULL after writing one line to err: a spec without conv layers, one that cannot
   read obs (as vl_model_spec_shapes), or no memory / no oneDNN CPU engine. */
vl_net_t *vl_net_new(const vl_model_spec_t *spec, const vl_obs_spec_t *obs, uint32_t num_actions,
                     int threads, char *err, size_t errlen);

/* Frees the net and nulls the pointer; safe on NULL and twice. */
void vl_net_destroy(vl_net_t **self_p);

/* Draws the initial weights from rng (see above); deterministic for a
   given rng state. Returns 0, or -1 on no memory. */
int vl_net_init(vl_net_t *self, vl_rng_t *rng);

/* Returns the floats of the observation the net reads (every field's
   values). */
uint32_t vl_net_obs_dim(const vl_net_t *self);

/* Returns the number of floats in the parameter (and gradient) array. */
size_t vl_net_param_count(const vl_net_t *self);

/* Returns the flat parameter array, owned by the net. Whoever writes it
   calls vl_net_params_changed before the next forward. */
float *vl_net_params(vl_net_t *self);

/* Says the parameters were written: the next forward copies them into the
   layouts its primitives use (a forward otherwise reuses those copies). */
void vl_net_params_changed(vl_net_t *self);

/* Returns the flat gradient array, same layout, owned by the net. */
float *vl_net_grads(vl_net_t *self);

/* Sets the gradient array to zero. */
void vl_net_zero_grad(vl_net_t *self);

/* Returns how many parameter tensors the net has. */
uint32_t vl_net_tensor_count(const vl_net_t *self);

/* Fills t with tensor i's name, rank, shape (vl_tensor_t's convention) and
   data pointing into the parameters, or into the gradients when grads is
   not 0. i < tensor_count. */
void vl_net_tensor(vl_net_t *self, uint32_t i, int grads, vl_tensor_t *t);

/* Forward pass over n observations obs [n][obs_dim]: writes logits
   [n][num_actions] and values [n] (either may be NULL: not computed) and
   keeps what vl_net_backward needs. n may change from call to call (a
   new n builds its primitives once; the last few sizes are kept). Returns
   0, or -1 on no memory or a oneDNN failure (logged). */
int vl_net_forward(vl_net_t *self, uint32_t n, const float *obs, float *logits, float *values);

/* Returns the width of the torso's output (what the heads, or the caller's
   layers, read). */
uint32_t vl_net_width(const vl_net_t *self);

/* A torso alone: runs n observations obs [n][obs_dim] through the conv and
   linear layers into features [n][width], keeping what the backward pass
   needs. Returns 0, or -1 (logged). */
int vl_net_features(vl_net_t *self, uint32_t n, const float *obs, float *features);

/* Backward pass for the last vl_net_features over the same n: given
   dfeatures [n][width], ADDS every parameter's gradient. Returns 0, or -1. */
int vl_net_backward_features(vl_net_t *self, uint32_t n, const float *dfeatures);

/* Backward pass for the last vl_net_forward, over the same n: given
   dlogits [n][num_actions] and dvalues [n] (the loss's gradients with
   respect to the outputs; either may be NULL for zero), ADDS the gradient
   of every parameter into the gradient array. Returns 0, or -1 on a
   oneDNN failure (logged; gradients then unspecified). */
int vl_net_backward(vl_net_t *self, uint32_t n, const float *dlogits, const float *dvalues);

#endif
