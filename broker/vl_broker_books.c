/*  vl_broker_books: what the broker counts (received = routed + dropped by
    kind and reason + queued; apart from that sum, what its learners dropped
    after routing, from their stats), its status message and its log lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_proc.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_status.h"
#include "vl_broker_engine.h"

static const char *s_kind_names[VLB_KINDS] = {"segments", "hellos", "credits",       "publications",
                                              "commands", "specs",  "subscriptions", "connections"};

/* The causes of a learner's own drops, as its drop rows name them. */
static const char *s_learner_causes[VLB_LEARNER_CAUSES] = {
    [VLB_LEARNER_LAG] = "lag (older than --max-lag)",
    [VLB_LEARNER_CAPACITY] = "capacity",
    [VLB_LEARNER_BUDGET] = "budget",
    [VLB_LEARNER_INVALID] = "invalid",
};

const char *vl_books_reason_str(int reason)
{
    static const char *own[] = {
        [VLB_DROP_NO_LEARNER - VL_EREASONS] = "no learner serves its policy",
        [VLB_DROP_QUEUE_FULL - VL_EREASONS] = "learner queue full",
        [VLB_DROP_QUEUE_BYTES - VL_EREASONS] = "learner queue over its byte bound",
        [VLB_DROP_GONE - VL_EREASONS] = "learner gone",
        [VLB_DROP_STALE - VL_EREASONS] = "too stale",
        [VLB_DROP_VERB - VL_EREASONS] = "unknown verb",
        [VLB_DROP_ROLE - VL_EREASONS] = "role: the peer may not do this",
        [VLB_DROP_HELD - VL_EREASONS] = "role: another live learner holds the policy",
        [VLB_DROP_NOT_HOLDER - VL_EREASONS] = "role: not from the learner holding the policy",
        [VLB_DROP_OLD_VERSION - VL_EREASONS] = "version not newer than the learner's last",
        [VLB_DROP_TOPIC - VL_EREASONS] = "bound: topic is no policy id (or over 63 bytes)",
        [VLB_DROP_TOPICS - VL_EREASONS] = "bound: subscription topics full",
        [VLB_DROP_RESEND - VL_EREASONS] = "bound: cached-value resends over their rate",
        [VLB_DROP_JUNK - VL_EREASONS] = "junk: not a subscription",
        [VLB_DROP_PER_CONN - VL_EREASONS] = "bound: subscriptions per connection (cut)",
        [VLB_DROP_CEILING - VL_EREASONS] = "bound: declared size over its policy's ceiling",
        [VLB_DROP_CONNS_ADDR - VL_EREASONS] =
            "bound: connections per address (--max-conns-per-addr)",
        [VLB_DROP_CONNS - VL_EREASONS] = "bound: connections per port (--max-conns)",
    };
    if (reason >= VL_EREASONS && reason < VLB_DROP_REASONS)
        return own[reason - VL_EREASONS];
    return vl_reason_str((vl_reason_t)reason);
}

void vl_books_refuse_peer(vl_broker_t *self, int kind, int reason, const vl_peer_t *peer,
                          const char *policy)
{
    vl_books_drop(self, kind, reason, policy);
    if (vl_roles_log_once(self->roles, peer))
        vl_warn("refusing %s from %s%s%s%s: %s; logged once per peer", s_kind_names[kind],
                peer->who, policy ? " (policy '" : "", policy ? policy : "", policy ? "')" : "",
                vl_books_reason_str(reason));
}

/* Counts a dropped message; the first drop of each kind and reason is
   logged. */
void vl_books_drop(vl_broker_t *self, int kind, int reason, const char *policy)
{
    if (self->dropped[kind][reason]++ == 0)
        vl_warn("dropping %s: %s%s%s%s; logged once, counted after", s_kind_names[kind],
                vl_books_reason_str(reason), policy ? " (policy '" : "", policy ? policy : "",
                policy ? "')" : "");
}

