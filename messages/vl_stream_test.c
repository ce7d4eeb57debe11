/*  vl_stream_test: recordings written and read back, files built by hand
    from the documented layout, a recording cut at every byte and one with
    every bit flipped in turn, garbage, and a writer whose disk fills up.
    Files go in a fresh directory under /tmp, removed at the end. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/vl_crc32c.h"
#include "../common/vl_log.h"
#include "../common/vl_rng.h"
#include "../tests/vl_test.h"
#include "vl_stream.h"

#define S_CONFIG "env=cartpole actors=4 seed=7"

static char s_dir[64];

/* Returns dir/name in a static buffer (one at a time). */
static const char *s_path(const char *name)
{
    static char path[sizeof s_dir + 258]; // room for any d_name
    snprintf(path, sizeof path, "%s/%s", s_dir, name);
    return path;
}

/* Returns size bytes from a generator seeded with seed (caller frees). */
static uint8_t *s_payload(size_t size, uint64_t seed)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    uint8_t *p = malloc(size ? size : 1);
    for (size_t i = 0; p && i < size; i++)
        p[i] = (uint8_t)vl_rng_next(&rng);
    return p;
}

/* Replaces path by exactly n bytes of data. Returns 0 or -1. */
static int s_put_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, n, f) == n;
    return f && fclose(f) == 0 && ok ? 0 : -1;
}

/* Returns the whole file (caller frees) and sets *n, or NULL. */
static uint8_t *s_get_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long len = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
        fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    *n = buf ? (size_t)len : 0;
    return buf;
}

/* Returns 1 if why names byte offset `at` ("byte 123" not followed by a
   digit). */
static int s_says_offset(const char *why, uint64_t at)
{
    char want[32];
    snprintf(want, sizeof want, "byte %llu", (unsigned long long)at);
    for (const char *p = why; (p = strstr(p, want)) != NULL; p++)
        if (p[strlen(want)] < '0' || p[strlen(want)] > '9')
            return 1;
    return 0;
}

static void s_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void s_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Writes a header by the documented layout into h. Returns its size. */
static size_t s_header(uint8_t *h, uint32_t version, uint32_t flags, int64_t created,
                       const char *config, uint32_t len)
{
    memcpy(h, "VLSTREAM", 8);
    s_put32(h + 8, version);
    s_put32(h + 12, flags);
    s_put64(h + 16, (uint64_t)created);
    s_put32(h + 24, len);
    memmove(h + 28, config, len); // config may already be there
    s_put32(h + 28 + len, vl_crc32c(0, h, 28 + len));
    return 32 + len;
}

/* Writes a record by the documented layout into p, with the data_crc of
   data unless size is over what data holds. Returns its size. */
static size_t s_record(uint8_t *p, uint32_t size, uint32_t source, int64_t recv_ns,
                       const void *data, size_t data_size)
{
    s_put32(p, size);
    s_put32(p + 4, source);
    s_put64(p + 8, (uint64_t)recv_ns);
    s_put32(p + 16, vl_crc32c(0, data, data_size));
    s_put32(p + 20, vl_crc32c(0, p, 20));
    memcpy(p + 24, data, data_size);
    return 24 + data_size;
}

/* ---- the small recording cut and flipped below ------------------------- */

#define S_SMALL_N 4
static const size_t s_small_size[S_SMALL_N] = {0, 7, 33, 2};
static const uint32_t s_small_source[S_SMALL_N] = {1, UINT32_MAX, 0, 3};
static const int64_t s_small_recv[S_SMALL_N] = {-5, 1700000000123456789ll, INT64_MAX, 0};

typedef struct {
    uint8_t *bytes; // the whole file
    size_t size, header;
    uint64_t start[S_SMALL_N + 1]; // record i's offset; start[S_SMALL_N] = size
    uint8_t *data[S_SMALL_N];
} s_small_t;

static void s_small_free(s_small_t *s)
{
    free(s->bytes);
    for (int i = 0; i < S_SMALL_N; i++)
        free(s->data[i]);
}

