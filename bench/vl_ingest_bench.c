/*  vl_ingest_bench: the learner's ingest path, received wire bytes decoded
    straight into a claimed slot of the segmented buffer and committed,
    beside its references, measured in the same run on the same bytes (lz4's
    tests/fullbench.c is the model).

    Each case pre-encodes S_SEGS consecutive segments of horizon S_HORIZON
    cut from one environment stepped with uniformly random actions. A sample
    is a step, so one segment is S_HORIZON samples. Threads loop over those
    wire bytes for a wall-clock run (S_RUN_S), best of S_RUNS runs, the
    operations interleaved run by run so a burst of load elsewhere slows them
    alike. Every output is checked before a figure is printed: each decode
    must return VL_OK, every segment the trainer side takes must carry a
    known header, every segment still waiting after a run is checksummed
    against its source, and committed = taken + evicted + waiting.

    Operations:
      memcpy        the decoded bytes of a segment into a private array: the
                    copy floor
      lz4d          bare LZ4_decompress_safe of the block the wire carries
      decode        vl_segment_decode into a private array, no buffer
      ingest+cons   ingest threads claim, decode into the slot, commit; a
                    separate consumer thread (the trainer) takes batches and
                    releases them at once. On a 2-core machine 2 ingest
                    threads + the consumer oversubscribe the cores.
      ingest+inline no consumer thread: each ingest thread claims, decodes,
                    commits, then takes and releases a batch whenever one
                    waits (the trainer's buffer work done in line). */
#include <lz4.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/vl_bench.h"
#include "bench/vl_bench_rollout.h"
#include "common/vl_rng.h"
#include "envs/vl_env.h"
#include "messages/vl_codec.h"
#include "store/vl_buffer.h"
#include "volley.pb-c.h"

#define S_HORIZON     64  // steps per segment, as the actors cut them
#define S_SEGS        256 // distinct segments each thread cycles through
#define S_CAPACITY    64  // buffer slots: the learner's default
#define S_BATCH       16  // segments a take asks for: the learner's default
#define S_THREADS_MAX 2   // ingest threads at most
#define S_RUNS        5   // runs per operation; the best counts
#define S_RUN_S       0.5 // wall-clock seconds per run
#define S_QUICK_RUNS  2
#define S_QUICK_RUN_S 0.02
#define S_TARGET_SPS  10e6 // CartPole samples/s on one ingest thread (100x the C++ buffer's)
#define S_TARGET_X2   1.6  // two ingest threads over one

/* ---- cases and their data ------------------------------------------------ */

typedef struct {
    const char *name;
    const char *env; // a built-in environment, found by name
    int targeted;    // the targets are stated for this case
} s_case_t;

static const s_case_t s_cases[] = {
    {.name = "cartpole", .env = "cartpole", .targeted = 1},
    {.name = "catch", .env = "catch"},
};

/* One case's segments and their encodings. */
typedef struct {
    vl_segment_t src[S_SEGS]; // arrays in src_arrays
    void *src_arrays[S_SEGS]; // owned
    uint64_t src_sum[S_SEGS]; // checksum of the held bytes of src's arrays
    uint8_t *wire[S_SEGS];    // vl_segment_encode's output, owned
    size_t wire_size[S_SEGS];
    uint8_t *block[S_SEGS]; // the LZ4 block the wire carries, owned
    int block_len[S_SEGS];
    uint32_t raw_size;  // payload bytes the block decompresses to
    size_t held_bytes;  // (T + 1) * row bytes + (12 + 4 * dims) * T: as a learner holds it
    size_t arrays_cap;  // vl_segment_arrays_size
    double wire_mean;   // mean wire bytes a segment
    vl_obs_spec_t spec; // the environment's
} s_data_t;

/* Prints why and exits: a figure over wrong output means nothing. */
static void s_die(const char *name, const char *op, const char *why)
{
    fprintf(stderr, "vl_ingest_bench: %s: %s: %s\n", name, op, why);
    exit(1);
}

