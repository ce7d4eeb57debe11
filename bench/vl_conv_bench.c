/*  vl_conv_bench: which kernel library the model engine should run a model
    spec's CNN on, by measurement: oneDNN's C API on PyTorch's plain layouts
    (vl_conv_dnnl.c) and on the blocked layouts it chooses itself
    (vl_conv_dnnl_blocked.c), beside OpenBLAS's sgemm under an im2col
    (vl_conv_blas.c), a plain C loop for
    the first layer (the floor) and PyTorch (bench/torch_conv_bench.py, run
    first by this program) on the same network, shapes and threads, in one
    run (lz4's tests/fullbench.c is the model).

    The network is --spec (default the cnn preset) on 4x84x84 u8 frames
    scaled to float; batch 256 (a learner's minibatch: forward, and forward +
    backward, weight and bias grads and data grads but for the frames) and
    batch 16 (an actor's 16 envs: forward only), each on 1 and 2 threads.
    Each figure is the best of S_RUNS runs of at least S_RUN_S s of wall
    clock, in ms per call; each engine runs in a child process of its own.
    Before any figure of a (threads, batch) is printed, each oneDNN engine's
    output and every grad are checked against OpenBLAS's, and every engine's
    first layer against the plain loop: the largest
    difference relative to the tensor's largest magnitude is printed and
    must stay below S_TOL, or the bench exits 1. ratio = PyTorch's ms / the
    case's ms: above 1 is faster than PyTorch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "models/vl_model_spec.h"
#include "vl_bench.h"
#include "vl_conv_net.h"

#define S_RUNS        5   // runs per figure; the best counts
#define S_RUN_S       0.3 // seconds per run at least
#define S_QUICK_RUNS  1   // --quick, for tests: one call per figure
#define S_QUICK_RUN_S 0.0
#define S_QUICK_BATCH 32 // --quick's learner batch, to keep the test short
#define S_TOL         1e-4
#define S_C           4 // frames: 4 stacked 84x84 greyscale, as Nature DQN's
#define S_H           84
#define S_W           84
#define S_SEED        1

static const int s_threads[] = {1, 2};

// The engines, the reference for the checks (OpenBLAS: the plainest arithmetic) last.
static const vl_conv_engine_ops_t *const s_engines[] = {
    &vl_conv_dnnl_ops, &vl_conv_dnnl_blocked_ops, &vl_conv_blas_ops};
#define S_ENGINES (int)(sizeof s_engines / sizeof s_engines[0])

typedef struct {
    int batch;
    int backward; // time forward + backward too (the learner's case)
} s_case_t;

typedef struct {
    int runs;
    double run_s;
    int learner_batch;
    int torch; // run PyTorch beside
    const char *spec;
} s_opts_t;

typedef struct {
    double fwd, fwdbwd, conv1; // ms; 0 when not measured
} s_times_t;

static s_times_t s_torch[2][2]; // [thread index][case index]

static void s_usage(FILE *f)
{
    fprintf(f,
            "usage: vl_conv_bench [--quick] [--no-torch] [--spec TEXT] [--help]\n"
            "  times a model spec's CNN (default: the cnn preset) on 4x84x84 u8 frames,\n"
            "  batch 256 forward and forward+backward, batch 16 forward, on 1 and 2\n"
            "  threads: oneDNN beside OpenBLAS (im2col + sgemm), a plain C loop for the\n"
            "  first layer and PyTorch (bench/torch_conv_bench.py; $PYTHON, default\n"
            "  /usr/bin/python3). --quick: one call per figure, batch %d for 256 (tests).\n",
            S_QUICK_BATCH);
}


/* ---- the network ---------------------------------------------------------- */

/* Uniform in [-1, 1) from a splitmix64 state. */
static float s_uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((z >> 40) * (1.0 / (1 << 23)) - 1.0);
}

/* Appends spec layer sl to net, shapes following the previous layer's.
   Returns 0, or -1 after printing why. */