/* Writes the small recording with the writer. Returns 0 or -1. */
static int s_small_make(s_small_t *s)
{
    memset(s, 0, sizeof *s);
    char why[256] = "";
    unlink(s_path("small"));
    vl_stream_writer_t *w =
        vl_stream_writer_new(s_path("small"), S_CONFIG, VL_FLUSH_NEVER, why, sizeof why);
    s->header = 32 + strlen(S_CONFIG);
    s->start[0] = s->header;
    for (int i = 0; i < S_SMALL_N; i++) {
        s->data[i] = s_payload(s_small_size[i], 100 + (uint64_t)i);
        s->start[i + 1] = s->start[i] + 24 + s_small_size[i];
        if (!w || vl_stream_append(w, s_small_recv[i], s_small_source[i], s->data[i],
                                   s_small_size[i]) != 0)
            return -1;
    }
    if (vl_stream_writer_destroy(&w) != 0 || !(s->bytes = s_get_file(s_path("small"), &s->size)))
        return -1;
    return s->size == s->start[S_SMALL_N] ? 0 : -1;
}

/* Returns 1 if rec is record i of the small recording. */
static int s_small_is(const s_small_t *s, int i, const vl_stream_record_t *rec)
{
    return rec->size == s_small_size[i] && rec->source == s_small_source[i] &&
           rec->recv_ns == s_small_recv[i] && rec->offset == s->start[i] &&
           memcmp(rec->data, s->data[i], rec->size) == 0;
}

/* ---- cases ----------------------------------------------------------------- */

static void test_flush_names(void)
{
    vl_flush_t f = VL_FLUSH_NEVER;
    VL_CHECK(vl_flush_parse("always", &f) == 0 && f == VL_FLUSH_ALWAYS);
    VL_CHECK(vl_flush_parse("everysec", &f) == 0 && f == VL_FLUSH_EVERYSEC);
    VL_CHECK(vl_flush_parse("never", &f) == 0 && f == VL_FLUSH_NEVER);
    const char *bad[] = {"", "ALWAYS", "always ", "every", "neverr", "1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = VL_FLUSH_EVERYSEC;
        VL_CHECK(vl_flush_parse(bad[i], &f) == -1 && f == VL_FLUSH_EVERYSEC);
    }
    VL_CHECK(vl_flush_parse(NULL, &f) == -1);
    for (int i = VL_FLUSH_ALWAYS; i <= VL_FLUSH_NEVER; i++)
        VL_CHECK(vl_flush_parse(vl_flush_name((vl_flush_t)i), &f) == 0 && f == (vl_flush_t)i);
    VL_CHECK(strcmp(vl_flush_name((vl_flush_t)7), "unknown") == 0);
}

#define S_TRIP_N 306

/* Sizes crossing the writer's buffer and the reader's, then many small
   records so that the buffer fills and goes out with a record pending. */
static size_t s_trip_size(int i)
{
    static const size_t first[] = {0, 1, VL_STREAM_WRITE_BUF + 1, 100, VL_STREAM_READ_BUF + 3, 5};
    return i < 6 ? first[i] : (size_t)(i * 2654435761u % 9001);
}

