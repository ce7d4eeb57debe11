/*  vl_update_bench: one learner update (forward, backward, Adam) in
    samples/s, for comparison with the same MLP and minibatch in PyTorch
    (bench/torch_update_bench.py; bench/update_bench.sh runs both).

    An update is what the trainer does per minibatch: vl_policy_zero_grad,
    vl_policy_loss_grad (PPO clipped surrogate, value loss, entropy bonus)
    and vl_policy_adam_step (lr 1e-3, grad norm clipped to 0.5). Each case
    repeats updates on one fixed minibatch of M samples, so the ratio drifts
    from 1 and clipping starts as it does in a real epoch. A run lasts at
    least S_RUN_S of wall-clock time (PyTorch's threads make CPU time the
    wrong clock for the comparison); the best of S_RUNS counts, as in lz4's
    fullbench. Before its figure is printed each case checks that the loss
    and gradient norm stayed finite and that the loss went down.

    samples/s = M * updates / seconds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/vl_rng.h"
#include "models/vl_policy.h"

#define S_RUNS        5   // runs per case; the best counts
#define S_RUN_S       0.2 // seconds per run at least: long enough to hide the clock
#define S_QUICK_RUNS  2   // --quick, for tests
#define S_QUICK_RUN_S 0.01
#define S_LR          1e-3f // CleanRL's PPO learning rate scale
#define S_MAX_NORM    0.5f  // CleanRL's max_grad_norm
#define S_SEED        1

static const vl_loss_params_t s_loss = {.clip = 0.2f, .vf_coef = 0.5f, .ent_coef = 0.01f};

typedef struct {
    const char *name;
    uint32_t obs_dim;     // D
    uint32_t hidden;      // H
    uint32_t num_actions; // A
    uint32_t batch;       // M, samples per minibatch
    int pixels;           // observations like catch's: sparse gray levels 0 .. 3
} s_case_t;

static const s_case_t s_cases[] = {
    {.name = "cartpole", .obs_dim = 4, .hidden = 64, .num_actions = 2, .batch = 256},
    {.name = "catch", .obs_dim = 290, .hidden = 64, .num_actions = 3, .batch = 256, .pixels = 1},
    {.name = "cartpole-1024", .obs_dim = 4, .hidden = 64, .num_actions = 2, .batch = 1024},
    {.name = "catch-1024",
     .obs_dim = 290,
     .hidden = 64,
     .num_actions = 3,
     .batch = 1024,
     .pixels = 1},
};

#define S_N_CASES (sizeof s_cases / sizeof s_cases[0])

/* One case's policy and minibatch. */
typedef struct {
    vl_policy_t *policy;
    float *obs;      // [M][D]
    float *actions;  // [M] discrete choices as whole numbers
    float *old_logp; // [M], log pi(action) under the initial weights: ratio starts at 1
    float *adv;      // [M]
    float *v_target; // [M]
    float first_loss;
    float last_loss; // of the latest update
    float last_norm; // gradient norm of the latest update, before clipping
} s_data_t;

typedef struct {
    double s[3]; // seconds in zero_grad, loss_grad, adam_step over the run
} s_parts_t;

/* Returns wall-clock seconds from a monotonic clock. */
static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void s_data_free(s_data_t *d)
{
    vl_policy_destroy(&d->policy);
    free(d->obs);
    free(d->actions);
    free(d->old_logp);
    free(d->adv);
    free(d->v_target);
}

/* Fills the minibatch: cartpole-like observations uniform in [-1, 1], or
   catch-like ones (15% of the values lit at a gray level 1 .. 3, as catch's
   screens and flags average);
   uniform actions; normal advantages and value targets. */
static void s_fill_batch(const s_case_t *c, s_data_t *d, vl_rng_t *rng)
{
    size_t D = c->obs_dim;
    for (size_t i = 0; i < (size_t)c->batch * D; i++) {
        if (!c->pixels)
            d->obs[i] = (float)(2.0 * vl_rng_uniform(rng) - 1.0);
        else
            d->obs[i] = vl_rng_below(rng, 20) < 3 ? (float)(1 + vl_rng_below(rng, 3)) : 0;
    }
    for (uint32_t i = 0; i < c->batch; i++) {
        d->actions[i] = (float)vl_rng_below(rng, c->num_actions);
        d->adv[i] = (float)vl_rng_normal(rng);
        d->v_target[i] = (float)vl_rng_normal(rng);
    }
}

