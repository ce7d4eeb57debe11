/*  vl_actor: an actor process's engine. One engine, two drivers: the public
    step API (include/volley/actor.h: the caller steps its environments and
    calls act/observe) and `volley actor`, whose loop over C environments
    (vl_actor_run) is a caller of the same act and observe. The engine runs
    the policy's forward pass on the batch, samples actions, cuts one
    segment per environment every `horizon` steps and pushes it to the
    broker; between steps it applies the newest weights from its SUB
    socket. */
#ifndef VL_ACTOR_H
#define VL_ACTOR_H

#include <stdint.h>

#include "../envs/vl_env.h"
#include "../include/volley/actor.h"

typedef struct {
    const char *broker;      // HOST[:PORT] of the broker
    const char *policy;      // policy id this actor acts for
    const vl_env_ops_t *env; // environment to step
    const char *env_arg;     // handed to the env's create (NULL: none)
    uint32_t n_envs;         // environments stepped together
    uint32_t horizon;        // steps per segment
    uint32_t hidden;         // hidden units; must match the learner's
    const char *model;       // model spec, as the learner's (NULL: the default for the obs)
    uint32_t actor_id;
    uint64_t seed;      // mixed with actor_id: one --seed serves a fleet
    uint32_t max_ahead; // segments per env on one weights version before
                        // waiting for newer ones (0: never wait)
    int wait_ms;        // longest such wait, then act on what it has
    /* what an observation value outside its declared range does (--obs-check) */
    vl_obs_check_t obs_check;
} vl_actor_config_t;

/* Returns defaults: cartpole, policy "default", 8 envs, horizon 64, hidden 64. */
vl_actor_config_t vl_actor_config_default(void);

/* Creates an actor stepping C environments and connects it to the broker.
   Returns NULL after logging why. Caller destroys. */
vl_actor_t *vl_actor_new(const vl_actor_config_t *config);

/* Acts until vl_interrupted is set. Returns 0, -1 on a socket or
   environment error, -2 when the broker refused this actor's spec. */
int vl_actor_run(vl_actor_t *self);

/* Frees the actor and nulls the pointer; safe on NULL and twice. */
void vl_actor_destroy(vl_actor_t **self_p);

/* The `volley actor` command. Returns the process exit code. */
int vl_actor_main(int argc, char **argv);

#endif
