/*  Tests of vl_rbuf (include/volley/replay.h): fields of several dtypes and
    shapes through add and gather, the ring's wrap, four writers at once
    (every row whole), a sampler racing a writer (no row drawn before it is
    committed), prioritized draws and their weights, bad priorities, and
    save/load: round trips, refused overwrites, truncated, bit-flipped and
    hostile files. Files live in a mkdtemp directory under /tmp. */
#include "volley/replay.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/vl_log.h"
#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_checkpoint.h"

#define S_WRITERS 4
#define S_BODY    64 // int32 words of a test row's body

static char s_dir[64];

static const char *s_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", s_dir, name);
    return path;
}

/* ---- rows that say who wrote them ------------------------------------------- */

/* Fields of a tagged row: its tag (writer << 32 | sequence), a body derived
   from the tag, and the tag again, so a row torn across fields shows. */
static const vl_rbuf_field_t s_tagged[] = {
    {.name = "tag", .dtype = VL_RBUF_I64},
    {.name = "body", .dtype = VL_RBUF_I32, .ndim = 1, .shape = {S_BODY}},
    {.name = "tag2", .dtype = VL_RBUF_I64},
};

static int32_t s_word(uint64_t tag, uint32_t k)
{
    uint64_t x = tag * 0x9e3779b97f4a7c15ull + k;
    return (int32_t)(x ^ (x >> 29));
}

/* Fills rows [n] of the tagged fields for tags first, first + 1, ... */
static void s_make_rows(uint64_t first, uint64_t n, int64_t *tag, int32_t *body, int64_t *tag2)
{
    for (uint64_t r = 0; r < n; r++) {
        tag[r] = tag2[r] = (int64_t)(first + r);
        for (uint32_t k = 0; k < S_BODY; k++)
            body[r * S_BODY + k] = s_word(first + r, k);
    }
}

/* Returns 1 if a gathered tagged row is whole and was written (tag != 0). */
static int s_row_whole(int64_t tag, const int32_t *body, int64_t tag2)
{
    if (tag == 0 || tag != tag2)
        return 0;
    for (uint32_t k = 0; k < S_BODY; k++)
        if (body[k] != s_word((uint64_t)tag, k))
            return 0;
    return 1;
}

static vl_rbuf_t *s_new_tagged(uint64_t capacity)
{
    char why[256] = "";
    vl_rbuf_t *b = vl_rbuf_new(capacity, s_tagged, 3, 7, why, sizeof why);
    if (!b)
        fprintf(stderr, "vl_rbuf_new: %s\n", why);
    return b;
}

/* Adds n tagged rows with tags first .. first + n - 1. Returns add_batch's result. */
static uint64_t s_add_tagged(vl_rbuf_t *b, uint64_t first, uint64_t n)
{
    int64_t *tag = malloc(n * 8), *tag2 = malloc(n * 8);
    int32_t *body = malloc(n * S_BODY * 4);
    s_make_rows(first, n, tag, body, tag2);
    const void *data[] = {tag, body, tag2};
    uint64_t row = vl_rbuf_add_batch(b, data, n);
    free(tag), free(body), free(tag2);
    return row;
}

/* Gathers row r into *tag and body[S_BODY]. Returns 1 if it is whole. */
static int s_gather_tagged(vl_rbuf_t *b, uint64_t r, int64_t *tag)
{
    int32_t body[S_BODY];
    int64_t tag2;
    void *out[] = {tag, body, &tag2};
    vl_rbuf_gather(b, &r, 1, out);
    return s_row_whole(*tag, body, tag2);
}

/* ---- fields and the ring ------------------------------------------------------ */