/* Sets old_logp to log pi(action) under the policy's current weights.
   Returns 0, or -1 on no memory. */
static int s_fill_old_logp(const s_case_t *c, s_data_t *d)
{
    uint32_t A = c->num_actions;
    float *logits = malloc((size_t)c->batch * A * sizeof(float));
    float *logp = malloc(A * sizeof(float));
    int rc = -1;
    if (logits && logp && vl_policy_forward(d->policy, c->batch, d->obs, logits, NULL) == 0) {
        for (uint32_t i = 0; i < c->batch; i++) {
            vl_log_softmax(logits + (size_t)i * A, A, logp);
            d->old_logp[i] = logp[(uint32_t)d->actions[i]];
        }
        rc = 0;
    }
    free(logits);
    free(logp);
    return rc;
}

/* Builds the policy and minibatch of case c. Returns 0, or -1 on no memory
   (d is then freed). */
static int s_data_init(const s_case_t *c, s_data_t *d)
{
    memset(d, 0, sizeof *d);
    size_t M = c->batch;
    d->policy = vl_policy_new(c->obs_dim, c->num_actions, c->hidden, S_SEED);
    d->obs = malloc(M * c->obs_dim * sizeof(float));
    d->actions = malloc(M * sizeof(float));
    d->old_logp = malloc(M * sizeof(float));
    d->adv = malloc(M * sizeof(float));
    d->v_target = malloc(M * sizeof(float));
    if (!d->policy || !d->obs || !d->actions || !d->old_logp || !d->adv || !d->v_target)
        goto err;
    vl_rng_t rng;
    vl_rng_seed(&rng, S_SEED);
    s_fill_batch(c, d, &rng);
    if (s_fill_old_logp(c, d) != 0)
        goto err;
    return 0;
err:
    s_data_free(d);
    return -1;
}

/* Takes `updates` updates on the minibatch, adding the time of each part
   into parts if not NULL. Returns the seconds they took. */
static double s_run(const s_case_t *c, s_data_t *d, uint64_t updates, s_parts_t *parts)
{
    double t0 = s_now();
    for (uint64_t u = 0; u < updates; u++) {
        double a = parts ? s_now() : 0;
        vl_policy_zero_grad(d->policy);
        double b = parts ? s_now() : 0;
        d->last_loss = vl_policy_loss_grad(d->policy, &s_loss, c->batch, d->obs, d->actions,
                                           d->old_logp, d->adv, d->v_target, NULL, NULL);
        double e = parts ? s_now() : 0;
        d->last_norm = vl_policy_adam_step(d->policy, S_LR, S_MAX_NORM);
        if (parts) {
            double f = s_now();
            parts->s[0] += b - a;
            parts->s[1] += e - b;
            parts->s[2] += f - e;
        }
    }
    return s_now() - t0;
}

/* Returns the updates that take about run_s. */
static uint64_t s_calibrate(const s_case_t *c, s_data_t *d, double run_s)
{
    uint64_t updates = 1;
    double s;
    while ((s = s_run(c, d, updates, NULL)) < run_s / 8)
        updates *= 2;
    double want = (double)updates * run_s / s;
    return want < 1 ? 1 : (uint64_t)ceil(want);
}

typedef struct {
    const s_case_t *c;
    double best_s;   // seconds per update, best run
    s_parts_t parts; // per update, from a separate instrumented run
    float first_loss, last_loss, last_norm;
} s_result_t;

/* Measures case c into r. Returns 0, or -1 when it could not be built or
   its updates went wrong (the figure would then mean nothing). */
static int s_bench_case(const s_case_t *c, s_result_t *r, int runs, double run_s)
{
    s_data_t d;
    if (s_data_init(c, &d) != 0) {
        fprintf(stderr, "vl_update_bench: %s: no memory\n", c->name);
        return -1;
    }
    *r = (s_result_t){.c = c, .best_s = INFINITY};
    s_run(c, &d, 1, NULL);
    r->first_loss = d.last_loss;
    uint64_t updates = s_calibrate(c, &d, run_s);
    for (int run = 0; run < runs; run++)
        r->best_s = fmin(r->best_s, s_run(c, &d, updates, NULL) / (double)updates);
    // The parts come from one more run: the extra clock reads stay out of the figure.
    uint64_t part_updates = updates / 4 ? updates / 4 : 1;
    s_run(c, &d, part_updates, &r->parts);
    for (int k = 0; k < 3; k++)
        r->parts.s[k] /= (double)part_updates;
    r->last_loss = d.last_loss;
    r->last_norm = d.last_norm;
    s_data_free(&d);
    if (!isfinite(r->first_loss) || !isfinite(r->last_loss) || !isfinite(r->last_norm) ||
        r->last_loss >= r->first_loss) {
        fprintf(stderr, "vl_update_bench: %s: updates went wrong (loss %g -> %g, norm %g)\n",
                c->name, r->first_loss, r->last_loss, r->last_norm);
        return -1;
    }
    return 0;
}

