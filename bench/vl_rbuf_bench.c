/*  vl_rbuf_bench: include/volley/replay.h's buffer at the C++ self-play buffer's sample size
    (observation 12,288 float32, policy 64 float32, value 1 float32: 49,412
    bytes) and at CartPole's (4 float32, an int32 action, a float32 reward),
    each figure beside a reference measured in the same run on the same
    bytes, and beside that buffer's figure and target.

    Samples come from a pool of S_POOL made up front: board-game-like by
    default (16 positions of history x 12 piece planes of 8 x 8 floats, 0
    or 1, from games whose pieces move one a ply; a softmax policy; a
    result), or uniform random floats with --noise (nothing for LZ4 to
    find). Every case runs --runs times and the best counts; each run's
    output is checked (every row of the buffer, or every gathered row, must
    be a pool sample, by checksum; a load must equal what was saved) before
    a figure is printed. Saves and plain writes end with fsync; loads and
    plain reads land in fresh memory, whose first touch is measured too. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench/vl_bench.h"
#include "common/vl_log.h"
#include "common/vl_rng.h"
#include "volley/replay.h"

#define S_SAMPLES 50000                       // the C++ self-play buffer's
#define S_HISTORY 16                          // positions an observation shows
#define S_PIECES  12                          // piece planes a position
#define S_OBS     (S_HISTORY * S_PIECES * 64) // 12,288 float32
#define S_POLICY  64
#define S_POOL    1024 // distinct samples, cycled; a multiple of S_BATCH
#define S_BATCH   256
#define S_WRITERS 4
#define S_RUNS    3
#define S_GATHERS 200       // sample + gather batches a run
#define S_CP_CAP  (1 << 20) // CartPole's buffer
#define S_CP_ADDS (8 << 20) // CartPole samples a run

// the C++ self-play buffer's figures and targets (save and load for S_SAMPLES).
#define S_SEED_ADD      19761.0 // samples/s, add_batch(256)
#define S_TARGET_ADD    100000.0
#define S_SEED_4W       5000.0 // samples/s per thread, 4 threads adding
#define S_TARGET_4W     80000.0
#define S_SEED_SAMPLE   133.0 // batches/s, sample(256)
#define S_TARGET_SAMPLE 500.0
#define S_SEED_SAVE     7.6 // seconds
#define S_TARGET_SAVE   1.0
#define S_SEED_LOAD     3.2
#define S_TARGET_LOAD   0.5
#define S_TARGET_CP     10e6 // samples/s, CartPole add_batch(256)

typedef struct {
    vl_rbuf_t *rb;
    uint32_t n_fields;
    size_t bytes[3];
    uint8_t *pool[3];      // S_POOL samples of each field
    uint64_t sums[S_POOL]; // the pool samples' checksums, sorted
    uint64_t samples;      // samples a run adds
} s_set_t;

typedef struct {
    uint64_t samples, cp_cap;
    int runs, noise, gathers;
    char path[600], raw_path[600];
    s_set_t big, cp;
    uint8_t *out[3]; // S_BATCH rows of each big field: where gathers go
    uint64_t idx[S_BATCH];
    float w[S_BATCH];
    vl_rng_t rng;
} s_bench_t;

static double s_now(void)
{
    return (double)vl_now_ns() * 1e-9;
}

/* ---- samples and their checks ------------------------------------------------------ */

/* Returns the checksum of sample k of rows[] (one array a field). */
static uint64_t s_row_sum(const s_set_t *s, uint8_t *const *rows, uint64_t k)
{
    uint64_t h = 0;
    for (uint32_t f = 0; f < s->n_fields; f++)
        h = h * 0x100000001b3ull + vl_bench_checksum(rows[f] + k * s->bytes[f], s->bytes[f]);
    return h;
}