/* Fills the case's source segments by stepping env with random actions. */
static int s_fill(s_data_t *d, const vl_env_ops_t *env, uint64_t seed)
{
    return vl_bench_rollout(env, S_HORIZON, S_SEGS, seed, d->src, d->src_arrays);
}

/* Encodes d's segments and keeps each wire message's LZ4 block.
   Returns 0, or -1 on failure. */
static int s_encode_all(s_data_t *d)
{
    for (size_t k = 0; k < S_SEGS; k++) {
        if (vl_bench_encode(&d->src[k], &d->wire[k], &d->wire_size[k], &d->block[k],
                            &d->block_len[k], &d->raw_size) != 0)
            return -1;
        d->wire_mean += (double)d->wire_size[k] / S_SEGS;
    }
    return 0;
}

static void s_data_free(s_data_t *d)
{
    for (size_t k = 0; k < S_SEGS; k++) {
        free(d->src_arrays[k]);
        free(d->wire[k]);
        free(d->block[k]);
    }
    free(d);
}

/* Returns a case's data, or NULL (after printing why). */
static s_data_t *s_data_new(const s_case_t *c, const vl_env_ops_t *env)
{
    s_data_t *d = calloc(1, sizeof *d);
    if (!d || s_fill(d, env, 1) != 0 || s_encode_all(d) != 0) {
        fprintf(stderr, "vl_ingest_bench: %s: could not build its segments\n", c->name);
        if (d)
            s_data_free(d);
        return NULL;
    }
    d->spec = env->obs_spec;
    d->held_bytes = (S_HORIZON + 1) * (size_t)vl_obs_row_bytes(&env->obs_spec) +
                    (12 + 4 * (size_t)env->action.dims) * S_HORIZON;
    d->arrays_cap = vl_segment_arrays_size(S_HORIZON, &env->obs_spec, env->action.dims, 0);
    for (size_t k = 0; k < S_SEGS; k++)
        d->src_sum[k] = vl_bench_checksum(d->src_arrays[k], d->held_bytes);
    return d;
}

/* ---- the operations: one segment's worth on one thread ------------------- */

typedef struct s_run_s s_run_t;

/* One ingest (or reference) thread's state and tallies for a run. */
typedef struct {
    s_run_t *run;
    size_t first;     // the segment it starts at
    void *arrays;     // private decode / memcpy target, arrays_cap bytes
    uint8_t *scratch; // private LZ4 output, raw_size bytes
    uint64_t done;    // segments this run
    uint64_t taken;   // segments this thread took and released (inline)
    uint64_t bad;     // outputs that failed a check
    uint64_t busy;    // claims refused: every slot busy
    double end;       // monotonic seconds its loop ended
} s_worker_t;

typedef enum { S_MEMCPY, S_LZ4D, S_DECODE, S_INGEST, S_INLINE, S_MODES } s_mode_t;

typedef struct {
    const char *name;
    s_mode_t mode;
    int threads; // ingest (or reference) threads
} s_op_t;

typedef enum {
    S_OP_MEMCPY,
    S_OP_LZ4D,
    S_OP_DECODE1,
    S_OP_DECODE2,
    S_OP_INGEST1,
    S_OP_INGEST2,
    S_OP_INLINE1,
    S_OP_INLINE2,
    S_NOPS
} s_op_id_t;

static const s_op_t s_ops[S_NOPS] = {
    [S_OP_MEMCPY] = {"memcpy of the decoded bytes", S_MEMCPY, 1},
    [S_OP_LZ4D] = {"LZ4_decompress_safe of the block", S_LZ4D, 1},
    [S_OP_DECODE1] = {"decode only, no buffer", S_DECODE, 1},
    [S_OP_DECODE2] = {"decode only, no buffer", S_DECODE, 2},
    [S_OP_INGEST1] = {"ingest + consumer thread", S_INGEST, 1},
    [S_OP_INGEST2] = {"ingest + consumer thread", S_INGEST, 2},
    [S_OP_INLINE1] = {"ingest, take+release inline", S_INLINE, 1},
    [S_OP_INLINE2] = {"ingest, take+release inline", S_INLINE, 2},
};

