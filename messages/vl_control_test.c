/*  vl_control_test: Hello, Credit and Stats round trips and refusals. */
#include <lz4.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_codec.h"
#include "volley.pb-c.h"

static void test_hello_round_trip(void)
{
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_hello_encode("cartpole-a2c", &buf, &size) == 0);
    char id[VL_POLICY_ID_MAX] = "";
    vl_reason_t reason = vl_hello_decode(buf, size, id);
    free(buf);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(strcmp(id, "cartpole-a2c") == 0);
    VL_CHECK(vl_hello_encode("bad id\n", &buf, &size) == -1);
}

/* Returns the decode reason of a hand-built Hello. */
static vl_reason_t s_hello_decode_raw(uint32_t schema, char *policy_id)
{
    Volley__Hello msg = VOLLEY__HELLO__INIT;
    msg.schema = schema;
    msg.policy_id = policy_id;
    uint8_t buf[256];
    size_t size = volley__hello__pack(&msg, buf);
    char id[VL_POLICY_ID_MAX];
    return vl_hello_decode(buf, size, id);
}

static void test_hello_refused(void)
{
    VL_CHECK(s_hello_decode_raw(VL_SCHEMA_VERSION, "ok") == VL_OK);
    VL_CHECK(s_hello_decode_raw(1, "ok") == VL_EVERSION); // the schema before observation fields
    VL_CHECK(s_hello_decode_raw(VL_SCHEMA_VERSION + 1, "ok") == VL_EVERSION);
    VL_CHECK(s_hello_decode_raw(VL_SCHEMA_VERSION, "") == VL_EPOLICY);
    VL_CHECK(s_hello_decode_raw(VL_SCHEMA_VERSION, "tab\there") == VL_EPOLICY);
    uint8_t garbage[] = {0x0a, 0x40, 'x'}; // a string that claims 64 bytes
    char id[VL_POLICY_ID_MAX];
    VL_CHECK(vl_hello_decode(garbage, sizeof garbage, id) == VL_EPROTO);
}

static void test_credit_round_trip(void)
{
    vl_credit_t in = {.policy_id = "cartpole",
                      .total_granted = 5000000000ull,
                      .total_received = 5000000000ull - 32};
    vl_credit_t out = {{0}, 0, 0};
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_credit_encode(&in, &buf, &size) == 0);
    VL_CHECK(vl_credit_decode(buf, size, &out) == VL_OK);
    free(buf);
    VL_CHECK(strcmp(out.policy_id, in.policy_id) == 0);
    VL_CHECK(out.total_granted == in.total_granted && out.total_received == in.total_received);
}

/* Returns the decode reason of a hand-built Credit. */
static vl_reason_t s_credit_decode_raw(uint32_t schema, char *policy_id, uint64_t granted,
                                       uint64_t received)
{
    Volley__Credit msg = VOLLEY__CREDIT__INIT;
    msg.schema = schema;
    msg.policy_id = policy_id;
    msg.total_granted = granted;
    msg.total_received = received;
    uint8_t buf[256];
    size_t size = volley__credit__pack(&msg, buf);
    vl_credit_t out;
    return vl_credit_decode(buf, size, &out);
}

static void test_credit_refused(void)
{
    VL_CHECK(s_credit_decode_raw(VL_SCHEMA_VERSION, "p", 10, 0) == VL_OK);
    VL_CHECK(s_credit_decode_raw(99, "p", 10, 0) == VL_EVERSION);
    VL_CHECK(s_credit_decode_raw(VL_SCHEMA_VERSION, "", 10, 0) == VL_EPOLICY);
    VL_CHECK(s_credit_decode_raw(VL_SCHEMA_VERSION, "p", 0, 0) == VL_EMISMATCH);
    VL_CHECK(s_credit_decode_raw(VL_SCHEMA_VERSION, "p", 3, 4) == VL_ESHAPE);
    VL_CHECK(s_credit_decode_raw(VL_SCHEMA_VERSION, "p", VL_CREDIT_MAX + 1, 0) == VL_ETOOBIG);
    VL_CHECK(s_credit_decode_raw(VL_SCHEMA_VERSION, "p", VL_CREDIT_MAX + 7, 7) == VL_OK);
    uint8_t garbage[] = {0x12, 0x40, 'x'};
    vl_credit_t out;
    VL_CHECK(vl_credit_decode(garbage, sizeof garbage, &out) == VL_EPROTO);
    // A Hello is no Credit, and a Credit's counters never leave the encoder unchecked.
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_hello_encode("p", &buf, &size) == 0);
    VL_CHECK(vl_credit_decode(buf, size, &out) == VL_EMISMATCH);
    free(buf);
    vl_credit_t bad = {.policy_id = "p", .total_granted = 1, .total_received = 2};
    VL_CHECK(vl_credit_encode(&bad, &buf, &size) == -1);
}

