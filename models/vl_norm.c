/*  vl_norm: running observation and return statistics, as Stable-Baselines3's
    RunningMeanStd and VecNormalize keep them.

    Each statistic starts as a pseudo-sample of count 1e-4, mean 0 and
    variance 1, and a batch is merged in by Chan et al.'s parallel formula, so
    the result is the pooled mean and variance of everything seen whatever the
    batches were. The state is double; the published tensors are float copies
    refreshed after every change (saturated at +-FLT_MAX, so a hostile
    observation can make them huge but never a non-finite float that every
    receiver of the weights would refuse).

    Elements of integer-encoded fields (u8, u2, u1) are never normalised:
    their mean stays 0 and their variance 1, in the state and in the tensors,
    and the values a load brings for them are checked but not kept.

    The discounted return G of each stream lives in one of VL_NORM_STREAMS
    slots picked by a hash of the stream id: streams that collide share a G,
    and memory stays the same whatever ids peers send. */
#include "vl_norm.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S_COUNT0 1e-4 // the pseudo-count a statistic starts with

_Static_assert((VL_NORM_STREAMS & (VL_NORM_STREAMS - 1)) == 0,
               "VL_NORM_STREAMS is a power of two: a slot is the hash's low bits");

/* A run of consecutive f32 elements of an observation. */
typedef struct {
    uint32_t start;
    uint32_t len;
} s_run_t;

struct vl_norm_s {
    uint32_t dim;
    double gamma;
    uint32_t n_runs;
    s_run_t runs[VL_OBS_FIELDS_MAX]; // the f32 elements, the only ones normalised
    double obs_count;
    double *mean;       // [dim]
    double *var;        // [dim]
    double *std;        // [dim] sqrt(var + eps), what vl_norm_obs divides by
    double *batch_mean; // [dim] scratch of one update
    double *batch_var;  // [dim] scratch of one update
    double ret_count, ret_mean, ret_var;
    double returns[VL_NORM_STREAMS]; // running discounted return G of each slot
    float *mean_f;                   // [dim] published norm.obs.mean
    float *var_f;                    // [dim] published norm.obs.var
    float state_f[4];                // published norm.state
};

/* Returns d as a float, saturated at +-FLT_MAX. */
static float s_to_float(double d)
{
    if (d > FLT_MAX)
        return FLT_MAX;
    if (d < -FLT_MAX)
        return -FLT_MAX;
    return (float)d;
}

/* Merges a batch of nb values of mean mb and variance vb into a statistic
   of count `count` (updated by the caller, once for every element). */
static void s_merge(double count, double nb, double mb, double vb, double *mean, double *var)
{
    double tot = count + nb, delta = mb - *mean;
    double m2 = *var * count + vb * nb + delta * delta * count * nb / tot;
    *mean += delta * nb / tot;
    *var = m2 / tot;
}

/* Refreshes what is derived from the double state: the float tensors and
   the divisors of vl_norm_obs. */
static void s_publish(vl_norm_t *self)
{
    for (uint32_t r = 0; r < self->n_runs; r++) {
        for (uint32_t j = self->runs[r].start; j < self->runs[r].start + self->runs[r].len; j++) {
            self->mean_f[j] = s_to_float(self->mean[j]);
            self->var_f[j] = s_to_float(self->var[j]);
            self->std[j] = sqrt(self->var[j] + VL_NORM_EPS);
        }
    }
    self->state_f[0] = s_to_float(self->obs_count);
    self->state_f[1] = s_to_float(self->ret_count);
    self->state_f[2] = s_to_float(self->ret_mean);
    self->state_f[3] = s_to_float(self->ret_var);
}

/* Finds the runs of f32 elements of a checked spec. */
static void s_find_runs(vl_norm_t *self, const vl_obs_spec_t *spec)
{
    uint32_t at = 0;
    for (uint32_t i = 0; i < spec->n_fields; i++) {
        const vl_obs_field_t *f = &spec->fields[i];
        uint32_t n = 1;
        for (uint32_t d = 0; d < f->ndim; d++)
            n *= f->shape[d];
        if (f->encoding == VL_OBS_F32) {
            s_run_t *last = self->n_runs ? &self->runs[self->n_runs - 1] : NULL;
            if (last && last->start + last->len == at)
                last->len += n;
            else
                self->runs[self->n_runs++] = (s_run_t){at, n};
        }
        at += n;
    }
}