struct s_run_s {
    const s_data_t *d;
    vl_buffer_t *buf;
    vl_limits_t lim;
    s_mode_t mode;
    atomic_int stop;
    pthread_barrier_t start;
    uint64_t consumer_taken; // segments the consumer took and released
    uint64_t consumer_bad;   // ... whose header was not one of ours
};

/* Returns 1 if a taken segment's header is one of the source segments'. */
static int s_header_ok(const s_data_t *d, const vl_segment_t *seg)
{
    return seg->seq < S_SEGS && seg->horizon == S_HORIZON &&
           seg->n_episodes == d->src[seg->seq].n_episodes;
}

/* Gives taken slots back after checking their headers; returns the bad ones. */
static uint64_t s_release(const s_data_t *d, vl_buffer_t *buf, const int *slots, int n)
{
    uint64_t bad = 0;
    for (int i = 0; i < n; i++)
        bad += !s_header_ok(d, vl_buffer_segment(buf, slots[i]));
    vl_buffer_release(buf, slots, n);
    return bad;
}

/* Each returns 1 if it handled segment k, 0 if it could not. */
static int s_do_memcpy(s_worker_t *w, size_t k)
{
    memcpy(w->arrays, w->run->d->src_arrays[k], w->run->d->held_bytes);
    return 1;
}

static int s_do_lz4d(s_worker_t *w, size_t k)
{
    const s_data_t *d = w->run->d;
    int n = LZ4_decompress_safe((const char *)d->block[k], (char *)w->scratch, d->block_len[k],
                                (int)d->raw_size);
    w->bad += n != (int)d->raw_size;
    return 1;
}

static int s_do_decode(s_worker_t *w, size_t k)
{
    const s_data_t *d = w->run->d;
    vl_segment_t seg;
    w->bad += vl_segment_decode(d->wire[k], d->wire_size[k], &w->run->lim, &seg, w->arrays,
                                d->arrays_cap) != VL_OK;
    return 1;
}

static int s_do_ingest(s_worker_t *w, size_t k)
{
    const s_data_t *d = w->run->d;
    vl_buffer_t *buf = w->run->buf;
    void *arrays;
    size_t cap;
    int slot = vl_buffer_claim(buf, &arrays, &cap);
    if (slot < 0) {
        w->busy++;
        return 0;
    }
    vl_segment_t seg;
    if (vl_segment_decode(d->wire[k], d->wire_size[k], &w->run->lim, &seg, arrays, cap) != VL_OK) {
        vl_buffer_abandon(buf, slot);
        w->bad++;
        return 0;
    }
    vl_buffer_commit(buf, slot, &seg);
    return 1;
}

static int s_do_inline(s_worker_t *w, size_t k)
{
    int done = s_do_ingest(w, k);
    vl_buffer_t *buf = w->run->buf;
    if (vl_buffer_waiting(buf) >= S_BATCH) {
        int slots[S_BATCH];
        int n = vl_buffer_take(buf, S_BATCH, 0, slots);
        w->bad += s_release(w->run->d, buf, slots, n);
        w->taken += (uint64_t)n;
    }
    return done;
}

static int (*const s_do[S_MODES])(s_worker_t *w, size_t k) = {
    [S_MEMCPY] = s_do_memcpy, [S_LZ4D] = s_do_lz4d,     [S_DECODE] = s_do_decode,
    [S_INGEST] = s_do_ingest, [S_INLINE] = s_do_inline,
};

/* ---- threads and runs ----------------------------------------------------- */

/* Returns seconds on clock: CLOCK_MONOTONIC for wall-clock time,
   CLOCK_PROCESS_CPUTIME_ID for the CPU time every thread used. */
