/*  volley/model.h: volley's actor-critic network, built from a model spec
    (e.g. "cnn", "mlp(64)", "conv(16,3,1) relu linear(128) relu") over a
    policy's observation fields and discrete actions: the C engine the
    actors and the C learner run. Its parameters are named tensors in
    PyTorch's layout and order, so the Python package's volley.torch builds
    the same network with the same state_dict. For outside code (the Python
    package's agreement tests, exports): forward, backward and the tensors.
    One object is used by one thread at a time. */
#ifndef VOLLEY_MODEL_H
#define VOLLEY_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <volley/learner.h>
#include <volley/volley.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VL_MODEL_NAME_MAX 32 // bytes of a tensor's name, NUL included
#define VL_MODEL_NDIM_MAX 4  // dimensions of a tensor

typedef struct vl_model_s vl_model_t;

/* Builds the network spec names for n_fields observation fields acting in
   the space action (volley/env.h: its head outputs are the logits of every
   discrete dimension, or a box's means with a tensor pi.logstd [dims]), its
   initial weights drawn from seed. Returns a new
   model (caller destroys), or NULL with a one-line reason in why (a bad
   spec names its token and what was expected). */
VL_EXPORT vl_model_t *vl_model_new(const char *spec, const vl_transport_field_t *fields,
                                   uint32_t n_fields, const vl_env_action_t *action,
                                   uint64_t seed, char *why, size_t why_size);

/* Frees the model and nulls the pointer; safe on NULL and twice. */
VL_EXPORT void vl_model_destroy(vl_model_t **self_p);

/* Writes the spec in its canonical form (presets expanded) into buf.
   Returns its length, or -1 when it does not fit. */
VL_EXPORT int vl_model_text(const vl_model_t *self, char *buf, size_t size);

/* Returns the floats of one observation (every field's values). */
VL_EXPORT uint32_t vl_model_obs_dim(const vl_model_t *self);

/* Returns how many parameter tensors the model has. */
VL_EXPORT uint32_t vl_model_tensor_count(const vl_model_t *self);

/* Writes tensor i's name (NUL-terminated) into name[VL_MODEL_NAME_MAX], its
   rank into *ndim and its dimensions into shape[VL_MODEL_NDIM_MAX], and
   returns its parameters (grads 0) or its accumulated gradient (grads 1):
   row-major floats the model owns. After writing parameters call
   vl_model_params_changed. Returns NULL when i is out of range. */
VL_EXPORT float *vl_model_tensor(vl_model_t *self, uint32_t i, int grads, char *name,
                                 uint32_t *ndim, uint32_t *shape);

/* Says the parameters were written through vl_model_tensor. */
VL_EXPORT void vl_model_params_changed(vl_model_t *self);

/* Forward pass over n observations obs [n][obs_dim]: writes the head's
   outputs [n][outputs] and values [n] (either may be NULL). Returns 0, or -1. */
VL_EXPORT int vl_model_forward(vl_model_t *self, uint32_t n, const float *obs, float *logits,
                               float *values);

/* Returns the floats of one sequence's recurrent state: 2H for a model
   ending in lstm(H) (h then c), 0 for a memoryless one. */
VL_EXPORT uint32_t vl_model_state_size(const vl_model_t *self);

/* Forward pass over B sequences of T steps, obs [B*T][obs_dim] (sequence b's
   step t at row b*T + t), from state0 [B][state size] (NULL: zeros), the
   state zeroed before step t where reset [B][T] (NULL: none) is nonzero:
   writes logits [B*T][outputs] and values [B*T] (either may be NULL) and,
   when not NULL, the final state state1 [B][state size]. A memoryless model
   runs the B*T rows as vl_model_forward. Returns 0, or -1. */
VL_EXPORT int vl_model_forward_seq(vl_model_t *self, uint32_t B, uint32_t T, const float *obs,
                                   const float *state0, const uint8_t *reset, float *logits,
                                   float *values, float *state1);

/* Backward pass for the last vl_model_forward (or _seq, n = B*T, through
   every sequence) over the same n: given the
   loss's gradients dlogits [n][outputs] and dvalues [n] (either NULL
   for zero), adds every parameter's gradient into the accumulated one.
   Returns 0, or -1. */
VL_EXPORT int vl_model_backward(vl_model_t *self, uint32_t n, const float *dlogits,
                                const float *dvalues);

/* Sets the accumulated gradient to zero. */
VL_EXPORT void vl_model_zero_grad(vl_model_t *self);

#ifdef __cplusplus
}
#endif

#endif