/* ---- output ---------------------------------------------------------------- */

static void s_print_header(int runs)
{
    printf("learner update (zero_grad + loss_grad + adam_step), best of %d runs, wall clock;\n"
           "samples/s = M x updates/s; parts in microseconds per update:\n",
           runs);
    printf("  %-14s %4s %3s %2s %5s %12s %10s %9s %10s %9s\n", "case", "D", "H", "A", "M",
           "samples/s", "us/update", "zero_grad", "loss_grad", "adam_step");
}

static void s_print_row(const s_result_t *r)
{
    const s_case_t *c = r->c;
    printf("  %-14s %4u %3u %2u %5u %12.0f %10.1f %9.2f %10.1f %9.1f\n", c->name, c->obs_dim,
           c->hidden, c->num_actions, c->batch, c->batch / r->best_s, 1e6 * r->best_s,
           1e6 * r->parts.s[0], 1e6 * r->parts.s[1], 1e6 * r->parts.s[2]);
}

/* One line for scripts: bench/update_bench.sh reads samples/s=. */
static void s_print_machine(const s_result_t *r)
{
    const s_case_t *c = r->c;
    printf("volley samples/s=%.0f case=%s D=%u H=%u A=%u M=%u us/update=%.2f loss=%.6g->%.6g\n",
           c->batch / r->best_s, c->name, c->obs_dim, c->hidden, c->num_actions, c->batch,
           1e6 * r->best_s, r->first_loss, r->last_loss);
}

/* ---- main ---------------------------------------------------------------- */

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: vl_update_bench [--case NAME] [--quick] [--list] [--help]\n"
            "  Times one learner update (forward, backward, Adam) on a fixed minibatch\n"
            "  and prints samples/s, best of %d runs of at least %.1f s.\n"
            "  --case NAME  only this case, printed as one line for scripts:\n"
            "               volley samples/s=<x> case=NAME ...\n"
            "  --quick      %d short runs per case (for tests)\n"
            "  --list       the cases: NAME D H A M, one a line\n"
            "  --help       this text\n",
            S_RUNS, S_RUN_S, S_QUICK_RUNS);
}

static const s_case_t *s_find_case(const char *name)
{
    for (size_t k = 0; k < S_N_CASES; k++)
        if (strcmp(s_cases[k].name, name) == 0)
            return &s_cases[k];
    return NULL;
}

static void s_list(void)
{
    for (size_t k = 0; k < S_N_CASES; k++) {
        const s_case_t *c = &s_cases[k];
        printf("%s %u %u %u %u\n", c->name, c->obs_dim, c->hidden, c->num_actions, c->batch);
    }
}

int main(int argc, char **argv)
{
    int runs = S_RUNS;
    double run_s = S_RUN_S;
    const s_case_t *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            runs = S_QUICK_RUNS;
            run_s = S_QUICK_RUN_S;
        } else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
            only = s_find_case(argv[++i]);
            if (!only) {
                fprintf(stderr, "vl_update_bench: unknown case '%s'; --list shows them\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--list") == 0) {
            s_list();
            return 0;
        } else if (strcmp(argv[i], "--help") == 0) {
            s_usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "vl_update_bench: unknown argument '%s'\n", argv[i]);
            s_usage(stderr);
            return 2;
        }
    }
    s_result_t r;
    if (only) {
        if (s_bench_case(only, &r, runs, run_s) != 0)
            return 1;
        s_print_machine(&r);
        return 0;
    }
    int failed = 0;
    s_print_header(runs);
    for (size_t k = 0; k < S_N_CASES; k++) {
        if (s_bench_case(&s_cases[k], &r, runs, run_s) == 0)
            s_print_row(&r);
        else
            failed = 1;
    }
    return failed;
}
