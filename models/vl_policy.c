/*  vl_policy: volley's actor-critic network; see vl_policy.h.

    The network is a backend's (vl_policy_backend.h: the mlp towers, the
    conv net or the recurrent net), picked once from the model spec; the
    policy adds what every backend shares: normalisation, a box's log-std,
    the loss, and an Adam state per flat parameter array: Adam works element
    by element, so states stepped together are one optimizer over them all.

    Stats are plain means over the minibatch (the header's stats formulas
    carry no importance weight); the returned loss is weighted by w. With w
    NULL, loss = policy_loss + vf_coef * value_loss - ent_coef * entropy. */
#include "vl_policy.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vl_adam.h"
#include "vl_dist.h"
#include "vl_policy_backend.h"

#define S_CLIP_EPS    1e-6f // torch's clip_grad_norm_ guard
#define S_TENSORS_MAX 64    // a Weights message's most (vl_limits_default): a network's most
#define S_ARRAYS      (VL_POLICY_BACKEND_ARRAYS + 1) // the most flat parameter arrays, and a log-std

/* The backends, tried in order: the first that accepts a spec builds it. */
static const vl_policy_backend_ops_t *const s_backends[] = {
    &vl_policy_rnet_ops, // a spec ending in an lstm
    &vl_policy_net_ops,  // a spec with conv layers
    &vl_policy_mlp_ops,  // any other: two towers
};

struct vl_policy_s {
    uint32_t obs_dim;
    uint32_t num_actions;                      // head outputs
    vl_action_spec_t action;                   // the action space
    vl_obs_spec_t obs_spec;                    // the observation's fields
    const vl_policy_backend_ops_t *ops;        // the network's operations...
    void *net;                                 // ...and the network they take
    vl_adam_t *adam[VL_POLICY_BACKEND_ARRAYS]; // an Adam state per flat array of the network
    char model[VL_MODEL_TEXT_MAX + 1];         // the spec's canonical text
    float *logstd; // box: [dims] log-std, its gradient and Adam state; else NULL
    float *dlogstd;
    vl_adam_t *logstd_adam;
    vl_norm_t *norm; // observation and return statistics, NULL while off
    float *nobs;     // [ncap][obs_dim] normalised observations
    uint32_t ncap;
    float *logits;  // [cap][A]
    float *dlogits; // [cap][A], log-probs until turned into gradients
    float *values;  // [cap]
    float *dvalues; // [cap]
    uint32_t cap;   // samples the scratch buffers hold
};

/* Sums over a minibatch, in double so that large n loses nothing. */
typedef struct {
    double loss;    // weighted total
    double surr;    // unweighted clipped surrogate
    double sq_err;  // unweighted (v - v_target)^2
    double entropy; // unweighted
    double kl;      // (ratio - 1) - log ratio
    double clipped; // samples with |ratio - 1| > clip
} s_sums_t;

/* Builds the network the first backend that accepts spec makes, and an
   Adam state per flat array. Returns 0, or -1 after writing why to err. */
static int s_net_new(vl_policy_t *self, const vl_model_spec_t *spec, int threads, vl_rng_t *rng,
                     char *err, size_t errlen)
{
    size_t b = 0;
    while (!s_backends[b]->accepts(spec))
        b++; // the last accepts every spec
    vl_policy_backend_args_t args = {spec, &self->obs_spec, self->obs_dim, self->num_actions,
                                     threads};
    self->ops = s_backends[b];
    if (!(self->net = self->ops->create(&args, rng, err, errlen)))
        return -1;
    float *params[VL_POLICY_BACKEND_ARRAYS], *grads[VL_POLICY_BACKEND_ARRAYS];
    size_t counts[VL_POLICY_BACKEND_ARRAYS];
    int k = self->ops->arrays(self->net, params, grads, counts), ok = 1;
    for (int i = 0; ok && i < k; i++)
        ok = (self->adam[i] = vl_adam_new(counts[i])) != NULL;
    if (!ok)
        snprintf(err, errlen, "no memory for the network");
    return ok ? 0 : -1;
}