static int s_add_layer(vl_conv_net_t *net, const vl_model_layer_t *sl)
{
    vl_conv_layer_t *prev = net->n_layers ? &net->layer[net->n_layers - 1] : NULL;
    if (sl->kind == VL_LAYER_RELU && prev && !prev->relu) {
        prev->relu = 1;
        return 0;
    }
    static const char *kinds[] = {"conv", "linear", "relu", "tanh", "lstm"};
    const char *kind = sl->kind < sizeof kinds / sizeof kinds[0] ? kinds[sl->kind] : "?";
    if ((sl->kind != VL_LAYER_CONV && sl->kind != VL_LAYER_LINEAR) ||
        net->n_layers == VL_CONV_NET_LAYERS || (!prev && sl->kind != VL_LAYER_CONV)) {
        fprintf(stderr,
                "vl_conv_bench: --spec: %s at layer %d: expected a conv first, then conv, "
                "linear or relu layers, at most %d\n",
                kind, net->n_layers + 1, VL_CONV_NET_LAYERS);
        return -1;
    }
    vl_conv_layer_t *l = &net->layer[net->n_layers++];
    *l = (vl_conv_layer_t){.conv = sl->kind == VL_LAYER_CONV, .cout = (int)sl->out};
    l->cin = prev ? prev->cout : S_C;
    l->hin = prev ? prev->hout : S_H;
    l->win = prev ? prev->wout : S_W;
    if (!l->conv) {
        l->cin = prev ? (int)vl_conv_out_size(prev) : S_C * S_H * S_W;
        l->hin = l->win = l->hout = l->wout = 1;
        return 0;
    }
    if (prev && !prev->conv) {
        fprintf(stderr, "vl_conv_bench: --spec: a conv after a linear layer\n");
        return -1;
    }
    l->k = (int)sl->kernel, l->stride = (int)sl->stride, l->pad = (int)sl->pad;
    l->hout = (l->hin + 2 * l->pad - l->k) / l->stride + 1;
    l->wout = (l->win + 2 * l->pad - l->k) / l->stride + 1;
    if (l->hin + 2 * l->pad < l->k || l->win + 2 * l->pad < l->k) {
        fprintf(stderr, "vl_conv_bench: --spec: conv kernel %d larger than its %dx%d input\n", l->k,
                l->hin, l->win);
        return -1;
    }
    return 0;
}

/* Fills net's layers from spec text and its parameters (PyTorch's default
   init bounds, 1/sqrt(fan in)). Returns 0, or -1 after printing why. */
static int s_net_build(vl_conv_net_t *net, const char *text, char *canon, size_t canon_size)
{
    char err[256];
    vl_model_spec_t *spec = vl_model_spec_parse(text, err, sizeof err);
    if (!spec) {
        fprintf(stderr, "vl_conv_bench: --spec: %s\n", err);
        return -1;
    }
    int rc = vl_model_spec_format(spec, canon, canon_size) < 0 ? -1 : 0;
    for (uint32_t i = 0; rc == 0 && i < vl_model_spec_count(spec); i++)
        rc = s_add_layer(net, vl_model_spec_layer(spec, i));
    vl_model_spec_destroy(&spec);
    uint64_t state = S_SEED;
    for (int i = 0; rc == 0 && i < net->n_layers; i++) {
        const vl_conv_layer_t *l = &net->layer[i];
        size_t nw = vl_conv_w_size(l);
        float bound = 1.0f / sqrtf((float)nw / l->cout);
        net->w[i] = malloc(nw * sizeof(float));
        net->b[i] = malloc(l->cout * sizeof(float));
        if (!net->w[i] || !net->b[i])
            return -1;
        for (size_t j = 0; j < nw; j++)
            net->w[i][j] = bound * s_uniform(&state);
        for (int j = 0; j < l->cout; j++)
            net->b[i][j] = bound * s_uniform(&state);
    }
    return rc;
}

/* ---- the plain loop: the first layer, direct, one thread ------------------ */

/* y = relu(conv(x)) for layer l over n samples, as the textbook loop. */
static void s_plain_conv(const vl_conv_layer_t *l, const float *w, const float *bias, int n,
                         const float *x, float *y)
{
    for (int b = 0; b < n; b++)
        for (int o = 0; o < l->cout; o++)
            for (int oy = 0; oy < l->hout; oy++)
                for (int ox = 0; ox < l->wout; ox++) {
                    float acc = bias[o];
                    for (int c = 0; c < l->cin; c++)
                        for (int ky = 0; ky < l->k; ky++) {
                            int iy = oy * l->stride - l->pad + ky;
                            if (iy < 0 || iy >= l->hin)
                                continue;
                            const float *row =
                                x + (((size_t)b * l->cin + c) * l->hin + iy) * l->win;
                            const float *wr = w + (((size_t)o * l->cin + c) * l->k + ky) * l->k;
                            for (int kx = 0; kx < l->k; kx++) {
                                int ix = ox * l->stride - l->pad + kx;
                                if (ix >= 0 && ix < l->win)
                                    acc += row[ix] * wr[kx];
                            }
                        }
                    if (l->relu && acc < 0)
                        acc = 0;
                    y[(((size_t)b * l->cout + o) * l->hout + oy) * l->wout + ox] = acc;
                }
}