static double s_clock(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double s_now(void)
{
    return s_clock(CLOCK_MONOTONIC);
}

static void *s_worker_main(void *arg)
{
    s_worker_t *w = arg;
    s_run_t *run = w->run;
    int (*step)(s_worker_t *, size_t) = s_do[run->mode];
    pthread_barrier_wait(&run->start);
    size_t k = w->first;
    while (!atomic_load_explicit(&run->stop, memory_order_relaxed)) {
        w->done += (uint64_t)step(w, k);
        k = k + 1 == S_SEGS ? 0 : k + 1;
    }
    w->end = s_now();
    return NULL;
}

/* The trainer: takes batches as they fill and releases them at once. */
static void *s_consumer_main(void *arg)
{
    s_run_t *run = arg;
    int slots[S_BATCH];
    pthread_barrier_wait(&run->start);
    while (!atomic_load(&run->stop)) {
        int n = vl_buffer_take(run->buf, S_BATCH, 100, slots);
        run->consumer_bad += s_release(run->d, run->buf, slots, n);
        run->consumer_taken += (uint64_t)n;
    }
    return NULL;
}

/* Takes every segment still waiting, checksums it against its source and
   releases it. Returns how many, or exits on a mismatch. */
static uint64_t s_drain(const s_data_t *d, vl_buffer_t *buf, const char *name, const char *op)
{
    uint64_t n = 0;
    int slot;
    while (vl_buffer_waiting(buf) > 0 && vl_buffer_take(buf, 1, 0, &slot) == 1) {
        const vl_segment_t *seg = vl_buffer_segment(buf, slot);
        if (!s_header_ok(d, seg) ||
            vl_bench_checksum(seg->obs, d->held_bytes) != d->src_sum[seg->seq])
            s_die(name, op, "a segment in the buffer differs from its source");
        vl_buffer_release(buf, &slot, 1);
        n++;
    }
    return n;
}

/* One operation's best run and its tallies over all runs. */
typedef struct {
    double best;  // segments/s, best run
    double cores; // CPU seconds per wall-clock second in the best run
    uint64_t segments;
    uint64_t evicted;
    uint64_t busy;
} s_result_t;

/* Starts op's threads (+ a consumer for S_INGEST) on run, lets them run for
   run_s, stops and joins them. Returns the monotonic second they started
   and sets *cpu_s to the CPU seconds the process used meanwhile. */
static double s_run_threads(s_run_t *run, const char *name, const s_op_t *op, double run_s,
                            s_worker_t *workers, double *cpu_s)
{
    int consumer = op->mode == S_INGEST;
    pthread_t tid[S_THREADS_MAX + 1];
    pthread_barrier_init(&run->start, NULL, (unsigned)(op->threads + consumer + 1));
    for (int i = 0; i < op->threads; i++) {
        s_worker_t *w = &workers[i];
        *w = (s_worker_t){.run = run,
                          .first = (size_t)i * S_SEGS / S_THREADS_MAX,
                          .arrays = w->arrays,
                          .scratch = w->scratch};
        if (pthread_create(&tid[i], NULL, s_worker_main, w) != 0)
            s_die(name, op->name, "cannot start a thread");
    }
    if (consumer && pthread_create(&tid[op->threads], NULL, s_consumer_main, run) != 0)
        s_die(name, op->name, "cannot start the consumer thread");
    pthread_barrier_wait(&run->start);
    double t0 = s_now(), cpu0 = s_clock(CLOCK_PROCESS_CPUTIME_ID);
    struct timespec nap = {.tv_sec = (time_t)run_s, .tv_nsec = (long)(fmod(run_s, 1) * 1e9)};
    nanosleep(&nap, NULL);
    atomic_store(&run->stop, 1);
    if (consumer)
        vl_buffer_wake(run->buf);
    for (int i = 0; i < op->threads + consumer; i++)
        pthread_join(tid[i], NULL);
    *cpu_s = s_clock(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    pthread_barrier_destroy(&run->start);
    return t0;
}

/* Runs op once for run_s and folds the run into r; exits if any output or
   the buffer's count is wrong. */
static void s_run_op(const s_data_t *d, vl_buffer_t *buf, const char *name, const s_op_t *op,
                     double run_s, s_worker_t *workers, s_result_t *r)
{
    s_run_t run = {.d = d, .buf = buf, .lim = vl_limits_default(), .mode = op->mode};
    uint64_t evicted0 = vl_buffer_evicted(buf);
    double cpu_s, t0 = s_run_threads(&run, name, op, run_s, workers, &cpu_s), end = t0;
    uint64_t done = 0, taken = run.consumer_taken, bad = run.consumer_bad, busy = 0;
    for (int i = 0; i < op->threads; i++) {
        done += workers[i].done;
        taken += workers[i].taken;
        bad += workers[i].bad;
        busy += workers[i].busy;
        end = fmax(end, workers[i].end);
    }
    if (bad)
        s_die(name, op->name, "an output failed its check");
    uint64_t evicted = vl_buffer_evicted(buf) - evicted0;
    if ((op->mode == S_INGEST || op->mode == S_INLINE) &&
        done != taken + evicted + s_drain(d, buf, name, op->name))
        s_die(name, op->name, "committed != taken + evicted + waiting");
    double rate = (double)done / (end - t0);
    if (rate > r->best) {
        r->best = rate;
        r->cores = cpu_s / (end - t0);
    }
    r->segments += done;
    r->evicted += evicted;
    r->busy += busy;
}

/* Ingests every segment once through buf and checks it came out whole, and
   fills every slot once so no run pays first-touch page faults. */
static void s_check_case(const s_data_t *d, vl_buffer_t *buf, const char *name)
{
    vl_limits_t lim = vl_limits_default();
    for (size_t k = 0; k < S_SEGS; k++) {
        void *arrays;
        size_t cap;
        vl_segment_t seg;
        int slot = vl_buffer_claim(buf, &arrays, &cap);
        if (slot < 0 || vl_segment_decode(d->wire[k], d->wire_size[k], &lim, &seg, arrays, cap))
            s_die(name, "check", "claim or decode failed");
        vl_buffer_commit(buf, slot, &seg);
        if (s_drain(d, buf, name, "check") != 1)
            s_die(name, "check", "the committed segment was not there to take");
    }
}

/* ---- output ---------------------------------------------------------------- */

static void s_print_case(const s_case_t *c, const s_data_t *d, const s_result_t *res, int runs,
                         double run_s)
{
    printf("\n%s: T = %d, %d distinct segments, %.0f wire bytes and %zu held bytes a segment; "
           "buffer %d slots, take %d\n",
           c->name, S_HORIZON, S_SEGS, d->wire_mean, d->held_bytes, S_CAPACITY, S_BATCH);
    printf(
        "  best of %d wall-clock runs of %.2f s; a sample is a step (%d a segment); cores =\n"
        "  CPU s / wall s the process got in that run (below the threads: the machine is busy)\n",
        runs, run_s, S_HORIZON);
    printf("  %-34s %7s %6s %11s %11s %10s %10s %9s  %s\n", "operation", "threads", "cores",
           "Msamples/s", "segments/s", "us/seg/thr", "MB/s held", "x decode",
           "evicted, all runs (of ingested)");
    double decode1 = res[S_OP_DECODE1].best;
    for (size_t i = 0; i < S_NOPS; i++) {
        const s_op_t *op = &s_ops[i];
        const s_result_t *r = &res[i];
        char ev[96] = "-";
        if (op->mode == S_INGEST || op->mode == S_INLINE)
            snprintf(ev, sizeof ev, "%llu (%.2f%%)%s", (unsigned long long)r->evicted,
                     100.0 * (double)r->evicted / (double)r->segments,
                     r->busy ? ", some claims refused: every slot busy" : "");
        printf("  %-34s %7d %6.2f %11.2f %11.0f %10.3f %10.0f %8.2fx  %s\n", op->name, op->threads,
               r->cores, r->best * S_HORIZON / 1e6, r->best, 1e6 * op->threads / r->best,
               r->best * (double)d->held_bytes / 1e6, r->best / decode1, ev);
    }
}

/* Prints the two targets for one variant: res1, res2 its 1 and 2
   thread results. */
static void s_print_targets(const char *name, const char *variant, int targeted,
                            const s_result_t *res1, const s_result_t *res2)
{
    double sps = res1->best * S_HORIZON, x = res2->best / res1->best;
    if (targeted)
        printf("  %s, %s: target >= 10M samples/s on 1 thread: %s (%.1fM)\n", name, variant,
               sps >= S_TARGET_SPS ? "met" : "missed", sps / 1e6);
    printf("  %s, %s: 2 threads >= 1.6x 1 thread: %s (%.2fx)%s\n", name, variant,
           x >= S_TARGET_X2 ? "met" : "missed", x, targeted ? "" : " [no target set: reference]");
}

/* ---- main ---------------------------------------------------------------- */

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: vl_ingest_bench [--quick] [--help]\n"
            "  Benchmarks the learner's ingest (vl_segment_decode straight into a\n"
            "  vl_buffer slot) on 1 and %d threads beside memcpy, bare LZ4 and\n"
            "  decode without the buffer (cartpole, catch).\n"
            "  --quick   %d runs of %.2f s per figure instead of %d of %.1f s (for tests)\n"
            "  --help    this text\n",
            S_THREADS_MAX, S_QUICK_RUNS, S_QUICK_RUN_S, S_RUNS, S_RUN_S);
}

