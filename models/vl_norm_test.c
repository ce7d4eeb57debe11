/*  vl_norm_test: the running statistics against Stable-Baselines3's
    RunningMeanStd and VecNormalize (numbers from vl_norm_reference.py),
    integer fields left as they are, clipping, per-stream returns, the
    tensors' round trip through a weights message and the loads it refuses. */
#include "vl_norm.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/vl_test.h"

/* Printed by `/usr/bin/python3 models/vl_norm_reference.py`. */
#define S_REF_OBS_COUNT 8.0000999999999998
static const double s_ref_obs_mean[5] = {-0.12499843751953099, 0.87498906263671694,
                                         1.9999750003124959, 6.124923438457019, 4.031199610004875};
static const double s_ref_obs_var[5] = {1.7343660157348619, 5.6093269536059527, 13.218647266284179,
                                        50.484225386633426, 64.646868486311774};
static const double s_ref_obs_normed[5] = {1.2339073419570923, 10, -0.75637161731719971,
                                           -0.12313803285360336, -10};
#define S_REF_RET_COUNT    16.0001
#define S_REF_RET_MEAN     0.90001303740598493
#define S_REF_RET_VAR      1.8204502775136808
#define S_REF_REWARD_SCALE 0.74115763715838401

#define S_DIM   7 // f32 [3], u8 [2], f32 [2, 1]
#define S_T     8 // steps of each return stream
#define S_GAMMA 0.99f

static const uint32_t s_f32[5] = {0, 1, 2, 5, 6}; // the f32 elements
static const uint64_t s_streams[2] = {((uint64_t)7 << 16) ^ 0, ((uint64_t)7 << 16) ^ 1};

/* Checks |a - b| within a float's rounding, relative to b. */
#define S_CHECK_FLOAT(a, b) VL_CHECK_NEAR(a, b, 1e-6 * fabs((double)(b)) + 1e-7)

static vl_obs_spec_t s_spec(void)
{
    vl_obs_spec_t s = {.n_fields = 3};
    s.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_F32, .ndim = 1, .shape = {3}};
    s.fields[1] = (vl_obs_field_t){.encoding = VL_OBS_U8, .ndim = 1, .shape = {2}};
    s.fields[2] = (vl_obs_field_t){.encoding = VL_OBS_F32, .ndim = 2, .shape = {2, 1}};
    return s;
}

/* Element j of the k-th observation: the reference's obs_value for f32
   elements; bytes of mean far from 0 for the u8 ones, which must be left
   as they are. */
static float s_obs_value(uint32_t k, uint32_t j)
{
    if (j == 3 || j == 4)
        return (float)((k * 37 + j * 11) % 256);
    return (float)((int)((k * 7 + j * 13) % 17) - 8) * 0.25f * (float)(j + 1) + (float)j;
}

/* The reference's probe: elements 1 and 6 clip, 3 and 4 are u8 values. */
static const float s_probe[S_DIM] = {1.5f, 1000.0f, -0.75f, 200.0f, 3.0f, 5.25f, -1000.0f};

/* Feeds the reference's observations, in its batches of 3, 1 and 4. */
static void s_feed_obs(vl_norm_t *norm)
{
    static const uint32_t batches[3] = {3, 1, 4};
    float obs[4 * S_DIM];
    uint32_t k = 0;
    for (int b = 0; b < 3; b++) {
        for (uint32_t i = 0; i < batches[b]; i++)
            for (uint32_t j = 0; j < S_DIM; j++)
                obs[i * S_DIM + j] = s_obs_value(k + i, j);
        vl_norm_update_obs(norm, batches[b], obs);
        k += batches[b];
    }
}

static float s_reward(int s, int t)
{
    return (float)((t * 5 + s * 3) % 7 - 2) * 0.5f;
}

static float s_done(int s, int t)
{
    return (s == 0 && (t == 2 || t == 6)) || (s == 1 && t == 4) ? 1.0f : 0.0f;
}

