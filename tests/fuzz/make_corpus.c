/*  make_corpus: writes valid seed messages for the fuzz harnesses, made by
    volley's own encoders (and one schema 2 segment, made as an actor from
    before action spaces wrote it), into DIR/<kind>/seed_N (kinds: segment, weights,
    hello, stats, status, stream; the directories must not need more than one
    mkdir level). Values come from a fixed generator, and the weights' publish_ns
    (the encoder stamps the wall clock) is set to a fixed time, and so is a
    recording's creation time, so the seeds are the same on every run. Each
    seed is decoded again before it is written: a seed the decoder refuses
    is a bug in the encoder, and make_corpus exits 1.

    usage: make_corpus DIR */
#include <errno.h>
#include <lz4.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/vl_crc32c.h"
#include "messages/vl_codec.h"
#include "messages/vl_status.h"
#include "messages/vl_stream.h"
#include "volley.pb-c.h"

static uint32_t s_rng = 12345u;            // fixed: the committed corpus must be reproducible
#define S_PUBLISH_NS 1700000000123456789ll // the weights seed's publish time, fixed likewise

/* Returns the next value of a small LCG, in [0, 1). */
static float s_uniform(void)
{
    s_rng = s_rng * 1664525u + 1013904223u;
    return (float)(s_rng >> 8) / (float)(1u << 24);
}

/* Writes n bytes to DIR/kind/seed_index. Returns 0 or -1. */
static int s_write(const char *dir, const char *kind, int index, const uint8_t *buf, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, kind);
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
        perror(path);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s/seed_%d", dir, kind, index);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    printf("%s (%zu bytes)\n", path, n);
    return 0;
}

/* Fills n actions [n][dims] with values in space: whole choices of the
   discrete kinds, box values a little past the bounds now and then (a
   sample before clipping); sets each step's joint log-prob, for a box a
   density that may exceed 1. */
static void s_fill_actions(const vl_action_spec_t *space, uint32_t n, float *actions, float *logp)
{
    for (uint32_t t = 0; t < n; t++) {
        logp[t] = 0.0f;
        for (uint32_t d = 0; d < space->dims; d++) {
            float *a = &actions[t * space->dims + d];
            if (space->kind == VL_ENV_BOX) {
                float span = space->high[d] - space->low[d];
                *a = space->low[d] + span * (1.2f * s_uniform() - 0.1f);
                logp[t] += 0.8f - 2.0f * s_uniform();
            } else {
                *a = floorf(s_uniform() * (float)space->n[d]);
                logp[t] -= logf((float)space->n[d]);
            }
        }
    }
}

/* Encodes a segment of horizon T over spec acting in space with plausible
   values, checks that it decodes, and writes it. Returns 0 or -1. */
static int s_segment_seed(const char *dir, int index, uint32_t T, const vl_obs_spec_t *spec,
                          const vl_action_spec_t *space)
{
    vl_segment_t seg;
    memset(&seg, 0, sizeof seg);
    snprintf(seg.policy_id, sizeof seg.policy_id, "seed-%d", index);
    seg.actor_id = 7;
    seg.env_id = (uint32_t)index;
    seg.seq = 42;
    seg.policy_version = 3;
    seg.horizon = T;
    seg.action = *space;
    seg.send_ns = 1700000000000000000;
    if (vl_segment_set_spec(&seg, spec) != 0)
        return -1;
    size_t need = vl_segment_arrays_size(T, spec, space->dims, 0);
    void *arrays = calloc(1, need), *back = calloc(1, need);
    uint8_t *wire = NULL;
    size_t size = 0;
    int rc = -1;
    if (!arrays || !back)
        goto err;
    vl_segment_bind(&seg, arrays);
    float *values = malloc((T + 1) * (size_t)seg.obs_dim * sizeof(float));
    if (!values)
        goto err;
    for (size_t i = 0; i < (T + 1) * (size_t)seg.obs_dim; i++)
        values[i] = floorf(4.0f * s_uniform()); // integral: fits every encoding but u1
    vl_obs_to_rows(spec, T + 1, values, seg.obs);
    free(values);
    s_fill_actions(space, T, seg.actions, seg.logp);
    for (uint32_t t = 0; t < T; t++) {
        seg.rewards[t] = 1.0f;
        seg.dones[t] = t == T / 2 ? 1.0f : 0.0f;
    }
    seg.n_episodes = 1;
    seg.episode_returns[0] = (float)(T / 2 + 1);
    seg.episode_lengths[0] = T / 2 + 1;
    vl_limits_t lim = vl_limits_default();
    vl_segment_t check;
    if (vl_segment_encode(&seg, &wire, &size) != 0 ||
        vl_segment_decode(wire, size, &lim, &check, back, need) != VL_OK) {
        fprintf(stderr, "make_corpus: segment seed %d does not round-trip\n", index);
        goto err;
    }
    rc = s_write(dir, "segment", index, wire, size);
err:
    free(wire);
    free(arrays);
    free(back);
    return rc;
}

