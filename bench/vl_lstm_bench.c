/*  vl_lstm_bench: the LSTM layer (models/vl_lstm.c) beside PyTorch's
    nn.LSTM (bench/torch_lstm_bench.py, run first by this program so that
    the two never share the cores), on the same threads, in one run:
      learner update  the LSTM part of a learner's update: zero the
                      gradient, forward over B = 256 sequences of T = 32
                      steps, in = H = 256, from a given state, backward of
                      sum(y * w) for a fixed w, down to dx
      actor step      forward of B = 16 sequences of one step from a given
                      state (an actor's envs), no backward
    once with 1 thread and once with 2. Each figure is the best of S_RUNS
    runs of at least S_RUN_S s of wall clock, in ms per call; ratio =
    PyTorch's ms / volley's: above 1 is faster than PyTorch. The layer's
    outputs and gradients are checked finite before any figure is printed
    (its agreement with PyTorch is models/vl_lstm_test's). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vl_rng.h"
#include "messages/vl_codec.h"
#include "models/vl_lstm.h"
#include "vl_bench.h"

#define S_RUNS        5   // runs per figure; the best counts
#define S_RUN_S       1.0 // seconds per run at least
#define S_B           256 // a learner's minibatch of sequences
#define S_T           32  // steps per sequence
#define S_QUICK_B     16  // --quick, for tests: a small update
#define S_QUICK_T     4
#define S_IN          256
#define S_HIDDEN      256
#define S_ACTOR_B     16 // an actor's envs
#define S_MAX_THREADS 2

static const int s_threads[S_MAX_THREADS] = {1, 2};

typedef struct {
    double update, actor; // ms per call; 0 when not measured
} s_times_t;

/* What one timed call works on: a layer and one batch of sequences. */
typedef struct {
    vl_lstm_t *lstm;
    float *params, *grads;
    uint32_t B, T;
    float *x, *dx, *h0, *c0, *y, *dy, *hT, *cT;
    int failed;
} s_work_t;

static void s_usage(FILE *f)
{
    fprintf(f,
            "usage: vl_lstm_bench [--quick] [--help]\n"
            "  times the LSTM layer (models/vl_lstm.c, in %d, hidden %d): a learner update's\n"
            "  forward and backward over %d sequences of %d steps, and an actor's step at\n"
            "  batch %d, with 1 and 2 threads, beside torch.nn.LSTM on the same threads\n"
            "  (bench/torch_lstm_bench.py; $PYTHON, default /usr/bin/python3; VL_NO_TORCH=1\n"
            "  skips it).\n"
            "  --quick  one call per figure, %d sequences of %d steps (for tests)\n",
            S_IN, S_HIDDEN, S_B, S_T, S_ACTOR_B, S_QUICK_B, S_QUICK_T);
}

/* Writes n uniform floats in [-scale, scale] into v. */
static void s_fill(vl_rng_t *rng, size_t n, float scale, float *v)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (float)((2.0 * vl_rng_uniform(rng) - 1.0) * scale);
}

/* Makes w a layer with its arrays for B sequences of T steps. Returns 0 or -1. */
static int s_work_new(s_work_t *w, uint32_t B, uint32_t T, vl_rng_t *rng)
{
    size_t rows = (size_t)B * T;
    *w = (s_work_t){.B = B, .T = T, .lstm = vl_lstm_new(S_IN, S_HIDDEN)};
    if (!w->lstm)
        return -1;
    size_t n = vl_lstm_param_count(w->lstm);
    w->params = malloc(n * sizeof(float));
    w->grads = calloc(n, sizeof(float));
    w->x = malloc(rows * S_IN * sizeof(float));
    w->dx = malloc(rows * S_IN * sizeof(float));
    w->y = malloc(rows * S_HIDDEN * sizeof(float));
    w->dy = malloc(rows * S_HIDDEN * sizeof(float));
    w->h0 = malloc((size_t)B * S_HIDDEN * sizeof(float));
    w->c0 = malloc((size_t)B * S_HIDDEN * sizeof(float));
    w->hT = malloc((size_t)B * S_HIDDEN * sizeof(float));
    w->cT = malloc((size_t)B * S_HIDDEN * sizeof(float));
    if (!w->params || !w->grads || !w->x || !w->dx || !w->y || !w->dy || !w->h0 || !w->c0 ||
        !w->hT || !w->cT)
        return -1;
    vl_lstm_bind(w->lstm, w->params, w->grads);
    vl_lstm_init(w->lstm, rng);
    s_fill(rng, rows * S_IN, 1.0f, w->x);
    s_fill(rng, rows * S_HIDDEN, 1.0f, w->dy);
    s_fill(rng, (size_t)B * S_HIDDEN, 0.5f, w->h0);
    s_fill(rng, (size_t)B * S_HIDDEN, 0.5f, w->c0);
    return 0;
}

