/*  make_corpus: writes valid seed messages for the fuzz harnesses, made by
    volley's own encoders, into DIR/<kind>/seed_N (kinds: segment, weights,
    hello, stats; the directories must not need more than one mkdir level).
    Values come from a fixed generator, so the seeds are the same on every
    run. Each seed is decoded again before it is written: a seed the decoder
    refuses is a bug in the encoder, and make_corpus exits 1.

    usage: make_corpus DIR */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "messages/vl_codec.h"

static uint32_t s_rng = 12345u; // fixed: the committed corpus must be reproducible

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

/* Encodes a segment of horizon T over spec with plausible values, checks
   that it decodes, and writes it. Returns 0 or -1. */
static int s_segment_seed(const char *dir, int index, uint32_t T, const vl_obs_spec_t *spec,
                          uint32_t num_actions)
{
    vl_segment_t seg;
    memset(&seg, 0, sizeof seg);
    snprintf(seg.policy_id, sizeof seg.policy_id, "seed-%d", index);
    seg.actor_id = 7;
    seg.env_id = (uint32_t)index;
    seg.seq = 42;
    seg.policy_version = 3;
    seg.horizon = T;
    seg.num_actions = num_actions;
    seg.send_ns = 1700000000000000000;
    if (vl_segment_set_spec(&seg, spec) != 0)
        return -1;
    size_t need = vl_segment_arrays_size(T, spec);
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
    for (uint32_t t = 0; t < T; t++) {
        seg.actions[t] = (int32_t)(s_uniform() * (float)num_actions) % (int32_t)num_actions;
        seg.rewards[t] = 1.0f;
        seg.logp[t] = -logf((float)num_actions);
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

/* Writes the segment seeds: CartPole-like, pixel-like, byte-coded. */
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
    if (s_segment_seed(dir, 1, 16, &cartpole, 2) != 0 ||
        s_segment_seed(dir, 2, 8, &pixels, 3) != 0 || s_segment_seed(dir, 3, 5, &bytes, 5) != 0)
        return -1;
    return 0;
}

/* Writes a weights seed of two tensors, a [4, 3] matrix and its [3] bias. */
static int s_weights(const char *dir)
{
    float w[12], b[3];
    for (int i = 0; i < 12; i++)
        w[i] = s_uniform() - 0.5f;
    for (int i = 0; i < 3; i++)
        b[i] = 0.1f * (float)i;
    vl_tensor_t tensors[2] = {
        {.name = "pi.w0", .rows = 4, .cols = 3, .ndim = 2, .data = w},
        {.name = "pi.b0", .rows = 3, .cols = 1, .ndim = 1, .data = b},
    };
    uint8_t *wire = NULL;
    size_t size = 0;
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *back = NULL;
    int rc = -1;
    if (vl_weights_encode("cartpole", 9, tensors, 2, &wire, &size) == 0 &&
        vl_weights_decode(wire, size, &lim, &back) == VL_OK)
        rc = s_write(dir, "weights", 1, wire, size);
    else
        fprintf(stderr, "make_corpus: weights seed does not round-trip\n");
    vl_weights_destroy(&back);
    free(wire);
    return rc;
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
                        .uptime_s = 61.5};
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
        s_stats(argv[1]) != 0)
        return 1;
    return 0;
}
