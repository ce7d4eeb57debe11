/*  vl_net_test: the oneDNN engine against a naive double-precision
    reference written here (direct conv loops, matrix products, backward by
    hand, the parameter layout read from the header's order, not from the
    engine's tensor table): forward outputs and every parameter's gradient,
    on the cnn preset and on a net of two image fields and a vector field;
    batch sizes changing between calls; params_changed; backward adding;
    refusals; initial weights. */
#include "vl_net.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_OUT_TOL  1e-5 // forward outputs, relative to the largest reference value
#define S_GRAD_TOL 1e-4 // gradients, per tensor, the same way
#define S_LAYERS   64   // reference layers: convs of every image field, then linears

/* The second net: two image fields (u8 and u2, a vector field between
   them), pad, stride 2, tanh and relu, two linear layers. */
#define S_MIXED_SPEC "conv(8,3,2,1) tanh conv(6,3,1) relu linear(16) tanh linear(12) relu"

enum { S_NONE, S_RELU, S_TANH };

/* One layer of the reference, its parameters' offsets in the flat array. */
typedef struct {
    int conv, act;
    int cin, hin, win, cout, hout, wout, k, stride, pad;
    size_t w, b;
    int image; // conv: which image field's chain; -1 for a linear layer
} s_ref_layer_t;

typedef struct {
    const vl_model_spec_t *spec;
    vl_obs_spec_t obs;
    uint32_t A, n_layers, features, width, obs_dim;
    s_ref_layer_t layer[S_LAYERS];
    size_t pi_w, pi_b, v_w, v_b, n_params;
    uint32_t obs_off[VL_OBS_FIELDS_MAX], feat_off[VL_OBS_FIELDS_MAX], values[VL_OBS_FIELDS_MAX];
} s_ref_t;

/* Returns the activation the spec puts after layer l. */
static int s_act_after(const vl_model_spec_t *spec, uint32_t l)
{
    if (l + 1 >= vl_model_spec_count(spec))
        return S_NONE;
    uint32_t k = vl_model_spec_layer(spec, l + 1)->kind;
    return k == VL_LAYER_RELU ? S_RELU : k == VL_LAYER_TANH ? S_TANH : S_NONE;
}

/* Lays the reference out from the spec alone, in the header's order. */
static void s_ref_init(s_ref_t *r, const vl_model_spec_t *spec, const vl_obs_spec_t *obs,
                       uint32_t A)
{
    memset(r, 0, sizeof *r);
    r->spec = spec, r->obs = *obs, r->A = A;
    size_t off = 0;
    int image = 0;
    for (uint32_t f = 0; f < obs->n_fields; f++) {
        const vl_obs_field_t *fd = &obs->fields[f];
        r->values[f] = 1;
        for (uint32_t d = 0; d < fd->ndim; d++)
            r->values[f] *= fd->shape[d];
        r->obs_off[f] = r->obs_dim;
        r->obs_dim += r->values[f];
        r->feat_off[f] = r->features;
        if (fd->ndim != 3) {
            r->features += r->values[f];
            continue;
        }
        int c = (int)fd->shape[0], h = (int)fd->shape[1], w = (int)fd->shape[2];
        for (uint32_t l = 0; l < vl_model_spec_count(spec); l++) {
            const vl_model_layer_t *ly = vl_model_spec_layer(spec, l);
            if (ly->kind != VL_LAYER_CONV)
                continue;
            s_ref_layer_t *x = &r->layer[r->n_layers++];
            *x = (s_ref_layer_t){1,
                                 s_act_after(spec, l),
                                 c,
                                 h,
                                 w,
                                 (int)ly->out,
                                 0,
                                 0,
                                 (int)ly->kernel,
                                 (int)ly->stride,
                                 (int)ly->pad,
                                 0,
                                 0,
                                 image};
            x->hout = (h + 2 * x->pad - x->k) / x->stride + 1;
            x->wout = (w + 2 * x->pad - x->k) / x->stride + 1;
            x->w = off, off += (size_t)x->cout * c * x->k * x->k;
            x->b = off, off += (size_t)x->cout;
            c = x->cout, h = x->hout, w = x->wout;
        }
        r->features += (uint32_t)(c * h * w);
        image++;
    }
    int in = (int)r->features;
    for (uint32_t l = 0; l < vl_model_spec_count(spec); l++) {
        const vl_model_layer_t *ly = vl_model_spec_layer(spec, l);
        if (ly->kind != VL_LAYER_LINEAR)
            continue;
        s_ref_layer_t *x = &r->layer[r->n_layers++];
        *x = (s_ref_layer_t){0, s_act_after(spec, l), in, 1, 1, (int)ly->out, 1, 1, 1, 1, 0, 0, 0,
                             -1};
        x->w = off, off += (size_t)x->cout * in;
        x->b = off, off += (size_t)x->cout;
        in = x->cout;
    }
    r->width = (uint32_t)in;
    r->pi_w = off, off += (size_t)A * in;
    r->pi_b = off, off += A;
    r->v_w = off, off += (size_t)in;
    r->v_b = off, off += 1;
    r->n_params = off;
}