static void test_new_refuses_bad_fields(void)
{
    vl_rbuf_field_t ok = {.name = "obs", .dtype = VL_RBUF_F32, .ndim = 1, .shape = {4}};
    struct {
        vl_rbuf_field_t f[2];
        uint32_t n;
        uint64_t capacity;
        const char *why;
    } bad[] = {
        {{{.name = "", .dtype = VL_RBUF_F32}}, 1, 8, "name"},
        {{{.name = "a\nb", .dtype = VL_RBUF_F32}}, 1, 8, "printable"},
        {{{.name = "x", .dtype = 9}}, 1, 8, "dtype"},
        {{{.name = "x", .ndim = 5}}, 1, 8, "dimensions"},
        {{{.name = "x", .ndim = 2, .shape = {3, 0}}}, 1, 8, "dimension 1"},
        {{ok, ok}, 2, 8, "two fields named 'obs'"},
        {{ok}, 0, 8, "0 fields"},
        {{ok}, 17, 8, "17 fields"},
        {{ok}, 1, 0, "capacity 0"},
        {{ok}, 1, (1ull << 30) + 1, "2^30"},
        // 16,777,217 rows of 2^40 bytes: rounding the product up to a huge page wrapped to 0
        {{{.name = "x", .dtype = VL_RBUF_U8, .ndim = 2, .shape = {256, 4294967040u}}},
         1,
         16777217,
         "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char why[256] = "";
        vl_rbuf_t *b = vl_rbuf_new(bad[i].capacity, bad[i].f, bad[i].n, 1, why, sizeof why);
        VL_CHECK(b == NULL);
        if (!strstr(why, bad[i].why))
            fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, why, bad[i].why);
        VL_CHECK(strstr(why, bad[i].why) != NULL);
    }
    vl_rbuf_field_t unterminated = ok;
    memset(unterminated.name, 'a', sizeof unterminated.name);
    VL_CHECK(vl_rbuf_new(8, &unterminated, 1, 1, NULL, 0) == NULL);
}

static void test_fields_round_trip(void)
{
    vl_rbuf_field_t f[] = {
        {.name = "obs", .dtype = VL_RBUF_F32, .ndim = 2, .shape = {2, 3}},
        {.name = "pixels", .dtype = VL_RBUF_U8, .ndim = 1, .shape = {5}},
        {.name = "action", .dtype = VL_RBUF_I32},
        {.name = "step", .dtype = VL_RBUF_I64, .ndim = 1, .shape = {2}},
        {.name = "return", .dtype = VL_RBUF_F64},
    };
    vl_rbuf_t *b = vl_rbuf_new(16, f, 5, 1, NULL, 0);
    VL_CHECK(b && vl_rbuf_n_fields(b) == 5 && vl_rbuf_capacity(b) == 16);
    size_t want[] = {24, 5, 4, 16, 8};
    uint8_t in[5][10 * 24], out[5][3 * 24];
    for (uint32_t i = 0; i < 5; i++) {
        VL_CHECK(vl_rbuf_field_bytes(b, i) == want[i]);
        VL_CHECK((uintptr_t)vl_rbuf_field_data(b, i) % 64 == 0);
        for (size_t k = 0; k < sizeof in[i]; k++)
            in[i][k] = (uint8_t)(31 * i + 7 * k + 1);
    }
    VL_CHECK(vl_rbuf_field_bytes(b, 5) == 0 && vl_rbuf_field_data(b, 5) == NULL);
    VL_CHECK(strcmp(vl_rbuf_field(b, 3)->name, "step") == 0 && vl_rbuf_field(b, 5) == NULL);
    const void *data[] = {in[0], in[1], in[2], in[3], in[4]};
    VL_CHECK(vl_rbuf_add_batch(b, data, 10) == 0 && vl_rbuf_size(b) == 10);
    uint64_t idx[] = {9, 0, 4};
    void *dst[] = {out[0], out[1], out[2], out[3], out[4]};
    vl_rbuf_gather(b, idx, 3, dst);
    for (uint32_t i = 0; i < 5; i++)
        for (int k = 0; k < 3; k++)
            VL_CHECK(memcmp(out[i] + k * want[i], in[i] + idx[k] * want[i], want[i]) == 0);
    VL_CHECK(memcmp(vl_rbuf_field_data(b, 0), in[0], 10 * want[0]) == 0); // the zero-copy view
    vl_rbuf_destroy(&b);
    vl_rbuf_destroy(&b);
    VL_CHECK(b == NULL);
}