vl_norm_t *vl_norm_new(const vl_obs_spec_t *spec, float gamma)
{
    vl_limits_t lim = vl_limits_default();
    uint32_t dim, wire_bytes;
    if (!spec || vl_obs_spec_check(spec, &lim, &dim, &wire_bytes) != VL_OK)
        return NULL;
    if (!vl_float_is_finite(gamma) || gamma < 0.0f || gamma > 1.0f)
        return NULL;
    vl_norm_t *self = calloc(1, sizeof *self);
    double *d = calloc(5 * (size_t)dim, sizeof *d);
    float *f = calloc(2 * (size_t)dim, sizeof *f);
    if (!self || !d || !f) {
        free(self);
        free(d);
        free(f);
        return NULL;
    }
    *self = (vl_norm_t){.dim = dim, .gamma = gamma, .obs_count = S_COUNT0};
    self->mean = d, self->var = d + dim, self->std = d + 2 * (size_t)dim;
    self->batch_mean = d + 3 * (size_t)dim, self->batch_var = d + 4 * (size_t)dim;
    self->mean_f = f, self->var_f = f + dim;
    for (uint32_t j = 0; j < dim; j++)
        self->var[j] = 1.0, self->var_f[j] = 1.0f;
    self->ret_count = S_COUNT0, self->ret_var = 1.0;
    s_find_runs(self, spec);
    s_publish(self);
    return self;
}

void vl_norm_destroy(vl_norm_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_norm_t *self = *self_p;
    free(self->mean);
    free(self->mean_f);
    free(self);
    *self_p = NULL;
}

uint32_t vl_norm_dim(const vl_norm_t *self)
{
    return self->dim;
}

/* Returns 1 if every f32 element of n observations is finite. */
static int s_obs_finite(const vl_norm_t *self, uint32_t n, const float *obs)
{
    for (uint32_t k = 0; k < n; k++, obs += self->dim)
        for (uint32_t r = 0; r < self->n_runs; r++)
            if (!vl_wire_all_finite(obs + self->runs[r].start, self->runs[r].len))
                return 0;
    return 1;
}

/* Fills batch_mean and batch_var (population variance, two passes) of the
   f32 elements of n observations. */
static void s_batch_moments(vl_norm_t *self, uint32_t n, const float *obs)
{
    size_t dim = self->dim;
    for (uint32_t r = 0; r < self->n_runs; r++) {
        uint32_t a = self->runs[r].start, b = a + self->runs[r].len;
        for (uint32_t j = a; j < b; j++)
            self->batch_mean[j] = 0.0, self->batch_var[j] = 0.0;
        for (size_t k = 0; k < n; k++)
            for (uint32_t j = a; j < b; j++)
                self->batch_mean[j] += obs[k * dim + j];
        for (uint32_t j = a; j < b; j++)
            self->batch_mean[j] /= n;
        for (size_t k = 0; k < n; k++)
            for (uint32_t j = a; j < b; j++) {
                double e = obs[k * dim + j] - self->batch_mean[j];
                self->batch_var[j] += e * e;
            }
        for (uint32_t j = a; j < b; j++)
            self->batch_var[j] /= n;
    }
}

/* A batch holding a non-finite f32 value is dropped whole: one NaN would
   otherwise poison the statistics for good. */
void vl_norm_update_obs(vl_norm_t *self, uint32_t n, const float *obs)
{
    if (n == 0 || !s_obs_finite(self, n, obs))
        return;
    s_batch_moments(self, n, obs);
    for (uint32_t r = 0; r < self->n_runs; r++)
        for (uint32_t j = self->runs[r].start; j < self->runs[r].start + self->runs[r].len; j++)
            s_merge(self->obs_count, n, self->batch_mean[j], self->batch_var[j], &self->mean[j],
                    &self->var[j]);
    self->obs_count += n;
    s_publish(self);
}

/* Returns the clip of z to [-VL_NORM_CLIP, VL_NORM_CLIP] as a float. */
static float s_clip(double z)
{
    if (z > VL_NORM_CLIP)
        return VL_NORM_CLIP;
    if (z < -VL_NORM_CLIP)
        return -VL_NORM_CLIP;
    return (float)z;
}

void vl_norm_obs(const vl_norm_t *self, uint32_t n, const float *obs, float *out)
{
    if (out != obs)
        memcpy(out, obs, (size_t)n * self->dim * sizeof *out);
    if (self->obs_count <= S_COUNT0) // nothing seen (rewards alone are scaled): as they are
        return;
    for (size_t k = 0; k < n; k++, out += self->dim)
        for (uint32_t r = 0; r < self->n_runs; r++)
            for (uint32_t j = self->runs[r].start; j < self->runs[r].start + self->runs[r].len; j++)
                out[j] = s_clip(((double)out[j] - self->mean[j]) / self->std[j]);
}

/* Returns the slot of a stream id: splitmix64's finaliser, so that ids
   differing in a few bits (actor << 16 ^ env) spread over the table. */
static uint32_t s_slot(uint64_t stream)
{
    uint64_t z = stream + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (uint32_t)(z & (VL_NORM_STREAMS - 1));
}

/* Runs G = gamma G + r[t] over T steps from *g, leaving in *g the G after
   the last step (0 if that step ended an episode), and sets the mean and
   variance of the T values G took (Welford's one pass). */
