/*  vl_checkpoint_bench: saving and loading a learner's replay buffer with
    vl_checkpoint, beside references measured in the same run on the same
    bytes (lz4's tests/fullbench.c is the model).

    The target: 50,000 samples of 48,000 bytes of pixel-like data saved in
    < 1 s and loaded in < 0.5 s; the C++ self-play buffer this replaces
    took 7.6 s and 3.2 s. A sample here is a stack of 4 frames of
    a 100 x 120 2-bit screen, one byte a pixel (values 0..3): a background
    drawn once per 500-frame episode (sky with stars, platforms, brick
    ground, a HUD bar) under an 8x8 player and four 6x6 enemies that move
    every frame. Consecutive samples are consecutive steps, so each repeats
    three of the previous one's frames, as a frame-stacking buffer holds them.
    --noise flips that many pixels per thousand at random, for data LZ4
    likes less.

    Every case runs --runs times and the best counts; a load is compared
    byte for byte with what was saved before its figure is printed. Files
    are read back from a warm page cache (dropping it would disturb the
    whole machine): both the checkpoint and the plain-read reference. All
    GB/s are raw (uncompressed) bytes per second. */
#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/vl_crc32c.h"
#include "common/vl_log.h"
#include "common/vl_rng.h"
#include "store/vl_checkpoint.h"

#define S_SAMPLES      50000 // the buffer
#define S_SAMPLE_BYTES 48000 // the C++ self-play buffer's sample
#define S_TARGET_SAVE  1.0   // seconds for S_SAMPLES samples
#define S_TARGET_LOAD  0.5
#define S_RUNS         3
#define S_MIN_FREE     10e9 // bytes free in the directory below which we scale down
#define S_H            100  // screen rows
#define S_W            120  // screen columns
#define S_STACK        4    // frames per sample
#define S_FRAME        (S_H * S_W)
#define S_EPISODE      500 // frames per background
#define S_ENEMIES      4
#define S_GROUND       88 // first ground row

/* ---- the pixel-like data -------------------------------------------------- */

typedef struct {
    int x, y, dx, dy;
} s_sprite_t;

typedef struct {
    vl_rng_t rng;
    uint8_t bg[S_H][S_W];
    s_sprite_t player, enemies[S_ENEMIES];
    int frame;
    int noise; // pixels per thousand flipped at random
} s_game_t;

static int s_between(vl_rng_t *rng, int lo, int hi)
{
    return lo + (int)(vl_rng_next(rng) % (uint64_t)(hi - lo + 1));
}

static void s_new_episode(s_game_t *g)
{
    memset(g->bg, 0, sizeof g->bg);
    memset(g->bg[0], 2, 3 * S_W); // HUD
    for (int i = 0; i < 30; i++)
        g->bg[s_between(&g->rng, 4, S_GROUND - 1)][s_between(&g->rng, 0, S_W - 1)] = 1;
    for (int i = 0; i < 6; i++) {
        int r = s_between(&g->rng, 16, S_GROUND - 4), len = s_between(&g->rng, 10, 40);
        int c = s_between(&g->rng, 0, S_W - len);
        memset(&g->bg[r][c], 1, (size_t)len);
        memset(&g->bg[r + 1][c], 1, (size_t)len);
    }
    for (int r = S_GROUND; r < S_H; r++)
        for (int c = 0; c < S_W; c++)
            g->bg[r][c] = (r % 4 == 0 || (c + 4 * (r / 4 % 2)) % 8 == 0) ? 2 : 1;
    g->player = (s_sprite_t){S_W / 2, S_GROUND - 8, 2, 0};
    for (int e = 0; e < S_ENEMIES; e++)
        g->enemies[e] =
            (s_sprite_t){s_between(&g->rng, 0, S_W - 6), s_between(&g->rng, 4, 80),
                         s_between(&g->rng, 0, 1) ? 1 : -1, s_between(&g->rng, 0, 1) ? 1 : -1};
}

static void s_move(s_sprite_t *s, int side, int top, int bottom)
{
    s->x += s->dx, s->y += s->dy;
    if (s->x < 0 || s->x > S_W - side)
        s->dx = -s->dx, s->x += 2 * s->dx;
    if (s->y < top || s->y > bottom - side)
        s->dy = -s->dy, s->y += 2 * s->dy;
}