static void test_wrap_overwrites_oldest(void)
{
    vl_rbuf_t *b = s_new_tagged(8);
    VL_CHECK(b);
    VL_CHECK(s_add_tagged(b, 1, 5) == 0);
    VL_CHECK(vl_rbuf_size(b) == 5);
    VL_CHECK(s_add_tagged(b, 6, 6) == 5); // rows 5, 6, 7, then 0, 1, 2
    VL_CHECK(vl_rbuf_size(b) == 8);
    int64_t want[8] = {9, 10, 11, 4, 5, 6, 7, 8}, tag;
    for (uint64_t r = 0; r < 8; r++) {
        VL_CHECK(s_gather_tagged(b, r, &tag));
        VL_CHECK(tag == want[r]);
    }
    VL_CHECK(s_add_tagged(b, 100, 0) == 3); // where the next sample goes
    vl_rbuf_destroy(&b);
}

static void test_batch_larger_than_capacity(void)
{
    vl_rbuf_t *b = s_new_tagged(8);
    VL_CHECK(b);
    VL_CHECK(s_add_tagged(b, 1, 3) == 0);
    VL_CHECK(s_add_tagged(b, 101, 20) == 3); // samples 3..22: only the last 8 stay
    VL_CHECK(vl_rbuf_size(b) == 8);
    for (uint64_t r = 0; r < 8; r++) {
        int64_t tag;
        VL_CHECK(s_gather_tagged(b, r, &tag));
        uint64_t seq = (uint64_t)tag - 101 + 3; // sample number
        VL_CHECK(seq >= 15 && seq < 23 && seq % 8 == r);
    }
    vl_rbuf_destroy(&b);
}

/* ---- threads -------------------------------------------------------------------- */

typedef struct {
    vl_rbuf_t *b;
    uint32_t writer;
    uint64_t rows; // how many this writer adds
    _Atomic int *done;
} s_writer_t;

/* Adds rows tagged writer << 32 | 1.., in batches of 1..37. */
static void *s_writer(void *arg)
{
    s_writer_t *w = arg;
    vl_rng_t rng;
    vl_rng_seed(&rng, w->writer);
    for (uint64_t at = 0; at < w->rows;) {
        uint64_t n = 1 + vl_rng_below(&rng, 37);
        n = n < w->rows - at ? n : w->rows - at;
        s_add_tagged(w->b, ((uint64_t)w->writer << 32) | (at + 1), n);
        at += n;
    }
    if (w->done)
        atomic_store(w->done, 1);
    return NULL;
}

static void s_run_writers(vl_rbuf_t *b, uint64_t rows_each)
{
    pthread_t t[S_WRITERS];
    s_writer_t w[S_WRITERS];
    for (uint32_t i = 0; i < S_WRITERS; i++) {
        w[i] = (s_writer_t){.b = b, .writer = i + 1, .rows = rows_each};
        pthread_create(&t[i], NULL, s_writer, &w[i]);
    }
    for (int i = 0; i < S_WRITERS; i++)
        pthread_join(t[i], NULL);
}

static void test_threads_fill_exactly(void)
{
    enum { EACH = 3000 };
    vl_rbuf_t *b = s_new_tagged(S_WRITERS * EACH);
    VL_CHECK(b);
    s_run_writers(b, EACH);
    VL_CHECK(vl_rbuf_size(b) == S_WRITERS * EACH);
    static uint8_t seen[S_WRITERS][EACH];
    memset(seen, 0, sizeof seen);
    for (uint64_t r = 0; r < S_WRITERS * EACH; r++) {
        int64_t tag;
        VL_CHECK(s_gather_tagged(b, r, &tag));
        uint64_t writer = (uint64_t)tag >> 32, seq = (uint64_t)tag & 0xffffffffu;
        VL_CHECK(writer >= 1 && writer <= S_WRITERS && seq >= 1 && seq <= EACH);
        VL_CHECK(!seen[writer - 1][seq - 1]); // no sample twice...
        seen[writer - 1][seq - 1] = 1;
    } // ...so, as many rows as samples, every sample once
    vl_rbuf_destroy(&b);
}

