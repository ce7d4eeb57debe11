/*  vl_vtrace_bench: vl_vtrace beside the plain per-segment loop it replaced
    and beside memcpy of the same bytes, in the same run on the same inputs
    (lz4's tests/fullbench.c is the model).

    Each case is a batch of n segments of horizon T: values ~ N(0, 1),
    rewards ~ N(0, 1), a done with probability 5%, a fifth of them truncated
    (1% of steps) with a bootstrap value ~ N(0, 1), log ratios uniform in
    [-1, 1]. Operations, each timed over the whole batch:
      vl_vtrace       store/vtrace.c (every done a termination)
      vl_vtrace_boot  the same with the truncations' bootstrap values: it
                      reads 4 B more per element; its target, at 4096 x 128,
                      is >= 0.9x vl_vtrace's speed
      plain loop      the per-segment backward loop with expf, as vtrace.c
                      was before it was vectorised: the reference
      memcpy          a copy moving as many bytes as vl_vtrace must (it reads
                      values, rewards, dones and log ratios and writes vs and
                      pg_adv: 24 B per element, so memcpy copies 12): the
                      memory-bandwidth floor
    A run repeats an operation for at least S_RUN_S of thread CPU time; the
    best of S_RUNS runs counts. vl_vtrace and vl_vtrace_boot share their
    runs, taking turns call by call, so that their ratio is not the
    machine's mood between two runs (see s_time_pair). Before a figure is
    printed its output is checked: vl_vtrace's and vl_vtrace_boot's against
    the plain loop's, without and with the bootstraps (largest difference
    relative to max(1, |reference|) below S_TOL, or the bench aborts), the
    copy byte for byte. ns/element = seconds per batch / (n T). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/vl_rng.h"
#include "store/vtrace.h"

#define S_RUNS        5   // runs per operation; the best counts
#define S_RUN_S       0.1 // seconds per run at least: long enough to hide the clock
#define S_QUICK_RUNS  2   // --quick, for tests
#define S_QUICK_RUN_S 0.005
#define S_TOL         1e-4 // largest difference from the plain loop, relative to max(1, |ref|)
#define S_TARGET_NS   1.0  // the target at 4096 x 128, ns per element
#define S_BOOT_TARGET 0.9  // vl_vtrace_boot's speed as a share of vl_vtrace's, at least
#define S_DONE_PROB   0.05
#define S_TRUNC_PROB  0.2 // of the dones: 1% of steps truncated
#define S_SEED        1

static const vl_vtrace_params_t s_params = {
    .gamma = 0.99f, .lambda = 0.95f, .rho_bar = 1.0f, .c_bar = 1.0f, .pg_rho_bar = 1.0f};

typedef struct {
    const char *name;
    int n, T;
    int target; // the shape: print met / missed against S_TARGET_NS
} s_case_t;

static const s_case_t s_cases[] = {
    {.name = "4096x128", .n = 4096, .T = 128, .target = 1},
    {.name = "4093x127", .n = 4093, .T = 127}, // neither a multiple of 4
    {.name = "256x128", .n = 256, .T = 128},   // fits in L2
    {.name = "64x2048", .n = 64, .T = 2048},   // long segments
};

#define S_N_CASES (sizeof s_cases / sizeof s_cases[0])

/* One case's inputs and outputs. */
typedef struct {
    int n, T;
    float *values, *rewards, *dones, *log_rhos; // [n][T+1], then [n][T] each
    float *boot;                                // [n][T]: nonzero where truncated
    float *vs, *pg_adv;                         // [n][T], written by the operation
    char *copy_src, *copy_dst;                  // copy_bytes each, for memcpy
    size_t copy_bytes;                          // half the bytes vl_vtrace moves
} s_data_t;

typedef void(s_op_fn)(s_data_t *d);

/* ---- the operations ------------------------------------------------------ */

static void s_op_vtrace(s_data_t *d)
{
    vl_vtrace(&s_params, d->n, d->T, d->values, d->rewards, d->dones, d->log_rhos, d->vs,
              d->pg_adv);
}

static void s_op_vtrace_boot(s_data_t *d)
{
    vl_vtrace_boot(&s_params, d->n, d->T, d->values, d->rewards, d->dones, d->boot, d->log_rhos,
                   d->vs, d->pg_adv);
}

/* The plain loop: store/vtrace.c before vectorising, one backward pass
   per segment with expf; with boot (not NULL) it is vl_vtrace_boot's
   reference, untimed. Inlined, so the timed copy has no boot at all. */
