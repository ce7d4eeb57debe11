/*  vl_roster: per-actor accounting in an open-addressed table keyed by
    (actor id, policy). When the table is full, a new actor takes the place
    of the one silent longest; if none is silent it is not tracked (its
    segments are still routed and counted by the broker). */
#include "vl_roster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"

#define S_WINDOW_NS 1000000000LL // rates are over windows of this length

typedef struct {
    int used;
    uint32_t actor_id;
    char policy[VL_POLICY_ID_MAX];
    int have_seq;
    uint64_t last_seq;
    uint64_t first_seq; // the first this broker saw: what the actor sent before it
    uint64_t segments, seq_gaps;
    uint32_t restarts;
    int64_t heard_ns; // monotonic, last segment or beat
    int silent;       // 1 once logged as silent
    // the current window
    uint64_t win_segments;
    double win_send_ms;
    uint64_t win_send_n; // segments with a usable send stamp
    // the last closed window
    float segments_per_s, send_ms;
    // from the last beat
    uint64_t weights_version;
    float apply_ms, env_steps_per_s;
} s_actor_t;

struct vl_roster_s {
    s_actor_t *slots;
    uint32_t cap; // power of two, >= 2 * max
    uint32_t max, count;
    int64_t timeout_ns;
    int64_t window_start_ns;
    int64_t no_evict_until_ns; // the last scan found every actor alive: none before this
};

vl_roster_t *vl_roster_new(uint32_t max_actors, int64_t timeout_ns)
{
    vl_roster_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->cap = 16;
    while (self->cap < 2 * max_actors)
        self->cap *= 2;
    self->max = max_actors;
    self->timeout_ns = timeout_ns;
    self->slots = calloc(self->cap, sizeof *self->slots);
    if (!self->slots)
        vl_roster_destroy(&self);
    return self;
}

void vl_roster_destroy(vl_roster_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->slots);
    free(*self_p);
    *self_p = NULL;
}

