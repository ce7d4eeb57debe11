/*  vl_head_bench: an actor's act on 16 envs (the policy's forward pass,
    then one draw per env) with a Gaussian head beside a categorical one on
    the same network: mlp(64) over pendulum's 3 floats, its head 1 output
    (box(1): a mean, and a learned std) against 2 logits (discrete(2)), and
    wider heads of each kind (box(6), discrete(6), multi_discrete(3,3)).
    The reference is the forward pass alone, in the same run: the draws'
    own cost is the difference. Then the core: the same act through
    mlp(64) beside linear(64) lstm(64) (its state carried per env),
    linear(128) lstm(128) and lstm(256), discrete(2) heads, at 8 envs (an
    actor's default) and at 16: each recurrent core's act as a multiple of
    the mlp's act at the same envs, in the same run, beside the recurrent
    core's gate product over the torso's outputs and h alone (one sum on
    vl_rowdot): what its act cost before an actor's step folded a linear
    layer into the lstm's input weights (vl_rnet_set_inference), which
    the first two cores' acts now do. Each figure is the best over
    stretches of 2 ms: on a busy box the others preempt most. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/vl_rng.h"
#include "../models/vl_dist.h"
#include "../models/vl_policy.h"
#include "../models/vl_rowdot.h"
#include "vl_bench.h"

#define S_ENVS    16
#define S_OBS     3
#define S_CHUNK_S 0.002 // a timed stretch: shorter than a time slice of a busy box

typedef struct {
    vl_policy_t *policy;
    vl_action_spec_t space;
    vl_rng_t rng;
    int sample; // 0: the forward pass alone
    float obs[S_ENVS * S_OBS];
    float out[S_ENVS * 64];
    float actions[S_ENVS * VL_ACTION_DIMS_MAX];
    float logp[S_ENVS];
    float *state;  // [S_ENVS][state size] a recurrent policy's
    uint32_t envs; // acting on the first envs of the arrays
} s_case_t;

static void s_act(void *arg)
{
    s_case_t *c = arg;
    uint32_t A = vl_policy_num_actions(c->policy);
    vl_policy_forward_seq(c->policy, c->envs, 1, c->obs, c->state, NULL, c->out, NULL, c->state);
    for (uint32_t i = 0; c->sample && i < c->envs; i++)
        vl_dist_sample(&c->space, c->out + i * A, vl_policy_logstd(c->policy), &c->rng,
                       c->actions + i * c->space.dims, &c->logp[i]);
}

static void s_usage(FILE *out)
{
    fprintf(out, "usage: vl_head_bench [--quick]\n"
                 "An actor's act on 16 envs with a Gaussian head beside a categorical one,\n"
                 "same network (mlp(64) over 3 floats), beside the forward pass alone.\n");
}

/* Returns the space named by kind and width. */
static vl_action_spec_t s_space(uint32_t kind, uint32_t width)
{
    vl_action_spec_t a = {.kind = kind, .dims = kind == VL_ENV_DISCRETE ? 1 : width};
    for (uint32_t d = 0; d < a.dims; d++) {
        a.n[d] = kind == VL_ENV_DISCRETE ? width : 3;
        a.low[d] = -2.0f, a.high[d] = 2.0f;
    }
    return a;
}

/* Returns the best ms per call of fn(arg) over stretches of S_CHUNK_S,
   for runs * run_s seconds in all: on a box shared with other work, some
   stretches run unpreempted, where whole runs of run_s seconds would not. */
static double s_best_ms(const vl_bench_plan_t *plan, void (*fn)(void *), void *arg)
{
    return vl_bench_best_ms((int)ceil(plan->runs * plan->run_s / S_CHUNK_S), S_CHUNK_S, fn, arg);
}