static void test_round_trip(void)
{
    char why[256] = "";
    int64_t before = vl_wall_ns();
    vl_stream_writer_t *w =
        vl_stream_writer_new(s_path("trip"), S_CONFIG, VL_FLUSH_NEVER, why, sizeof why);
    int64_t after = vl_wall_ns();
    VL_CHECK(w);
    uint64_t bytes = 32 + strlen(S_CONFIG);
    VL_CHECK(vl_stream_writer_bytes(w) == bytes && vl_stream_writer_records(w) == 0);
    for (int i = 0; i < S_TRIP_N; i++) {
        size_t n = s_trip_size(i);
        uint8_t *p = s_payload(n, (uint64_t)i);
        int rc = vl_stream_append(w, 1000 * i - 7, (uint32_t)i * 3, p, n);
        free(p);
        VL_CHECK(rc == 0);
        bytes += 24 + n;
        VL_CHECK(vl_stream_writer_bytes(w) == bytes);
    }
    VL_CHECK(vl_stream_writer_records(w) == S_TRIP_N);
    VL_CHECK(strcmp(vl_stream_writer_error(w), "") == 0);
    VL_CHECK(vl_stream_writer_destroy(&w) == 0 && w == NULL);
    VL_CHECK(vl_stream_writer_destroy(&w) == 0 && vl_stream_writer_destroy(NULL) == 0);
    struct stat st;
    VL_CHECK(stat(s_path("trip"), &st) == 0 && (uint64_t)st.st_size == bytes);

    vl_stream_reader_t *r = vl_stream_reader_open(s_path("trip"), why, sizeof why);
    VL_CHECK(r);
    VL_CHECK(strcmp(vl_stream_reader_config(r), S_CONFIG) == 0);
    VL_CHECK(vl_stream_reader_created_ns(r) >= before && vl_stream_reader_created_ns(r) <= after);
    VL_CHECK(strcmp(vl_stream_reader_why(r), "") == 0);
    uint64_t at = 32 + strlen(S_CONFIG);
    VL_CHECK(vl_stream_reader_offset(r) == at);
    vl_stream_record_t rec;
    for (int i = 0; i < S_TRIP_N; i++) {
        size_t n = s_trip_size(i);
        VL_CHECK(vl_stream_next(r, &rec) == VL_STREAM_OK);
        uint8_t *p = s_payload(n, (uint64_t)i);
        int same = rec.size == n && memcmp(rec.data, p, n) == 0;
        free(p);
        VL_CHECK(same);
        VL_CHECK(rec.recv_ns == 1000 * i - 7 && rec.source == (uint32_t)i * 3 && rec.offset == at);
        at += 24 + n;
        VL_CHECK(vl_stream_reader_offset(r) == at &&
                 vl_stream_reader_records(r) == (uint64_t)i + 1);
    }
    VL_CHECK(vl_stream_next(r, &rec) == VL_STREAM_END);
    VL_CHECK(s_says_offset(vl_stream_reader_why(r), bytes));
    VL_CHECK(vl_stream_next(r, &rec) == VL_STREAM_END);
    VL_CHECK(vl_stream_reader_records(r) == S_TRIP_N && vl_stream_reader_offset(r) == bytes);
    vl_stream_reader_destroy(&r);
    VL_CHECK(r == NULL);
    vl_stream_reader_destroy(&r);
    vl_stream_reader_destroy(NULL);
    unlink(s_path("trip"));
}

/* The writer's bytes are exactly the documented layout (but for the
   creation time, taken from the file), and a hand-built file reads back. */
static void test_layout(void)
{
    char why[256] = "";
    vl_stream_writer_t *w =
        vl_stream_writer_new(s_path("layout"), "a=1", VL_FLUSH_NEVER, why, sizeof why);
    VL_CHECK(w);
    const uint8_t payload[5] = {1, 2, 3, 4, 5};
    VL_CHECK(vl_stream_append(w, -2, 77, payload, sizeof payload) == 0);
    VL_CHECK(vl_stream_append(w, 9, UINT32_MAX, NULL, 0) == 0);
    VL_CHECK(vl_stream_writer_destroy(&w) == 0);
    size_t n = 0;
    uint8_t *file = s_get_file(s_path("layout"), &n);
    VL_CHECK(file && n == 35 + 29 + 24);
    int64_t created = 0;
    for (int i = 7; i >= 0; i--)
        created = (int64_t)((uint64_t)created << 8 | file[16 + i]);
    uint8_t want[128];
    size_t k = s_header(want, 1, 0, created, "a=1", 3);
    k += s_record(want + k, 5, 77, -2, payload, 5);
    k += s_record(want + k, 0, UINT32_MAX, 9, payload, 0);
    int same = k == n && memcmp(file, want, n) == 0;
    free(file);
    VL_CHECK(same);

    // Built by hand, with a config that is the largest allowed.
    uint8_t *big = calloc(1, VL_STREAM_MAX_CONFIG + 256);
    VL_CHECK(big);
    memset(big + 28, 'x', VL_STREAM_MAX_CONFIG);
    k = s_header(big, 1, 0, -42, (const char *)big + 28, VL_STREAM_MAX_CONFIG);
    k += s_record(big + k, 5, 3, 11, payload, 5);
    int put = s_put_file(s_path("hand"), big, k);
    free(big);
    VL_CHECK(put == 0);
    vl_stream_reader_t *r = vl_stream_reader_open(s_path("hand"), why, sizeof why);
    VL_CHECK(r);
    VL_CHECK(strlen(vl_stream_reader_config(r)) == VL_STREAM_MAX_CONFIG);
    VL_CHECK(vl_stream_reader_created_ns(r) == -42);
    vl_stream_record_t rec;
    vl_stream_status_t s1 = vl_stream_next(r, &rec);
    int ok = s1 == VL_STREAM_OK && rec.size == 5 && rec.source == 3 && rec.recv_ns == 11 &&
             memcmp(rec.data, payload, 5) == 0 && rec.offset == 32 + VL_STREAM_MAX_CONFIG;
    vl_stream_status_t s2 = vl_stream_next(r, &rec);
    vl_stream_reader_destroy(&r);
    VL_CHECK(ok && s2 == VL_STREAM_END);
    unlink(s_path("layout"));
    unlink(s_path("hand"));
}