/* Feeds steps [from, to) of stream s. */
static void s_feed_returns(vl_norm_t *norm, int s, int from, int to)
{
    float rewards[S_T], dones[S_T];
    for (int t = from; t < to; t++)
        rewards[t - from] = s_reward(s, t), dones[t - from] = s_done(s, t);
    vl_norm_update_returns(norm, s_streams[s], (uint32_t)(to - from), rewards, dones);
}

static vl_norm_t *s_new(void)
{
    vl_obs_spec_t spec = s_spec();
    return vl_norm_new(&spec, S_GAMMA);
}

static void test_new_refuses_bad_spec_or_gamma(void)
{
    vl_obs_spec_t empty = {.n_fields = 0}, spec = s_spec(), wide = vl_obs_spec_flat(1u << 20);
    VL_CHECK(vl_norm_new(&empty, S_GAMMA) == NULL);
    VL_CHECK(vl_norm_new(&wide, S_GAMMA) == NULL);
    VL_CHECK(vl_norm_new(NULL, S_GAMMA) == NULL);
    VL_CHECK(vl_norm_new(&spec, NAN) == NULL);
    VL_CHECK(vl_norm_new(&spec, 1.5f) == NULL);
    VL_CHECK(vl_norm_new(&spec, -0.1f) == NULL);
    vl_norm_t *norm = vl_norm_new(&spec, 1.0f);
    VL_CHECK(norm && vl_norm_dim(norm) == S_DIM);
    vl_norm_destroy(&norm);
    VL_CHECK(norm == NULL);
    vl_norm_destroy(&norm);
}

static void test_fresh_stats_are_sb3s_start(void)
{
    vl_norm_t *norm = s_new();
    VL_CHECK(norm);
    vl_tensor_t t[VL_NORM_TENSORS];
    vl_norm_tensors(norm, t);
    int ok = t[0].data[0] == 0.0f && t[1].data[6] == 1.0f && t[2].data[0] == 1e-4f &&
             t[2].data[1] == 1e-4f && t[2].data[2] == 0.0f && t[2].data[3] == 1.0f;
    float scale = vl_norm_reward_scale(norm);
    vl_norm_destroy(&norm);
    VL_CHECK(ok);
    S_CHECK_FLOAT(scale, 1.0 / sqrt(1.0 + 1e-8));
}

static void test_obs_stats_match_reference(void)
{
    vl_norm_t *norm = s_new();
    VL_CHECK(norm);
    s_feed_obs(norm);
    vl_tensor_t t[VL_NORM_TENSORS];
    vl_norm_tensors(norm, t);
    float mean[S_DIM], var[S_DIM], count = t[2].data[0];
    memcpy(mean, t[0].data, sizeof mean);
    memcpy(var, t[1].data, sizeof var);
    vl_norm_destroy(&norm);
    S_CHECK_FLOAT(count, S_REF_OBS_COUNT);
    for (int i = 0; i < 5; i++) {
        S_CHECK_FLOAT(mean[s_f32[i]], s_ref_obs_mean[i]);
        S_CHECK_FLOAT(var[s_f32[i]], s_ref_obs_var[i]);
    }
    VL_CHECK(mean[3] == 0.0f && mean[4] == 0.0f && var[3] == 1.0f && var[4] == 1.0f);
}

static void test_obs_normalised_as_reference_integers_unchanged(void)
{
    vl_norm_t *norm = s_new();
    VL_CHECK(norm);
    s_feed_obs(norm);
    float out[S_DIM], in_place[S_DIM];
    memcpy(in_place, s_probe, sizeof in_place);
    vl_norm_obs(norm, 1, s_probe, out);
    vl_norm_obs(norm, 1, in_place, in_place);
    vl_norm_destroy(&norm);
    for (int i = 0; i < 5; i++)
        S_CHECK_FLOAT(out[s_f32[i]], s_ref_obs_normed[i]);
    VL_CHECK(out[1] == VL_NORM_CLIP && out[6] == -VL_NORM_CLIP);
    VL_CHECK(out[3] == 200.0f && out[4] == 3.0f);
    VL_CHECK(memcmp(out, in_place, sizeof out) == 0);
}

