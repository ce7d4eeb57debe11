/*  vl_policy_mlp: the policy backend of a spec without convs: two vl_mlp
    towers, as CleanRL's MLP agent, a policy net obs -> the spec's linear
    layers -> the head's outputs and a value net obs -> the same layers, own
    weights -> 1, initialized as CleanRL's PPO (orthogonal weights, gain
    sqrt(2) on hidden layers, 0.01 on the policy output, 1 on the value
    output, zero biases). Tensors pi.J.weight/bias then v.J.weight/bias. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vl_mlp.h"
#include "vl_policy_backend.h"

#define S_NETS        2           // policy, value
#define S_HIDDEN_GAIN 1.41421356f // sqrt(2): keeps the tanh layers' scale
#define S_PI_GAIN     0.01f       // a near-uniform initial policy
#define S_V_GAIN      1.0f        // values start at the scale of the inputs

enum { S_PI, S_V };

static const char *const s_net_names[S_NETS] = {"pi", "v"};

typedef struct {
    vl_mlp_t *net[S_NETS];
    uint32_t layers; // linear layers per tower, output included
} s_towers_t;

/* Accepts every spec: the last table tried. */
static int s_accepts(const vl_model_spec_t *spec)
{
    (void)spec;
    return 1;
}

/* Creates tower `which` over in inputs: the linear layers widths[0 .. n),
   each followed by acts[j], then an output layer of out units, initialized
   from rng. Returns 0, or -1 on no memory. */
static int s_tower_new(s_towers_t *self, int which, uint32_t in, const uint32_t *widths,
                       const int *acts, uint32_t n, uint32_t out, float out_gain, vl_rng_t *rng)
{
    uint32_t sizes[VL_MLP_MAX_LAYERS + 1] = {in};
    for (uint32_t j = 0; j < n; j++)
        sizes[j + 1] = widths[j];
    sizes[n + 1] = out;
    self->net[which] = vl_mlp_new(n + 1, sizes);
    for (uint32_t j = 0; self->net[which] && j < n; j++)
        vl_mlp_set_activation(self->net[which], j, acts[j]);
    return self->net[which] && vl_mlp_init(self->net[which], rng, S_HIDDEN_GAIN, out_gain) == 0
               ? 0
               : -1;
}

/* Reads the spec's linear layers into widths and their activations into
   acts. Returns how many, or -1 after writing why to err. */
static int s_read_spec(const vl_model_spec_t *spec, uint32_t *widths, int *acts, char *err,
                       size_t errlen)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < vl_model_spec_count(spec); i++) {
        const vl_model_layer_t *l = vl_model_spec_layer(spec, i);
        if (l->kind == VL_LAYER_LSTM) {
            snprintf(err, errlen, "lstm(%u): not supported by this version's engine", l->out);
            return -1;
        }
        if (l->kind == VL_LAYER_LINEAR && n + 1 >= VL_MLP_MAX_LAYERS) {
            snprintf(err, errlen, "more than %d linear layers; expected at most %d",
                     VL_MLP_MAX_LAYERS - 1, VL_MLP_MAX_LAYERS - 1);
            return -1;
        }
        if (l->kind == VL_LAYER_LINEAR) {
            widths[n] = l->out;
            acts[n++] = VL_MLP_ACT_NONE;
        } else if (n > 0) {
            acts[n - 1] = l->kind == VL_LAYER_RELU ? VL_MLP_ACT_RELU : VL_MLP_ACT_TANH;
        }
    }
    return (int)n;
}

static void s_destroy(void **self_p)
{
    s_towers_t *self = *self_p;
    if (!self)
        return;
    for (int k = 0; k < S_NETS; k++)
        vl_mlp_destroy(&self->net[k]);
    free(self);
    *self_p = NULL;
}

static void *s_create(const vl_policy_backend_args_t *args, vl_rng_t *rng, char *err, size_t errlen)
{
    uint32_t widths[VL_MLP_MAX_LAYERS];
    int acts[VL_MLP_MAX_LAYERS];
    int n = s_read_spec(args->spec, widths, acts, err, errlen);
    if (n < 0)
        return NULL;
    s_towers_t *towers = calloc(1, sizeof *towers);
    void *self = towers;
    uint32_t hidden = (uint32_t)n, in = args->obs_dim;
    if (towers)
        towers->layers = hidden + 1;
    if (!towers ||
        s_tower_new(towers, S_PI, in, widths, acts, hidden, args->num_actions, S_PI_GAIN, rng) ||
        s_tower_new(towers, S_V, in, widths, acts, hidden, 1, S_V_GAIN, rng)) {
        snprintf(err, errlen, "no memory for the network");
        s_destroy(&self);
    }
    return self;
}

