/*  fuzz_status: vl_beat_decode, vl_status_decode and vl_status_free under
    libFuzzer. Every input goes to both decoders (the seeds are plain Beat
    and Status messages; each decoder refuses the other's soon enough).

    Beat, on every input: a named reason; the caller's beat left untouched
    on a refusal. On VL_OK: the fields are those protobuf-c unpacks from the
    input, the policy id printable, the figures finite and >= 0, and the
    round trip: vl_beat_encode succeeds, its bytes decode to the same beat
    (floats bit for bit, but -0.0, which proto3 sends as 0), and encoding
    that again gives the same bytes.

    Status, on every input: a named reason, NULL exactly when refused. On
    VL_OK: row counts within VL_STATUS_MAX_*, every row present, every
    string read to its end (strlen, so ASan sees a missing NUL) and a valid
    name within its cap, every float finite (and >= 0 where the decoder
    promises it), every learner's stats as vl_stats_decode would accept
    them; the round trip: vl_status_encode of a copy without the unknown
    fields succeeds, its bytes decode again to as many rows, and encoding
    that gives the same bytes. (The unknown fields stay out: protobuf-c
    keeps a field numbered 0 whose tag came as a padded varint, 80 00, and
    packs it back as 00, which it then refuses as malformed.) vl_status_free nulls the pointer
    and is safe twice (ASan and libFuzzer's leak check see the rest). */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "messages/vl_status.h"
#include "volley.pb-c.h"

#define S_OTHER    0x5A // fills the round trip's output: a field never written shows

/* Returns 1 if f is finite and not negative (-0.0 included, as the decoder
   has it). */
static int s_figure_ok(float f)
{
    return vl_float_is_finite(f) && f >= 0.0f;
}

/* Checks a string the decoder vouched for: NUL-terminated (strlen reads to
   the end), a valid name, shorter than cap. */
static void s_check_text(const char *s, size_t cap)
{
    FUZZ_CHECK(s);
    FUZZ_CHECK(strlen(s) < cap);
    FUZZ_CHECK(vl_wire_name_ok(s, cap));
}

/* Checks that two beats hold the same fields (one by one: padding). */
static void s_check_same_beat(const vl_beat_t *a, const vl_beat_t *b)
{
    FUZZ_CHECK(strcmp(a->policy_id, b->policy_id) == 0);
    FUZZ_CHECK(a->actor_id == b->actor_id && a->segments_sent == b->segments_sent);
    FUZZ_CHECK(a->weights_version == b->weights_version);
    FUZZ_CHECK(fuzz_same_float(a->apply_ms, b->apply_ms));
    FUZZ_CHECK(fuzz_same_float(a->apply_ms_max, b->apply_ms_max));
    FUZZ_CHECK(fuzz_same_float(a->env_steps_per_s, b->env_steps_per_s));
}

/* Checks a decoded beat against protobuf-c's own reading of the input. */
static void s_check_beat_wire(const vl_beat_t *b, const uint8_t *data, size_t size)
{
    Volley__Beat *msg = volley__beat__unpack(NULL, size, data);
    FUZZ_CHECK(msg); // the decoder accepted it
    FUZZ_CHECK(msg->schema >= VL_SCHEMA_OLDEST && msg->schema <= VL_SCHEMA_VERSION);
    FUZZ_CHECK(msg->policy_id && strcmp(msg->policy_id, b->policy_id) == 0);
    FUZZ_CHECK(msg->actor_id == b->actor_id && msg->segments_sent == b->segments_sent);
    FUZZ_CHECK(msg->weights_version == b->weights_version);
    FUZZ_CHECK(memcmp(&msg->apply_ms, &b->apply_ms, sizeof(float)) == 0);
    FUZZ_CHECK(memcmp(&msg->apply_ms_max, &b->apply_ms_max, sizeof(float)) == 0);
    FUZZ_CHECK(memcmp(&msg->env_steps_per_s, &b->env_steps_per_s, sizeof(float)) == 0);
    volley__beat__free_unpacked(msg, NULL);
}