/* ---- timing and checks ---------------------------------------------------- */

typedef void(s_call_fn)(void *arg);

/* Returns the best ms per call of fn over the plan's runs (after a warm-up call). */
static double s_best_ms(const s_opts_t *o, s_call_fn *fn, void *arg)
{
    return vl_bench_best_ms(o->runs, o->run_s, fn, arg);
}

typedef struct {
    const vl_conv_engine_ops_t *ops;
    vl_conv_engine_t *e;
} s_bound_t;

static void s_call_fwd(void *arg)
{
    s_bound_t *b = arg;
    b->ops->forward(b->e);
}

static void s_call_fwdbwd(void *arg)
{
    s_bound_t *b = arg;
    b->ops->forward(b->e);
    b->ops->backward(b->e);
}

static void s_call_conv1(void *arg)
{
    s_bound_t *b = arg;
    b->ops->conv1(b->e);
}

typedef struct {
    const vl_conv_net_t *net;
    const float *x;
    float *y;
} s_plain_t;

static void s_call_plain(void *arg)
{
    s_plain_t *p = arg;
    s_plain_conv(&p->net->layer[0], p->net->w[0], p->net->b[0], p->net->batch, p->x, p->y);
}

/* Returns max |a - b| / max |b| over n values (0 when b is all zero). */
static double s_rel_err(const float *a, const float *b, size_t n)
{
    double diff = 0, mag = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        mag = fmax(mag, fabs((double)b[i]));
    }
    return mag > 0 ? diff / mag : diff;
}

/* What an engine's child hands back: its times and its results. */
typedef struct {
    s_times_t t;
    float *out, *conv1, *dw[VL_CONV_NET_LAYERS], *db[VL_CONV_NET_LAYERS]; // in the mapping
} s_result_t;

/* Compares engine e's output and grads with the reference engine's (the
   last, OpenBLAS) and its first layer with plain. Prints the errors;
   returns the largest. */
static double s_check(const vl_conv_net_t *net, const char *name, const s_result_t *e,
                      const s_result_t *ref, const float *plain, int backward)
{
    const vl_conv_layer_t *last = &net->layer[net->n_layers - 1];
    size_t n = (size_t)net->batch;
    double out = s_rel_err(e->out, ref->out, n * vl_conv_out_size(last));
    double grad = 0;
    for (int i = 0; backward && i < net->n_layers; i++) {
        const vl_conv_layer_t *l = &net->layer[i];
        grad = fmax(grad, s_rel_err(e->dw[i], ref->dw[i], vl_conv_w_size(l)));
        grad = fmax(grad, s_rel_err(e->db[i], ref->db[i], l->cout));
    }
    double c1 = s_rel_err(e->conv1, plain, n * vl_conv_out_size(&net->layer[0]));
    printf("  check %s: output %.1e", name, out);
    if (backward)
        printf(", weight/bias grads %.1e", grad);
    printf(" vs openblas; first layer %.1e vs the plain loop (max rel err, below %.0e)\n", c1,
           S_TOL);
    return fmax(out, fmax(grad, c1));
}

/* ---- PyTorch -------------------------------------------------------------- */

/* Runs torch_conv_bench.py on the same spec, threads and batches; fills
   s_torch. Returns 0, or -1 after printing why (the table then shows no
   ratios). */
static int s_run_torch(const s_opts_t *o, const s_case_t *cases, const char *canon)
{
    const char *python = getenv("PYTHON") ? getenv("PYTHON") : "/usr/bin/python3";
    char cmd[8192];
    // The thread count each figure uses is set by torch.set_num_threads; the
    // variables cap what the OpenMP and OpenBLAS pools start with.
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 '%s' '%s' --spec '%s' --shape %d,%d,%d "
             "--threads %d,%d --batches %d,%d --runs %d --run-s %g",
             python, VL_TORCH_SCRIPT, canon, S_C, S_H, S_W, s_threads[0], s_threads[1],
             cases[0].batch, cases[1].batch, o->runs, o->run_s);
    FILE *p = popen(cmd, "r");
    if (!p) {
        printf("torch: cannot start %s\n", python);
        return -1;
    }
    char line[512];
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        int t, n;
        s_times_t tm;
        if (sscanf(line, "torch threads=%d batch=%d fwd_ms=%lf fwdbwd_ms=%lf conv1_ms=%lf", &t, &n,
                   &tm.fwd, &tm.fwdbwd, &tm.conv1) == 5) {
            for (int ti = 0; ti < 2; ti++)
                for (int ci = 0; ci < 2; ci++)
                    if (s_threads[ti] == t && cases[ci].batch == n)
                        s_torch[ti][ci] = tm, got++;
        } else if (strncmp(line, "torch version=", 14) == 0) {
            printf("%s", line);
        }
    }
    int status = pclose(p);
    if (status != 0 || got != 4) {
        printf("torch: %s %s gave %d of 4 figures (exit status %d): PyTorch missing? "
               "On Debian: apt-get install python3-torch\n",
               python, VL_TORCH_SCRIPT, got, status);
        return -1;
    }
    return 0;
}