static int s_forward(void *net, uint32_t n, const float *obs, float *logits, float *values)
{
    s_towers_t *self = net;
    if (logits && vl_mlp_forward(self->net[S_PI], n, obs, logits) != 0)
        return -1;
    if (values && vl_mlp_forward(self->net[S_V], n, obs, values) != 0)
        return -1;
    return 0;
}

/* Memoryless: the B*T rows as one batch, states ignored. */
static int s_forward_seq(void *net, uint32_t B, uint32_t T, const float *obs, const float *state0,
                         const uint8_t *reset, float *out, float *values, float *state1)
{
    (void)state0, (void)reset, (void)state1;
    return s_forward(net, B * T, obs, out, values);
}

static int s_backward(void *net, uint32_t n, const float *dlogits, const float *dvalues)
{
    s_towers_t *self = net;
    if (dlogits && vl_mlp_backward(self->net[S_PI], n, dlogits, NULL) != 0)
        return -1;
    if (dvalues && vl_mlp_backward(self->net[S_V], n, dvalues, NULL) != 0)
        return -1;
    return 0;
}

static void s_zero_grad(void *net)
{
    s_towers_t *self = net;
    for (int k = 0; k < S_NETS; k++)
        vl_mlp_zero_grad(self->net[k]);
}

/* One array per tower, pi then v. */
static int s_arrays(void *net, float **params, float **grads, size_t *counts)
{
    s_towers_t *self = net;
    for (int k = 0; k < S_NETS; k++) {
        params[k] = vl_mlp_params(self->net[k]);
        grads[k] = vl_mlp_grads(self->net[k]);
        counts[k] = vl_mlp_param_count(self->net[k]);
    }
    return S_NETS;
}

/* The towers read their flat parameters directly: nothing to refresh. */
static void s_params_changed(void *net)
{
    (void)net;
}

static uint32_t s_tensor_count(const void *net)
{
    const s_towers_t *self = net;
    return S_NETS * self->layers * 2;
}

/* Tensor i is tower i / (2 layers)'s layer's weight (even i) or bias. */
static void s_tensor(void *net, uint32_t i, int grads, vl_tensor_t *t)
{
    s_towers_t *self = net;
    uint32_t which = i / (2 * self->layers), layer = i % (2 * self->layers) / 2, bias = i % 2;
    vl_mlp_t *mlp = self->net[which];
    uint32_t in = vl_mlp_size(mlp, layer), out = vl_mlp_size(mlp, layer + 1);
    float *base = grads ? vl_mlp_grads(mlp) : vl_mlp_params(mlp);
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s.%u.%s", s_net_names[which], layer,
             bias ? "bias" : "weight");
    t->rows = out;
    t->cols = bias ? 1 : in;
    t->ndim = bias ? 1 : 2;
    t->data = base + vl_mlp_weight_offset(mlp, layer) + (bias ? (size_t)out * in : 0);
}

static uint32_t s_state_size(const void *net)
{
    (void)net;
    return 0;
}

static void s_set_portable(void *net)
{
    s_towers_t *self = net;
    for (int k = 0; k < S_NETS; k++)
        vl_mlp_set_kernels(self->net[k], VL_MLP_KERNELS_PORTABLE);
}

const vl_policy_backend_ops_t vl_policy_mlp_ops = {
    .name = "mlp",
    .accepts = s_accepts,
    .create = s_create,
    .destroy = s_destroy,
    .forward = s_forward,
    .forward_seq = s_forward_seq,
    .backward = s_backward,
    .zero_grad = s_zero_grad,
    .arrays = s_arrays,
    .params_changed = s_params_changed,
    .tensor_count = s_tensor_count,
    .tensor = s_tensor,
    .state_size = s_state_size,
    .set_portable = s_set_portable,
};