static void test_threads_wrap_intact(void)
{
    enum { CAPACITY = 100, EACH = 20000 }; // writers lap one another: rows fought over
    vl_rbuf_t *b = s_new_tagged(CAPACITY);
    VL_CHECK(b);
    s_run_writers(b, EACH);
    VL_CHECK(vl_rbuf_size(b) == CAPACITY);
    for (uint64_t r = 0; r < CAPACITY; r++) {
        int64_t tag;
        VL_CHECK(s_gather_tagged(b, r, &tag));
        VL_CHECK((uint64_t)tag >> 32 >= 1 && (uint64_t)tag >> 32 <= S_WRITERS);
    }
    VL_CHECK(s_add_tagged(b, 1, 0) == (S_WRITERS * EACH) % CAPACITY);
    vl_rbuf_destroy(&b);
}

/* One writer fills the buffer while this thread samples (uniform and
   prioritized in turn) and checks every drawn row is whole. */
static void test_sample_sees_only_committed_rows(void)
{
    enum { ROWS = 200000, N = 64 };
    vl_rbuf_t *b = s_new_tagged(ROWS); // no wrap: a row drawn stays as it was
    VL_CHECK(b);
    _Atomic int done = 0;
    s_writer_t w = {.b = b, .writer = 1, .rows = ROWS, .done = &done};
    pthread_t t;
    pthread_create(&t, NULL, s_writer, &w);
    uint64_t idx[N], draws = 0, bad = 0;
    int64_t tag[N], tag2[N];
    static int32_t body[N * S_BODY];
    void *out[] = {tag, body, tag2};
    for (int round = 0; !atomic_load(&done) || round < 2; round++) {
        uint64_t got = vl_rbuf_sample(b, N, round % 2 ? 0.5f : -1.0f, idx, NULL);
        vl_rbuf_gather(b, idx, got, out);
        for (uint64_t k = 0; k < got; k++)
            bad += !s_row_whole(tag[k], body + k * S_BODY, tag2[k]);
        draws += got;
    }
    pthread_join(t, NULL);
    printf("     %llu rows drawn while written\n", (unsigned long long)draws);
    VL_CHECK(bad == 0 && draws > 0);
    vl_rbuf_destroy(&b);
}

/* A writer keeps overwriting a small ring while this thread samples and
   gathers: rows drawn may be rewritten before they are copied, yet every
   row gathered is whole (the seqlock), and draws on rows being written are
   drawn again. */
static void test_gather_whole_while_overwritten(void)
{
    enum { CAPACITY = 256, ROWS = 300000, N = 64 };
    vl_rbuf_t *b = s_new_tagged(CAPACITY);
    VL_CHECK(b);
    s_add_tagged(b, 1, CAPACITY); // full from the start: every draw is over the ring
    _Atomic int done = 0;
    s_writer_t w = {.b = b, .writer = 2, .rows = ROWS, .done = &done};
    pthread_t t;
    pthread_create(&t, NULL, s_writer, &w);
    uint64_t idx[N], draws = 0, bad = 0;
    int64_t tag[N], tag2[N];
    static int32_t body[N * S_BODY];
    void *out[] = {tag, body, tag2};
    for (int round = 0; !atomic_load(&done); round++) {
        uint64_t got = vl_rbuf_sample(b, N, round % 2 ? 0.5f : -1.0f, idx, NULL);
        vl_rbuf_gather(b, idx, got, out);
        for (uint64_t k = 0; k < got; k++)
            bad += !s_row_whole(tag[k], body + k * S_BODY, tag2[k]);
        draws += got;
    }
    pthread_join(t, NULL);
    VL_CHECK(bad == 0 && draws > 0);
    vl_rbuf_destroy(&b);
}

