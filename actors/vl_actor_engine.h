/*  vl_actor_engine: the actor's state and the engine's steps, shared by
    vl_actor.c (sockets, weights, beats, segments, pacing) and
    vl_actor_step.c (the step API's checked calls and `volley actor`'s loop
    over C environments). Private to actors/. */
#ifndef VL_ACTOR_ENGINE_H
#define VL_ACTOR_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vl_rng.h"
#include "../common/vl_sock.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_spec.h"
#include "../models/vl_policy.h"
#include "vl_actor.h"
#include "vl_actor_check.h"

#define VL_ACTOR_NAME_MAX       64 // an env name, as vl_env.c allows
#define VL_ACTOR_REASONS_LOGGED 16 // distinct refusal reasons an actor logs (then it only counts)

struct vl_actor_s {
    vl_actor_params_t c; // broker and policy point at the copies below
    char broker[256];
    char policy_id[VL_POLICY_ID_MAX];
    char env_name[VL_ACTOR_NAME_MAX];
    char model[VL_SPEC_MODEL_MAX]; // the model spec's canonical text
    int follows;                   // no model given: act with the network the policy's spec names
    int adopted;                   // a follower has built the policy's network (it may act)
    vl_weights_t *waiting;         // a follower's weights that came before the policy's spec
    vl_env_ops_t ops;              // the env's spec; table NULL for a caller's env
    uint32_t N, D, A;              // envs, observation size, head outputs (vl_action_outputs)
    uint32_t W;                    // values per action (the space's dims)
    uint32_t S;                    // floats of the policy's recurrent state per env (0: memoryless)
    vl_spec_t spec;                // what our segments look like, declared in every beat
    /* each observation value's declared range, and what --obs-check does */
    vl_obs_rules_t obs_rules;
    void *ctx, *push, *sub;
    void *control;     // DEALER to the broker's control port: beats out, refusals in
    vl_curve_t *curve; // the caller's own CURVE identity (params.cert); NULL: the process's
    vl_curve_watch_t *watch[3]; // with CURVE, per socket: a refused key logged, retried
    vl_policy_t *policy;        // volley's forward pass (NULL when external)
    vl_weights_t *raw;          // external: the newest weights as they came
    uint64_t version;           // weights version acting now
    int have_weights;
    uint32_t rounds_on_version; // segments per env cut since those weights came
    int started;                // the first weights came and acting was logged
    int acted;                  // an act waits for its observe
    int dead;                   // a code that ended the actor (a send failed, a refusal)
    int woken;                  // the last poll found the wake fd readable
    uint32_t t;                 // step of the segments being filled
    uint64_t seg_version;       // weights version at their first step
    vl_envs_t *envs;            // `volley actor`'s environments (NULL: the caller's)
    float *obs;                 // [N][D] observations acted on, then the next ones
    float *final_obs;           // [N][D] where an episode just ended
    float *rewards;             // [N]
    uint8_t *term, *trunc;      // [N]
    float *actions;             // [N][W] as sampled (a box's unclipped)
    float *logps;               // [N]
    float *state;               // [N][S] each env's recurrent state, zero at an episode's start
    float *logits;              // [N][A] the head's outputs
    float *ep_return;           // [N] running episode return
    uint32_t *ep_len;           // [N]
    vl_segment_t *segs;         // [N], arrays bound into `arrays`
    uint8_t *arrays;
    size_t arrays_size; // per env
    uint64_t seq;
    vl_rng_t rng;
    vl_limits_t limits;
    uint64_t steps, sent;
    int warned_load;
    int refused_spec;                              // the broker refused our spec or own key: stop
    char refusal[VL_SPEC_REASON_MAX];              // its reason ("CURVE: ..." for the key)
    uint64_t refused;                              // refusals of our segments the broker reported
    uint32_t reason_hash[VL_ACTOR_REASONS_LOGGED]; // reasons logged already
    int n_reasons;
    // since the last beat
    int64_t beat_ns;     // monotonic, when it was sent
    uint64_t beats_out;  // beats a connection took: the first carried our spec to the broker
    uint64_t beat_steps; // self->steps then
    double apply_ms_sum; // weights publish -> applied
    float apply_ms_max;
    uint32_t applied;
};

/* Writes the reason into why (may be NULL); returns code. */
__attribute__((format(printf, 4, 5))) int vl_actor_fail(int code, char *why, size_t size,
                                                        const char *fmt, ...);

/* Returns the code that ended the actor (self->dead), with its reason. */
int vl_actor_dead(vl_actor_t *self, char *why, size_t size);

/* Begins a step on self->obs: syncs (vl_actor_sync), notes the weights
   version of a new segment and writes the observations into row t of every
   segment. Returns VL_ACTOR_OK or the code that stopped it. */
int vl_actor_begin_step(vl_actor_t *self, char *why, size_t size);

/* Begins a step and acts on self->obs with volley's policy into
   self->actions and self->logps. */
int vl_actor_act_policy(vl_actor_t *self, char *why, size_t size);

/* Records the outcome arrays (rewards, term, trunc, final_obs) of the step;
   every horizon steps pushes the segments (bootstrapping from self->obs, the
   next observations) and paces. */
int vl_actor_end_step(vl_actor_t *self, char *why, size_t size);

#endif
