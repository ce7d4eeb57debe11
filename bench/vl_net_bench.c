/*  vl_net_bench: the model engine (models/vl_net.c) itself, timed on the cnn
    preset over 4x84x84 u8 frames with 6 actions, beside PyTorch on the same
    network (the Nature conv torso, linear 512, heads of 6 and 1: bench/
    torch_conv_bench.py --actions 6, run first by this program so that the
    two never share the cores), on the same threads, in one run:
      learner update   batch 256: zero_grad, forward, backward from fixed
                       output gradients, an Adam step over the flat arrays
                       (models/vl_adam.h) and params_changed
      learner fwd+bwd  the same without the Adam step
      actor forward    batch 16 (an actor's envs): ms per call and per env step
    Each figure is the best of S_RUNS runs of at least S_RUN_S s of wall
    clock, in ms per call; ratio = PyTorch's ms / volley's: above 1 is faster
    than PyTorch. The engine's outputs are checked finite before any figure is
    printed (its agreement with a reference is models/vl_net_test's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/vl_rng.h"
#include "models/vl_adam.h"
#include "models/vl_model_spec.h"
#include "models/vl_net.h"
#include "vl_bench.h"

#define S_RUNS          5   // runs per figure; the best counts
#define S_RUN_S         1.0 // seconds per run at least
#define S_QUICK_RUNS    1   // --quick, for tests: one call per figure
#define S_QUICK_RUN_S   0.0
#define S_LEARNER_BATCH 256 // a learner's minibatch
#define S_QUICK_BATCH   32  // --quick's learner batch, to keep the test short
#define S_ACTOR_BATCH   16  // an actor's envs
#define S_ACTIONS       6
#define S_C             4 // frames: 4 stacked 84x84 greyscale, as Nature DQN's
#define S_H             84
#define S_W             84
#define S_LR            2.5e-4f // CleanRL's Atari PPO; the figure does not depend on it

typedef struct {
    int runs;
    double run_s;
    int learner_batch;
    int threads;
    int torch; // run PyTorch beside
} s_opts_t;

typedef struct {
    double update, fwdbwd, fwd; // ms per call; 0 when not measured
} s_times_t;

/* What one timed call works on. */
typedef struct {
    vl_net_t *net;
    vl_adam_t *adam;
    uint32_t n;
    float *obs, *logits, *values, *dlogits, *dvalues;
    int failed;
} s_work_t;

static void s_usage(FILE *f)
{
    fprintf(f,
            "usage: vl_net_bench [--threads N] [--quick] [--no-torch] [--help]\n"
            "  times the model engine (models/vl_net.c) on the cnn preset over 4x84x84 u8\n"
            "  frames with %d actions: a learner update at batch %d (forward, backward,\n"
            "  Adam), forward+backward alone, and an actor forward at batch %d, beside\n"
            "  PyTorch on the same network and threads (bench/torch_conv_bench.py;\n"
            "  $PYTHON, default /usr/bin/python3).\n"
            "  --threads N  threads for both (default 2)\n"
            "  --quick      one call per figure, learner batch %d (for tests)\n"
            "  --no-torch   volley's figures alone\n",
            S_ACTIONS, S_LEARNER_BATCH, S_ACTOR_BATCH, S_QUICK_BATCH);
}

/* Parses the flags into *o. Returns 0 to run, 1 after --help, 2 on a bad flag. */
static int s_parse(int argc, char **argv, s_opts_t *o)
{
    *o = (s_opts_t){S_RUNS, S_RUN_S, S_LEARNER_BATCH, 2, 1};
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--quick") == 0) {
            o->runs = S_QUICK_RUNS, o->run_s = S_QUICK_RUN_S, o->learner_batch = S_QUICK_BATCH;
        } else if (strcmp(argv[i], "--no-torch") == 0) {
            o->torch = 0;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            long t = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || t < 1 || t > 1024) {
                fprintf(stderr, "vl_net_bench: --threads '%s': expected a count 1..1024\n",
                        argv[i]);
                return 2;
            }
            o->threads = (int)t;
        } else if (strcmp(argv[i], "--help") == 0) {
            s_usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "vl_net_bench: unknown argument '%s'%s; see --help\n", argv[i],
                    strcmp(argv[i], "--threads") == 0 ? " (needs a count)" : "");
            return 2;
        }
    }
    return 0;
}

/* Returns the best ms per call of fn over the plan's runs (one warm-up
   call first: it builds the batch size's primitives). */