static int s_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Returns 1 if each of the n samples of rows[] is one of the pool's. */
static int s_rows_ok(const s_set_t *s, uint8_t *const *rows, uint64_t n)
{
    for (uint64_t k = 0; k < n; k++) {
        uint64_t h = s_row_sum(s, rows, k);
        if (!bsearch(&h, s->sums, S_POOL, sizeof h, s_cmp_u64))
            return 0;
    }
    return 1;
}

/* Returns 1 if the buffer is full of pool samples. */
static int s_buffer_ok(const s_set_t *s)
{
    uint8_t *rows[3];
    for (uint32_t f = 0; f < s->n_fields; f++)
        rows[f] = vl_rbuf_field_data(s->rb, f);
    uint64_t cap = vl_rbuf_capacity(s->rb);
    return vl_rbuf_size(s->rb) == cap && s_rows_ok(s, rows, cap);
}

/* Makes the big pool: games of 80 plies, 32 pieces of 12 kinds, one moved
   a ply; sample i shows the last S_HISTORY positions. */
static void s_make_boards(s_set_t *s, int noise)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, 0);
    uint8_t boards[S_HISTORY][64] = {{0}}; // [0] the newest
    for (uint64_t i = 0; i < S_POOL; i++) {
        memmove(boards[1], boards[0], (S_HISTORY - 1) * 64);
        for (int sq = 0; i % 80 == 0 && sq < 64; sq++)
            boards[0][sq] = sq < 16 || sq >= 48 ? (uint8_t)(1 + vl_rng_below(&rng, S_PIECES)) : 0;
        int from = (int)vl_rng_below(&rng, 64), to = (int)vl_rng_below(&rng, 64);
        if (boards[0][from] && !boards[0][to])
            boards[0][to] = boards[0][from], boards[0][from] = 0;
        float *obs = (float *)(s->pool[0] + i * s->bytes[0]), sum = 0;
        for (int p = 0; p < S_OBS; p++) {
            int h = p / (S_PIECES * 64), piece = p / 64 % S_PIECES + 1;
            obs[p] = noise ? (float)vl_rng_uniform(&rng) : (float)(boards[h][p % 64] == piece);
        }
        float *policy = (float *)(s->pool[1] + i * s->bytes[1]);
        for (int a = 0; a < S_POLICY; a++)
            sum += policy[a] = (float)exp(3 * vl_rng_uniform(&rng));
        for (int a = 0; a < S_POLICY; a++)
            policy[a] /= sum;
        *(float *)(s->pool[2] + i * s->bytes[2]) = (float)((int)vl_rng_below(&rng, 3) - 1);
    }
}

/* Makes the CartPole pool: random states, actions 0/1, reward 1. */
static void s_make_cartpole(s_set_t *s, int noise)
{
    (void)noise; // its states are random already
    vl_rng_t rng;
    vl_rng_seed(&rng, 1);
    for (uint64_t i = 0; i < S_POOL; i++) {
        float *obs = (float *)(s->pool[0] + i * s->bytes[0]);
        for (int k = 0; k < 4; k++)
            obs[k] = (float)vl_rng_normal(&rng);
        *(int32_t *)(s->pool[1] + i * s->bytes[1]) = (int32_t)vl_rng_below(&rng, 2);
        *(float *)(s->pool[2] + i * s->bytes[2]) = 1.0f;
    }
}

/* Creates s's buffer of capacity samples over fields, its pool (by make)
   and the pool's checksums. Returns 0, or -1. */
static int s_set_new(s_set_t *s, uint64_t capacity, const vl_rbuf_field_t *fields,
                     void (*make)(s_set_t *, int), int noise)
{
    char why[256] = "";
    s->rb = vl_rbuf_new(capacity, fields, 3, 1, why, sizeof why);
    if (!s->rb) {
        fprintf(stderr, "vl_rbuf_bench: %s\n", why);
        return -1;
    }
    s->n_fields = 3;
    for (uint32_t f = 0; f < 3; f++) {
        s->bytes[f] = vl_rbuf_field_bytes(s->rb, f);
        if (!(s->pool[f] = calloc(S_POOL, s->bytes[f])))
            return -1;
    }
    make(s, noise);
    for (uint64_t i = 0; i < S_POOL; i++)
        s->sums[i] = s_row_sum(s, s->pool, i);
    qsort(s->sums, S_POOL, sizeof s->sums[0], s_cmp_u64);
    return 0;
}

