/*  volley/actor.h: an actor whose environment loop is the caller's.

    `volley actor` steps C environments; this API gives the same engine to a
    program that steps its own (a Python env, a game behind its own loop):

        vl_actor_t *a = vl_actor_open(&params, why, sizeof why);
        for (;;) {
            vl_actor_act(a, obs, n * dim, actions, logps, why, sizeof why);
            ... step the n environments with actions ...
            vl_actor_observe(a, rewards, terminated, truncated, next_obs,
                             final_obs, why, sizeof why);
            obs = next_obs;
        }
        vl_actor_close(&a);

    act runs volley's policy on the batch in C (it waits for the first
    weights the first time, applies newer weights between calls, beats to the
    broker); observe records the step and, every `horizon` steps, cuts,
    packs, compresses and pushes one segment per environment, then paces the
    actor (max_ahead). With `external` set, the caller runs its own forward
    pass: it reads the newest weights raw (vl_actor_weights_*) and hands its
    actions and their log-probs to vl_actor_act_external.

    Everything the caller passes is checked (sizes, NaN, flags 0 or 1,
    integer fields in their encoding's range); a bad call returns
    VL_ACTOR_EINVAL with the reason and records nothing. Not thread-safe: one
    thread drives one actor. */
#ifndef VOLLEY_ACTOR_H
#define VOLLEY_ACTOR_H

#include <stddef.h>
#include <stdint.h>

#include <volley/volley.h>

#include "env.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vl_actor_s vl_actor_t;

/* What the calls return. */
enum {
    VL_ACTOR_OK = 0,
    VL_ACTOR_EINVAL = -1,   // a bad argument or call order; why says which
    VL_ACTOR_EFAIL = -2,    // a socket failed (why says so); the actor is done
    VL_ACTOR_EREFUSED = -3, // the broker refused this actor's spec (why: the field), or
                            // its CURVE key (why begins "CURVE: ", then what to check)
    VL_ACTOR_EINTR = -4,    // SIGINT/SIGTERM (vl_interrupted) or the wake fd is readable:
                            // from sync/act nothing was recorded (call again once the fd is
                            // drained); from observe the actor was cut off mid-send (close it)
};

typedef struct {
    const char *broker;  // HOST[:PORT] of the broker
    const char *policy;  // policy id to act for
    const vl_env_t *env; // the observation fields, action space and name; its functions unused
    uint32_t n_envs;     // environments per batch
    uint32_t horizon;    // steps per segment, as the learner's
    uint32_t hidden;     // hidden units, as the learner declares (external: still declared)
    uint32_t actor_id;   // in every segment
    uint64_t seed;       // action sampling, mixed with actor_id
    uint32_t max_ahead;  // segments per env on one weights version before waiting (0: never)
    int wait_ms;         // longest such wait
    int external;        // 1: the caller's forward pass (vl_actor_act_external, raw weights)
    int wake_fd;         // -1, or a fd whose readability ends any wait with VL_ACTOR_EINTR
    const char *model;   // the network, a model spec as the learner's (NULL or "": cnn for
                         // image observations, else mlp(hidden)); external: still declared
    /* NULL both, or our CURVE certificate from `volley keygen` (its secret key
       read from cert + "_secret") and the broker's public one, as `volley
       actor --cert --broker-key` */
    const char *cert;
    const char *broker_key;
} vl_actor_params_t;

/* Returns defaults: policy "default", 8 envs, horizon 64, hidden 64, seed 1,
   max_ahead 1, wait_ms 500, wake_fd -1; broker and env must be set. */
VL_EXPORT vl_actor_params_t vl_actor_params_default(void);

/* Creates an actor for the caller's environments and connects it to the
   broker, as a CURVE client of its own identity when cert is set. Returns
   it (caller closes), or NULL with the reason in why (a certificate that
   cannot be read among them). A broker that refuses that key (one it does
   not allow, or broker_key not its own) ends the first sync with
   VL_ACTOR_EREFUSED naming it, where `volley actor` waits for the key to
   be allowed. */
VL_EXPORT vl_actor_t *vl_actor_open(const vl_actor_params_t *params, char *why, size_t why_size);

/* Sets how observations are checked against their declared ranges: low and
   high [obs_dim] give each value's own range (-inf/+inf: no bound on that
   side; NULL both: each F32 field's range, as opened); mode says what a value
   outside it does: 0 refused (EINVAL, naming the element, its value and the
   range; the default), 1 taken after one warning, 2 taken unchecked. NaN,
   infinities and integer encodings out of range are refused in every mode.
   Returns VL_ACTOR_OK, or VL_ACTOR_EINVAL with why (nothing changed). */
