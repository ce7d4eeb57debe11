/*  vl_learner_spec: what a learner trains, settled with the broker before it
    starts. A learner that has its environment declares the policy's spec
    (SPEC on the control port); one without asks for it (GETSPEC) and waits
    until an actor has declared it. */
#ifndef VL_LEARNER_SPEC_H
#define VL_LEARNER_SPEC_H

#include "vl_learner_config.h"

/* Settles c's spec with the broker at c->broker: with c->env, declares it
   and waits for the broker's OK; without, asks each second (logging while it
   waits) and sets c from the answer (vl_learner_config_set_spec). Returns 0,
   1 when interrupted or on a socket error, 2 when the broker refused our
   spec or sent one this learner cannot serve (logged, with the field). */
int vl_learner_spec_settle(vl_learner_config_t *c);

/* Settles like vl_learner_spec_settle, declaring c's spec when `declare`
   (else fetching it), for at most timeout_ms (-1: until interrupted). On 1
   or 2 writes why into why (if not NULL). Returns 0, 1 (interrupted, timed
   out, or a socket error) or 2. */
int vl_learner_spec_settle_within(vl_learner_config_t *c, int declare, int timeout_ms, char *why,
                                  size_t why_size);

#endif
