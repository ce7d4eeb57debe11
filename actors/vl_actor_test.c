/*  vl_actor_test: the public step API (include/volley/actor.h) against a
    broker played by the test over real sockets: what act and observe record
    is what the segments carry (truncation's final observation included),
    volley's policy acts on published weights (a box policy's actions as
    sampled, unclipped, with the Gaussian's log-density), an external
    forward pass sees them raw, bad input is refused with its reason and
    records nothing, and a refused spec or a readable wake fd return their
    own codes, as does a CURVE identity the broker does not take. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/vl_curve.h"
#include "../common/vl_opts.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_status.h"
#include "../models/vl_dist.h"
#include "../models/vl_policy.h"
#include "../tests/vl_test.h"
#include "vl_actor.h"

#define N 2 // envs
#define T 4 // horizon
#define D 3 // observation floats
#define W 2 // values per box action

/* The broker's three sockets an actor talks to, and a thread that keeps
   publishing one weights message (a SUB joins late). */
typedef struct {
    void *ctx, *pull, *pub, *router;
    char addr[32];
    uint8_t *weights;
    size_t weights_size;
    pthread_t thread;
    atomic_int stop;
} s_broker_t;

static void *s_publish(void *arg)
{
    s_broker_t *b = arg;
    while (!atomic_load(&b->stop)) {
        zmq_send(b->pub, "default", 7, ZMQ_SNDMORE);
        zmq_send(b->pub, b->weights, b->weights_size, 0);
        usleep(20000);
    }
    return NULL;
}

/* Binds the sockets on a free base port and publishes weights of the given
   tensors (version 7). Returns 0 or -1. */
static int s_broker_start(s_broker_t *b, const vl_tensor_t *t, uint32_t n)
{
    memset(b, 0, sizeof *b);
    int base = vl_free_base_port(24000 + (int)(getpid() % 4000));
    char ep[64];
    b->ctx = zmq_ctx_new();
    b->pull = zmq_socket(b->ctx, ZMQ_PULL);
    b->pub = zmq_socket(b->ctx, ZMQ_PUB);
    b->router = zmq_socket(b->ctx, ZMQ_ROUTER);
    int ports[3] = {VL_PORT_SEGMENTS, VL_PORT_WEIGHTS_OUT, VL_PORT_CONTROL};
    void *socks[3] = {b->pull, b->pub, b->router};
    for (int i = 0; i < 3; i++) {
        snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", base + ports[i]);
        if (base < 0 || zmq_bind(socks[i], ep) != 0)
            return -1;
    }
    snprintf(b->addr, sizeof b->addr, "127.0.0.1:%d", base);
    if (vl_weights_encode("default", 7, t, n, &b->weights, &b->weights_size) != 0)
        return -1;
    return pthread_create(&b->thread, NULL, s_publish, b);
}

/* Starts a broker that serves pol's weights (s_broker_start). Returns 0, or -1. */
static int s_broker_serving(s_broker_t *b, vl_policy_t *pol)
{
    vl_tensor_t t[16];
    uint32_t n = vl_policy_tensor_count(pol);
    for (uint32_t i = 0; i < n && i < 16; i++)
        vl_policy_tensor(pol, i, &t[i]);
    return s_broker_start(b, t, n);
}