static void s_work_free(s_work_t *w)
{
    vl_lstm_destroy(&w->lstm);
    float *bufs[] = {w->params, w->grads, w->x, w->dx, w->y, w->dy, w->h0, w->c0, w->hT, w->cT};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
}

static void s_actor(void *arg)
{
    s_work_t *w = arg;
    w->failed |=
        vl_lstm_forward(w->lstm, w->B, w->T, w->x, w->h0, w->c0, NULL, w->y, w->hT, w->cT) != 0;
}

static void s_update(void *arg)
{
    s_work_t *w = arg;
    memset(w->grads, 0, vl_lstm_param_count(w->lstm) * sizeof(float));
    s_actor(w);
    w->failed |= vl_lstm_backward(w->lstm, w->dy, w->dx) != 0;
}

/* Returns 1 if n floats are all finite. */
static int s_finite(size_t n, const float *v)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* Times volley's figures for each thread count into t[]. Returns 0, or -1
   after printing why. */
static int s_run_volley(const vl_bench_plan_t *plan, uint32_t B, uint32_t T, s_times_t *t)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, 1);
    s_work_t learner, actor;
    int rc = -1;
    if (s_work_new(&learner, B, T, &rng) != 0 || s_work_new(&actor, S_ACTOR_B, 1, &rng) != 0) {
        printf("vl_lstm_bench: no memory\n");
        goto done;
    }
    for (int i = 0; i < S_MAX_THREADS; i++) {
        omp_set_num_threads(s_threads[i]);
        t[i].update = vl_bench_best_ms(plan->runs, plan->run_s, s_update, &learner);
        t[i].actor = vl_bench_best_ms(plan->runs, plan->run_s, s_actor, &actor);
    }
    size_t n = vl_lstm_param_count(learner.lstm);
    if (learner.failed || actor.failed || !s_finite(n, learner.grads) ||
        !s_finite((size_t)B * T * S_IN, learner.dx) ||
        !s_finite((size_t)S_ACTOR_B * S_HIDDEN, actor.hT)) {
        printf("vl_lstm_bench: the layer failed or gave a non-finite output\n");
        goto done;
    }
    rc = 0;
done:
    s_work_free(&learner);
    s_work_free(&actor);
    return rc;
}

/* Takes one of torch_lstm_bench.py's figure lines into the s_times_t[] at
   arg. Returns 1 if it was one. */
static int s_torch_line(const char *line, void *arg)
{
    s_times_t *t = arg;
    int th;
    double update, actor;
    if (sscanf(line, "torch threads=%d update_ms=%lf actor_ms=%lf", &th, &update, &actor) != 3 ||
        th < 1 || th > S_MAX_THREADS)
        return 0;
    t[th - 1] = (s_times_t){update, actor};
    return 1;
}

/* Runs torch_lstm_bench.py on the same sizes, threads and plan into t[].
   Returns 0, or -1 after printing why (the table then shows no ratios). */
static int s_run_torch(const vl_bench_plan_t *plan, uint32_t B, uint32_t T, s_times_t *t)
{
    char args[512];
    snprintf(args, sizeof args,
             "--batch %u --steps %u --in %d --hidden %d --actor-batch %d --threads 1,2 --runs %d "
             "--run-s %g",
             B, T, S_IN, S_HIDDEN, S_ACTOR_B, plan->runs, plan->run_s);
    if (vl_bench_torch(VL_TORCH_SCRIPT, S_MAX_THREADS, args, S_MAX_THREADS, s_torch_line, t) != 0) {
        memset(t, 0, S_MAX_THREADS * sizeof *t);
        return -1;
    }
    return 0;
}

/* Prints one row: volley's ms, PyTorch's and the ratio ("-" where missing). */
static void s_row(const char *name, double ms, double torch_ms)
{
    vl_bench_row(40, name, ms, torch_ms);
    printf("\n");
}

/* Returns the wire bytes of one segment of T steps of cartpole-masked's
   observations (2 floats) with a recurrent state of state floats (a
   trained state's values: dense, as compressible as noise), or 0. */