/* Counts n drops under a reason text; the first of each text is logged. A
   text beyond the table's room is counted as VL_EMISMATCH. */
void vl_books_drop_text(vl_broker_t *self, int kind, const char *text, uint64_t n)
{
    for (int i = 0; i < self->n_text_drops; i++) {
        vlb_text_drop_t *d = &self->text_drops[i];
        if (d->kind == kind && strcmp(d->text, text) == 0) {
            d->count += n;
            return;
        }
    }
    if (self->n_text_drops == VLB_TEXT_DROPS) {
        vl_books_drop(self, kind, VL_EMISMATCH, NULL);
        self->dropped[kind][VL_EMISMATCH] += n - 1;
        return;
    }
    vlb_text_drop_t *d = &self->text_drops[self->n_text_drops++];
    d->kind = kind;
    snprintf(d->text, sizeof d->text, "%s", text);
    d->count = n;
    vl_warn("dropping %s: %s; logged once, counted after", s_kind_names[kind], text);
}

/* Returns the number of segments queued for all learners. */
uint64_t vl_books_queued(const vl_broker_t *self)
{
    uint64_t queued = 0;
    for (int i = 0; i < self->n_learners; i++)
        queued += self->learners[i].queued;
    return queued;
}

/* Returns the number of segments dropped, all reasons. */
uint64_t vl_books_dropped(const vl_broker_t *self)
{
    uint64_t dropped = 0;
    for (int r = 0; r < VLB_DROP_REASONS; r++)
        dropped += self->dropped[VLB_SEGMENT][r];
    for (int i = 0; i < self->n_text_drops; i++)
        dropped += self->text_drops[i].kind == VLB_SEGMENT ? self->text_drops[i].count : 0;
    return dropped;
}

void vl_books_learner_drops(const vlb_learner_t *l, uint64_t *out)
{
    memset(out, 0, VLB_LEARNER_CAUSES * sizeof out[0]);
    if (!l->have_stats)
        return;
    uint64_t booked = 0; // refusals already among the segment drops (vl_broker_lvc.c)
    for (int k = 0; k < l->n_refusals; k++)
        booked += l->refusals[k].counted;
    out[VLB_LEARNER_LAG] = l->stats.dropped_lag;
    out[VLB_LEARNER_CAPACITY] = l->stats.dropped_capacity;
    out[VLB_LEARNER_BUDGET] = l->stats.dropped_budget;
    out[VLB_LEARNER_INVALID] =
        l->stats.dropped_invalid > booked ? l->stats.dropped_invalid - booked : 0;
}

void vl_books_learner_gone(vl_broker_t *self, const vlb_learner_t *l)
{
    uint64_t drops[VLB_LEARNER_CAUSES];
    vl_books_learner_drops(l, drops);
    for (int c = 0; c < VLB_LEARNER_CAUSES; c++)
        self->learner_gone[c] += drops[c];
}

uint64_t vl_books_learners_dropped(const vl_broker_t *self, uint64_t *out)
{
    uint64_t sum = 0, drops[VLB_LEARNER_CAUSES];
    memcpy(out, self->learner_gone, VLB_LEARNER_CAUSES * sizeof out[0]);
    for (int i = 0; i < self->n_learners; i++) {
        vl_books_learner_drops(&self->learners[i], drops);
        for (int c = 0; c < VLB_LEARNER_CAUSES; c++)
            out[c] += drops[c];
    }
    for (int c = 0; c < VLB_LEARNER_CAUSES; c++)
        sum += out[c];
    return sum;
}

/* Returns the segments of a learner's policy lost with (or dropped by) an
   earlier broker: what its actors sent before this one, less what the
   learner had received when it first gave us credit. 0 until it did, and for
   a learner that had received nothing (a new one: it cannot say). */
static uint64_t s_lost_before(const vl_broker_t *self, const vlb_learner_t *l)
{
    if (!l->credited || l->base_received == 0)
        return 0;
    uint64_t sent = vl_roster_sent_before(self->roster, l->policy);
    return sent > l->base_received ? sent - l->base_received : 0;
}