/* One layer forward on one sample: out from in, activation applied. */
static void s_layer_fwd(const s_ref_layer_t *x, const float *p, const double *in, double *out)
{
    for (int o = 0; o < x->cout; o++)
        for (int oy = 0; oy < x->hout; oy++)
            for (int ox = 0; ox < x->wout; ox++) {
                double z = p[x->b + o];
                for (int c = 0; c < x->cin; c++)
                    for (int ky = 0; ky < x->k; ky++)
                        for (int kx = 0; kx < x->k; kx++) {
                            int iy = oy * x->stride + ky - x->pad,
                                ix = ox * x->stride + kx - x->pad;
                            if (iy < 0 || iy >= x->hin || ix < 0 || ix >= x->win)
                                continue;
                            size_t wi = (((size_t)o * x->cin + c) * x->k + ky) * x->k + kx;
                            z += p[x->w + wi] * in[((size_t)c * x->hin + iy) * x->win + ix];
                        }
                out[((size_t)o * x->hout + oy) * x->wout + ox] = x->act == S_RELU ? (z > 0 ? z : 0)
                                                                 : x->act == S_TANH ? tanh(z)
                                                                                    : z;
            }
}

/* One layer backward on one sample: dout (of the activated output, turned
   into the pre-activation's in place) gives grads g and din (added; NULL
   for none). */
static void s_layer_bwd(const s_ref_layer_t *x, const float *p, const double *in, const double *out,
                        double *dout, double *g, double *din)
{
    size_t outs = (size_t)x->cout * x->hout * x->wout;
    for (size_t e = 0; e < outs; e++)
        dout[e] *= x->act == S_RELU ? (out[e] > 0) : x->act == S_TANH ? 1 - out[e] * out[e] : 1;
    for (int o = 0; o < x->cout; o++)
        for (int oy = 0; oy < x->hout; oy++)
            for (int ox = 0; ox < x->wout; ox++) {
                double dz = dout[((size_t)o * x->hout + oy) * x->wout + ox];
                g[x->b + o] += dz;
                for (int c = 0; c < x->cin; c++)
                    for (int ky = 0; ky < x->k; ky++)
                        for (int kx = 0; kx < x->k; kx++) {
                            int iy = oy * x->stride + ky - x->pad,
                                ix = ox * x->stride + kx - x->pad;
                            if (iy < 0 || iy >= x->hin || ix < 0 || ix >= x->win)
                                continue;
                            size_t wi = (((size_t)o * x->cin + c) * x->k + ky) * x->k + kx;
                            size_t ii = ((size_t)c * x->hin + iy) * x->win + ix;
                            g[x->w + wi] += dz * in[ii];
                            if (din)
                                din[ii] += dz * p[x->w + wi];
                        }
            }
}

/* Returns the floats of layer l's output per sample. */
static size_t s_outs(const s_ref_layer_t *x)
{
    return (size_t)x->cout * x->hout * x->wout;
}

/* The reference forward (logits [n][A], values [n]) and, when dlogits is
   not NULL, backward into g [n_params] (added), over n observations. */
