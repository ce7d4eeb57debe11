/*  vl_roster: the broker's book of actors. For each actor (by id and
    policy) it counts the segments received, the sequence numbers missing
    (lost in transit) and restarts (numbers starting again), the time from
    the actor's send to the broker's receive, and what the actor's beats
    report; once a second it turns counts into rates and notices actors
    silent for longer than the timeout. */
#ifndef VL_ROSTER_H
#define VL_ROSTER_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_status.h"

typedef struct vl_roster_s vl_roster_t;

/* Creates a roster for at most max_actors actors, calling one silent after
   timeout_ns without a segment or beat. NULL on no memory. */
vl_roster_t *vl_roster_new(uint32_t max_actors, int64_t timeout_ns);

/* Counts a segment: actor id, policy, sequence number, the actor's wall-clock
   send time and the broker's (wall_ns) and monotonic (now_ns) receive time. */
void vl_roster_segment(vl_roster_t *self, uint32_t actor_id, const char *policy, uint64_t seq,
                       int64_t send_ns, int64_t wall_ns, int64_t now_ns);

/* Takes an actor's beat received at monotonic now_ns. */
void vl_roster_beat(vl_roster_t *self, const vl_beat_t *beat, int64_t now_ns);

/* Closes the rate window if a second has passed since the last; logs
   actors that went silent or came back. Call often. */
void vl_roster_tick(vl_roster_t *self, int64_t now_ns);

/* Returns the actors known (alive or silent). */
uint32_t vl_roster_count(const vl_roster_t *self);

/* Returns the actors heard from within the timeout. */
uint32_t vl_roster_alive(const vl_roster_t *self);

/* Fills rows[0 .. vl_roster_count) in (policy, actor id) order (caller's storage, each initialised
   by the caller with VOLLEY__ACTOR_ROW__INIT) as of monotonic now_ns. The rows' policy ids point
   into the roster: valid until its next call. */
void vl_roster_rows(const vl_roster_t *self, Volley__ActorRow *rows, int64_t now_ns);

/* Returns what the actors of policy sent before this broker heard from
   them: the sum of the first sequence number it saw from each. */
uint64_t vl_roster_sent_before(const vl_roster_t *self, const char *policy);

/* Frees the roster and nulls the pointer; safe on NULL and twice. */
void vl_roster_destroy(vl_roster_t **self_p);

#endif