static void s_set_destroy(s_set_t *s)
{
    vl_rbuf_destroy(&s->rb);
    for (uint32_t f = 0; f < 3; f++)
        free(s->pool[f]);
}

/* ---- adding ------------------------------------------------------------------------------ */

/* Adds n samples in batches of S_BATCH, pool samples from `from` on. */
static void s_add(s_set_t *s, uint64_t n, uint64_t from)
{
    for (uint64_t at = 0; at < n; at += S_BATCH) {
        uint64_t k = n - at < S_BATCH ? n - at : S_BATCH, src = (from + at) % S_POOL;
        const void *data[3];
        for (uint32_t f = 0; f < s->n_fields; f++)
            data[f] = s->pool[f] + src * s->bytes[f];
        vl_rbuf_add_batch(s->rb, data, k);
    }
}

/* Copies the same bytes as s_add, with memcpy, into the buffer's arrays. */
static void s_memcpy(s_set_t *s, uint64_t n, uint64_t from)
{
    uint64_t cap = vl_rbuf_capacity(s->rb);
    for (uint64_t at = 0; at < n; at += S_BATCH) {
        uint64_t k = n - at < S_BATCH ? n - at : S_BATCH, src = (from + at) % S_POOL;
        uint64_t row = at % cap, first = cap - row < k ? cap - row : k;
        for (uint32_t f = 0; f < s->n_fields; f++) {
            uint8_t *dst = vl_rbuf_field_data(s->rb, f);
            size_t b = s->bytes[f];
            memcpy(dst + row * b, s->pool[f] + src * b, first * b);
            memcpy(dst, s->pool[f] + (src + first) * b, (k - first) * b);
        }
    }
}

static double s_run_add(s_set_t *s)
{
    double t = s_now();
    s_add(s, s->samples, 0);
    t = s_now() - t;
    return s_buffer_ok(s) ? t : -1;
}

static double s_run_memcpy(s_set_t *s)
{
    double t = s_now();
    s_memcpy(s, s->samples, 0);
    t = s_now() - t;
    return s_buffer_ok(s) ? t : -1;
}

typedef struct {
    s_set_t *s;
    uint64_t n, from;
    pthread_barrier_t *start;
} s_writer_t;

static void *s_writer(void *arg)
{
    s_writer_t *w = arg;
    pthread_barrier_wait(w->start);
    s_add(w->s, w->n, w->from);
    return NULL;
}

/* S_WRITERS threads add s->samples between them, at once. */
static double s_run_add_threads(s_set_t *s)
{
    pthread_t t[S_WRITERS];
    s_writer_t w[S_WRITERS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, S_WRITERS + 1);
    for (int i = 0; i < S_WRITERS; i++) {
        w[i] = (s_writer_t){s, s->samples / S_WRITERS, (uint64_t)i * S_BATCH, &start};
        pthread_create(&t[i], NULL, s_writer, &w[i]);
    }
    pthread_barrier_wait(&start);
    double t0 = s_now();
    for (int i = 0; i < S_WRITERS; i++)
        pthread_join(t[i], NULL);
    t0 = s_now() - t0;
    pthread_barrier_destroy(&start);
    return s_buffer_ok(s) ? t0 : -1;
}

/* ---- sampling and gathering ---------------------------------------------------------------- */

/* Returns 1 if the S_BATCH gathered rows are pool samples. */
static int s_out_ok(s_bench_t *b)
{
    return s_rows_ok(&b->big, b->out, S_BATCH);
}