static void test_refuses_to_overwrite(void)
{
    char why[256] = "";
    VL_CHECK(s_put_file(s_path("precious"), "precious", 8) == 0);
    vl_stream_writer_t *w =
        vl_stream_writer_new(s_path("precious"), "", VL_FLUSH_ALWAYS, why, sizeof why);
    VL_CHECK(w == NULL && strcmp(why, "exists") == 0);
    size_t n = 0;
    uint8_t *still = s_get_file(s_path("precious"), &n);
    int same = still && n == 8 && memcmp(still, "precious", 8) == 0;
    free(still);
    VL_CHECK(same);
    unlink(s_path("precious"));

    why[0] = '\0';
    w = vl_stream_writer_new(s_path("no/such/dir"), "", VL_FLUSH_NEVER, why, sizeof why);
    VL_CHECK(w == NULL && strcmp(why, strerror(ENOENT)) == 0);

    char *huge = malloc(VL_STREAM_MAX_CONFIG + 2);
    VL_CHECK(huge);
    memset(huge, 'c', VL_STREAM_MAX_CONFIG + 1);
    huge[VL_STREAM_MAX_CONFIG + 1] = '\0';
    why[0] = '\0';
    w = vl_stream_writer_new(s_path("huge"), huge, VL_FLUSH_NEVER, why, sizeof why);
    free(huge);
    struct stat st;
    VL_CHECK(w == NULL && strstr(why, "config") && stat(s_path("huge"), &st) != 0);
}

/* A payload over the limit is refused without harm to the recording. */
static void test_append_limits(void)
{
    char why[256] = "";
    vl_stream_writer_t *w =
        vl_stream_writer_new(s_path("limits"), NULL, VL_FLUSH_NEVER, why, sizeof why);
    VL_CHECK(w);
    static const uint8_t tiny[4] = {9, 8, 7, 6};
    // The size is refused before the (4-byte) data would be read.
    VL_CHECK(vl_stream_append(w, 1, 1, tiny, (size_t)VL_STREAM_MAX_RECORD + 1) == -1);
    VL_CHECK(strstr(vl_stream_writer_error(w), "refused"));
    VL_CHECK(vl_stream_append(w, 1, 1, NULL, 3) == -1);
    VL_CHECK(vl_stream_writer_records(w) == 0 && vl_stream_writer_bytes(w) == 32);
    VL_CHECK(vl_stream_append(w, 2, 5, tiny, 4) == 0);
    VL_CHECK(vl_stream_writer_destroy(&w) == 0);
    vl_stream_reader_t *r = vl_stream_reader_open(s_path("limits"), why, sizeof why);
    VL_CHECK(r && strcmp(vl_stream_reader_config(r), "") == 0);
    vl_stream_record_t rec;
    vl_stream_status_t s1 = vl_stream_next(r, &rec);
    int ok = s1 == VL_STREAM_OK && rec.size == 4 && rec.source == 5 && rec.offset == 32;
    vl_stream_status_t s2 = vl_stream_next(r, &rec);
    vl_stream_reader_destroy(&r);
    VL_CHECK(ok && s2 == VL_STREAM_END);
    unlink(s_path("limits"));
}

/* Returns how many records a new reader of path finds before END, or -1
   if it stops otherwise. */
static long s_count(const char *path)
{
    char why[256];
    vl_stream_reader_t *r = vl_stream_reader_open(path, why, sizeof why);
    vl_stream_record_t rec;
    vl_stream_status_t s = VL_STREAM_IOERR;
    while (r && (s = vl_stream_next(r, &rec)) == VL_STREAM_OK)
        ;
    long n = s == VL_STREAM_END ? (long)vl_stream_reader_records(r) : -1;
    vl_stream_reader_destroy(&r);
    return n;
}