/* Writes a schema 2 segment as an actor from before action spaces sent it:
   CartPole-like f32 [4] observations, num_actions choices, int32 actions in
   the payload. Returns 0 or -1. */
static int s_schema2_seed(const char *dir, int index, uint32_t T, uint32_t num_actions)
{
    enum { S_T_MAX = 32, S_D = 4 };
    uint8_t raw[(S_T_MAX + 1) * S_D * 4 + 13 * S_T_MAX], block[LZ4_COMPRESSBOUND(sizeof raw)];
    if (T > S_T_MAX)
        return -1;
    size_t obs = (T + 1) * S_D * 4, n = obs + 13 * (size_t)T;
    for (size_t i = 0; i < (T + 1) * S_D; i++) {
        float v = floorf(4.0f * s_uniform());
        memcpy(raw + 4 * i, &v, 4);
    }
    for (uint32_t t = 0; t < T; t++) {
        int32_t a = (int32_t)(s_uniform() * (float)num_actions) % (int32_t)num_actions;
        float reward = 1.0f, logp = -logf((float)num_actions);
        memcpy(raw + obs + 4 * t, &a, 4);
        memcpy(raw + obs + 4 * (T + t), &reward, 4);
        memcpy(raw + obs + 4 * (2 * T + t), &logp, 4);
        raw[obs + 12 * T + t] = t == T / 2;
    }
    int len = LZ4_compress_default((const char *)raw, (char *)block, (int)n, (int)sizeof block);
    Volley__ObsField field = VOLLEY__OBS_FIELD__INIT, *fields[1] = {&field};
    uint32_t shape[1] = {S_D};
    field.n_shape = 1, field.shape = shape; // F32, the enum's zero
    float returns[1] = {(float)(T / 2 + 1)};
    uint32_t lengths[1] = {T / 2 + 1};
    char policy[VL_POLICY_ID_MAX];
    snprintf(policy, sizeof policy, "seed-%d", index);
    Volley__Segment msg = VOLLEY__SEGMENT__INIT;
    msg.schema = 2, msg.actor_id = 7, msg.env_id = (uint32_t)index, msg.seq = 42;
    msg.policy_id = policy, msg.policy_version = 3, msg.horizon = T;
    msg.n_obs_fields = 1, msg.obs_fields = fields, msg.num_actions = num_actions;
    msg.raw_size = (uint32_t)n, msg.payload.data = block, msg.payload.len = (size_t)len;
    msg.n_episode_returns = 1, msg.episode_returns = returns;
    msg.n_episode_lengths = 1, msg.episode_lengths = lengths;
    msg.send_ns = 1700000000000000000;
    uint8_t *wire = NULL;
    size_t size = 0;
    vl_limits_t lim = vl_limits_default();
    vl_segment_t check;
    static uint8_t back[1 << 16];
    if (len <= 0 || vl_wire_pack(&msg.base, &wire, &size) != 0 ||
        vl_segment_decode(wire, size, &lim, &check, back, sizeof back) != VL_OK) {
        fprintf(stderr, "make_corpus: schema 2 segment seed %d does not decode\n", index);
        free(wire);
        return -1;
    }
    int rc = s_write(dir, "segment", index, wire, size);
    free(wire);
    return rc;
}