static void s_export(vl_norm_t *norm, vl_tensor_t *t, float data[3][S_DIM], vl_weights_t *w)
{
    vl_norm_tensors(norm, t);
    for (int i = 0; i < VL_NORM_TENSORS; i++) {
        memcpy(data[i], t[i].data, vl_tensor_size(&t[i]) * sizeof(float));
        t[i].data = data[i];
    }
    *w = (vl_weights_t){.policy_id = "p", .version = 1, .n_tensors = VL_NORM_TENSORS, .tensors = t};
}

/* Loads statistics of one observation seen, mean 0 and var 1 (a fresh
   normaliser has seen none and passes observations through). */
static int s_seen_once(vl_norm_t *norm)
{
    vl_tensor_t t[VL_NORM_TENSORS];
    float data[3][S_DIM];
    vl_weights_t w;
    s_export(norm, t, data, &w);
    data[2][0] = 1.0f;
    return vl_norm_load(norm, &w);
}

/* Statistics that have seen no observation (only rewards are scaled) leave
   observations as they are. */
static void test_obs_pass_through_before_any(void)
{
    vl_norm_t *norm = s_new();
    VL_CHECK(norm);
    const float obs[S_DIM] = {10.5f, -1e30f, 3.0f};
    float out[S_DIM];
    vl_norm_obs(norm, 1, obs, out);
    vl_norm_destroy(&norm);
    VL_CHECK(memcmp(obs, out, sizeof out) == 0);
}

static void test_obs_clip_at_ten(void)
{
    vl_norm_t *norm = s_new();
    VL_CHECK(norm && s_seen_once(norm) == 0);
    const float obs[2 * S_DIM] = {10.5f, -10.5f, 9.5f, 255.0f, 0.0f, 1e30f, -1e30f,
                                  0.0f,  0.0f,   0.0f, 0.0f,   0.0f, 0.0f,  0.0f};
    float out[2 * S_DIM];
    vl_norm_obs(norm, 2, obs, out); // mean 0, var 1: x / sqrt(1 + 1e-8)
    vl_norm_destroy(&norm);
    VL_CHECK(out[0] == 10.0f && out[1] == -10.0f && out[5] == 10.0f && out[6] == -10.0f);
    S_CHECK_FLOAT(out[2], 9.5 / sqrt(1.0 + 1e-8));
    VL_CHECK(out[3] == 255.0f && out[7] == 0.0f);
}

static void test_nonfinite_batches_change_nothing(void)
{
    vl_norm_t *norm = s_new();
    VL_CHECK(norm);
    s_feed_obs(norm);
    s_feed_returns(norm, 0, 0, S_T);
    vl_tensor_t t[VL_NORM_TENSORS];
    vl_norm_tensors(norm, t);
    float before[2 * S_DIM + 4], after[2 * S_DIM + 4];
    memcpy(before, t[0].data, 4 * S_DIM), memcpy(before + S_DIM, t[1].data, 4 * S_DIM);
    memcpy(before + 2 * S_DIM, t[2].data, 16);
    float obs[2 * S_DIM] = {0}, rewards[2] = {1.0f, INFINITY}, dones[2] = {0};
    obs[S_DIM + 5] = NAN;
    vl_norm_update_obs(norm, 2, obs);
    vl_norm_update_returns(norm, s_streams[0], 2, rewards, dones);
    memcpy(after, t[0].data, 4 * S_DIM), memcpy(after + S_DIM, t[1].data, 4 * S_DIM);
    memcpy(after + 2 * S_DIM, t[2].data, 16);
    vl_norm_destroy(&norm);
    VL_CHECK(memcmp(before, after, sizeof before) == 0);
}

/* Observations near FLT_MAX make a variance past a float's range: the
   published one saturates instead of turning into inf, which any receiver
   of the weights would refuse. */
