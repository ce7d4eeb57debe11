/*  vl_notify: telling an actor why the broker or its learner refused it.
    Actors beat on the control port; the routing id of each actor's last
    beat is kept (a bounded table), so a refusal can be sent back to the
    actor that caused it as ["REFUSED"][what][reason], at most once a second
    per actor and reason. */
#ifndef VL_NOTIFY_H
#define VL_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

typedef struct vl_notify_s vl_notify_t;

/* Creates a table for up to max actors. Returns NULL on no memory. */
vl_notify_t *vl_notify_new(uint32_t max);

/* Frees the table and nulls the pointer; safe on NULL and twice. */
void vl_notify_destroy(vl_notify_t **self_p);

/* Notes that actor_id beats from routing id [id, id + len) (len <= 255). */
void vl_notify_route(vl_notify_t *self, uint32_t actor_id, const void *id, size_t len);

/* Sends ["REFUSED"][what][reason] to actor_id through the control ROUTER
   sock if its route is known and it was not told this reason in the last
   second (now_ns monotonic). Returns 1 if sent, 0 if not. */
int vl_notify_refused(vl_notify_t *self, void *sock, uint32_t actor_id, const char *what,
                      const char *reason, int64_t now_ns);

/* Sends ["REFUSED"][what][reason] to a routing id now. */
void vl_notify_send(void *sock, const void *id, size_t len, const char *what, const char *reason);

#endif