static void s_broker_stop(s_broker_t *b)
{
    atomic_store(&b->stop, 1);
    pthread_join(b->thread, NULL);
    int linger = 0;
    void *socks[3] = {b->pull, b->pub, b->router};
    for (int i = 0; i < 3; i++) {
        zmq_setsockopt(socks[i], ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(socks[i]);
    }
    zmq_ctx_term(b->ctx);
    free(b->weights);
}

/* Receives one segment into seg (arrays in *arrays, caller frees). */
static vl_reason_t s_recv_segment(s_broker_t *b, vl_segment_t *seg, void **arrays)
{
    zmq_msg_t m;
    zmq_msg_init(&m);
    int timeout = 5000;
    zmq_setsockopt(b->pull, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    if (zmq_msg_recv(&m, b->pull, 0) < 0)
        return VL_EPROTO;
    vl_limits_t lim = vl_limits_default();
    vl_segment_t head;
    vl_reason_t r = vl_segment_peek(zmq_msg_data(&m), zmq_msg_size(&m), &lim, &head);
    size_t cap =
        r == VL_OK ? vl_segment_arrays_size(head.horizon, &head.obs_spec, head.action.dims, 0) : 0;
    *arrays = r == VL_OK ? malloc(cap) : NULL;
    if (r == VL_OK && !*arrays)
        r = VL_ETOOBIG;
    if (r == VL_OK)
        r = vl_segment_decode(zmq_msg_data(&m), zmq_msg_size(&m), &lim, seg, *arrays, cap);
    zmq_msg_close(&m);
    return r;
}

static const vl_env_t s_spec = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "test",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {D}}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {2}},
};

static vl_actor_params_t s_params(const char *addr, int external)
{
    vl_actor_params_t p = vl_actor_params_default();
    p.broker = addr;
    p.env = &s_spec;
    p.n_envs = N;
    p.horizon = T;
    p.hidden = 8;
    p.model = "linear(8) tanh linear(8) tanh"; // the network the test broker's weights fit
    p.actor_id = 5;
    p.max_ahead = 0;
    p.external = external;
    return p;
}

/* Observation of env i at step t: i, t, and a marker. */
static void s_obs(float *obs, uint32_t t, float marker)
{
    for (uint32_t i = 0; i < N; i++) {
        obs[i * D + 0] = (float)i;
        obs[i * D + 1] = (float)t;
        obs[i * D + 2] = marker;
    }
}

/* External mode: T steps with env 1 truncated at step 2 and env 0
   terminated at step 3; the segments carry exactly that. */