static double s_best_ms(const s_opts_t *o, void (*fn)(void *), s_work_t *w)
{
    return vl_bench_best_ms(o->runs, o->run_s, fn, w);
}

static void s_fwd(void *arg)
{
    s_work_t *w = arg;
    w->failed |= vl_net_forward(w->net, w->n, w->obs, w->logits, w->values) != 0;
}

static void s_fwdbwd(void *arg)
{
    s_work_t *w = arg;
    vl_net_zero_grad(w->net);
    s_fwd(w);
    w->failed |= vl_net_backward(w->net, w->n, w->dlogits, w->dvalues) != 0;
}

static void s_update(void *arg)
{
    s_work_t *w = arg;
    s_fwdbwd(w);
    vl_adam_step(w->adam, vl_net_params(w->net), vl_net_grads(w->net), S_LR);
    vl_net_params_changed(w->net);
}

/* Fills w's arrays for n observations: u8 frames, output gradients in [-1, 1). */
static int s_work_fill(s_work_t *w, uint32_t n, vl_rng_t *rng)
{
    size_t dim = vl_net_obs_dim(w->net);
    w->n = n;
    w->obs = malloc(n * dim * sizeof(float));
    w->logits = malloc((size_t)n * S_ACTIONS * sizeof(float));
    w->dlogits = malloc((size_t)n * S_ACTIONS * sizeof(float));
    w->values = malloc(n * sizeof(float));
    w->dvalues = malloc(n * sizeof(float));
    if (!w->obs || !w->logits || !w->dlogits || !w->values || !w->dvalues)
        return -1;
    for (size_t i = 0; i < n * dim; i++)
        w->obs[i] = (float)vl_rng_below(rng, 256);
    for (size_t i = 0; i < (size_t)n * S_ACTIONS; i++)
        w->dlogits[i] = (float)(2 * vl_rng_uniform(rng) - 1);
    for (uint32_t i = 0; i < n; i++)
        w->dvalues[i] = (float)(2 * vl_rng_uniform(rng) - 1);
    return 0;
}

static void s_work_free(s_work_t *w)
{
    free(w->obs), free(w->logits), free(w->dlogits), free(w->values), free(w->dvalues);
}

/* Returns 1 if the last forward's outputs are all finite. */
static int s_finite(const s_work_t *w)
{
    for (size_t i = 0; i < (size_t)w->n * S_ACTIONS; i++)
        if (!isfinite(w->logits[i]))
            return 0;
    for (uint32_t i = 0; i < w->n; i++)
        if (!isfinite(w->values[i]))
            return 0;
    return 1;
}

/* Times volley's three figures into *t. Returns 0, or -1 after printing why. */
static int s_run_volley(const s_opts_t *o, const vl_model_spec_t *spec, s_times_t *t)
{
    vl_obs_spec_t obs = {.n_fields = 1};
    obs.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_U8, .ndim = 3, .shape = {S_C, S_H, S_W}};
    char err[256];
    s_work_t learner = {0}, actor = {0};
    vl_rng_t rng;
    vl_rng_seed(&rng, 1);
    learner.net = vl_net_new(spec, &obs, S_ACTIONS, o->threads, err, sizeof err);
    if (!learner.net) {
        printf("vl_net_bench: %s\n", err);
        return -1;
    }
    actor.net = learner.net;
    int rc = -1;
    if (vl_net_init(learner.net, &rng) != 0 ||
        !(learner.adam = vl_adam_new(vl_net_param_count(learner.net))) ||
        s_work_fill(&learner, (uint32_t)o->learner_batch, &rng) != 0 ||
        s_work_fill(&actor, S_ACTOR_BATCH, &rng) != 0) {
        printf("vl_net_bench: no memory\n");
        goto done;
    }
    t->fwdbwd = s_best_ms(o, s_fwdbwd, &learner);
    t->update = s_best_ms(o, s_update, &learner);
    int ok = !learner.failed && s_finite(&learner);
    t->fwd = s_best_ms(o, s_fwd, &actor);
    if (!ok || actor.failed || !s_finite(&actor)) {
        printf("vl_net_bench: the engine failed or gave a non-finite output\n");
        goto done;
    }
    rc = 0;
done:
    vl_adam_destroy(&learner.adam);
    vl_net_destroy(&learner.net);
    s_work_free(&learner);
    s_work_free(&actor);
    return rc;
}

