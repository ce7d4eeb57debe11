/*  vl_policy_net: the policy backend of a spec with conv layers: one
    vl_net whose torso both heads share, as CleanRL's Atari agent (tensors
    conv.K.J, torso.J, pi, v). */
#include <stdio.h>

#include "vl_net.h"
#include "vl_policy_backend.h"

static int s_accepts(const vl_model_spec_t *spec)
{
    return vl_model_spec_has_conv(spec);
}

static void s_destroy(void **net_p)
{
    vl_net_t *net = *net_p;
    vl_net_destroy(&net);
    *net_p = NULL;
}

static void *s_create(const vl_policy_backend_args_t *args, vl_rng_t *rng, char *err, size_t errlen)
{
    vl_net_t *net =
        vl_net_new(args->spec, args->obs, args->num_actions, args->threads, err, errlen);
    if (net && vl_net_init(net, rng) != 0) {
        snprintf(err, errlen, "no memory for the network");
        vl_net_destroy(&net);
    }
    return net;
}

static int s_forward(void *net, uint32_t n, const float *obs, float *logits, float *values)
{
    return vl_net_forward(net, n, obs, logits, values);
}

/* Memoryless: the B*T rows as one batch, states ignored. */
static int s_forward_seq(void *net, uint32_t B, uint32_t T, const float *obs, const float *state0,
                         const uint8_t *reset, float *out, float *values, float *state1)
{
    (void)state0, (void)reset, (void)state1;
    return vl_net_forward(net, B * T, obs, out, values);
}

static int s_backward(void *net, uint32_t n, const float *dlogits, const float *dvalues)
{
    return vl_net_backward(net, n, dlogits, dvalues);
}

static void s_zero_grad(void *net)
{
    vl_net_zero_grad(net);
}

/* One flat array for the whole net. */
static int s_arrays(void *net, float **params, float **grads, size_t *counts)
{
    params[0] = vl_net_params(net);
    grads[0] = vl_net_grads(net);
    counts[0] = vl_net_param_count(net);
    return 1;
}

/* The primitives hold copies of the weights in their own layouts. */
static void s_params_changed(void *net)
{
    vl_net_params_changed(net);
}

static uint32_t s_tensor_count(const void *net)
{
    return vl_net_tensor_count(net);
}

static void s_tensor(void *net, uint32_t i, int grads, vl_tensor_t *t)
{
    vl_net_tensor(net, i, grads, t);
}

static uint32_t s_state_size(const void *net)
{
    (void)net;
    return 0;
}

/* oneDNN's kernels have no portable set: nothing to switch. */
static void s_set_portable(void *net)
{
    (void)net;
}

const vl_policy_backend_ops_t vl_policy_net_ops = {
    .name = "net",
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