/* ALWAYS: every record is in the file when append returns, before any
   flush or destroy. The others: only once flushed. */
static void test_flush_policies(void)
{
    char why[256] = "";
    uint8_t *big = s_payload(2u << 20, 5); // over the buffer: the writev path
    VL_CHECK(big);
    vl_stream_writer_t *w =
        vl_stream_writer_new(s_path("always"), "", VL_FLUSH_ALWAYS, why, sizeof why);
    VL_CHECK(w);
    VL_CHECK(s_count(s_path("always")) == 0);
    VL_CHECK(vl_stream_append(w, 1, 1, big, 10) == 0);
    VL_CHECK(s_count(s_path("always")) == 1);
    VL_CHECK(vl_stream_append(w, 2, 1, big, 2u << 20) == 0);
    VL_CHECK(vl_stream_append(w, 3, 1, big, 0) == 0);
    VL_CHECK(s_count(s_path("always")) == 3);
    VL_CHECK(vl_stream_writer_destroy(&w) == 0);
    VL_CHECK(s_count(s_path("always")) == 3);
    free(big);

    for (int sync = 0; sync <= 1; sync++) {
        vl_flush_t f = sync ? VL_FLUSH_EVERYSEC : VL_FLUSH_NEVER;
        const char *path = s_path(vl_flush_name(f));
        w = vl_stream_writer_new(path, "", f, why, sizeof why);
        VL_CHECK(w);
        for (int i = 0; i < 3; i++)
            VL_CHECK(vl_stream_append(w, i, 0, "abc", 3) == 0);
        VL_CHECK(s_count(path) == 0); // still in the buffer
        VL_CHECK(vl_stream_flush(w, sync) == 0);
        VL_CHECK(s_count(path) == 3);
        VL_CHECK(vl_stream_append(w, 9, 0, "d", 1) == 0);
        VL_CHECK(s_count(path) == 3);
        VL_CHECK(vl_stream_writer_destroy(&w) == 0);
        VL_CHECK(s_count(path) == 4);
        unlink(path);
    }
    unlink(s_path("always"));
}

/* Cut at every byte: refused inside the header; else exactly the records
   wholly before the cut, then END at a boundary or TORN, with the offset. */
static void test_truncated_everywhere(void)
{
    s_small_t s;
    int made = s_small_make(&s);
    VL_CHECK(made == 0);
    char why[256];
    for (size_t cut = 0; cut <= s.size; cut++) {
        VL_CHECK(s_put_file(s_path("cut"), s.bytes, cut) == 0);
        why[0] = '\0';
        vl_stream_reader_t *r = vl_stream_reader_open(s_path("cut"), why, sizeof why);
        if (cut < s.header) {
            VL_CHECK(r == NULL && strncmp(why, "truncated in the header", 23) == 0);
            continue;
        }
        VL_CHECK(r);
        int k = 0, boundary = cut == s.header;
        while (k < S_SMALL_N && s.start[k + 1] <= cut)
            boundary |= s.start[++k] == cut;
        vl_stream_record_t rec;
        for (int i = 0; i < k; i++) {
            vl_stream_status_t st = vl_stream_next(r, &rec);
            if (st != VL_STREAM_OK || !s_small_is(&s, i, &rec))
                vl_stream_reader_destroy(&r);
            VL_CHECK(r);
        }
        vl_stream_status_t want = boundary ? VL_STREAM_END : VL_STREAM_TORN;
        vl_stream_status_t got = vl_stream_next(r, &rec);
        vl_stream_status_t again = vl_stream_next(r, &rec);
        int ok = got == want && again == want && vl_stream_reader_records(r) == (uint64_t)k &&
                 vl_stream_reader_offset(r) == s.start[k] &&
                 s_says_offset(vl_stream_reader_why(r), s.start[k]);
        if (!ok)
            fprintf(stderr, "cut at %zu: status %d, want %d: %s\n", cut, got, want,
                    vl_stream_reader_why(r));
        vl_stream_reader_destroy(&r);
        VL_CHECK(ok);
    }
    s_small_free(&s);
    unlink(s_path("cut"));
}