static inline float s_clip(float clip, float x)
{
    return clip < x ? clip : x;
}

static inline void s_plain_segment(const vl_vtrace_params_t *p, int T, const float *v,
                                   const float *r, const float *done, const float *boot,
                                   const float *log_rho, float *vs, float *pg_adv)
{
    float acc = 0.0f;
    float next_vs = v[T];
    for (int t = T - 1; t >= 0; t--) {
        float ratio = expf(log_rho[t]);
        float disc = p->gamma * (1.0f - done[t]);
        float rt = boot ? r[t] + p->gamma * boot[t] : r[t]; // boot is 0 but where truncated
        float rho = s_clip(p->rho_bar, ratio);
        float c = p->lambda * s_clip(p->c_bar, ratio);
        float delta = rho * (rt + disc * v[t + 1] - v[t]);
        acc = delta + disc * c * acc;
        pg_adv[t] = s_clip(p->pg_rho_bar, ratio) * (rt + disc * next_vs - v[t]);
        next_vs = v[t] + acc;
        vs[t] = next_vs;
    }
}

static inline void s_plain(const vl_vtrace_params_t *p, int n, int T, const float *values,
                           const float *rewards, const float *dones, const float *boot,
                           const float *log_rhos, float *vs, float *pg_adv)
{
    for (int i = 0; i < n && T > 0; i++) {
        long row = (long)i * T;
        s_plain_segment(p, T, values + row + i, rewards + row, dones + row,
                        boot ? boot + row : NULL, log_rhos + row, vs + row, pg_adv + row);
    }
}

static void s_op_plain(s_data_t *d)
{
    s_plain(&s_params, d->n, d->T, d->values, d->rewards, d->dones, NULL, d->log_rhos, d->vs,
            d->pg_adv);
}

/* vl_vtrace_boot's reference: not timed. */
static void s_plain_boot(s_data_t *d)
{
    s_plain(&s_params, d->n, d->T, d->values, d->rewards, d->dones, d->boot, d->log_rhos, d->vs,
            d->pg_adv);
}

static void s_op_memcpy(s_data_t *d)
{
    memcpy(d->copy_dst, d->copy_src, d->copy_bytes);
}

typedef struct {
    const char *name;
    s_op_fn *fn;
} s_op_t;

static const s_op_t s_ops[] = {
    {.name = "vl_vtrace", .fn = s_op_vtrace},
    {.name = "vl_vtrace_boot", .fn = s_op_vtrace_boot},
    {.name = "plain loop", .fn = s_op_plain},
    {.name = "memcpy", .fn = s_op_memcpy},
};

#define S_N_OPS (sizeof s_ops / sizeof s_ops[0])
enum { S_VTRACE, S_VTRACE_BOOT, S_PLAIN, S_MEMCPY };

/* ---- data, timing, checks ------------------------------------------------ */

/* Fills d for a case; returns 0, or -1 when memory runs out. */
static int s_data_new(s_data_t *d, const s_case_t *c)
{
    size_t nt = (size_t)c->n * c->T;
    *d = (s_data_t){.n = c->n, .T = c->T};
    d->values = malloc(((size_t)c->n * (c->T + 1)) * sizeof(float));
    d->rewards = malloc(nt * sizeof(float));
    d->dones = malloc(nt * sizeof(float));
    d->log_rhos = malloc(nt * sizeof(float));
    d->boot = malloc(nt * sizeof(float));
    d->vs = malloc(nt * sizeof(float));
    d->pg_adv = malloc(nt * sizeof(float));
    d->copy_bytes = (nt * 6 + (size_t)c->n) * sizeof(float) / 2;
    d->copy_src = malloc(d->copy_bytes);
    d->copy_dst = malloc(d->copy_bytes);
    if (!d->values || !d->rewards || !d->dones || !d->log_rhos || !d->boot || !d->vs ||
        !d->pg_adv || !d->copy_src || !d->copy_dst)
        return -1;
    vl_rng_t rng;
    vl_rng_seed(&rng, S_SEED);
    for (size_t k = 0; k < (size_t)c->n * (c->T + 1); k++)
        d->values[k] = (float)vl_rng_normal(&rng);
    for (size_t k = 0; k < nt; k++) {
        d->rewards[k] = (float)vl_rng_normal(&rng);
        d->dones[k] = vl_rng_uniform(&rng) < S_DONE_PROB ? 1.0f : 0.0f;
        d->log_rhos[k] = (float)(2 * vl_rng_uniform(&rng) - 1);
    }
    for (size_t k = 0; k < d->copy_bytes; k++)
        d->copy_src[k] = (char)vl_rng_next(&rng);
    vl_rng_seed(&rng, S_SEED + 1); // the truncations apart: vl_vtrace's inputs as they were
    for (size_t k = 0; k < nt; k++)
        d->boot[k] = d->dones[k] != 0 && vl_rng_uniform(&rng) < S_TRUNC_PROB
                         ? (float)vl_rng_normal(&rng)
                         : 0.0f;
    return 0;
}