static void test_external_steps_reach_the_segments(void)
{
    float tw[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    vl_tensor_t t[2] = {{.name = "any.shape", .rows = 2, .cols = 3, .ndim = 2, .data = tw},
                        {.name = "conv", .data = tw}};
    VL_CHECK(vl_tensor_set_shape(&t[1], 4, (uint32_t[]){2, 3, 1, 2}) == 0);
    s_broker_t b;
    VL_CHECK(s_broker_start(&b, t, 2) == 0);
    vl_actor_params_t p = s_params(b.addr, 1);
    char why[256];
    vl_actor_t *a = vl_actor_open(&p, why, sizeof why);
    VL_CHECK(a && vl_actor_obs_dim(a) == D);
    VL_CHECK(vl_actor_sync(a, why, sizeof why) == VL_ACTOR_OK);
    VL_CHECK(vl_actor_weights_version(a) == 7 && vl_actor_weights_count(a) == 2);
    const char *name;
    uint32_t ndim, shape[2], dims[VL_ACTOR_WEIGHTS_NDIM_MAX];
    const float *data;
    VL_CHECK(vl_actor_weights_tensor(a, 0, &name, &ndim, shape, &data) == 0);
    VL_CHECK(strcmp(name, "any.shape") == 0 && ndim == 2 && shape[0] == 2 && shape[1] == 3);
    VL_CHECK(vl_actor_weights_shape(a, 0, dims) == 2 && dims[0] == 2 && dims[1] == 3 && !dims[2]);
    VL_CHECK(vl_actor_weights_tensor(a, 1, &name, &ndim, shape, &data) == 0);
    VL_CHECK(strcmp(name, "conv") == 0 && ndim == 4 && shape[0] == 2 && shape[1] == 6);
    VL_CHECK(vl_actor_weights_shape(a, 1, dims) == 4 && dims[0] == 2 && dims[1] == 3 &&
             dims[2] == 1 && dims[3] == 2);
    VL_CHECK(data[11] == 12 && vl_actor_weights_tensor(a, 2, &name, &ndim, shape, &data) == -1);
    VL_CHECK(vl_actor_weights_shape(a, 2, dims) == -1);
    float obs[N * D], next[N * D], final[N * D], rew[N] = {1, 2};
    float act[N] = {1, 0};
    float logp[N] = {-0.5f, -1.0f};
    for (uint32_t s = 0; s < T; s++) {
        uint8_t term[N] = {s == 3, 0}, trunc[N] = {0, s == 2};
        s_obs(obs, s, 0);
        s_obs(next, s + 1, 0);
        s_obs(final, s + 1, 9); // the truncated episode's last observation
        VL_CHECK(vl_actor_act_external(a, obs, N * D, act, logp, why, sizeof why) == 0);
        VL_CHECK(vl_actor_observe(a, rew, term, trunc, next, final, N * D, why, sizeof why) == 0);
    }
    VL_CHECK(vl_actor_segments_sent(a) == N && vl_actor_steps(a) == N * T);
    for (uint32_t k = 0; k < N; k++) {
        vl_segment_t seg;
        void *arrays = NULL;
        VL_CHECK(s_recv_segment(&b, &seg, &arrays) == VL_OK);
        uint32_t i = seg.env_id;
        const float *o = (const float *)seg.obs, *f = (const float *)seg.final_obs;
        int ok = seg.actor_id == 5 && seg.policy_version == 7 && seg.horizon == T && o[1] == 0 &&
                 o[T * D + 1] == T && o[0] == (float)i && seg.actions[0] == act[i] &&
                 seg.logp[2] == logp[i] && seg.rewards[1] == rew[i];
        ok = ok && (i == 0 ? seg.dones[3] == 1 && seg.n_truncated == 0 && seg.n_episodes == 1
                           : seg.dones[2] == 1 && seg.truncated[2] == 1 && seg.n_truncated == 1 &&
                                 f[1] == 3 && f[2] == 9);
        free(arrays);
        VL_CHECK(ok);
    }
    vl_actor_close(&a);
    vl_actor_close(&a);
    VL_CHECK(a == NULL);
    s_broker_stop(&b);
}

/* volley's policy acts on the published weights; bad input is refused with
   the argument named, and the step that follows records as if it had not come. */
static void test_act_and_bad_input(void)
{
    vl_policy_t *pol = vl_policy_new(D, 2, 8, 3);
    s_broker_t b;
    VL_CHECK(s_broker_serving(&b, pol) == 0);
    vl_actor_params_t p = s_params(b.addr, 0);
    char why[256];
    vl_actor_t *a = vl_actor_open(&p, why, sizeof why);
    VL_CHECK(a);
    float obs[N * D], rew[N] = {0, 0}, logp[N], act[N];
    uint8_t zero[N] = {0, 0}, two[N] = {0, 2};
    s_obs(obs, 0, 0);
    obs[4] = NAN;
    VL_CHECK(vl_actor_act(a, obs, N * D, act, logp, why, sizeof why) == VL_ACTOR_EINVAL);
    VL_CHECK(strstr(why, "obs[1][1] = nan") != NULL);
    VL_CHECK(vl_actor_act(a, obs, N * D - 1, act, logp, why, sizeof why) == VL_ACTOR_EINVAL);
    VL_CHECK(vl_actor_act_external(a, obs, N * D, act, logp, why, sizeof why) == VL_ACTOR_EINVAL);
    obs[4] = 0;
    VL_CHECK(vl_actor_observe(a, rew, zero, zero, obs, NULL, N * D, why, sizeof why) ==
             VL_ACTOR_EINVAL);
    VL_CHECK(vl_actor_act(a, obs, N * D, act, logp, why, sizeof why) == VL_ACTOR_OK);
    VL_CHECK((act[0] == 0 || act[0] == 1) && (act[1] == 0 || act[1] == 1));
    VL_CHECK(logp[0] <= 0 && logp[1] <= 0);
    VL_CHECK(vl_actor_observe(a, rew, two, zero, obs, NULL, N * D, why, sizeof why) ==
             VL_ACTOR_EINVAL);
    VL_CHECK(strstr(why, "terminated[1] = 2") != NULL);
    VL_CHECK(vl_actor_observe(a, rew, zero, two + 1, obs, NULL, N * D, why, sizeof why) ==
             VL_ACTOR_EINVAL); // truncated {2, ?}: refused before anything is read
    VL_CHECK(vl_actor_observe(a, rew, zero, zero, obs, NULL, N * D, why, sizeof why) == 0);
    VL_CHECK(vl_actor_steps(a) == N);
    vl_actor_close(&a);
    s_broker_stop(&b);
    vl_policy_destroy(&pol);
}

/* Per-value ranges: a value outside its own range is refused naming it
   (before any weights are needed); bad ranges or modes are refused; warn
   and off take what error refuses, but never a NaN. */
static void test_obs_check_per_value(void)
{
    vl_policy_t *pol = vl_policy_new(D, 2, 8, 3);
    s_broker_t b;
    VL_CHECK(s_broker_serving(&b, pol) == 0);
    vl_actor_params_t p = s_params(b.addr, 1);
    char why[256];
    vl_actor_t *a = vl_actor_open(&p, why, sizeof why);
    VL_CHECK(a);
    float low[D] = {0, -10, -INFINITY}, high[D] = {1, 10, INFINITY};
    VL_CHECK(vl_actor_set_obs_check(a, 0, low, high, why, sizeof why) == VL_ACTOR_OK);
    float obs[N * D] = {0.5f, 0, 1e30f, 5, 0, 0}; // env 1's value 0: 5, outside [0, 1]
    float logp[N] = {-0.7f, -0.7f};
    float act[N] = {0, 1};
    VL_CHECK(vl_actor_act_external(a, obs, N * D, act, logp, why, sizeof why) == VL_ACTOR_EINVAL);
    VL_CHECK(strstr(why, "obs[1][0] = 5: field 0 element [0] is outside its declared range "
                         "[0, 1]") != NULL);
    high[1] = -20; // low > high
    VL_CHECK(vl_actor_set_obs_check(a, 1, low, high, why, sizeof why) == VL_ACTOR_EINVAL);
    VL_CHECK(vl_actor_set_obs_check(a, 3, NULL, NULL, why, sizeof why) == VL_ACTOR_EINVAL);
    high[1] = 10;
    for (int mode = 1; mode <= 2; mode++) {
        VL_CHECK(vl_actor_set_obs_check(a, mode, low, high, why, sizeof why) == VL_ACTOR_OK);
        obs[0] = NAN;
        VL_CHECK(vl_actor_act_external(a, obs, N * D, act, logp, why, sizeof why) ==
                 VL_ACTOR_EINVAL);
        obs[0] = 0.5f;
        VL_CHECK(vl_actor_act_external(a, obs, N * D, act, logp, why, sizeof why) == VL_ACTOR_OK);
        uint8_t zero[N] = {0, 0};
        float rew[N] = {0, 0};
        VL_CHECK(vl_actor_observe(a, rew, zero, zero, obs, NULL, N * D, why, sizeof why) == 0);
    }
    vl_actor_close(&a);
    s_broker_stop(&b);
    vl_policy_destroy(&pol);
}

/* A box of W values whose bounds a policy of log-std around 0 samples far
   outside: most actions leave them. */
static const vl_env_t s_box_spec = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "test-box",
    .n_fields = 1,
    .fields = {{.encoding = VL_ENV_F32, .ndim = 1, .shape = {D}}},
    .action = {.kind = VL_ENV_BOX, .dims = W, .low = {-0.1f, 0.0f}, .high = {0.1f, 0.2f}},
};

