/*  vl_status_test: Beat and Status round trips, and every refusal with its
    reason. Bad messages the encoders refuse to make are packed directly
    from protobuf-c's generated structs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/vl_test.h"
#include "vl_status.h"
#include "volley.pb-c.h"

#define S_SENTINEL 0xA5 // fills an output first, to see whether it was written

/* Returns 1 if all n bytes of p are S_SENTINEL. */
static int s_untouched(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != S_SENTINEL)
            return 0;
    return 1;
}

/* Returns a beat with every field set to a distinct value. */
static vl_beat_t s_beat_sample(void)
{
    vl_beat_t b = {.policy_id = "cartpole-a2c",
                   .actor_id = 17,
                   .segments_sent = 5000000123ull,
                   .weights_version = 4000000000ull + 9,
                   .apply_ms = 1.5f,
                   .apply_ms_max = 7.25f,
                   .env_steps_per_s = 5120.5f};
    return b;
}

static void test_beat_round_trip(void)
{
    vl_beat_t in = s_beat_sample(), out;
    memset(&out, S_SENTINEL, sizeof out);
    uint8_t *buf = NULL;
    size_t size = 0;
    VL_CHECK(vl_beat_encode(&in, &buf, &size) == 0);
    VL_CHECK(buf && size > 0);
    vl_reason_t reason = vl_beat_decode(buf, size, &out);
    free(buf);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(strcmp(out.policy_id, in.policy_id) == 0);
    VL_CHECK(out.actor_id == in.actor_id);
    VL_CHECK(out.segments_sent == in.segments_sent);
    VL_CHECK(out.weights_version == in.weights_version);
    VL_CHECK(out.apply_ms == in.apply_ms && out.apply_ms_max == in.apply_ms_max);
    VL_CHECK(out.env_steps_per_s == in.env_steps_per_s);

    // All zero figures (proto3 sends none of them) are a valid beat too.
    vl_beat_t idle = {.policy_id = "p"};
    memset(&out, S_SENTINEL, sizeof out);
    VL_CHECK(vl_beat_encode(&idle, &buf, &size) == 0);
    reason = vl_beat_decode(buf, size, &out);
    free(buf);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(strcmp(out.policy_id, "p") == 0 && out.actor_id == 0 && out.segments_sent == 0);
    VL_CHECK(out.apply_ms == 0.0f && out.apply_ms_max == 0.0f && out.env_steps_per_s == 0.0f);
}

/* A Beat as protobuf-c's struct, from the sample's values. */
static Volley__Beat s_beat_msg(void)
{
    static vl_beat_t sample;
    sample = s_beat_sample();
    Volley__Beat msg = VOLLEY__BEAT__INIT;
    msg.schema = VL_SCHEMA_VERSION;
    msg.policy_id = sample.policy_id;
    msg.actor_id = sample.actor_id;
    msg.segments_sent = sample.segments_sent;
    msg.weights_version = sample.weights_version;
    msg.apply_ms = sample.apply_ms;
    msg.apply_ms_max = sample.apply_ms_max;
    msg.env_steps_per_s = sample.env_steps_per_s;
    return msg;
}

/* Packs msg and decodes it into a sentinel-filled beat. Returns the reason,
   or VL_EREASONS if a refusal wrote the beat anyway. */
static vl_reason_t s_beat_decode_raw(const Volley__Beat *msg)
{
    uint8_t buf[256];
    size_t size = protobuf_c_message_pack(&msg->base, buf);
    vl_beat_t out;
    memset(&out, S_SENTINEL, sizeof out);
    vl_reason_t reason = vl_beat_decode(buf, size, &out);
    if (reason != VL_OK && !s_untouched(&out, sizeof out))
        return VL_EREASONS;
    return reason;
}

