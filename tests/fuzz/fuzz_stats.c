/*  fuzz_stats: vl_stats_decode under libFuzzer.

    Checked on every input: a named reason; the caller's stats left
    untouched on a refusal. On VL_OK: every field as protobuf-c unpacks it
    from the input (so a field the decoder forgets to copy shows), policy id
    printable, every float (ingest_ms and train_ms included) and the double
    finite, and the round
    trip: vl_stats_encode succeeds and its bytes decode to the same stats,
    bit for bit (but -0.0, which proto3 sends as 0). */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "messages/vl_codec.h"
#include "volley.pb-c.h"

#define S_OTHER    0x5A // fills the round trip's output: a field never written shows

/* Checks that two stats hold the same fields (compared one by one: the
   struct has padding). */
static void s_check_same(const vl_stats_t *a, const vl_stats_t *b)
{
    FUZZ_CHECK(strcmp(a->policy_id, b->policy_id) == 0);
    FUZZ_CHECK(a->version == b->version && a->env_steps == b->env_steps);
    FUZZ_CHECK(a->episodes == b->episodes && a->window == b->window);
    FUZZ_CHECK(a->lag_max == b->lag_max);
    FUZZ_CHECK(a->segments_trained == b->segments_trained);
    FUZZ_CHECK(a->segments_dropped == b->segments_dropped);
    FUZZ_CHECK(fuzz_same_float(a->mean_return, b->mean_return));
    FUZZ_CHECK(fuzz_same_float(a->lag_mean, b->lag_mean));
    FUZZ_CHECK(fuzz_same_float(a->policy_loss, b->policy_loss));
    FUZZ_CHECK(fuzz_same_float(a->value_loss, b->value_loss));
    FUZZ_CHECK(fuzz_same_float(a->entropy, b->entropy));
    FUZZ_CHECK(fuzz_same_float(a->ingest_ms, b->ingest_ms));
    FUZZ_CHECK(fuzz_same_float(a->train_ms, b->train_ms));
    FUZZ_CHECK(memcmp(&a->uptime_s, &b->uptime_s, sizeof a->uptime_s) == 0 ||
               (a->uptime_s == 0.0 && b->uptime_s == 0.0));
    FUZZ_CHECK(a->lag_min == b->lag_min && a->lag_median == b->lag_median);
}

/* Returns 1 if two values have the same bytes. */
#define S_SAME_BITS(a, b) (memcmp(&(a), &(b), sizeof(a)) == 0)

/* Checks decoded stats against protobuf-c's own reading of the input. */
static void s_check_wire(const vl_stats_t *s, const uint8_t *data, size_t size)
{
    Volley__Stats *m = volley__stats__unpack(NULL, size, data);
    FUZZ_CHECK(m); // the decoder accepted it
    FUZZ_CHECK(m->policy_id && strcmp(m->policy_id, s->policy_id) == 0);
    FUZZ_CHECK(m->version == s->version && m->env_steps == s->env_steps);
    FUZZ_CHECK(m->episodes == s->episodes && m->window == s->window);
    FUZZ_CHECK(m->lag_max == s->lag_max && m->lag_min == s->lag_min);
    FUZZ_CHECK(m->lag_median == s->lag_median);
    FUZZ_CHECK(m->segments_trained == s->segments_trained);
    FUZZ_CHECK(m->segments_dropped == s->segments_dropped);
    FUZZ_CHECK(S_SAME_BITS(m->mean_return, s->mean_return));
    FUZZ_CHECK(S_SAME_BITS(m->lag_mean, s->lag_mean));
    FUZZ_CHECK(S_SAME_BITS(m->policy_loss, s->policy_loss));
    FUZZ_CHECK(S_SAME_BITS(m->value_loss, s->value_loss));
    FUZZ_CHECK(S_SAME_BITS(m->entropy, s->entropy));
    FUZZ_CHECK(S_SAME_BITS(m->uptime_s, s->uptime_s));
    FUZZ_CHECK(S_SAME_BITS(m->ingest_ms, s->ingest_ms));
    FUZZ_CHECK(S_SAME_BITS(m->train_ms, s->train_ms));
    volley__stats__free_unpacked(m, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vl_stats_t stats;
    memset(&stats, FUZZ_SENTINEL, sizeof stats);
    vl_reason_t reason = vl_stats_decode(data, size, &stats);
    FUZZ_CHECK_REASON(reason);
    if (reason != VL_OK) {
        FUZZ_CHECK(fuzz_untouched(&stats, sizeof stats));
        return 0;
    }
    FUZZ_CHECK(vl_wire_name_ok(stats.policy_id, VL_POLICY_ID_MAX));
    FUZZ_CHECK(vl_float_is_finite(stats.mean_return) && vl_float_is_finite(stats.lag_mean));
    FUZZ_CHECK(vl_float_is_finite(stats.policy_loss) && vl_float_is_finite(stats.value_loss));
    FUZZ_CHECK(vl_float_is_finite(stats.entropy) && vl_double_is_finite(stats.uptime_s));
    FUZZ_CHECK(vl_float_is_finite(stats.ingest_ms) && vl_float_is_finite(stats.train_ms));
    s_check_wire(&stats, data, size);

    uint8_t *wire = NULL;
    size_t wire_size = 0;
    FUZZ_CHECK(vl_stats_encode(&stats, &wire, &wire_size) == 0);
    vl_stats_t again;
    memset(&again, S_OTHER, sizeof again); // a field decode leaves alone then differs
    FUZZ_CHECK(vl_stats_decode(wire, wire_size, &again) == VL_OK);
    s_check_same(&stats, &again);
    free(wire);
    return 0;
}