/* Measures one case; returns 0, or -1 if it could not be built. */
static int s_bench_case(const s_case_t *c, int runs, double run_s)
{
    const vl_env_ops_t *env = vl_env_find(c->env);
    if (!env) {
        fprintf(stderr, "vl_ingest_bench: %s: environment '%s' is not built in\n", c->name, c->env);
        return -1;
    }
    s_data_t *d = s_data_new(c, env);
    if (!d)
        return -1;
    int rc = -1;
    vl_buffer_t *buf = vl_buffer_new(S_CAPACITY, S_HORIZON, &env->obs_spec, env->action.dims, 0);
    s_worker_t workers[S_THREADS_MAX] = {{0}};
    int oom = !buf;
    for (int i = 0; i < S_THREADS_MAX; i++) {
        workers[i].arrays = malloc(d->arrays_cap);
        workers[i].scratch = malloc(d->raw_size);
        oom |= !workers[i].arrays || !workers[i].scratch;
    }
    if (oom) {
        fprintf(stderr, "vl_ingest_bench: %s: out of memory\n", c->name);
        goto done;
    }
    s_check_case(d, buf, c->name);
    s_result_t res[S_NOPS] = {{0}};
    for (int run = 0; run < runs; run++)
        for (size_t i = 0; i < S_NOPS; i++)
            s_run_op(d, buf, c->name, &s_ops[i], run_s, workers, &res[i]);
    s_print_case(c, d, res, runs, run_s);
    s_print_targets(c->name, "ingest + consumer thread", c->targeted, &res[S_OP_INGEST1],
                    &res[S_OP_INGEST2]);
    s_print_targets(c->name, "ingest, take+release inline", c->targeted, &res[S_OP_INLINE1],
                    &res[S_OP_INLINE2]);
    printf("  %s, decode only (ceiling for scaling): 2 threads / 1 thread = %.2fx\n", c->name,
           res[S_OP_DECODE2].best / res[S_OP_DECODE1].best);
    rc = 0;
done:
    for (int i = 0; i < S_THREADS_MAX; i++) {
        free(workers[i].arrays);
        free(workers[i].scratch);
    }
    vl_buffer_destroy(&buf);
    s_data_free(d);
    return rc;
}

int main(int argc, char **argv)
{
    vl_bench_plan_t plan;
    int rc =
        vl_bench_parse(argc, argv, "vl_ingest_bench", s_usage, (vl_bench_plan_t){S_RUNS, S_RUN_S},
                       (vl_bench_plan_t){S_QUICK_RUNS, S_QUICK_RUN_S}, &plan);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    int runs = plan.runs;
    double run_s = plan.run_s;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("vl_ingest_bench: %ld cores online; \"ingest + consumer thread\" runs %d ingest "
           "threads + 1 consumer%s\n",
           cores, S_THREADS_MAX,
           cores <= S_THREADS_MAX ? " (oversubscribed at 2 ingest threads)" : "");
    int failed = 0;
    for (size_t k = 0; k < sizeof s_cases / sizeof s_cases[0]; k++)
        failed |= s_bench_case(&s_cases[k], runs, run_s) != 0;
    return failed;
}