/* Every bit flipped in turn: a flip in the header refuses the file; one in
   record j gives records 0..j-1 intact and then CORRUPT at j's offset.
   Never TORN: the length is unchanged and a record's size is trusted only
   once its head checksum holds, so no flip can make a record overrun. */
static void test_every_bit_flipped(void)
{
    s_small_t s;
    int made = s_small_make(&s);
    VL_CHECK(made == 0);
    char why[256];
    uint8_t *copy = malloc(s.size);
    VL_CHECK(copy);
    for (size_t bit = 0; bit < 8 * s.size; bit++) {
        memcpy(copy, s.bytes, s.size);
        copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        VL_CHECK(s_put_file(s_path("flip"), copy, s.size) == 0);
        why[0] = '\0';
        vl_stream_reader_t *r = vl_stream_reader_open(s_path("flip"), why, sizeof why);
        if (bit / 8 < s.header) {
            if (r)
                fprintf(stderr, "flip of bit %zu accepted\n", bit);
            VL_CHECK(r == NULL && why[0] != '\0');
            continue;
        }
        VL_CHECK(r);
        int j = 0;
        while (s.start[j + 1] <= bit / 8)
            j++;
        vl_stream_record_t rec;
        for (int i = 0; i < j; i++) {
            vl_stream_status_t st = vl_stream_next(r, &rec);
            if (st != VL_STREAM_OK || !s_small_is(&s, i, &rec))
                vl_stream_reader_destroy(&r);
            VL_CHECK(r);
        }
        vl_stream_status_t got = vl_stream_next(r, &rec);
        vl_stream_status_t again = vl_stream_next(r, &rec);
        int ok = got == VL_STREAM_CORRUPT && again == VL_STREAM_CORRUPT &&
                 vl_stream_reader_records(r) == (uint64_t)j &&
                 vl_stream_reader_offset(r) == s.start[j] &&
                 s_says_offset(vl_stream_reader_why(r), s.start[j]);
        if (!ok)
            fprintf(stderr, "flip of bit %zu: status %d: %s\n", bit, got, vl_stream_reader_why(r));
        vl_stream_reader_destroy(&r);
        VL_CHECK(ok);
    }
    free(copy);
    s_small_free(&s);
    unlink(s_path("flip"));
}

/* Returns 1 if opening n bytes of data is refused with a why that starts
   with want. */
static int s_refused(const void *data, size_t n, const char *want)
{
    char why[256] = "";
    if (s_put_file(s_path("bad"), data, n) != 0)
        return 0;
    vl_stream_reader_t *r = vl_stream_reader_open(s_path("bad"), why, sizeof why);
    int opened = r != NULL;
    vl_stream_reader_destroy(&r);
    if (strncmp(why, want, strlen(want)) != 0)
        fprintf(stderr, "refused with '%s', want '%s'\n", why, want);
    return !opened && strncmp(why, want, strlen(want)) == 0;
}

static void test_bad_headers(void)
{
    char why[256] = "";
    VL_CHECK(!vl_stream_reader_open(s_path("absent"), why, sizeof why));
    VL_CHECK(strncmp(why, "cannot open", 11) == 0);
    VL_CHECK(!vl_stream_reader_open(s_dir, why, sizeof why));
    VL_CHECK(strstr(why, strerror(EISDIR)));
    VL_CHECK(s_refused("", 0, "truncated in the header (0 bytes)"));
    VL_CHECK(s_refused("VLSTR", 5, "truncated in the header (5 bytes)"));
    VL_CHECK(s_refused("VLSTREAM", 8, "truncated in the header (8 bytes)"));
    VL_CHECK(s_refused("VLSTREAX", 8, "not a volley recording"));
    uint8_t *junk = s_payload(4096, 1);
    VL_CHECK(junk && junk[0] != 'V');
    VL_CHECK(s_refused(junk, 4096, "not a volley recording"));
    free(junk);
    uint8_t h[128];
    size_t n = s_header(h, 2, 0, 0, "", 0);
    VL_CHECK(s_refused(h, n, "unsupported recording version 2"));
    n = s_header(h, 1, 1, 0, "", 0);
    VL_CHECK(s_refused(h, n, "unsupported header flags 0x1"));
    n = s_header(h, 1, 0, 0, "a\0b", 3);
    VL_CHECK(s_refused(h, n, "corrupt header: a NUL"));
    n = s_header(h, 1, 0, 0, "ab", 2);
    VL_CHECK(s_refused(h, n - 1, "truncated in the header (33 bytes of its 34)"));
    h[n - 1] ^= 0x80;
    VL_CHECK(s_refused(h, n, "header checksum mismatch"));
    n = s_header(h, 1, 0, 0, "", 0);
    s_put32(h + 24, VL_STREAM_MAX_CONFIG + 1);
    VL_CHECK(s_refused(h, n, "corrupt header: a config of"));
}