/* Advances the game one frame and draws it into out[S_FRAME]. */
static void s_step(s_game_t *g, uint8_t *out)
{
    if (g->frame++ % S_EPISODE == 0)
        s_new_episode(g);
    if (vl_rng_next(&g->rng) % 8 == 0)
        g->player.dx = (int)(vl_rng_next(&g->rng) % 5) - 2;
    s_move(&g->player, 8, 4, S_GROUND);
    for (int e = 0; e < S_ENEMIES; e++)
        s_move(&g->enemies[e], 6, 4, S_GROUND);
    memcpy(out, g->bg, S_FRAME);
    for (int e = 0; e < S_ENEMIES; e++)
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++)
                if (abs(2 * i - 5) + abs(2 * j - 5) <= 6)
                    out[(g->enemies[e].y + i) * S_W + g->enemies[e].x + j] = 3;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            out[(g->player.y + i) * S_W + g->player.x + j] =
                (i == 0 || j == 0 || i == 7 || j == 7) ? 3 : 2;
    out[1 * S_W + 2 + (g->frame / 10) % 100] = 3; // a moving HUD mark
    for (int k = g->noise * S_FRAME / 1000; k > 0; k--)
        out[vl_rng_next(&g->rng) % S_FRAME] = (uint8_t)(vl_rng_next(&g->rng) % 4);
}

/* Fills n samples of sample_bytes: frame stacks of consecutive steps. */
static void s_fill(uint8_t *buf, size_t n, size_t sample_bytes, int noise)
{
    s_game_t g = {.noise = noise};
    vl_rng_seed(&g.rng, 0);
    uint8_t stack[S_STACK * S_FRAME];
    for (int f = 0; f < S_STACK; f++)
        s_step(&g, stack + f * S_FRAME);
    for (size_t i = 0; i < n; i++) {
        memmove(stack, stack + S_FRAME, (S_STACK - 1) * S_FRAME);
        s_step(&g, stack + (S_STACK - 1) * S_FRAME);
        for (size_t at = 0; at < sample_bytes; at += sizeof stack) { // other sizes: repeat/cut
            size_t k = sample_bytes - at < sizeof stack ? sample_bytes - at : sizeof stack;
            memcpy(buf + i * sample_bytes + at, stack, k);
        }
    }
}

/* ---- the cases ------------------------------------------------------------ */

typedef struct {
    const char *dir;
    char ck_path[600], raw_path[600];
    uint8_t *data; // the samples
    size_t bytes;
    uint8_t *dst; // as many bytes, already touched: where copies go
    vl_section_t sections[3];
    char **lz4_out; // one LZ4 block per chunk, for the bare LZ4 cases
    int *lz4_len;
    size_t n_chunks;
    uint64_t lz4_bytes, file_bytes;
    int threads;
    uint32_t chunk_size; // 0: the default
    int acceleration;    // 0: the default
} s_bench_t;

typedef struct {
    const char *name;
    double (*run)(s_bench_t *b); // returns seconds, or -1 if the output was wrong
    int threads;
    int is_save, is_load;
} s_case_t;

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double s_memcpy(s_bench_t *b)
{
    double t = s_now();
    memcpy(b->dst, b->data, b->bytes);
    t = s_now() - t;
    return memcmp(b->dst, b->data, b->bytes) == 0 ? t : -1;
}

static double s_crc(s_bench_t *b)
{
    static uint32_t want;
    if (!want) // the table code, once, checks the fast path
        want = vl_crc32c_sw(0, b->data, b->bytes);
    double t = s_now();
    uint32_t crc = vl_crc32c(0, b->data, b->bytes);
    t = s_now() - t;
    return crc == want ? t : -1;
}

static double s_lz4c(s_bench_t *b)
{
    double t = s_now();
    b->lz4_bytes = 0;
    for (size_t i = 0; i < b->n_chunks; i++) {
        size_t at = i * VL_CHECKPOINT_CHUNK, n = b->bytes - at;
        n = n < VL_CHECKPOINT_CHUNK ? n : VL_CHECKPOINT_CHUNK;
        b->lz4_len[i] = LZ4_compress_fast((const char *)b->data + at, b->lz4_out[i], (int)n,
                                          LZ4_compressBound(VL_CHECKPOINT_CHUNK), 1);
        b->lz4_bytes += (uint64_t)b->lz4_len[i];
    }
    return s_now() - t;
}