/* Writes the segment seeds: CartPole-like (discrete), pixel-like
   (multi-discrete), byte-coded (a box), and a schema 2 CartPole-like one. */
static int s_segments(const char *dir)
{
    vl_obs_spec_t cartpole = vl_obs_spec_flat(4);
    vl_obs_spec_t pixels = {.n_fields = 3};
    pixels.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_U2, .ndim = 2, .shape = {16, 16}};
    pixels.fields[1] = (vl_obs_field_t){.encoding = VL_OBS_U1, .ndim = 1, .shape = {32}};
    pixels.fields[2] = (vl_obs_field_t){.encoding = VL_OBS_F32, .ndim = 1, .shape = {2}};
    vl_obs_spec_t bytes = {.n_fields = 2};
    bytes.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_U8, .ndim = 3, .shape = {2, 3, 4}};
    bytes.fields[1] = (vl_obs_field_t){.encoding = VL_OBS_F32, .ndim = 1, .shape = {3}};
    vl_action_spec_t two = vl_action_discrete(2);
    vl_action_spec_t buttons = {.kind = VL_ENV_MULTI_DISCRETE, .dims = 3, .n = {3, 4, 2}};
    vl_action_spec_t box = {.kind = VL_ENV_BOX, .dims = 2, .low = {-1, -2}, .high = {1, 2}};
    if (s_segment_seed(dir, 1, 16, &cartpole, &two) != 0 ||
        s_segment_seed(dir, 2, 8, &pixels, &buttons) != 0 ||
        s_segment_seed(dir, 3, 5, &bytes, &box) != 0 || s_schema2_seed(dir, 4, 12, 3) != 0)
        return -1;
    return 0;
}

/* Sets the publish_ns of encoded weights to S_PUBLISH_NS: unpacks *wire,
   packs it again into a new buffer that replaces it. Returns 0 or -1. */
static int s_fix_publish_ns(uint8_t **wire, size_t *size)
{
    Volley__Weights *msg = volley__weights__unpack(NULL, *size, *wire);
    if (!msg)
        return -1;
    msg->publish_ns = S_PUBLISH_NS;
    uint8_t *fixed = NULL;
    size_t n = 0;
    int rc = vl_wire_pack(&msg->base, &fixed, &n);
    volley__weights__free_unpacked(msg, NULL);
    if (rc != 0)
        return -1;
    free(*wire);
    *wire = fixed;
    *size = n;
    return 0;
}

/* Writes weights seed index of n tensors (publish_ns fixed), after checking
   that it decodes back. Returns 0 or -1. */
static int s_weights_seed(const char *dir, int index, const vl_tensor_t *tensors, uint32_t n)
{
    uint8_t *wire = NULL;
    size_t size = 0;
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *back = NULL;
    int rc = -1;
    if (vl_weights_encode("cartpole", 9, tensors, n, &wire, &size) == 0 &&
        s_fix_publish_ns(&wire, &size) == 0 &&
        vl_weights_decode(wire, size, &lim, &back) == VL_OK && back->publish_ns == S_PUBLISH_NS)
        rc = s_write(dir, "weights", index, wire, size);
    else
        fprintf(stderr, "make_corpus: weights seed %d does not round-trip\n", index);
    vl_weights_destroy(&back);
    free(wire);
    return rc;
}

/* Writes the weights seeds: a [4, 3] matrix and its [3] bias; a conv
   layer's [4, 2, 3, 3] weight and [4] bias beside a rank-3 [2, 2, 3]. The
   second's values are a formula, so the generator's draws (and every seed
   after these) stay as they were before it. */