static void test_beat_refused(void)
{
    Volley__Beat msg = s_beat_msg();
    VL_CHECK(s_beat_decode_raw(&msg) == VL_OK); // the base every case below spoils once
    msg.schema = VL_SCHEMA_VERSION + 1;
    VL_CHECK(s_beat_decode_raw(&msg) == VL_EVERSION);
    msg = s_beat_msg(), msg.schema = 0;
    VL_CHECK(s_beat_decode_raw(&msg) == VL_EVERSION);
    msg = s_beat_msg(), msg.policy_id = "";
    VL_CHECK(s_beat_decode_raw(&msg) == VL_EPOLICY);
    msg = s_beat_msg(), msg.policy_id = "line\nbreak";
    VL_CHECK(s_beat_decode_raw(&msg) == VL_EPOLICY);
    char long_id[VL_POLICY_ID_MAX + 1];
    memset(long_id, 'x', VL_POLICY_ID_MAX);
    long_id[VL_POLICY_ID_MAX] = '\0';
    msg = s_beat_msg(), msg.policy_id = long_id;
    VL_CHECK(s_beat_decode_raw(&msg) == VL_EPOLICY);
    long_id[VL_POLICY_ID_MAX - 1] = '\0'; // 63 characters: the longest that fits
    VL_CHECK(s_beat_decode_raw(&msg) == VL_OK);
    msg = s_beat_msg(), msg.apply_ms = NAN;
    VL_CHECK(s_beat_decode_raw(&msg) == VL_ENONFINITE);
    msg = s_beat_msg(), msg.apply_ms_max = INFINITY;
    VL_CHECK(s_beat_decode_raw(&msg) == VL_ENONFINITE);
    msg = s_beat_msg(), msg.env_steps_per_s = -INFINITY;
    VL_CHECK(s_beat_decode_raw(&msg) == VL_ENONFINITE);
    msg = s_beat_msg(), msg.apply_ms = -0.5f;
    VL_CHECK(s_beat_decode_raw(&msg) == VL_ENONFINITE);
    msg = s_beat_msg(), msg.env_steps_per_s = -1.0f;
    VL_CHECK(s_beat_decode_raw(&msg) == VL_ENONFINITE);

    uint8_t garbage[] = {0x12, 0x40, 'x'}; // a policy id that claims 64 bytes
    vl_beat_t out;
    memset(&out, S_SENTINEL, sizeof out);
    VL_CHECK(vl_beat_decode(garbage, sizeof garbage, &out) == VL_EPROTO);
    VL_CHECK(s_untouched(&out, sizeof out));
}

/* Returns vl_beat_encode's result on b, and checks (returning 2 if not)
   that a refusal left *out and *out_size as they were. */
static int s_beat_encode_rc(const vl_beat_t *b)
{
    uint8_t *buf = (uint8_t *)&buf; // any non-NULL value, to see it kept
    uint8_t *const before = buf;
    size_t size = 12345;
    int rc = vl_beat_encode(b, &buf, &size);
    if (rc == 0) {
        free(buf);
        return 0;
    }
    return buf == before && size == 12345 ? rc : 2;
}

static void test_beat_encode_refuses_bad_input(void)
{
    vl_beat_t b = s_beat_sample();
    VL_CHECK(s_beat_encode_rc(&b) == 0);
    b.policy_id[0] = '\0';
    VL_CHECK(s_beat_encode_rc(&b) == -1);
    b = s_beat_sample(), b.policy_id[2] = '\t';
    VL_CHECK(s_beat_encode_rc(&b) == -1);
    b = s_beat_sample(), memset(b.policy_id, 'a', sizeof b.policy_id); // no NUL inside
    VL_CHECK(s_beat_encode_rc(&b) == -1);
    b = s_beat_sample(), b.apply_ms = NAN;
    VL_CHECK(s_beat_encode_rc(&b) == -1);
    b = s_beat_sample(), b.apply_ms_max = INFINITY;
    VL_CHECK(s_beat_encode_rc(&b) == -1);
    b = s_beat_sample(), b.env_steps_per_s = -2.0f;
    VL_CHECK(s_beat_encode_rc(&b) == -1);
    b = s_beat_sample(), b.apply_ms = -0.001f;
    VL_CHECK(s_beat_encode_rc(&b) == -1);
    VL_CHECK(s_beat_encode_rc(NULL) == -1);
    b = s_beat_sample();
    size_t size;
    uint8_t *buf;
    VL_CHECK(vl_beat_encode(&b, NULL, &size) == -1);
    VL_CHECK(vl_beat_encode(&b, &buf, NULL) == -1);
}