/* Returns the status after a good header followed by tail[0..n), checking
   that no record was returned and the offset is the header's end. */
static vl_stream_status_t s_after_header(const uint8_t *tail, size_t n)
{
    uint8_t *file = malloc(32 + n);
    if (!file)
        return VL_STREAM_OK;
    s_header(file, 1, 0, 0, "", 0);
    memcpy(file + 32, tail, n);
    int put = s_put_file(s_path("tail"), file, 32 + n);
    free(file);
    char why[256];
    vl_stream_reader_t *r = put == 0 ? vl_stream_reader_open(s_path("tail"), why, sizeof why) : 0;
    vl_stream_record_t rec;
    vl_stream_status_t s = r ? vl_stream_next(r, &rec) : VL_STREAM_OK;
    if (vl_stream_reader_records(r) != 0 || vl_stream_reader_offset(r) != 32 ||
        !s_says_offset(vl_stream_reader_why(r), 32))
        s = VL_STREAM_OK; // fails the caller's check whatever it expects
    vl_stream_reader_destroy(&r);
    return s;
}

static void test_bad_records(void)
{
    uint8_t junk[64], rec[64];
    memset(junk, 0x3c, sizeof junk);
    VL_CHECK(s_after_header(junk, 24) == VL_STREAM_CORRUPT);
    VL_CHECK(s_after_header(junk, 23) == VL_STREAM_TORN);
    VL_CHECK(s_after_header(junk, 1) == VL_STREAM_TORN);
    // A checked head declaring more than the limit.
    s_record(rec, VL_STREAM_MAX_RECORD + 1, 0, 0, junk, 0);
    VL_CHECK(s_after_header(rec, 40) == VL_STREAM_CORRUPT);
    // Checked heads declaring more than the file holds: past the reader's
    // buffer (known torn without reading), within it, and within one byte.
    s_record(rec, VL_STREAM_MAX_RECORD, 0, 0, junk, 0);
    VL_CHECK(s_after_header(rec, 40) == VL_STREAM_TORN);
    s_record(rec, 1000, 0, 0, junk, 0);
    VL_CHECK(s_after_header(rec, 40) == VL_STREAM_TORN);
    s_record(rec, 17, 0, 0, junk, 16);
    VL_CHECK(s_after_header(rec, 24 + 16) == VL_STREAM_TORN);
    // The whole payload, but a wrong data_crc.
    s_record(rec, 16, 0, 0, junk, 16);
    rec[24 + 3] ^= 1;
    VL_CHECK(s_after_header(rec, 24 + 16) == VL_STREAM_CORRUPT);
    rec[24 + 3] ^= 1;
    VL_CHECK(s_after_header(rec, 24 + 16) == VL_STREAM_OK); // the check above can pass
}

/* A torn tail whose checked head declares the largest record is reported
   without a buffer for it: under an address-space limit that refuses such
   a buffer, the reader still says TORN (not "out of memory"). In a child:
   the limit is per process. */
static int s_small_memory_child(const char *path)
{
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld", &pages) != 1)
        return 20;
    fclose(f);
    struct rlimit lim = {.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (64u << 20),
                         .rlim_max = RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &lim) != 0)
        return 21;
    void *big = malloc(VL_STREAM_MAX_RECORD); // the limit must bite for the test to mean anything
    if (big)
        return 22;
    char why[256];
    vl_stream_reader_t *r = vl_stream_reader_open(path, why, sizeof why);
    vl_stream_record_t rec;
    vl_stream_status_t s = r ? vl_stream_next(r, &rec) : VL_STREAM_OK;
    vl_stream_reader_destroy(&r);
    return s == VL_STREAM_TORN ? 0 : 23 + (int)s;
}

