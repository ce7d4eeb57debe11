/*  vl_notify: open-addressed routes by actor id. */
#include "vl_notify.h"

#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "../messages/vl_status.h"

#define S_ID_MAX    255
#define S_EVERY_NS  1000000000LL // one notice a second per actor and reason
#define S_PROBE_MAX 32           // probes before a full neighbourhood gives up

typedef struct {
    int used;
    uint32_t actor_id;
    uint8_t id[S_ID_MAX];
    size_t id_len;
    uint32_t reason_hash; // of the last notice
    int64_t told_ns;      // monotonic, when it was sent
} s_route_t;

struct vl_notify_s {
    s_route_t *slots;
    uint32_t cap; // power of two
};

vl_notify_t *vl_notify_new(uint32_t max)
{
    vl_notify_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->cap = 16;
    while (self->cap < 2 * max)
        self->cap *= 2;
    self->slots = calloc(self->cap, sizeof *self->slots);
    if (!self->slots)
        vl_notify_destroy(&self);
    return self;
}

void vl_notify_destroy(vl_notify_t **self_p)
{
    vl_notify_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    free(self->slots);
    free(self);
    *self_p = NULL;
}

/* Returns the slot of actor_id, or a free one to take (create), or NULL. */
static s_route_t *s_find(vl_notify_t *self, uint32_t actor_id, int create)
{
    uint32_t h = (actor_id * 2654435761u) & (self->cap - 1);
    for (uint32_t k = 0; k < S_PROBE_MAX && k < self->cap; k++) {
        s_route_t *r = &self->slots[(h + k) & (self->cap - 1)];
        if (r->used && r->actor_id == actor_id)
            return r;
        if (!r->used)
            return create ? r : NULL;
    }
    return NULL;
}

void vl_notify_route(vl_notify_t *self, uint32_t actor_id, const void *id, size_t len)
{
    s_route_t *r = s_find(self, actor_id, 1);
    if (!r || len == 0 || len > S_ID_MAX)
        return;
    if (!r->used)
        memset(r, 0, sizeof *r);
    r->used = 1;
    r->actor_id = actor_id;
    memcpy(r->id, id, len);
    r->id_len = len;
}

void vl_notify_send(void *sock, const void *id, size_t len, const char *what, const char *reason)
{
    if (zmq_send(sock, id, len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return;
    zmq_send(sock, VL_VERB_REFUSED, strlen(VL_VERB_REFUSED), ZMQ_SNDMORE);
    zmq_send(sock, what, strlen(what), ZMQ_SNDMORE);
    zmq_send(sock, reason, strlen(reason), 0);
}

/* Returns the FNV-1a hash of a text. */
static uint32_t s_hash(const char *text)
{
    uint32_t h = 2166136261u;
    for (; *text; text++)
        h = (h ^ (uint8_t)*text) * 16777619u;
    return h;
}

int vl_notify_refused(vl_notify_t *self, void *sock, uint32_t actor_id, const char *what,
                      const char *reason, int64_t now_ns)
{
    s_route_t *r = s_find(self, actor_id, 0);
    uint32_t h = s_hash(reason);
    if (!r || (r->reason_hash == h && now_ns - r->told_ns < S_EVERY_NS))
        return 0;
    vl_notify_send(sock, r->id, r->id_len, what, reason);
    r->reason_hash = h;
    r->told_ns = now_ns;
    return 1;
}