static void s_fuzz_beat(const uint8_t *data, size_t size)
{
    vl_beat_t beat;
    memset(&beat, FUZZ_SENTINEL, sizeof beat);
    vl_reason_t reason = vl_beat_decode(data, size, &beat);
    FUZZ_CHECK_REASON(reason);
    if (reason != VL_OK) {
        FUZZ_CHECK(fuzz_untouched(&beat, sizeof beat));
        return;
    }
    s_check_text(beat.policy_id, VL_POLICY_ID_MAX);
    FUZZ_CHECK(s_figure_ok(beat.apply_ms) && s_figure_ok(beat.apply_ms_max));
    FUZZ_CHECK(s_figure_ok(beat.env_steps_per_s));
    s_check_beat_wire(&beat, data, size);

    uint8_t *wire = NULL, *again_wire = NULL;
    size_t wire_size = 0, again_size = 0;
    FUZZ_CHECK(vl_beat_encode(&beat, &wire, &wire_size) == 0 && wire);
    vl_beat_t again;
    memset(&again, S_OTHER, sizeof again); // a field decode leaves alone then differs
    FUZZ_CHECK(vl_beat_decode(wire, wire_size, &again) == VL_OK);
    s_check_same_beat(&beat, &again);
    FUZZ_CHECK(vl_beat_encode(&again, &again_wire, &again_size) == 0);
    FUZZ_CHECK(again_size == wire_size && memcmp(wire, again_wire, wire_size) == 0);
    free(again_wire);
    free(wire);
}

/* Checks a learner's stats: what vl_stats_check_msg promises. */
static void s_check_stats(const Volley__Stats *st)
{
    FUZZ_CHECK(st->schema >= VL_SCHEMA_OLDEST && st->schema <= VL_SCHEMA_VERSION);
    s_check_text(st->policy_id, VL_POLICY_ID_MAX);
    FUZZ_CHECK(vl_float_is_finite(st->mean_return) && vl_float_is_finite(st->lag_mean));
    FUZZ_CHECK(vl_float_is_finite(st->policy_loss) && vl_float_is_finite(st->value_loss));
    FUZZ_CHECK(vl_float_is_finite(st->entropy) && vl_double_is_finite(st->uptime_s));
    FUZZ_CHECK(vl_float_is_finite(st->ingest_ms) && vl_float_is_finite(st->train_ms));
}

/* Walks everything a decoded Status holds. */
static void s_check_status(const Volley__Status *s)
{
    FUZZ_CHECK(s->schema == VL_SCHEMA_VERSION);
    FUZZ_CHECK(vl_double_is_finite(s->uptime_s) && s->uptime_s >= 0.0);
    FUZZ_CHECK(s_figure_ok(s->received_per_s));
    FUZZ_CHECK(s->n_actors <= VL_STATUS_MAX_ACTORS);
    FUZZ_CHECK(s->n_learners <= VL_STATUS_MAX_LEARNERS);
    FUZZ_CHECK(s->n_drops <= VL_STATUS_MAX_DROPS);
    FUZZ_CHECK(s->n_actors == 0 || s->actors);
    FUZZ_CHECK(s->n_learners == 0 || s->learners);
    FUZZ_CHECK(s->n_drops == 0 || s->drops);
    for (size_t i = 0; i < s->n_actors; i++) {
        const Volley__ActorRow *a = s->actors[i];
        FUZZ_CHECK(a);
        s_check_text(a->policy_id, VL_POLICY_ID_MAX);
        FUZZ_CHECK(s_figure_ok(a->segments_per_s) && s_figure_ok(a->send_ms));
        FUZZ_CHECK(s_figure_ok(a->apply_ms) && s_figure_ok(a->env_steps_per_s));
        FUZZ_CHECK(s_figure_ok(a->silent_s));
        FUZZ_CHECK(a->alive == 0 || a->alive == 1);
    }
    for (size_t i = 0; i < s->n_learners; i++) {
        const Volley__LearnerRow *l = s->learners[i];
        FUZZ_CHECK(l);
        s_check_text(l->policy_id, VL_POLICY_ID_MAX);
        FUZZ_CHECK(s_figure_ok(l->delivered_per_s) && s_figure_ok(l->silent_s));
        FUZZ_CHECK(l->paused == 0 || l->paused == 1);
        if (l->stats)
            s_check_stats(l->stats);
    }
    for (size_t i = 0; i < s->n_drops; i++) {
        const Volley__DropRow *d = s->drops[i];
        FUZZ_CHECK(d);
        s_check_text(d->kind, VL_STATUS_TEXT_MAX);
        s_check_text(d->reason, VL_STATUS_TEXT_MAX);
    }
}

/* Rows copied field for field but for the unknown fields, which a copy
   drops (pointers into the decoded Status: nothing here is freed but the
   arrays). */