/* Times b->gathers batches of S_BATCH rows: drawn by vl_rbuf_sample (beta,
   with weights) and copied by vl_rbuf_gather when by_rbuf, else drawn by
   plain uniform indices and copied by a memcpy a row a field. */
static double s_gathers(s_bench_t *b, float beta, int by_rbuf)
{
    s_set_t *s = &b->big;
    uint64_t cap = vl_rbuf_capacity(s->rb);
    double total = 0;
    for (int g = 0; g < b->gathers; g++) {
        double t = s_now();
        if (by_rbuf) {
            if (vl_rbuf_sample(s->rb, S_BATCH, beta, b->idx, b->w) != S_BATCH)
                return -1;
            vl_rbuf_gather(s->rb, b->idx, S_BATCH, (void *const *)b->out);
        } else {
            for (int k = 0; k < S_BATCH; k++)
                b->idx[k] = vl_rng_below(&b->rng, (uint32_t)cap);
            for (int k = 0; k < S_BATCH; k++)
                for (uint32_t f = 0; f < s->n_fields; f++)
                    memcpy(b->out[f] + k * s->bytes[f],
                           (uint8_t *)vl_rbuf_field_data(s->rb, f) + b->idx[k] * s->bytes[f],
                           s->bytes[f]);
        }
        total += s_now() - t;
        if (!s_out_ok(b))
            return -1;
    }
    return total;
}

static double s_run_plain_gather(s_bench_t *b)
{
    return s_gathers(b, 0, 0);
}

static double s_run_uniform(s_bench_t *b)
{
    return s_gathers(b, -1.0f, 1);
}

static double s_run_prioritized(s_bench_t *b)
{
    return s_gathers(b, 0.4f, 1);
}

/* ---- saving and loading --------------------------------------------------------------------- */

static double s_run_save(s_bench_t *b)
{
    char why[512] = "";
    unlink(b->path);
    double t = s_now();
    int rc = vl_rbuf_save(b->big.rb, b->path, why, sizeof why);
    t = s_now() - t;
    if (rc < 0)
        fprintf(stderr, "vl_rbuf_bench: save: %s\n", why);
    return rc == 0 ? t : -1;
}

static double s_run_load(s_bench_t *b)
{
    char why[512] = "";
    double t = s_now();
    vl_rbuf_t *rb = vl_rbuf_load(b->path, 1, why, sizeof why);
    t = s_now() - t;
    int ok = rb && vl_rbuf_size(rb) == vl_rbuf_size(b->big.rb);
    for (uint32_t f = 0; ok && f < b->big.n_fields; f++)
        ok = memcmp(vl_rbuf_field_data(rb, f), vl_rbuf_field_data(b->big.rb, f),
                    vl_rbuf_size(rb) * b->big.bytes[f]) == 0;
    if (!rb)
        fprintf(stderr, "vl_rbuf_bench: load: %s\n", why);
    vl_rbuf_destroy(&rb);
    return ok ? t : -1;
}

/* write() + fsync of the bytes a save holds: each field's rows. */
static double s_run_write(s_bench_t *b)
{
    double t = s_now();
    int fd = open(b->raw_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), ok = fd >= 0;
    for (uint32_t f = 0; ok && f < b->big.n_fields; f++) {
        const uint8_t *p = vl_rbuf_field_data(b->big.rb, f);
        size_t n = b->samples * b->big.bytes[f];
        for (size_t at = 0; ok && at < n;) {
            ssize_t k = write(fd, p + at, n - at);
            ok = k > 0;
            at += ok ? (size_t)k : 0;
        }
    }
    ok = ok && fsync(fd) == 0;
    if (fd >= 0)
        ok = close(fd) == 0 && ok;
    return ok ? s_now() - t : -1;
}

/* Returns n bytes of fresh memory allocated as the buffer's arrays are
   (huge pages), or NULL. */