/* ---- priorities ------------------------------------------------------------------ */

static void test_prioritized_follows_priorities(void)
{
    vl_rbuf_t *b = s_new_tagged(4);
    VL_CHECK(b);
    s_add_tagged(b, 1, 4);
    uint64_t rows[] = {0, 1, 2, 3}, idx[256], count[4] = {0};
    double p[] = {0.0, 1.0, 2.0, 1.0};
    vl_rbuf_update_priorities(b, rows, p, 4);
    VL_CHECK(vl_rbuf_rejected(b) == 0);
    for (int round = 0; round < 200; round++) {
        VL_CHECK(vl_rbuf_sample(b, 256, 0.4f, idx, NULL) == 256);
        for (int k = 0; k < 256; k++)
            count[idx[k]]++;
    }
    VL_CHECK(count[0] == 0);
    VL_CHECK_NEAR((double)count[2] / (double)(count[1] + count[3]), 1.0, 0.05);
    VL_CHECK_NEAR((double)count[1] / (double)count[3], 1.0, 0.05);
    vl_rbuf_destroy(&b);
}

static void test_weights_in_unit_interval(void)
{
    vl_rbuf_t *b = s_new_tagged(64);
    VL_CHECK(b);
    s_add_tagged(b, 1, 64);
    uint64_t rows[64], idx[300];
    double p[64];
    float w[300];
    for (int i = 0; i < 64; i++)
        rows[i] = (uint64_t)i, p[i] = 0.1 + i * i;
    vl_rbuf_update_priorities(b, rows, p, 64);
    for (int n = 100; n <= 300; n += 200) { // one sampler call, and two with weights renormalized
        VL_CHECK(vl_rbuf_sample(b, (uint64_t)n, 0.4f, idx, w) == (uint64_t)n);
        float max = 0;
        for (int k = 0; k < n; k++) {
            VL_CHECK(w[k] > 0.0f && w[k] <= 1.0f);
            max = w[k] > max ? w[k] : max;
        }
        VL_CHECK(max == 1.0f);
    }
    VL_CHECK(vl_rbuf_sample(b, 100, 0.0f, idx, w) == 100 && w[0] == 1.0f && w[99] == 1.0f);
    VL_CHECK(vl_rbuf_sample(b, 100, -1.0f, idx, w) == 100 && w[0] == 1.0f && w[99] == 1.0f);
    vl_rbuf_destroy(&b);
}

static void test_update_priorities_bad_input(void)
{
    vl_rbuf_t *b = s_new_tagged(8);
    VL_CHECK(b);
    s_add_tagged(b, 1, 4); // rows 4..7 never written
    uint64_t rows[] = {0, 1, 2, 8, UINT64_MAX, 5, 3};
    double p[] = {NAN, -1.0, INFINITY, 1.0, 1.0, 1.0, 2.0};
    vl_rbuf_update_priorities(b, rows, p, 7);
    VL_CHECK(vl_rbuf_rejected(b) == 6); // 3 bad priorities, 2 out of range, 1 never written
    uint64_t idx[256];
    VL_CHECK(vl_rbuf_sample(b, 256, 1.0f, idx, NULL) == 256);
    for (int k = 0; k < 256; k++)
        VL_CHECK(idx[k] == 3); // rows 0..2 were set to 0, rows 4..7 are empty
    int64_t tag = 1, tag2 = 1;
    int32_t body[S_BODY];
    void *out[] = {&tag, body, &tag2};
    uint64_t far = 9;
    vl_rbuf_gather(b, &far, 1, out);
    VL_CHECK(tag == 0 && tag2 == 0 && vl_rbuf_rejected(b) == 7);
    VL_CHECK(vl_rbuf_sample(b, 0, 1.0f, idx, NULL) == 0);
    vl_rbuf_destroy(&b);
}