static void test_torn_tail_allocates_nothing(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return; // ASan reserves terabytes of address space: no limit fits
#endif
    uint8_t file[128], junk[16] = {0};
    size_t n = s_header(file, 1, 0, 0, "", 0);
    n += s_record(file + n, VL_STREAM_MAX_RECORD, 0, 0, junk, sizeof junk);
    VL_CHECK(s_put_file(s_path("huge_tail"), file, n) == 0);
    pid_t pid = fork();
    VL_CHECK(pid >= 0);
    if (pid == 0)
        _exit(s_small_memory_child(s_path("huge_tail")));
    int status = 0;
    VL_CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "child: status %d\n", status);
    VL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unlink(s_path("huge_tail"));
}

/* Disk full (a file size limit): the append that hits it fails with the
   error, every later call fails, destroy reports it; what reached the file
   reads as valid records then a torn tail. A header that cannot be written
   leaves no file. Run in a child: the limit is per process. */
static int s_full_disk_child(void)
{
    char why[256] = "";
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 20, .rlim_max = RLIM_INFINITY};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 10;
    struct stat st;
    if (vl_stream_writer_new(s_path("full"), S_CONFIG, VL_FLUSH_NEVER, why, sizeof why) ||
        !strstr(why, strerror(EFBIG)) || stat(s_path("full"), &st) == 0)
        return 11;
    lim.rlim_cur = 300000;
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 12;
    vl_stream_writer_t *w =
        vl_stream_writer_new(s_path("full"), S_CONFIG, VL_FLUSH_NEVER, why, sizeof why);
    uint8_t *p = s_payload(50000, 3);
    int i = 0;
    while (w && p && i < 100 && vl_stream_append(w, i, 0, p, 50000) == 0)
        i++;
    free(p);
    if (!w || i == 100 || i < 5 || !strstr(vl_stream_writer_error(w), strerror(EFBIG)))
        return 13;
    if (vl_stream_append(w, 0, 0, "x", 1) != -1 || vl_stream_flush(w, 0) != -1)
        return 14;
    if (vl_stream_writer_destroy(&w) != -1 || w)
        return 15;
    return 0;
}

static void test_full_disk(void)
{
    pid_t pid = fork();
    VL_CHECK(pid >= 0);
    if (pid == 0)
        _exit(s_full_disk_child());
    int status = 0;
    VL_CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "child: status %d\n", status);
    VL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char why[256] = "";
    vl_stream_reader_t *r = vl_stream_reader_open(s_path("full"), why, sizeof why);
    VL_CHECK(r);
    vl_stream_record_t rec;
    vl_stream_status_t s;
    while ((s = vl_stream_next(r, &rec)) == VL_STREAM_OK)
        ;
    uint64_t n = vl_stream_reader_records(r), at = vl_stream_reader_offset(r);
    vl_stream_reader_destroy(&r);
    // 300000 bytes hold the header and 5 records of 50024 bytes, not a 6th.
    VL_CHECK(s == VL_STREAM_TORN && n == 5 && at == 32 + strlen(S_CONFIG) + 5 * 50024);
    unlink(s_path("full"));
}

/* Removes every file in the test directory, then the directory. */
static void s_cleanup(void)
{
    DIR *d = opendir(s_dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlink(s_path(e->d_name));
    if (d)
        closedir(d);
    rmdir(s_dir);
}

int main(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/vl_stream_test.XXXXXX");
    if (!mkdtemp(s_dir)) {
        perror("mkdtemp");
        return 1;
    }
    VL_RUN(test_flush_names);
    VL_RUN(test_round_trip);
    VL_RUN(test_layout);
    VL_RUN(test_refuses_to_overwrite);
    VL_RUN(test_append_limits);
    VL_RUN(test_flush_policies);
    VL_RUN(test_truncated_everywhere);
    VL_RUN(test_every_bit_flipped);
    VL_RUN(test_bad_headers);
    VL_RUN(test_bad_records);
    VL_RUN(test_torn_tail_allocates_nothing);
    VL_RUN(test_full_disk);
    s_cleanup();
    return VL_DONE();
}