static void s_ref_run(const s_ref_t *r, const float *p, uint32_t n, const float *obs,
                      double *logits, double *values, const float *dlogits, const float *dvalues,
                      double *g)
{
    double *act[S_LAYERS + 1], *dact[S_LAYERS + 1];
    double *feats = calloc(r->features, sizeof(double));
    double *dfeats = calloc(r->features, sizeof(double));
    for (uint32_t l = 0; l < r->n_layers; l++) {
        act[l] = calloc(s_outs(&r->layer[l]), sizeof(double));
        dact[l] = calloc(s_outs(&r->layer[l]), sizeof(double));
    }
    double *in0 = calloc(r->obs_dim, sizeof(double));
    for (uint32_t s = 0; s < n; s++) {
        const float *o = obs + (size_t)s * r->obs_dim;
        // Inputs and the conv chains, each into its slice of the features.
        uint32_t l = 0;
        for (uint32_t f = 0; f < r->obs.n_fields; f++) {
            const vl_obs_field_t *fd = &r->obs.fields[f];
            double scale = fd->ndim != 3               ? 1
                           : fd->encoding == VL_OBS_U8 ? 255.0
                           : fd->encoding == VL_OBS_U2 ? 3.0
                                                       : 1.0;
            for (uint32_t e = 0; e < r->values[f]; e++)
                in0[r->obs_off[f] + e] = o[r->obs_off[f] + e] / scale;
            if (fd->ndim != 3) {
                for (uint32_t e = 0; e < r->values[f]; e++)
                    feats[r->feat_off[f] + e] = in0[r->obs_off[f] + e];
                continue;
            }
            const double *in = in0 + r->obs_off[f];
            for (; l < r->n_layers && r->layer[l].conv; l++) {
                s_layer_fwd(&r->layer[l], p, in, act[l]);
                in = act[l];
                if (l + 1 == r->n_layers || r->layer[l + 1].image != r->layer[l].image)
                    break;
            }
            memcpy(feats + r->feat_off[f], in, s_outs(&r->layer[l]) * sizeof(double));
            l++;
        }
        const double *h = feats;
        uint32_t first_lin = l;
        for (; l < r->n_layers; l++)
            s_layer_fwd(&r->layer[l], p, h, act[l]), h = act[l];
        for (uint32_t a = 0; a <= r->A; a++) {
            size_t w = a < r->A ? r->pi_w + (size_t)a * r->width : r->v_w;
            double z = a < r->A ? p[r->pi_b + a] : p[r->v_b];
            for (uint32_t k = 0; k < r->width; k++)
                z += p[w + k] * h[k];
            if (a < r->A)
                logits[(size_t)s * r->A + a] = z;
            else
                values[s] = z;
        }
        if (!dlogits)
            continue;
        // Backward: heads, linears, then each image field's chain from its slice.
        double *dh = r->n_layers > first_lin ? dact[r->n_layers - 1] : dfeats;
        memset(dh, 0, r->width * sizeof(double));
        memset(dfeats, 0, r->features * sizeof(double));
        for (uint32_t a = 0; a <= r->A; a++) {
            double gz = a < r->A ? dlogits[(size_t)s * r->A + a] : dvalues[s];
            size_t w = a < r->A ? r->pi_w + (size_t)a * r->width : r->v_w;
            g[a < r->A ? r->pi_b + a : r->v_b] += gz;
            for (uint32_t k = 0; k < r->width; k++)
                g[w + k] += gz * h[k], dh[k] += gz * p[w + k];
        }
        for (uint32_t j = r->n_layers; j-- > first_lin;) {
            const double *in = j > first_lin ? act[j - 1] : feats;
            double *din = j > first_lin ? dact[j - 1] : dfeats;
            if (j > first_lin)
                memset(din, 0, s_outs(&r->layer[j - 1]) * sizeof(double));
            s_layer_bwd(&r->layer[j], p, in, act[j], dact[j], g, din);
        }
        for (uint32_t j = first_lin; j-- > 0;) {
            const s_ref_layer_t *x = &r->layer[j];
            uint32_t f = 0;
            for (uint32_t i = 0, im = 0; i < r->obs.n_fields; i++)
                if (r->obs.fields[i].ndim == 3 && im++ == (uint32_t)x->image)
                    f = i;
            if (j + 1 == first_lin || r->layer[j + 1].image != x->image)
                memcpy(dact[j], dfeats + r->feat_off[f], s_outs(x) * sizeof(double));
            int first = j == 0 || r->layer[j - 1].image != x->image;
            if (!first)
                memset(dact[j - 1], 0, s_outs(&r->layer[j - 1]) * sizeof(double));
            s_layer_bwd(x, p, first ? in0 + r->obs_off[f] : act[j - 1], act[j], dact[j], g,
                        first ? NULL : dact[j - 1]);
        }
    }
    for (uint32_t l = 0; l < r->n_layers; l++)
        free(act[l]), free(dact[l]);
    free(feats), free(dfeats), free(in0);
}