/* Its weights are published and checkpointed as one Weights message, which
   a receiver refuses beyond the wire's tensor limit. Returns self, or NULL
   (self destroyed) after writing why to err. */
static vl_policy_t *s_refuse_unpublishable(vl_policy_t *self, char *err, size_t errlen)
{
    vl_limits_t lim = vl_limits_default();
    uint32_t n = vl_policy_tensor_count(self);
    if (n <= lim.max_tensors)
        return self;
    snprintf(err, errlen,
             "the network has %u tensors; a weights message carries at most %u (fewer layers or "
             "image fields)",
             n, lim.max_tensors);
    vl_policy_destroy(&self);
    return NULL;
}

/* Makes a box policy's log-std (zero: std 1 at first, as CleanRL's), its
   gradient and Adam state. Returns 0, or -1 on no memory. */
static int s_logstd_new(vl_policy_t *self)
{
    if (!vl_action_is_box(&self->action))
        return 0;
    uint32_t dims = self->action.dims;
    self->logstd = calloc(dims, sizeof(float));
    self->dlogstd = calloc(dims, sizeof(float));
    self->logstd_adam = vl_adam_new(dims);
    return self->logstd && self->dlogstd && self->logstd_adam ? 0 : -1;
}

vl_policy_t *vl_policy_new_spec(const vl_model_spec_t *spec, const vl_obs_spec_t *obs,
                                const vl_action_spec_t *act, uint64_t seed, int threads, char *err,
                                size_t errlen)
{
    char scratch[8];
    vl_limits_t lim = vl_limits_default();
    if (!err)
        err = scratch, errlen = sizeof scratch;
    if (vl_action_check(act, &lim, err, errlen) != 0)
        return NULL;
    uint32_t num_actions = vl_action_outputs(act);
    if (vl_model_spec_check(spec, obs, err, errlen) != 0)
        return NULL;
    vl_policy_t *self = calloc(1, sizeof *self);
    if (!self || (self->action = *act, s_logstd_new(self)) != 0) {
        snprintf(err, errlen, "no memory for the network");
        vl_policy_destroy(&self);
        return NULL;
    }
    self->num_actions = num_actions;
    self->obs_spec = *obs;
    for (uint32_t i = 0; i < obs->n_fields; i++) {
        uint32_t values = 1;
        for (uint32_t d = 0; d < obs->fields[i].ndim; d++)
            values *= obs->fields[i].shape[d];
        self->obs_dim += values; // bounded: the check bounds every field and the features
    }
    vl_model_spec_format(spec, self->model, sizeof self->model);
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    if (s_net_new(self, spec, threads, &rng, err, errlen) != 0)
        vl_policy_destroy(&self);
    return self ? s_refuse_unpublishable(self, err, errlen) : NULL;
}

vl_policy_t *vl_policy_new(uint32_t obs_dim, uint32_t num_actions, uint32_t hidden, uint64_t seed)
{
    if (obs_dim == 0 || num_actions == 0 || hidden == 0)
        return NULL;
    vl_model_spec_t *spec = vl_model_spec_mlp(hidden);
    vl_obs_spec_t obs = vl_obs_spec_flat(obs_dim);
    vl_action_spec_t act = vl_action_discrete(num_actions);
    vl_policy_t *self = spec ? vl_policy_new_spec(spec, &obs, &act, seed, 0, NULL, 0) : NULL;
    vl_model_spec_destroy(&spec);
    return self;
}

void vl_policy_destroy(vl_policy_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_policy_t *self = *self_p;
    if (self->net)
        self->ops->destroy(&self->net);
    for (int k = 0; k < VL_POLICY_BACKEND_ARRAYS; k++)
        vl_adam_destroy(&self->adam[k]);
    free(self->logstd);
    free(self->dlogstd);
    vl_adam_destroy(&self->logstd_adam);
    vl_norm_destroy(&self->norm);
    free(self->nobs);
    free(self->logits);
    free(self->dlogits);
    free(self->values);
    free(self->dvalues);
    free(self);
    *self_p = NULL;
}