/* Returns a box policy over s_box_spec as an actor builds it (the default
   model of hidden 8), its log-std set to logstd, or NULL. */
static vl_policy_t *s_box_policy(const float logstd[W])
{
    vl_env_ops_t ops;
    char why[256];
    if (vl_env_check_spec(&s_box_spec, &ops, why, sizeof why) != 0)
        return NULL;
    vl_model_spec_t *model = vl_model_spec_for(NULL, &ops.obs_spec, 8, why, sizeof why);
    vl_policy_t *pol =
        model ? vl_policy_new_spec(model, &ops.obs_spec, &ops.action, 3, 1, why, sizeof why) : NULL;
    vl_model_spec_destroy(&model);
    for (uint32_t i = 0; pol && i < vl_policy_tensor_count(pol); i++) {
        vl_tensor_t t;
        vl_policy_tensor(pol, i, &t);
        if (strcmp(t.name, "pi.logstd") == 0 && t.rows * t.cols == W)
            memcpy(t.data, logstd, W * sizeof(float));
    }
    if (pol)
        vl_policy_params_changed(pol);
    return pol;
}

/* A diagonal Gaussian's log-density of a [W] under mean mu and logstd, as
   torch.distributions.Normal(mu, exp(logstd)).log_prob(a).sum() computes it
   (in double). */