/* Returns the largest |a - b| over the largest |b| (or the difference
   itself when b is all zero). */
static double s_rel_err(const float *a, const double *b, size_t n)
{
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs(a[i] - b[i]));
        scale = fmax(scale, fabs(b[i]));
    }
    return scale > 0 ? diff / scale : diff;
}

/* Fills n observations with each field's kind of values: u8 0..255, u2
   0..3, f32 normal. */
static void s_fill_obs(const s_ref_t *r, uint32_t n, float *obs, vl_rng_t *rng)
{
    for (uint32_t s = 0; s < n; s++)
        for (uint32_t f = 0; f < r->obs.n_fields; f++) {
            uint32_t enc = r->obs.fields[f].encoding;
            for (uint32_t e = 0; e < r->values[f]; e++)
                obs[(size_t)s * r->obs_dim + r->obs_off[f] + e] =
                    enc == VL_OBS_U8   ? (float)vl_rng_below(rng, 256)
                    : enc == VL_OBS_U2 ? (float)vl_rng_below(rng, 4)
                                       : (float)vl_rng_normal(rng);
        }
}

/* Builds a net of text over obs with A actions: initial weights from seed,
   then small random biases (so that bias gradients and activations are not
   all at their zero-bias values). Returns the net or NULL. */
static vl_net_t *s_net(const char *text, const vl_obs_spec_t *obs, uint32_t A, s_ref_t *r,
                       vl_model_spec_t **spec)
{
    char err[256] = "";
    *spec = vl_model_spec_parse(text, err, sizeof err);
    vl_net_t *net = *spec ? vl_net_new(*spec, obs, A, 2, err, sizeof err) : NULL;
    if (!net) {
        fprintf(stderr, "'%s' refused: %s\n", text, err);
        return NULL;
    }
    vl_rng_t rng;
    vl_rng_seed(&rng, 7);
    if (vl_net_init(net, &rng) != 0)
        vl_net_destroy(&net);
    s_ref_init(r, *spec, obs, A);
    for (uint32_t i = 0; net && i < vl_net_tensor_count(net); i++) {
        vl_tensor_t t;
        vl_net_tensor(net, i, 0, &t);
        for (uint32_t e = 0; t.ndim == 1 && e < t.rows; e++)
            t.data[e] = (float)(0.1 * vl_rng_normal(&rng));
    }
    if (net)
        vl_net_params_changed(net);
    return net;
}

/* Runs net and the reference on n fresh observations; returns 1 if the
   outputs and (when grads) every parameter's gradient agree. */
static int s_agree(vl_net_t *net, const s_ref_t *r, uint32_t n, int grads, uint64_t seed)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    float *obs = malloc((size_t)n * r->obs_dim * sizeof(float));
    float *lg = malloc((size_t)n * r->A * sizeof(float)), *v = malloc(n * sizeof(float));
    float *dl = malloc((size_t)n * r->A * sizeof(float)), *dv = malloc(n * sizeof(float));
    double *rlg = malloc((size_t)n * r->A * sizeof(double)), *rv = malloc(n * sizeof(double));
    double *rg = calloc(r->n_params, sizeof(double));
    s_fill_obs(r, n, obs, &rng);
    for (size_t i = 0; i < (size_t)n * r->A; i++)
        dl[i] = (float)vl_rng_normal(&rng);
    for (uint32_t i = 0; i < n; i++)
        dv[i] = (float)vl_rng_normal(&rng);
    int ok = vl_net_param_count(net) == r->n_params && vl_net_obs_dim(net) == r->obs_dim &&
             vl_net_forward(net, n, obs, lg, v) == 0;
    s_ref_run(r, vl_net_params(net), n, obs, rlg, rv, grads ? dl : NULL, dv, rg);
    double e_lg = s_rel_err(lg, rlg, (size_t)n * r->A), e_v = s_rel_err(v, rv, n);
    if (ok && (e_lg > S_OUT_TOL || e_v > S_OUT_TOL)) {
        fprintf(stderr, "n=%u: logits rel err %g, values %g\n", n, e_lg, e_v);
        ok = 0;
    }
    if (ok && grads) {
        vl_net_zero_grad(net);
        ok = vl_net_backward(net, n, dl, dv) == 0;
        for (uint32_t i = 0; ok && i < vl_net_tensor_count(net); i++) {
            vl_tensor_t t;
            vl_net_tensor(net, i, 1, &t);
            size_t off = (size_t)(t.data - vl_net_grads(net)), len = (size_t)t.rows * t.cols;
            double e = s_rel_err(t.data, rg + off, len);
            if (e > S_GRAD_TOL) {
                fprintf(stderr, "n=%u: %s grad rel err %g\n", n, t.name, e);
                ok = 0;
            }
        }
    }
    free(obs), free(lg), free(v), free(dl), free(dv), free(rlg), free(rv), free(rg);
    return ok;
}