/* Fills one learner's row (stats into *stats, which the row then points to). */
static void s_learner_row(const vl_broker_t *self, const vlb_learner_t *l, int64_t now,
                          Volley__LearnerRow *r, Volley__Stats *stats, vl_stats_figures_t *figures)
{
    volley__learner_row__init(r);
    r->policy_id = (char *)l->policy;
    r->credit = vl_learners_credit(l);
    r->queued = l->queued;
    r->queued_bytes = l->queued_bytes;
    r->delivered = l->delivered;
    r->delivered_per_s = l->delivered_per_s;
    r->paused = l->paused;
    r->silent_s = (float)((now - l->seen_ns) / 1e9);
    r->epoch = l->epoch;
    r->version = l->newest_version;
    r->peer = (char *)l->holder;
    r->lost_before = s_lost_before(self, l);
    if (l->have_stats) {
        vl_stats_to_msg(&l->stats, stats, figures);
        r->stats = stats;
    }
}

/* Status rows, allocated together and freed together. */
typedef struct {
    Volley__ActorRow *actors;
    Volley__ActorRow **actor_ptrs;
    Volley__LearnerRow learners[VLB_MAX_LEARNERS];
    Volley__LearnerRow *learner_ptrs[VLB_MAX_LEARNERS];
    Volley__Stats stats[VLB_MAX_LEARNERS];
    vl_stats_figures_t stats_figures[VLB_MAX_LEARNERS];
    Volley__DropRow drops[VLB_KINDS * VLB_DROP_REASONS + VLB_TEXT_DROPS + VLB_LEARNER_CAUSES];
    Volley__DropRow *drop_ptrs[VLB_KINDS * VLB_DROP_REASONS + VLB_TEXT_DROPS + VLB_LEARNER_CAUSES];
    uint64_t learner_drops[VLB_LEARNER_CAUSES];
    Volley__Spec specs[VLB_MAX_SPECS];
    Volley__Spec *spec_ptrs[VLB_MAX_SPECS];
    Volley__ObsField fields[VLB_MAX_SPECS][VL_OBS_FIELDS_MAX];
    Volley__ObsField *field_ptrs[VLB_MAX_SPECS][VL_OBS_FIELDS_MAX];
    Volley__ActionSpace actions[VLB_MAX_SPECS];
} s_status_rows_t;

/* Adds a row to the drop rows of st. */
static void s_drop_row(s_status_rows_t *rows, size_t *n, const char *kind, const char *reason,
                       uint64_t count)
{
    Volley__DropRow *d = &rows->drops[*n];
    volley__drop_row__init(d);
    d->kind = (char *)kind;
    d->reason = (char *)reason;
    d->count = count;
    rows->drop_ptrs[(*n)++] = d;
}

/* Fills the drop rows of st from the counters (non-zero ones only): the
   broker's own, then the learners' after routing (st->learner_dropped). */
static void s_drop_rows(const vl_broker_t *self, Volley__Status *st, s_status_rows_t *rows)
{
    size_t n = 0;
    for (int k = 0; k < VLB_KINDS; k++)
        for (int r = 1; r < VLB_DROP_REASONS; r++)
            if (self->dropped[k][r])
                s_drop_row(rows, &n, s_kind_names[k], vl_books_reason_str(r), self->dropped[k][r]);
    for (int i = 0; i < self->n_text_drops; i++) {
        const vlb_text_drop_t *t = &self->text_drops[i];
        s_drop_row(rows, &n, s_kind_names[t->kind], t->text, t->count);
    }
    st->learner_dropped = vl_books_learners_dropped(self, rows->learner_drops);
    for (int c = 0; c < VLB_LEARNER_CAUSES; c++)
        if (rows->learner_drops[c])
            s_drop_row(rows, &n, "learner", s_learner_causes[c], rows->learner_drops[c]);
    st->n_drops = n;
    st->drops = rows->drop_ptrs;
}

