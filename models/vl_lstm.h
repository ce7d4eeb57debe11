/*  vl_lstm: one LSTM layer over batches of sequences, forward and backward
    (truncated back-propagation through the sequence), with per-step resets
    where an episode began. PyTorch's nn.LSTM (one layer) exactly: gates in
    the order i, f, g, o,
        i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)   f, o likewise
        g = tanh(W_ig x + b_ig + W_hg h + b_hg)
        c' = f * c + i * g,   h' = o * tanh(c')
    its parameters four tensors in PyTorch's layout, contiguous in this order:
    weight_ih [4H][in], weight_hh [4H][H], bias_ih [4H], bias_hh [4H]. The
    layer keeps no parameters of its own: they and their gradient live in
    arrays the caller binds (a policy keeps all its parameters in one array
    for Adam). One object is used by one thread at a time. */
#ifndef VL_LSTM_H
#define VL_LSTM_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vl_rng.h"

typedef struct vl_lstm_s vl_lstm_t;

/* Creates a layer of in inputs and hidden units. Returns NULL on sizes of 0
   or over 65536, or no memory. */
vl_lstm_t *vl_lstm_new(uint32_t in, uint32_t hidden);

/* Frees the layer and nulls the pointer; safe on NULL and twice. */
void vl_lstm_destroy(vl_lstm_t **self_p);

/* Returns the floats of its parameters: 4H in + 4H H + 8H. */
size_t vl_lstm_param_count(const vl_lstm_t *self);

/* Points the layer at params and grads (vl_lstm_param_count floats each,
   the caller's, living as long as the layer is used). */
void vl_lstm_bind(vl_lstm_t *self, float *params, float *grads);

/* Writes PyTorch's initialisation into the bound parameters: every value
   uniform in [-1/sqrt(H), 1/sqrt(H)] from rng. */
void vl_lstm_init(vl_lstm_t *self, vl_rng_t *rng);

/* Runs B sequences of T steps: x [B][T][in] (row b*T + t), starting from
   h0, c0 [B][H] (NULL: zeros); where reset [B][T] (NULL: none) is nonzero
   the state is zeroed before step t. Writes y [B][T][H] (the h of every
   step) and, when not NULL, the final state hT, cT [B][H]. Keeps what the
   backward pass needs (of this call only). Returns 0, or -1 on no memory. */
int vl_lstm_forward(vl_lstm_t *self, uint32_t B, uint32_t T, const float *x, const float *h0,
                    const float *c0, const uint8_t *reset, float *y, float *hT, float *cT);

/* One step of B sequences (T = 1) whose input side comes folded: gates =
   x W^T + h0 W_hh^T + bias, x [B][k], W [4H][k], bias [4H] (a linear layer
   before the lstm multiplied into W_ih, its bias and b_ih + b_hh into
   bias), then the cells as vl_lstm_forward (the state zeroed where reset
   [B], NULL: none, is set). Writes y [B][H] and, when not NULL, hT, cT
   [B][H]. Keeps nothing for a backward pass. Returns 0, or -1
   where it does not run (B over 64, or vl_rowdot not in use) or on no
   memory. */
int vl_lstm_step_folded(vl_lstm_t *self, uint32_t B, const float *x, uint32_t k, const float *w,
                        const float *bias, const float *h0, const float *c0, const uint8_t *reset,
                        float *y, float *hT, float *cT);

/* Backward pass for the last vl_lstm_forward: given dy [B][T][H], adds the
   parameters' gradient into the bound grads and, when dx is not NULL,
   writes dx [B][T][in]. The initial state is a constant (no gradient
   reaches h0, c0), and none crosses a reset. Returns 0, or -1. */
int vl_lstm_backward(vl_lstm_t *self, const float *dy, float *dx);

/* Makes the layer use portable kernels (plain C, SSE2 at most): the same
   results on every x86-64, for deterministic runs (volley replay). */
void vl_lstm_set_portable(vl_lstm_t *self);

#endif