static void test_huge_observations_publish_finite_tensors(void)
{
    vl_norm_t *norm = s_new();
    VL_CHECK(norm);
    float obs[2 * S_DIM] = {0};
    obs[0] = 3e38f, obs[S_DIM] = -3e38f;
    vl_norm_update_obs(norm, 2, obs);
    vl_tensor_t t[VL_NORM_TENSORS];
    vl_norm_tensors(norm, t);
    uint8_t *buf = NULL;
    size_t size = 0;
    vl_weights_t *w = NULL;
    vl_limits_t lim = vl_limits_default();
    int encoded = vl_weights_encode("p", 1, t, VL_NORM_TENSORS, &buf, &size) == 0;
    vl_reason_t r = encoded ? vl_weights_decode(buf, size, &lim, &w) : VL_ESHAPE;
    float var0 = t[1].data[0];
    free(buf);
    vl_weights_destroy(&w);
    vl_norm_destroy(&norm);
    VL_CHECK(var0 == FLT_MAX);
    VL_CHECK(r == VL_OK);
}

/* Checks the return statistics and the reward scale against the reference. */
static void s_check_returns(vl_norm_t *norm)
{
    vl_tensor_t t[VL_NORM_TENSORS];
    vl_norm_tensors(norm, t);
    S_CHECK_FLOAT(t[2].data[1], S_REF_RET_COUNT);
    S_CHECK_FLOAT(t[2].data[2], S_REF_RET_MEAN);
    S_CHECK_FLOAT(t[2].data[3], S_REF_RET_VAR);
    S_CHECK_FLOAT(vl_norm_reward_scale(norm), S_REF_REWARD_SCALE);
}

static void test_returns_match_reference(void)
{
    vl_norm_t *norm = s_new();
    VL_CHECK(norm);
    s_feed_returns(norm, 0, 0, S_T);
    s_feed_returns(norm, 1, 0, S_T);
    s_check_returns(norm);
    vl_norm_destroy(&norm);
}

/* The reference steps both streams together; fed in interleaved chunks, or
   step by step alternating, each stream's G must carry across its calls. */
static void test_returns_interleaved_streams_as_each_alone(void)
{
    vl_norm_t *chunks = s_new(), *steps = s_new();
    VL_CHECK(chunks && steps);
    s_feed_returns(chunks, 0, 0, 3);
    s_feed_returns(chunks, 1, 0, 5);
    s_feed_returns(chunks, 0, 3, S_T);
    s_feed_returns(chunks, 1, 5, S_T);
    for (int t = 0; t < S_T; t++)
        for (int s = 0; s < 2; s++)
            s_feed_returns(steps, s, t, t + 1);
    s_check_returns(chunks);
    s_check_returns(steps);
    vl_norm_destroy(&chunks);
    vl_norm_destroy(&steps);
}

/* Builds a weights message whose tensors are copies (in data[3][S_DIM])
   of norm's, for the load tests to spoil. */

/* A variance of 0 (which a load accepts) divides by sqrt(1e-8), not by 0. */
static void test_zero_variance_divides_by_sqrt_eps(void)
{
    vl_norm_t *norm = s_new();
    VL_CHECK(norm);
    vl_tensor_t t[VL_NORM_TENSORS];
    float data[3][S_DIM];
    vl_weights_t w;
    s_export(norm, t, data, &w);
    data[0][0] = 1.0f, data[1][0] = 0.0f, data[2][0] = 1.0f;
    int loaded = vl_norm_load(norm, &w);
    float obs[S_DIM] = {1.0f + 0x1p-13f}, out[S_DIM];
    vl_norm_obs(norm, 1, obs, out);
    vl_norm_destroy(&norm);
    VL_CHECK(loaded == 0);
    S_CHECK_FLOAT(out[0], 0x1p-13 / 1e-4);
}