uint32_t vl_policy_obs_dim(const vl_policy_t *self)
{
    return self->obs_dim;
}

uint32_t vl_policy_num_actions(const vl_policy_t *self)
{
    return self->num_actions;
}

const char *vl_policy_model(const vl_policy_t *self)
{
    return self->model;
}

const vl_action_spec_t *vl_policy_action(const vl_policy_t *self)
{
    return &self->action;
}

const float *vl_policy_logstd(const vl_policy_t *self)
{
    return self->logstd;
}

/* Makes a normaliser for this policy's observations; it replaces none. */
static vl_norm_t *s_norm_new(vl_policy_t *self, float gamma)
{
    return vl_norm_new(&self->obs_spec, gamma);
}

int vl_policy_norm_on(vl_policy_t *self, float gamma)
{
    if (self->norm)
        return 0;
    self->norm = s_norm_new(self, gamma);
    return self->norm ? 0 : -1;
}

vl_norm_t *vl_policy_norm(vl_policy_t *self)
{
    return self->norm;
}

/* Returns obs normalised into the policy's scratch when normalisation is
   on (obs itself when off), or NULL on no memory. */
static const float *s_normalised(vl_policy_t *self, uint32_t n, const float *obs)
{
    if (!self->norm)
        return obs;
    if (n > self->ncap) {
        float *grown = realloc(self->nobs, (size_t)n * self->obs_dim * sizeof(float));
        if (!grown)
            return NULL;
        self->nobs = grown;
        self->ncap = n;
    }
    vl_norm_obs(self->norm, n, obs, self->nobs);
    return self->nobs;
}

int vl_policy_forward_seq(vl_policy_t *self, uint32_t B, uint32_t T, const float *obs,
                          const float *state0, const uint8_t *reset, float *out, float *values,
                          float *state1)
{
    if (!(obs = s_normalised(self, B * T, obs)))
        return -1;
    return self->ops->forward_seq(self->net, B, T, obs, state0, reset, out, values, state1);
}

uint32_t vl_policy_state_size(const vl_policy_t *self)
{
    return self->ops->state_size(self->net);
}

int vl_policy_forward(vl_policy_t *self, uint32_t n, const float *obs, float *logits, float *values)
{
    if (!(obs = s_normalised(self, n, obs)))
        return -1;
    return self->ops->forward(self->net, n, obs, logits, values);
}

void vl_log_softmax(const float *logits, uint32_t A, float *logp)
{
    float max = logits[0];
    for (uint32_t j = 1; j < A; j++)
        if (logits[j] > max)
            max = logits[j];
    float sum = 0.0f;
    for (uint32_t j = 0; j < A; j++)
        sum += expf(logits[j] - max);
    // Subtract max first: max + log(sum) would round away small logit gaps.
    float log_sum = logf(sum);
    for (uint32_t j = 0; j < A; j++)
        logp[j] = (logits[j] - max) - log_sum;
}

void vl_policy_zero_grad(vl_policy_t *self)
{
    if (self->dlogstd)
        memset(self->dlogstd, 0, self->action.dims * sizeof(float));
    self->ops->zero_grad(self->net);
}

int vl_policy_backward(vl_policy_t *self, uint32_t n, const float *dlogits, const float *dvalues)
{
    return self->ops->backward(self->net, n, dlogits, dvalues);
}

void vl_policy_params_changed(vl_policy_t *self)
{
    self->ops->params_changed(self->net);
}

/* Grows buf to hold count floats; on failure the old buffer stays. */
static int s_grow(float **buf, size_t count)
{
    float *grown = realloc(*buf, count * sizeof(float));
    if (!grown)
        return -1;
    *buf = grown;
    return 0;
}

