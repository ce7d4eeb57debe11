/*  Tests of vl_checkpoint: round trips (empty, incompressible and
    multi-chunk sections, 1..3 threads), a small file truncated at every
    byte and bit-flipped at every byte, random damage, headers claiming
    huge sizes, missing and foreign files, failed writes that must leave the
    old file alone, overwrites and refused names. Files live in a mkdtemp
    directory under /tmp, removed at the end. */
#include "vl_checkpoint.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/vl_crc32c.h"
#include "../common/vl_log.h"
#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_SMALL_CHUNK 64 // makes a 1 KB file hold a dozen chunks

static char s_dir[64];

static const char *s_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", s_dir, name);
    return path;
}

/* Fills buf with pixel-like bytes: background 0, short runs of 1..3. */
static void s_fill_pixels(uint8_t *buf, size_t n, uint64_t seed)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    memset(buf, 0, n);
    for (size_t i = 0; i < n; i += 16 + vl_rng_next(&rng) % 64) {
        size_t run = 1 + vl_rng_next(&rng) % 8;
        memset(buf + i, 1 + (int)(vl_rng_next(&rng) % 3), run < n - i ? run : n - i);
    }
}

static void s_fill_random(uint8_t *buf, size_t n, uint64_t seed)
{
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)vl_rng_next(&rng);
}

/* Returns the file's bytes (caller frees) and sets *size, or NULL. */
static uint8_t *s_slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static int s_spit(const char *path, const void *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = fwrite(buf, 1, n, f) == n ? 0 : -1;
    return fclose(f) == 0 ? rc : -1;
}

/* Returns 1 if the checkpoint holds exactly the n sections. */
static int s_same(const vl_checkpoint_t *ck, const vl_section_t *sections, int n)
{
    if (vl_checkpoint_count(ck) != n)
        return 0;
    for (int i = 0; i < n; i++) {
        size_t size = 1;
        const void *data = vl_checkpoint_get(ck, sections[i].name, &size);
        if (!data || size != sections[i].size ||
            strcmp(vl_checkpoint_name(ck, i), sections[i].name))
            return 0;
        if (size && memcmp(data, sections[i].data, size) != 0)
            return 0;
    }
    return 1;
}