static void test_tensors_round_trip_through_weights(void)
{
    vl_norm_t *src = s_new(), *dst = s_new();
    VL_CHECK(src && dst);
    s_feed_obs(src);
    s_feed_returns(src, 0, 0, S_T);
    vl_tensor_t t[VL_NORM_TENSORS], got[VL_NORM_TENSORS];
    vl_norm_tensors(src, t);
    uint8_t *buf = NULL;
    size_t size = 0;
    vl_weights_t *w = NULL;
    vl_limits_t lim = vl_limits_default();
    VL_CHECK(vl_weights_encode("p", 3, t, VL_NORM_TENSORS, &buf, &size) == 0);
    vl_reason_t r = vl_weights_decode(buf, size, &lim, &w);
    free(buf);
    int present = r == VL_OK && vl_norm_present(w, S_DIM) && !vl_norm_present(w, S_DIM + 1);
    int loaded = r == VL_OK ? vl_norm_load(dst, w) : -1;
    vl_weights_destroy(&w);
    vl_norm_tensors(dst, got);
    int same = 1;
    for (int i = 0; i < VL_NORM_TENSORS; i++)
        same &= memcmp(t[i].data, got[i].data, vl_tensor_size(&t[i]) * sizeof(float)) == 0;
    float a[S_DIM], b[S_DIM];
    vl_norm_obs(src, 1, s_probe, a);
    vl_norm_obs(dst, 1, s_probe, b);
    float scale_src = vl_norm_reward_scale(src), scale_dst = vl_norm_reward_scale(dst);
    vl_norm_destroy(&src);
    vl_norm_destroy(&dst);
    VL_CHECK(present);
    VL_CHECK(loaded == 0);
    VL_CHECK(same);
    for (int j = 0; j < S_DIM; j++) // the state went through floats: equal to a float's rounding
        S_CHECK_FLOAT(b[j], a[j]);
    S_CHECK_FLOAT(scale_dst, scale_src);
}

/* Returns whether loading w into dst fails and leaves every statistic of
   dst as it was. */
static int s_refused(vl_norm_t *dst, const vl_weights_t *w)
{
    vl_tensor_t t[VL_NORM_TENSORS];
    float before[3][S_DIM] = {{0}}, after[3][S_DIM] = {{0}}, out_before[S_DIM], out_after[S_DIM];
    vl_weights_t unused;
    s_export(dst, t, before, &unused);
    vl_norm_obs(dst, 1, s_probe, out_before);
    float scale = vl_norm_reward_scale(dst);
    int rc = vl_norm_load(dst, w);
    s_export(dst, t, after, &unused);
    vl_norm_obs(dst, 1, s_probe, out_after);
    return rc == -1 && memcmp(before, after, sizeof before) == 0 &&
           memcmp(out_before, out_after, sizeof out_before) == 0 &&
           scale == vl_norm_reward_scale(dst);
}

/* One way of spoiling a good weights message, and whether it still has
   the three tensors in the right shapes. */
typedef struct {
    const char *what;
    int tensor, index; // the float set to value, or tensor -1
    float value;
    int present;
} s_spoil_t;

static const s_spoil_t s_spoils[] = {
    {"NaN mean", 0, 2, NAN, 1},
    {"inf mean", 0, 0, INFINITY, 1},
    {"NaN var", 1, 6, NAN, 1},
    {"negative var", 1, 1, -0.5f, 1},
    {"negative var of a u8 element", 1, 3, -1.0f, 1},
    {"obs count 0", 2, 0, 0.0f, 1},
    {"negative obs count", 2, 0, -3.0f, 1},
    {"return count 0", 2, 1, 0.0f, 1},
    {"inf return mean", 2, 2, -INFINITY, 1},
    {"negative return var", 2, 3, -1e-3f, 1},
    {"NaN return var", 2, 3, NAN, 1},
};

static void test_load_refuses_bad_values_self_unchanged(void)
{
    vl_norm_t *src = s_new(), *dst = s_new();
    VL_CHECK(src && dst);
    s_feed_obs(src);
    s_feed_returns(src, 1, 0, S_T);
    s_feed_returns(dst, 0, 0, 5);
    vl_tensor_t t[VL_NORM_TENSORS];
    float data[3][S_DIM];
    vl_weights_t w;
    int failed = -1;
    for (size_t i = 0; i < sizeof s_spoils / sizeof s_spoils[0] && failed < 0; i++) {
        s_export(src, t, data, &w);
        data[s_spoils[i].tensor][s_spoils[i].index] = s_spoils[i].value;
        if (vl_norm_present(&w, S_DIM) != s_spoils[i].present || !s_refused(dst, &w))
            failed = (int)i;
    }
    s_export(src, t, data, &w);
    int accepted = vl_norm_load(dst, &w) == 0;
    vl_norm_destroy(&src);
    vl_norm_destroy(&dst);
    if (failed >= 0)
        fprintf(stderr, "not refused: %s\n", s_spoils[failed].what);
    VL_CHECK(failed < 0);
    VL_CHECK(accepted);
}