/* A Status as a broker builds it: two actors, a learner with stats and a
   paused one without, two drop rows. Every figure is distinct so that a
   field read from the wrong place shows. */
typedef struct {
    Volley__Status status;
    Volley__ActorRow actor[2];
    Volley__ActorRow *actors[2];
    Volley__LearnerRow learner[2];
    Volley__LearnerRow *learners[2];
    Volley__Stats stats;
    Volley__DropRow drop[2];
    Volley__DropRow *drops[2];
} s_run_t;

static void s_run_init(s_run_t *r)
{
    memset(r, 0, sizeof *r);
    volley__status__init(&r->status);
    r->status.schema = VL_SCHEMA_VERSION;
    r->status.uptime_s = 83.5;
    r->status.received = 12345;
    r->status.routed = 12000;
    r->status.dropped = 300;
    r->status.queued = 45;
    r->status.received_per_s = 812.5f;
    r->status.queue_bytes_bound = 64u << 20;
    r->status.rss_bytes = 47395635;

    static char *policies[2] = {"alpha", "beta"};
    for (int i = 0; i < 2; i++) {
        Volley__ActorRow *a = &r->actor[i];
        volley__actor_row__init(a);
        a->actor_id = 31u + (uint32_t)i;
        a->policy_id = policies[i];
        a->segments = 6000u + (uint64_t)i;
        a->seq_gaps = 2u + (uint64_t)i;
        a->segments_per_s = 40.5f + (float)i;
        a->send_ms = 0.5f + (float)i;
        a->weights_version = 770u + (uint64_t)i;
        a->apply_ms = 2.25f + (float)i;
        a->env_steps_per_s = 2560.0f + (float)i;
        a->silent_s = 0.125f + (float)i;
        a->alive = i == 0;
        a->restarts = 3u + (uint32_t)i;
        r->actors[i] = a;
    }

    volley__stats__init(&r->stats);
    r->stats.schema = VL_SCHEMA_VERSION;
    r->stats.policy_id = "alpha";
    r->stats.version = 777;
    r->stats.env_steps = 9876543;
    r->stats.episodes = 4321;
    r->stats.mean_return = 187.5f;
    r->stats.window = 100;
    r->stats.lag_mean = 1.25f;
    r->stats.lag_max = 9;
    r->stats.policy_loss = -0.03f;
    r->stats.value_loss = 0.7f;
    r->stats.entropy = 0.66f;
    r->stats.segments_trained = 11000;
    r->stats.segments_dropped = 12;
    r->stats.uptime_s = 80.25;
    r->stats.lag_min = 1;
    r->stats.lag_median = 2;
    r->stats.ingest_ms = 3.25f;
    r->stats.train_ms = 45.5f;
    for (int i = 0; i < 2; i++) {
        Volley__LearnerRow *l = &r->learner[i];
        volley__learner_row__init(l);
        l->policy_id = policies[i];
        l->credit = 64u + (uint64_t)i;
        l->queued = 10u + (uint64_t)i;
        l->queued_bytes = 20000u + (uint64_t)i;
        l->delivered = 11000u + (uint64_t)i;
        l->delivered_per_s = 799.5f + (float)i;
        l->paused = i == 1;
        l->silent_s = 0.25f + (float)i;
        r->learners[i] = l;
    }
    r->learner[0].stats = &r->stats;

    static char *kinds[2] = {"segments", "hellos"};
    static char *reasons[2] = {"learner queue over its byte bound", "say \"hi\"=bad\\"};
    for (int i = 0; i < 2; i++) {
        volley__drop_row__init(&r->drop[i]);
        r->drop[i].kind = kinds[i];
        r->drop[i].reason = reasons[i];
        r->drop[i].count = 299u + (uint64_t)i;
        r->drops[i] = &r->drop[i];
    }
    r->status.n_actors = 2;
    r->status.actors = r->actors;
    r->status.n_learners = 2;
    r->status.learners = r->learners;
    r->status.n_drops = 2;
    r->status.drops = r->drops;
}