/* Makes the loss scratch hold n samples. Returns 0, or -1 on no memory. */
static int s_reserve(vl_policy_t *self, uint32_t n)
{
    if (n <= self->cap)
        return 0;
    size_t A = self->num_actions;
    if (s_grow(&self->logits, n * A) != 0 || s_grow(&self->dlogits, n * A) != 0 ||
        s_grow(&self->values, n) != 0 || s_grow(&self->dvalues, n) != 0)
        return -1;
    self->cap = n;
    return 0;
}

/* The policy part of one sample of weight wn (w / n): given its head
   outputs z, writes d(loss)/d(z) into dz (and adds d(loss)/d(logstd) into
   the policy's dlogstd for a box) and adds its terms into sums. The
   surrogate min(ratio * adv, clamp(ratio) * adv) has gradient ratio * adv
   with respect to log pi(a) where its first branch is the smaller (or equal)
   one, and 0 where the clamped branch wins, as it is then constant. The
   loss is -surr - ent_coef * H: vl_dist's gradient with c_logp = -wn dsurr,
   c_ent = -wn ent_coef, whose dsurr needs the log-prob first. */
static void s_policy_sample(vl_policy_t *self, const vl_loss_params_t *p, const float *z,
                            const float *a, float old_logp, float adv, float wn, float *dz,
                            s_sums_t *sums)
{
    float logp = vl_dist_logp(&self->action, z, self->logstd, a);
    float log_ratio = logp - old_logp, ratio = expf(log_ratio);
    float lo = 1.0f - p->clip, hi = 1.0f + p->clip;
    float clamped = ratio < lo ? lo : ratio > hi ? hi : ratio;
    float surr1 = ratio * adv, surr2 = clamped * adv;
    float surr = surr1 <= surr2 ? surr1 : surr2;
    float dsurr = surr1 <= surr2 ? surr1 : 0.0f; // d surr / d log pi(a)
    float entropy;
    vl_dist_grad(&self->action, z, self->logstd, a, -wn * dsurr, -wn * p->ent_coef, dz,
                 self->dlogstd, NULL, &entropy);
    sums->loss += (double)wn * (-surr - p->ent_coef * entropy);
    sums->surr += surr;
    sums->entropy += entropy;
    sums->kl += (ratio - 1.0f) - log_ratio;
    sums->clipped += fabsf(ratio - 1.0f) > p->clip;
}

/* Turns the sums over n samples into stats. */
static void s_fill_stats(const s_sums_t *sums, uint32_t n, vl_loss_stats_t *stats)
{
    stats->policy_loss = (float)(-sums->surr / n);
    stats->value_loss = (float)(0.5 * sums->sq_err / n);
    stats->entropy = (float)(sums->entropy / n);
    stats->approx_kl = (float)(sums->kl / n);
    stats->clip_frac = (float)(sums->clipped / n);
}

/* The loss of B sequences' first T steps, whose head outputs and values
   out [B*stride][A] and values [B*stride] hold (sample b*T + t at row
   b*stride + t): their gradients backward through the last forward, the
   rows past T of each sequence with none, their stats filled. Returns the
   loss, or NAN. */
static float s_loss_rows(vl_policy_t *self, const vl_loss_params_t *p, uint32_t B, uint32_t stride,
                         uint32_t T, const float *out, const float *values, const float *actions,
                         const float *old_logp, const float *adv, const float *v_target,
                         const float *w, vl_loss_stats_t *stats)
{
    s_sums_t sums = {0};
    uint32_t A = self->num_actions, dims = self->action.dims, n = B * T;
    for (uint32_t b = 0; b < B; b++) {
        for (uint32_t t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t, row = (size_t)b * stride + t;
            float wn = (w ? w[i] : 1.0f) / (float)n;
            s_policy_sample(self, p, out + row * A, actions + i * dims, old_logp[i], adv[i], wn,
                            self->dlogits + row * A, &sums);
            float err = values[row] - v_target[i];
            self->dvalues[row] = p->vf_coef * wn * err;
            sums.loss += (double)wn * p->vf_coef * 0.5f * err * err;
            sums.sq_err += (double)err * err;
        }
        size_t rest = (size_t)b * stride + T, left = stride - T;
        memset(self->dlogits + rest * A, 0, left * A * sizeof(float));
        memset(self->dvalues + rest, 0, left * sizeof(float));
    }
    if (vl_policy_backward(self, B * stride, self->dlogits, self->dvalues) != 0)
        return NAN;
    if (stats)
        s_fill_stats(&sums, n, stats);
    return (float)sums.loss;
}