/* Times one head on the network model names; returns its us per act. */
static double s_time_envs(const vl_bench_plan_t *plan, const char *model, vl_action_spec_t space,
                          int sample, uint32_t envs)
{
    s_case_t *c = calloc(1, sizeof *c);
    vl_model_spec_t *spec = vl_model_spec_parse(model, NULL, 0);
    vl_obs_spec_t obs = vl_obs_spec_flat(S_OBS);
    if (!c || !spec || !(c->policy = vl_policy_new_spec(spec, &obs, &space, 1, 1, NULL, 0))) {
        fprintf(stderr, "vl_head_bench: no memory\n");
        exit(1);
    }
    vl_policy_set_inference(c->policy, 1); // as an actor's
    c->space = space;
    c->sample = sample;
    c->envs = envs;
    uint32_t S = vl_policy_state_size(c->policy);
    c->state = S ? calloc((size_t)S_ENVS * S, sizeof(float)) : NULL;
    vl_rng_seed(&c->rng, 7);
    for (int i = 0; i < S_ENVS * S_OBS; i++)
        c->obs[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    double ms = s_best_ms(plan, s_act, c);
    free(c->state);
    vl_policy_destroy(&c->policy);
    vl_model_spec_destroy(&spec);
    free(c);
    return ms * 1e3;
}

/* A recurrent core's gate product on envs rows: [x h] [W_ih W_hh]^T + b. */
typedef struct {
    uint32_t envs, in, hidden;
    float *x, *h, *w_ih, *w_hh, *bias, *gates;
} s_product_t;

static void s_product(void *arg)
{
    s_product_t *p = arg;
    vl_rowdot_part_t parts[2] = {{p->x, p->in, p->w_ih, p->in},
                                 {p->h, p->hidden, p->w_hh, p->hidden}};
    vl_rowdot_run(p->envs, 4 * p->hidden, parts, 2, p->bias, 0, p->gates, 4 * p->hidden);
}

/* Times the gate product of an lstm of in inputs and hidden units on envs
   rows; returns its us per call, 0 where vl_rowdot does not run here. */
static double s_time_product(const vl_bench_plan_t *plan, uint32_t in, uint32_t hidden,
                             uint32_t envs)
{
    if (!vl_rowdot_available())
        return 0;
    size_t g = 4 * (size_t)hidden;
    s_product_t p = {envs,
                     in,
                     hidden,
                     calloc((size_t)envs * in, sizeof(float)),
                     calloc((size_t)envs * hidden, sizeof(float)),
                     calloc(g * in, sizeof(float)),
                     calloc(g * hidden, sizeof(float)),
                     calloc(g, sizeof(float)),
                     calloc(envs * g, sizeof(float))};
    if (!p.x || !p.h || !p.w_ih || !p.w_hh || !p.bias || !p.gates) {
        fprintf(stderr, "vl_head_bench: no memory\n");
        exit(1);
    }
    double ms = s_best_ms(plan, s_product, &p);
    free(p.x), free(p.h), free(p.w_ih), free(p.w_hh), free(p.bias), free(p.gates);
    return ms * 1e3;
}

/* Times one head on 16 envs; returns its us per act. */
static double s_time(const vl_bench_plan_t *plan, const char *model, vl_action_spec_t space,
                     int sample)
{
    return s_time_envs(plan, model, space, sample, S_ENVS);
}

int main(int argc, char **argv)
{
    vl_bench_plan_t plan;
    int rc = vl_bench_parse(argc, argv, "vl_head_bench", s_usage, (vl_bench_plan_t){5, 0.3},
                            (vl_bench_plan_t){1, 0.01}, &plan);
    if (rc)
        return rc == 1 ? 0 : 2;
    static const struct {
        const char *name;
        uint32_t kind, width;
    } heads[] = {{"discrete(2)   categorical", VL_ENV_DISCRETE, 2},
                 {"box(1)        Gaussian   ", VL_ENV_BOX, 1},
                 {"discrete(6)   categorical", VL_ENV_DISCRETE, 6},
                 {"box(6)        Gaussian   ", VL_ENV_BOX, 6},
                 {"multi(3,3)    2 categoricals", VL_ENV_MULTI_DISCRETE, 2}};
    printf("act on %d envs, mlp(64) over %d floats, best of %d runs (us per act; per env step)\n",
           S_ENVS, S_OBS, plan.runs);
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        vl_action_spec_t a = s_space(heads[i].kind, heads[i].width);
        double fwd = s_time(&plan, "mlp(64)", a, 0), act = s_time(&plan, "mlp(64)", a, 1);
        printf("  %-28s act %7.2f us (%5.1f ns/env)  forward alone %7.2f us  draws %5.1f ns/env\n",
               heads[i].name, act, act * 1e3 / S_ENVS, fwd, (act - fwd) * 1e3 / S_ENVS);
    }
    static const struct {
        const char *model;
        uint32_t in, hidden; // the lstm's, for its gate product (0: none)
    } cores[] = {{"mlp(64)", 0, 0},
                 {"linear(64) lstm(64)", 64, 64},
                 {"linear(128) lstm(128)", 128, 128},
                 {"lstm(256)", S_OBS, 256}};
    static const uint32_t envs[] = {8, S_ENVS};
    vl_action_spec_t two = s_space(VL_ENV_DISCRETE, 2);
    for (size_t e = 0; e < sizeof envs / sizeof envs[0]; e++) {
        double mlp = s_time_envs(&plan, cores[0].model, two, 1, envs[e]);
        printf("the core on %u envs, discrete(2), its state carried per env (us per act; per env "
               "step)\n",
               envs[e]);
        for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++) {
            double act = i ? s_time_envs(&plan, cores[i].model, two, 1, envs[e]) : mlp;
            printf("  %-28s act %7.2f us (%6.1f ns/env)  %.2fx the mlp's", cores[i].model, act,
                   act * 1e3 / envs[e], act / mlp);
            double prod =
                cores[i].hidden ? s_time_product(&plan, cores[i].in, cores[i].hidden, envs[e]) : 0;
            double macs = (double)envs[e] * 4 * cores[i].hidden * (cores[i].in + cores[i].hidden);
            if (prod > 0)
                printf("; unfolded, its gate product alone %.2f us (%.0f G multiply-adds/s), "
                       "%.2fx the mlp's act",
                       prod, macs / prod * 1e-3, prod / mlp);
            printf("\n");
        }
    }
    return 0;
}