/* Packs st as it is (schema included: no vl_status_encode), decodes it and
   frees the result. Returns the reason, or VL_EREASONS if the result and
   the reason disagree (NULL exactly on a refusal). */
static vl_reason_t s_status_decode_raw(const Volley__Status *st)
{
    size_t size = protobuf_c_message_get_packed_size(&st->base);
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return VL_EREASONS;
    protobuf_c_message_pack(&st->base, buf);
    vl_reason_t reason = VL_EREASONS;
    Volley__Status *s = vl_status_decode(buf, size, &reason);
    free(buf);
    int agree = (reason == VL_OK) == (s != NULL);
    vl_status_free(&s);
    return agree ? reason : VL_EREASONS;
}

static void test_status_round_trip(void)
{
    s_run_t r;
    s_run_init(&r);
    r.status.schema = 0; // vl_status_encode sets it
    uint8_t *buf = NULL;
    size_t size = 0;
    VL_CHECK(vl_status_encode(&r.status, &buf, &size) == 0);
    VL_CHECK(r.status.schema == VL_SCHEMA_VERSION);
    vl_reason_t reason = VL_EREASONS;
    Volley__Status *s = vl_status_decode(buf, size, &reason);
    free(buf);
    VL_CHECK(reason == VL_OK && s);
    const Volley__Status *in = &r.status;
    int same = s->schema == VL_SCHEMA_VERSION && s->uptime_s == in->uptime_s &&
               s->received == in->received && s->routed == in->routed &&
               s->dropped == in->dropped && s->queued == in->queued &&
               s->received_per_s == in->received_per_s &&
               s->queue_bytes_bound == in->queue_bytes_bound && s->rss_bytes == in->rss_bytes &&
               s->n_actors == 2 && s->n_learners == 2 && s->n_drops == 2;
    for (size_t i = 0; same && i < 2; i++) {
        const Volley__ActorRow *a = s->actors[i], *b = in->actors[i];
        same = a->actor_id == b->actor_id && strcmp(a->policy_id, b->policy_id) == 0 &&
               a->segments == b->segments && a->seq_gaps == b->seq_gaps &&
               a->segments_per_s == b->segments_per_s && a->send_ms == b->send_ms &&
               a->weights_version == b->weights_version && a->apply_ms == b->apply_ms &&
               a->env_steps_per_s == b->env_steps_per_s && a->silent_s == b->silent_s &&
               a->alive == b->alive && a->restarts == b->restarts;
    }
    for (size_t i = 0; same && i < 2; i++) {
        const Volley__LearnerRow *a = s->learners[i], *b = in->learners[i];
        same = strcmp(a->policy_id, b->policy_id) == 0 && a->credit == b->credit &&
               a->queued == b->queued && a->queued_bytes == b->queued_bytes &&
               a->delivered == b->delivered && a->delivered_per_s == b->delivered_per_s &&
               a->paused == b->paused && a->silent_s == b->silent_s &&
               (a->stats != NULL) == (b->stats != NULL);
    }
    for (size_t i = 0; same && i < 2; i++) {
        const Volley__DropRow *a = s->drops[i], *b = in->drops[i];
        same = strcmp(a->kind, b->kind) == 0 && strcmp(a->reason, b->reason) == 0 &&
               a->count == b->count;
    }
    const Volley__Stats *st = same ? s->learners[0]->stats : NULL, *sb = &r.stats;
    same = same && st && st->schema == VL_SCHEMA_VERSION && strcmp(st->policy_id, "alpha") == 0 &&
           st->version == sb->version && st->env_steps == sb->env_steps &&
           st->episodes == sb->episodes && st->mean_return == sb->mean_return &&
           st->window == sb->window && st->lag_mean == sb->lag_mean && st->lag_max == sb->lag_max &&
           st->policy_loss == sb->policy_loss && st->value_loss == sb->value_loss &&
           st->entropy == sb->entropy && st->segments_trained == sb->segments_trained &&
           st->segments_dropped == sb->segments_dropped && st->uptime_s == sb->uptime_s &&
           st->lag_min == sb->lag_min && st->lag_median == sb->lag_median &&
           st->ingest_ms == sb->ingest_ms && st->train_ms == sb->train_ms;
    vl_status_free(&s);
    VL_CHECK(same);
    VL_CHECK(s == NULL);
    vl_status_free(&s); // safe twice, and on NULL
    vl_status_free(NULL);

    // An empty Status is valid: a broker with nothing to report yet.
    Volley__Status empty = VOLLEY__STATUS__INIT;
    VL_CHECK(vl_status_encode(&empty, &buf, &size) == 0);
    s = vl_status_decode(buf, size, &reason);
    free(buf);
    VL_CHECK(reason == VL_OK && s && s->n_actors == 0 && s->n_learners == 0 && s->n_drops == 0);
    vl_status_free(&s);
    VL_CHECK(vl_status_encode(NULL, &buf, &size) == -1);
    VL_CHECK(vl_status_encode(&empty, NULL, &size) == -1);
}