static uint8_t *s_fresh(size_t n)
{
    size_t huge = 2u << 20;
    uint8_t *p = aligned_alloc(huge, (n + huge - 1) / huge * huge);
    if (p)
        madvise(p, (n + huge - 1) / huge * huge, MADV_HUGEPAGE);
    return p;
}

/* read() of those bytes into fresh memory, as a load does. */
static double s_run_read(s_bench_t *b)
{
    size_t n = 0;
    for (uint32_t f = 0; f < b->big.n_fields; f++)
        n += b->samples * b->big.bytes[f];
    double t = s_now();
    uint8_t *buf = s_fresh(n);
    int fd = open(b->raw_path, O_RDONLY), ok = buf && fd >= 0;
    for (size_t at = 0; ok && at < n;) {
        ssize_t k = read(fd, buf + at, n - at);
        ok = k > 0;
        at += ok ? (size_t)k : 0;
    }
    t = s_now() - t;
    if (fd >= 0)
        close(fd);
    ok = ok && memcmp(buf, vl_rbuf_field_data(b->big.rb, 0), b->samples * b->big.bytes[0]) == 0;
    free(buf);
    return ok ? t : -1;
}

/* memset of a fresh array the size of the buffer: what first touching
   memory costs here (a load fills two such: the file's and the buffer's). */
static double s_run_touch(s_bench_t *b)
{
    size_t n = 0;
    for (uint32_t f = 0; f < b->big.n_fields; f++)
        n += b->samples * b->big.bytes[f];
    double t = s_now();
    uint8_t *p = s_fresh(n);
    if (p)
        memset(p, 1, n);
    t = s_now() - t;
    int ok = p && p[n - 1] == 1;
    free(p);
    return ok ? t : -1;
}

/* ---- CartPole ----------------------------------------------------------------------------- */

static double s_run_cp_add(s_bench_t *b)
{
    return s_run_add(&b->cp);
}

static double s_run_cp_memcpy(s_bench_t *b)
{
    return s_run_memcpy(&b->cp);
}

static double s_run_big_add(s_bench_t *b)
{
    return s_run_add(&b->big);
}

static double s_run_big_memcpy(s_bench_t *b)
{
    return s_run_memcpy(&b->big);
}

static double s_run_big_threads(s_bench_t *b)
{
    return s_run_add_threads(&b->big);
}

/* ---- the table ------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    double (*run)(s_bench_t *b); // seconds, or -1 if the output was wrong
} s_case_t;

/* Runs the n cases in turn, b->runs times over (so that a drifting machine
   drifts for all alike), and sets best[n] to each one's best seconds.
   Returns 0, or -1 after saying which output was wrong. */
static int s_best(s_bench_t *b, const s_case_t *cases, int n, double *best)
{
    for (int c = 0; c < n; c++)
        best[c] = 1e30;
    for (int r = 0; r < b->runs; r++)
        for (int c = 0; c < n; c++) {
            double t = cases[c].run(b);
            if (t < 0) {
                printf("%s: WRONG OUTPUT\n", cases[c].name);
                return -1;
            }
            best[c] = t < best[c] ? t : best[c];
        }
    return 0;
}

/* Writes x with thousands separators into buf[32]. Returns buf. */
static char *s_count(char *buf, double x)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", x);
    size_t n = strlen(digits), o = 0;
    for (size_t i = 0; i < n; i++) {
        buf[o++] = digits[i];
        if ((n - i - 1) % 3 == 0 && i + 1 < n)
            buf[o++] = ',';
    }
    buf[o] = 0;
    return buf;
}

static void s_header(void)
{
    printf("%-34s %-22s %-36s %-18s %-16s\n", "operation", "volley", "reference, same run",
           "C++ buffer", "target");
}

/* Prints one row; met < 0 for a row without a target. */
static void s_row(const char *op, const char *figure, const char *ref, const char *seed,
                  const char *target, int met)
{
    printf("%-34s %-22s %-36s %-18s %-16s%s\n", op, figure, ref, seed, target,
           met < 0 ? ""
           : met   ? " met"
                   : " MISSED");
    fflush(stdout);
}