VL_EXPORT int vl_actor_set_obs_check(vl_actor_t *self, int mode, const float *low,
                                     const float *high, char *why, size_t why_size);

/* Returns the floats per observation row (the fields' values). */
VL_EXPORT uint32_t vl_actor_obs_dim(const vl_actor_t *self);

/* Waits for the first weights (and the spec's first beat), then takes any
   newer weights without waiting and beats. Returns VL_ACTOR_OK, EINTR,
   EREFUSED or EFAIL. act calls it; an external caller calls it before its
   forward pass to read the newest weights. */
VL_EXPORT int vl_actor_sync(vl_actor_t *self, char *why, size_t why_size);

/* Acts on obs [n_envs][obs_dim] (n_values = n_envs * obs_dim) with volley's
   policy: writes actions [n_envs][dims] (the env's action space: a discrete
   choice as a whole number; a box action as sampled, to be clipped to the
   bounds before stepping the env) and their joint log-probs [n_envs].
   Returns VL_ACTOR_OK or an error code (EINVAL in external mode). */
VL_EXPORT int vl_actor_act(vl_actor_t *self, const float *obs, size_t n_values, float *actions,
                           float *logps, char *why, size_t why_size);

/* External mode: records that the caller acted on obs with actions
   [n_envs][dims] (each in the space: whole numbers 0 .. n[d] - 1, or finite
   box values, unclipped) of joint log-probs logps [n_envs] (finite; <= 0 for
   discrete kinds). */
VL_EXPORT int vl_actor_act_external(vl_actor_t *self, const float *obs, size_t n_values,
                                    const float *actions, const float *logps, char *why,
                                    size_t why_size);

/* Records the outcome of the last act: rewards [n_envs] (finite),
   terminated and truncated [n_envs] (0 or 1), next_obs [n_envs][obs_dim]
   (where an episode ended: the next episode's first observation) and
   final_obs [n_envs][obs_dim] (the ended episode's last one; read where
   truncated and not terminated; NULL only when no env is truncated). Every
   horizon steps pushes the segments and paces. */
VL_EXPORT int vl_actor_observe(vl_actor_t *self, const float *rewards, const uint8_t *terminated,
                               const uint8_t *truncated, const float *next_obs,
                               const float *final_obs, size_t n_values, char *why, size_t why_size);

/* Returns the version of the weights acting now (0 before the first). */
VL_EXPORT uint64_t vl_actor_weights_version(const vl_actor_t *self);

/* External mode: returns the number of tensors in the newest weights. */
VL_EXPORT uint32_t vl_actor_weights_count(const vl_actor_t *self);

#define VL_ACTOR_WEIGHTS_NDIM_MAX 4 // dimensions of a weights tensor (a conv weight's 4)

/* External mode: gives tensor i of the newest weights: its name, rank (1 ..
   VL_ACTOR_WEIGHTS_NDIM_MAX), shape as (rows, cols) (the first dimension
   and the product of the others) and data (rows * cols floats), valid
   until the next call on this actor. vl_actor_weights_shape gives every
   dimension. Returns 0, or -1 if there is no tensor i. */
VL_EXPORT int vl_actor_weights_tensor(const vl_actor_t *self, uint32_t i, const char **name,
                                      uint32_t *ndim, uint32_t shape[2], const float **data);

/* External mode: writes every dimension of tensor i of the newest weights
   into shape[VL_ACTOR_WEIGHTS_NDIM_MAX] (0 past its rank), as its
   publisher gave them (e.g. [32, 4, 8, 8]). Returns its rank, or -1 if
   there is no tensor i. */
VL_EXPORT int vl_actor_weights_shape(const vl_actor_t *self, uint32_t i,
                                     uint32_t shape[VL_ACTOR_WEIGHTS_NDIM_MAX]);

/* Returns the network the actor acts with, a model spec's canonical text
   (after the first sync: its learner's, when params.model was left unset);
   valid until the next call on this actor. */
VL_EXPORT const char *vl_actor_model(const vl_actor_t *self);

/* Returns the env steps recorded (n_envs per observe). */
VL_EXPORT uint64_t vl_actor_steps(const vl_actor_t *self);

/* Returns the segments pushed to the broker. */
VL_EXPORT uint64_t vl_actor_segments_sent(const vl_actor_t *self);

/* Stops the actor (queued segments get a second to leave), frees it and
   nulls the pointer; safe on NULL and twice. */
VL_EXPORT void vl_actor_close(vl_actor_t **self_p);

#ifdef __cplusplus
}
#endif

#endif