/* ---- the table ------------------------------------------------------------ */

/* Prints ratio = ref / ms, or "-" when either is missing. */
static void s_ratio(double ref, double ms)
{
    if (ref > 0 && ms > 0)
        printf(" %9.2fx", ref / ms);
    else
        printf(" %10s", "-");
}

/* Prints one row: case, ms per forward, per forward + backward, ratios. */
static void s_row(const char *name, int threads, int batch, s_times_t t, s_times_t ref, int conv1)
{
    char label[64];
    snprintf(label, sizeof label, "%s t=%d n=%d", name, threads, batch);
    double fwd = conv1 ? t.conv1 : t.fwd, rfwd = conv1 ? ref.conv1 : ref.fwd;
    printf("%-30s %10.3f", label, fwd);
    if (t.fwdbwd > 0 && !conv1)
        printf(" %12.3f", t.fwdbwd);
    else
        printf(" %12s", "-");
    s_ratio(rfwd, fwd);
    s_ratio(conv1 ? 0 : ref.fwdbwd, conv1 ? 0 : t.fwdbwd);
    printf("\n");
}

/* Times engine ops on net: forward, forward + backward (when the case
   does) and the first layer. */
static s_times_t s_time_engine(const s_opts_t *o, s_bound_t *b, int backward)
{
    s_times_t t = {0};
    t.fwd = s_best_ms(o, s_call_fwd, b);
    if (backward)
        t.fwdbwd = s_best_ms(o, s_call_fwdbwd, b);
    t.conv1 = s_best_ms(o, s_call_conv1, b);
    return t;
}

/* Maps shared memory for one engine's times and results on net and points
   r's arrays into it (the times sit at its head, before r->out). Returns 0
   and the mapping's size in *bytes, or -1. */
static int s_result_map(const vl_conv_net_t *net, s_result_t *r, size_t *bytes)
{
    size_t n = (size_t)net->batch, floats = n * vl_conv_out_size(&net->layer[net->n_layers - 1]) +
                                            n * vl_conv_out_size(&net->layer[0]);
    for (int i = 0; i < net->n_layers; i++)
        floats += vl_conv_w_size(&net->layer[i]) + net->layer[i].cout;
    *bytes = sizeof(s_times_t) + floats * sizeof(float);
    void *m = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    float *f = (float *)((s_times_t *)m + 1);
    r->out = f, f += n * vl_conv_out_size(&net->layer[net->n_layers - 1]);
    r->conv1 = f, f += n * vl_conv_out_size(&net->layer[0]);
    for (int i = 0; i < net->n_layers; i++) {
        r->dw[i] = f, f += vl_conv_w_size(&net->layer[i]);
        r->db[i] = f, f += net->layer[i].cout;
    }
    return 0;
}

/* Copies a timed engine's results into r's mapping (times go at its head). */
static void s_result_fill(const vl_conv_net_t *net, s_bound_t *b, s_result_t *r, s_times_t t)
{
    size_t n = (size_t)net->batch;
    memcpy((s_times_t *)r->out - 1, &t, sizeof t);
    memcpy(r->out, b->ops->output(b->e),
           n * vl_conv_out_size(&net->layer[net->n_layers - 1]) * sizeof(float));
    memcpy(r->conv1, b->ops->conv1_out(b->e), n * vl_conv_out_size(&net->layer[0]) * sizeof(float));
    for (int i = 0; i < net->n_layers; i++) {
        memcpy(r->dw[i], b->ops->dw(b->e, i), vl_conv_w_size(&net->layer[i]) * sizeof(float));
        memcpy(r->db[i], b->ops->db(b->e, i), net->layer[i].cout * sizeof(float));
    }
}

