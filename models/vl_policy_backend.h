/*  vl_policy_backend: the operations vl_policy needs of a network, one
    table per kind of network, as nng's protocol ops: the policy holds a
    table and the network it built, and calls through the one without
    knowing the other. Internal to vl_policy.c and the adapters
    (vl_policy_mlp.c, vl_policy_net.c, vl_policy_rnet.c).

    The network is what the table's new returned; every other operation
    takes it back. Observations reach forward already normalised. Optimizer
    state lives in the policy, one Adam per flat array arrays returns, so a
    backend has none. */
#ifndef VL_POLICY_BACKEND_H
#define VL_POLICY_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vl_rng.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_obs.h"
#include "vl_model_spec.h"

#define VL_POLICY_BACKEND_ARRAYS 4 // the most flat parameter arrays a backend has (vl_rnet's)

/* What a backend is built from. */
typedef struct {
    const vl_model_spec_t *spec;
    const vl_obs_spec_t *obs;
    uint32_t obs_dim;     // floats per observation
    uint32_t num_actions; // the head's outputs
    int threads;          // for the engines that take a count (0: their default)
} vl_policy_backend_args_t;

typedef struct {
    const char *name;
    /* Returns 1 if this backend builds spec (the first table that does is
       taken). */
    int (*accepts)(const vl_model_spec_t *spec);
    /* Builds the network and draws its initial weights from rng. Returns it
       (destroy frees), or NULL after writing one line to err. */
    void *(*create)(const vl_policy_backend_args_t *args, vl_rng_t *rng, char *err, size_t errlen);
    /* Frees the network and nulls the pointer; safe on NULL. */
    void (*destroy)(void **net_p);
    /* vl_policy_forward on n normalised observations. Returns 0 or -1. */
    int (*forward)(void *net, uint32_t n, const float *obs, float *logits, float *values);
    /* vl_policy_forward_seq on B*T normalised observations. Returns 0 or -1. */
    int (*forward_seq)(void *net, uint32_t B, uint32_t T, const float *obs, const float *state0,
                       const uint8_t *reset, float *out, float *values, float *state1);
    /* vl_policy_backward for the last forward. Returns 0 or -1. */
    int (*backward)(void *net, uint32_t n, const float *dlogits, const float *dvalues);
    /* Sets the accumulated gradient to zero. */
    void (*zero_grad)(void *net);
    /* Writes the flat parameter arrays, their gradients and counts (at most
       VL_POLICY_BACKEND_ARRAYS). Returns how many. */
    int (*arrays)(void *net, float **params, float **grads, size_t *counts);
    /* Says the parameters were written through arrays or tensor. */
    void (*params_changed)(void *net);
    /* Returns how many parameter tensors the network has. */
    uint32_t (*tensor_count)(const void *net);
    /* Fills t with tensor i (its parameters, or its gradient when grads). */
    void (*tensor)(void *net, uint32_t i, int grads, vl_tensor_t *t);
    /* Returns the floats of one sequence's recurrent state, 0 if none. */
    uint32_t (*state_size)(const void *net);
    /* Makes the network use kernels that give the same results on every
       x86-64. */
    void (*set_portable)(void *net);
    /* vl_policy_set_inference (NULL: the network has no cheaper act). */
    void (*set_inference)(void *net, int on);
} vl_policy_backend_ops_t;

/* Two vl_mlp towers, pi and v (a spec of linear layers and activations). */
extern const vl_policy_backend_ops_t vl_policy_mlp_ops;

/* One vl_net with a shared torso (a spec with conv layers). */
extern const vl_policy_backend_ops_t vl_policy_net_ops;

/* One vl_rnet (a spec ending in an lstm). */
extern const vl_policy_backend_ops_t vl_policy_rnet_ops;

#endif