typedef struct {
    Volley__Status status;
    Volley__ActorRow *actors;
    Volley__ActorRow **actor_ptrs;
    Volley__LearnerRow *learners;
    Volley__LearnerRow **learner_ptrs;
    Volley__Stats *stats;
    Volley__DropRow *drops;
    Volley__DropRow **drop_ptrs;
} s_known_t;

/* Drops a message's unknown fields from a shallow copy. */
#define S_FORGET_UNKNOWN(m) ((m).base.n_unknown_fields = 0, (m).base.unknown_fields = NULL)

/* Fills k with a copy of s without unknown fields. */
static void s_known_copy(const Volley__Status *s, s_known_t *k)
{
    k->status = *s;
    S_FORGET_UNKNOWN(k->status);
    size_t na = s->n_actors, nl = s->n_learners, nd = s->n_drops;
    k->actors = calloc(na + 1, sizeof *k->actors);
    k->actor_ptrs = calloc(na + 1, sizeof *k->actor_ptrs);
    k->learners = calloc(nl + 1, sizeof *k->learners);
    k->learner_ptrs = calloc(nl + 1, sizeof *k->learner_ptrs);
    k->stats = calloc(nl + 1, sizeof *k->stats);
    k->drops = calloc(nd + 1, sizeof *k->drops);
    k->drop_ptrs = calloc(nd + 1, sizeof *k->drop_ptrs);
    FUZZ_CHECK(k->actors && k->actor_ptrs && k->learners && k->learner_ptrs && k->stats &&
               k->drops && k->drop_ptrs);
    for (size_t i = 0; i < na; i++) {
        k->actors[i] = *s->actors[i];
        S_FORGET_UNKNOWN(k->actors[i]);
        k->actor_ptrs[i] = &k->actors[i];
    }
    for (size_t i = 0; i < nl; i++) {
        k->learners[i] = *s->learners[i];
        S_FORGET_UNKNOWN(k->learners[i]);
        if (s->learners[i]->stats) {
            k->stats[i] = *s->learners[i]->stats;
            S_FORGET_UNKNOWN(k->stats[i]);
            k->learners[i].stats = &k->stats[i];
        }
        k->learner_ptrs[i] = &k->learners[i];
    }
    for (size_t i = 0; i < nd; i++) {
        k->drops[i] = *s->drops[i];
        S_FORGET_UNKNOWN(k->drops[i]);
        k->drop_ptrs[i] = &k->drops[i];
    }
    k->status.actors = k->actor_ptrs;
    k->status.learners = k->learner_ptrs;
    k->status.drops = k->drop_ptrs;
}

/* Frees what s_known_copy allocated. */
static void s_known_free(s_known_t *k)
{
    free(k->actors);
    free(k->actor_ptrs);
    free(k->learners);
    free(k->learner_ptrs);
    free(k->stats);
    free(k->drops);
    free(k->drop_ptrs);
}

/* Encodes a decoded Status (its known fields), decodes that, and checks
   that encoding the result gives the same bytes. */
static void s_check_status_round_trip(const Volley__Status *s)
{
    s_known_t known;
    s_known_copy(s, &known);
    uint8_t *wire = NULL, *again_wire = NULL;
    size_t wire_size = 0, again_size = 0;
    FUZZ_CHECK(vl_status_encode(&known.status, &wire, &wire_size) == 0 && wire);
    s_known_free(&known);
    vl_reason_t reason = VL_EREASONS;
    Volley__Status *again = vl_status_decode(wire, wire_size, &reason);
    FUZZ_CHECK(reason == VL_OK && again);
    s_check_status(again);
    FUZZ_CHECK(again->n_actors == s->n_actors && again->n_learners == s->n_learners);
    FUZZ_CHECK(again->n_drops == s->n_drops);
    FUZZ_CHECK(vl_status_encode(again, &again_wire, &again_size) == 0);
    FUZZ_CHECK(again_size == wire_size && memcmp(wire, again_wire, wire_size) == 0);
    vl_status_free(&again);
    free(again_wire);
    free(wire);
}

static void s_fuzz_status(const uint8_t *data, size_t size)
{
    vl_reason_t reason = VL_EREASONS;
    Volley__Status *s = vl_status_decode(data, size, &reason);
    FUZZ_CHECK_REASON(reason);
    FUZZ_CHECK((reason == VL_OK) == (s != NULL));
    if (s) {
        s_check_status(s);
        s_check_status_round_trip(s);
    }
    vl_status_free(&s);
    FUZZ_CHECK(s == NULL);
    vl_status_free(&s);
    vl_status_free(NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    s_fuzz_beat(data, size);
    s_fuzz_status(data, size);
    return 0;
}