/* Returns stats with every field set to a distinct value. */
static vl_stats_t s_stats_sample(void)
{
    vl_stats_t s = {.policy_id = "cartpole-a2c",
                    .version = 5,
                    .env_steps = 123456,
                    .episodes = 789,
                    .mean_return = 195.5f,
                    .window = 100,
                    .lag_mean = 1.25f,
                    .lag_max = 4,
                    .policy_loss = -0.03f,
                    .value_loss = 0.7f,
                    .entropy = 0.66f,
                    .segments_trained = 3000,
                    .segments_dropped = 1 + 2 + 3 + 6,
                    .dropped_lag = 1,
                    .dropped_capacity = 2,
                    .dropped_budget = 3,
                    .dropped_invalid = 6,
                    .segments_arrived = 3100,
                    .uptime_s = 3600.125};
    return s;
}

static void test_stats_round_trip(void)
{
    vl_stats_t in = s_stats_sample(), out;
    memset(&out, 0, sizeof out);
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_stats_encode(&in, &buf, &size) == 0);
    vl_reason_t reason = vl_stats_decode(buf, size, &out);
    free(buf);
    VL_CHECK(reason == VL_OK);
    VL_CHECK(strcmp(out.policy_id, in.policy_id) == 0 && out.version == in.version);
    VL_CHECK(out.env_steps == in.env_steps && out.episodes == in.episodes);
    VL_CHECK(out.mean_return == in.mean_return && out.window == in.window);
    VL_CHECK(out.lag_mean == in.lag_mean && out.lag_max == in.lag_max);
    VL_CHECK(out.policy_loss == in.policy_loss && out.value_loss == in.value_loss);
    VL_CHECK(out.entropy == in.entropy && out.uptime_s == in.uptime_s);
    VL_CHECK(out.segments_trained == in.segments_trained);
    VL_CHECK(out.segments_dropped == in.segments_dropped);
}

/* The drop counts by cause and the arrivals cross the wire as sent. */
static void test_stats_drops_round_trip(void)
{
    vl_stats_t in = s_stats_sample(), out;
    in.dropped_lag = 50560;
    in.dropped_capacity = 1ull << 40;
    in.segments_arrived = (1ull << 40) + 57856;
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_stats_encode(&in, &buf, &size) == 0);
    memset(&out, 0, sizeof out);
    VL_CHECK(vl_stats_decode(buf, size, &out) == VL_OK);
    free(buf);
    VL_CHECK(out.dropped_lag == 50560 && out.dropped_capacity == 1ull << 40);
    VL_CHECK(out.dropped_budget == 3 && out.dropped_invalid == 6);
    VL_CHECK(out.segments_arrived == (1ull << 40) + 57856);
}

/* A Stats from a sender before the drop causes decodes with them 0. */
static void test_stats_drops_absent(void)
{
    Volley__Stats msg = VOLLEY__STATS__INIT;
    msg.schema = VL_SCHEMA_VERSION;
    msg.policy_id = "old";
    msg.segments_dropped = 9;
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_wire_pack(&msg.base, &buf, &size) == 0);
    vl_stats_t out = s_stats_sample();
    VL_CHECK(vl_stats_decode(buf, size, &out) == VL_OK);
    free(buf);
    VL_CHECK(out.segments_dropped == 9 && out.segments_arrived == 0);
    VL_CHECK(out.dropped_lag == 0 && out.dropped_capacity == 0);
    VL_CHECK(out.dropped_budget == 0 && out.dropped_invalid == 0);
}

/* Returns the decode reason of encoded stats s. */
static vl_reason_t s_stats_round_trip(const vl_stats_t *s)
{
    uint8_t *buf;
    size_t size;
    if (vl_stats_encode(s, &buf, &size) != 0)
        return VL_EREASONS;
    vl_stats_t out;
    vl_reason_t reason = vl_stats_decode(buf, size, &out);
    free(buf);
    return reason;
}

static void test_stats_nonfinite(void)
{
    vl_stats_t s = s_stats_sample();
    s.entropy = NAN;
    VL_CHECK(s_stats_round_trip(&s) == VL_ENONFINITE);
    s = s_stats_sample(), s.mean_return = -INFINITY;
    VL_CHECK(s_stats_round_trip(&s) == VL_ENONFINITE);
    s = s_stats_sample(), s.uptime_s = (double)INFINITY;
    VL_CHECK(s_stats_round_trip(&s) == VL_ENONFINITE);
    s = s_stats_sample(), s.policy_id[0] = '\0';
    VL_CHECK(s_stats_round_trip(&s) == VL_EREASONS); // the encoder refuses it
}

int main(void)
{
    VL_RUN(test_hello_round_trip);
    VL_RUN(test_hello_refused);
    VL_RUN(test_credit_round_trip);
    VL_RUN(test_credit_refused);
    VL_RUN(test_stats_round_trip);
    VL_RUN(test_stats_drops_round_trip);
    VL_RUN(test_stats_drops_absent);
    VL_RUN(test_stats_nonfinite);
    return VL_DONE();
}