static void test_status_refused(void)
{
    s_run_t r;
    s_run_init(&r);
    VL_CHECK(s_status_decode_raw(&r.status) == VL_OK); // the base every case spoils once

    r.status.schema = VL_SCHEMA_VERSION + 1;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_EVERSION);
    s_run_init(&r), r.status.schema = 0;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_EVERSION);

    s_run_init(&r), r.status.uptime_s = (double)NAN;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_ENONFINITE);
    s_run_init(&r), r.status.received_per_s = INFINITY;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_ENONFINITE);

    // Actor rows: every float finite and >= 0, a valid policy id.
    s_run_init(&r), r.actor[1].send_ms = NAN;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_ENONFINITE);
    s_run_init(&r), r.actor[0].env_steps_per_s = INFINITY;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_ENONFINITE);
    s_run_init(&r), r.actor[1].silent_s = -1.0f;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_ENONFINITE);
    s_run_init(&r), r.actor[1].policy_id = "del\x7f";
    VL_CHECK(s_status_decode_raw(&r.status) == VL_EPOLICY);
    s_run_init(&r), r.actor[0].policy_id = "";
    VL_CHECK(s_status_decode_raw(&r.status) == VL_EPOLICY);

    // Learner rows, and the stats they carry.
    s_run_init(&r), r.learner[1].policy_id = "tab\there";
    VL_CHECK(s_status_decode_raw(&r.status) == VL_EPOLICY);
    s_run_init(&r), r.learner[0].delivered_per_s = NAN;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_ENONFINITE);
    s_run_init(&r), r.stats.ingest_ms = NAN;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_ENONFINITE);
    s_run_init(&r), r.stats.train_ms = -INFINITY;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_ENONFINITE);
    s_run_init(&r), r.stats.uptime_s = (double)INFINITY;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_ENONFINITE);
    s_run_init(&r), r.stats.entropy = NAN;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_ENONFINITE);
    s_run_init(&r), r.stats.schema = 0;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_EVERSION);
    s_run_init(&r), r.stats.policy_id = "";
    VL_CHECK(s_status_decode_raw(&r.status) == VL_EPOLICY);

    // Drop rows: both texts non-empty printable ASCII under VL_STATUS_TEXT_MAX.
    s_run_init(&r), r.drop[1].reason = "bell\a";
    VL_CHECK(s_status_decode_raw(&r.status) == VL_EPOLICY);
    s_run_init(&r), r.drop[0].kind = "";
    VL_CHECK(s_status_decode_raw(&r.status) == VL_EPOLICY);
    char text[VL_STATUS_TEXT_MAX + 1];
    memset(text, 'r', VL_STATUS_TEXT_MAX);
    text[VL_STATUS_TEXT_MAX] = '\0';
    s_run_init(&r), r.drop[0].reason = text;
    VL_CHECK(s_status_decode_raw(&r.status) == VL_EPOLICY);
    text[VL_STATUS_TEXT_MAX - 1] = '\0'; // the longest that fits
    VL_CHECK(s_status_decode_raw(&r.status) == VL_OK);
}