/* Prints a row of rates: rate, the C++ buffer's and the target, each with unit. */
static void s_rate_row(const char *op, double rate, const char *unit, const char *ref, double seed,
                       double target)
{
    char f[64], sd[64], t[64], c[32];
    snprintf(f, sizeof f, "%s%s", s_count(c, rate), unit);
    snprintf(sd, sizeof sd, "%s%s", seed > 0 ? s_count(c, seed) : "-", seed > 0 ? unit : "");
    snprintf(t, sizeof t, "%s%s", s_count(c, target), unit);
    s_row(op, f, ref, sd, t, rate >= target);
}

/* Adds: 1 thread and 4 at once beside memcpy of the same bytes. Returns 0, or -1. */
static int s_table_adds(s_bench_t *b)
{
    char r[96], c1[32], c2[32];
    double n = (double)b->samples;
    const s_case_t cases[] = {
        {"memcpy", s_run_big_memcpy}, {"add", s_run_big_add}, {"4 threads", s_run_big_threads}};
    double t[3];
    if (s_best(b, cases, 3, t) < 0)
        return -1;
    double cp = t[0], one = t[1], four = t[2];
    snprintf(r, sizeof r, "memcpy %s/s", s_count(c1, n / cp));
    s_rate_row("add_batch(256), 1 thread", n / one, "/s", r, S_SEED_ADD, S_TARGET_ADD);
    snprintf(r, sizeof r, "%s/s in all; 1 thread %s/s", s_count(c1, n / four),
             s_count(c2, n / one));
    s_rate_row("add_batch(256), 4 threads at once", n / four / S_WRITERS, "/s a thread", r,
               S_SEED_4W, S_TARGET_4W);
    return 0;
}

/* Sampling, uniform and prioritized (beta 0.4, priorities 0.1..10), each
   with gather, beside a plain gather. Returns 0, or -1. */
static int s_table_samples(s_bench_t *b)
{
    char r[96], c[32];
    double g = b->gathers;
    uint64_t cap = vl_rbuf_capacity(b->big.rb), *idx = malloc(cap * sizeof *idx);
    double *p = malloc(cap * sizeof *p);
    for (uint64_t i = 0; idx && p && i < cap; i++)
        idx[i] = i, p[i] = 0.1 + 10 * vl_rng_uniform(&b->rng);
    if (idx && p)
        vl_rbuf_update_priorities(b->big.rb, idx, p, cap);
    free(idx), free(p);
    s_run_plain_gather(b); // a warm-up: the first batches of a process run slow
    const s_case_t cases[] = {{"plain gather", s_run_plain_gather},
                              {"uniform", s_run_uniform},
                              {"prioritized", s_run_prioritized}};
    double t[3];
    if (s_best(b, cases, 3, t) < 0)
        return -1;
    double plain = t[0], uni = t[1], pri = t[2];
    snprintf(r, sizeof r, "plain gather %s/s", s_count(c, g / plain));
    s_rate_row("sample(256) prioritized + gather", g / pri, "/s", r, S_SEED_SAMPLE,
               S_TARGET_SAMPLE);
    s_rate_row("sample(256) uniform + gather", g / uni, "/s", r, S_SEED_SAMPLE, S_TARGET_SAMPLE);
    return 0;
}

/* Prints a row of seconds, the C++ buffer's and the target scaled to the samples. */
static void s_time_row(const char *op, const char *figure, double secs, const char *ref,
                       double seed, double target)
{
    char sd[32], t[32];
    snprintf(sd, sizeof sd, "%.2f s", seed);
    snprintf(t, sizeof t, "< %.3g s", target);
    s_row(op, figure, ref, sd, t, secs < target);
}

/* Save and load beside write()+fsync, read() and first touch of as many
   bytes. Returns 0, or -1. */
