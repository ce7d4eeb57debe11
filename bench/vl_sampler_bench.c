/*  vl_sampler_bench: prioritized minibatches from vl_sampler beside the
    floor measured in the same run, uniform random indices from vl_rng (lz4's
    tests/fullbench.c is the model).

    Each case is a sampler of `capacity` slots with lognormal priorities
    (exp of a standard normal: a spread like (sum |adv|)^alpha's). Every
    operation is timed best of a few runs, and its last output is checked
    before its figure is printed (every slot in range and of priority > 0,
    every weight in (0, 1] with the largest exactly 1); a failure aborts.

    Operations, one minibatch of S_BATCH each:
      uniform   S_BATCH indices from vl_rng_below and weights of 1: the floor
      b=0.4     vl_sampler_sample at beta 0.4 (weights need an exp each)
      b=1       vl_sampler_sample at beta 1, where annealing ends
      set       S_BATCH vl_sampler_set of random slots to random priorities
                (printed as updates/s) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/vl_bench.h"
#include "common/vl_rng.h"
#include "store/vl_sampler.h"

#define S_BATCH       256  // draws per minibatch, as the trainer takes them
#define S_UPDATES     4096 // (slot, priority) pairs the set operation cycles through
#define S_RUNS        5    // runs per operation; the best counts
#define S_RUN_S       0.1  // seconds per run: long enough to hide the clock
#define S_QUICK_RUNS  2
#define S_QUICK_RUN_S 0.005
#define S_TARGET      200e3 // minibatches/s of S_BATCH, the target
#define S_SEED        2024

typedef struct {
    uint32_t capacity;
    vl_sampler_t *sampler;
    vl_rng_t rng;            // the uniform reference's generator
    uint32_t slots[S_BATCH]; // the last minibatch
    float weights[S_BATCH];
    uint32_t update_slot[S_UPDATES];
    double update_p[S_UPDATES];
    uint32_t next_update; // index into update_*
    float beta;           // of the last sample, for the check
} s_data_t;

typedef struct {
    const char *name;
    void (*run)(s_data_t *d);
    const char *(*check)(const s_data_t *d); // NULL when the output is right, else why not
} s_op_t;

/* Returns this thread's CPU seconds: the machine may be shared, and time
   spent preempted is not the sampler's. */
static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- operations ---------------------------------------------------------- */

static void s_run_uniform(s_data_t *d)
{
    for (uint32_t k = 0; k < S_BATCH; k++) {
        d->slots[k] = vl_rng_below(&d->rng, d->capacity);
        d->weights[k] = 1.0f;
    }
}

static void s_run_sample(s_data_t *d, float beta)
{
    d->beta = beta;
    if (vl_sampler_sample(d->sampler, S_BATCH, beta, d->slots, d->weights) != S_BATCH)
        d->slots[0] = UINT32_MAX; // the check reports it
}

static void s_run_b04(s_data_t *d)
{
    s_run_sample(d, 0.4f);
}

static void s_run_b1(s_data_t *d)
{
    s_run_sample(d, 1.0f);
}

static void s_run_set(s_data_t *d)
{
    uint32_t u = d->next_update;
    for (uint32_t k = 0; k < S_BATCH; k++, u = (u + 1) % S_UPDATES)
        vl_sampler_set(d->sampler, d->update_slot[u], d->update_p[u]);
    d->next_update = u;
}

static const char *s_check_uniform(const s_data_t *d)
{
    for (uint32_t k = 0; k < S_BATCH; k++)
        if (d->slots[k] >= d->capacity || d->weights[k] != 1.0f)
            return "index out of range or weight not 1";
    return NULL;
}

static const char *s_check_sample(const s_data_t *d)
{
    float max = 0.0f;
    for (uint32_t k = 0; k < S_BATCH; k++) {
        if (d->slots[k] >= d->capacity || !(vl_sampler_get(d->sampler, d->slots[k]) > 0.0))
            return "slot out of range or of priority 0";
        if (!(d->weights[k] > 0.0f && d->weights[k] <= 1.0f))
            return "weight outside (0, 1]";
        max = d->weights[k] > max ? d->weights[k] : max;
    }
    return max == 1.0f ? NULL : "largest weight not 1";
}

/* Checks the tree's total against a plain sum of its leaves. */
static const char *s_check_set(const s_data_t *d)
{
    double sum = 0.0;
    for (uint32_t i = 0; i < d->capacity; i++)
        sum += vl_sampler_get(d->sampler, i);
    double total = vl_sampler_total(d->sampler);
    return fabs(total - sum) <= 1e-9 * sum ? NULL : "total differs from the sum of the leaves";
}

enum { S_UNIFORM, S_B04, S_B1, S_SET, S_OPS };

static const s_op_t s_ops[S_OPS] = {
    [S_UNIFORM] = {"uniform", s_run_uniform, s_check_uniform},
    [S_B04] = {"b=0.4", s_run_b04, s_check_sample},
    [S_B1] = {"b=1", s_run_b1, s_check_sample},
    [S_SET] = {"set", s_run_set, s_check_set},
};

/* ---- timing -------------------------------------------------------------- */