/* Runs one engine in a child process of its own: an engine's thread pool
   (OpenMP's, OpenBLAS's) spins for a while after its last call, and on a
   2-core machine a neighbour's spinning pool would be timed too. The child
   times forward (+ backward) and the first layer, then leaves its results in
   r's shared mapping. Returns 0, or -1 when the child failed. */
static int s_engine_child(const s_opts_t *o, const vl_conv_net_t *net,
                          const vl_conv_engine_ops_t *ops, int threads, int backward, int show_impl,
                          s_result_t *r)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        s_bound_t b = {ops, ops->create(net, threads)};
        if (!b.e)
            _exit(1);
        s_times_t t = s_time_engine(o, &b, backward);
        if (!backward) { // the check compares grads only where they were computed
            ops->forward(b.e);
            ops->conv1(b.e);
        }
        s_result_fill(net, &b, r, t);
        if (show_impl && ops == &vl_conv_dnnl_ops) {
            printf("onednn's forward implementations:");
            for (int i = 0; i < net->n_layers; i++)
                printf(" %s", vl_conv_dnnl_impl(b.e, i));
            printf("\n");
            fflush(stdout);
        }
        ops->destroy(&b.e);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    memcpy(&r->t, (s_times_t *)r->out - 1, sizeof r->t);
    return 0;
}

/* Measures one (threads, batch): each engine in its child, the plain loop
   (one thread) here, the checks, the rows. Returns 0, 1 when the results
   disagree, -1 on error. */
static int s_measure(const s_opts_t *o, vl_conv_net_t *net, int ti, int ci, const s_case_t *c)
{
    int threads = s_threads[ti], rc = -1;
    net->batch = c->batch;
    s_result_t r[S_ENGINES];
    memset(r, 0, sizeof r);
    size_t bytes[S_ENGINES] = {0}, nx = (size_t)c->batch * vl_conv_in_size(&net->layer[0]);
    s_plain_t pl = {net, malloc(nx * sizeof(float)),
                    malloc((size_t)c->batch * vl_conv_out_size(&net->layer[0]) * sizeof(float))};
    if (!pl.x || !pl.y)
        goto out;
    vl_conv_scale_frames(net, (float *)pl.x);
    for (int k = 0; k < S_ENGINES; k++)
        if (s_result_map(net, &r[k], &bytes[k]) != 0 ||
            s_engine_child(o, net, s_engines[k], threads, c->backward, ti == 0 && ci == 0, &r[k]) !=
                0)
            goto out;
    s_times_t tp = {.conv1 = threads == 1 ? s_best_ms(o, s_call_plain, &pl) : 0};
    if (threads != 1)
        s_call_plain(&pl); // for the check only: the loop is single-threaded
    double err = s_rel_err(r[S_ENGINES - 1].conv1, pl.y,
                           (size_t)c->batch * vl_conv_out_size(&net->layer[0]));
    for (int k = 0; k < S_ENGINES - 1; k++)
        err = fmax(err,
                   s_check(net, s_engines[k]->name, &r[k], &r[S_ENGINES - 1], pl.y, c->backward));
    rc = err < S_TOL ? 0 : 1;
    s_times_t ref = s_torch[ti][ci];
    if (!c->backward)
        ref.fwdbwd = 0; // the actor's case: forward only
    for (int k = 0; k < S_ENGINES; k++)
        s_row(s_engines[k]->name, threads, c->batch, r[k].t, ref, 0);
    if (ref.fwd > 0)
        s_row("pytorch", threads, c->batch, ref, ref, 0);
    char name[64];
    for (int k = 0; k < S_ENGINES; k++) {
        snprintf(name, sizeof name, "conv1 %s", s_engines[k]->name);
        s_row(name, threads, c->batch, r[k].t, ref, 1);
    }
    if (threads == 1)
        s_row("conv1 plain loop", threads, c->batch, tp, ref, 1);
    if (ref.conv1 > 0)
        s_row("conv1 pytorch", threads, c->batch, ref, ref, 1);
out:
    for (int k = 0; k < S_ENGINES; k++)
        if (bytes[k])
            munmap((s_times_t *)r[k].out - 1, bytes[k]);
    free((void *)pl.x);
    free(pl.y);
    if (rc < 0)
        fprintf(stderr, "vl_conv_bench: t=%d n=%d: an engine failed (see above)\n", threads,
                c->batch);
    return rc;
}

