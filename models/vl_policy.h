/*  vl_policy: volley's actor-critic network, built from a model spec over
    an observation spec and an action space. A spec without conv layers
    builds two towers, as CleanRL's MLP agent: a policy net obs -> the spec's
    linear layers -> the head's outputs (logits of every discrete dimension,
    or a box's means; vl_dist says what they stand for) and a value net obs
    -> the same layers, own weights -> 1 (vl_mlp; tensors pi.J.weight/bias,
    v.J.weight/bias). A box adds a state-independent log-std, tensor
    pi.logstd [dims], zero at first. With normalisation on (vl_norm) the
    observations are normalised before either net, and the statistics travel
    as three more tensors. A spec with
    conv layers builds one net whose torso both heads share, as CleanRL's
    Atari agent (vl_net; tensors conv.K.J, torso.J, pi, v). Forward for
    acting, loss and backward for learning, Adam, and its parameters as
    named tensors for the wire. One object is used by one thread at a time. */
#ifndef VL_POLICY_H
#define VL_POLICY_H

#include <stdint.h>

#include "../messages/vl_action.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_obs.h"
#include "vl_model_spec.h"
#include "vl_norm.h"

typedef struct vl_policy_s vl_policy_t;

typedef struct {
    float clip;     // PPO ratio clip, e.g. 0.2
    float vf_coef;  // weight of the value loss, e.g. 0.5
    float ent_coef; // weight of the entropy bonus, e.g. 0.01
} vl_loss_params_t;

typedef struct {
    float policy_loss; // clipped-surrogate term (mean)
    float value_loss;  // 0.5 * mean (v - v_target)^2
    float entropy;     // mean policy entropy
    float approx_kl;   // mean (ratio - 1) - log ratio
    float clip_frac;   // fraction of samples whose ratio was clipped
} vl_loss_stats_t;

/* Creates the policy spec names over obs acting in the space act, its
   initial weights deterministic from seed; a conv net runs on threads
   threads (0: oneDNN's default). Returns a new policy (caller destroys), or
   NULL after writing one line to err (may be NULL): a spec that cannot read
   obs, an invalid space, an lstm, too many layers, no memory. */
vl_policy_t *vl_policy_new_spec(const vl_model_spec_t *spec, const vl_obs_spec_t *obs,
                                const vl_action_spec_t *act, uint64_t seed, int threads, char *err,
                                size_t errlen);

/* Creates the mlp(hidden) policy over obs_dim flat floats with num_actions
   discrete actions, as vl_policy_new_spec. Returns NULL on sizes of 0 or no
   memory. */
vl_policy_t *vl_policy_new(uint32_t obs_dim, uint32_t num_actions, uint32_t hidden, uint64_t seed);

/* Returns the canonical text of the policy's model spec; self keeps it. */
const char *vl_policy_model(const vl_policy_t *self);

/* Frees the policy and nulls the pointer; safe on NULL and twice. */
void vl_policy_destroy(vl_policy_t **self_p);

/* Returns the observation size the policy takes. */
uint32_t vl_policy_obs_dim(const vl_policy_t *self);

/* Returns the head's outputs per observation (vl_action_outputs). */
uint32_t vl_policy_num_actions(const vl_policy_t *self);

/* Returns the action space. */
const vl_action_spec_t *vl_policy_action(const vl_policy_t *self);

/* Returns the log-std [dims] of a box policy, NULL for discrete kinds. */
const float *vl_policy_logstd(const vl_policy_t *self);

/* Turns observation normalisation on (statistics at their start, returns
   discounted by gamma). Returns 0, or -1 on no memory. */
int vl_policy_norm_on(vl_policy_t *self, float gamma);

/* Returns the policy's statistics, NULL while normalisation is off. */
vl_norm_t *vl_policy_norm(vl_policy_t *self);

/* Forward pass over n observations [n][obs_dim] (normalised first when
   normalisation is on): writes the head's outputs [n][A] and values [n];
   either output may be NULL to skip that net. Returns 0, or -1 on no
   memory. */
int vl_policy_forward(vl_policy_t *self, uint32_t n, const float *obs, float *logits,
                      float *values);

/* Returns the floats of one sequence's recurrent state (2H for an lstm
   core: h then c), 0 for a memoryless policy. */
uint32_t vl_policy_state_size(const vl_policy_t *self);

/* Forward pass over B sequences of T steps, obs [B*T][obs_dim] (sequence b's
   step t at row b*T + t), from state0 [B][state_size] (NULL: zeros), the
   state zeroed before step t where reset [B][T] (NULL: none) is set:
   writes out [B*T][A] and values [B*T] (either may be NULL) and, when not
   NULL, the final state state1 [B][state_size] (may be state0). A
   memoryless policy runs its B*T rows as vl_policy_forward (states
   ignored); vl_policy_forward of a recurrent one is B = n sequences of one
   step from zero state. Returns 0, or -1 on no memory. */
int vl_policy_forward_seq(vl_policy_t *self, uint32_t B, uint32_t T, const float *obs,
                          const float *state0, const uint8_t *reset, float *out, float *values,
                          float *state1);

/* Writes the log-softmax of A logits into logp [A] (numerically stable). */
void vl_log_softmax(const float *logits, uint32_t A, float *logp);

/* Sets the accumulated gradient to zero. */
void vl_policy_zero_grad(vl_policy_t *self);