/* Fills the spec rows of st: each policy's declared spec. */
static void s_spec_rows(const vl_broker_t *self, Volley__Status *st, s_status_rows_t *rows)
{
    uint32_t n = vl_specs_count(self->specs);
    for (uint32_t i = 0; i < n && i < VLB_MAX_SPECS; i++) {
        vl_spec_to_msg(vl_specs_at(self->specs, i), &rows->specs[i], rows->fields[i],
                       rows->field_ptrs[i], &rows->actions[i]);
        rows->spec_ptrs[i] = &rows->specs[i];
    }
    st->n_specs = n < VLB_MAX_SPECS ? n : VLB_MAX_SPECS;
    st->specs = rows->spec_ptrs;
}

/* Builds the Status of the broker now into st, with its rows in *rows.
   Returns 0, or -1 on no memory (nothing to free then). */
static int s_status_build(vl_broker_t *self, Volley__Status *st, s_status_rows_t *rows)
{
    int64_t now = vl_now_ns();
    uint32_t n = vl_roster_count(self->roster);
    rows->actors = calloc(n ? n : 1, sizeof *rows->actors);
    rows->actor_ptrs = calloc(n ? n : 1, sizeof *rows->actor_ptrs);
    if (!rows->actors || !rows->actor_ptrs) {
        free(rows->actors);
        free(rows->actor_ptrs);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        volley__actor_row__init(&rows->actors[i]);
        rows->actor_ptrs[i] = &rows->actors[i];
    }
    vl_roster_rows(self->roster, rows->actors, now);
    volley__status__init(st);
    st->uptime_s = (double)(now - self->start_ns) / 1e9;
    st->received = self->received;
    st->routed = self->routed;
    st->dropped = vl_books_dropped(self);
    st->queued = vl_books_queued(self);
    st->received_per_s = self->received_per_s;
    st->queue_bytes_bound = self->queue_bytes;
    st->rss_bytes = vl_proc_rss_bytes();
    st->n_actors = n;
    st->actors = rows->actor_ptrs;
    for (int i = 0; i < self->n_learners; i++) {
        s_learner_row(self, &self->learners[i], now, &rows->learners[i], &rows->stats[i],
                      &rows->stats_figures[i]);
        st->lost_before += rows->learners[i].lost_before;
        rows->learner_ptrs[i] = &rows->learners[i];
    }
    st->n_learners = (size_t)self->n_learners;
    st->learners = rows->learner_ptrs;
    s_drop_rows(self, st, rows);
    s_spec_rows(self, st, rows);
    if (self->recorder) {
        const char *why = vl_recorder_error(self->recorder);
        st->recording = 1;
        st->recorded = vl_recorder_written(self->recorder);
        st->record_lost = vl_recorder_lost(self->recorder);
        st->record_error = (char *)(why ? why : "");
    }
    return 0;
}

/* Logs the broker's counters as key=value lines: one for the broker, one
   per learner. */
