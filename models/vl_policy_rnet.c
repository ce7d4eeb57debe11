/*  vl_policy_rnet: the policy backend of a spec ending in an lstm: one
    vl_rnet (torso, lstm, pi and v heads), its state 2H floats a sequence. A
    plain forward is n sequences of one step from zero state. */
#include <stdio.h>

#include "vl_policy_backend.h"
#include "vl_rnet.h"

_Static_assert(VL_RNET_ARRAYS <= VL_POLICY_BACKEND_ARRAYS, "the policy keeps an Adam per array");

/* Returns 1 if the spec's core is an lstm. */
static int s_accepts(const vl_model_spec_t *spec)
{
    for (uint32_t i = 0; i < vl_model_spec_count(spec); i++)
        if (vl_model_spec_layer(spec, i)->kind == VL_LAYER_LSTM)
            return 1;
    return 0;
}

static void s_destroy(void **net_p)
{
    vl_rnet_t *net = *net_p;
    vl_rnet_destroy(&net);
    *net_p = NULL;
}

static void *s_create(const vl_policy_backend_args_t *args, vl_rng_t *rng, char *err, size_t errlen)
{
    vl_rnet_t *net = vl_rnet_new(args->spec, args->obs, args->obs_dim, args->num_actions,
                                 args->threads, err, errlen);
    if (net && vl_rnet_init(net, rng) != 0) {
        snprintf(err, errlen, "no memory for the network");
        vl_rnet_destroy(&net);
    }
    return net;
}

static int s_forward(void *net, uint32_t n, const float *obs, float *logits, float *values)
{
    return vl_rnet_forward(net, n, 1, obs, NULL, NULL, logits, values, NULL);
}

static int s_forward_seq(void *net, uint32_t B, uint32_t T, const float *obs, const float *state0,
                         const uint8_t *reset, float *out, float *values, float *state1)
{
    return vl_rnet_forward(net, B, T, obs, state0, reset, out, values, state1);
}

/* The rows are the last forward's, which the net keeps. */
static int s_backward(void *net, uint32_t n, const float *dlogits, const float *dvalues)
{
    (void)n;
    return vl_rnet_backward(net, dlogits, dvalues);
}

static void s_zero_grad(void *net)
{
    vl_rnet_zero_grad(net);
}

static int s_arrays(void *net, float **params, float **grads, size_t *counts)
{
    return vl_rnet_arrays(net, params, grads, counts);
}

static void s_params_changed(void *net)
{
    vl_rnet_params_changed(net);
}

static uint32_t s_tensor_count(const void *net)
{
    return vl_rnet_tensor_count(net);
}

static void s_tensor(void *net, uint32_t i, int grads, vl_tensor_t *t)
{
    vl_rnet_tensor(net, i, grads, t);
}

/* h then c. */
static uint32_t s_state_size(const void *net)
{
    return 2 * vl_rnet_hidden(net);
}

static void s_set_portable(void *net)
{
    vl_rnet_set_portable(net);
}

static void s_set_inference(void *net, int on)
{
    vl_rnet_set_inference(net, on);
}

const vl_policy_backend_ops_t vl_policy_rnet_ops = {
    .name = "rnet",
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
    .set_inference = s_set_inference,
};