static size_t s_segment_bytes(uint32_t T, uint32_t state)
{
    vl_obs_spec_t obs = vl_obs_spec_flat(2);
    vl_segment_t seg = {.actor_id = 1, .horizon = T, .state_size = state};
    snprintf(seg.policy_id, sizeof seg.policy_id, "default");
    seg.action = vl_action_discrete(2);
    size_t cap = vl_segment_arrays_size(T, &obs, 1, state), bytes = 0;
    void *arrays = vl_segment_set_spec(&seg, &obs) == 0 ? calloc(1, cap) : NULL;
    if (!arrays)
        return 0;
    vl_segment_bind(&seg, arrays);
    vl_rng_t rng;
    vl_rng_seed(&rng, 3);
    float x = 0, th = 0;
    for (uint32_t t = 0; t <= T; t++) { // a pole's slow drift, as the env writes it
        x += 0.01f * (float)(vl_rng_uniform(&rng) - 0.5),
            th += 0.02f * (float)(vl_rng_uniform(&rng) - 0.5);
        ((float *)seg.obs)[2 * t] = x, ((float *)seg.obs)[2 * t + 1] = th;
    }
    for (uint32_t t = 0; t < T; t++) {
        seg.actions[t] = (float)(vl_rng_next(&rng) & 1);
        seg.rewards[t] = 1.0f;
        seg.logp[t] = -0.69f + 0.01f * (float)vl_rng_uniform(&rng);
    }
    for (uint32_t k = 0; k < state; k++)
        seg.state[k] = (float)(2.0 * vl_rng_uniform(&rng) - 1.0);
    uint8_t *wire = NULL;
    if (vl_segment_encode(&seg, &wire, &bytes) != 0)
        bytes = 0;
    free(wire);
    free(arrays);
    return bytes;
}

/* Prints the wire bytes of a segment with the stored state beside without. */
static void s_wire_bytes(void)
{
    static const uint32_t hidden[] = {0, 64, 256};
    size_t without = s_segment_bytes(64, 0);
    printf("wire bytes of one segment (T=64, cartpole-masked's 2 floats an observation, LZ4):\n");
    for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++) {
        size_t bytes = i ? s_segment_bytes(64, 2 * hidden[i]) : without;
        char name[64];
        snprintf(name, sizeof name, hidden[i] ? "with an lstm(%u) state" : "without a state",
                 hidden[i]);
        printf("  %-28s %6zu bytes  %.2fx\n", name, bytes, without ? (double)bytes / without : 0);
    }
}

int main(int argc, char **argv)
{
    vl_bench_plan_t plan, full = {S_RUNS, S_RUN_S}, quick = {1, 0.0};
    int parsed = vl_bench_parse(argc, argv, "vl_lstm_bench", s_usage, full, quick, &plan);
    if (parsed)
        return parsed == 1 ? 0 : 2;
    int is_quick = plan.runs == quick.runs && plan.run_s == quick.run_s;
    uint32_t B = is_quick ? S_QUICK_B : S_B, T = is_quick ? S_QUICK_T : S_T;
    printf("vl_lstm_bench: LSTM in %d, hidden %d; best of %d run%s of %g s\n", S_IN, S_HIDDEN,
           plan.runs, plan.runs == 1 ? "" : "s", plan.run_s);
    s_times_t torch[S_MAX_THREADS] = {{0}}, mine[S_MAX_THREADS] = {{0}};
    const char *no_torch = getenv("VL_NO_TORCH");
    if (!no_torch || strcmp(no_torch, "1") != 0)
        s_run_torch(&plan, B, T, torch); // first, so the two never share the cores
    if (s_run_volley(&plan, B, T, mine) != 0)
        return 1;
    printf("%-40s %10s %10s %9s\n", "case (ms per call)", "volley", "torch", "ratio");
    for (int i = 0; i < S_MAX_THREADS; i++) {
        char name[64];
        snprintf(name, sizeof name, "learner update B=%u T=%u, %d thread%s", B, T, s_threads[i],
                 s_threads[i] == 1 ? "" : "s");
        s_row(name, mine[i].update, torch[i].update);
        snprintf(name, sizeof name, "actor step B=%d T=1, %d thread%s", S_ACTOR_B, s_threads[i],
                 s_threads[i] == 1 ? "" : "s");
        s_row(name, mine[i].actor, torch[i].actor);
    }
    printf("ratio = torch ms / volley ms: above 1 is faster than PyTorch\n");
    s_wire_bytes();
    return 0;
}