static void test_status_too_many_rows(void)
{
    // One row many times over: n rows on the wire from one struct.
    size_t n = VL_STATUS_MAX_ACTORS + 1;
    void **ptrs = malloc(n * sizeof *ptrs);
    VL_CHECK(ptrs);
    s_run_t r;
    s_run_init(&r);
    for (size_t i = 0; i < n; i++)
        ptrs[i] = &r.drop[0];
    r.status.drops = (Volley__DropRow **)ptrs;
    r.status.n_drops = VL_STATUS_MAX_DROPS;
    vl_reason_t at_max = s_status_decode_raw(&r.status);
    r.status.n_drops = VL_STATUS_MAX_DROPS + 1;
    vl_reason_t over_drops = s_status_decode_raw(&r.status);

    s_run_init(&r);
    for (size_t i = 0; i < n; i++)
        ptrs[i] = &r.learner[1];
    r.status.learners = (Volley__LearnerRow **)ptrs;
    r.status.n_learners = VL_STATUS_MAX_LEARNERS + 1;
    vl_reason_t over_learners = s_status_decode_raw(&r.status);

    s_run_init(&r);
    for (size_t i = 0; i < n; i++)
        ptrs[i] = &r.actor[0];
    r.status.actors = (Volley__ActorRow **)ptrs;
    r.status.n_actors = VL_STATUS_MAX_ACTORS;
    vl_reason_t at_max_actors = s_status_decode_raw(&r.status);
    r.status.n_actors = VL_STATUS_MAX_ACTORS + 1;
    vl_reason_t over_actors = s_status_decode_raw(&r.status);
    free(ptrs);

    VL_CHECK(at_max == VL_OK);
    VL_CHECK(over_drops == VL_ETOOBIG);
    VL_CHECK(over_learners == VL_ETOOBIG);
    VL_CHECK(at_max_actors == VL_OK);
    VL_CHECK(over_actors == VL_ETOOBIG);
}

static void test_status_garbage(void)
{
    uint8_t garbage[] = {0x52, 0x40, 0x08}; // an actor row that claims 64 bytes
    vl_reason_t reason = VL_OK;
    Volley__Status *s = vl_status_decode(garbage, sizeof garbage, &reason);
    VL_CHECK(reason == VL_EPROTO);
    VL_CHECK(s == NULL);
    uint8_t wrong_type[] = {0x10, 0x01}; // uptime_s (a double) sent as a varint
    reason = VL_OK;
    s = vl_status_decode(wrong_type, sizeof wrong_type, &reason);
    VL_CHECK(reason == VL_EPROTO);
    VL_CHECK(s == NULL);
    // Nothing at all unpacks as an all-default Status, whose schema is 0.
    reason = VL_OK;
    s = vl_status_decode(garbage, 0, &reason);
    VL_CHECK(reason == VL_EVERSION);
    VL_CHECK(s == NULL);
    // A Beat is no Status.
    vl_beat_t b = s_beat_sample();
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_beat_encode(&b, &buf, &size) == 0);
    reason = VL_OK;
    s = vl_status_decode(buf, size, &reason);
    free(buf);
    VL_CHECK(reason != VL_OK && (unsigned)reason < VL_EREASONS);
    VL_CHECK(s == NULL);
}

int main(void)
{
    VL_RUN(test_beat_round_trip);
    VL_RUN(test_beat_refused);
    VL_RUN(test_beat_encode_refuses_bad_input);
    VL_RUN(test_status_round_trip);
    VL_RUN(test_status_refused);
    VL_RUN(test_status_too_many_rows);
    VL_RUN(test_status_garbage);
    return VL_DONE();
}
