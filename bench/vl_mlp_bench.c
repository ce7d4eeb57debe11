/*  vl_mlp_bench: the MLP's kernel sets at CartPole's size, a policy tower
    4 -> 64 -> 64 -> 2 (tanh), at batches 8 to 256: forward alone (an
    actor's act, a learner's rollout pass) and forward + backward (a
    learner's minibatch), on vl_matmul's oneDNN products (DNNL), its
    portable loops (PORTABLE, what replay runs on) and the hand-written
    AVX2 kernels (the default where the CPU has them). Each figure is the
    best of several timed runs, in microseconds per call, with AVX2's and
    PORTABLE's speed-up over DNNL in the same run; before a row is printed,
    every set's outputs and gradients are checked against DNNL's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/vl_rng.h"
#include "../models/vl_mlp.h"
#include "vl_bench.h"

#define S_MAXN 256
#define S_IN   4
#define S_OUT  2

static const uint32_t s_sizes[] = {S_IN, 64, 64, S_OUT};
static const uint32_t s_batches[] = {8, 16, 32, 64, 128, 256};
static const char *const s_set_names[] = {"DNNL", "PORTABLE", "AVX2"};
enum { S_SETS = 3, S_BATCHES = sizeof s_batches / sizeof s_batches[0] };

typedef struct {
    vl_mlp_t *net;
    uint32_t n;
    int backward;
    float x[S_MAXN * S_IN], y[S_MAXN * S_OUT], dy[S_MAXN * S_OUT];
} s_case_t;

static void s_step(void *arg)
{
    s_case_t *c = arg;
    vl_mlp_forward(c->net, c->n, c->x, c->y);
    if (c->backward)
        vl_mlp_backward(c->net, c->n, c->dy, NULL);
}

static void s_usage(FILE *out)
{
    fprintf(out, "usage: vl_mlp_bench [--quick]\n"
                 "The MLP's kernel sets (DNNL, PORTABLE, AVX2) on a 4 -> 64 -> 64 -> 2 tower\n"
                 "at batches 8 to 256, forward and forward + backward, us per call.\n");
}

/* Returns the worst |a - b| / (1 + |b|) over count floats. */
static double s_worst(const float *a, const float *b, size_t count)
{
    double worst = 0;
    for (size_t k = 0; k < count; k++)
        worst = fmax(worst, fabs((double)a[k] - b[k]) / (1.0 + fabs(b[k])));
    return worst;
}

/* Makes case c of kernel set k, the tower's weights from seed 1. Returns 0,
   or -1 when the set does not run here. */
static int s_case_new(s_case_t *c, int k, uint32_t n, int backward)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, 1);
    c->net = vl_mlp_new(3, s_sizes);
    c->n = n, c->backward = backward;
    if (!c->net || vl_mlp_init(c->net, &rng, 1.41421356f, 0.01f) != 0 ||
        vl_mlp_set_kernels(c->net, k) != k) {
        vl_mlp_destroy(&c->net);
        return -1;
    }
    for (size_t i = 0; i < S_MAXN * S_IN; i++)
        c->x[i] = (float)vl_rng_uniform(&rng) * 2.0f - 1.0f;
    for (size_t i = 0; i < S_MAXN * S_OUT; i++)
        c->dy[i] = (float)vl_rng_uniform(&rng) - 0.5f;
    return 0;
}

/* Checks every set's outputs and gradients at n against DNNL's. Returns 0,
   or -1 after saying which disagrees. */
static int s_check(uint32_t n, s_case_t *cases)
{
    float *ref = NULL;
    size_t count = 0;
    for (int k = 0; k < S_SETS; k++) {
        if (!cases[k].net)
            continue;
        vl_mlp_zero_grad(cases[k].net);
        s_step(&cases[k]);
        count = vl_mlp_param_count(cases[k].net);
        float *g = vl_mlp_grads(cases[k].net);
        if (!ref) {
            ref = malloc(count * sizeof *ref);
            if (!ref)
                return -1;
            memcpy(ref, g, count * sizeof *ref);
        } else if (s_worst(g, ref, count) > 1e-4 ||
                   s_worst(cases[k].y, cases[0].y, (size_t)n * S_OUT) > 1e-4) {
            fprintf(stderr, "vl_mlp_bench: %s disagrees with DNNL at batch %u\n", s_set_names[k],
                    n);
            free(ref);
            return -1;
        }
    }
    free(ref);
    return 0;
}

int main(int argc, char **argv)
{
    vl_bench_plan_t plan;
    int rc = vl_bench_parse(argc, argv, "vl_mlp_bench", s_usage, (vl_bench_plan_t){7, 0.15},
                            (vl_bench_plan_t){1, 0.001}, &plan);
    if (rc)
        return rc == 1 ? 0 : 2;
    printf("vl_mlp_bench: 4 -> 64 -> 64 -> 2 tanh tower, best of %d runs of %.2f s, us per call\n",
           plan.runs, plan.run_s);
    printf("%-22s %5s %10s %10s %10s %9s %9s\n", "case", "batch", "DNNL", "PORTABLE", "AVX2",
           "AVX2 x", "PORT x");
    static s_case_t cases[S_SETS];
    for (int backward = 0; backward < 2; backward++)
        for (int b = 0; b < S_BATCHES; b++) {
            uint32_t n = s_batches[b];
            double us[S_SETS];
            for (int k = 0; k < S_SETS; k++)
                if (s_case_new(&cases[k], k, n, 1) != 0 && k == 0) {
                    fprintf(stderr, "vl_mlp_bench: no DNNL kernels\n");
                    return 1;
                }
            if (s_check(n, cases) != 0)
                return 1;
            for (int k = 0; k < S_SETS; k++) {
                cases[k].backward = backward;
                us[k] = cases[k].net
                            ? 1e3 * vl_bench_best_ms(plan.runs, plan.run_s, s_step, &cases[k])
                            : NAN;
                vl_mlp_destroy(&cases[k].net);
            }
            printf("%-22s %5u %10.2f %10.2f %10.2f %9.2f %9.2f\n",
                   backward ? "forward + backward" : "forward", n, us[0], us[1], us[2],
                   us[0] / us[2], us[0] / us[1]);
        }
    printf("AVX2 x, PORT x: DNNL's time over AVX2's, over PORTABLE's (above 1: faster than "
           "oneDNN); AVX2 is nan where the CPU lacks it\n");
    return 0;
}