float vl_policy_loss_grad(vl_policy_t *self, const vl_loss_params_t *p, uint32_t n,
                          const float *obs, const float *actions, const float *old_logp,
                          const float *adv, const float *v_target, const float *w,
                          vl_loss_stats_t *stats)
{
    return vl_policy_loss_grad_seq(self, p, n, 1, obs, NULL, NULL, actions, old_logp, adv, v_target,
                                   w, stats);
}

float vl_policy_loss_grad_seq(vl_policy_t *self, const vl_loss_params_t *p, uint32_t B, uint32_t T,
                              const float *obs, const float *state0, const uint8_t *reset,
                              const float *actions, const float *old_logp, const float *adv,
                              const float *v_target, const float *w, vl_loss_stats_t *stats)
{
    uint32_t n = B * T;
    if (n == 0) {
        if (stats)
            memset(stats, 0, sizeof *stats);
        return 0.0f;
    }
    if (s_reserve(self, n) != 0 || vl_policy_forward_seq(self, B, T, obs, state0, reset,
                                                         self->logits, self->values, NULL) != 0)
        return NAN;
    return s_loss_rows(self, p, B, T, T, self->logits, self->values, actions, old_logp, adv,
                       v_target, w, stats);
}

float vl_policy_loss_grad_outputs(vl_policy_t *self, const vl_loss_params_t *p, uint32_t B,
                                  uint32_t stride, uint32_t T, const float *out,
                                  const float *values, const float *actions, const float *old_logp,
                                  const float *adv, const float *v_target, const float *w,
                                  vl_loss_stats_t *stats)
{
    if (T > stride)
        return NAN;
    if (B * T == 0) {
        if (stats)
            memset(stats, 0, sizeof *stats);
        return 0.0f;
    }
    if (s_reserve(self, B * stride) != 0)
        return NAN;
    return s_loss_rows(self, p, B, stride, T, out, values, actions, old_logp, adv, v_target, w,
                       stats);
}

/* The flat parameter arrays and their optimizers: the network's, then a
   box's log-std. Returns how many, filling params, grads, counts, adams. */
static int s_arrays(vl_policy_t *self, float **params, float **grads, size_t *counts,
                    vl_adam_t **adams)
{
    int k = self->ops->arrays(self->net, params, grads, counts);
    for (int i = 0; i < k; i++)
        adams[i] = self->adam[i];
    if (self->logstd) {
        params[k] = self->logstd;
        grads[k] = self->dlogstd;
        counts[k] = self->action.dims;
        adams[k++] = self->logstd_adam;
    }
    return k;
}

/* Returns the global L2 norm of the accumulated gradient. */
static double s_grad_norm(vl_policy_t *self)
{
    float *params[S_ARRAYS], *grads[S_ARRAYS];
    size_t counts[S_ARRAYS];
    vl_adam_t *adams[S_ARRAYS];
    int arrays = s_arrays(self, params, grads, counts, adams);
    double lanes[8] = {0}, sq = 0.0; // 8 independent sums: vectorises without reassociating
    for (int k = 0; k < arrays; k++) {
        const float *g = grads[k];
        size_t count = counts[k], i = 0;
        for (; i + 8 <= count; i += 8)
            for (int j = 0; j < 8; j++)
                lanes[j] += (double)g[i + j] * g[i + j];
        for (; i < count; i++)
            sq += (double)g[i] * g[i];
    }
    for (int j = 0; j < 8; j++)
        sq += lanes[j];
    return sqrt(sq);
}

