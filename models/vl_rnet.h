/*  vl_rnet: volley's recurrent actor-critic network, as CleanRL's LSTM
    agent: obs -> the spec's conv and linear layers (a shared torso, each
    followed by its activation) -> one LSTM layer -> a policy head (one linear layer to
    the head's outputs) and a value head (one linear layer to 1). Tensors:
    torso.J.weight/bias, lstm.weight_ih/weight_hh/bias_ih/bias_hh (PyTorch's
    nn.LSTM layout, vl_lstm), pi.weight/bias, v.weight/bias. The recurrent
    state of one sequence is 2H floats, h then c. Forward and backward run
    over batches of sequences, resetting the state where an episode began.
    One object is used by one thread at a time. */
#ifndef VL_RNET_H
#define VL_RNET_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vl_rng.h"
#include "../messages/vl_codec.h"
#include "vl_model_spec.h"

typedef struct vl_rnet_s vl_rnet_t;

#define VL_RNET_ARRAYS 4 // flat parameter arrays: torso (mlp or conv net), lstm, pi, v

/* Builds the net of a spec whose last layer is an lstm over observations
   obs (obs_dim floats) with outputs head outputs; conv layers make its
   torso a vl_net (conv.K.J, torso.J on oneDNN). The products run on threads
   OpenMP threads (0: the caller's setting). Returns it (caller destroys),
   or NULL after writing one line to err. */
vl_rnet_t *vl_rnet_new(const vl_model_spec_t *spec, const vl_obs_spec_t *obs, uint32_t obs_dim,
                       uint32_t outputs, int threads, char *err, size_t errlen);

/* Frees the net and nulls the pointer; safe on NULL and twice. */
void vl_rnet_destroy(vl_rnet_t **self_p);

/* Draws the initial weights from rng as CleanRL's LSTM agent: the torso
   orthogonal with gain sqrt(2), the LSTM's weights orthogonal (gain 1) and
   its biases 0, the policy head gain 0.01, the value head gain 1, every
   other bias 0. Returns 0, or -1 on no memory. */
int vl_rnet_init(vl_rnet_t *self, vl_rng_t *rng);

/* Returns the LSTM's hidden size H (the state is 2H floats). */
uint32_t vl_rnet_hidden(const vl_rnet_t *self);

/* Runs B sequences of T steps: obs [B*T][obs_dim] (sequence b's step t at
   row b*T + t), from state0 [B][2H] (NULL: zeros), the state zeroed before
   step t where reset [B][T] (NULL: none) is set. Writes the head outputs
   out [B*T][outputs] and values [B*T] (either may be NULL) and, when not
   NULL, the final state state1 [B][2H] (may be state0). Keeps what the
   backward pass needs. Returns 0, or -1 on no memory. */
int vl_rnet_forward(vl_rnet_t *self, uint32_t B, uint32_t T, const float *obs, const float *state0,
                    const uint8_t *reset, float *out, float *values, float *state1);

/* Backward pass for the last vl_rnet_forward (both outputs computed):
   given dout [B*T][outputs] and dvalues [B*T] (either NULL for zero), adds
   every parameter's gradient into the accumulated one. Returns 0, or -1. */
int vl_rnet_backward(vl_rnet_t *self, const float *dout, const float *dvalues);

/* Sets the accumulated gradient to zero. */
void vl_rnet_zero_grad(vl_rnet_t *self);

/* Says the parameters were written (an Adam step, a load): a conv torso
   takes its new weights at its next forward, as does a folded step. */
void vl_rnet_params_changed(vl_rnet_t *self);

/* Writes the net's flat parameter arrays, their gradients and counts (at
   most VL_RNET_ARRAYS of each: no torso, no array for it). Returns how
   many. */
int vl_rnet_arrays(vl_rnet_t *self, float **params, float **grads, size_t *counts);

/* Returns how many parameter tensors the net has. */
uint32_t vl_rnet_tensor_count(const vl_rnet_t *self);

/* Fills t with tensor i (its parameters, or its gradient when grads). */
void vl_rnet_tensor(vl_rnet_t *self, uint32_t i, int grads, vl_tensor_t *t);

/* Marks the net an actor's (1) or not (0, the default): with no backward
   pass to follow, a one-step forward folds one linear layer of fewer
   inputs than outputs, with no activation, into the lstm's input weights
   (W_ih W_torso, refreshed after vl_rnet_params_changed) and runs the
   product on those; the same results up to float rounding. */
void vl_rnet_set_inference(vl_rnet_t *self, int on);

/* Makes every part use portable kernels: the same results on every x86-64. */
void vl_rnet_set_portable(vl_rnet_t *self);

#endif