/* Parses argv into *o. Returns 0 to run, 1 after --help, 2 on a bad flag. */
static int s_parse(int argc, char **argv, s_opts_t *o)
{
    *o = (s_opts_t){
        .runs = S_RUNS, .run_s = S_RUN_S, .learner_batch = 256, .torch = 1, .spec = "cnn"};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            o->runs = S_QUICK_RUNS, o->run_s = S_QUICK_RUN_S, o->learner_batch = S_QUICK_BATCH;
        } else if (strcmp(argv[i], "--no-torch") == 0) {
            o->torch = 0;
        } else if (strcmp(argv[i], "--spec") == 0 && i + 1 < argc) {
            o->spec = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0) {
            s_usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "vl_conv_bench: unknown argument '%s'%s\n", argv[i],
                    strcmp(argv[i], "--spec") == 0 ? " (it takes a spec)" : "");
            s_usage(stderr);
            return 2;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    s_opts_t o;
    int rc = s_parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    vl_conv_net_t net = {0};
    char canon[VL_MODEL_TEXT_MAX + 1];
    if (s_net_build(&net, o.spec, canon, sizeof canon) != 0)
        return 2;
    const s_case_t cases[2] = {{.batch = o.learner_batch, .backward = 1}, {.batch = 16}};
    size_t nx = (size_t)cases[0].batch * S_C * S_H * S_W;
    size_t ny = (size_t)cases[0].batch * vl_conv_out_size(&net.layer[net.n_layers - 1]);
    uint8_t *frames = malloc(nx);
    float *dy = malloc(ny * sizeof(float));
    if (!frames || !dy)
        return 1;
    uint64_t state = S_SEED + 1;
    for (size_t j = 0; j < nx; j++)
        frames[j] = (uint8_t)(s_uniform(&state) * 128 + 128);
    for (size_t j = 0; j < ny; j++)
        dy[j] = s_uniform(&state);
    net.frames = frames, net.dy = dy; // batch 16 reads the first 16 samples of both

    printf("vl_conv_bench: %s on %dx%dx%d u8 frames; best of %d runs of >= %.1f s\n", canon, S_C,
           S_H, S_W, o.runs, o.run_s);
    printf("load average before: ");
    FILE *la = fopen("/proc/loadavg", "r");
    char buf[128] = "?";
    if (la && fgets(buf, sizeof buf, la))
        printf("%s", buf);
    else
        printf("?\n");
    if (la)
        fclose(la);
    // OpenBLAS picks its kernels by CPU model at load time; a model newer than it
    // knows gets a generic SSE3 set (Prescott) though the CPU has AVX2 or
    // AVX-512, and OPENBLAS_CORETYPE (e.g. SkylakeX, Haswell) chooses by hand.
    const char *core = vl_conv_blas_core();
    int old = strstr(core, "Prescott") || strstr(core, "Core2") || strstr(core, "Nehalem") ||
              strstr(core, "Penryn") || strstr(core, "Dunnington") || strstr(core, "Atom");
    printf("openblas kernels: %s%s\n", core,
           old && __builtin_cpu_supports("avx2")
               ? " (older than this CPU, which has AVX2: OpenBLAS does not know its model; "
                 "OPENBLAS_CORETYPE=SkylakeX or Haswell chooses by hand)"
               : "");
    if (o.torch)
        s_run_torch(&o, cases, canon);
    printf("\n%-30s %10s %12s %10s %10s\n", "case (t threads, n batch)", "fwd ms", "fwd+bwd ms",
           "x torch", "x torch");
    printf("%-30s %10s %12s %10s %10s\n", "", "", "", "(fwd)", "(fwd+bwd)");
    int failed = 0;
    for (int ti = 0; ti < 2; ti++)
        for (int ci = 0; ci < 2; ci++) {
            int r = s_measure(&o, &net, ti, ci, &cases[ci]);
            if (r < 0)
                return 1;
            failed |= r;
        }
    printf("\nms = wall clock per call, best of %d; x torch = PyTorch's ms / the case's ms "
           "(above 1: faster);\nconv1 = the first layer and its relu alone, on float frames; "
           "load average after: ",
           o.runs);
    la = fopen("/proc/loadavg", "r");
    if (la && fgets(buf, sizeof buf, la))
        printf("%s", buf);
    if (la)
        fclose(la);
    for (int i = 0; i < net.n_layers; i++) {
        free(net.w[i]);
        free(net.b[i]);
    }
    free(frames);
    free(dy);
    if (failed)
        fprintf(stderr, "vl_conv_bench: onednn and openblas disagree beyond %.0e\n", S_TOL);
    return failed;
}