static double s_gaussian_logp(const float *a, const float *mu, const float *logstd)
{
    double sum = 0;
    for (int d = 0; d < W; d++) {
        double z = ((double)a[d] - mu[d]) / exp(logstd[d]);
        sum += -0.5 * z * z - logstd[d] - 0.5 * log(2.0 * M_PI);
    }
    return sum;
}

/* Returns 1 if x and y agree to a float's precision. */
static int s_close(double x, double y)
{
    return fabs(x - y) <= 1e-5 * (1.0 + fabs(y));
}

/* What a box actor acted, step by step. */
typedef struct {
    float obs[T][N * D], act[T][N * W], logp[T][N];
} s_box_run_t;

/* Acts T steps with an actor over s_box_spec on the broker's weights and
   observes nothing ending; records obs, actions and log-probs in run.
   Returns 1 if every call succeeded and N segments went out. */
static int s_box_act(const char *addr, s_box_run_t *run)
{
    vl_actor_params_t p = s_params(addr, 0);
    p.env = &s_box_spec;
    char why[256];
    vl_actor_t *a = vl_actor_open(&p, why, sizeof why);
    float rew[N] = {0.5f, -0.5f}, next[N * D];
    uint8_t zero[N] = {0, 0};
    int ok = a != NULL;
    for (uint32_t t = 0; t < T && ok; t++) {
        s_obs(run->obs[t], t, 0.25f * (float)t);
        s_obs(next, t + 1, 0.25f * (float)(t + 1));
        ok = vl_actor_act(a, run->obs[t], N * D, run->act[t], run->logp[t], why, sizeof why) ==
                 VL_ACTOR_OK &&
             vl_actor_observe(a, rew, zero, zero, next, NULL, N * D, why, sizeof why) == 0;
    }
    if (!ok)
        fprintf(stderr, "box actor: %s\n", why);
    ok = ok && vl_actor_segments_sent(a) == N;
    vl_actor_close(&a);
    return ok;
}

/* Returns 1 if seg (env i) carries run's actions and log-probs for env i,
   the box space, and log-probs that are the Gaussian's of the policy's
   means and log-std at each observation. Counts actions outside the bounds
   into *outside. */
static int s_box_segment_ok(const vl_segment_t *seg, const s_box_run_t *run, vl_policy_t *pol,
                            const float logstd[W], int *outside)
{
    uint32_t i = seg->env_id;
    const vl_action_spec_t *box = &s_box_spec.action;
    int ok = i < N && vl_action_equal(&seg->action, box) && seg->horizon == T;
    for (uint32_t t = 0; t < T && ok; t++) {
        float mu[N * W];
        const float *a = &seg->actions[t * W];
        ok = vl_policy_forward(pol, N, run->obs[t], mu, NULL) == 0;
        ok = ok && memcmp(a, &run->act[t][i * W], W * sizeof(float)) == 0 &&
             seg->logp[t] == run->logp[t][i];
        ok = ok && s_close(seg->logp[t], vl_dist_logp(box, &mu[i * W], logstd, a)) &&
             s_close(seg->logp[t], s_gaussian_logp(a, &mu[i * W], logstd));
        for (int d = 0; d < W; d++)
            *outside += a[d] < box->low[d] || a[d] > box->high[d];
    }
    return ok;
}