void vl_books_log_status(vl_broker_t *self)
{
    uint64_t by[VLB_LEARNER_CAUSES], learner_dropped = vl_books_learners_dropped(self, by);
    vl_info("status received=%llu routed=%llu dropped=%llu queued=%llu received_per_s=%.1f "
            "actors=%u alive=%u learners=%d rss_bytes=%llu learner_dropped=%llu",
            (unsigned long long)self->received, (unsigned long long)self->routed,
            (unsigned long long)vl_books_dropped(self), (unsigned long long)vl_books_queued(self),
            (double)self->received_per_s, vl_roster_count(self->roster),
            vl_roster_alive(self->roster), self->n_learners, vl_proc_rss_bytes(),
            (unsigned long long)learner_dropped);
    if (self->recorder) {
        const char *why = vl_recorder_error(self->recorder);
        vl_info("recording recorded=%llu record_lost=%llu degraded=%d%s%s",
                (unsigned long long)vl_recorder_written(self->recorder),
                (unsigned long long)vl_recorder_lost(self->recorder), why != NULL,
                why ? " why=" : "", why ? why : "");
    }
    for (int i = 0; i < self->n_learners; i++) {
        const vlb_learner_t *l = &self->learners[i];
        vl_books_learner_drops(l, by);
        vl_info("learner policy=%s credit=%llu queued=%llu queued_bytes=%zu delivered=%llu "
                "delivered_per_s=%.1f paused=%d version=%llu epoch=%llu arrived=%llu "
                "dropped_lag=%llu dropped_capacity=%llu dropped_budget=%llu dropped_invalid=%llu",
                l->policy, (unsigned long long)vl_learners_credit(l), (unsigned long long)l->queued,
                l->queued_bytes, (unsigned long long)l->delivered, (double)l->delivered_per_s,
                l->paused, (unsigned long long)l->newest_version, (unsigned long long)l->epoch,
                (unsigned long long)(l->have_stats ? l->stats.segments_arrived : 0),
                (unsigned long long)by[VLB_LEARNER_LAG],
                (unsigned long long)by[VLB_LEARNER_CAPACITY],
                (unsigned long long)by[VLB_LEARNER_BUDGET],
                (unsigned long long)by[VLB_LEARNER_INVALID]);
    }
}

/* Logs what the learners dropped of the routed segments, by cause. */
static void s_log_learner_drops(const vl_broker_t *self)
{
    uint64_t by[VLB_LEARNER_CAUSES], dropped = vl_books_learners_dropped(self, by);
    if (!dropped)
        return;
    vl_info("learner dropped %llu of the %llu segments routed (after routing: not in the sum "
            "above)",
            (unsigned long long)dropped, (unsigned long long)self->routed);
    for (int c = 0; c < VLB_LEARNER_CAUSES; c++)
        if (by[c])
            vl_info("  learner dropped %llu segments: %s", (unsigned long long)by[c],
                    s_learner_causes[c]);
}

void vl_broker_log_counters(const vl_broker_t *self)
{
    uint64_t dropped = vl_books_dropped(self), queued = vl_books_queued(self);
    vl_info("segments received=%llu routed=%llu dropped=%llu queued=%llu (%s)",
            (unsigned long long)self->received, (unsigned long long)self->routed,
            (unsigned long long)dropped, (unsigned long long)queued,
            self->received == self->routed + dropped + queued ? "they add up"
                                                              : "they DO NOT add up");
    for (int k = 0; k < VLB_KINDS; k++)
        for (int r = 1; r < VLB_DROP_REASONS; r++)
            if (self->dropped[k][r])
                vl_info("  dropped %llu %s: %s", (unsigned long long)self->dropped[k][r],
                        s_kind_names[k], vl_books_reason_str(r));
    for (int i = 0; i < self->n_text_drops; i++)
        vl_info("  dropped %llu %s: %s", (unsigned long long)self->text_drops[i].count,
                s_kind_names[self->text_drops[i].kind], self->text_drops[i].text);
    s_log_learner_drops(self);
    for (int i = 0; i < self->n_learners; i++) {
        uint64_t lost = s_lost_before(self, &self->learners[i]);
        if (lost)
            vl_warn("  lost before this broker: %llu segments of policy '%s' (sent by its actors "
                    "to an earlier broker, never received by its learner)",
                    (unsigned long long)lost, self->learners[i].policy);
    }
}

int vl_books_status_encode(vl_broker_t *self, uint8_t **buf, size_t *size)
{
    static s_status_rows_t rows; // large; one broker per process serves one request at a time
    Volley__Status st;
    if (s_status_build(self, &st, &rows) != 0)
        return -1;
    int rc = vl_status_encode(&st, buf, size);
    free(rows.actors);
    free(rows.actor_ptrs);
    return rc;
}