static void s_run_returns(double gamma, double *g, uint32_t T, const float *rewards,
                          const float *dones, double *mean, double *var)
{
    double G = *g, m = 0.0, m2 = 0.0;
    for (uint32_t t = 0; t < T; t++) {
        G = gamma * G + rewards[t];
        double d = G - m;
        m += d / (t + 1);
        m2 += d * (G - m);
        if (dones[t] != 0.0f)
            G = 0.0;
    }
    *g = G;
    *mean = m;
    *var = m2 / T;
}

/* A call holding a non-finite reward changes nothing, for the same reason
   as a non-finite observation. */
void vl_norm_update_returns(vl_norm_t *self, uint64_t stream, uint32_t T, const float *rewards,
                            const float *dones)
{
    if (T == 0 || !vl_wire_all_finite(rewards, T))
        return;
    double mean, var;
    s_run_returns(self->gamma, &self->returns[s_slot(stream)], T, rewards, dones, &mean, &var);
    s_merge(self->ret_count, T, mean, var, &self->ret_mean, &self->ret_var);
    self->ret_count += T;
    s_publish(self);
}

float vl_norm_reward_scale(const vl_norm_t *self)
{
    return (float)(1.0 / sqrt(self->ret_var + VL_NORM_EPS));
}

/* Names and shapes the three tensors of dimension dim (data NULL). Returns
   0, or -1 when dim is 0. */
static int s_shapes(uint32_t dim, vl_tensor_t *t)
{
    static const char *names[VL_NORM_TENSORS] = {"norm.obs.mean", "norm.obs.var", "norm.state"};
    const uint32_t dims[VL_NORM_TENSORS] = {dim, dim, 4};
    memset(t, 0, VL_NORM_TENSORS * sizeof *t);
    for (int i = 0; i < VL_NORM_TENSORS; i++) {
        strcpy(t[i].name, names[i]);
        if (vl_tensor_set_shape(&t[i], 1, &dims[i]) != 0)
            return -1;
    }
    return 0;
}

void vl_norm_tensors(vl_norm_t *self, vl_tensor_t *t)
{
    s_shapes(self->dim, t);
    t[0].data = self->mean_f;
    t[1].data = self->var_f;
    t[2].data = self->state_f;
}

/* Returns the tensor of w named as want with want's shape and data, or
   NULL. Names from the wire may lack a NUL; strncmp stops at the field's
   end. */
static const vl_tensor_t *s_find(const vl_weights_t *w, const vl_tensor_t *want)
{
    for (uint32_t k = 0; k < w->n_tensors; k++) {
        const vl_tensor_t *t = &w->tensors[k];
        if (strncmp(t->name, want->name, sizeof t->name) == 0)
            return vl_tensor_same_shape(t, want) && t->data ? t : NULL;
    }
    return NULL;
}

/* Points got[i] at w's tensor for each of the three of dimension dim.
   Returns 0, or -1 when one is absent or misshaped. */
static int s_lookup(const vl_weights_t *w, uint32_t dim, const vl_tensor_t **got)
{
    vl_tensor_t want[VL_NORM_TENSORS];
    if (!w || (w->n_tensors > 0 && !w->tensors) || s_shapes(dim, want) != 0)
        return -1;
    for (int i = 0; i < VL_NORM_TENSORS; i++)
        if (!(got[i] = s_find(w, &want[i])))
            return -1;
    return 0;
}

int vl_norm_present(const vl_weights_t *w, uint32_t dim)
{
    const vl_tensor_t *got[VL_NORM_TENSORS];
    return s_lookup(w, dim, got) == 0;
}

/* Returns 1 if n floats are finite and, when nonneg, each >= 0. */
static int s_all_ok(const float *x, uint32_t n, int nonneg)
{
    for (uint32_t i = 0; i < n; i++)
        if (!vl_float_is_finite(x[i]) || (nonneg && x[i] < 0.0f))
            return 0;
    return 1;
}

int vl_norm_load(vl_norm_t *self, const vl_weights_t *w)
{
    const vl_tensor_t *got[VL_NORM_TENSORS];
    if (s_lookup(w, self->dim, got) != 0)
        return -1;
    const float *mean = got[0]->data, *var = got[1]->data, *state = got[2]->data;
    if (!s_all_ok(mean, self->dim, 0) || !s_all_ok(var, self->dim, 1) || !s_all_ok(state, 4, 0))
        return -1;
    if (!(state[0] > 0.0f) || !(state[1] > 0.0f) || state[3] < 0.0f)
        return -1;
    for (uint32_t r = 0; r < self->n_runs; r++)
        for (uint32_t j = self->runs[r].start; j < self->runs[r].start + self->runs[r].len; j++)
            self->mean[j] = mean[j], self->var[j] = var[j];
    self->obs_count = state[0];
    self->ret_count = state[1];
    self->ret_mean = state[2];
    self->ret_var = state[3];
    s_publish(self);
    return 0;
}