/* Returns how many temp files a write left in the test directory. */
static int s_temp_files(void)
{
    DIR *d = opendir(s_dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

/* The small multi-chunk checkpoint the damage tests start from. */
static uint8_t *s_small_file(size_t *size)
{
    static uint8_t a[200], b[500];
    s_fill_random(a, sizeof a, 11);
    s_fill_pixels(b, sizeof b, 12);
    vl_section_t s[] = {{"alpha", a, sizeof a}, {"empty", NULL, 0}, {"beta", b, sizeof b}};
    vl_checkpoint_opts_t o = {.chunk_size = S_SMALL_CHUNK};
    if (vl_checkpoint_write_opts(s_path("small"), s, 3, &o) < 0)
        return NULL;
    return s_slurp(s_path("small"), size);
}

static void test_round_trip(void)
{
    size_t big = 2 * VL_CHECKPOINT_CHUNK + VL_CHECKPOINT_CHUNK / 2 + 123;
    uint8_t *w = malloc(40000), *adam = malloc(5000), *buf = malloc(big);
    VL_CHECK(w && adam && buf);
    s_fill_random(w, 40000, 1);
    s_fill_pixels(adam, 5000, 2);
    s_fill_pixels(buf, big, 3);
    s_fill_random(buf + VL_CHECKPOINT_CHUNK, VL_CHECKPOINT_CHUNK, 4); // one incompressible chunk
    vl_section_t s[] = {
        {"weights", w, 40000}, {"empty", NULL, 0}, {"adam", adam, 5000}, {"buffer", buf, big}};
    int rc = vl_checkpoint_write(s_path("rt"), s, 4);
    char why[256] = "";
    vl_checkpoint_t *ck = rc == 0 ? vl_checkpoint_read(s_path("rt"), why, sizeof why) : NULL;
    int same = ck && s_same(ck, s, 4);
    size_t size = 7;
    int empty_ok = ck && vl_checkpoint_get(ck, "empty", &size) != NULL && size == 0;
    int absent_ok = ck && vl_checkpoint_get(ck, "nope", &size) == NULL;
    vl_checkpoint_destroy(&ck);
    vl_checkpoint_destroy(&ck);
    free(w);
    free(adam);
    free(buf);
    VL_CHECK(rc == 0);
    VL_CHECK(same);
    VL_CHECK(empty_ok);
    VL_CHECK(absent_ok);
    VL_CHECK(ck == NULL);
    VL_CHECK(s_temp_files() == 0);
}

/* Small chunks, 1..3 threads and two accelerations give the same bytes. */
static void test_round_trip_tuned(void)
{
    uint8_t a[3000], b[1000];
    s_fill_pixels(a, sizeof a, 5);
    s_fill_random(b, sizeof b, 6);
    vl_section_t s[] = {{"a", a, sizeof a}, {"b", b, sizeof b}};
    int bad = 0;
    for (int threads = 1; threads <= 3; threads++)
        for (int accel = 1; accel <= 8; accel += 7) {
            vl_checkpoint_opts_t o = {
                .chunk_size = S_SMALL_CHUNK, .acceleration = accel, .threads = threads};
            char why[256];
            vl_checkpoint_t *ck = NULL;
            if (vl_checkpoint_write_opts(s_path("tuned"), s, 2, &o) == 0)
                ck = vl_checkpoint_read_opts(s_path("tuned"), &o, why, sizeof why);
            bad += !ck || !s_same(ck, s, 2);
            vl_checkpoint_destroy(&ck);
        }
    VL_CHECK(bad == 0);
}

static void test_empty_checkpoint(void)
{
    char why[256];
    VL_CHECK(vl_checkpoint_write(s_path("none"), NULL, 0) == 0);
    vl_checkpoint_t *ck = vl_checkpoint_read(s_path("none"), why, sizeof why);
    VL_CHECK(ck);
    int n = vl_checkpoint_count(ck);
    vl_checkpoint_destroy(&ck);
    VL_CHECK(n == 0);
}

static void test_truncated_at_every_byte(void)
{
    size_t size;
    uint8_t *file = s_small_file(&size);
    VL_CHECK(file);
    VL_CHECK(size > 500);
    int bad = 0;
    for (size_t len = 0; len < size; len++) {
        char why[256] = "";
        vl_checkpoint_t *ck = NULL;
        if (s_spit(s_path("cut"), file, len) == 0)
            ck = vl_checkpoint_read(s_path("cut"), why, sizeof why);
        if (ck || !strstr(why, "truncated")) {
            fprintf(stderr, "  length %zu of %zu: %s\n", len, size, ck ? "accepted" : why);
            bad++;
        }
        vl_checkpoint_destroy(&ck);
    }
    free(file);
    VL_CHECK(bad == 0);
}

/* One bit flipped at every byte (a different bit each time). */
static void test_bit_flip_at_every_byte(void)
{
    size_t size;
    uint8_t *file = s_small_file(&size);
    VL_CHECK(file);
    int bad = 0;
    for (size_t at = 0; at < size; at++) {
        file[at] ^= (uint8_t)(1u << (at % 8));
        char why[256] = "";
        vl_checkpoint_t *ck = NULL;
        if (s_spit(s_path("flip"), file, size) == 0)
            ck = vl_checkpoint_read(s_path("flip"), why, sizeof why);
        if (ck || !why[0]) {
            fprintf(stderr, "  flip at %zu of %zu accepted\n", at, size);
            bad++;
        }
        vl_checkpoint_destroy(&ck);
        file[at] ^= (uint8_t)(1u << (at % 8));
    }
    free(file);
    VL_CHECK(bad == 0);
}

/* Random bytes overwritten, or appended: always refused, never a crash. */
static void test_random_damage(void)
{
    size_t size;
    uint8_t *file = s_small_file(&size), *copy = malloc(size + 16);
    VL_CHECK(file && copy);
    vl_rng_t rng;
    vl_rng_seed(&rng, 7);
    int bad = 0;
    for (int iter = 0; iter < 2000; iter++) {
        memcpy(copy, file, size);
        size_t n = size;
        if (iter % 10 == 0)
            for (int k = 1 + (int)(vl_rng_next(&rng) % 16); k > 0; k--)
                copy[n++] = (uint8_t)vl_rng_next(&rng);
        else
            for (int k = 1 + (int)(vl_rng_next(&rng) % 8); k > 0; k--)
                copy[vl_rng_next(&rng) % size] ^= (uint8_t)(1 + vl_rng_next(&rng) % 255);
        char why[256] = "";
        vl_checkpoint_t *ck = NULL;
        if (memcmp(copy, file, size) == 0 && n == size)
            continue; // two changes undid each other
        if (s_spit(s_path("damaged"), copy, n) == 0)
            ck = vl_checkpoint_read(s_path("damaged"), why, sizeof why);
        if (ck || !why[0]) {
            fprintf(stderr, "  damage %d accepted (seed 7)\n", iter);
            bad++;
        }
        vl_checkpoint_destroy(&ck);
    }
    free(file);
    free(copy);
    VL_CHECK(bad == 0);
}

/* Rewrites the meta crc after a change, as a forger would. */
static void s_reseal(uint8_t *file)
{
    uint64_t n_sections = 0, n_chunks = 0;
    for (int i = 0; i < 4; i++)
        n_sections |= (uint64_t)file[12 + i] << (8 * i);
    for (int i = 0; i < 8; i++)
        n_chunks |= (uint64_t)file[24 + i] << (8 * i);
    size_t at = 48 + n_sections * 40 + n_chunks * 16;
    uint32_t crc = vl_crc32c(0, file, at);
    for (int i = 0; i < 4; i++)
        file[at + i] = (uint8_t)(crc >> (8 * i));
}

/* Correctly sealed tables claiming a 1 TB section, 2^40 chunks or a chunk
   that would decompress past LZ4's ratio are refused before any allocation
   (under ASan, a 1 TB malloc would abort the test). */
static void test_huge_claims_refused(void)
{
    size_t size;
    uint8_t *file = s_small_file(&size), *copy = malloc(size);
    VL_CHECK(file && copy);
    char why[3][256] = {"", "", ""};
    vl_checkpoint_t *ck[3] = {NULL, NULL, NULL};
    memcpy(copy, file, size);
    copy[48 + 32 + 5] = 1; // section 0's raw_size += 1 TB
    s_reseal(copy);
    if (s_spit(s_path("huge"), copy, size) == 0)
        ck[0] = vl_checkpoint_read(s_path("huge"), why[0], sizeof why[0]);
    memcpy(copy, file, size);
    copy[24 + 5] = 1; // n_chunks += 2^40
    if (s_spit(s_path("huge"), copy, size) == 0)
        ck[1] = vl_checkpoint_read(s_path("huge"), why[1], sizeof why[1]);
    memcpy(copy, file, size);
    size_t chunk0 = 48 + 3 * 40; // alpha's first chunk: raw 64, stored 64
    copy[chunk0 + 4] = 0;        // stored_size 64 -> 0
    s_reseal(copy);
    if (s_spit(s_path("huge"), copy, size) == 0)
        ck[2] = vl_checkpoint_read(s_path("huge"), why[2], sizeof why[2]);
    int refused = !ck[0] && !ck[1] && !ck[2];
    for (int i = 0; i < 3; i++)
        vl_checkpoint_destroy(&ck[i]);
    free(file);
    free(copy);
    VL_CHECK(refused);
    VL_CHECK(strstr(why[0], "corrupt section table"));
    VL_CHECK(strstr(why[1], "corrupt header"));
    VL_CHECK(strstr(why[2], "corrupt chunk table"));
}

static void test_missing_and_foreign_files(void)
{
    char why[256] = "";
    VL_CHECK(vl_checkpoint_read(s_path("no such file"), why, sizeof why) == NULL);
    VL_CHECK(strstr(why, "cannot open") && strstr(why, "No such file"));
    VL_CHECK(s_spit(s_path("foreign"), "#!/bin/sh\necho hello\n", 21) == 0);
    VL_CHECK(vl_checkpoint_read(s_path("foreign"), why, sizeof why) == NULL);
    VL_CHECK(strcmp(why, "not a volley checkpoint") == 0);
    VL_CHECK(vl_checkpoint_read(s_dir, why, sizeof why) == NULL);
    VL_CHECK(strstr(why, "not a regular file"));
    VL_CHECK(vl_checkpoint_read(s_path("foreign"), NULL, 0) == NULL); // no room for a reason
    uint8_t v2[48] = "VLCKPT\0\1\2";
    VL_CHECK(s_spit(s_path("future"), v2, sizeof v2) == 0);
    VL_CHECK(vl_checkpoint_read(s_path("future"), why, sizeof why) == NULL);
    VL_CHECK(strstr(why, "version 2"));
}

/* A write that fails (no directory; file size limit hit mid-write, as a
   full disk would) returns -1, keeps the old file and leaves no temp file. */
static void test_failed_write_keeps_old_file(void)
{
    uint8_t old[1000], big[200000];
    s_fill_pixels(old, sizeof old, 8);
    s_fill_random(big, sizeof big, 9);
    vl_section_t s_old = {"state", old, sizeof old}, s_big = {"state", big, sizeof big};
    VL_CHECK(vl_checkpoint_write("/nonexistent-dir/ck", &s_old, 1) == -1);
    VL_CHECK(vl_checkpoint_write(s_path("keep"), &s_old, 1) == 0);
    struct rlimit saved, limit;
    VL_CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    limit = saved;
    limit.rlim_cur = 64 * 1024;
    void (*saved_handler)(int) = signal(SIGXFSZ, SIG_IGN); // make write() fail with EFBIG
    VL_CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
    vl_checkpoint_opts_t o = {.chunk_size = 16384};
    int rc = vl_checkpoint_write_opts(s_path("keep"), &s_big, 1, &o);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, saved_handler);
    VL_CHECK(rc == -1);
    VL_CHECK(s_temp_files() == 0);
    char why[256];
    vl_checkpoint_t *ck = vl_checkpoint_read(s_path("keep"), why, sizeof why);
    int same = ck && s_same(ck, &s_old, 1);
    vl_checkpoint_destroy(&ck);
    VL_CHECK(same);
}

static void test_overwrite(void)
{
    uint8_t a[5000], b[300];
    s_fill_pixels(a, sizeof a, 10);
    s_fill_random(b, sizeof b, 11);
    vl_section_t first[] = {{"x", a, sizeof a}, {"y", b, sizeof b}}, second = {"z", b, 100};
    VL_CHECK(vl_checkpoint_write(s_path("over"), first, 2) == 0);
    VL_CHECK(vl_checkpoint_write(s_path("over"), &second, 1) == 0);
    char why[256];
    vl_checkpoint_t *ck = vl_checkpoint_read(s_path("over"), why, sizeof why);
    int same = ck && s_same(ck, &second, 1) && !vl_checkpoint_get(ck, "x", NULL);
    vl_checkpoint_destroy(&ck);
    VL_CHECK(same);
    VL_CHECK(s_temp_files() == 0);
}

static void test_bad_names_refused(void)
{
    uint8_t x[4] = {1, 2, 3, 4};
    const char *bad[] = {"a-name-of-thirty-two-characters!", "", "tab\there", "caf\xc3\xa9", NULL};
    for (int i = 0; i < 5; i++) {
        vl_section_t s = {bad[i], x, sizeof x};
        VL_CHECK(vl_checkpoint_write(s_path("names"), &s, 1) == -1);
    }
    vl_section_t dup[] = {{"w", x, 4}, {"w", x, 4}};
    VL_CHECK(vl_checkpoint_write(s_path("names"), dup, 2) == -1);
    vl_section_t no_data = {"w", NULL, 4};
    VL_CHECK(vl_checkpoint_write(s_path("names"), &no_data, 1) == -1);
    VL_CHECK(access(s_path("names"), F_OK) != 0);
    vl_section_t longest = {"a-name-of-thirty-one-characters", x, sizeof x};
    VL_CHECK(vl_checkpoint_write(s_path("names"), &longest, 1) == 0);
    vl_checkpoint_opts_t o = {.chunk_size = 8};
    VL_CHECK(vl_checkpoint_write_opts(s_path("names"), &longest, 1, &o) == -1);
}

static void s_remove_dir(void)
{
    DIR *d = opendir(s_dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(s_path(e->d_name));
    if (d)
        closedir(d);
    rmdir(s_dir);
}

int main(void)
{
    // the refusals tested here log errors by design: keep the output to results
    vl_log_init("checkpoint_test", (vl_log_level_t)(VL_LOG_ERROR + 1));
    snprintf(s_dir, sizeof s_dir, "/tmp/vl_checkpoint_test.XXXXXX");
    if (!mkdtemp(s_dir)) {
        perror("mkdtemp");
        return 1;
    }
    VL_RUN(test_round_trip);
    VL_RUN(test_round_trip_tuned);
    VL_RUN(test_empty_checkpoint);
    VL_RUN(test_truncated_at_every_byte);
    VL_RUN(test_bit_flip_at_every_byte);
    VL_RUN(test_random_damage);
    VL_RUN(test_huge_claims_refused);
    VL_RUN(test_missing_and_foreign_files);
    VL_RUN(test_failed_write_keeps_old_file);
    VL_RUN(test_overwrite);
    VL_RUN(test_bad_names_refused);
    s_remove_dir();
    return VL_DONE();
}