static int s_weights(const char *dir)
{
    float w[12], b[3], conv[72], cb[4], cube[12];
    for (int i = 0; i < 12; i++)
        w[i] = s_uniform() - 0.5f;
    for (int i = 0; i < 3; i++)
        b[i] = 0.1f * (float)i;
    for (int i = 0; i < 72; i++)
        conv[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    for (int i = 0; i < 4; i++)
        cb[i] = 0.01f * (float)i;
    for (int i = 0; i < 12; i++)
        cube[i] = 0.25f * (float)i;
    vl_tensor_t mlp[2] = {
        {.name = "pi.w0", .rows = 4, .cols = 3, .ndim = 2, .data = w},
        {.name = "pi.b0", .rows = 3, .cols = 1, .ndim = 1, .data = b},
    };
    vl_tensor_t cnn[3] = {{.name = "conv.0.0.weight", .data = conv},
                          {.name = "conv.0.0.bias", .data = cb},
                          {.name = "cube", .data = cube}};
    if (vl_tensor_set_shape(&cnn[0], 4, (uint32_t[]){4, 2, 3, 3}) != 0 ||
        vl_tensor_set_shape(&cnn[1], 1, (uint32_t[]){4}) != 0 ||
        vl_tensor_set_shape(&cnn[2], 3, (uint32_t[]){2, 2, 3}) != 0)
        return -1;
    return s_weights_seed(dir, 1, mlp, 2) == 0 && s_weights_seed(dir, 2, cnn, 3) == 0 ? 0 : -1;
}

/* Writes a hello seed. */
static int s_hello(const char *dir)
{
    uint8_t *wire = NULL;
    size_t size = 0;
    char id[VL_POLICY_ID_MAX];
    int rc = -1;
    if (vl_hello_encode("cartpole", &wire, &size) == 0 && vl_hello_decode(wire, size, id) == VL_OK)
        rc = s_write(dir, "hello", 1, wire, size);
    else
        fprintf(stderr, "make_corpus: hello seed does not round-trip\n");
    free(wire);
    return rc;
}

/* Writes a stats seed with every field set. */
static int s_stats(const char *dir)
{
    vl_stats_t stats = {.policy_id = "cartpole",
                        .version = 120,
                        .env_steps = 1u << 20,
                        .episodes = 5000,
                        .mean_return = 187.5f,
                        .window = 100,
                        .lag_mean = 1.25f,
                        .lag_max = 4,
                        .policy_loss = -0.02f,
                        .value_loss = 0.5f,
                        .entropy = 0.6f,
                        .segments_trained = 4096,
                        .segments_dropped = 3,
                        .uptime_s = 61.5,
                        .lag_min = 1,
                        .lag_median = 1,
                        .ingest_ms = 2.75f,
                        .train_ms = 40.5f};
    uint8_t *wire = NULL;
    size_t size = 0;
    vl_stats_t back;
    int rc = -1;
    if (vl_stats_encode(&stats, &wire, &size) == 0 && vl_stats_decode(wire, size, &back) == VL_OK)
        rc = s_write(dir, "stats", 1, wire, size);
    else
        fprintf(stderr, "make_corpus: stats seed does not round-trip\n");
    free(wire);
    return rc;
}

/* Writes a beat seed with every field set. */
static int s_beat(const char *dir)
{
    vl_beat_t beat = {.policy_id = "cartpole",
                      .actor_id = 3,
                      .segments_sent = 812,
                      .weights_version = 119,
                      .apply_ms = 1.5f,
                      .apply_ms_max = 6.25f,
                      .env_steps_per_s = 5120.0f};
    uint8_t *wire = NULL;
    size_t size = 0;
    vl_beat_t back;
    int rc = -1;
    if (vl_beat_encode(&beat, &wire, &size) == 0 && vl_beat_decode(wire, size, &back) == VL_OK)
        rc = s_write(dir, "status", 1, wire, size);
    else
        fprintf(stderr, "make_corpus: beat seed does not round-trip\n");
    free(wire);
    return rc;
}

/* Writes a status seed as a broker builds one: two actor rows (one silent),
   a learner with stats and a paused one without, two drop rows. */
static int s_status(const char *dir)
{
    Volley__ActorRow actors[2];
    Volley__ActorRow *actor_ptrs[2] = {&actors[0], &actors[1]};
    for (int i = 0; i < 2; i++) {
        volley__actor_row__init(&actors[i]);
        actors[i].actor_id = (uint32_t)i;
        actors[i].policy_id = i == 0 ? "cartpole" : "catch";
        actors[i].segments = 800u + (uint64_t)i;
        actors[i].seq_gaps = (uint64_t)i;
        actors[i].segments_per_s = i == 0 ? 20.0f : 0.0f;
        actors[i].send_ms = 0.75f;
        actors[i].weights_version = 119;
        actors[i].apply_ms = 1.5f;
        actors[i].env_steps_per_s = 5120.0f;
        actors[i].silent_s = i == 0 ? 0.25f : 9.5f;
        actors[i].alive = i == 0;
        actors[i].restarts = (uint32_t)i;
    }
    Volley__Stats stats;
    volley__stats__init(&stats);
    stats.schema = VL_SCHEMA_VERSION;
    stats.policy_id = "cartpole";
    stats.version = 119;
    stats.env_steps = 1u << 20;
    stats.episodes = 5000;
    stats.mean_return = 187.5f;
    stats.window = 100;
    stats.lag_mean = 1.25f;
    stats.lag_max = 4;
    stats.policy_loss = -0.02f;
    stats.value_loss = 0.5f;
    stats.entropy = 0.6f;
    stats.segments_trained = 4096;
    stats.segments_dropped = 3;
    stats.uptime_s = 61.5;
    stats.lag_median = 1;
    stats.ingest_ms = 2.75f;
    stats.train_ms = 40.5f;
    Volley__LearnerRow learners[2];
    Volley__LearnerRow *learner_ptrs[2] = {&learners[0], &learners[1]};
    for (int i = 0; i < 2; i++) {
        volley__learner_row__init(&learners[i]);
        learners[i].policy_id = i == 0 ? "cartpole" : "catch";
        learners[i].credit = 32;
        learners[i].queued = (uint64_t)(7 * i);
        learners[i].queued_bytes = (uint64_t)(7 * i * 300);
        learners[i].delivered = 4096;
        learners[i].delivered_per_s = 19.5f;
        learners[i].paused = i == 1;
        learners[i].silent_s = 0.125f;
        learners[i].stats = i == 0 ? &stats : NULL;
    }
    Volley__DropRow drops[2];
    Volley__DropRow *drop_ptrs[2] = {&drops[0], &drops[1]};
    for (int i = 0; i < 2; i++) {
        volley__drop_row__init(&drops[i]);
        drops[i].kind = i == 0 ? "segments" : "credits";
        drops[i].reason = (char *)vl_reason_str(i == 0 ? VL_ENONFINITE : VL_ESHAPE);
        drops[i].count = 3u - (uint64_t)i;
    }
    Volley__Status status;
    volley__status__init(&status);
    status.uptime_s = 62.0;
    status.received = 4106;
    status.routed = 4096;
    status.dropped = 3;
    status.queued = 7;
    status.received_per_s = 39.5f;
    status.queue_bytes_bound = 64u << 20;
    status.rss_bytes = 12u << 20;
    status.n_actors = 2;
    status.actors = actor_ptrs;
    status.n_learners = 2;
    status.learners = learner_ptrs;
    status.n_drops = 2;
    status.drops = drop_ptrs;
    uint8_t *wire = NULL;
    size_t size = 0;
    vl_reason_t reason = VL_EREASONS;
    Volley__Status *back = NULL;
    int rc = -1;
    if (vl_status_encode(&status, &wire, &size) == 0 &&
        (back = vl_status_decode(wire, size, &reason)) != NULL)
        rc = s_write(dir, "status", 2, wire, size);
    else
        fprintf(stderr, "make_corpus: status seed does not decode (%s)\n", vl_reason_str(reason));
    vl_status_free(&back);
    free(wire);
    return rc;
}

/* A record of a stream seed. */
typedef struct {
    int64_t recv_ns;
    uint32_t source;
    const uint8_t *data;
    size_t size;
} s_rec_t;

/* Returns the number of records a reader finds in path before a clean
   end, or -1. */
static long s_stream_count(const char *path)
{
    char why[256] = "";
    vl_stream_reader_t *r = vl_stream_reader_open(path, why, sizeof why);
    vl_stream_record_t rec;
    vl_stream_status_t st = VL_STREAM_IOERR;
    while (r && (st = vl_stream_next(r, &rec)) == VL_STREAM_OK)
        ;
    long n = st == VL_STREAM_END ? (long)vl_stream_reader_records(r) : -1;
    if (n < 0)
        fprintf(stderr, "make_corpus: %s: %s\n", path, r ? vl_stream_reader_why(r) : why);
    vl_stream_reader_destroy(&r);
    return n;
}

/* Records n records with vl_stream's writer, sets the creation time to
   S_PUBLISH_NS (and the header's checksum to match), writes the file as
   DIR/stream/seed_index and checks that it reads back. Returns 0 or -1. */
static int s_stream_seed(const char *dir, int index, const char *config, const s_rec_t *recs, int n)
{
    char tmp[4096], why[256] = "";
    snprintf(tmp, sizeof tmp, "%s/stream.tmp", dir);
    unlink(tmp); // the writer never overwrites: a leftover of a failed run goes first
    vl_stream_writer_t *w = vl_stream_writer_new(tmp, config, VL_FLUSH_NEVER, why, sizeof why);
    for (int i = 0; w && i < n; i++)
        if (vl_stream_append(w, recs[i].recv_ns, recs[i].source, recs[i].data, recs[i].size) != 0)
            vl_stream_writer_destroy(&w);
    uint64_t size = vl_stream_writer_bytes(w);
    uint8_t *file = w && vl_stream_writer_destroy(&w) == 0 ? malloc(size) : NULL;
    FILE *f = file ? fopen(tmp, "rb") : NULL;
    int rc = f && fread(file, 1, size, f) == size ? 0 : -1;
    if (f)
        fclose(f);
    unlink(tmp);
    if (rc == 0) {
        size_t crc_at = VL_STREAM_HEADER - 4 + strlen(config);
        for (int i = 0; i < 8; i++)
            file[16 + i] = (uint8_t)((uint64_t)S_PUBLISH_NS >> (8 * i));
        uint32_t crc = vl_crc32c(0, file, crc_at);
        for (int i = 0; i < 4; i++)
            file[crc_at + (size_t)i] = (uint8_t)(crc >> (8 * i));
        rc = s_write(dir, "stream", index, file, size);
    }
    free(file);
    snprintf(tmp, sizeof tmp, "%s/stream/seed_%d", dir, index);
    if (rc == 0 && s_stream_count(tmp) != n) {
        fprintf(stderr, "make_corpus: stream seed %d does not read back\n", index);
        rc = -1;
    }
    if (rc != 0 && why[0])
        fprintf(stderr, "make_corpus: stream seed %d: %s\n", index, why);
    return rc;
}

/* Writes the recording seeds: what a broker records (a hello, a beat, an
   empty message), a header with no records, and one longer record. */
static int s_streams(const char *dir)
{
    uint8_t *hello = NULL, *beat = NULL, noise[1000];
    size_t hello_size = 0, beat_size = 0;
    vl_beat_t b = {.policy_id = "cartpole", .actor_id = 2, .segments_sent = 40};
    for (size_t i = 0; i < sizeof noise; i++)
        noise[i] = (uint8_t)(s_uniform() * 256.0f);
    int rc = -1;
    if (vl_hello_encode("cartpole", &hello, &hello_size) == 0 &&
        vl_beat_encode(&b, &beat, &beat_size) == 0) {
        s_rec_t broker[3] = {
            {1000, UINT32_MAX, hello, hello_size}, {2000, 2, beat, beat_size}, {2500, 2, NULL, 0}};
        s_rec_t one[1] = {{-1, 7, noise, sizeof noise}};
        if (s_stream_seed(dir, 1, "volley broker --port 7600 --record run.vls", broker, 3) == 0 &&
            s_stream_seed(dir, 2, "", NULL, 0) == 0 && s_stream_seed(dir, 3, "x=1", one, 1) == 0)
            rc = 0;
    }
    free(hello);
    free(beat);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    if (mkdir(argv[1], 0777) != 0 && errno != EEXIST) {
        perror(argv[1]);
        return 1;
    }
    if (s_segments(argv[1]) != 0 || s_weights(argv[1]) != 0 || s_hello(argv[1]) != 0 ||
        s_stats(argv[1]) != 0 || s_beat(argv[1]) != 0 || s_status(argv[1]) != 0 ||
        s_streams(argv[1]) != 0)
        return 1;
    return 0;
}