/* The observation of the mixed net: u8 [3,12,10], f32 [5], u2 [1,9,9]. */
static vl_obs_spec_t s_mixed_obs(void)
{
    vl_obs_spec_t o = {.n_fields = 3};
    o.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_U8, .ndim = 3, .shape = {3, 12, 10}};
    o.fields[1] = (vl_obs_field_t){.encoding = VL_OBS_F32, .ndim = 1, .shape = {5}};
    o.fields[2] = (vl_obs_field_t){.encoding = VL_OBS_U2, .ndim = 3, .shape = {1, 9, 9}};
    return o;
}

static vl_obs_spec_t s_frames_obs(void)
{
    vl_obs_spec_t o = {.n_fields = 1};
    o.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_U8, .ndim = 3, .shape = {4, 36, 36}};
    return o;
}

static void test_cnn_preset_agrees_with_reference(void)
{
    vl_obs_spec_t obs = s_frames_obs();
    s_ref_t r;
    vl_model_spec_t *spec = NULL;
    vl_net_t *net = s_net("cnn", &obs, 6, &r, &spec);
    VL_CHECK(net);
    int ok = s_agree(net, &r, 3, 1, 11);
    vl_net_destroy(&net);
    vl_model_spec_destroy(&spec);
    VL_CHECK(ok);
}

static void test_two_image_fields_and_a_vector_agree(void)
{
    vl_obs_spec_t obs = s_mixed_obs();
    s_ref_t r;
    vl_model_spec_t *spec = NULL;
    vl_net_t *net = s_net(S_MIXED_SPEC, &obs, 4, &r, &spec);
    VL_CHECK(net);
    int ok = s_agree(net, &r, 5, 1, 12);
    vl_net_destroy(&net);
    vl_model_spec_destroy(&spec);
    VL_CHECK(ok);
    VL_CHECK(r.features == 6 * 4 * 3 + 5 + 6 * 3 * 3);
}

static void test_tensors_are_named_in_the_headers_order(void)
{
    static const char *const want[] = {
        "conv.0.0.weight", "conv.0.0.bias", "conv.0.1.weight", "conv.0.1.bias",
        "conv.1.0.weight", "conv.1.0.bias", "conv.1.1.weight", "conv.1.1.bias",
        "torso.0.weight",  "torso.0.bias",  "torso.1.weight",  "torso.1.bias",
        "pi.weight",       "pi.bias",       "v.weight",        "v.bias"};
    vl_obs_spec_t obs = s_mixed_obs();
    s_ref_t r;
    vl_model_spec_t *spec = NULL;
    vl_net_t *net = s_net(S_MIXED_SPEC, &obs, 4, &r, &spec);
    VL_CHECK(net);
    uint32_t count = vl_net_tensor_count(net);
    size_t at = 0;
    int ok = count == sizeof want / sizeof want[0];
    vl_tensor_t t;
    for (uint32_t i = 0; ok && i < count; i++) {
        vl_net_tensor(net, i, 0, &t);
        ok = strcmp(t.name, want[i]) == 0 && t.data == vl_net_params(net) + at;
        at += (size_t)t.rows * t.cols;
    }
    vl_net_tensor(net, 2, 0, &t); // conv.0.1.weight: [6][8][3][3]
    ok = ok && at == vl_net_param_count(net) && t.ndim == 4 && t.shape[0] == 6 && t.shape[1] == 8 &&
         t.shape[2] == 3 && t.shape[3] == 3 && t.rows == 6 && t.cols == 72;
    vl_net_tensor(net, 8, 1, &t); // torso.0.weight's gradient: [16][131]
    ok = ok && t.ndim == 2 && t.rows == 16 && t.cols == 131 &&
         t.data == vl_net_grads(net) + r.layer[4].w;
    vl_net_destroy(&net);
    vl_model_spec_destroy(&spec);
    VL_CHECK(ok);
}