static void test_load_refuses_absent_or_misshaped(void)
{
    vl_norm_t *src = s_new(), *dst = s_new();
    VL_CHECK(src && dst);
    s_feed_obs(src);
    s_feed_returns(dst, 0, 0, 5);
    vl_tensor_t t[VL_NORM_TENSORS], reversed[VL_NORM_TENSORS];
    float data[3][S_DIM], big[2 * S_DIM] = {0};
    vl_weights_t w;
    s_export(src, t, data, &w);
    w.n_tensors = 2; // no norm.state
    int absent = !vl_norm_present(&w, S_DIM) && s_refused(dst, &w);
    s_export(src, t, data, &w);
    strcpy(t[1].name, "norm.obs.variance");
    int renamed = !vl_norm_present(&w, S_DIM) && s_refused(dst, &w);
    s_export(src, t, data, &w);
    t[0].rows = S_DIM + 1, t[0].data = big;
    int longer = !vl_norm_present(&w, S_DIM) && s_refused(dst, &w);
    s_export(src, t, data, &w);
    uint32_t dims[2] = {S_DIM, 1};
    vl_tensor_set_shape(&t[1], 2, dims); // [7, 1], not [7]
    int rank2 = !vl_norm_present(&w, S_DIM) && s_refused(dst, &w);
    s_export(src, t, data, &w);
    t[2].rows = 3; // norm.state [3]
    int short_state = !vl_norm_present(&w, S_DIM) && s_refused(dst, &w);
    s_export(src, t, data, &w);
    t[2].data = NULL;
    int no_data = !vl_norm_present(&w, S_DIM) && s_refused(dst, &w);
    s_export(src, t, data, &w);
    w.tensors = NULL;
    int no_tensors = !vl_norm_present(&w, S_DIM) && s_refused(dst, &w);
    s_export(src, t, data, &w);
    for (int i = 0; i < VL_NORM_TENSORS; i++) // load goes by name, not position
        reversed[i] = t[VL_NORM_TENSORS - 1 - i];
    w.tensors = reversed;
    int accepted = vl_norm_present(&w, S_DIM) && vl_norm_load(dst, &w) == 0;
    vl_norm_destroy(&src);
    vl_norm_destroy(&dst);
    VL_CHECK(absent);
    VL_CHECK(renamed);
    VL_CHECK(longer);
    VL_CHECK(rank2);
    VL_CHECK(short_state);
    VL_CHECK(no_data);
    VL_CHECK(no_tensors);
    VL_CHECK(accepted);
}

int main(void)
{
    VL_RUN(test_new_refuses_bad_spec_or_gamma);
    VL_RUN(test_fresh_stats_are_sb3s_start);
    VL_RUN(test_obs_stats_match_reference);
    VL_RUN(test_obs_normalised_as_reference_integers_unchanged);
    VL_RUN(test_obs_pass_through_before_any);
    VL_RUN(test_obs_clip_at_ten);
    VL_RUN(test_zero_variance_divides_by_sqrt_eps);
    VL_RUN(test_nonfinite_batches_change_nothing);
    VL_RUN(test_huge_observations_publish_finite_tensors);
    VL_RUN(test_returns_match_reference);
    VL_RUN(test_returns_interleaved_streams_as_each_alone);
    VL_RUN(test_tensors_round_trip_through_weights);
    VL_RUN(test_load_refuses_bad_values_self_unchanged);
    VL_RUN(test_load_refuses_absent_or_misshaped);
    return VL_DONE();
}