static int s_table_files(s_bench_t *b)
{
    char f[64], r[96];
    double scale = (double)b->samples / S_SAMPLES;
    const s_case_t cases[] = {{"write", s_run_write},
                              {"read", s_run_read},
                              {"touch", s_run_touch},
                              {"save", s_run_save},
                              {"load", s_run_load}};
    double t[5];
    int rc = s_best(b, cases, 5, t);
    double w = t[0], rd = t[1], touch = t[2], save = t[3], load = t[4];
    unlink(b->raw_path);
    FILE *fp = fopen(b->path, "rb");
    long size = fp && fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    if (fp)
        fclose(fp);
    unlink(b->path);
    if (rc < 0)
        return -1;
    snprintf(f, sizeof f, "%.3f s (%.0f MB file)", save, (double)size / 1e6);
    snprintf(r, sizeof r, "write()+fsync %.3f s", w);
    s_time_row("save (ends with fsync)", f, save, r, S_SEED_SAVE * scale, S_TARGET_SAVE * scale);
    snprintf(f, sizeof f, "%.3f s", load);
    snprintf(r, sizeof r, "read() %.3f s; first touch %.3f s", rd, touch);
    s_time_row("load", f, load, r, S_SEED_LOAD * scale, S_TARGET_LOAD * scale);
    return 0;
}

/* CartPole: add_batch(256) beside memcpy. Returns 0, or -1. */
static int s_table_cartpole(s_bench_t *b)
{
    char r[96], c[32];
    double n = (double)b->cp.samples;
    s_add(&b->cp, vl_rbuf_capacity(b->cp.rb), 0); // first fill: fresh memory
    const s_case_t cases[] = {{"memcpy", s_run_cp_memcpy}, {"add", s_run_cp_add}};
    double t[2];
    if (s_best(b, cases, 2, t) < 0)
        return -1;
    double cp = t[0], add = t[1];
    snprintf(r, sizeof r, "memcpy %s/s", s_count(c, n / cp));
    s_rate_row("CartPole add_batch(256), 1 thread", n / add, "/s", r, 0, S_TARGET_CP);
    return 0;
}

/* ---- main -------------------------------------------------------------------------------------
 */

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: vl_rbuf_bench [--samples N] [--runs R] [--dir D] [--noise] [--quick] [--help]\n"
            "  --samples N  buffer capacity and samples a run adds (default %d; save and load\n"
            "               figures and targets scale with N)\n"
            "  --runs R     runs a case, the best counts (default %d)\n"
            "  --dir D      where save writes (default /tmp)\n"
            "  --noise      random float observations instead of board planes\n"
            "  --quick      a small, fast run for the tests\n",
            S_SAMPLES, S_RUNS);
}

/* Parses the flags into b. Returns 0 to run, 1 to exit 0, 2 to exit 2. */
static int s_parse(int argc, char **argv, s_bench_t *b, const char **dir)
{
    *b = (s_bench_t){.samples = S_SAMPLES, .runs = S_RUNS, .gathers = S_GATHERS};
    b->cp.samples = S_CP_ADDS;
    uint64_t cp_cap = S_CP_CAP;
    for (int i = 1; i < argc; i++) {
        int more = i + 1 < argc;
        if (strcmp(argv[i], "--help") == 0) {
            s_usage(stdout);
            return 1;
        } else if (strcmp(argv[i], "--quick") == 0) {
            b->samples = 2048, b->runs = 1, b->gathers = 10;
            b->cp.samples = 4 * 65536, cp_cap = 65536;
        } else if (strcmp(argv[i], "--noise") == 0) {
            b->noise = 1;
        } else if (more && strcmp(argv[i], "--samples") == 0) {
            b->samples = strtoull(argv[++i], NULL, 10);
        } else if (more && strcmp(argv[i], "--runs") == 0) {
            b->runs = atoi(argv[++i]);
        } else if (more && strcmp(argv[i], "--dir") == 0) {
            *dir = argv[++i];
        } else {
            fprintf(stderr, "vl_rbuf_bench: bad argument '%s'\n", argv[i]);
            s_usage(stderr);
            return 2;
        }
    }
    b->big.samples = b->samples;
    b->cp.samples = b->cp.samples / cp_cap * cp_cap;
    b->cp_cap = cp_cap;
    if (b->samples < S_WRITERS * S_BATCH || b->samples > (1u << 30) || b->runs < 1) {
        fprintf(stderr, "vl_rbuf_bench: --samples %d..2^30, --runs >= 1\n", S_WRITERS * S_BATCH);
        return 2;
    }
    return 0;
}