static void test_batch_size_changes_between_calls(void)
{
    vl_obs_spec_t obs = s_mixed_obs();
    s_ref_t r;
    vl_model_spec_t *spec = NULL;
    vl_net_t *net = s_net(S_MIXED_SPEC, &obs, 4, &r, &spec);
    VL_CHECK(net);
    int ok = s_agree(net, &r, 3, 1, 21) && s_agree(net, &r, 8, 1, 22) &&
             s_agree(net, &r, 3, 1, 23) && s_agree(net, &r, 1, 0, 24) &&
             s_agree(net, &r, 5, 0, 25) && s_agree(net, &r, 8, 1, 26);
    // A backward over another n than the last forward's is refused.
    float d[8 * 4] = {0};
    ok = ok && vl_net_backward(net, 3, d, NULL) == -1;
    vl_net_destroy(&net);
    vl_model_spec_destroy(&spec);
    VL_CHECK(ok);
}

static void test_params_changed_takes_new_weights(void)
{
    vl_obs_spec_t obs = s_frames_obs();
    s_ref_t r;
    vl_model_spec_t *spec = NULL;
    vl_net_t *net = s_net("cnn", &obs, 6, &r, &spec);
    VL_CHECK(net);
    vl_rng_t rng;
    vl_rng_seed(&rng, 31);
    float x[2 * 4 * 36 * 36], before[12], vbefore[2], after[12], vafter[2];
    s_fill_obs(&r, 2, x, &rng);
    int ok = vl_net_forward(net, 2, x, before, vbefore) == 0;
    float *p = vl_net_params(net);
    for (size_t i = 0; i < vl_net_param_count(net); i++)
        p[i] = p[i] * 1.5f + 0.01f;
    ok = ok && vl_net_forward(net, 2, x, after, vafter) == 0;
    ok = ok && memcmp(before, after, sizeof before) == 0 &&
         memcmp(vbefore, vafter, sizeof vafter) == 0;
    vl_net_params_changed(net);
    ok = ok && vl_net_forward(net, 2, x, after, vafter) == 0;
    ok = ok && memcmp(before, after, sizeof before) != 0 && vbefore[0] != vafter[0];
    ok = ok && s_agree(net, &r, 2, 1, 32); // and what it takes is the parameters as written
    vl_net_destroy(&net);
    vl_model_spec_destroy(&spec);
    VL_CHECK(ok);
}

static void test_backward_adds_into_the_gradients(void)
{
    vl_obs_spec_t obs = s_mixed_obs();
    s_ref_t r;
    vl_model_spec_t *spec = NULL;
    vl_net_t *net = s_net(S_MIXED_SPEC, &obs, 4, &r, &spec);
    VL_CHECK(net);
    vl_rng_t rng;
    vl_rng_seed(&rng, 41);
    float x[4 * 446], dl[4 * 4], dv[4];
    VL_CHECK(r.obs_dim == 3 * 12 * 10 + 5 + 81);
    s_fill_obs(&r, 4, x, &rng);
    for (int i = 0; i < 16; i++)
        dl[i] = (float)vl_rng_normal(&rng);
    for (int i = 0; i < 4; i++)
        dv[i] = (float)vl_rng_normal(&rng);
    size_t np = vl_net_param_count(net);
    float *once = malloc(np * sizeof(float));
    VL_CHECK(once);
    vl_net_zero_grad(net);
    int ok = vl_net_forward(net, 4, x, NULL, NULL) == 0 && vl_net_backward(net, 4, dl, dv) == 0;
    memcpy(once, vl_net_grads(net), np * sizeof(float));
    ok = ok && vl_net_backward(net, 4, dl, dv) == 0;
    double diff = 0, scale = 0;
    for (size_t i = 0; i < np; i++) {
        diff = fmax(diff, fabs(vl_net_grads(net)[i] - 2.0 * once[i]));
        scale = fmax(scale, fabs(once[i]));
    }
    // NULL output gradients are zeros: nothing more is added.
    memcpy(once, vl_net_grads(net), np * sizeof(float));
    ok = ok && vl_net_backward(net, 4, NULL, NULL) == 0 &&
         memcmp(once, vl_net_grads(net), np * sizeof(float)) == 0;
    vl_net_zero_grad(net);
    ok = ok && vl_net_grads(net)[0] == 0.0f && vl_net_grads(net)[np - 1] == 0.0f;
    free(once);
    vl_net_destroy(&net);
    vl_model_spec_destroy(&spec);
    VL_CHECK(ok);
    VL_CHECK(scale > 0 && diff <= 1e-6 * scale);
}