static void s_data_free(s_data_t *d)
{
    free(d->values);
    free(d->rewards);
    free(d->dones);
    free(d->log_rhos);
    free(d->boot);
    free(d->vs);
    free(d->pg_adv);
    free(d->copy_src);
    free(d->copy_dst);
}

/* Returns this thread's CPU time in seconds. */
static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Returns the best seconds per call of fn over runs runs of run_s each. */
static double s_time(s_op_fn *fn, s_data_t *d, int runs, double run_s)
{
    double best = INFINITY;
    for (int run = 0; run < runs; run++) {
        long calls = 0;
        double start = s_now(), elapsed;
        do {
            fn(d);
            calls++;
            elapsed = s_now() - start;
        } while (elapsed < run_s);
        best = fmin(best, elapsed / (double)calls);
    }
    return best;
}

/* As s_time for two operations taking turns call by call, so that each
   meets the caches (and a busy neighbour) as the other does: run one
   after the other, the first op of a case pays for what ran before it for
   tens of milliseconds. Writes the best seconds per call of each, and
   returns the median over runs of a's time / b's time within a run (b's
   speed relative to a's), steadier on a shared machine than the ratio of
   two bests, which may come from different runs. */
static double s_time_pair(s_op_fn *a, s_op_fn *b, s_data_t *d, int runs, double run_s,
                          double *best_a, double *best_b)
{
    double ratio[S_RUNS > S_QUICK_RUNS ? S_RUNS : S_QUICK_RUNS];
    *best_a = *best_b = INFINITY;
    a(d); // the first call faults the outputs' pages in: not a's cost
    b(d);
    for (int run = 0; run < runs; run++) {
        long calls = 0;
        double start = s_now(), t = start, spent_a = 0, spent_b = 0;
        do {
            a(d);
            double mid = s_now();
            b(d);
            double end = s_now();
            spent_a += mid - t;
            spent_b += end - mid;
            t = end;
            calls++;
        } while (t - start < run_s);
        *best_a = fmin(*best_a, spent_a / (double)calls);
        *best_b = fmin(*best_b, spent_b / (double)calls);
        ratio[run] = spent_a / spent_b;
        for (int k = run; k > 0 && ratio[k - 1] > ratio[k]; k--) { // insertion sort
            double x = ratio[k];
            ratio[k] = ratio[k - 1];
            ratio[k - 1] = x;
        }
    }
    return runs % 2 ? ratio[runs / 2] : (ratio[runs / 2 - 1] + ratio[runs / 2]) / 2;
}

/* Returns the largest |a - ref| / max(1, |ref|) over count floats; NaN
   anywhere makes it NaN. */
static double s_max_diff(const float *a, const float *ref, size_t count)
{
    double worst = 0;
    for (size_t k = 0; k < count; k++) {
        double diff = fabs((double)a[k] - ref[k]) / fmax(1.0, fabs((double)ref[k]));
        if (!(diff <= worst))
            worst = diff; // a NaN diff sticks
    }
    return worst;
}

/* Checks op's output against ref's (run on the same data), as the header
   says; returns the largest difference, or -1 after saying why. */
static double s_check(const s_case_t *c, s_data_t *d, s_op_fn *op, s_op_fn *ref, float *ref_vs,
                      float *ref_pg, const char *name)
{
    size_t nt = (size_t)c->n * c->T;
    ref(d);
    memcpy(ref_vs, d->vs, nt * sizeof(float));
    memcpy(ref_pg, d->pg_adv, nt * sizeof(float));
    op(d);
    double diff = fmax(s_max_diff(d->vs, ref_vs, nt), s_max_diff(d->pg_adv, ref_pg, nt));
    if (!(diff < S_TOL)) {
        fprintf(stderr, "%s: %s differs from the plain loop by %g\n", c->name, name, diff);
        return -1;
    }
    return diff;
}