/* A NaN or infinite gradient would turn every weight into NaN through Adam's
   moments for good, so such a step is skipped (the norm tells the caller). */
float vl_policy_adam_step(vl_policy_t *self, float lr, float max_norm)
{
    double norm = s_grad_norm(self);
    if (!isfinite(norm))
        return (float)norm;
    float scale = max_norm > 0.0f && norm > max_norm ? max_norm / (float)(norm + S_CLIP_EPS) : 1;
    float *params[S_ARRAYS], *grads[S_ARRAYS];
    size_t counts[S_ARRAYS];
    vl_adam_t *adams[S_ARRAYS];
    int arrays = s_arrays(self, params, grads, counts, adams);
    for (int k = 0; k < arrays; k++) {
        float *g = grads[k];
        size_t count = counts[k];
        size_t i = 0;
        for (; scale != 1.0f && i + 8 <= count; i += 8)
            for (int j = 0; j < 8; j++)
                g[i + j] *= scale;
        for (; scale != 1.0f && i < count; i++)
            g[i] *= scale;
        vl_adam_step(adams[k], params[k], g, lr);
    }
    vl_policy_params_changed(self);
    return (float)norm;
}

/* Returns the tensors of the network alone: its layers and a log-std. */
static uint32_t s_net_tensors(const vl_policy_t *self)
{
    return self->ops->tensor_count(self->net) + (self->logstd != NULL);
}

uint32_t vl_policy_tensor_count(const vl_policy_t *self)
{
    return s_net_tensors(self) + (self->norm ? VL_NORM_TENSORS : 0);
}

/* Fills t with the log-std tensor, or the statistics' tensor k (their data:
   no gradient, the same pointers). */
static void s_extra_tensor(vl_policy_t *self, uint32_t k, int grads, vl_tensor_t *t)
{
    memset(t, 0, sizeof *t);
    if (self->logstd && k-- == 0) {
        snprintf(t->name, sizeof t->name, "pi.logstd");
        t->rows = self->action.dims;
        t->cols = 1;
        t->ndim = 1;
        t->data = grads ? self->dlogstd : self->logstd;
        return;
    }
    vl_tensor_t norm[VL_NORM_TENSORS];
    vl_norm_tensors(self->norm, norm);
    *t = norm[k];
}

/* Fills t's name and shape for tensor i and points its data into the
   parameters or the gradients. */
static void s_tensor(vl_policy_t *self, uint32_t i, int grads, vl_tensor_t *t)
{
    assert(i < vl_policy_tensor_count(self));
    uint32_t own = self->ops->tensor_count(self->net);
    if (i >= own)
        s_extra_tensor(self, i - own, grads, t);
    else
        self->ops->tensor(self->net, i, grads, t);
}

void vl_policy_tensor(vl_policy_t *self, uint32_t i, vl_tensor_t *t)
{
    s_tensor(self, i, 0, t);
}

void vl_policy_grad_tensor(vl_policy_t *self, uint32_t i, vl_tensor_t *t)
{
    s_tensor(self, i, 1, t);
}

/* Returns the tensor of w that has want's name, shape and data, or NULL.
   Names from the wire may lack a NUL; strncmp stops at the field's end. */
static const vl_tensor_t *s_find(const vl_weights_t *w, const vl_tensor_t *want)
{
    for (uint32_t k = 0; k < w->n_tensors; k++) {
        const vl_tensor_t *t = &w->tensors[k];
        if (strncmp(t->name, want->name, sizeof t->name) != 0)
            continue;
        if (!vl_tensor_same_shape(t, want) || !t->data)
            return NULL;
        return t;
    }
    return NULL;
}

/* Takes w's statistics when it carries them (normalisation on), else turns
   normalisation off. Returns 0, or -1 (nothing changed) when they are
   there but bad, or on no memory. */