/* The figures torch_conv_bench.py gives, and the batches they are for. */
typedef struct {
    s_times_t *t;
    int learner_batch;
} s_torch_t;

/* Takes one of torch_conv_bench.py's figure lines into the s_torch_t at arg.
   Returns 1 if it was one of the batches asked for. */
static int s_torch_line(const char *line, void *arg)
{
    s_torch_t *w = arg;
    int th, n;
    double fwd, fwdbwd, conv1, update;
    if (sscanf(line,
               "torch threads=%d batch=%d fwd_ms=%lf fwdbwd_ms=%lf conv1_ms=%lf update_ms=%lf", &th,
               &n, &fwd, &fwdbwd, &conv1, &update) != 6)
        return 0;
    if (n == w->learner_batch) {
        w->t->update = update, w->t->fwdbwd = fwdbwd;
        return 1;
    }
    if (n == S_ACTOR_BATCH) {
        w->t->fwd = fwd;
        return 1;
    }
    return 0;
}

/* Runs torch_conv_bench.py --actions on the same spec, threads and
   batches; fills *learner (update, fwdbwd) and *actor (fwd). Returns 0, or
   -1 after printing why (the table then shows no ratios). */
static int s_run_torch(const s_opts_t *o, const char *canon, s_times_t *t)
{
    char args[VL_MODEL_TEXT_MAX + 512];
    snprintf(args, sizeof args,
             "--spec '%s' --shape %d,%d,%d --threads %d --batches %d,%d --runs %d --run-s %g "
             "--actions %d",
             canon, S_C, S_H, S_W, o->threads, o->learner_batch, S_ACTOR_BATCH, o->runs, o->run_s,
             S_ACTIONS);
    s_torch_t w = {t, o->learner_batch};
    if (vl_bench_torch(VL_TORCH_SCRIPT, o->threads, args, 2, s_torch_line, &w) != 0) {
        memset(t, 0, sizeof *t);
        return -1;
    }
    return 0;
}

/* Prints one row: volley's ms, PyTorch's and the ratio ("-" where missing),
   and per env step when per_step > 0. */
static void s_row(const char *name, double ms, double torch_ms, int per_step)
{
    vl_bench_row(34, name, ms, torch_ms);
    if (per_step)
        printf("   per env step: volley %.4f ms, torch %s", ms / per_step, torch_ms > 0 ? "" : "-");
    if (per_step && torch_ms > 0)
        printf("%.4f ms", torch_ms / per_step);
    printf("\n");
}

int main(int argc, char **argv)
{
    s_opts_t o;
    int parsed = s_parse(argc, argv, &o);
    if (parsed)
        return parsed == 1 ? 0 : 2;
    char err[256], canon[VL_MODEL_TEXT_MAX + 1];
    vl_model_spec_t *spec = vl_model_spec_parse("cnn", err, sizeof err);
    if (!spec || vl_model_spec_format(spec, canon, sizeof canon) < 0) {
        fprintf(stderr, "vl_net_bench: cnn: %s\n", err);
        return 1;
    }
    printf("vl_net_bench: cnn (%s) on %dx%dx%d u8 frames, %d actions, %d thread%s; best of %d "
           "run%s of %g s\n",
           canon, S_C, S_H, S_W, S_ACTIONS, o.threads, o.threads == 1 ? "" : "s", o.runs,
           o.runs == 1 ? "" : "s", o.run_s);
    s_times_t torch = {0}, mine = {0};
    if (o.torch)
        s_run_torch(&o, canon, &torch); // first, so the two never share the cores
    int rc = s_run_volley(&o, spec, &mine);
    vl_model_spec_destroy(&spec);
    if (rc != 0)
        return 1;
    char name[64];
    printf("%-34s %10s %10s %9s\n", "case (ms per call)", "volley", "torch", "ratio");
    snprintf(name, sizeof name, "learner update, batch %d", o.learner_batch);
    s_row(name, mine.update, torch.update, 0);
    snprintf(name, sizeof name, "learner fwd+bwd, batch %d", o.learner_batch);
    s_row(name, mine.fwdbwd, torch.fwdbwd, 0);
    snprintf(name, sizeof name, "actor forward, batch %d", S_ACTOR_BATCH);
    s_row(name, mine.fwd, torch.fwd, S_ACTOR_BATCH);
    printf("ratio = torch ms / volley ms: above 1 is faster than PyTorch\n");
    return 0;
}