/* A box policy acts on published weights: the segments carry the actions
   as sampled, unclipped (most leave the narrow bounds), each with the
   diagonal Gaussian's log-density of the published means and log-std. */
static void test_box_actions_unclipped_with_gaussian_logp(void)
{
    const float logstd[W] = {-0.5f, 0.4f};
    vl_policy_t *pol = s_box_policy(logstd);
    VL_CHECK(pol && vl_policy_logstd(pol) && vl_policy_logstd(pol)[1] == 0.4f);
    s_broker_t b;
    VL_CHECK(s_broker_serving(&b, pol) == 0);
    static s_box_run_t run;
    VL_CHECK(s_box_act(b.addr, &run));
    int outside = 0, seen[N] = {0};
    for (uint32_t k = 0; k < N; k++) {
        vl_segment_t seg;
        void *arrays = NULL;
        VL_CHECK(s_recv_segment(&b, &seg, &arrays) == VL_OK);
        VL_CHECK(s_box_segment_ok(&seg, &run, pol, logstd, &outside));
        seen[seg.env_id < N ? seg.env_id : 0]++;
        free(arrays);
    }
    VL_CHECK(seen[0] == 1 && seen[1] == 1);
    VL_CHECK(outside > N * T * W / 2); // a clipped action would sit on a bound
    s_broker_stop(&b);
    vl_policy_destroy(&pol);
}

/* External mode over a box: a finite action outside the bounds and a
   log-density above 0 are taken as given; a NaN action is refused naming
   it, and a discrete space still refuses a log-prob above 0. */
static void test_external_box_actions(void)
{
    s_broker_t b;
    float tw[2] = {0, 0};
    vl_tensor_t t[1] = {{.name = "any", .rows = 1, .cols = 2, .ndim = 2, .data = tw}};
    VL_CHECK(s_broker_start(&b, t, 1) == 0);
    vl_actor_params_t p = s_params(b.addr, 1);
    p.env = &s_box_spec;
    char why[256];
    vl_actor_t *a = vl_actor_open(&p, why, sizeof why);
    VL_CHECK(a && vl_actor_sync(a, why, sizeof why) == VL_ACTOR_OK);
    float obs[N * D], act[N * W] = {5.0f, -3.0f, 0.05f, 0.1f}, logp[N] = {1.5f, -2.0f};
    float rew[N] = {0, 0};
    uint8_t zero[N] = {0, 0};
    s_obs(obs, 0, 0);
    act[3] = NAN;
    VL_CHECK(vl_actor_act_external(a, obs, N * D, act, logp, why, sizeof why) == VL_ACTOR_EINVAL);
    VL_CHECK(strstr(why, "actions[1][1] = nan, must be finite") != NULL);
    act[3] = 0.1f;
    for (uint32_t s = 0; s < T; s++) {
        VL_CHECK(vl_actor_act_external(a, obs, N * D, act, logp, why, sizeof why) == VL_ACTOR_OK);
        VL_CHECK(vl_actor_observe(a, rew, zero, zero, obs, NULL, N * D, why, sizeof why) == 0);
    }
    int carried = 0;
    for (uint32_t k = 0; k < N; k++) {
        vl_segment_t seg;
        void *arrays = NULL;
        VL_CHECK(s_recv_segment(&b, &seg, &arrays) == VL_OK);
        uint32_t i = seg.env_id < N ? seg.env_id : 0;
        carried += seg.actions[(T - 1) * W] == act[i * W] && seg.logp[T - 1] == logp[i];
        free(arrays);
    }
    VL_CHECK(carried == N);
    vl_actor_close(&a);
    p.env = &s_spec;
    a = vl_actor_open(&p, why, sizeof why);
    VL_CHECK(a && vl_actor_sync(a, why, sizeof why) == VL_ACTOR_OK);
    VL_CHECK(vl_actor_act_external(a, obs, N * D, (float[N]){0, 1}, logp, why, sizeof why) ==
             VL_ACTOR_EINVAL);
    VL_CHECK(strstr(why, "logps[0] = 1.5, must be a finite log-probability <= 0") != NULL);
    vl_actor_close(&a);
    s_broker_stop(&b);
}

