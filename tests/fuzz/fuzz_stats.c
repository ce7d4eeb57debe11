/*  fuzz_stats: vl_stats_decode under libFuzzer.

    Checked on every input: a named reason; the caller's stats left
    untouched on a refusal. On VL_OK: policy id printable, every float and
    the double finite, and the round trip: vl_stats_encode succeeds and its
    bytes decode to the same stats, bit for bit. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "messages/vl_codec.h"

#define S_SENTINEL 0xA5 // fills the output first, to see whether it was written

/* Returns 1 if all n bytes of p are S_SENTINEL. */
static int s_untouched(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != S_SENTINEL)
            return 0;
    return 1;
}

/* Returns 1 if two floats have the same bits, or are both zero: proto3 does
   not send a field equal to its default, so -0.0 arrives as +0.0. */
static int s_same_float(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (a == 0.0f && b == 0.0f);
}

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
    FUZZ_CHECK(s_same_float(a->mean_return, b->mean_return));
    FUZZ_CHECK(s_same_float(a->lag_mean, b->lag_mean));
    FUZZ_CHECK(s_same_float(a->policy_loss, b->policy_loss));
    FUZZ_CHECK(s_same_float(a->value_loss, b->value_loss));
    FUZZ_CHECK(s_same_float(a->entropy, b->entropy));
    FUZZ_CHECK(memcmp(&a->uptime_s, &b->uptime_s, sizeof a->uptime_s) == 0 ||
               (a->uptime_s == 0.0 && b->uptime_s == 0.0));
    FUZZ_CHECK(a->lag_min == b->lag_min && a->lag_median == b->lag_median);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vl_stats_t stats;
    memset(&stats, S_SENTINEL, sizeof stats);
    vl_reason_t reason = vl_stats_decode(data, size, &stats);
    FUZZ_CHECK_REASON(reason);
    if (reason != VL_OK) {
        FUZZ_CHECK(s_untouched(&stats, sizeof stats));
        return 0;
    }
    FUZZ_CHECK(vl_wire_name_ok(stats.policy_id, VL_POLICY_ID_MAX));
    FUZZ_CHECK(vl_float_is_finite(stats.mean_return) && vl_float_is_finite(stats.lag_mean));
    FUZZ_CHECK(vl_float_is_finite(stats.policy_loss) && vl_float_is_finite(stats.value_loss));
    FUZZ_CHECK(vl_float_is_finite(stats.entropy) && vl_double_is_finite(stats.uptime_s));

    uint8_t *wire = NULL;
    size_t wire_size = 0;
    FUZZ_CHECK(vl_stats_encode(&stats, &wire, &wire_size) == 0);
    vl_stats_t again;
    FUZZ_CHECK(vl_stats_decode(wire, wire_size, &again) == VL_OK);
    s_check_same(&stats, &again);
    free(wire);
    return 0;
}