/* Returns the table index an (id, policy) hashes to (FNV-1a). */
static uint32_t s_hash(const vl_roster_t *self, uint32_t id, const char *policy)
{
    uint32_t h = 2166136261u ^ id;
    h *= 16777619u;
    for (const char *p = policy; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return h & (self->cap - 1);
}

/* Returns the slot of (id, policy), or the empty slot where it would go. */
static s_actor_t *s_probe(vl_roster_t *self, uint32_t id, const char *policy)
{
    for (uint32_t i = s_hash(self, id, policy);; i = (i + 1) & (self->cap - 1)) {
        s_actor_t *a = &self->slots[i];
        if (!a->used || (a->actor_id == id && strcmp(a->policy, policy) == 0))
            return a;
    }
}

/* Removes the actor silent longest to make room (re-inserting the rest of
   its probe run). Returns 0, or -1 if every actor is alive. */
static int s_evict_silent(vl_roster_t *self, int64_t now_ns)
{
    s_actor_t *oldest = NULL;
    for (uint32_t i = 0; i < self->cap; i++) {
        s_actor_t *a = &self->slots[i];
        if (a->used && now_ns - a->heard_ns > self->timeout_ns &&
            (!oldest || a->heard_ns < oldest->heard_ns))
            oldest = a;
    }
    if (!oldest)
        return -1;
    oldest->used = 0;
    self->count--;
    for (uint32_t i = ((uint32_t)(oldest - self->slots) + 1) & (self->cap - 1); self->slots[i].used;
         i = (i + 1) & (self->cap - 1)) {
        s_actor_t moved = self->slots[i];
        self->slots[i].used = 0;
        *s_probe(self, moved.actor_id, moved.policy) = moved;
    }
    return 0;
}

/* Returns the actor's entry, adding it if new; NULL if the table is full of
   live actors. */
static s_actor_t *s_find(vl_roster_t *self, uint32_t id, const char *policy, int64_t now_ns)
{
    s_actor_t *a = s_probe(self, id, policy);
    if (a->used)
        return a;
    if (self->count == self->max) {
        // Full of live actors: an untracked one would scan the table on every segment.
        if (now_ns < self->no_evict_until_ns)
            return NULL;
        if (s_evict_silent(self, now_ns) != 0) {
            self->no_evict_until_ns = now_ns + S_WINDOW_NS;
            return NULL;
        }
        a = s_probe(self, id, policy);
    }
    memset(a, 0, sizeof *a);
    a->used = 1;
    a->actor_id = id;
    snprintf(a->policy, sizeof a->policy, "%s", policy);
    self->count++;
    vl_info("actor %u (policy '%s') joined", id, policy);
    return a;
}

/* Marks an actor heard from now, logging a return from silence. */
static void s_heard(s_actor_t *a, int64_t now_ns)
{
    if (a->silent) {
        a->silent = 0;
        vl_info("actor %u (policy '%s') is back", a->actor_id, a->policy);
    }
    a->heard_ns = now_ns;
}

void vl_roster_segment(vl_roster_t *self, uint32_t actor_id, const char *policy, uint64_t seq,
                       int64_t send_ns, int64_t wall_ns, int64_t now_ns)
{
    s_actor_t *a = s_find(self, actor_id, policy, now_ns);
    if (!a)
        return;
    s_heard(a, now_ns);
    if (a->have_seq && seq > a->last_seq)
        a->seq_gaps += seq - a->last_seq - 1;
    else if (a->have_seq)
        a->restarts++; // numbers started again: a restarted actor, or a duplicate id
    if (!a->have_seq)
        a->first_seq = seq;
    a->have_seq = 1;
    a->last_seq = seq;
    a->segments++;
    a->win_segments++;
    double span = vl_span_ms(send_ns, wall_ns); // two hosts' clocks: may be skewed
    if (span >= 0) {
        a->win_send_ms += span;
        a->win_send_n++;
    }
}

void vl_roster_beat(vl_roster_t *self, const vl_beat_t *beat, int64_t now_ns)
{
    s_actor_t *a = s_find(self, beat->actor_id, beat->policy_id, now_ns);
    if (!a)
        return;
    s_heard(a, now_ns);
    a->weights_version = beat->weights_version;
    a->apply_ms = beat->apply_ms;
    a->env_steps_per_s = beat->env_steps_per_s;
}

/* Closes an actor's rate window of `elapsed` ns. */
static void s_close_window(s_actor_t *a, int64_t elapsed)
{
    a->segments_per_s = (float)(a->win_segments * 1e9 / (double)elapsed);
    a->send_ms = a->win_send_n ? (float)(a->win_send_ms / (double)a->win_send_n) : 0.0f;
    a->win_segments = a->win_send_n = 0;
    a->win_send_ms = 0.0;
}

void vl_roster_tick(vl_roster_t *self, int64_t now_ns)
{
    if (self->window_start_ns == 0)
        self->window_start_ns = now_ns;
    int64_t elapsed = now_ns - self->window_start_ns;
    if (elapsed < S_WINDOW_NS)
        return;
    for (uint32_t i = 0; i < self->cap; i++) {
        s_actor_t *a = &self->slots[i];
        if (!a->used)
            continue;
        s_close_window(a, elapsed);
        if (!a->silent && now_ns - a->heard_ns > self->timeout_ns) {
            a->silent = 1;
            vl_warn("actor %u (policy '%s') went silent (%.1f s without a segment or beat)",
                    a->actor_id, a->policy, (double)(now_ns - a->heard_ns) / 1e9);
        }
    }
    self->window_start_ns = now_ns;
}

uint32_t vl_roster_count(const vl_roster_t *self)
{
    return self->count;
}

uint32_t vl_roster_alive(const vl_roster_t *self)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < self->cap; i++)
        n += self->slots[i].used && !self->slots[i].silent;
    return n;
}

/* Orders rows by policy, then actor id. */
static int s_row_cmp(const void *a, const void *b)
{
    const Volley__ActorRow *x = a, *y = b;
    int c = strcmp(x->policy_id, y->policy_id);
    if (c)
        return c;
    return (x->actor_id > y->actor_id) - (x->actor_id < y->actor_id);
}

void vl_roster_rows(const vl_roster_t *self, Volley__ActorRow *rows, int64_t now_ns)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < self->cap; i++) {
        const s_actor_t *a = &self->slots[i];
        if (!a->used)
            continue;
        Volley__ActorRow *r = &rows[n++];
        r->actor_id = a->actor_id;
        r->policy_id = (char *)a->policy;
        r->segments = a->segments;
        r->seq_gaps = a->seq_gaps;
        r->restarts = a->restarts;
        r->sent_before = a->first_seq;
        r->segments_per_s = a->segments_per_s;
        r->send_ms = a->send_ms;
        r->weights_version = a->weights_version;
        r->apply_ms = a->apply_ms;
        r->env_steps_per_s = a->env_steps_per_s;
        r->silent_s = (float)((now_ns - a->heard_ns) / 1e9);
        r->alive = now_ns - a->heard_ns <= self->timeout_ns;
    }
    qsort(rows, n, sizeof *rows, s_row_cmp);
}

uint64_t vl_roster_sent_before(const vl_roster_t *self, const char *policy)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < self->cap; i++) {
        const s_actor_t *a = &self->slots[i];
        if (a->used && a->have_seq && strcmp(a->policy, policy) == 0)
            n += a->first_seq;
    }
    return n;
}