/* Returns 1 if text over obs is refused with a line containing want. */
static int s_refused(const char *text, const vl_obs_spec_t *obs, uint32_t A, const char *want)
{
    char err[256] = "";
    vl_model_spec_t *spec = vl_model_spec_parse(text, err, sizeof err);
    vl_net_t *net = spec ? vl_net_new(spec, obs, A, 0, err, sizeof err) : NULL;
    int ok = spec && !net && strstr(err, want) && !strchr(err, '\n');
    if (!ok)
        fprintf(stderr, "'%s': %s, err '%s', want '%s'\n", text, net ? "built" : "refused", err,
                want);
    vl_net_destroy(&net);
    vl_model_spec_destroy(&spec);
    return ok;
}

static void test_unsupported_specs_are_refused_with_a_line(void)
{
    vl_obs_spec_t frames = s_frames_obs(), flat = vl_obs_spec_flat(4);
    VL_CHECK(s_refused("cnn lstm(256)", &frames, 6, "lstm(256): not supported by this engine yet"));
    VL_CHECK(s_refused("mlp", &frames, 6, "no conv layer"));
    VL_CHECK(s_refused("linear(32) relu", &flat, 2, "no conv layer"));
    VL_CHECK(s_refused("cnn", &flat, 2, "needs an image field"));
    VL_CHECK(s_refused("conv(8,9,1)",
                       &(vl_obs_spec_t){.n_fields = 1, .fields = {{0, 3, {1, 8, 8}}}}, 2,
                       "is larger than its input"));
    VL_CHECK(s_refused("cnn", &frames, 4097, "4097 actions; expected 1..4096"));
}

/* With no heads (0 actions) the net is a torso whose features a recurrent
   core reads: no pi or v tensor, its width the last linear layer's, and an
   lstm after it is left to the caller. */
static void test_torso_alone_gives_features(void)
{
    vl_obs_spec_t frames = s_frames_obs();
    char err[256];
    vl_model_spec_t *spec = vl_model_spec_parse_for("cnn lstm(32)", &frames, err, sizeof err);
    vl_net_t *net = spec ? vl_net_new(spec, &frames, 0, 1, err, sizeof err) : NULL;
    VL_CHECK(net);
    if (!net) {
        vl_model_spec_destroy(&spec);
        return;
    }
    vl_rng_t rng;
    vl_rng_seed(&rng, 5);
    VL_CHECK(vl_net_init(net, &rng) == 0);
    for (uint32_t i = 0; i < vl_net_tensor_count(net); i++) {
        vl_tensor_t t;
        vl_net_tensor(net, i, 0, &t);
        VL_CHECK(strncmp(t.name, "pi.", 3) != 0 && strncmp(t.name, "v.", 2) != 0);
    }
    uint32_t w = vl_net_width(net), D = vl_net_obs_dim(net);
    float *obs = calloc((size_t)2 * D, sizeof(float)), *feat = calloc((size_t)2 * w, sizeof(float));
    float *dfeat = calloc((size_t)2 * w, sizeof(float));
    for (uint32_t k = 0; obs && k < 2 * D; k++)
        obs[k] = (float)(k % 4);
    VL_CHECK(obs && feat && dfeat && w == 512); // the Nature torso's linear(512)
    VL_CHECK(vl_net_features(net, 2, obs, feat) == 0);
    float sum = 0;
    for (uint32_t k = 0; k < 2 * w; k++) {
        sum += feat[k];
        dfeat[k] = 1.0f;
    }
    VL_CHECK(sum > 0); // relu features of a nonzero frame
    vl_net_zero_grad(net);
    VL_CHECK(vl_net_backward_features(net, 2, dfeat) == 0);
    double g = 0;
    for (size_t k = 0; k < vl_net_param_count(net); k++)
        g += fabs(vl_net_grads(net)[k]);
    VL_CHECK(g > 0);
    free(obs), free(feat), free(dfeat);
    vl_net_destroy(&net);
    vl_model_spec_destroy(&spec);
}