static void test_empty_buffer_draws_nothing(void)
{
    vl_rbuf_t *b = s_new_tagged(8);
    VL_CHECK(b);
    uint64_t idx[4];
    VL_CHECK(vl_rbuf_size(b) == 0);
    VL_CHECK(vl_rbuf_sample(b, 4, -1.0f, idx, NULL) == 0);
    VL_CHECK(vl_rbuf_sample(b, 4, 0.5f, idx, NULL) == 0);
    vl_rbuf_destroy(&b);
}

/* ---- save and load ----------------------------------------------------------------- */

/* Returns a wrapped 16-row buffer with varied priorities, saved at path. */
static vl_rbuf_t *s_saved(const char *path)
{
    vl_rbuf_t *b = s_new_tagged(16);
    s_add_tagged(b, 1, 21);
    uint64_t rows[16];
    double p[16];
    for (int i = 0; i < 16; i++)
        rows[i] = (uint64_t)i, p[i] = i % 5 == 0 ? 0.0 : 0.5 * i;
    vl_rbuf_update_priorities(b, rows, p, 16);
    char why[256] = "";
    if (vl_rbuf_save(b, path, why, sizeof why) < 0) {
        fprintf(stderr, "save: %s\n", why);
        vl_rbuf_destroy(&b);
    }
    return b;
}

static void test_save_load_round_trip(void)
{
    const char *path = s_path("round.rbuf");
    vl_rbuf_t *a = s_saved(path);
    VL_CHECK(a);
    char why[256] = "";
    vl_rbuf_t *b = vl_rbuf_load(path, 7, why, sizeof why);
    VL_CHECK(b);
    VL_CHECK(vl_rbuf_size(b) == 16 && vl_rbuf_capacity(b) == 16 && vl_rbuf_n_fields(b) == 3);
    for (uint32_t i = 0; i < 3; i++) {
        VL_CHECK(memcmp(vl_rbuf_field(a, i), vl_rbuf_field(b, i), sizeof(vl_rbuf_field_t)) == 0);
        VL_CHECK(memcmp(vl_rbuf_field_data(a, i), vl_rbuf_field_data(b, i),
                        16 * vl_rbuf_field_bytes(a, i)) == 0);
    }
    uint64_t ia[256], ib[256];
    float wa[256], wb[256];
    VL_CHECK(vl_rbuf_sample(a, 256, 0.6f, ia, wa) == 256); // same seed, same tree: same draws
    VL_CHECK(vl_rbuf_sample(b, 256, 0.6f, ib, wb) == 256);
    VL_CHECK(memcmp(ia, ib, sizeof ia) == 0 && memcmp(wa, wb, sizeof wa) == 0);
    VL_CHECK(s_add_tagged(a, 500, 3) == s_add_tagged(b, 500, 3)); // the ring goes on alike
    VL_CHECK(memcmp(vl_rbuf_field_data(a, 1), vl_rbuf_field_data(b, 1), 16 * 4 * S_BODY) == 0);
    vl_rbuf_destroy(&a);
    vl_rbuf_destroy(&b);
}

static void test_save_load_empty(void)
{
    const char *path = s_path("empty.rbuf");
    vl_rbuf_t *a = s_new_tagged(5);
    VL_CHECK(a && vl_rbuf_save(a, path, NULL, 0) == 0);
    vl_rbuf_t *b = vl_rbuf_load(path, 1, NULL, 0);
    VL_CHECK(b && vl_rbuf_size(b) == 0 && vl_rbuf_capacity(b) == 5);
    VL_CHECK(s_add_tagged(b, 1, 2) == 0 && vl_rbuf_size(b) == 2);
    vl_rbuf_destroy(&a);
    vl_rbuf_destroy(&b);
}