/* Backward pass for the last vl_policy_forward over the same n (both outputs
   computed): given dlogits [n][A] and dvalues [n] (either NULL for zero),
   adds every parameter's gradient into the accumulated one. Returns 0, or
   -1 on an engine failure. */
int vl_policy_backward(vl_policy_t *self, uint32_t n, const float *dlogits, const float *dvalues);

/* Says the parameters were written through vl_policy_tensor's data (load,
   Adam and the optimizer calls say it themselves). */
void vl_policy_params_changed(vl_policy_t *self);

/* Loss over a minibatch of n samples, its gradient added (+=) to the
   accumulated gradient:
     ratio = exp(logp(actions) - old_logp), logp the joint log-prob (vl_dist)
     loss = -mean(w * min(ratio * adv, clamp(ratio, 1-clip, 1+clip) * adv))
            + vf_coef * 0.5 * mean(w * (v - v_target)^2)
            - ent_coef * mean(w * entropy)
   w (importance weights) may be NULL for all ones. Fills stats if not NULL.
   actions are [n][dims]. Returns the loss, or NAN on no memory. */
float vl_policy_loss_grad(vl_policy_t *self, const vl_loss_params_t *p, uint32_t n,
                          const float *obs, const float *actions, const float *old_logp,
                          const float *adv, const float *v_target, const float *w,
                          vl_loss_stats_t *stats);

/* vl_policy_loss_grad over B sequences of T steps (n = B*T samples in
   sequence order), run from state0 with resets as vl_policy_forward_seq:
   the gradient flows back through each sequence (truncated at its start
   and at resets). Returns the loss, or NAN on no memory. */
float vl_policy_loss_grad_seq(vl_policy_t *self, const vl_loss_params_t *p, uint32_t B, uint32_t T,
                              const float *obs, const float *state0, const uint8_t *reset,
                              const float *actions, const float *old_logp, const float *adv,
                              const float *v_target, const float *w, vl_loss_stats_t *stats);

/* vl_policy_loss_grad_seq's loss and gradient without its forward pass:
   over the outputs the last vl_policy_forward_seq wrote, out
   [B*stride][A] and values [B*stride] of B sequences of stride steps, of
   which each sequence's first T (<= stride) steps are the n = B*T samples
   (sample b*T + t is row b*stride + t; actions, old_logp, adv, v_target
   and w index samples) and the rest take no gradient. Returns the loss, or
   NAN on no memory or T > stride. */
float vl_policy_loss_grad_outputs(vl_policy_t *self, const vl_loss_params_t *p, uint32_t B,
                                  uint32_t stride, uint32_t T, const float *out,
                                  const float *values, const float *actions, const float *old_logp,
                                  const float *adv, const float *v_target, const float *w,
                                  vl_loss_stats_t *stats);

/* Scales the accumulated gradient so its global L2 norm is at most max_norm
   (no clipping when max_norm <= 0), then takes one Adam step (beta1 0.9,
   beta2 0.999, eps 1e-5) with learning rate lr. Returns the norm before
   clipping. */
float vl_policy_adam_step(vl_policy_t *self, float lr, float max_norm);

/* Marks the policy an actor's (1) or not (0, the default): its forward
   passes are never followed by a backward one, so a recurrent core may act
   through a cheaper step (vl_rnet_set_inference), the same results up to
   float rounding. A policy that trains must not be marked. */
void vl_policy_set_inference(vl_policy_t *self, int on);

/* Makes both networks use the portable kernels (plain C, SSE2 at most):
   the same results on every x86-64, where the AVX2+FMA kernels round
   differently. For deterministic runs (volley replay). */
void vl_policy_set_portable(vl_policy_t *self);

/* Returns how many parameter tensors the policy has. */
uint32_t vl_policy_tensor_count(const vl_policy_t *self);

/* Fills t with the i-th parameter tensor: its name ("pi.0.weight" [out][in],
   "pi.0.bias" [out], ..., "v.2.bias" for towers; "conv.0.0.weight"
   [out][in][k][k] ... "v.bias" for a conv net), shape, and data pointing
   into the policy's own parameters (valid for the policy's life). i <
   tensor_count. */
void vl_policy_tensor(vl_policy_t *self, uint32_t i, vl_tensor_t *t);

/* Fills t like vl_policy_tensor, with data pointing into the accumulated
   gradient instead of the parameters (for tests and diagnostics). */
void vl_policy_grad_tensor(vl_policy_t *self, uint32_t i, vl_tensor_t *t);

/* Copies weights into the policy. Every tensor of the network must be
   present in w with the same name and shape; otherwise nothing changes and
   -1 is returned. Normalisation statistics in w are taken (normalisation
   turned on); weights without them turn it off. Returns 0 on success. */
int vl_policy_load(vl_policy_t *self, const vl_weights_t *w);

/* Writes why vl_policy_load would refuse w: the first tensor missing or of
   another shape, with both shapes ("their pi.0.weight is 64x8, this
   network's 64x4"). */
void vl_policy_mismatch(vl_policy_t *self, const vl_weights_t *w, char *why, size_t why_size);

/* Returns the bytes vl_policy_save_optimizer writes (both nets' Adam). */
size_t vl_policy_optimizer_size(const vl_policy_t *self);

/* Writes the optimizer state of both nets to out. */
void vl_policy_save_optimizer(const vl_policy_t *self, void *out);

/* Restores what vl_policy_save_optimizer wrote for a policy of the same
   shape. Returns 0, or -1 if size does not match (nothing changed). */
int vl_policy_load_optimizer(vl_policy_t *self, const void *in, size_t size);

#endif