/* A bad spec is refused at open; a readable wake fd ends the wait for the
   first weights with VL_ACTOR_EINTR (nothing is published here). */
static void test_refusals_and_wake_fd(void)
{
    char why[256];
    vl_env_t bad = s_spec;
    bad.action.n[0] = 1;
    vl_actor_params_t p = s_params("127.0.0.1:1", 0);
    p.env = &bad;
    VL_CHECK(vl_actor_open(&p, why, sizeof why) == NULL &&
             strstr(why, "action dimension 0 has 1 choices"));
    int fds[2];
    VL_CHECK(pipe(fds) == 0);
    p = s_params("127.0.0.1:1", 0);
    p.wake_fd = fds[0];
    vl_actor_t *a = vl_actor_open(&p, why, sizeof why);
    VL_CHECK(a && write(fds[1], "x", 1) == 1);
    VL_CHECK(vl_actor_sync(a, why, sizeof why) == VL_ACTOR_EINTR);
    vl_actor_close(&a);
    close(fds[0]);
    close(fds[1]);
}

/* An identity of the caller's own (cert, broker_key): half of it or an
   unreadable certificate is refused at open; a broker that cannot take it
   (here a plain one) ends the first sync with VL_ACTOR_EREFUSED, "CURVE: ". */
static void test_curve_identity_refused(void)
{
    char why[256], dir[] = "/tmp/vl_actor_test_XXXXXX", cert[64], broker[64];
    VL_CHECK(mkdtemp(dir) != NULL);
    snprintf(cert, sizeof cert, "%s/actor.cert", dir);
    snprintf(broker, sizeof broker, "%s/broker.cert", dir);
    VL_CHECK(vl_curve_keygen(cert, "actor", "actor", NULL, why, sizeof why) == 0 &&
             vl_curve_keygen(broker, "broker", NULL, NULL, why, sizeof why) == 0);
    vl_actor_params_t p = s_params("127.0.0.1:1", 1);
    p.cert = cert;
    VL_CHECK(!vl_actor_open(&p, why, sizeof why) && strstr(why, "cert and broker_key go together"));
    p.broker_key = "/nonexistent/broker.cert";
    VL_CHECK(!vl_actor_open(&p, why, sizeof why) &&
             strstr(why, "CURVE: cannot read the certificate /nonexistent/broker.cert"));
    float tw[2] = {0};
    vl_tensor_t t[1] = {{.name = "any", .rows = 1, .cols = 2, .ndim = 2, .data = tw}};
    s_broker_t b;
    VL_CHECK(s_broker_start(&b, t, 1) == 0);
    p = s_params(b.addr, 1);
    p.cert = cert;
    p.broker_key = broker;
    vl_actor_t *a = vl_actor_open(&p, why, sizeof why);
    VL_CHECK(a != NULL);
    VL_CHECK(vl_actor_sync(a, why, sizeof why) == VL_ACTOR_EREFUSED);
    VL_CHECK(strncmp(why, "CURVE: ", 7) == 0 && strstr(why, "CURVE handshake with the broker"));
    vl_actor_close(&a);
    s_broker_stop(&b);
    char *files[] = {cert, broker};
    for (int i = 0; i < 2; i++) {
        char secret[80];
        snprintf(secret, sizeof secret, "%s_secret", files[i]);
        unlink(files[i]);
        unlink(secret);
    }
    rmdir(dir);
}

int main(void)
{
    VL_RUN(test_external_steps_reach_the_segments);
    VL_RUN(test_act_and_bad_input);
    VL_RUN(test_refusals_and_wake_fd);
    VL_RUN(test_curve_identity_refused);
    VL_RUN(test_obs_check_per_value);
    VL_RUN(test_box_actions_unclipped_with_gaussian_logp);
    VL_RUN(test_external_box_actions);
    return VL_DONE();
}