/* Runs one case: times every operation, checks vl_vtrace against the plain
   loop and the copy against its source; returns 0, or -1 on a mismatch. */
static int s_run_case(const s_case_t *c, int runs, double run_s, int *target_met)
{
    s_data_t d;
    if (s_data_new(&d, c) != 0) {
        fprintf(stderr, "%s: out of memory\n", c->name);
        s_data_free(&d);
        return -1;
    }
    size_t nt = (size_t)c->n * c->T;
    float *ref_vs = malloc(nt * sizeof(float)), *ref_pg = malloc(nt * sizeof(float));
    double s[S_N_OPS];
    int rc = -1;
    if (!ref_vs || !ref_pg)
        goto done;
    double speed = s_time_pair(s_op_vtrace, s_op_vtrace_boot, &d, runs, run_s, &s[S_VTRACE],
                               &s[S_VTRACE_BOOT]);
    for (size_t op = S_PLAIN; op < S_N_OPS; op++)
        s[op] = s_time(s_ops[op].fn, &d, runs, run_s);
    double diff = s_check(c, &d, s_op_vtrace, s_op_plain, ref_vs, ref_pg, "vl_vtrace");
    double diff_boot =
        s_check(c, &d, s_op_vtrace_boot, s_plain_boot, ref_vs, ref_pg, "vl_vtrace_boot");
    if (diff < 0 || diff_boot < 0)
        goto done;
    if (memcmp(d.copy_dst, d.copy_src, d.copy_bytes) != 0) {
        fprintf(stderr, "%s: memcpy output differs\n", c->name);
        goto done;
    }
    double moved = 2.0 * (double)d.copy_bytes;
    for (size_t op = 0; op < S_N_OPS; op++)
        printf("%-10s %-14s %8.3f ns/element %8.1f Melements/s %7.2f GB/s\n", c->name,
               s_ops[op].name, 1e9 * s[op] / (double)nt, 1e-6 * (double)nt / s[op],
               1e-9 * moved / s[op]);
    printf("%-10s vl_vtrace is %.1fx the plain loop, %.2fx the memcpy floor; max diff %.3g\n",
           c->name, s[S_PLAIN] / s[S_VTRACE], s[S_VTRACE] / s[S_MEMCPY], diff);
    printf("%-10s vl_vtrace_boot %.3f ns/element vs vl_vtrace %.3f (best runs): speed %.2fx "
           "(median run)",
           c->name, 1e9 * s[S_VTRACE_BOOT] / (double)nt, 1e9 * s[S_VTRACE] / (double)nt, speed);
    if (c->target)
        printf(" (target >= %.1fx: %s)", S_BOOT_TARGET, speed >= S_BOOT_TARGET ? "met" : "missed");
    printf("; max diff %.3g\n", diff_boot);
    if (c->target) {
        double ns = 1e9 * s[S_VTRACE] / (double)nt;
        *target_met = ns <= S_TARGET_NS;
        printf("%-10s target <= %.1f ns/element: %s (%.3f)\n", c->name, S_TARGET_NS,
               *target_met ? "met" : "missed", ns);
    }
    printf("\n");
    rc = 0;
done:
    free(ref_vs);
    free(ref_pg);
    s_data_free(&d);
    return rc;
}

int main(int argc, char **argv)
{
    int runs = S_RUNS, target_met = 0;
    double run_s = S_RUN_S;
    if (argc == 2 && strcmp(argv[1], "--quick") == 0) {
        runs = S_QUICK_RUNS;
        run_s = S_QUICK_RUN_S;
    } else if (argc != 1) {
        fprintf(stderr,
                "usage: %s [--quick]   (--quick: %d runs of %g s, for tests; default %d "
                "of %g s)\n",
                argv[0], S_QUICK_RUNS, S_QUICK_RUN_S, S_RUNS, S_RUN_S);
        return 2;
    }
    printf("V-trace, best of %d runs of >= %g s (thread CPU time); GB/s = the %d bytes per "
           "element vl_vtrace reads and writes, per second\n\n",
           runs, run_s, 24);
    for (size_t k = 0; k < S_N_CASES; k++)
        if (s_run_case(&s_cases[k], runs, run_s, &target_met) != 0)
            return 1;
    return 0;
}