static void test_init_is_orthogonal_and_deterministic(void)
{
    vl_obs_spec_t obs = s_frames_obs();
    char err[256];
    vl_model_spec_t *spec = vl_model_spec_parse("cnn", err, sizeof err);
    VL_CHECK(spec);
    vl_net_t *a = vl_net_new(spec, &obs, 6, 0, err, sizeof err);
    vl_net_t *b = vl_net_new(spec, &obs, 6, 0, err, sizeof err);
    vl_rng_t ra, rb;
    vl_rng_seed(&ra, 5), vl_rng_seed(&rb, 5);
    int ok = a && b && vl_net_init(a, &ra) == 0 && vl_net_init(b, &rb) == 0 &&
             memcmp(vl_net_params(a), vl_net_params(b), vl_net_param_count(a) * sizeof(float)) == 0;
    // conv.0.0.weight as [32][4*8*8]: W W^T = 2 I; pi.weight's rows have norm 0.01;
    // biases are zero.
    vl_tensor_t w, pi, bias;
    double worst = 0, pin = 0;
    if (ok) {
        vl_net_tensor(a, 0, 0, &w);
        vl_net_tensor(a, vl_net_tensor_count(a) - 4, 0, &pi);
        vl_net_tensor(a, 1, 0, &bias);
        for (uint32_t i = 0; i < w.rows; i++)
            for (uint32_t j = 0; j < w.rows; j++) {
                double d = 0;
                for (uint32_t k = 0; k < w.cols; k++)
                    d += (double)w.data[i * w.cols + k] * w.data[j * w.cols + k];
                worst = fmax(worst, fabs(d - (i == j ? 2.0 : 0.0)));
            }
        for (uint32_t k = 0; k < pi.cols; k++)
            pin += (double)pi.data[k] * pi.data[k];
        ok = strcmp(pi.name, "pi.weight") == 0 && bias.data[0] == 0.0f && bias.data[31] == 0.0f;
    }
    vl_net_destroy(&a);
    vl_net_destroy(&b);
    vl_net_destroy(&b); // safe twice
    vl_model_spec_destroy(&spec);
    VL_CHECK(ok);
    VL_CHECK_NEAR(worst, 0.0, 1e-5);
    VL_CHECK_NEAR(sqrt(pin), 0.01, 1e-6);
}

static void test_threads_are_set_per_call_and_restored(void)
{
    vl_obs_spec_t obs = s_mixed_obs();
    char err[256];
    vl_model_spec_t *spec = vl_model_spec_parse(S_MIXED_SPEC, err, sizeof err);
    VL_CHECK(spec);
    vl_net_t *net = vl_net_new(spec, &obs, 4, 3, err, sizeof err);
    vl_model_spec_destroy(&spec);
    VL_CHECK(net);
    omp_set_num_threads(5);
    float x[2 * 446] = {0}, dl[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8};
    int ok = vl_net_forward(net, 2, x, NULL, NULL) == 0 && omp_get_max_threads() == 5 &&
             vl_net_backward(net, 2, dl, NULL) == 0 && omp_get_max_threads() == 5;
    vl_net_destroy(&net);
    VL_CHECK(ok);
}

int main(void)
{
    VL_RUN(test_cnn_preset_agrees_with_reference);
    VL_RUN(test_two_image_fields_and_a_vector_agree);
    VL_RUN(test_tensors_are_named_in_the_headers_order);
    VL_RUN(test_batch_size_changes_between_calls);
    VL_RUN(test_params_changed_takes_new_weights);
    VL_RUN(test_backward_adds_into_the_gradients);
    VL_RUN(test_unsupported_specs_are_refused_with_a_line);
    VL_RUN(test_torso_alone_gives_features);
    VL_RUN(test_init_is_orthogonal_and_deterministic);
    VL_RUN(test_threads_are_set_per_call_and_restored);
    return VL_DONE();
}