static int s_setup(s_bench_t *b)
{
    const vl_rbuf_field_t big[] = {
        {.name = "obs", .dtype = VL_RBUF_F32, .ndim = 3, .shape = {S_HISTORY * S_PIECES, 8, 8}},
        {.name = "policy", .dtype = VL_RBUF_F32, .ndim = 1, .shape = {S_POLICY}},
        {.name = "value", .dtype = VL_RBUF_F32},
    };
    const vl_rbuf_field_t cp[] = {
        {.name = "obs", .dtype = VL_RBUF_F32, .ndim = 1, .shape = {4}},
        {.name = "action", .dtype = VL_RBUF_I32},
        {.name = "reward", .dtype = VL_RBUF_F32},
    };
    if (s_set_new(&b->big, b->samples, big, s_make_boards, b->noise) < 0 ||
        s_set_new(&b->cp, b->cp_cap, cp, s_make_cartpole, 0) < 0)
        return -1;
    for (uint32_t f = 0; f < 3; f++)
        if (!(b->out[f] = malloc(S_BATCH * b->big.bytes[f])))
            return -1;
        else // touched now, not in the first gather timed
            memset(b->out[f], 0, S_BATCH * b->big.bytes[f]);
    vl_rng_seed(&b->rng, 2);
    return 0;
}

int main(int argc, char **argv)
{
    s_bench_t b;
    const char *dir = "/tmp";
    int rc = s_parse(argc, argv, &b, &dir);
    if (rc)
        return rc == 1 ? 0 : 2;
    snprintf(b.path, sizeof b.path, "%s/vl_rbuf_bench.%ld.rbuf", dir, (long)getpid());
    snprintf(b.raw_path, sizeof b.raw_path, "%s/vl_rbuf_bench.%ld.raw", dir, (long)getpid());
    if (s_setup(&b) < 0) {
        fprintf(stderr, "vl_rbuf_bench: out of memory\n");
        return 1;
    }
    double t = s_now();
    s_add(&b.big, b.samples, 0); // first fill: fresh memory, untimed below
    t = s_now() - t;
    double load_avg = -1;
    getloadavg(&load_avg, 1);
    size_t row = b.big.bytes[0] + b.big.bytes[1] + b.big.bytes[2];
    printf("%llu samples x %zu bytes = %.2f GB (%s), first fill %.2f s; CartPole %llu of %zu "
           "bytes; best of %d, %ld cores, load average %.2f\n",
           (unsigned long long)b.samples, row, (double)b.samples * (double)row / 1e9,
           b.noise ? "random floats" : "board planes", t,
           (unsigned long long)vl_rbuf_capacity(b.cp.rb),
           b.cp.bytes[0] + b.cp.bytes[1] + b.cp.bytes[2], b.runs, sysconf(_SC_NPROCESSORS_ONLN),
           load_avg);
    s_header();
    rc = s_table_adds(&b) || s_table_samples(&b) || s_table_files(&b) || s_table_cartpole(&b);
    s_set_destroy(&b.big);
    s_set_destroy(&b.cp);
    for (uint32_t f = 0; f < 3; f++)
        free(b.out[f]);
    return rc ? 1 : 0;
}