static double s_lz4d(s_bench_t *b)
{
    int bad = 0;
    double t = s_now();
    for (size_t i = 0; i < b->n_chunks; i++) {
        size_t at = i * VL_CHECKPOINT_CHUNK, n = b->bytes - at;
        n = n < VL_CHECKPOINT_CHUNK ? n : VL_CHECKPOINT_CHUNK;
        bad |= LZ4_decompress_safe(b->lz4_out[i], (char *)b->dst + at, b->lz4_len[i], (int)n) !=
               (int)n;
    }
    t = s_now() - t;
    return !bad && memcmp(b->dst, b->data, b->bytes) == 0 ? t : -1;
}

static double s_write_raw(s_bench_t *b)
{
    double t = s_now();
    int fd = open(b->raw_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int ok = fd >= 0;
    for (size_t at = 0; ok && at < b->bytes;) {
        ssize_t k = write(fd, b->data + at, b->bytes - at);
        ok = k > 0;
        at += ok ? (size_t)k : 0;
    }
    ok = ok && fsync(fd) == 0;
    if (fd >= 0)
        ok = close(fd) == 0 && ok;
    return ok ? s_now() - t : -1;
}

/* read() into a fresh buffer, as a loader would. */
static double s_read_raw(s_bench_t *b)
{
    double t = s_now();
    uint8_t *buf = malloc(b->bytes);
    int fd = open(b->raw_path, O_RDONLY);
    int ok = buf && fd >= 0;
    for (size_t at = 0; ok && at < b->bytes;) {
        ssize_t k = read(fd, buf + at, b->bytes - at);
        ok = k > 0;
        at += ok ? (size_t)k : 0;
    }
    t = s_now() - t;
    if (fd >= 0)
        close(fd);
    ok = ok && memcmp(buf, b->data, b->bytes) == 0;
    free(buf);
    return ok ? t : -1;
}

static double s_save(s_bench_t *b)
{
    vl_checkpoint_opts_t o = {
        .threads = b->threads, .chunk_size = b->chunk_size, .acceleration = b->acceleration};
    double t = s_now();
    int rc = vl_checkpoint_write_opts(b->ck_path, b->sections, 3, &o);
    t = s_now() - t;
    FILE *f = fopen(b->ck_path, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0)
        b->file_bytes = (uint64_t)ftell(f);
    if (f)
        fclose(f);
    return rc == 0 ? t : -1;
}

static double s_load(s_bench_t *b)
{
    vl_checkpoint_opts_t o = {.threads = b->threads};
    char why[256] = "";
    double t = s_now();
    vl_checkpoint_t *ck = vl_checkpoint_read_opts(b->ck_path, &o, why, sizeof why);
    t = s_now() - t;
    int ok = ck != NULL;
    for (int i = 0; ok && i < 3; i++) {
        size_t n;
        const void *p = vl_checkpoint_get(ck, b->sections[i].name, &n);
        ok = p && n == b->sections[i].size && memcmp(p, b->sections[i].data, n) == 0;
    }
    if (!ck)
        fprintf(stderr, "vl_checkpoint_bench: load refused: %s\n", why);
    vl_checkpoint_destroy(&ck);
    return ok ? t : -1;
}

static const s_case_t s_cases[] = {
    {.name = "memcpy", .run = s_memcpy},
    {.name = "crc32c", .run = s_crc},
    {.name = "LZ4_compress_fast, 1 MiB blocks", .run = s_lz4c},
    {.name = "LZ4_decompress_safe", .run = s_lz4d},
    {.name = "write() + fsync, raw bytes", .run = s_write_raw},
    {.name = "read() into a new buffer, raw", .run = s_read_raw},
    {.name = "checkpoint save, 1 thread", .run = s_save, .threads = 1, .is_save = 1},
    {.name = "checkpoint save, 2 threads", .run = s_save, .threads = 2, .is_save = 1},
    {.name = "checkpoint load, 1 thread", .run = s_load, .threads = 1, .is_load = 1},
    {.name = "checkpoint load, 2 threads", .run = s_load, .threads = 2, .is_load = 1},
};

/* ---- main ------------------------------------------------------------------ */

static void s_usage(void)
{
    printf("usage: vl_checkpoint_bench [--samples N] [--sample-bytes B] [--noise P] [--runs R]\n"
           "                           [--dir D] [--help]\n"
           "  --samples N       samples in the buffer (default %d; targets scale with N)\n"
           "  --sample-bytes B  bytes per sample (default %d, the C++ self-play buffer's)\n"
           "  --noise P         pixels per thousand set at random (default 0)\n"
           "  --runs R          runs per case, the best counts (default %d)\n"
           "  --chunk-kib K     checkpoint chunk size in KiB (default %u)\n"
           "  --accel A         LZ4 acceleration for the checkpoint (default 1)\n"
           "  --dir D           where the files go (default /tmp); needs 10 GB free or the\n"
           "                    buffer is scaled down to fit\n"
           "  --help            this text\n",
           S_SAMPLES, S_SAMPLE_BYTES, S_RUNS, VL_CHECKPOINT_CHUNK / 1024);
}

/* Scales *samples down to what the directory's free space and the free
   memory hold, saying so. Returns 0, or -1 if the directory is unusable. */
static int s_fit(const char *dir, size_t sample_bytes, size_t *samples)
{
    struct statvfs vfs;
    if (statvfs(dir, &vfs) != 0) {
        fprintf(stderr, "vl_checkpoint_bench: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    double disk = (double)vfs.f_bavail * (double)vfs.f_frsize;
    double ram = (double)sysconf(_SC_AVPHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    printf("free: %.1f GB in %s, %.1f GB of memory\n", disk / 1e9, dir, ram / 1e9);
    size_t fit = *samples;
    if (disk < S_MIN_FREE) // the raw file, the checkpoint and its temp file
        fit = (size_t)(disk / 4 / (double)sample_bytes);
    if ((double)*samples * (double)sample_bytes * 5 > ram) // data, dst, a load, page cache
        fit = fit < (size_t)(ram / 5 / (double)sample_bytes)
                  ? fit
                  : (size_t)(ram / 5 / (double)sample_bytes);
    if (fit < *samples) {
        printf("scaled down from %zu to %zu samples to fit\n", *samples, fit);
        *samples = fit;
    }
    return *samples ? 0 : -1;
}

static int s_setup(s_bench_t *b, size_t samples, size_t sample_bytes, int noise)
{
    b->bytes = samples * sample_bytes;
    b->n_chunks = (b->bytes + VL_CHECKPOINT_CHUNK - 1) / VL_CHECKPOINT_CHUNK;
    b->data = malloc(b->bytes + 8 * samples);
    b->dst = malloc(b->bytes);
    b->lz4_out = calloc(b->n_chunks, sizeof *b->lz4_out);
    b->lz4_len = calloc(b->n_chunks, sizeof *b->lz4_len);
    if (!b->data || !b->dst || !b->lz4_out || !b->lz4_len)
        return -1;
    for (size_t i = 0; i < b->n_chunks; i++)
        if (!(b->lz4_out[i] = malloc((size_t)LZ4_compressBound(VL_CHECKPOINT_CHUNK))))
            return -1;
    memset(b->dst, 0, b->bytes);
    s_fill(b->data, samples, sample_bytes, noise);
    uint8_t *actions = b->data + b->bytes; // the rest of a buffer: actions and rewards
    float *rewards = (float *)(actions + 4 * samples);
    for (size_t i = 0; i < samples; i++) {
        actions[4 * i] = (uint8_t)(i * 7 % 5), actions[4 * i + 1] = 0;
        actions[4 * i + 2] = actions[4 * i + 3] = 0;
        rewards[i] = i % 97 == 0 ? 1.0f : 0.0f;
    }
    b->sections[0] = (vl_section_t){"samples", b->data, b->bytes};
    b->sections[1] = (vl_section_t){"actions", actions, 4 * samples};
    b->sections[2] = (vl_section_t){"rewards", rewards, 4 * samples};
    return 0;
}

static void s_teardown(s_bench_t *b)
{
    unlink(b->ck_path);
    unlink(b->raw_path);
    for (size_t i = 0; b->lz4_out && i < b->n_chunks; i++)
        free(b->lz4_out[i]);
    free(b->lz4_out);
    free(b->lz4_len);
    free(b->data);
    free(b->dst);
}

/* Runs every case, prints its best figure. Returns 0, or -1 on a wrong output. */
static int s_run_all(s_bench_t *b, int runs, double *best_save, double *best_load)
{
    printf("%-34s %9s %8s\n", "case", "seconds", "GB/s");
    *best_save = *best_load = 1e30;
    for (size_t c = 0; c < sizeof s_cases / sizeof s_cases[0]; c++) {
        const s_case_t *k = &s_cases[c];
        b->threads = k->threads;
        double best = 1e30;
        for (int r = 0; r < runs; r++) {
            double t = k->run(b);
            if (t < 0) {
                printf("%-34s WRONG OUTPUT\n", k->name);
                return -1;
            }
            best = t < best ? t : best;
        }
        printf("%-34s %9.3f %8.2f\n", k->name, best, (double)b->bytes / best / 1e9);
        fflush(stdout);
        if (k->is_save && best < *best_save)
            *best_save = best;
        if (k->is_load && best < *best_load)
            *best_load = best;
    }
    return 0;
}

int main(int argc, char **argv)
{
    size_t samples = S_SAMPLES, sample_bytes = S_SAMPLE_BYTES;
    int runs = S_RUNS, noise = 0;
    const char *dir = "/tmp";
    s_bench_t b = {0};
    for (int i = 1; i < argc; i++) {
        int more = i + 1 < argc;
        if (strcmp(argv[i], "--help") == 0) {
            s_usage();
            return 0;
        } else if (more && strcmp(argv[i], "--samples") == 0)
            samples = strtoull(argv[++i], NULL, 10);
        else if (more && strcmp(argv[i], "--sample-bytes") == 0)
            sample_bytes = strtoull(argv[++i], NULL, 10);
        else if (more && strcmp(argv[i], "--noise") == 0)
            noise = atoi(argv[++i]);
        else if (more && strcmp(argv[i], "--runs") == 0)
            runs = atoi(argv[++i]);
        else if (more && strcmp(argv[i], "--chunk-kib") == 0)
            b.chunk_size = (uint32_t)strtoul(argv[++i], NULL, 10) * 1024;
        else if (more && strcmp(argv[i], "--accel") == 0)
            b.acceleration = atoi(argv[++i]);
        else if (more && strcmp(argv[i], "--dir") == 0)
            dir = argv[++i];
        else {
            fprintf(stderr, "vl_checkpoint_bench: bad argument '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (!samples || !sample_bytes || runs < 1 || noise < 0 || noise > 1000) {
        fprintf(stderr, "vl_checkpoint_bench: bad sizes (see --help)\n");
        return 2;
    }
    if (s_fit(dir, sample_bytes, &samples) < 0)
        return 1;
    b.dir = dir;
    snprintf(b.ck_path, sizeof b.ck_path, "%s/vl_checkpoint_bench.%ld.ckpt", dir, (long)getpid());
    snprintf(b.raw_path, sizeof b.raw_path, "%s/vl_checkpoint_bench.%ld.raw", dir, (long)getpid());
    double t = s_now();
    if (s_setup(&b, samples, sample_bytes, noise) < 0) {
        fprintf(stderr, "vl_checkpoint_bench: out of memory\n");
        s_teardown(&b);
        return 1;
    }
    double load_avg = -1;
    getloadavg(&load_avg, 1);
    printf("%zu samples x %zu bytes = %.2f GB of pixel-like data (noise %d/1000, made in %.1f "
           "s), files in %s, best of %d, crc32c %s, %ld cores, load average %.2f\n",
           samples, sample_bytes, (double)b.bytes / 1e9, noise, s_now() - t, dir, runs,
           vl_crc32c_hw_available() ? "SSE4.2" : "table", sysconf(_SC_NPROCESSORS_ONLN), load_avg);
    double save, load;
    int rc = s_run_all(&b, runs, &save, &load);
    if (rc == 0) {
        double scale = (double)samples / S_SAMPLES;
        printf("bare LZ4: %.1f MB, ratio %.1f; checkpoint file: %.1f MB, ratio %.1f\n",
               (double)b.lz4_bytes / 1e6, (double)b.bytes / (double)b.lz4_bytes,
               (double)b.file_bytes / 1e6, (double)b.bytes / (double)b.file_bytes);
        if (samples != S_SAMPLES)
            printf("targets scaled to %zu samples: save < %.3f s, load < %.3f s\n", samples,
                   S_TARGET_SAVE * scale, S_TARGET_LOAD * scale);
        printf("target save < %.3g s: %s (%.3f s)\n", S_TARGET_SAVE * scale,
               save < S_TARGET_SAVE * scale ? "met" : "missed", save);
        printf("target load < %.3g s: %s (%.3f s)\n", S_TARGET_LOAD * scale,
               load < S_TARGET_LOAD * scale ? "met" : "missed", load);
    }
    s_teardown(&b);
    return rc == 0 ? 0 : 1;
}