static void test_save_refuses_existing(void)
{
    const char *path = s_path("exists.rbuf");
    FILE *f = fopen(path, "w");
    VL_CHECK(f);
    fputs("precious", f);
    fclose(f);
    vl_rbuf_t *a = s_new_tagged(4);
    VL_CHECK(a);
    s_add_tagged(a, 1, 2);
    char why[256] = "";
    VL_CHECK(vl_rbuf_save(a, path, why, sizeof why) == -1);
    VL_CHECK(strstr(why, "exists; refusing to overwrite") != NULL);
    char back[16] = "";
    f = fopen(path, "r");
    VL_CHECK(f && fgets(back, sizeof back, f));
    fclose(f);
    VL_CHECK(strcmp(back, "precious") == 0);
    vl_rbuf_destroy(&a);
}

/* Returns the size of the file at path, or -1. */
static long s_file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (f)
        fclose(f);
    return n;
}

static void test_load_truncated(void)
{
    const char *path = s_path("cut.rbuf");
    vl_rbuf_t *a = s_saved(path);
    VL_CHECK(a);
    long n = s_file_size(path);
    for (long cut = n - 1; cut > 0; cut -= 1 + n / 9) { // shorter and shorter
        VL_CHECK(truncate(path, cut) == 0);
        char why[256] = "";
        VL_CHECK(vl_rbuf_load(path, 1, why, sizeof why) == NULL);
        if (!strstr(why, "truncated"))
            fprintf(stderr, "cut at %ld: %s\n", cut, why);
        VL_CHECK(strstr(why, "truncated") != NULL);
    }
    vl_rbuf_destroy(&a);
}

static void test_load_bit_flipped(void)
{
    const char *path = s_path("flip.rbuf");
    vl_rbuf_t *a = s_saved(path);
    VL_CHECK(a);
    long n = s_file_size(path);
    for (long at = 0; at < n; at += 1 + n / 40) {
        FILE *f = fopen(path, "r+b");
        VL_CHECK(f && fseek(f, at, SEEK_SET) == 0);
        int c = fgetc(f);
        fseek(f, at, SEEK_SET);
        fputc(c ^ 0x10, f);
        fclose(f);
        char why[256] = "";
        VL_CHECK(vl_rbuf_load(path, 1, why, sizeof why) == NULL);
        VL_CHECK(strstr(why, "checksum") || strstr(why, "corrupt") || strstr(why, "not a volley") ||
                 strstr(why, "version"));
        f = fopen(path, "r+b"); // flip it back
        fseek(f, at, SEEK_SET);
        fputc(c, f);
        fclose(f);
    }
    vl_rbuf_t *b = vl_rbuf_load(path, 1, NULL, 0); // whole again
    VL_CHECK(b);
    vl_rbuf_destroy(&a);
    vl_rbuf_destroy(&b);
}

/* Rewrites path's checkpoint with byte `at` of section `name` set to v
   (at < 0: the section dropped). Returns 0, or -1. */
static int s_forge(const char *path, const char *out, const char *name, long at, uint8_t v)
{
    vl_checkpoint_t *ck = vl_checkpoint_read(path, NULL, 0);
    if (!ck)
        return -1;
    vl_section_t s[32];
    uint8_t *copy[32] = {0};
    int n = 0;
    for (int i = 0; i < vl_checkpoint_count(ck); i++) {
        const char *nm = vl_checkpoint_name(ck, i);
        if (strcmp(nm, name) == 0 && at < 0)
            continue;
        s[n].name = nm;
        s[n].data = vl_checkpoint_get(ck, nm, &s[n].size);
        if (strcmp(nm, name) == 0 && (size_t)at < s[n].size) {
            copy[n] = malloc(s[n].size);
            memcpy(copy[n], s[n].data, s[n].size);
            copy[n][at] = v;
            s[n].data = copy[n];
        }
        n++;
    }
    unlink(out);
    int rc = vl_checkpoint_write(out, s, n);
    for (int i = 0; i < n; i++)
        free(copy[i]);
    vl_checkpoint_destroy(&ck);
    return rc;
}