static int s_load_norm(vl_policy_t *self, const vl_weights_t *w)
{
    if (!vl_norm_present(w, self->obs_dim)) {
        vl_norm_destroy(&self->norm);
        return 0;
    }
    vl_norm_t *norm = self->norm ? NULL : s_norm_new(self, 0.99f);
    if (!self->norm && !norm)
        return -1;
    if (vl_norm_load(norm ? norm : self->norm, w) != 0) {
        vl_norm_destroy(&norm);
        return -1;
    }
    if (norm)
        self->norm = norm;
    return 0;
}

int vl_policy_load(vl_policy_t *self, const vl_weights_t *w)
{
    if (!w || (w->n_tensors > 0 && !w->tensors))
        return -1;
    vl_tensor_t mine;
    uint32_t count = s_net_tensors(self);
    for (uint32_t i = 0; i < count; i++) {
        vl_policy_tensor(self, i, &mine);
        if (!s_find(w, &mine))
            return -1;
    }
    if (s_load_norm(self, w) != 0)
        return -1;
    for (uint32_t i = 0; i < count; i++) {
        vl_policy_tensor(self, i, &mine);
        const vl_tensor_t *t = s_find(w, &mine);
        memmove(mine.data, t->data, (size_t)mine.rows * mine.cols * sizeof(float));
    }
    vl_policy_params_changed(self);
    return 0;
}

void vl_policy_mismatch(vl_policy_t *self, const vl_weights_t *w, char *why, size_t why_size)
{
    vl_tensor_t mine[S_TENSORS_MAX];  // vl_policy_new_spec refuses a network of more
    uint32_t n = s_net_tensors(self); // statistics are optional
    snprintf(why, why_size, "they fit");
    for (uint32_t i = 0; i < n && i < S_TENSORS_MAX; i++)
        vl_policy_tensor(self, i, &mine[i]);
    if (w)
        vl_tensors_mismatch(mine, n < S_TENSORS_MAX ? n : S_TENSORS_MAX, w->tensors, w->n_tensors,
                            why, why_size);
}

size_t vl_policy_optimizer_size(const vl_policy_t *self)
{
    float *params[S_ARRAYS], *grads[S_ARRAYS];
    size_t counts[S_ARRAYS], size = 0;
    vl_adam_t *adams[S_ARRAYS];
    int arrays = s_arrays((vl_policy_t *)self, params, grads, counts, adams);
    for (int k = 0; k < arrays; k++)
        size += vl_adam_state_size(adams[k]);
    return size;
}

void vl_policy_save_optimizer(const vl_policy_t *self, void *out)
{
    float *params[S_ARRAYS], *grads[S_ARRAYS];
    size_t counts[S_ARRAYS];
    vl_adam_t *adams[S_ARRAYS];
    int arrays = s_arrays((vl_policy_t *)self, params, grads, counts, adams);
    uint8_t *p = out;
    for (int k = 0; k < arrays; k++) {
        vl_adam_save(adams[k], p);
        p += vl_adam_state_size(adams[k]);
    }
}

int vl_policy_load_optimizer(vl_policy_t *self, const void *in, size_t size)
{
    if (size != vl_policy_optimizer_size(self))
        return -1;
    float *params[S_ARRAYS], *grads[S_ARRAYS];
    size_t counts[S_ARRAYS];
    vl_adam_t *adams[S_ARRAYS];
    int arrays = s_arrays(self, params, grads, counts, adams);
    const uint8_t *p = in;
    for (int k = 0; k < arrays; k++) {
        vl_adam_load(adams[k], p, vl_adam_state_size(adams[k]));
        p += vl_adam_state_size(adams[k]);
    }
    return 0;
}

void vl_policy_set_inference(vl_policy_t *self, int on)
{
    if (self->ops->set_inference)
        self->ops->set_inference(self->net, on);
}

void vl_policy_set_portable(vl_policy_t *self)
{
    self->ops->set_portable(self->net);
}