static void s_die(const s_data_t *d, const s_op_t *op, const char *why)
{
    fprintf(stderr, "vl_sampler_bench: capacity %u, %s: %s\n", d->capacity, op->name, why);
    exit(1);
}

/* Returns the seconds op takes per call over `loops` calls; checks its last
   output, exits on a failure. */
static double s_time_op(s_data_t *d, const s_op_t *op, uint64_t loops)
{
    double t0 = s_now();
    for (uint64_t l = 0; l < loops; l++)
        op->run(d);
    double elapsed = s_now() - t0;
    const char *why = op->check(d);
    if (why)
        s_die(d, op, why);
    return elapsed / (double)loops;
}

/* Returns the calls that take op about run_s. */
static uint64_t s_calibrate(s_data_t *d, const s_op_t *op, double run_s)
{
    uint64_t loops = 1;
    double s;
    while ((s = s_time_op(d, op, loops) * (double)loops) < run_s / 8)
        loops *= 2;
    double want = (double)loops * run_s / s;
    return want < 1 ? 1 : (uint64_t)want;
}

/* ---- cases --------------------------------------------------------------- */

static const uint32_t s_capacities[] = {4096, 65536};

/* Fills d for capacity slots of lognormal priorities. Returns 0 or -1. */
static int s_data_init(s_data_t *d, uint32_t capacity)
{
    memset(d, 0, sizeof *d);
    d->capacity = capacity;
    d->sampler = vl_sampler_new(capacity, S_SEED);
    if (!d->sampler)
        return -1;
    vl_rng_seed(&d->rng, S_SEED + 1);
    for (uint32_t i = 0; i < capacity; i++)
        vl_sampler_set(d->sampler, i, exp(vl_rng_normal(&d->rng)));
    for (uint32_t u = 0; u < S_UPDATES; u++) {
        d->update_slot[u] = vl_rng_below(&d->rng, capacity);
        d->update_p[u] = exp(vl_rng_normal(&d->rng));
    }
    return 0;
}

/* Measures one capacity: the best seconds per call of each op into s[]. */
static int s_bench_case(uint32_t capacity, double *s, int runs, double run_s)
{
    s_data_t *d = malloc(sizeof *d);
    if (!d || s_data_init(d, capacity) != 0) {
        if (d)
            vl_sampler_destroy(&d->sampler);
        free(d);
        return -1;
    }
    uint64_t loops[S_OPS];
    for (int op = 0; op < S_OPS; op++) {
        loops[op] = s_calibrate(d, &s_ops[op], run_s);
        s[op] = INFINITY;
    }
    // Runs interleave the operations, so a burst of load elsewhere on the
    // machine slows them alike and the ratios between them hold.
    for (int run = 0; run < runs; run++)
        for (int op = 0; op < S_OPS; op++)
            s[op] = fmin(s[op], s_time_op(d, &s_ops[op], loops[op]));
    vl_sampler_destroy(&d->sampler);
    free(d);
    return 0;
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: vl_sampler_bench [--quick] [--help]\n"
            "  Benchmarks vl_sampler_sample (minibatches of %d slots + weights) beside\n"
            "  %d uniform indices from vl_rng, and vl_sampler_set, at capacities 4096\n"
            "  and 65536.\n"
            "  --quick   %d short runs per figure instead of %d of %.1f s (for tests)\n"
            "  --help    this text\n",
            S_BATCH, S_BATCH, S_QUICK_RUNS, S_RUNS, S_RUN_S);
}

int main(int argc, char **argv)
{
    vl_bench_plan_t plan;
    int rc =
        vl_bench_parse(argc, argv, "vl_sampler_bench", s_usage, (vl_bench_plan_t){S_RUNS, S_RUN_S},
                       (vl_bench_plan_t){S_QUICK_RUNS, S_QUICK_RUN_S}, &plan);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    int runs = plan.runs;
    double run_s = plan.run_s;
    printf("minibatches of %d (indices + weights) per second, best of %d runs (thread CPU "
           "time):\n",
           S_BATCH, runs);
    printf("  %-9s %12s %12s %12s %10s %10s %13s  %s\n", "capacity", "uniform", "b=0.4", "b=1",
           "ns/draw", "x uniform", "updates/s", "target >= 200K minibatches/s");
    int failed = 0;
    for (size_t c = 0; c < sizeof s_capacities / sizeof s_capacities[0]; c++) {
        double s[S_OPS];
        if (s_bench_case(s_capacities[c], s, runs, run_s) != 0) {
            fprintf(stderr, "vl_sampler_bench: capacity %u: no memory\n", s_capacities[c]);
            failed = 1;
            continue;
        }
        double slow = fmax(s[S_B04], s[S_B1]); // the target holds at every beta
        printf("  %-9u %12.0f %12.0f %12.0f %10.1f %9.1fx %13.0f  %s\n", s_capacities[c],
               1 / s[S_UNIFORM], 1 / s[S_B04], 1 / s[S_B1], 1e9 * slow / S_BATCH,
               slow / s[S_UNIFORM], S_BATCH / s[S_SET], 1 / slow >= S_TARGET ? "met" : "missed");
    }
    return failed;
}