/* Files whose checksums hold but whose contents lie: each refused, by name. */
static void test_load_refuses_hostile_contents(void)
{
    char good[512], bad[512];
    snprintf(good, sizeof good, "%s", s_path("good.rbuf"));
    snprintf(bad, sizeof bad, "%s", s_path("bad.rbuf"));
    vl_rbuf_t *a = s_saved(good);
    VL_CHECK(a);
    struct {
        const char *section;
        long at; // < 0: the section is dropped
        uint8_t v;
        const char *why;
    } cases[] = {
        {"rbuf", 0, 'X', "not a replay buffer"},
        {"rbuf", 8, 2, "version 2"},
        {"rbuf", 12, 17, "fields"},
        {"rbuf", 16, 0, "capacity 0"},            // capacity 16 -> 0
        {"rbuf", 19, 1, "capacity"},              // capacity 2^24 + 16: size no longer min
        {"rbuf", 23, 0x80, "2^30"},               // capacity far beyond
        {"rbuf", 32, 3, "size 3"},                // size != min(cursor, capacity)
        {"rbuf", 31, 0x40, "cursor"},             // cursor beyond 2^62
        {"rbuf", 47, 0xff, "max priority"},       // 1.0 -> -inf
        {"rbuf", 48, 0, "name"},                  // field 0 has no name
        {"rbuf", 48 + 64 + 32, 7, "dtype"},       // field 1
        {"rbuf", 48 + 64 + 40, 65, "wrong size"}, // body of 65 words, bytes says 64
        {"rbuf", 48 + 2 * 64 + 3, 0, "two fields named 'tag'"}, // field 2: "tag2" -> "tag"
        {"priorities", 7, 0xff, "priority"},                    // row 0: 0.0 -> negative
        {"priorities", 15, 0xbf, "priority"},                   // row 1: negative
        {"field.1", -1, 0, "no section 'field.1'"},
        {"priorities", -1, 0, "no section 'priorities'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        VL_CHECK(s_forge(good, bad, cases[i].section, cases[i].at, cases[i].v) == 0);
        char why[256] = "";
        vl_rbuf_t *b = vl_rbuf_load(bad, 1, why, sizeof why);
        if (b || !strstr(why, cases[i].why))
            fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, why, cases[i].why);
        VL_CHECK(b == NULL && strstr(why, cases[i].why) != NULL);
    }
    vl_rbuf_destroy(&a);
}

static void test_load_missing_file(void)
{
    char why[256] = "";
    VL_CHECK(vl_rbuf_load(s_path("nowhere.rbuf"), 1, why, sizeof why) == NULL);
    VL_CHECK(strstr(why, "No such file") != NULL);
}

static void s_cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", s_dir);
}

int main(void)
{
    vl_log_init("vl_rbuf_test", VL_LOG_ERROR + 1); // checkpoint failures are expected here
    snprintf(s_dir, sizeof s_dir, "/tmp/vl_rbuf_test.XXXXXX");
    if (!mkdtemp(s_dir)) {
        perror("mkdtemp");
        return 1;
    }
    VL_RUN(test_new_refuses_bad_fields);
    VL_RUN(test_fields_round_trip);
    VL_RUN(test_wrap_overwrites_oldest);
    VL_RUN(test_batch_larger_than_capacity);
    VL_RUN(test_threads_fill_exactly);
    VL_RUN(test_threads_wrap_intact);
    VL_RUN(test_sample_sees_only_committed_rows);
    VL_RUN(test_gather_whole_while_overwritten);
    VL_RUN(test_prioritized_follows_priorities);
    VL_RUN(test_weights_in_unit_interval);
    VL_RUN(test_update_priorities_bad_input);
    VL_RUN(test_empty_buffer_draws_nothing);
    VL_RUN(test_save_load_round_trip);
    VL_RUN(test_save_load_empty);
    VL_RUN(test_save_refuses_existing);
    VL_RUN(test_load_truncated);
    VL_RUN(test_load_bit_flipped);
    VL_RUN(test_load_refuses_hostile_contents);
    VL_RUN(test_load_missing_file);
    s_cleanup();
    return VL_DONE();
}
